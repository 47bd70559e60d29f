//! The read barrier: linearizable reads from memory with one store query per batch of reads.
//!
//! A read must see every write any process acknowledged before the read began. The store's
//! head (the last sequence number committed) tells what that is; a read that waits for a head
//! query *sent after it arrived*, and for the state to be caught up to that head, sees all of
//! it. Many reads can share one query: a round serves every read that arrived before its query
//! was sent (etcd's ReadIndex batching).
//!
//! Rounds run back to back while reads keep coming, so the number of reads a query serves is
//! the number that arrive while one query is in flight, plus those already received when it is
//! due (a round yields to the runtime once before sending its query). Pacing
//! ([`Engine::pace_reads`], off by default) puts rounds at least an interval apart: a replica
//! then asks the store at most once per interval however many reads it serves, and a read waits
//! up to one interval longer; a read after a quiet interval asks at once. When the store pushes new heads (PostgreSQL's
//! LISTEN/NOTIFY), the state is caught up in the background and a round usually finds nothing
//! to fetch: one small query.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::Engine;
use crate::error::ServiceError;

/// The least time between two rounds' queries unless set otherwise: none, rounds run back to
/// back (on this project's machine pacing cost more in waiting than it saved in queries; see
/// the README's figures).
pub const DEFAULT_INTERVAL: Duration = Duration::ZERO;

/// The longest one round (its head query and the catch-up it starts) may take unless set
/// otherwise; its reads are then answered "unavailable" rather than held by a stuck query.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// One round: the reads that joined it wait for its outcome.
#[derive(Debug, Default)]
struct Round {
    outcome: OnceLock<Result<(), ServiceError>>,
    ended: Notify,
}

impl Round {
    /// Gives every read of the round its outcome (the first one given stands).
    fn end(&self, outcome: Result<(), ServiceError>) {
        let _ = self.outcome.set(outcome);
        self.ended.notify_waiters();
    }

    /// Waits for the round's outcome.
    async fn outcome(&self) -> Result<(), ServiceError> {
        let ended = self.ended.notified();
        // Created before the look, so an end between the look and the wait is not missed.
        if let Some(outcome) = self.outcome.get() {
            return outcome.clone();
        }
        ended.await;
        self.outcome.get().cloned().unwrap_or_else(|| {
            Err(ServiceError::Unavailable(
                "the engine is shutting down".into(),
            ))
        })
    }
}

/// A round whose query is being sent. Dropped before it ends (its task dropped with the
/// runtime), it ends with "unavailable", so that no read waits for it forever.
struct Sending(Option<Arc<Round>>);

impl Sending {
    fn end(mut self, outcome: Result<(), ServiceError>) {
        if let Some(round) = self.0.take() {
            round.end(outcome);
        }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        if let Some(round) = self.0.take() {
            round.end(Err(ServiceError::Unavailable(
                "the engine is shutting down".into(),
            )));
        }
    }
}

/// The task sending rounds, as long as it runs. Dropped without [`RoundsTask::ended`] (its
/// runtime went away mid-round), it says no task is running and fails the round reads have
/// joined, so that the next read starts a task again instead of waiting forever.
struct RoundsTask<'a>(Option<&'a ReadBarrier>);

impl RoundsTask<'_> {
    /// The task stops on its own, having said so under the lock.
    fn ended(mut self) {
        self.0 = None;
    }
}

impl Drop for RoundsTask<'_> {
    fn drop(&mut self) {
        let Some(barrier) = self.0.take() else {
            return;
        };
        let joined = {
            let mut rounds = barrier.rounds.lock().unwrap_or_else(|e| e.into_inner());
            rounds.running = false;
            std::mem::take(&mut rounds.wanted).then(|| std::mem::take(&mut rounds.next))
        };
        if let Some(round) = joined {
            round.end(Err(ServiceError::Unavailable(
                "the read barrier stopped; try again".into(),
            )));
        }
    }
}

/// The round reads join, and whether a task is sending rounds.
#[derive(Debug, Default)]
struct Rounds {
    /// The round whose query is sent next: every read that joins it arrived before it is sent.
    next: Arc<Round>,
    /// Whether a read has joined `next`.
    wanted: bool,
    /// Whether the task sending rounds is running.
    running: bool,
    /// When the last round's query was sent.
    last_sent: Option<Instant>,
}

/// The barrier's state, kept by the engine.
#[derive(Debug)]
pub(super) struct ReadBarrier {
    rounds: Mutex<Rounds>,
    /// The least time between two head queries, in nanoseconds.
    interval_ns: AtomicU64,
    /// The longest a round may take, in nanoseconds.
    deadline_ns: AtomicU64,
    /// Reads that passed the barrier.
    reads: AtomicU64,
    /// Rounds run (one head query each).
    queries: AtomicU64,
}

impl Default for ReadBarrier {
    fn default() -> Self {
        Self {
            rounds: Mutex::default(),
            interval_ns: AtomicU64::new(DEFAULT_INTERVAL.as_nanos() as u64),
            deadline_ns: AtomicU64::new(DEFAULT_DEADLINE.as_nanos() as u64),
            reads: AtomicU64::new(0),
            queries: AtomicU64::new(0),
        }
    }
}

/// How the barrier has been used since the engine opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Reads that waited for a barrier round.
    pub reads: u64,
    /// Barrier rounds run, each one head query (plus record fetches when something was new).
    pub head_queries: u64,
    /// Record fetches from the store by any catch-up (barrier, notification, write).
    pub fetches: u64,
}

impl Engine {
    /// Sets the least time between two head queries of the read barrier (see the module's
    /// documentation); zero sends them back to back.
    pub fn pace_reads(&self, interval: Duration) {
        let ns = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
        self.barrier.interval_ns.store(ns, Ordering::Relaxed);
    }

    /// Sets the longest a read-barrier round may take (see [`DEFAULT_DEADLINE`]): the reads of
    /// a round that takes longer are answered "unavailable", and the next round starts afresh.
    pub fn set_read_deadline(&self, deadline: Duration) {
        let ns = u64::try_from(deadline.as_nanos()).unwrap_or(u64::MAX);
        self.barrier.deadline_ns.store(ns, Ordering::Relaxed);
    }

    /// Waits until the state holds every write acknowledged before this call, by any process.
    pub(super) async fn read_barrier(&self) -> Result<(), ServiceError> {
        let barrier = &self.barrier;
        barrier.reads.fetch_add(1, Ordering::Relaxed);
        let round = {
            let mut rounds = barrier.rounds.lock().unwrap_or_else(|e| e.into_inner());
            // `next` is replaced under this lock just before its query is sent, so the round
            // joined here sends its query after this read arrived.
            rounds.wanted = true;
            if !rounds.running {
                rounds.running = true;
                self.start_rounds();
            }
            Arc::clone(&rounds.next)
        };
        round.outcome().await
    }

    /// Sends rounds on a task of their own (a read that goes away must not stall the others)
    /// until no read waits for one.
    fn start_rounds(&self) {
        let Some(engine) = self.me.upgrade() else {
            return;
        };
        tokio::spawn(async move {
            let barrier = &engine.barrier;
            let task = RoundsTask(Some(barrier));
            loop {
                let interval = Duration::from_nanos(barrier.interval_ns.load(Ordering::Relaxed));
                if !interval.is_zero() {
                    let last_sent = barrier
                        .rounds
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .last_sent;
                    let due = last_sent.map(|sent| sent + interval);
                    if let Some(due) = due.filter(|&due| due > Instant::now()) {
                        // Reads that arrive meanwhile join this round.
                        tokio::time::sleep_until(due).await;
                    }
                }
                // Lets the reads that have already arrived join this round before its query is
                // sent: tokio's scheduler (since 1.23; not a documented guarantee) runs a yielded
                // task again only after polling the sockets and running the tasks that were
                // ready, so requests already received get to the barrier first. Under load a query
                // then serves about twice the reads; a lone read loses microseconds.
                tokio::task::yield_now().await;
                let round = {
                    let mut rounds = barrier.rounds.lock().unwrap_or_else(|e| e.into_inner());
                    rounds.wanted = false;
                    rounds.last_sent = Some(Instant::now());
                    Sending(Some(std::mem::take(&mut rounds.next)))
                };
                // A panic in a round fails its reads, and the next round is sent as usual.
                let deadline = Duration::from_nanos(barrier.deadline_ns.load(Ordering::Relaxed));
                let outcome = tokio::time::timeout(
                    deadline,
                    std::panic::AssertUnwindSafe(engine.round()).catch_unwind(),
                )
                .await
                .unwrap_or_else(|_| {
                    tracing::warn!(
                        ?deadline,
                        "a read-barrier round did not end within its deadline"
                    );
                    Ok(Err(ServiceError::Unavailable(format!(
                        "the store did not answer within {} s; try again",
                        deadline.as_secs_f64()
                    ))))
                })
                .unwrap_or_else(|_| {
                    Err(ServiceError::Internal(
                        "the read barrier's round failed".into(),
                    ))
                });
                round.end(outcome);
                let mut rounds = barrier.rounds.lock().unwrap_or_else(|e| e.into_inner());
                if !rounds.wanted {
                    rounds.running = false;
                    task.ended();
                    return;
                }
            }
        });
    }

    /// One round: the store's head, and the records up to it when they are new here.
    async fn round(&self) -> Result<(), ServiceError> {
        self.barrier.queries.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(crate::metrics::READ_BARRIERS).increment(1);
        metrics::counter!(crate::metrics::STORE_QUERIES).increment(1);
        let head = self.store.last_seq().await?;
        let seen = self.snapshot_now().seq;
        metrics::gauge!(crate::metrics::REPLICA_LAG).set(head.saturating_sub(seen) as f64);
        if head > seen {
            self.catch_up_to(Some(head)).await?;
        }
        Ok(())
    }

    /// How reads have used the store so far.
    pub fn read_stats(&self) -> ReadStats {
        ReadStats {
            reads: self.barrier.reads.load(Ordering::Relaxed),
            head_queries: self.barrier.queries.load(Ordering::Relaxed),
            fetches: self.fetches.load(Ordering::Relaxed),
        }
    }
}
