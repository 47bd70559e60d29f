//! The paradox checker: pure, no I/O, no clock.
//!
//! A timeline is stable when, after applying the proposed changes, none of the six kinds of
//! [`ParadoxKind`] holds (DESIGN §3). [`check`] is incremental: it looks only at the
//! neighbourhoods of the changed events (plus the standing violations the [`History`] keeps),
//! never rescanning the timeline. [`full_check`] rescans everything and is the reference the
//! property tests compare [`check`] against; the monitor uses it too.

mod items;
mod scan;
#[cfg(test)]
pub(crate) mod tests;

use std::collections::{BTreeSet, HashMap as StdHashMap};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::model::{
    Event, EventId, EventStatus, History, Instant, Item, ItemId, Position, TimelineId, Traveller,
    format_instant,
};

pub(crate) use scan::Found;
use scan::rescan;

/// The six ways a timeline can become unstable.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ParadoxKind {
    /// An event happens before one of its causes.
    CausalOrder,
    /// Causes form a cycle.
    CausalLoop,
    /// A change touches a fixed point.
    FixedPoint,
    /// An item is present twice in one timeline at overlapping times.
    DuplicateItem,
    /// An item is brought into its own origin timeline before its origin time and left there.
    ItemWithoutOrigin,
    /// A causal-order violation whose broken effect is someone's own doing: in a check, the
    /// checking traveller's (DESIGN §3 rule 6); in the monitor, its author's, whoever looks.
    Grandfather,
}

impl ParadoxKind {
    /// The word used in responses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CausalOrder => "causal_order",
            Self::CausalLoop => "causal_loop",
            Self::FixedPoint => "fixed_point",
            Self::DuplicateItem => "duplicate_item",
            Self::ItemWithoutOrigin => "item_without_origin",
            Self::Grandfather => "grandfather",
        }
    }
}

/// One finding of the checker.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
pub struct Paradox {
    /// Which kind.
    pub kind: ParadoxKind,
    /// A sentence a person understands, naming the events or items.
    pub description: String,
    /// Events involved.
    #[serde(default)]
    pub events: Vec<EventId>,
    /// Items involved.
    #[serde(default)]
    pub items: Vec<ItemId>,
}

/// A proposed change, already resolved against the timeline by the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Move an existing, current event to a new time.
    Move {
        /// The event.
        event: EventId,
        /// Its new time.
        time: Instant,
    },
    /// Add a new event without causes.
    Add {
        /// The id it would get (the engine mints a provisional one).
        event: EventId,
        /// What it is.
        description: String,
        /// When.
        time: Instant,
    },
    /// Bring a registered item into the timeline at a time.
    BringItem {
        /// The item.
        item: ItemId,
        /// When it would arrive.
        time: Instant,
    },
}

/// Everything the checker reads. The engine assembles it from its state.
#[derive(Clone, Copy, Debug)]
pub struct Subject<'a> {
    /// The timeline checked.
    pub timeline: &'a TimelineId,
    /// Its events.
    pub history: &'a History,
    /// The checking traveller (grandfather paradoxes are about their own acts).
    pub traveller: &'a Traveller,
    /// Where that traveller is now.
    pub position: &'a Position,
    /// The traveller's time in their timeline now.
    pub position_time: Instant,
    /// The traveller's items (other travellers' items are never visible).
    pub items: &'a [Item],
    /// The timeline's isolations, lineage by lineage (guide §4), if any.
    pub isolated: Option<&'a Isolated>,
}

/// The isolated lineages of a timeline, each with its isolation: causal edges between a
/// member and a non-member are severed, loops within one isolation are contained.
pub type Isolated = imbl::OrdMap<EventId, crate::model::IsolationId>;

/// `found` without what `isolated` stops reporting: causal-order and grandfather paradoxes
/// across an isolation's edge (severed), and loops whose events all belong to one isolation
/// (contained). Everything else stands: order among members, fixed points, items, and loops
/// only partly isolated. Costs O(paradoxes reported).
pub fn without_isolated(
    h: &History,
    isolated: Option<&Isolated>,
    found: Vec<Paradox>,
) -> Vec<Paradox> {
    let Some(isolated) = isolated.filter(|i| !i.is_empty()) else {
        return found;
    };
    let group = |id: &EventId| h.get(id).map(|e| &e.lineage).and_then(|l| isolated.get(l));
    found
        .into_iter()
        .filter(|p| match p.kind {
            ParadoxKind::CausalOrder | ParadoxKind::Grandfather => match p.events.as_slice() {
                [effect, cause] => group(effect) == group(cause),
                _ => true,
            },
            ParadoxKind::CausalLoop => {
                let first = p.events.first().and_then(group);
                !(first.is_some() && p.events.iter().all(|e| group(e) == first))
            }
            _ => true,
        })
        .collect()
}

/// Checks `changes` incrementally: the verdict equals [`full_check`] on the same input.
///
/// Reads the standing violations the [`History`] keeps and, for each moved or added event,
/// only its causes and effects: the cost does not grow with the timeline.
pub fn check(subject: &Subject<'_>, changes: &[Change]) -> Vec<Paradox> {
    let h = subject.history;
    let plan = Plan::new(subject, changes);
    let mut edges: BTreeSet<(u32, u32)> = h
        .standing_violations()
        .filter(|(e, c)| !plan.touches(*e) && !plan.touches(*c))
        .collect();
    for m in plan.moved.keys().chain(plan.added.keys()).copied() {
        let view = h.view(m);
        let at = plan.time(h, m);
        for &c in view.causes {
            if c != m && plan.is_current(h, c) && at < plan.time(h, c) {
                edges.insert((m, c));
            }
        }
        for &f in view.effects.iter() {
            if f != m && plan.time(h, f) < at {
                edges.insert((f, m));
            }
        }
    }
    let mut out = plan.fixed.clone();
    for (effect, cause) in edges {
        out.push(order_paradox(
            Whose::Checker(subject.traveller),
            &plan.info(subject, h, effect),
            &plan.info(subject, h, cause),
        ));
    }
    // Moves and additions of uncaused events never change the causal graph's edges.
    for members in h.standing_loops() {
        let infos: Vec<Info<'_>> = members.iter().map(|&s| plan.info(subject, h, s)).collect();
        out.push(loop_paradox(infos));
    }
    out.extend(items::item_paradoxes(subject, changes));
    finish(without_isolated(h, subject.isolated, out))
}

/// Applies `changes` to a copy of the timeline and rescans all of it.
pub fn full_check(subject: &Subject<'_>, changes: &[Change]) -> Vec<Paradox> {
    let original = subject.history;
    let mut h = original.clone();
    let mut fixed = Vec::new();
    for change in changes {
        match change {
            Change::Move { event, time } => {
                if let Some(e) = original.current(event) {
                    if e.fixed_point {
                        fixed.push(fixed_point_paradox(e, *time));
                    }
                    let mut moved = (**e).clone();
                    moved.time = *time;
                    h.insert(moved);
                }
            }
            Change::Add {
                event,
                description,
                time,
            } => {
                if original.get(event).is_none() && h.get(event).is_none() {
                    h.insert(added_event(subject, event, description, *time));
                }
            }
            Change::BringItem { .. } => {}
        }
    }
    let found = rescan(&h);
    let mut out = fixed;
    out.extend(graph_paradoxes(
        Whose::Checker(subject.traveller),
        &h,
        &found,
    ));
    out.extend(items::item_paradoxes(subject, changes));
    finish(without_isolated(&h, subject.isolated, out))
}

/// Whose doing makes a causal-order violation a grandfather paradox.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Whose<'a> {
    /// The checking traveller's own (a paradox check: DESIGN §3 rule 6).
    Checker(&'a Traveller),
    /// Whoever authored the broken effect (the monitor: the same for every viewer).
    Author,
}

/// The causal-order, grandfather and loop paradoxes of a rescan of `h`, unsorted.
pub(crate) fn graph_paradoxes(whose: Whose<'_>, h: &History, found: &Found) -> Vec<Paradox> {
    let mut out = Vec::with_capacity(found.violations.len() + found.loops.len());
    for &(effect, cause) in &found.violations {
        out.push(order_paradox(
            whose,
            &Info::of(h, effect),
            &Info::of(h, cause),
        ));
    }
    for members in &found.loops {
        out.push(loop_paradox(
            members.iter().map(|&s| Info::of(h, s)).collect(),
        ));
    }
    out
}

/// The graph paradoxes of the timeline as it stands, by a full rescan, with what the rescan
/// found (the monitor also reports its orphaned causes). Whoever looks gets the same: a broken
/// effect some traveller authored is a grandfather paradox of theirs.
pub(crate) fn standing(h: &History) -> (Vec<Paradox>, Found) {
    let found = rescan(h);
    let out = graph_paradoxes(Whose::Author, h, &found);
    (finish(out), found)
}

/// The item paradoxes of `subject`'s traveller's items in its timeline as they stand.
pub(crate) fn standing_items(subject: &Subject<'_>) -> Vec<Paradox> {
    finish(items::item_paradoxes(subject, &[]))
}

/// The event a [`Change::Add`] would put in the timeline.
fn added_event(subject: &Subject<'_>, id: &EventId, description: &str, time: Instant) -> Event {
    Event {
        id: id.clone(),
        description: description.to_owned(),
        time,
        location: String::new(),
        causes: Vec::new(),
        fixed_point: false,
        status: EventStatus::OnSchedule,
        supersedes: None,
        superseded_by: None,
        lineage: id.clone(),
        author: Some(subject.traveller.clone()),
    }
}

/// The changes, resolved against the timeline as it stands.
struct Plan<'c> {
    /// Slot -> its time after the moves (the last move of an event wins).
    moved: StdHashMap<u32, Instant>,
    /// Slots of ids that are named as causes but not recorded, which an addition creates.
    added: StdHashMap<u32, (&'c EventId, &'c str, Instant)>,
    fixed: Vec<Paradox>,
}

impl<'c> Plan<'c> {
    fn new(subject: &Subject<'_>, changes: &'c [Change]) -> Self {
        let h = subject.history;
        let mut plan = Plan {
            moved: StdHashMap::new(),
            added: StdHashMap::new(),
            fixed: Vec::new(),
        };
        for change in changes {
            match change {
                Change::Move { event, time } => {
                    if let Some(slot) = h.slot(event)
                        && let Some(e) = h.current(event)
                    {
                        if e.fixed_point {
                            plan.fixed.push(fixed_point_paradox(e, *time));
                        }
                        plan.moved.insert(slot, *time);
                    }
                }
                Change::Add {
                    event,
                    description,
                    time,
                } => {
                    // A brand-new id has no edges; one already named as a cause gains its
                    // effects. Recorded ids are never added again.
                    if h.get(event).is_none()
                        && let Some(slot) = h.slot(event)
                    {
                        plan.added
                            .entry(slot)
                            .or_insert((event, description.as_str(), *time));
                    }
                }
                Change::BringItem { .. } => {}
            }
        }
        plan
    }

    fn touches(&self, slot: u32) -> bool {
        self.moved.contains_key(&slot) || self.added.contains_key(&slot)
    }

    fn time(&self, h: &History, slot: u32) -> Instant {
        if let Some(t) = self.moved.get(&slot) {
            return *t;
        }
        if let Some((_, _, t)) = self.added.get(&slot) {
            return *t;
        }
        h.view(slot).time
    }

    fn is_current(&self, h: &History, slot: u32) -> bool {
        h.view(slot).current || self.added.contains_key(&slot)
    }

    fn info<'a>(&'a self, subject: &'a Subject<'_>, h: &'a History, slot: u32) -> Info<'a> {
        if let Some((id, description, time)) = self.added.get(&slot) {
            return Info {
                id,
                description,
                time: *time,
                author: Some(subject.traveller),
            };
        }
        Info {
            time: self.time(h, slot),
            ..Info::of(h, slot)
        }
    }
}

/// What a description says about an event.
struct Info<'a> {
    id: &'a EventId,
    description: &'a str,
    time: Instant,
    author: Option<&'a Traveller>,
}

impl<'a> Info<'a> {
    fn of(h: &'a History, slot: u32) -> Self {
        let view = h.view(slot);
        Info {
            id: view.id,
            description: view.event.map_or("", |e| e.description.as_str()),
            time: view.time,
            author: view.event.and_then(|e| e.author.as_ref()),
        }
    }

    fn name(&self) -> String {
        format!("'{}' ({})", self.description, self.id)
    }
}

fn order_paradox(whose: Whose<'_>, effect: &Info<'_>, cause: &Info<'_>) -> Paradox {
    let broken = format!(
        "{} at {} happens before its cause {} at {}",
        effect.name(),
        format_instant(&effect.time),
        cause.name(),
        format_instant(&cause.time),
    );
    let own = match whose {
        Whose::Checker(traveller) => effect.author.filter(|a| *a == traveller),
        Whose::Author => effect.author,
    };
    let (kind, description) = match own {
        Some(traveller) => (
            ParadoxKind::Grandfather,
            format!(
                "{broken}; it is {traveller}'s own doing, so this would erase the cause of their own act."
            ),
        ),
        None => (ParadoxKind::CausalOrder, format!("{broken}.")),
    };
    Paradox {
        kind,
        description,
        events: vec![effect.id.clone(), cause.id.clone()],
        items: Vec::new(),
    }
}

/// How many events a loop's description names before summing up the rest.
const LOOP_NAMED: usize = 5;

fn loop_paradox(mut members: Vec<Info<'_>>) -> Paradox {
    members.sort_by(|a, b| a.id.cmp(b.id));
    let description = if members.len() == 1 {
        format!("{} is among its own causes.", members[0].name())
    } else {
        let mut names: Vec<String> = members.iter().take(LOOP_NAMED).map(Info::name).collect();
        if members.len() > LOOP_NAMED {
            names.push(format!("{} more events", members.len() - LOOP_NAMED));
        }
        let last = names.pop().unwrap_or_default();
        format!(
            "{} and {last} cause each other in a loop.",
            names.join(", ")
        )
    };
    Paradox {
        kind: ParadoxKind::CausalLoop,
        description,
        events: members.iter().map(|i| i.id.clone()).collect(),
        items: Vec::new(),
    }
}

fn fixed_point_paradox(event: &Event, to: Instant) -> Paradox {
    Paradox {
        kind: ParadoxKind::FixedPoint,
        description: format!(
            "'{}' ({}) is a fixed point: it cannot be moved from {} to {}.",
            event.description,
            event.id,
            format_instant(&event.time),
            format_instant(&to),
        ),
        events: vec![event.id.clone()],
        items: Vec::new(),
    }
}

/// Sorts by kind, events, items, then description, and drops duplicates, so both checkers
/// answer the same list in the same order.
fn finish(mut out: Vec<Paradox>) -> Vec<Paradox> {
    out.sort_by(|a, b| {
        (a.kind, &a.events, &a.items, &a.description).cmp(&(
            b.kind,
            &b.events,
            &b.items,
            &b.description,
        ))
    });
    out.dedup();
    out
}
