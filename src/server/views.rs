//! The documented projections: what the documented and guide operations answer by default,
//! exactly the properties the interface lists (strict clients reject any other). With
//! `view=full` the handlers answer the service's full types instead.
//!
//! The `*View` enums exist for the OpenAPI document: each says "this projection, or with
//! `view=full` that full type".

use axum::http::Uri;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::model::{
    Anchor, AnomalyId, EventId, Instant, Item, ItemId, Journey, TimeRange, TimelineId,
    TimelineStatus, Window,
};
use crate::service::{
    ClockState, DissonanceResult, EventRecord, LogEntry, ManipulationResult, MergeResult,
    MonitorReport, MonitoredEvent, PageRequest, ParadoxReport, RetrievedItem, RevertResult,
    Schedule, Script, SearchQuery, Switched, TimelineInfo,
};

/// Which view a request asked for (`view=documented` by default, or `view=full`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Exactly the documented properties.
    Documented,
    /// The service's full types.
    Full,
}

impl View {
    /// The view asked for in `uri`'s query; `Err` names a value that is neither.
    pub fn of(uri: &Uri) -> Result<Self, String> {
        let query = uri.query().unwrap_or("");
        let mut view = View::Documented;
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if k == "view" {
                view = match v {
                    "full" => View::Full,
                    "documented" => View::Documented,
                    other => return Err(other.chars().take(40).collect()),
                };
            }
        }
        Ok(view)
    }

    /// Whether the full view was asked for.
    pub fn is_full(self) -> bool {
        self == View::Full
    }
}

/// Pagination of every list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Most items to return (1 to 1000, default 100).
    pub limit: Option<u32>,
    /// The `cursor` of the `Link: rel="next"` header (or `next_cursor`) of the previous page.
    pub cursor: Option<String>,
}

impl From<PageParams> for PageRequest {
    fn from(p: PageParams) -> Self {
        PageRequest {
            limit: p.limit,
            cursor: p.cursor,
        }
    }
}

/// Searching events: `search-events`, `scan-events` (body or query).
#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// The timeline (default: where the traveller is).
    #[param(value_type = Option<String>)]
    #[schema(value_type = Option<String>)]
    pub timeline_id: Option<TimelineId>,
    /// Location, matched case-insensitively, whole or as a substring.
    pub location: Option<String>,
    /// ISO 8601 interval, e.g. `2025-07-01T00:00:00Z/2025-07-31T23:59:59Z`.
    #[param(value_type = Option<String>)]
    #[schema(value_type = Option<String>)]
    pub time_range: Option<TimeRange>,
    /// Most events to return (1 to 1000, default 100).
    pub limit: Option<u32>,
    /// The cursor of the next page.
    pub cursor: Option<String>,
}

impl From<SearchParams> for SearchQuery {
    fn from(p: SearchParams) -> Self {
        SearchQuery {
            timeline_id: p.timeline_id,
            location: p.location,
            time_range: p.time_range,
            page: PageRequest {
                limit: p.limit,
                cursor: p.cursor,
            },
        }
    }
}

/// `POST /v1/timelines/import`: whether paradoxes refuse the import.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ImportParams {
    /// `true` (default): refuse the whole import when a timeline it creates would hold a
    /// paradox its parent does not; `false`: import anyway and list them in the answer.
    pub safety_check: Option<bool>,
}

/// Events of one timeline (the events extension): the search without `timeline_id`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimelineEventsParams {
    /// Location, matched case-insensitively, whole or as a substring.
    pub location: Option<String>,
    /// ISO 8601 interval.
    #[param(value_type = Option<String>)]
    pub time_range: Option<TimeRange>,
    /// Most events to return (1 to 1000, default 100).
    pub limit: Option<u32>,
    /// The cursor of the next page.
    pub cursor: Option<String>,
    /// `current` (default): the events as the timeline stands; `all`: past versions too
    /// (superseded by a manipulation, or reverted), each with its status.
    #[param(inline)]
    pub versions: Option<EventVersions>,
}

/// Which versions of a timeline's events to list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventVersions {
    /// The events as the timeline stands.
    #[default]
    Current,
    /// Every version: standing, superseded and reverted.
    All,
}

/// `automation-log` (body or query).
#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogParams {
    /// Only this timeline.
    #[param(value_type = Option<String>)]
    #[schema(value_type = Option<String>)]
    pub timeline_id: Option<TimelineId>,
    /// Only entries in this ISO 8601 interval.
    #[param(value_type = Option<String>)]
    #[schema(value_type = Option<String>)]
    pub date_range: Option<TimeRange>,
    /// Most entries to return (1 to 1000, default 100).
    pub limit: Option<u32>,
    /// The cursor of the next page.
    pub cursor: Option<String>,
}

/// The documented `Timeline`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineDoc {
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
    /// `open` or `closed`.
    pub status: TimelineStatus,
    /// How long it stays open to travel into.
    pub window: Window,
}

impl From<&TimelineInfo> for TimelineDoc {
    fn from(t: &TimelineInfo) -> Self {
        Self {
            id: t.id.clone(),
            name: t.name.clone(),
            destination_time: t.destination_time,
            created_at: t.created_at,
            status: t.status,
            window: t.window,
        }
    }
}

/// The documented `Item`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemDoc {
    /// Its id.
    pub id: ItemId,
    /// What it is.
    pub description: String,
}

impl From<&Item> for ItemDoc {
    fn from(i: &Item) -> Self {
        Self {
            id: i.id.clone(),
            description: i.description.clone(),
        }
    }
}

/// The documented `Anchor`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnchorDoc {
    /// The id to travel to, to return.
    pub id: crate::model::AnchorId,
    /// The time it returns to.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl From<&Anchor> for AnchorDoc {
    fn from(a: &Anchor) -> Self {
        Self {
            id: a.id.clone(),
            timestamp: a.timestamp,
            description: a.description.clone(),
        }
    }
}

/// The documented `TimeTravel` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimeTravelDoc {
    /// The destination as requested.
    pub destination: String,
    /// Time of arrival.
    #[schema(value_type = String, format = DateTime)]
    pub arrival_time: Instant,
    /// Items that came along.
    pub items_transported: Vec<ItemId>,
}

impl From<&Journey> for TimeTravelDoc {
    fn from(j: &Journey) -> Self {
        Self {
            destination: j.destination.clone(),
            arrival_time: j.arrival_time,
            items_transported: j.items_transported.clone(),
        }
    }
}

/// The documented `EventManipulationResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventManipulationDoc {
    /// `applied`.
    pub status: String,
    /// The new head of the lineage.
    pub new_event_id: EventId,
}

impl From<&ManipulationResult> for EventManipulationDoc {
    fn from(m: &ManipulationResult) -> Self {
        Self {
            status: m.status.clone(),
            new_event_id: m.new_event_id.clone(),
        }
    }
}

/// The documented `ParadoxCheckResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ParadoxCheckDoc {
    /// True when no paradox was found.
    pub is_stable: bool,
}

/// One anomaly as documented.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnomalyDoc {
    /// Stable id of the anomaly.
    pub anomaly_id: AnomalyId,
    /// What was found.
    pub description: String,
}

/// The documented `TimelineMonitoringResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MonitoringDoc {
    /// `stable` or `anomalies_detected`.
    pub status: String,
    /// What was found.
    pub anomalies: Vec<AnomalyDoc>,
}

impl From<&MonitorReport> for MonitoringDoc {
    fn from(r: &MonitorReport) -> Self {
        Self {
            status: r.status.clone(),
            anomalies: r
                .anomalies
                .iter()
                .map(|a| AnomalyDoc {
                    anomaly_id: a.anomaly_id.clone(),
                    description: a.description.clone(),
                })
                .collect(),
        }
    }
}

/// The guide's event record.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventDoc {
    /// Its id.
    pub event_id: EventId,
    /// What happened.
    pub description: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// Where.
    pub location: String,
}

impl From<&EventRecord> for EventDoc {
    fn from(e: &EventRecord) -> Self {
        Self {
            event_id: e.event_id.clone(),
            description: e.description.clone(),
            time: e.time,
            location: e.location.clone(),
        }
    }
}

/// `search-events` / `scan-events` as the guide shows them.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventsDoc {
    /// The events found, in time order.
    pub events: Vec<EventDoc>,
}

/// `search-events` / `scan-events` with `view=full`.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventsFull {
    /// The events found, in time order.
    pub events: Vec<EventRecord>,
    /// The cursor of the next page, if any.
    /// Always present: null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// `manipulate-event` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ManipulatedDoc {
    /// `applied`.
    pub status: String,
    /// The new head of the lineage.
    pub new_event_id: EventId,
    /// Its description.
    pub description: String,
    /// Its time.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
}

impl From<&ManipulationResult> for ManipulatedDoc {
    fn from(m: &ManipulationResult) -> Self {
        Self {
            status: m.status.clone(),
            new_event_id: m.new_event_id.clone(),
            description: m.description.clone(),
            time: m.time,
        }
    }
}

/// `create-timeline` / `create-parallel-timeline` as the guide shows them.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedTimelineDoc {
    /// The new timeline.
    pub timeline_id: TimelineId,
    /// `created`.
    pub status: String,
    /// What it is for.
    pub description: String,
}

impl From<&TimelineInfo> for CreatedTimelineDoc {
    fn from(t: &TimelineInfo) -> Self {
        Self {
            timeline_id: t.id.clone(),
            status: "created".into(),
            description: t.description.clone().unwrap_or_else(|| t.name.clone()),
        }
    }
}

/// `list-timelines` parameters (body or query; usually neither).
#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListTimelinesParams {
    /// Only the timelines that are `open` (the guide's "Active") or `closed` now.
    pub status: Option<TimelineStatus>,
    /// Most timelines to return (1 to 1000, default 100).
    pub limit: Option<u32>,
    /// The cursor of the next page.
    pub cursor: Option<String>,
}

/// One timeline as `list-timelines` shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListedTimelineDoc {
    /// Its id.
    pub timeline_id: TimelineId,
    /// Its description, else its name.
    pub description: String,
    /// `open` or `closed` (the guide's "Active" is `open`).
    pub status: TimelineStatus,
}

impl From<&TimelineInfo> for ListedTimelineDoc {
    fn from(t: &TimelineInfo) -> Self {
        Self {
            timeline_id: t.id.clone(),
            description: t.description.clone().unwrap_or_else(|| t.name.clone()),
            status: t.status,
        }
    }
}

/// `list-timelines` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelinesDoc {
    /// The timelines, `primary` first, then by creation.
    pub timelines: Vec<ListedTimelineDoc>,
}

/// `list-timelines` with `view=full`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TimelinesFull {
    /// The timelines, `primary` first, then by creation.
    pub timelines: Vec<TimelineInfo>,
    /// The cursor of the next page, when there is one.
    /// Always present: null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// `travel` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TravelledDoc {
    /// `travelled`.
    pub status: String,
    /// The arrival time.
    #[schema(value_type = String, format = DateTime)]
    pub current_time: Instant,
    /// The place arrived at, as given; null when none was given.
    pub location: Option<String>,
}

impl From<&Journey> for TravelledDoc {
    fn from(j: &Journey) -> Self {
        Self {
            status: "travelled".into(),
            current_time: j.arrival_time,
            location: j.location.clone(),
        }
    }
}

/// `return` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReturnedDoc {
    /// `returned`.
    pub status: String,
    /// The anchor's timestamp: the arrival time.
    #[schema(value_type = String, format = DateTime)]
    pub current_time: Instant,
}

impl From<&Journey> for ReturnedDoc {
    fn from(j: &Journey) -> Self {
        Self {
            status: "returned".into(),
            current_time: j.arrival_time,
        }
    }
}

/// `pause-time` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PausedDoc {
    /// `paused`, or `already_paused` (nothing was written).
    pub status: String,
    /// Your time, which stands still until you resume.
    #[schema(value_type = String, format = DateTime)]
    pub paused_at: Instant,
}

/// `resume-time` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResumedDoc {
    /// `resumed`, or `not_paused` (nothing was written).
    pub status: String,
    /// Your time, which runs on from here.
    #[schema(value_type = String, format = DateTime)]
    pub current_time: Instant,
}

/// `fast-forward` / `rewind` as the guide shows them.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShiftedDoc {
    /// `fast_forwarded` or `rewound`.
    pub status: String,
    /// The traveller's time after the journey.
    #[schema(value_type = String, format = DateTime)]
    pub new_time: Instant,
}

/// `switch-timeline` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SwitchedDoc {
    /// `switched`, or `already_there` (nothing was written).
    pub status: String,
    /// The traveller's time in the timeline switched to.
    #[schema(value_type = String, format = DateTime)]
    pub current_time: Instant,
}

impl From<&Switched> for SwitchedDoc {
    fn from(s: &Switched) -> Self {
        Self {
            status: s.status.clone(),
            current_time: s.current_time,
        }
    }
}

/// `check-paradox` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct StabilityDoc {
    /// `checked`.
    pub status: String,
    /// `stable` or `unstable`.
    pub timeline_stability: String,
}

impl From<&ParadoxReport> for StabilityDoc {
    fn from(r: &ParadoxReport) -> Self {
        Self {
            status: "checked".into(),
            timeline_stability: if r.is_stable { "stable" } else { "unstable" }.into(),
        }
    }
}

/// `revert-event` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RevertedDoc {
    /// `reverted`.
    pub status: String,
    /// The event that stands again.
    pub original_event_id: EventId,
}

impl From<&RevertResult> for RevertedDoc {
    fn from(r: &RevertResult) -> Self {
        Self {
            status: "reverted".into(),
            original_event_id: r.original_event_id.clone(),
        }
    }
}

/// `merge-timelines` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MergedDoc {
    /// `merged` or `up_to_date`.
    pub status: String,
    /// The destination.
    pub merged_timeline_id: TimelineId,
    /// Whether every conflict was settled.
    pub conflicts_resolved: bool,
}

impl From<&MergeResult> for MergedDoc {
    fn from(r: &MergeResult) -> Self {
        Self {
            status: r.status.clone(),
            merged_timeline_id: r.merged_timeline_id.clone(),
            conflicts_resolved: r.conflicts_resolved,
        }
    }
}

/// `correct-dissonance` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AlignedDoc {
    /// `aligned` or `already_aligned`.
    pub status: String,
    /// The event ids as given.
    pub aligned_events: Vec<EventId>,
}

impl From<&DissonanceResult> for AlignedDoc {
    fn from(r: &DissonanceResult) -> Self {
        Self {
            status: r.status.clone(),
            aligned_events: r.aligned_events.clone(),
        }
    }
}

/// `set-anchor` as the guide shows it; the high-precision fields are echoed when given.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnchorSetDoc {
    /// The anchor's id.
    pub anchor_id: crate::model::AnchorId,
    /// `set`.
    pub status: String,
    /// The time it returns to, with exactly the accuracy's fraction digits when one was given.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: String,
    /// The accuracy given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<crate::model::Accuracy>,
    /// The environment recorded (the traveller's data; nothing is measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub environment: Option<crate::model::Conditions>,
    /// The quantum state recorded (the traveller's data; nothing is measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub quantum_state: Option<crate::model::Conditions>,
}

impl From<&crate::model::AnchorRecord> for AnchorSetDoc {
    fn from(a: &crate::model::AnchorRecord) -> Self {
        Self {
            anchor_id: a.id.clone(),
            status: "set".into(),
            timestamp: match a.details.accuracy {
                Some(accuracy) => accuracy.print(&a.timestamp),
                None => crate::model::format_instant(&a.timestamp),
            },
            accuracy: a.details.accuracy,
            environment: a.details.environment.clone(),
            quantum_state: a.details.quantum_state.clone(),
        }
    }
}

/// `create-script` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScriptDoc {
    /// Its id.
    pub script_id: crate::model::ScriptId,
    /// `active`, `fired` or `failed`.
    pub status: String,
    /// Its name.
    pub script_name: String,
}

impl From<&Script> for ScriptDoc {
    fn from(s: &Script) -> Self {
        Self {
            script_id: s.script_id.clone(),
            status: s.status.clone(),
            script_name: s.script_name.clone(),
        }
    }
}

/// `schedule-manipulation` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduledDoc {
    /// `scheduled`.
    pub status: String,
    /// When it runs.
    #[schema(value_type = String, format = DateTime)]
    pub scheduled_time: Instant,
}

impl From<&Schedule> for ScheduledDoc {
    fn from(s: &Schedule) -> Self {
        Self {
            status: "scheduled".into(),
            scheduled_time: s.scheduled_time,
        }
    }
}

/// `trigger-external-manipulation` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TriggeredDoc {
    /// `triggered`.
    pub status: String,
    /// The outside system that called.
    pub external_system: String,
}

/// One automation log entry as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogEntryDoc {
    /// When it ran.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// The event id the action was given.
    pub event_id: EventId,
    /// What was done.
    pub action_taken: String,
}

/// `automation-log` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AutomationLogDoc {
    /// `ok`.
    pub status: String,
    /// The entries, oldest first.
    pub log_entries: Vec<LogEntryDoc>,
}

impl AutomationLogDoc {
    /// The projection of a page of entries.
    pub fn of(entries: &[LogEntry]) -> Self {
        Self {
            status: "ok".into(),
            log_entries: entries
                .iter()
                .map(|e| LogEntryDoc {
                    timestamp: e.timestamp,
                    event_id: e.event_id.clone(),
                    action_taken: e.action_taken.clone(),
                })
                .collect(),
        }
    }
}

/// `automation-log` with `view=full`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AutomationLogFull {
    /// `ok`.
    pub status: String,
    /// The entries, oldest first.
    pub log_entries: Vec<LogEntry>,
    /// The cursor of the next page, if any.
    /// Always present: null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// `/healthz` and `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` or `ready`.
    pub status: String,
}

/// A problem (RFC 9457). With `view=full` also `error` and, for paradoxes, `paradoxes`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// `/problems/{slug}`; GET it for an explanation.
    pub r#type: String,
    /// The problem type's title.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong this time.
    pub detail: String,
    /// `/requests/{x-request-id}`.
    pub instance: String,
    /// With `view=full`: the error as the service reports it (tagged by `kind`).
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
    /// With `view=full`, for `paradox-detected`: what the checker found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paradoxes: Option<Vec<crate::paradox::Paradox>>,
}

macro_rules! view_enum {
    ($(#[$doc:meta] $name:ident = $doc_ty:ty | $full_ty:ty;)*) => {
        $(
            #[$doc]
            // Never built: these only describe responses in the OpenAPI document (so the
            // size of their variants does not matter either).
            #[allow(dead_code, clippy::large_enum_variant)]
            #[derive(Debug, Serialize, ToSchema)]
            #[serde(untagged)]
            pub enum $name {
                /// The documented properties (default).
                Documented($doc_ty),
                /// With `view=full`.
                Full($full_ty),
            }
        )*
    };
}
pub(crate) use view_enum;

view_enum! {
    /// A timeline: documented, or with `view=full` the full TimelineInfo.
    TimelineView = TimelineDoc | TimelineInfo;
    /// The list of timelines.
    TimelineListView = Vec<TimelineDoc> | Vec<TimelineInfo>;
    /// An item.
    ItemView = ItemDoc | Item;
    /// An anchor.
    AnchorView = AnchorDoc | Anchor;
    /// A journey.
    TimeTravelView = TimeTravelDoc | Journey;
    /// A manipulation (`POST /v1/events`).
    EventManipulationView = EventManipulationDoc | ManipulationResult;
    /// A paradox check.
    ParadoxCheckView = ParadoxCheckDoc | ParadoxReport;
    /// A monitoring report.
    MonitoringView = MonitoringDoc | MonitorReport;
    /// Found events.
    EventsView = EventsDoc | EventsFull;
    /// A manipulation (`manipulate-event`).
    ManipulatedView = ManipulatedDoc | ManipulationResult;
    /// A created timeline (guide).
    CreatedTimelineView = CreatedTimelineDoc | TimelineInfo;
    /// A stability check.
    StabilityView = StabilityDoc | ParadoxReport;
    /// A revert.
    RevertedView = RevertedDoc | RevertResult;
    /// A merge.
    MergedView = MergedDoc | MergeResult;
    /// A dissonance correction.
    AlignedView = AlignedDoc | DissonanceResult;
    /// A set anchor (guide).
    AnchorSetView = AnchorSetDoc | crate::model::AnchorRecord;
    /// A stored script.
    ScriptView = ScriptDoc | Script;
    /// A scheduled manipulation.
    ScheduledView = ScheduledDoc | Schedule;
    /// An external trigger.
    TriggeredView = TriggeredDoc | Schedule;
    /// The automation log.
    AutomationLogView = AutomationLogDoc | AutomationLogFull;
    /// The guide's list of timelines.
    TimelinesView = TimelinesDoc | TimelinesFull;
    /// A journey in time (guide `travel`).
    TravelledView = TravelledDoc | Journey;
    /// A return to an anchor (guide `return`).
    ReturnedView = ReturnedDoc | Journey;
    /// A switch of timeline.
    SwitchedView = SwitchedDoc | Switched;
    /// A fast-forward or rewind.
    ShiftedView = ShiftedDoc | Journey;
    /// A pause of your clock.
    PausedView = PausedDoc | ClockState;
    /// A resumption of your clock.
    ResumedView = ResumedDoc | ClockState;
    /// An item picked up (`retrieve-item`).
    RetrievedItemView = RetrievedItemDoc | RetrievedItem;
    /// A timeline's events with their change state (`monitor-events`).
    MonitoredEventsView = MonitoredEventsDoc | MonitoredEventsFull;
}

/// `retrieve-item` parameters (body or query; `POST` with a body too).
#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RetrieveItemParams {
    /// What the item is.
    pub item_description: String,
    /// Where it is; your location when absent.
    pub location: Option<String>,
    /// When it is there (RFC 3339); your time when absent. Another time is a journey there
    /// first, within your timeline, with what you carry.
    #[param(format = DateTime)]
    #[schema(format = DateTime)]
    pub time: Option<String>,
}

/// An item as `retrieve-item` shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetrievedItemDetails {
    /// What it is.
    pub description: String,
    /// The time it was picked up at, in its timeline.
    #[schema(value_type = String, format = DateTime)]
    pub retrieved_at: Instant,
}

/// `retrieve-item` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetrievedItemDoc {
    /// The item's id.
    pub item_id: ItemId,
    /// `retrieved`, or `already_retrieved` (nothing was written).
    pub status: String,
    /// The item.
    pub item_details: RetrievedItemDetails,
}

impl From<&RetrievedItem> for RetrievedItemDoc {
    fn from(r: &RetrievedItem) -> Self {
        Self {
            item_id: r.item.id.clone(),
            status: r.status.clone(),
            item_details: RetrievedItemDetails {
                description: r.item.description.clone(),
                retrieved_at: r.item.origin_time,
            },
        }
    }
}

/// One event as `monitor-events` shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MonitoredEventDoc {
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// What happens.
    pub description: String,
}

/// `monitor-events` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MonitoredEventsDoc {
    /// `ok`.
    pub status: String,
    /// The events, in time order.
    pub events: Vec<MonitoredEventDoc>,
}

/// `monitor-events` with `view=full`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MonitoredEventsFull {
    /// `ok`.
    pub status: String,
    /// The events with their change state, in time order.
    pub events: Vec<MonitoredEvent>,
    /// The cursor of the next page, when there is one.
    /// Always present: null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}
