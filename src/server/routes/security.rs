//! Access control and restrictions (guide operations §5.1–5.2): `set-access-control` and
//! `restrict-time-travel` as the guide shows them, and the extensions that read them back.

use axum::extract::Path;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiResult, answer_full, projected};
use crate::model::{TimelineId, Traveller};
use crate::server::extract::{Caller, JsonBody, path_id};
use crate::server::views::view_enum;
use crate::service::{
    AccessControlSet, AccessControlView, RestrictRequest, Restricted, SetAccessControlRequest,
};

/// `set-access-control` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessControlDoc {
    /// `set` or `removed`.
    pub status: String,
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
}

view_enum! {
    /// `set-access-control`: the guide's fields, or with `view=full` the list in force.
    AccessControlSetView = AccessControlDoc | AccessControlSet;
    /// `restrict-time-travel`: the guide's fields, or with `view=full` the restriction recorded.
    RestrictedView = RestrictedDoc | Restricted;
}

/// `restrict-time-travel` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RestrictedDoc {
    /// `restricted` or `lifted`.
    pub status: String,
    /// The traveller.
    #[schema(value_type = String)]
    pub user_id: Traveller,
}

/// Set who may read, write and administer a timeline (names are token subjects), or remove its
/// list with `permissions: null`. Being listed under `admin` also gives write and read; under
/// `write`, read; a token's scope still caps what its holder may do. Without read a timeline
/// is unknown to its caller; with read but not the right an operation needs, the answer is
/// `access-denied`. A branch starts with its base's list, its creator added to `admin`.
/// Needs the admin right on the timeline: an operator (admin scope), the creator of a
/// timeline without a list, or a name in its `admin` list. A non-operator cannot leave their
/// own name out of `admin` (409); operators keep every right whatever the list says, so
/// nobody is locked out.
#[utoipa::path(post, path = "/v1/set-access-control", tag = "Guide", operation_id = "setAccessControl",
    request_body = SetAccessControlRequest,
    responses((status = 200, description = "The list is in force (`set`) or gone (`removed`)",
        body = AccessControlSetView))
)]
pub async fn set_access_control(
    caller: Caller,
    JsonBody(req): JsonBody<SetAccessControlRequest>,
) -> ApiResult {
    let r = caller.service.set_access_control(req).await?;
    Ok(projected(StatusCode::OK, &r, |r| AccessControlDoc {
        status: r.status.clone(),
        timeline_id: r.timeline_id.clone(),
    }))
}

/// A timeline's access-control list (`null` when it has none: every traveller may read and
/// write it, its creator administers it), with the caller's right on it.
#[utoipa::path(get, path = "/v1/timeline/{timeline_id}/access-control", tag = "Extensions",
    operation_id = "getAccessControl",
    params(("timeline_id" = String, Path, description = "The timeline")),
    responses((status = 200, description = "The list and your right", body = AccessControlView))
)]
pub async fn get_access_control(caller: Caller, Path(timeline_id): Path<String>) -> ApiResult {
    let id: TimelineId = path_id("timeline", &timeline_id)?;
    answer_full(caller.service.access_control(&id)).await
}

/// Restrict a traveller (operators only): `limited_access` lets them read, return to their own
/// anchors, pause and resume, and keep their own anchors and items; `read_only` lets them
/// read; `no_access` leaves them only `GET /v1/whoami`, which states the restriction;
/// `unrestricted` lifts it. Refusals answer `travel-restricted`. A traveller abroad stays
/// where they are. Operator sessions are never restricted.
#[utoipa::path(post, path = "/v1/restrict-time-travel", tag = "Guide",
    operation_id = "restrictTimeTravel",
    request_body = RestrictRequest,
    responses((status = 200, description = "The restriction (`restricted`) or its end (`lifted`)",
        body = RestrictedView))
)]
pub async fn restrict_time_travel(
    caller: Caller,
    JsonBody(req): JsonBody<RestrictRequest>,
) -> ApiResult {
    let r = caller.service.restrict_time_travel(req).await?;
    Ok(projected(StatusCode::OK, &r, |r| RestrictedDoc {
        status: r.status.clone(),
        user_id: r.restriction.user_id.clone(),
    }))
}
