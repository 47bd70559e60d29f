//! Time navigation reads and writes the guides describe beyond the journeys themselves
//! (guide operations §1 and §3): picking an item up where it lies (`retrieve-item`), watching a
//! timeline's events from where the traveller is (`monitor-events`), and the timelines listed by
//! status (`list-timelines?status=`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{EventRecord, Item, Journey, PageRequest, SearchQuery};
use crate::model::{Instant, TimelineStatus};

/// `retrieve-item`: go and pick an item up where it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RetrieveItemRequest {
    /// What the item is.
    pub item_description: String,
    /// Where it is; your location when absent.
    #[serde(default)]
    pub location: Option<String>,
    /// When it is there; your time when absent. Another time is a journey there first (within
    /// your timeline, with what you carry), written together with the item.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub time: Option<Instant>,
}

/// What `retrieve-item` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RetrievedItem {
    /// `retrieved`, or `already_retrieved` (you registered it in this timeline and carry it:
    /// nothing was written).
    pub status: String,
    /// The item, with its origin and location.
    pub item: Item,
    /// The journey made to the item's time, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journey: Option<Journey>,
}

/// Whether an event lies before or after the traveller's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Relative {
    /// At or before the traveller's time.
    Past,
    /// After it.
    Future,
}

/// One event as `monitor-events` reports it: the event and its change state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MonitoredEvent {
    /// The event.
    #[serde(flatten)]
    pub event: EventRecord,
    /// When a traveller or automation last changed its lineage (wall clock); absent for
    /// history as shipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub changed_at: Option<Instant>,
    /// An open anomaly of the timeline names it.
    pub in_paradox: bool,
    /// Before or after the traveller's time.
    pub relative: Relative,
}

/// `list-timelines`: the timelines, optionally only the open or the closed ones.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TimelineQuery {
    /// Only timelines with this status now.
    #[serde(default)]
    pub status: Option<TimelineStatus>,
    /// Which page.
    #[serde(flatten)]
    pub page: PageRequest,
}

/// `monitor-events` asks what `search-events` asks (timeline, location, time range, page).
pub type MonitorEventsQuery = SearchQuery;

/// One change pushed by `monitor-events/stream`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventsChange {
    /// The matching events now, one page of them (the first message, and again when a
    /// stream fell behind; replaces what a client knew).
    Snapshot {
        /// The events, in time order: the first page (the stream's `limit`).
        events: Vec<MonitoredEvent>,
        /// When more events match: the cursor of the next page of `monitor-events` with the
        /// same query. Changes cover every matching event, paged or not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
    },
    /// A matching event is new (added, or a new head after a manipulation, revert or merge) or
    /// its change state moved (an anomaly names it now, or no longer, as after an isolation).
    Changed {
        /// The event as it is now.
        event: MonitoredEvent,
    },
    /// An event no longer stands (superseded, reverted, or its timeline was merged over).
    Removed {
        /// The event that went.
        #[schema(value_type = String)]
        event_id: crate::model::EventId,
    },
}

/// A change with the log position it was seen at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventsUpdate {
    /// The log position.
    pub position: u64,
    /// What changed.
    pub change: EventsChange,
}

/// `monitor-events/stream`: changes as they come; ends when the timeline is deleted, the
/// server shuts down or the connection is lost (an error item says which, when known).
pub type EventsStream =
    futures::stream::BoxStream<'static, Result<EventsUpdate, crate::error::ServiceError>>;
