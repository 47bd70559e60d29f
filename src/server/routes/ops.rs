//! The open endpoints (no token): health, readiness, the OpenAPI document, problem pages; and
//! the answers for unknown paths and wrong methods.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use utoipa_axum::routes;

use super::table::{Api, Does};
use super::{ApiResult, json};
use crate::error::{self, ServiceError};
use crate::server::AppState;
use crate::server::problem::Problem;
use crate::server::views::Health;

/// The open routes.
pub(in crate::server) fn open_routes(api: Api) -> Api {
    api.route(Does::open(), routes!(healthz))
        .route(Does::open(), routes!(readyz))
        .route(Does::open(), routes!(openapi_json))
        .route(Does::open(), routes!(problem_page))
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "Operations", operation_id = "healthz", security(()),
    responses((status = 200, description = "The process is up", body = Health))
)]
pub async fn healthz() -> Response {
    json(
        StatusCode::OK,
        &Health {
            status: "ok".into(),
        },
    )
}

/// The longest the readiness probe waits for the service.
const READINESS_TIMEOUT: Duration = Duration::from_secs(5);

/// Readiness: writes can be made as far as is known (the store is not known to be down, the
/// disk is not full) and the service answers a `whoami` for a probe traveller. Why not is
/// logged, never answered: the caller is not authenticated.
#[utoipa::path(get, path = "/readyz", tag = "Operations", operation_id = "readyz", security(()),
    responses(
        (status = 200, description = "The service answers", body = Health),
        (status = 500, description = "The store failed its integrity check (`integrity-failed`): waiting does not help", body = crate::server::views::Problem,
            content_type = "application/problem+json"),
        (status = 503, description = "The service does not answer", body = crate::server::views::Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> ApiResult {
    let traveller = super::super::READINESS_TRAVELLER
        .parse::<crate::model::Traveller>()
        .map_err(|e| Problem::from_error(e.into()))?;
    if let Err(e) = state.sessions.writable() {
        tracing::warn!(%e, "not ready: writes cannot be made");
        return Err(Problem::unavailable(
            "the service is not ready: writes cannot be made now",
        ));
    }
    let service = state
        .sessions
        .session(traveller, None, &crate::auth::Scopes::default());
    let wait = READINESS_TIMEOUT.min(state.config.request_timeout);
    match tokio::time::timeout(wait, service.whoami()).await {
        Ok(Ok(_)) => Ok(json(
            StatusCode::OK,
            &Health {
                status: "ready".into(),
            },
        )),
        // Not a matter of time: waiting does not make the log verify again.
        Ok(Err(e @ crate::error::ServiceError::IntegrityFailed(_))) => {
            tracing::error!(%e, "not ready: the store failed its integrity check");
            Err(Problem::from_error(e))
        }
        Ok(Err(e)) => {
            tracing::warn!(%e, "not ready: the service does not answer");
            Err(Problem::unavailable(
                "the service is not ready: it cannot answer now",
            ))
        }
        Err(_) => Err(Problem::unavailable(format!(
            "the service did not answer within {} s",
            wait.as_secs_f64()
        ))),
    }
}

/// This document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "Operations", operation_id = "openapi", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 description of this server",
        content_type = "application/json", body = Object))
)]
pub async fn openapi_json(State(state): State<AppState>) -> Response {
    let mut resp = state.openapi.as_str().to_owned().into_response();
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// What a problem type means, for a person.
#[utoipa::path(get, path = "/problems/{slug}", tag = "Operations", operation_id = "problemType",
    security(()),
    params(("slug" = String, Path, description = "The last segment of a problem's type")),
    responses(
        (status = 200, description = "A short explanation", content_type = "text/plain", body = String),
        (status = 404, description = "No such problem type", body = crate::server::views::Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn problem_page(Path(slug): Path<String>) -> ApiResult {
    let p = error::problem_type(&slug)
        .ok_or_else(|| Problem::from_error(ServiceError::not_found("problem type", &slug)))?;
    let text = format!(
        "{} ({})\n\n{}\n\nProblems of this type are answered with HTTP status {}. \
         Ask with ?view=full for the error's machine-readable members.\n",
        p.title, p.slug, p.explanation, p.status
    );
    let mut resp = text.into_response();
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Ok(resp)
}

/// Unknown paths.
pub(in crate::server) async fn not_found(uri: Uri) -> Response {
    Problem::from_error(ServiceError::not_found("path", uri.path())).into_response()
}

/// A known path asked with a method it does not answer.
pub(in crate::server) async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    Problem::of_kind(
        &error::METHOD_NOT_ALLOWED,
        "method",
        format!("{} does not answer {method}", uri.path()),
    )
    .into_response()
}
