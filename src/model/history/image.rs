//! A [`History`] as a snapshot stores it, and back.
//!
//! A branch shares most of its history with its parent in memory (persistent maps). Written out
//! whole, every branch of a big timeline would repeat the timeline, and read back it would no
//! longer share anything with it. So a history is written as its differences from a *base*, the
//! parent as it stands when the snapshot is taken: the slots whose node differs, the new length,
//! and what the standing-violation and loop indexes gained or lost. Read back, it starts as an
//! O(1) clone of the already-loaded base and only the differences are applied, so the branch
//! shares structure with its parent again. A history without a base is written in full.
//!
//! Only the graph itself is stored; the indexes derived from it one node at a time (the id to
//! slot map, the time and location indexes, each node's effects) are rebuilt while reading.
//! The nodes are written in chunks that a big history decodes on every core ([`NodeChunks`]).

use std::sync::Arc;

use imbl::{HashMap, OrdSet, Vector};
use serde::{Deserialize, Serialize};

use super::{History, Node, Slot, SlotKey, location_key};
use crate::model::{Event, EventId, EventStatus, Instant, Traveller};

/// What a snapshot holds of one history.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HistoryImage {
    /// How many slots the history has.
    len: u32,
    /// The nodes that differ from the base's at the same slot (every node without a base),
    /// in slot order.
    nodes: NodeChunks,
    violations: SetDiff<(Slot, Slot)>,
    back_edges: SetDiff<(Slot, Slot)>,
    loops: MapDiff<Slot, Vec<Slot>>,
    loop_of: MapDiff<Slot, Slot>,
}

/// One slot: the id it stands for, its event (`None` for an id only named as a cause), and
/// whether that event is part of the timeline as it stands.
#[derive(Debug, Serialize, Deserialize)]
struct NodeImage {
    id: EventId,
    event: Option<EventImage>,
    current: bool,
}

/// Nodes in slot order, cut into up to [`CHUNKS`] chunks. Each chunk is written as postcard
/// bytes of its own, so that reading decodes a big history's chunks on every core at once: for
/// a big timeline, decoding the nodes is most of a start.
#[derive(Debug, Default)]
struct NodeChunks(Vec<Vec<(Slot, NodeImage)>>);

/// How many chunks a history's nodes are cut into (fewer when there are fewer nodes): enough to
/// keep the cores of a big machine busy; a chunk costs a length prefix.
const CHUNKS: usize = 16;

/// Below this many encoded bytes the chunks are decoded on the calling thread: starting threads
/// would cost more than they save (a world of many small branches has a history image each).
const PARALLEL_BYTES: usize = 256 * 1024;

impl NodeChunks {
    fn new(nodes: Vec<(Slot, NodeImage)>) -> Self {
        let size = nodes.len().div_ceil(CHUNKS).max(1);
        let mut chunks: Vec<Vec<(Slot, NodeImage)>> = Vec::with_capacity(CHUNKS);
        for node in nodes {
            match chunks.last_mut() {
                Some(chunk) if chunk.len() < size => chunk.push(node),
                _ => {
                    let mut chunk = Vec::with_capacity(size);
                    chunk.push(node);
                    chunks.push(chunk);
                }
            }
        }
        Self(chunks)
    }

    fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    fn iter(&self) -> impl Iterator<Item = &(Slot, NodeImage)> {
        self.0.iter().flatten()
    }

    fn into_nodes(self) -> impl Iterator<Item = (Slot, NodeImage)> {
        self.0.into_iter().flatten()
    }
}

impl Serialize for NodeChunks {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for chunk in &self.0 {
            let bytes = postcard::to_allocvec(chunk).map_err(S::Error::custom)?;
            seq.serialize_element(&ChunkBytes(std::borrow::Cow::Owned(bytes)))?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for NodeChunks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let encoded: Vec<ChunkBytes<'de>> = Deserialize::deserialize(deserializer)?;
        decode_chunks(&encoded).map_err(serde::de::Error::custom)
    }
}

/// Decodes `encoded` on as many threads as there are cores (at most one per chunk; one when
/// they are small), keeping the chunks' order.
fn decode_chunks(encoded: &[ChunkBytes<'_>]) -> Result<NodeChunks, postcard::Error> {
    let decode = |bytes: &ChunkBytes<'_>| postcard::from_bytes::<Vec<(Slot, NodeImage)>>(&bytes.0);
    let total: usize = encoded.iter().map(|c| c.0.len()).sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(encoded.len());
    if threads <= 1 || total < PARALLEL_BYTES {
        return encoded
            .iter()
            .map(decode)
            .collect::<Result<_, _>>()
            .map(NodeChunks);
    }
    // Thread t decodes chunks t, t + threads, t + 2 × threads…: neighbours are alike in size.
    let mut decoded: Vec<Option<Vec<(Slot, NodeImage)>>> = Vec::new();
    decoded.resize_with(encoded.len(), || None);
    std::thread::scope(|scope| -> Result<(), postcard::Error> {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (t..encoded.len())
                        .step_by(threads)
                        .map(|i| decode(&encoded[i]).map(|chunk| (i, chunk)))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        for worker in workers {
            // A thread fails only by panicking; the panic is passed on.
            let chunks = worker
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))?;
            for (i, chunk) in chunks {
                decoded[i] = Some(chunk);
            }
        }
        Ok(())
    })?;
    Ok(NodeChunks(decoded.into_iter().flatten().collect()))
}

/// One chunk's bytes, borrowed from the snapshot when reading (postcard hands out slices of its
/// input), so that the 100 MB of a big world's nodes are not copied before they are decoded.
struct ChunkBytes<'a>(std::borrow::Cow<'a, [u8]>);

impl Serialize for ChunkBytes<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for ChunkBytes<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ChunkBytes<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a chunk of encoded nodes")
            }
            fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(ChunkBytes(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(ChunkBytes(std::borrow::Cow::Owned(v.to_vec())))
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Self::Value, E> {
                Ok(ChunkBytes(std::borrow::Cow::Owned(v)))
            }
        }
        deserializer.deserialize_bytes(Visitor)
    }
}

/// An event whose ids are written as slots of the same history where they have one (they
/// nearly always do), which keeps a snapshot small. The event's own id is its node's.
#[derive(Debug, Serialize, Deserialize)]
struct EventImage {
    description: String,
    time: (i64, u32),
    location: String,
    /// Slots of the causes, in the event's order, repeats kept.
    causes: Vec<Slot>,
    fixed_point: bool,
    status: u8,
    supersedes: Option<IdRef>,
    superseded_by: Option<IdRef>,
    lineage: IdRef,
    author: Option<Traveller>,
}

/// An event id, by slot when the history has one for it.
#[derive(Debug, Serialize, Deserialize)]
enum IdRef {
    Slot(Slot),
    Id(EventId),
}

/// What a set gained and lost with respect to the base.
#[derive(Debug, Serialize, Deserialize)]
struct SetDiff<T> {
    removed: Vec<T>,
    added: Vec<T>,
}

/// What a map gained, changed and lost with respect to the base.
#[derive(Debug, Serialize, Deserialize)]
struct MapDiff<K, V> {
    removed: Vec<K>,
    set: Vec<(K, V)>,
}

#[cfg(test)]
impl HistoryImage {
    /// Overwrites the announced length, as a forger would.
    pub(crate) fn forge_len(&mut self, len: u32) {
        self.len = len;
    }
}

/// Why a stored history cannot be read back.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ImageError(String);

fn status_code(s: EventStatus) -> u8 {
    match s {
        EventStatus::OnSchedule => 0,
        EventStatus::Manipulated => 1,
        EventStatus::Superseded => 2,
        EventStatus::Reverted => 3,
    }
}

fn status_from(code: u8) -> Result<EventStatus, ImageError> {
    Ok(match code {
        0 => EventStatus::OnSchedule,
        1 => EventStatus::Manipulated,
        2 => EventStatus::Superseded,
        3 => EventStatus::Reverted,
        other => return Err(ImageError(format!("unknown event status {other}"))),
    })
}

fn instant_from((secs, nanos): (i64, u32)) -> Result<Instant, ImageError> {
    Instant::from_timestamp(secs, nanos)
        .ok_or_else(|| ImageError(format!("instant {secs}.{nanos} is out of range")))
}

/// Whether two nodes say the same (their effects are derived, so not compared).
fn same_node(a: &Node, b: &Node) -> bool {
    a.current == b.current
        && a.id == b.id
        && *a.causes == *b.causes
        && match (&a.event, &b.event) {
            (None, None) => true,
            (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
            _ => false,
        }
}

fn set_diff<T: Ord + Clone>(base: Option<&OrdSet<T>>, now: &OrdSet<T>) -> SetDiff<T> {
    let Some(base) = base else {
        return SetDiff {
            removed: Vec::new(),
            added: now.iter().cloned().collect(),
        };
    };
    let mut diff = SetDiff {
        removed: Vec::new(),
        added: Vec::new(),
    };
    // Skips the subtrees both share, so an unchanged branch costs next to nothing.
    for item in base.diff(now) {
        match item {
            imbl::ordset::DiffItem::Add(x) => diff.added.push(x.clone()),
            imbl::ordset::DiffItem::Remove(x) => diff.removed.push(x.clone()),
        }
    }
    diff
}

fn apply_set_diff<T: Ord + Clone>(set: &mut OrdSet<T>, diff: SetDiff<T>) {
    for x in &diff.removed {
        set.remove(x);
    }
    for x in diff.added {
        set.insert(x);
    }
}

impl History {
    /// This history as a snapshot stores it: its differences from `base` (its parent as it
    /// stands now), or all of it without one.
    pub(crate) fn image(&self, base: Option<&History>) -> HistoryImage {
        let base_nodes = base.map(|b| &b.nodes);
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(slot, node)| {
                base_nodes
                    .and_then(|b| b.get(*slot))
                    .is_none_or(|b| !same_node(b, node))
            })
            .map(|(slot, node)| (slot as Slot, self.node_image(node)))
            .collect();
        let nodes = NodeChunks::new(nodes);
        let loops = match base {
            Some(b) => {
                let mut diff = MapDiff {
                    removed: Vec::new(),
                    set: Vec::new(),
                };
                for item in b.loops.diff(&self.loops) {
                    match item {
                        imbl::ordmap::DiffItem::Add(k, v)
                        | imbl::ordmap::DiffItem::Update { new: (k, v), .. } => {
                            diff.set.push((*k, v.to_vec()));
                        }
                        imbl::ordmap::DiffItem::Remove(k, _) => diff.removed.push(*k),
                    }
                }
                diff
            }
            None => MapDiff {
                removed: Vec::new(),
                set: self.loops.iter().map(|(k, v)| (*k, v.to_vec())).collect(),
            },
        };
        let loop_of = MapDiff {
            removed: base
                .map(|b| {
                    b.loop_of
                        .keys()
                        .filter(|k| !self.loop_of.contains_key(*k))
                        .copied()
                        .collect()
                })
                .unwrap_or_default(),
            set: self
                .loop_of
                .iter()
                .filter(|(k, v)| base.and_then(|b| b.loop_of.get(*k)) != Some(*v))
                .map(|(k, v)| (*k, *v))
                .collect(),
        };
        HistoryImage {
            len: self.nodes.len() as u32,
            nodes,
            violations: set_diff(base.map(|b| &b.violations), &self.violations),
            back_edges: set_diff(base.map(|b| &b.back_edges), &self.back_edges),
            loops,
            loop_of,
        }
    }

    fn id_ref(&self, id: &EventId) -> IdRef {
        match self.slot(id) {
            Some(slot) => IdRef::Slot(slot),
            None => IdRef::Id(id.clone()),
        }
    }

    fn node_image(&self, node: &Node) -> NodeImage {
        let event = node.event.as_ref().map(|e| {
            // Destructured in full so that a new field of `Event` cannot be forgotten here
            // (and the snapshot format version bumped with it).
            let Event {
                id: _,
                description,
                time,
                location,
                causes,
                fixed_point,
                status,
                supersedes,
                superseded_by,
                lineage,
                author,
            } = &**e;
            EventImage {
                description: description.clone(),
                time: (time.timestamp(), time.timestamp_subsec_nanos()),
                location: location.clone(),
                // Every cause is interned when its event is put; a missing one would be a bug,
                // and is written as slot MAX, which reading refuses.
                causes: causes
                    .iter()
                    .map(|c| self.slot(c).unwrap_or(Slot::MAX))
                    .collect(),
                fixed_point: *fixed_point,
                status: status_code(*status),
                supersedes: supersedes.as_ref().map(|id| self.id_ref(id)),
                superseded_by: superseded_by.as_ref().map(|id| self.id_ref(id)),
                lineage: self.id_ref(lineage),
                author: author.clone(),
            }
        });
        NodeImage {
            id: node.id.clone(),
            event,
            current: node.current,
        }
    }

    /// Reads a history back from `image`, on top of the same `base` it was written against
    /// (already read back), sharing structure with it.
    pub(crate) fn from_image(
        image: HistoryImage,
        base: Option<&History>,
    ) -> Result<History, ImageError> {
        let Some(base) = base else {
            return Self::from_full_image(image);
        };
        let len = image.len as usize;
        let base_len = base.nodes.len();
        // Every slot past the base's is stored, so a length the stored nodes cannot fill is
        // forged or damaged: refused before anything is sized by it.
        if len > base_len.saturating_add(image.nodes.len()) {
            return Err(ImageError(format!(
                "a length of {len} slots where the base has {base_len} and {} are stored",
                image.nodes.len()
            )));
        }
        let mut h = base.clone();
        let mut changed = vec![false; len.max(base_len)];
        for (slot, _) in image.nodes.iter() {
            let s = *slot as usize;
            if s >= len {
                return Err(ImageError(format!("slot {s} is beyond the length {len}")));
            }
            changed[s] = true;
        }
        changed
            .iter_mut()
            .take(base_len)
            .skip(len)
            .for_each(|c| *c = true);
        // 1. Take the base's nodes that change or go out of the derived indexes.
        for s in (0..base_len).filter(|&s| changed[s]) {
            let slot = s as Slot;
            let node = h.node(slot).clone();
            if h.slots.get(&node.id) == Some(&slot) {
                h.slots.remove(&node.id);
            }
            if node.current {
                h.drop_derived(slot, &node);
            } else if node.event.is_some() {
                h.past.remove(&(node.time, slot));
            }
        }
        if len < base_len {
            h.nodes.truncate(len);
        }
        // 2. Put the stored nodes in place, each keeping the effects it has from unchanged
        //    nodes. Ids come first: causes may name slots stored further on.
        let mut placed = Vec::with_capacity(image.nodes.len());
        for (slot, node) in image.nodes.into_nodes() {
            let s = slot as usize;
            let effects = if s < h.nodes.len() {
                h.nodes[s].effects.clone()
            } else {
                OrdSet::new()
            };
            let fresh = Node {
                id: node.id,
                event: None,
                time: Instant::MIN_UTC,
                current: node.current,
                causes: Arc::from([]),
                effects,
            };
            if s < h.nodes.len() {
                h.nodes.set(s, fresh);
            } else if s == h.nodes.len() {
                h.nodes.push_back(fresh);
            } else {
                return Err(ImageError(format!(
                    "slot {s} is stored before slot {}",
                    h.nodes.len()
                )));
            }
            h.slots.insert(h.nodes[s].id.clone(), slot);
            placed.push((slot, node.event));
        }
        if h.nodes.len() != len {
            return Err(ImageError(format!(
                "{} slots stored where {len} were announced",
                h.nodes.len()
            )));
        }
        // 3. Events, now that every slot has its id, and the derived indexes.
        for (slot, event) in placed {
            let Some(event) = event else {
                if h.node(slot).current {
                    return Err(ImageError(format!(
                        "slot {slot} is current without an event"
                    )));
                }
                continue;
            };
            let causes: Vec<Slot> = super::dedup_slots(event.causes.iter().copied());
            let event = h.event_from(slot, event)?;
            if h.node(slot).current != event.status.is_current() {
                return Err(ImageError(format!(
                    "slot {slot}: current flag disagrees with its status"
                )));
            }
            let n = h.node_mut(slot);
            n.time = event.time;
            n.causes = Arc::from(causes);
            n.event = Some(Arc::new(event));
            if n.current {
                h.add_derived(slot);
            } else {
                let key = (n.time, slot);
                h.past.insert(key);
            }
        }
        apply_set_diff(&mut h.violations, image.violations);
        apply_set_diff(&mut h.back_edges, image.back_edges);
        for k in &image.loops.removed {
            h.loops.remove(k);
        }
        for (k, v) in image.loops.set {
            h.loops.insert(k, Arc::from(v));
        }
        for k in &image.loop_of.removed {
            h.loop_of.remove(k);
        }
        for (k, v) in image.loop_of.set {
            h.loop_of.insert(k, v);
        }
        indexes_within(&h, len)?;
        Ok(h)
    }

    /// Reads back a history written without a base (a timeline of its own, the big one as a
    /// rule). Start-up waits for this, so it avoids the general path's per-node updates of
    /// persistent structures: nodes and their effects are gathered in plain vectors and each
    /// index is built once, the id map and the time and location indexes on threads of their
    /// own.
    fn from_full_image(image: HistoryImage) -> Result<History, ImageError> {
        let started = std::time::Instant::now();
        let len = image.len as usize;
        if image.nodes.len() != len {
            return Err(ImageError(format!(
                "{} slots stored where {len} were announced",
                image.nodes.len()
            )));
        }
        // Ids first (shared text: this is a million reference counts), so that each event is
        // built as it is taken out of the image, causes named further on included.
        let mut ids: Vec<EventId> = Vec::with_capacity(len);
        for (i, (slot, node)) in image.nodes.iter().enumerate() {
            if *slot as usize != i {
                return Err(ImageError(format!("slot {slot} is stored in place {i}")));
            }
            ids.push(node.id.clone());
        }
        let mut nodes: Vec<Node> = Vec::with_capacity(len);
        let stored = image.nodes.into_nodes();
        let mut h = History::default();
        let mut timings = [std::time::Duration::ZERO; 3];
        std::thread::scope(|scope| -> Result<(), ImageError> {
            // The id map needs only the ids: it is built while the events are.
            let ids = &ids;
            let slots = scope.spawn(move || {
                let mut slots = HashMap::new();
                for (i, id) in ids.iter().enumerate() {
                    slots.insert(id.clone(), i as Slot);
                }
                slots
            });
            let gathered = build_events(ids, &mut nodes, stored);
            timings[0] = started.elapsed();
            let (effects, by_time, by_location, mut past) = match gathered {
                Ok(built) => built,
                Err(e) => {
                    // The id map is dropped with the error.
                    let _ = slots.join();
                    return Err(e);
                }
            };
            let indexes = scope.spawn(move || {
                let mut by_time = by_time;
                by_time.sort_unstable();
                let by_time: OrdSet<SlotKey> = by_time.into_iter().collect();
                let by_location: HashMap<String, OrdSet<SlotKey>> = by_location
                    .into_iter()
                    .map(|(loc, mut keys)| {
                        keys.sort_unstable();
                        (loc, keys.into_iter().collect::<OrdSet<SlotKey>>())
                    })
                    .collect();
                (by_time, by_location)
            });
            // Slots only ever grow, so each list of effects is sorted already.
            let vector: Vector<Node> = nodes
                .into_iter()
                .zip(effects)
                .map(|(mut n, effects)| {
                    if !effects.is_empty() {
                        n.effects = effects.into_iter().collect();
                    }
                    n
                })
                .collect();
            h.nodes = vector;
            timings[1] = started.elapsed();
            // A thread fails only by panicking; the panic is passed on.
            h.slots = slots
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            let (by_time, by_location) = indexes
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            h.by_time = by_time;
            h.by_location = by_location;
            past.sort_unstable();
            h.past = past.into_iter().collect();
            timings[2] = started.elapsed();
            Ok(())
        })?;
        h.violations = image.violations.added.into_iter().collect();
        h.back_edges = image.back_edges.added.into_iter().collect();
        h.loops = image
            .loops
            .set
            .into_iter()
            .map(|(k, v)| (k, Arc::from(v)))
            .collect();
        h.loop_of = image.loop_of.set.into_iter().collect();
        indexes_within(&h, len)?;
        tracing::debug!(
            slots = len,
            events_ms = timings[0].as_millis() as u64,
            vector_ms = timings[1].as_millis() as u64,
            indexes_ms = timings[2].as_millis() as u64,
            total_ms = started.elapsed().as_millis() as u64,
            "history read back"
        );
        Ok(h)
    }

    fn id_from(&self, r: IdRef) -> Result<EventId, ImageError> {
        match r {
            IdRef::Id(id) => Ok(id),
            IdRef::Slot(s) if (s as usize) < self.nodes.len() => Ok(self.node(s).id.clone()),
            IdRef::Slot(s) => Err(ImageError(format!("event slot {s} does not exist"))),
        }
    }

    fn event_from(&self, slot: Slot, e: EventImage) -> Result<Event, ImageError> {
        let causes = e
            .causes
            .iter()
            .map(|&c| self.id_from(IdRef::Slot(c)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Event {
            id: self.node(slot).id.clone(),
            description: e.description,
            time: instant_from(e.time)?,
            location: e.location,
            causes,
            fixed_point: e.fixed_point,
            status: status_from(e.status)?,
            supersedes: e.supersedes.map(|r| self.id_from(r)).transpose()?,
            superseded_by: e.superseded_by.map(|r| self.id_from(r)).transpose()?,
            lineage: self.id_from(e.lineage)?,
            author: e.author,
        })
    }

    /// Takes a current node out of the indexes derived from it alone.
    fn drop_derived(&mut self, slot: Slot, node: &Node) {
        let key = (node.time, slot);
        self.by_time.remove(&key);
        if let Some(loc) = node.event.as_ref().map(|e| location_key(&e.location))
            && let Some(set) = self.by_location.get_mut(&loc)
        {
            set.remove(&key);
            if set.is_empty() {
                self.by_location.remove(&loc);
            }
        }
        for &cause in node.causes.iter() {
            if (cause as usize) < self.nodes.len() {
                self.node_mut(cause).effects.remove(&slot);
            }
        }
    }

    /// Puts a current node into the indexes derived from it alone.
    fn add_derived(&mut self, slot: Slot) {
        let (key, location, causes) = {
            let n = self.node(slot);
            let location = n.event.as_ref().map(|e| location_key(&e.location));
            ((n.time, slot), location, Arc::clone(&n.causes))
        };
        self.by_time.insert(key);
        if let Some(loc) = location {
            self.by_location.entry(loc).or_default().insert(key);
        }
        for &cause in causes.iter() {
            self.node_mut(cause).effects.insert(slot);
        }
    }
}

/// What [`History::from_full_image`] gathers while building events: each slot's effects, and
/// the keys of the time index and of each location's.
type Gathered = (
    Vec<Vec<Slot>>,
    Vec<SlotKey>,
    Vec<(String, Vec<SlotKey>)>,
    Vec<SlotKey>,
);

/// Builds each stored node with its event (ids by slot resolved against `ids`, every slot's id)
/// into `nodes`, and gathers what the derived indexes are built from (the past versions' keys
/// last).
fn build_events(
    ids: &[EventId],
    nodes: &mut Vec<Node>,
    stored: impl Iterator<Item = (Slot, NodeImage)>,
) -> Result<Gathered, ImageError> {
    let len = ids.len();
    let id_of = |r: IdRef| -> Result<EventId, ImageError> {
        match r {
            IdRef::Id(id) => Ok(id),
            IdRef::Slot(s) => ids
                .get(s as usize)
                .cloned()
                .ok_or_else(|| ImageError(format!("event slot {s} does not exist"))),
        }
    };
    let mut effects: Vec<Vec<Slot>> = vec![Vec::new(); len];
    let mut by_time: Vec<SlotKey> = Vec::with_capacity(len);
    let mut past: Vec<SlotKey> = Vec::new();
    // Location -> its key's list; a few thousand locations for a million events.
    let mut keys_of: std::collections::HashMap<String, usize> = Default::default();
    let mut by_location: Vec<(String, Vec<SlotKey>)> = Vec::new();
    let mut list_of_key: std::collections::HashMap<String, usize> = Default::default();
    for (i, (_, stored)) in stored.enumerate() {
        let slot = i as Slot;
        let mut node = Node {
            id: stored.id,
            event: None,
            time: Instant::MIN_UTC,
            current: stored.current,
            causes: Arc::from([]),
            effects: OrdSet::new(),
        };
        let Some(e) = stored.event else {
            if node.current {
                return Err(ImageError(format!(
                    "slot {slot} is current without an event"
                )));
            }
            nodes.push(node);
            continue;
        };
        let causes = super::dedup_slots(e.causes.iter().copied());
        let cause_ids = e
            .causes
            .iter()
            .map(|&c| id_of(IdRef::Slot(c)))
            .collect::<Result<Vec<_>, _>>()?;
        let event = Event {
            id: node.id.clone(),
            description: e.description,
            time: instant_from(e.time)?,
            location: e.location,
            causes: cause_ids,
            fixed_point: e.fixed_point,
            status: status_from(e.status)?,
            supersedes: e.supersedes.map(id_of).transpose()?,
            superseded_by: e.superseded_by.map(id_of).transpose()?,
            lineage: id_of(e.lineage)?,
            author: e.author,
        };
        if node.current != event.status.is_current() {
            return Err(ImageError(format!(
                "slot {slot}: current flag disagrees with its status"
            )));
        }
        if node.current {
            let key = (event.time, slot);
            by_time.push(key);
            let list = match keys_of.get(event.location.as_str()) {
                Some(&list) => list,
                None => {
                    let loc = location_key(&event.location);
                    let list = *list_of_key.entry(loc.clone()).or_insert_with(|| {
                        by_location.push((loc, Vec::new()));
                        by_location.len() - 1
                    });
                    keys_of.insert(event.location.clone(), list);
                    list
                }
            };
            by_location[list].1.push(key);
            for &c in &causes {
                effects[c as usize].push(slot);
            }
        }
        if !node.current {
            past.push((event.time, slot));
        }
        node.time = event.time;
        node.causes = Arc::from(causes);
        node.event = Some(Arc::new(event));
        nodes.push(node);
    }
    Ok((effects, by_time, by_location, past))
}

/// The first difference between two histories, slot by slot and index by index; `Ok` when
/// they are the same, so every read answers alike (for tests and checks).
pub(crate) fn same_history(a: &History, b: &History) -> Result<(), String> {
    fn eq<T: PartialEq + std::fmt::Debug>(what: &str, x: T, y: T) -> Result<(), String> {
        if x == y {
            Ok(())
        } else {
            Err(format!("{what} differ: {x:?} vs {y:?}"))
        }
    }
    eq("lengths", a.nodes.len(), b.nodes.len())?;
    for (slot, (x, y)) in a.nodes.iter().zip(b.nodes.iter()).enumerate() {
        if !same_node(x, y) || x.time != y.time || x.effects != y.effects {
            return Err(format!("slot {slot} differs: {x:?} vs {y:?}"));
        }
    }
    eq("slots", &a.slots, &b.slots)?;
    eq("time index", &a.by_time, &b.by_time)?;
    eq("location index", &a.by_location, &b.by_location)?;
    eq("past versions' index", &a.past, &b.past)?;
    eq("violations", &a.violations, &b.violations)?;
    eq("back edges", &a.back_edges, &b.back_edges)?;
    eq("loops", &a.loops, &b.loops)?;
    eq("loop members", &a.loop_of, &b.loop_of)?;
    Ok(())
}

/// Refuses a decoded history whose indexes name a slot past its `len` slots.
fn indexes_within(h: &History, len: usize) -> Result<(), ImageError> {
    let out_of_range = |s: &Slot| *s as usize >= len;
    if h.violations
        .iter()
        .any(|(a, b)| out_of_range(a) || out_of_range(b))
        || h.back_edges
            .iter()
            .any(|(a, b)| out_of_range(a) || out_of_range(b))
        || h.loops.values().any(|m| m.iter().any(out_of_range))
    {
        return Err(ImageError(
            "an index names a slot that does not exist".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: u32) -> Vec<(Slot, NodeImage)> {
        (0..n)
            .map(|i| {
                let id = EventId::from_ulid(ulid::Ulid::from(u128::from(i) + 1));
                (
                    i,
                    NodeImage {
                        id,
                        event: None,
                        current: false,
                    },
                )
            })
            .collect()
    }

    fn ids(chunks: &NodeChunks) -> Vec<(Slot, String)> {
        chunks.iter().map(|(s, n)| (*s, n.id.to_string())).collect()
    }

    #[test]
    fn a_big_history_is_decoded_on_several_threads_in_slot_order() {
        let written = NodeChunks::new(nodes(20_000));
        assert_eq!(written.0.len(), CHUNKS);
        let bytes = postcard::to_allocvec(&written).expect("encodes");
        // Big enough for the threads: this is the path a big world's start takes.
        assert!(bytes.len() > PARALLEL_BYTES, "{} bytes", bytes.len());
        let read: NodeChunks = postcard::from_bytes(&bytes).expect("decodes");
        assert_eq!(read.0.len(), CHUNKS);
        assert_eq!(ids(&read), ids(&written));
    }

    #[test]
    fn small_and_empty_histories_read_back_alike() {
        for n in [0, 1, 15, 16, 17, 100] {
            let written = NodeChunks::new(nodes(n));
            assert!(written.0.len() <= CHUNKS && written.0.iter().all(|c| !c.is_empty()));
            let bytes = postcard::to_allocvec(&written).expect("encodes");
            let read: NodeChunks = postcard::from_bytes(&bytes).expect("decodes");
            assert_eq!(ids(&read), ids(&written), "{n} nodes");
        }
    }

    #[test]
    fn a_cut_chunk_is_an_error_not_a_panic() {
        let mut encoded: Vec<ChunkBytes> = NodeChunks::new(nodes(20_000))
            .0
            .iter()
            .map(|c| {
                ChunkBytes(std::borrow::Cow::Owned(
                    postcard::to_allocvec(c).expect("encodes"),
                ))
            })
            .collect();
        // The sixth chunk loses its last node's last bytes; the snapshot around it is whole.
        let sixth = encoded[5].0.to_vec();
        encoded[5] = ChunkBytes(std::borrow::Cow::Owned(sixth[..sixth.len() - 3].to_vec()));
        let bytes = postcard::to_allocvec(&encoded).expect("encodes");
        assert!(bytes.len() > PARALLEL_BYTES);
        assert!(postcard::from_bytes::<NodeChunks>(&bytes).is_err());
    }
}
