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

mod conn;
mod extract;
mod forward;
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
use axum::extract::{DefaultBodyLimit, FromRef, Request, State};
use axum::http::{HeaderName, HeaderValue, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower::ServiceBuilder;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

pub use extract::{BodyOrQuery, Caller, JsonBody, QueryParams};
pub use limits::{RateLimit, RateLimiter, StreamSlot, StreamSlots};
pub use openapi::openapi;
pub use problem::{PROBLEM_JSON, Problem, RequestCtx};
pub use views::View;

use crate::auth::{IdentityKeys, Secret, Verifier};
use crate::engine::Engine;
use crate::engine::idempotency::Idempotency;
use crate::model::Traveller;
use crate::service::prelude::*;
use routes::table::Operations;

/// Hands out the service bound to one traveller; the only thing the server needs.
pub trait Sessions: Send + Sync + 'static {
    /// The service acting as `traveller`; with `idempotency`, for one keyed request whose
    /// write must be done once and whose repeats get the first answer; with `scopes` (the
    /// token's): `admin` allows changing what other travellers share, and without `write`
    /// nothing the caller does appends to the log.
    fn session(
        &self,
        traveller: Traveller,
        idempotency: Option<Idempotency>,
        scopes: &crate::auth::Scopes,
    ) -> Arc<dyn TimelineService>;

    /// Whether writes can be made now, as far as is known without making one (a store known
    /// to be down, a full disk); `Err` says why, for the logs only. Never waits.
    fn writable(&self) -> Result<(), crate::error::ServiceError> {
        Ok(())
    }

    /// Counts a request refused before it reached a session (no valid token: `user` is
    /// `unknown`; a scope the token lacks) in the access log, against `timeline` when the
    /// request named one, else service-wide. Never waits.
    fn note_refusal(
        &self,
        _timeline: Option<crate::model::TimelineId>,
        _user: &str,
        _operation: &str,
    ) {
    }

    /// Where a write received here should be sent instead: the replica holding the writer's
    /// lease, when that is another one (see `forward`). Waits at most for one query.
    fn forward_writes_to(&self) -> futures::future::BoxFuture<'_, Option<Arc<str>>> {
        Box::pin(async { None })
    }

    /// A write forwarded to `url` found nobody there, or nobody who proved to be a replica.
    fn forward_failed(&self, _url: &str) {}

    /// A key for what the replicas of this deployment prove to each other over `label`
    /// (derived from the log key); `None` when this service has no replicas to talk to.
    fn replica_key(&self, _label: &str) -> Option<[u8; 32]> {
        None
    }

    /// Where this replica takes forwarded writes, when it said (see `forward`).
    fn advertised(&self) -> Option<Arc<str>> {
        None
    }

    /// Has `courier` take this replica's access-log counts to the writer's lease holder.
    fn set_access_courier(&self, _courier: Arc<dyn crate::engine::access_log::Courier>) {}

    /// Counts what another replica's courier handed over, to be appended here.
    fn receive_access_counts(&self, _handed: crate::engine::access_log::Handover) {}
}

impl Sessions for Arc<Engine> {
    fn session(
        &self,
        traveller: Traveller,
        idempotency: Option<Idempotency>,
        scopes: &crate::auth::Scopes,
    ) -> Arc<dyn TimelineService> {
        use crate::auth::Scope;
        Arc::new(
            match idempotency {
                Some(request) => Engine::keyed_session(self, traveller, request),
                None => Engine::session(self, traveller),
            }
            .with_admin(scopes.allows(Scope::Admin))
            .with_write(scopes.allows(Scope::Write)),
        )
    }

    fn writable(&self) -> Result<(), crate::error::ServiceError> {
        self.store().writable().map_err(Into::into)
    }

    fn note_refusal(
        &self,
        timeline: Option<crate::model::TimelineId>,
        user: &str,
        operation: &str,
    ) {
        Engine::note_refusal(self, timeline, user, operation);
    }

    fn forward_writes_to(&self) -> futures::future::BoxFuture<'_, Option<Arc<str>>> {
        Box::pin(Engine::forward_writes_to(self))
    }

    fn forward_failed(&self, url: &str) {
        Engine::forward_failed(self, url);
    }

    fn replica_key(&self, label: &str) -> Option<[u8; 32]> {
        Some(Engine::replica_key(self, label))
    }

    fn advertised(&self) -> Option<Arc<str>> {
        Engine::advertised_writer(self)
    }

    fn set_access_courier(&self, courier: Arc<dyn crate::engine::access_log::Courier>) {
        Engine::set_access_courier(self, courier);
    }

    fn receive_access_counts(&self, handed: crate::engine::access_log::Handover) {
        Engine::receive_access_counts(self, handed);
    }
}

/// Settings of the HTTP service.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The secret bearer tokens are signed with.
    pub secret: Secret,
    /// An identity provider's keys: its RS256/ES256 tokens are accepted beside the secret's.
    pub identity: Option<Arc<IdentityKeys>>,
    /// Largest request body accepted (413 beyond).
    pub body_limit: usize,
    /// Per-traveller rate limit (429 beyond); [`RateLimit::OFF`] turns it off.
    pub rate_limit: RateLimit,
    /// Per-client-address rate limit, applied before authentication (429 beyond);
    /// [`RateLimit::OFF`] turns it off.
    pub address_rate_limit: RateLimit,
    /// Longest a request may take (503 beyond); an event stream's answer starts within it
    /// and then lasts as long as its client reads.
    pub request_timeout: Duration,
    /// How long an event stream stays silent before a heartbeat comment.
    pub heartbeat: Duration,
    /// Longest a client may take to send a request's head (over https, also the TLS
    /// handshake), counted from when the server starts waiting for it: on a new connection,
    /// or after the previous answer on a kept-alive HTTP/1.1 one. The connection is closed
    /// beyond it.
    pub header_read_timeout: Duration,
    /// A connection on which no byte has moved either way for this long is closed (keep it
    /// above `request_timeout` and `heartbeat`).
    pub idle_timeout: Duration,
    /// Longest a graceful shutdown waits for in-flight requests before closing their
    /// connections.
    pub shutdown_timeout: Duration,
    /// Monitor streams one traveller may have open at once (429 beyond).
    pub max_streams_per_traveller: usize,
    /// Monitor streams the server keeps open at once, everyone's (429 beyond).
    pub max_streams: usize,
    /// CA certificates (PEM) trusted, besides the platform's roots, for the other replicas'
    /// https addresses, to which writes are forwarded (see `forward`).
    pub replica_ca: Option<Vec<u8>>,
}

impl ServerConfig {
    /// Default body limit: 1 MiB.
    pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;
    /// Default request timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default heartbeat of event streams (proxies close connections quiet for longer).
    pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(15);
    /// Default header-read timeout.
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default idle timeout.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
    /// Default deadline of a graceful shutdown.
    pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default cap of monitor streams per traveller: a few dashboards and `monitor --follow`s.
    pub const DEFAULT_MAX_STREAMS_PER_TRAVELLER: usize = 20;
    /// Default cap of monitor streams in all. Streams of one timeline share one scan per
    /// change, so their cost is the connections and the events written to them.
    pub const DEFAULT_MAX_STREAMS: usize = 2000;

    /// The defaults, signing with `secret`.
    pub fn new(secret: Secret) -> Self {
        Self {
            secret,
            identity: None,
            body_limit: Self::DEFAULT_BODY_LIMIT,
            rate_limit: RateLimit::default(),
            address_rate_limit: RateLimit::PER_ADDRESS,
            request_timeout: Self::DEFAULT_TIMEOUT,
            heartbeat: Self::DEFAULT_HEARTBEAT,
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            shutdown_timeout: Self::DEFAULT_SHUTDOWN_TIMEOUT,
            max_streams_per_traveller: Self::DEFAULT_MAX_STREAMS_PER_TRAVELLER,
            max_streams: Self::DEFAULT_MAX_STREAMS,
            replica_ca: None,
        }
    }
}

/// What every handler can reach. Every route's handler holds one and is cloned for every
/// request (as are the layers around it), so a clone is one reference count.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The state behind an [`AppState`].
pub struct Shared {
    sessions: Arc<dyn Sessions>,
    verifier: Arc<Verifier>,
    limiter: Arc<RateLimiter>,
    openapi: Arc<String>,
    config: Arc<ServerConfig>,
    stopping: Stopping,
    streams: Arc<StreamSlots>,
}

/// Tells long-lived answers (event streams) that the server is shutting down, so that a
/// graceful shutdown is not held open by them.
#[derive(Clone, Debug)]
pub struct Stopping(tokio::sync::watch::Receiver<bool>);

impl Stopping {
    /// A signal and the switch that gives it.
    fn new() -> (tokio::sync::watch::Sender<bool>, Self) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (tx, Self(rx))
    }

    /// Resolves when the server begins to shut down (never, if nobody can say so).
    pub async fn stopped(mut self) {
        if self.0.wait_for(|stopping| *stopping).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl FromRef<AppState> for Arc<ServerConfig> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.config)
    }
}

impl FromRef<AppState> for Arc<StreamSlots> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.streams)
    }
}

impl FromRef<AppState> for Stopping {
    fn from_ref(state: &AppState) -> Self {
        state.stopping.clone()
    }
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

/// Makes the request id and the view known to every response built for this request, and the
/// operation it asks for (from the table, by the route it matched) to the layers inside.
async fn request_context(
    State(operations): State<Arc<Operations>>,
    mut req: Request,
    next: Next,
) -> Response {
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .and_then(|route| operations.find(req.method(), route.as_str()))
        .cloned();
    if let Some(operation) = route {
        req.extensions_mut().insert(operation);
    }
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

/// The answer to a handler that panicked: a problem+json 500 naming the request (the panic
/// runs inside [`request_context`], so the request id is known), never a dropped connection.
fn panic_answer(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    Problem::from_error(crate::error::ServiceError::Internal(format!(
        "a handler panicked: {message}"
    )))
    .into_response()
}

/// The whole service: every route, the open endpoints and the layers (request id, tracing,
/// timeout, body limit).
pub fn build_router(config: ServerConfig, sessions: impl Sessions) -> Router {
    // Nobody shuts this router down: its event streams end when their clients leave.
    let (_never, stopping) = Stopping::new();
    router_stopping(config, sessions, stopping)
}

/// [`build_router`], whose event streams end when `stopping` says so.
fn router_stopping(config: ServerConfig, sessions: impl Sessions, stopping: Stopping) -> Router {
    let (api, operations) = routes::api_router();
    let (api, doc) = api.split_for_parts();
    let doc = openapi::document(doc);
    let verifier = Arc::new(Verifier::with_identity(
        config.secret.clone(),
        config.identity.clone(),
    ));
    let sessions: Arc<dyn Sessions> = Arc::new(sessions);
    let forwarding = forward::Forwarding::new(
        Arc::clone(&sessions),
        Arc::clone(&verifier),
        config.body_limit,
        config.request_timeout,
        config.replica_ca.as_deref(),
    );
    if let Some(courier) = forwarding.courier() {
        sessions.set_access_courier(courier);
    }
    let limiter = Arc::new(RateLimiter::new(config.rate_limit));
    limiter.spawn_pruning();
    let state = AppState(Arc::new(Shared {
        sessions,
        verifier: Arc::clone(&verifier),
        limiter,
        openapi: Arc::new(serde_json::to_string(&doc).unwrap_or_else(|_| "{}".into())),
        config: Arc::new(config.clone()),
        stopping,
        streams: Arc::new(StreamSlots::new(
            config.max_streams_per_traveller,
            config.max_streams,
        )),
    }));
    let router = api
        .fallback(routes::ops::not_found)
        .method_not_allowed_fallback(routes::ops::method_not_allowed)
        .with_state(state);
    with_layers(router, &config, verifier, forwarding, Arc::new(operations))
}

/// Wraps `router` in the layers every route shares (metrics, request id, tracing, request
/// context, panic catching, address rate limit, timeout, forwarding writes to the writer's
/// lease holder, idempotency, body limit).
fn with_layers(
    router: Router,
    config: &ServerConfig,
    verifier: Arc<Verifier>,
    forwarding: forward::Forwarding,
    operations: Arc<Operations>,
) -> Router {
    let by_address = Arc::new(RateLimiter::<std::net::IpAddr>::new(
        config.address_rate_limit,
    ));
    by_address.spawn_pruning();
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
        .layer(middleware::from_fn_with_state(operations, request_context))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panic_answer))
        .layer(middleware::from_fn_with_state(
            Arc::new(Gate {
                forwarding,
                by_address,
                timeout: config.request_timeout,
                keyed: idempotency::Keyed {
                    body_limit: config.body_limit,
                    verifier,
                },
            }),
            gate,
        ))
        .layer(DefaultBodyLimit::max(config.body_limit));
    router.layer(layers)
}

/// What a request goes through between the panic catcher and its route, in this order:
/// checking a write forwarded by another replica (and signing its answer), the address rate
/// limit, the request timeout (outside the keyed stage, which reads the body: a stalled body is
/// cut like any slow request), forwarding writes to the writer's lease holder, idempotency keys.
///
/// One layer rather than five: axum's `from_fn` clones the whole stack beneath it, boxed, on
/// every request, so every extra layer cost each request a clone of all the layers under it.
struct Gate {
    forwarding: forward::Forwarding,
    by_address: Arc<RateLimiter<std::net::IpAddr>>,
    timeout: Duration,
    keyed: idempotency::Keyed,
}

async fn gate(State(gate): State<Arc<Gate>>, req: Request, next: Next) -> Response {
    let g = &gate;
    forward::mark(
        State(g.forwarding.clone()),
        req,
        Stage(|req| {
            limits::by_address(
                State(Arc::clone(&g.by_address)),
                req,
                Stage(|req| {
                    limits::timeout(
                        State(g.timeout),
                        req,
                        Stage(|req| {
                            forward::forward(
                                State(g.forwarding.clone()),
                                req,
                                Stage(|req| idempotency::keyed(State(g.keyed.clone()), req, next)),
                            )
                        }),
                    )
                }),
            )
        }),
    )
    .await
}

/// Where a stage of [`gate`] hands the request on: the next stage, or the route (axum's
/// [`Next`]).
pub(super) trait Onward: Send {
    fn run(self, req: Request) -> impl Future<Output = Response> + Send;
}

impl Onward for Next {
    fn run(self, req: Request) -> impl Future<Output = Response> + Send {
        Next::run(self, req)
    }
}

/// A stage of [`gate`] as the one before it sees it.
struct Stage<F>(F);

impl<F, Fut> Onward for Stage<F>
where
    F: FnOnce(Request) -> Fut + Send,
    Fut: Future<Output = Response> + Send,
{
    fn run(self, req: Request) -> impl Future<Output = Response> + Send {
        (self.0)(req)
    }
}

/// Serves until `shutdown` resolves, then lets in-flight requests finish for at most
/// `config.shutdown_timeout`.
pub async fn run(
    listener: tokio::net::TcpListener,
    config: ServerConfig,
    sessions: impl Sessions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (handle, stopping) = starting(&listener, "chronoscope serving", shutdown, &config);
    let server = axum_server::from_tcp(listener.into_std()?)?
        .acceptor(conn::IdleAcceptor::new(config.idle_timeout));
    let server = with_connection_limits(server, &config, handle);
    let router = router_stopping(config, sessions, stopping);
    server
        .serve(router.into_make_service_with_connect_info::<std::net::SocketAddr>())
        .await
}

/// Serves over https with `tls` (HTTP/2 or HTTP/1.1, as the client's ALPN asks) until
/// `shutdown` resolves, then lets in-flight requests finish for at most
/// `config.shutdown_timeout`.
pub async fn run_tls(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    config: ServerConfig,
    sessions: impl Sessions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (handle, stopping) = starting(
        &listener,
        "chronoscope serving over https",
        shutdown,
        &config,
    );
    let tls = axum_server::tls_rustls::RustlsConfig::from_config(tls);
    let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(tls)
        .handshake_timeout(config.header_read_timeout)
        .acceptor(conn::IdleAcceptor::new(config.idle_timeout));
    let server = axum_server::from_tcp(listener.into_std()?)?.acceptor(acceptor);
    let server = with_connection_limits(server, &config, handle);
    let router =
        router_stopping(config, sessions, stopping).layer(axum::Extension(routes::data::OverTls));
    server
        .serve(router.into_make_service_with_connect_info::<std::net::SocketAddr>())
        .await
}

/// Says where it serves (`what`), and what stops it: the handle and the streams' signal of
/// [`stop_on`], with `config.shutdown_timeout`.
fn starting(
    listener: &tokio::net::TcpListener,
    what: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
    config: &ServerConfig,
) -> (axum_server::Handle<std::net::SocketAddr>, Stopping) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "{what}");
    }
    let (stop_streams, stopping) = Stopping::new();
    let handle = stop_on(shutdown, stop_streams, config.shutdown_timeout);
    (handle, stopping)
}

/// A handle that, once `shutdown` resolves, ends event streams and shuts the server down
/// gracefully: no new connections, in-flight requests closed after `deadline`.
fn stop_on(
    shutdown: impl Future<Output = ()> + Send + 'static,
    stop_streams: tokio::sync::watch::Sender<bool>,
    deadline: Duration,
) -> axum_server::Handle<std::net::SocketAddr> {
    let handle = axum_server::Handle::new();
    let stop = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        stop_streams.send_replace(true);
        stop.graceful_shutdown(Some(deadline));
    });
    handle
}

/// The header-read timeout (hyper's, for HTTP/1.1 heads; axum-server's, until a first request
/// of any protocol arrives) and the shutdown handle.
fn with_connection_limits<A>(
    server: axum_server::Server<std::net::SocketAddr, A>,
    config: &ServerConfig,
    handle: axum_server::Handle<std::net::SocketAddr>,
) -> axum_server::Server<std::net::SocketAddr, A> {
    let mut server = server
        .handle(handle)
        .first_request_timeout(config.header_read_timeout);
    server
        .http_builder()
        .http1()
        .header_read_timeout(config.header_read_timeout);
    server
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

/// What [`encode_component`] leaves as it is: RFC 3986's unreserved characters.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes everything but RFC 3986 unreserved characters (query values, ids in URIs).
pub(crate) fn encode_component(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, UNRESERVED).to_string()
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

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    #[tokio::test]
    async fn a_panicking_handler_is_a_problem_500_naming_the_request() {
        async fn boom() -> &'static str {
            panic!("the flux capacitor overflowed")
        }
        let secret = Secret::from_bytes("a test secret that is long enough for HS256")
            .unwrap_or_else(|e| panic!("{e}"));
        let config = ServerConfig::new(secret);
        let verifier = Arc::new(Verifier::with_identity(
            config.secret.clone(),
            config.identity.clone(),
        ));
        let engine = Engine::open(
            Arc::new(crate::store::MemoryStore::new()),
            Arc::new(crate::engine::SystemClock),
            crate::engine::EngineConfig::default(),
            crate::engine::Seed::None,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let forwarding = forward::Forwarding::new(
            Arc::new(engine),
            Arc::clone(&verifier),
            config.body_limit,
            config.request_timeout,
            None,
        );
        let router = with_layers(
            Router::new().route("/boom", get(boom)),
            &config,
            verifier,
            forwarding,
            Arc::default(),
        );
        let req = Request::get("/boom")
            .header("x-request-id", "req-42")
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("{e}"));
        let resp = router.oneshot(req).await.unwrap_or_else(|e| match e {});
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(resp.headers()["content-type"], PROBLEM_JSON);
        assert_eq!(resp.headers()["x-request-id"], "req-42");
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let body: serde_json::Value =
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(body["type"], "/problems/internal");
        assert_eq!(body["status"], 500);
        assert_eq!(body["instance"], "/requests/req-42");
        // What panicked is for the logs, not for the caller.
        assert!(!body.to_string().contains("flux"), "{body}");
    }
}
