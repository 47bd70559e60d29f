//! Checking a whole store against the log key, record by record (`chronoscope verify`).
//!
//! Folding already verifies every record a process applies; this reads the *stored* log from
//! the first record, so it also covers records a process started from a snapshot never read.

use serde::Serialize;

use std::path::Path;

use super::{CATCH_UP_BATCH, Envelope, snapshot, witnessing};
use crate::error::ServiceError;
use crate::store::chain::{self, LogKey};
use crate::store::witness::{Disagreement, Head, Witnessed};
use crate::store::{Store, StoreError};

/// What a check of the whole store found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Audit {
    /// Where the data lives.
    pub store: String,
    /// Records that verified, from the first.
    pub verified: u64,
    /// The store's last record.
    pub last_seq: u64,
    /// The first record linked as it was written (earlier ones were linked on upgrade).
    pub chain_from: Option<u64>,
    /// The head this data directory's witness held when the check began (`None`: no witness).
    pub witnessed: Option<u64>,
    /// The first problem, if any: everything after it is unproven.
    pub problem: Option<Problem>,
    /// The last record that verified and its link, when every record did.
    #[serde(skip)]
    pub head: Option<Head>,
}

/// The first record that does not verify, or what else is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The record, when the problem is one.
    pub seq: Option<u64>,
    /// What is wrong, and what it means.
    pub reason: String,
}

impl Audit {
    /// Whether every record verified.
    pub fn is_sound(&self) -> bool {
        self.problem.is_none()
    }
}

/// Checks every record of `store` against `key`, stopping at the first one that does not
/// verify or decode, and the newest snapshot's position against the log's end.
pub async fn audit(store: &dyn Store, key: &LogKey) -> Result<Audit, ServiceError> {
    audit_witnessed(store, key, None).await
}

/// [`audit`], and the store compared with what `witness` (its file named in the problem)
/// holds: a chain record that is gone or rewritten, a log shorter than the head witnessed,
/// another record at that head.
pub async fn audit_witnessed(
    store: &dyn Store,
    key: &LogKey,
    witness: Option<(&Witnessed, &Path)>,
) -> Result<Audit, ServiceError> {
    let mut audit = Audit {
        store: store.describe(),
        verified: 0,
        last_seq: store.last_seq().await?,
        chain_from: None,
        witnessed: witness.map(|(w, _)| w.head.seq),
        problem: None,
        head: None,
    };
    let problem = |seq: Option<u64>, reason: String| Some(Problem { seq, reason });
    let disagreeing = |found: &Disagreement| {
        problem(
            Some(found.seq()),
            found.explain(witness.map(|(_, path)| path)),
        )
    };
    match store.chain().await? {
        Some(meta) if meta.fingerprint == key.fingerprint() => audit.chain_from = Some(meta.from),
        Some(meta) => {
            audit.problem = problem(
                None,
                format!(
                    "the store was chained with another log key (fingerprint {}; this key is \
                     {}): name the key file that wrote it with --log-key-file",
                    chain::short(&meta.fingerprint),
                    chain::short(&key.fingerprint())
                ),
            );
            return Ok(audit);
        }
        None => {
            if let Some((witnessed, _)) = witness {
                audit.problem = disagreeing(&Disagreement::Unchained {
                    witnessed: witnessed.head.seq,
                });
            } else if audit.last_seq > 0 {
                let reason = witnessing::unchained_problem(store, audit.last_seq).await?;
                // Said without the store, which the report names already.
                let reason = reason
                    .strip_prefix(&format!("{}: ", audit.store))
                    .map_or(reason.clone(), str::to_owned);
                audit.problem = problem(None, reason);
            } else {
                audit.head = Some(Head {
                    seq: 0,
                    link: key.genesis(),
                });
            }
            return Ok(audit);
        }
    }
    let mut previous = key.genesis();
    let mut limit = CATCH_UP_BATCH;
    // The first missing record, once a page ran into it: the pages before it are read first.
    let mut hole: Option<(u64, String)> = None;
    'pages: loop {
        let records = match store.read_since(audit.verified, limit).await {
            Ok(records) => records,
            // A hole in the numbering: records were deleted. Those before it are checked.
            Err(e @ StoreError::Missing { seq, .. }) => {
                let before = seq.saturating_sub(audit.verified + 1);
                if before == 0 {
                    audit.problem = problem(Some(seq), e.to_string());
                    break;
                }
                hole = Some((seq, e.to_string()));
                limit = u32::try_from(before).unwrap_or(CATCH_UP_BATCH);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if records.is_empty() {
            break;
        }
        for record in records {
            match chain::verify(
                key,
                &previous,
                record.seq,
                &record.body,
                record.link.as_ref(),
            ) {
                Ok(link) => previous = link,
                Err(broken) => {
                    audit.problem = problem(Some(record.seq), broken.to_string());
                    break 'pages;
                }
            }
            if let Err(e) = Envelope::decode(&record.body) {
                audit.problem = problem(
                    Some(record.seq),
                    format!("record {} verifies but cannot be read: {e}", record.seq),
                );
                break 'pages;
            }
            audit.verified = record.seq;
        }
        if let Some((seq, reason)) = &hole
            && *seq == audit.verified + 1
        {
            audit.problem = problem(Some(*seq), reason.clone());
            break;
        }
    }
    if audit.problem.is_none()
        && let Some((witnessed, _)) = witness
    {
        // The last record read, not the store's own count (a PostgreSQL head row may say more).
        let found =
            witnessing::disagreement(store, witnessed, audit.chain_from, audit.verified).await?;
        audit.problem = found.as_ref().and_then(disagreeing);
    }
    if audit.problem.is_none() {
        audit.problem = snapshot_ahead(store, key, audit.last_seq).await?;
    }
    if audit.problem.is_none() {
        audit.head = Some(Head {
            seq: audit.verified,
            link: previous,
        });
    }
    Ok(audit)
}

/// A snapshot this key sealed that folds more records than the log holds: the log lost them.
async fn snapshot_ahead(
    store: &dyn Store,
    key: &LogKey,
    last_seq: u64,
) -> Result<Option<Problem>, ServiceError> {
    for info in store.snapshots().await? {
        if info.seq <= last_seq {
            break; // newest first: the rest are behind it too
        }
        let bytes = store.read_snapshot(info.id).await?;
        if snapshot::sealed_by(&bytes, key) {
            return Ok(Some(Problem {
                seq: Some(last_seq + 1),
                reason: format!(
                    "the log ends at record {last_seq}, but a snapshot sealed with this key folds \
                     records up to {}: the records after {last_seq} were lost",
                    info.seq
                ),
            }));
        }
    }
    Ok(None)
}
