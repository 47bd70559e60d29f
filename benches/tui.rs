//! Dashboard budgets (DESIGN §7): one frame with 10,000 timelines and 1,000 search results
//! (≤ 2 ms), and start to first frame on the embedded engine, SQLite with the demo world
//! (≤ 150 ms). Two first frames are measured and named apart: `first_frame_before_data` is
//! drawn as soon as the dashboard starts, before any answer (header and empty panes with their
//! spinners); `first_full_frame` waits until the header, timelines and monitor have answered,
//! which is what a person sees as "started". The timeline view is measured on its own with
//! 10,000 events (same ≤ 2 ms budget), fitted and zoomed in.

use std::sync::Arc;

use chrono::Duration;
use chronoscope::engine::{Clock, Engine, EngineConfig, ManualClock, Seed};
use chronoscope::model::{EventId, EventStatus, Instant, TimelineId, Window, parse_instant};
use chronoscope::service::prelude::*;
use chronoscope::service::{EventRecord, TimelineInfo};
use chronoscope::store::MemoryStore;
use chronoscope::tui::app::{App, AppConfig};
use chronoscope::tui::keymap::KeyMap;
use chronoscope::tui::theme::{Palette, Theme};
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn t(s: &str) -> Instant {
    parse_instant("t", s).expect("fixed time")
}

fn timelines(n: usize, now: Instant) -> Vec<TimelineInfo> {
    (0..n)
        .map(|i| {
            let id = if i == 0 {
                TimelineId::primary()
            } else {
                TimelineId::from_ulid(ulid::Ulid::from(i as u128))
            };
            TimelineInfo {
                destination_time: Some(now - Duration::days(365 * (i as i64 % 300))),
                window: Window::Seconds(3600),
                parent: (i > 0).then(TimelineId::primary),
                closes_at: Some(now + Duration::hours(1)),
                paradoxes: i % 7,
                ..TimelineInfo::bare(id, format!("Timeline {i}"), now)
            }
        })
        .collect()
}

fn results(n: usize, now: Instant) -> Vec<EventRecord> {
    (0..n)
        .map(|i| {
            let id = EventId::from_ulid(ulid::Ulid::from(i as u128 + 1));
            EventRecord {
                event_id: id.clone(),
                description: format!("Event number {i} of a long history"),
                time: now - Duration::hours(i as i64),
                location: "Paris".into(),
                causes: vec![],
                fixed_point: i % 7 == 0,
                status: EventStatus::OnSchedule,
                lineage: id,
                supersedes: None,
                superseded_by: None,
                author: None,
            }
        })
        .collect()
}

async fn open_engine(seed: Seed, clock: Arc<dyn Clock>) -> Arc<dyn TimelineService> {
    let engine = Engine::open(
        Arc::new(MemoryStore::new()),
        clock,
        EngineConfig::default(),
        seed,
    )
    .await
    .expect("engine opens");
    Arc::new(engine.session("ada".parse().expect("traveller")))
}

fn app(service: Arc<dyn TimelineService>, clock: Arc<dyn Clock>) -> App {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::mem::forget(rx); // answers are not awaited in the frame benchmark
    App::new(
        service,
        AppConfig {
            source: "embedded: bench".into(),
            palette: Palette::new(Theme::Dark, false),
            keymap: KeyMap::default(),
            clock,
            push: false,
        },
        tx,
    )
}

fn frame(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let now = t("2026-11-22T10:00:00Z");
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
    let service = rt.block_on(open_engine(Seed::None, clock.clone()));
    let mut app = app(service, clock);
    app.panes.timelines.set(timelines(10_000, now));
    app.panes.timelines.cursor.selected = 5_000;
    app.panes.search.set_results(results(1_000, now));
    app.panes.search.cursor.selected = 500;
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("backend");
    c.bench_function("tui/frame_10k_timelines_1k_results_200x60", |b| {
        b.iter(|| {
            terminal.draw(|f| app.draw(f)).expect("draw");
        })
    });
}

/// The embedded default: the SQLite file in the data directory, seeded with the demo world.
async fn open_sqlite(path: &std::path::Path, clock: Arc<dyn Clock>) -> Arc<dyn TimelineService> {
    let url = format!("sqlite://{}", path.display());
    let store = chronoscope::store::open(&url).await.expect("sqlite store");
    let engine = Engine::open(store, clock, EngineConfig::default(), Seed::Demo)
        .await
        .expect("engine opens");
    Arc::new(engine.session("ada".parse().expect("traveller")))
}

fn start(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let now = t("2026-11-22T10:00:00Z");
    let dir = tempfile::tempdir().expect("temp dir");
    let existing = dir.path().join("existing.db");
    // The usual start: the data file exists (first run already seeded it).
    rt.block_on(open_sqlite(&existing, Arc::new(ManualClock::new(now))));
    c.bench_function(
        "tui/start_to_first_frame_before_data_sqlite_existing",
        |b| {
            b.to_async(&rt).iter(|| async {
                let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
                let service = open_sqlite(&existing, clock.clone()).await;
                let mut app = app(service, clock);
                app.start();
                let mut terminal = Terminal::new(TestBackend::new(120, 35)).expect("backend");
                terminal.draw(|f| app.draw(f)).expect("draw");
            })
        },
    );
    let mut run = 0u64;
    c.bench_function(
        "tui/start_to_first_frame_before_data_sqlite_first_run",
        |b| {
            b.to_async(&rt).iter(|| {
                run += 1;
                let fresh = dir.path().join(format!("fresh-{run}.db"));
                async move {
                    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
                    let service = open_sqlite(&fresh, clock.clone()).await;
                    let mut app = app(service, clock);
                    app.start();
                    let mut terminal = Terminal::new(TestBackend::new(120, 35)).expect("backend");
                    terminal.draw(|f| app.draw(f)).expect("draw");
                }
            })
        },
    );
    c.bench_function("tui/start_to_first_full_frame_sqlite_existing", |b| {
        b.to_async(&rt).iter(|| async {
            let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
            let service = open_sqlite(&existing, clock.clone()).await;
            let mut h = chronoscope::tui::testing::Harness::new(service, clock);
            h.settle().await; // header, timelines and monitor answered
            h.render_buffer(120, 35);
        })
    });
}

/// 10,000 events over three centuries, every kind of event, an anomaly, the traveller and an
/// anchor: the timeline view fitted to them all, then zoomed to a decade in their middle.
fn timeline_view(c: &mut Criterion) {
    use chronoscope::model::{Anchor, AnchorId, AnchorStatus, AnomalyId, Position};
    use chronoscope::service::{Anomaly, AnomalyKind, Severity, TravellerStatus};
    use chronoscope::tui::panes::Ctx;
    use chronoscope::tui::panes::timeline_view::{TimelineView, ViewData};

    let now = t("2026-11-22T10:00:00Z");
    let timeline = TimelineId::primary();
    let first = t("1700-01-01T00:00:00Z");
    let statuses = [
        EventStatus::OnSchedule,
        EventStatus::Manipulated,
        EventStatus::Superseded,
        EventStatus::Reverted,
    ];
    let events: Vec<EventRecord> = results(10_000, now)
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            // Spread over 300 years, unevenly (dense clusters and gaps).
            let step = (i as i64 * 7_919) % 10_000;
            e.time = first + Duration::days(step * 11);
            e.status = statuses[i % 13 % 4];
            e
        })
        .collect();
    let anomaly = Anomaly {
        anomaly_id: AnomalyId::derived("bench"),
        description: "an effect before its cause".into(),
        kind: AnomalyKind::OrphanedEvent,
        severity: Severity::Warning,
        subjects: events
            .iter()
            .step_by(500)
            .map(|e| e.event_id.to_string())
            .collect(),
        detected_at: now,
    };
    let anomalies = [&anomaly];
    let traveller = TravellerStatus {
        traveller: "ada".parse().expect("traveller"),
        timeline_id: timeline.clone(),
        time: t("1850-06-01T00:00:00Z"),
        position: Position {
            timeline: timeline.clone(),
            arrival_time: t("1850-06-01T00:00:00Z"),
            arrived_at: now,
            paused: false,
            location: None,
        },
        operator: false,
        restriction: None,
        read_only_token: false,
    };
    let anchors = [Anchor {
        id: AnchorId::from_ulid(ulid::Ulid::from(1u128)),
        owner: "ada".parse().expect("traveller"),
        timeline: timeline.clone(),
        timestamp: t("1851-01-01T00:00:00Z"),
        description: Some("home".into()),
        status: AnchorStatus::Active,
        created_at: now,
    }];
    let data = ViewData {
        timeline: &timeline,
        name: "Primary",
        events: &events,
        anomalies: &anomalies,
        traveller: Some(&traveller),
        anchors: &anchors,
    };
    let palette = Palette::new(Theme::Dark, false);
    let ctx = Ctx {
        palette: &palette,
        now,
        focused: true,
        here: Some(&timeline),
        pending: false,
        offline: None,
    };
    let mut terminal = Terminal::new(TestBackend::new(140, 40)).expect("backend");
    let mut view = TimelineView::new();
    c.bench_function("tui/frame_timeline_view_10k_events_fit_140x40", |b| {
        b.iter(|| {
            terminal
                .draw(|f| {
                    let area = f.area();
                    view.render(f, area, &ctx, &data)
                })
                .expect("draw");
        })
    });
    view.center_on(t("1850-06-01T00:00:00Z"));
    view.zoom_to(Duration::days(3_652));
    c.bench_function("tui/frame_timeline_view_10k_events_decade_140x40", |b| {
        b.iter(|| {
            terminal
                .draw(|f| {
                    let area = f.area();
                    view.render(f, area, &ctx, &data)
                })
                .expect("draw");
        })
    });
}

criterion_group!(benches, frame, start, timeline_view);
criterion_main!(benches);
