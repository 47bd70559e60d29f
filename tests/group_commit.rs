//! The engine's group commit on a real SQLite file, where the flusher keeps the next batch
//! queued in the store while the one before it is written: concurrent writers through two
//! engines (two processes' worth of writers on one file), and a store that fails some appends.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use chronoscope::engine::{Engine, ManualClock};
use chronoscope::error::ServiceError;
use chronoscope::model::{ItemId, parse_instant};
use chronoscope::service::prelude::*;
use chronoscope::service::{NewItem, PageRequest};
use chronoscope::store::{self, Appending, Entry, Store, StoreError};
use tempfile::TempDir;

/// Writers started by the tests, arriving in bursts while earlier ones wait for their batch.
const WRITERS: u32 = 300;

struct SqliteFile {
    _dir: TempDir,
    url: String,
    clock: Arc<ManualClock>,
}

impl SqliteFile {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("log.db").display());
        let clock = Arc::new(ManualClock::new(
            parse_instant("t", "2026-11-22T10:00:00Z").unwrap(),
        ));
        Self {
            _dir: dir,
            url,
            clock,
        }
    }

    /// A store handle of its own: its own writer connection, as another process has.
    async fn store(&self) -> Arc<dyn Store> {
        store::open(&self.url).await.unwrap()
    }

    async fn engine(&self, store: Arc<dyn Store>) -> Arc<Engine> {
        support::engine_on(store, self.clock.clone()).await
    }

    /// Ada's items as a new engine replaying the file sees them.
    async fn items_on_file(&self) -> Vec<ItemId> {
        let fresh = self.engine(self.store().await).await;
        items(&fresh).await
    }
}

async fn items(engine: &Arc<Engine>) -> Vec<ItemId> {
    let mut ids: Vec<ItemId> = engine
        .session("ada".parse().unwrap())
        .list_items(PageRequest::first(1000))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|item| item.id)
        .collect();
    ids.sort();
    ids
}

/// Starts `WRITERS` item registrations spread over `engines`, in bursts, and returns each one's
/// answer in the order started.
async fn register_items(engines: &[Arc<Engine>]) -> Vec<Result<ItemId, ServiceError>> {
    let mut tasks = Vec::new();
    for i in 0..WRITERS {
        let engine = Arc::clone(&engines[i as usize % engines.len()]);
        tasks.push(tokio::spawn(async move {
            engine
                .session("ada".parse().unwrap())
                .register_item(NewItem {
                    description: format!("item {i}"),
                })
                .await
                .map(|item| item.id)
        }));
        if i % 20 == 19 {
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_on_two_engines_sharing_a_sqlite_file_lose_nothing() {
    let file = SqliteFile::new();
    let engines = [
        file.engine(file.store().await).await,
        file.engine(file.store().await).await,
    ];
    let mut acknowledged = register_items(&engines)
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .expect("every write is acknowledged");
    acknowledged.sort();

    // Each acknowledged item is in the file exactly once, nothing else is (the first record is
    // the `primary` timeline), and a new engine sees exactly them.
    let store = file.store().await;
    assert_eq!(store.last_seq().await.unwrap(), 1 + u64::from(WRITERS));
    assert_eq!(file.items_on_file().await, acknowledged);
    // Both live engines agree too, once the other's last writes may be seen: on SQLite a read
    // may lag another process by the store's documented staleness.
    tokio::time::sleep(store.read_staleness() + Duration::from_millis(5)).await;
    for engine in &engines {
        assert_eq!(items(engine).await, acknowledged);
    }
}

/// A SQLite store whose every seventh queued append fails a moment later, as a full disk
/// would, and which, as the store contract says, refuses appends chained to a failed one.
struct FailingSometimes {
    calls: Arc<AtomicU32>,
    refused: AtomicU32,
    /// Whether the last queued append failed.
    broken: std::sync::Mutex<bool>,
}

const INJECTED: &str = "injected failure: the disk is full";

#[async_trait::async_trait]
impl support::StoreHooks for FailingSometimes {
    fn describe(&self, inner: &dyn Store) -> String {
        format!("{} (failing sometimes)", inner.describe())
    }

    fn append_queued(
        &self,
        first_seq: u64,
        _entries: &[Entry],
        chained: bool,
    ) -> Option<Appending> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let mut broken = self.broken.lock().unwrap();
        if call % 7 == 3 {
            *broken = true;
            // Fails once the flusher has queued the next append on top of this one (or after
            // 100 ms, when no writer is left to queue one): what this test is about happens
            // on every run, however fast or slow the machine.
            let calls = Arc::clone(&self.calls);
            return Some(Box::pin(async move {
                for _ in 0..100 {
                    if calls.load(Ordering::SeqCst) > call + 1 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Err(StoreError::Unavailable(INJECTED.into()))
            }));
        }
        if chained && *broken {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Some(Box::pin(
                async move { Err(StoreError::Conflict(first_seq)) },
            ));
        }
        *broken = false;
        None
    }
}

/// Writers whose batch failed get the failure; writers whose batch was queued on top of it
/// decide again and succeed; nobody is told a write failed that is in the log, or succeeded
/// that is not. Whether a batch gets queued on top of a failing one depends on how the writers
/// happen to fall into batches, so the scenario runs until one did (every run is checked).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_append_voids_the_batches_queued_on_top_of_it() {
    const RUNS: usize = 20;
    let (mut failed, mut refused) = (0, 0);
    for _ in 0..RUNS {
        let (f, r) = failing_appends_lose_nothing().await;
        failed += f;
        refused += r;
        if failed > 0 && refused > 0 {
            break;
        }
    }
    assert!(
        failed > 0,
        "in {RUNS} runs no write saw the injected failure"
    );
    assert!(
        refused > 0,
        "in {RUNS} runs no batch was ever queued on top of a failing one: the test exercised nothing"
    );
}

/// One run of the scenario above; returns how many writes saw the injected failure and how many
/// batches were queued on top of a failing one.
async fn failing_appends_lose_nothing() -> (usize, u32) {
    let file = SqliteFile::new();
    let store = Arc::new(support::Hooked::new(
        file.store().await,
        FailingSometimes {
            calls: Arc::new(AtomicU32::new(0)),
            refused: AtomicU32::new(0),
            broken: std::sync::Mutex::new(false),
        },
    ));
    let engine = file.engine(store.clone()).await;

    let mut acknowledged = Vec::new();
    let mut failed = 0;
    for answer in register_items(std::slice::from_ref(&engine)).await {
        match answer {
            Ok(id) => acknowledged.push(id),
            Err(ServiceError::Unavailable(message)) if message.contains(INJECTED) => failed += 1,
            Err(other) => panic!("a write failed for a reason not injected: {other:?}"),
        }
    }
    acknowledged.sort();

    assert_eq!(acknowledged.len() + failed, WRITERS as usize);
    assert_eq!(file.items_on_file().await, acknowledged);
    assert_eq!(items(&engine).await, acknowledged);
    (failed, store.refused.load(Ordering::SeqCst))
}
