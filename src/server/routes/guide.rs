//! The guide operations (illustrated by example calls in the interface). The GET ones accept
//! a JSON body or query parameters.

use axum::http::{StatusCode, Uri};

use super::{ApiResult, json, located, projected, with_next};
use crate::server::extract::{BodyOrQuery, Caller, JsonBody};
use crate::server::views::*;
use crate::service::{
    ExternalTrigger, Journey, ManipulateRequest, MonitorQuery, MonitorReport, NewPreciseAnchor,
    NewSchedule, NewScript, NewTimeline, RevertRequest, SearchQuery, SignificantEventQuery,
    StabilityQuery, TimeTravelRequest, TimelineCheck,
};

async fn events(caller: &Caller, uri: &Uri, q: SearchQuery) -> ApiResult {
    let page = caller.service.search_events(q).await?;
    let resp = match view() {
        View::Full => json(
            StatusCode::OK,
            &EventsFull {
                events: page.items.clone(),
                next_cursor: page.next_cursor.clone(),
            },
        ),
        View::Documented => json(
            StatusCode::OK,
            &EventsDoc {
                events: page.items.iter().map(EventDoc::from).collect(),
            },
        ),
    };
    Ok(with_next(resp, uri, page.next_cursor.as_deref()))
}

use super::view;

/// Search a timeline's events by location and time range (`primary` unless `timeline_id`).
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

/// Manipulate an event (`timeline_id` defaults to `primary`).
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
    let resp = projected(StatusCode::CREATED, &t, CreatedTimelineDoc::from);
    Ok(located(resp, &format!("/v1/timeline/{}", t.id)))
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
    let resp = projected(StatusCode::CREATED, &a, AnchorSetDoc::from);
    Ok(located(resp, &format!("/v1/anchors/{}", a.id)))
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
    responses((status = 201, description = "The manipulation was scheduled", body = ScheduledView))
)]
pub async fn schedule_manipulation(
    caller: Caller,
    JsonBody(req): JsonBody<NewSchedule>,
) -> ApiResult {
    let s = caller.service.schedule_manipulation(req).await?;
    Ok(projected(StatusCode::CREATED, &s, ScheduledDoc::from))
}

/// An outside system (a CI pipeline, say) triggers actions.
#[utoipa::path(post, path = "/v1/trigger-external-manipulation", tag = "Guide",
    operation_id = "triggerExternalManipulation",
    request_body = ExternalTrigger,
    responses((status = 202, description = "The trigger was recorded; its actions run at its timestamp",
        body = TriggeredView))
)]
pub async fn trigger_external_manipulation(
    caller: Caller,
    JsonBody(req): JsonBody<ExternalTrigger>,
) -> ApiResult {
    let system = req.external_system.clone();
    let s = caller.service.trigger_external_manipulation(req).await?;
    Ok(projected(StatusCode::ACCEPTED, &s, |s| TriggeredDoc {
        status: "triggered".into(),
        external_system: s.external_system.clone().unwrap_or(system),
    }))
}

/// Automated actions, filtered by timeline and date range.
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
    let resp = match view() {
        View::Full => json(
            StatusCode::OK,
            &AutomationLogFull {
                status: "ok".into(),
                log_entries: page.items.clone(),
                next_cursor: page.next_cursor.clone(),
            },
        ),
        View::Documented => json(StatusCode::OK, &AutomationLogDoc::of(&page.items)),
    };
    Ok(with_next(resp, &uri, page.next_cursor.as_deref()))
}

/// Travel to a time in `primary`, at a place.
#[utoipa::path(post, path = "/api/v1/travel", tag = "Guide", operation_id = "travelToTime",
    request_body = TimeTravelRequest,
    responses((status = 200, description = "The journey", body = Journey))
)]
pub async fn travel_to_time(
    caller: Caller,
    JsonBody(req): JsonBody<TimeTravelRequest>,
) -> ApiResult {
    Ok(json(
        StatusCode::OK,
        &caller.service.travel_to_time(req).await?,
    ))
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
    Ok(json(
        StatusCode::OK,
        &caller.service.monitor_timeline(q).await?,
    ))
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
    Ok(json(
        StatusCode::OK,
        &caller.service.check_timeline(q).await?,
    ))
}
