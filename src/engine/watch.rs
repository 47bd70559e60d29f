//! The monitor, once and as a stream: [`monitor_report`] answers a timeline's anomalies (the
//! same for every viewer); [`watch_monitor`] follows them and tells what appeared and what
//! resolved.
//!
//! **One scan per change of a timeline, shared.** [`Reports`] keeps each timeline's open
//! anomalies with what they were worked out from (its events, attributes, the items that may
//! be in it and their owners' positions, its failed automation, the phase of its window, and
//! the tamper findings `detect-tampering` recorded, which are `log_tampered` anomalies of every
//! timeline).
//! Any caller — a monitor call, the timelines list counting anomalies, a stream — gets the kept
//! answer while those are unchanged; only a change to one of them costs a scan, and callers
//! that ask during a scan wait for it instead of scanning beside it. The part that reads the
//! timeline's events (a scan, counted by `chronoscope_monitor_scans_total`) runs only when the
//! events, the attributes, the failures or the window's phase changed; items and positions are
//! looked at apart (they never need the events), so an item registration costs no scan.
//!
//! **Streams share a hub.** Every stream of a timeline reads one [`Hub`]: a task that wakes on
//! a publication, finds in O(1) whether this timeline's inputs changed (persistent maps are
//! compared by pointer), and rescans only then, or when its timer for the next window boundary
//! fires ([`monitor::next_change`]); nothing else is time-driven. It hands every stream the new
//! anomalies and the changes from the ones before, worked out once. A stream wakes only when
//! that happens. On a store that does not push other processes' appends (SQLite), the hub
//! also catches up every few seconds (a read, not a scan).
//!
//! A stream starts with a snapshot of every open anomaly, a resumed one too: the difference
//! between what a client was last told and now cannot be worked out exactly (anomalies also
//! come and go with time alone, at the same log position), so a client replaces what it knew
//! with the snapshot. An anomaly whose words change is told again as appeared; a window's
//! warning names when it closes, not the time left, so its words do not change while it is open.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;

use super::rules;
use super::session::EngineSession;
use super::{Engine, TimelineState, World};
use crate::automation::LogRecord;
use crate::error::ServiceError;
use crate::model::{
    AnomalyId, EventId, History, Instant, Item, ItemId, Position, TimeRange, Timeline, TimelineId,
    Traveller, Whereabouts,
};
use crate::monitor::{self, AutomationFailure, Graph, Owner, Scan, WindowPhase};
use crate::paradox::Subject;
use crate::service::{
    Anomaly, MonitorChange, MonitorEvent, MonitorQuery, MonitorReport, MonitorStream, MonitorWatch,
};

/// How often a hub with nothing published catches up with a store that does not say when
/// another process appended (SQLite): a read, which publishes what it finds; no scan.
const CATCH_UP_EVERY: Duration = Duration::from_secs(5);

/// Under a stream of writes a hub rescans at most this often, and never spends more than
/// half its time scanning (a scan of a big timeline takes a while): changes are coalesced.
const LEAST_GAP: Duration = Duration::from_millis(100);

/// A hub's timer fires this long after a window boundary, so the boundary has passed.
const TIMER_SLACK: Duration = Duration::from_millis(20);

/// The longest a hub's timer is set for (a boundary further away is looked at again then).
const TIMER_MOST: Duration = Duration::from_secs(3600);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere leaves a usable cache: every entry is whole.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The items that may be in one timeline, with their owner and the owner's recorded position:
/// what the items part of a scan reads.
#[derive(Clone, Debug, PartialEq)]
struct Holder {
    owner: Traveller,
    /// `None`: never travelled, so in `primary` now.
    position: Option<Position>,
    items: Vec<Arc<Item>>,
}

/// Every holder of items that may be in `timeline`, by owner.
fn holders(world: &World, timeline: &TimelineId) -> Vec<Holder> {
    let mut by_owner: BTreeMap<&Traveller, Vec<Arc<Item>>> = BTreeMap::new();
    for item in world.items_maybe_in(timeline) {
        let in_it = || {
            world
                .positions
                .get(&item.owner)
                .map_or_else(|| timeline.is_primary(), |p| &p.timeline == timeline)
        };
        let here = &item.origin_timeline == timeline
            || matches!(&item.whereabouts, Whereabouts::Left { timeline: t, .. } if t == timeline)
            || (item.whereabouts == Whereabouts::Carried && in_it());
        if here {
            by_owner
                .entry(&item.owner)
                .or_default()
                .push(Arc::clone(item));
        }
    }
    by_owner
        .into_iter()
        .map(|(owner, items)| Holder {
            owner: owner.clone(),
            position: world.positions.get(owner).cloned(),
            items,
        })
        .collect()
}

/// The item paradoxes of `holders` in `state`'s timeline at `now`.
fn item_anomalies(state: &TimelineState, holders: &[Holder], now: Instant) -> Vec<Anomaly> {
    let timeline = &state.meta.id;
    let positions: Vec<Position> = holders
        .iter()
        .map(|h| h.position.clone().unwrap_or_else(|| Position::present(now)))
        .collect();
    let items: Vec<Vec<Item>> = holders
        .iter()
        .map(|h| h.items.iter().map(|i| (**i).clone()).collect())
        .collect();
    let owners: Vec<Owner<'_>> = holders
        .iter()
        .zip(&positions)
        .zip(&items)
        .map(|((holder, position), items)| Owner {
            subject: Subject {
                timeline,
                history: &state.history,
                traveller: &holder.owner,
                position,
                position_time: position.time_at(now),
                items,
                isolated: Some(&state.isolated),
            },
            arrived_at: (&position.timeline == timeline).then_some(position.arrived_at),
        })
        .collect();
    monitor::item_anomalies(&state.meta, &owners)
}

/// The `log_tampered` anomalies of `world`: the findings its scans recorded and no full scan
/// has cleared, the same on every timeline.
fn tamper_anomalies(world: &World) -> Vec<Anomaly> {
    monitor::log_tampered(
        world
            .scans
            .open
            .values()
            .map(|open| (&open.finding, open.found_at)),
        world.scans.not_listed,
    )
}

/// One timeline's open anomalies and what they were worked out from.
struct Kept {
    meta: Arc<Timeline>,
    history: History,
    touched: imbl::HashMap<EventId, Instant>,
    isolated: crate::paradox::Isolated,
    phase: WindowPhase,
    /// The timeline's failed automation the failures came from (compared by pointer).
    failed: Option<imbl::Vector<Arc<LogRecord>>>,
    failures: Vec<AutomationFailure>,
    /// The rescan of `history`.
    graph: Arc<Graph>,
    /// What the scan of the events found (paradoxes, window, orphans, failures).
    events: Vec<Anomaly>,
    items: imbl::OrdMap<ItemId, Arc<Item>>,
    positions: imbl::HashMap<Traveller, Position>,
    holders: Vec<Holder>,
    /// The tamper findings the scans recorded (the same for every timeline).
    tamper: imbl::OrdMap<u64, Arc<super::OpenFinding>>,
    /// Both parts and the tamper findings together, as a scan answers.
    all: Arc<Vec<Anomaly>>,
}

impl Kept {
    /// Whether the events part still holds for `state` at `phase` (O(1) when it does not
    /// change: persistent maps are compared by pointer).
    fn events_hold(&self, state: &TimelineState, phase: WindowPhase) -> bool {
        self.phase == phase
            && self.history.same_as(&state.history)
            && self.touched.ptr_eq(&state.touched)
            && self.isolated.ptr_eq(&state.isolated)
            && (Arc::ptr_eq(&self.meta, &state.meta) || self.meta == state.meta)
    }

    /// Whether the timeline's failed automation is what the failures were found from (O(1)).
    fn failed_hold(&self, world: &World, timeline: &TimelineId) -> bool {
        match (&self.failed, world.failed_in(timeline)) {
            (None, None) => true,
            (Some(kept), Some(now)) => kept.ptr_eq(now),
            _ => false,
        }
    }
}

/// Every timeline's kept anomalies (see the module's words), and how many scans were made.
#[derive(Debug, Default)]
pub(crate) struct Reports {
    slots: Mutex<HashMap<TimelineId, Arc<Slot>>>,
    scans: AtomicU64,
}

/// One timeline's kept report.
#[derive(Debug, Default)]
struct Slot {
    /// The report; held while it is worked out, so that callers who wait for it wait for one
    /// scan instead of scanning beside it.
    kept: Mutex<Option<Kept>>,
    /// The last count and when it was known to hold, read without waiting for a scan (this
    /// lock is only ever held to copy the pair).
    last: Mutex<Option<(usize, Instant)>>,
    /// A recount was handed to the heavy threads and has not ended.
    recounting: AtomicBool,
}

/// A timeline's anomaly count as the timelines list answers it: without waiting for a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Count {
    /// Counted for the timeline as it is now.
    Current(usize),
    /// The timeline changed and its rescan runs on the heavy threads: the last count and when
    /// it was known to hold, if it was ever counted.
    Recounting(Option<(usize, Instant)>),
}

/// The most events a timeline may have for the list to recount it on its own worker when it
/// changed (a scan of this many takes about a millisecond); a larger one is recounted on the
/// heavy threads while the list answers the last count with its age.
pub(crate) const COUNT_INLINE_MOST: usize = 5_000;

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("timeline", &self.meta.id)
            .field("anomalies", &self.all.len())
            .finish_non_exhaustive()
    }
}

impl Reports {
    /// Scans of a timeline's events made so far (whole timelines and ranges).
    pub(crate) fn scans(&self) -> u64 {
        self.scans.load(Ordering::Relaxed)
    }

    /// A scan of `state`'s events (and window and failures, not items), counted.
    fn counted_scan(
        &self,
        state: &TimelineState,
        graph: &Graph,
        now: Instant,
        range: Option<&TimeRange>,
        failures: &[AutomationFailure],
    ) -> Vec<Anomaly> {
        self.scans.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(crate::metrics::MONITOR_SCANS).increment(1);
        monitor::scan(&Scan {
            timeline: &state.meta,
            history: &state.history,
            graph,
            owners: &[],
            now,
            touched: &state.touched,
            range,
            failures,
            isolated: Some(&state.isolated),
        })
    }

    /// The slot of `timeline`, dropping those of deleted timelines.
    fn slot(&self, world: &World, timeline: &TimelineId) -> Arc<Slot> {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(timeline) {
            return Arc::clone(slot);
        }
        slots.retain(|id, _| world.timelines.contains_key(id));
        Arc::clone(slots.entry(timeline.clone()).or_default())
    }

    /// The kept anomalies of `state`'s timeline when nothing they depend on changed, decided
    /// in O(1) (no list of items or failures is made): for a hub deciding whether to wake.
    fn unchanged(
        &self,
        world: &World,
        state: &TimelineState,
        now: Instant,
    ) -> Option<Arc<Vec<Anomaly>>> {
        let slot = lock(&self.slots).get(&state.meta.id).map(Arc::clone)?;
        // Called on the runtime's workers: never wait for a scan in progress here.
        let kept = match slot.kept.try_lock() {
            Ok(kept) => kept,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        let kept = kept.as_ref()?;
        (kept.events_hold(state, WindowPhase::of(&state.meta, now))
            && kept.failed_hold(world, &state.meta.id)
            && kept.items.ptr_eq(&world.items)
            && kept.positions.ptr_eq(&world.positions)
            && kept.tamper.ptr_eq(&world.scans.open))
        .then(|| Arc::clone(&kept.all))
    }

    /// The open anomalies of `state`'s timeline at `world` and `now`: the kept ones while
    /// nothing they depend on changed, else worked out again (the events scanned only when
    /// they, the attributes, the failures or the window's phase changed).
    fn open(&self, world: &World, state: &TimelineState, now: Instant) -> Arc<Vec<Anomaly>> {
        let slot = self.slot(world, &state.meta.id);
        // Held while working: whoever asks meanwhile waits for this answer, not a scan of
        // their own.
        let mut kept = lock(&slot.kept);
        let all = self.open_in(&mut kept, world, state, now);
        *lock(&slot.last) = Some((all.len(), now));
        all
    }

    /// [`Reports::open`] with the slot's report in hand.
    fn open_in(
        &self,
        kept: &mut Option<Kept>,
        world: &World,
        state: &TimelineState,
        now: Instant,
    ) -> Arc<Vec<Anomaly>> {
        let timeline = &state.meta.id;
        let phase = WindowPhase::of(&state.meta, now);
        let failures = match kept.as_ref() {
            Some(k) if k.failed_hold(world, timeline) => None,
            _ => Some(super::jobs::failures(world, timeline)),
        };
        let holders = match kept.as_ref() {
            Some(k) if k.items.ptr_eq(&world.items) && k.positions.ptr_eq(&world.positions) => None,
            _ => Some(holders(world, timeline)),
        };
        if let Some(k) = kept.as_mut() {
            let failures_hold = failures.as_ref().is_none_or(|f| *f == k.failures);
            let holders_hold = holders.as_ref().is_none_or(|h| *h == k.holders);
            let tamper_holds = k.tamper == world.scans.open;
            if k.events_hold(state, phase) && failures_hold && holders_hold && tamper_holds {
                // The same answer; remember the newer maps so the next look is O(1).
                k.failed = world.failed_in(timeline).cloned();
                k.items = world.items.clone();
                k.positions = world.positions.clone();
                k.tamper = world.scans.open.clone();
                return Arc::clone(&k.all);
            }
        }
        let failures = failures
            .or_else(|| kept.as_ref().map(|k| k.failures.clone()))
            .unwrap_or_default();
        let holders = holders
            .or_else(|| kept.as_ref().map(|k| k.holders.clone()))
            .unwrap_or_default();
        let graph = match kept.as_ref() {
            Some(k) if k.history.same_as(&state.history) => Arc::clone(&k.graph),
            _ => Arc::new(Graph::of(&state.history)),
        };
        let events = match kept.as_ref() {
            Some(k)
                if k.events_hold(state, phase)
                    && k.failures == failures
                    && Arc::ptr_eq(&k.graph, &graph) =>
            {
                k.events.clone()
            }
            _ => self.counted_scan(state, &graph, now, None, &failures),
        };
        let items = item_anomalies(state, &holders, now);
        let tampered = tamper_anomalies(world);
        let all = if items.is_empty() && tampered.is_empty() {
            events.clone()
        } else {
            monitor::sorted(
                events
                    .iter()
                    .cloned()
                    .chain(items)
                    .chain(tampered)
                    .collect(),
            )
        };
        crate::metrics::record_anomalies(timeline, &all);
        let all = Arc::new(all);
        *kept = Some(Kept {
            meta: Arc::clone(&state.meta),
            history: state.history.clone(),
            touched: state.touched.clone(),
            isolated: state.isolated.clone(),
            phase,
            failed: world.failed_in(timeline).cloned(),
            failures,
            graph,
            events,
            items: world.items.clone(),
            positions: world.positions.clone(),
            holders,
            tamper: world.scans.open.clone(),
            all: Arc::clone(&all),
        });
        all
    }

    /// The count the timelines list shows for `state`'s timeline, never waiting for a scan
    /// (see [`Count`]). When the answer is not current, `recount` is handed the slot to
    /// work it out again elsewhere, at most once per timeline at a time (`None`: nobody
    /// recounts now, as for a world not yet published).
    fn count(
        &self,
        world: &World,
        state: &TimelineState,
        now: Instant,
        recount: Option<&dyn Fn(Arc<Slot>)>,
    ) -> Count {
        let slot = self.slot(world, &state.meta.id);
        let small = state.history.len() <= COUNT_INLINE_MOST;
        let kept = match slot.kept.try_lock() {
            Ok(kept) => Some(kept),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            // A small timeline's scan in progress ends soon: its answer is waited for.
            Err(std::sync::TryLockError::WouldBlock) if small => Some(lock(&slot.kept)),
            // Somebody is scanning a large one: their answer will be kept.
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        if let Some(mut kept) = kept {
            let phase = WindowPhase::of(&state.meta, now);
            let events_hold =
                |k: &Kept| k.events_hold(state, phase) && k.failed_hold(world, &state.meta.id);
            // Inline only what costs little: a small timeline, or one whose events part holds
            // (then only its items are looked at again).
            if small || kept.as_ref().is_some_and(events_hold) {
                let all = self.open_in(&mut kept, world, state, now);
                *lock(&slot.last) = Some((all.len(), now));
                return Count::Current(all.len());
            }
        }
        let last = *lock(&slot.last);
        if let Some(recount) = recount
            && !slot.recounting.swap(true, Ordering::AcqRel)
        {
            recount(Arc::clone(&slot));
        }
        Count::Recounting(last)
    }

    /// The anomalies of `state`'s timeline involving events in `range` (not kept: a range is
    /// one caller's question), from the kept rescan of its events when it is current.
    fn in_range(
        &self,
        world: &World,
        state: &TimelineState,
        now: Instant,
        range: &TimeRange,
    ) -> Vec<Anomaly> {
        let timeline = &state.meta.id;
        let graph = {
            let slot = self.slot(world, timeline);
            let kept = lock(&slot.kept);
            match kept.as_ref() {
                Some(k) if k.history.same_as(&state.history) => Arc::clone(&k.graph),
                _ => Arc::new(Graph::of(&state.history)),
            }
        };
        let holders = holders(world, timeline);
        let failures = super::jobs::failures(world, timeline);
        let mut found = self.counted_scan(state, &graph, now, Some(range), &failures);
        // Like item paradoxes, tamper findings involve no event: always kept.
        let items = item_anomalies(state, &holders, now);
        let tampered = tamper_anomalies(world);
        if !items.is_empty() || !tampered.is_empty() {
            found.extend(items);
            found.extend(tampered);
            found = monitor::sorted(found);
        }
        found
    }
}

/// The open anomalies of `state`'s timeline at `world`: the same for every viewer (ids, kinds
/// and count), so the timelines list and the monitor read one number, from one scan.
pub(super) fn open_anomalies(
    reports: &Reports,
    world: &World,
    state: &TimelineState,
    now: Instant,
) -> Arc<Vec<Anomaly>> {
    reports.open(world, state, now)
}

/// The anomaly count the timelines list shows for `state`'s timeline at `world`, never waiting
/// for a scan: a timeline that changed and is too large to rescan inline is recounted on the
/// heavy threads, and meanwhile answered with its last count and that count's age.
pub(super) fn anomaly_count(
    engine: &Arc<Engine>,
    world: &Arc<World>,
    state: &TimelineState,
    now: Instant,
) -> Count {
    let recount = |slot: Arc<Slot>| {
        let engine = Arc::clone(engine);
        let world = Arc::clone(world);
        let timeline = state.meta.id.clone();
        let done = Recounted(slot);
        super::heavy::detach("an anomaly recount", move || {
            if let Some(state) = world.timelines.get(&timeline) {
                engine.reports.open(&world, state, engine.now());
            }
            drop(done);
        });
    };
    engine.reports.count(world, state, now, Some(&recount))
}

/// The anomaly count of `state`'s timeline in a world not yet published (a write's answer):
/// current when it costs little, else said to be under way (the first list starts it).
pub(super) fn anomaly_count_unpublished(
    reports: &Reports,
    world: &World,
    state: &TimelineState,
    now: Instant,
) -> Count {
    reports.count(world, state, now, None)
}

/// Ends a slot's recount when dropped: after the recount, or if it never ran (the heavy
/// threads are gone) or panicked, so a later list can start another.
struct Recounted(Arc<Slot>);

impl Drop for Recounted {
    fn drop(&mut self) {
        self.0.recounting.store(false, Ordering::Release);
    }
}

/// The monitor's report on `req`'s timeline at `world` (the same whoever asks).
pub(super) fn monitor_report(
    reports: &Reports,
    world: &World,
    now: Instant,
    req: &MonitorQuery,
) -> Result<MonitorReport, ServiceError> {
    let state = rules::referenced(world, &req.timeline_id)?;
    let anomalies = match req.time_range.as_ref() {
        None => reports.open(world, state, now).as_ref().clone(),
        Some(range) => reports.in_range(world, state, now, range),
    };
    let status = if anomalies.is_empty() {
        "stable"
    } else {
        "anomalies_detected"
    };
    Ok(MonitorReport {
        status: status.into(),
        anomalies,
        timeline_id: req.timeline_id.clone(),
        checked_at: now,
    })
}

/// The open anomalies of `timeline` at `world`, worked out on a heavy thread (a scan grows
/// with the timeline).
async fn open_heavy(
    engine: &Arc<Engine>,
    world: Arc<World>,
    timeline: &TimelineId,
) -> Result<(Arc<Vec<Anomaly>>, Instant), ServiceError> {
    let engine = Arc::clone(engine);
    let timeline = timeline.clone();
    super::heavy::run("a monitor scan", move || {
        let state = rules::referenced(&world, &timeline)?;
        let now = engine.now();
        Ok((engine.reports.open(&world, state, now), now))
    })
    .await
}

/// What a timeline's hub last found, for every stream of the timeline.
#[derive(Clone, Debug)]
struct Seen {
    /// The log position it was found at.
    position: u64,
    anomalies: Arc<Vec<Anomaly>>,
    /// The anomalies before, and the changes from them to `anomalies` (worked out once for
    /// every stream that was told `before`).
    before: Arc<Vec<Anomaly>>,
    changes: Arc<Vec<MonitorChange>>,
    /// The timeline is gone (or could not be scanned): the streams end with this.
    failed: Option<ServiceError>,
}

impl Seen {
    fn nothing() -> Self {
        let none = Arc::new(Vec::new());
        Self {
            position: 0,
            anomalies: Arc::clone(&none),
            before: none,
            changes: Arc::default(),
            failed: None,
        }
    }
}

/// The hubs of the timelines being watched: one task per timeline, whatever the number of
/// its streams (and of dashboards following them).
#[derive(Debug, Default)]
pub(crate) struct Hubs(Mutex<HashMap<TimelineId, Arc<watch::Sender<Seen>>>>);

impl Hubs {
    /// A receiver of `timeline`'s hub, starting one when there is none.
    fn subscribe(&self, engine: &Arc<Engine>, timeline: &TimelineId) -> watch::Receiver<Seen> {
        let mut hubs = lock(&self.0);
        if let Some(hub) = hubs.get(timeline) {
            // A hub leaves the map (under this lock) before it stops: this one is running.
            return hub.subscribe();
        }
        let (tx, rx) = watch::channel(Seen::nothing());
        let tx = Arc::new(tx);
        hubs.insert(timeline.clone(), Arc::clone(&tx));
        let hub = Hub {
            engine: Arc::downgrade(engine),
            timeline: timeline.clone(),
            tx,
            position: engine.position(),
        };
        tokio::spawn(hub.run());
        rx
    }

    /// Takes `timeline`'s hub `tx` out of the map when nobody follows it any more (or
    /// `always`); answers whether it is out.
    fn retire(&self, timeline: &TimelineId, tx: &Arc<watch::Sender<Seen>>, always: bool) -> bool {
        let mut hubs = lock(&self.0);
        if !always && tx.receiver_count() > 0 {
            return false;
        }
        if hubs.get(timeline).is_some_and(|t| Arc::ptr_eq(t, tx)) {
            hubs.remove(timeline);
        }
        true
    }

    /// How many timelines have a hub (for tests).
    pub(crate) fn len(&self) -> usize {
        lock(&self.0).len()
    }
}

/// What decides who may read a timeline: its access-control list and the restrictions in force
/// (shared maps, compared by identity).
struct Rights {
    acl: Option<Arc<crate::service::AccessControl>>,
    restrictions: imbl::HashMap<crate::model::Traveller, Arc<crate::service::Restriction>>,
}

impl Rights {
    fn of(world: &World, timeline: &TimelineId) -> Self {
        Self {
            acl: world.acls.get(timeline).cloned(),
            restrictions: world.restrictions.clone(),
        }
    }

    fn same(&self, other: &Self) -> bool {
        let acl = match (&self.acl, &other.acl) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        acl && self.restrictions.ptr_eq(&other.restrictions)
    }
}

/// Whether the follower of a stream may still read `timeline` at `world`: the error that ends
/// their stream when not.
pub(super) fn still_readable(
    world: &World,
    who: &crate::model::Traveller,
    operator: bool,
    timeline: &TimelineId,
) -> Result<(), ServiceError> {
    if let Some(level @ crate::service::RestrictionLevel::NoAccess) =
        super::access::restriction_of(world, who, operator)
    {
        return Err(super::access::restricted(level));
    }
    if world.timelines.contains_key(timeline)
        && super::access::right_of(world, who, operator, timeline).is_none()
    {
        return Err(ServiceError::AccessRevoked {
            timeline: timeline.to_string(),
        });
    }
    Ok(())
}

/// The task that watches one timeline for all its streams.
struct Hub {
    engine: Weak<Engine>,
    timeline: TimelineId,
    tx: Arc<watch::Sender<Seen>>,
    position: watch::Receiver<u64>,
}

impl Hub {
    async fn run(mut self) {
        let mut last = Seen::nothing();
        // Who may read the timeline, as last seen: a change wakes every stream to re-check.
        let mut rights: Option<Rights> = None;
        let mut last_scan: Option<(tokio::time::Instant, Duration)> = None;
        let mut first = true;
        loop {
            if !first {
                let timer = match self.next_boundary() {
                    Some(timer) => timer,
                    None => return,
                };
                tokio::select! {
                    () = self.tx.closed() => {
                        let Some(engine) = self.engine.upgrade() else { return };
                        if engine.hubs.retire(&self.timeline, &self.tx, false) {
                            return;
                        }
                        continue;
                    }
                    changed = self.position.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                    () = tokio::time::sleep_until(timer) => {}
                    () = tokio::time::sleep(CATCH_UP_EVERY) => {
                        let Some(engine) = self.engine.upgrade() else { return };
                        // A read: folds in and publishes what another process appended, which
                        // wakes this loop through `position` when there was any.
                        let _ = engine.snapshot().await;
                        continue;
                    }
                }
            }
            first = false;
            self.position.borrow_and_update();
            let Some(engine) = self.engine.upgrade() else {
                return;
            };
            let world = engine.snapshot_now();
            let kept = world
                .timelines
                .get(&self.timeline)
                .and_then(|state| engine.reports.unchanged(&world, state, engine.now()));
            let (anomalies, world) = match kept {
                Some(anomalies) => (anomalies, world),
                None => {
                    if let Some((began, took)) = last_scan {
                        tokio::time::sleep_until(began + LEAST_GAP.max(took * 2)).await;
                    }
                    // What is published from here on is in this scan or wakes the next one.
                    self.position.borrow_and_update();
                    let world = engine.snapshot_now();
                    let began = tokio::time::Instant::now();
                    match open_heavy(&engine, Arc::clone(&world), &self.timeline).await {
                        Ok((anomalies, _)) => {
                            last_scan = Some((began, began.elapsed()));
                            (anomalies, world)
                        }
                        Err(e) => {
                            // Gone (deleted) or unscannable: every stream ends with the error.
                            engine.hubs.retire(&self.timeline, &self.tx, true);
                            self.tx.send_replace(Seen {
                                failed: Some(e),
                                position: world.seq,
                                ..last
                            });
                            return;
                        }
                    }
                }
            };
            let now_rights = Rights::of(&world, &self.timeline);
            let rights_changed = rights
                .as_ref()
                .is_some_and(|before| !before.same(&now_rights));
            rights = Some(now_rights);
            if Arc::ptr_eq(&anomalies, &last.anomalies) || anomalies == last.anomalies {
                if rights_changed {
                    // Nothing new to tell; the streams wake to check they may still read.
                    last.position = world.seq;
                    last.before = Arc::clone(&last.anomalies);
                    last.changes = Arc::default();
                    self.tx.send_replace(last.clone());
                }
                continue;
            }
            let changes = differences(&last.anomalies, &anomalies);
            last = Seen {
                position: world.seq,
                before: Arc::clone(&last.anomalies),
                anomalies,
                changes: Arc::new(changes),
                failed: None,
            };
            self.tx.send_replace(last.clone());
        }
    }

    /// When the timer for the timeline's next window boundary fires (far off when there is
    /// none); `None` when the engine is gone.
    fn next_boundary(&self) -> Option<tokio::time::Instant> {
        let engine = self.engine.upgrade()?;
        let now = engine.now();
        let wait = engine
            .snapshot_now()
            .timelines
            .get(&self.timeline)
            .and_then(|state| monitor::next_change(&state.meta, now))
            .map_or(TIMER_MOST, |at| {
                (at - now)
                    .to_std()
                    .unwrap_or(Duration::ZERO)
                    .min(TIMER_MOST)
                    + TIMER_SLACK
            });
        Some(tokio::time::Instant::now() + wait)
    }
}

/// Follows the anomalies of `req.timeline_id` (the same whoever follows them).
pub(super) async fn watch_monitor(
    session: &EngineSession,
    req: MonitorWatch,
) -> Result<MonitorStream, ServiceError> {
    let engine = Arc::clone(&session.engine);
    let timeline = req.timeline_id.clone();
    // Subscribed before reading, so what the hub finds after this read is not missed.
    let mut hub = engine.hubs.subscribe(&engine, &timeline);
    hub.borrow_and_update();
    let world = engine.snapshot().await?;
    still_readable(&world, &session.traveller, session.admin, &timeline).map_err(|e| match e {
        ServiceError::AccessRevoked { timeline } => ServiceError::unknown("timeline", timeline),
        other => other,
    })?;
    let (open, checked_at) = open_heavy(&engine, Arc::clone(&world), &timeline).await?;
    // A resumed stream starts with the state now too: what changed while the client was away
    // is in it, whatever caused it (a write, or time alone), and nothing is told twice over a
    // cut in the middle of a batch. (`req.after` is accepted for that reason and not needed.)
    let _ = req.after;
    let status = if open.is_empty() {
        "stable"
    } else {
        "anomalies_detected"
    };
    let first = VecDeque::from([MonitorEvent {
        position: world.seq,
        change: MonitorChange::Snapshot(MonitorReport {
            status: status.into(),
            anomalies: open.as_ref().clone(),
            timeline_id: timeline,
            checked_at,
        }),
    }]);
    let state = Following {
        hub,
        engine: Arc::downgrade(&engine),
        follower: (session.traveller.clone(), session.admin),
        timeline: req.timeline_id.clone(),
        from: world.seq,
        open,
        queued: first,
        ended: false,
    };
    Ok(futures::stream::unfold(state, Following::next).boxed())
}

/// A stream's state between the changes it yields.
struct Following {
    /// The timeline's hub.
    hub: watch::Receiver<Seen>,
    /// Where rights are looked up on every push.
    engine: Weak<Engine>,
    /// Who follows, and whether they are an operator.
    follower: (crate::model::Traveller, bool),
    /// The timeline followed.
    timeline: TimelineId,
    /// The log position of the stream's snapshot: what the hub found before it is old news.
    from: u64,
    /// The anomalies the client was last told are open.
    open: Arc<Vec<Anomaly>>,
    /// Changes found and not yet yielded.
    queued: VecDeque<MonitorEvent>,
    /// The timeline is gone or a scan failed: the error was yielded, nothing more comes.
    ended: bool,
}

impl Following {
    async fn next(mut self) -> Option<(Result<MonitorEvent, ServiceError>, Self)> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some((Ok(event), self));
            }
            if self.ended || self.hub.changed().await.is_err() {
                return None;
            }
            let seen = self.hub.borrow_and_update().clone();
            if let Some(e) = seen.failed {
                self.ended = true;
                return Some((Err(e), self));
            }
            if let Some(engine) = self.engine.upgrade() {
                let (who, operator) = &self.follower;
                let world = engine.snapshot_now();
                if let Err(e) = still_readable(&world, who, *operator, &self.timeline) {
                    self.ended = true;
                    return Some((Err(e), self));
                }
            }
            if seen.position < self.from {
                continue;
            }
            let changes = if Arc::ptr_eq(&seen.before, &self.open) {
                seen.changes
            } else {
                Arc::new(differences(&self.open, &seen.anomalies))
            };
            self.queued
                .extend(changes.iter().map(|change| MonitorEvent {
                    position: seen.position,
                    change: change.clone(),
                }));
            self.open = seen.anomalies;
        }
    }
}

/// What changed from `before` to `after`, anomalies told apart by id: those that appeared or
/// whose words changed (told again as appeared: a client replaces its copy), in the order of
/// `after`, then those resolved.
fn differences(before: &[Anomaly], after: &[Anomaly]) -> Vec<MonitorChange> {
    let was: HashMap<&AnomalyId, &Anomaly> = before.iter().map(|a| (&a.anomaly_id, a)).collect();
    let is: HashSet<&AnomalyId> = after.iter().map(|a| &a.anomaly_id).collect();
    let appeared = after
        .iter()
        .filter(|a| was.get(&a.anomaly_id).is_none_or(|old| *old != *a))
        .map(|a| MonitorChange::Appeared(a.clone()));
    let resolved = before
        .iter()
        .filter(|a| !is.contains(&a.anomaly_id))
        .map(|a| MonitorChange::Resolved(a.clone()));
    appeared.chain(resolved).collect()
}
