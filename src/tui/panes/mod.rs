//! The dashboard's panes. Each owns its state, takes the keys of the input it is editing
//! ([`InputKey`]) and draws itself; the app's loop routes keys and answers to them.

pub mod log;
pub mod monitor;
pub mod search;
pub mod timeline_view;
pub mod timelines;
pub mod wizard;

use super::theme::Palette;
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
    /// The marker shown in a pane title while it waits.
    pub fn loading(&self) -> Option<String> {
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
