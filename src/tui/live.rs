//! Pushed monitor changes: the dashboard follows the watched timeline's anomaly stream
//! ([`crate::service::TimelineService::watch_monitor`]: SSE from a server, the engine's own
//! publications when embedded) and shows each change as it comes, whatever the tick.
//!
//! A background task holds the stream and forwards what it brings into the message queue as
//! [`Msg::Pushed`]; a lost stream is opened again after a pause, resuming after the last position
//! seen. While there is no stream the dashboard polls on the tick, as before, and the header says
//! so ([`Link::Polling`]). Each subscription has a generation, so that changes of a stream for
//! a timeline no longer watched are dropped.

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::action::{Msg, Push};
use crate::model::TimelineId;
use crate::service::prelude::*;
use crate::service::{MonitorEvent, MonitorWatch};

/// First pause before opening a lost stream again; doubled up to [`MOST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_secs(1);
const MOST_PAUSE: Duration = Duration::from_secs(30);

/// Whether changes are pushed or polled for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// Not following anything (no timeline watched yet).
    Off,
    /// Opening the stream.
    Connecting,
    /// Changes arrive as they happen.
    Live,
    /// No stream (why, in words): the monitor is refreshed on the tick.
    Polling(String),
    /// The stream could not reach the server (why): the monitor is refreshed on the tick,
    /// and the stream is opened again as soon as the server answers a call.
    Unreached(String),
}

/// The subscription of one dashboard.
#[derive(Debug)]
pub struct Follower {
    /// Bumped with every new subscription; pushes of older ones are stale.
    generation: u64,
    /// The timeline followed.
    timeline: Option<TimelineId>,
    task: Option<JoinHandle<()>>,
    /// Live or polling, for the header.
    pub link: Link,
    /// When the current subscription was opened (a stream is not opened again sooner than
    /// [`FIRST_PAUSE`] after it).
    opened: Option<std::time::Instant>,
}

impl Default for Follower {
    fn default() -> Self {
        Self {
            generation: 0,
            timeline: None,
            task: None,
            link: Link::Off,
            opened: None,
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Follower {
    /// Follows `timeline` (nothing if it is followed already); the old stream is closed.
    /// Needs a Tokio runtime (the dashboard's); without one nothing is followed and the
    /// dashboard polls.
    pub fn follow(
        &mut self,
        service: &Arc<dyn TimelineService>,
        timeline: Option<TimelineId>,
        tx: &UnboundedSender<Msg>,
    ) {
        if self.timeline == timeline && self.task.is_some() {
            return;
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.generation += 1;
        self.timeline = timeline.clone();
        let Some(timeline) = timeline else {
            self.link = Link::Off;
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.link = Link::Polling("no runtime to follow changes".into());
            return;
        };
        self.link = Link::Connecting;
        self.opened = Some(std::time::Instant::now());
        let generation = self.generation;
        let service = Arc::clone(service);
        let tx = tx.clone();
        self.task = Some(runtime.spawn(stream_task(service, timeline, generation, tx)));
    }

    /// Takes in what the task told; answers the changes to apply, if they are the current
    /// subscription's.
    pub fn on_push(&mut self, generation: u64, push: Push) -> Option<Vec<MonitorEvent>> {
        if generation != self.generation {
            return None;
        }
        match push {
            Push::Opened => {
                self.link = Link::Live;
                None
            }
            Push::Changes(events) => {
                self.link = Link::Live;
                Some(events)
            }
            Push::Lost(why, true) => {
                self.link = Link::Unreached(why);
                None
            }
            Push::Lost(why, false) => {
                self.link = Link::Polling(why);
                None
            }
        }
    }

    /// Opens a lost stream again now rather than after its pause (the server is back, or a
    /// restriction that refused it was lifted); nothing when the stream is not lost.
    pub fn reopen(&mut self, service: &Arc<dyn TimelineService>, tx: &UnboundedSender<Msg>) {
        let lost = matches!(self.link, Link::Polling(_) | Link::Unreached(_));
        let recent = self.opened.is_some_and(|at| at.elapsed() < FIRST_PAUSE);
        if lost
            && !recent
            && let Some(task) = self.task.take()
        {
            task.abort();
            let timeline = self.timeline.clone();
            self.follow(service, timeline, tx);
        }
    }

    /// Whether the stream could not reach the server: once the server answers, its reason is
    /// stale and the stream is opened again.
    pub fn unreached(&self) -> bool {
        matches!(self.link, Link::Unreached(_))
    }

    /// Whether changes are pushed now (the tick need not poll the monitor).
    pub fn is_live(&self) -> bool {
        self.link == Link::Live
    }
}

/// Holds the stream of `timeline`, forwarding changes, and opens it again when it is lost.
async fn stream_task(
    service: Arc<dyn TimelineService>,
    timeline: TimelineId,
    generation: u64,
    tx: UnboundedSender<Msg>,
) {
    let send = |push| tx.send(Msg::Pushed { generation, push }).is_ok();
    let mut pause = FIRST_PAUSE;
    loop {
        // A stream opened again starts with a snapshot, which replaces whatever the monitor
        // showed meanwhile (it may have been polled).
        let watch = MonitorWatch {
            timeline_id: timeline.clone(),
            after: None,
        };
        let mut unreachable = false;
        let why = match service.watch_monitor(watch).await {
            Err(e) => {
                unreachable = crate::client::is_unreachable(&e);
                short(&e)
            }
            Ok(mut changes) => {
                if !send(Push::Opened) {
                    return;
                }
                loop {
                    match changes.next().await {
                        Some(Ok(event)) => {
                            pause = FIRST_PAUSE;
                            // The rest of the rescan is there already: one refresh for all.
                            let mut events = vec![event];
                            let mut ended = None;
                            while ended.is_none() {
                                match changes.next().now_or_never() {
                                    Some(Some(Ok(more))) => events.push(more),
                                    Some(Some(Err(e))) => {
                                        unreachable = crate::client::is_unreachable(&e);
                                        ended = Some(short(&e));
                                    }
                                    Some(None) => {
                                        ended = Some("the server ended the stream".to_owned());
                                    }
                                    None => break, // nothing more is ready
                                }
                            }
                            if !send(Push::Changes(events)) {
                                return; // the dashboard is gone
                            }
                            if let Some(why) = ended {
                                break why;
                            }
                        }
                        Some(Err(e)) => {
                            unreachable = crate::client::is_unreachable(&e);
                            break short(&e);
                        }
                        None => break "the server ended the stream".to_owned(),
                    }
                }
            }
        };
        if !send(Push::Lost(why, unreachable)) {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MOST_PAUSE);
    }
}

/// Why a stream is lost, short enough for the header: the server's address, which the header
/// shows already, is left out ("cannot reach URL: connection refused" → "connection refused").
fn short(e: &crate::error::ServiceError) -> String {
    match e {
        crate::error::ServiceError::Unavailable(msg) => msg
            .split_once(": ")
            .map_or(msg.as_str(), |(_, why)| why)
            .to_owned(),
        e => e.to_string(),
    }
}
