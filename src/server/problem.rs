//! problem+json (RFC 9457) for every error the server answers, from the catalogue in
//! [`crate::error`].
//!
//! By default a problem carries exactly `type`, `title`, `status`, `detail` and `instance`
//! (strict clients of the documented interface reject anything else); with `view=full` it also
//! carries `error` (the [`ServiceError`] as JSON) and, for paradoxes, `paradoxes`.

use axum::http::header::{CONTENT_TYPE, LOCATION, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::auth::AuthRejection;
use crate::error::{self, ProblemType, ServiceError};

/// Media type of problem bodies.
pub const PROBLEM_JSON: &str = "application/problem+json";

tokio::task_local! {
    static CTX: RequestCtx;
}

/// What every response of one request needs to know: its id and the view asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestCtx {
    /// The `x-request-id` of the request.
    pub request_id: String,
    /// Whether `view=full` was asked for.
    pub full: bool,
}

impl RequestCtx {
    /// The context of the request being answered (a placeholder outside of one).
    pub fn current() -> Self {
        CTX.try_with(Clone::clone).unwrap_or_else(|_| RequestCtx {
            request_id: "unknown".into(),
            full: false,
        })
    }

    /// Runs `fut` with this context as the current one.
    pub async fn scope<F: Future>(self, fut: F) -> F::Output {
        CTX.scope(self, fut).await
    }

    /// The problem `instance` naming this request.
    pub fn instance(&self) -> String {
        format!("/requests/{}", super::encode_component(&self.request_id))
    }
}

/// An error answer: a problem type, an HTTP status and the error it stands for.
#[derive(Debug)]
pub struct Problem {
    kind: &'static ProblemType,
    status: StatusCode,
    error: ServiceError,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Whether an `unavailable` message was written by the server for callers (a timeout);
    /// otherwise it may carry a database URL or driver text and is only logged.
    shown: bool,
}

/// Seconds a 503 asks clients to wait: about how long the store's background probe takes to
/// notice that it is back.
pub const RETRY_UNAVAILABLE_SECS: u64 = 1;

impl Problem {
    /// A problem of `kind`, answered with the catalogue's status.
    pub fn new(kind: &'static ProblemType, error: ServiceError) -> Self {
        Self {
            kind,
            status: StatusCode::from_u16(kind.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            error,
            headers: Vec::new(),
            shown: false,
        }
    }

    /// A 503 whose `message` the server wrote for callers and which may be shown to them.
    pub fn unavailable(message: impl Into<String>) -> Self {
        let mut p = Self::from_error(ServiceError::Unavailable(message.into()));
        p.shown = true;
        p
    }

    /// The problem a [`ServiceError`] is answered with.
    pub fn from_error(error: ServiceError) -> Self {
        let kind = error.problem_type();
        let mut p = Self::new(kind, error);
        match &p.error {
            ServiceError::RateLimited { retry_after_secs }
            | ServiceError::ScansTooOften {
                retry_after_secs, ..
            } => {
                let secs = retry_after_secs.to_string();
                p = p.with_header(RETRY_AFTER, &secs);
            }
            ServiceError::Unavailable(_) => {
                p = p.with_header(RETRY_AFTER, &RETRY_UNAVAILABLE_SECS.to_string());
            }
            _ => {}
        }
        p
    }

    /// A request the server cannot use (malformed JSON, wrong field type, bad query).
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::new(
            &error::INVALID_REQUEST,
            ServiceError::invalid(field, message),
        )
    }

    /// A problem whose type has no [`ServiceError`] of its own (413, 415, 405): the error
    /// carried with `view=full` is the nearest one, an invalid input.
    pub fn of_kind(kind: &'static ProblemType, field: &str, detail: impl Into<String>) -> Self {
        Self::new(kind, ServiceError::invalid(field, detail))
    }

    /// The 413 for a request body larger than the server accepts.
    pub fn body_too_large() -> Self {
        Self::of_kind(
            &crate::error::PAYLOAD_TOO_LARGE,
            "body",
            "the request body is larger than this server accepts",
        )
    }

    /// Answers with `status` instead of the catalogue's (422 on operations without a 400).
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// On the documented operations that have no documented 400, a 400 is answered 422.
    pub fn unprocessable_if(self, yes: bool) -> Self {
        if yes && self.status == StatusCode::BAD_REQUEST {
            self.with_status(StatusCode::UNPROCESSABLE_ENTITY)
        } else {
            self
        }
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: HeaderName, value: &str) -> Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.push((name, v));
        }
        self
    }

    /// The status answered.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The error it stands for.
    pub fn error(&self) -> &ServiceError {
        &self.error
    }

    /// The body, for the request being answered.
    pub fn body(&self, ctx: &RequestCtx) -> Value {
        let detail = match &self.error {
            // Internal messages are for the logs, not for callers; so are the store's reasons
            // for being unavailable (its URL, the driver's words).
            // The integrity failure's words name the store (a path, a database URL): the
            // operator finds them in the log and with `chronoscope verify`.
            ServiceError::Internal(_) | ServiceError::IntegrityFailed(_) => {
                self.kind.explanation.to_string()
            }
            ServiceError::Unavailable(_) if !self.shown => self.kind.explanation.to_string(),
            e => e.to_string(),
        };
        let mut body = Map::new();
        body.insert(
            "type".into(),
            json!(format!("/problems/{}", self.kind.slug)),
        );
        body.insert("title".into(), json!(self.kind.title));
        body.insert("status".into(), json!(self.status.as_u16()));
        body.insert("detail".into(), json!(detail));
        body.insert("instance".into(), json!(ctx.instance()));
        if ctx.full {
            let error = match &self.error {
                ServiceError::Internal(_) => ServiceError::Internal(detail.clone()),
                ServiceError::IntegrityFailed(_) => ServiceError::IntegrityFailed(detail.clone()),
                ServiceError::Unavailable(_) => ServiceError::Unavailable(detail.clone()),
                e => e.clone(),
            };
            body.insert(
                "error".into(),
                serde_json::to_value(&error).unwrap_or(Value::Null),
            );
            if let ServiceError::ParadoxDetected { paradoxes, .. } = &self.error {
                body.insert(
                    "paradoxes".into(),
                    serde_json::to_value(paradoxes).unwrap_or(Value::Null),
                );
            }
        }
        Value::Object(body)
    }
}

impl From<ServiceError> for Problem {
    fn from(e: ServiceError) -> Self {
        Problem::from_error(e)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        match &self.error {
            ServiceError::Internal(message) => tracing::error!(%message, "internal error"),
            ServiceError::Unavailable(message) => tracing::warn!(%message, "answered 503"),
            _ => {}
        }
        // The documented bodiless 409: only a Location naming what exists.
        if let ServiceError::AlreadyExists { location } = &self.error {
            let mut resp = StatusCode::CONFLICT.into_response();
            if let Ok(v) = HeaderValue::from_str(location) {
                resp.headers_mut().insert(LOCATION, v);
            }
            return resp;
        }
        let ctx = RequestCtx::current();
        let body = self.body(&ctx).to_string();
        let mut resp = (self.status, body).into_response();
        let headers = resp.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        for (name, value) in self.headers {
            headers.insert(name, value);
        }
        resp
    }
}

impl From<AuthRejection> for Problem {
    fn from(r: AuthRejection) -> Self {
        Problem::new(&error::UNAUTHORIZED, ServiceError::Unauthorized(r.detail()))
            .with_header(WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"")
    }
}

impl IntoResponse for AuthRejection {
    fn into_response(self) -> Response {
        Problem::from(self).into_response()
    }
}
