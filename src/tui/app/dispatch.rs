//! Carrying out a user intent: [`App::dispatch`] turns an [`Action`] (a key, a `:` command, a
//! click) into focus and cursor moves, a modal opened, or a call in the background.

use super::App;
use crate::tui::action::Action;
use crate::tui::modal::Modal;
use crate::tui::open;
use crate::tui::panes::PaneId;
use crate::tui::widgets::Cursor;

impl App {
    /// Focuses `pane`; the monitor and the log take the lower-right place as they get it.
    pub(super) fn dispatch_focus(&mut self, pane: PaneId) {
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
        if let Some(why) = self.rights().refused_action(action) {
            return self.flash_error(why);
        }
        match action {
            A::Quit => self.quit = true,
            A::Help => self.modal = Some(Modal::Help(0)),
            A::NextPane => self.dispatch_focus(self.focus.cycle(true, self.lower)),
            A::PrevPane => self.dispatch_focus(self.focus.cycle(false, self.lower)),
            A::Right => self.dispatch_focus(self.focus.beside(true, self.lower)),
            A::Left => self.dispatch_focus(self.focus.beside(false, self.lower)),
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
                        self.modal = Some(Modal::Anomaly(Box::new(row.anomaly.clone()), 0));
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
                PaneId::Timelines => self.timelines.start_filter(),
                _ => {
                    self.focus = PaneId::Search;
                    self.search.start_editing();
                }
            },
            A::Command => self.modal = Some(Modal::Command(Box::default())),
            A::Refresh => {
                self.refresh(true);
                if self.search.searched {
                    self.request_search();
                }
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
            A::LastMessage => match &self.last_message {
                Some(said) => self.modal = Some(Modal::Message(said.text.clone(), 0)),
                None => self.flash_info("No message yet."),
            },
            _ => self.open(action),
        }
    }

    /// Opens what `action` asks for on top (see [`open`]) and sends what it needs.
    fn open(&mut self, action: Action) {
        let opened = open::open(action, &self.around(), self.focus);
        if let Some(modal) = opened.modal {
            self.modal = Some(modal);
        }
        self.apply_all(opened.effects);
    }

    /// Moves the focused pane's cursor by `delta` rows.
    pub(super) fn move_cursor(&mut self, delta: isize) {
        if let Some((cursor, len)) = self.cursor_of(self.focus) {
            cursor.step(delta, len);
        }
        if self.focus == PaneId::Timelines {
            self.selection_changed();
        }
    }

    /// The cursor of `pane`'s list and the list's length; none while the search shows an
    /// event's detail.
    pub(super) fn cursor_of(&mut self, pane: PaneId) -> Option<(&mut Cursor, usize)> {
        match pane {
            PaneId::Timelines => {
                let len = self.timelines.len();
                Some((&mut self.timelines.cursor, len))
            }
            PaneId::Search if self.search.detail => None,
            PaneId::Search => Some((&mut self.search.cursor, self.search.results.len())),
            PaneId::Monitor => Some((&mut self.monitor.cursor, self.monitor.rows.len())),
            PaneId::Log => Some((&mut self.log.cursor, self.log.entries.len())),
        }
    }
}
