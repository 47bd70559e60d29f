//! The access log (guide operations §5.3): who read, changed, travelled into, administered or
//! tried and failed to reach each timeline, minute by minute.
//!
//! Two sources, so that a read never becomes a write:
//! - **Accepted changes** are the log's own records: each names who made it and when (the
//!   envelope), so folding it counts one `write`, `travel` or `admin` access per timeline it
//!   touches ([`World::apply_recorded`]). Exact, and durable with the change itself.
//! - **Reads and refusals** are counted in this process's memory ([`Counters`]), per
//!   (timeline or service, minute, traveller, action, operation, outcome), and appended as one
//!   [`Op::AccessSummary`] record through the ordinary group commit: every
//!   `--access-log-flush` (reads), within a second of a refusal, and on an orderly stop. A
//!   failed append keeps the counts for the next flush; a `kill -9` loses at most the counts
//!   not flushed yet, never a write.
//!
//! What is folded is kept for `--access-log-retention` (by the records' own times, so every
//! replica keeps the same); older summaries stay in the op log only.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(super) use super::world::access_book::AccessImage;
pub use super::world::access_book::{AccessBook, Counted, Key, Outcome, Tally, minute_of};
use super::{Op, World};
use crate::error::ServiceError;
use crate::model::{Instant, TimelineId, Traveller};
use crate::service::{AccessAction, Right};

/// Most distinct keys one flush carries; accesses beyond them are counted in `dropped`.
pub const FLUSH_KEYS: usize = 10_000;
/// How often read counts are flushed (`--access-log-flush`).
pub const DEFAULT_FLUSH: Duration = Duration::from_secs(10);
/// How long folded summaries are kept in memory (`--access-log-retention`).
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(90 * 24 * 3600);
/// A refusal is flushed within this long of happening; refusals in between share the flush.
const REFUSAL_WITHIN: Duration = Duration::from_millis(900);
/// The least wait after a refusal before its flush, so a burst shares one record.
const REFUSAL_COALESCE: Duration = Duration::from_millis(100);
/// The traveller of a request without a valid token.
pub const UNKNOWN_USER: &str = "unknown";

/// The operation an op records, as the access log names it.
pub fn operation(op: &Op) -> &'static str {
    match op {
        Op::CreateTimeline { .. } => "create_timeline",
        Op::DeleteTimeline { .. } => "delete_timeline",
        Op::AddEvents { .. } => "add_events",
        Op::Manipulate { .. } => "manipulate_event",
        Op::Revert { .. } => "revert_event",
        Op::RegisterItem { .. } => "register_item",
        Op::SetAnchor { .. } => "set_anchor",
        Op::AdjustAnchor { .. } => "adjust_anchor",
        Op::DeleteAnchor { .. } => "delete_anchor",
        Op::Travel { .. } => "travel",
        Op::Pause { .. } => "pause_time",
        Op::Resume { .. } => "resume_time",
        Op::CreateScript { .. } => "create_script",
        Op::DeleteScript { .. } => "delete_script",
        Op::CreateJob { .. } => "schedule",
        Op::CancelJob { .. } => "cancel_schedule",
        Op::Remember { .. } => "remember",
        Op::Merge { .. } => "merge_timelines",
        Op::Ran { .. } => "automation",
        Op::StoreData { .. } => "store_data",
        Op::CopyData { .. } => "merge_data",
        Op::SetReadStaleness { .. } => "enable_caching",
        Op::ResolveConflict { .. } => "resolve_conflict",
        Op::MergeCompleted { .. } => "complete_merge",
        Op::MergeAborted { .. } => "abort_merge",
        Op::Isolate { .. } => "isolate_event",
        Op::LiftIsolation { .. } => "lift_isolation",
        Op::SetAccessControl { .. } => "set_access_control",
        Op::RestrictTraveller { .. } => "restrict_time_travel",
        Op::AccessSummary { .. } => "access_summary",
        Op::ScanResult { .. } => "detect_tampering",
    }
}

/// The accesses an accepted `op` is, on `world` before it is applied: one per timeline it
/// touches. A journey is `travel` into where it arrives; an access-control change or a
/// deletion is `admin`; every other change is a `write` of the timelines it changes (a
/// merge's source is only read, and so not a write of it). A new timeline is written by its
/// creation.
pub fn touched(world: &World, op: &Op) -> Vec<(TimelineId, AccessAction)> {
    match op {
        Op::Travel { journey } => vec![(journey.to_timeline.clone(), AccessAction::Travel)],
        Op::CreateTimeline { timeline } => vec![(timeline.id.clone(), AccessAction::Write)],
        _ => {
            let needs = super::access::needs(world, op);
            let changes = needs.iter().any(|(_, right)| *right >= Right::Write);
            needs
                .into_iter()
                .filter(|(_, right)| !changes || *right >= Right::Write)
                .map(|(timeline, right)| {
                    let action = if right == Right::Admin {
                        AccessAction::Admin
                    } else {
                        AccessAction::Write
                    };
                    (timeline, action)
                })
                .collect()
        }
    }
}

impl World {
    /// Folds record `seq` (`op`, made by `by` at `at`) into the state, and the accesses it is
    /// into the access log: the one way records are applied, by a write and by a catch-up
    /// alike. Records without a traveller (history as shipped, the access summaries
    /// themselves) or without a time (older records) are no traveller's access.
    pub fn apply_recorded(
        &mut self,
        seq: u64,
        by: Option<&Traveller>,
        at: Option<Instant>,
        op: Op,
        retention: Duration,
    ) -> Result<(), super::world::ApplyError> {
        let accesses = match (by, at) {
            (Some(by), Some(at)) => Some((by, at, touched(self, &op), operation(&op))),
            _ => None,
        };
        self.apply(seq, op)?;
        if let Some((by, at, touched, operation)) = accesses {
            for (timeline, action) in touched {
                let key = Key {
                    minute: minute_of(at),
                    user: by.to_string(),
                    action,
                    operation: operation.to_owned(),
                    outcome: Outcome::Allowed,
                };
                let tally = Tally {
                    count: 1,
                    last_at: at,
                };
                self.access.add(Some(timeline), key, tally);
            }
        }
        if let Some(at) = at {
            self.access.retain(at, retention);
        }
        Ok(())
    }
}

/// Counts taken from one replica's memory and handed to the replica holding the writer's lease,
/// which appends them with its own: a replica that only reads (or refuses) never takes the
/// lease for its access log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Handover {
    /// The counters.
    pub counters: Vec<Counted>,
    /// Accesses no flush could carry.
    #[serde(default)]
    pub dropped: u64,
    /// When the last of them was.
    #[serde(default)]
    pub dropped_at: Option<Instant>,
}

/// Takes a replica's counts to the holder of the writer's lease (the server's forwarding does,
/// signed like a forwarded write: `server::forward`).
pub trait Courier: Send + Sync {
    /// Hands `counts` to the holder; `Err` says why it could not (they are then appended here,
    /// taking the lease).
    fn deliver(&self, counts: Handover) -> futures::future::BoxFuture<'static, Result<(), String>>;
}

/// Where the courier is kept once the server sets one.
#[derive(Default)]
struct CourierSlot(Mutex<Option<std::sync::Arc<dyn Courier>>>);

impl std::fmt::Debug for CourierSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CourierSlot")
    }
}

/// Reads and refusals counted in this process's memory, not yet in the log.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pending: Mutex<Pending>,
    /// Takes the counts to the lease's holder while another process holds it.
    courier: CourierSlot,
    /// Told of each refusal, so that it is flushed within a second.
    refused: std::sync::Arc<tokio::sync::Notify>,
    /// Held while a flush is appended: the flush at an orderly stop waits for one in flight
    /// (and takes what a failed one put back) instead of missing its counts.
    flushing: tokio::sync::Mutex<()>,
}

/// The counts waiting for a flush.
#[derive(Debug, Default)]
struct Pending {
    counts: HashMap<(Option<TimelineId>, Key), Tally>,
    /// Accesses that found no room among [`FLUSH_KEYS`] keys, and the minute of the last.
    dropped: u64,
    dropped_at: Option<Instant>,
}

impl Pending {
    /// The counters, in the order a summary records them.
    fn counted(&self) -> Vec<Counted> {
        let mut counters: Vec<Counted> = self
            .counts
            .iter()
            .map(|((timeline, key), tally)| Counted {
                timeline: timeline.clone(),
                key: key.clone(),
                tally: *tally,
            })
            .collect();
        counters.sort_by(|a, b| (&a.timeline, &a.key).cmp(&(&b.timeline, &b.key)));
        counters
    }

    /// Counts `tally` under `key`, or as dropped when the keys are full.
    fn add(&mut self, key: (Option<TimelineId>, Key), tally: Tally) {
        let full = self.counts.len() >= FLUSH_KEYS;
        match self.counts.get_mut(&key) {
            Some(t) => *t = t.merged(tally),
            None if full => {
                self.dropped = self.dropped.saturating_add(tally.count);
                self.dropped_at = self.dropped_at.max(Some(tally.last_at));
            }
            None => {
                self.counts.insert(key, tally);
            }
        }
    }
}

impl Counters {
    /// Counts one access now: an in-memory map update, no query, no wait.
    pub(super) fn note(
        &self,
        timeline: Option<TimelineId>,
        user: &str,
        action: AccessAction,
        operation: &str,
        outcome: Outcome,
        now: Instant,
    ) {
        let key = Key {
            minute: minute_of(now),
            user: user.to_owned(),
            action,
            operation: operation.to_owned(),
            outcome,
        };
        let tally = Tally {
            count: 1,
            last_at: now,
        };
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add((timeline, key), tally);
        if outcome == Outcome::Refused {
            self.refused.notify_one();
        }
    }

    /// Counts `handed` (another replica's) as if counted here.
    fn receive(&self, handed: Handover) {
        let refused = handed
            .counters
            .iter()
            .any(|c| c.key.outcome == Outcome::Refused);
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for c in handed.counters {
            pending.add((c.timeline, c.key), c.tally);
        }
        pending.dropped = pending.dropped.saturating_add(handed.dropped);
        pending.dropped_at = pending.dropped_at.max(handed.dropped_at);
        drop(pending);
        if refused {
            self.refused.notify_one();
        }
    }

    fn courier(&self) -> Option<std::sync::Arc<dyn Courier>> {
        self.courier
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes every count for a flush.
    fn take(&self) -> Pending {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Puts back the counts of a flush that failed, beside those counted meanwhile.
    fn restore(&self, taken: Pending) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for (key, tally) in taken.counts {
            pending.add(key, tally);
        }
        pending.dropped = pending.dropped.saturating_add(taken.dropped);
        pending.dropped_at = pending.dropped_at.max(taken.dropped_at);
    }

    /// The counters not flushed yet of `timeline` (or the service's) within `from..=to`.
    pub(super) fn unflushed(
        &self,
        timeline: Option<&TimelineId>,
        from: Instant,
        to: Instant,
    ) -> (Vec<(Key, Tally)>, u64) {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let from = minute_of(from);
        let found = pending
            .counts
            .iter()
            .filter(|((t, k), _)| t.as_ref() == timeline && k.minute >= from && k.minute <= to)
            .map(|((_, k), t)| (k.clone(), *t))
            .collect();
        let dropped = if pending.dropped_at.is_some_and(|d| d >= from && d <= to) {
            pending.dropped
        } else {
            0
        };
        (found, dropped)
    }
}

impl super::Engine {
    /// Counts one access by `user` (a read, or a refused attempt) in memory; see [`Counters`].
    pub fn note_access(
        &self,
        timeline: Option<TimelineId>,
        user: &str,
        action: AccessAction,
        operation: &str,
        outcome: Outcome,
    ) {
        // A name that is no timeline here (a mistyped path, a guess) is service-wide: the
        // log keeps no counters for timelines that do not exist.
        let timeline = timeline.filter(|t| self.snapshot_now().timelines.contains_key(t));
        self.access
            .note(timeline, user, action, operation, outcome, self.now());
    }

    /// Counts a refused attempt by `user`.
    pub fn note_refusal(&self, timeline: Option<TimelineId>, user: &str, operation: &str) {
        self.note_access(
            timeline,
            user,
            AccessAction::UnauthorizedAccessAttempt,
            operation,
            Outcome::Refused,
        );
    }

    /// Has `courier` take this process's counts to the writer's lease holder while that is
    /// another process (see [`Handover`]).
    pub fn set_access_courier(&self, courier: std::sync::Arc<dyn Courier>) {
        *self
            .access
            .courier
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(courier);
    }

    /// Counts what another replica handed over, to be appended with this process's own.
    pub fn receive_access_counts(&self, handed: Handover) {
        self.access.receive(handed);
    }

    /// Appends the counts not flushed yet as one [`Op::AccessSummary`] record, through the
    /// ordinary group commit; while another process holds the writer's lease, hands them to it
    /// instead (appending them here, taking the lease, only when it cannot be reached).
    /// Answers whether there was anything to flush; when the append fails, the counts are kept
    /// for the next flush.
    pub async fn flush_access_log(&self) -> Result<bool, ServiceError> {
        let _one_at_a_time = self.access.flushing.lock().await;
        let taken = self.access.take();
        if taken.counts.is_empty() && taken.dropped == 0 {
            return Ok(false);
        }
        if self.lease_elsewhere()
            && let Some(courier) = self.access.courier()
        {
            let handed = Handover {
                counters: taken.counted(),
                dropped: taken.dropped,
                dropped_at: taken.dropped_at,
            };
            match courier.deliver(handed).await {
                Ok(()) => {
                    metrics::counter!(crate::metrics::ACCESS_COUNTS_HANDED).increment(1);
                    return Ok(true);
                }
                Err(why) => tracing::debug!(
                    %why,
                    "the access log's counts could not be handed to the writer's lease holder; \
                     appending them here"
                ),
            }
        }
        let op = Op::AccessSummary {
            counters: taken.counted(),
            dropped: taken.dropped,
        };
        match self.write(None, |_, _| Ok((vec![op.clone()], ()))).await {
            Ok(()) => Ok(true),
            Err(e) => {
                self.access.restore(taken);
                Err(e)
            }
        }
    }

    /// Flushes the access log in the background: every `every` (reads), and within a second
    /// of a refusal. Stops when the engine is dropped. A failed flush is logged; its counts
    /// wait for the next.
    pub fn spawn_access_log(&self, every: Duration) {
        let engine = self.me.clone();
        let refused = std::sync::Arc::clone(&self.access.refused);
        tokio::spawn(async move {
            let mut last = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(last + every) => {}
                    () = refused.notified() => {
                        let now = tokio::time::Instant::now();
                        let at = (now + REFUSAL_COALESCE).max(last + REFUSAL_WITHIN);
                        tokio::time::sleep_until(at.min(now + REFUSAL_WITHIN)).await;
                    }
                }
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                last = tokio::time::Instant::now();
                if let Err(e) = engine.flush_access_log().await {
                    tracing::warn!(%e, "flushing the access log failed; its counts are kept");
                }
            }
        });
    }
}

/// The entries of timeline `timeline`'s access log that `req` asks for, keyed for paging (in
/// time order), with the accesses no flush could carry and where retention begins: what the
/// log folded (`durable`) and this process's counts not flushed yet (not `durable`).
/// Service-wide entries are shown to operators only.
pub(super) fn entries(
    engine: &super::Engine,
    world: &World,
    timeline: &TimelineId,
    service_wide: bool,
    range: Option<&crate::model::TimeRange>,
    now: Instant,
    retention: Duration,
) -> (Vec<(String, crate::service::AccessLogEntry)>, u64, Instant) {
    let retained_from = chrono::TimeDelta::from_std(retention)
        .ok()
        .and_then(|r| now.checked_sub_signed(r))
        .map_or(now, minute_of);
    let (from, to) = match range {
        Some(r) => (r.start, r.end),
        None => (now - chrono::TimeDelta::hours(24), now),
    };
    let from = from.max(retained_from);
    let scopes: &[Option<&TimelineId>] = if service_wide {
        &[Some(timeline), None]
    } else {
        &[Some(timeline)]
    };
    let mut found = Vec::new();
    let mut dropped = world.access.dropped_within(from, to);
    for scope in scopes {
        let row = |key: &Key, tally: &Tally, durable: bool| {
            let entry = crate::service::AccessLogEntry {
                user_id: key.user.clone(),
                action: key.action,
                timestamp: key.minute,
                count: tally.count,
                last_at: tally.last_at,
                operation: key.operation.clone(),
                outcome: key.outcome.as_str().into(),
                durable,
                scope: if scope.is_some() {
                    "timeline"
                } else {
                    "service"
                }
                .into(),
            };
            let sort = format!(
                "{}|{}|{}|{:?}|{}|{:?}|{}",
                key.minute.format("%Y%m%dT%H%M"),
                entry.scope,
                key.user,
                key.action,
                key.operation,
                key.outcome,
                u8::from(!durable)
            );
            (sort, entry)
        };
        found.extend(
            world
                .access
                .within(*scope, from, to)
                .map(|(k, t)| row(k, t, true)),
        );
        let (unflushed, _) = engine.access.unflushed(*scope, from, to);
        found.extend(unflushed.iter().map(|(k, t)| row(k, t, false)));
    }
    dropped += engine.access.unflushed(None, from, to).1;
    (found, dropped, retained_from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Instant {
        crate::model::parse_instant("t", s).unwrap()
    }

    fn key(minute: &str, user: &str) -> Key {
        Key {
            minute: at(minute),
            user: user.into(),
            action: AccessAction::Read,
            operation: "get_timeline".into(),
            outcome: Outcome::Allowed,
        }
    }

    #[test]
    fn counters_of_one_key_add_up_and_keep_the_last_time() {
        let mut book = AccessBook::default();
        let t = Some(TimelineId::primary());
        for (n, last) in [(2, "2026-01-01T00:00:10Z"), (3, "2026-01-01T00:00:05Z")] {
            let tally = Tally {
                count: n,
                last_at: at(last),
            };
            book.add(t.clone(), key("2026-01-01T00:00:00Z", "ada"), tally);
        }
        let found: Vec<_> = book
            .within(
                t.as_ref(),
                at("2026-01-01T00:00:00Z"),
                at("2026-01-01T01:00:00Z"),
            )
            .collect();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1.count, 5);
        assert_eq!(found[0].1.last_at, at("2026-01-01T00:00:10Z"));
    }

    #[test]
    fn retention_drops_what_is_older_and_says_where_it_begins() {
        let mut book = AccessBook::default();
        let t = Some(TimelineId::primary());
        let tally = Tally {
            count: 1,
            last_at: at("2026-01-01T00:00:00Z"),
        };
        book.add(t.clone(), key("2026-01-01T00:00:00Z", "old"), tally);
        book.add(t.clone(), key("2026-01-03T00:00:00Z", "new"), tally);
        book.retain(at("2026-01-03T00:00:30Z"), Duration::from_secs(24 * 3600));
        let users: Vec<_> = book
            .within(
                t.as_ref(),
                at("2025-12-01T00:00:00Z"),
                at("2026-02-01T00:00:00Z"),
            )
            .map(|(k, _)| k.user.clone())
            .collect();
        assert_eq!(users, ["new"]);
        assert_eq!(book.retained_from(), Some(at("2026-01-02T00:00:00Z")));
        // A summary of a minute retention already dropped is not folded back in.
        book.add(t.clone(), key("2026-01-01T00:00:00Z", "late"), tally);
        assert_eq!(
            book.within(
                t.as_ref(),
                at("2025-12-01T00:00:00Z"),
                at("2026-02-01T00:00:00Z")
            )
            .count(),
            1
        );
    }

    #[test]
    fn a_flush_carries_at_most_its_keys_and_counts_the_rest_as_dropped() {
        let counters = Counters::default();
        let now = at("2026-01-01T00:00:00Z");
        for i in 0..FLUSH_KEYS + 5 {
            counters.note(
                None,
                &format!("u{i}"),
                AccessAction::UnauthorizedAccessAttempt,
                "get",
                Outcome::Refused,
                now,
            );
        }
        // An existing key still counts.
        counters.note(
            None,
            "u0",
            AccessAction::UnauthorizedAccessAttempt,
            "get",
            Outcome::Refused,
            now,
        );
        let taken = counters.take();
        assert_eq!(taken.counts.len(), FLUSH_KEYS);
        assert_eq!(taken.dropped, 5);
        counters.restore(taken);
        let (found, dropped) = counters.unflushed(None, now, now);
        assert_eq!(found.len(), FLUSH_KEYS);
        assert_eq!(dropped, 5);
    }
}
