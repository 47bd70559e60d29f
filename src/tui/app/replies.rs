//! The answers: what a finished background call does to the connection, the panes and the
//! modal on top. A refusal stays under the form that asked; a safety check's refusal asks
//! whether to apply the change anyway; any other error becomes a flash.

use super::{App, Connection};
use crate::error::ServiceError;
use crate::model::TimelineId;
use crate::service::ClockState;
use crate::tui::action::{Action, Reply, Slot};
use crate::tui::confirm::Confirm;
use crate::tui::effect::Reload;
use crate::tui::modal::Modal;
use crate::tui::security::rights;
use crate::tui::time_controls::clock_changed;

impl App {
    /// The answer of a call that is still the newest of its `slot`.
    pub(super) fn on_answer(&mut self, slot: Slot, result: Result<Reply, ServiceError>) {
        self.connection_after(&result);
        let pending_form =
            slot == Slot::Mutation && self.modal.as_ref().is_some_and(Modal::pending_form);
        let checked = if slot == Slot::Mutation {
            self.checking.take()
        } else {
            None
        };
        match result {
            // The safety check found paradoxes: the component asks before applying anyway;
            // when something else is on screen now, it is said, not asked over.
            Err(e @ ServiceError::ParadoxDetected { .. }) if checked.is_some() => {
                if let Some(change) = checked
                    && !Modal::paradox_refused(&mut self.modal, change, e.explain(), pending_form)
                {
                    self.on_error(slot, e);
                }
            }
            Ok(reply) => {
                // What the user asked for worked: an error left by an earlier attempt is stale.
                if !slot.is_background() && self.flash.as_ref().is_some_and(|f| f.error) {
                    self.flash = None;
                }
                if pending_form {
                    self.modal = self.modal.take().and_then(Modal::answered);
                }
                self.on_reply(reply)
            }
            // Refused: the form stays as it was typed, with the reason under it.
            Err(e) if pending_form && !matches!(e, ServiceError::Unavailable(_)) => {
                if let Some(modal) = &mut self.modal {
                    let field = match &e {
                        ServiceError::InvalidInput { field, .. } => Some(field.as_str()),
                        _ => None,
                    };
                    modal.refused(Some(e.explain()), field);
                }
            }
            Err(e) => {
                if pending_form && let Some(modal) = &mut self.modal {
                    modal.refused(None, None);
                }
                self.on_error(slot, e)
            }
        }
    }

    /// Causes looked up arrived: the detail names them, and a correct-dissonance question
    /// waiting for them says where the event goes.
    fn causes_arrived(&mut self, causes: Vec<crate::service::EventRecord>) {
        self.panes.search.name_causes(causes);
        if let Some(Modal::Confirm(Confirm::Align(_, event, cause @ None))) = &mut self.modal {
            *cause = self.panes.search.latest_cause(event).map(Box::new);
        }
    }

    /// What an answer says of the connection: the service is gone, refuses the token,
    /// answers only who you are (restricted to `no_access`), or answers.
    fn connection_after(&mut self, result: &Result<Reply, ServiceError>) {
        let answered = match result {
            Ok(Reply::Whoami(me)) => Ok(Some(me)),
            Ok(_) => Ok(None),
            Err(e) => Err(e),
        };
        let Some(next) = self.connection.after(answered) else {
            return;
        };
        let back = next == Connection::Connected && self.connection != Connection::Connected;
        if let Some(text) = back.then(|| self.connection.welcome_back()).flatten() {
            self.flash_info(text);
        }
        // The server answers: a stream lost meanwhile, or that could not reach it, is opened
        // again now, not after its pause ("connection refused" would stand beside "connected").
        if back || (next == Connection::Connected && self.follower.unreached()) {
            self.reopen_stream();
        }
        self.connection = next;
    }

    /// An error the user should see, unless the header already says it; a wizard waiting on
    /// the call stops waiting.
    fn on_error(&mut self, slot: Slot, e: ServiceError) {
        // A screen that shows why itself (a security screen) needs no flash saying it again.
        if let Some(modal) = &mut self.modal
            && modal.call_failed(slot, &e.explain())
        {
            return;
        }
        // The header and its banner already say the service is gone or refuses the token;
        // don't repeat it every tick.
        let said = match e {
            ServiceError::Unavailable(_) | ServiceError::Unauthorized(_) => true,
            ServiceError::TravelRestricted { .. } => {
                matches!(self.connection, Connection::Restricted(_))
            }
            _ => false,
        };
        if slot.is_background() && said {
            return;
        }
        // A timeline we knew is unknown now: deleted elsewhere, which is news, not an error of
        // a request the user made.
        if let ServiceError::UnknownReference { what, id } = &e
            && what == "timeline"
        {
            if self.said_gone.iter().any(|gone| gone.as_str() == id) {
                return;
            }
            if let Some((id, name)) = self.panes.timelines.listed(id) {
                return self.timeline_gone(id, &name);
            }
        }
        self.flash_error(e.explain());
    }

    /// Says once that the timeline `id` was deleted, and asks for the list again.
    fn timeline_gone(&mut self, id: TimelineId, name: &str) {
        if self.said_gone.insert(id) {
            self.flash_info(format!("Timeline '{name}' was deleted."));
        }
        if !self.pending(Slot::Timelines) {
            self.request_timelines();
        }
    }

    /// A successful answer, put where it belongs: a modal's to the component that asked
    /// (through [`Modal::answer`]), a pane's to the pane.
    fn on_reply(&mut self, reply: Reply) {
        if reply.for_panes() {
            return self.on_pane_reply(reply);
        }
        let mut modal = self.modal.take();
        let effects = Modal::answer(&mut modal, reply, &self.around());
        // A component may have opened another modal over what was there.
        self.modal = modal;
        self.apply_all(effects);
    }

    /// An answer of the panes or the header.
    fn on_pane_reply(&mut self, reply: Reply) {
        match reply {
            Reply::Whoami(status) => {
                let refused = rights::changes_refused(&status, &self.panes.timelines);
                self.panes
                    .timelines
                    .learn_who(status.traveller.clone(), refused);
                self.whoami = Some(status);
                self.last_refresh = Some(self.now());
            }
            Reply::Timelines(list, rights) => self.timelines_arrived(list, rights),
            Reply::Search(results) => self.panes.searched(results, self.clock.now()),
            Reply::Causes(causes) => self.causes_arrived(causes),
            Reply::Monitor(report) => self.panes.monitored(report),
            Reply::Log(entries) => self.panes.log.set(entries),
            Reply::Deleted(id, name) => {
                self.said_gone.insert(id);
                self.flash_info(format!("Deleted timeline {name}."));
                self.request_timelines();
            }
            Reply::Clock(state) => self.on_clock(state),
            // Every other answer is a modal's (see Reply::for_panes).
            _ => {}
        }
    }

    /// The timelines arrived: the list, your rights; a search or picture of a timeline
    /// deleted meanwhile moves away from it and says why; the selection follows.
    fn timelines_arrived(
        &mut self,
        list: Vec<crate::service::TimelineInfo>,
        rights: Option<Vec<crate::service::AccessControlView>>,
    ) {
        let pictured = match &self.modal {
            Some(Modal::Picture(p)) => Some(p.timeline.clone()),
            _ => None,
        };
        let listed = self.panes.listed(list, rights, pictured.as_ref());
        for (id, name) in listed.gone {
            // The picture of a deleted timeline would show events that are gone: closed.
            if pictured.as_ref() == Some(&id) {
                self.modal = None;
            }
            if self.said_gone.insert(id) {
                self.flash_info(format!("Timeline '{name}' was deleted."));
            }
        }
        if let Some(id) = self.select_after_refresh.take() {
            self.panes.timelines.select(&id);
        } else if listed.first
            && let Some(here) = self.whoami.as_ref().map(|w| w.timeline_id.clone())
        {
            self.panes.timelines.select(&here);
        }
        self.selection_changed();
        if listed.search_again && !self.pending(Slot::Search) {
            self.request_search();
        }
    }

    /// The clock was paused or resumed (or already was): the header says so at once, and
    /// where the service puts you is asked again.
    fn on_clock(&mut self, state: ClockState) {
        let key = self.keymap.key_for(Action::PauseResume);
        let said = clock_changed(self.whoami.as_mut(), state, &key);
        self.flash_info(said);
        self.request_whoami();
    }

    /// Asks again for what a change made stale.
    pub(super) fn reload(&mut self, what: Reload) {
        match what {
            Reload::All => self.refresh(true),
            Reload::Timelines => self.request_timelines(),
            Reload::Select(id) => {
                self.select_after_refresh = Some(id);
                self.request_timelines();
            }
            Reload::Whoami => self.request_whoami(),
            Reload::Picture => self.refresh_picture(),
            Reload::WizardData => self.request_wizard_data(),
            Reload::Causes => self.request_causes(),
            Reload::Events => {
                if self.panes.search.searched {
                    self.request_search();
                }
                self.request_monitor();
                self.request_timelines();
                self.refresh_picture();
            }
        }
    }
}
