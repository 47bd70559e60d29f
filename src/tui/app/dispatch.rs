//! Carrying out a user intent: [`App::dispatch`] turns an [`Action`] (a key, a `:` command, a
//! click) into focus and cursor moves, a modal opened, or a call in the background.

use super::App;
use crate::tui::action::Action;
use crate::tui::modal::Modal;
use crate::tui::open;
use crate::tui::panes::PaneId;

impl App {
    /// Focuses `pane`, fetching the log when it takes the monitor's place.
    pub(super) fn dispatch_focus(&mut self, pane: PaneId) {
        if self.panes.focus_on(pane) {
            self.request_log();
        }
    }

    /// Carries out a user intent.
    pub fn dispatch(&mut self, action: Action) {
        use Action as A;
        if let Some(why) = self.rights().refused_action(action) {
            return self.flash_error(why);
        }
        match action {
            A::Quit => self.quit = true,
            A::Help => self.modal = Some(Modal::Help(0)),
            A::NextPane => self.dispatch_focus(self.panes.focus.cycle(true, self.panes.lower)),
            A::PrevPane => self.dispatch_focus(self.panes.focus.cycle(false, self.panes.lower)),
            A::Right => self.dispatch_focus(self.panes.focus.beside(true, self.panes.lower)),
            A::Left => self.dispatch_focus(self.panes.focus.beside(false, self.panes.lower)),
            A::Up => self.move_cursor(-1),
            A::Down => self.move_cursor(1),
            A::PageUp => self.move_cursor(-10),
            A::PageDown => self.move_cursor(10),
            A::Top => self.move_cursor(isize::MIN / 2),
            A::Bottom => self.move_cursor(isize::MAX / 2),
            A::Open => match self.panes.focus {
                PaneId::Timelines => {
                    self.panes.focus = PaneId::Search;
                    self.panes.search.detail = false;
                    self.request_search();
                }
                PaneId::Search => {
                    if self.panes.search.selected().is_some() {
                        self.panes.search.detail = true;
                        self.request_causes();
                    }
                }
                PaneId::Monitor => {
                    if let Some(row) = self
                        .panes
                        .monitor
                        .rows
                        .get(self.panes.monitor.cursor.selected)
                    {
                        self.modal = Some(Modal::Anomaly(Box::new(row.anomaly.clone()), 0));
                    }
                }
                PaneId::Log => {}
            },
            A::Back => {
                if self.panes.search.detail && self.panes.focus == PaneId::Search {
                    self.panes.search.detail = false;
                } else if !self.panes.timelines.filter.is_empty()
                    && self.panes.focus == PaneId::Timelines
                {
                    self.panes.timelines.set_filter(String::new());
                    self.selection_changed();
                } else if self.panes.focus != PaneId::Timelines {
                    self.panes.focus = PaneId::Timelines;
                }
            }
            A::Filter => match self.panes.focus {
                PaneId::Timelines => self.panes.timelines.start_filter(),
                _ => {
                    self.panes.focus = PaneId::Search;
                    self.panes.search.start_editing();
                }
            },
            A::Command => self.modal = Some(Modal::Command(Box::default())),
            A::Refresh => {
                self.refresh(true);
                if self.panes.search.searched {
                    self.request_search();
                }
            }
            A::Freeze => {
                self.panes.monitor.frozen = !self.panes.monitor.frozen;
                self.flash_info(if self.panes.monitor.frozen {
                    "Monitor frozen; press f again to resume."
                } else {
                    "Monitor live again."
                });
                if !self.panes.monitor.frozen {
                    self.request_monitor();
                }
            }
            // L shows the log in the monitor's place, and L again brings the monitor back.
            A::ShowLog if self.panes.lower == PaneId::Log => self.dispatch_focus(PaneId::Monitor),
            A::ShowLog => self.dispatch_focus(PaneId::Log),
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

    /// Moves the focused pane's cursor by `delta` rows.
    pub(super) fn move_cursor(&mut self, delta: isize) {
        if self.panes.move_cursor(delta) {
            self.selection_changed();
        }
    }
}
