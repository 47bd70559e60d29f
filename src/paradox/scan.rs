//! The full rescan: one sequential walk over every event of a timeline, then a loop search
//! confined to what could lie on a loop.

use std::collections::HashMap as StdHashMap;

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::{History, Instant};

type Slot = u32;

/// What a rescan found, as slots of the history it read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Found {
    /// (effect, cause): the effect happens before its cause.
    pub violations: Vec<(Slot, Slot)>,
    /// Groups of events that cause each other.
    pub loops: Vec<Vec<Slot>>,
    /// (effect, cause): the cause is not a current event.
    pub orphans: Vec<(Slot, Slot)>,
}

/// Walks every current event and its causes, then searches for loops.
pub(crate) fn rescan(h: &History) -> Found {
    let mut found = Found::default();
    // Effects of edges whose effect does not happen after its cause ("back edges").
    let mut roots: Vec<Slot> = Vec::new();
    // How far back in time all back edges reach together.
    let mut descent = TimeDelta::zero();
    for (slot, view) in h.views() {
        if !view.current {
            continue;
        }
        for &cause in view.causes {
            if cause == slot {
                roots.push(slot);
                continue;
            }
            let c = h.view(cause);
            if !c.current {
                found.orphans.push((slot, cause));
            } else if view.time <= c.time {
                if view.time < c.time {
                    found.violations.push((slot, cause));
                }
                descent = descent
                    .checked_add(&(c.time - view.time))
                    .unwrap_or(TimeDelta::MAX);
                roots.push(slot);
            }
        }
    }
    if !roots.is_empty() {
        found.loops = loops(h, roots, descent);
    }
    found
}

/// Every loop contains a back edge. Going round a loop, time rises along the other edges
/// exactly as much as it falls along its back edges, so from a back edge's effect the loop
/// climbs at most `descent` (all back edges' spans summed) before the next back edge. Only
/// events within that climb of some back edge's effect can be on a loop; Tarjan's algorithm
/// then runs on those alone instead of on everything the effects reach.
fn loops(h: &History, mut roots: Vec<Slot>, descent: TimeDelta) -> Vec<Vec<Slot>> {
    roots.sort_unstable();
    roots.dedup();
    // Candidate -> the latest time it was explored up to.
    let mut explored: StdHashMap<Slot, Instant> = StdHashMap::new();
    let mut stack: Vec<(Slot, Instant)> = Vec::new();
    for &root in &roots {
        let limit = h
            .view(root)
            .time
            .checked_add_signed(descent)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        stack.push((root, limit));
        while let Some((v, limit)) = stack.pop() {
            match explored.get(&v) {
                Some(seen) if *seen >= limit => continue,
                _ => {
                    explored.insert(v, limit);
                }
            }
            let t = h.view(v).time;
            for &e in h.view(v).effects.iter() {
                let et = h.view(e).time;
                if et > t && et <= limit {
                    stack.push((e, limit));
                }
            }
        }
    }
    History::components(roots.into_iter(), |v| {
        h.view(v)
            .effects
            .iter()
            .copied()
            .filter(|e| explored.contains_key(e))
            .collect()
    })
    .into_iter()
    .filter(|g| g.len() > 1 || g.first().is_some_and(|&v| h.view(v).causes.contains(&v)))
    .collect()
}
