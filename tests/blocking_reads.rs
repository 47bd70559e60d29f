//! Reads whose work grows with a timeline's size (a monitor scan, a look-up of an event by its
//! description, a page of past versions, a check of the log) run on the heavy threads
//! (`chronoscope::engine::heavy`), so a scan of a huge timeline never holds up the cheap
//! requests queued on the same runtime worker; catching up with another process runs on
//! tokio's blocking pool.
//!
//! The runtime here has one thread for tasks and one for blocking work. A test takes every
//! heavy thread (or the blocking one): work sent there waits for them, work done on the task
//! thread would not.

mod support;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use chronoscope::engine::{Engine, EngineConfig, EngineSession, Op, Seed, SystemClock};
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

/// Runs ada's `read` while every heavy thread is taken, and a cheap read beside it: the cheap
/// read answers, and `read` cannot end until the heavy threads are let go. Had `read` run on
/// the runtime's thread instead, nothing would hold it back and it would end first.
async fn a_cheap_read_goes_first<T: Send + 'static, F>(
    engine: &Arc<Engine>,
    read: impl FnOnce(EngineSession) -> F,
) -> T
where
    F: std::future::Future<Output = ServiceResult<T>> + Send + 'static,
{
    let read = read(engine.session("ada".parse().expect("name")));
    let engine = Arc::clone(engine);
    let held = chronoscope::engine::heavy::hold_every_thread().await;
    waits_for(held, read, async move {
        let timelines = engine
            .session("bob".parse().expect("name"))
            .list_timelines(PageRequest::default())
            .await
            .expect("timelines listed");
        assert_eq!(timelines.items.len(), 1, "only primary");
    })
    .await
}

/// Runs `work` while the threads `held` are taken, and `meanwhile` on the runtime's thread;
/// asserts that `work` has not ended before they are let go (`held` dropped), then answers it.
async fn waits_for<T: Send + 'static>(
    held: impl Send,
    work: impl std::future::Future<Output = ServiceResult<T>> + Send + 'static,
    meanwhile: impl std::future::Future<Output = ()>,
) -> T {
    let heavy = tokio::spawn(work);
    meanwhile.await;
    // Every chance to end, were it running here.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(
        !heavy.is_finished(),
        "the heavy work ended while the threads it belongs on were taken: it ran on the \
         runtime's thread"
    );
    drop(held);
    heavy.await.expect("task").expect("the heavy work answers")
}

/// The only blocking thread of the runtime, taken until the answer is dropped.
async fn hold_the_blocking_thread() -> impl Send {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (taken, is_taken) = tokio::sync::oneshot::channel::<()>();
    tokio::task::spawn_blocking(move || {
        let _ = taken.send(());
        let _ = held.recv();
    });
    is_taken.await.expect("the blocking thread starts");
    release
}

#[test]
fn a_scan_of_a_huge_timeline_does_not_hold_up_a_cheap_read() {
    runtime().block_on(async {
        let engine = engine_with_a_huge_timeline().await;
        let report = a_cheap_read_goes_first(&engine, |ada| async move {
            ada.monitor_timeline(MonitorQuery {
                timeline_id: TimelineId::primary(),
                time_range: None,
            })
            .await
        })
        .await;
        assert!(!report.anomalies.is_empty(), "the scan reports the loop");

        // Looking an event up by its description reads every event.
        let check = a_cheap_read_goes_first(&engine, |ada| async move {
            ada.check_timeline(SignificantEventQuery {
                timeline_id: TimelineId::primary(),
                significant_event: "An event nobody recorded".into(),
            })
            .await
        })
        .await;
        assert_eq!(check.status, "missing");

        // A page of past versions reads every version; checking the log reads every record.
        let versions = a_cheap_read_goes_first(&engine, |ada| async move {
            ada.event_versions(SearchQuery {
                timeline_id: Some(TimelineId::primary()),
                page: PageRequest::first(10),
                ..SearchQuery::default()
            })
            .await
        })
        .await;
        assert_eq!(versions.items.len(), 10);
        let validated = a_cheap_read_goes_first(&engine, |ada| async move {
            ada.validate_integrity(IntegrityQuery {
                timeline_id: TimelineId::primary(),
                timestamp: None,
            })
            .await
        })
        .await;
        assert_eq!(validated.integrity_score, "100%", "the log verifies");
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
        let held = hold_the_blocking_thread().await;
        let world = waits_for(held, async move { reader.snapshot().await }, async {}).await;
        assert_eq!(
            world.seq,
            before + RECORDS as u64,
            "every record appended elsewhere is folded in"
        );
    });
}
