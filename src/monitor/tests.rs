//! The monitor's anomalies: paradoxes, a closing window, orphaned events, failed automation.

use chrono::Duration;

use super::*;
use crate::model::{Timeline, Window};
use crate::paradox::ParadoxKind;
use crate::paradox::tests::{Fixture, at, ev, id};

fn timeline(window: Window) -> Timeline {
    Timeline {
        id: "tml_x".parse().unwrap(),
        name: "x".into(),
        description: None,
        variation: None,
        destination_time: None,
        created_at: at(0),
        window,
        parent: None,
        created_by: None,
    }
}

fn run(
    fx: &Fixture,
    tl: &Timeline,
    now: Instant,
    range: Option<&TimeRange>,
    failures: &[AutomationFailure],
) -> Vec<Anomaly> {
    run_touched(fx, tl, now, range, failures, &imbl::HashMap::new())
}

fn run_touched(
    fx: &Fixture,
    tl: &Timeline,
    now: Instant,
    range: Option<&TimeRange>,
    failures: &[AutomationFailure],
    touched: &imbl::HashMap<EventId, Instant>,
) -> Vec<Anomaly> {
    let owners = [Owner {
        subject: fx.subject(),
        arrived_at: None,
    }];
    scan(&Scan {
        timeline: tl,
        history: &fx.history,
        graph: &Graph::of(&fx.history),
        owners: &owners,
        now,
        touched,
        range,
        failures,
        isolated: None,
    })
}

fn kinds(found: &[Anomaly]) -> Vec<AnomalyKind> {
    found.iter().map(|a| a.kind).collect()
}

/// b happens before its cause a; d names a cause that does not exist.
fn troubled() -> Fixture {
    Fixture::new(vec![
        ev("a", 20, &[]),
        ev("b", 10, &["a"]),
        ev("c", 30, &[]),
        ev("d", 40, &["c", "ghost"]),
    ])
}

#[test]
fn a_calm_timeline_has_no_anomaly() {
    let fx = Fixture::new(vec![ev("a", 0, &[]), ev("b", 10, &["a"])]);
    let tl = timeline(Window::Unbounded);
    assert!(run(&fx, &tl, at(1_000_000), None, &[]).is_empty());
}

#[test]
fn paradoxes_are_critical_and_operational_trouble_is_a_warning() {
    let fx = troubled();
    let tl = timeline(Window::Unbounded);
    let found = run(&fx, &tl, at(5), None, &[]);
    assert_eq!(
        kinds(&found),
        [
            AnomalyKind::Paradox(ParadoxKind::CausalOrder),
            AnomalyKind::OrphanedEvent
        ]
    );
    assert_eq!(found[0].severity, Severity::Critical);
    assert_eq!(found[0].subjects, ["b", "a"]);
    assert_eq!(found[1].severity, Severity::Warning);
    assert_eq!(found[1].subjects, ["d", "ghost"]);
    assert!(found[1].description.contains("'ghost'"));
    // History as shipped: there since the timeline was made, whenever it is looked at.
    assert_eq!(found[0].detected_at, at(0));
    assert_eq!(found[1].detected_at, at(0));
}

#[test]
fn an_anomaly_is_dated_by_the_latest_change_to_what_it_involves_not_by_the_look() {
    let fx = troubled();
    let tl = timeline(Window::Unbounded);
    let touched: imbl::HashMap<EventId, Instant> =
        [(id("a"), at(3)), (id("b"), at(7)), (id("c"), at(9))]
            .into_iter()
            .collect();
    for now in [at(10), at(500)] {
        let found = run_touched(&fx, &tl, now, None, &[], &touched);
        // b (touched at 7) before its cause a (touched at 3): it appeared at 7.
        assert_eq!(found[0].detected_at, at(7));
        // d names ghost; d itself is history as shipped, and c is not involved.
        assert_eq!(found[1].detected_at, at(0));
    }
}

#[test]
fn a_window_closing_within_a_tenth_of_its_length_is_reported() {
    let fx = Fixture::new(Vec::new());
    let tl = timeline(Window::Seconds(3600));
    assert!(run(&fx, &tl, at(50), None, &[]).is_empty());
    assert!(run(&fx, &tl, at(54), None, &[]).is_empty());
    let found = run(&fx, &tl, at(55), None, &[]);
    assert_eq!(kinds(&found), [AnomalyKind::WindowClosing]);
    assert_eq!(found[0].subjects, ["tml_x"]);
    assert!(
        found[0].description.contains("closes at"),
        "{}",
        found[0].description
    );
    assert_eq!(found[0].detected_at, at(54), "when its last tenth began");
    // Its words do not count down: a watcher is told once, not every second.
    assert_eq!(run(&fx, &tl, at(58), None, &[]), found);
    // Closed timelines and unbounded ones have no window to warn about.
    assert!(run(&fx, &tl, at(60), None, &[]).is_empty());
    assert!(run(&fx, &timeline(Window::Unbounded), at(55), None, &[]).is_empty());
}

#[test]
fn the_next_time_driven_change_is_the_last_tenth_then_the_close() {
    let tl = timeline(Window::Seconds(3600));
    assert_eq!(next_change(&tl, at(10)), Some(at(54)));
    assert_eq!(WindowPhase::of(&tl, at(10)), WindowPhase::Open);
    assert_eq!(WindowPhase::of(&tl, at(55)), WindowPhase::Closing);
    assert_eq!(next_change(&tl, at(55)), Some(at(60)));
    assert_eq!(WindowPhase::of(&tl, at(60)), WindowPhase::Closed);
    assert_eq!(next_change(&tl, at(60)), None);
    assert_eq!(next_change(&timeline(Window::Unbounded), at(10)), None);
}

#[test]
fn failed_automation_is_reported() {
    let fx = Fixture::new(Vec::new());
    let tl = timeline(Window::Unbounded);
    let failure = AutomationFailure {
        source: "scr_backup".into(),
        event_id: id("a"),
        message: "the event is a fixed point".into(),
        at: at(3),
    };
    let found = run(&fx, &tl, at(5), None, std::slice::from_ref(&failure));
    assert_eq!(kinds(&found), [AnomalyKind::AutomationFailed]);
    assert!(found[0].description.contains("fixed point"));
    assert_eq!(found[0].subjects, ["scr_backup", "a"]);
}

#[test]
fn the_same_cause_keeps_the_same_id_across_calls() {
    let fx = troubled();
    let tl = timeline(Window::Seconds(3600));
    let first = run(&fx, &tl, at(55), None, &[]);
    let later = run(&fx, &tl, at(57), None, &[]);
    let ids = |v: &[Anomaly]| v.iter().map(|a| a.anomaly_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), ids(&later));
    assert_eq!(first.len(), 3);
    let mut unique = ids(&first);
    unique.dedup();
    assert_eq!(unique.len(), 3);
    // A different cause (the other edge broken) gets another id.
    let other = Fixture::new(vec![
        ev("a", 20, &[]),
        ev("b", 30, &["a"]),
        ev("e", 5, &["b"]),
    ]);
    let found = run(&other, &timeline(Window::Unbounded), at(55), None, &[]);
    assert!(!ids(&first).contains(&found[0].anomaly_id));
}

#[test]
fn a_range_limits_the_scan_to_its_events() {
    let fx = troubled();
    let tl = timeline(Window::Unbounded);
    let early = TimeRange {
        start: at(0),
        end: at(15),
    };
    assert_eq!(
        kinds(&run(&fx, &tl, at(5), Some(&early), &[])),
        [AnomalyKind::Paradox(ParadoxKind::CausalOrder)]
    );
    let late = TimeRange {
        start: at(35),
        end: at(45),
    };
    assert_eq!(
        kinds(&run(&fx, &tl, at(5), Some(&late), &[])),
        [AnomalyKind::OrphanedEvent]
    );
    let empty = TimeRange {
        start: at(100),
        end: at(100) + Duration::minutes(1),
    };
    assert!(run(&fx, &tl, at(5), Some(&empty), &[]).is_empty());
}

/// b (ada's doing) happens before its cause a; every viewer's scan reads the same.
#[test]
fn a_broken_effect_is_the_grandfather_paradox_of_its_author_whoever_looks() {
    let mut b = ev("b", 10, &["a"]);
    b.author = Some("ada".parse().unwrap());
    let mut fx = Fixture::new(vec![ev("a", 20, &[]), b]);
    let tl = timeline(Window::Unbounded);
    let as_ada = run(&fx, &tl, at(5), None, &[]);
    fx.traveller = "bob".parse().unwrap();
    let as_bob = run(&fx, &tl, at(5), None, &[]);
    assert_eq!(as_ada, as_bob);
    assert_eq!(
        kinds(&as_bob),
        [AnomalyKind::Paradox(ParadoxKind::Grandfather)]
    );
    assert!(as_bob[0].description.contains("ada's own doing"));
}
