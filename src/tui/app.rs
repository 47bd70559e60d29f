//! The dashboard's state and its one `update` function.
//!
//! Everything that happens arrives as a [`Msg`] on one queue; [`App::update`] is the only place
//! state changes. Service calls are spawned in the background and answer on the same queue,
//! tagged with their [`Slot`] and a generation number: an answer whose generation is no longer
//! the newest of its slot is stale and dropped, so a slow reply never overwrites a newer one.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui_textarea::TextArea;
use tokio::sync::mpsc::UnboundedSender;

use super::action::{Action, Msg, Reply, Slot};
use super::help;
use super::keymap::{Context, Key, KeyMap};
use super::panes::log::LogPane;
use super::panes::monitor::MonitorPane;
use super::panes::search::{Input, SearchPane};
use super::panes::timelines::TimelinesPane;
use super::panes::wizard::{self, Step, Wizard};
use super::panes::{Ctx, PaneId};
use super::theme::Palette;
use super::widgets::{self, Form, centered, fmt_time, modal};
use crate::engine::Clock;
use crate::error::ServiceError;
use crate::model::{EventId, Instant, InvalidValue, TimelineId, parse_typed_instant};
use crate::service::{
    EventRecord, LogQuery, ManipulateRequest, MonitorQuery, NewAnchor, NewEvent, NewItem,
    NewOutcome, NewTimeline, OutcomeChange, PageRequest, ParadoxCheckRequest, ProposedChange,
    RevertRequest, SearchQuery, SignificantEventQuery, TimelineService, TravelRequest,
    TravellerStatus,
};

/// Longest a background call may take before it counts as the service being unavailable.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Most rows of a list fetched (timelines, journeys), in pages of [`PageRequest::MAX_LIMIT`].
const MAX_ROWS: usize = 10_000;
/// How many ticks a flash message stays.
const FLASH_TICKS: u8 = 3;
/// Spinner frames shown while work is pending.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

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

/// A message in the footer that clears itself after a few ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flash {
    /// The text.
    pub text: String,
    /// Shown as an error.
    pub error: bool,
    /// Ticks before it goes.
    pub ticks_left: u8,
}

/// What a form does when submitted.
#[derive(Clone, Debug)]
pub enum FormKind {
    /// Create a timeline branching from `base` (primary when `None`).
    NewTimeline {
        /// The base timeline.
        base: Option<TimelineId>,
        /// A parallel timeline (has a variation field).
        parallel: bool,
    },
    /// Add an event to a timeline.
    AddEvent(TimelineId),
    /// Manipulate an event, safety checked.
    Manipulate(TimelineId, Box<EventRecord>),
    /// Set an anchor.
    Anchor,
    /// Register an item.
    RegisterItem,
    /// Check a draft change for paradoxes.
    CheckDraft(TimelineId),
}

/// A question before something that destroys.
#[derive(Debug)]
pub enum Confirm {
    /// Delete a timeline.
    DeleteTimeline(TimelineId, String),
    /// Revert an event's latest change.
    Revert(TimelineId, EventRecord),
    /// The safety check refused a change: make it anyway?
    ApplyAnyway {
        /// The change, sent again without the check on yes.
        change: Checked,
        /// The refusal, naming the paradoxes the change would add.
        why: String,
        /// The form the change came from: back in view (pending on yes, as typed on no).
        form: Option<Box<Form<FormKind>>>,
    },
}

/// A change the dashboard sends safety checked, kept until its answer so a refusal can be
/// answered with "apply anyway?".
#[derive(Clone, Debug)]
pub enum Checked {
    /// A new event.
    AddEvent(TimelineId, NewEvent),
    /// A manipulation.
    Manipulate(ManipulateRequest),
    /// A revert.
    Revert(RevertRequest),
}

impl Checked {
    /// Sends the change, with or without the safety check.
    async fn send(
        mut self,
        svc: Arc<dyn TimelineService>,
        safety_check: bool,
    ) -> Result<Reply, ServiceError> {
        match &mut self {
            Checked::AddEvent(timeline, req) => {
                req.safety_check = safety_check;
                svc.add_event(timeline, req.clone())
                    .await
                    .map(Reply::EventAdded)
            }
            Checked::Manipulate(req) => {
                req.safety_check = safety_check;
                svc.manipulate_event(req.clone())
                    .await
                    .map(Reply::Manipulated)
            }
            Checked::Revert(req) => {
                req.safety_check = safety_check;
                svc.revert_event(req.clone()).await.map(Reply::Reverted)
            }
        }
    }
}

/// What sits on top of the panes and takes keys first.
#[derive(Debug)]
pub enum Modal {
    /// The help screen, scrolled.
    Help(u16),
    /// A form.
    Form(Box<Form<FormKind>>),
    /// A yes/no question.
    Confirm(Confirm),
    /// The travel wizard.
    Wizard(Box<Wizard>),
    /// A paradox check's findings.
    Report(wizard::Verdict, u16),
    /// The traveller's journeys (oldest first), scrolled.
    Journeys(Vec<crate::service::Journey>, u16),
    /// The `:` command line.
    Command(Box<TextArea<'static>>),
}

/// Screen areas of the last frame, for the mouse.
#[derive(Clone, Copy, Debug, Default)]
struct Areas {
    timelines: Rect,
    search: Rect,
    lower: Rect,
}

/// The dashboard.
pub struct App {
    service: Arc<dyn TimelineService>,
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
    generations: HashMap<Slot, u64>,
    in_flight: HashMap<Slot, usize>,
    select_after_refresh: Option<TimelineId>,
    /// The safety-checked change in flight, if any.
    checking: Option<Checked>,
    spinner: usize,
    quit: bool,
    areas: Areas,
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

    fn now(&self) -> Instant {
        self.clock.now()
    }

    // ---------------------------------------------------------------- background calls

    /// Runs `call` in the background; its answer comes back as [`Msg::Done`] in `slot`.
    fn spawn<F>(&mut self, slot: Slot, call: F)
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
    fn refresh(&mut self, force: bool) {
        if force || !self.pending(Slot::Whoami) {
            let svc = Arc::clone(&self.service);
            self.spawn(Slot::Whoami, async move {
                svc.whoami().await.map(Reply::Whoami)
            });
        }
        if force || !self.pending(Slot::Timelines) {
            self.request_timelines();
        }
        if !self.monitor.frozen && (force || !self.pending(Slot::Monitor)) {
            self.request_monitor();
        }
        if self.lower == PaneId::Log && (force || !self.pending(Slot::Log)) {
            self.request_log();
        }
    }

    fn request_timelines(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Timelines, async move {
            all_pages(|page| svc.list_timelines(page))
                .await
                .map(Reply::Timelines)
        });
    }

    fn request_monitor(&mut self) {
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

    fn request_log(&mut self) {
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
    fn request_search(&mut self) {
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
    fn request_causes(&mut self) {
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

    fn mutate<F>(&mut self, call: F)
    where
        F: Future<Output = Result<Reply, ServiceError>> + Send + 'static,
    {
        self.spawn(Slot::Mutation, call);
    }

    /// Sends `change` safety checked: a refusal for paradoxes asks whether to apply it anyway.
    fn mutate_checked(&mut self, change: Checked) {
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
        }
    }

    fn on_tick(&mut self) {
        if let Some(flash) = &mut self.flash {
            flash.ticks_left = flash.ticks_left.saturating_sub(1);
            if flash.ticks_left == 0 {
                self.flash = None;
            }
        }
        self.refresh(false);
    }

    /// Shows an informational flash.
    pub fn flash_info(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash {
            text: text.into(),
            error: false,
            ticks_left: FLASH_TICKS,
        });
    }

    /// Shows an error flash (stays a little longer).
    pub fn flash_error(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash {
            text: text.into(),
            error: true,
            ticks_left: FLASH_TICKS + 2,
        });
    }

    fn on_done(&mut self, slot: Slot, generation: u64, result: Result<Reply, ServiceError>) {
        if let Some(n) = self.in_flight.get_mut(&slot) {
            *n = n.saturating_sub(1);
        }
        if slot != Slot::Mutation && generation != self.generation(slot) {
            return; // a newer request of this slot is on its way
        }
        match &result {
            Err(ServiceError::Unavailable(why)) => {
                self.connection = Connection::Disconnected(why.clone());
            }
            Err(_) | Ok(_) => {
                if matches!(self.connection, Connection::Disconnected(_)) && result.is_ok() {
                    self.flash_info("Reconnected.");
                }
                if result.is_ok() || self.connection == Connection::Connecting {
                    self.connection = Connection::Connected;
                }
            }
        }
        let pending_form = slot == Slot::Mutation
            && matches!(&self.modal, Some(Modal::Form(form)) if form.pending);
        let checked = if slot == Slot::Mutation {
            self.checking.take()
        } else {
            None
        };
        match result {
            // The safety check found paradoxes: say which and ask before applying anyway.
            Err(e @ ServiceError::ParadoxDetected { .. }) if checked.is_some() => {
                let form = match self.modal.take() {
                    Some(Modal::Form(mut form)) if pending_form => {
                        form.pending = false;
                        Some(form)
                    }
                    other => {
                        self.modal = other;
                        None
                    }
                };
                match checked {
                    Some(change) if self.modal.is_none() => {
                        self.modal = Some(Modal::Confirm(Confirm::ApplyAnyway {
                            change,
                            why: e.explain(),
                            form,
                        }));
                    }
                    // Something else is on screen now: say it, don't ask over it.
                    _ => self.on_error(slot, e),
                }
            }
            Ok(reply) => {
                // What the user asked for worked: an error left by an earlier attempt is stale.
                if !slot.is_background() && self.flash.as_ref().is_some_and(|f| f.error) {
                    self.flash = None;
                }
                if pending_form {
                    self.modal = None;
                }
                self.on_reply(reply)
            }
            // Refused: the form stays as it was typed, with the reason under it.
            Err(e) if pending_form && !matches!(e, ServiceError::Unavailable(_)) => {
                if let Some(Modal::Form(form)) = &mut self.modal {
                    form.pending = false;
                    let field = match &e {
                        ServiceError::InvalidInput { field, .. } => Some(field.as_str()),
                        _ => None,
                    };
                    form.refuse(e.explain(), field);
                }
            }
            Err(e) => {
                if pending_form && let Some(Modal::Form(form)) = &mut self.modal {
                    form.pending = false;
                }
                self.on_error(slot, e)
            }
        }
    }

    fn on_error(&mut self, slot: Slot, e: ServiceError) {
        if let Some(Modal::Wizard(w)) = &mut self.modal
            && matches!(slot, Slot::WizardData | Slot::WizardCheck | Slot::Mutation)
        {
            w.loading = false;
            if slot == Slot::WizardCheck {
                w.step = Step::Items;
            }
        }
        // The header already says the service is gone; don't repeat it every tick.
        if slot.is_background() && matches!(e, ServiceError::Unavailable(_)) {
            return;
        }
        self.flash_error(e.explain());
    }

    fn on_reply(&mut self, reply: Reply) {
        match reply {
            Reply::Whoami(status) => {
                self.whoami = Some(status);
                self.last_refresh = Some(self.now());
            }
            Reply::Timelines(list) => {
                let first = !self.timelines.loaded;
                self.timelines.set(list);
                // A deleted timeline's results would offer events that are gone.
                if let Some(gone) = &self.search.timeline
                    && self.timelines.get(gone).is_none()
                {
                    self.search.forget();
                }
                if let Some(id) = self.select_after_refresh.take() {
                    self.timelines.select(&id);
                } else if first
                    && let Some(here) = self.whoami.as_ref().map(|w| w.timeline_id.clone())
                {
                    self.timelines.select(&here);
                }
                self.selection_changed();
            }
            Reply::Search(results) => self.search.set_results(results),
            Reply::Causes(causes) => self.search.name_causes(causes),
            Reply::Monitor(report) => {
                self.search.mark_troubled(&report);
                if self.monitor.timeline.as_ref() == Some(&report.timeline_id) {
                    self.monitor.apply(report);
                }
            }
            Reply::Log(entries) => self.log.set(entries),
            Reply::WizardData { anchors, items } => {
                let now = self.now();
                let preselect = self.timelines.selected().map(|t| t.id.clone());
                if let Some(Modal::Wizard(w)) = &mut self.modal {
                    w.set_data(&self.timelines.all, anchors, items, now, preselect.as_ref());
                }
            }
            Reply::WizardCheck(report) => {
                if let Some(Modal::Wizard(w)) = &mut self.modal {
                    w.report = Some(report);
                    w.loading = false;
                }
            }
            Reply::Journey(journey) => {
                let to = self.timelines.name_of(&journey.to_timeline);
                self.flash_info(format!(
                    "Arrived in {to} at {}.",
                    fmt_time(&journey.arrival_time)
                ));
                if let Some(Modal::Wizard(w)) = &mut self.modal {
                    w.journey = Some(journey);
                    w.step = Step::Done;
                    w.loading = false;
                }
                self.refresh(true);
            }
            Reply::Created(t) => {
                self.flash_info(format!("Created timeline {} ({}).", t.name, t.id));
                self.select_after_refresh = Some(t.id);
                self.request_timelines();
            }
            Reply::Deleted(name) => {
                self.flash_info(format!("Deleted timeline {name}."));
                self.request_timelines();
            }
            Reply::EventAdded(e) => {
                self.flash_info(format!("Added event {} ({}).", e.description, e.event_id));
                self.after_event_change();
            }
            Reply::Manipulated(r) => {
                self.flash_info(format!(
                    "Manipulated: '{}' now happens at {}.",
                    r.description,
                    fmt_time(&r.time)
                ));
                self.after_event_change();
            }
            Reply::Reverted(r) => {
                self.flash_info(format!(
                    "Reverted {}; {} stands again.",
                    r.reverted_event_id, r.original_event_id
                ));
                self.after_event_change();
            }
            Reply::AnchorSet(a) => self.flash_info(format!(
                "Anchor {} set at {}.",
                a.description
                    .as_ref()
                    .map_or_else(|| a.id.to_string(), |d| format!("'{d}'")),
                fmt_time(&a.timestamp)
            )),
            Reply::ItemRegistered(i) => {
                self.flash_info(format!("Registered {} ({}).", i.description, i.id))
            }
            Reply::Checked(report) => self.modal = Some(Modal::Report(report, 0)),
            Reply::Journeys(journeys) => self.modal = Some(Modal::Journeys(journeys, 0)),
        }
    }

    fn after_event_change(&mut self) {
        if self.search.searched {
            self.request_search();
        }
        self.request_monitor();
        self.request_timelines();
    }

    /// The selected timeline may have changed: watch it in the monitor.
    fn selection_changed(&mut self) {
        let selected = self.timelines.selected().map(|t| t.id.clone());
        if self.monitor.timeline != selected {
            self.monitor.watch(selected.clone());
            self.request_monitor();
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

    fn context(&self) -> Context {
        match self.focus {
            PaneId::Timelines => Context::Timelines,
            PaneId::Search => Context::Search,
            PaneId::Monitor => Context::Monitor,
            PaneId::Log => Context::Log,
        }
    }

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

    fn modal_key(&mut self, key: KeyEvent) {
        let Some(modal) = self.modal.take() else {
            return;
        };
        self.modal = match modal {
            Modal::Help(scroll) => match key.code {
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?') | KeyCode::Enter => None,
                KeyCode::Down | KeyCode::Char('j') => Some(Modal::Help(scroll.saturating_add(1))),
                KeyCode::Up | KeyCode::Char('k') => Some(Modal::Help(scroll.saturating_sub(1))),
                KeyCode::PageDown => Some(Modal::Help(scroll.saturating_add(10))),
                KeyCode::PageUp => Some(Modal::Help(scroll.saturating_sub(10))),
                KeyCode::Home | KeyCode::Char('g') => Some(Modal::Help(0)),
                // Drawing brings it back to where the last line is in view.
                KeyCode::End | KeyCode::Char('G') => Some(Modal::Help(u16::MAX)),
                _ => Some(Modal::Help(scroll)),
            },
            Modal::Report(report, scroll) => {
                scroll_key(key.code, scroll).map(|scroll| Modal::Report(report, scroll))
            }
            Modal::Journeys(journeys, scroll) => {
                scroll_key(key.code, scroll).map(|scroll| Modal::Journeys(journeys, scroll))
            }
            Modal::Confirm(confirm) => match key.code {
                // Making a paradox takes an explicit y: an Enter meant for the form is no yes.
                KeyCode::Enter if matches!(confirm, Confirm::ApplyAnyway { .. }) => {
                    Some(Modal::Confirm(confirm))
                }
                // What is confirmed may bring its form back into view.
                KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => {
                    self.confirmed(confirm);
                    self.modal.take()
                }
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => match confirm {
                    Confirm::ApplyAnyway {
                        form: Some(mut form),
                        why,
                        ..
                    } => {
                        form.refuse(format!("Not applied. {why}"), None);
                        Some(Modal::Form(form))
                    }
                    _ => None,
                },
                _ => Some(Modal::Confirm(confirm)),
            },
            Modal::Command(mut input) => match key.code {
                KeyCode::Esc => None,
                KeyCode::Tab => {
                    let line = widgets::input_text(&input);
                    let (completed, choices) = complete_command(&line);
                    if completed != line {
                        input = Box::new(widgets::input(&completed, "command"));
                    }
                    if choices.len() > 1 {
                        self.flash_info(choices.join("  "));
                    }
                    Some(Modal::Command(input))
                }
                KeyCode::Enter => {
                    let line = widgets::input_text(&input);
                    self.command(&line);
                    return; // the command may have opened a modal of its own
                }
                _ => {
                    widgets::edit(&mut input, key);
                    Some(Modal::Command(input))
                }
            },
            Modal::Form(mut form) => match key.code {
                KeyCode::Esc => None,
                KeyCode::Tab => {
                    form.cycle(true);
                    Some(Modal::Form(form))
                }
                KeyCode::BackTab => {
                    form.cycle(false);
                    Some(Modal::Form(form))
                }
                // Sent once; kept open (input and all) until the answer says it is done.
                KeyCode::Enter if form.pending => Some(Modal::Form(form)),
                KeyCode::Enter => match self.submit(&form) {
                    Ok(()) => {
                        form.pending = true;
                        form.clear_refusal();
                        Some(Modal::Form(form))
                    }
                    Err(message) => {
                        let field = message.split_once(':').map(|(f, _)| f.to_owned());
                        form.refuse(message, field.as_deref());
                        Some(Modal::Form(form))
                    }
                },
                _ => {
                    if let Some(field) = form.fields.get_mut(form.focus) {
                        widgets::edit(&mut field.input, key);
                    }
                    Some(Modal::Form(form))
                }
            },
            Modal::Wizard(mut w) => {
                let keep = self.wizard_key(&mut w, key);
                keep.then_some(Modal::Wizard(w))
            }
        };
    }

    /// Handles a key in the wizard; false closes it.
    fn wizard_key(&mut self, w: &mut Wizard, key: KeyEvent) -> bool {
        let code = key.code;
        if w.loading {
            return code != KeyCode::Esc; // esc abandons a pending step
        }
        // Esc closes the wizard from any step (as every modal); backspace goes back a step; a
        // journey starts only on `y` at the confirm step, so no stray enter travels.
        match (w.step, code) {
            (_, KeyCode::Esc) | (Step::Done, KeyCode::Enter) => return false,
            (_, KeyCode::Up | KeyCode::Char('k')) => w.step_cursor(-1),
            (_, KeyCode::Down | KeyCode::Char('j')) => w.step_cursor(1),
            (Step::Items, KeyCode::Char(' ') | KeyCode::Char('x')) => w.toggle(),
            (Step::Destination, KeyCode::Enter) if w.destination().is_some() => {
                w.step = Step::Items;
            }
            (Step::Items, KeyCode::Backspace | KeyCode::Left) => w.step = Step::Destination,
            (Step::Items, KeyCode::Enter) => {
                let Some(dest) = w.destination() else {
                    return true;
                };
                let req = ParadoxCheckRequest {
                    timeline_id: dest.timeline().clone(),
                    proposed_changes: w.proposed_changes(),
                };
                w.step = Step::Check;
                w.report = None;
                w.loading = true;
                let svc = Arc::clone(&self.service);
                self.spawn(Slot::WizardCheck, async move {
                    wizard::Verdict::ask(svc, req).await.map(Reply::WizardCheck)
                });
            }
            (Step::Check, KeyCode::Backspace | KeyCode::Left) => w.step = Step::Items,
            (Step::Check, KeyCode::Enter) => w.step = Step::Confirm,
            (Step::Confirm, KeyCode::Backspace | KeyCode::Left) => w.step = Step::Check,
            (Step::Confirm, KeyCode::Char('y') | KeyCode::Char('Y')) => {
                let Some(dest) = w.destination() else {
                    return true;
                };
                let req = TravelRequest {
                    destination: dest.request_id(),
                    items_transported: w.carried(),
                };
                w.loading = true;
                let svc = Arc::clone(&self.service);
                self.mutate(async move { svc.travel(req).await.map(Reply::Journey) });
            }
            _ => {}
        }
        true
    }

    fn confirmed(&mut self, confirm: Confirm) {
        let svc = Arc::clone(&self.service);
        match confirm {
            Confirm::DeleteTimeline(id, name) => self.mutate(async move {
                svc.delete_timeline(&id)
                    .await
                    .map(|()| Reply::Deleted(name))
            }),
            Confirm::Revert(timeline, event) => {
                self.mutate_checked(Checked::Revert(RevertRequest {
                    event_id: event.event_id,
                    timeline_id: Some(timeline),
                    safety_check: true,
                }))
            }
            Confirm::ApplyAnyway { change, form, .. } => {
                if let Some(mut form) = form {
                    form.pending = true;
                    form.clear_refusal();
                    self.modal = Some(Modal::Form(form));
                }
                self.mutate(change.send(svc, false));
            }
        }
    }

    /// Sends what a form asks for; an error keeps the form open.
    fn submit(&mut self, form: &Form<FormKind>) -> Result<(), String> {
        let svc = Arc::clone(&self.service);
        let optional_time = |field: &str, s: String| -> Result<Option<Instant>, String> {
            if s.is_empty() {
                Ok(None)
            } else {
                parse_typed_instant(field, &s)
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
        };
        let optional = |s: String| (!s.is_empty()).then_some(s);
        match &form.kind {
            FormKind::NewTimeline { base, parallel } => {
                let name = form.value(0);
                if name.is_empty() {
                    return Err("name: give the timeline a name".into());
                }
                if *parallel && form.value(1).is_empty() {
                    return Err(
                        "variation: say how it differs from its base (a parallel timeline is \
                         its base with one difference)"
                            .into(),
                    );
                }
                let (variation, dest, description) = if *parallel {
                    (
                        optional(form.value(1)),
                        form.value(2),
                        optional(form.value(3)),
                    )
                } else {
                    (None, form.value(1), optional(form.value(2)))
                };
                let req = NewTimeline {
                    name: Some(name.clone()),
                    destination_time: optional_time("destination time", dest)?,
                    description: description.or(Some(name)),
                    base_timeline_id: base.clone(),
                    variation,
                };
                self.mutate(async move { svc.create_timeline(req).await.map(Reply::Created) });
            }
            FormKind::AddEvent(timeline) => {
                let description = form.value(0);
                if description.is_empty() {
                    return Err("description: say what happened".into());
                }
                let time =
                    parse_typed_instant("time", &form.value(1)).map_err(|e| e.to_string())?;
                let causes = form
                    .value(3)
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse::<EventId>().map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()?;
                let fixed_point =
                    matches!(form.value(4).to_lowercase().as_str(), "y" | "yes" | "true");
                let req = NewEvent {
                    description,
                    time,
                    location: form.value(2),
                    causes,
                    fixed_point,
                    safety_check: true,
                };
                self.mutate_checked(Checked::AddEvent(timeline.clone(), req));
            }
            FormKind::Manipulate(timeline, event) => {
                let time = optional_time("new time", form.value(1))?;
                let req = ManipulateRequest {
                    timeline_id: Some(timeline.clone()),
                    event_id: event.event_id.clone(),
                    new_outcome: NewOutcome {
                        description: optional(form.value(0)),
                        changes: vec![OutcomeChange {
                            action: optional(form.value(2)),
                            time,
                        }],
                    },
                    safety_check: true,
                };
                self.mutate_checked(Checked::Manipulate(req));
            }
            FormKind::Anchor => {
                let timestamp =
                    parse_typed_instant("timestamp", &form.value(0)).map_err(|e| e.to_string())?;
                let req = NewAnchor {
                    timestamp,
                    description: optional(form.value(1)),
                };
                self.mutate(async move { svc.set_anchor(req).await.map(Reply::AnchorSet) });
            }
            FormKind::RegisterItem => {
                let description = form.value(0);
                if description.is_empty() {
                    return Err("description: say what the item is".into());
                }
                self.mutate(async move {
                    svc.register_item(NewItem { description })
                        .await
                        .map(Reply::ItemRegistered)
                });
            }
            FormKind::CheckDraft(timeline) => {
                let mut changes = Vec::new();
                let event = form.value(0);
                if !event.is_empty() {
                    changes.push(ProposedChange {
                        event: Some(event),
                        time: optional_time("time", form.value(1))?,
                        item_id: None,
                    });
                }
                let item = form.value(2);
                if !item.is_empty() {
                    changes.push(ProposedChange {
                        item_id: Some(item.parse().map_err(|e: InvalidValue| e.to_string())?),
                        ..ProposedChange::default()
                    });
                }
                let req = ParadoxCheckRequest {
                    timeline_id: timeline.clone(),
                    proposed_changes: changes,
                };
                self.mutate(
                    async move { wizard::Verdict::ask(svc, req).await.map(Reply::Checked) },
                );
            }
        }
        Ok(())
    }

    /// Runs a `:` command: an action name, `q`, `search LOCATION`, `filter TEXT`.
    fn command(&mut self, line: &str) {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match word {
            "" => {}
            "q" | "quit" => self.quit = true,
            "search" => {
                self.search.anywhere_at_any_time(rest);
                self.focus = PaneId::Search;
                self.request_search();
            }
            "filter" => {
                self.focus = PaneId::Timelines;
                self.timelines.set_filter(rest.to_owned());
                self.selection_changed();
            }
            "monitor" => self.dispatch_focus(PaneId::Monitor),
            "timelines" => self.dispatch_focus(PaneId::Timelines),
            other => match super::action::Action::from_name(other) {
                Some(action) => self.dispatch(action),
                None => self.flash_error(format!(
                    "unknown command ':{other}'; try :help, :search PLACE, :filter TEXT or any action name from the help screen"
                )),
            },
        }
    }

    fn dispatch_focus(&mut self, pane: PaneId) {
        self.focus = pane;
        if matches!(pane, PaneId::Monitor | PaneId::Log) {
            let was = self.lower;
            self.lower = pane;
            if pane == PaneId::Log && was != PaneId::Log {
                self.request_log();
            }
        }
    }

    /// Carries out a user intent.
    pub fn dispatch(&mut self, action: Action) {
        use Action as A;
        match action {
            A::Quit => self.quit = true,
            A::Help => self.modal = Some(Modal::Help(0)),
            A::NextPane | A::Right => self.dispatch_focus(self.focus.cycle(true, self.lower)),
            A::PrevPane | A::Left => self.dispatch_focus(self.focus.cycle(false, self.lower)),
            A::Up => self.move_cursor(-1),
            A::Down => self.move_cursor(1),
            A::PageUp => self.move_cursor(-10),
            A::PageDown => self.move_cursor(10),
            A::Top => self.move_cursor(isize::MIN / 2),
            A::Bottom => self.move_cursor(isize::MAX / 2),
            A::Open => match self.focus {
                PaneId::Timelines => {
                    self.focus = PaneId::Search;
                    self.search.detail = false;
                    self.request_search();
                }
                PaneId::Search => {
                    if self.search.selected().is_some() {
                        self.search.detail = true;
                        self.request_causes();
                    }
                }
                PaneId::Monitor => {
                    if let Some(row) = self.monitor.rows.get(self.monitor.cursor.selected) {
                        let text = format!(
                            "{}: {} [{}]",
                            row.anomaly.anomaly_id,
                            row.anomaly.description,
                            row.anomaly.subjects.join(", ")
                        );
                        self.flash_info(text);
                    }
                }
                PaneId::Log => {}
            },
            A::Back => {
                if self.search.detail && self.focus == PaneId::Search {
                    self.search.detail = false;
                } else if !self.timelines.filter.is_empty() && self.focus == PaneId::Timelines {
                    self.timelines.set_filter(String::new());
                    self.selection_changed();
                } else if self.focus != PaneId::Timelines {
                    self.focus = PaneId::Timelines;
                }
            }
            A::Filter => match self.focus {
                PaneId::Timelines => {
                    self.timelines.filter_input =
                        Some(widgets::input(&self.timelines.filter, "name or id"));
                }
                _ => {
                    self.focus = PaneId::Search;
                    self.search.detail = false;
                    self.search.editing = Some(Input::Location);
                }
            },
            A::Command => {
                self.modal = Some(Modal::Command(Box::new(widgets::input("", "command"))))
            }
            A::Refresh => {
                self.refresh(true);
                if self.search.searched {
                    self.request_search();
                }
            }
            A::NewTimeline => {
                let primary = self.timelines.name_of(&TimelineId::primary());
                self.modal = Some(Modal::Form(Box::new(Form::new(
                    format!("New timeline (branches from {primary})"),
                    FormKind::NewTimeline {
                        base: None,
                        parallel: false,
                    },
                    &[
                        ("Name", String::new(), "e.g. Tesla 1889"),
                        (
                            "Destination time (UTC: 1889-03-10 23:50, a date or RFC 3339; empty: the present)",
                            String::new(),
                            "1889-03-10T23:50:00Z",
                        ),
                        ("Description", String::new(), "what it is for"),
                    ],
                ))));
            }
            A::ParallelTimeline => {
                let Some(base) = self.timelines.selected().cloned() else {
                    return self.flash_error("Select a timeline to branch from first.");
                };
                self.modal = Some(Modal::Form(Box::new(Form::new(
                    format!("Parallel timeline of {}", base.name),
                    FormKind::NewTimeline {
                        base: Some(base.id.clone()),
                        parallel: true,
                    },
                    &[
                        ("Name", String::new(), "e.g. What if Tesla stayed"),
                        ("Variation", String::new(), "how it differs from its base"),
                        (
                            "Destination time (UTC: 1889-03-10 23:50, a date or RFC 3339; empty: the present)",
                            base.destination_time
                                .as_ref()
                                .map(crate::model::format_instant)
                                .unwrap_or_default(),
                            "1889-03-10T23:50:00Z",
                        ),
                        ("Description", String::new(), "what it is for"),
                    ],
                ))));
            }
            A::DeleteTimeline => match self.timelines.selected() {
                Some(t) if t.id.is_primary() => {
                    self.flash_error("The primary timeline cannot be deleted.")
                }
                Some(t) => {
                    self.modal = Some(Modal::Confirm(Confirm::DeleteTimeline(
                        t.id.clone(),
                        t.name.clone(),
                    )))
                }
                None => self.flash_error("Select a timeline to delete first."),
            },
            A::AddEvent => {
                let Some(t) = self.timelines.selected().cloned() else {
                    return self.flash_error("Select a timeline to add the event to first.");
                };
                // The present, to the second: a default a person can read and edit.
                let time = t
                    .destination_time
                    .unwrap_or_else(|| chrono::SubsecRound::trunc_subsecs(self.now(), 0));
                self.modal = Some(Modal::Form(Box::new(Form::new(
                    format!("Add an event to {}", t.name),
                    FormKind::AddEvent(t.id.clone()),
                    &[
                        ("Description", String::new(), "what happened"),
                        (
                            "Time (UTC: 1889-03-10 23:50, a date or RFC 3339)",
                            crate::model::format_instant(&time),
                            "",
                        ),
                        ("Location", String::new(), "where"),
                        (
                            "Causes (event ids, comma-separated)",
                            String::new(),
                            "optional",
                        ),
                        ("Fixed point? (y/n)", "n".into(), ""),
                    ],
                ))));
            }
            A::Manipulate => {
                let (Some(event), Some(timeline)) = (
                    self.search.selected().cloned(),
                    self.search.timeline.clone(),
                ) else {
                    return self
                        .flash_error("Search for an event and select it first (/ then enter).");
                };
                self.modal = Some(Modal::Form(Box::new(Form::new(
                    format!("Manipulate {} (safety checked)", event.event_id),
                    FormKind::Manipulate(timeline, Box::new(event.clone())),
                    &[
                        ("New description", event.description.clone(), ""),
                        (
                            "New time (UTC: 1889-03-10 23:50, a date or RFC 3339)",
                            crate::model::format_instant(&event.time),
                            "",
                        ),
                        ("Action taken", String::new(), "optional: what you did"),
                    ],
                ))));
            }
            A::Revert => {
                let (Some(event), Some(timeline)) = (
                    self.search.selected().cloned(),
                    self.search.timeline.clone(),
                ) else {
                    return self
                        .flash_error("Search for an event and select it first (/ then enter).");
                };
                self.modal = Some(Modal::Confirm(Confirm::Revert(timeline, event)));
            }
            A::SetAnchor => {
                let at = self
                    .whoami
                    .as_ref()
                    .map(|w| w.time)
                    .unwrap_or_else(|| self.now());
                self.modal = Some(Modal::Form(Box::new(Form::new(
                    "Set an anchor (a return ticket) where you are",
                    FormKind::Anchor,
                    &[
                        (
                            "Timestamp (UTC: 1889-03-10 23:50, a date or RFC 3339)",
                            crate::model::format_instant(&chrono::SubsecRound::trunc_subsecs(
                                at, 0,
                            )),
                            "",
                        ),
                        ("Description", String::new(), "e.g. home"),
                    ],
                ))));
            }
            A::Travel | A::ReturnToAnchor => {
                let anchors_only = action == A::ReturnToAnchor;
                self.modal = Some(Modal::Wizard(Box::new(Wizard::new(anchors_only))));
                let svc = Arc::clone(&self.service);
                self.spawn(Slot::WizardData, async move {
                    let anchors = svc
                        .list_anchors(PageRequest::first(PageRequest::MAX_LIMIT))
                        .await?;
                    let items = svc
                        .list_items(PageRequest::first(PageRequest::MAX_LIMIT))
                        .await?;
                    Ok(Reply::WizardData {
                        anchors: anchors.items,
                        items: items.items,
                    })
                });
            }
            A::RegisterItem => {
                self.modal = Some(Modal::Form(Box::new(Form::new(
                    "Register an item found where you are",
                    FormKind::RegisterItem,
                    &[("Description", String::new(), "e.g. Tesla's blueprint")],
                ))));
            }
            A::CheckParadox => {
                let Some(t) = self.timelines.selected().cloned() else {
                    return self.flash_error("Select a timeline to check first.");
                };
                let (event, time) = match (self.focus, self.search.selected()) {
                    (PaneId::Search, Some(e)) => (
                        e.event_id.to_string(),
                        crate::model::format_instant(&e.time),
                    ),
                    _ => (String::new(), String::new()),
                };
                self.modal = Some(Modal::Form(Box::new(Form::new(
                    format!("Check a draft change to {} (nothing is written)", t.name),
                    FormKind::CheckDraft(t.id.clone()),
                    &[
                        (
                            "Event (an id to move, or a new event's description)",
                            event,
                            "optional",
                        ),
                        (
                            "Time (UTC: 1889-03-10 23:50, a date or RFC 3339; empty: the destination time)",
                            time,
                            "optional",
                        ),
                        ("Item id to bring in", String::new(), "optional"),
                    ],
                ))));
            }
            A::Freeze => {
                self.monitor.frozen = !self.monitor.frozen;
                self.flash_info(if self.monitor.frozen {
                    "Monitor frozen; press f again to resume."
                } else {
                    "Monitor live again."
                });
                if !self.monitor.frozen {
                    self.request_monitor();
                }
            }
            // L shows the log in the monitor's place, and L again brings the monitor back.
            A::ShowLog if self.lower == PaneId::Log => self.dispatch_focus(PaneId::Monitor),
            A::ShowLog => self.dispatch_focus(PaneId::Log),
            A::Journeys => {
                let svc = Arc::clone(&self.service);
                self.spawn(Slot::Journeys, async move {
                    all_pages(|page| svc.list_journeys(page))
                        .await
                        .map(Reply::Journeys)
                });
            }
        }
    }

    fn move_cursor(&mut self, delta: isize) {
        match self.focus {
            PaneId::Timelines => {
                let len = self.timelines.len();
                self.timelines.cursor.step(delta, len);
                self.selection_changed();
            }
            PaneId::Search => {
                if !self.search.detail {
                    let len = self.search.results.len();
                    self.search.cursor.step(delta, len);
                }
            }
            PaneId::Monitor => {
                let len = self.monitor.rows.len();
                self.monitor.cursor.step(delta, len);
            }
            PaneId::Log => {
                let len = self.log.entries.len();
                self.log.cursor.step(delta, len);
            }
        }
    }

    fn on_mouse(&mut self, mouse: MouseEvent) {
        let at = Position::new(mouse.column, mouse.row);
        let pane = if self.areas.timelines.contains(at) {
            PaneId::Timelines
        } else if self.areas.search.contains(at) {
            PaneId::Search
        } else if self.areas.lower.contains(at) {
            self.lower
        } else {
            return;
        };
        if self.modal.is_some() {
            return;
        }
        match mouse.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                // Rows start below the border and the header row (and the search inputs).
                let (area, first_row) = match pane {
                    PaneId::Timelines => (self.areas.timelines, 2),
                    PaneId::Search => (self.areas.search, 5),
                    _ => (self.areas.lower, 2),
                };
                let Some(row) = mouse.row.checked_sub(area.y + first_row) else {
                    return;
                };
                let row = row as usize;
                match pane {
                    PaneId::Timelines => {
                        let target = self.timelines.cursor.offset + row;
                        if target < self.timelines.len() {
                            self.timelines.cursor.selected = target;
                            self.selection_changed();
                        }
                    }
                    PaneId::Search if !self.search.detail => {
                        let target = self.search.cursor.offset + row;
                        if target < self.search.results.len() {
                            self.search.cursor.selected = target;
                        }
                    }
                    PaneId::Monitor => {
                        let target = self.monitor.cursor.offset + row;
                        if target < self.monitor.rows.len() {
                            self.monitor.cursor.selected = target;
                        }
                    }
                    PaneId::Log => {
                        let target = self.log.cursor.offset + row;
                        if target < self.log.entries.len() {
                            self.log.cursor.selected = target;
                        }
                    }
                    PaneId::Search => {}
                }
            }
            MouseEventKind::ScrollDown => {
                self.focus = pane;
                self.move_cursor(3);
            }
            MouseEventKind::ScrollUp => {
                self.focus = pane;
                self.move_cursor(-3);
            }
            _ => {}
        }
    }

    // ---------------------------------------------------------------- drawing

    /// Draws the whole screen.
    pub fn draw(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        // A long flash (a problem's detail) gets up to three lines rather than being cut.
        let footer_lines = match &self.flash {
            Some(f) if !matches!(self.modal, Some(Modal::Command(_))) => {
                let width = usize::from(area.width.max(1));
                (f.text.chars().count() + 1).div_ceil(width).clamp(1, 3) as u16
            }
            _ => 1,
        };
        let [header, body, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(6),
            Constraint::Length(footer_lines),
        ])
        .areas(area);
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(body);
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(top);
        self.areas = Areas {
            timelines: left,
            search: bottom,
            lower: right,
        };
        self.draw_header(frame, header);
        let p = self.palette;
        let now = self.now();
        let here = self.whoami.as_ref().map(|w| w.timeline_id.clone());
        let ctx = |focused: bool, pending: bool| Ctx {
            palette: &p,
            now,
            focused,
            here: here.as_ref(),
            pending,
        };
        let c = ctx(
            self.focus == PaneId::Timelines,
            self.pending(Slot::Timelines) && !self.timelines.loaded,
        );
        self.timelines.render(frame, left, &c);
        let search_name = self
            .search
            .timeline
            .clone()
            .or_else(|| self.timelines.selected().map(|t| t.id.clone()))
            .map(|id| self.timelines.name_of(&id))
            .unwrap_or_else(|| "primary".into());
        let c = ctx(self.focus == PaneId::Search, self.pending(Slot::Search));
        self.search.render(frame, bottom, &c, &search_name);
        match self.lower {
            PaneId::Log => {
                let c = ctx(self.focus == PaneId::Log, self.pending(Slot::Log));
                self.log.render(frame, right, &c);
            }
            _ => {
                let name = self
                    .monitor
                    .timeline
                    .as_ref()
                    .map(|id| self.timelines.name_of(id))
                    .unwrap_or_default();
                let c = ctx(
                    self.focus == PaneId::Monitor,
                    self.pending(Slot::Monitor) && self.monitor.status.is_none(),
                );
                self.monitor.render(frame, right, &c, &name);
            }
        }
        self.draw_footer(frame, footer);
        self.draw_modal(frame, body);
    }

    /// The header: who and where the traveller is, the connection and the refresh time come
    /// first; on a narrow terminal the words around them shorten, and the data source gives
    /// way (cut with an ellipsis, or left out).
    fn draw_header(&self, frame: &mut Frame<'_>, area: Rect) {
        let p = &self.palette;
        let width = usize::from(area.width);
        let spans_for = |compact: bool| {
            let mut spans = vec![Span::styled(" chronoscope ", p.title)];
            spans.push(match (&self.connection, compact) {
                (Connection::Connecting, false) => Span::styled(" ○ connecting ", p.dim),
                (Connection::Connecting, true) => Span::styled(" ○ ", p.dim),
                (Connection::Connected, false) => Span::styled(" ● connected ", p.ok),
                (Connection::Connected, true) => Span::styled(" ● ", p.ok),
                (Connection::Disconnected(why), false) => Span::styled(
                    format!(
                        " ✗ disconnected ({}) — retrying ",
                        widgets::ellipsize(why, 40)
                    ),
                    p.error,
                ),
                (Connection::Disconnected(why), true) => Span::styled(
                    format!(" ✗ disconnected ({}) ", widgets::ellipsize(why, 40)),
                    p.error,
                ),
            });
            if let Some(w) = &self.whoami {
                spans.push(Span::styled(
                    format!(
                        " {} @ {} {} ",
                        w.traveller,
                        self.timelines.name_of(&w.timeline_id),
                        fmt_time(&w.time)
                    ),
                    p.text,
                ));
            }
            if let Some(at) = &self.last_refresh {
                let label = if compact { "↻" } else { "refreshed" };
                spans.push(Span::styled(
                    format!(" {label} {} ", at.format("%H:%M:%S")),
                    p.dim,
                ));
            }
            if self.busy() {
                spans.push(Span::styled(SPINNER[self.spinner % SPINNER.len()], p.warn));
            }
            spans
        };
        let used =
            |spans: &[Span]| -> usize { spans.iter().map(|s| s.content.chars().count()).sum() };
        let mut spans = spans_for(false);
        if used(&spans) > width {
            spans = spans_for(true);
        }
        let room = width.saturating_sub(used(&spans) + 2);
        if room >= self.source.chars().count().min(16) {
            spans.insert(
                1,
                Span::styled(
                    format!(" {} ", widgets::ellipsize(&self.source, room)),
                    p.text,
                ),
            );
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
    }

    fn draw_footer(&mut self, frame: &mut Frame<'_>, area: Rect) {
        let p = self.palette;
        if let Some(Modal::Command(input)) = &mut self.modal {
            // What Tab offers (or an error) stays in view beside what is typed.
            let typed = widgets::input_text(input).chars().count() as u16;
            let [colon, rest, aside] = Layout::horizontal([
                Constraint::Length(1),
                Constraint::Length(typed.saturating_add(2).max(12)),
                Constraint::Min(0),
            ])
            .areas(area);
            frame.render_widget(Paragraph::new(Span::styled(":", p.key)), colon);
            input.set_cursor_style(p.selected);
            frame.render_widget(&**input, rest);
            if let Some(flash) = &self.flash {
                let style = if flash.error { p.error } else { p.dim };
                frame.render_widget(
                    Paragraph::new(Span::styled(flash.text.clone(), style)),
                    aside,
                );
            }
            return;
        }
        if let Some(flash) = &self.flash {
            let style = if flash.error { p.error } else { p.ok };
            frame.render_widget(
                Paragraph::new(Span::styled(format!(" {}", flash.text), style))
                    .wrap(ratatui::widgets::Wrap { trim: false }),
                area,
            );
            return;
        }
        let hints = if self.timelines.filter_input.is_some() || self.search.editing.is_some() {
            vec![
                ("enter".to_owned(), "apply"),
                ("tab".to_owned(), "next input"),
                ("esc".to_owned(), "leave the input"),
            ]
        } else {
            self.keymap.hints(self.context())
        };
        let mut spans = Vec::new();
        let mut width = 0usize;
        for (key, what) in hints {
            let len = key.chars().count() + what.chars().count() + 3;
            if width + len > area.width as usize {
                break;
            }
            width += len;
            spans.push(Span::styled(format!(" {key}"), p.key));
            spans.push(Span::styled(format!(" {what} "), p.dim));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
    }

    fn draw_modal(&mut self, frame: &mut Frame<'_>, area: Rect) {
        let p = self.palette;
        let timelines = &self.timelines;
        let name_of = |id: &TimelineId| timelines.name_of(id);
        match &mut self.modal {
            None | Some(Modal::Command(_)) => {}
            Some(Modal::Help(scroll)) => help::render(frame, area, &self.keymap, &p, scroll),
            Some(Modal::Form(form)) => form.render(frame, area, &p),
            Some(Modal::Wizard(w)) => w.render(frame, area, &p, &name_of),
            Some(Modal::Journeys(journeys, scroll)) => {
                let lines = journey_lines(journeys, &p, &name_of);
                scrolling_modal(
                    frame,
                    area,
                    "Your journeys, newest first",
                    lines,
                    scroll,
                    &p,
                );
            }
            Some(Modal::Report(report, scroll)) => {
                let lines = wizard::report_lines(report, &p, &name_of);
                scrolling_modal(frame, area, "Paradox check", lines, scroll, &p);
            }
            Some(Modal::Confirm(confirm)) => {
                let (title, question) = match confirm {
                    Confirm::DeleteTimeline(id, name) => (
                        "Delete timeline",
                        format!(
                            "Delete timeline {name} ({id}) and its own events? Journeys into it stay in history."
                        ),
                    ),
                    Confirm::Revert(_, e) => (
                        "Revert event",
                        format!(
                            "Undo the latest change of {} ({})? It is checked for paradoxes first.",
                            e.description, e.event_id
                        ),
                    ),
                    Confirm::ApplyAnyway { why, .. } => (
                        "Paradox",
                        format!("{why}\n\nApply it anyway? (n keeps it unmade)"),
                    ),
                };
                let mut lines: Vec<Line> = question.lines().map(Line::from).collect();
                lines.push(Line::default());
                lines.push(Line::from(vec![
                    Span::styled("y", p.key),
                    Span::styled(" yes   ", p.dim),
                    Span::styled("n", p.key),
                    Span::styled(" no", p.dim),
                ]));
                let width = area.width.saturating_sub(10).min(70);
                let text = Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false });
                // As tall as the wrapped question (a refusal may name several paradoxes).
                let needed =
                    u16::try_from(text.line_count(width.saturating_sub(2))).unwrap_or(u16::MAX);
                let rect = centered(
                    area,
                    width,
                    needed.saturating_add(2).min(area.height.saturating_sub(2)),
                );
                let inner = modal(frame, rect, title, &p);
                frame.render_widget(text, inner);
            }
        }
    }
}

/// A key in a read-only scrolling modal: the new scroll, or `None` when it closes.
fn scroll_key(code: KeyCode, scroll: u16) -> Option<u16> {
    match code {
        KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => None,
        KeyCode::Down | KeyCode::Char('j') => Some(scroll.saturating_add(1)),
        KeyCode::Up | KeyCode::Char('k') => Some(scroll.saturating_sub(1)),
        _ => Some(scroll),
    }
}

/// A read-only modal as tall as its wrapped `lines` and a hint need, scrolling (`scroll` is
/// kept in range) when the screen is not.
fn scrolling_modal(
    frame: &mut Frame<'_>,
    area: Rect,
    title: &str,
    lines: Vec<Line<'static>>,
    scroll: &mut u16,
    p: &Palette,
) {
    let width = area.width.saturating_sub(10).min(90);
    let text = Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false });
    let needed = u16::try_from(text.line_count(width.saturating_sub(2))).unwrap_or(u16::MAX);
    let rect = centered(
        area,
        width,
        needed.saturating_add(4).min(area.height.saturating_sub(2)),
    );
    let inner = modal(frame, rect, title, p);
    let [body, _, hint] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    *scroll = (*scroll).min(needed.saturating_sub(body.height));
    let more = needed > body.height;
    frame.render_widget(text.scroll((*scroll, 0)), body);
    let hint_text = if more {
        "j/k scroll · enter / esc close"
    } else {
        "enter / esc close"
    };
    frame.render_widget(Paragraph::new(Span::styled(hint_text, p.dim)), hint);
}

/// The traveller's journeys, newest first: when, from where to where, what came along.
fn journey_lines(
    journeys: &[crate::service::Journey],
    p: &Palette,
    name_of: &dyn Fn(&TimelineId) -> String,
) -> Vec<Line<'static>> {
    if journeys.is_empty() {
        return vec![Line::from(Span::styled(
            "No journeys yet. Press t to travel.",
            p.dim,
        ))];
    }
    let mut lines = Vec::new();
    for j in journeys.iter().rev() {
        let how = if j.anchor.is_some() {
            " (return to an anchor)"
        } else {
            ""
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{}  ", fmt_time(&j.departed_at)), p.dim),
            Span::styled(
                format!(
                    "{} {} → {} {}{how}",
                    name_of(&j.from_timeline),
                    fmt_time(&j.from_time),
                    name_of(&j.to_timeline),
                    fmt_time(&j.arrival_time)
                ),
                p.text,
            ),
        ]));
        if !j.items_transported.is_empty() || !j.items_left.is_empty() {
            lines.push(Line::from(Span::styled(
                format!(
                    "    carried {} item{}, left {}",
                    j.items_transported.len(),
                    if j.items_transported.len() == 1 {
                        ""
                    } else {
                        "s"
                    },
                    j.items_left.len()
                ),
                p.dim,
            )));
        }
    }
    lines
}

/// The `:` words besides the action names; those followed by a space take an argument.
const COMMAND_WORDS: [&str; 5] = ["search ", "filter ", "monitor", "timelines", "quit"];

/// Tab on the command line: `line` completed as far as the commands it can begin agree, and
/// those commands (more than one: the choice is the user's).
fn complete_command(line: &str) -> (String, Vec<&'static str>) {
    if line.contains(' ') {
        return (line.to_owned(), Vec::new()); // past the command word: an argument
    }
    let choices: Vec<&'static str> = COMMAND_WORDS
        .iter()
        .copied()
        .chain(Action::ALL.iter().map(|a| a.name()))
        .filter(|c| c.starts_with(line))
        .collect();
    let Some(first) = choices.first() else {
        return (line.to_owned(), choices);
    };
    let common = choices.iter().fold(first.len(), |n, c| {
        first
            .bytes()
            .zip(c.bytes())
            .take(n)
            .take_while(|(a, b)| a == b)
            .count()
    });
    (first[..common].to_owned(), choices)
}

/// Every page of a list, up to [`MAX_ROWS`] rows.
async fn all_pages<T, F, Fut>(mut list: F) -> Result<Vec<T>, ServiceError>
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
