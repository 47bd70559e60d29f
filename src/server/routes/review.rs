//! Manual review of merges, the timeline diff, and isolations (guide §3 and §4).

use axum::extract::Path;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiResult, answer_full, no_content, projected};
use crate::model::{EventId, IsolationId, MergeId};
use crate::server::extract::{BodyOrQuery, Caller, JsonBody, path_id};
use crate::server::views::view_enum;
use crate::service::{
    ConflictReview, DiffQuery, IsolateRequest, Isolation, ResolveRequest, ResolveResult,
    ReviewQuery, TimelineDiff,
};

/// One conflict as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConflictDoc {
    /// The lineage.
    pub event_id: EventId,
    /// The source's outcome ("Event A").
    pub source_outcome: String,
    /// The destination's outcome ("Event B").
    pub destination_outcome: String,
}

/// `review-conflicts` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConflictsDoc {
    /// The open conflicts.
    pub conflicts: Vec<ConflictDoc>,
    /// "Keep Event A", "Keep Event B", "Custom Merge".
    pub resolution_options: Vec<String>,
}

impl From<&ConflictReview> for ConflictsDoc {
    fn from(r: &ConflictReview) -> Self {
        Self {
            conflicts: r
                .conflicts
                .iter()
                .map(|c| ConflictDoc {
                    event_id: c.event_id.clone(),
                    source_outcome: c.source_outcome.clone(),
                    destination_outcome: c.destination_outcome.clone(),
                })
                .collect(),
            resolution_options: r.resolution_options.clone(),
        }
    }
}

/// `resolve-conflict` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResolvedDoc {
    /// `resolved`.
    pub status: String,
    /// The `event_id` as given.
    pub resolved_event_id: EventId,
}

impl From<&ResolveResult> for ResolvedDoc {
    fn from(r: &ResolveResult) -> Self {
        Self {
            status: r.status.clone(),
            resolved_event_id: r.resolved_event_id.clone(),
        }
    }
}

/// `isolate-event` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct IsolatedDoc {
    /// `isolated`.
    pub status: String,
    /// The isolation (lift it with `DELETE /v1/isolations/{id}`).
    pub isolation_id: IsolationId,
    /// As given, else a generated sentence.
    pub description: String,
}

impl From<&Isolation> for IsolatedDoc {
    fn from(i: &Isolation) -> Self {
        Self {
            status: i.status.clone(),
            isolation_id: i.isolation_id.clone(),
            description: i.description.clone(),
        }
    }
}

view_enum! {
    /// Documented projection or full value (OpenAPI only).
    ConflictsView = ConflictsDoc | ConflictReview;
    /// Documented projection or full value (OpenAPI only).
    ResolvedView = ResolvedDoc | ResolveResult;
}

/// Documented projection or full value (OpenAPI only).
#[allow(dead_code)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum IsolatedView {
    /// The documented properties (default).
    Documented(IsolatedDoc),
    /// With `view=full`: the isolation.
    Full(Isolation),
}

/// The query of `review-conflicts` (or the same fields as a JSON body).
#[derive(Debug, serde::Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReviewParams {
    /// The destination of the pending merges.
    #[param(value_type = String)]
    #[schema(value_type = String)]
    pub merged_timeline_id: crate::model::TimelineId,
    /// Only this pending merge.
    #[param(value_type = Option<String>)]
    #[schema(value_type = Option<String>)]
    pub merge_id: Option<MergeId>,
}

/// The query of `diff-timelines` (or the same fields as a JSON body).
#[derive(Debug, serde::Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffParams {
    /// The source side (A).
    #[param(value_type = String)]
    #[schema(value_type = String)]
    pub source_timeline_id: crate::model::TimelineId,
    /// The destination side (B).
    #[param(value_type = String)]
    #[schema(value_type = String)]
    pub destination_timeline_id: crate::model::TimelineId,
}

/// The conflicts of the merges waiting for review into a timeline, recomputed against it as
/// it stands: a lineage that became a conflict meanwhile is listed, one that stopped
/// conflicting is not. "Event A" is the source's outcome, "Event B" the destination's (" at
/// <time>" is added when their times differ). No pending merge gives `conflicts: []`. Nothing
/// is written.
#[utoipa::path(get, path = "/v1/review-conflicts", tag = "Guide", operation_id = "reviewConflicts",
    params(ReviewParams),
    request_body(content = ReviewParams, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "The open conflicts", body = ConflictsView))
)]
pub async fn review_conflicts(
    caller: Caller,
    BodyOrQuery(q): BodyOrQuery<ReviewParams>,
) -> ApiResult {
    let r = caller
        .service
        .review_conflicts(ReviewQuery {
            merged_timeline_id: q.merged_timeline_id,
            merge_id: q.merge_id,
        })
        .await?;
    Ok(projected(StatusCode::OK, &r, ConflictsDoc::from))
}

/// Resolve one conflict of a merge waiting for review: "Keep Event A" (the source's outcome),
/// "Keep Event B" (the destination's) or "Custom Merge" with `new_outcome` (any case;
/// `keep_source`, `keep_destination`, `custom` too). Choosing again replaces the choice. The
/// last resolution completes the merge: its writes, the paradox check and the record in one
/// write. If the check refuses it (`paradox-detected`), the resolution is not recorded and the
/// conflict stays open. When the merge has no open conflict left (the destination changed so
/// that none remains), naming a lineage it weighed completes it. 409 `conflict` when several
/// pending merges conflict on the lineage (give `merge_id`); `event-locked` when a fixed point
/// would change.
#[utoipa::path(post, path = "/v1/resolve-conflict", tag = "Guide", operation_id = "resolveConflict",
    request_body = ResolveRequest,
    responses((status = 200, description = "The conflict was resolved", body = ResolvedView))
)]
pub async fn resolve_conflict(
    caller: Caller,
    JsonBody(req): JsonBody<ResolveRequest>,
) -> ApiResult {
    let r = caller.service.resolve_conflict(req).await?;
    Ok(projected(StatusCode::OK, &r, ResolvedDoc::from))
}

/// Abort a merge waiting for review: its destination is untouched. 409 `conflict` when the
/// merge is not pending (merged or aborted already).
#[utoipa::path(delete, path = "/v1/merges/{merge_id}", tag = "Extensions", operation_id = "abortMerge",
    params(("merge_id" = String, Path, description = "The pending merge")),
    responses((status = 204, description = "The merge was aborted"))
)]
pub async fn abort_merge(caller: Caller, Path(merge_id): Path<String>) -> ApiResult {
    let id: MergeId = path_id("merge", &merge_id)?;
    no_content(caller.service.abort_merge(&id)).await
}

/// What merging the source into the destination would weigh, lineage by lineage, against
/// their branch point: `incoming` (changed in the source only), `added` (new in the source),
/// `kept` (changed in the destination only), `convergent` (both, alike) and `conflict` (both,
/// differently). The timelines must be on one line of descent (409 `conflict` otherwise).
/// Nothing is written.
#[utoipa::path(get, path = "/v1/diff-timelines", tag = "Extensions", operation_id = "diffTimelines",
    params(DiffParams),
    request_body(content = DiffParams, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "The changed lineages", body = TimelineDiff))
)]
pub async fn diff_timelines(caller: Caller, BodyOrQuery(q): BodyOrQuery<DiffParams>) -> ApiResult {
    let query = DiffQuery {
        source_timeline_id: q.source_timeline_id,
        destination_timeline_id: q.destination_timeline_id,
    };
    answer_full(caller.service.diff_timelines(query)).await
}

/// Isolate an event (`isolation_type` `event`) or the causal loop through it (`closed_loop`,
/// the default: every event on a causal cycle through it). An overlay, no event is rewritten:
/// causal edges between a member and the rest are severed (no causal-order or grandfather
/// paradox across them) and a loop within the isolation is contained (not reported, not an
/// anomaly). `event-locked` for a superseded or reverted event or a fixed-point member; 409
/// `conflict` when a member is isolated already. `timeline_id` defaults to where you are.
#[utoipa::path(post, path = "/v1/isolate-event", tag = "Guide", operation_id = "isolateEvent",
    request_body = IsolateRequest,
    responses((status = 200, description = "The event was isolated", body = IsolatedView))
)]
pub async fn isolate_event(caller: Caller, JsonBody(req): JsonBody<IsolateRequest>) -> ApiResult {
    let r = caller.service.isolate_event(req).await?;
    Ok(projected(StatusCode::OK, &r, IsolatedDoc::from))
}

/// Lift an isolation: the checks apply to its members again, and what it severed or contained
/// is reported again.
#[utoipa::path(delete, path = "/v1/isolations/{isolation_id}", tag = "Extensions", operation_id = "liftIsolation",
    params(("isolation_id" = String, Path, description = "The isolation")),
    responses((status = 204, description = "The isolation was lifted"))
)]
pub async fn lift_isolation(caller: Caller, Path(isolation_id): Path<String>) -> ApiResult {
    let id: IsolationId = path_id("isolation", &isolation_id)?;
    no_content(caller.service.lift_isolation(&id)).await
}
