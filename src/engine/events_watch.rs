//! `GET /v1/monitor-events/stream`: the events `monitor-events` reports, followed.
//!
//! A stream wakes on every publication, finds in O(1) whether its timeline's events or
//! isolations changed (persistent maps are compared by pointer) and, only then, works out the
//! matching events again with their change state and tells what differs from what the client
//! was told: `changed` for an event that is new or whose state moved, `removed` for one that no
//! longer stands. Working them out costs O(matching events), at most every 100 ms under a
//! stream of writes, so a stream of a big timeline should name a location or a time range.
//! `relative` (past or future) moves with the traveller's clock alone: it is told as it is
//! with each change, and is not a change by itself. The anomalies that say `in_paradox` are the
//! monitor's kept scan, shared with every other reader.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use futures::StreamExt;
use tokio::sync::watch;

use super::session::EngineSession;
use super::{Engine, World, rules};
use crate::error::ServiceError;
use crate::model::{EventId, History, Traveller};
use crate::paradox::Isolated;
use crate::service::{
    EventsChange, EventsStream, EventsUpdate, MonitorEventsQuery, MonitoredEvent,
};

/// The matching events of `timeline` at `world` with their change state, in time order, worked
/// out on the blocking pool (the anomalies may need a scan).
async fn matching(
    engine: &Arc<Engine>,
    world: Arc<World>,
    traveller: &Traveller,
    req: &MonitorEventsQuery,
    timeline: &crate::model::TimelineId,
) -> Result<Vec<MonitoredEvent>, ServiceError> {
    let engine = Arc::clone(engine);
    let traveller = traveller.clone();
    let req = req.clone();
    let timeline = timeline.clone();
    tokio::task::spawn_blocking(move || {
        let state = rules::referenced(&world, &timeline)?;
        let now = engine.now();
        let open = super::watch::open_anomalies(&engine.reports, &world, state, now);
        let location = req
            .location
            .as_deref()
            .map(str::trim)
            .filter(|l| !l.is_empty());
        let records = state
            .history
            .search(location, req.time_range.as_ref(), None, usize::MAX)
            .iter()
            .map(|e| rules::event_record(e))
            .collect();
        let time = world.position_of(&traveller, now).time_at(now);
        super::navigation::monitored(&world, &timeline, records, &open, time)
    })
    .await
    .map_err(|e| ServiceError::Internal(format!("an events scan failed: {e}")))?
}

/// Opens the stream for `session`'s traveller.
pub(super) async fn watch_events(
    session: &EngineSession,
    req: MonitorEventsQuery,
) -> Result<EventsStream, ServiceError> {
    let engine = Arc::clone(&session.engine);
    // Subscribed before reading, so a publication after this read wakes the stream.
    let mut position = engine.position();
    position.borrow_and_update();
    let world = engine.snapshot().await?;
    let timeline = req
        .timeline_id
        .clone()
        .unwrap_or_else(|| world.position_of(&session.traveller, engine.now()).timeline);
    super::watch::still_readable(&world, &session.traveller, session.admin, &timeline).map_err(
        |e| match e {
            ServiceError::AccessRevoked { timeline } => ServiceError::unknown("timeline", timeline),
            other => other,
        },
    )?;
    let state = rules::referenced(&world, &timeline)?;
    let (history, isolated) = (state.history.clone(), state.isolated.clone());
    let events = matching(
        &engine,
        Arc::clone(&world),
        &session.traveller,
        &req,
        &timeline,
    )
    .await?;
    let known = events
        .iter()
        .map(|e| (e.event.event_id.clone(), e.clone()))
        .collect();
    let following = Following {
        engine: Arc::downgrade(&engine),
        position,
        traveller: session.traveller.clone(),
        operator: session.admin,
        req,
        timeline,
        history,
        isolated,
        known,
        queued: vec![EventsUpdate {
            position: world.seq,
            change: EventsChange::Snapshot { events },
        }]
        .into(),
        ended: false,
        worked_at: None,
    };
    Ok(futures::stream::unfold(following, Following::next).boxed())
}

/// A stream's state between the changes it yields.
struct Following {
    engine: Weak<Engine>,
    position: watch::Receiver<u64>,
    traveller: Traveller,
    /// Whether the follower is an operator (rights are re-checked on every wake).
    operator: bool,
    req: MonitorEventsQuery,
    timeline: crate::model::TimelineId,
    /// What the client's view was worked out from.
    history: History,
    isolated: Isolated,
    /// What the client was told, by event.
    known: HashMap<EventId, MonitoredEvent>,
    queued: std::collections::VecDeque<EventsUpdate>,
    ended: bool,
    /// When the events were last worked out.
    worked_at: Option<tokio::time::Instant>,
}

/// Under a stream of writes the events are worked out at most this often.
const LEAST_GAP: std::time::Duration = std::time::Duration::from_millis(100);

impl Following {
    async fn next(mut self) -> Option<(Result<EventsUpdate, ServiceError>, Self)> {
        loop {
            if let Some(update) = self.queued.pop_front() {
                return Some((Ok(update), self));
            }
            if self.ended || self.position.changed().await.is_err() {
                return None;
            }
            // Under a stream of writes, look at most every LEAST_GAP (the writes meanwhile are
            // in that one look).
            if let Some(last) = self.worked_at {
                tokio::time::sleep_until(last + LEAST_GAP).await;
            }
            self.position.borrow_and_update();
            let engine = self.engine.upgrade()?;
            let world = engine.snapshot_now();
            if let Err(e) =
                super::watch::still_readable(&world, &self.traveller, self.operator, &self.timeline)
            {
                self.ended = true;
                return Some((Err(e), self));
            }
            let Some(state) = world.timelines.get(&self.timeline) else {
                self.ended = true;
                return Some((
                    Err(ServiceError::not_found("timeline", &self.timeline)),
                    self,
                ));
            };
            if state.history.same_as(&self.history) && state.isolated.ptr_eq(&self.isolated) {
                continue;
            }
            self.worked_at = Some(tokio::time::Instant::now());
            self.history = state.history.clone();
            self.isolated = state.isolated.clone();
            let now = match matching(
                &engine,
                Arc::clone(&world),
                &self.traveller,
                &self.req,
                &self.timeline,
            )
            .await
            {
                Ok(events) => events,
                Err(e) => {
                    self.ended = true;
                    return Some((Err(e), self));
                }
            };
            let seq = world.seq;
            let mut still = HashMap::with_capacity(now.len());
            for event in now {
                let id = event.event.event_id.clone();
                // Past or future moves with the traveller's clock alone: it is told as it is
                // with a change, and is no change by itself.
                let same = |known: &MonitoredEvent| {
                    known.event == event.event
                        && known.changed_at == event.changed_at
                        && known.in_paradox == event.in_paradox
                };
                if !self.known.get(&id).is_some_and(same) {
                    self.queued.push_back(EventsUpdate {
                        position: seq,
                        change: EventsChange::Changed {
                            event: event.clone(),
                        },
                    });
                }
                still.insert(id, event);
            }
            let mut gone: Vec<_> = self
                .known
                .keys()
                .filter(|id| !still.contains_key(*id))
                .cloned()
                .collect();
            gone.sort();
            self.queued
                .extend(gone.into_iter().map(|event_id| EventsUpdate {
                    position: seq,
                    change: EventsChange::Removed { event_id },
                }));
            self.known = still;
        }
    }
}
