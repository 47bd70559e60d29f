//! The monitor, once and as a stream: [`monitor_report`] scans a timeline (the same for every
//! viewer); [`watch_monitor`] rescans whenever the engine publishes a change (its own writes, or
//! another process's once caught up with) and tells what appeared and what resolved.
//!
//! A stream starts with a snapshot of every open anomaly, a resumed one too: the difference
//! between what a client was last told and now cannot be worked out exactly (anomalies also come
//! and go with time alone, at the same log position), so a client replaces what it knew with the
//! snapshot. An anomaly whose words change (a window's time left) is told again as appeared.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;

use super::rules;
use super::session::EngineSession;
use super::{Engine, TimelineState, World};
use crate::error::ServiceError;
use crate::model::{
    AnomalyId, History, Instant, Item, Position, TimeRange, TimelineId, Traveller, Whereabouts,
};
use crate::monitor::{self, Graph, Owner, Scan};
use crate::paradox::Subject;
use crate::service::{
    Anomaly, MonitorChange, MonitorEvent, MonitorQuery, MonitorReport, MonitorStream, MonitorWatch,
};

/// How often a stream rescans with no change published: some anomalies come with time alone
/// (a window entering its last tenth), and a store shared with another process without
/// notifications (SQLite) is read again then.
const RESCAN_EVERY: Duration = Duration::from_secs(5);

/// Under a stream of writes a stream rescans at most this often, and never spends more than
/// half its time scanning (a scan of a big timeline takes a while): changes are coalesced.
const LEAST_GAP: Duration = Duration::from_millis(100);

/// Each timeline's last rescan ([`Graph`]), kept while its history is unchanged: the
/// timelines list counts every timeline's anomalies, which must not rescan each of them on
/// every read.
#[derive(Debug, Default)]
pub(crate) struct Graphs(Mutex<HashMap<TimelineId, (History, Arc<Graph>)>>);

impl Graphs {
    /// The rescan of `state`'s history, from the last one when the history is the same.
    fn of(&self, world: &World, state: &TimelineState) -> Arc<Graph> {
        let id = &state.meta.id;
        if let Some((kept, graph)) = self.lock().get(id)
            && kept.same_as(&state.history)
        {
            return Arc::clone(graph);
        }
        let graph = Arc::new(Graph::of(&state.history));
        let mut kept = self.lock();
        // Deleted timelines' rescans go.
        kept.retain(|id, _| world.timelines.contains_key(id));
        kept.insert(id.clone(), (state.history.clone(), Arc::clone(&graph)));
        graph
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TimelineId, (History, Arc<Graph>)>> {
        // A panic elsewhere leaves a usable cache: every entry is whole.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The open anomalies of `state`'s timeline at `world`: the same for every viewer (ids, kinds
/// and count), so the timelines list and the monitor read one number.
pub(super) fn anomalies(
    graphs: &Graphs,
    world: &World,
    state: &TimelineState,
    now: Instant,
    range: Option<&TimeRange>,
) -> Vec<Anomaly> {
    let timeline = &state.meta.id;
    let graph = graphs.of(world, state);
    // Everyone's items that may be in this timeline, by owner, with the owner's position.
    let mut by_owner: BTreeMap<&Traveller, Vec<Item>> = BTreeMap::new();
    let mut positions: HashMap<&Traveller, Position> = HashMap::new();
    for item in world.items.values() {
        let position = positions
            .entry(&item.owner)
            .or_insert_with(|| world.position_of(&item.owner, now));
        let here = &item.origin_timeline == timeline
            || matches!(&item.whereabouts, Whereabouts::Left { timeline: t, .. } if t == timeline)
            || (item.whereabouts == Whereabouts::Carried && &position.timeline == timeline);
        if here {
            by_owner
                .entry(&item.owner)
                .or_default()
                .push((**item).clone());
        }
    }
    let owners: Vec<Owner<'_>> = by_owner
        .iter()
        .filter_map(|(traveller, items)| {
            let position = positions.get(traveller)?;
            Some(Owner {
                subject: Subject {
                    timeline,
                    history: &state.history,
                    traveller,
                    position,
                    position_time: position.time_at(now),
                    items,
                },
                arrived_at: (&position.timeline == timeline).then_some(position.arrived_at),
            })
        })
        .collect();
    let failures = super::jobs::failures(world, timeline);
    let found = monitor::scan(&Scan {
        timeline: &state.meta,
        history: &state.history,
        graph: &graph,
        owners: &owners,
        now,
        touched: &state.touched,
        range,
        failures: &failures,
    });
    if range.is_none() {
        crate::metrics::record_anomalies(timeline, &found);
    }
    found
}

/// The monitor's report on `req`'s timeline at `world` (the same whoever asks).
pub(super) fn monitor_report(
    graphs: &Graphs,
    world: &World,
    now: Instant,
    req: &MonitorQuery,
) -> Result<MonitorReport, ServiceError> {
    let state = rules::referenced(world, &req.timeline_id)?;
    let anomalies = anomalies(graphs, world, state, now, req.time_range.as_ref());
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

/// What one stream scans.
struct Watcher {
    engine: Arc<Engine>,
    timeline: TimelineId,
}

impl Watcher {
    /// The whole timeline's report at `world`, scanned on the blocking pool (a scan grows with
    /// the timeline).
    async fn scan(&self, world: Arc<World>) -> Result<MonitorReport, ServiceError> {
        let engine = Arc::clone(&self.engine);
        let req = MonitorQuery {
            timeline_id: self.timeline.clone(),
            time_range: None,
        };
        tokio::task::spawn_blocking(move || {
            monitor_report(&engine.graphs, &world, engine.now(), &req)
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("a monitor scan failed: {e}")))?
    }
}

/// Follows the anomalies of `req.timeline_id` (the same whoever follows them).
pub(super) async fn watch_monitor(
    session: &EngineSession,
    req: MonitorWatch,
) -> Result<MonitorStream, ServiceError> {
    let watcher = Watcher {
        engine: Arc::clone(&session.engine),
        timeline: req.timeline_id.clone(),
    };
    // Subscribed before reading, so nothing published after this read goes unseen.
    let mut position = watcher.engine.position();
    position.borrow_and_update();
    let world = watcher.engine.snapshot().await?;
    let now = watcher.scan(Arc::clone(&world)).await?;
    // A resumed stream starts with the state now too: what changed while the client was away
    // is in it, whatever caused it (a write, or time alone), and nothing is told twice over a
    // cut in the middle of a batch. (`req.after` is accepted for that reason and not needed.)
    let _ = req.after;
    let open = now.anomalies.clone();
    let first = VecDeque::from([MonitorEvent {
        position: world.seq,
        change: MonitorChange::Snapshot(now),
    }]);
    let state = Following {
        watcher,
        position,
        open,
        queued: first,
        ended: false,
        last_scan: None,
    };
    Ok(futures::stream::unfold(state, Following::next).boxed())
}

/// A stream's state between the changes it yields.
struct Following {
    watcher: Watcher,
    position: watch::Receiver<u64>,
    /// The anomalies the client was last told are open.
    open: Vec<Anomaly>,
    /// Changes found and not yet yielded.
    queued: VecDeque<MonitorEvent>,
    /// The timeline is gone or a scan failed: the error was yielded, nothing more comes.
    ended: bool,
    /// When the last scan began, and how long it took.
    last_scan: Option<(tokio::time::Instant, Duration)>,
}

impl Following {
    async fn next(mut self) -> Option<(Result<MonitorEvent, ServiceError>, Self)> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some((Ok(event), self));
            }
            if self.ended {
                return None;
            }
            tokio::select! {
                changed = self.position.changed() => {
                    if changed.is_err() {
                        return None; // cannot happen while this stream holds the engine
                    }
                    self.position.borrow_and_update();
                }
                () = tokio::time::sleep(RESCAN_EVERY) => {}
            }
            if let Some((began, took)) = self.last_scan {
                tokio::time::sleep_until(began + LEAST_GAP.max(took * 2)).await;
            }
            // What is published from here on is in this scan or wakes the next one.
            self.position.borrow_and_update();
            let began = tokio::time::Instant::now();
            // A read like any other: it also folds in what another process appended to a
            // store that does not say so (SQLite), so such writes show within a rescan.
            let world = match self.watcher.engine.snapshot().await {
                Ok(world) => world,
                Err(e) => {
                    self.ended = true;
                    return Some((Err(e), self));
                }
            };
            match self.watcher.scan(Arc::clone(&world)).await {
                Ok(report) => {
                    self.last_scan = Some((began, began.elapsed()));
                    self.queued
                        .extend(differences(&self.open, &report.anomalies, world.seq));
                    self.open = report.anomalies;
                }
                Err(e) => {
                    self.ended = true;
                    return Some((Err(e), self));
                }
            }
        }
    }
}

/// What changed from `before` to `after`, anomalies told apart by id: those that appeared or
/// whose words changed (told again as appeared: a client replaces its copy), in the order of
/// `after`, then those resolved.
fn differences(before: &[Anomaly], after: &[Anomaly], position: u64) -> Vec<MonitorEvent> {
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
    appeared
        .chain(resolved)
        .map(|change| MonitorEvent { position, change })
        .collect()
}
