//! Temporal data as a world holds it: each timeline's entries by time, and what the fold does
//! with them when a timeline goes. Storing, sealing and answering are `engine::data`.

use std::sync::Arc;

use imbl::{HashMap, OrdMap};

use super::World;
use crate::model::{DataId, Instant, TimelineId};
use crate::service::DataEntry;

/// A timeline's data entries by (timestamp, id): ids are minted in creation order, so the
/// last entry at a time is the newest.
pub type DataMap = OrdMap<(Instant, DataId), Arc<DataEntry>>;

/// Forgets where a deleted timeline's own entries were, unless another timeline still holds
/// one (a merge copied it there; a timeline with branches cannot be deleted). `remaining` are
/// the timelines left.
pub fn forget_timeline(
    index: &mut HashMap<DataId, (TimelineId, Instant)>,
    timeline: &TimelineId,
    data: &DataMap,
    remaining: &OrdMap<TimelineId, super::TimelineState>,
) {
    for key @ (_, id) in data.keys() {
        if index.get(id).is_some_and(|(t, _)| t == timeline)
            && !remaining.values().any(|s| s.data.contains_key(key))
        {
            index.remove(id);
        }
    }
}

/// The first difference between two worlds' data and settings (for `World::first_difference`).
pub fn first_difference(a: &World, b: &World) -> Option<String> {
    for (id, x) in &a.timelines {
        let y = b.timelines.get(id)?;
        if x.data != y.data {
            return Some(format!("timeline {id}'s data entries differ"));
        }
    }
    if a.data_index != b.data_index {
        return Some("the data index differs".into());
    }
    (a.read_staleness != b.read_staleness).then(|| "read-staleness settings differ".into())
}
