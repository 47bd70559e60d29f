//! Snapshots: the folded state written beside the log, so a start reads the newest snapshot and
//! replays only the records after it instead of the whole log.
//!
//! A snapshot is an optimisation only. It is trusted when its magic, its format version, its
//! length, its CRC-32 and its seal all check out and it decodes; anything else (another
//! version's layout, a flipped byte, a write cut short, bytes sealed with another log key) is
//! logged and skipped, and the start replays the log. The CRC-32 catches accidents cheaply;
//! the seal, an HMAC with the log key (see [`crate::store::chain`]), proves the snapshot was
//! written by a process holding that key, so nobody who can only write the database can
//! substitute a world of their own.
//!
//! Layout (little-endian): `CHRSNAP\0`, format (u32), log position folded up to (u64), body
//! length (u64), CRC-32 of the format, position, length, link and body (u32), the link of the
//! last record folded in (32 bytes, zero before the first record), then the body: postcard of
//! [`WorldImage`]; last, the seal: HMAC of everything before it (32 bytes). The full chunks of
//! journeys, which never change once full, are not in the body: they are parts the store keeps
//! once for every snapshot naming them (see [`crate::store::SnapshotPart`]); the body names
//! each by its SHA-256, so the seal covers them too. Events and the graph of each timeline, the bulk of a big world,
//! are in a compact binary image (see `model::history` for how branches keep sharing their
//! parent's structure); the rest (timelines' attributes, items, journeys, automation…) is JSON
//! inside it, written by the same serde impls as the log, so it follows the log's own format.

use std::collections::HashSet;
use std::sync::Arc;

use imbl::{HashMap, OrdMap, Vector};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::idempotency::{IdempotencyKey, Keys, Remembered};
use super::{TimelineState, World};
use crate::automation::{Job, LogRecord, ScriptRecord};
use crate::model::{
    AnchorRecord, EventId, History, HistoryImage, Instant, Item, Journey, Position, Timeline,
    TimelineId, Traveller,
};
use crate::store::{Link, LogKey, PartId, SnapshotPart};

/// The layout version. Change it whenever the layout, or what folding the log means, changes:
/// a snapshot of another format is ignored and the log replayed in full.
/// Format 2: a history's nodes are written in chunks that are decoded on every core.
/// Format 3: the head link of the log's chain, and the seal.
/// Format 4: each timeline's base (its parent's history when it was created) and the merges.
/// Format 5: a position says whether the traveller's clock is paused.
/// Format 6 (data): each timeline's data entries (written against its parent's, like events)
/// and the travellers' read-staleness settings, in the records' JSON (`timeline_data`,
/// `read_staleness`).
/// Format 6 (review): merges carry their resolutions (manual review), and the isolations with
/// each timeline's isolated lineages.
/// Format 7: access-control lists and restrictions (`acls`, `restrictions`). An older version
/// must not read these snapshots: it would drop them and serve hidden timelines.
/// Format 8: the journeys, which only grow, in JSON chunks of [`JOURNEY_CHUNK`] beside the
/// records, so a process writing snapshots encodes only the chunks that changed (see [`Kept`]).
/// Format 9: full chunks of journeys are parts stored once, named by their SHA-256, so a
/// snapshot writes only what changed since the one before (a server taking writes at full
/// rate wrote its whole history of journeys every 20,000 records).
pub const FORMAT: u32 = 9;

/// Journeys per chunk of a snapshot.
const JOURNEY_CHUNK: usize = 4096;

const MAGIC: &[u8; 8] = b"CHRSNAP\0";
/// Magic, format, position, body length, CRC-32, head link.
const HEADER_LEN: usize = 8 + 4 + 8 + 8 + 4 + 32;
/// Where the head link is.
const LINK_AT: usize = 32;
/// The seal's length, after the body.
const SEAL_LEN: usize = 32;

/// Why a snapshot is not used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SnapshotError {
    /// Not a snapshot at all, or cut short.
    #[error("not a snapshot (bad magic or too short)")]
    NotASnapshot,
    /// Written by a version with another layout.
    #[error("format {found}, this version reads format {FORMAT}")]
    OtherFormat {
        /// The format it says it has.
        found: u32,
    },
    /// Its length or checksum does not match: damaged or incomplete.
    #[error("damaged: {0}")]
    Damaged(String),
    /// Its seal does not match: changed after it was written, or written with another log key.
    #[error("its seal does not match this log key: written with another key, or changed since")]
    Unsealed,
    /// The checksum matched but the content does not make a world.
    #[error("undecodable: {0}")]
    Undecodable(String),
}

/// The header of a snapshot, readable without decoding the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The layout version.
    pub format: u32,
    /// The last log record folded in.
    pub seq: u64,
}

/// Reads and checks the header of `bytes` (magic, format); the body is not checked.
pub fn header(bytes: &[u8]) -> Result<Header, SnapshotError> {
    if bytes.len() < HEADER_LEN + SEAL_LEN || &bytes[..8] != MAGIC {
        return Err(SnapshotError::NotASnapshot);
    }
    let format = u32::from_le_bytes(word(bytes, 8));
    let seq = u64::from_le_bytes(word(bytes, 12));
    Ok(Header { format, seq })
}

fn word<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

/// A snapshot as written: its bytes and the parts they name.
pub struct Encoded {
    /// The header, body and seal.
    pub bytes: Vec<u8>,
    kept: Kept,
}

impl Encoded {
    /// The parts the bytes name, to be stored with them.
    pub fn parts(&self) -> Vec<SnapshotPart<'_>> {
        self.kept.parts()
    }
}

/// The snapshot of `world`, sealed with `key`.
pub fn encode(world: &World, key: &LogKey) -> Encoded {
    let mut kept = Kept::default();
    let bytes = encode_kept(world, key, &mut kept);
    Encoded { bytes, kept }
}

/// [`encode`], reusing what `kept` holds of the snapshot this process wrote before, and keeping
/// what this one wrote for the next. The parts the bytes name are [`Kept::parts`].
pub fn encode_kept(world: &World, key: &LogKey, kept: &mut Kept) -> Vec<u8> {
    kept.follow(world);
    let body = postcard::to_allocvec(&WorldImage::of(world, kept))
        // Serializing plain structs into a Vec cannot fail; an empty body is refused on reading.
        .unwrap_or_default();
    frame(world.seq, world.link.unwrap_or_default(), &body, key)
}

/// What the last snapshot written by this process held of the journeys: the same journeys
/// (`Arc`s, in the same order) still have the same JSON, and journeys are only ever added, so
/// a busy server encodes the chunk of the newest ones rather than every journey ever made,
/// each time. From the first journey that is not the one kept, its chunk and the rest are
/// encoded again.
#[derive(Default)]
pub struct Kept {
    journeys: Vec<Arc<Journey>>,
    /// JSON arrays of [`JOURNEY_CHUNK`] journeys each (the last may hold fewer).
    chunks: Vec<String>,
    /// The SHA-256 of each full chunk, in order: the ids of the parts they are stored as.
    ids: Vec<PartId>,
}

impl Kept {
    /// Brings the chunks up to `world`'s journeys.
    fn follow(&mut self, world: &World) {
        let same = self
            .journeys
            .iter()
            .zip(world.journeys.values())
            .take_while(|(kept, now)| Arc::ptr_eq(kept, now))
            .count();
        let whole = if same == world.journeys.len() && same == self.journeys.len() {
            self.chunks.len()
        } else {
            same / JOURNEY_CHUNK
        };
        self.chunks.truncate(whole);
        self.ids.truncate(whole);
        self.journeys.truncate(whole * JOURNEY_CHUNK);
        let rest: Vec<&Arc<Journey>> = world.journeys.values().skip(self.journeys.len()).collect();
        for chunk in rest.chunks(JOURNEY_CHUNK) {
            let journeys: Vec<&Journey> = chunk.iter().map(|j| &***j).collect();
            // Plain structs into a String: cannot fail.
            self.chunks
                .push(serde_json::to_string(&journeys).unwrap_or_default());
            self.journeys.extend(chunk.iter().map(|j| Arc::clone(j)));
        }
        // Hashed once, when the chunk is first full.
        while self.ids.len() < self.full() {
            let id = Sha256::digest(self.chunks[self.ids.len()].as_bytes()).into();
            self.ids.push(id);
        }
    }

    /// How many of the chunks are full, and so stored as parts.
    fn full(&self) -> usize {
        self.journeys.len() / JOURNEY_CHUNK
    }

    /// The chunk of journeys that is not yet full, written in the snapshot's body (`[]` when
    /// there is none).
    fn open_chunk(&self) -> &str {
        self.chunks.get(self.full()).map_or("[]", String::as_str)
    }

    /// The full chunks, as the parts the snapshot last encoded names.
    pub fn parts(&self) -> Vec<SnapshotPart<'_>> {
        self.ids
            .iter()
            .zip(&self.chunks)
            .map(|(id, chunk)| SnapshotPart {
                id: *id,
                bytes: chunk.as_bytes(),
            })
            .collect()
    }
}

/// `body` behind a header that says it folds the log up to `seq` (whose record's link is
/// `link`), with its checksum, sealed with `key`.
fn frame(seq: u64, link: Link, body: &[u8], key: &LogKey) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len() + SEAL_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    let crc = checksum(&out[8..], &link, body);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&link);
    out.extend_from_slice(body);
    let seal = key.seal(&out);
    out.extend_from_slice(&seal);
    out
}

fn checksum(header: &[u8], link: &[u8], body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(header);
    hasher.update(link);
    hasher.update(body);
    hasher.finalize()
}

/// Whether `bytes` end in a seal `key` made over the rest (nothing else is checked).
pub fn sealed_by(bytes: &[u8], key: &LogKey) -> bool {
    let Some(split) = bytes.len().checked_sub(SEAL_LEN) else {
        return false;
    };
    let (sealed, seal) = bytes.split_at(split);
    Link::try_from(seal).is_ok_and(|seal| key.opens(sealed, &seal))
}

/// The world a snapshot holds, after checking it is whole, of this format and sealed by `key`,
/// with the `parts` it names (each checked against the id the sealed bytes name it by).
pub fn decode(
    bytes: &[u8],
    parts: &[SnapshotPart<'_>],
    key: &LogKey,
) -> Result<World, SnapshotError> {
    let (seq, link, image) = parse(bytes, key)?;
    let named = named_parts(&image, |id| {
        parts.iter().find(|p| p.id == *id).map(|p| p.bytes)
    })?;
    build(seq, link, image, &named)
}

/// [`decode`], letting go of the bytes as soon as they are parsed: a big world's start-up then
/// reuses their memory for the world instead of asking the system for more. `parts` as the
/// store hands them back ([`crate::store::Store::read_snapshot_parts`]).
pub fn decode_owned(
    bytes: Vec<u8>,
    parts: &[(PartId, Vec<u8>)],
    key: &LogKey,
) -> Result<World, SnapshotError> {
    let (seq, link, image) = parse(&bytes, key)?;
    drop(bytes);
    let named = named_parts(&image, |id| {
        parts
            .iter()
            .find(|(held, _)| held == id)
            .map(|(_, bytes)| bytes.as_slice())
    })?;
    build(seq, link, image, &named)
}

/// The text of each part `image` names, in order, found by `find` and checked against its id.
fn named_parts<'p>(
    image: &WorldImage,
    find: impl Fn(&PartId) -> Option<&'p [u8]>,
) -> Result<Vec<&'p str>, SnapshotError> {
    image
        .journey_parts
        .iter()
        .enumerate()
        .map(|(n, id)| {
            let bytes = find(id).ok_or_else(|| {
                SnapshotError::Damaged(format!("part {n} (journeys) is missing from the store"))
            })?;
            let digest: PartId = Sha256::digest(bytes).into();
            if digest != *id {
                return Err(SnapshotError::Damaged(format!(
                    "part {n} (journeys) does not match the id the snapshot names"
                )));
            }
            std::str::from_utf8(bytes)
                .map_err(|e| SnapshotError::Undecodable(format!("part {n} (journeys): {e}")))
        })
        .collect()
}

/// Checks the header, checksum and seal and parses the body, which is not yet a world.
fn parse(
    bytes: &[u8],
    key: &LogKey,
) -> Result<(u64, Option<Link>, WorldImage<'static>), SnapshotError> {
    let header = header(bytes)?;
    if header.format != FORMAT {
        return Err(SnapshotError::OtherFormat {
            found: header.format,
        });
    }
    let len = u64::from_le_bytes(word(bytes, 20));
    let body = &bytes[HEADER_LEN..bytes.len() - SEAL_LEN];
    if body.len() as u64 != len {
        return Err(SnapshotError::Damaged(format!(
            "{} bytes of body where {len} were written",
            body.len()
        )));
    }
    let started = std::time::Instant::now();
    let stored = u32::from_le_bytes(word(bytes, 28));
    let link: Link = word(bytes, LINK_AT);
    if checksum(&bytes[8..28], &link, body) != stored {
        return Err(SnapshotError::Damaged("checksum mismatch".into()));
    }
    if !sealed_by(bytes, key) {
        return Err(SnapshotError::Unsealed);
    }
    // Zero is what a world before its first record writes.
    let link = (header.seq > 0).then_some(link);
    let checked = started.elapsed();
    let image: WorldImage =
        postcard::from_bytes(body).map_err(|e| SnapshotError::Undecodable(e.to_string()))?;
    tracing::debug!(
        checksum_ms = checked.as_millis() as u64,
        postcard_ms = (started.elapsed() - checked).as_millis() as u64,
        "snapshot parsed"
    );
    Ok((header.seq, link, image))
}

/// The journeys of `chunks`, each chunk parsed on a core of its own.
fn journeys(chunks: &[&str]) -> Result<Vec<Journey>, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_core = chunks.len().div_ceil(cores).max(1);
    let parsed: Vec<Result<Vec<Journey>, serde_json::Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .chunks(per_core)
            .map(|some| {
                scope.spawn(move || {
                    let mut out = Vec::with_capacity(some.len() * JOURNEY_CHUNK);
                    for chunk in some {
                        out.extend(serde_json::from_str::<Vec<Journey>>(chunk)?);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut all = Vec::new();
    for part in parsed {
        all.extend(part.map_err(|e| format!("the journeys: {e}"))?);
    }
    Ok(all)
}

/// The world of `image`, whose full chunks of journeys are `parts`.
fn build(
    seq: u64,
    link: Option<Link>,
    image: WorldImage,
    parts: &[&str],
) -> Result<World, SnapshotError> {
    let started = std::time::Instant::now();
    let mut world = image
        .into_world(seq, parts)
        .map_err(SnapshotError::Undecodable)?;
    world.link = link;
    tracing::debug!(
        build_ms = started.elapsed().as_millis() as u64,
        "snapshot read back"
    );
    Ok(world)
}

/// What a snapshot's body holds.
#[derive(Serialize, Deserialize)]
struct WorldImage<'a> {
    /// Parents before their branches.
    timelines: Vec<TimelineImage>,
    /// JSON of [`Records`].
    records: String,
    /// The journeys in id order (the order they were made in): the parts holding the full
    /// chunks (JSON arrays of [`JOURNEY_CHUNK`] each), by id, then the rest (a JSON array).
    journey_parts: Vec<PartId>,
    journeys: std::borrow::Cow<'a, str>,
}

#[derive(Serialize, Deserialize)]
struct TimelineImage {
    /// JSON of the [`Timeline`].
    meta: String,
    /// The timeline whose history this one is written against (its parent, when it exists).
    base: Option<TimelineId>,
    history: HistoryImage,
    /// Its creation-time copy of its parent's history, written against the parent as it
    /// stands (like `history`); `None` for a root timeline.
    base_history: Option<HistoryImage>,
    /// Entries of `touched` that differ from the base's, and keys the base has and this lacks.
    touched: Vec<(EventId, (i64, u32))>,
    untouched: Vec<EventId>,
}

/// Everything but the timelines, in the log's own JSON.
#[derive(Serialize, Deserialize)]
struct Records {
    items: Vec<Item>,
    anchors: Vec<AnchorRecord>,
    positions: Vec<(Traveller, Position)>,
    scripts: Vec<ScriptRecord>,
    jobs: Vec<Job>,
    log: Vec<LogRecord>,
    keys: Vec<KeyImage>,
    #[serde(default)]
    merges: Vec<crate::service::Merge>,
    /// Format 6 (data): each timeline's data entries, parents before their branches.
    #[serde(default)]
    timeline_data: Vec<TimelineData>,
    /// Format 6 (data): the travellers' bounded-staleness reads.
    #[serde(default)]
    read_staleness: Vec<crate::service::ReadStaleness>,
    /// Isolations in force (review, format 6).
    #[serde(default)]
    isolations: Vec<crate::service::Isolation>,
    /// Each timeline's isolated lineages, with their isolation (review, format 6).
    #[serde(default)]
    isolated: Vec<(TimelineId, Vec<(EventId, crate::model::IsolationId)>)>,
    /// Access-control lists (format 7).
    #[serde(default)]
    acls: Vec<crate::service::AccessControl>,
    /// Restrictions in force (format 7).
    #[serde(default)]
    restrictions: Vec<crate::service::Restriction>,
    /// The stored head the last `detect-tampering` scan read up to (absent before any scan,
    /// and in snapshots written before scans were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_scan: Option<u64>,
    /// The tamper findings still open, oldest record first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tamper_findings: Vec<super::OpenFinding>,
    /// How many more records the open findings count than they list.
    #[serde(default, skip_serializing_if = "is_zero")]
    tamper_not_listed: u64,
    /// The folded access log (format 7, added later: absent in older snapshots of the format,
    /// which then start it empty).
    #[serde(default)]
    access: super::access_log::AccessImage,
}

/// A timeline's data entries, written against its parent's as they stand: what it has that
/// the parent lacks, and the keys the parent has and it lacks (stored after the branch).
#[derive(Serialize, Deserialize)]
struct TimelineData {
    timeline: TimelineId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base: Option<TimelineId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    added: Vec<crate::service::DataEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    removed: Vec<(Instant, crate::model::DataId)>,
}

#[derive(Serialize, Deserialize)]
struct KeyImage {
    traveller: Traveller,
    key: IdempotencyKey,
    fingerprint: String,
    answer: serde_json::Value,
    at: Instant,
    seq: u64,
}

impl<'a> WorldImage<'a> {
    /// The image of `world`, whose journeys are `kept`'s (see [`Kept::follow`]).
    fn of(world: &World, kept: &'a Kept) -> Self {
        // Parents first: a branch is read back on top of its parent.
        let mut order: Vec<&TimelineId> = Vec::with_capacity(world.timelines.len());
        let mut placed: HashSet<&TimelineId> = HashSet::new();
        for id in world.timelines.keys() {
            let mut chain = vec![id];
            let mut at = id;
            while let Some(parent) = world.timelines.get(at).and_then(|t| t.meta.parent.as_ref()) {
                if placed.contains(parent)
                    || chain.contains(&parent)
                    || !world.timelines.contains_key(parent)
                {
                    break;
                }
                chain.push(parent);
                at = parent;
            }
            for id in chain.into_iter().rev() {
                if placed.insert(id) {
                    order.push(id);
                }
            }
        }
        let timeline_data = data_images(world, &order);
        let timelines = order
            .into_iter()
            .filter_map(|id| {
                let state = world.timelines.get(id)?;
                let base_id = state
                    .meta
                    .parent
                    .as_ref()
                    .filter(|p| world.timelines.contains_key(*p));
                let base = base_id.and_then(|p| world.timelines.get(p));
                let touched = state
                    .touched
                    .iter()
                    .filter(|(k, v)| base.and_then(|b| b.touched.get(*k)) != Some(*v))
                    .map(|(k, v)| (k.clone(), (v.timestamp(), v.timestamp_subsec_nanos())))
                    .collect();
                let untouched = base
                    .map(|b| {
                        b.touched
                            .keys()
                            .filter(|k| !state.touched.contains_key(*k))
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                Some(TimelineImage {
                    meta: serde_json::to_string(&*state.meta).unwrap_or_default(),
                    base: base_id.cloned(),
                    history: state.history.image(base.map(|b| &b.history)),
                    base_history: state
                        .base
                        .as_ref()
                        .map(|h| h.image(base.map(|b| &b.history))),
                    touched,
                    untouched,
                })
            })
            .collect();
        let records = Records {
            items: world.items.values().map(|i| (**i).clone()).collect(),
            anchors: world.anchors.values().map(|a| (**a).clone()).collect(),
            positions: world
                .positions
                .iter()
                .map(|(t, p)| (t.clone(), p.clone()))
                .collect(),
            scripts: world.scripts.values().map(|s| (**s).clone()).collect(),
            jobs: world.jobs.values().map(|j| (**j).clone()).collect(),
            log: world.log.iter().map(|r| (**r).clone()).collect(),
            merges: world.merges.values().map(|m| (**m).clone()).collect(),
            timeline_data,
            read_staleness: world.read_staleness.values().cloned().collect(),
            acls: world.acls.values().map(|a| (**a).clone()).collect(),
            restrictions: world.restrictions.values().map(|r| (**r).clone()).collect(),
            access: world.access.image(),
            isolations: world.isolations.values().map(|i| (**i).clone()).collect(),
            isolated: world
                .timelines
                .iter()
                .filter(|(_, t)| !t.isolated.is_empty())
                .map(|(id, t)| {
                    let members = t.isolated.iter().map(|(l, i)| (l.clone(), i.clone()));
                    (id.clone(), members.collect())
                })
                .collect(),
            last_scan: world.scans.last_head,
            tamper_findings: world.scans.open.values().map(|f| (**f).clone()).collect(),
            tamper_not_listed: world.scans.not_listed,
            keys: world
                .keys
                .entries()
                .map(|(traveller, key, r)| KeyImage {
                    traveller: traveller.clone(),
                    key: key.clone(),
                    fingerprint: r.fingerprint.clone(),
                    answer: r.answer.clone(),
                    at: r.at,
                    seq: r.seq,
                })
                .collect(),
        };
        Self {
            timelines,
            records: serde_json::to_string(&records).unwrap_or_default(),
            journey_parts: kept.ids.clone(),
            journeys: std::borrow::Cow::Borrowed(kept.open_chunk()),
        }
    }

    /// The world of this image, whose full chunks of journeys are `parts` (in order).
    fn into_world(self, seq: u64, parts: &[&str]) -> Result<World, String> {
        let mut world = World::default();
        world.seq = seq;
        for t in self.timelines {
            let meta: Timeline =
                serde_json::from_str(&t.meta).map_err(|e| format!("a timeline: {e}"))?;
            let base =
                match &t.base {
                    Some(id) => Some(world.timelines.get(id).ok_or_else(|| {
                        format!("timeline {} comes before its base {id}", meta.id)
                    })?),
                    None => None,
                };
            let history = History::from_image(t.history, base.map(|b| &b.history))
                .map_err(|e| format!("timeline {}: {e}", meta.id))?;
            let base_history = t
                .base_history
                .map(|image| History::from_image(image, base.map(|b| &b.history)))
                .transpose()
                .map_err(|e| format!("timeline {}'s base: {e}", meta.id))?;
            let mut touched = base.map(|b| b.touched.clone()).unwrap_or_default();
            for k in &t.untouched {
                touched.remove(k);
            }
            for (k, (secs, nanos)) in t.touched {
                let at = Instant::from_timestamp(secs, nanos)
                    .ok_or_else(|| format!("timeline {}: instant out of range", meta.id))?;
                touched.insert(k, at);
            }
            world.timelines.insert(
                meta.id.clone(),
                TimelineState {
                    meta: Arc::new(meta),
                    history,
                    touched,
                    base: base_history,
                    data: Default::default(),
                    isolated: Default::default(),
                },
            );
        }
        let r: Records =
            serde_json::from_str(&self.records).map_err(|e| format!("the records: {e}"))?;
        world.items = r
            .items
            .into_iter()
            .map(|i| (i.id.clone(), Arc::new(i)))
            .collect::<OrdMap<_, _>>();
        world.anchors = r
            .anchors
            .into_iter()
            .map(|a| (a.id.clone(), Arc::new(a)))
            .collect();
        let chunks: Vec<&str> = parts
            .iter()
            .copied()
            .chain(std::iter::once(self.journeys.as_ref()))
            .collect();
        world.journeys = journeys(&chunks)?
            .into_iter()
            .map(|mut j| {
                // Written before journeys had kinds: the kind folding would give them.
                j.kind
                    .get_or_insert_with(|| crate::model::JourneyKind::derived(j.anchor.as_ref()));
                (j.id.clone(), Arc::new(j))
            })
            .collect();
        world.positions = r.positions.into_iter().collect::<HashMap<_, _>>();
        // Written before positions had places: the place of each traveller's latest journey
        // (journeys are in id order, which is the order they were made in).
        let last_place: std::collections::HashMap<Traveller, Option<String>> = world
            .journeys
            .values()
            .map(|j| (j.traveller.clone(), j.location.clone()))
            .collect();
        for (traveller, position) in world.positions.iter_mut() {
            if position.location.is_none()
                && let Some(place) = last_place.get(traveller)
            {
                position.location = place.clone();
            }
        }
        world.scripts = r
            .scripts
            .into_iter()
            .map(|s| (s.id.clone(), Arc::new(s)))
            .collect();
        world.jobs = r
            .jobs
            .into_iter()
            .map(|j| (j.id.clone(), Arc::new(j)))
            .collect();
        world.log = r.log.into_iter().map(Arc::new).collect::<Vector<_>>();
        world.merges = r
            .merges
            .into_iter()
            .map(|m| (m.merge_id.clone(), Arc::new(m)))
            .collect();
        read_data(&mut world, r.timeline_data)?;
        world.read_staleness = r
            .read_staleness
            .into_iter()
            .map(|s| (s.traveller.clone(), s))
            .collect();
        world.acls = r
            .acls
            .into_iter()
            .map(|a| (a.timeline_id.clone(), Arc::new(a)))
            .collect();
        world.restrictions = r
            .restrictions
            .into_iter()
            .map(|r| (r.user_id.clone(), Arc::new(r)))
            .collect();
        world.access = super::access_log::AccessBook::from_image(r.access);
        world.isolations = r
            .isolations
            .into_iter()
            .map(|i| (i.isolation_id.clone(), Arc::new(i)))
            .collect();
        for (id, members) in r.isolated {
            let state = world
                .timelines
                .get_mut(&id)
                .ok_or_else(|| format!("isolations of unknown timeline {id}"))?;
            state.isolated = members.into_iter().collect();
        }
        world.scans = super::Scans {
            last_head: r.last_scan,
            open: r
                .tamper_findings
                .into_iter()
                .map(|f| (f.finding.seq, Arc::new(f)))
                .collect(),
            not_listed: r.tamper_not_listed,
        };
        world.keys = Keys::from_entries(r.keys.into_iter().map(|k| {
            (
                k.traveller,
                k.key,
                Remembered {
                    fingerprint: k.fingerprint,
                    answer: k.answer,
                    at: k.at,
                    seq: k.seq,
                },
            )
        }));
        world.index_owners();
        Ok(world)
    }
}

/// Each timeline's data entries against its parent's (format 6).
fn data_images(world: &World, order: &[&TimelineId]) -> Vec<TimelineData> {
    order
        .iter()
        .filter_map(|id| {
            let state = world.timelines.get(*id)?;
            let base_id = state
                .meta
                .parent
                .as_ref()
                .filter(|p| world.timelines.contains_key(*p));
            let empty = super::data::DataMap::new();
            let base = base_id
                .and_then(|p| world.timelines.get(p))
                .map_or(&empty, |b| &b.data);
            let added: Vec<_> = state
                .data
                .iter()
                .filter(|(k, _)| !base.contains_key(*k))
                .map(|(_, e)| (**e).clone())
                .collect();
            let removed: Vec<_> = base
                .keys()
                .filter(|k| !state.data.contains_key(*k))
                .cloned()
                .collect();
            // Written for every timeline, in the order they are read back: a branch's entries
            // are rebuilt on top of its parent's, already read.
            Some(TimelineData {
                timeline: (*id).clone(),
                base: base_id.cloned(),
                added,
                removed,
            })
        })
        .collect()
}

/// Reads the data entries back (format 6), parents first, and rebuilds the index of where each
/// entry was stored.
fn read_data(world: &mut World, images: Vec<TimelineData>) -> Result<(), String> {
    for image in images {
        let mut data = match &image.base {
            Some(base) => world
                .timelines
                .get(base)
                .map(|b| b.data.clone())
                .ok_or_else(|| {
                    format!(
                        "the data of {} comes before its base {base}",
                        image.timeline
                    )
                })?,
            None => super::data::DataMap::new(),
        };
        for key in &image.removed {
            data.remove(key);
        }
        for entry in image.added {
            data.insert((entry.timestamp, entry.data_id.clone()), Arc::new(entry));
        }
        let state = world
            .timelines
            .get_mut(&image.timeline)
            .ok_or_else(|| format!("data of an unknown timeline {}", image.timeline))?;
        state.data = data;
    }
    for state in world.timelines.values() {
        for ((at, id), entry) in &state.data {
            world
                .data_index
                .insert(id.clone(), (entry.timeline_id.clone(), *at));
        }
    }
    Ok(())
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Op;
    use crate::model::{Event, EventStatus, Window};

    /// `world` written as a snapshot and read back, parts and all.
    fn round_trip(world: &World, key: &LogKey) -> Result<World, SnapshotError> {
        let encoded = encode(world, key);
        decode(&encoded.bytes, &encoded.parts(), key)
    }

    fn timeline(id: &str, parent: Option<&str>) -> Timeline {
        Timeline {
            id: id.parse().expect("a timeline id"),
            name: id.into(),
            description: None,
            variation: None,
            destination_time: None,
            created_at: Instant::from_timestamp(1_767_225_600, 0).unwrap_or_default(),
            window: Window::Unbounded,
            parent: parent.map(|p| p.parse().expect("a timeline id")),
            created_by: None,
        }
    }

    fn event(id: &str, minutes: i64) -> Event {
        let id: EventId = id.parse().expect("an event id");
        Event {
            lineage: id.clone(),
            id,
            description: format!("event at +{minutes}m"),
            time: Instant::from_timestamp(946_684_800 + minutes * 60, 0).unwrap_or_default(),
            location: "Geneva".into(),
            causes: Vec::new(),
            fixed_point: false,
            status: EventStatus::OnSchedule,
            supersedes: None,
            superseded_by: None,
            author: None,
        }
    }

    /// A timeline and a branch of it that gained an event, so the branch's history is written
    /// against its parent's.
    fn branched_world() -> World {
        let ops = [
            Op::CreateTimeline {
                timeline: timeline("primary", None),
            },
            Op::AddEvents {
                timeline: TimelineId::primary(),
                events: (0..20).map(|i| event(&format!("evt_p{i}"), i)).collect(),
                at: None,
            },
            Op::CreateTimeline {
                timeline: timeline("tml_branch", Some("primary")),
            },
            Op::AddEvents {
                timeline: "tml_branch".parse().expect("a timeline id"),
                events: vec![event("evt_b", 7)],
                at: None,
            },
        ];
        let mut world = World::default();
        for op in ops {
            world.apply(world.seq + 1, op).expect("the op applies");
        }
        world
    }

    /// Where the forged-image test runs: in a child of this test binary whose address space is
    /// capped, so an allocation sized by a forged length aborts it instead of being reserved
    /// lazily (as it would be with overcommit, which hides the bug).
    const CAPPED_CHILD: &str = "CHRONOSCOPE_CAPPED_CHILD";

    #[test]
    fn a_forged_history_length_is_refused_before_anything_is_allocated() {
        if std::env::var_os(CAPPED_CHILD).is_none() {
            let name = "engine::snapshot::tests::a_forged_history_length_is_refused_before_anything_is_allocated";
            let exe = std::env::current_exe().expect("the test binary");
            // 2 GiB of address space: ample for this test, half of what the forged length asks.
            let out = std::process::Command::new("sh")
                .args(["-c", "ulimit -v 2097152 && exec \"$0\" \"$@\""])
                .arg(exe)
                .args(["--exact", name, "--nocapture", "--test-threads", "1"])
                .env(CAPPED_CHILD, "1")
                .output()
                .expect("the child runs");
            assert!(
                out.status.success(),
                "the capped child failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let world = branched_world();
        let key = LogKey::development();
        let good = encode(&world, &key).bytes;
        let (seq, link, mut image) = parse(&good, &key).expect("a good snapshot parses");
        assert_eq!(image.timelines.len(), 2);
        assert!(image.timelines[1].base.is_some(), "the branch has a base");
        image.timelines[1].history.forge_len(u32::MAX);
        let body = postcard::to_allocvec(&image).expect("encodes");
        // The checksum and the seal are made again (as by someone holding the key): only the
        // bounds check stands between this and the heap.
        let forged = frame(seq, link.unwrap_or_default(), &body, &key);
        match decode(&forged, &[], &key) {
            Err(SnapshotError::Undecodable(why)) => {
                assert!(why.contains("4294967295"), "{why}");
            }
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(_) => panic!("a forged length was accepted"),
        }
        // The same image with its true length still reads back.
        let read = decode(&good, &[], &key).expect("the unforged snapshot decodes");
        assert_eq!(read.first_difference(&world), None);
    }

    #[test]
    fn merges_pending_and_completed_survive_a_snapshot() {
        let mut world = branched_world();
        let at = Instant::from_timestamp(1_767_225_600, 0).unwrap_or_default();
        let merge = |id: &str, completed: Option<(&str, Instant)>| crate::service::Merge {
            merge_id: id.parse().expect("a merge id"),
            source_timeline_id: "tml_branch".parse().expect("a timeline id"),
            destination_timeline_id: TimelineId::primary(),
            strategy: crate::service::MergeStrategy::ManualReview,
            base_timeline_id: TimelineId::primary(),
            by: "ada".parse().expect("a name"),
            at,
            status: if completed.is_some() {
                "merged"
            } else {
                "pending_review"
            }
            .into(),
            decisions: Vec::new(),
            resolutions: Vec::new(),
            completed_by: completed.map(|(who, _)| who.parse().expect("a name")),
            completed_at: completed.map(|(_, when)| when),
        };
        // A pending merge first: its absent completion must not shift what follows it.
        for m in [
            merge("mrg_a_pending", None),
            merge("mrg_b_done", Some(("bob", at + chrono::Duration::hours(1)))),
        ] {
            world.merges.insert(m.merge_id.clone(), Arc::new(m));
        }
        let key = LogKey::development();
        let read = round_trip(&world, &key).expect("a snapshot with merges decodes");
        assert_eq!(read.merges, world.merges);
        assert_eq!(read.first_difference(&world), None);
    }

    #[test]
    fn recorded_scans_and_their_open_findings_survive_a_snapshot() {
        use crate::service::{FindingKind, TamperFinding};
        let finding = |seq: u64, kind| TamperFinding {
            seq,
            kind,
            written_at: None,
            op: Some("add_events".into()),
            timelines: vec![TimelineId::primary()],
            reason: format!("record {seq} does not match its link"),
        };
        let mut world = branched_world();
        let key = LogKey::development();
        // None recorded: none read back (and none written, as by older versions).
        let read = round_trip(&world, &key).expect("decodes");
        assert_eq!(read.scans, crate::engine::Scans::default());
        let first = Instant::from_timestamp(1_767_225_600, 0).unwrap_or_default();
        let second = Instant::from_timestamp(1_767_229_200, 0).unwrap_or_default();
        for (findings, full, at) in [
            (vec![finding(2, FindingKind::Modified)], true, first),
            (vec![finding(3, FindingKind::Gap)], false, second),
        ] {
            let head_seq = world.seq;
            world
                .apply(
                    world.seq + 1,
                    Op::ScanResult {
                        head_seq,
                        findings,
                        not_listed: 0,
                        full,
                        at,
                    },
                )
                .expect("the op applies");
        }
        let read = round_trip(&world, &key).expect("decodes");
        assert_eq!(read.first_difference(&world), None);
        assert_eq!(read.scans.last_head, Some(world.seq - 1));
        let open: Vec<_> = read
            .scans
            .open
            .values()
            .map(|o| (o.finding.seq, o.finding.kind, o.found_at))
            .collect();
        assert_eq!(
            open,
            [
                (2, FindingKind::Modified, first),
                (3, FindingKind::Gap, second)
            ]
        );
    }

    fn data_entry(id: &str, timeline: &str, minutes: i64) -> crate::service::DataEntry {
        crate::service::DataEntry {
            data_id: id.parse().expect("a data id"),
            timeline_id: timeline.parse().expect("a timeline id"),
            timestamp: Instant::from_timestamp(946_684_800 + minutes * 60, 0).unwrap_or_default(),
            payload: crate::service::DataPayload::Plain {
                data: serde_json::json!({"n": minutes})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            },
            stored_by: "ada".parse().expect("a traveller"),
            stored_at: Instant::from_timestamp(1_767_225_600, 0).unwrap_or_default(),
        }
    }

    #[test]
    fn data_entries_and_staleness_settings_survive_a_snapshot_branch_by_branch() {
        let mut world = branched_world();
        let branch = "tml_branch";
        let ops = [
            // Before the second branch: it sees this one; after it: only primary has it.
            Op::StoreData {
                entry: data_entry("dat_before", "primary", 1),
            },
            Op::CreateTimeline {
                timeline: timeline("tml_later", Some("primary")),
            },
            Op::StoreData {
                entry: data_entry("dat_after", "primary", 1),
            },
            Op::StoreData {
                entry: data_entry("dat_own", branch, 2),
            },
            Op::CreateTimeline {
                timeline: timeline("tml_grandchild", Some("tml_later")),
            },
            Op::SetReadStaleness {
                setting: crate::service::ReadStaleness {
                    cache_id: "cch_one".parse().expect("a cache id"),
                    traveller: "ada".parse().expect("a traveller"),
                    scope: crate::service::CacheScope::Event,
                    max_staleness: 60,
                },
            },
        ];
        for op in ops {
            world.apply(world.seq + 1, op).expect("the op applies");
        }
        let later: TimelineId = "tml_later".parse().expect("an id");
        assert_eq!(
            world.timelines[&later].data.len(),
            1,
            "the branch point holds"
        );
        let key = LogKey::development();
        let read = round_trip(&world, &key).expect("decodes");
        assert_eq!(read.first_difference(&world), None);
        let grandchild: TimelineId = "tml_grandchild".parse().expect("an id");
        assert_eq!(read.timelines[&grandchild].data.len(), 1);
        assert_eq!(read.timelines[&TimelineId::primary()].data.len(), 2);
    }
}
