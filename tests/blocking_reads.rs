//! Reads whose work grows with a timeline's size (a monitor scan, a look-up of an event by its
//! description) run on tokio's blocking pool, so a scan of a huge timeline never holds up
//! the cheap requests queued on the same runtime worker.
//!
//! The runtime here has one thread for tasks and one for blocking work, which the test takes:
//! a scan on the blocking pool waits for it, a scan on the task thread would not.

mod support;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use chronoscope::engine::{Engine, EngineConfig, Op, Seed, SystemClock};
use chronoscope::model::{Event, EventId, EventStatus, TimelineId};
use chronoscope::service::*;
use chronoscope::store::MemoryStore;

const EVENTS: usize = 200_000;

/// An event in Geneva, on schedule, the first of its lineage.
fn geneva_event(
    id: EventId,
    description: String,
    time: DateTime<Utc>,
    causes: Vec<EventId>,
) -> Event {
    Event {
        id: id.clone(),
        description,
        time,
        location: "Geneva".into(),
        causes,
        fixed_point: false,
        status: EventStatus::OnSchedule,
        supersedes: None,
        superseded_by: None,
        lineage: id,
        author: None,
    }
}

/// `primary` with `EVENTS` events, each caused by the one before it, except the first: it names
/// the sixth as its cause, a small causal loop that every scan and check reports.
async fn engine_with_a_huge_timeline() -> Arc<Engine> {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(SystemClock);
    Engine::open(store.clone(), clock, EngineConfig::default(), Seed::None)
        .await
        .expect("engine opens");
    let id = |i: usize| EventId::from_ulid(ulid::Ulid::from((7u128 << 100) | i as u128));
    let start = DateTime::<Utc>::from_timestamp(946_684_800, 0).expect("2000-01-01");
    let events = (0..EVENTS)
        .map(|i| {
            let causes = if i == 0 { vec![id(5)] } else { vec![id(i - 1)] };
            geneva_event(
                id(i),
                format!("Event {i}"),
                start + Duration::minutes(i as i64),
                causes,
            )
        })
        .collect();
    let op = Op::AddEvents {
        timeline: TimelineId::primary(),
        events,
        at: None,
    };
    chronoscope::engine::append_ops(&*store, &EngineConfig::default().log_key, &[op])
        .await
        .expect("appended");
    // A second engine replays the log with the big timeline in it.
    support::engine_on(store, Arc::new(SystemClock)).await
}

/// A runtime with one thread for tasks and one for blocking work.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(1)
        .build()
        .expect("a runtime")
}

/// Runs `read` while the only blocking thread is taken, and a cheap read beside it: the cheap
/// read answers, and `read` cannot end until the blocking thread is let go. Had `read` run on
/// the runtime's thread instead, nothing would hold it back and it would end first.
async fn a_cheap_read_goes_first<T: Send + 'static>(
    engine: &Arc<Engine>,
    read: impl std::future::Future<Output = ServiceResult<T>> + Send + 'static,
) -> T {
    let engine = Arc::clone(engine);
    waits_for_the_blocking_pool(read, async move {
        let timelines = engine
            .session("bob".parse().expect("name"))
            .list_timelines(PageRequest::default())
            .await
            .expect("timelines listed");
        assert_eq!(timelines.items.len(), 1, "only primary");
    })
    .await
}

/// Runs `work` while the only blocking thread is taken, and `meanwhile` on the runtime's thread;
/// asserts that `work` has not ended before the blocking thread is let go, then answers it.
async fn waits_for_the_blocking_pool<T: Send + 'static>(
    work: impl std::future::Future<Output = ServiceResult<T>> + Send + 'static,
    meanwhile: impl std::future::Future<Output = ()>,
) -> T {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let blocker = tokio::task::spawn_blocking(move || held.recv());
    let heavy = tokio::spawn(work);
    meanwhile.await;
    // Every chance to end, were it running here.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(
        !heavy.is_finished(),
        "the heavy work ended without the blocking pool: it ran on the runtime's thread"
    );
    release.send(()).expect("the blocker waits");
    blocker
        .await
        .expect("blocker task")
        .expect("released by the test");
    heavy.await.expect("task").expect("the heavy work answers")
}

#[test]
fn a_scan_of_a_huge_timeline_does_not_hold_up_a_cheap_read() {
    runtime().block_on(async {
        let engine = engine_with_a_huge_timeline().await;
        let ada = engine.session("ada".parse().expect("name"));
        let report = a_cheap_read_goes_first(&engine, async move {
            ada.monitor_timeline(MonitorQuery {
                timeline_id: TimelineId::primary(),
                time_range: None,
            })
            .await
        })
        .await;
        assert!(!report.anomalies.is_empty(), "the scan reports the loop");

        // Looking an event up by its description reads every event.
        let ada = engine.session("ada".parse().expect("name"));
        let check = a_cheap_read_goes_first(&engine, async move {
            ada.check_timeline(SignificantEventQuery {
                timeline_id: TimelineId::primary(),
                significant_event: "An event nobody recorded".into(),
            })
            .await
        })
        .await;
        assert_eq!(check.status, "missing");
    });
}

/// A replica that falls behind folds in the other processes' records (each verified against
/// its link and decoded) on the blocking pool: the task that found it behind waits there, and
/// the runtime's thread goes on serving. Folded on the task thread, the catch-up would end
/// while the only blocking thread is still taken.
#[test]
fn catching_up_with_another_process_is_done_on_the_blocking_pool() {
    const RECORDS: usize = 2_000;
    runtime().block_on(async {
        let store = Arc::new(MemoryStore::new());
        let engine = support::engine_on(store.clone(), Arc::new(SystemClock)).await;
        let before = engine.snapshot().await.expect("a snapshot").seq;
        let id = |i: usize| EventId::from_ulid(ulid::Ulid::from((9u128 << 100) | i as u128));
        let start = DateTime::<Utc>::from_timestamp(946_684_800, 0).expect("2000-01-01");
        // Another process appends, one event per record.
        let ops: Vec<Op> = (0..RECORDS)
            .map(|i| Op::AddEvents {
                timeline: TimelineId::primary(),
                events: vec![geneva_event(
                    id(i),
                    format!("Appended elsewhere {i}"),
                    start + Duration::minutes(i as i64),
                    vec![],
                )],
                at: None,
            })
            .collect();
        chronoscope::engine::append_ops(&*store, &EngineConfig::default().log_key, &ops)
            .await
            .expect("appended");

        let reader = Arc::clone(&engine);
        let world =
            waits_for_the_blocking_pool(async move { reader.snapshot().await }, async {}).await;
        assert_eq!(
            world.seq,
            before + RECORDS as u64,
            "every record appended elsewhere is folded in"
        );
    });
}
