//! The checker's behaviour per paradox kind, and the property that the incremental check
//! always answers what a full rescan answers.

use std::sync::Arc;

use chrono::Duration;
use proptest::prelude::*;

use super::*;
use crate::model::{Whereabouts, parse_instant};

pub(crate) fn base() -> Instant {
    parse_instant("t", "2025-01-01T00:00:00Z").unwrap()
}

/// `base()` plus `m` minutes.
pub(crate) fn at(m: i64) -> Instant {
    base() + Duration::minutes(m)
}

pub(crate) fn id(s: &str) -> EventId {
    s.parse().unwrap()
}

pub(crate) fn ev(name: &str, minute: i64, causes: &[&str]) -> Event {
    Event {
        id: id(name),
        description: format!("the {name} event"),
        time: at(minute),
        location: "Geneva".into(),
        causes: causes.iter().map(|c| id(c)).collect(),
        fixed_point: false,
        status: EventStatus::OnSchedule,
        supersedes: None,
        superseded_by: None,
        lineage: id(name),
        author: None,
    }
}

/// Everything a [`Subject`] borrows.
pub(crate) struct Fixture {
    pub timeline: TimelineId,
    pub history: History,
    pub traveller: Traveller,
    pub position: Position,
    pub items: Vec<Item>,
}

impl Fixture {
    pub(crate) fn new(events: Vec<Event>) -> Self {
        let mut history = History::default();
        for e in events {
            history.insert(e);
        }
        Self {
            timeline: "tml_x".parse().unwrap(),
            history,
            traveller: "ada".parse().unwrap(),
            position: Position {
                timeline: TimelineId::primary(),
                arrival_time: at(0),
                arrived_at: at(0),
                paused: false,
                location: None,
            },
            items: Vec::new(),
        }
    }

    pub(crate) fn subject(&self) -> Subject<'_> {
        Subject {
            timeline: &self.timeline,
            history: &self.history,
            traveller: &self.traveller,
            position: &self.position,
            position_time: self.position.arrival_time,
            items: &self.items,
            isolated: None,
        }
    }

    /// Runs both checkers, insists they agree, and returns the answer.
    fn both(&self, changes: &[Change]) -> Vec<Paradox> {
        let incremental = check(&self.subject(), changes);
        let full = full_check(&self.subject(), changes);
        assert_eq!(incremental, full, "check and full_check disagree");
        incremental
    }

    fn item(&mut self, name: &str, origin: &str, origin_min: i64) -> ItemId {
        let item_id: ItemId = format!("itm_{name}").parse().unwrap();
        self.items.push(Item {
            id: item_id.clone(),
            description: name.into(),
            owner: self.traveller.clone(),
            origin_timeline: origin.parse().unwrap(),
            origin_time: at(origin_min),
            taken_at: None,
            whereabouts: Whereabouts::Carried,
            registered_at: at(0),
            location: None,
        });
        item_id
    }
}

fn kinds(found: &[Paradox]) -> Vec<ParadoxKind> {
    found.iter().map(|p| p.kind).collect()
}

fn mv(name: &str, minute: i64) -> Change {
    Change::Move {
        event: id(name),
        time: at(minute),
    }
}

fn chain() -> Fixture {
    Fixture::new(vec![
        ev("a", 0, &[]),
        ev("b", 10, &["a"]),
        ev("c", 20, &["b"]),
    ])
}

#[test]
fn moving_an_event_before_its_cause_breaks_causal_order() {
    let fx = chain();
    let found = fx.both(&[mv("b", -5)]);
    assert_eq!(kinds(&found), [ParadoxKind::CausalOrder]);
    assert_eq!(found[0].events, [id("b"), id("a")]);
    assert!(found[0].description.contains("'the b event' (b)"));
    assert!(found[0].description.contains("2024-12-31T23:55:00Z"));
    // Moving a cause after its effect breaks the same rule from the other side.
    assert_eq!(kinds(&fx.both(&[mv("b", 25)])), [ParadoxKind::CausalOrder]);
    assert_eq!(fx.both(&[mv("b", 25)])[0].events, [id("c"), id("b")]);
}

#[test]
fn an_effect_at_the_same_time_as_its_cause_is_in_order() {
    let fx = chain();
    assert!(fx.both(&[mv("b", 0)]).is_empty());
    assert!(fx.both(&[mv("b", 20)]).is_empty());
    assert!(fx.both(&[mv("b", 15)]).is_empty());
    assert!(fx.both(&[]).is_empty());
}

#[test]
fn breaking_the_cause_of_ones_own_act_is_a_grandfather_paradox() {
    let mut events = chain_events();
    events[1].author = Some("ada".parse().unwrap());
    let mut fx = Fixture::new(events);
    let found = fx.both(&[mv("a", 15)]);
    assert_eq!(kinds(&found), [ParadoxKind::Grandfather]);
    assert!(found[0].description.contains("ada's own doing"));
    // Someone else checking sees a plain causal-order paradox for the same edge.
    fx.traveller = "bob".parse().unwrap();
    assert_eq!(kinds(&fx.both(&[mv("a", 15)])), [ParadoxKind::CausalOrder]);
}

fn chain_events() -> Vec<Event> {
    vec![ev("a", 0, &[]), ev("b", 10, &["a"]), ev("c", 20, &["b"])]
}

#[test]
fn causes_that_form_a_cycle_are_one_loop() {
    // Seeded data may name causes forward: a <- c <- b <- a.
    let fx = Fixture::new(vec![
        ev("a", 0, &["c"]),
        ev("b", 10, &["a"]),
        ev("c", 20, &["b"]),
        ev("d", 30, &["c"]),
    ]);
    let found = fx.both(&[]);
    let loops: Vec<&Paradox> = found
        .iter()
        .filter(|p| p.kind == ParadoxKind::CausalLoop)
        .collect();
    assert_eq!(loops.len(), 1);
    assert_eq!(loops[0].events, [id("a"), id("b"), id("c")]);
    // The loop's backward edge is also out of order: a happens before its cause c.
    assert!(found.iter().any(|p| p.kind == ParadoxKind::CausalOrder));
    // A chain without a cycle is no loop.
    assert!(!kinds(&chain().both(&[])).contains(&ParadoxKind::CausalLoop));
}

#[test]
fn a_loop_follows_its_events_through_manipulation_and_revert() {
    let mut fx = Fixture::new(vec![
        ev("a", 0, &["c"]),
        ev("b", 10, &["a"]),
        ev("c", 20, &["b"]),
    ]);
    let mut new = ev("b2", 12, &["a"]);
    new.description = "b, changed".into();
    fx.history.supersede(&id("b"), new);
    let found = fx.both(&[]);
    let lp = found
        .iter()
        .find(|p| p.kind == ParadoxKind::CausalLoop)
        .unwrap();
    assert_eq!(lp.events, [id("a"), id("b2"), id("c")]);
    fx.history.revert(&id("b2"));
    let found = fx.both(&[]);
    let lp = found
        .iter()
        .find(|p| p.kind == ParadoxKind::CausalLoop)
        .unwrap();
    assert_eq!(lp.events, [id("a"), id("b"), id("c")]);
}

#[test]
fn touching_a_fixed_point_is_a_paradox_whatever_the_time() {
    let mut events = chain_events();
    events[1].fixed_point = true;
    let fx = Fixture::new(events);
    let found = fx.both(&[mv("b", 10)]);
    assert_eq!(kinds(&found), [ParadoxKind::FixedPoint]);
    assert!(found[0].description.contains("fixed point"));
    assert!(fx.both(&[mv("c", 30)]).is_empty());
}

#[test]
fn an_added_event_is_uncaused_and_present() {
    // b names a cause the timeline does not have yet; adding it makes the edge real.
    let fx = Fixture::new(vec![ev("b", 10, &["ghost"])]);
    let add = |m| Change::Add {
        event: id("ghost"),
        description: "the ghost arrives".into(),
        time: at(m),
    };
    assert!(fx.both(&[add(5)]).is_empty());
    let found = fx.both(&[add(15)]);
    assert_eq!(kinds(&found), [ParadoxKind::CausalOrder]);
    assert!(found[0].description.contains("the ghost arrives"));
    let fresh = Change::Add {
        event: id("evt_new"),
        description: "a new event".into(),
        time: at(-100),
    };
    assert!(fx.both(&[fresh]).is_empty());
}

#[test]
fn the_worked_mission_is_stable() {
    // A traveller arrives in a new timeline at 1889-03-10T23:50:00Z and registers the
    // blueprint there: origin = that timeline and time, carried, never taken away.
    let mut fx = Fixture::new(Vec::new());
    let arrival = parse_instant("t", "1889-03-10T23:50:00Z").unwrap();
    fx.position = Position {
        timeline: fx.timeline.clone(),
        arrival_time: arrival,
        arrived_at: at(0),
        paused: false,
        location: None,
    };
    fx.item("blueprint", "tml_x", 0);
    fx.items[0].origin_time = arrival;
    let changes = [
        Change::Add {
            event: id("evt_01jretrieve"),
            description: "Retrieve the blueprint".into(),
            time: arrival,
        },
        Change::BringItem {
            item: fx.items[0].id.clone(),
            time: arrival,
        },
    ];
    assert!(fx.both(&changes).is_empty());
    // Left behind where it was found, it is still one presence.
    fx.items[0].whereabouts = Whereabouts::Left {
        timeline: fx.timeline.clone(),
        time: arrival + Duration::minutes(5),
    };
    assert!(fx.both(&[]).is_empty());
}

#[test]
fn bringing_an_item_back_while_it_is_still_there_duplicates_it() {
    let mut fx = chain();
    // Found in tml_x at minute 0, taken away at minute 30, now carried in primary.
    let item = fx.item("watch", "tml_x", 0);
    fx.items[0].taken_at = Some(at(30));
    let bring = |m| Change::BringItem {
        item: item.clone(),
        time: at(m),
    };
    let found = fx.both(&[bring(10)]);
    assert_eq!(kinds(&found), [ParadoxKind::DuplicateItem]);
    assert_eq!(found[0].items, std::slice::from_ref(&item));
    assert!(found[0].description.contains("twice"));
    // After it left, bringing it back is fine.
    assert!(fx.both(&[bring(30)]).is_empty());
    assert!(fx.both(&[bring(45)]).is_empty());
    // Into another timeline it has never been in: fine.
    fx.timeline = "tml_y".parse().unwrap();
    assert!(fx.both(&[bring(10)]).is_empty());
}

#[test]
fn an_item_already_overlapping_itself_is_a_standing_duplicate() {
    let mut fx = chain();
    fx.item("watch", "tml_x", 0);
    fx.items[0].taken_at = Some(at(30));
    fx.items[0].whereabouts = Whereabouts::Left {
        timeline: fx.timeline.clone(),
        time: at(20),
    };
    assert_eq!(kinds(&fx.both(&[])), [ParadoxKind::DuplicateItem]);
    fx.items[0].whereabouts = Whereabouts::Left {
        timeline: fx.timeline.clone(),
        time: at(40),
    };
    assert!(fx.both(&[]).is_empty());
}

#[test]
fn leaving_an_item_before_its_origin_is_a_bootstrap_loop() {
    let mut fx = chain();
    let item = fx.item("blueprint", "tml_x", 10);
    fx.items[0].taken_at = Some(at(30));
    let found = fx.both(&[Change::BringItem {
        item: item.clone(),
        time: at(5),
    }]);
    // Reported as the bootstrap loop rather than a duplicate.
    assert_eq!(kinds(&found), [ParadoxKind::ItemWithoutOrigin]);
    assert!(found[0].description.contains("bootstrap loop"));
    // The same time in another timeline is no loop.
    fx.timeline = "tml_y".parse().unwrap();
    assert!(
        fx.both(&[Change::BringItem { item, time: at(5) }])
            .is_empty()
    );
}

#[test]
fn the_answer_is_sorted_and_without_duplicates() {
    let mut events = chain_events();
    events[0].fixed_point = true;
    let fx = Fixture::new(events);
    let found = fx.both(&[mv("a", 30), mv("a", 30), mv("c", 5)]);
    assert_eq!(
        kinds(&found),
        [
            ParadoxKind::CausalOrder,
            ParadoxKind::CausalOrder,
            ParadoxKind::FixedPoint
        ]
    );
}

// ----- properties -----

/// One manipulation or revert applied before checking.
#[derive(Clone, Debug)]
enum HistoryOp {
    Manipulate {
        event: usize,
        minute: i64,
    },
    /// A manipulation that also changes the causes (the engine keeps them; History allows it).
    Recause {
        event: usize,
        minute: i64,
        picks: Vec<u16>,
    },
    /// The same event recorded again with other causes.
    Reinsert {
        event: usize,
        picks: Vec<u16>,
    },
    Revert {
        event: usize,
    },
}

#[derive(Clone, Debug)]
enum ChangeSpec {
    Move { event: usize, minute: i64 },
    AddFresh { minute: i64 },
    AddGhost { ghost: usize, minute: i64 },
    Bring { item: usize, minute: i64 },
}

#[derive(Clone, Debug)]
struct ItemSpec {
    origin_here: bool,
    origin: i64,
    taken: Option<i64>,
    left: Option<(bool, i64)>,
}

#[derive(Clone, Debug)]
struct World {
    /// (minute, raw cause picks, fixed point, author)
    events: Vec<(i64, Vec<u16>, bool, u8)>,
    ops: Vec<HistoryOp>,
    changes: Vec<ChangeSpec>,
    items: Vec<ItemSpec>,
    here: bool,
    arrival: i64,
}

const GHOSTS: usize = 3;

/// Mostly earlier events, sometimes any event (a forward reference, which can close a
/// loop), sometimes an id the timeline never has (an orphan).
fn cause_of(i: usize, n: usize, raw: u16) -> Option<String> {
    let pick = usize::from(raw / 10);
    let name = match raw % 10 {
        0..=7 if i > 0 => format!("e{}", pick % i),
        0..=7 => return None,
        8 => format!("e{}", pick % n),
        _ => format!("ghost{}", pick % GHOSTS),
    };
    (name != format!("e{i}")).then_some(name)
}

fn world() -> impl Strategy<Value = World> {
    let event = (
        0i64..40,
        prop::collection::vec(any::<u16>(), 0..3),
        prop::bool::weighted(0.1),
        0u8..3,
    );
    let op = prop_oneof![
        (0usize..64, 0i64..40).prop_map(|(event, minute)| HistoryOp::Manipulate { event, minute }),
        (
            0usize..64,
            0i64..40,
            prop::collection::vec(any::<u16>(), 0..3)
        )
            .prop_map(|(event, minute, picks)| HistoryOp::Recause {
                event,
                minute,
                picks
            }),
        (0usize..64, prop::collection::vec(any::<u16>(), 0..3))
            .prop_map(|(event, picks)| HistoryOp::Reinsert { event, picks }),
        (0usize..64).prop_map(|event| HistoryOp::Revert { event }),
    ];
    let change = prop_oneof![
        4 => (0usize..64, -5i64..45).prop_map(|(event, minute)| ChangeSpec::Move { event, minute }),
        1 => (-5i64..45).prop_map(|minute| ChangeSpec::AddFresh { minute }),
        1 => (0usize..GHOSTS, -5i64..45).prop_map(|(ghost, minute)| ChangeSpec::AddGhost { ghost, minute }),
        2 => (0usize..3, -5i64..45).prop_map(|(item, minute)| ChangeSpec::Bring { item, minute }),
    ];
    let item = (
        any::<bool>(),
        0i64..40,
        prop::option::of(0i64..40),
        prop::option::of((any::<bool>(), 0i64..40)),
    )
        .prop_map(|(origin_here, origin, taken, left)| ItemSpec {
            origin_here,
            origin,
            taken,
            left,
        });
    (
        prop::collection::vec(event, 1..24),
        prop::collection::vec(op, 0..8),
        prop::collection::vec(change, 0..10),
        prop::collection::vec(item, 0..3),
        any::<bool>(),
        0i64..40,
    )
        .prop_map(|(events, ops, changes, items, here, arrival)| World {
            events,
            ops,
            changes,
            items,
            here,
            arrival,
        })
}

fn author(a: u8) -> Option<Traveller> {
    match a {
        1 => Some("ada".parse().unwrap()),
        2 => Some("bob".parse().unwrap()),
        _ => None,
    }
}

/// The seeded timeline, before manipulations.
fn seeded(w: &World) -> Fixture {
    let n = w.events.len();
    let events = w
        .events
        .iter()
        .enumerate()
        .map(|(i, (minute, picks, fixed, who))| {
            let mut causes: Vec<String> = picks.iter().filter_map(|&r| cause_of(i, n, r)).collect();
            causes.dedup();
            let names: Vec<&str> = causes.iter().map(String::as_str).collect();
            let mut e = ev(&format!("e{i}"), *minute, &names);
            e.fixed_point = *fixed;
            e.author = author(*who);
            e
        })
        .collect();
    let mut fx = Fixture::new(events);
    let here = fx.timeline.clone();
    let elsewhere = TimelineId::primary();
    fx.position.timeline = if w.here {
        here.clone()
    } else {
        elsewhere.clone()
    };
    fx.position.arrival_time = at(w.arrival);
    for (k, spec) in w.items.iter().enumerate() {
        let origin = if spec.origin_here { "tml_x" } else { "primary" };
        fx.item(&format!("item{k}"), origin, spec.origin);
        let item = &mut fx.items[k];
        item.taken_at = spec.taken.map(at);
        if let Some((left_here, minute)) = spec.left {
            item.whereabouts = Whereabouts::Left {
                timeline: if left_here {
                    here.clone()
                } else {
                    elsewhere.clone()
                },
                time: at(minute),
            };
        }
    }
    fx
}

/// The lineage head of seeded event `i`, if it stands.
fn head(fx: &Fixture, i: usize) -> Option<Arc<Event>> {
    fx.history
        .head_of(&id(&format!("e{i}")))
        .filter(|e| e.status.is_current())
        .cloned()
}

/// Causes from raw picks, naming the heads of the picked lineages when they stand.
fn causes_from(i: usize, n: usize, picks: &[u16]) -> Vec<EventId> {
    picks
        .iter()
        .filter_map(|&r| cause_of(i, n, r))
        .map(|c| id(&c))
        .collect()
}

fn apply_ops(fx: &mut Fixture, w: &World) {
    let n = w.events.len();
    for (k, op) in w.ops.iter().enumerate() {
        match op {
            HistoryOp::Manipulate { event, minute } => {
                let Some(old) = head(fx, event % n) else {
                    continue;
                };
                // As the engine does: the new head keeps the causes, the traveller's act.
                let mut new = (*old).clone();
                new.id = id(&format!("m{k}"));
                new.time = at(*minute);
                new.fixed_point = false;
                new.author = author((k % 3) as u8);
                fx.history.supersede(&old.id, new);
            }
            HistoryOp::Recause {
                event,
                minute,
                picks,
            } => {
                let Some(old) = head(fx, event % n) else {
                    continue;
                };
                let mut new = (*old).clone();
                new.id = id(&format!("m{k}"));
                new.time = at(*minute);
                new.causes = causes_from(event % n, n, picks);
                fx.history.supersede(&old.id, new);
            }
            HistoryOp::Reinsert { event, picks } => {
                let Some(old) = head(fx, event % n) else {
                    continue;
                };
                let mut again = (*old).clone();
                again.causes = causes_from(event % n, n, picks);
                fx.history.insert(again);
            }
            HistoryOp::Revert { event } => {
                if let Some(h) = head(fx, event % n)
                    && h.supersedes.is_some()
                {
                    fx.history.revert(&h.id);
                }
            }
        }
    }
}

fn changes(fx: &Fixture, w: &World) -> Vec<Change> {
    let n = w.events.len();
    w.changes
        .iter()
        .enumerate()
        .filter_map(|(k, c)| match c {
            ChangeSpec::Move { event, minute } => head(fx, event % n).map(|e| Change::Move {
                event: e.id.clone(),
                time: at(*minute),
            }),
            ChangeSpec::AddFresh { minute } => Some(Change::Add {
                event: id(&format!("evt_new{k}")),
                description: format!("new event {k}"),
                time: at(*minute),
            }),
            ChangeSpec::AddGhost { ghost, minute } => Some(Change::Add {
                event: id(&format!("ghost{ghost}")),
                description: format!("ghost {ghost} appears"),
                time: at(*minute),
            }),
            ChangeSpec::Bring { item, minute } => fx.items.get(*item).map(|i| Change::BringItem {
                item: i.id.clone(),
                time: at(*minute),
            }),
        })
        .collect()
}

/// What a reader of the timeline sees: its current events and each one's effects.
fn observable(h: &History) -> Vec<(Event, Vec<EventId>)> {
    h.iter()
        .map(|e| {
            let mut effects: Vec<EventId> = h.effects_of(&e.id).cloned().collect();
            effects.sort();
            ((**e).clone(), effects)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn incremental_check_equals_full_rescan(w in world()) {
        let mut fx = seeded(&w);
        prop_assert_eq!(check(&fx.subject(), &[]), full_check(&fx.subject(), &[]));
        apply_ops(&mut fx, &w);
        let proposed = changes(&fx, &w);
        prop_assert_eq!(check(&fx.subject(), &proposed), full_check(&fx.subject(), &proposed));
        prop_assert_eq!(check(&fx.subject(), &[]), full_check(&fx.subject(), &[]));
    }

    #[test]
    fn supersede_then_revert_restores_the_history(w in world(), pick in 0usize..64, minute in 0i64..40) {
        let mut fx = seeded(&w);
        apply_ops(&mut fx, &w);
        let before = fx.history.clone();
        let Some(old) = head(&fx, pick % w.events.len()) else {
            return Ok(());
        };
        let mut new = (*old).clone();
        new.id = id("evt_manipulated");
        new.time = at(minute);
        fx.history.supersede(&old.id, new);
        prop_assert_eq!(fx.history.len(), before.len());
        prop_assert_eq!(fx.history.revert(&id("evt_manipulated")), Some(old.id.clone()));
        prop_assert_eq!(observable(&fx.history), observable(&before));
        let after = check(&fx.subject(), &[]);
        fx.history = before;
        prop_assert_eq!(after, check(&fx.subject(), &[]));
    }
}
