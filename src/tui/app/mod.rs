//! The dashboard's loop: its state, its one `update` function, and where things go.
//!
//! Everything that happens arrives as a [`Msg`] on one queue; [`App::update`] is the only place
//! state changes. Service calls are spawned in the background and answer on the same queue,
//! tagged with their [`Slot`] and a generation number: an answer whose generation is no longer
//! the newest of its slot is stale and dropped, so a slow reply never overwrites a newer one.
//!
//! [`App`] holds the components (the panes, the modal on top, the flash) and routes: a key to
//! the modal, else to the input a pane is editing, else through the key map to an action
//! (`dispatch`); what a component answers ([`Effect`]s) is carried out here; an answer is put
//! where it belongs (`replies`); `calls` sends the background calls, `draw` lays out a frame.
//! Nothing outside this folder extends `App`.

mod calls;
mod dispatch;
mod draw;
mod guard;
mod replies;

use std::collections::HashSet;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent};
use tokio::sync::mpsc::UnboundedSender;

use super::action::{Msg, Push, Reply, Slot};
pub use super::chrome::Connection;
use super::chrome::Flash;
pub use super::config::AppConfig;
use super::effect::Checked;
use super::effect::Effect;
use super::keymap::{Context, Key, KeyMap};
use super::live::{Follower, Link};
use super::modal::{Around, Modal};
use super::mouse::Areas;
use super::open;
use super::panes::{Panes, Then};
use super::requests::Requests;
use super::theme::Palette;
use crate::engine::Clock;
use crate::error::ServiceError;
use crate::model::{Instant, TimelineId};
use crate::service::TravellerStatus;
use crate::service::prelude::*;

/// While the server refuses the token, the dashboard asks again once in this many ticks (every
/// 30 s at the default 2 s tick) instead of polling everything on each: with an expired token
/// it sent about two refused requests a second, each one in the server's log.
pub const REFUSED_TOKEN_PROBE_TICKS: u32 = 15;

/// The dashboard.
pub struct App {
    /// Where every call goes.
    service: Arc<dyn TimelineService>,
    tx: UnboundedSender<Msg>,
    clock: Arc<dyn Clock>,
    /// Key bindings.
    pub keymap: KeyMap,
    /// Styles.
    pub palette: Palette,
    /// Data source shown in the header.
    pub source: String,
    /// The panes, and which has the focus.
    pub panes: Panes,
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
    /// The last flash, kept after it goes (the footer may have cut it): read whole on a key.
    pub last_message: Option<Flash>,
    /// The monitor's pushed changes, and whether they are coming.
    pub follower: Follower,
    push: bool,
    /// The background calls in flight.
    requests: Requests,
    /// The timeline to select when the list next arrives (one just created).
    select_after_refresh: Option<TimelineId>,
    /// Timelines whose deletion was said (by this dashboard or found out): not said again.
    said_gone: HashSet<TimelineId>,
    /// Ticks since the server refused the token (see [`REFUSED_TOKEN_PROBE_TICKS`]).
    refused_ticks: u32,
    /// The safety-checked change in flight, if any.
    checking: Option<Checked>,
    /// The spinner's frame.
    spinner: usize,
    /// The user asked to quit.
    quit: bool,
    /// Where the last frame put the panes, for the mouse.
    areas: Areas,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("source", &self.source)
            .field("focus", &self.panes.focus)
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
            tx: tx.clone(),
            clock: config.clock,
            keymap: config.keymap,
            palette: config.palette,
            source: config.source,
            panes: Panes::default(),
            modal: None,
            whoami: None,
            connection: Connection::Connecting,
            last_refresh: None,
            flash: None,
            last_message: None,
            follower: Follower::default(),
            push: config.push,
            requests: Requests::new(tx),
            select_after_refresh: None,
            said_gone: HashSet::new(),
            refused_ticks: 0,
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
        self.requests.busy()
    }

    /// Whether a call of `slot` is in flight.
    pub fn pending(&self, slot: Slot) -> bool {
        self.requests.pending(slot)
    }

    /// The newest generation sent in `slot`.
    pub fn generation(&self, slot: Slot) -> u64 {
        self.requests.generation(slot)
    }

    /// The dashboard clock's now.
    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Shows an informational flash.
    pub fn flash_info(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash::info(text));
        self.last_message.clone_from(&self.flash);
    }

    /// Shows an error flash (stays a little longer).
    pub fn flash_error(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash::error(text));
        self.last_message.clone_from(&self.flash);
    }

    /// What a modal may read of the dashboard around it.
    fn around(&self) -> Around<'_> {
        Around {
            palette: &self.palette,
            keymap: &self.keymap,
            timelines: &self.panes.timelines,
            monitor: &self.panes.monitor,
            search: &self.panes.search,
            whoami: self.whoami.as_ref(),
            now: self.now(),
        }
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
        let lost = matches!(push, Push::Lost(..));
        let Some(events) = self.follower.on_push(generation, push) else {
            if lost && !self.pending(Slot::Whoami) {
                // A lost stream often means a lost server: let the header say which now.
                self.request_whoami();
            }
            // The stream never brought its snapshot: the monitor is polled for it now.
            if lost && self.panes.monitor.status.is_none() && !self.pending(Slot::Monitor) {
                self.request_monitor();
            }
            return;
        };
        self.last_refresh = Some(self.now());
        let Some(changed) = self.panes.pushed(events, self.clock.now()) else {
            return;
        };
        // A poll sent before this push would answer with an older state: it is dropped.
        self.requests.outdate(Slot::Monitor);
        if changed {
            // Once per batch, and not on top of a request already on its way.
            if self.panes.search.searched && !self.pending(Slot::Search) {
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
                .follow(&self.service, self.panes.monitor.timeline.clone(), &self.tx);
        }
    }

    /// Opens the followed stream again now if it was lost, if pushes are on.
    fn reopen_stream(&mut self) {
        if self.push {
            self.follower.reopen(&self.service, &self.tx);
        }
    }

    fn on_tick(&mut self) {
        self.flash = self.flash.take().and_then(Flash::aged);
        if self.follower.is_live()
            && !self.panes.monitor.frozen
            && self.panes.monitor.status.is_some()
        {
            // Not polled while changes are pushed, but NEW marks and faded rows still age,
            // and the sparkline still takes one sample a tick.
            let same = self.panes.monitor.open_report(self.now());
            self.panes.monitor.apply(same);
        }
        if matches!(self.connection, Connection::TokenRefused(_)) {
            // A refused token is not accepted by asking again (an expired one never is): one
            // call in this many ticks finds out whether the server takes it now, and nothing
            // else is polled meanwhile. `ctrl-r` asks at once.
            self.refused_ticks += 1;
            if self.refused_ticks.is_multiple_of(REFUSED_TOKEN_PROBE_TICKS)
                && !self.pending(Slot::Whoami)
            {
                self.request_whoami();
            }
            return;
        }
        self.refused_ticks = 0;
        self.refresh(false);
    }

    /// A background call finished: counted, dropped when a newer one of its slot is on its way,
    /// else answered.
    fn on_done(&mut self, slot: Slot, generation: u64, result: Result<Reply, ServiceError>) {
        // Dropped when a newer request of this slot is on its way.
        if self.requests.finished(slot, generation) {
            self.on_answer(slot, result);
        }
    }

    /// The selected timeline may have changed: watch it in the monitor.
    fn selection_changed(&mut self) {
        let selected = self.panes.timelines.selected().map(|t| t.id.clone());
        if self.panes.monitor.timeline != selected {
            self.panes.monitor.watch(selected.clone());
            // One scan per selection change: a followed stream starts with a snapshot, so it
            // is polled only when there is no stream to follow.
            self.follow_monitor();
            if !self.push || !matches!(self.follower.link, Link::Connecting | Link::Live) {
                self.request_monitor();
            }
        }
        // A search follows the selected timeline too, with the same inputs (unless they were
        // edited into something that does not parse; that waits for the user's enter).
        if self.panes.search.timeline.is_some()
            && selected.is_some()
            && self.panes.search.timeline != selected
            && self.panes.search.query().is_ok()
        {
            self.request_search();
        }
    }

    // ---------------------------------------------------------------- keys

    /// Where the keys go: the focused pane's bindings.
    fn context(&self) -> Context {
        Context::of(self.panes.focus)
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
        if let Some(modal) = self.modal.take() {
            let (next, effects) = modal.key(key, &self.around());
            self.modal = next;
            return self.apply_all(effects);
        }
        match self.panes.input_key(key) {
            Then::NotPanes => {}
            then => return self.then(then),
        }
        let key = Key::from_event(&key);
        if let Some(action) = self.keymap.resolve(key, self.context()) {
            self.dispatch(action);
        } else if let Some((pane, what)) = self.keymap.elsewhere(key, self.context()) {
            // A key of another pane says where it works instead of doing nothing.
            let how = pane.where_it_works();
            // "U (isolations of the selected timeline: list, lift): in the timelines pane"
            self.flash_error(format!("{key} ({what}): {how}."));
        }
    }

    /// Carries out what components answered, in order.
    fn apply_all(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            self.apply(effect);
        }
    }

    /// Carries out what a component answered.
    fn apply(&mut self, effect: Effect) {
        match effect {
            Effect::Call(call) => self.call(call),
            Effect::Info(text) => self.flash_info(text),
            Effect::Error(text) => self.flash_error(text),
            Effect::Action(action) => self.dispatch(action),
            Effect::Focus(pane) => self.dispatch_focus(pane),
            Effect::Search(place) => {
                let then = self.panes.search_anywhere(&place);
                self.then(then);
            }
            Effect::Filter(text) => {
                let then = self.panes.filter(text);
                self.then(then);
            }
            Effect::ReturnTo(anchor) => {
                let opened = open::return_to(anchor);
                self.modal = opened.modal;
                self.apply_all(opened.effects);
            }
            Effect::Reload(what) => self.reload(what),
            Effect::Quit => self.quit = true,
        }
    }

    /// Handles a mouse event; ignored while a modal is open.
    fn on_mouse(&mut self, mouse: MouseEvent) {
        let pointer = self.areas.pointer(mouse, self.panes.lower);
        let then = pointer
            .filter(|_| self.modal.is_none())
            .map(|p| p.apply(&mut self.panes));
        if let Some(Then::SelectionChanged) = then {
            self.selection_changed();
        }
    }
}

#[cfg(any(test, feature = "test-hooks"))]
impl App {
    /// Starts a background call that panics, as a bug in a call would: it must end as an
    /// error the user sees, and free its slot.
    pub fn spawn_panicking_call(&mut self) {
        self.requests.spawn_panicking();
    }
}
