//! The two guide operations with nothing in this service to act on: `shard-data` and
//! `entangle-particles` answer 501 `unsupported-operation` after authentication, saying why and
//! what to use instead. The body must be JSON and is not otherwise read.

use super::ApiResult;
use crate::error::ServiceError;
use crate::server::extract::{Caller, JsonBody};

/// Why `shard-data` is not offered, and what to use.
pub const SHARD_DATA: &str = "shard-data is not supported: one gap-free log per deployment is what gives exactly-once jobs and linearizable reads, and per-timeline physical shards would break both, so any shard ids would be invented. Time-range queries are already indexed (POST /v1/create-index reports the indexes), and capacity is added with replicas.";

/// Why `entangle-particles` is not offered, and what to use.
pub const ENTANGLE_PARTICLES: &str = "entangle-particles is not supported: timelines here hold events and their causes, not particles, so an entanglement strength would be invented. Whether a change at one time reaches another is causal reachability: use check-paradox (GET /v1/check-paradox, POST /v1/paradox-checks) and an event's causes and effects.";

/// Split a timeline's data across shards: not supported (501), since it would break the
/// single log's guarantees. Use `create-index` for time-range queries, and replicas for
/// capacity.
#[utoipa::path(post, path = "/v1/shard-data", tag = "Guide", operation_id = "shardData",
    request_body(content = Object, description = "Any JSON object; it is not read"),
    responses((status = 501, description = "Not supported: the detail says why and what to use instead",
        body = crate::server::views::Problem, content_type = "application/problem+json"))
)]
pub async fn shard_data(
    _caller: Caller,
    JsonBody(_body): JsonBody<serde_json::Value>,
) -> ApiResult {
    Err(ServiceError::Unsupported(SHARD_DATA.into()).into())
}

/// Entangle particles across times: not supported (501), since the model has events and
/// causes, no particles. Use `check-paradox` and an event's causes and effects.
#[utoipa::path(post, path = "/v1/entangle-particles", tag = "Guide",
    operation_id = "entangleParticles",
    request_body(content = Object, description = "Any JSON object; it is not read"),
    responses((status = 501, description = "Not supported: the detail says why and what to use instead",
        body = crate::server::views::Problem, content_type = "application/problem+json"))
)]
pub async fn entangle_particles(
    _caller: Caller,
    JsonBody(_body): JsonBody<serde_json::Value>,
) -> ApiResult {
    Err(ServiceError::Unsupported(ENTANGLE_PARTICLES.into()).into())
}
