//! The read barrier never holds reads forever: a round whose head query hangs ends at its
//! deadline with "unavailable", and a barrier whose task was dropped with its runtime (mid
//! round) serves the next read on another runtime.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chronoscope::engine::Engine;
use chronoscope::error::ServiceError;
use chronoscope::store::{Store, StoreError};

/// How long a test waits for a read that must end; far above the deadlines under test.
const PATIENCE: Duration = Duration::from_secs(10);

/// A log in memory whose head query hangs while `hang` is set (a query stuck on a dead
/// connection), counting the head queries asked.
#[derive(Default)]
struct Hanging {
    hang: AtomicBool,
    asked: AtomicU64,
}

#[async_trait]
impl support::StoreHooks for Hanging {
    fn describe(&self, _: &dyn Store) -> String {
        "a log whose head query can hang".into()
    }

    async fn last_seq(&self) -> Result<(), StoreError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

async fn open(store: Arc<support::Hooked<Hanging>>) -> Arc<Engine> {
    support::system_engine(store).await
}

#[tokio::test]
async fn a_read_whose_head_query_hangs_is_answered_unavailable_at_the_rounds_deadline() {
    let store = Arc::new(support::Hooked::memory(Hanging::default()));
    let engine = open(Arc::clone(&store)).await;
    engine.set_read_deadline(Duration::from_millis(200));
    store.hang.store(true, Ordering::SeqCst);
    let read = tokio::time::timeout(PATIENCE, engine.snapshot()).await;
    match read {
        Ok(Err(ServiceError::Unavailable(message))) => {
            assert!(message.contains("did not answer"), "{message}")
        }
        Ok(other) => panic!("expected unavailable, got {:?}", other.map(|w| w.seq)),
        Err(_) => panic!("the read waited for the stuck query"),
    }
    // Once the store answers again, so do reads.
    store.hang.store(false, Ordering::SeqCst);
    let read = tokio::time::timeout(PATIENCE, engine.snapshot()).await;
    assert!(matches!(read, Ok(Ok(_))), "the next read failed");
}

#[test]
fn reads_go_on_after_the_barriers_task_was_dropped_with_its_runtime() {
    let store = Arc::new(support::Hooked::memory(Hanging::default()));
    let first = tokio::runtime::Runtime::new().expect("a runtime");
    let engine = first.block_on(async {
        let engine = open(Arc::clone(&store)).await;
        store.hang.store(true, Ordering::SeqCst);
        let asked = store.asked.load(Ordering::SeqCst);
        // A read whose round is in flight (its head query hangs) when the runtime goes.
        let reader = Arc::clone(&engine);
        tokio::spawn(async move { reader.snapshot().await.map(|_| ()) });
        while store.asked.load(Ordering::SeqCst) == asked {
            tokio::task::yield_now().await;
        }
        engine
    });
    drop(first);
    store.hang.store(false, Ordering::SeqCst);
    let second = tokio::runtime::Runtime::new().expect("a runtime");
    let read = second.block_on(async { tokio::time::timeout(PATIENCE, engine.snapshot()).await });
    assert!(
        matches!(read, Ok(Ok(_))),
        "a read after the task was dropped waited forever"
    );
}
