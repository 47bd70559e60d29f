//! A timeline's events with the indexes every rule needs, in persistent (structurally shared)
//! maps: cloning a `History` is O(1), which is what makes branching copy-on-write.

use std::sync::Arc;

use imbl::{HashMap, OrdSet};

use super::{Event, EventId, EventStatus, Instant, TimeRange};

/// Key of the time-ordered indexes: events sort by time, then id.
pub type TimeKey = (Instant, EventId);

/// The events of one timeline: current ones indexed by time, location and effect,
/// superseded and reverted ones kept for lineage.
#[derive(Clone, Debug, Default)]
pub struct History {
    events: HashMap<EventId, Arc<Event>>,
    by_time: OrdSet<TimeKey>,
    by_location: HashMap<String, OrdSet<TimeKey>>,
    /// cause id -> current events that name it among their causes.
    effects: HashMap<EventId, OrdSet<EventId>>,
}

fn location_key(location: &str) -> String {
    location.trim().to_lowercase()
}

impl History {
    /// Any event ever recorded here, current or not.
    pub fn get(&self, id: &EventId) -> Option<&Arc<Event>> {
        self.events.get(id)
    }

    /// An event that is part of the timeline as it now stands.
    pub fn current(&self, id: &EventId) -> Option<&Arc<Event>> {
        self.events.get(id).filter(|e| e.status.is_current())
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
            .filter_map(|(_, id)| self.events.get(id))
    }

    /// Every event recorded here, current or not, in no particular order.
    pub fn iter_all(&self) -> impl Iterator<Item = &Arc<Event>> + '_ {
        self.events.values()
    }

    /// Current events that name `cause` among their causes.
    pub fn effects_of(&self, cause: &EventId) -> impl Iterator<Item = &EventId> + '_ {
        self.effects.get(cause).into_iter().flat_map(|s| s.iter())
    }

    /// Follows a lineage forward from any of its events to the event that now stands for it.
    /// Returns `None` when the lineage was never here.
    pub fn head_of(&self, id: &EventId) -> Option<&Arc<Event>> {
        let mut event = self.events.get(id)?;
        // A lineage is a chain; the bound only guards against a corrupted store.
        for _ in 0..=self.events.len() {
            match &event.superseded_by {
                Some(next) => event = self.events.get(next)?,
                None => return Some(event),
            }
        }
        None
    }

    /// Adds a new event. Current events join the indexes.
    pub fn insert(&mut self, event: Event) {
        let event = Arc::new(event);
        if let Some(old) = self.events.get(&event.id).cloned() {
            self.unindex(&old);
        }
        self.index(&event);
        self.events.insert(event.id.clone(), event);
    }

    /// Replaces `old` by `new` (a manipulation): `old` becomes superseded, `new` is the head
    /// of the lineage, and every event caused by `old` is now caused by `new`.
    pub fn supersede(&mut self, old: &EventId, mut new: Event) {
        let Some(previous) = self.events.get(old).cloned() else {
            return;
        };
        new.supersedes = Some(old.clone());
        new.lineage = previous.lineage.clone();
        new.status = EventStatus::Manipulated;
        let new_id = new.id.clone();
        self.rewire_effects(old, &new_id);
        let mut retired = (*previous).clone();
        retired.status = EventStatus::Superseded;
        retired.superseded_by = Some(new_id);
        self.insert(retired);
        self.insert(new);
    }

    /// Undoes the manipulation that made `head`: `head` is marked reverted and the event it
    /// replaced stands again, with its effects. Returns the restored event's id.
    pub fn revert(&mut self, head: &EventId) -> Option<EventId> {
        let current = self.events.get(head).cloned()?;
        let restored_id = current.supersedes.clone()?;
        let restored = self.events.get(&restored_id).cloned()?;
        self.rewire_effects(head, &restored_id);
        let mut undone = (*current).clone();
        undone.status = EventStatus::Reverted;
        self.insert(undone);
        let mut back = (*restored).clone();
        back.superseded_by = None;
        back.status = if back.supersedes.is_some() {
            EventStatus::Manipulated
        } else {
            EventStatus::OnSchedule
        };
        self.insert(back);
        Some(restored_id)
    }

    /// Events caused by `from` are now caused by `to`.
    fn rewire_effects(&mut self, from: &EventId, to: &EventId) {
        let effected: Vec<EventId> = self.effects_of(from).cloned().collect();
        for effect_id in effected {
            if let Some(effect) = self.events.get(&effect_id).cloned() {
                let mut changed = (*effect).clone();
                for cause in &mut changed.causes {
                    if cause == from {
                        *cause = to.clone();
                    }
                }
                self.insert(changed);
            }
        }
    }

    fn index(&mut self, event: &Event) {
        if !event.status.is_current() {
            return;
        }
        let key = (event.time, event.id.clone());
        self.by_time.insert(key.clone());
        self.by_location
            .entry(location_key(&event.location))
            .or_default()
            .insert(key);
        for cause in &event.causes {
            self.effects
                .entry(cause.clone())
                .or_default()
                .insert(event.id.clone());
        }
    }

    fn unindex(&mut self, event: &Event) {
        if !event.status.is_current() {
            return;
        }
        let key = (event.time, event.id.clone());
        self.by_time.remove(&key);
        let loc = location_key(&event.location);
        if let Some(set) = self.by_location.get_mut(&loc) {
            set.remove(&key);
            if set.is_empty() {
                self.by_location.remove(&loc);
            }
        }
        for cause in &event.causes {
            if let Some(set) = self.effects.get_mut(cause) {
                set.remove(&event.id);
                if set.is_empty() {
                    self.effects.remove(cause);
                }
            }
        }
    }

    /// Current events whose location contains `location` (case-insensitive, whole or part)
    /// and whose time lies in `range`, in time order, strictly after `after`, at most `limit`.
    ///
    /// Cost grows with the number of distinct locations and the results returned, not with
    /// the number of events: each matching location's time index is read from the range start.
    pub fn search(
        &self,
        location: Option<&str>,
        range: Option<&TimeRange>,
        after: Option<&TimeKey>,
        limit: usize,
    ) -> Vec<Arc<Event>> {
        let in_range = |k: &TimeKey| range.is_none_or(|r| k.0 <= r.end);
        let from = |set: &OrdSet<TimeKey>| -> Vec<TimeKey> {
            let lower = match (after, range) {
                (Some(a), _) => std::ops::Bound::Excluded(a.clone()),
                (None, Some(r)) => std::ops::Bound::Included((r.start, EventId::min_value())),
                (None, None) => std::ops::Bound::Unbounded,
            };
            set.range((lower, std::ops::Bound::Unbounded))
                .filter(|k| range.is_none_or(|r| k.0 >= r.start))
                .take_while(|k| in_range(k))
                .take(limit)
                .cloned()
                .collect()
        };
        let mut keys: Vec<TimeKey> = match location.map(location_key) {
            None => from(&self.by_time),
            Some(needle) => {
                let mut keys = Vec::new();
                for (loc, set) in &self.by_location {
                    if loc.contains(&needle) {
                        keys.extend(from(set));
                    }
                }
                keys.sort();
                keys.truncate(limit);
                keys
            }
        };
        keys.truncate(limit);
        keys.into_iter()
            .filter_map(|(_, id)| self.events.get(&id).cloned())
            .collect()
    }
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
    fn a_clone_is_independent_of_its_original() {
        let base = sample();
        let mut branch = base.clone();
        branch.insert(ev("d", "2025-04-01T00:00:00Z", "Paris", &[]));
        assert_eq!(base.len(), 3);
        assert_eq!(branch.len(), 4);
    }
}
