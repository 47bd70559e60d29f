//! Property: a branch never changes its base, and the base's later changes never reach the
//! branch — on random histories with random additions, manipulations and reverts on both sides.

mod support;

use chronoscope::engine::{Op, World};
use chronoscope::model::{Event, EventId, EventStatus, Timeline, TimelineId, parse_instant};
use proptest::prelude::*;

fn timeline(id: &str, parent: Option<&str>) -> Timeline {
    support::timeline_record(
        id.parse().unwrap(),
        parent.map(|p| p.parse().unwrap()),
        parse_instant("t", "2026-01-01T00:00:00Z").unwrap(),
    )
}

fn event(id: String, minutes: i64, causes: Vec<EventId>) -> Event {
    support::event_record(
        id.parse().unwrap(),
        parse_instant("t", "2000-01-01T00:00:00Z").unwrap() + chrono::Duration::minutes(minutes),
        format!("event at +{minutes}m"),
        format!("place {}", minutes % 7),
        causes,
    )
}

/// One change to a timeline, resolved against its current events when applied.
#[derive(Clone, Debug)]
enum Change {
    Add { minutes: i64, cause: Option<usize> },
    Manipulate { pick: usize, minutes: i64 },
    Revert { pick: usize },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0i64..10_000, proptest::option::of(any::<usize>()))
            .prop_map(|(minutes, cause)| Change::Add { minutes, cause }),
        (any::<usize>(), 0i64..10_000)
            .prop_map(|(pick, minutes)| Change::Manipulate { pick, minutes }),
        any::<usize>().prop_map(|pick| Change::Revert { pick }),
    ]
}

/// Turns `change` into an op valid for `timeline` in `world`, if there is one.
fn op_for(world: &World, timeline: &TimelineId, change: &Change, fresh: &mut u32) -> Option<Op> {
    let history = &world.timelines.get(timeline)?.history;
    let current: Vec<&Event> = history.iter().map(|e| &**e).collect();
    *fresh += 1;
    let new_id = format!("{timeline}-e{fresh}");
    match change {
        Change::Add { minutes, cause } => {
            let causes = cause
                .filter(|_| !current.is_empty())
                .map(|c| vec![current[c % current.len()].id.clone()])
                .unwrap_or_default();
            Some(Op::AddEvents {
                timeline: timeline.clone(),
                events: vec![event(new_id, *minutes, causes)],
                at: None,
            })
        }
        Change::Manipulate { pick, minutes } => {
            let old = current.get(pick % current.len().max(1))?;
            let mut new = event(new_id, *minutes, old.causes.clone());
            new.status = EventStatus::Manipulated;
            Some(Op::Manipulate {
                timeline: timeline.clone(),
                old: old.id.clone(),
                new,
                at: None,
            })
        }
        Change::Revert { pick } => {
            let heads: Vec<&&Event> = current.iter().filter(|e| e.supersedes.is_some()).collect();
            let head = heads.get(pick % heads.len().max(1))?;
            Some(Op::Revert {
                timeline: timeline.clone(),
                head: head.id.clone(),
                at: None,
            })
        }
    }
}

fn apply_all(world: &mut World, timeline: &TimelineId, changes: &[Change], fresh: &mut u32) {
    for change in changes {
        if let Some(op) = op_for(world, timeline, change, fresh) {
            let seq = world.seq + 1;
            world.apply(seq, op).expect("a valid op applies");
        }
    }
}

/// Everything a timeline holds, current and history, in a comparable form.
fn contents(world: &World, timeline: &TimelineId) -> Vec<Event> {
    let mut all: Vec<Event> = world.timelines[timeline]
        .history
        .iter_all()
        .map(|e| (**e).clone())
        .collect();
    all.sort_by(|a, b| a.id.cmp(&b.id));
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_branch_never_changes_its_base_nor_the_base_its_branch(
        before in proptest::collection::vec(change(), 0..40),
        on_branch in proptest::collection::vec(change(), 0..40),
        on_base in proptest::collection::vec(change(), 0..40),
    ) {
        let primary = TimelineId::primary();
        let branch: TimelineId = "tml_branch".parse().unwrap();
        let mut world = World::default();
        let mut fresh = 0;
        world.apply(1, Op::CreateTimeline { timeline: timeline("primary", None) }).unwrap();
        apply_all(&mut world, &primary, &before, &mut fresh);
        let base_at_branch = contents(&world, &primary);

        let seq = world.seq + 1;
        world.apply(seq, Op::CreateTimeline { timeline: timeline("tml_branch", Some("primary")) }).unwrap();
        prop_assert_eq!(contents(&world, &branch), base_at_branch.clone());

        apply_all(&mut world, &branch, &on_branch, &mut fresh);
        prop_assert_eq!(contents(&world, &primary), base_at_branch.clone());

        let branch_now = contents(&world, &branch);
        apply_all(&mut world, &primary, &on_base, &mut fresh);
        prop_assert_eq!(contents(&world, &branch), branch_now);
    }
}
