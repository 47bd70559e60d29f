//! `simulate-wormhole`: a POST that only reads (it needs the `read` scope).

use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiResult, projected};
use crate::server::extract::{Caller, JsonBody};
use crate::server::views::view_enum;
use crate::service::{WormholeRequest, WormholeSimulation, WormholeStability};

/// `simulate-wormhole` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct WormholeDoc {
    /// `simulated`.
    pub status: String,
    /// `stable`, `unstable` or `not_checked`.
    pub stability: WormholeStability,
    /// The time between the two points in calendar words ("100 years").
    pub time_difference: String,
}

impl From<&WormholeSimulation> for WormholeDoc {
    fn from(w: &WormholeSimulation) -> Self {
        Self {
            status: "simulated".into(),
            stability: w.stability,
            time_difference: w.time_difference.clone(),
        }
    }
}

view_enum! {
    /// Documented projection or full value (OpenAPI only).
    WormholeView = WormholeDoc | WormholeSimulation;
}

/// A journey's dry run: a traveller leaving the timeline (default: where you are) at
/// `entry_point` for `exit_point` with what you carry. `stability` is the paradox checker's
/// verdict on bringing each carried item to `exit_point`; a closed timeline is `unstable`
/// (the journey would be refused). Nothing is written, and the answer is never remembered
/// under an `Idempotency-Key`; it needs only the `read` scope.
#[utoipa::path(post, path = "/v1/simulate-wormhole", tag = "Guide", operation_id = "simulateWormhole",
    request_body = WormholeRequest,
    responses((status = 200, description = "The simulation", body = WormholeView))
)]
pub async fn simulate_wormhole(
    caller: Caller,
    JsonBody(req): JsonBody<WormholeRequest>,
) -> ApiResult {
    let w = caller.service.simulate_wormhole(req).await?;
    Ok(projected(StatusCode::OK, &w, WormholeDoc::from))
}
