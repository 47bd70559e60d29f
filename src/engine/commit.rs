//! Group commit: concurrent writes share one append (one transaction, one fsync).
//!
//! Writers decide one at a time against the *pending* world — the durable state plus every op
//! decided but not yet appended — so each decision sees the ones before it. Their ops collect in
//! the open batch; one writer at a time (the flusher) appends the open batch and publishes the
//! world it leads to. A writer answers only once its batch is durable. When an append fails,
//! every decision made on top of it is void: those writers decide again on the durable state.
//!
//! Another process may have appended since the batch was decided (a second server replica).
//! The flusher learns this with the store's write lock in hand: it catches up and *keeps* the
//! lock while the batch's writers decide again on the new state, so their next append cannot
//! lose again. Under any amount of contention a write therefore takes at most two rounds; the
//! lock is released after [`HOLD_FOR`] if nobody comes back for it.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::{Engine, Op, World};
use crate::error::ServiceError;
use crate::model::Instant;
use crate::store::{LogLock, StoreError};

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

/// How a batch ended, shared by every writer in it.
#[derive(Clone, Debug)]
enum Outcome {
    /// Appended and published.
    Durable,
    /// Decided on a state that is void (another process wrote first, or an earlier batch
    /// failed): decide again.
    Retry,
    /// The store refused; nothing of the batch was written.
    Failed(ServiceError),
}

/// Ops decided together, waiting to be appended.
#[derive(Debug)]
struct Batch {
    first_seq: u64,
    bodies: Vec<String>,
    /// The world once the batch is applied.
    world: Arc<World>,
    outcome: Arc<OnceLock<Outcome>>,
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
}

/// A kept write lock.
struct Held {
    lock: Box<dyn LogLock>,
    generation: u64,
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
    /// Runs a write: `decide` looks at the latest world and the time, and returns the ops to
    /// log with the caller's answer. The answer is returned once the ops are durable; nothing
    /// is published unless the store took them.
    pub(crate) async fn write<T>(
        &self,
        decide: impl Fn(&World, Instant) -> Result<(Vec<Op>, T), ServiceError>,
    ) -> Result<T, ServiceError> {
        for attempt in 0..WRITE_ATTEMPTS {
            // A kept lock means the state is caught up and the next append is ours: no pause.
            if attempt > 0 && self.pending.lock().await.held.is_none() {
                let ceiling = (1u64 << attempt.min(6)).min(MAX_BACKOFF_MS);
                let pause = rand::random_range(0..=ceiling);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
            let (outcome, answer) = {
                let mut pending = self.pending.lock().await;
                // Optimistic: the first attempt decides on what this process knows. If another
                // process appended meanwhile, the append names a taken sequence and conflicts,
                // and the next attempt catches up first.
                let mut base = match &pending.world {
                    Some(world) => Arc::clone(world),
                    None => {
                        if attempt > 0 && pending.held.is_none() {
                            self.catch_up().await?;
                        }
                        self.snapshot_now()
                    }
                };
                let (ops, answer) = match decide(&base, self.clock.now()) {
                    // A refusal never reaches the store, so it must not rest on an old state:
                    // catch up and decide once more if anything new arrived.
                    Err(refusal) if attempt == 0 && pending.world.is_none() => {
                        self.catch_up().await?;
                        let latest = self.snapshot_now();
                        if latest.seq == base.seq {
                            return Err(refusal);
                        }
                        base = latest;
                        decide(&base, self.clock.now())?
                    }
                    decided => decided?,
                };
                if ops.is_empty() {
                    return Ok(answer);
                }
                let bodies = ops
                    .iter()
                    .map(serde_json::to_string)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ServiceError::Internal(format!("cannot encode a change: {e}")))?;
                let mut next = (*base).clone();
                for op in ops {
                    let seq = next.seq + 1;
                    next.apply(seq, op)
                        .map_err(|e| ServiceError::Internal(e.to_string()))?;
                }
                let next = Arc::new(next);
                pending.world = Some(Arc::clone(&next));
                let batch = pending.open.get_or_insert_with(|| Batch {
                    first_seq: base.seq + 1,
                    bodies: Vec::new(),
                    world: Arc::clone(&next),
                    outcome: Arc::default(),
                });
                batch.bodies.extend(bodies);
                batch.world = next;
                (Arc::clone(&batch.outcome), answer)
            };
            match self.flush(&outcome).await {
                Outcome::Durable => return Ok(answer),
                Outcome::Retry => continue,
                Outcome::Failed(e) => return Err(e),
            }
        }
        Err(ServiceError::Unavailable(
            "the store is busy with other writers; try again".into(),
        ))
    }

    /// Waits until the batch owning `outcome` ended, appending it if nobody else is.
    ///
    /// The append runs in a task of its own: if the caller goes away mid-append (a client
    /// disconnects, a request times out), the batch still ends and every writer in it learns how.
    async fn flush(&self, outcome: &OnceLock<Outcome>) -> Outcome {
        let flusher = Arc::clone(&self.flusher).lock_owned().await;
        if let Some(done) = outcome.get() {
            return done.clone();
        }
        let Some(engine) = self.me.upgrade() else {
            return Outcome::Failed(ServiceError::Unavailable(
                "the engine is shutting down".into(),
            ));
        };
        let task = tokio::spawn(async move {
            let _flusher = flusher;
            engine.append_open_batch().await
        });
        match task.await {
            Ok(()) => outcome.get().cloned().unwrap_or_else(|| {
                Outcome::Failed(ServiceError::Internal(
                    "a pending write was lost before it was appended".into(),
                ))
            }),
            Err(e) => Outcome::Failed(ServiceError::Internal(format!("the append failed: {e}"))),
        }
    }

    /// Appends the open batch (the caller holds the flusher lock) and settles its outcome.
    async fn append_open_batch(&self) {
        // Batches are flushed in order under the flusher lock, so the open one is the oldest.
        let (batch, kept) = {
            let mut pending = self.pending.lock().await;
            let Some(batch) = pending.open.take() else {
                return;
            };
            (batch, pending.held.take())
        };
        let lock = match kept {
            Some(kept) => Ok(kept.lock),
            None => self.store.lock().await,
        };
        let mut keep = None;
        let end = match lock {
            Ok(lock) if lock.last_seq().checked_add(1) == Some(batch.first_seq) => {
                match lock.commit(&batch.bodies).await {
                    Ok(()) => Outcome::Durable,
                    Err(StoreError::Conflict(_)) => Outcome::Retry,
                    Err(e) => Outcome::Failed(e.into()),
                }
            }
            // Another process appended first: catch up with the lock in hand and keep it for
            // this batch's writers, who decide again on the new state.
            Ok(lock) => match self.catch_up().await {
                Ok(()) => {
                    keep = Some(lock);
                    Outcome::Retry
                }
                Err(e) => {
                    lock.release().await;
                    Outcome::Failed(e)
                }
            },
            Err(e) => Outcome::Failed(e.into()),
        };
        let mut pending = self.pending.lock().await;
        if matches!(end, Outcome::Durable) {
            self.publish(Arc::clone(&batch.world));
            if pending.open.is_none() {
                pending.world = None;
            }
        } else {
            if let Some(built_on_it) = pending.open.take() {
                let _ = built_on_it.outcome.set(Outcome::Retry);
            }
            pending.world = None;
        }
        if let Some(lock) = keep {
            self.keep(&mut pending, lock);
        }
        drop(pending);
        let _ = batch.outcome.set(end);
    }

    /// Keeps the store's write lock for the next append, releasing it after [`HOLD_FOR`] unless
    /// that append took it first.
    fn keep(&self, pending: &mut Pending, lock: Box<dyn LogLock>) {
        pending.holds += 1;
        let generation = pending.holds;
        pending.held = Some(Held { lock, generation });
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
