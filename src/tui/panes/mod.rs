//! The dashboard's panes. Each owns its state, takes the keys of the input it is editing
//! ([`InputKey`]) and draws itself; the app's loop routes keys and answers to them.

pub mod log;
pub mod monitor;
pub mod search;
pub mod timeline_view;
pub mod timelines;
pub mod wizard;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::intent::Action;
use super::theme::Palette;
use super::widgets::Cursor;
use crate::model::{Instant, TimelineId};

/// Which pane has the focus; Tab cycles in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PaneId {
    /// Timelines.
    Timelines,
    /// Event search.
    Search,
    /// Anomaly monitor.
    Monitor,
    /// Automation log.
    Log,
}

impl PaneId {
    /// The pane to the right (`right`) or left of this one as they are laid out: the timelines
    /// top left, `lower` (the monitor or the automation log, which share a place) top right,
    /// the search below both.
    pub fn beside(self, right: bool, lower: PaneId) -> PaneId {
        match (self, right) {
            // The search spans the width under both: up to the side asked for.
            (PaneId::Search, true) => lower,
            (PaneId::Search, false) => PaneId::Timelines,
            // The timelines and the monitor (or log) sit side by side, wrapping around.
            (PaneId::Timelines, _) => lower,
            _ => PaneId::Timelines,
        }
    }

    /// The next (or previous) pane in Tab order among those on screen: the timelines, the
    /// search and `lower` (the monitor or the automation log, which share a place).
    pub fn cycle(self, forward: bool, lower: PaneId) -> PaneId {
        let order = [PaneId::Timelines, PaneId::Search, lower];
        let i = order.iter().position(|p| *p == self).unwrap_or(0);
        let n = order.len();
        order[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// What a key did in a pane that may be editing an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKey {
    /// No input is being edited: the key is not the pane's.
    NotEditing,
    /// The input took it.
    Taken,
    /// The timelines filter closed, applied or cleared: the selection may have changed.
    Applied,
    /// Enter on the search inputs: search with them.
    Search,
}

/// What every pane needs to draw itself.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    /// Styles.
    pub palette: &'a Palette,
    /// The dashboard's clock, for countdowns.
    pub now: Instant,
    /// Whether this pane has the focus.
    pub focused: bool,
    /// The timeline the traveller is in.
    pub here: Option<&'a TimelineId>,
    /// Whether a request of this pane is in flight.
    pub pending: bool,
    /// Why the service gives no answers now (the banner says it whole), so what a pane has
    /// not loaded says it cannot come rather than "loading".
    pub offline: Option<&'a str>,
}

impl Ctx<'_> {
    /// The marker shown in a pane title while it waits, or while the service gives no answers
    /// (what the pane shows is then as it was last answered, not fresh).
    pub fn loading(&self) -> Option<String> {
        if self.offline.is_some() {
            return Some("not updated".to_owned());
        }
        self.pending.then(|| "loading…".to_owned())
    }

    /// What a pane shows in place of what it has not loaded: `loading`, or why it cannot
    /// come while the service gives no answers.
    pub fn not_loaded(&self, loading: &str) -> String {
        match self.offline {
            Some(why) => format!("Not loaded: {why} (see above)."),
            None => loading.to_owned(),
        }
    }
}

/// The four panes side by side, and which has the focus: what moves between and inside them
/// (focus, cursors) and how they draw together. The loop holds one and routes to it.
#[derive(Debug)]
pub struct Panes {
    /// The focused pane.
    pub focus: PaneId,
    /// Which of monitor and log fills the lower-right area.
    pub lower: PaneId,
    /// Timelines pane.
    pub timelines: timelines::TimelinesPane,
    /// Event search pane.
    pub search: search::SearchPane,
    /// Anomaly monitor pane.
    pub monitor: monitor::MonitorPane,
    /// Automation log pane.
    pub log: log::LogPane,
}

impl Default for Panes {
    fn default() -> Self {
        Self {
            focus: PaneId::Timelines,
            lower: PaneId::Monitor,
            timelines: Default::default(),
            search: Default::default(),
            monitor: Default::default(),
            log: Default::default(),
        }
    }
}

/// Whether each pane's request is in flight, for the "loading" marks.
#[derive(Clone, Copy, Debug, Default)]
pub struct Busy {
    /// The timelines list.
    pub timelines: bool,
    /// The search.
    pub search: bool,
    /// The monitor's scan.
    pub monitor: bool,
    /// The automation log.
    pub log: bool,
}

/// What the timelines list's arrival changed (see [`Panes::listed`]).
#[derive(Debug)]
pub struct Listed {
    /// The list came for the first time.
    pub first: bool,
    /// The timelines shown (searched, or `also`) that are gone, as they were named.
    pub gone: Vec<(TimelineId, String)>,
    /// The search is to be sent again, for the timeline selected now.
    pub search_again: bool,
}

/// What the loop does after the panes took an action.
#[derive(Debug)]
pub enum Then {
    /// The action is not the panes'.
    NotPanes,
    /// Nothing more.
    Done,
    /// Search with the inputs as they are.
    Search,
    /// Look up the causes the selected event's detail names.
    Causes,
    /// The timelines' selection may have changed.
    SelectionChanged,
    /// Fetch the automation log (it just took the monitor's place).
    Log,
    /// Say that the monitor froze, or that it is live again (and scan it).
    Frozen(bool),
    /// Show this anomaly in full.
    Anomaly(Box<crate::service::Anomaly>),
}

impl Panes {
    /// Takes a move between or inside the panes: focus, cursors, open, back, filter, freeze.
    pub fn act(&mut self, action: Action) -> Then {
        use Action as A;
        let moved = |panes: &mut Self, delta| {
            if panes.move_cursor(delta) {
                Then::SelectionChanged
            } else {
                Then::Done
            }
        };
        match action {
            A::NextPane => self.focused(self.focus.cycle(true, self.lower)),
            A::PrevPane => self.focused(self.focus.cycle(false, self.lower)),
            A::Right => self.focused(self.focus.beside(true, self.lower)),
            A::Left => self.focused(self.focus.beside(false, self.lower)),
            // An event's detail taller than the pane scrolls (it is drawn from the line asked
            // for, kept within the detail).
            A::Up | A::Down | A::PageUp | A::PageDown | A::Top | A::Bottom
                if self.focus == PaneId::Search && self.search.detail =>
            {
                let scroll = &mut self.search.detail_scroll;
                *scroll = match action {
                    A::Up => scroll.saturating_sub(1),
                    A::Down => scroll.saturating_add(1),
                    A::PageUp => scroll.saturating_sub(10),
                    A::PageDown => scroll.saturating_add(10),
                    A::Top => 0,
                    _ => usize::MAX / 2,
                };
                Then::Done
            }
            A::Up => moved(self, -1),
            A::Down => moved(self, 1),
            A::PageUp => moved(self, -10),
            A::PageDown => moved(self, 10),
            A::Top => moved(self, isize::MIN / 2),
            A::Bottom => moved(self, isize::MAX / 2),
            A::Open => self.open(),
            A::Back => self.back(),
            A::Filter if self.focus == PaneId::Timelines => {
                self.timelines.start_filter();
                Then::Done
            }
            A::Filter => {
                self.focus = PaneId::Search;
                self.search.start_editing();
                Then::Done
            }
            A::Freeze => {
                self.monitor.frozen = !self.monitor.frozen;
                Then::Frozen(self.monitor.frozen)
            }
            // L shows the log in the monitor's place, and L again brings the monitor back.
            A::ShowLog if self.lower == PaneId::Log => self.focused(PaneId::Monitor),
            A::ShowLog => self.focused(PaneId::Log),
            _ => Then::NotPanes,
        }
    }

    /// Enter: the timelines open the selected one's events in the search, the search an
    /// event's detail, the monitor an anomaly in full.
    fn open(&mut self) -> Then {
        match self.focus {
            PaneId::Timelines => {
                self.focus = PaneId::Search;
                self.search.detail = false;
                Then::Search
            }
            PaneId::Search if self.search.selected().is_some() => {
                self.search.detail = true;
                self.search.detail_scroll = 0;
                Then::Causes
            }
            PaneId::Monitor => match self.monitor.rows.get(self.monitor.cursor.selected) {
                Some(row) => Then::Anomaly(Box::new(row.anomaly.clone())),
                None => Then::Done,
            },
            _ => Then::Done,
        }
    }

    /// Esc: out of an event's detail, else the filter cleared, else back to the timelines.
    fn back(&mut self) -> Then {
        if self.search.detail && self.focus == PaneId::Search {
            self.search.detail = false;
        } else if !self.timelines.filter.is_empty() && self.focus == PaneId::Timelines {
            self.timelines.set_filter(String::new());
            return Then::SelectionChanged;
        } else {
            self.focus = PaneId::Timelines;
        }
        Then::Done
    }

    /// A click on `pane` (on its `row`, if on a row): focused, and the row selected.
    pub fn click(&mut self, pane: PaneId, row: Option<usize>) -> Then {
        self.focus = pane;
        let clicked = row.is_some_and(|row| {
            self.cursor_of(pane)
                .is_some_and(|(cursor, len)| cursor.click(row, len))
        });
        if clicked && pane == PaneId::Timelines {
            Then::SelectionChanged
        } else {
            Then::Done
        }
    }

    /// The wheel over `pane`: focused, and its cursor moved by `rows`.
    pub fn scroll(&mut self, pane: PaneId, rows: isize) -> Then {
        self.focus = pane;
        if self.move_cursor(rows) {
            Then::SelectionChanged
        } else {
            Then::Done
        }
    }

    /// Search results arrived: shown, marked from what the monitor knows now of the searched
    /// timeline (with changes pushed, the next monitor report may be a long way off).
    pub fn searched(&mut self, results: Vec<crate::service::EventRecord>, now: Instant) {
        let watched =
            self.monitor.timeline.is_some() && self.monitor.timeline == self.search.timeline;
        let known = watched.then(|| self.monitor.open_report(now));
        self.search.answered(results, known.as_ref());
    }

    /// A monitor report arrived (or was pushed): the search marks the events in trouble, the
    /// monitor shows it if it is of the timeline it watches.
    pub fn monitored(&mut self, report: crate::service::MonitorReport) {
        self.search.mark_troubled(&report);
        if self.monitor.timeline.as_ref() == Some(&report.timeline_id) {
            self.monitor.apply(report);
        }
    }

    /// The timelines arrived, with your rights when they could be listed: the list shows
    /// them; a search of a timeline gone meanwhile forgets its results (they would offer
    /// events that are gone). Says which of the searched timeline and `also` are gone (each
    /// named as it was), whether the list came for the first time, and whether the search
    /// is to be sent again (for the timeline selected now).
    pub fn listed(
        &mut self,
        list: Vec<crate::service::TimelineInfo>,
        rights: Option<Vec<crate::service::AccessControlView>>,
        also: Option<&TimelineId>,
    ) -> Listed {
        if let Some(rights) = rights {
            self.timelines.set_rights(rights);
        }
        let first = !self.timelines.loaded;
        let shown: Vec<(TimelineId, String)> = self
            .search
            .timeline
            .iter()
            .chain(also)
            .map(|id| (id.clone(), self.timelines.name_of(id)))
            .collect();
        self.timelines.set(list);
        let gone: Vec<(TimelineId, String)> = shown
            .into_iter()
            .filter(|(id, _)| self.timelines.get(id).is_none())
            .collect();
        let searched_gone = gone
            .iter()
            .any(|(id, _)| self.search.timeline.as_ref() == Some(id));
        let search_again = searched_gone && self.search.searched;
        if searched_gone {
            self.search.forget();
        }
        Listed {
            first,
            gone,
            search_again,
        }
    }

    /// A key for the input being edited, if one is (the timelines' filter, the search's
    /// inputs): `Then::NotPanes` when none is.
    pub fn input_key(&mut self, key: crossterm::event::KeyEvent) -> Then {
        match self.timelines.filter_key(key) {
            InputKey::NotEditing => {}
            InputKey::Applied => return Then::SelectionChanged,
            _ => return Then::Done,
        }
        match self.search.input_key(key) {
            InputKey::NotEditing => Then::NotPanes,
            InputKey::Search => Then::Search,
            _ => Then::Done,
        }
    }

    /// `:search PLACE`: the search, focused, anywhere at any time for events at `place`.
    pub fn search_anywhere(&mut self, place: &str) -> Then {
        self.search.anywhere_at_any_time(place);
        self.focus = PaneId::Search;
        Then::Search
    }

    /// `:filter TEXT`: the timelines, focused, filtered by `text`.
    pub fn filter(&mut self, text: String) -> Then {
        self.focus = PaneId::Timelines;
        self.timelines.set_filter(text);
        Then::SelectionChanged
    }

    /// Changes of the watched timeline's anomalies, pushed: shown now, as if polled; `None`
    /// when the monitor is frozen or watches nothing, else whether events changed (not only
    /// snapshots), so that what shows events is to be asked again.
    pub fn pushed(
        &mut self,
        events: Vec<crate::service::MonitorEvent>,
        now: Instant,
    ) -> Option<bool> {
        if self.monitor.frozen || self.monitor.timeline.is_none() {
            return None;
        }
        let snapshots = events
            .iter()
            .all(|e| matches!(e.change, crate::service::MonitorChange::Snapshot(_)));
        let open = self.monitor.open_report(now);
        let changes = events.into_iter().map(|e| e.change).collect();
        self.monitored(monitor::report_after(open, changes));
        Some(!snapshots)
    }

    fn focused(&mut self, pane: PaneId) -> Then {
        if self.focus_on(pane) {
            Then::Log
        } else {
            Then::Done
        }
    }

    /// Focuses `pane`; the monitor and the log take the lower-right place as they get it.
    /// True when the log just took it (it is to be fetched).
    pub fn focus_on(&mut self, pane: PaneId) -> bool {
        self.focus = pane;
        let was = self.lower;
        if matches!(pane, PaneId::Monitor | PaneId::Log) {
            self.lower = pane;
        }
        pane == PaneId::Log && was != PaneId::Log
    }

    /// Moves the focused pane's cursor by `delta` rows; true when the timelines' selection
    /// may have changed.
    pub fn move_cursor(&mut self, delta: isize) -> bool {
        if let Some((cursor, len)) = self.cursor_of(self.focus) {
            cursor.step(delta, len);
        }
        self.focus == PaneId::Timelines
    }

    /// The cursor of `pane`'s list and the list's length; none while the search shows an
    /// event's detail.
    pub fn cursor_of(&mut self, pane: PaneId) -> Option<(&mut Cursor, usize)> {
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

    /// Draws the timelines in `timelines`, the search in `search` and the monitor or the
    /// log in `lower`, each with `ctx` for its focus and whether it waits (`busy`).
    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        [timelines, search, lower]: [Rect; 3],
        ctx: Ctx<'_>,
        busy: Busy,
    ) {
        let focus = self.focus;
        let with = |pane: PaneId, pending: bool| Ctx {
            focused: focus == pane,
            pending,
            ..ctx
        };
        let c = with(PaneId::Timelines, busy.timelines && !self.timelines.loaded);
        self.timelines.render(frame, timelines, &c);
        let search_name = self
            .search
            .timeline
            .clone()
            .or_else(|| self.timelines.selected().map(|t| t.id.clone()))
            .map(|id| self.timelines.name_of(&id))
            .unwrap_or_else(|| "primary".into());
        let c = with(PaneId::Search, busy.search);
        self.search.render(frame, search, &c, &search_name);
        if self.lower == PaneId::Log {
            let c = with(PaneId::Log, busy.log);
            self.log.render(frame, lower, &c);
        } else {
            let name = self
                .monitor
                .timeline
                .as_ref()
                .map(|id| self.timelines.name_of(id))
                .unwrap_or_default();
            let c = with(
                PaneId::Monitor,
                busy.monitor && self.monitor.status.is_none(),
            );
            self.monitor.render(frame, lower, &c, &name);
        }
    }
}
