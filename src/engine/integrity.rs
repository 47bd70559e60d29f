//! `detect-tampering` and `validate-integrity` (guide operations §5.4): the *stored* log read
//! back and checked against the log key, on demand.
//!
//! Folding already refuses to go past a record that does not verify; these look at what is
//! stored now, so they also see records changed after this process folded them. Verification
//! uses the *stored* previous link, so a modified body fails at exactly its record.
//!
//! A `detect-tampering` scan is recorded in the log (`Op::ScanResult`, folded into [`Scans`]):
//! the next `recent` scan starts after the record it checked up to, and its findings stay open,
//! as critical `log_tampered` anomalies of every timeline, until a full scan reads every record
//! and no longer finds them.
//!
//! `validate-integrity` replays the verified records from the first into a fresh state (the
//! same fold the engine runs) and compares the timeline's served events and data entries with
//! it: an item passes when the verified log produces exactly what is served. That costs a pass
//! over the log (the specification's per-event index of producing records, which would read
//! only those records, is not built).

use std::collections::BTreeSet;
use std::sync::Arc;

pub use super::world::scans::{OpenFinding, Scans};
use super::{CATCH_UP_BATCH, Engine, Envelope, Op, World, rules};
use crate::error::ServiceError;
use crate::model::{Instant, TimelineId, Traveller, format_instant, in_range};
use crate::service::{
    FINDINGS_LISTED, FindingKind, IntegrityFailure, IntegrityReport, ScanDepth, TamperFinding,
    TamperReport, integrity_score,
};
use crate::store::chain::{self, LogKey};
use crate::store::witness::Disagreement;
use crate::store::{Link, Record, StoreError};

/// Each traveller's last scan of the log, for the cooldown between them: a scan reads the
/// stored log (all of it, `full`), so one traveller may start one every [`Engine::cool_scans`]
/// interval (none unless set: `serve --scan-cooldown`, 5 s by default). Operators are not held.
#[derive(Debug, Default)]
pub(super) struct Cooldown {
    every_ms: std::sync::atomic::AtomicU64,
    started: std::sync::Mutex<std::collections::HashMap<Traveller, std::time::Instant>>,
}

impl Cooldown {
    /// Starts `who`'s scan now, or says how long until they may.
    fn start(&self, who: &Traveller) -> Result<(), ServiceError> {
        let every = std::time::Duration::from_millis(
            self.every_ms.load(std::sync::atomic::Ordering::Relaxed),
        );
        if every.is_zero() {
            return Ok(());
        }
        let now = std::time::Instant::now();
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        // Those whose cooldown ended are forgotten: the map holds the last interval's scanners.
        started.retain(|_, at| now.duration_since(*at) < every);
        if let Some(at) = started.get(who) {
            let left = every.saturating_sub(now.duration_since(*at));
            return Err(ServiceError::ScansTooOften {
                retry_after_secs: left.as_secs_f64().ceil().max(1.0) as u64,
                every_secs: every.as_secs_f64().ceil() as u64,
            });
        }
        started.insert(who.clone(), now);
        Ok(())
    }
}

impl Engine {
    /// Sets how long a traveller waits between two scans of the log (`detect-tampering`,
    /// `validate-integrity`); zero, the default, holds nobody. Operators are never held.
    pub fn cool_scans(&self, every: std::time::Duration) {
        let ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
        self.scan_cooldown
            .every_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Starts `who`'s scan of the log, unless they started one within the cooldown.
    pub(super) fn start_scan(&self, who: &Traveller, operator: bool) -> Result<(), ServiceError> {
        if operator {
            return Ok(());
        }
        self.scan_cooldown.start(who)
    }
}

/// What a stored record says about itself, read without trusting it.
#[derive(Default)]
struct Claims {
    op: Option<String>,
    written_at: Option<Instant>,
    timelines: Vec<TimelineId>,
}

impl Claims {
    fn of(body: &str) -> Self {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
            return Self::default();
        };
        let mut timelines = BTreeSet::new();
        collect_timelines(&v["change"], &mut timelines);
        Self {
            op: v["change"]["op"].as_str().map(str::to_owned),
            written_at: v["at"]
                .as_str()
                .and_then(|at| crate::model::parse_instant("at", at).ok()),
            timelines: timelines.into_iter().collect(),
        }
    }

    /// Whether the record says it touches `timeline` (one that says nothing readable might
    /// touch anything).
    fn touches(&self, timeline: &TimelineId) -> bool {
        self.op.is_none() || self.timelines.contains(timeline)
    }
}

/// The timelines a change names: under the keys the ops use for them.
fn collect_timelines(v: &serde_json::Value, out: &mut BTreeSet<TimelineId>) {
    const KEYS: &[&str] = &[
        "timeline",
        "timeline_id",
        "source",
        "destination",
        "from_timeline",
        "to_timeline",
        "origin_timeline",
    ];
    match v {
        serde_json::Value::Object(map) => {
            // A journey's `destination` is what was asked (an anchor id or a timeline); its
            // `to_timeline` says where it went.
            let journey = map.contains_key("to_timeline");
            for (k, value) in map {
                if KEYS.contains(&k.as_str()) && !(journey && k == "destination") {
                    let named = value.as_str().or_else(|| value["id"].as_str());
                    if let Some(id) = named.and_then(|s| s.parse().ok()) {
                        out.insert(id);
                    }
                }
                collect_timelines(value, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_timelines(i, out)),
        _ => {}
    }
}

/// One stored record checked against the stored link before it: the link to check the next
/// record against (the stored one, whatever this one's verdict), and the record's change when
/// it verifies and reads, else what is wrong.
fn check(
    key: &LogKey,
    previous: &Link,
    record: &Record,
) -> (Link, Result<Envelope, TamperFinding>) {
    let finding = |kind, reason: String| {
        let claims = Claims::of(&record.body);
        TamperFinding {
            seq: record.seq,
            kind,
            written_at: claims.written_at,
            op: claims.op,
            timelines: claims.timelines,
            reason,
        }
    };
    match chain::verify(
        key,
        previous,
        record.seq,
        &record.body,
        record.link.as_ref(),
    ) {
        Ok(link) => match Envelope::decode(&record.body) {
            Ok(envelope) => (link, Ok(envelope)),
            Err(_) => (
                link,
                Err(finding(
                    FindingKind::Undecodable,
                    format!(
                        "record {} verifies but cannot be read by this version",
                        record.seq
                    ),
                )),
            ),
        },
        Err(broken) => (
            record.link.unwrap_or(*previous),
            Err(finding(FindingKind::Modified, broken.to_string())),
        ),
    }
}

/// A page of stored records after `after`. A page with a hole in its numbering is refused by
/// the store as a whole: then the records before the hole are read (the largest page that has
/// none, found by halving) and the hole is named, the first missing record.
async fn page_after(
    engine: &Engine,
    after: u64,
) -> Result<(Vec<Record>, Option<u64>), ServiceError> {
    match engine.store.read_since(after, CATCH_UP_BATCH).await {
        Ok(records) => Ok((records, None)),
        Err(StoreError::Missing { seq, .. }) => {
            // The first missing record is named: the records before it are read.
            let before = seq.saturating_sub(after + 1);
            let records = match u32::try_from(before) {
                Ok(0) => Vec::new(),
                Ok(limit) => engine.store.read_since(after, limit).await?,
                Err(_) => Vec::new(),
            };
            Ok((records, Some(seq)))
        }
        Err(StoreError::Corrupt(_)) => {
            // read_since(after, 0 records) always succeeds; read_since(after, BATCH) fails.
            let (mut good, mut bad) = (0u32, CATCH_UP_BATCH);
            while bad - good > 1 {
                let mid = good + (bad - good) / 2;
                match engine.store.read_since(after, mid).await {
                    Ok(_) => good = mid,
                    Err(StoreError::Corrupt(_) | StoreError::Missing { .. }) => bad = mid,
                    Err(e) => return Err(e.into()),
                }
            }
            let records = if good == 0 {
                Vec::new()
            } else {
                engine.store.read_since(after, good).await?
            };
            Ok((records, Some(after + u64::from(good) + 1)))
        }
        Err(e) => Err(e.into()),
    }
}

/// One scan of the stored log per process at a time: each is a pass over the whole log.
static SCANS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

async fn one_at_a_time() -> Result<tokio::sync::SemaphorePermit<'static>, ServiceError> {
    SCANS
        .acquire()
        .await
        .map_err(|e| ServiceError::Internal(format!("the scan queue is gone: {e}")))
}

/// The stored link of record `seq` (the genesis link before the first), to check the record
/// after it against.
async fn link_before(engine: &Engine, first: u64) -> Result<Link, ServiceError> {
    let key = &engine.config.log_key;
    if first <= 1 {
        return Ok(key.genesis());
    }
    // A hole just before the range is found by the scan itself (the first record then does
    // not match the genesis link): no need to fail here.
    let records = match engine.store.read_since(first - 2, 1).await {
        Ok(records) => records,
        Err(StoreError::Corrupt(_) | StoreError::Missing { .. }) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    Ok(records
        .first()
        .and_then(|r| r.link)
        .unwrap_or_else(|| key.genesis()))
}

/// Where a scan started.
#[derive(Clone, Copy, Debug)]
enum Since {
    /// At the first record.
    Start,
    /// After the record the last recorded scan checked up to.
    Scan(u64),
    /// After the newest snapshot (no scan recorded yet).
    Snapshot(u64),
}

/// What a scan read: its range and where it started.
struct Scanned {
    since: Since,
    from_seq: u64,
    checked: u64,
    head_seq: u64,
    chain_from: Option<u64>,
    /// Records earlier scans found that this one did not find again and does not clear
    /// (it was not a full scan to the end): still open.
    earlier: Vec<u64>,
    /// How many records did not verify beyond those listed.
    not_listed: u64,
}

/// The findings of earlier scans that a scan finding `findings` leaves open: all those it did
/// not find again, unless it read every record (`full`).
fn still_open(world: &World, findings: &[TamperFinding], full: bool) -> Vec<u64> {
    if full {
        return Vec::new();
    }
    world
        .scans
        .open
        .keys()
        .filter(|seq| !findings.iter().any(|f| f.seq == **seq))
        .copied()
        .collect()
}

/// `detect-tampering` on `timeline` by `by`: every stored record of the range checked, the
/// stored head against the one this process folded, and the scan recorded in the log (a
/// `ScanResult`, bookkeeping that the read scope allows). `operator`: whether details of
/// records that do not touch the timeline may be shown; `hidden`: the timelines the caller
/// may not read, never named to them.
pub(super) async fn detect(
    engine: &Engine,
    recorder: Option<&Traveller>,
    timeline: &TimelineId,
    depth: ScanDepth,
    operator: bool,
    hidden: &[TimelineId],
) -> Result<TamperReport, ServiceError> {
    rules::referenced(&*engine.snapshot().await?, timeline)?;
    // Scans that are recorded take turns; one that only answers its caller need not wait.
    let _turn = match recorder {
        Some(_) => Some(one_at_a_time().await?),
        None => None,
    };
    // Read in turn: a scan that ran meanwhile is recorded in it.
    let served = engine.snapshot().await?;
    let key = &engine.config.log_key;
    let store = &engine.store;
    let head_seq = store.last_seq().await?;
    let mut findings = Vec::new();
    // Records that did not verify beyond the first FINDINGS_LISTED: counted, not kept.
    let mut not_listed = 0u64;
    let chain_from = match store.chain().await? {
        Some(meta) if meta.fingerprint == key.fingerprint() => Some(meta.from),
        Some(meta) => {
            findings.push(TamperFinding {
                seq: 1,
                kind: FindingKind::KeyMismatch,
                written_at: None,
                op: None,
                timelines: Vec::new(),
                reason: format!(
                    "the store was chained with another log key (fingerprint {}; this server's \
                     is {}): no record can be proven with this key",
                    chain::short(&meta.fingerprint),
                    chain::short(&key.fingerprint())
                ),
            });
            // Nothing was read: it clears nothing and moves the next scan's start nowhere.
            let checked_to = served.scans.last_head.unwrap_or(0);
            let recorded = record(engine, recorder, checked_to, &findings, 0, false).await;
            let scanned = Scanned {
                since: Since::Start,
                from_seq: 1,
                checked: 0,
                head_seq,
                chain_from: None,
                earlier: still_open(&served, &findings, false),
                not_listed: 0,
            };
            return Ok(report(
                timeline, findings, &scanned, recorded, operator, hidden,
            ));
        }
        None => None,
    };
    let since = match depth {
        ScanDepth::Full => Since::Start,
        ScanDepth::Recent => match served.scans.last_head {
            Some(seq) => Since::Scan(seq),
            None => store
                .snapshots()
                .await?
                .first()
                .map_or(Since::Start, |s| Since::Snapshot(s.seq)),
        },
    };
    let from_seq = match since {
        Since::Start => 1,
        Since::Scan(seq) | Since::Snapshot(seq) => seq + 1,
    };
    let mut previous = link_before(engine, from_seq).await?;
    let mut after = from_seq - 1;
    let mut checked = 0;
    let mut cut_short = false;
    loop {
        let (records, hole) = page_after(engine, after).await?;
        // Checking the links grows with the log: on a heavy thread, a page at a time.
        let page_key = key.clone();
        let (link, found, last) = super::heavy::run("a check of the log", move || {
            let mut link = previous;
            let mut found = Vec::new();
            for record in &records {
                let (next, checked_record) = check(&page_key, &link, record);
                link = next;
                found.extend(checked_record.err());
            }
            Ok((
                link,
                found,
                records.last().map(|r| (r.seq, records.len() as u64)),
            ))
        })
        .await?;
        previous = link;
        let room = FINDINGS_LISTED.saturating_sub(findings.len());
        not_listed += found.len().saturating_sub(room) as u64;
        findings.extend(found.into_iter().take(room));
        let records_empty = last.is_none();
        if let Some((seq, n)) = last {
            after = seq;
            checked += n;
        }
        if let Some(missing) = hole {
            findings.push(TamperFinding {
                seq: missing,
                kind: FindingKind::Gap,
                written_at: None,
                op: None,
                timelines: Vec::new(),
                reason: format!(
                    "record {missing} is missing: records were deleted; the records after it \
                     were not checked"
                ),
            });
            cut_short = true;
            break;
        }
        if records_empty {
            break;
        }
    }
    if head_seq < served.seq {
        findings.push(TamperFinding {
            seq: head_seq + 1,
            kind: FindingKind::Truncated,
            written_at: None,
            op: None,
            timelines: Vec::new(),
            reason: format!(
                "the stored log ends at record {head_seq}, but this server already folded \
                 records up to {}: the records after {head_seq} were removed",
                served.seq
            ),
        });
    }
    // The store against this replica's witness: a chain record removed or rewritten, a log
    // shorter than the head witnessed (said once, when the served head said it already).
    if let Some(found) = engine.witness_problem(head_seq).await? {
        let kind = match found {
            Disagreement::Shorter { .. } => FindingKind::Truncated,
            _ => FindingKind::Rechained,
        };
        if !findings
            .iter()
            .any(|f| f.kind == kind && f.seq == found.seq())
        {
            findings.push(TamperFinding {
                seq: found.seq(),
                kind,
                written_at: None,
                op: None,
                timelines: Vec::new(),
                reason: found.explain(None),
            });
        }
    }
    // Checked up to `after`: the next recent scan starts there, so one cut short by a hole
    // meets the hole again rather than skipping what lies behind it.
    let full = depth == ScanDepth::Full && !cut_short;
    let recorded = record(engine, recorder, after, &findings, not_listed, full).await;
    let scanned = Scanned {
        since,
        from_seq,
        checked,
        head_seq,
        chain_from,
        earlier: still_open(&served, &findings, full),
        not_listed,
    };
    Ok(report(
        timeline, findings, &scanned, recorded, operator, hidden,
    ))
}

/// Appends the `ScanResult` of a scan that checked the stored log up to `checked_to` and found
/// `findings` (`full`: in every record up to there) as `recorder`; answers its seq. A store that
/// refuses the append (as below a truncated log) does not hide the findings: the scan is still
/// answered, without a recorded seq. A caller who may not write (`recorder` is `None`) gets
/// the same answer, and nothing is appended.
async fn record(
    engine: &Engine,
    recorder: Option<&Traveller>,
    checked_to: u64,
    findings: &[TamperFinding],
    not_listed: u64,
    full: bool,
) -> Option<u64> {
    let by = recorder?;
    let written = engine
        .write(Some(by), |world, now| {
            let op = Op::ScanResult {
                head_seq: checked_to,
                findings: findings.to_vec(),
                not_listed,
                full,
                at: now,
            };
            Ok((vec![op], world.seq + 1))
        })
        .await;
    match written {
        Ok(seq) => Some(seq),
        Err(e) => {
            tracing::warn!(error = %e, "a detect-tampering scan could not be recorded");
            None
        }
    }
}

fn report(
    timeline: &TimelineId,
    mut findings: Vec<TamperFinding>,
    scanned: &Scanned,
    recorded_seq: Option<u64>,
    operator: bool,
    hidden: &[TimelineId],
) -> TamperReport {
    let Scanned {
        since,
        from_seq,
        checked,
        head_seq,
        chain_from,
        ref earlier,
        not_listed,
    } = *scanned;
    if !operator {
        for f in findings
            .iter_mut()
            .filter(|f| !f.timelines.contains(timeline))
        {
            f.op = None;
            f.written_at = None;
            f.timelines.clear();
        }
        for f in &mut findings {
            f.timelines.retain(|t| !hidden.contains(t));
        }
    }
    let after = match since {
        Since::Start => None,
        Since::Scan(seq) => Some(format!(
            "the last scan, which checked up to record {}",
            grouped(seq)
        )),
        Since::Snapshot(seq) => Some(format!("the newest snapshot, at record {}", grouped(seq))),
    };
    // What was read, said as a clause.
    let range = match (&after, checked) {
        (None, 0) => "the stored log has no records".to_owned(),
        (Some(after), 0) => format!(
            "no records after {after} to check; ask for scan_depth full to check every record"
        ),
        (after, _) => format!(
            "{} record{} verified ({}–{}){}",
            grouped(checked),
            if checked == 1 { "" } else { "s" },
            grouped(from_seq),
            grouped(from_seq + checked - 1),
            after
                .as_ref()
                .map_or(String::new(), |a| format!(", those after {a}"))
        ),
    };
    let earlier_words = match earlier.as_slice() {
        [] => None,
        [seq] => Some(format!(
            "record {} found by an earlier scan is still open until a full scan no longer \
             finds it",
            grouped(*seq)
        )),
        seqs => Some(format!(
            "records {} found by earlier scans are still open until a full scan no longer \
             finds them",
            seqs.iter()
                .map(|s| grouped(*s))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    let details = match (findings.first(), &earlier_words) {
        (None, None) => format!("No tampering: {range}"),
        // Still tampered: what is open leads, so "TAMPERED: " before it reads true.
        (None, Some(earlier)) => {
            let mut open = earlier.clone();
            open.replace_range(..1, &open[..1].to_uppercase());
            format!("{open}; no new tampering: {range}")
        }
        (Some(first), _) => {
            let what = match (&first.op, first.timelines.as_slice()) {
                (Some(op), []) => format!(" ({op}"),
                (Some(op), timelines) => format!(
                    " ({op} in {}",
                    timelines
                        .iter()
                        .map(TimelineId::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                (None, _) => String::new(),
            };
            let what = match (&what.is_empty(), first.written_at) {
                (true, _) => what,
                (false, Some(at)) => format!("{what}, written {})", format_instant(&at)),
                (false, None) => format!("{what})"),
            };
            let more = match findings.len() as u64 + not_listed {
                1 => String::new(),
                n => format!(
                    "; {} more finding{}{}",
                    grouped(n - 1),
                    if n == 2 { "" } else { "s" },
                    if not_listed > 0 {
                        format!(
                            " ({} not listed: the first {FINDINGS_LISTED} records are)",
                            grouped(not_listed)
                        )
                    } else {
                        String::new()
                    }
                ),
            };
            let earlier = earlier_words.map_or(String::new(), |e| format!("; {e}"));
            format!(
                "Record {}{what}: {}{more}{earlier}",
                grouped(first.seq),
                first.reason
            )
        }
    };
    TamperReport {
        status: "complete".into(),
        tampering_detected: !findings.is_empty() || !earlier.is_empty(),
        details,
        findings,
        records_checked: checked,
        from_seq,
        head_seq,
        chain_from,
        recorded_seq,
        findings_not_listed: not_listed,
    }
}

/// 12345 as "12,345".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `validate-integrity` on `timeline` as of `timestamp`, against `served` (what this process
/// answers from).
pub(super) async fn validate(
    engine: &Engine,
    served: Arc<World>,
    timeline: &TimelineId,
    timestamp: Option<Instant>,
) -> Result<IntegrityReport, ServiceError> {
    let state = rules::referenced(&served, timeline)?;
    let at = match timestamp {
        Some(t) => in_range("timestamp", t)?,
        None => engine.now(),
    };
    let _turn = one_at_a_time().await?;
    let key = &engine.config.log_key;
    // The verified log, folded again from the first record up to what is served. A record
    // that fails is skipped; one that then cannot be applied (it builds on a skipped one) is
    // skipped too.
    let mut replay = World::default();
    let mut previous = key.genesis();
    let mut failed: Vec<(u64, Claims)> = Vec::new();
    let mut unproven_from = None;
    'pages: while replay.seq < served.seq {
        let (records, hole) = page_after(engine, replay.seq).await?;
        if records.is_empty() && hole.is_none() {
            // The stored log ends before what is served: cut off.
            unproven_from = Some(replay.seq + 1);
            break;
        }
        // Checking and folding grow with the log: on a heavy thread, a page at a time.
        let (page_key, up_to) = (key.clone(), served.seq);
        let (folded, link, page_failed, past_served) =
            super::heavy::run("a validation of the log", move || {
                let mut link = previous;
                let mut failed = Vec::new();
                for record in records {
                    if record.seq > up_to {
                        return Ok((replay, link, failed, true));
                    }
                    let (next, checked) = check(&page_key, &link, &record);
                    link = next;
                    match checked {
                        Ok(envelope) => {
                            if replay.apply(record.seq, envelope.change).is_err() {
                                replay.seq = record.seq;
                            }
                        }
                        Err(_) => {
                            failed.push((record.seq, Claims::of(&record.body)));
                            replay.seq = record.seq;
                        }
                    }
                }
                Ok((replay, link, failed, false))
            })
            .await?;
        replay = folded;
        previous = link;
        failed.extend(page_failed);
        if past_served {
            break 'pages;
        }
        if let Some(missing) = hole {
            if missing <= served.seq {
                unproven_from = Some(missing);
            }
            break;
        }
    }
    // A store that is not the one witnessed (its chain record removed or rewritten, another
    // record at the witnessed head) proves nothing it serves.
    let last_seq = engine.store.last_seq().await?;
    let replaced = engine
        .witness_problem(last_seq)
        .await?
        .filter(|found| !matches!(found, Disagreement::Shorter { .. }));
    let suspect = failed
        .iter()
        .find(|(_, claims)| claims.touches(timeline))
        .map(|(seq, _)| *seq);
    let why_missing = || match (suspect, unproven_from) {
        (Some(seq), _) => format!(
            "the verified log does not produce it as served: record {seq}, which says it \
             touches this timeline, fails verification"
        ),
        (None, Some(seq)) => format!(
            "the stored log has no record {seq} (deleted, or cut off), so it cannot be proven"
        ),
        (None, None) => "the verified log does not produce it as served".into(),
    };
    let proven = replay.timelines.get(timeline);
    let mut examined = 0;
    let mut failures = Vec::new();
    for event in state.history.iter().filter(|e| e.time <= at) {
        examined += 1;
        let produced = proven.and_then(|p| p.history.current(&event.id));
        let reason = if let Some(found) = &replaced {
            Some(found.explain(None))
        } else if produced.is_none_or(|p| p != event) {
            Some(why_missing())
        } else {
            malformed_lineage(&state.history, event)
        };
        if let Some(reason) = reason {
            failures.push(IntegrityFailure {
                id: event.id.to_string(),
                seq: replaced.as_ref().map_or(suspect, |found| Some(found.seq())),
                reason,
            });
        }
    }
    for (key, entry) in state.data.iter().filter(|((t, _), _)| *t <= at) {
        examined += 1;
        let produced = proven.and_then(|p| p.data.get(key));
        if let Some(found) = &replaced {
            failures.push(IntegrityFailure {
                id: entry.data_id.to_string(),
                seq: Some(found.seq()),
                reason: found.explain(None),
            });
        } else if produced.is_none_or(|p| p != entry) {
            failures.push(IntegrityFailure {
                id: entry.data_id.to_string(),
                seq: suspect,
                reason: why_missing(),
            });
        }
    }
    let passed = examined - failures.len() as u64;
    Ok(IntegrityReport {
        status: "validated".into(),
        integrity_score: integrity_score(passed, examined),
        examined,
        passed,
        failures,
        timestamp: at,
    })
}

/// A current event's lineage must be well formed: it is its lineage's one head, what it
/// supersedes points back at it, and its causes are events of the timeline.
fn malformed_lineage(
    history: &crate::model::History,
    event: &crate::model::Event,
) -> Option<String> {
    if event.superseded_by.is_some() || history.head_of(&event.id).is_none_or(|h| h.id != event.id)
    {
        return Some("it is served as current, but its lineage has another head".into());
    }
    if let Some(old) = &event.supersedes
        && history
            .get(old)
            .is_none_or(|o| o.superseded_by.as_ref() != Some(&event.id))
    {
        return Some(format!(
            "it supersedes '{old}', which does not name it as its successor"
        ));
    }
    event
        .causes
        .iter()
        .find(|c| history.get(c).is_none())
        .map(|c| format!("its cause '{c}' is not an event of this timeline"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(seq: u64, kind: FindingKind) -> TamperFinding {
        TamperFinding {
            seq,
            kind,
            written_at: None,
            op: None,
            timelines: Vec::new(),
            reason: format!("record {seq} is wrong"),
        }
    }

    fn at(hour: u32) -> Instant {
        crate::model::parse_instant("at", &format!("2026-11-24T{hour:02}:00:00Z")).expect("time")
    }

    fn open(scans: &Scans) -> Vec<(u64, FindingKind, Instant)> {
        scans
            .open
            .values()
            .map(|o| (o.finding.seq, o.finding.kind, o.found_at))
            .collect()
    }

    /// Open findings keep the first hundred records (by record) and count the rest, across
    /// `recent` scans that add to them; the log's shape always shows; a full scan clears both.
    #[test]
    fn open_findings_list_a_hundred_records_and_count_the_rest() {
        let mut scans = Scans::default();
        let many = |from: u64, n: u64| {
            (from..from + n)
                .map(|seq| finding(seq, FindingKind::Modified))
                .collect::<Vec<_>>()
        };
        // What a scan lists is at most a hundred; it says how many more it counted.
        scans.record(200, many(1, 100), 5, false, at(1));
        assert_eq!((scans.open.len(), scans.not_listed), (100, 5));
        // A recent scan adds to them: past the hundred, counted; a gap is always listed.
        let mut later = many(150, 3);
        later.push(finding(190, FindingKind::Gap));
        scans.record(300, later, 0, false, at(2));
        assert_eq!((scans.open.len(), scans.not_listed), (101, 8));
        assert!(scans.open.contains_key(&190), "the gap shows");
        assert!(
            !scans.open.contains_key(&150),
            "a record past the hundred is counted"
        );
        // Found again, a listed record stays listed (not counted twice).
        scans.record(310, many(1, 1), 0, false, at(3));
        assert_eq!((scans.open.len(), scans.not_listed), (101, 8));
        scans.record(400, Vec::new(), 0, true, at(4));
        assert_eq!((scans.open.len(), scans.not_listed), (0, 0));
    }

    #[test]
    fn a_recent_scan_adds_findings_and_only_a_full_one_clears_them() {
        let mut scans = Scans::default();
        scans.record(10, vec![finding(4, FindingKind::Modified)], 0, false, at(1));
        assert_eq!(scans.last_head, Some(10));
        // Found again later: the same finding, first found at 1:00.
        scans.record(
            12,
            vec![
                finding(4, FindingKind::Modified),
                finding(11, FindingKind::Gap),
            ],
            0,
            false,
            at(2),
        );
        // A recent scan that does not find it again (it did not read it) leaves it open.
        let unchanged = scans.open.clone();
        scans.record(15, Vec::new(), 0, false, at(3));
        assert!(
            scans.open.ptr_eq(&unchanged),
            "nothing changed, nothing replaced"
        );
        assert_eq!(
            open(&scans),
            [
                (4, FindingKind::Modified, at(1)),
                (11, FindingKind::Gap, at(2))
            ]
        );
        // A full scan replaces them: what it no longer finds is cleared.
        scans.record(16, vec![finding(11, FindingKind::Gap)], 0, true, at(4));
        assert_eq!(open(&scans), [(11, FindingKind::Gap, at(2))]);
        assert_eq!(scans.last_head, Some(16));
        scans.record(17, Vec::new(), 0, true, at(5));
        assert!(scans.open.is_empty());
    }

    #[test]
    fn large_counts_are_grouped_by_thousands() {
        assert_eq!(grouped(7), "7");
        assert_eq!(grouped(1_234), "1,234");
        assert_eq!(grouped(12_345_678), "12,345,678");
    }

    #[test]
    fn a_record_says_which_timelines_it_touches() {
        let claims = Claims::of(
            r#"{"by":"ada","at":"2026-11-24T10:00:00Z","change":{"op":"manipulate","timeline":"primary","old":"evt_a","new":{"id":"evt_b"}}}"#,
        );
        assert_eq!(claims.op.as_deref(), Some("manipulate"));
        assert_eq!(claims.timelines, [TimelineId::primary()]);
        assert!(claims.touches(&TimelineId::primary()));
        assert!(
            !Claims::of(r#"{"change":{"op":"register_item","item":{}}}"#)
                .touches(&TimelineId::primary())
        );
        assert!(Claims::of("not json").touches(&TimelineId::primary()));
    }
}
