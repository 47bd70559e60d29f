//! Extension endpoints: the caller, events of a timeline, and listings of the caller's own
//! journeys, items, anchors, scripts and schedules. Default answer: the full type.

use axum::extract::Path;
use axum::http::{StatusCode, Uri};
use futures::TryFutureExt;

use super::{ApiResult, answer_full, json, no_content, with_next};
use crate::error::ServiceError;
use crate::model::{AnchorId, ItemId, MergeId, ScheduleId, ScriptId, TimelineId};
use crate::server::extract::{Caller, JsonBody, JsonText, QueryParams, path_id};
use crate::server::problem::Problem;
use crate::server::views::*;
use crate::service::{
    Anchor, EventRecord, ImportReport, ImportRequest, Item, Journey, Merge, NewEvent, PageRequest,
    Schedule, Script, SearchQuery, TravellerStatus, WorldFile,
};

/// Who you are and where you are now.
#[utoipa::path(get, path = "/v1/me", tag = "Extensions", operation_id = "whoami",
    responses((status = 200, description = "The caller and their position", body = TravellerStatus))
)]
pub async fn whoami(caller: Caller) -> ApiResult {
    answer_full(caller.service.whoami()).await
}

/// A timeline's current events (with `versions=all`, past versions too), in time order,
/// optionally by location and time range.
#[utoipa::path(get, path = "/v1/timeline/{timeline_id}/events", tag = "Extensions",
    operation_id = "listTimelineEvents",
    params(("timeline_id" = String, Path, description = "The timeline"), TimelineEventsParams),
    responses((status = 200, description = "A page of events; the next one is in the Link header",
        body = Vec<EventRecord>,
        headers(("Link" = String, description = "`<...cursor=...>; rel=\"next\"` when there is a next page"))))
)]
pub async fn search_timeline_events(
    caller: Caller,
    uri: Uri,
    Path(timeline_id): Path<String>,
    QueryParams(q): QueryParams<TimelineEventsParams>,
) -> ApiResult {
    let id: TimelineId = path_id("timeline", &timeline_id)?;
    let query = SearchQuery {
        timeline_id: Some(id.clone()),
        location: q.location,
        time_range: q.time_range,
        page: PageRequest {
            limit: q.limit,
            cursor: q.cursor,
        },
    };
    let listed = match q.versions.unwrap_or_default() {
        EventVersions::Current => caller.service.search_events(query).await,
        EventVersions::All => caller.service.event_versions(query).await,
    };
    let page = listed.map_err(addressed(&id))?;
    let resp = json(StatusCode::OK, &page.items);
    Ok(with_next(resp, &uri, page.next_cursor.as_deref()))
}

/// The problem for a refusal of a call about timeline `id`, addressed by path: there an
/// unknown timeline is a missing resource (404), not a bad reference.
fn addressed(id: &TimelineId) -> impl Fn(ServiceError) -> Problem + '_ {
    move |e| match e {
        ServiceError::UnknownReference { what, id: unknown }
            if what == "timeline" && unknown == id.as_str() =>
        {
            Problem::from_error(ServiceError::not_found("timeline", unknown))
        }
        e => Problem::from_error(e),
    }
}

/// Add an event to a timeline.
#[utoipa::path(post, path = "/v1/timeline/{timeline_id}/events", tag = "Extensions",
    operation_id = "addEvent",
    params(("timeline_id" = String, Path, description = "The timeline")),
    request_body = NewEvent,
    responses((status = 201, description = "The event was added", body = EventRecord))
)]
pub async fn add_event(
    caller: Caller,
    Path(timeline_id): Path<String>,
    JsonBody(req): JsonBody<NewEvent>,
) -> ApiResult {
    let id: TimelineId = path_id("timeline", &timeline_id)?;
    let e = caller.service.add_event(&id, req).await?;
    Ok(json(StatusCode::CREATED, &e))
}

/// A timeline as a world file.
///
/// The format `POST /v1/timelines/import` reads: the timeline and every version of its
/// events, a branch's inherited ones too, from one state of the store; it names no parent.
#[utoipa::path(get, path = "/v1/timeline/{timeline_id}/export", tag = "Extensions",
    operation_id = "exportTimeline",
    params(("timeline_id" = String, Path, description = "The timeline")),
    responses((status = 200, description = "The timeline as a world file", body = WorldFile))
)]
pub async fn export_timeline(caller: Caller, Path(timeline_id): Path<String>) -> ApiResult {
    let id: TimelineId = path_id("timeline", &timeline_id)?;
    answer_full(caller.service.export_timeline(&id).map_err(addressed(&id))).await
}

/// Create the timelines of a world file in one write.
///
/// All or nothing: ids kept, or new ones minted when taken (listed in `remapped`). Refused
/// whole, with nothing written, on bad
/// input (the detail names the body's line and the field, `line 14,
/// timelines[0].events[3].time: ...`), on a cause or parent that does not exist, on an id
/// given twice, and on a paradox a created timeline would hold that its parent does not
/// (`paradox-detected`; `safety_check=false` imports anyway and lists them).
#[utoipa::path(post, path = "/v1/timelines/import", tag = "Extensions",
    operation_id = "importTimelines",
    params(ImportParams),
    request_body(content = WorldFile, content_type = "application/json"),
    responses((status = 201, description = "The timelines were created", body = ImportReport))
)]
pub async fn import_timelines(
    caller: Caller,
    QueryParams(q): QueryParams<ImportParams>,
    JsonText(document): JsonText,
) -> ApiResult {
    let report = caller
        .service
        .import_timelines(ImportRequest {
            document,
            safety_check: q.safety_check.unwrap_or(true),
            progress: None,
        })
        .await?;
    Ok(json(StatusCode::CREATED, &report))
}

macro_rules! list_route {
    ($name:ident, $path:literal, $op:literal, $method:ident, $ty:ty, $doc:literal) => {
        #[doc = $doc]
        #[utoipa::path(get, path = $path, tag = "Extensions", operation_id = $op,
            params(PageParams),
            responses((status = 200, description = "A page; the next one is in the Link header",
                body = Vec<$ty>,
                headers(("Link" = String, description = "`<...cursor=...>; rel=\"next\"` when there is a next page"))))
        )]
        pub async fn $name(
            caller: Caller,
            uri: Uri,
            QueryParams(page): QueryParams<PageParams>,
        ) -> ApiResult {
            let page = caller.service.$method(page.into()).await?;
            let resp = json(StatusCode::OK, &page.items);
            Ok(with_next(resp, &uri, page.next_cursor.as_deref()))
        }
    };
}

list_route!(
    list_access_controls,
    "/v1/access-controls",
    "listAccessControls",
    list_access_controls,
    crate::service::AccessControlView,
    "The access-control lists of the timelines you may see that have one, with your right on each (a timeline without one gives every traveller read and write)."
);
list_route!(
    list_restrictions,
    "/v1/restrictions",
    "listRestrictions",
    list_restrictions,
    crate::service::Restriction,
    "The restrictions in force (operators only: it needs the admin scope)."
);
list_route!(
    list_journeys,
    "/v1/travels",
    "listJourneys",
    list_journeys,
    Journey,
    "Your journeys, oldest first."
);
list_route!(
    list_items,
    "/v1/items",
    "listItems",
    list_items,
    Item,
    "Your items."
);
list_route!(
    list_anchors,
    "/v1/anchors",
    "listAnchors",
    list_anchors,
    Anchor,
    "Your anchors, active and spent."
);
list_route!(
    list_scripts,
    "/v1/scripts",
    "listScripts",
    list_scripts,
    Script,
    "Your scripts; with the `admin` scope, everyone's (each names its `owner`)."
);
list_route!(
    list_schedules,
    "/v1/schedules",
    "listSchedules",
    list_schedules,
    Schedule,
    "Your scheduled and triggered jobs; with the `admin` scope, everyone's (each names its `owner`)."
);
list_route!(
    list_merges,
    "/v1/merges",
    "listMerges",
    list_merges,
    Merge,
    "Recorded merges, oldest first."
);

/// One recorded merge: what it weighed and wrote, lineage by lineage.
#[utoipa::path(get, path = "/v1/merges/{merge_id}", tag = "Extensions", operation_id = "getMerge",
    params(("merge_id" = String, Path, description = "The merge")),
    responses((status = 200, description = "The merge", body = Merge))
)]
pub async fn get_merge(caller: Caller, Path(merge_id): Path<String>) -> ApiResult {
    let id: MergeId = path_id("merge", &merge_id)?;
    answer_full(caller.service.get_merge(&id)).await
}

/// One of your items.
#[utoipa::path(get, path = "/v1/items/{item_id}", tag = "Extensions", operation_id = "getItem",
    params(("item_id" = String, Path, description = "The item")),
    responses((status = 200, description = "The item", body = Item))
)]
pub async fn get_item(caller: Caller, Path(item_id): Path<String>) -> ApiResult {
    let id: ItemId = path_id("item", &item_id)?;
    answer_full(caller.service.get_item(&id)).await
}

/// One of your anchors.
#[utoipa::path(get, path = "/v1/anchors/{anchor_id}", tag = "Extensions", operation_id = "getAnchor",
    params(("anchor_id" = String, Path, description = "The anchor")),
    responses((status = 200, description = "The anchor", body = Anchor))
)]
pub async fn get_anchor(caller: Caller, Path(anchor_id): Path<String>) -> ApiResult {
    let id: AnchorId = path_id("anchor", &anchor_id)?;
    answer_full(caller.service.get_anchor(&id)).await
}

/// Delete one of your scripts (with the `admin` scope, anyone's).
#[utoipa::path(delete, path = "/v1/scripts/{script_id}", tag = "Extensions", operation_id = "deleteScript",
    params(("script_id" = String, Path, description = "The script")),
    responses((status = 204, description = "Script deleted"))
)]
pub async fn delete_script(caller: Caller, Path(script_id): Path<String>) -> ApiResult {
    let id: ScriptId = path_id("script", &script_id)?;
    no_content(caller.service.delete_script(&id)).await
}

/// Cancel one of your jobs that has not run yet (with the `admin` scope, anyone's).
#[utoipa::path(delete, path = "/v1/schedules/{schedule_id}", tag = "Extensions", operation_id = "deleteSchedule",
    params(("schedule_id" = String, Path, description = "The scheduled or triggered job")),
    responses((status = 204, description = "Job cancelled"))
)]
pub async fn delete_schedule(caller: Caller, Path(schedule_id): Path<String>) -> ApiResult {
    let id: ScheduleId = path_id("schedule", &schedule_id)?;
    no_content(caller.service.delete_schedule(&id)).await
}
