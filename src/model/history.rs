//! A timeline's events with the indexes every rule needs, in persistent (structurally shared)
//! maps: cloning a `History` is O(1), which is what makes branching copy-on-write.
//!
//! Every event id ever named here, as an event or as a cause, gets a dense slot. The causal
//! graph is kept over slots in a persistent vector, so a full rescan walks a vector instead of
//! hashing a million ids. Next to the graph, the standing violations (effects that happen
//! before a cause, causal loops) are kept up to date as
//! events are inserted, superseded and reverted, so the incremental paradox check never
//! rescans the timeline.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet as StdHashSet};
use std::ops::Bound;
use std::sync::Arc;

use imbl::{HashMap, OrdMap, OrdSet, Vector};

use super::{Event, EventId, EventStatus, Instant, TimeRange};

mod image;

pub(crate) use image::{HistoryImage, same_history};

/// Key of the time-ordered indexes as the interface sees it: an instant and an event id.
pub type TimeKey = (Instant, EventId);

/// Dense index of an event id within one history (and every clone of it).
pub(crate) type Slot = u32;

/// Internal key of the time-ordered indexes: events sort by time, then by the order in which
/// their ids were first named here (deterministic: it follows the op log).
type SlotKey = (Instant, Slot);

/// One id's place in the graph. Ids only named as causes have no event (a placeholder), so a
/// forward reference is wired up the moment the event it names arrives.
#[derive(Clone, Debug)]
struct Node {
    id: EventId,
    event: Option<Arc<Event>>,
    /// Copied from the event so scans stay in the vector.
    time: Instant,
    current: bool,
    /// Slots of the event's causes, each once.
    causes: Arc<[Slot]>,
    /// Current events that name this id among their causes.
    effects: OrdSet<Slot>,
}

impl Node {
    fn placeholder(id: EventId) -> Self {
        Self {
            id,
            event: None,
            time: Instant::MIN_UTC,
            current: false,
            causes: Arc::from([]),
            effects: OrdSet::new(),
        }
    }
}

/// A read-only view of one slot, for the paradox checker and the monitor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotView<'a> {
    /// The id this slot stands for.
    pub id: &'a EventId,
    /// The event, `None` when the id is only named as a cause.
    pub event: Option<&'a Arc<Event>>,
    /// The event's time (meaningless without an event).
    pub time: Instant,
    /// Whether the event is part of the timeline as it stands.
    pub current: bool,
    /// Slots of its causes.
    pub causes: &'a [Slot],
    /// Slots of the current events it causes.
    pub effects: &'a OrdSet<Slot>,
}

/// Which versions of the events a search reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versions {
    /// The events as the timeline now stands.
    Current,
    /// Those and every past version (superseded by a manipulation, or reverted).
    Every,
}

/// The events of one timeline: current ones indexed by time, location and effect,
/// superseded and reverted ones kept for lineage.
#[derive(Clone, Debug, Default)]
pub struct History {
    slots: HashMap<EventId, Slot>,
    nodes: Vector<Node>,
    by_time: OrdSet<SlotKey>,
    by_location: HashMap<String, OrdSet<SlotKey>>,
    /// Past versions (superseded and reverted events) by time, so a page of every version
    /// reads only what it returns and the current events' indexes.
    past: OrdSet<SlotKey>,
    /// (effect, cause) between current events where the effect happens before the cause.
    violations: OrdSet<(Slot, Slot)>,
    /// (effect, cause) between current events where the effect does not happen after the
    /// cause (violations, equal times, self-causes). Every causal loop contains one.
    back_edges: OrdSet<(Slot, Slot)>,
    /// Strongly connected groups of current events that cause each other, by smallest slot.
    loops: OrdMap<Slot, Arc<[Slot]>>,
    /// Member slot -> key of its loop in `loops`.
    loop_of: HashMap<Slot, Slot>,
}

fn location_key(location: &str) -> String {
    location.trim().to_lowercase()
}

fn dedup_slots(slots: impl Iterator<Item = Slot>) -> Vec<Slot> {
    let mut out: Vec<Slot> = Vec::new();
    for s in slots {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn same_set(a: &[EventId], b: &[EventId]) -> bool {
    let mut a: Vec<&EventId> = a.iter().collect();
    let mut b: Vec<&EventId> = b.iter().collect();
    a.sort();
    a.dedup();
    b.sort();
    b.dedup();
    a == b
}

impl History {
    /// Any event ever recorded here, current or not.
    pub fn get(&self, id: &EventId) -> Option<&Arc<Event>> {
        self.slot(id).and_then(|s| self.node(s).event.as_ref())
    }

    /// An event that is part of the timeline as it now stands.
    pub fn current(&self, id: &EventId) -> Option<&Arc<Event>> {
        self.slot(id)
            .map(|s| self.node(s))
            .filter(|n| n.current)
            .and_then(|n| n.event.as_ref())
    }

    /// How many events the timeline now has (history excluded).
    pub fn len(&self) -> usize {
        self.by_time.len()
    }

    /// Whether the timeline has no current event.
    pub fn is_empty(&self) -> bool {
        self.by_time.is_empty()
    }

    /// Current events in time order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Event>> + '_ {
        self.by_time
            .iter()
            .filter_map(|(_, s)| self.node(*s).event.as_ref())
    }

    /// Every event recorded here, current or not, in no particular order.
    pub fn iter_all(&self) -> impl Iterator<Item = &Arc<Event>> + '_ {
        self.nodes.iter().filter_map(|n| n.event.as_ref())
    }

    /// Current events that name `cause` among their causes.
    pub fn effects_of(&self, cause: &EventId) -> impl Iterator<Item = &EventId> + '_ {
        self.slot(cause)
            .into_iter()
            .flat_map(move |s| self.node(s).effects.iter().map(move |e| &self.node(*e).id))
    }

    /// Follows a lineage forward from any of its events to the event that now stands for it.
    /// Returns `None` when the lineage was never here.
    pub fn head_of(&self, id: &EventId) -> Option<&Arc<Event>> {
        let mut event = self.get(id)?;
        // A lineage is a chain; the bound only guards against a corrupted store.
        for _ in 0..=self.nodes.len() {
            match &event.superseded_by {
                Some(next) => event = self.get(next)?,
                None => return Some(event),
            }
        }
        None
    }

    /// Adds a new event (or replaces the record with the same id). Current events join the
    /// indexes.
    pub fn insert(&mut self, event: Event) {
        self.put(event, true);
    }

    /// Replaces `old` by `new` (a manipulation): `old` becomes superseded, `new` is the head
    /// of the lineage, and every event caused by `old` is now caused by `new`.
    pub fn supersede(&mut self, old: &EventId, mut new: Event) {
        let Some(old_slot) = self.slot(old) else {
            return;
        };
        let Some(previous) = self.node(old_slot).event.clone() else {
            return;
        };
        new.supersedes = Some(old.clone());
        new.lineage = previous.lineage.clone();
        new.status = EventStatus::Manipulated;
        let new_id = new.id.clone();
        // The new head takes the old one's place in the graph.
        let same_shape = self.same_shape(&previous, &new);
        self.rewire_effects(old_slot, &new_id);
        let mut retired = (*previous).clone();
        retired.status = EventStatus::Superseded;
        retired.superseded_by = Some(new_id.clone());
        self.put(retired, false);
        self.put(new, false);
        let new_slot = self.intern(&new_id);
        self.relink_loops(old_slot, new_slot, same_shape);
    }

    /// Whether `new`, taking `old`'s place in the graph, leaves its loops as they are: `old`
    /// is current, both have the same causes, and nothing is caused by `new`'s id yet. Then no
    /// loop can appear or vanish, which keeps a manipulation or a revert cheap on a long causal
    /// chain.
    fn same_shape(&self, old: &Event, new: &Event) -> bool {
        old.status.is_current()
            && same_set(&old.causes, &new.causes)
            && self
                .slot(&new.id)
                .is_none_or(|s| self.node(s).effects.is_empty())
    }

    /// Undoes the manipulation that made `head`: `head` is marked reverted and the event it
    /// replaced stands again, with its effects. Returns the restored event's id.
    ///
    /// Causes of the restored event that were manipulated meanwhile are followed to their
    /// current heads (as `head`'s were), so it is caused by what is current.
    pub fn revert(&mut self, head: &EventId) -> Option<EventId> {
        let head_slot = self.slot(head)?;
        let current = self.node(head_slot).event.clone()?;
        let restored_id = current.supersedes.clone()?;
        let restored = self.get(&restored_id).cloned()?;
        let mut back = (*restored).clone();
        back.superseded_by = None;
        back.status = if back.supersedes.is_some() {
            EventStatus::Manipulated
        } else {
            EventStatus::OnSchedule
        };
        // A cause manipulated while `head` stood was rewired in `head`: follow it there.
        back.causes = back
            .causes
            .iter()
            .map(|c| {
                if current.causes.contains(c) {
                    return c.clone();
                }
                match self.head_of(c) {
                    Some(h) if h.status.is_current() && current.causes.contains(&h.id) => {
                        h.id.clone()
                    }
                    _ => c.clone(),
                }
            })
            .collect();
        // Events still naming the restored id (stale references) gain it back as a cause.
        let same_shape = self.same_shape(&current, &back);
        self.rewire_effects(head_slot, &restored_id);
        let mut undone = (*current).clone();
        undone.status = EventStatus::Reverted;
        self.put(undone, false);
        self.put(back, false);
        let restored_slot = self.intern(&restored_id);
        self.relink_loops(head_slot, restored_slot, same_shape);
        Some(restored_id)
    }

    /// Current events whose location contains `location` (case-insensitive, whole or part)
    /// and whose time lies in `range`, in time order, strictly after `after`, at most `limit`.
    ///
    /// Cost grows with the number of distinct locations and the results returned, not with
    /// the number of events: each matching location's time index is read lazily from the
    /// range start and the matches are merged.
    pub fn search(
        &self,
        location: Option<&str>,
        range: Option<&TimeRange>,
        after: Option<&TimeKey>,
        limit: usize,
    ) -> Vec<Arc<Event>> {
        self.search_among(Versions::Current, location, range, after, limit)
    }

    /// [`History::search`] among `versions`: with [`Versions::Every`], the current events and
    /// the past ones (superseded, reverted) in one time order. Past versions come from an index
    /// of their own, read from the page's start like the current ones; those of another place
    /// are passed over as they are met (a timeline has few past versions beside its events).
    pub fn search_among(
        &self,
        versions: Versions,
        location: Option<&str>,
        range: Option<&TimeRange>,
        after: Option<&TimeKey>,
        limit: usize,
    ) -> Vec<Arc<Event>> {
        if limit == 0 {
            return Vec::new();
        }
        let range_start = range.map(|r| Bound::Included((r.start, 0)));
        let after = after.map(|(t, id)| {
            // An id never seen here (a forged cursor) resumes after everything at that time.
            Bound::Excluded((*t, self.slot(id).unwrap_or(Slot::MAX)))
        });
        let lower = match (after, range_start) {
            (Some(Bound::Excluded(a)), Some(Bound::Included(r))) if a < r => Bound::Included(r),
            (Some(a), _) => a,
            (None, Some(r)) => r,
            (None, None) => Bound::Unbounded,
        };
        let upper = match range {
            Some(r) => Bound::Included((r.end, Slot::MAX)),
            None => Bound::Unbounded,
        };
        let needle = location.map(location_key);
        type Keys<'a> = Box<dyn Iterator<Item = SlotKey> + 'a>;
        let mut streams: Vec<Keys<'_>> = match &needle {
            None => vec![Box::new(self.by_time.range((lower, upper)).copied())],
            Some(needle) => self
                .by_location
                .iter()
                .filter(|(loc, _)| loc.contains(needle.as_str()))
                .map(|(_, set)| Box::new(set.range((lower, upper)).copied()) as Keys<'_>)
                .collect(),
        };
        if versions == Versions::Every {
            let there = move |&(_, slot): &SlotKey| {
                needle.as_ref().is_none_or(|n| {
                    self.node(slot)
                        .event
                        .as_ref()
                        .is_some_and(|e| location_key(&e.location).contains(n.as_str()))
                })
            };
            streams.push(Box::new(
                self.past.range((lower, upper)).copied().filter(there),
            ));
        }
        // A k-way merge takes only what is returned from each stream.
        let mut heap = BinaryHeap::new();
        for (i, stream) in streams.iter_mut().enumerate() {
            if let Some(k) = stream.next() {
                heap.push(Reverse((k, i)));
            }
        }
        let mut keys = Vec::with_capacity(limit.min(1024));
        while keys.len() < limit {
            let Some(Reverse((k, i))) = heap.pop() else {
                break;
            };
            keys.push(k);
            if let Some(next) = streams[i].next() {
                heap.push(Reverse((next, i)));
            }
        }
        keys.into_iter()
            .filter_map(|(_, s)| self.node(s).event.clone())
            .collect()
    }

    // ----- what the paradox checker and the monitor read -----

    /// The slot of an id named here, as an event or as a cause.
    pub(crate) fn slot(&self, id: &EventId) -> Option<Slot> {
        self.slots.get(id).copied()
    }

    /// One slot.
    pub(crate) fn view(&self, slot: Slot) -> SlotView<'_> {
        let n = self.node(slot);
        SlotView {
            id: &n.id,
            event: n.event.as_ref(),
            time: n.time,
            current: n.current,
            causes: &n.causes,
            effects: &n.effects,
        }
    }

    /// Every slot in slot order (a sequential walk of the vector).
    pub(crate) fn views(&self) -> impl Iterator<Item = (Slot, SlotView<'_>)> + '_ {
        self.nodes.iter().enumerate().map(|(i, n)| {
            (
                i as Slot,
                SlotView {
                    id: &n.id,
                    event: n.event.as_ref(),
                    time: n.time,
                    current: n.current,
                    causes: &n.causes,
                    effects: &n.effects,
                },
            )
        })
    }

    /// How many paradoxes stand in this history: effects before their causes, causal loops.
    /// Kept up to date as events change, so asking costs nothing.
    pub fn standing_paradoxes(&self) -> usize {
        self.violations.len() + self.loops.len()
    }

    /// Whether `other` is this history or an unchanged clone of it (O(1); `false` may also
    /// mean a small history that was copied rather than shared).
    pub(crate) fn same_as(&self, other: &History) -> bool {
        self.nodes.ptr_eq(&other.nodes)
    }

    /// Standing (effect, cause) pairs where the effect happens before its cause.
    pub(crate) fn standing_violations(&self) -> impl Iterator<Item = (Slot, Slot)> + '_ {
        self.violations.iter().copied()
    }

    /// Standing causal loops, each a group of slots that cause each other.
    pub(crate) fn standing_loops(&self) -> impl Iterator<Item = &[Slot]> + '_ {
        self.loops.values().map(|m| &**m)
    }

    /// Groups of slots that reach each other, among those reachable from `roots` along
    /// `next` (Tarjan's algorithm).
    pub(crate) fn components<F>(roots: impl Iterator<Item = Slot>, next: F) -> Vec<Vec<Slot>>
    where
        F: FnMut(Slot) -> Vec<Slot>,
    {
        strongly_connected(roots, next)
    }

    // ----- maintenance -----

    /// The lineages whose current event differs between `base` and this history (one a
    /// structurally shared copy of the other, as a branch's base is): every lineage a
    /// manipulation, a revert or an addition touched since. Found by diffing the persistent
    /// time indexes, which skips the subtrees both still share, so the cost grows with the
    /// changes since the copy, not with the timeline's size. The caller compares outcomes.
    pub fn changed_lineages(&self, base: &History) -> std::collections::BTreeSet<EventId> {
        let mut out = std::collections::BTreeSet::new();
        for item in base.by_time.diff(&self.by_time) {
            let (from, (_, slot)) = match item {
                imbl::ordset::DiffItem::Add(k) => (self, k),
                imbl::ordset::DiffItem::Remove(k) => (base, k),
            };
            if let Some(e) = from
                .nodes
                .get(*slot as usize)
                .and_then(|n| n.event.as_ref())
            {
                out.insert(e.lineage.clone());
            }
        }
        out
    }

    /// The events that became current since `base` and those that stopped being current (one
    /// history a structurally shared copy of the other, as a world and the one after it are),
    /// each in time order. Like [`History::changed_lineages`], a diff of the time indexes that
    /// skips the subtrees both share: the cost grows with the changes, not the timeline.
    pub fn joined_and_left(&self, base: &History) -> (Vec<Arc<Event>>, Vec<Arc<Event>>) {
        let (mut joined, mut left) = (Vec::new(), Vec::new());
        for item in base.by_time.diff(&self.by_time) {
            let (from, (_, slot), into) = match item {
                imbl::ordset::DiffItem::Add(k) => (self, k, &mut joined),
                imbl::ordset::DiffItem::Remove(k) => (base, k, &mut left),
            };
            if let Some(e) = from
                .nodes
                .get(*slot as usize)
                .and_then(|n| n.event.as_ref())
            {
                into.push(Arc::clone(e));
            }
        }
        (joined, left)
    }

    /// Whether `event` is one [`History::search`] finds with `location` and `range` (when it
    /// is current): the same rule, for one event.
    pub fn matches(location: Option<&str>, range: Option<&TimeRange>, event: &Event) -> bool {
        range.is_none_or(|r| r.start <= event.time && event.time <= r.end)
            && location.is_none_or(|l| location_key(&event.location).contains(&location_key(l)))
    }

    fn node(&self, slot: Slot) -> &Node {
        &self.nodes[slot as usize]
    }

    fn node_mut(&mut self, slot: Slot) -> &mut Node {
        &mut self.nodes[slot as usize]
    }

    fn intern(&mut self, id: &EventId) -> Slot {
        if let Some(s) = self.slots.get(id) {
            return *s;
        }
        let slot = self.nodes.len() as Slot;
        self.nodes.push_back(Node::placeholder(id.clone()));
        self.slots.insert(id.clone(), slot);
        slot
    }

    /// Records `event`, keeping every index right; `loops` says whether to keep the loop
    /// index right too (supersede and revert fix loops once at the end instead).
    fn put(&mut self, event: Event, loops: bool) {
        let slot = self.intern(&event.id);
        let was_current = self.node(slot).current;
        let old_causes = self.node(slot).event.as_ref().map(|e| e.causes.clone());
        if was_current {
            self.unindex(slot);
        } else if old_causes.is_some() {
            let key = (self.node(slot).time, slot);
            self.past.remove(&key);
        }
        let causes: Vec<Slot> = event.causes.iter().map(|c| self.intern(c)).collect();
        let causes = dedup_slots(causes.into_iter());
        let current = event.status.is_current();
        let same_shape =
            was_current && current && old_causes.is_some_and(|old| same_set(&old, &event.causes));
        {
            let n = self.node_mut(slot);
            n.time = event.time;
            n.current = current;
            n.causes = Arc::from(causes);
            n.event = Some(Arc::new(event));
        }
        if current {
            self.index(slot);
        } else {
            self.past.insert((self.node(slot).time, slot));
        }
        if loops && !same_shape {
            if was_current {
                self.forget_loop(slot);
            }
            if current {
                self.find_loop(slot);
            }
        }
    }

    /// Events caused by `from` are now caused by `to`.
    fn rewire_effects(&mut self, from: Slot, to: &EventId) {
        let from_id = self.node(from).id.clone();
        let effected: Vec<Slot> = self.node(from).effects.iter().copied().collect();
        for effect in effected {
            if let Some(event) = self.node(effect).event.clone() {
                let mut changed = (*event).clone();
                for cause in &mut changed.causes {
                    if *cause == from_id {
                        *cause = to.clone();
                    }
                }
                self.put(changed, false);
            }
        }
    }

    fn index(&mut self, slot: Slot) {
        let (time, causes, location) = {
            let n = self.node(slot);
            let loc = n.event.as_ref().map(|e| location_key(&e.location));
            (n.time, Arc::clone(&n.causes), loc)
        };
        let key = (time, slot);
        self.by_time.insert(key);
        if let Some(loc) = location {
            self.by_location.entry(loc).or_default().insert(key);
        }
        for &cause in causes.iter() {
            self.node_mut(cause).effects.insert(slot);
            if cause == slot {
                self.back_edges.insert((slot, slot));
                continue;
            }
            let c = self.node(cause);
            if c.current && time <= c.time {
                if time < c.time {
                    self.violations.insert((slot, cause));
                }
                self.back_edges.insert((slot, cause));
            }
        }
        let effects = self.node(slot).effects.clone();
        for &effect in effects.iter() {
            if effect == slot {
                continue;
            }
            let effect_time = self.node(effect).time;
            if effect_time <= time {
                if effect_time < time {
                    self.violations.insert((effect, slot));
                }
                self.back_edges.insert((effect, slot));
            }
        }
    }

    fn unindex(&mut self, slot: Slot) {
        let (time, causes, effects, location) = {
            let n = self.node(slot);
            let loc = n.event.as_ref().map(|e| location_key(&e.location));
            (n.time, Arc::clone(&n.causes), n.effects.clone(), loc)
        };
        let key = (time, slot);
        self.by_time.remove(&key);
        if let Some(loc) = location
            && let Some(set) = self.by_location.get_mut(&loc)
        {
            set.remove(&key);
            if set.is_empty() {
                self.by_location.remove(&loc);
            }
        }
        for &cause in causes.iter() {
            self.node_mut(cause).effects.remove(&slot);
            let edge = (slot, cause);
            self.violations.remove(&edge);
            self.back_edges.remove(&edge);
        }
        for &effect in effects.iter() {
            if effect == slot {
                continue;
            }
            let edge = (effect, slot);
            self.violations.remove(&edge);
            self.back_edges.remove(&edge);
        }
        self.node_mut(slot).current = false;
    }

    /// After `from` was replaced by `to` in the graph: the loop index follows.
    fn relink_loops(&mut self, from: Slot, to: Slot, same_shape: bool) {
        if same_shape {
            if let Some(key) = self.loop_of.remove(&from)
                && let Some(members) = self.loops.remove(&key)
            {
                let mut renamed: Vec<Slot> = members
                    .iter()
                    .map(|&m| if m == from { to } else { m })
                    .collect();
                renamed.sort_unstable();
                for m in &renamed {
                    self.loop_of.remove(m);
                }
                self.record_loop(renamed);
            }
        } else {
            self.forget_loop(from);
            if self.node(to).current {
                self.find_loop(to);
            }
        }
    }

    /// `slot` left the graph (or its causes changed): its loop, if any, is recomputed
    /// without it. Removing a member can only split a loop, so only its members are read.
    fn forget_loop(&mut self, slot: Slot) {
        let Some(key) = self.loop_of.get(&slot).copied() else {
            return;
        };
        let Some(members) = self.loops.remove(&key) else {
            return;
        };
        for m in members.iter() {
            self.loop_of.remove(m);
        }
        let rest: Vec<Slot> = members.iter().copied().filter(|&m| m != slot).collect();
        for group in self.loops_within(&rest) {
            self.record_loop(group);
        }
    }

    /// `slot` joined the graph: records the loop through it, merging loops it connects.
    fn find_loop(&mut self, slot: Slot) {
        // Every loop contains an edge whose effect does not happen after its cause.
        if self.back_edges.is_empty() {
            return;
        }
        let n = self.node(slot);
        let self_cause = n.causes.contains(&slot);
        let has_cause = n.causes.iter().any(|&c| c != slot && self.node(c).current);
        let has_effect = n.effects.iter().any(|&e| e != slot);
        let group = if has_cause && has_effect {
            self.component_of(slot)
        } else {
            vec![slot]
        };
        if group.len() == 1 && !self_cause {
            return;
        }
        for m in &group {
            if let Some(key) = self.loop_of.get(m).copied()
                && let Some(old) = self.loops.remove(&key)
            {
                for x in old.iter() {
                    self.loop_of.remove(x);
                }
            }
        }
        self.record_loop(group);
    }

    fn record_loop(&mut self, mut members: Vec<Slot>) {
        members.sort_unstable();
        let Some(&key) = members.first() else {
            return;
        };
        for &m in &members {
            self.loop_of.insert(m, key);
        }
        self.loops.insert(key, Arc::from(members));
    }

    fn current_causes(&self, slot: Slot) -> impl Iterator<Item = Slot> + '_ {
        self.node(slot)
            .causes
            .iter()
            .copied()
            .filter(|&c| self.node(c).current)
    }

    /// The strongly connected component of `slot`: what it reaches and is reached by.
    /// Both searches run in lockstep and the first to finish bounds the other, so the cost
    /// is twice the smaller side, not the whole forward or backward cone.
    fn component_of(&self, slot: Slot) -> Vec<Slot> {
        let mut fwd: StdHashSet<Slot> = StdHashSet::from([slot]);
        let mut bwd: StdHashSet<Slot> = StdHashSet::from([slot]);
        let mut fwd_stack = vec![slot];
        let mut bwd_stack = vec![slot];
        let forward_done = loop {
            let Some(v) = fwd_stack.pop() else {
                break true;
            };
            for &e in self.node(v).effects.iter() {
                if fwd.insert(e) {
                    fwd_stack.push(e);
                }
            }
            let Some(v) = bwd_stack.pop() else {
                break false;
            };
            for c in self.current_causes(v) {
                if bwd.insert(c) {
                    bwd_stack.push(c);
                }
            }
        };
        // Search back the other way, only inside the finished side.
        let within = if forward_done { &fwd } else { &bwd };
        let mut seen: StdHashSet<Slot> = StdHashSet::from([slot]);
        let mut stack = vec![slot];
        while let Some(v) = stack.pop() {
            let next: Vec<Slot> = if forward_done {
                self.current_causes(v).collect()
            } else {
                self.node(v).effects.iter().copied().collect()
            };
            for w in next {
                if within.contains(&w) && seen.insert(w) {
                    stack.push(w);
                }
            }
        }
        let mut group: Vec<Slot> = seen.into_iter().collect();
        group.sort_unstable();
        group
    }

    /// Loops (components of more than one event, or an event that causes itself) among
    /// `members`, reading only the edges between them.
    fn loops_within(&self, members: &[Slot]) -> Vec<Vec<Slot>> {
        let set: StdHashSet<Slot> = members.iter().copied().collect();
        strongly_connected(members.iter().copied(), |v| {
            self.current_causes(v)
                .filter(|c| set.contains(c))
                .collect::<Vec<_>>()
        })
        .into_iter()
        .filter(|g| g.len() > 1 || g.first().is_some_and(|&v| self.node(v).causes.contains(&v)))
        .collect()
    }
}

/// Tarjan's strongly connected components, iterative (a long causal chain must not overflow
/// the stack), over the nodes reachable from `roots` through `next`.
fn strongly_connected<F>(roots: impl Iterator<Item = Slot>, mut next: F) -> Vec<Vec<Slot>>
where
    F: FnMut(Slot) -> Vec<Slot>,
{
    use std::collections::HashMap as StdHashMap;
    let mut index: StdHashMap<Slot, (usize, usize)> = StdHashMap::new();
    let mut on_stack: StdHashSet<Slot> = StdHashSet::new();
    let mut stack: Vec<Slot> = Vec::new();
    let mut out = Vec::new();
    let mut counter = 0usize;
    for root in roots {
        if index.contains_key(&root) {
            continue;
        }
        // Frames: a node and the successors still to visit.
        let mut frames: Vec<(Slot, std::vec::IntoIter<Slot>)> = Vec::new();
        index.insert(root, (counter, counter));
        counter += 1;
        stack.push(root);
        on_stack.insert(root);
        frames.push((root, next(root).into_iter()));
        while let Some((v, successors)) = frames.last_mut() {
            let v = *v;
            if let Some(w) = successors.next() {
                match index.get(&w).copied() {
                    None => {
                        index.insert(w, (counter, counter));
                        counter += 1;
                        stack.push(w);
                        on_stack.insert(w);
                        frames.push((w, next(w).into_iter()));
                    }
                    Some((w_index, _)) if on_stack.contains(&w) => {
                        if let Some(entry) = index.get_mut(&v) {
                            entry.1 = entry.1.min(w_index);
                        }
                    }
                    Some(_) => {}
                }
                continue;
            }
            frames.pop();
            let (v_index, v_low) = index.get(&v).copied().unwrap_or((0, 0));
            if let Some((parent, _)) = frames.last()
                && let Some(entry) = index.get_mut(parent)
            {
                entry.1 = entry.1.min(v_low);
            }
            if v_low == v_index {
                let mut group = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack.remove(&w);
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                group.sort_unstable();
                out.push(group);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_instant;

    fn ev(id: &str, time: &str, location: &str, causes: &[&str]) -> Event {
        Event {
            id: id.parse().unwrap(),
            description: id.into(),
            time: parse_instant("t", time).unwrap(),
            location: location.into(),
            causes: causes.iter().map(|c| c.parse().unwrap()).collect(),
            fixed_point: false,
            status: EventStatus::OnSchedule,
            supersedes: None,
            superseded_by: None,
            lineage: id.parse().unwrap(),
            author: None,
        }
    }

    fn id(s: &str) -> EventId {
        s.parse().unwrap()
    }

    fn sample() -> History {
        let mut h = History::default();
        h.insert(ev("a", "2025-01-01T00:00:00Z", "Global AI Hub", &[]));
        h.insert(ev("b", "2025-02-01T00:00:00Z", "Paris", &["a"]));
        h.insert(ev(
            "c",
            "2025-03-01T00:00:00Z",
            "global ai hub annex",
            &["b"],
        ));
        h
    }

    #[test]
    fn search_matches_location_case_insensitively_in_time_order() {
        let h = sample();
        let found: Vec<_> = h
            .search(Some("AI HUB"), None, None, 10)
            .iter()
            .map(|e| e.id.to_string())
            .collect();
        assert_eq!(found, ["a", "c"]);
        let r = TimeRange::parse("r", "2025-01-15T00:00:00Z/2025-12-31T00:00:00Z").unwrap();
        let found: Vec<_> = h
            .search(None, Some(&r), None, 10)
            .iter()
            .map(|e| e.id.to_string())
            .collect();
        assert_eq!(found, ["b", "c"]);
        assert_eq!(h.search(None, None, None, 1).len(), 1);
    }

    #[test]
    fn matches_agrees_with_search_for_every_event() {
        let h = sample();
        let r = TimeRange::parse("r", "2025-02-01T00:00:00Z/2025-03-01T00:00:00Z").unwrap();
        for location in [None, Some(" ai HUB "), Some("paris"), Some("nowhere")] {
            for range in [None, Some(&r)] {
                let found: Vec<_> = h
                    .search(location, range, None, 10)
                    .iter()
                    .map(|e| e.id.clone())
                    .collect();
                let matched: Vec<_> = h
                    .iter()
                    .filter(|e| History::matches(location, range, e))
                    .map(|e| e.id.clone())
                    .collect();
                assert_eq!(matched, found, "{location:?} {range:?}");
            }
        }
    }

    /// Every version, paged from the past versions' index and the current ones', is what a
    /// pass over every version finds, in (time, slot) order, whatever the location and range,
    /// through manipulations (one retimed), a revert, and a round trip through an image.
    #[test]
    fn search_versions_pages_every_version_as_a_pass_over_them_would() {
        let mut h = sample();
        h.insert(ev("d", "2025-04-01T00:00:00Z", "Paris", &["c"]));
        let base = h.clone();
        let mut b2 = ev("b2", "2025-02-01T00:00:00Z", "Paris", &["a"]);
        b2.description = "retold".into();
        h.supersede(&id("b"), b2);
        let mut c2 = ev("c2", "2025-05-01T00:00:00Z", "Global AI Hub", &["b2"]);
        c2.description = "moved".into();
        h.supersede(&id("c"), c2);
        let mut d2 = ev("d2", "2025-04-02T00:00:00Z", "Paris", &["c2"]);
        d2.description = "undone".into();
        h.supersede(&id("d"), d2);
        h.revert(&id("d2"));
        let whole = History::from_image(h.image(None), None).expect("the image reads back");
        let on_base =
            History::from_image(h.image(Some(&base)), Some(&base)).expect("and on its base");
        let r = TimeRange::parse("r", "2025-01-15T00:00:00Z/2025-04-01T00:00:00Z").unwrap();
        for h in [&h, &whole, &on_base] {
            for location in [None, Some("paris"), Some("AI hub"), Some("nowhere")] {
                for range in [None, Some(&r)] {
                    let mut every: Vec<_> = h
                        .iter_all()
                        .filter(|e| History::matches(location, range, e))
                        .map(|e| (e.time, h.slot(&e.id).unwrap(), e.id.clone()))
                        .collect();
                    every.sort();
                    let every: Vec<_> = every.into_iter().map(|(_, _, id)| id).collect();
                    for limit in [1, 2, 10] {
                        let mut paged = Vec::new();
                        let mut after: Option<TimeKey> = None;
                        loop {
                            let page = h.search_among(
                                Versions::Every,
                                location,
                                range,
                                after.as_ref(),
                                limit,
                            );
                            paged.extend(page.iter().map(|e| e.id.clone()));
                            match page.last() {
                                Some(e) if page.len() == limit => {
                                    after = Some((e.time, e.id.clone()));
                                }
                                _ => break,
                            }
                        }
                        assert_eq!(paged, every, "{location:?} {range:?} by {limit}");
                    }
                }
            }
        }
        let all = h.search_among(Versions::Every, None, None, None, 100);
        assert_eq!(all.len(), 7, "four events and three past versions");
    }

    #[test]
    fn joined_and_left_are_what_a_change_touched_in_a_big_history() {
        let mut before = History::default();
        for i in 0..20_000 {
            let mut e = ev(&format!("e{i}"), "1900-01-01T00:00:00Z", "Lyon", &[]);
            e.time += chrono::Duration::seconds(i);
            before.insert(e);
        }
        let mut after = before.clone();
        after.insert(ev("late", "2025-01-01T00:00:00Z", "Paris", &[]));
        let mut new = ev("e7b", "1900-01-01T00:00:07Z", "Lyon", &[]);
        new.description = "changed".into();
        after.supersede(&id("e7"), new);
        let (joined, left) = after.joined_and_left(&before);
        let ids = |v: Vec<Arc<Event>>| v.iter().map(|e| e.id.to_string()).collect::<Vec<_>>();
        assert_eq!(ids(joined), ["e7b", "late"], "in time order");
        assert_eq!(ids(left), ["e7"]);
        let (joined, left) = after.joined_and_left(&after.clone());
        assert!(joined.is_empty() && left.is_empty());
    }

    #[test]
    fn supersede_rewires_effects_and_revert_restores_them() {
        let mut h = sample();
        let before = h.clone();
        let mut new = ev("b2", "2025-02-02T00:00:00Z", "Paris", &["a"]);
        new.description = "changed".into();
        h.supersede(&id("b"), new);
        assert_eq!(h.get(&id("b")).unwrap().status, EventStatus::Superseded);
        assert_eq!(h.current(&id("b2")).unwrap().lineage, id("b"));
        assert_eq!(h.current(&id("c")).unwrap().causes, vec![id("b2")]);
        assert_eq!(h.head_of(&id("b")).unwrap().id, id("b2"));
        assert_eq!(h.len(), 3);

        assert_eq!(h.revert(&id("b2")), Some(id("b")));
        assert_eq!(h.get(&id("b2")).unwrap().status, EventStatus::Reverted);
        for e in before.iter() {
            assert_eq!(h.current(&e.id).map(|x| &**x), Some(&**e));
        }
        assert_eq!(h.len(), before.len());
    }

    #[test]
    fn search_pages_resume_after_the_cursor_across_locations() {
        let mut h = History::default();
        let places = ["Paris North", "Paris South", "Lyon"];
        for i in 0..9 {
            let time = format!("2025-01-0{}T00:00:00Z", i + 1);
            h.insert(ev(&format!("e{i}"), &time, places[i % 3], &[]));
        }
        let names = |found: Vec<Arc<Event>>| -> Vec<String> {
            found.iter().map(|e| e.id.to_string()).collect()
        };
        let first = h.search(Some("paris"), None, None, 3);
        let last = first.last().map(|e| (e.time, e.id.clone())).unwrap();
        assert_eq!(names(first), ["e0", "e1", "e3"]);
        assert_eq!(
            names(h.search(Some("paris"), None, Some(&last), 10)),
            ["e4", "e6", "e7"]
        );
        let r = TimeRange::parse("r", "2025-01-02T00:00:00Z/2025-01-05T00:00:00Z").unwrap();
        assert_eq!(
            names(h.search(Some("PARIS"), Some(&r), None, 10)),
            ["e1", "e3", "e4"]
        );
        assert_eq!(
            names(h.search(Some("paris"), Some(&r), Some(&last), 10)),
            ["e4"]
        );
        assert!(h.search(Some("berlin"), None, None, 10).is_empty());
    }

    #[test]
    fn a_cause_named_before_it_exists_is_wired_when_it_arrives() {
        let mut h = History::default();
        h.insert(ev("b", "2025-02-01T00:00:00Z", "Paris", &["a"]));
        assert_eq!(h.effects_of(&id("a")).count(), 1);
        assert!(h.get(&id("a")).is_none());
        assert_eq!(h.len(), 1);
        h.insert(ev("a", "2025-01-01T00:00:00Z", "Paris", &[]));
        assert_eq!(
            h.effects_of(&id("a")).cloned().collect::<Vec<_>>(),
            [id("b")]
        );
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn a_clone_is_independent_of_its_original() {
        let base = sample();
        let mut branch = base.clone();
        branch.insert(ev("d", "2025-04-01T00:00:00Z", "Paris", &[]));
        assert_eq!(base.len(), 3);
        assert_eq!(branch.len(), 4);
    }
}
