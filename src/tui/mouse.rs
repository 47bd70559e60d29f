//! The mouse: a click focuses the pane under it and selects the row clicked, the wheel scrolls
//! the pane under it. Where the panes are is what the last frame drew ([`Areas`]).

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::app::App;
use super::panes::PaneId;

/// Screen areas of the last frame, for the mouse.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Areas {
    /// The timelines pane.
    pub(super) timelines: Rect,
    /// The search pane.
    pub(super) search: Rect,
    /// The monitor or the log, whichever is shown.
    pub(super) lower: Rect,
}

impl App {
    /// Handles a mouse event; ignored while a modal is open or outside the panes.
    pub(super) fn on_mouse(&mut self, mouse: MouseEvent) {
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
}
