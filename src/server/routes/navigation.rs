//! Time navigation beyond the journeys (guide operations §1): `retrieve-item` (a GET that
//! writes, POST accepted too), `monitor-events`, and withdrawing a read-staleness setting.

use axum::extract::Path;
use axum::http::{StatusCode, Uri};

use super::{ApiResult, no_content, paged, projected};
use crate::model::{CacheId, parse_instant};
use crate::server::extract::{BodyOrQuery, Caller, JsonBody, path_id};
use crate::server::views::*;
use crate::service::{MonitoredEvent, RetrieveItemRequest};

impl RetrieveItemParams {
    fn into_request(self) -> Result<RetrieveItemRequest, crate::server::problem::Problem> {
        let time = self
            .time
            .as_deref()
            .map(|t| parse_instant("time", t))
            .transpose()
            .map_err(crate::error::ServiceError::from)?;
        Ok(RetrieveItemRequest {
            item_description: self.item_description,
            location: self.location,
            time,
        })
    }
}

async fn retrieved(caller: &Caller, params: RetrieveItemParams) -> ApiResult {
    let r = caller.service.retrieve_item(params.into_request()?).await?;
    Ok(projected(StatusCode::OK, &r, RetrievedItemDoc::from))
}

/// Go and pick an item up where it is: at `time` (a journey there first, within your timeline,
/// with what you carry, when it is not your time) and `location` (yours when absent). The item
/// is registered with that origin and place and you carry it; both are one write. This GET
/// writes, so it needs the `write` scope. An item you registered here and carry is answered
/// `already_retrieved` with nothing written, so a retried GET is harmless; one you left
/// elsewhere is a 409 saying where.
#[utoipa::path(get, path = "/v1/retrieve-item", tag = "Guide", operation_id = "retrieveItem",
    params(RetrieveItemParams),
    request_body(content = RetrieveItemParams, description = "The same fields as a JSON body, instead of the query"),
    responses(
        (status = 200, description = "The item (`retrieved` or `already_retrieved`)", body = RetrievedItemView),
        (status = 409, description = "You retrieved it here before and left it elsewhere: the detail says where (conflict)",
            body = crate::server::views::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn retrieve_item(
    caller: Caller,
    BodyOrQuery(params): BodyOrQuery<RetrieveItemParams>,
) -> ApiResult {
    retrieved(&caller, params).await
}

/// `retrieve-item` as a POST with a JSON body: the same operation.
#[utoipa::path(post, path = "/v1/retrieve-item", tag = "Guide", operation_id = "retrieveItemPost",
    request_body = RetrieveItemParams,
    responses(
        (status = 200, description = "The item (`retrieved` or `already_retrieved`)", body = RetrievedItemView),
        (status = 409, description = "You retrieved it here before and left it elsewhere: the detail says where (conflict)",
            body = crate::server::views::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn retrieve_item_post(
    caller: Caller,
    JsonBody(params): JsonBody<RetrieveItemParams>,
) -> ApiResult {
    retrieved(&caller, params).await
}

/// The events of a timeline (yours unless `timeline_id`), filtered by location and time range
/// as `search-events` is, reported from where you are. With `view=full` each carries its change
/// state: `changed_at` (the last change by a traveller or automation), `in_paradox` (an open
/// anomaly names it) and `relative` (`past` or `future` against your time). For changes as they
/// happen, follow `GET /v1/monitor-events/stream`.
#[utoipa::path(get, path = "/v1/monitor-events", tag = "Guide", operation_id = "monitorEvents",
    params(SearchParams),
    request_body(content = SearchParams, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "The events, in time order", body = MonitoredEventsView,
        headers(("Link" = String, description = "`<...cursor=...>; rel=\"next\"` when there is a next page"))))
)]
pub async fn monitor_events(
    caller: Caller,
    uri: Uri,
    BodyOrQuery(q): BodyOrQuery<SearchParams>,
) -> ApiResult {
    let page = caller.service.monitor_events(q.into()).await?;
    let full = |events, next_cursor| MonitoredEventsFull {
        status: "ok".into(),
        events,
        next_cursor,
    };
    let doc = |events: &[MonitoredEvent]| MonitoredEventsDoc {
        status: "ok".into(),
        events: events
            .iter()
            .map(|e| MonitoredEventDoc {
                time: e.event.time,
                description: e.event.description.clone(),
            })
            .collect(),
    };
    Ok(paged(&uri, &page, full, doc))
}

/// Withdraw your read-staleness setting (`enable-caching`): your reads wait for the read barrier
/// again. 404 unless it is your setting in force.
#[utoipa::path(delete, path = "/v1/caches/{cache_id}", tag = "Extensions", operation_id = "disableCaching",
    params(("cache_id" = String, Path, description = "The setting `enable-caching` answered")),
    responses((status = 204, description = "The setting was withdrawn"))
)]
pub async fn disable_caching(caller: Caller, Path(cache_id): Path<String>) -> ApiResult {
    let id: CacheId = path_id("cache setting", &cache_id)?;
    no_content(caller.service.disable_caching(&id)).await
}
