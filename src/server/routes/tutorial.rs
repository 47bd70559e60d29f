//! The tutorial's flat `POST /api/v1/manipulate-event`.

use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::{ApiResult, projected};
use crate::model::{EventId, Instant, TimelineId};
use crate::server::extract::{Caller, JsonBody};
use crate::server::views::{ManipulatedDoc, ManipulatedView};
use crate::service::{ManipulateRequest, NewOutcome, OutcomeChange};

/// The tutorial's manipulation: one action, optionally at a new time.
#[derive(Debug, Deserialize, ToSchema)]
pub struct FlatManipulation {
    /// The event, or any event of its lineage (the current head is changed).
    #[schema(value_type = String)]
    pub event_id: EventId,
    /// What is done: it becomes the new description, and the recorded action.
    pub action: String,
    /// The event's new time.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub time: Option<Instant>,
    /// The timeline (default `primary`, as `/v1/manipulate-event`).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub timeline_id: Option<TimelineId>,
    /// Check for paradoxes first and refuse an unstable change (default false).
    #[serde(default)]
    pub safety_check: bool,
}

/// Manipulate an event, the tutorial's flat form of `/v1/manipulate-event`: `action` becomes
/// the new description and the recorded action, `time` the event's new time.
#[utoipa::path(post, path = "/api/v1/manipulate-event", tag = "Guide",
    operation_id = "tutorialManipulateEvent",
    request_body = FlatManipulation,
    responses((status = 200, description = "The event was manipulated", body = ManipulatedView))
)]
pub async fn manipulate_event(
    caller: Caller,
    JsonBody(req): JsonBody<FlatManipulation>,
) -> ApiResult {
    let m = caller
        .service
        .manipulate_event(ManipulateRequest {
            timeline_id: req.timeline_id,
            event_id: req.event_id,
            new_outcome: NewOutcome {
                description: Some(req.action.clone()),
                changes: vec![OutcomeChange {
                    action: Some(req.action),
                    time: req.time,
                }],
            },
            safety_check: req.safety_check,
        })
        .await?;
    Ok(projected(StatusCode::OK, &m, ManipulatedDoc::from))
}
