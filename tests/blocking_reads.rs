//! Reads whose work grows with a timeline's size (a monitor scan, a look-up of an event by its
//! description, a check of the log) run on the heavy threads
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
use chronoscope::model::{Event, EventId, EventStatus, TimeRange, TimelineId};
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

        // Checking the log reads every record.
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

/// The timelines list counts a timeline's anomalies without waiting for a scan: a large
/// timeline that changed is listed at once with its last count and that count's age while it is
/// recounted on the heavy threads, and a branch of it is created without a scan on the writer.
/// Scanned inline, the list would answer the new count at once (a worker held meanwhile).
#[test]
fn the_timelines_list_never_waits_for_a_scan_of_a_large_timeline() {
    runtime().block_on(async {
        let engine = engine_with_a_huge_timeline().await;
        let ada = engine.session("ada".parse().expect("name"));

        // Never counted: the list says so rather than scanning.
        let held = chronoscope::engine::heavy::hold_every_thread().await;
        let first = primary_as_listed(&ada).await;
        assert!(first.paradoxes_recounting, "{first:?}");
        assert_eq!((first.paradoxes, first.paradoxes_counted_at), (0, None));
        drop(held);
        let counted = recounted(&ada).await;
        let monitor = ada
            .monitor_timeline(MonitorQuery {
                timeline_id: TimelineId::primary(),
                time_range: None,
            })
            .await
            .expect("monitor");
        assert!(counted.paradoxes >= 1, "the loop is counted: {counted:?}");
        assert_eq!(counted.paradoxes, monitor.anomalies.len(), "one number");
        assert_eq!(counted.paradoxes_counted_at, None, "current");

        // A change: the last count, with when it held, until the recount ends.
        let held = chronoscope::engine::heavy::hold_every_thread().await;
        ada.add_event(
            &TimelineId::primary(),
            NewEvent {
                description: "A quiet evening".into(),
                time: "1999-01-01T00:00:00Z".parse().expect("time"),
                location: "Geneva".into(),
                causes: vec![],
                fixed_point: false,
                safety_check: false,
            },
        )
        .await
        .expect("event added");
        let stale = primary_as_listed(&ada).await;
        assert!(stale.paradoxes_recounting, "{stale:?}");
        assert_eq!(stale.paradoxes, counted.paradoxes, "the last count");
        assert!(stale.paradoxes_counted_at.is_some(), "and its age");
        // A branch of it is answered without a scan on the writer.
        let branch = ada
            .create_timeline(NewTimeline {
                name: Some("Branch".into()),
                base_timeline_id: Some(TimelineId::primary()),
                ..NewTimeline::default()
            })
            .await
            .expect("branch created");
        assert!(branch.paradoxes_recounting, "{branch:?}");
        assert_eq!(branch.event_count, EVENTS + 1);
        drop(held);
        let again = recounted(&ada).await;
        assert_eq!(
            again.paradoxes, counted.paradoxes,
            "the event added no paradox"
        );
    });
}

/// `primary` as the timelines list shows it (at once: a list never waits for a heavy thread).
async fn primary_as_listed(who: &dyn TimelineService) -> TimelineInfo {
    let listed = who.list_timelines(PageRequest::default());
    tokio::time::timeout(std::time::Duration::from_secs(10), listed)
        .await
        .expect("the list answers without a heavy thread")
        .expect("timelines listed")
        .items
        .into_iter()
        .find(|t| t.id.is_primary())
        .expect("primary is listed")
}

/// `primary` as listed once its recount has ended (the heavy threads are free).
async fn recounted(who: &dyn TimelineService) -> TimelineInfo {
    for _ in 0..400 {
        let listed = primary_as_listed(who).await;
        if !listed.paradoxes_recounting {
            return listed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the recount did not end within 10 s");
}

/// A page of every version (past ones too) reads what it returns from indexes, so it is
/// answered at once even while every heavy thread is taken, in time order, and paged to the
/// end without a version missed or told twice.
#[test]
fn a_page_of_every_version_is_a_cheap_read() {
    runtime().block_on(async {
        let engine = engine_with_a_huge_timeline().await;
        let ada = engine.session("ada".parse().expect("name"));
        // Three manipulations of early events: each leaves a past version behind.
        let first_ten = ada
            .search_events(SearchQuery {
                timeline_id: Some(TimelineId::primary()),
                page: PageRequest::first(10),
                ..SearchQuery::default()
            })
            .await
            .expect("searched");
        for event in first_ten.items.iter().skip(2).take(3) {
            ada.manipulate_event(ManipulateRequest {
                timeline_id: Some(TimelineId::primary()),
                event_id: event.event_id.clone(),
                new_outcome: NewOutcome {
                    description: Some(format!("{} (retold)", event.description)),
                    changes: Vec::new(),
                },
                safety_check: false,
            })
            .await
            .expect("manipulated");
        }
        let held = chronoscope::engine::heavy::hold_every_thread().await;
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = ada.event_versions(SearchQuery {
                timeline_id: Some(TimelineId::primary()),
                time_range: Some(TimeRange {
                    start: first_ten.items[0].time,
                    end: first_ten.items[9].time,
                }),
                page: PageRequest {
                    limit: Some(4),
                    cursor: cursor.take(),
                },
                ..SearchQuery::default()
            });
            let page = tokio::time::timeout(std::time::Duration::from_secs(10), page)
                .await
                .expect("answered while the heavy threads are taken: not one of them")
                .expect("a page of versions");
            seen.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        drop(held);
        assert_eq!(
            seen.len(),
            13,
            "ten events, three of them with a past version"
        );
        let superseded = seen
            .iter()
            .filter(|e| e.status == EventStatus::Superseded)
            .count();
        assert_eq!(superseded, 3);
        assert!(
            seen.windows(2).all(|w| w[0].time <= w[1].time),
            "in time order"
        );
        let mut ids: Vec<_> = seen.iter().map(|e| e.event_id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 13, "none told twice");
    });
}
