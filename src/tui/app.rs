//! The dashboard's state and its one `update` function.
//!
//! Everything that happens arrives as a [`Msg`] on one queue; [`App::update`] is the only place
//! state changes. Service calls are spawned in the background and answer on the same queue,
//! tagged with their [`Slot`] and a generation number: an answer whose generation is no longer
//! the newest of its slot is stale and dropped, so a slow reply never overwrites a newer one.
//!
//! This file keeps the loop: the queue's messages, the background calls and their slots, and
//! where a key goes. What happens next lives with whoever owns it: `dispatch` (actions),
//! [`super::modal`] (whatever is on top), [`super::forms`], [`super::confirm`],
//! [`super::command`], `mouse`, `replies` (what an answer does); [`super::chrome`] draws the
//! screen around the panes.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tokio::sync::mpsc::UnboundedSender;

use super::action::{Msg, Reply, Slot};
use super::chrome::Flash;
use super::confirm::Checked;
use super::keymap::{Context, Key, KeyMap};
use super::live::{self, Follower, Push};
use super::modal::Modal;
use super::mouse::Areas;
use super::panes::PaneId;
use super::panes::log::LogPane;
use super::panes::monitor::MonitorPane;
use super::panes::search::{Input, SearchPane};
use super::panes::timelines::TimelinesPane;
use super::theme::Palette;
use super::widgets;
use crate::engine::Clock;
use crate::error::ServiceError;
use crate::model::{Instant, TimelineId};
use crate::service::{
    LogQuery, MonitorChange, MonitorQuery, PageRequest, SearchQuery, SignificantEventQuery,
    TimelineService, TravellerStatus,
};

/// Longest a background call may take before it counts as the service being unavailable.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Most rows of a list fetched (timelines, journeys), in pages of [`PageRequest::MAX_LIMIT`].
pub(super) const MAX_ROWS: usize = 10_000;

/// What the dashboard is built from, besides the service.
#[derive(Clone, Debug)]
pub struct AppConfig {
    /// Where the data comes from, for the header (`embedded: ...` or `server: ...`).
    pub source: String,
    /// Styles.
    pub palette: Palette,
    /// Key bindings.
    pub keymap: KeyMap,
    /// The clock countdowns and "last refresh" are read from.
    pub clock: Arc<dyn Clock>,
    /// Follow the monitor's stream of changes (see [`super::live`]); without it the monitor
    /// is polled on every tick.
    pub push: bool,
}

/// Whether the service answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Connection {
    /// No answer yet.
    Connecting,
    /// The last call was answered.
    Connected,
    /// The last call failed as unavailable; retried every tick.
    Disconnected(String),
}

/// The dashboard.
pub struct App {
    /// Where every call goes.
    pub(super) service: Arc<dyn TimelineService>,
    tx: UnboundedSender<Msg>,
    clock: Arc<dyn Clock>,
    /// Key bindings.
    pub keymap: KeyMap,
    /// Styles.
    pub palette: Palette,
    /// Data source shown in the header.
    pub source: String,
    /// The focused pane.
    pub focus: PaneId,
    /// Which of monitor and log fills the lower-right area.
    pub lower: PaneId,
    /// Timelines pane.
    pub timelines: TimelinesPane,
    /// Event search pane.
    pub search: SearchPane,
    /// Anomaly monitor pane.
    pub monitor: MonitorPane,
    /// Automation log pane.
    pub log: LogPane,
    /// The modal on top, if any.
    pub modal: Option<Modal>,
    /// Who and where the traveller is.
    pub whoami: Option<TravellerStatus>,
    /// Whether the service answers.
    pub connection: Connection,
    /// When the last `whoami` answer arrived (dashboard clock).
    pub last_refresh: Option<Instant>,
    /// The footer's flash message.
    pub flash: Option<Flash>,
    /// The monitor's pushed changes, and whether they are coming.
    pub follower: Follower,
    push: bool,
    generations: HashMap<Slot, u64>,
    in_flight: HashMap<Slot, usize>,
    /// The timeline to select when the list next arrives (one just created).
    pub(super) select_after_refresh: Option<TimelineId>,
    /// The safety-checked change in flight, if any.
    pub(super) checking: Option<Checked>,
    /// The spinner's frame.
    pub(super) spinner: usize,
    /// The user asked to quit.
    pub(super) quit: bool,
    /// Where the last frame put the panes, for the mouse.
    pub(super) areas: Areas,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("source", &self.source)
            .field("focus", &self.focus)
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

impl App {
    /// A dashboard on `service` that answers on `tx`. Nothing is requested until [`App::start`].
    pub fn new(
        service: Arc<dyn TimelineService>,
        config: AppConfig,
        tx: UnboundedSender<Msg>,
    ) -> Self {
        Self {
            service,
            tx,
            clock: config.clock,
            keymap: config.keymap,
            palette: config.palette,
            source: config.source,
            focus: PaneId::Timelines,
            lower: PaneId::Monitor,
            timelines: TimelinesPane::default(),
            search: SearchPane::default(),
            monitor: MonitorPane::default(),
            log: LogPane::default(),
            modal: None,
            whoami: None,
            connection: Connection::Connecting,
            last_refresh: None,
            flash: None,
            follower: Follower::default(),
            push: config.push,
            generations: HashMap::new(),
            in_flight: HashMap::new(),
            select_after_refresh: None,
            checking: None,
            spinner: 0,
            quit: false,
            areas: Areas::default(),
        }
    }

    /// Sends the first requests.
    pub fn start(&mut self) {
        self.refresh(true);
    }

    /// Whether the user asked to quit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Whether any background call is in flight.
    pub fn busy(&self) -> bool {
        self.in_flight.values().any(|n| *n > 0)
    }

    /// Whether a call of `slot` is in flight.
    pub fn pending(&self, slot: Slot) -> bool {
        self.in_flight.get(&slot).is_some_and(|n| *n > 0)
    }

    /// The newest generation sent in `slot`.
    pub fn generation(&self, slot: Slot) -> u64 {
        self.generations.get(&slot).copied().unwrap_or(0)
    }

    /// The dashboard clock's now.
    pub(super) fn now(&self) -> Instant {
        self.clock.now()
    }

    // ---------------------------------------------------------------- background calls

    /// Runs `call` in the background; its answer comes back as [`Msg::Done`] in `slot`.
    pub(super) fn spawn<F>(&mut self, slot: Slot, call: F)
    where
        F: Future<Output = Result<Reply, ServiceError>> + Send + 'static,
    {
        let generation = self.generation(slot) + 1;
        self.generations.insert(slot, generation);
        *self.in_flight.entry(slot).or_default() += 1;
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let result = match tokio::time::timeout(CALL_TIMEOUT, call).await {
                Ok(result) => result,
                Err(_) => Err(ServiceError::Unavailable(format!(
                    "no answer within {} s",
                    CALL_TIMEOUT.as_secs()
                ))),
            };
            // The receiver is gone only when the dashboard is closing.
            let _ = tx.send(Msg::Done {
                slot,
                generation,
                result,
            });
        });
    }

    /// Refreshes what the tick keeps fresh; `force` also re-asks slots already waiting.
    pub(super) fn refresh(&mut self, force: bool) {
        if force || !self.pending(Slot::Whoami) {
            self.request_whoami();
        }
        if force || !self.pending(Slot::Timelines) {
            self.request_timelines();
        }
        // While changes are pushed the monitor needs no polling.
        let polled = force || !self.follower.is_live();
        if polled && !self.monitor.frozen && (force || !self.pending(Slot::Monitor)) {
            self.request_monitor();
        }
        if self.lower == PaneId::Log && (force || !self.pending(Slot::Log)) {
            self.request_log();
        }
    }

    /// Asks who and where the traveller is (the header, and whether the service answers).
    fn request_whoami(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Whoami, async move {
            svc.whoami().await.map(Reply::Whoami)
        });
    }

    /// Fetches the list of timelines.
    pub(super) fn request_timelines(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Timelines, async move {
            all_pages(|page| svc.list_timelines(page))
                .await
                .map(Reply::Timelines)
        });
    }

    /// Scans the watched timeline for anomalies.
    pub(super) fn request_monitor(&mut self) {
        let Some(timeline) = self.monitor.timeline.clone() else {
            return;
        };
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Monitor, async move {
            svc.monitor_timeline(MonitorQuery {
                timeline_id: timeline,
                time_range: None,
            })
            .await
            .map(Reply::Monitor)
        });
    }

    /// Fetches the automation log.
    pub(super) fn request_log(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Log, async move {
            svc.automation_log(LogQuery {
                page: PageRequest::first(PageRequest::MAX_LIMIT),
                ..LogQuery::default()
            })
            .await
            .map(|p| Reply::Log(p.items))
        });
    }

    /// Searches the selected timeline with the inputs as they are.
    pub(super) fn request_search(&mut self) {
        let query = match self.search.query() {
            Ok(q) => q,
            Err(e) => return self.flash_error(e),
        };
        let timeline = self
            .timelines
            .selected()
            .map(|t| t.id.clone())
            .unwrap_or_else(TimelineId::primary);
        self.search.timeline = Some(timeline.clone());
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Search, async move {
            svc.search_events(SearchQuery {
                timeline_id: Some(timeline),
                location: query.location,
                time_range: query.range,
                page: PageRequest::first(PageRequest::MAX_LIMIT),
            })
            .await
            .map(|p| Reply::Search(p.items))
        });
    }

    /// Looks up the causes of the event in the detail view that the results do not hold (the
    /// search's range or location left them out), so the detail names them.
    pub(super) fn request_causes(&mut self) {
        let (Some(event), Some(timeline)) = (self.search.selected(), self.search.timeline.clone())
        else {
            return;
        };
        let unnamed = self.search.unnamed_causes(event);
        if unnamed.is_empty() {
            return;
        }
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Causes, async move {
            let mut found = Vec::new();
            for id in unnamed {
                let query = SignificantEventQuery {
                    timeline_id: timeline.clone(),
                    significant_event: id.to_string(),
                };
                // The lineage's event that stands now; a cause that cannot be found stays an id.
                if let Ok(check) = svc.check_timeline(query).await
                    && let Some(mut record) = check.event
                {
                    record.event_id = id;
                    found.push(record);
                }
            }
            Ok(Reply::Causes(found))
        });
    }

    /// Sends a change; its answer comes back in [`Slot::Mutation`].
    pub(super) fn mutate<F>(&mut self, call: F)
    where
        F: Future<Output = Result<Reply, ServiceError>> + Send + 'static,
    {
        self.spawn(Slot::Mutation, call);
    }

    /// Sends `change` safety checked: a refusal for paradoxes asks whether to apply it anyway.
    pub(super) fn mutate_checked(&mut self, change: Checked) {
        self.checking = Some(change.clone());
        let call = change.send(Arc::clone(&self.service), true);
        self.mutate(call);
    }

    // ---------------------------------------------------------------- update

    /// Applies one message. The only place the dashboard's state changes.
    pub fn update(&mut self, msg: Msg) {
        match msg {
            Msg::Key(key) => self.on_key(key),
            Msg::Mouse(mouse) => self.on_mouse(mouse),
            Msg::Resize(..) => {} // the next draw lays out for the new size
            Msg::Tick => self.on_tick(),
            Msg::Animate => self.spinner = self.spinner.wrapping_add(1),
            Msg::Action(action) => self.dispatch(action),
            Msg::Done {
                slot,
                generation,
                result,
            } => self.on_done(slot, generation, result),
            Msg::Pushed { generation, push } => self.on_pushed(generation, push),
        }
    }

    /// A change of the watched timeline's anomalies, pushed: the monitor shows it now, and the
    /// panes it touches are asked again (an anomaly comes and goes with changed events).
    fn on_pushed(&mut self, generation: u64, push: Push) {
        let lost = matches!(push, Push::Lost(_));
        let Some(events) = self.follower.on_push(generation, push) else {
            if lost && !self.pending(Slot::Whoami) {
                // A lost stream often means a lost server: let the header say which now.
                self.request_whoami();
            }
            return;
        };
        self.last_refresh = Some(self.now());
        if self.monitor.frozen || self.monitor.timeline.is_none() {
            return;
        }
        // A poll sent before this push would answer with an older state: it is dropped.
        let stale = self.generation(Slot::Monitor) + 1;
        self.generations.insert(Slot::Monitor, stale);
        let only_snapshots = events
            .iter()
            .all(|e| matches!(e.change, MonitorChange::Snapshot(_)));
        let open = self.monitor.open_report(self.now());
        let report = live::report_after(open, events.into_iter().map(|e| e.change).collect());
        self.search.mark_troubled(&report);
        self.monitor.apply(report);
        if !only_snapshots {
            // Once per batch, and not on top of a request already on its way.
            if self.search.searched && !self.pending(Slot::Search) {
                self.request_search();
            }
            if !self.pending(Slot::Timelines) {
                self.request_timelines();
            }
            if !self.pending(Slot::Picture) {
                self.refresh_picture();
            }
        }
    }

    /// Follows the watched timeline's stream, if pushes are on.
    fn follow_monitor(&mut self) {
        if self.push {
            self.follower
                .follow(&self.service, self.monitor.timeline.clone(), &self.tx);
        }
    }

    fn on_tick(&mut self) {
        self.age_flash();
        if self.follower.is_live() && !self.monitor.frozen && self.monitor.status.is_some() {
            // Not polled while changes are pushed, but NEW marks and faded rows still age,
            // and the sparkline still takes one sample a tick.
            let same = self.monitor.open_report(self.now());
            self.monitor.apply(same);
        }
        self.refresh(false);
    }

    /// A background call finished: counted, dropped when a newer one of its slot is on its way,
    /// else answered.
    fn on_done(&mut self, slot: Slot, generation: u64, result: Result<Reply, ServiceError>) {
        if let Some(n) = self.in_flight.get_mut(&slot) {
            *n = n.saturating_sub(1);
        }
        if slot != Slot::Mutation && generation != self.generation(slot) {
            return; // a newer request of this slot is on its way
        }
        self.on_answer(slot, result);
    }

    /// The selected timeline may have changed: watch it in the monitor.
    pub(super) fn selection_changed(&mut self) {
        let selected = self.timelines.selected().map(|t| t.id.clone());
        if self.monitor.timeline != selected {
            self.monitor.watch(selected.clone());
            self.request_monitor();
            self.follow_monitor();
        }
        // A search follows the selected timeline too, with the same inputs (unless they were
        // edited into something that does not parse; that waits for the user's enter).
        if self.search.timeline.is_some()
            && selected.is_some()
            && self.search.timeline != selected
            && self.search.query().is_ok()
        {
            self.request_search();
        }
    }

    // ---------------------------------------------------------------- keys

    /// Where the keys go: the focused pane's bindings.
    pub(super) fn context(&self) -> Context {
        match self.focus {
            PaneId::Timelines => Context::Timelines,
            PaneId::Search => Context::Search,
            PaneId::Monitor => Context::Monitor,
            PaneId::Log => Context::Log,
        }
    }

    /// Routes a key: Ctrl-C quits; a modal takes keys first, then an input being edited, then
    /// the key map of the focused pane.
    fn on_key(&mut self, key: KeyEvent) {
        // Some terminals report releases and repeats; only presses are keys.
        if key.kind != KeyEventKind::Press {
            return;
        }
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return;
        }
        if self.modal.is_some() {
            return self.modal_key(key);
        }
        if let Some(input) = self.timelines.filter_input.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let text = widgets::input_text(input);
                    self.timelines.filter_input = None;
                    self.timelines.set_filter(text);
                    self.selection_changed();
                }
                KeyCode::Esc => {
                    self.timelines.filter_input = None;
                    self.timelines.set_filter(String::new());
                    self.selection_changed();
                }
                _ => {
                    widgets::edit(input, key);
                    let text = widgets::input_text(input);
                    self.timelines.set_filter(text);
                }
            }
            return;
        }
        if self.search.editing.is_some() {
            match key.code {
                KeyCode::Enter => {
                    self.search.editing = None;
                    self.search.detail = false;
                    self.request_search();
                }
                KeyCode::Esc => self.search.editing = None,
                KeyCode::Tab | KeyCode::BackTab => {
                    self.search.editing = Some(match self.search.editing {
                        Some(Input::Location) => Input::Range,
                        _ => Input::Location,
                    });
                }
                _ => {
                    if let Some(input) = self.search.editing_input() {
                        widgets::edit(input, key);
                    }
                }
            }
            return;
        }
        if let Some(action) = self.keymap.resolve(Key::from_event(&key), self.context()) {
            self.dispatch(action);
        }
    }
}

/// Every page of a list, up to [`MAX_ROWS`] rows.
pub(super) async fn all_pages<T, F, Fut>(mut list: F) -> Result<Vec<T>, ServiceError>
where
    F: FnMut(PageRequest) -> Fut,
    Fut: Future<Output = Result<crate::service::Page<T>, ServiceError>>,
{
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = list(PageRequest {
            limit: Some(PageRequest::MAX_LIMIT),
            cursor,
        })
        .await?;
        all.extend(page.items);
        match page.next_cursor {
            Some(next) if all.len() < MAX_ROWS => cursor = Some(next),
            _ => return Ok(all),
        }
    }
}
