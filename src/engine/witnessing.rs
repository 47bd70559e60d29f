//! The engine's side of the witness (see [`crate::store::witness`]): a start refuses a store
//! that disagrees with what this replica witnessed, or whose records are there without a chain
//! record; the witness moves forward as the head does, at most once a
//! [`witness::PERIOD`](crate::store::witness::PERIOD), and when the process stops in order.

use super::{CATCH_UP_BATCH, Engine};
use crate::error::ServiceError;
use crate::store::witness::{self, Disagreement, Head, Witness, Witnessed};
use crate::store::{Link, Store, StoreError};

/// The first record that carries a link, in a store without a chain record: a store an older
/// version wrote has none.
pub async fn first_linked(store: &dyn Store) -> Result<Option<u64>, ServiceError> {
    let mut after = 0;
    loop {
        let records = store.read_since(after, CATCH_UP_BATCH).await?;
        let Some(last) = records.last().map(|r| r.seq) else {
            return Ok(None);
        };
        if let Some(linked) = records.iter().find(|r| r.link.is_some()) {
            return Ok(Some(linked.seq));
        }
        after = last;
    }
}

/// Why a store that holds `last` records and no chain record is neither served nor verified,
/// and what to do: link it on purpose when an older version wrote it, restore it otherwise.
pub async fn unchained_problem(store: &dyn Store, last: u64) -> Result<String, ServiceError> {
    Ok(match first_linked(store).await? {
        Some(seq) => format!(
            "{}: the store has no chain record, but its record {seq} carries a link: the chain \
             record was removed, as one would to have changed records linked again. Nothing is \
             linked again on its own: restore the store from a backup or a standby",
            store.describe()
        ),
        None => format!(
            "{}: none of the store's {last} records is linked: it was written by a version from \
             before the log was chained. Link its records once with `chronoscope \
             link-unchained-store` (read its --help first: the records as they are now become \
             the proven history), then start again",
            store.describe()
        ),
    })
}

/// What `witness` holds; a file that cannot be read or opened refuses, as a disagreement does.
pub fn load(witness: &Witness) -> Result<Option<Witnessed>, ServiceError> {
    witness
        .load()
        .map_err(|e| ServiceError::IntegrityFailed(e.to_string()))
}

/// The link stored with record `seq` (`None` at 0, when the record is gone or has none).
pub async fn stored_link(store: &dyn Store, seq: u64) -> Result<Option<Link>, StoreError> {
    if seq == 0 {
        return Ok(None);
    }
    match store.read_since(seq - 1, 1).await {
        Ok(records) => Ok(records
            .first()
            .filter(|r| r.seq == seq)
            .and_then(|r| r.link)),
        Err(StoreError::Missing { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How the store disagrees with `witnessed`, reading what is needed: its chain record's
/// `from`, its last record `last_seq`, and the link at the witnessed head.
pub async fn disagreement(
    store: &dyn Store,
    witnessed: &Witnessed,
    from: Option<u64>,
    last_seq: u64,
) -> Result<Option<Disagreement>, StoreError> {
    let link = if last_seq >= witnessed.head.seq && from.is_some() {
        stored_link(store, witnessed.head.seq).await?
    } else {
        None
    };
    Ok(witness::compare(witnessed, from, last_seq, link))
}

/// A store without a chain record: refused, saying what that means. Only an empty store that
/// this replica never witnessed chained may be chained by a start.
pub(super) async fn refuse_unchained(engine: &Engine) -> Result<(), ServiceError> {
    let store = engine.store.as_ref();
    if let Some(witness) = &engine.config.witness
        && let Some(witnessed) = load(witness)?
    {
        let found = Disagreement::Unchained {
            witnessed: witnessed.head.seq,
        };
        return Err(ServiceError::IntegrityFailed(format!(
            "{}: {}",
            store.describe(),
            found.explain(Some(witness.path()))
        )));
    }
    match store.last_seq().await? {
        0 => Ok(()),
        last => Err(ServiceError::IntegrityFailed(
            unchained_problem(store, last).await?,
        )),
    }
}

impl Engine {
    /// The start's check of the store against this replica's witness, before anything is
    /// folded (a sealed snapshot ahead of a cut log would otherwise say less). Without a
    /// witness yet, the store is taken as it is (said in the log): a new replica, or the first
    /// start after an upgrade. The witness is moved to the head once the start has verified it.
    pub(super) async fn check_witness_at_start(&self) -> Result<(), ServiceError> {
        let Some(witness) = &self.config.witness else {
            return Ok(());
        };
        let from = self.store.chain().await?.map(|m| m.from);
        let last_seq = self.store.last_seq().await?;
        match load(witness)? {
            Some(witnessed) => {
                let found = disagreement(self.store.as_ref(), &witnessed, from, last_seq).await?;
                if let Some(found) = found {
                    return Err(ServiceError::IntegrityFailed(format!(
                        "{}: {}",
                        self.store.describe(),
                        found.explain(Some(witness.path()))
                    )));
                }
            }
            None if last_seq > 0 => tracing::warn!(
                witness = %witness.path().display(),
                "this data directory has no witness of the store yet: it is taken as it is and \
                 witnessed from record {last_seq} on (a cut or a re-link before now cannot be \
                 told)"
            ),
            None => {}
        }
        Ok(())
    }

    /// Moves this replica's witness to the head it has verified and published, unless it is
    /// there already. Called at most once a [`witness::PERIOD`] while writes go on, and when
    /// the process stops in order.
    pub async fn record_witness(&self) -> Result<(), ServiceError> {
        let Some((witness, from, head)) = self.witness_head() else {
            return Ok(());
        };
        tokio::task::spawn_blocking(move || witness.advance(from, head))
            .await
            .map_err(|e| ServiceError::Internal(format!("writing the witness failed: {e}")))?
            .map(|_| ())
            .map_err(|e| ServiceError::Unavailable(e.to_string()))
    }

    /// The witness and the head to record in it.
    fn witness_head(&self) -> Option<(Witness, u64, Head)> {
        let witness = self.config.witness.clone()?;
        let from = *self.chain_from.get()?;
        let world = self.snapshot_now();
        let link = world.link.unwrap_or_else(|| self.config.log_key.genesis());
        Some((
            witness,
            from,
            Head {
                seq: world.seq,
                link,
            },
        ))
    }

    /// Moves the witness forward in the background as the head moves: once the head moved,
    /// after [`witness::PERIOD`] (so a burst of writes costs one file write). Stops when the
    /// engine is dropped.
    pub(super) fn spawn_witness(&self) {
        if self.config.witness.is_none() {
            return;
        }
        let engine = self.me.clone();
        let mut position = self.position();
        tokio::spawn(async move {
            while position.changed().await.is_ok() {
                tokio::time::sleep(witness::PERIOD).await;
                position.borrow_and_update();
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                if let Err(e) = engine.record_witness().await {
                    tracing::warn!(%e, "moving the witness forward failed; will try again");
                }
            }
        });
    }

    /// How the store now disagrees with this replica's witness (for the scans), in words that
    /// do not name the witness file; also a chain record that is gone, witnessed or not (this
    /// process started on it chained).
    pub(super) async fn witness_problem(
        &self,
        last_seq: u64,
    ) -> Result<Option<Disagreement>, ServiceError> {
        let from = self.store.chain().await?.map(|m| m.from);
        if let Some(witness) = &self.config.witness
            && let Some(witnessed) = load(witness)?
        {
            return Ok(disagreement(self.store.as_ref(), &witnessed, from, last_seq).await?);
        }
        Ok(from.is_none().then_some(Disagreement::Unchained {
            witnessed: self.snapshot_now().seq,
        }))
    }
}

impl Drop for Engine {
    /// The last head this process verified goes into the witness, whatever way it stops (a
    /// one-shot command exits before the background write would come).
    fn drop(&mut self) {
        if let Some((witness, from, head)) = self.witness_head()
            && let Err(e) = witness.advance(from, head)
        {
            tracing::warn!(%e, "moving the witness forward before stopping failed");
        }
    }
}

/// What `chronoscope link-unchained-store` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linked {
    /// How many records were linked.
    pub records: u64,
    /// The chain record written: records from `from` on are linked as they are written.
    pub from: u64,
    /// The head after linking, for the witness.
    pub head: Head,
    /// The first record that carried a link already (linked despite it).
    pub had_links_from: Option<u64>,
}

/// Links every record of a store that has no chain record, as they are now: the operator's
/// explicit step for a store an older version wrote (no start does it). Refused when the store
/// is chained, and, unless `despite_links`, when a record carries a link or this data
/// directory witnessed the store chained (`witnessed`): then its chain record was removed, and
/// linking would prove whatever was changed.
pub async fn link_unchained_store(
    store: &dyn Store,
    key: &crate::store::LogKey,
    witnessed: Option<&Witnessed>,
    despite_links: bool,
) -> Result<Linked, ServiceError> {
    if let Some(meta) = store.chain().await? {
        return Err(ServiceError::Conflict(format!(
            "{} is chained already (its records are linked as written from record {}): there \
             is nothing to link",
            store.describe(),
            meta.from
        )));
    }
    let had_links_from = first_linked(store).await?;
    if !despite_links {
        let removed = "its chain record was removed, and linking now would prove whatever was \
                       changed in it. Restore the store from a backup or a standby instead";
        if let Some(witnessed) = witnessed {
            return Err(ServiceError::Conflict(format!(
                "{}: this data directory witnessed the store chained up to record {}: {removed}",
                store.describe(),
                witnessed.head.seq
            )));
        }
        if let Some(seq) = had_links_from {
            return Err(ServiceError::Conflict(format!(
                "{}: record {seq} carries a link, so the store was chained before: {removed}",
                store.describe()
            )));
        }
    }
    let mut links = Vec::new();
    let mut previous = key.genesis();
    loop {
        let records = store.read_since(links.len() as u64, CATCH_UP_BATCH).await?;
        if records.is_empty() {
            break;
        }
        for record in records {
            previous = key.link(&previous, record.seq, &record.body);
            links.push(previous);
        }
    }
    let meta = crate::store::ChainMeta {
        fingerprint: key.fingerprint(),
        from: links.len() as u64 + 1,
    };
    match store.start_chain(meta, &links).await {
        Ok(()) => {}
        Err(StoreError::AlreadyChained | StoreError::Conflict(_)) => {
            return Err(ServiceError::Conflict(format!(
                "{}: another process chained or wrote to the store meanwhile; look at it again \
                 (`chronoscope verify`) before linking anything",
                store.describe()
            )));
        }
        Err(e) => return Err(e.into()),
    }
    Ok(Linked {
        records: links.len() as u64,
        from: meta.from,
        head: Head {
            seq: links.len() as u64,
            link: previous,
        },
        had_links_from,
    })
}
