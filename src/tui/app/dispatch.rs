//! Carrying out a user intent: [`App::dispatch`] turns an [`Action`] (a key, a `:` command, a
//! click) into focus and cursor moves, a modal opened, or a call in the background.

use super::App;
use crate::model::TimelineId;
use crate::service::{Right, ScanDepth};
use crate::tui::action::Action;
use crate::tui::anchors::AnchorsList;
use crate::tui::confirm::Confirm;
use crate::tui::effect::Call;
use crate::tui::forms;
use crate::tui::merge::MergeWizard;
use crate::tui::modal::Modal;
use crate::tui::panes::PaneId;
use crate::tui::panes::wizard::Wizard;
use crate::tui::picture::Picture;
use crate::tui::security::access::AccessScreen;
use crate::tui::security::integrity::IntegrityScreen;
use crate::tui::security::restrictions::RestrictionsScreen;
use crate::tui::time_controls::Shift;
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
        if let Some(why) = self.refused_action(action) {
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
            A::NewTimeline => {
                let primary = self.timelines.name_of(&TimelineId::primary());
                let form = forms::new_timeline(&primary, self.timelines.selected());
                self.modal = Some(Modal::Form(Box::new(form)));
            }
            A::ParallelTimeline => {
                let Some(base) = self.timelines.selected() else {
                    return self.flash_error("Select a timeline to branch from first.");
                };
                self.modal = Some(Modal::Form(Box::new(forms::parallel_timeline(base))));
            }
            A::DeleteTimeline => match self.timelines.selected() {
                Some(t) if t.id.is_primary() => {
                    self.flash_error("The primary timeline cannot be deleted.")
                }
                Some(t) if let Some(why) = self.refusal(&t.id, Right::Admin) => {
                    self.flash_error(why)
                }
                Some(t) => {
                    self.modal = Some(Modal::Confirm(Confirm::DeleteTimeline(
                        t.id.clone(),
                        t.name.clone(),
                        None,
                    )));
                    // The question names the anchors the deletion leaves without a way back.
                    self.request_wizard_data();
                }
                None => self.flash_error("Select a timeline to delete first."),
            },
            A::AddEvent => {
                let Some(t) = self.timelines.selected() else {
                    return self.flash_error("Select a timeline to add the event to first.");
                };
                if let Some(why) = self.refusal(&t.id, Right::Write) {
                    return self.flash_error(why);
                }
                // The present, to the second: a default a person can read and edit.
                let time = t
                    .destination_time
                    .unwrap_or_else(|| chrono::SubsecRound::trunc_subsecs(self.now(), 0));
                self.modal = Some(Modal::Form(Box::new(forms::add_event(t, time))));
            }
            A::Manipulate | A::Revert | A::Isolate | A::CorrectDissonance => {
                let (Some(event), Some(timeline)) = (
                    self.search.selected().cloned(),
                    self.search.timeline.clone(),
                ) else {
                    return self
                        .flash_error("Search for an event and select it first (/ then enter).");
                };
                if let Some(why) = self.refusal(&timeline, Right::Write) {
                    return self.flash_error(why);
                }
                self.modal = Some(match action {
                    A::Manipulate => Modal::Form(Box::new(forms::manipulate(timeline, &event))),
                    A::Isolate => Modal::Confirm(Confirm::Isolate(timeline, event)),
                    A::CorrectDissonance => {
                        let cause = self.search.latest_cause(&event).map(Box::new);
                        self.request_causes();
                        Modal::Confirm(Confirm::Align(timeline, event, cause))
                    }
                    _ => Modal::Confirm(Confirm::Revert(timeline, event)),
                });
            }
            A::SetAnchor => {
                let at = self
                    .whoami
                    .as_ref()
                    .map(|w| w.time)
                    .unwrap_or_else(|| self.now());
                self.modal = Some(Modal::Form(Box::new(forms::anchor(at))));
            }
            A::Travel | A::ReturnToAnchor => {
                let anchors_only = action == A::ReturnToAnchor;
                self.modal = Some(Modal::Wizard(Box::new(Wizard::new(anchors_only))));
                self.request_wizard_data();
            }
            A::RegisterItem => {
                self.modal = Some(Modal::Form(Box::new(forms::register_item())));
            }
            A::CheckParadox => {
                let Some(t) = self.timelines.selected() else {
                    return self.flash_error("Select a timeline to check first.");
                };
                let (event, time) = match (self.focus, self.search.selected()) {
                    (PaneId::Search, Some(e)) => (
                        e.event_id.to_string(),
                        crate::model::format_instant(&e.time),
                    ),
                    _ => (String::new(), String::new()),
                };
                self.modal = Some(Modal::Form(Box::new(forms::check_draft(t, event, time))));
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
            A::TimelineView => {
                let Some(timeline) = self.timelines.selected().map(|t| t.id.clone()) else {
                    return self.flash_error("No timeline selected.");
                };
                self.modal = Some(Modal::Picture(Box::new(Picture::new(timeline.clone()))));
                self.request_picture(timeline);
            }
            A::Journeys => self.request_journeys(),
            A::PauseResume => {
                // Resumed when the header says paused, else paused; a stale header costs only
                // an "already" answer, as the service writes nothing then.
                let paused = self.whoami.as_ref().is_some_and(|w| w.position.paused);
                self.call(Call::Clock(!paused));
            }
            A::FastForward => self.modal = Some(Modal::Shift(Box::new(Shift::new(true)))),
            A::Rewind => self.modal = Some(Modal::Shift(Box::new(Shift::new(false)))),
            A::Anchors => {
                self.modal = Some(Modal::Anchors(Box::new(AnchorsList::new())));
                self.request_anchors();
            }
            A::Diff | A::Merge => {
                let Some(t) = self.timelines.selected() else {
                    return self.flash_error("Select a timeline first.");
                };
                match MergeWizard::from_tree(&self.timelines.all, t, action == A::Diff) {
                    Ok(mut w) => {
                        // Read-only sides are marked, and refused as B before any diff.
                        for side in w.sides.iter_mut().chain(std::iter::once(&mut w.source)) {
                            side.read_only = self.refusal(&side.id, Right::Write);
                        }
                        self.modal = Some(Modal::Merge(Box::new(w)));
                    }
                    Err(why) => self.flash_error(why),
                }
            }
            A::AccessControl => self.open_access(),
            A::Review => self.open_review(),
            A::Restrictions => {
                if self.whoami.as_ref().is_some_and(|w| !w.operator) {
                    return self.flash_error(
                        "The restrictions are for operators: it takes a token with the admin \
                         scope (the embedded dashboard is one).",
                    );
                }
                self.modal = Some(Modal::Restrictions(Box::new(RestrictionsScreen::new())));
                self.call(Call::Restrictions);
            }
            A::Integrity => {
                let Some(t) = self.timelines.selected() else {
                    return self.flash_error("Select a timeline to check first.");
                };
                let mut screen = IntegrityScreen::new(t.id.clone(), t.name.clone());
                let call = screen.scan(ScanDepth::Recent);
                self.modal = Some(Modal::Integrity(Box::new(screen)));
                self.call(call);
            }
        }
    }

    /// Opens the access screen of the selected timeline and asks for its list.
    fn open_access(&mut self) {
        let Some(t) = self.timelines.selected() else {
            return self.flash_error("Select a timeline first.");
        };
        let operator = self.whoami.as_ref().is_some_and(|w| w.operator);
        let me = self.whoami.as_ref().map(|w| w.traveller.clone());
        let screen = AccessScreen::new(t.id.clone(), t.name.clone(), operator, me);
        let call = screen.fetch();
        self.modal = Some(Modal::Access(Box::new(screen)));
        self.call(call);
    }

    /// Opens the review of the merges waiting into the selected timeline (marked ⇄).
    fn open_review(&mut self) {
        let Some(t) = self.timelines.selected() else {
            return self.flash_error("Select a timeline first.");
        };
        match MergeWizard::review_into(t) {
            Some((wizard, asked)) => {
                self.modal = Some(Modal::Merge(Box::new(wizard)));
                self.apply_all(asked.effects);
            }
            None => self.flash_error(format!(
                "No merge into {} waits for review (a timeline marked ⇄ has one).",
                t.name
            )),
        }
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
