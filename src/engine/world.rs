//! The engine's state and the operations that change it.
//!
//! [`Op`] is what the store logs; [`World::apply`] folds one into the state. Ops carry every
//! id and instant they need, so replaying the log gives the same world on every machine. Ops
//! are validated before they are logged; `apply` only refuses what would mean a corrupt log.

use std::sync::Arc;

use imbl::{HashMap, OrdMap, OrdSet, Vector};
use serde::{Deserialize, Serialize};

pub(crate) mod access_book;
mod apply;
pub(crate) mod data;
pub(crate) mod keys;
pub(crate) mod scans;

use crate::automation::{Due, Job, LogRecord, ScriptRecord};
use crate::model::MergeId;
use crate::model::{
    AnchorId, AnchorRecord, Event, EventId, History, Instant, Item, ItemId, Journey, JourneyId,
    Position, ScheduleId, ScriptId, Timeline, TimelineId, Traveller, Whereabouts,
};
use crate::service::{LogEntry, Merge};
use keys::{IdempotencyKey, Keys, Remembered};

/// One log record: a change with who made it and when. Stored as
/// `{"by":…,"at":…,"change":{"op":…}}`; records written before the envelope existed are a bare
/// [`Op`] and read back with `by` and `at` unknown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The traveller whose request made it: the owner for automation, `None` for history as
    /// shipped (the seed) and in older records.
    pub by: Option<Traveller>,
    /// The wall-clock time it was decided (`None` in older records).
    pub at: Option<Instant>,
    /// The change.
    pub change: Op,
}

impl Envelope {
    /// The body of a record of `change`, as stored (the fields in [`Envelope`]'s order).
    pub fn encode(
        by: Option<&Traveller>,
        at: Option<Instant>,
        change: &Op,
    ) -> Result<String, serde_json::Error> {
        /// The envelope, borrowing what it holds: encoding a change does not copy it.
        #[derive(Serialize)]
        struct Borrowed<'a> {
            by: Option<&'a Traveller>,
            at: Option<Instant>,
            change: &'a Op,
        }
        serde_json::to_string(&Borrowed { by, at, change })
    }

    /// A stored body, with or without the envelope.
    pub fn decode(body: &str) -> Result<Self, serde_json::Error> {
        // What `encode` writes starts so; anything else is a record from before the envelope.
        if body.starts_with(r#"{"by":"#) {
            return serde_json::from_str(body);
        }
        Ok(Self {
            by: None,
            at: None,
            change: serde_json::from_str(body)?,
        })
    }
}

/// One logged change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A new timeline; a branch starts with its parent's events as they are now.
    CreateTimeline {
        /// The timeline.
        timeline: Timeline,
    },
    /// A timeline removed with its own events.
    DeleteTimeline {
        /// Which.
        id: TimelineId,
    },
    /// Events added to a timeline (seeding, or a traveller's addition).
    AddEvents {
        /// Where.
        timeline: TimelineId,
        /// What; causes may point forward within the batch.
        events: Vec<Event>,
        /// When they were added (`None` for history as shipped, and in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<Instant>,
    },
    /// An event replaced by a new head of its lineage.
    Manipulate {
        /// Where.
        timeline: TimelineId,
        /// The event replaced.
        old: EventId,
        /// The new head.
        new: Event,
        /// When (`None` for history as shipped, and in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<Instant>,
    },
    /// A manipulation undone.
    Revert {
        /// Where.
        timeline: TimelineId,
        /// The head that is undone.
        head: EventId,
        /// When (`None` in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<Instant>,
    },
    /// An item registered.
    RegisterItem {
        /// The item.
        item: Item,
    },
    /// An anchor set.
    SetAnchor {
        /// The anchor with its details (older records have none).
        anchor: AnchorRecord,
    },
    /// An anchor's recorded environment replaced (the previous one stays in the log).
    AdjustAnchor {
        /// Which.
        id: AnchorId,
        /// The environment now recorded.
        environment: crate::model::Conditions,
    },
    /// An anchor removed from its traveller's state (journeys and the log still name it).
    DeleteAnchor {
        /// Which.
        id: AnchorId,
    },
    /// A journey made.
    Travel {
        /// The journey.
        journey: Journey,
    },
    /// A traveller's clock paused: their time stands still at `time` until they resume.
    Pause {
        /// Whose clock.
        traveller: Traveller,
        /// Their time when paused.
        time: Instant,
        /// Wall-clock instant of the pause.
        at: Instant,
    },
    /// A traveller's paused clock runs on from where it stood.
    Resume {
        /// Whose clock.
        traveller: Traveller,
        /// Wall-clock instant of the resumption.
        at: Instant,
    },
    /// A script stored.
    CreateScript {
        /// The script.
        script: ScriptRecord,
    },
    /// A script deleted.
    DeleteScript {
        /// Which.
        id: ScriptId,
    },
    /// A scheduled manipulation or external trigger recorded.
    CreateJob {
        /// The job.
        job: Job,
    },
    /// A job cancelled before it ran.
    CancelJob {
        /// Which.
        id: ScheduleId,
    },
    /// A keyed write's answer, logged in the same batch as its changes (see `idempotency`).
    Remember {
        /// Whose key.
        traveller: Traveller,
        /// The client's key.
        key: IdempotencyKey,
        /// The request's fingerprint.
        fingerprint: String,
        /// The answer given.
        answer: serde_json::Value,
        /// When.
        at: Instant,
    },
    /// A merge recorded, after the changes it wrote into its destination (same batch).
    Merge {
        /// The record.
        merge: crate::service::Merge,
    },
    /// A script or job ran; logged in the same batch as the changes it made.
    Ran {
        /// What ran.
        due: Due,
        /// Whether every action succeeded.
        succeeded: bool,
        /// What each action did.
        entries: Vec<LogEntry>,
    },
    /// A data entry stored (plain, or only its ciphertext: never a key nor a plaintext).
    StoreData {
        /// The entry.
        entry: crate::service::DataEntry,
    },
    /// Data entries a merge copied into `timeline` (guide §3), in the merge's batch: each keeps
    /// its id, time and the timeline it was stored in.
    CopyData {
        /// The merge's destination.
        timeline: TimelineId,
        /// The entries, as stored.
        entries: Vec<crate::service::DataEntry>,
    },
    /// A traveller's bounded-staleness reads set (`enable-caching`); 0 s turns them off.
    SetReadStaleness {
        /// The setting.
        setting: crate::service::ReadStaleness,
    },
    /// A conflict of a pending merge resolved; choosing again replaces the choice.
    ResolveConflict {
        /// The pending merge.
        merge: crate::model::MergeId,
        /// The resolution.
        resolution: crate::service::MergeResolution,
    },
    /// A pending merge completed; its writes come before it in the same batch.
    MergeCompleted {
        /// The merge.
        merge: crate::model::MergeId,
        /// What it decided for each lineage, recomputed at completion.
        decisions: Vec<crate::service::MergeDecision>,
        /// When.
        at: Instant,
        /// Who completed it (absent in records written before it was kept).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Traveller>,
    },
    /// A pending merge abandoned: its destination is untouched.
    MergeAborted {
        /// The merge.
        merge: crate::model::MergeId,
        /// When.
        at: Instant,
    },
    /// Events isolated: an overlay on their timeline, no event rewritten.
    Isolate {
        /// The isolation.
        isolation: crate::service::Isolation,
    },
    /// An isolation lifted: the checks apply to its members again.
    LiftIsolation {
        /// Which.
        id: crate::model::IsolationId,
    },
    /// A timeline's access-control list set, or removed (`None`): §5.1.
    SetAccessControl {
        /// The timeline.
        timeline: TimelineId,
        /// The list now in force.
        access_control: Option<crate::service::AccessControl>,
    },
    /// A traveller restricted by an operator, or their restriction lifted (`unrestricted`):
    /// §5.2.
    RestrictTraveller {
        /// The restriction.
        restriction: crate::service::Restriction,
    },
    /// A `detect-tampering` scan recorded (bookkeeping, guide operations §5.4): the next
    /// `recent` scan starts after `head_seq`, and the findings are `log_tampered` anomalies
    /// on every timeline until a full scan no longer finds them.
    ScanResult {
        /// The record the scan checked up to: the stored head (or beyond, when records were
        /// appended while it ran), or the record before a hole that cut it short.
        head_seq: u64,
        /// The records that did not verify, oldest first (unredacted): the first
        /// `service::FINDINGS_LISTED`, and the log's structural findings.
        findings: Vec<crate::service::TamperFinding>,
        /// How many more records did not verify (counted, not listed).
        #[serde(default, skip_serializing_if = "is_zero")]
        not_listed: u64,
        /// Whether it read every record up to `head_seq`, from the first (a full scan not cut
        /// short by a hole): only such a scan clears what earlier scans found.
        full: bool,
        /// When.
        at: Instant,
    },
    /// Reads and refused attempts one process counted since its last summary (§5.3): written
    /// by the engine, never on a request's path (see `access_log`).
    AccessSummary {
        /// The counters, each of one (timeline or service, minute, traveller, action,
        /// operation, outcome).
        counters: Vec<access_book::Counted>,
        /// Accesses that found no room among the keys one summary carries.
        #[serde(default, skip_serializing_if = "is_zero")]
        dropped: u64,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A timeline with its events.
#[derive(Clone, Debug)]
pub struct TimelineState {
    /// Its attributes.
    pub meta: Arc<Timeline>,
    /// Its events.
    pub history: History,
    /// When travellers and automation last added, manipulated or restored each event, from the
    /// log (history as shipped is not here): when an anomaly involving it appeared.
    pub touched: HashMap<EventId, Instant>,
    /// Its parent's history as it was when this timeline was created (a structurally shared
    /// copy): the base a merge compares both sides against. `None` for root timelines.
    pub base: Option<History>,
    /// Its data entries by (timestamp, id); a branch starts with its parent's (shared, not
    /// copied).
    pub data: data::DataMap,
    /// Its isolated lineages, each with its isolation (copied to branches when they are
    /// created).
    pub isolated: crate::paradox::Isolated,
}

/// Everything the engine knows, at log position `seq`. Cloning is cheap (shared maps).
#[derive(Clone, Debug, Default)]
pub struct World {
    /// The last log record folded in.
    pub seq: u64,
    /// That record's link in the log's chain (`None` before the first record).
    pub link: Option<crate::store::Link>,
    /// Timelines by id.
    pub timelines: OrdMap<TimelineId, TimelineState>,
    /// Items by id (every traveller's).
    pub items: OrdMap<ItemId, Arc<Item>>,
    /// Anchors by id (every traveller's).
    pub anchors: OrdMap<AnchorId, Arc<AnchorRecord>>,
    /// Journeys by id, which is creation order.
    pub journeys: OrdMap<JourneyId, Arc<Journey>>,
    /// Where each traveller who ever travelled is.
    pub positions: HashMap<Traveller, Position>,
    /// Scripts by id.
    pub scripts: OrdMap<ScriptId, Arc<ScriptRecord>>,
    /// Scheduled and triggered jobs by id.
    pub jobs: OrdMap<ScheduleId, Arc<Job>>,
    /// Every automated action, oldest first.
    pub log: Vector<Arc<LogRecord>>,
    /// Keyed writes remembered for their retries.
    pub keys: Keys,
    /// Recorded merges by id (creation order).
    pub merges: OrdMap<MergeId, Arc<Merge>>,
    /// Isolations in force, by id (creation order).
    pub isolations: OrdMap<crate::model::IsolationId, Arc<crate::service::Isolation>>,
    /// What each traveller owns, so per-traveller reads do not scan everyone's records.
    owned: HashMap<Traveller, Owned>,
    /// The failed automated actions of each timeline (from `log`), so the monitor does not pass
    /// over every timeline's log to find one's failures.
    failed: HashMap<TimelineId, Vector<Arc<LogRecord>>>,
    /// Which items may be in each timeline, so one timeline's item paradoxes are found without
    /// a pass over every item.
    places: ItemPlaces,
    /// Merges by the timelines they go from and into, and those waiting for review, so a list
    /// or a traveller's view finds them without a pass over every merge ever made.
    merge_index: MergeIndex,
    /// Where each data entry was stored (the key of `TimelineState::data` is its timestamp).
    pub data_index: HashMap<crate::model::DataId, (TimelineId, Instant)>,
    /// Each traveller's bounded-staleness reads, when they set them.
    pub read_staleness: HashMap<Traveller, crate::service::ReadStaleness>,
    /// Access-control lists by timeline (a timeline without one is open to every traveller).
    pub acls: HashMap<TimelineId, Arc<crate::service::AccessControl>>,
    /// Restrictions in force by traveller.
    pub restrictions: HashMap<Traveller, Arc<crate::service::Restriction>>,
    /// What `detect-tampering` scans recorded: where the next `recent` one starts, and the
    /// findings still open.
    pub scans: scans::Scans,
    /// The folded access log (§5.3).
    pub access: access_book::AccessBook,
}

/// The ids of one traveller's records, in id order (the order of the maps they index).
#[derive(Clone, Debug, Default)]
struct Owned {
    items: OrdSet<ItemId>,
    anchors: OrdSet<AnchorId>,
    journeys: OrdSet<JourneyId>,
}

/// Where items may be, by timeline: a superset of the items in each (see
/// [`World::items_maybe_in`]), kept as items and travellers move.
#[derive(Clone, Debug, Default)]
struct ItemPlaces {
    /// Items by the timeline they were registered in and every timeline they were left in.
    placed: HashMap<TimelineId, OrdSet<ItemId>>,
    /// Travellers by the timeline they are in.
    present: HashMap<TimelineId, OrdSet<Traveller>>,
    /// Owners of items who never travelled (so are in `primary`).
    unmoved: OrdSet<Traveller>,
}

impl ItemPlaces {
    fn place(&mut self, item: &Item) {
        self.placed
            .entry(item.origin_timeline.clone())
            .or_default()
            .insert(item.id.clone());
        if let Whereabouts::Left { timeline, .. } = &item.whereabouts {
            self.placed
                .entry(timeline.clone())
                .or_default()
                .insert(item.id.clone());
        }
    }
}

/// See [`World::pending_merges`] and [`World::hide_merges_of`].
#[derive(Clone, Debug, Default)]
struct MergeIndex {
    /// Merge ids by the timeline they go from and the one they go into.
    of: HashMap<TimelineId, OrdSet<MergeId>>,
    /// Merges waiting for review.
    pending: OrdSet<MergeId>,
}

impl MergeIndex {
    fn add(&mut self, merge: &Merge) {
        for timeline in [&merge.source_timeline_id, &merge.destination_timeline_id] {
            self.of
                .entry(timeline.clone())
                .or_default()
                .insert(merge.merge_id.clone());
        }
        if merge.is_pending() {
            self.pending.insert(merge.merge_id.clone());
        } else {
            self.pending.remove(&merge.merge_id);
        }
    }
}

/// The log holds something this version cannot fold.
#[derive(Debug, thiserror::Error)]
#[error("log record {seq} cannot be applied: {reason}")]
pub struct ApplyError {
    /// The record.
    pub seq: u64,
    /// Why.
    pub reason: String,
}

impl World {
    /// A traveller's position; travellers who never travelled are in `primary`, now.
    pub fn position_of(&self, traveller: &Traveller, now: Instant) -> Position {
        self.positions
            .get(traveller)
            .cloned()
            .unwrap_or_else(|| Position::present(now))
    }

    /// A traveller's items, in id order.
    pub fn items_of<'a>(&'a self, traveller: &'a Traveller) -> impl Iterator<Item = &'a Arc<Item>> {
        self.owned
            .get(traveller)
            .into_iter()
            .flat_map(|o| o.items.iter())
            .filter_map(|id| self.items.get(id))
    }

    /// A traveller's anchors, in id order.
    pub fn anchors_of<'a>(
        &'a self,
        traveller: &'a Traveller,
    ) -> impl Iterator<Item = &'a Arc<AnchorRecord>> {
        self.owned
            .get(traveller)
            .into_iter()
            .flat_map(|o| o.anchors.iter())
            .filter_map(|id| self.anchors.get(id))
    }

    /// A traveller's journeys, in id (creation) order.
    pub fn journeys_of<'a>(
        &'a self,
        traveller: &'a Traveller,
    ) -> impl Iterator<Item = &'a Arc<Journey>> {
        self.owned
            .get(traveller)
            .into_iter()
            .flat_map(|o| o.journeys.iter())
            .filter_map(|id| self.journeys.get(id))
    }

    /// Where a traveller is, as a place: the location their latest journey arrived at (journeys
    /// that name no place keep the one before; a return restores the anchor's). `None` before
    /// any place was named.
    pub fn location_of(&self, traveller: &Traveller) -> Option<String> {
        self.positions.get(traveller)?.location.clone()
    }

    /// The failed automated actions of `timeline`, oldest first (`None`: none ever failed).
    /// One timeline's stay the same vector (compared by pointer) while others' are added to.
    pub fn failed_in(&self, timeline: &TimelineId) -> Option<&Vector<Arc<LogRecord>>> {
        self.failed.get(timeline)
    }

    /// The items that may be in `timeline` (its own, those left in it, and those carried by
    /// travellers in it), in id order, found without a pass over every item; a few more may be
    /// named (an item left there once and carried away since), never fewer.
    pub fn items_maybe_in(&self, timeline: &TimelineId) -> Vec<&Arc<Item>> {
        let places = &self.places;
        let mut ids: std::collections::BTreeSet<&ItemId> =
            places.placed.get(timeline).into_iter().flatten().collect();
        let unmoved = timeline.is_primary().then_some(&places.unmoved);
        let owners = places.present.get(timeline).into_iter().chain(unmoved);
        for owner in owners.flatten() {
            ids.extend(
                self.owned
                    .get(owner)
                    .into_iter()
                    .flat_map(|o| o.items.iter()),
            );
        }
        ids.into_iter()
            .filter_map(|id| self.items.get(id))
            .collect()
    }

    /// The merges waiting for review, in id (creation) order.
    pub fn pending_merges(&self) -> impl Iterator<Item = &Arc<Merge>> + '_ {
        self.merge_index
            .pending
            .iter()
            .filter_map(|id| self.merges.get(id))
    }

    /// The merges waiting for review that go from or into `timeline`.
    pub fn pending_merges_naming<'w>(
        &'w self,
        timeline: &'w TimelineId,
    ) -> impl Iterator<Item = &'w MergeId> + 'w {
        self.pending_merges()
            .filter(move |m| {
                &m.source_timeline_id == timeline || &m.destination_timeline_id == timeline
            })
            .map(|m| &m.merge_id)
    }

    /// Forgets every merge from or into `timelines` (a traveller's view of a world whose
    /// timelines they may not read), reading only those merges.
    pub fn hide_merges_of(&mut self, timelines: &[TimelineId]) {
        for timeline in timelines {
            let Some(ids) = self.merge_index.of.remove(timeline) else {
                continue;
            };
            for id in &ids {
                self.merge_index.pending.remove(id);
                if let Some(merge) = self.merges.remove(id) {
                    let other = if &merge.source_timeline_id == timeline {
                        &merge.destination_timeline_id
                    } else {
                        &merge.source_timeline_id
                    };
                    if let Some(theirs) = self.merge_index.of.get_mut(other) {
                        theirs.remove(id);
                    }
                }
            }
        }
    }

    /// Records a merge as it now is (and indexes it).
    fn put_merge(&mut self, merge: Merge) {
        self.merge_index.add(&merge);
        self.merges.insert(merge.merge_id.clone(), Arc::new(merge));
    }

    /// Records an item as it now is (and where it may be).
    fn put_item(&mut self, item: Item) {
        self.places.place(&item);
        if !self.positions.contains_key(&item.owner) {
            self.places.unmoved.insert(item.owner.clone());
        }
        self.items.insert(item.id.clone(), Arc::new(item));
    }

    /// Records where a traveller is (and moves them in the items' index).
    fn set_position(&mut self, traveller: Traveller, position: Position) {
        let before = self.positions.get(&traveller).map(|p| p.timeline.clone());
        if before.as_ref() != Some(&position.timeline) {
            if let Some(before) = before
                && let Some(there) = self.places.present.get_mut(&before)
            {
                there.remove(&traveller);
            }
            self.places
                .present
                .entry(position.timeline.clone())
                .or_default()
                .insert(traveller.clone());
        }
        self.places.unmoved.remove(&traveller);
        self.positions.insert(traveller, position);
    }

    /// Adds an automated action to the log (and its failures' index).
    fn log_action(&mut self, record: LogRecord) {
        let record = Arc::new(record);
        if record.entry.outcome == "failed" {
            self.failed
                .entry(record.entry.timeline_id.clone())
                .or_default()
                .push_back(Arc::clone(&record));
        }
        self.log.push_back(record);
    }

    /// Rebuilds the per-traveller indexes and the failures' index from the records (after
    /// reading a snapshot).
    pub(super) fn index_owners(&mut self) {
        let mut places = ItemPlaces::default();
        for (traveller, position) in &self.positions {
            places
                .present
                .entry(position.timeline.clone())
                .or_default()
                .insert(traveller.clone());
        }
        for item in self.items.values() {
            places.place(item);
            if !self.positions.contains_key(&item.owner) {
                places.unmoved.insert(item.owner.clone());
            }
        }
        self.places = places;
        let mut merge_index = MergeIndex::default();
        for merge in self.merges.values() {
            merge_index.add(merge);
        }
        self.merge_index = merge_index;
        self.failed = HashMap::new();
        for record in self.log.clone() {
            if record.entry.outcome == "failed" {
                self.failed
                    .entry(record.entry.timeline_id.clone())
                    .or_default()
                    .push_back(record);
            }
        }
        let mut owned: HashMap<Traveller, Owned> = HashMap::new();
        for item in self.items.values() {
            owned
                .entry(item.owner.clone())
                .or_default()
                .items
                .insert(item.id.clone());
        }
        for anchor in self.anchors.values() {
            owned
                .entry(anchor.owner.clone())
                .or_default()
                .anchors
                .insert(anchor.id.clone());
        }
        for journey in self.journeys.values() {
            owned
                .entry(journey.traveller.clone())
                .or_default()
                .journeys
                .insert(journey.id.clone());
        }
        self.owned = owned;
    }

    /// The first difference between two worlds, record by record and index by index, or `None`
    /// when every read answers alike on both. For tests and checks; it walks everything.
    pub fn first_difference(&self, other: &World) -> Option<String> {
        fn differ<T: PartialEq + std::fmt::Debug>(what: &str, a: &T, b: &T) -> Option<String> {
            (a != b).then(|| format!("{what} differ: {a:?} vs {b:?}"))
        }
        if let Some(d) = differ("log positions", &self.seq, &other.seq) {
            return Some(d);
        }
        let ids = |w: &World| w.timelines.keys().cloned().collect::<Vec<_>>();
        if let Some(d) = differ("timelines", &ids(self), &ids(other)) {
            return Some(d);
        }
        for (id, a) in &self.timelines {
            let b = other.timelines.get(id)?;
            if let Some(d) = differ("timeline", &a.meta, &b.meta)
                .or_else(|| differ("touched", &a.touched, &b.touched))
                .or_else(|| differ("isolated", &a.isolated, &b.isolated))
                .or_else(|| {
                    crate::model::same_history(&a.history, &b.history)
                        .err()
                        .map(|e| format!("timeline {id}: {e}"))
                })
                .or_else(|| match (&a.base, &b.base) {
                    (None, None) => None,
                    (Some(x), Some(y)) => crate::model::same_history(x, y)
                        .err()
                        .map(|e| format!("timeline {id}'s base: {e}")),
                    _ => Some(format!("timeline {id}: a base on one side only")),
                })
            {
                return Some(d);
            }
        }
        differ("items", &self.items, &other.items)
            .or_else(|| differ("anchors", &self.anchors, &other.anchors))
            .or_else(|| differ("journeys", &self.journeys, &other.journeys))
            .or_else(|| differ("positions", &self.positions, &other.positions))
            .or_else(|| differ("scripts", &self.scripts, &other.scripts))
            .or_else(|| differ("jobs", &self.jobs, &other.jobs))
            .or_else(|| differ("automation log", &self.log, &other.log))
            .or_else(|| differ("merges", &self.merges, &other.merges))
            .or_else(|| data::first_difference(self, other))
            .or_else(|| differ("isolations", &self.isolations, &other.isolations))
            .or_else(|| differ("scans", &self.scans, &other.scans))
            .or_else(|| differ("access-control lists", &self.acls, &other.acls))
            .or_else(|| differ("restrictions", &self.restrictions, &other.restrictions))
            .or_else(|| differ("access logs", &self.access, &other.access))
            .or_else(|| {
                (!self.keys.same_as(&other.keys)).then(|| "remembered keys differ".to_owned())
            })
            .or_else(|| {
                let owned = |w: &World| {
                    w.owned
                        .iter()
                        .map(|(t, o)| {
                            (
                                t.clone(),
                                o.items.clone(),
                                o.anchors.clone(),
                                o.journeys.clone(),
                            )
                        })
                        .collect::<std::collections::BTreeSet<_>>()
                };
                differ("owners", &owned(self), &owned(other))
            })
    }

    fn owned_by(&mut self, traveller: &Traveller) -> &mut Owned {
        self.owned.entry(traveller.clone()).or_default()
    }

    /// Folds record `seq` into the state: each operation by its own method (see `apply`).
    pub fn apply(&mut self, seq: u64, op: Op) -> Result<(), ApplyError> {
        if seq != self.seq + 1 {
            return Err(ApplyError {
                seq,
                reason: format!("expected record {}", self.seq + 1),
            });
        }
        self.apply_op(seq, op)
            .map_err(|reason| ApplyError { seq, reason })?;
        self.seq = seq;
        Ok(())
    }
}
