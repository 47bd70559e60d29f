//! Group commit: concurrent writes share one append (one transaction, one fsync).
//!
//! Writers decide one at a time against the *pending* world — the durable state plus every op
//! decided but not yet appended — so each decision sees the ones before it. Their ops collect in
//! the open batch. One task at a time (the flusher) appends the open batch, publishes the world
//! it leads to and tells the batch's writers; then it takes the batch that collected meanwhile,
//! until none is left. A writer answers only once its batch is durable. The flusher is a task
//! of its own, so a writer that goes away (a client disconnects, a request times out) never
//! leaves the others' batch unfinished. When an append fails, every decision made on top of it
//! is void: those writers decide again on the durable state.
//!
//! A store that queues appends (SQLite's writer thread) is handed the batch that collects while
//! the one before it is being written, chained to it, so the store goes from one append straight
//! to the next instead of waiting for this process to hear of the first and send the second.
//! The store refuses a chained append when the one before it failed; its writers decide again.
//!
//! Another process may have appended since the batch was decided (a second server replica
//! writing without the writer's lease, see `lease`, which makes this rare). The flusher learns
//! this with the store's write lock in hand: it catches up and *keeps* the lock while the
//! batch's writers decide again on the new state. Each of them holds a share of
//! a [`Rejoin`] until it has decided again; when the last lets go, every one of them is in the
//! open batch, and that batch is appended with the kept lock, so it cannot lose again. Under
//! any amount of contention a write therefore takes at most two rounds. The lock is released
//! after [`HOLD_FOR`] if nobody comes back for it.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{oneshot, watch};

use super::lease::Share;
use super::{Engine, Envelope, Op, World};
use crate::error::ServiceError;
use crate::model::{Instant, Traveller};
use crate::store::{Appending, Entry, LogLock, StoreError};

/// How many times a write is decided again. Two suffice when the write lock kept after a lost
/// race is used in time; the rest cover a kept lock that expired (see [`HOLD_FOR`]).
const WRITE_ATTEMPTS: u32 = 12;
/// Longest pause before deciding again when no kept lock is waiting; pauses grow from 1 ms and
/// are jittered so that writers who keep colliding fall out of step.
const MAX_BACKOFF_MS: u64 = 64;
/// How long the store's write lock is kept for the writers of a batch that lost a race. Their
/// second decision takes microseconds; the limit matters only when none of them has anything
/// left to write (they went away, or the new state refuses them), and bounds how long other
/// processes wait then.
const HOLD_FOR: Duration = Duration::from_millis(100);
/// How many batches the flusher keeps handed to a store that queues appends
/// ([`crate::store::Store::append_queued`]): the one being written and the next, so the store
/// goes from one to the next without waiting for this process in between.
const QUEUED: usize = 2;

/// How a batch ended, shared by every writer in it.
#[derive(Clone, Debug)]
enum Outcome {
    /// Appended and published.
    Durable,
    /// Decided on a state that is void (another process wrote first, or an earlier batch
    /// failed): decide again. With a [`Rejoin`] when the store's write lock is kept for the
    /// second decision: the state is caught up, so decide at once.
    Retry(Option<Arc<Rejoin>>),
    /// The store refused; nothing of the batch was written.
    Failed(ServiceError),
}

/// Shared by the writers of batches voided by a lost race until each has decided again (or
/// gone away); dropping the last share tells the flusher that the lock it kept can be used.
#[derive(Debug)]
pub(super) struct Rejoin(Option<oneshot::Sender<()>>);

impl Drop for Rejoin {
    fn drop(&mut self) {
        if let Some(rejoined) = self.0.take() {
            let _ = rejoined.send(());
        }
    }
}

/// Ops decided together, waiting to be appended.
#[derive(Debug)]
struct Batch {
    first_seq: u64,
    /// The records, each linked to the one before it (see [`crate::store::chain`]).
    entries: Vec<Entry>,
    /// The world once the batch is applied.
    world: Arc<World>,
    /// How the batch ended, for its writers to wait on; dropped unset only if the flusher
    /// panicked.
    outcome: watch::Sender<Option<Outcome>>,
    /// When it was last handed to the store, for [`crate::metrics`].
    handed: Option<std::time::Instant>,
    /// A share of the writer's lease, held until the batch has ended: the lease cannot move
    /// while it is appended, whether or not its writers still wait.
    lease: Option<Arc<Share>>,
}

impl Batch {
    fn end(&self, outcome: Outcome) {
        self.outcome.send_replace(Some(outcome));
    }

    /// Notes that the store is given the batch now.
    fn hand(mut self) -> Self {
        self.handed = Some(std::time::Instant::now());
        self
    }
}

/// What writers decide against, guarded by the engine's `pending` lock.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// The durable world plus every op decided since; `None` when nothing is pending, so the
    /// next writer starts from the store's latest state.
    world: Option<Arc<World>>,
    /// The batch collecting ops.
    open: Option<Batch>,
    /// The store's write lock, kept after a lost race for the next append (see the module's
    /// documentation).
    held: Option<Held>,
    /// How many locks were kept so far: tells a kept lock's expiry which one it is about.
    holds: u64,
    /// Whether a flusher task is running; it stops when it finds no open batch.
    flushing: bool,
}

/// A kept write lock.
struct Held {
    lock: Box<dyn LogLock>,
    generation: u64,
    /// Resolves when every writer it was kept for has decided again.
    rejoined: oneshot::Receiver<()>,
    /// When it is released whether or not they have.
    until: tokio::time::Instant,
}

impl fmt::Debug for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Held")
            .field("last_seq", &self.lock.last_seq())
            .field("generation", &self.generation)
            .finish()
    }
}

impl Engine {
    /// Runs a write made by `by` (`None` for history as shipped): `decide` looks at the latest
    /// world and the time, and returns the ops to log with the caller's answer. The answer is
    /// returned once the ops are durable; nothing is published unless the store took them.
    pub(crate) async fn write<T>(
        &self,
        by: Option<&Traveller>,
        decide: impl Fn(&World, Instant) -> Result<(Vec<Op>, T), ServiceError>,
    ) -> Result<T, ServiceError> {
        if self.lease_elsewhere() {
            // Taking the lease costs the process that holds it a pause: not for a write that
            // is refused or changes nothing (already paused, up to date) on the latest state.
            // Either answer rests on what this process knows, so it is given only once caught
            // up with what the holder appended.
            let seen = self.snapshot_now();
            let changes = |decided: &Result<(Vec<Op>, T), ServiceError>| {
                decided.as_ref().is_ok_and(|(ops, _)| !ops.is_empty())
            };
            let decided = decide(&seen, self.clock.now());
            if !changes(&decided) {
                self.catch_up().await?;
                let latest = self.snapshot_now();
                let decided = if latest.seq == seen.seq {
                    decided
                } else {
                    decide(&latest, self.clock.now())
                };
                if !changes(&decided) {
                    return decided.map(|(_, answer)| answer);
                }
            }
        }
        // Held until the write is durable, and by its batch too (a request cancelled while its
        // batch is appended must not let the lease go before the batch is durable).
        let lease = self.lease_share().await?.map(Arc::new);
        // Set while the store's write lock is kept for this writer's next decision.
        let mut rejoin: Option<Arc<Rejoin>> = None;
        for attempt in 0..WRITE_ATTEMPTS {
            // With the lock kept the state is caught up and the next append is ours: no pause.
            if attempt > 0 && rejoin.is_none() {
                let ceiling = (1u64 << attempt.min(6)).min(MAX_BACKOFF_MS);
                let pause = rand::random_range(0..=ceiling);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
            // Whether a refusal was already checked against the latest state.
            let mut refusal_rechecked = false;
            let (outcome, answer) = loop {
                let mut pending = self.pending.lock().await;
                // Optimistic: the first attempt decides on what this process knows. If another
                // process appended meanwhile, the append names a taken sequence and conflicts,
                // and the next attempt catches up first.
                let base = match &pending.world {
                    Some(world) => Arc::clone(world),
                    None => {
                        if attempt > 0 && rejoin.is_none() {
                            self.catch_up().await?;
                        }
                        self.snapshot_now()
                    }
                };
                let now = self.clock.now();
                let (ops, answer) = match decide(&base, now) {
                    // A refusal never reaches the store, so it must not rest on an old state:
                    // catch up and decide once more if anything new arrived. The catch-up is a
                    // query on PostgreSQL, so it runs without the writers' lock: refused
                    // requests (409s, 400s) must not make every writer queue behind it.
                    Err(refusal)
                        if attempt == 0 && pending.world.is_none() && !refusal_rechecked =>
                    {
                        drop(pending);
                        self.catch_up().await?;
                        if self.snapshot_now().seq == base.seq {
                            return Err(refusal);
                        }
                        refusal_rechecked = true;
                        continue;
                    }
                    decided => decided?,
                };
                if ops.is_empty() {
                    return Ok(answer);
                }
                let mut next = (*base).clone();
                let mut entries = Vec::with_capacity(ops.len());
                for op in ops {
                    let (seq, entry) = self.record(&next, by, now, &op)?;
                    next.apply_recorded(seq, by, Some(now), op, self.config.access_log_retention)
                        .map_err(|e| ServiceError::Internal(e.to_string()))?;
                    next.link = Some(entry.link);
                    entries.push(entry);
                }
                let next = Arc::new(next);
                pending.world = Some(Arc::clone(&next));
                let batch = pending.open.get_or_insert_with(|| Batch {
                    first_seq: base.seq + 1,
                    entries: Vec::new(),
                    world: Arc::clone(&next),
                    outcome: watch::Sender::new(None),
                    handed: None,
                    lease: None,
                });
                if batch.lease.is_none() {
                    batch.lease.clone_from(&lease);
                }
                batch.entries.extend(entries);
                batch.world = next;
                let outcome = batch.outcome.subscribe();
                self.start_flusher(&mut pending);
                self.opened.notify_one();
                // In the batch: the kept lock need not wait for this writer any longer.
                drop(rejoin.take());
                break (outcome, answer);
            };
            match ended(outcome).await {
                Outcome::Durable => return Ok(answer),
                Outcome::Retry(kept) => rejoin = kept,
                Outcome::Failed(e) => return Err(e),
            }
        }
        Err(ServiceError::Unavailable(
            "the store is busy with other writers; try again".into(),
        ))
    }

    /// The record that logs `op` after `world`'s last one: its envelope, linked to the record
    /// before it. Computed where the op is decided, so a batch decided again after a lost
    /// race is linked again too.
    fn record(
        &self,
        world: &World,
        by: Option<&Traveller>,
        at: Instant,
        op: &Op,
    ) -> Result<(u64, Entry), ServiceError> {
        let seq = world.seq + 1;
        let body = Envelope::encode(by, Some(at), op)
            .map_err(|e| ServiceError::Internal(format!("cannot encode a change: {e}")))?;
        let key = &self.config.log_key;
        let previous = world.link.unwrap_or_else(|| key.genesis());
        let link = key.link(&previous, seq, &body);
        Ok((seq, Entry { body, link }))
    }

    /// Starts the flusher unless it is running (the caller holds the `pending` lock).
    fn start_flusher(&self, pending: &mut Pending) {
        if pending.flushing {
            return;
        }
        // `self` is always reached through an `Arc`, so this only fails while the engine is
        // being dropped, when nobody is left to wait.
        let Some(engine) = self.me.upgrade() else {
            return;
        };
        pending.flushing = true;
        tokio::spawn(async move {
            let drained = std::panic::AssertUnwindSafe(engine.drain()).catch_unwind();
            if drained.await.is_err() {
                // The batch being appended was dropped with the panic, which its writers see
                // as a failure. What was decided on top of it is void; the next writer starts a
                // new flusher.
                let mut pending = engine.pending.lock().await;
                if let Some(built_on_it) = pending.open.take() {
                    built_on_it.end(Outcome::Retry(None));
                }
                pending.world = None;
                pending.flushing = false;
            }
        });
    }

    /// The flusher: appends open batches, oldest first, until there is none.
    async fn drain(&self) {
        // Batches handed to a store that queues appends, not yet answered, oldest first.
        let mut queued: VecDeque<(Batch, Appending)> = VecDeque::new();
        loop {
            if queued.is_empty() {
                let mut kept = self.pending.lock().await.held.take();
                if let Some(held) = &mut kept {
                    // Let every writer the lock was kept for into the open batch first.
                    let _ = tokio::time::timeout_at(held.until, &mut held.rejoined).await;
                }
                let mut pending = self.pending.lock().await;
                let Some(batch) = pending.open.take() else {
                    pending.flushing = false;
                    drop(pending);
                    if let Some(held) = kept {
                        held.lock.release().await;
                    }
                    return;
                };
                match kept {
                    Some(kept) => {
                        drop(pending);
                        self.append_locked(batch, Ok(kept.lock), Vec::new()).await;
                    }
                    None => match self
                        .store
                        .append_queued(batch.first_seq, &batch.entries, false)
                    {
                        Some(appending) => queued.push_back((batch.hand(), appending)),
                        None => {
                            drop(pending);
                            self.append(batch).await;
                        }
                    },
                }
                continue;
            }
            // While the oldest is being written, hand the store the batch that collects
            // meanwhile, so that it is written next without waiting for this task.
            let room = queued.len() < QUEUED;
            let answered = {
                let (_, oldest) = &mut queued[0];
                tokio::select! {
                    biased;
                    answer = oldest => Some(answer),
                    () = self.opened.notified(), if room => None,
                }
            };
            // (No write lock is kept now: one is kept only after the queue has been emptied.)
            let Some(answer) = answered else {
                let mut pending = self.pending.lock().await;
                if let Some(batch) = pending.open.take() {
                    match self
                        .store
                        .append_queued(batch.first_seq, &batch.entries, true)
                    {
                        Some(appending) => queued.push_back((batch.hand(), appending)),
                        None => pending.open = Some(batch),
                    }
                }
                continue;
            };
            let Some((batch, _)) = queued.pop_front() else {
                continue;
            };
            match answer {
                Ok(()) => {
                    let more = !queued.is_empty();
                    self.finish(batch, Outcome::Durable, None, more, Vec::new())
                        .await;
                }
                Err(e) => {
                    // Everything queued after it was decided on top of it, and the store refuses
                    // it (chained); wait for those answers before anything else.
                    let mut refused = Vec::new();
                    while let Some((later, appending)) = queued.pop_front() {
                        match appending.await {
                            Err(_) => refused.push(later),
                            // Not what a store may do. The writes are there, so they are
                            // durable; what is published comes from the store, not from the
                            // world this batch was decided on.
                            Ok(()) => {
                                tracing::error!(
                                    first_seq = later.first_seq,
                                    "the store appended a batch queued after one it refused"
                                );
                                if let Err(e) = self.catch_up().await {
                                    tracing::error!(%e, "catching up after it failed");
                                }
                                later.end(Outcome::Durable);
                            }
                        }
                    }
                    self.lost(batch, e, refused).await;
                }
            }
        }
    }

    /// Appends `batch` in one step, or, when another process wrote first, under the lock.
    async fn append(&self, batch: Batch) {
        let batch = batch.hand();
        match self.store.append(batch.first_seq, &batch.entries).await {
            Ok(()) => {
                self.finish(batch, Outcome::Durable, None, false, Vec::new())
                    .await;
            }
            Err(e) => self.lost(batch, e, Vec::new()).await,
        }
    }

    /// After the one-step append of `batch` failed with `e`: `refused` were queued after it.
    async fn lost(&self, batch: Batch, e: StoreError, refused: Vec<Batch>) {
        match e {
            // Usually another process wrote first; the lock tells, and is then kept (below).
            StoreError::Conflict(_) => {
                metrics::counter!(crate::metrics::COMMIT_RACES_LOST).increment(1);
                self.doubt_lease();
                let lock = self.store.lock().await;
                self.append_locked(batch, lock, refused).await;
            }
            e => {
                self.finish(batch, Outcome::Failed(e.into()), None, false, refused)
                    .await;
            }
        }
    }

    /// Appends `batch` under the store's write lock, kept from a lost race or just taken.
    async fn append_locked(
        &self,
        mut batch: Batch,
        lock: Result<Box<dyn LogLock>, StoreError>,
        refused: Vec<Batch>,
    ) {
        let mut keep = None;
        let end = match lock {
            Ok(lock) if lock.last_seq().checked_add(1) == Some(batch.first_seq) => {
                batch = batch.hand();
                match lock.commit(&batch.entries).await {
                    Ok(()) => Outcome::Durable,
                    Err(StoreError::Conflict(_)) => Outcome::Retry(None),
                    Err(e) => Outcome::Failed(e.into()),
                }
            }
            // Another process appended first: catch up with the lock in hand and keep it for
            // this batch's writers, who decide again on the new state.
            Ok(lock) => match self.catch_up().await {
                Ok(()) => {
                    let (rejoined, waiting) = oneshot::channel();
                    keep = Some((lock, waiting));
                    Outcome::Retry(Some(Arc::new(Rejoin(Some(rejoined)))))
                }
                Err(e) => {
                    lock.release().await;
                    Outcome::Failed(e)
                }
            },
            Err(e) => Outcome::Failed(e.into()),
        };
        self.finish(batch, end, keep, false, refused).await;
    }

    /// Tells `batch`'s writers how it ended. When it is durable, publishes the world it leads
    /// to; `more` says another batch is still queued in the store. Otherwise, or when batches
    /// queued after it were `refused`, every decision made on top of it is void: their writers
    /// decide again (with the write lock if one is kept, which waits for them).
    async fn finish(
        &self,
        batch: Batch,
        end: Outcome,
        keep: Option<(Box<dyn LogLock>, oneshot::Receiver<()>)>,
        more: bool,
        refused: Vec<Batch>,
    ) {
        let mut pending = self.pending.lock().await;
        let durable = matches!(end, Outcome::Durable);
        if durable {
            self.publish(Arc::clone(&batch.world));
            metrics::histogram!(crate::metrics::COMMIT_BATCH_OPS)
                .record(batch.entries.len() as f64);
            if let Some(handed) = batch.handed {
                metrics::histogram!(crate::metrics::COMMIT_APPEND_SECONDS)
                    .record(handed.elapsed().as_secs_f64());
            }
        } else if matches!(end, Outcome::Failed(_)) {
            metrics::counter!(crate::metrics::COMMIT_FAILURES).increment(1);
        }
        if durable && refused.is_empty() {
            if pending.open.is_none() && !more {
                pending.world = None;
            }
        } else {
            let rejoin = match &end {
                Outcome::Retry(rejoin) => rejoin.clone(),
                _ => None,
            };
            for built_on_it in refused.iter().chain(pending.open.take().as_ref()) {
                built_on_it.end(Outcome::Retry(rejoin.clone()));
            }
            pending.world = None;
        }
        if let Some((lock, rejoined)) = keep {
            self.keep(&mut pending, lock, rejoined);
        }
        drop(pending);
        batch.end(end);
    }

    /// Keeps the store's write lock for the next append, releasing it after [`HOLD_FOR`] unless
    /// a flusher took it first.
    fn keep(&self, pending: &mut Pending, lock: Box<dyn LogLock>, rejoined: oneshot::Receiver<()>) {
        pending.holds += 1;
        let generation = pending.holds;
        pending.held = Some(Held {
            lock,
            generation,
            rejoined,
            until: tokio::time::Instant::now() + HOLD_FOR,
        });
        let engine = self.me.clone();
        tokio::spawn(async move {
            tokio::time::sleep(HOLD_FOR).await;
            let Some(engine) = engine.upgrade() else {
                return;
            };
            let expired = {
                let mut pending = engine.pending.lock().await;
                match &pending.held {
                    Some(held) if held.generation == generation => pending.held.take(),
                    _ => None,
                }
            };
            if let Some(held) = expired {
                held.lock.release().await;
            }
        });
    }
}

/// How the batch behind `outcome` ended.
async fn ended(mut outcome: watch::Receiver<Option<Outcome>>) -> Outcome {
    match outcome.wait_for(Option::is_some).await {
        Ok(ended) => ended.clone().unwrap_or(Outcome::Retry(None)),
        Err(_) => Outcome::Failed(ServiceError::Internal(
            "the append stopped unexpectedly; this change may or may not have been written".into(),
        )),
    }
}
