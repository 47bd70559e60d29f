//! A refused write re-checks its refusal against the store's latest state (a query on
//! PostgreSQL) without holding the writers' lock: the writes behind it do not wait for it.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chronoscope::error::ServiceError;
use chronoscope::service::*;
use chronoscope::store::{Store, StoreError};

/// A memory store whose reads of new records take as long as a slow database round trip.
#[derive(Default)]
struct SlowReads {
    slow: AtomicBool,
}

const ROUND_TRIP: Duration = Duration::from_millis(400);

#[async_trait]
impl support::StoreHooks for SlowReads {
    fn describe(&self, _: &dyn Store) -> String {
        "slow reads".into()
    }

    async fn read_since(&self) -> Result<(), StoreError> {
        if self.slow.load(Ordering::SeqCst) {
            tokio::time::sleep(ROUND_TRIP).await;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_refused_write_does_not_hold_up_the_writes_behind_it() {
    let store = Arc::new(support::Hooked::memory(SlowReads::default()));
    let engine = support::system_engine(store.clone()).await;
    let ada = engine.session("ada".parse().expect("name"));
    let bob = engine.session("bob".parse().expect("name"));
    ada.register_item(NewItem {
        description: "compass".into(),
    })
    .await
    .expect("first registration");
    store.slow.store(true, Ordering::SeqCst);

    // The same item again: a documented 409, re-checked on the latest state first.
    let refused = tokio::spawn(async move {
        ada.register_item(NewItem {
            description: "compass".into(),
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    bob.register_item(NewItem {
        description: "sextant".into(),
    })
    .await
    .expect("another traveller's write");
    let waited = started.elapsed();
    assert!(
        waited < ROUND_TRIP / 2,
        "a valid write waited {waited:?} behind a refused one's round trip"
    );
    let refusal = refused.await.expect("task");
    assert!(
        matches!(refusal, Err(ServiceError::AlreadyExists { .. })),
        "{refusal:?}"
    );
}
