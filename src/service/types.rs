//! Typed requests and responses of [`super::TimelineService`].
//!
//! JSON field names are exactly the interface's. Responses are the *full* view; the HTTP
//! server projects the documented operations down to their documented properties unless the
//! client asks for `view=full`.

use serde::{Deserialize, Serialize};

use crate::model::{
    Accuracy, AnchorId, Conditions, EventId, EventStatus, Instant, ItemId, MergeId, Position,
    ScheduleId, ScriptId, TimeRange, TimelineId, TimelineStatus, Traveller, Window,
};
use crate::paradox::Paradox;

pub use crate::model::{Anchor, AnchorDetails, AnchorRecord, Item, Journey, LeftItem};
pub use crate::monitor::{Anomaly, AnomalyKind, Severity};

/// Asking for one page of a list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PageRequest {
    /// Most items to return (1 to [`PageRequest::MAX_LIMIT`], default [`PageRequest::DEFAULT_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Opaque cursor from a previous page's `next_cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl PageRequest {
    /// Page size when none is asked for.
    pub const DEFAULT_LIMIT: u32 = 100;
    /// Largest page size served.
    pub const MAX_LIMIT: u32 = 1000;

    /// A first page of `limit` items.
    pub fn first(limit: u32) -> Self {
        Self {
            limit: Some(limit),
            cursor: None,
        }
    }
}

/// One page of a list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Pass as `cursor` to get the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// Who the caller is and where they are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TravellerStatus {
    /// The traveller's name.
    pub traveller: Traveller,
    /// Timeline they are in.
    pub timeline_id: TimelineId,
    /// Their time there, now.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// The raw position (arrival and wall-clock arrival).
    pub position: Position,
    /// Whether the session is an operator's (admin scope, or the embedded engine): every
    /// right on every timeline, never restricted.
    #[serde(default)]
    pub operator: bool,
    /// The restriction an operator put on the traveller, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restriction: Option<crate::service::Restriction>,
    /// Whether the caller's token allows reading only (no `write` scope): every change they
    /// ask for is refused, whatever the access-control lists say.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only_token: bool,
}

/// A timeline as responses show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TimelineInfo {
    /// Its id.
    pub id: TimelineId,
    /// Its name.
    pub name: String,
    /// Where journeys into it arrive.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub destination_time: Option<Instant>,
    /// When it was created.
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Instant,
    /// `open` or `closed`, now.
    pub status: TimelineStatus,
    /// How long it stays open, in words.
    pub window: Window,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How a parallel timeline differs from its base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variation: Option<String>,
    /// The timeline it branched from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<TimelineId>,
    /// When the window closes; absent when unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub closes_at: Option<Instant>,
    /// How many events it now has.
    #[serde(default)]
    #[schema(required = true)]
    pub event_count: usize,
    /// How many anomalies the monitor reports for it now (paradoxes, a closing window,
    /// orphaned events, failed automation), whoever asks: the monitor's own count.
    #[serde(default)]
    #[schema(required = true)]
    pub paradoxes: usize,
    /// True while `paradoxes` is being worked out again: the timeline changed and is too large
    /// to rescan while a list waits (more than 5,000 events), so the list answers the last
    /// count and `paradoxes_counted_at` says how old it is. Absent when the count is current.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paradoxes_recounting: bool,
    /// While recounting: when the count shown was last known to hold. Absent when it is current,
    /// or was never counted (then `paradoxes` is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub paradoxes_counted_at: Option<Instant>,
    /// The traveller who created it; absent for `primary` and history as shipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<Traveller>,
    /// How many merges waiting for review (manual review) name it, as source or destination:
    /// pending work, which is not an anomaly. It cannot be deleted while there are any.
    #[serde(default)]
    #[schema(required = true)]
    pub pending_merges: usize,
    /// How many of those merge into it (it is their destination): their conflicts are
    /// reviewed on it (`review-conflicts?merged_timeline_id=` it). The others come from it.
    #[serde(default)]
    #[schema(required = true)]
    pub pending_into: usize,
    /// The isolations in force on it, oldest first (`DELETE /v1/isolations/{id}` lifts one).
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    #[schema(required = true)]
    pub isolations: Vec<crate::model::IsolationId>,
}

impl TimelineInfo {
    /// An open timeline named `name` with nothing in it yet: no window, parent, events,
    /// paradoxes, merges or isolations. Fixtures (tests, benchmarks) start from it and set what
    /// they need with `..TimelineInfo::bare(…)`.
    pub fn bare(id: TimelineId, name: impl Into<String>, created_at: Instant) -> Self {
        TimelineInfo {
            id,
            name: name.into(),
            destination_time: None,
            created_at,
            status: TimelineStatus::Open,
            window: Window::Unbounded,
            description: None,
            variation: None,
            parent: None,
            closes_at: None,
            event_count: 0,
            paradoxes: 0,
            paradoxes_recounting: false,
            paradoxes_counted_at: None,
            created_by: None,
            pending_merges: 0,
            pending_into: 0,
            isolations: Vec::new(),
        }
    }
}

/// Creating a timeline: the documented `Timeline` body and the guide operations'
/// `create-timeline` / `create-parallel-timeline` bodies, in one shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewTimeline {
    /// Its name; defaults to the description.
    #[serde(default)]
    pub name: Option<String>,
    /// Where journeys into it arrive; `None` arrives at the present.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub destination_time: Option<Instant>,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// The timeline to branch from (`primary` when absent).
    #[serde(default)]
    pub base_timeline_id: Option<TimelineId>,
    /// How a parallel timeline differs from its base.
    #[serde(default)]
    pub variation: Option<String>,
}

/// A journey request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TravelRequest {
    /// A timeline id or one of the caller's active anchor ids.
    pub destination: String,
    /// Items to carry.
    #[serde(default)]
    pub items_transported: Vec<ItemId>,
}

/// `/api/v1/travel`: to a time in the traveller's timeline, at a place.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TimeTravelRequest {
    /// The time to arrive at in the traveller's timeline.
    #[schema(value_type = String, format = DateTime)]
    pub destination_time: Instant,
    /// Where (recorded with the journey).
    #[serde(default)]
    pub location: Option<String>,
}

/// The guide `travel`: to a time in a timeline (the traveller's own unless named), at a place.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GuideTravelRequest {
    /// The time to arrive at.
    #[schema(value_type = String, format = DateTime)]
    pub destination_time: Instant,
    /// Where (recorded with the journey).
    #[serde(default)]
    pub location: Option<String>,
    /// The timeline to travel in; the traveller's own timeline when absent.
    #[serde(default)]
    pub timeline_id: Option<TimelineId>,
    /// Items to carry; every item carried when absent.
    #[serde(default)]
    pub items_transported: Option<Vec<ItemId>>,
    /// Check first what you carry as brought to the arrival time, and refuse a journey that
    /// would add a paradox there (400 `paradox-detected`, naming it; nothing is written).
    #[serde(default)]
    pub safety_check: bool,
}

/// The guide `return`: back to one of the caller's active anchors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReturnRequest {
    /// One of the caller's active anchors.
    pub anchor_id: String,
    /// Items to carry; every item carried when absent.
    #[serde(default)]
    pub items_transported: Option<Vec<ItemId>>,
}

/// The guide `switch-timeline`: the same time in another timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SwitchRequest {
    /// The timeline to switch to.
    pub timeline_id: TimelineId,
}

/// What a switch did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Switched {
    /// `switched`, or `already_there` (no journey, nothing written).
    pub status: String,
    /// The timeline the traveller is in now.
    pub timeline_id: TimelineId,
    /// The traveller's time there.
    #[schema(value_type = String, format = DateTime)]
    pub current_time: Instant,
    /// The journey made, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journey: Option<Journey>,
}

/// What `pause-time` or `resume-time` did to the caller's clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClockState {
    /// `paused` or `already_paused`; `resumed` or `not_paused` (these two wrote nothing).
    pub status: String,
    /// The caller's time: where it stands (paused) or runs on from (resumed).
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// Where the caller is now.
    pub position: Position,
    /// How long (wall clock) the clock stood still, on a resume that ended a pause: `1h2m3s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_for: Option<String>,
}

/// The guide `fast-forward` / `rewind`: a journey within the traveller's timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ShiftRequest {
    /// How far: `10m`, `1h`, `1d`, `2w`, combinations (`1h30m`; `m` is minutes), or ISO 8601
    /// (`PT10M`, `P1D`, `P1M`, `P1Y`; months and years follow the calendar).
    pub duration: String,
    /// Check first what you carry as brought to the new time, and refuse a move that would add
    /// a paradox there (400 `paradox-detected`; nothing is written).
    #[serde(default)]
    pub safety_check: bool,
}

/// Registering an item.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewItem {
    /// What it is.
    pub description: String,
}

/// Setting an anchor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewAnchor {
    /// The time to return to.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
}

/// Setting an anchor with the high-precision guide's fields (`set-anchor`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewPreciseAnchor {
    /// The time to return to.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// How finely `timestamp` is given: it is printed with exactly that many fraction digits,
    /// and a timestamp finer than it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<Accuracy>,
    /// Environmental conditions the traveller records (at most 32 keys of up to 64 characters;
    /// values strings, numbers or booleans of up to 1000 characters). Chronoscope measures
    /// nothing physical: this is the traveller's record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub environment: Option<Conditions>,
    /// A quantum state the traveller records (same limits as `environment`; measured by no one
    /// here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub quantum_state: Option<Conditions>,
}

impl From<NewAnchor> for NewPreciseAnchor {
    fn from(a: NewAnchor) -> Self {
        Self {
            timestamp: a.timestamp,
            description: a.description,
            ..Self::default()
        }
    }
}

/// Listing the caller's anchors (guide `list-anchors`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AnchorListQuery {
    /// Also list spent anchors (default false: only those that can still be returned to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_spent: Option<bool>,
    /// Most anchors to return (1 to 1000, default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Naming one of the caller's anchors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AnchorRef {
    /// The anchor.
    #[schema(value_type = String)]
    pub anchor_id: AnchorId,
}

/// Replacing an anchor's recorded environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AdjustAnchorRequest {
    /// The anchor (active: a spent anchor is history).
    #[schema(value_type = String)]
    pub anchor_id: AnchorId,
    /// The environment now recorded (same limits as `set-anchor`'s).
    #[schema(value_type = Object)]
    pub new_environment: Conditions,
}

/// Whether an anchor can still be returned to, and safely.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnchorVerdict {
    /// A return would be accepted and would add no paradox.
    Stable,
    /// A return would be accepted, but its window is closing or it lands among paradoxes.
    AtRisk,
    /// A return would be refused (spent, or its timeline deleted, closed or unreadable).
    Unstable,
}

/// `check-anchor-stability`: the verdict and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AnchorStability {
    /// The anchor.
    #[schema(value_type = String)]
    pub anchor_id: AnchorId,
    /// The verdict.
    pub status: AnchorVerdict,
    /// The recorded environment (`{}` when none).
    #[schema(value_type = Object)]
    pub current_conditions: Conditions,
    /// A sentence per reason for a verdict other than `stable`.
    pub reasons: Vec<String>,
    /// The anchor's timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// That timeline's status now (`None` when it was deleted).
    pub timeline_status: Option<TimelineStatus>,
    /// When its window closes, if it does.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub closes_at: Option<Instant>,
    /// Standing paradoxes around the timestamp, and those a return with the carried items
    /// would add.
    pub paradoxes: Vec<Paradox>,
    /// The recorded quantum state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub quantum_state: Option<Conditions>,
    /// The timestamp's accuracy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<Accuracy>,
}

/// One step of a new outcome.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OutcomeChange {
    /// The action taken (free text, recorded).
    #[serde(default)]
    pub action: Option<String>,
    /// The event's new time.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub time: Option<Instant>,
}

/// The new outcome of a manipulated event.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewOutcome {
    /// The new description.
    #[serde(default)]
    pub description: Option<String>,
    /// Changes; the last one with a time sets the new time.
    #[serde(default)]
    pub changes: Vec<OutcomeChange>,
}

/// Manipulating an event (`POST /events` and the guide `manipulate-event`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ManipulateRequest {
    /// The timeline (guide operation: defaults to where the traveller is).
    #[serde(default)]
    pub timeline_id: Option<TimelineId>,
    /// The event, or any event of its lineage (the current head is changed).
    pub event_id: EventId,
    /// The new outcome.
    pub new_outcome: NewOutcome,
    /// Check for paradoxes first and refuse an unstable change.
    #[serde(default)]
    pub safety_check: bool,
}

/// What a manipulation did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ManipulationResult {
    /// `applied`.
    pub status: String,
    /// The new head of the lineage.
    pub new_event_id: EventId,
    /// Its description.
    pub description: String,
    /// Its time.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// The event it superseded.
    pub original_event_id: EventId,
    /// The timeline changed.
    pub timeline_id: TimelineId,
    /// The lineage the new event stands for (its first event's id, e.g. `apollo-11-launch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub lineage: Option<EventId>,
}

/// One proposed change: exactly one of `event` or `item_id`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProposedChange {
    /// An event id to move, or the description of a new event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The (new) time of that event; defaults to the timeline's destination time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub time: Option<Instant>,
    /// An item to bring into the timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<ItemId>,
}

/// `POST /paradox-checks`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ParadoxCheckRequest {
    /// The timeline to check.
    pub timeline_id: TimelineId,
    /// The changes to try.
    #[serde(default)]
    pub proposed_changes: Vec<ProposedChange>,
}

/// The guide `check-paradox`: the timeline as it stands, optionally only after an event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StabilityQuery {
    /// The timeline.
    pub timeline_id: TimelineId,
    /// Only report paradoxes at or after this event's time.
    #[serde(default)]
    pub after_event_id: Option<EventId>,
}

/// The checker's verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ParadoxReport {
    /// True when no paradox was found.
    pub is_stable: bool,
    /// The timeline checked.
    pub timeline_id: TimelineId,
    /// What was found.
    pub paradoxes: Vec<Paradox>,
}

/// `GET /monitor-timeline` and `/api/v1/monitor-paradox`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MonitorQuery {
    /// The timeline.
    pub timeline_id: TimelineId,
    /// Limit the scan to events in this range.
    #[serde(default)]
    pub time_range: Option<TimeRange>,
}

/// The monitor's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MonitorReport {
    /// `stable` or `anomalies_detected`.
    pub status: String,
    /// What was found.
    pub anomalies: Vec<Anomaly>,
    /// The timeline scanned.
    pub timeline_id: TimelineId,
    /// When the scan ran.
    #[schema(value_type = String, format = DateTime)]
    pub checked_at: Instant,
}

/// `GET /v1/monitor-timeline/stream`: whose anomalies to follow, and where a resumed stream
/// left off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorWatch {
    /// The timeline.
    pub timeline_id: TimelineId,
    /// The log position of the last change received (SSE's `Last-Event-ID`), `None` for a new
    /// stream. A resumed stream starts with a snapshot of the state now, like a new one: the
    /// client replaces what it knew and misses nothing.
    pub after: Option<u64>,
}

/// A change of a timeline's anomalies. A stream starts with a [`MonitorChange::Snapshot`], then
/// tells each anomaly that appears (or whose words change) or resolves. A snapshot replaces
/// everything known before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MonitorChange {
    /// Every open anomaly now.
    Snapshot(MonitorReport),
    /// An anomaly that was not there before, or is there with other words (replace it).
    Appeared(Anomaly),
    /// An anomaly that is gone, as it was last seen.
    Resolved(Anomaly),
}

impl MonitorChange {
    /// The name of the change, as the SSE `event:` field gives it.
    pub fn name(&self) -> &'static str {
        match self {
            MonitorChange::Snapshot(_) => "snapshot",
            MonitorChange::Appeared(_) => "appeared",
            MonitorChange::Resolved(_) => "resolved",
        }
    }
}

/// A change and the log position it was seen at (SSE's `id:`), to resume from.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorEvent {
    /// The log position the change was seen at.
    pub position: u64,
    /// What changed.
    pub change: MonitorChange,
}

/// Changes as they come; ends when the timeline is deleted, the server shuts down or the
/// connection is lost (an error item says which, when known).
pub type MonitorStream =
    futures::stream::BoxStream<'static, Result<MonitorEvent, crate::error::ServiceError>>;

/// `/api/v1/check-timeline`: does a significant event still hold?
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SignificantEventQuery {
    /// The timeline.
    pub timeline_id: TimelineId,
    /// An event id, or an event's description.
    pub significant_event: String,
}

/// Whether a significant event holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TimelineCheck {
    /// `holds`, `altered` (its lineage was manipulated) or `missing`.
    pub status: String,
    /// True when `status` is `holds`.
    pub holds: bool,
    /// The timeline.
    pub timeline_id: TimelineId,
    /// As asked.
    pub significant_event: String,
    /// The event that now stands for it, if any.
    pub event: Option<EventRecord>,
}

/// An event as responses show it. The first four fields are the guide's event record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EventRecord {
    /// Its id.
    pub event_id: EventId,
    /// What happened.
    pub description: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// Where.
    pub location: String,
    /// Events it depends on.
    #[serde(default)]
    pub causes: Vec<EventId>,
    /// Cannot be manipulated.
    #[serde(default)]
    pub fixed_point: bool,
    /// Where it stands in its lineage.
    pub status: EventStatus,
    /// The first event of its lineage.
    pub lineage: EventId,
    /// The event it replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<EventId>,
    /// The event that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<EventId>,
    /// Who added or manipulated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Traveller>,
}

/// Searching events (`search-events`, `scan-events`, the events extension).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SearchQuery {
    /// The timeline (default: where the traveller is).
    #[serde(default)]
    pub timeline_id: Option<TimelineId>,
    /// Location, matched case-insensitively, whole or as a substring.
    #[serde(default)]
    pub location: Option<String>,
    /// Only events in this range.
    #[serde(default)]
    pub time_range: Option<TimeRange>,
    /// Which page.
    #[serde(flatten)]
    pub page: PageRequest,
}

/// Adding an event to a timeline (extension).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewEvent {
    /// What happened.
    pub description: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// Where.
    pub location: String,
    /// Events of the same timeline it depends on.
    #[serde(default)]
    pub causes: Vec<EventId>,
    /// Whether it can never be manipulated.
    #[serde(default)]
    pub fixed_point: bool,
    /// Check for paradoxes first and refuse an event that would add any (400
    /// `paradox-detected`, naming them); paradoxes that stand already do not count.
    #[serde(default)]
    pub safety_check: bool,
}

/// The guide `revert-event`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RevertRequest {
    /// The manipulated event, or any event of its lineage (its latest change is undone).
    pub event_id: EventId,
    /// The timeline (default: where the traveller is).
    #[serde(default)]
    pub timeline_id: Option<TimelineId>,
    /// Check for paradoxes first and refuse a revert that would add any (400
    /// `paradox-detected`, naming them); paradoxes that stand already do not count.
    #[serde(default)]
    pub safety_check: bool,
}

/// What a revert did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RevertResult {
    /// `reverted`.
    pub status: String,
    /// The event that stands again.
    pub original_event_id: EventId,
    /// The manipulation that was undone.
    pub reverted_event_id: EventId,
    /// The timeline changed.
    pub timeline_id: TimelineId,
}

/// An automated action (scripts and external triggers).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Action {
    /// `manipulate` or `revert`.
    pub action_type: String,
    /// The lineage acted on (its current head is changed).
    pub event_id: EventId,
    /// New time of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub new_time: Option<Instant>,
    /// New description of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_details: Option<String>,
}

/// When a script fires, besides its trigger event being manipulated or reverted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ScriptConditions {
    /// Fire when this passes…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub check_date: Option<Instant>,
    /// …and the trigger event's status equals this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_check: Option<String>,
}

/// The guide `create-script`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewScript {
    /// A name for people.
    pub script_name: String,
    /// The event whose changes fire it.
    pub trigger_event_id: EventId,
    /// Date and status conditions.
    #[serde(default)]
    pub conditions: ScriptConditions,
    /// What it does.
    pub actions: Vec<Action>,
    /// The timeline (default `primary`).
    #[serde(default)]
    pub timeline_id: Option<TimelineId>,
}

/// A stored script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Script {
    /// Whose it is (an admin sees everyone's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Traveller>,
    /// Its id.
    pub script_id: ScriptId,
    /// `active`, `fired` or `failed`.
    pub status: String,
    /// Its name.
    pub script_name: String,
    /// The trigger event.
    pub trigger_event_id: EventId,
    /// Its conditions.
    pub conditions: ScriptConditions,
    /// Its actions.
    pub actions: Vec<Action>,
    /// The timeline.
    pub timeline_id: TimelineId,
    /// When it was stored.
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Instant,
}

/// What a scheduled manipulation changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ManipulationDetails {
    /// New time of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub new_time: Option<Instant>,
    /// New description of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_details: Option<String>,
}

/// The guide `schedule-manipulation`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewSchedule {
    /// The lineage to change.
    pub event_id: EventId,
    /// When to run (wall clock).
    #[schema(value_type = String, format = DateTime)]
    pub scheduled_time: Instant,
    /// What to change.
    #[serde(default)]
    pub manipulation_details: ManipulationDetails,
    /// The timeline (default `primary`).
    #[serde(default)]
    pub timeline_id: Option<TimelineId>,
}

/// What an external system reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TriggerConditions {
    /// The outside build's status, recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_status: Option<String>,
    /// When to run the actions (now if past).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub timestamp: Option<Instant>,
}

/// The guide `trigger-external-manipulation`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExternalTrigger {
    /// Who is calling.
    pub external_system: String,
    /// When and why.
    #[serde(default)]
    pub trigger_conditions: TriggerConditions,
    /// What to do.
    pub actions: Vec<Action>,
    /// The timeline (default `primary`).
    #[serde(default)]
    pub timeline_id: Option<TimelineId>,
}

/// A scheduled or externally triggered job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Schedule {
    /// Whose it is (an admin sees everyone's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Traveller>,
    /// Its id.
    pub schedule_id: ScheduleId,
    /// `scheduled`, `triggered`, `done`, `failed` or `cancelled`.
    pub status: String,
    /// When it runs (wall clock).
    #[schema(value_type = String, format = DateTime)]
    pub scheduled_time: Instant,
    /// The timeline.
    pub timeline_id: TimelineId,
    /// What it does.
    pub actions: Vec<Action>,
    /// The outside system, for external triggers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_system: Option<String>,
}

/// The guide `automation-log`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LogQuery {
    /// Only this timeline.
    #[serde(default)]
    pub timeline_id: Option<TimelineId>,
    /// Only entries in this range.
    #[serde(default)]
    pub date_range: Option<TimeRange>,
    /// Which page.
    #[serde(flatten)]
    pub page: PageRequest,
}

/// One automated action, done or failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LogEntry {
    /// Whose it is (an admin sees everyone's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Traveller>,
    /// When it ran.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// The event id the action was given.
    pub event_id: EventId,
    /// What was done, or why it failed.
    pub action_taken: String,
    /// The timeline.
    pub timeline_id: TimelineId,
    /// `done` or `failed`.
    pub outcome: String,
    /// The script or schedule that ran it.
    pub source: String,
    /// The event the action produced, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_event_id: Option<EventId>,
}

fn yes() -> bool {
    true
}

/// How a merge treats a conflict: the same lineage changed on both sides since the branch
/// point, to different outcomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MergeStrategy {
    /// The source's outcome is written into the destination.
    SourceOverwrite,
    /// The destination keeps its outcome.
    DestinationPreserve,
    /// Each conflict waits for a person's resolution.
    #[default]
    ManualReview,
}

impl MergeStrategy {
    /// The word used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SourceOverwrite => "source_overwrite",
            Self::DestinationPreserve => "destination_preserve",
            Self::ManualReview => "manual_review",
        }
    }
}

/// The guide `merge-timelines`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MergeRequest {
    /// The timeline whose changes are brought over (it is not changed).
    pub source_timeline_id: TimelineId,
    /// The timeline written into; it must be open, and an ancestor or a descendant of the
    /// source.
    pub destination_timeline_id: TimelineId,
    /// How conflicts are treated (default `manual_review`).
    #[serde(default)]
    pub conflict_resolution: MergeStrategy,
    /// Refuse a merge that would add a paradox to the destination (default true); with
    /// `false` it is applied anyway and the full answer lists what it added.
    #[serde(default = "yes")]
    pub safety_check: bool,
}

/// What a merge decided for one lineage it wrote or weighed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MergeDecision {
    /// The lineage (the id of its first event).
    pub lineage: EventId,
    /// `incoming` (changed in the source only), `added` (new in the source) or `conflict`
    /// (changed on both sides, to different outcomes).
    pub class: String,
    /// `source` (the source's outcome was written) or `destination` (the destination kept
    /// its own).
    pub decision: String,
    /// The source's current event of the lineage.
    pub source_event: Option<EventId>,
    /// The destination's current event of the lineage before the merge.
    pub destination_event: Option<EventId>,
    /// The destination's current event after the merge, when it was written.
    pub written_event: Option<EventId>,
}

/// A recorded merge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Merge {
    /// The merge.
    pub merge_id: MergeId,
    /// Where the changes came from.
    pub source_timeline_id: TimelineId,
    /// Where they were written.
    pub destination_timeline_id: TimelineId,
    /// How conflicts were treated.
    pub strategy: MergeStrategy,
    /// The branch whose creation-time copy of its parent was the base of the comparison.
    pub base_timeline_id: TimelineId,
    /// Who merged.
    #[schema(value_type = String)]
    pub by: Traveller,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: Instant,
    /// `merged`, `pending_review` (manual review waiting for resolutions) or `aborted`.
    pub status: String,
    /// Every lineage the merge weighed, except those only the destination changed (for a
    /// pending merge: as weighed when it was recorded; review recomputes them).
    pub decisions: Vec<MergeDecision>,
    /// The resolutions recorded so far (manual review).
    #[serde(default)]
    pub resolutions: Vec<super::MergeResolution>,
    /// Who completed a merge left for review (the last resolution), once it is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub completed_by: Option<Traveller>,
    /// When a merge left for review was completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub completed_at: Option<Instant>,
}

/// A lineage's event written by a merge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WrittenEvent {
    /// The lineage.
    pub lineage: EventId,
    /// The destination's event of it now.
    pub event_id: EventId,
}

/// What `merge-timelines` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MergeResult {
    /// `merged`, or `up_to_date` when the source had nothing the destination lacks (nothing
    /// was written).
    pub status: String,
    /// The destination.
    pub merged_timeline_id: TimelineId,
    /// Whether every conflict was settled.
    pub conflicts_resolved: bool,
    /// The merge record (absent when nothing was written).
    pub merge_id: Option<MergeId>,
    /// Lineages changed in the source only.
    pub incoming: usize,
    /// Lineages new in the source.
    pub added: usize,
    /// Lineages changed on both sides to different outcomes.
    pub conflicts: usize,
    /// Lineages changed on both sides to the same outcome.
    pub convergent: usize,
    /// Lineages changed in the destination only (left alone).
    pub kept: usize,
    /// The destination's events the merge wrote.
    pub written: Vec<WrittenEvent>,
    /// The source's data entries the merge copied into the destination (those added since the
    /// branch point; entries are immutable, so they never conflict).
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub data_entries: Vec<crate::model::DataId>,
    /// Paradoxes the merge added (only when applied with `safety_check: false`).
    pub paradoxes: Vec<Paradox>,
}

/// The guide `correct-dissonance`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DissonanceRequest {
    /// The timeline.
    pub timeline_id: TimelineId,
    /// The events to align (1 to 100): each one that happens before one of its causes is
    /// moved to just after its latest cause.
    pub conflicting_events: Vec<EventId>,
}

/// One event `correct-dissonance` moved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DissonanceMove {
    /// The event as it stood.
    pub event_id: EventId,
    /// Its time.
    #[schema(value_type = String, format = DateTime)]
    pub from: Instant,
    /// Its new time: one second after its latest cause.
    #[schema(value_type = String, format = DateTime)]
    pub to: Instant,
    /// The new head of its lineage.
    pub new_event_id: EventId,
}

/// What `correct-dissonance` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DissonanceResult {
    /// `aligned`, or `already_aligned` when no named event happened before a cause (nothing
    /// was written).
    pub status: String,
    /// The event ids as given.
    pub aligned_events: Vec<EventId>,
    /// The timeline.
    pub timeline_id: TimelineId,
    /// The events moved, in the order they were moved.
    pub moves: Vec<DissonanceMove>,
    /// The named events that were older versions: each was aligned through the event that
    /// stands for it now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<SupersededEvent>,
}

/// An event named by an older version of it, and the event that stands for it now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SupersededEvent {
    /// The id as given.
    pub event_id: EventId,
    /// The current event of its lineage.
    pub current_event_id: EventId,
}

/// `simulate-wormhole`: a journey's dry run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WormholeRequest {
    /// Where the journey leaves the timeline.
    #[schema(value_type = String, format = DateTime)]
    pub entry_point: Instant,
    /// Where it arrives.
    #[schema(value_type = String, format = DateTime)]
    pub exit_point: Instant,
    /// Whether to check arriving with what the caller carries (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability_check: Option<bool>,
    /// The timeline (default: where the caller is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub timeline_id: Option<TimelineId>,
}

/// The checker's verdict on a simulated journey.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WormholeStability {
    /// Arriving with what is carried adds no paradox.
    Stable,
    /// It would add a paradox, or the journey would be refused.
    Unstable,
    /// `stability_check` was false.
    NotChecked,
}

/// Which way a journey goes in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// To an earlier time (or the same).
    Past,
    /// To a later time.
    Future,
}

/// A simulated journey; nothing is written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WormholeSimulation {
    /// The timeline simulated.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// The verdict.
    pub stability: WormholeStability,
    /// The time between the two points in calendar words, the two largest units
    /// ("100 years", "3 days 4 hours").
    pub time_difference: String,
    /// Which way the journey goes.
    pub direction: Direction,
    /// What would be carried.
    #[schema(value_type = Vec<String>)]
    pub items: Vec<ItemId>,
    /// What the checker found.
    pub paradoxes: Vec<Paradox>,
    /// Why the journey would be refused, if it would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}
