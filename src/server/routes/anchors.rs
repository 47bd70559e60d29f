//! The anchor operations of the guides (§2): list, delete, stability, adjust.

use axum::http::{StatusCode, Uri};
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiResult, json, paged, projected};
use crate::model::{AnchorId, AnchorRecord, Conditions};
use crate::server::extract::{BodyOrQuery, Caller, JsonBody, OptionalJsonBody, QueryParams};
use crate::server::problem::Problem;
use crate::server::views::view_enum;
use crate::service::{AdjustAnchorRequest, AnchorListQuery, AnchorRef, AnchorStability};

/// One anchor in `list-anchors` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListedAnchorDoc {
    /// The id to return to.
    #[schema(value_type = String)]
    pub anchor_id: AnchorId,
    /// The time it returns to.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: String,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl From<&AnchorRecord> for ListedAnchorDoc {
    fn from(a: &AnchorRecord) -> Self {
        Self {
            anchor_id: a.id.clone(),
            timestamp: match a.details.accuracy {
                Some(accuracy) => accuracy.print(&a.timestamp),
                None => crate::model::format_instant(&a.timestamp),
            },
            description: a.description.clone(),
        }
    }
}

/// `list-anchors` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnchorsDoc {
    /// The anchors, in creation order.
    pub anchors: Vec<ListedAnchorDoc>,
}

/// `list-anchors` with `view=full`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnchorsFull {
    /// The anchors, in creation order.
    pub anchors: Vec<AnchorRecord>,
    /// The cursor of the next page, if any (null on the last page).
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// `delete-anchor`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnchorDeletedDoc {
    /// `deleted`.
    pub status: String,
}

/// `check-anchor-stability` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnchorStabilityDoc {
    /// `stable`, `at_risk` or `unstable`.
    pub status: crate::service::AnchorVerdict,
    /// The environment recorded for the anchor (`{}` when none).
    #[schema(value_type = Object)]
    pub current_conditions: Conditions,
}

impl From<&AnchorStability> for AnchorStabilityDoc {
    fn from(s: &AnchorStability) -> Self {
        Self {
            status: s.status,
            current_conditions: s.current_conditions.clone(),
        }
    }
}

/// `adjust-anchor` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnchorAdjustedDoc {
    /// `adjusted`.
    pub status: String,
    /// The environment now recorded.
    #[schema(value_type = Object)]
    pub new_conditions: Conditions,
}

impl From<&AnchorRecord> for AnchorAdjustedDoc {
    fn from(a: &AnchorRecord) -> Self {
        Self {
            status: "adjusted".into(),
            new_conditions: a.details.environment.clone().unwrap_or_default(),
        }
    }
}

view_enum! {
    /// Documented projection or full value (OpenAPI only).
    AnchorsView = AnchorsDoc | AnchorsFull;
    /// Documented projection or full value (OpenAPI only).
    AnchorStabilityView = AnchorStabilityDoc | AnchorStability;
}

/// Documented projection or full value (OpenAPI only).
#[allow(dead_code)]
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum AnchorAdjustedView {
    /// The documented properties (default).
    Documented(AnchorAdjustedDoc),
    /// With `view=full`: the anchor.
    Full(AnchorRecord),
}

/// The query of `list-anchors` (or the same fields as a JSON body; no body at all lists the
/// active anchors).
#[derive(Debug, Default, serde::Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnchorListParams {
    /// Also list spent anchors (default false).
    pub include_spent: Option<bool>,
    /// Most anchors to return (1 to 1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    #[schema(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The cursor of the next page.
    pub cursor: Option<String>,
}

/// `anchor_id` as a query parameter or JSON body field.
#[derive(Debug, serde::Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnchorIdParam {
    /// The anchor.
    #[param(value_type = String)]
    #[schema(value_type = String)]
    pub anchor_id: AnchorId,
}

/// List your anchors in creation order: only those you can still return to, unless
/// `include_spent`.
#[utoipa::path(get, path = "/v1/list-anchors", tag = "Guide", operation_id = "listGuideAnchors",
    params(AnchorListParams),
    request_body(content = Option<AnchorListParams>, description = "The same fields as a JSON body, instead of the query; may be left out"),
    responses((status = 200, description = "Your anchors", body = AnchorsView))
)]
pub async fn list_anchors(
    caller: Caller,
    uri: Uri,
    QueryParams(q): QueryParams<AnchorListParams>,
    OptionalJsonBody(b): OptionalJsonBody<AnchorListParams>,
) -> ApiResult {
    let page = caller
        .service
        .find_anchors(AnchorListQuery {
            include_spent: once("include_spent", q.include_spent, b.include_spent)?,
            limit: once("limit", q.limit, b.limit)?,
            cursor: once("cursor", q.cursor, b.cursor)?,
        })
        .await?;
    let full = |anchors, next_cursor| AnchorsFull {
        anchors,
        next_cursor,
    };
    let doc = |anchors: &[_]| AnchorsDoc {
        anchors: anchors.iter().map(ListedAnchorDoc::from).collect(),
    };
    Ok(paged(&uri, &page, full, doc))
}

/// A field given in the query, the body, or both with the same value.
fn once<T: PartialEq>(
    field: &str,
    query: Option<T>,
    body: Option<T>,
) -> Result<Option<T>, Problem> {
    match (query, body) {
        (Some(q), Some(b)) if q != b => Err(Problem::invalid(
            field,
            "given in the body and in the query with different values; give it once",
        )),
        (Some(q), _) => Ok(Some(q)),
        (None, b) => Ok(b),
    }
}

/// Delete one of your anchors, active or spent: it is no longer a destination and is listed
/// nowhere; journeys that used it still name it.
#[utoipa::path(delete, path = "/v1/delete-anchor", tag = "Guide", operation_id = "deleteAnchor",
    params(AnchorIdParam),
    request_body(content = AnchorIdParam, description = "The same field as a JSON body, instead of the query"),
    responses((status = 200, description = "The anchor was deleted", body = AnchorDeletedDoc))
)]
pub async fn delete_anchor(
    caller: Caller,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    BodyOrQuery(q): BodyOrQuery<AnchorIdParam>,
) -> ApiResult {
    // A delete names exactly what it deletes: a query field this operation does not know (a
    // typo of `anchor_id`, say) is refused rather than ignored.
    let fields: Vec<(String, String)> =
        serde_urlencoded::from_str(raw.as_deref().unwrap_or("")).unwrap_or_default();
    if let Some((unknown, _)) = fields.iter().find(|(k, _)| k != "anchor_id" && k != "view") {
        return Err(Problem::invalid(
            unknown,
            "unknown query parameter; delete-anchor takes anchor_id (and view)",
        ));
    }
    caller
        .service
        .delete_anchor(AnchorRef {
            anchor_id: q.anchor_id,
        })
        .await?;
    Ok(json(
        StatusCode::OK,
        &AnchorDeletedDoc {
            status: "deleted".into(),
        },
    ))
}

/// Can you still return to an anchor, and safely? `unstable`: a return would be refused
/// (spent, or its timeline deleted or closed). `at_risk`: its timeline's window is in its last
/// tenth, or the timestamp lies among a standing paradox, or arriving there with what you
/// carry would add one. `stable` otherwise. The conditions are those the traveller recorded:
/// Chronoscope measures nothing physical. Nothing is written.
#[utoipa::path(get, path = "/v1/check-anchor-stability", tag = "Guide",
    operation_id = "checkAnchorStability",
    params(AnchorIdParam),
    request_body(content = AnchorIdParam, description = "The same field as a JSON body, instead of the query"),
    responses((status = 200, description = "The verdict", body = AnchorStabilityView))
)]
pub async fn check_anchor_stability(
    caller: Caller,
    BodyOrQuery(q): BodyOrQuery<AnchorIdParam>,
) -> ApiResult {
    let s = caller
        .service
        .check_anchor_stability(AnchorRef {
            anchor_id: q.anchor_id,
        })
        .await?;
    Ok(projected(StatusCode::OK, &s, AnchorStabilityDoc::from))
}

/// Replace an active anchor's recorded environment (the previous one stays in the log). The
/// timestamp and timeline cannot change: that would be another return point.
#[utoipa::path(post, path = "/v1/adjust-anchor", tag = "Guide", operation_id = "adjustAnchor",
    request_body = AdjustAnchorRequest,
    responses((status = 200, description = "The anchor was adjusted", body = AnchorAdjustedView))
)]
pub async fn adjust_anchor(
    caller: Caller,
    JsonBody(req): JsonBody<AdjustAnchorRequest>,
) -> ApiResult {
    let a = caller.service.adjust_anchor(req).await?;
    Ok(projected(StatusCode::OK, &a, AnchorAdjustedDoc::from))
}
