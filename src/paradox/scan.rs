//! The full rescan: one sequential walk over every event of a timeline.

use crate::model::History;

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

/// Walks every current event and its causes; loops are then searched only from edges whose
/// effect does not happen after its cause, since every loop contains such an edge.
pub(crate) fn rescan(h: &History) -> Found {
    let mut found = Found::default();
    let mut roots: Vec<Slot> = Vec::new();
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
                roots.push(slot);
            }
        }
    }
    roots.sort_unstable();
    roots.dedup();
    if !roots.is_empty() {
        found.loops = History::components(roots.into_iter(), |v| {
            h.view(v).effects.iter().copied().collect()
        })
        .into_iter()
        .filter(|g| g.len() > 1 || g.first().is_some_and(|&v| h.view(v).causes.contains(&v)))
        .collect();
    }
    found
}
