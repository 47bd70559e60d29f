//! The HTTP service (axum) wrapping any [`crate::service::TimelineService`].
//!
//! The wire contract is `HTTP.md` / DESIGN §4: documented, guide and extension operations
//! under `/v1`, the four `/api/v1/...` guide operations at the root, bearer JWT on everything
//! but `/healthz`, `/readyz`, `/v1/openapi.json` and `/problems/{slug}`, problem+json for every
//! error, `view=full` for the richer shapes. The server depends only on [`Sessions`] and the
//! service trait.
//!
//! Serving (what `chronoscope serve` does):
//!
//! ```no_run
//! # async fn serve(engine: std::sync::Arc<chronoscope::engine::Engine>) -> Result<(), Box<dyn std::error::Error>> {
//! use chronoscope::{auth::Secret, server};
//! let secret = Secret::load(None, std::path::Path::new("/var/lib/chronoscope"))?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! server::run(listener, server::ServerConfig::new(secret), engine, server::shutdown_signal()).await?;
//! # Ok(()) }
//! ```
//!
//! [`run_tls`] serves the same over https (see [`crate::tls::server_config`]). Every request is
//! counted and timed by route for [`crate::metrics`].

mod extract;
mod idempotency;
mod limits;
mod openapi;
mod problem;
mod routes;
mod views;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef, Request};
use axum::http::{HeaderName, HeaderValue, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower::ServiceBuilder;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

pub use extract::{BodyOrQuery, Caller, JsonBody, QueryParams};
pub use limits::{RateLimit, RateLimiter};
pub use openapi::openapi;
pub use problem::{PROBLEM_JSON, Problem, RequestCtx};
pub use views::View;

use crate::auth::{Secret, Verifier};
use crate::engine::Engine;
use crate::engine::idempotency::Idempotency;
use crate::model::Traveller;
use crate::service::TimelineService;

/// Hands out the service bound to one traveller; the only thing the server needs.
pub trait Sessions: Send + Sync + 'static {
    /// The service acting as `traveller`; with `idempotency`, for one keyed request whose
    /// write must be done once and whose repeats get the first answer.
    fn session(
        &self,
        traveller: Traveller,
        idempotency: Option<Idempotency>,
    ) -> Arc<dyn TimelineService>;
}

impl Sessions for Arc<Engine> {
    fn session(
        &self,
        traveller: Traveller,
        idempotency: Option<Idempotency>,
    ) -> Arc<dyn TimelineService> {
        Arc::new(match idempotency {
            Some(request) => Engine::keyed_session(self, traveller, request),
            None => Engine::session(self, traveller),
        })
    }
}

/// Settings of the HTTP service.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The secret bearer tokens are signed with.
    pub secret: Secret,
    /// Largest request body accepted (413 beyond).
    pub body_limit: usize,
    /// Per-traveller rate limit (429 beyond); [`RateLimit::OFF`] turns it off.
    pub rate_limit: RateLimit,
    /// Longest a request may take (503 beyond).
    pub request_timeout: Duration,
}

impl ServerConfig {
    /// Default body limit: 1 MiB.
    pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;
    /// Default request timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// The defaults, signing with `secret`.
    pub fn new(secret: Secret) -> Self {
        Self {
            secret,
            body_limit: Self::DEFAULT_BODY_LIMIT,
            rate_limit: RateLimit::default(),
            request_timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    sessions: Arc<dyn Sessions>,
    verifier: Arc<Verifier>,
    limiter: Arc<RateLimiter>,
    openapi: Arc<String>,
    config: Arc<ServerConfig>,
}

impl FromRef<AppState> for Arc<Verifier> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.verifier)
    }
}

/// The traveller `/readyz` asks `whoami` as.
const READINESS_TRAVELLER: &str = "readiness-probe";

/// Request ids for requests that come without one: a ULID, sortable by arrival.
#[derive(Clone, Copy, Debug, Default)]
struct UlidRequestId;

impl MakeRequestId for UlidRequestId {
    fn make_request_id<B>(&mut self, _req: &axum::http::Request<B>) -> Option<RequestId> {
        HeaderValue::from_str(&ulid::Ulid::new().to_string().to_lowercase())
            .ok()
            .map(RequestId::new)
    }
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Makes the request id and the view known to every response built for this request.
async fn request_context(req: Request, next: Next) -> Response {
    let request_id = req
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown")
        .to_owned();
    let view = View::of(req.uri());
    let ctx = RequestCtx {
        request_id,
        full: matches!(view, Ok(View::Full)),
    };
    ctx.scope(async move {
        match view {
            Ok(_) => next.run(req).await,
            Err(bad) => Problem::invalid(
                "view",
                format!("'{bad}' is not a view; use view=full or view=documented"),
            )
            .into_response(),
        }
    })
    .await
}

/// The whole service: every route, the open endpoints and the layers (request id, tracing,
/// timeout, body limit).
pub fn build_router(config: ServerConfig, sessions: impl Sessions) -> Router {
    let (api, doc) = routes::api_router().split_for_parts();
    let doc = openapi::document(doc);
    let state = AppState {
        sessions: Arc::new(sessions),
        verifier: Arc::new(Verifier::new(config.secret.clone())),
        limiter: Arc::new(RateLimiter::new(config.rate_limit)),
        openapi: Arc::new(serde_json::to_string(&doc).unwrap_or_else(|_| "{}".into())),
        config: Arc::new(config.clone()),
    };
    let layers = ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(
            Arc::new(crate::metrics::HttpMetrics::default()),
            crate::metrics::track,
        ))
        .layer(SetRequestIdLayer::new(REQUEST_ID, UlidRequestId))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &axum::http::Request<_>| {
                let id = req
                    .headers()
                    .get(&REQUEST_ID)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
            }),
        )
        .layer(middleware::from_fn(request_context))
        .layer(middleware::from_fn_with_state(
            config.body_limit,
            idempotency::keyed,
        ))
        .layer(middleware::from_fn_with_state(
            config.request_timeout,
            limits::timeout,
        ))
        .layer(DefaultBodyLimit::max(config.body_limit));
    api.fallback(routes::ops::not_found)
        .method_not_allowed_fallback(routes::ops::method_not_allowed)
        .with_state(state)
        .layer(layers)
}

/// Serves until `shutdown` resolves, then lets in-flight requests finish.
pub async fn run(
    listener: tokio::net::TcpListener,
    config: ServerConfig,
    sessions: impl Sessions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = build_router(config, sessions);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "chronoscope serving");
    }
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Serves over https with `tls` (HTTP/2 or HTTP/1.1, as the client's ALPN asks) until
/// `shutdown` resolves, then lets in-flight requests finish.
pub async fn run_tls(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    config: ServerConfig,
    sessions: impl Sessions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = build_router(config, sessions);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "chronoscope serving over https");
    }
    let handle = axum_server::Handle::new();
    let stop = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        // No deadline, like the plain server: in-flight requests end by their own timeout.
        stop.graceful_shutdown(None);
    });
    let tls = axum_server::tls_rustls::RustlsConfig::from_config(tls);
    axum_server::from_tcp_rustls(listener.into_std()?, tls)?
        .handle(handle)
        .serve(router.into_make_service())
        .await
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

/// Percent-encodes everything but RFC 3986 unreserved characters (query values, ids in URIs).
pub(crate) fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URI of the next page: the request's own, with `cursor` replaced.
pub(crate) fn next_page_uri(uri: &Uri, cursor: &str) -> String {
    let mut pairs: Vec<String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| p.split('=').next() != Some("cursor"))
        .map(str::to_owned)
        .collect();
    pairs.push(format!("cursor={}", encode_component(cursor)));
    format!("{}?{}", uri.path(), pairs.join("&"))
}
