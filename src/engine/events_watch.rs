//! `GET /v1/monitor-events/stream`: the events `monitor-events` reports, followed.
//!
//! **One feed per question, shared.** Every stream asking the same question (timeline,
//! location, time range) reads one [`Feed`]: a task that wakes on a publication, finds in O(1)
//! whether the timeline's events or isolations changed (persistent maps are compared by
//! pointer) and only then works out what changed for the question, once for all its streams:
//! - the events that became current or stopped being current since it last looked, from a diff
//!   of the timeline's persistent time index that skips what both versions share, so it costs
//!   what the writes touched, not the timeline's size ([`History::joined_and_left`]);
//! - the events whose `in_paradox` moved, from the subjects of the open anomalies before and
//!   after (the monitor's kept report, shared with every other reader).
//!
//! Under a stream of writes a feed looks at most every [`LEAST_GAP`] (the writes meanwhile are
//! in one look). A stream keeps no copy of what it told: its state is its place in the feed.
//!
//! **A snapshot is a page.** A stream starts with the first page of the matching events (its
//! `limit`: default and at most [`PageRequest::MAX_LIMIT`]) and, when more match, the
//! `next_cursor` to read the rest with `GET /v1/monitor-events`; the changes then cover every
//! matching event. A stream that falls [`BACKLOG`] changes behind its feed (a client that does
//! not read) is sent a fresh snapshot page instead, which replaces what its client knew.
//! `relative` (past or future) moves with the traveller's clock alone: each stream tells it as
//! it is with each change, and it is not a change by itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{broadcast, watch};

use super::session::EngineSession;
use super::{Engine, World, rules};
use crate::error::ServiceError;
use crate::model::{Event, EventId, History, TimeRange, TimelineId, Traveller};
use crate::paradox::Isolated;
use crate::service::{
    Anomaly, EventsChange, EventsStream, EventsUpdate, MonitorEventsQuery, MonitoredEvent,
    PageRequest, Relative,
};

/// Under a stream of writes a feed looks at most this often.
const LEAST_GAP: Duration = Duration::from_millis(100);

/// How many changes a stream may fall behind its feed before it is sent a fresh snapshot.
const BACKLOG: usize = 256;

/// What a feed answers: the timeline and the search's filters (not its page).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Question {
    timeline: TimelineId,
    /// Trimmed; `None` for every location.
    location: Option<String>,
    range: Option<TimeRange>,
}

impl Question {
    fn of(req: &MonitorEventsQuery, timeline: TimelineId) -> Self {
        Self {
            timeline,
            location: req
                .location
                .as_deref()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
            range: req.time_range,
        }
    }

    fn asks_for(&self, event: &Event) -> bool {
        History::matches(self.location.as_deref(), self.range.as_ref(), event)
    }
}

/// What a feed hands its streams.
#[derive(Debug)]
enum Told {
    /// What changed at log position `position`: events new or with a new change state (in
    /// time order; `relative` is each stream's to set), events that no longer stand.
    Changes {
        position: u64,
        changed: Vec<MonitoredEvent>,
        removed: Vec<EventId>,
    },
    /// The feed ended with this error (the timeline was deleted).
    Ended(ServiceError),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every entry is whole whatever panicked.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

type Sender = Arc<broadcast::Sender<Arc<Told>>>;

/// The feeds of every question followed now (one of the engine's fields).
#[derive(Debug, Default)]
pub(crate) struct Feeds(Mutex<HashMap<Question, Sender>>);

impl Feeds {
    /// A receiver of `question`'s feed, starting one (from `world`) when there is none.
    fn subscribe(
        &self,
        engine: &Arc<Engine>,
        question: &Question,
        world: &Arc<World>,
    ) -> broadcast::Receiver<Arc<Told>> {
        let mut feeds = lock(&self.0);
        if let Some(tx) = feeds.get(question) {
            // A feed leaves the map (under this lock) before it stops: this one is running.
            return tx.subscribe();
        }
        let (tx, rx) = broadcast::channel(BACKLOG);
        let tx = Arc::new(tx);
        feeds.insert(question.clone(), Arc::clone(&tx));
        let feed = Feed {
            engine: Arc::downgrade(engine),
            question: question.clone(),
            tx,
            // Before `world` is looked at: what is published after it wakes the feed.
            position: engine.position(),
        };
        tokio::spawn(feed.run(Arc::clone(world)));
        rx
    }

    /// Takes `question`'s feed out of the map when nobody follows it (or `always`); answers
    /// whether it is out.
    fn retire(&self, question: &Question, tx: &Sender, always: bool) -> bool {
        let mut feeds = lock(&self.0);
        if !always && tx.receiver_count() > 0 {
            return false;
        }
        if feeds.get(question).is_some_and(|t| Arc::ptr_eq(t, tx)) {
            feeds.remove(question);
        }
        true
    }

    /// How many questions have a feed (for tests).
    pub(crate) fn len(&self) -> usize {
        lock(&self.0).len()
    }
}

/// What a feed last worked out its changes from.
struct Seen {
    history: History,
    isolated: Isolated,
    /// The open anomalies then.
    open: Arc<Vec<Anomaly>>,
}

/// The task that answers one question for all its streams.
struct Feed {
    engine: Weak<Engine>,
    question: Question,
    tx: Sender,
    position: watch::Receiver<u64>,
}

impl Feed {
    /// Answers from `world` on (the world its first stream's snapshot is no older than).
    async fn run(mut self, world: Arc<World>) {
        let mut seen = None;
        let mut worked_at: Option<tokio::time::Instant> = None;
        let mut first = Some(world);
        loop {
            if let Some(world) = first.take() {
                let Some(engine) = self.engine.upgrade() else {
                    return;
                };
                let question = self.question.clone();
                let worked = super::heavy::run("an events feed", move || {
                    differences(&engine, &world, &question, None)
                })
                .await;
                // Otherwise the timeline is gone already: the next look says so.
                if let Ok((_, now)) = worked {
                    seen = Some(now);
                }
            }
            tokio::select! {
                changed = self.position.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = self.tx.closed() => {
                    let Some(engine) = self.engine.upgrade() else { return };
                    if engine.event_feeds.retire(&self.question, &self.tx, false) {
                        return;
                    }
                    continue;
                }
            }
            if let Some(last) = worked_at {
                tokio::time::sleep_until(last + LEAST_GAP).await;
            }
            self.position.borrow_and_update();
            let Some(engine) = self.engine.upgrade() else {
                return;
            };
            if engine.event_feeds.retire(&self.question, &self.tx, false) {
                return;
            }
            let world = engine.snapshot_now();
            let Some(state) = world.timelines.get(&self.question.timeline) else {
                engine.event_feeds.retire(&self.question, &self.tx, true);
                let gone = ServiceError::not_found("timeline", &self.question.timeline);
                let _ = self.tx.send(Arc::new(Told::Ended(gone)));
                return;
            };
            if let Some(s) = &seen
                && state.history.same_as(&s.history)
                && state.isolated.ptr_eq(&s.isolated)
            {
                continue;
            }
            worked_at = Some(tokio::time::Instant::now());
            let before = seen.take();
            let question = self.question.clone();
            let engine2 = Arc::clone(&engine);
            let worked = super::heavy::run("an events feed", move || {
                differences(&engine2, &world, &question, before.as_ref())
            })
            .await;
            match worked {
                Ok((told, now)) => {
                    seen = Some(now);
                    if let Some(told) = told {
                        // No receiver: the next look retires the feed.
                        let _ = self.tx.send(Arc::new(told));
                    }
                }
                Err(e) => {
                    engine.event_feeds.retire(&self.question, &self.tx, true);
                    let _ = self.tx.send(Arc::new(Told::Ended(e)));
                    return;
                }
            }
        }
    }
}

/// Whether an open anomaly names `event` (its id or its lineage).
fn named(subjects: &std::collections::HashSet<&str>, event: &Event) -> bool {
    subjects.contains(event.id.as_str()) || subjects.contains(event.lineage.as_str())
}

fn subjects(open: &[Anomaly]) -> std::collections::HashSet<&str> {
    open.iter()
        .flat_map(|a| a.subjects.iter().map(String::as_str))
        .collect()
}

/// What changed for `question` between `before` and `world` (on a heavy thread: the
/// anomalies may need a scan), and what it was worked out from.
fn differences(
    engine: &Engine,
    world: &World,
    question: &Question,
    before: Option<&Seen>,
) -> Result<(Option<Told>, Seen), ServiceError> {
    let state = rules::referenced(world, &question.timeline)?;
    let now = engine.now();
    let open = super::watch::open_anomalies(&engine.reports, world, state, now);
    let seen = Seen {
        history: state.history.clone(),
        isolated: state.isolated.clone(),
        open: Arc::clone(&open),
    };
    let Some(before) = before else {
        // Nothing to compare with (the feed's first look): its streams hold a snapshot.
        return Ok((None, seen));
    };
    let (joined, left) = state.history.joined_and_left(&before.history);
    let mut changed: Vec<Arc<Event>> = joined
        .into_iter()
        .filter(|e| question.asks_for(e))
        .collect();
    // The anomalies that name events moved: the current events they name, before or now,
    // whose answer differs.
    if !Arc::ptr_eq(&before.open, &open) {
        let (then, now_named) = (subjects(&before.open), subjects(&open));
        let mut flipped: Vec<Arc<Event>> = then
            .symmetric_difference(&now_named)
            .filter_map(|s| s.parse::<EventId>().ok())
            .filter_map(|id| state.history.head_of(&id).cloned())
            .filter(|e| e.status.is_current() && question.asks_for(e))
            .filter(|e| named(&then, e) != named(&now_named, e))
            .collect();
        flipped.retain(|e| !changed.iter().any(|c| c.id == e.id));
        changed.extend(flipped);
        changed.sort_by(|a, b| (a.time, &a.id).cmp(&(b.time, &b.id)));
        changed.dedup_by(|a, b| a.id == b.id);
    }
    let mut removed: Vec<EventId> = left
        .into_iter()
        .filter(|e| question.asks_for(e) && !changed.iter().any(|c| c.id == e.id))
        .map(|e| e.id.clone())
        .collect();
    removed.sort();
    removed.dedup();
    if changed.is_empty() && removed.is_empty() {
        return Ok((None, seen));
    }
    let records = changed.iter().map(|e| rules::event_record(e)).collect();
    // `relative` is set by each stream for its traveller.
    let changed = super::navigation::monitored(world, &question.timeline, records, &open, now)?;
    Ok((
        Some(Told::Changes {
            position: world.seq,
            changed,
            removed,
        }),
        seen,
    ))
}

/// The first page of what `req` asks at `world` for `traveller`, with the cursor of the next
/// one, worked out on a heavy thread (the anomalies may need a scan).
async fn first_page(
    engine: &Arc<Engine>,
    world: Arc<World>,
    traveller: &Traveller,
    operator: bool,
    req: &MonitorEventsQuery,
) -> Result<EventsUpdate, ServiceError> {
    let engine = Arc::clone(engine);
    let traveller = traveller.clone();
    let req = req.clone();
    super::heavy::run("an events page", move || {
        let mint = || engine.mint();
        let ctx = rules::Ctx {
            traveller: &traveller,
            now: engine.now(),
            mint: &mint,
            operator,
        };
        let page =
            super::session::events_page(&world, &ctx, &req, |history, location, after, take| {
                history.search(location, req.time_range.as_ref(), after, take)
            })?;
        let timeline = req
            .timeline_id
            .clone()
            .unwrap_or_else(|| world.position_of(&traveller, ctx.now).timeline);
        let state = rules::referenced(&world, &timeline)?;
        let open = super::watch::open_anomalies(&engine.reports, &world, state, ctx.now);
        let time = world.position_of(&traveller, ctx.now).time_at(ctx.now);
        Ok(EventsUpdate {
            position: world.seq,
            change: EventsChange::Snapshot {
                events: super::navigation::monitored(&world, &timeline, page.items, &open, time)?,
                next_cursor: page.next_cursor,
            },
        })
    })
    .await
}

/// Opens the stream for `session`'s traveller.
pub(super) async fn watch_events(
    session: &EngineSession,
    mut req: MonitorEventsQuery,
) -> Result<EventsStream, ServiceError> {
    let engine = Arc::clone(&session.engine);
    req.page.limit.get_or_insert(PageRequest::MAX_LIMIT);
    // Subscribed before reading, so a publication after this read wakes the stream.
    let mut position = engine.position();
    position.borrow_and_update();
    let world = engine.snapshot().await?;
    let timeline = req
        .timeline_id
        .clone()
        .unwrap_or_else(|| world.position_of(&session.traveller, engine.now()).timeline);
    req.timeline_id = Some(timeline.clone());
    super::watch::still_readable(&world, &session.traveller, session.admin, &timeline).map_err(
        |e| match e {
            ServiceError::AccessRevoked { timeline } => ServiceError::unknown("timeline", timeline),
            other => other,
        },
    )?;
    rules::referenced(&world, &timeline)?;
    let question = Question::of(&req, timeline);
    let told = engine.event_feeds.subscribe(&engine, &question, &world);
    // Every change the feed works out from here on reaches this stream; the snapshot is read
    // after subscribing, so nothing falls between the two (a change both hold is told twice).
    let world = engine.snapshot_now();
    let snapshot = first_page(&engine, world, &session.traveller, session.admin, &req).await?;
    let following = Following {
        engine: Arc::downgrade(&engine),
        position,
        told,
        traveller: session.traveller.clone(),
        operator: session.admin,
        req,
        timeline: question.timeline,
        queued: vec![snapshot].into(),
        ended: false,
        checked_at: None,
    };
    Ok(futures::stream::unfold(following, Following::next).boxed())
}

/// A stream's state between the changes it yields: where it is in its feed, nothing it told.
struct Following {
    engine: Weak<Engine>,
    /// Wakes the stream to check the follower may still read the timeline.
    position: watch::Receiver<u64>,
    told: broadcast::Receiver<Arc<Told>>,
    traveller: Traveller,
    /// Whether the follower is an operator (rights are re-checked as the log moves).
    operator: bool,
    req: MonitorEventsQuery,
    timeline: TimelineId,
    queued: std::collections::VecDeque<EventsUpdate>,
    ended: bool,
    /// When the follower's rights were last checked.
    checked_at: Option<tokio::time::Instant>,
}

impl Following {
    async fn next(mut self) -> Option<(Result<EventsUpdate, ServiceError>, Self)> {
        loop {
            if let Some(update) = self.queued.pop_front() {
                return Some((Ok(update), self));
            }
            if self.ended {
                return None;
            }
            let told = tokio::select! {
                told = self.told.recv() => Some(told),
                changed = self.position.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                    None
                }
            };
            let engine = self.engine.upgrade()?;
            let world = engine.snapshot_now();
            let Some(told) = told else {
                // The log moved: the follower's rights may have, at most every LEAST_GAP.
                if let Some(last) = self.checked_at {
                    tokio::time::sleep_until(last + LEAST_GAP).await;
                }
                self.position.borrow_and_update();
                self.checked_at = Some(tokio::time::Instant::now());
                if let Err(e) = self.may_read(&engine.snapshot_now()) {
                    return Some((Err(e), self.end()));
                }
                continue;
            };
            if let Err(e) = self.may_read(&world) {
                return Some((Err(e), self.end()));
            }
            match told {
                Ok(told) => match &*told {
                    Told::Changes {
                        position,
                        changed,
                        removed,
                    } => {
                        let now = engine.now();
                        let time = world.position_of(&self.traveller, now).time_at(now);
                        self.queued.extend(changed.iter().map(|event| EventsUpdate {
                            position: *position,
                            change: EventsChange::Changed {
                                event: MonitoredEvent {
                                    relative: if event.event.time <= time {
                                        Relative::Past
                                    } else {
                                        Relative::Future
                                    },
                                    ..event.clone()
                                },
                            },
                        }));
                        self.queued.extend(removed.iter().map(|id| EventsUpdate {
                            position: *position,
                            change: EventsChange::Removed {
                                event_id: id.clone(),
                            },
                        }));
                    }
                    Told::Ended(e) => return Some((Err(e.clone()), self.end())),
                },
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    // Fell behind (a client that does not read): a fresh page replaces it all.
                    match first_page(&engine, world, &self.traveller, self.operator, &self.req)
                        .await
                    {
                        Ok(snapshot) => self.queued.push_back(snapshot),
                        Err(e) => return Some((Err(e), self.end())),
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// Whether the follower may still read the timeline at `world`.
    fn may_read(&self, world: &World) -> Result<(), ServiceError> {
        super::watch::still_readable(world, &self.traveller, self.operator, &self.timeline)?;
        if !world.timelines.contains_key(&self.timeline) {
            return Err(ServiceError::not_found("timeline", &self.timeline));
        }
        Ok(())
    }

    fn end(mut self) -> Self {
        self.ended = true;
        self
    }
}
