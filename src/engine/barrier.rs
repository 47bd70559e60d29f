//! The read barrier: linearizable reads from memory with one store query per batch of reads.
//!
//! A read must see every write any process acknowledged before the read began. The store's
//! head (the last sequence number committed) tells what that is; a read that waits for a head
//! query *sent after it arrived*, and for the state to be caught up to that head, sees all of
//! it. Many reads can share one query: a round serves every read that arrived before it was
//! sent, and the reads that arrive while it is in flight share the next round (etcd's
//! ReadIndex batching). Under load the rounds run back to back and each serves everyone who
//! queued meanwhile, so queries per read fall as the load grows; an idle server asks once per
//! read. When the store pushes new heads (PostgreSQL's LISTEN/NOTIFY), the state is caught up in
//! the background and a round usually finds nothing to fetch: one small query.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

use super::Engine;
use crate::error::ServiceError;

/// Rounds started and whether another is wanted.
#[derive(Debug, Default)]
struct Rounds {
    /// Number of the latest round started (rounds count from 1).
    started: u64,
    /// Whether a round is in flight.
    running: bool,
    /// Whether a read arrived while it was: the next round starts when it ends.
    another: bool,
}

/// A round that ended: its number and how.
#[derive(Clone, Debug)]
struct Finished {
    round: u64,
    outcome: Result<(), ServiceError>,
}

/// The barrier's state, kept by the engine.
#[derive(Debug)]
pub(super) struct ReadBarrier {
    rounds: Mutex<Rounds>,
    finished: watch::Sender<Finished>,
    /// Reads that passed the barrier.
    reads: AtomicU64,
    /// Rounds run (one head query each).
    queries: AtomicU64,
}

impl Default for ReadBarrier {
    fn default() -> Self {
        Self {
            rounds: Mutex::default(),
            finished: watch::Sender::new(Finished {
                round: 0,
                outcome: Ok(()),
            }),
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
    /// Waits until the state holds every write acknowledged before this call, by any process.
    pub(super) async fn read_barrier(&self) -> Result<(), ServiceError> {
        let barrier = &self.barrier;
        barrier.reads.fetch_add(1, Ordering::Relaxed);
        // Subscribed before the round can end, so its end cannot be missed.
        let mut finished = barrier.finished.subscribe();
        let needed = {
            let mut rounds = barrier.rounds.lock().unwrap_or_else(|e| e.into_inner());
            if rounds.running {
                // The round in flight may have been sent before this read arrived.
                rounds.another = true;
                rounds.started + 1
            } else {
                rounds.running = true;
                rounds.started += 1;
                self.start_rounds();
                rounds.started
            }
        };
        let ended = finished
            .wait_for(|f| f.round >= needed)
            .await
            .map_err(|_| ServiceError::Unavailable("the engine is shutting down".into()))?;
        ended.outcome.clone()
    }

    /// Runs rounds on a task of their own (a read that goes away must not stall the others)
    /// until none is wanted.
    fn start_rounds(&self) {
        let Some(engine) = self.me.upgrade() else {
            return;
        };
        tokio::spawn(async move {
            loop {
                let outcome = engine.round().await;
                let barrier = &engine.barrier;
                let mut rounds = barrier.rounds.lock().unwrap_or_else(|e| e.into_inner());
                barrier.finished.send_replace(Finished {
                    round: rounds.started,
                    outcome,
                });
                if rounds.another {
                    rounds.another = false;
                    rounds.started += 1;
                } else {
                    rounds.running = false;
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
