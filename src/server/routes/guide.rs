//! The guide operations (illustrated by example calls in the interface). The GET ones accept
//! a JSON body or query parameters.

use axum::http::{StatusCode, Uri};

use super::{ApiResult, answer_full, created, located, paged, projected};
use crate::server::extract::{BodyOrQuery, Caller, JsonBody, OptionalJsonBody};
use crate::server::views::*;
use crate::service::{
    DissonanceRequest, ExternalTrigger, GuideTravelRequest, Journey, ManipulateRequest,
    MergeRequest, MonitorQuery, MonitorReport, NewPreciseAnchor, NewSchedule, NewScript,
    NewTimeline, PageRequest, ReturnRequest, RevertRequest, SearchQuery, ShiftRequest,
    SignificantEventQuery, StabilityQuery, SwitchRequest, TimeTravelRequest, TimelineCheck,
    TimelineQuery,
};

async fn events(caller: &Caller, uri: &Uri, q: SearchQuery) -> ApiResult {
    let page = caller.service.search_events(q).await?;
    let full = |events, next_cursor| EventsFull {
        events,
        next_cursor,
    };
    let doc = |events: &[_]| EventsDoc {
        events: events.iter().map(EventDoc::from).collect(),
    };
    Ok(paged(uri, &page, full, doc))
}

/// Search a timeline's events by location and time range (where you are unless `timeline_id`).
#[utoipa::path(get, path = "/v1/search-events", tag = "Guide", operation_id = "searchEvents",
    params(SearchParams),
    request_body(content = SearchParams, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "Events found, in time order", body = EventsView))
)]
pub async fn search_events(
    caller: Caller,
    uri: Uri,
    BodyOrQuery(q): BodyOrQuery<SearchParams>,
) -> ApiResult {
    events(&caller, &uri, q.into()).await
}

/// Manipulate an event (`timeline_id` defaults to the timeline you are in).
#[utoipa::path(post, path = "/v1/manipulate-event", tag = "Guide", operation_id = "guideManipulateEvent",
    request_body = ManipulateRequest,
    responses((status = 200, description = "The event was manipulated", body = ManipulatedView))
)]
pub async fn manipulate_event(
    caller: Caller,
    JsonBody(req): JsonBody<ManipulateRequest>,
) -> ApiResult {
    let m = caller.service.manipulate_event(req).await?;
    Ok(projected(StatusCode::OK, &m, ManipulatedDoc::from))
}

async fn created_timeline(caller: &Caller, req: NewTimeline) -> ApiResult {
    let t = caller.service.create_timeline(req).await?;
    let location = format!("/v1/timeline/{}", t.id);
    Ok(created(&t, CreatedTimelineDoc::from, location))
}

/// Create a timeline branching from a base (`primary` by default).
#[utoipa::path(post, path = "/v1/create-timeline", tag = "Guide", operation_id = "guideCreateTimeline",
    request_body = NewTimeline,
    responses((status = 201, description = "The timeline was created", body = CreatedTimelineView,
        headers(("Location" = String, description = "/v1/timeline/{id}"))))
)]
pub async fn create_timeline(caller: Caller, JsonBody(req): JsonBody<NewTimeline>) -> ApiResult {
    created_timeline(&caller, req).await
}

/// Create a parallel timeline: a branch with a `variation`.
#[utoipa::path(post, path = "/v1/create-parallel-timeline", tag = "Guide",
    operation_id = "createParallelTimeline",
    request_body = NewTimeline,
    responses((status = 201, description = "The timeline was created", body = CreatedTimelineView,
        headers(("Location" = String, description = "/v1/timeline/{id}"))))
)]
pub async fn create_parallel_timeline(
    caller: Caller,
    JsonBody(req): JsonBody<NewTimeline>,
) -> ApiResult {
    created_timeline(&caller, req).await
}

/// Check a timeline as it stands, optionally only after an event.
#[utoipa::path(get, path = "/v1/check-paradox", tag = "Guide", operation_id = "checkStability",
    params(
        ("timeline_id" = String, Query, description = "The timeline"),
        ("after_event_id" = Option<String>, Query, description = "Only paradoxes at or after this event"),
    ),
    request_body(content = StabilityQuery, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "The verdict", body = StabilityView))
)]
pub async fn check_paradox(
    caller: Caller,
    BodyOrQuery(q): BodyOrQuery<StabilityQuery>,
) -> ApiResult {
    let r = caller.service.check_stability(q).await?;
    Ok(projected(StatusCode::OK, &r, StabilityDoc::from))
}

/// Undo the latest manipulation of an event's lineage.
#[utoipa::path(post, path = "/v1/revert-event", tag = "Guide", operation_id = "revertEvent",
    request_body = RevertRequest,
    responses((status = 200, description = "The manipulation was undone", body = RevertedView))
)]
pub async fn revert_event(caller: Caller, JsonBody(req): JsonBody<RevertRequest>) -> ApiResult {
    let r = caller.service.revert_event(req).await?;
    Ok(projected(StatusCode::OK, &r, RevertedDoc::from))
}

/// Merge a timeline into an ancestor or a descendant of it: the changes the source made since
/// the branch point are written into the destination in one write, conflicts (a lineage both
/// changed, differently) treated as `conflict_resolution` says. Refused whole with
/// `paradox-detected` when it would add a paradox (unless `safety_check` is false), with 409
/// `conflict` for timelines not on one line of descent (and, for now, for `manual_review` with
/// conflicts), with `event-locked` when `source_overwrite` would change a fixed point. Status
/// `merged`, or `up_to_date` when there was nothing to bring over (nothing is written).
#[utoipa::path(post, path = "/v1/merge-timelines", tag = "Guide", operation_id = "mergeTimelines",
    request_body = MergeRequest,
    responses((status = 200, description = "The merge was applied, or there was nothing to merge", body = MergedView,
        headers(("Location" = String,
            description = "/v1/merges/{merge_id}: the merge record (pending or applied); absent when nothing was written (`up_to_date`). The guide's answer carries no id"))))
)]
pub async fn merge_timelines(caller: Caller, JsonBody(req): JsonBody<MergeRequest>) -> ApiResult {
    let r = caller.service.merge_timelines(req).await?;
    let resp = projected(StatusCode::OK, &r, MergedDoc::from);
    Ok(match &r.merge_id {
        Some(id) => located(resp, &format!("/v1/merges/{id}")),
        None => resp,
    })
}

/// Align named events that happen before one of their causes: each is moved to one second
/// after its latest cause (a new version of it, by you), causes before their effects. Refused
/// whole with `paradox-detected` when a named event would still be out of order (a causal loop:
/// moving cannot break it) or a move would put an unnamed effect before its cause; with
/// `event-locked` when a fixed point would have to move. Status `aligned`, or
/// `already_aligned` when none needed moving (nothing is written).
#[utoipa::path(post, path = "/v1/correct-dissonance", tag = "Guide", operation_id = "correctDissonance",
    request_body = DissonanceRequest,
    responses((status = 200, description = "The events are in causal order", body = AlignedView))
)]
pub async fn correct_dissonance(
    caller: Caller,
    JsonBody(req): JsonBody<DissonanceRequest>,
) -> ApiResult {
    let r = caller.service.correct_dissonance(req).await?;
    Ok(projected(StatusCode::OK, &r, AlignedDoc::from))
}

/// Set an anchor (a return ticket) in your current timeline. One active anchor per timeline,
/// timestamp and description (the same again answers 409 with its `Location`). With an
/// `accuracy`, the timestamp is printed with exactly that many fraction digits, and a finer one
/// is refused. `environment` and `quantum_state` are recorded as the traveller gives them and
/// echoed: Chronoscope measures nothing physical.
#[utoipa::path(post, path = "/v1/set-anchor", tag = "Guide", operation_id = "guideSetAnchor",
    request_body = NewPreciseAnchor,
    responses((status = 201, description = "The anchor was set", body = AnchorSetView,
        headers(("Location" = String, description = "/v1/anchors/{id}"))))
)]
pub async fn set_anchor(caller: Caller, JsonBody(req): JsonBody<NewPreciseAnchor>) -> ApiResult {
    let a = caller.service.set_precise_anchor(req).await?;
    let location = format!("/v1/anchors/{}", a.id);
    Ok(created(&a, AnchorSetDoc::from, location))
}

/// Store a script that runs actions when its trigger event changes or its date passes.
#[utoipa::path(post, path = "/v1/create-script", tag = "Guide", operation_id = "createScript",
    request_body = NewScript,
    responses((status = 201, description = "The script was stored", body = ScriptView))
)]
pub async fn create_script(caller: Caller, JsonBody(req): JsonBody<NewScript>) -> ApiResult {
    let s = caller.service.create_script(req).await?;
    Ok(projected(StatusCode::CREATED, &s, ScriptDoc::from))
}

/// Schedule a manipulation at a wall-clock time.
#[utoipa::path(post, path = "/v1/schedule-manipulation", tag = "Guide",
    operation_id = "scheduleManipulation",
    request_body = NewSchedule,
    responses((status = 201, description = "The manipulation was scheduled", body = ScheduledView,
        headers(("Location" = String,
            description = "/v1/schedules/{schedule_id}: the job (DELETE it to cancel); the guide's answer carries no id"))))
)]
pub async fn schedule_manipulation(
    caller: Caller,
    JsonBody(req): JsonBody<NewSchedule>,
) -> ApiResult {
    let s = caller.service.schedule_manipulation(req).await?;
    let location = format!("/v1/schedules/{}", s.schedule_id);
    Ok(created(&s, ScheduledDoc::from, location))
}

/// An outside system (a CI pipeline, say) triggers actions.
#[utoipa::path(post, path = "/v1/trigger-external-manipulation", tag = "Guide",
    operation_id = "triggerExternalManipulation",
    request_body = ExternalTrigger,
    responses((status = 202, description = "The trigger was recorded; its actions run at its timestamp",
        body = TriggeredView,
        headers(("Location" = String,
            description = "/v1/schedules/{schedule_id}: the job (DELETE it to cancel); the guide's answer carries no id"))))
)]
pub async fn trigger_external_manipulation(
    caller: Caller,
    JsonBody(req): JsonBody<ExternalTrigger>,
) -> ApiResult {
    let system = req.external_system.clone();
    let s = caller.service.trigger_external_manipulation(req).await?;
    let resp = projected(StatusCode::ACCEPTED, &s, |s| TriggeredDoc {
        status: "triggered".into(),
        external_system: s.external_system.clone().unwrap_or(system),
    });
    Ok(located(resp, &format!("/v1/schedules/{}", s.schedule_id)))
}

/// Automated actions, filtered by timeline and date range.
///
/// Your own; with the `admin` scope, everyone's (with `view=full`, each entry names its `owner`).
#[utoipa::path(get, path = "/v1/automation-log", tag = "Guide", operation_id = "automationLog",
    params(LogParams),
    request_body(content = LogParams, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "The log", body = AutomationLogView))
)]
pub async fn automation_log(
    caller: Caller,
    uri: Uri,
    BodyOrQuery(q): BodyOrQuery<LogParams>,
) -> ApiResult {
    let query = crate::service::LogQuery {
        timeline_id: q.timeline_id,
        date_range: q.date_range,
        page: crate::service::PageRequest {
            limit: q.limit,
            cursor: q.cursor,
        },
    };
    let page = caller.service.automation_log(query).await?;
    let full = |log_entries, next_cursor| AutomationLogFull {
        status: "ok".into(),
        log_entries,
        next_cursor,
    };
    Ok(paged(&uri, &page, full, AutomationLogDoc::of))
}

/// Travel to a time in the timeline you are in, at a place.
#[utoipa::path(post, path = "/api/v1/travel", tag = "Guide", operation_id = "travelToTime",
    request_body = TimeTravelRequest,
    responses((status = 200, description = "The journey", body = Journey))
)]
pub async fn travel_to_time(
    caller: Caller,
    JsonBody(req): JsonBody<TimeTravelRequest>,
) -> ApiResult {
    answer_full(caller.service.travel_to_time(req)).await
}

/// Scan a timeline's events (search-events as a POST).
#[utoipa::path(post, path = "/api/v1/scan-events", tag = "Guide", operation_id = "scanEvents",
    request_body = SearchParams,
    responses((status = 200, description = "Events found, in time order", body = EventsView))
)]
pub async fn scan_events(
    caller: Caller,
    uri: Uri,
    JsonBody(q): JsonBody<SearchParams>,
) -> ApiResult {
    events(&caller, &uri, q.into()).await
}

/// The monitor, limited to a time range.
#[utoipa::path(get, path = "/api/v1/monitor-paradox", tag = "Guide", operation_id = "monitorParadox",
    params(
        ("timeline_id" = String, Query, description = "The timeline"),
        ("time_range" = Option<String>, Query, description = "Only events in this ISO 8601 interval"),
    ),
    request_body(content = MonitorQuery, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "The monitor's report", body = MonitorReport))
)]
pub async fn monitor_paradox(
    caller: Caller,
    BodyOrQuery(q): BodyOrQuery<MonitorQuery>,
) -> ApiResult {
    answer_full(caller.service.monitor_timeline(q)).await
}

/// Whether a significant event still holds in a timeline.
#[utoipa::path(get, path = "/api/v1/check-timeline", tag = "Guide", operation_id = "checkTimeline",
    params(
        ("timeline_id" = String, Query, description = "The timeline"),
        ("significant_event" = String, Query, description = "An event id or an event's description"),
    ),
    request_body(content = SignificantEventQuery, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "Whether it holds", body = TimelineCheck))
)]
pub async fn check_timeline(
    caller: Caller,
    BodyOrQuery(q): BodyOrQuery<SignificantEventQuery>,
) -> ApiResult {
    answer_full(caller.service.check_timeline(q)).await
}

/// Travel to a time, at a place, in your current timeline unless `timeline_id` names another.
/// Everything you carry comes along unless `items_transported` lists what does.
#[utoipa::path(post, path = "/v1/travel", tag = "Guide", operation_id = "guideTravel",
    request_body = GuideTravelRequest,
    responses((status = 200, description = "The journey (`status` is `travelled`)", body = TravelledView))
)]
pub async fn travel(caller: Caller, JsonBody(req): JsonBody<GuideTravelRequest>) -> ApiResult {
    let j = caller.service.travel_in_time(req).await?;
    Ok(projected(StatusCode::OK, &j, TravelledDoc::from))
}

/// Return to one of your active anchors: arrival at its timestamp in its timeline; the anchor
/// becomes spent. Only you move: changes made to timelines are not undone (that is
/// `revert-event`).
#[utoipa::path(post, path = "/v1/return", tag = "Guide", operation_id = "guideReturn",
    request_body = ReturnRequest,
    responses((status = 200, description = "The journey (`status` is `returned`)", body = ReturnedView))
)]
pub async fn return_to_anchor(caller: Caller, JsonBody(req): JsonBody<ReturnRequest>) -> ApiResult {
    let j = caller.service.return_to_anchor(req).await?;
    Ok(projected(StatusCode::OK, &j, ReturnedDoc::from))
}

/// The timelines you may read, `primary` first, then by creation, as the guide shows them;
/// only the `open` or the `closed` ones with `status`.
#[utoipa::path(get, path = "/v1/list-timelines", tag = "Guide", operation_id = "guideListTimelines",
    params(ListTimelinesParams),
    request_body(content = ListTimelinesParams, description = "The same fields as a JSON body, instead of the query (usually none)"),
    responses((status = 200, description = "A page of timelines", body = TimelinesView,
        headers(("Link" = String, description = "`<...cursor=...>; rel=\"next\"` when there is a next page"))))
)]
pub async fn list_timelines(
    caller: Caller,
    uri: Uri,
    BodyOrQuery(q): BodyOrQuery<ListTimelinesParams>,
) -> ApiResult {
    let page = caller
        .service
        .find_timelines(TimelineQuery {
            status: q.status,
            page: PageRequest {
                limit: q.limit,
                cursor: q.cursor,
            },
        })
        .await?;
    let full = |timelines, next_cursor| TimelinesFull {
        timelines,
        next_cursor,
    };
    let doc = |timelines: &[_]| TimelinesDoc {
        timelines: timelines.iter().map(ListedTimelineDoc::from).collect(),
    };
    Ok(paged(&uri, &page, full, doc))
}

/// Switch to another timeline at your current time (a sideways journey; what you carry comes
/// along). Anchors, items and the guide operations that name no timeline then act there.
/// Switching to the timeline you are in answers `already_there` and writes nothing.
#[utoipa::path(post, path = "/v1/switch-timeline", tag = "Guide", operation_id = "switchTimeline",
    request_body = SwitchRequest,
    responses((status = 200, description = "Where you are now (`switched` or `already_there`)", body = SwitchedView))
)]
pub async fn switch_timeline(caller: Caller, JsonBody(req): JsonBody<SwitchRequest>) -> ApiResult {
    let s = caller.service.switch_timeline(req).await?;
    Ok(projected(StatusCode::OK, &s, SwitchedDoc::from))
}

/// Move forward in your own timeline by a duration (`10m`, `1h30m`, `1d`, `PT10M`, `P1M`, …);
/// what you carry comes along.
#[utoipa::path(post, path = "/v1/fast-forward", tag = "Guide", operation_id = "fastForward",
    request_body = ShiftRequest,
    responses((status = 200, description = "The journey (`status` is `fast_forwarded`)", body = ShiftedView))
)]
pub async fn fast_forward(caller: Caller, JsonBody(req): JsonBody<ShiftRequest>) -> ApiResult {
    let j = caller.service.fast_forward(req).await?;
    Ok(projected(StatusCode::OK, &j, |j| ShiftedDoc {
        status: "fast_forwarded".into(),
        new_time: j.arrival_time,
    }))
}

/// Move back in your own timeline by a duration (`5m`, `1h30m`, `1d`, `PT5M`, `P1Y`, …); what
/// you carry comes along.
#[utoipa::path(post, path = "/v1/rewind", tag = "Guide", operation_id = "rewind",
    request_body = ShiftRequest,
    responses((status = 200, description = "The journey (`status` is `rewound`)", body = ShiftedView))
)]
pub async fn rewind(caller: Caller, JsonBody(req): JsonBody<ShiftRequest>) -> ApiResult {
    let j = caller.service.rewind(req).await?;
    Ok(projected(StatusCode::OK, &j, |j| ShiftedDoc {
        status: "rewound".into(),
        new_time: j.arrival_time,
    }))
}

/// Your clock, paused or resumed: no fields (an empty body counts as `{}`).
#[derive(Debug, Default, serde::Deserialize, utoipa::ToSchema)]
pub struct NoFields {}

/// Pause your own clock: your time stands still until you resume. The shared world does not
/// pause (other travellers, automation and timeline windows go on); for an isolated
/// environment, create a branch. Pausing while paused answers `already_paused` and writes
/// nothing.
#[utoipa::path(post, path = "/v1/pause-time", tag = "Guide", operation_id = "pauseTime",
    request_body(content = Option<NoFields>, description = "No fields; the body may be empty"),
    responses((status = 200, description = "Your clock (`paused` or `already_paused`)", body = PausedView))
)]
pub async fn pause_time(
    caller: Caller,
    OptionalJsonBody(_none): OptionalJsonBody<NoFields>,
) -> ApiResult {
    let c = caller.service.pause_time().await?;
    Ok(projected(StatusCode::OK, &c, |c| PausedDoc {
        status: c.status.clone(),
        paused_at: c.time,
    }))
}

/// Let your paused clock run on from where it stood. Resuming a running clock answers
/// `not_paused` and writes nothing.
#[utoipa::path(post, path = "/v1/resume-time", tag = "Guide", operation_id = "resumeTime",
    request_body(content = Option<NoFields>, description = "No fields; the body may be empty"),
    responses((status = 200, description = "Your clock (`resumed` or `not_paused`)", body = ResumedView))
)]
pub async fn resume_time(
    caller: Caller,
    OptionalJsonBody(_none): OptionalJsonBody<NoFields>,
) -> ApiResult {
    let c = caller.service.resume_time().await?;
    Ok(projected(StatusCode::OK, &c, |c| ResumedDoc {
        status: c.status.clone(),
        current_time: c.time,
    }))
}
