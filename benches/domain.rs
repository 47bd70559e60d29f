//! Benchmarks of the pure domain core on a timeline of 1,000,000 events (DESIGN §7):
//! the incremental paradox check, the full monitor scan, event search and branching.
//!
//! Run with `cargo bench --bench domain`. The timelines are generated once, deterministically.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};

use chronoscope::engine::{Op, TimelineState, World};
use chronoscope::model::{
    Event, EventId, EventStatus, History, Instant, Item, ItemId, Position, TimeRange, Timeline,
    TimelineId, Traveller, Whereabouts, Window,
};
use chronoscope::monitor::{self, Scan};
use chronoscope::paradox::{self, Change, Subject};

const MILLION: usize = 1_000_000;
const CHAINS: usize = 1_000;

const CITIES: [&str; 40] = [
    "Paris",
    "London",
    "Geneva",
    "Vienna",
    "Prague",
    "Berlin",
    "Rome",
    "Madrid",
    "Lisbon",
    "Dublin",
    "Oslo",
    "Helsinki",
    "Warsaw",
    "Athens",
    "Cairo",
    "Nairobi",
    "Lagos",
    "Mumbai",
    "Delhi",
    "Tokyo",
    "Kyoto",
    "Osaka",
    "Seoul",
    "Beijing",
    "Shanghai",
    "Sydney",
    "Perth",
    "Auckland",
    "Lima",
    "Santiago",
    "Bogota",
    "Quito",
    "Havana",
    "Boston",
    "Chicago",
    "Denver",
    "Seattle",
    "Toronto",
    "Montreal",
    "Reykjavik",
];
const PLACES: [&str; 25] = [
    "Observatory",
    "Central Station",
    "Old Town",
    "Harbour",
    "University",
    "Library",
    "Cathedral",
    "Market",
    "Parliament",
    "Museum",
    "Laboratory",
    "Airport",
    "Bridge",
    "Tower",
    "Palace",
    "Garden",
    "Arsenal",
    "Opera",
    "Bank",
    "Hospital",
    "Factory",
    "Archive",
    "Lighthouse",
    "Embassy",
    "Global AI Hub",
];

fn start() -> Instant {
    DateTime::<Utc>::from_timestamp(946_684_800, 0).unwrap_or_default() // 2000-01-01
}

fn event_id(i: usize) -> EventId {
    EventId::from_ulid(ulid::Ulid::from((0x0190_0000_0000u128 << 80) | i as u128))
}

/// A deterministic pseudo-random sequence (splitmix64), so every run builds the same world.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `n` events a minute apart on average, in 1,000 causal chains across 1,000 locations,
/// with a cross-link now and then, a fixed point every 997 events, a few causes named ahead
/// of their events (standing causal-order paradoxes) and one small causal loop.
fn generate(n: usize) -> History {
    let mut rng = Rng(42);
    let mut history = History::default();
    for i in 0..n {
        let mut causes = Vec::new();
        if i >= CHAINS {
            causes.push(event_id(i - CHAINS));
        }
        if i > 10 && rng.below(10) == 0 {
            causes.push(event_id(i - 1 - rng.below(10)));
        }
        // A cause named ahead: a standing paradox (and the last three close a loop).
        if i % 10_007 == 5_000 && i + 10 < n {
            causes.push(event_id(i + 10));
        }
        if i + 3 == n {
            causes.push(event_id(n - 1));
        }
        if i + 1 == n {
            causes.push(event_id(n - 3));
        }
        let location = format!(
            "{} {}",
            CITIES[i % CITIES.len()],
            PLACES[(i / CITIES.len()) % PLACES.len()]
        );
        history.insert(Event {
            id: event_id(i),
            description: format!("Event {i} of chain {}", i % CHAINS),
            time: start() + chrono::Duration::seconds(i as i64 * 60),
            location,
            causes,
            fixed_point: i % 997 == 0,
            status: EventStatus::OnSchedule,
            supersedes: None,
            superseded_by: None,
            lineage: event_id(i),
            author: None,
        });
    }
    history
}

struct Setup {
    timeline: Timeline,
    history: History,
    traveller: Traveller,
    position: Position,
    items: Vec<Item>,
}

impl Setup {
    fn new(n: usize) -> Self {
        let traveller: Traveller = "ada".parse().unwrap_or_else(|_| unreachable!());
        let timeline = Timeline {
            id: TimelineId::primary(),
            name: "Primary".into(),
            description: None,
            variation: None,
            destination_time: None,
            created_at: start(),
            window: Window::Unbounded,
            parent: None,
            created_by: None,
        };
        let position = Position {
            timeline: TimelineId::primary(),
            arrival_time: start(),
            arrived_at: start(),
            paused: false,
            location: None,
        };
        let items = (0..2u128)
            .map(|k| Item {
                id: ItemId::from_ulid(ulid::Ulid::from(k + 1)),
                description: format!("item {k}"),
                owner: traveller.clone(),
                origin_timeline: TimelineId::primary(),
                origin_time: start() + chrono::Duration::days(30),
                taken_at: Some(start() + chrono::Duration::days(60)),
                whereabouts: Whereabouts::Carried,
                registered_at: start(),
                location: None,
            })
            .collect();
        Self {
            timeline,
            history: generate(n),
            traveller,
            position: Position {
                timeline: "tml_elsewhere".parse().unwrap_or_else(|_| unreachable!()),
                ..position
            },
            items,
        }
    }

    fn subject(&self) -> Subject<'_> {
        Subject {
            timeline: &self.timeline.id,
            history: &self.history,
            traveller: &self.traveller,
            position: &self.position,
            position_time: self.position.arrival_time,
            items: &self.items,
            isolated: None,
        }
    }

    /// Ten proposed changes: six moves (one of a fixed point), two additions, two items.
    fn changes(&self, rng: &mut Rng) -> Vec<Change> {
        let n = self.history.len();
        let mut out = Vec::new();
        for k in 0..6 {
            let i = if k == 0 {
                997 * (1 + rng.below(n / 997 - 1))
            } else {
                rng.below(n)
            };
            out.push(Change::Move {
                event: event_id(i),
                time: start()
                    + chrono::Duration::seconds((i as i64 + rng.below(3000) as i64 - 1500) * 60),
            });
        }
        for k in 0..2 {
            out.push(Change::Add {
                event: EventId::from_ulid(ulid::Ulid::from(u128::MAX - k)),
                description: "Retrieve the blueprint".into(),
                time: start() + chrono::Duration::seconds(rng.below(n) as i64 * 60),
            });
        }
        for item in &self.items {
            out.push(Change::BringItem {
                item: item.id.clone(),
                time: start() + chrono::Duration::days(rng.below(90) as i64),
            });
        }
        out
    }
}

fn paradox_check(c: &mut Criterion, big: &Setup) {
    let mut rng = Rng(7);
    let lists: Vec<Vec<Change>> = (0..64).map(|_| big.changes(&mut rng)).collect();
    let subject = big.subject();
    let mut g = c.benchmark_group("paradox");
    g.sample_size(50);
    let mut k = 0;
    g.bench_function("check_10_changes_1m_events", |b| {
        b.iter(|| {
            k = (k + 1) % lists.len();
            black_box(paradox::check(&subject, &lists[k]))
        })
    });
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    g.bench_function("full_check_10_changes_1m_events", |b| {
        b.iter(|| black_box(paradox::full_check(&subject, &lists[0])))
    });
    g.finish();
}

fn monitor_scan(c: &mut Criterion, big: &Setup) {
    let mut g = c.benchmark_group("monitor");
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    let subject = big.subject();
    let now = start() + chrono::Duration::days(3650);
    g.bench_function("full_scan_1m_events", |b| {
        b.iter(|| {
            // The rescan is the scan's work; a kept one is what the timelines list reuses.
            let graph = monitor::Graph::of(subject.history);
            black_box(monitor::scan(&Scan {
                timeline: &big.timeline,
                history: subject.history,
                graph: &graph,
                owners: &[monitor::Owner {
                    subject,
                    arrived_at: None,
                }],
                now,
                touched: &Default::default(),
                range: None,
                failures: &[],
                isolated: None,
            }))
        })
    });
    g.finish();
}

fn search(c: &mut Criterion, big: &Setup) {
    let mut g = c.benchmark_group("search");
    g.sample_size(50);
    let n = big.history.len() as i64;
    let mut rng = Rng(11);
    // "paris" matches 25 of the 1,000 locations; each range holds far more than 100 hits.
    let ranges: Vec<TimeRange> = (0..64)
        .map(|_| {
            let from =
                start() + chrono::Duration::minutes(rng.below((n - 200_000) as usize) as i64);
            TimeRange {
                start: from,
                end: from + chrono::Duration::days(60),
            }
        })
        .collect();
    let mut k = 0;
    g.bench_function("location_and_range_100_results_1m_events", |b| {
        b.iter(|| {
            k = (k + 1) % ranges.len();
            let found = big
                .history
                .search(Some("paris"), Some(&ranges[k]), None, 100);
            assert_eq!(found.len(), 100);
            black_box(found)
        })
    });
    g.finish();
}

fn branching(c: &mut Criterion, sizes: &[(&str, &Setup)]) {
    let mut g = c.benchmark_group("branch");
    g.sample_size(50);
    for (label, setup) in sizes {
        let mut world = World::default();
        world.seq = 1;
        world.timelines.insert(
            TimelineId::primary(),
            TimelineState {
                meta: Arc::new(setup.timeline.clone()),
                history: setup.history.clone(),
                touched: Default::default(),
                base: None,
                data: Default::default(),
                isolated: Default::default(),
            },
        );
        let op = Op::CreateTimeline {
            timeline: Timeline {
                id: "tml_01jbranch".parse().unwrap_or_else(|_| unreachable!()),
                name: "branch".into(),
                description: Some("What if".into()),
                variation: None,
                destination_time: None,
                created_at: start(),
                window: Window::Seconds(3600),
                parent: Some(TimelineId::primary()),
                created_by: None,
            },
        };
        g.bench_with_input(BenchmarkId::new("clone_history", label), setup, |b, s| {
            b.iter(|| black_box(s.history.clone()))
        });
        g.bench_with_input(
            BenchmarkId::new("apply_create_timeline", label),
            &world,
            |b, w| {
                b.iter_batched(
                    || w.clone(),
                    |mut w| {
                        let applied = w.apply(2, op.clone());
                        black_box(applied.is_ok());
                        w
                    },
                    BatchSize::SmallInput,
                )
            },
        );
    }
    g.finish();
}

/// Diff and merge of a branch into its 1,000,000-event parent, 100 lineages changed on each
/// side since the branch point (50 of them on both: conflicts). The merge is decided in full,
/// paradox check included; only the append to the log is left out.
fn merging(c: &mut Criterion, big: &Setup) {
    let mut g = c.benchmark_group("merge");
    g.sample_size(50);
    let mut world = World::default();
    world.seq = 1;
    world.timelines.insert(
        TimelineId::primary(),
        TimelineState {
            meta: Arc::new(big.timeline.clone()),
            history: big.history.clone(),
            touched: Default::default(),
            base: None,
            data: Default::default(),
            isolated: Default::default(),
        },
    );
    let branch: TimelineId = "tml_01jmergebranch"
        .parse()
        .unwrap_or_else(|_| unreachable!());
    let mut seq = 1;
    let mut apply = |world: &mut World, op: Op| {
        seq += 1;
        world
            .apply(seq, op)
            .unwrap_or_else(|e| panic!("the bench world folds: {e}"));
    };
    apply(
        &mut world,
        Op::CreateTimeline {
            timeline: Timeline {
                id: branch.clone(),
                name: "branch".into(),
                description: Some("What if".into()),
                variation: None,
                destination_time: None,
                created_at: start(),
                window: Window::Unbounded,
                parent: Some(TimelineId::primary()),
                created_by: None,
            },
        },
    );
    // Lineages spread over the timeline; the source changes 0..100, the destination 50..150.
    // (Never a fixed point: those are every 997th event.)
    let lineage = |k: usize| {
        let i = k * (MILLION / 200) + 7;
        event_id(if i.is_multiple_of(997) { i + 1 } else { i })
    };
    let change = |timeline: &TimelineId, world: &World, k: usize, n: u128, what: &str| {
        let history = &world
            .timelines
            .get(timeline)
            .unwrap_or_else(|| unreachable!())
            .history;
        let old = history
            .head_of(&lineage(k))
            .unwrap_or_else(|| unreachable!())
            .clone();
        let mut new = (*old).clone();
        new.id = EventId::from_ulid(ulid::Ulid::from((0x0291u128 << 112) | n));
        new.description = format!("{what} {k}");
        new.status = EventStatus::Manipulated;
        new.supersedes = Some(old.id.clone());
        new.superseded_by = None;
        new.fixed_point = false;
        Op::Manipulate {
            timeline: timeline.clone(),
            old: old.id.clone(),
            new,
            at: Some(start()),
        }
    };
    for k in 0..100 {
        let op = change(&branch, &world, k, k as u128, "changed in the branch");
        apply(&mut world, op);
    }
    for k in 50..150 {
        let op = change(
            &TimelineId::primary(),
            &world,
            k,
            1_000 + k as u128,
            "changed in primary",
        );
        apply(&mut world, op);
    }
    let traveller: Traveller = "bench".parse().unwrap_or_else(|_| unreachable!());
    let diff = chronoscope::service::DiffQuery {
        source_timeline_id: branch.clone(),
        destination_timeline_id: TimelineId::primary(),
    };
    let request = chronoscope::service::MergeRequest {
        source_timeline_id: branch,
        destination_timeline_id: TimelineId::primary(),
        conflict_resolution: chronoscope::service::MergeStrategy::SourceOverwrite,
        safety_check: true,
    };
    let lines = chronoscope::engine::diff_timelines(&world, &diff)
        .map(|d| d.lines.len())
        .unwrap_or_default();
    assert_eq!(
        lines, 150,
        "100 + 100 changed lineages, 50 of them on both sides"
    );
    g.bench_function("diff_100_changed_lineages_each_1m_events", |b| {
        b.iter(|| black_box(chronoscope::engine::diff_timelines(&world, &diff).is_ok()))
    });
    g.bench_function("merge_100_changed_lineages_each_1m_events", |b| {
        b.iter(|| {
            let decided = chronoscope::engine::decide_merge(&world, &traveller, start(), &request);
            black_box(decided.map(|(ops, _)| ops.len()).unwrap_or_default())
        })
    });
    g.finish();
}

fn domain(c: &mut Criterion) {
    let small = Setup::new(10_000);
    let big = Setup::new(MILLION);
    paradox_check(c, &big);
    monitor_scan(c, &big);
    search(c, &big);
    branching(c, &[("10k", &small), ("1m", &big)]);
    merging(c, &big);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = domain
}
criterion_main!(benches);
