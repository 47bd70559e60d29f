//! The documented operations of the interface (warp.openapi.yaml).

use axum::extract::Path;
use axum::http::{StatusCode, Uri};
use futures::TryFutureExt;

use super::{ApiResult, created, no_content, projected, with_next};
use crate::error::ServiceError;
use crate::model::TimelineId;
use crate::server::extract::{Caller, JsonBody, QueryParams, path_id};
use crate::server::problem::Problem;
use crate::server::views::*;
use crate::service::{
    ManipulateRequest, MonitorQuery, NewAnchor, NewItem, NewTimeline, ParadoxCheckRequest,
    TravelRequest,
};

/// On operations without a documented 400, validation errors are answered 422.
fn unprocessable(e: ServiceError) -> Problem {
    Problem::from_error(e).unprocessable_if(true)
}

/// List all timelines, `primary` first, then by creation.
#[utoipa::path(get, path = "/v1/timelines", tag = "Timelines", operation_id = "listTimelines",
    params(PageParams),
    responses((status = 200, description = "A page of timelines; the next one is in the Link header",
        body = TimelineListView,
        headers(("Link" = String, description = "`<...cursor=...>; rel=\"next\"` when there is a next page"))))
)]
pub async fn list_timelines(
    caller: Caller,
    uri: Uri,
    QueryParams(page): QueryParams<PageParams>,
) -> ApiResult {
    let page = caller.service.list_timelines(page.into()).await?;
    let resp = projected(StatusCode::OK, &page.items, |items| {
        items.iter().map(TimelineDoc::from).collect::<Vec<_>>()
    });
    Ok(with_next(resp, &uri, page.next_cursor.as_deref()))
}

/// Create a timeline branching from a base (`primary` by default).
#[utoipa::path(post, path = "/v1/timelines", tag = "Timelines", operation_id = "createTimeline",
    request_body = NewTimeline,
    responses((status = 201, description = "The timeline was created", body = TimelineView,
        headers(("Location" = String, description = "/v1/timeline/{id}"))))
)]
pub async fn create_timeline(
    caller: Caller,
    JsonBody(req): JsonBody<NewTimeline, true>,
) -> ApiResult {
    let t = caller
        .service
        .create_timeline(req)
        .await
        .map_err(unprocessable)?;
    let location = format!("/v1/timeline/{}", t.id);
    Ok(created(&t, TimelineDoc::from, location))
}

/// One timeline.
#[utoipa::path(get, path = "/v1/timeline/{timeline_id}", tag = "Timelines", operation_id = "getTimeline",
    params(("timeline_id" = String, Path, description = "The timeline")),
    responses((status = 200, description = "The timeline", body = TimelineView))
)]
pub async fn get_timeline(caller: Caller, Path(timeline_id): Path<String>) -> ApiResult {
    let id: TimelineId = path_id("timeline", &timeline_id)?;
    let t = caller
        .service
        .get_timeline(&id)
        .await
        .map_err(unprocessable)?;
    Ok(projected(StatusCode::OK, &t, TimelineDoc::from))
}

/// Delete a timeline that has no branches and no travellers in it; another traveller's
/// timeline (or one of history as shipped) only with the `admin` scope.
#[utoipa::path(delete, path = "/v1/timeline/{timeline_id}", tag = "Timelines", operation_id = "deleteTimeline",
    params(("timeline_id" = String, Path, description = "The timeline to delete")),
    responses((status = 204, description = "Timeline deleted"))
)]
pub async fn delete_timeline(caller: Caller, Path(timeline_id): Path<String>) -> ApiResult {
    let id: TimelineId = path_id("timeline", &timeline_id)?;
    no_content(caller.service.delete_timeline(&id).map_err(unprocessable)).await
}

/// Travel to a timeline, or return to one of your active anchors.
#[utoipa::path(post, path = "/v1/travels", tag = "Travel", operation_id = "timeTravel",
    request_body = TravelRequest,
    responses((status = 200, description = "Time travel successful", body = TimeTravelView))
)]
pub async fn travel(caller: Caller, JsonBody(req): JsonBody<TravelRequest>) -> ApiResult {
    let j = caller.service.travel(req).await?;
    Ok(projected(StatusCode::OK, &j, TimeTravelDoc::from))
}

/// Register an item found where you are.
#[utoipa::path(post, path = "/v1/items", tag = "Items", operation_id = "registerItem",
    request_body = NewItem,
    responses((status = 200, description = "Item registered", body = ItemView))
)]
pub async fn register_item(caller: Caller, JsonBody(req): JsonBody<NewItem, true>) -> ApiResult {
    let item = caller
        .service
        .register_item(req)
        .await
        .map_err(unprocessable)?;
    Ok(projected(StatusCode::OK, &item, ItemDoc::from))
}

/// Manipulate an event in a timeline (`timeline_id` required).
#[utoipa::path(post, path = "/v1/events", tag = "Events", operation_id = "manipulateEvent",
    request_body = ManipulateRequest,
    responses((status = 200, description = "The event was manipulated", body = EventManipulationView))
)]
pub async fn manipulate_event(
    caller: Caller,
    JsonBody(req): JsonBody<ManipulateRequest>,
) -> ApiResult {
    if req.timeline_id.is_none() {
        return Err(Problem::invalid(
            "timeline_id",
            "name the timeline the event is in",
        ));
    }
    let m = caller.service.manipulate_event(req).await?;
    Ok(projected(StatusCode::OK, &m, EventManipulationDoc::from))
}

/// Set a temporal anchor (a return ticket) in your current timeline.
#[utoipa::path(post, path = "/v1/anchors", tag = "Anchors", operation_id = "setAnchor",
    request_body = NewAnchor,
    responses((status = 201, description = "The anchor was set", body = AnchorView,
        headers(("Location" = String, description = "/v1/anchors/{id}"))))
)]
pub async fn set_anchor(caller: Caller, JsonBody(req): JsonBody<NewAnchor, true>) -> ApiResult {
    let a = caller
        .service
        .set_anchor(req)
        .await
        .map_err(unprocessable)?;
    let location = format!("/v1/anchors/{}", a.id);
    Ok(created(&a, AnchorDoc::from, location))
}

/// Check proposed changes for paradoxes; nothing is written.
#[utoipa::path(post, path = "/v1/paradox-checks", tag = "Paradoxes", operation_id = "checkParadox",
    request_body = ParadoxCheckRequest,
    responses((status = 200, description = "Paradox check completed", body = ParadoxCheckView))
)]
pub async fn check_paradox(
    caller: Caller,
    JsonBody(req): JsonBody<ParadoxCheckRequest>,
) -> ApiResult {
    let r = caller.service.check_paradox(req).await?;
    Ok(projected(StatusCode::OK, &r, |r| ParadoxCheckDoc {
        is_stable: r.is_stable,
    }))
}

/// Monitor a timeline for anomalies.
#[utoipa::path(get, path = "/v1/monitor-timeline", tag = "Monitoring", operation_id = "monitorTimeline",
    params(
        ("timeline_id" = String, Query, description = "The timeline to monitor"),
        ("time_range" = Option<String>, Query, description = "Only events in this ISO 8601 interval"),
    ),
    responses((status = 200, description = "Timeline monitored", body = MonitoringView))
)]
pub async fn monitor_timeline(
    caller: Caller,
    QueryParams(q): QueryParams<MonitorQuery>,
) -> ApiResult {
    let r = caller.service.monitor_timeline(q).await?;
    Ok(projected(StatusCode::OK, &r, MonitoringDoc::from))
}
