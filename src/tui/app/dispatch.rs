//! Carrying out a user intent: [`App::dispatch`] turns an [`Action`] (a key, a `:` command, a
//! click) into focus and cursor moves, a modal opened, or a call in the background.

use super::App;
use crate::tui::action::Action;
use crate::tui::modal::Modal;
use crate::tui::open;
use crate::tui::panes::{PaneId, Then};

impl App {
    /// Focuses `pane`, fetching the log when it takes the monitor's place.
    pub(super) fn dispatch_focus(&mut self, pane: PaneId) {
        if self.panes.focus_on(pane) {
            self.request_log();
        }
    }

    /// What the loop does after the panes took a key or an action.
    pub(super) fn then(&mut self, then: Then) {
        match then {
            Then::NotPanes | Then::Done => {}
            Then::Search => self.request_search(),
            Then::Causes => self.request_causes(),
            Then::SelectionChanged => self.selection_changed(),
            Then::Log => self.request_log(),
            Then::Anomaly(anomaly) => self.modal = Some(Modal::Anomaly(anomaly, 0)),
            Then::Frozen(true) => self.flash_info("Monitor frozen; press f again to resume."),
            Then::Frozen(false) => {
                self.flash_info("Monitor live again.");
                self.request_monitor();
            }
        }
    }

    /// Carries out a user intent.
    pub fn dispatch(&mut self, action: Action) {
        use Action as A;
        if let Some(why) = self.rights().refused_action(action) {
            return self.flash_error(why);
        }
        match self.panes.act(action) {
            Then::NotPanes => {}
            then => return self.then(then),
        }
        match action {
            A::Quit => self.quit = true,
            A::Help => self.modal = Some(Modal::Help(0)),
            A::Command => self.modal = Some(Modal::Command(Box::default())),
            A::Refresh => {
                self.refresh(true);
                if self.panes.search.searched {
                    self.request_search();
                }
            }
            A::LastMessage => match &self.last_message {
                Some(said) => self.modal = Some(Modal::Message(said.text.clone(), 0)),
                None => self.flash_info("No message yet."),
            },
            _ => self.open(action),
        }
    }

    /// Opens what `action` asks for on top (see [`open`]) and sends what it needs.
    fn open(&mut self, action: Action) {
        let opened = open::open(action, &self.around(), self.panes.focus);
        if let Some(modal) = opened.modal {
            self.modal = Some(modal);
        }
        self.apply_all(opened.effects);
    }
}
