//! The mouse: a click focuses the pane under it and selects the row clicked, the wheel scrolls
//! the pane under it. Where the panes are is what the last frame drew ([`Areas`]); what a
//! mouse event means there is a [`Pointer`] for the loop to route.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::panes::{PaneId, Panes, Then};

/// Screen areas of the last frame, for the mouse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Areas {
    /// The timelines pane.
    pub timelines: Rect,
    /// The search pane.
    pub search: Rect,
    /// The monitor or the log, whichever is shown.
    pub lower: Rect,
}

/// What a mouse event over the panes asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pointer {
    /// Focus `pane`; select its `row`-th visible row (counted from the first row of the
    /// list), when the click is on one.
    Click {
        /// The pane under the pointer.
        pane: PaneId,
        /// The list row clicked, if the click is below the pane's header rows.
        row: Option<usize>,
    },
    /// Focus `pane` and move its cursor by `rows`.
    Scroll {
        /// The pane under the pointer.
        pane: PaneId,
        /// How far, down when positive.
        rows: isize,
    },
}

impl Pointer {
    /// Does it to the panes: a click focuses a pane and selects its row, the wheel moves its
    /// cursor.
    pub fn apply(self, panes: &mut Panes) -> Then {
        match self {
            Pointer::Click { pane, row } => panes.click(pane, row),
            Pointer::Scroll { pane, rows } => panes.scroll(pane, rows),
        }
    }
}

impl Areas {
    /// What `mouse` means over the panes, `lower` being the pane shown lower right; `None`
    /// outside the panes and for other buttons.
    pub fn pointer(&self, mouse: MouseEvent, lower: PaneId) -> Option<Pointer> {
        let at = Position::new(mouse.column, mouse.row);
        let pane = if self.timelines.contains(at) {
            PaneId::Timelines
        } else if self.search.contains(at) {
            PaneId::Search
        } else if self.lower.contains(at) {
            lower
        } else {
            return None;
        };
        match mouse.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                // Rows start below the border and the header row (and the search inputs).
                let (area, first_row) = match pane {
                    PaneId::Timelines => (self.timelines, 2),
                    PaneId::Search => (self.search, 5),
                    _ => (self.lower, 2),
                };
                let row = mouse.row.checked_sub(area.y + first_row).map(usize::from);
                Some(Pointer::Click { pane, row })
            }
            MouseEventKind::ScrollDown => Some(Pointer::Scroll { pane, rows: 3 }),
            MouseEventKind::ScrollUp => Some(Pointer::Scroll { pane, rows: -3 }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;

    use super::*;

    fn areas() -> Areas {
        Areas {
            timelines: Rect::new(0, 1, 60, 20),
            search: Rect::new(0, 21, 100, 20),
            lower: Rect::new(60, 1, 40, 20),
        }
    }

    fn at(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
        MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }
    }

    #[test]
    fn a_click_names_the_pane_and_the_list_row_under_it() {
        let click = MouseEventKind::Down(MouseButton::Left);
        assert_eq!(
            areas().pointer(at(click, 5, 4), PaneId::Monitor),
            Some(Pointer::Click {
                pane: PaneId::Timelines,
                row: Some(1)
            })
        );
        // The search's first row is below its two inputs.
        assert_eq!(
            areas().pointer(at(click, 5, 26), PaneId::Monitor),
            Some(Pointer::Click {
                pane: PaneId::Search,
                row: Some(0)
            })
        );
        // On the border: focus, no row.
        assert_eq!(
            areas().pointer(at(click, 70, 1), PaneId::Log),
            Some(Pointer::Click {
                pane: PaneId::Log,
                row: None
            })
        );
        assert_eq!(areas().pointer(at(click, 5, 0), PaneId::Monitor), None);
    }

    #[test]
    fn the_wheel_scrolls_three_rows_and_other_buttons_do_nothing() {
        assert_eq!(
            areas().pointer(at(MouseEventKind::ScrollUp, 70, 5), PaneId::Monitor),
            Some(Pointer::Scroll {
                pane: PaneId::Monitor,
                rows: -3
            })
        );
        assert_eq!(
            areas().pointer(at(MouseEventKind::ScrollDown, 5, 5), PaneId::Monitor),
            Some(Pointer::Scroll {
                pane: PaneId::Timelines,
                rows: 3
            })
        );
        let right = MouseEventKind::Down(MouseButton::Right);
        assert_eq!(areas().pointer(at(right, 5, 5), PaneId::Monitor), None);
    }
}
