//! The request store (after slumber's): every background call runs in a [`Slot`] with the
//! slot's next generation, and answers on the dashboard's queue as [`Msg::Done`]. An answer
//! whose generation is no longer the newest of its slot is stale: a slow reply never
//! overwrites a newer one. A call that panics or takes too long still answers, as an error.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::mpsc::UnboundedSender;

use crate::error::ServiceError;
use crate::tui::action::{Msg, Reply, Slot};

/// Longest a background call may take before it counts as the service being unavailable.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest a change may take: longer than the client's own budget for it (30 s a try, sent
/// again with the same `Idempotency-Key` up to twice), so the dashboard never gives up on a
/// change the server may still make, and a person never sends it again as a second change.
const MUTATION_TIMEOUT: Duration = Duration::from_secs(100);
const _: () = assert!(
    MUTATION_TIMEOUT.as_secs() > 3 * crate::client::DEFAULT_REQUEST_TIMEOUT.as_secs(),
    "a change outlives every try the client makes of it"
);

/// The calls in flight, by slot, and the newest generation of each.
#[derive(Debug)]
pub struct Requests {
    tx: UnboundedSender<Msg>,
    generations: HashMap<Slot, u64>,
    in_flight: HashMap<Slot, usize>,
}

impl Requests {
    /// A store whose calls answer on `tx`.
    pub fn new(tx: UnboundedSender<Msg>) -> Self {
        Self {
            tx,
            generations: HashMap::new(),
            in_flight: HashMap::new(),
        }
    }

    /// Whether any call is in flight.
    pub fn busy(&self) -> bool {
        self.in_flight.values().any(|n| *n > 0)
    }

    /// Whether a call of `slot` is in flight.
    pub fn pending(&self, slot: Slot) -> bool {
        self.in_flight.get(&slot).is_some_and(|n| *n > 0)
    }

    /// The newest generation sent in `slot`.
    pub fn generation(&self, slot: Slot) -> u64 {
        self.generations.get(&slot).copied().unwrap_or(0)
    }

    /// What is newer than any call of `slot` sent so far arrived another way (a push): their
    /// answers are stale.
    pub fn outdate(&mut self, slot: Slot) {
        let newer = self.generation(slot) + 1;
        self.generations.insert(slot, newer);
    }

    /// A call of `slot` sent with `generation` answered: counted; whether its answer is to be
    /// used (a change's always is; any other only while no newer one of its slot was sent).
    pub fn finished(&mut self, slot: Slot, generation: u64) -> bool {
        if let Some(n) = self.in_flight.get_mut(&slot) {
            *n = n.saturating_sub(1);
        }
        slot == Slot::Mutation || generation == self.generation(slot)
    }

    /// Starts a call that panics, as a bug in a call would (tests only).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn spawn_panicking(&mut self) {
        self.spawn(Slot::Mutation, async {
            panic!("a background call panicked, as the test asked")
        });
    }

    /// Runs `job` in the background in `slot`, its answer put in the message by `reply`.
    pub fn fetch<T, F>(&mut self, slot: Slot, job: F, reply: fn(T) -> Reply)
    where
        F: Future<Output = Result<T, ServiceError>> + Send + 'static,
        T: Send + 'static,
    {
        self.spawn(slot, async move { job.await.map(reply) });
    }

    /// Runs `call` in the background; its answer comes back as [`Msg::Done`] in `slot`.
    pub fn spawn<F>(&mut self, slot: Slot, call: F)
    where
        F: Future<Output = Result<Reply, ServiceError>> + Send + 'static,
    {
        let generation = self.generation(slot) + 1;
        self.generations.insert(slot, generation);
        *self.in_flight.entry(slot).or_default() += 1;
        let tx = self.tx.clone();
        tokio::spawn(async move {
            // A call that panics still answers, as an error: else its slot stays pending and
            // the spinner runs for good.
            let call = AssertUnwindSafe(call).catch_unwind();
            let limit = if slot == Slot::Mutation {
                MUTATION_TIMEOUT
            } else {
                CALL_TIMEOUT
            };
            let result = match tokio::time::timeout(limit, call).await {
                Ok(Ok(result)) => result,
                Ok(Err(panic)) => Err(ServiceError::Internal(format!(
                    "the call failed unexpectedly ({})",
                    panic_message(panic.as_ref())
                ))),
                Err(_) => Err(ServiceError::Unavailable(format!(
                    "no answer within {} s",
                    limit.as_secs()
                ))),
            };
            // The receiver is gone only when the dashboard is closing.
            let _ = tx.send(Msg::Done {
                slot,
                generation,
                result,
            });
        });
    }
}

/// What a panic said, when it said it with a string (as `panic!` and `expect` do).
fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}
