//! `RemoteClient`: [`crate::service::TimelineService`] over HTTP or HTTPS (reqwest, rustls).
//!
//! Speaks the wire contract of the server (`HTTP.md`): every call asks for `view=full`, so the
//! body is the serde JSON of the trait's return type and a problem carries the server's
//! [`ServiceError`] itself, which is decoded back into the identical value. A caller cannot
//! tell this face from the embedded engine except by its latency.
//!
//! Over `https://` the server's certificate is checked against the operating system's roots
//! (or `SSL_CERT_FILE` / `SSL_CERT_DIR` when set) plus the private CA given with
//! [`RemoteClientBuilder::ca_cert`]; a refused certificate is reported in words (see
//! [`crate::tls::explain_failure`]) and never retried.

mod problem;
mod stream;

use std::path::PathBuf;
use std::sync::{Arc, Once};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, LINK, LOCATION, RETRY_AFTER,
};
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ServiceError;
use crate::model::{AnchorId, IsolationId, ItemId, MergeId, ScheduleId, ScriptId, TimelineId};
use crate::service::*;

/// Default time allowed to open a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time allowed for a whole request, answer included.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a safe request is tried again after a connection error or a 503.
const RETRIES: u32 = 2;
/// The request header naming a POST for safe retries.
const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Wait before the first retry; doubled for the next.
const DEFAULT_BACKOFF: Duration = Duration::from_millis(150);
/// Most random time added to a first `Retry-After` wait, so that clients told the same second
/// do not all come back in the same instant and be refused together again. Doubled for each
/// later wait (up to 16 times), so that many clients refused again and again spread out
/// instead of meeting the limit together every second.
const RATE_LIMIT_JITTER_MS: u64 = 300;

/// Called with the wait before the first retry after a 429, or a 503 with `Retry-After`
/// (once per client and its clones).
pub type RateLimitNotice = Arc<dyn Fn(Waiting) + Send + Sync>;

/// Why and how long a client waits before sending a request again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// The status answered: 429 (rate limited) or 503 (unavailable for now).
    pub status: u16,
    /// How long, `Retry-After` and a little at random.
    pub wait: Duration,
}

/// How a client answers a 429 (too many requests): the server refused it before doing any of
/// it, so any request may be sent again once `Retry-After` has passed. The same budget covers
/// a 503 that says when to come back (`Retry-After`: a store that is down, a server shutting
/// down), for the requests that are safe to send again: reads, and writes carrying an
/// `Idempotency-Key`, which the server answers with the first answer if it did apply them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimitRetry {
    /// How many times one request is sent again after a 429 (0: never).
    pub attempts: u32,
    /// The longest one request waits in all; a `Retry-After` beyond what is left gives up.
    pub total_wait: Duration,
}

impl RateLimitRetry {
    /// A 429 is the caller's answer at once.
    pub const OFF: RateLimitRetry = RateLimitRetry {
        attempts: 0,
        total_wait: Duration::ZERO,
    };
}

/// The service on a chronoscope server, acting as the traveller its token names.
#[derive(Clone)]
pub struct RemoteClient {
    http: reqwest::Client,
    /// The server root, path without a trailing slash.
    base: Url,
    /// The server root as shown to people.
    shown: String,
    auth: HeaderValue,
    connect_timeout: Duration,
    request_timeout: Duration,
    backoff: Duration,
    rate_limited: RateLimitRetry,
    notice: Option<RateLimitNotice>,
    /// Shared by clones, so the notice is given once.
    noticed: Arc<Once>,
}

impl std::fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a credential: never printed.
        f.debug_struct("RemoteClient")
            .field("base_url", &self.shown)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`RemoteClient`] before it is built.
#[derive(Clone)]
pub struct RemoteClientBuilder {
    base_url: String,
    token: String,
    connect_timeout: Duration,
    request_timeout: Duration,
    backoff: Duration,
    ca_cert: Option<PathBuf>,
    rate_limited: RateLimitRetry,
    notice: Option<RateLimitNotice>,
}

impl std::fmt::Debug for RemoteClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteClientBuilder")
            .field("base_url", &self.base_url)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("ca_cert", &self.ca_cert)
            .finish_non_exhaustive()
    }
}

impl RemoteClientBuilder {
    /// Also trust the CA certificates (PEM) in this file, for a server whose certificate a
    /// private CA signed. Only used for `https://` servers.
    pub fn ca_cert(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_cert = Some(path.into());
        self
    }

    /// Time allowed to open a connection (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Time allowed for a whole request, answer included (default 30 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Wait before retrying a safe request (default 150 ms, doubled for the second retry).
    pub fn retry_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// Send a request again after a 429, waiting as long as `Retry-After` says, within
    /// `retry` (default [`RateLimitRetry::OFF`]).
    pub fn retry_rate_limited(mut self, retry: RateLimitRetry) -> Self {
        self.rate_limited = retry;
        self
    }

    /// Tell someone, once, that the client is waiting out a rate limit or a 503 (e.g. on
    /// stderr).
    pub fn on_rate_limit_wait(mut self, notice: impl Fn(Waiting) + Send + Sync + 'static) -> Self {
        self.notice = Some(Arc::new(notice));
        self
    }

    /// Checks the URL and the token and builds the client. Nothing is sent yet.
    pub fn build(self) -> Result<RemoteClient, ServiceError> {
        let base = parse_base(&self.base_url)?;
        let token = self.token.trim();
        if token.is_empty() {
            return Err(ServiceError::invalid(
                "token",
                "a bearer token is needed; `chronoscope token --subject NAME` prints one",
            ));
        }
        let mut auth = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            ServiceError::invalid(
                "token",
                "a token is printable ASCII without line breaks; was it pasted whole?",
            )
        })?;
        auth.set_sensitive(true);
        crate::tls::install_default_provider();
        let mut http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .timeout(self.request_timeout)
            .user_agent(concat!("chronoscope/", env!("CARGO_PKG_VERSION")));
        if base.scheme() == "https" {
            if let Some(path) = &self.ca_cert {
                let bad = |why: String| ServiceError::invalid("ca_cert", why);
                let pem = crate::tls::read_ca_bundle(path).map_err(|e| bad(e.to_string()))?;
                let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                    bad(format!(
                        "the CA certificate {} cannot be used: {}",
                        path.display(),
                        root_cause(&e)
                    ))
                })?;
                http = http.tls_certs_merge(certs);
            }
        } else {
            // Plain http: no certificate is ever checked, so no roots are loaded.
            http = http.tls_certs_only(Vec::new());
        }
        let http = http.build().map_err(|e| {
            ServiceError::Internal(format!("cannot set up the HTTP client: {}", root_cause(&e)))
        })?;
        let shown = base.as_str().trim_end_matches('/').to_owned();
        Ok(RemoteClient {
            http,
            base,
            shown,
            auth,
            connect_timeout: self.connect_timeout,
            request_timeout: self.request_timeout,
            backoff: self.backoff,
            rate_limited: self.rate_limited,
            notice: self.notice,
            noticed: Arc::new(Once::new()),
        })
    }
}

/// The server root: http(s) with a host, no query or fragment; a trailing slash or `/v1` (the
/// API's root, as the seed writes its server) is optional.
fn parse_base(raw: &str) -> Result<Url, ServiceError> {
    let raw = raw.trim();
    let bad = |why: String| ServiceError::invalid("base_url", why);
    if !raw.contains("://") {
        return Err(bad(format!(
            "'{raw}' has no scheme; give the server root with http:// or https://, like http://{}",
            if raw.is_empty() {
                "127.0.0.1:8080"
            } else {
                raw
            }
        )));
    }
    let mut url = Url::parse(raw).map_err(|e| {
        bad(format!(
            "'{raw}' is not a URL ({e}); give the server root, like https://chronoscope.example:8443"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!(
            "'{raw}' uses the scheme '{}'; give an http:// or https:// server root, like https://chronoscope.example:8443",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(format!("'{raw}' names no host")));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad(format!(
            "'{raw}' has a query or fragment; give the server root only"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(format!(
            "'{raw}' carries credentials; pass the bearer token separately"
        )));
    }
    // The root may sit under a path (a reverse proxy); routes are appended to it. `/v1` names
    // the API under the root, which every route adds itself.
    let path = url.path().trim_end_matches('/');
    let path = path.strip_suffix("/v1").unwrap_or(path).to_owned();
    url.set_path(&path);
    Ok(url)
}

/// When a request may be sent again after a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Retry {
    /// Idempotent reads: after connection errors and 503.
    Safe,
    /// Writes sent with an `Idempotency-Key`: also when the connection failed after the
    /// request went out, since the server answers a repeat with the first answer.
    Keyed,
    /// Writes without a key: never (the first attempt may have been applied).
    Never,
    /// Deletes: only when the connection was refused, so nothing was sent.
    Unsent,
}

/// One call: method, path segments under the root, query, JSON body, and for a POST the
/// `Idempotency-Key` every attempt of it carries.
struct Call<'a> {
    method: Method,
    segments: &'a [&'a str],
    query: Vec<(&'static str, String)>,
    body: Option<Vec<u8>>,
    key: Option<HeaderValue>,
}

impl<'a> Call<'a> {
    fn get(segments: &'a [&'a str]) -> Self {
        Self {
            method: Method::GET,
            segments,
            query: Vec::new(),
            body: None,
            key: None,
        }
    }

    fn delete(segments: &'a [&'a str]) -> Self {
        Self {
            method: Method::DELETE,
            segments,
            query: Vec::new(),
            body: None,
            key: None,
        }
    }

    fn post(segments: &'a [&'a str], body: &impl Serialize) -> Result<Self, ServiceError> {
        let body = serde_json::to_vec(body)
            .map_err(|e| ServiceError::Internal(format!("cannot encode the request: {e}")))?;
        Ok(Self::post_json(segments, body))
    }

    /// A POST of a JSON body already encoded (a file sent as it is).
    fn post_json(segments: &'a [&'a str], body: Vec<u8>) -> Self {
        // A ULID is unique without coordination and is a valid key (visible ASCII).
        let key = HeaderValue::from_str(&ulid::Ulid::new().to_string()).ok();
        Self {
            method: Method::POST,
            segments,
            query: Vec::new(),
            body: Some(body),
            key,
        }
    }

    fn param(mut self, name: &'static str, value: Option<impl ToString>) -> Self {
        if let Some(v) = value {
            self.query.push((name, v.to_string()));
        }
        self
    }

    fn page(self, page: &PageRequest) -> Self {
        self.param("limit", page.limit)
            .param("cursor", page.cursor.as_ref())
    }

    fn retry(&self) -> Retry {
        match self.method {
            Method::GET => Retry::Safe,
            Method::DELETE => Retry::Unsent,
            _ if self.key.is_some() => Retry::Keyed,
            _ => Retry::Never,
        }
    }

    /// `GET /v1/timelines`, for messages.
    fn route(&self) -> String {
        format!("{} /{}", self.method, self.segments.join("/"))
    }
}

/// A successful answer: its headers and body.
struct Answer {
    headers: HeaderMap,
    body: Vec<u8>,
    route: String,
}

impl Answer {
    fn json<T: DeserializeOwned>(&self) -> Result<T, ServiceError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            ServiceError::Internal(format!(
                "{} answered with a body this client cannot read ({e}); is the server the same version?",
                self.route
            ))
        })
    }

    /// A bare-array list page, its next cursor in the `Link` header.
    fn list<T: DeserializeOwned>(&self) -> Result<Page<T>, ServiceError> {
        Ok(Page {
            items: self.json()?,
            next_cursor: self.link_cursor(),
        })
    }

    fn link_cursor(&self) -> Option<String> {
        problem::next_cursor(
            self.headers
                .get_all(LINK)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        )
    }
}

/// `{"events": [...], "next_cursor": ...}` (search-events, full view).
#[derive(serde::Deserialize)]
struct EventsBody {
    events: Vec<EventRecord>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// `{"status": "ok", "events": [...], "next_cursor": ...}` (monitor-events, full view).
#[derive(serde::Deserialize)]
struct MonitoredBody {
    events: Vec<MonitoredEvent>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// `{"timelines": [...], "next_cursor": ...}` (list-timelines, full view).
#[derive(serde::Deserialize)]
struct TimelinesBody {
    timelines: Vec<TimelineInfo>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// `{"anchors": [...], "next_cursor": ...}` (list-anchors, full view).
#[derive(serde::Deserialize)]
struct AnchorsBody {
    anchors: Vec<AnchorRecord>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// `{"status": "ok", "log_entries": [...], "next_cursor": ...}` (automation-log, full view).
#[derive(serde::Deserialize)]
struct LogBody {
    log_entries: Vec<LogEntry>,
    #[serde(default)]
    next_cursor: Option<String>,
}

impl RemoteClient {
    /// A client of the server at `base_url` (its root, like `https://host:8443`; `/v1` is added
    /// here, and taken off `base_url` when given) acting with `token`, with the default
    /// timeouts.
    pub fn new(base_url: &str, token: impl Into<String>) -> Result<Self, ServiceError> {
        Self::builder(base_url, token).build()
    }

    /// Settings for a client of `base_url` with `token`, to adjust before building.
    pub fn builder(base_url: &str, token: impl Into<String>) -> RemoteClientBuilder {
        RemoteClientBuilder {
            base_url: base_url.to_owned(),
            token: token.into(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            backoff: DEFAULT_BACKOFF,
            ca_cert: None,
            rate_limited: RateLimitRetry::OFF,
            notice: None,
        }
    }

    /// The server root, as shown in the dashboard's header.
    pub fn base_url(&self) -> &str {
        &self.shown
    }

    fn url(&self, call: &Call<'_>) -> Result<Url, ServiceError> {
        let mut url = self.base.clone();
        {
            let mut path = url.path_segments_mut().map_err(|()| {
                ServiceError::Internal(format!("{} cannot take a path", self.shown))
            })?;
            path.pop_if_empty();
            path.extend(call.segments);
        }
        {
            let mut query = url.query_pairs_mut();
            for (name, value) in &call.query {
                query.append_pair(name, value);
            }
            query.append_pair("view", "full");
        }
        Ok(url)
    }

    /// Sends `call`, retrying where that is safe, and returns a 2xx answer or the decoded error.
    async fn send(&self, call: Call<'_>) -> Result<Answer, ServiceError> {
        let url = self.url(&call)?;
        let route = call.route();
        let retry = call.retry();
        let mut attempt = 0;
        let mut limited = 0;
        let mut waited = Duration::ZERO;
        let response = loop {
            let mut request = self
                .http
                .request(call.method.clone(), url.clone())
                .header(AUTHORIZATION, self.auth.clone())
                .header(ACCEPT, "application/json, application/problem+json");
            if let Some(body) = &call.body {
                request = request
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            if let Some(key) = &call.key {
                request = request.header(IDEMPOTENCY_KEY, key.clone());
            }
            let again = attempt < RETRIES;
            match request.send().await {
                // Refused before any of it was done (rate limits, stream caps): any request.
                // A 503 that says when to come back: only what is safe to send again.
                Ok(r)
                    if r.status() == StatusCode::TOO_MANY_REQUESTS
                        || (r.status() == StatusCode::SERVICE_UNAVAILABLE
                            && r.headers().contains_key(RETRY_AFTER)
                            && self.rate_limited.attempts > 0
                            && matches!(retry, Retry::Safe | Retry::Keyed)) =>
                {
                    let wait = self.rate_limit_wait(r.headers(), limited);
                    if limited >= self.rate_limited.attempts
                        || waited + wait > self.rate_limited.total_wait
                    {
                        break r;
                    }
                    if let Some(notice) = &self.notice {
                        let status = r.status().as_u16();
                        self.noticed.call_once(|| notice(Waiting { status, wait }));
                    }
                    tokio::time::sleep(wait).await;
                    waited += wait;
                    limited += 1;
                    continue;
                }
                Ok(r)
                    if r.status() == StatusCode::SERVICE_UNAVAILABLE
                        && matches!(retry, Retry::Safe | Retry::Keyed)
                        && again => {}
                Ok(r) => break r,
                Err(e) if again && retryable(&e, retry) => {}
                Err(e) => return Err(self.unreachable(&e)),
            }
            tokio::time::sleep(self.backoff * 2u32.pow(attempt)).await;
            attempt += 1;
        };
        let status = response.status();
        let headers = response.headers().clone();
        let body: Vec<u8> = response
            .bytes()
            .await
            .map_err(|e| self.unreachable(&e))?
            .into();
        if status.is_success() {
            return Ok(Answer {
                headers,
                body,
                route,
            });
        }
        Err(failure(status, &headers, &body, &route))
    }

    /// How long to wait after the `waited`-th 429 in a row: its `Retry-After`, plus a little at
    /// random, more for each wait before.
    fn rate_limit_wait(&self, headers: &HeaderMap, waited: u32) -> Duration {
        use rand::Rng;
        let secs =
            problem::retry_after_secs(headers.get(RETRY_AFTER).and_then(|v| v.to_str().ok()));
        let jitter = rand::rng().random_range(0..=RATE_LIMIT_JITTER_MS << waited.min(4));
        Duration::from_secs(secs) + Duration::from_millis(jitter)
    }

    /// The error for a server that could not be reached or did not answer.
    fn unreachable(&self, e: &reqwest::Error) -> ServiceError {
        let why = if let Some(why) = crate::tls::explain_failure(e) {
            why
        } else if e.is_timeout() {
            if e.is_connect() {
                format!(
                    "no connection within {} s",
                    self.connect_timeout.as_secs_f32()
                )
            } else {
                format!("no answer within {} s", self.request_timeout.as_secs_f32())
            }
        } else if e.is_connect() && (e.is_dns() || is_dns(e)) {
            format!(
                "cannot resolve the host name '{}' ({})",
                self.base.host_str().unwrap_or_default(),
                root_cause(e)
            )
        } else if let Some(kind) = io_kind(e) {
            match kind {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
                std::io::ErrorKind::ConnectionReset => "connection reset".to_owned(),
                std::io::ErrorKind::ConnectionAborted => "connection aborted".to_owned(),
                _ => root_cause(e),
            }
        } else if self.base.scheme() == "http" && root_cause(e).contains("invalid HTTP version") {
            format!("{PLAIN_HTTP_EXPECTED}; does it serve https:// there?")
        } else {
            root_cause(e)
        };
        ServiceError::Unavailable(format!("{UNREACHABLE}{}: {why}", self.shown))
    }

    async fn list<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        page: &PageRequest,
    ) -> ServiceResult<Page<T>> {
        self.send(Call::get(segments).page(page)).await?.list()
    }
}

/// Whether `err`, from this client, comes back however often the call is made again: the
/// server's certificate is not trusted or not for this host name, or the server speaks plain
/// HTTP where https was asked (or the reverse). Only a change of configuration mends it, so a
/// dashboard says so rather than "retrying".
pub fn is_lasting(err: &ServiceError) -> bool {
    match err {
        ServiceError::Unavailable(why) => crate::tls::LASTING
            .iter()
            .chain([PLAIN_HTTP_EXPECTED].iter())
            .any(|words| why.contains(words)),
        _ => false,
    }
}

/// Whether `err` says the server could not be reached at all (no answer: refused, reset,
/// timed out), as opposed to an answer that the service is unavailable.
pub fn is_unreachable(err: &ServiceError) -> bool {
    matches!(err, ServiceError::Unavailable(why) if why.starts_with(UNREACHABLE))
        && !is_lasting(err)
}

/// How [`RemoteClient`] starts the reason of a server it cannot reach.
const UNREACHABLE: &str = "cannot reach ";

/// What [`RemoteClient`] says when an http:// server answers in TLS.
const PLAIN_HTTP_EXPECTED: &str = "the server did not answer in plain HTTP";

/// The error a non-2xx answer stands for (its problem, decoded).
fn failure(status: StatusCode, headers: &HeaderMap, body: &[u8], route: &str) -> ServiceError {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    problem::decode(problem::Failure {
        status: status.as_u16(),
        location: header(LOCATION),
        retry_after: header(RETRY_AFTER),
        body,
        route,
    })
}

/// Whether a failed attempt may be repeated under `retry`.
fn retryable(e: &reqwest::Error, retry: Retry) -> bool {
    // A refused certificate is refused again.
    if crate::tls::explain_failure(e).is_some() {
        return false;
    }
    match retry {
        Retry::Never => false,
        // A connect error (refused, reset, DNS, connect timeout) means nothing reached the server.
        Retry::Safe => e.is_connect(),
        // The request may have been applied, but a repeat gets its first answer. A timeout
        // is not repeated: the server may still be working on it, and the caller has waited.
        Retry::Keyed => e.is_connect() || (!e.is_timeout() && (e.is_request() || e.is_body())),
        Retry::Unsent => {
            e.is_connect() && io_kind(e) == Some(std::io::ErrorKind::ConnectionRefused)
        }
    }
}

fn io_kind(e: &reqwest::Error) -> Option<std::io::ErrorKind> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        source = err.source();
    }
    None
}

fn is_dns(e: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        let text = err.to_string().to_ascii_lowercase();
        if text.contains("dns") || text.contains("resolve") || text.contains("lookup") {
            return true;
        }
        source = err.source();
    }
    false
}

/// The innermost error's message: the one that says what actually happened.
fn root_cause(e: &reqwest::Error) -> String {
    let mut last: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

/// The path segment of a path-addressed id. `.` and `..` cannot travel in a URL path (they
/// would be folded away), and no such thing exists, so they are not found without asking.
fn segment<'a>(what: &str, id: &'a str) -> Result<&'a str, ServiceError> {
    if id == "." || id == ".." {
        Err(ServiceError::not_found(what, id))
    } else {
        Ok(id)
    }
}

#[async_trait]
impl Timelines for RemoteClient {
    async fn whoami(&self) -> ServiceResult<TravellerStatus> {
        self.send(Call::get(&["v1", "me"])).await?.json()
    }

    async fn list_timelines(&self, page: PageRequest) -> ServiceResult<Page<TimelineInfo>> {
        self.list(&["v1", "timelines"], &page).await
    }

    async fn find_timelines(&self, req: TimelineQuery) -> ServiceResult<Page<TimelineInfo>> {
        let status = req.status.map(|s| match s {
            crate::model::TimelineStatus::Open => "open",
            crate::model::TimelineStatus::Closed => "closed",
        });
        let call = Call::get(&["v1", "list-timelines"])
            .param("status", status)
            .page(&req.page);
        let answer = self.send(call).await?;
        let body: TimelinesBody = answer.json()?;
        Ok(Page {
            items: body.timelines,
            next_cursor: body.next_cursor.or_else(|| answer.link_cursor()),
        })
    }

    async fn create_timeline(&self, req: NewTimeline) -> ServiceResult<TimelineInfo> {
        self.send(Call::post(&["v1", "timelines"], &req)?)
            .await?
            .json()
    }

    async fn get_timeline(&self, id: &TimelineId) -> ServiceResult<TimelineInfo> {
        let id = segment("timeline", id.as_str())?;
        self.send(Call::get(&["v1", "timeline", id])).await?.json()
    }

    async fn delete_timeline(&self, id: &TimelineId) -> ServiceResult<()> {
        let id = segment("timeline", id.as_str())?;
        self.send(Call::delete(&["v1", "timeline", id])).await?;
        Ok(())
    }
}

#[async_trait]
impl Transfer for RemoteClient {
    async fn export_timeline(&self, id: &TimelineId) -> ServiceResult<WorldFile> {
        let id = segment("timeline", id.as_str())?;
        self.send(Call::get(&["v1", "timeline", id, "export"]))
            .await?
            .json()
    }

    async fn import_timelines(&self, req: ImportRequest) -> ServiceResult<ImportReport> {
        // The file goes as it is, so the server's refusals name the file's own lines.
        let call = Call::post_json(&["v1", "timelines", "import"], req.document.into_bytes())
            .param("safety_check", (!req.safety_check).then_some(false));
        self.send(call).await?.json()
    }
}

#[async_trait]
impl Navigation for RemoteClient {
    async fn travel(&self, req: TravelRequest) -> ServiceResult<Journey> {
        self.send(Call::post(&["v1", "travels"], &req)?)
            .await?
            .json()
    }

    async fn travel_to_time(&self, req: TimeTravelRequest) -> ServiceResult<Journey> {
        self.send(Call::post(&["api", "v1", "travel"], &req)?)
            .await?
            .json()
    }

    async fn travel_in_time(&self, req: GuideTravelRequest) -> ServiceResult<Journey> {
        self.send(Call::post(&["v1", "travel"], &req)?)
            .await?
            .json()
    }

    async fn return_to_anchor(&self, req: ReturnRequest) -> ServiceResult<Journey> {
        self.send(Call::post(&["v1", "return"], &req)?)
            .await?
            .json()
    }

    async fn switch_timeline(&self, req: SwitchRequest) -> ServiceResult<Switched> {
        self.send(Call::post(&["v1", "switch-timeline"], &req)?)
            .await?
            .json()
    }

    async fn pause_time(&self) -> ServiceResult<ClockState> {
        self.send(Call::post(&["v1", "pause-time"], &serde_json::json!({}))?)
            .await?
            .json()
    }

    async fn resume_time(&self) -> ServiceResult<ClockState> {
        self.send(Call::post(&["v1", "resume-time"], &serde_json::json!({}))?)
            .await?
            .json()
    }

    async fn fast_forward(&self, req: ShiftRequest) -> ServiceResult<Journey> {
        self.send(Call::post(&["v1", "fast-forward"], &req)?)
            .await?
            .json()
    }

    async fn rewind(&self, req: ShiftRequest) -> ServiceResult<Journey> {
        self.send(Call::post(&["v1", "rewind"], &req)?)
            .await?
            .json()
    }

    async fn list_journeys(&self, page: PageRequest) -> ServiceResult<Page<Journey>> {
        self.list(&["v1", "travels"], &page).await
    }

    async fn register_item(&self, req: NewItem) -> ServiceResult<Item> {
        self.send(Call::post(&["v1", "items"], &req)?).await?.json()
    }

    async fn retrieve_item(&self, req: RetrieveItemRequest) -> ServiceResult<RetrievedItem> {
        // The POST form: a retry of a GET is harmless too, but a body is plainer than a query.
        self.send(Call::post(&["v1", "retrieve-item"], &req)?)
            .await?
            .json()
    }

    async fn get_item(&self, id: &ItemId) -> ServiceResult<Item> {
        let id = segment("item", id.as_str())?;
        self.send(Call::get(&["v1", "items", id])).await?.json()
    }

    async fn list_items(&self, page: PageRequest) -> ServiceResult<Page<Item>> {
        self.list(&["v1", "items"], &page).await
    }
}

#[async_trait]
impl Anchors for RemoteClient {
    async fn set_anchor(&self, req: NewAnchor) -> ServiceResult<Anchor> {
        self.send(Call::post(&["v1", "anchors"], &req)?)
            .await?
            .json()
    }

    async fn get_anchor(&self, id: &AnchorId) -> ServiceResult<Anchor> {
        let id = segment("anchor", id.as_str())?;
        self.send(Call::get(&["v1", "anchors", id])).await?.json()
    }

    async fn list_anchors(&self, page: PageRequest) -> ServiceResult<Page<Anchor>> {
        self.list(&["v1", "anchors"], &page).await
    }

    async fn set_precise_anchor(&self, req: NewPreciseAnchor) -> ServiceResult<AnchorRecord> {
        self.send(Call::post(&["v1", "set-anchor"], &req)?)
            .await?
            .json()
    }

    async fn find_anchors(&self, req: AnchorListQuery) -> ServiceResult<Page<AnchorRecord>> {
        let call = Call::get(&["v1", "list-anchors"])
            .param("include_spent", req.include_spent)
            .param("limit", req.limit)
            .param("cursor", req.cursor.as_ref());
        let answer = self.send(call).await?;
        let body: AnchorsBody = answer.json()?;
        Ok(Page {
            items: body.anchors,
            next_cursor: body.next_cursor.or_else(|| answer.link_cursor()),
        })
    }

    async fn delete_anchor(&self, req: AnchorRef) -> ServiceResult<()> {
        let call = Call::delete(&["v1", "delete-anchor"]).param("anchor_id", Some(&req.anchor_id));
        self.send(call).await?;
        Ok(())
    }

    async fn check_anchor_stability(&self, req: AnchorRef) -> ServiceResult<AnchorStability> {
        let call =
            Call::get(&["v1", "check-anchor-stability"]).param("anchor_id", Some(&req.anchor_id));
        self.send(call).await?.json()
    }

    async fn simulate_wormhole(&self, req: WormholeRequest) -> ServiceResult<WormholeSimulation> {
        self.send(Call::post(&["v1", "simulate-wormhole"], &req)?)
            .await?
            .json()
    }

    async fn adjust_anchor(&self, req: AdjustAnchorRequest) -> ServiceResult<AnchorRecord> {
        self.send(Call::post(&["v1", "adjust-anchor"], &req)?)
            .await?
            .json()
    }
}

#[async_trait]
impl Events for RemoteClient {
    async fn search_events(&self, req: SearchQuery) -> ServiceResult<Page<EventRecord>> {
        let call = Call::get(&["v1", "search-events"])
            .param("timeline_id", req.timeline_id.as_ref())
            .param("location", req.location.as_ref())
            .param("time_range", req.time_range.as_ref())
            .page(&req.page);
        let answer = self.send(call).await?;
        let body: EventsBody = answer.json()?;
        Ok(Page {
            items: body.events,
            next_cursor: body.next_cursor.or_else(|| answer.link_cursor()),
        })
    }

    async fn monitor_events(&self, req: MonitorEventsQuery) -> ServiceResult<Page<MonitoredEvent>> {
        let call = Call::get(&["v1", "monitor-events"])
            .param("timeline_id", req.timeline_id.as_ref())
            .param("location", req.location.as_ref())
            .param("time_range", req.time_range.as_ref())
            .page(&req.page);
        let answer = self.send(call).await?;
        let body: MonitoredBody = answer.json()?;
        Ok(Page {
            items: body.events,
            next_cursor: body.next_cursor.or_else(|| answer.link_cursor()),
        })
    }

    async fn event_versions(&self, req: SearchQuery) -> ServiceResult<Page<EventRecord>> {
        let timeline = match req.timeline_id {
            Some(t) => t,
            None => self.whoami().await?.timeline_id,
        };
        let id = segment("timeline", timeline.as_str())?;
        let path = ["v1", "timeline", id, "events"];
        let call = Call::get(&path)
            .param("versions", Some("all"))
            .param("location", req.location.as_ref())
            .param("time_range", req.time_range.as_ref())
            .page(&req.page);
        // Addressed by path, an unknown timeline is a 404; named in a query, it is the same
        // unknown reference the engine answers.
        match self.send(call).await {
            Err(ServiceError::NotFound { what, id }) if what == "timeline" => {
                Err(ServiceError::unknown("timeline", id))
            }
            answer => answer?.list(),
        }
    }

    async fn add_event(&self, timeline: &TimelineId, req: NewEvent) -> ServiceResult<EventRecord> {
        let id = segment("timeline", timeline.as_str())?;
        self.send(Call::post(&["v1", "timeline", id, "events"], &req)?)
            .await?
            .json()
    }

    async fn manipulate_event(&self, req: ManipulateRequest) -> ServiceResult<ManipulationResult> {
        self.send(Call::post(&["v1", "manipulate-event"], &req)?)
            .await?
            .json()
    }

    async fn revert_event(&self, req: RevertRequest) -> ServiceResult<RevertResult> {
        self.send(Call::post(&["v1", "revert-event"], &req)?)
            .await?
            .json()
    }

    async fn watch_events(&self, req: MonitorEventsQuery) -> ServiceResult<EventsStream> {
        self.events_stream(req).await
    }
}

#[async_trait]
impl Paradoxes for RemoteClient {
    async fn check_paradox(&self, req: ParadoxCheckRequest) -> ServiceResult<ParadoxReport> {
        self.send(Call::post(&["v1", "paradox-checks"], &req)?)
            .await?
            .json()
    }

    async fn check_stability(&self, req: StabilityQuery) -> ServiceResult<ParadoxReport> {
        let call = Call::get(&["v1", "check-paradox"])
            .param("timeline_id", Some(&req.timeline_id))
            .param("after_event_id", req.after_event_id.as_ref());
        self.send(call).await?.json()
    }

    async fn monitor_timeline(&self, req: MonitorQuery) -> ServiceResult<MonitorReport> {
        let call = Call::get(&["v1", "monitor-timeline"])
            .param("timeline_id", Some(&req.timeline_id))
            .param("time_range", req.time_range.as_ref());
        self.send(call).await?.json()
    }

    async fn watch_monitor(&self, req: MonitorWatch) -> ServiceResult<MonitorStream> {
        self.monitor_stream(req).await
    }

    async fn check_timeline(&self, req: SignificantEventQuery) -> ServiceResult<TimelineCheck> {
        let call = Call::get(&["api", "v1", "check-timeline"])
            .param("timeline_id", Some(&req.timeline_id))
            .param("significant_event", Some(&req.significant_event));
        self.send(call).await?.json()
    }

    async fn correct_dissonance(&self, req: DissonanceRequest) -> ServiceResult<DissonanceResult> {
        self.send(Call::post(&["v1", "correct-dissonance"], &req)?)
            .await?
            .json()
    }

    async fn isolate_event(&self, req: IsolateRequest) -> ServiceResult<Isolation> {
        self.send(Call::post(&["v1", "isolate-event"], &req)?)
            .await?
            .json()
    }

    async fn lift_isolation(&self, id: &IsolationId) -> ServiceResult<()> {
        let id = segment("isolation", id.as_str())?;
        self.send(Call::delete(&["v1", "isolations", id])).await?;
        Ok(())
    }
}

#[async_trait]
impl Automation for RemoteClient {
    async fn create_script(&self, req: NewScript) -> ServiceResult<Script> {
        self.send(Call::post(&["v1", "create-script"], &req)?)
            .await?
            .json()
    }

    async fn list_scripts(&self, page: PageRequest) -> ServiceResult<Page<Script>> {
        self.list(&["v1", "scripts"], &page).await
    }

    async fn delete_script(&self, id: &ScriptId) -> ServiceResult<()> {
        let id = segment("script", id.as_str())?;
        self.send(Call::delete(&["v1", "scripts", id])).await?;
        Ok(())
    }

    async fn schedule_manipulation(&self, req: NewSchedule) -> ServiceResult<Schedule> {
        self.send(Call::post(&["v1", "schedule-manipulation"], &req)?)
            .await?
            .json()
    }

    async fn trigger_external_manipulation(&self, req: ExternalTrigger) -> ServiceResult<Schedule> {
        self.send(Call::post(&["v1", "trigger-external-manipulation"], &req)?)
            .await?
            .json()
    }

    async fn list_schedules(&self, page: PageRequest) -> ServiceResult<Page<Schedule>> {
        self.list(&["v1", "schedules"], &page).await
    }

    async fn delete_schedule(&self, id: &ScheduleId) -> ServiceResult<()> {
        let id = segment("schedule", id.as_str())?;
        self.send(Call::delete(&["v1", "schedules", id])).await?;
        Ok(())
    }

    async fn automation_log(&self, req: LogQuery) -> ServiceResult<Page<LogEntry>> {
        let call = Call::get(&["v1", "automation-log"])
            .param("timeline_id", req.timeline_id.as_ref())
            .param("date_range", req.date_range.as_ref())
            .page(&req.page);
        let answer = self.send(call).await?;
        let body: LogBody = answer.json()?;
        Ok(Page {
            items: body.log_entries,
            next_cursor: body.next_cursor.or_else(|| answer.link_cursor()),
        })
    }
}

#[async_trait]
impl Merges for RemoteClient {
    async fn merge_timelines(&self, req: MergeRequest) -> ServiceResult<MergeResult> {
        self.send(Call::post(&["v1", "merge-timelines"], &req)?)
            .await?
            .json()
    }

    async fn list_merges(&self, page: PageRequest) -> ServiceResult<Page<Merge>> {
        self.list(&["v1", "merges"], &page).await
    }

    async fn get_merge(&self, id: &MergeId) -> ServiceResult<Merge> {
        let id = segment("merge", id.as_str())?;
        self.send(Call::get(&["v1", "merges", id])).await?.json()
    }

    async fn review_conflicts(&self, req: ReviewQuery) -> ServiceResult<ConflictReview> {
        let call = Call::get(&["v1", "review-conflicts"])
            .param("merged_timeline_id", Some(&req.merged_timeline_id))
            .param("merge_id", req.merge_id.as_ref());
        self.send(call).await?.json()
    }

    async fn resolve_conflict(&self, req: ResolveRequest) -> ServiceResult<ResolveResult> {
        self.send(Call::post(&["v1", "resolve-conflict"], &req)?)
            .await?
            .json()
    }

    async fn abort_merge(&self, id: &MergeId) -> ServiceResult<()> {
        let id = segment("merge", id.as_str())?;
        self.send(Call::delete(&["v1", "merges", id])).await?;
        Ok(())
    }

    async fn diff_timelines(&self, req: DiffQuery) -> ServiceResult<TimelineDiff> {
        let call = Call::get(&["v1", "diff-timelines"])
            .param("source_timeline_id", Some(&req.source_timeline_id))
            .param(
                "destination_timeline_id",
                Some(&req.destination_timeline_id),
            );
        self.send(call).await?.json()
    }
}

#[async_trait]
impl Data for RemoteClient {
    async fn store_data(&self, req: StoreDataRequest) -> ServiceResult<DataEntryInfo> {
        self.send(Call::post(&["v1", "store-data"], &req)?)
            .await?
            .json()
    }

    async fn retrieve_data(&self, req: RetrieveDataQuery) -> ServiceResult<RetrievedData> {
        let call = Call::get(&["v1", "retrieve-data"])
            .param("timeline_id", Some(&req.timeline_id))
            .param(
                "timestamp",
                Some(crate::model::format_instant(&req.timestamp)),
            )
            .param("data_id", req.data_id.as_ref());
        self.send(call).await?.json()
    }

    async fn encrypt_data(&self, req: EncryptDataRequest) -> ServiceResult<DataEntryInfo> {
        /// The full answer: the entry beside the algorithm.
        #[derive(serde::Deserialize)]
        struct Encrypted {
            entry: DataEntryInfo,
        }
        let answer: Encrypted = self
            .send(Call::post(&["v1", "encrypt-data"], &req)?)
            .await?
            .json()?;
        Ok(answer.entry)
    }

    async fn decrypt_data(&self, req: DecryptDataRequest) -> ServiceResult<DecryptedData> {
        self.send(Call::post(&["v1", "decrypt-data"], &req)?)
            .await?
            .json()
    }

    async fn report_index(&self, req: IndexRequest) -> ServiceResult<IndexReport> {
        self.send(Call::post(&["v1", "create-index"], &req)?)
            .await?
            .json()
    }

    async fn enable_caching(&self, req: CachingRequest) -> ServiceResult<CachingSetting> {
        self.send(Call::post(&["v1", "enable-caching"], &req)?)
            .await?
            .json()
    }

    async fn disable_caching(&self, id: &crate::model::CacheId) -> ServiceResult<()> {
        let id = segment("cache setting", id.as_str())?;
        self.send(Call::delete(&["v1", "caches", id])).await?;
        Ok(())
    }
}

#[async_trait]
impl Integrity for RemoteClient {
    async fn detect_tampering(&self, req: TamperQuery) -> ServiceResult<TamperReport> {
        self.send(Call::post(&["v1", "detect-tampering"], &req)?)
            .await?
            .json()
    }

    async fn validate_integrity(&self, req: IntegrityQuery) -> ServiceResult<IntegrityReport> {
        self.send(Call::post(&["v1", "validate-integrity"], &req)?)
            .await?
            .json()
    }
}

#[async_trait]
impl Security for RemoteClient {
    async fn set_access_control(
        &self,
        req: SetAccessControlRequest,
    ) -> ServiceResult<AccessControlSet> {
        self.send(Call::post(&["v1", "set-access-control"], &req)?)
            .await?
            .json()
    }

    async fn access_control(&self, timeline: &TimelineId) -> ServiceResult<AccessControlView> {
        let id = segment("timeline", timeline.as_str())?;
        self.send(Call::get(&["v1", "timeline", id, "access-control"]))
            .await?
            .json()
    }

    async fn list_access_controls(
        &self,
        page: PageRequest,
    ) -> ServiceResult<Page<AccessControlView>> {
        self.list(&["v1", "access-controls"], &page).await
    }

    async fn restrict_time_travel(&self, req: RestrictRequest) -> ServiceResult<Restricted> {
        self.send(Call::post(&["v1", "restrict-time-travel"], &req)?)
            .await?
            .json()
    }

    async fn access_logs(&self, req: AccessLogQuery) -> ServiceResult<AccessLog> {
        let call = Call::get(&["v1", "access-logs"])
            .param("timeline_id", Some(&req.timeline_id))
            .param("time_range", req.time_range.as_ref())
            .param("service_wide", req.service_wide.then_some(true))
            .page(&req.page);
        self.send(call).await?.json()
    }

    async fn list_restrictions(&self, page: PageRequest) -> ServiceResult<Page<Restriction>> {
        self.list(&["v1", "restrictions"], &page).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_base_url_is_an_http_or_https_server_root() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://127.0.0.1:8080/",
            " http://localhost:8080 ",
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8080/v1/",
        ] {
            let c = RemoteClient::new(ok, "t").unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert_eq!(
                c.base_url(),
                ok.trim().replace("/v1", "").trim_end_matches('/')
            );
        }
        for (given, root) in [
            ("https://h:8443", "https://h:8443"),
            ("https://h:8443/v1", "https://h:8443"),
            ("https://h:8443/v1/", "https://h:8443"),
            ("https://h/chrono/v1", "https://h/chrono"),
            ("https://h/v10", "https://h/v10"),
        ] {
            let c = RemoteClient::new(given, "t").unwrap_or_else(|e| panic!("{given}: {e}"));
            assert_eq!(c.base_url(), root, "{given}");
            let url = c.url(&Call::get(&["v1", "me"])).unwrap();
            assert_eq!(url.as_str(), format!("{root}/v1/me?view=full"));
        }
        let c = RemoteClient::new("http://h:1/", "t").unwrap();
        let url = c.url(&Call::get(&["v1", "timelines"])).unwrap();
        assert_eq!(url.as_str(), "http://h:1/v1/timelines?view=full");
        // Behind a proxy under a path, routes go under it.
        let c = RemoteClient::new("http://h:1/chrono/", "t").unwrap();
        let url = c
            .url(&Call::get(&["v1", "items"]).page(&PageRequest {
                limit: Some(2),
                cursor: Some("a|b c".into()),
            }))
            .unwrap();
        assert_eq!(
            url.as_str(),
            "http://h:1/chrono/v1/items?limit=2&cursor=a%7Cb+c&view=full"
        );

        for (bad, says) in [
            (
                "127.0.0.1:8080",
                "no scheme; give the server root with http:// or https://, like http://127.0.0.1:8080",
            ),
            ("localhost:8080", "no scheme"),
            ("ftp://h:1", "scheme 'ftp'"),
            ("http://bad host:1", "not a URL"),
            ("http://h:1/?x=1", "query"),
            ("http://u:p@h:1", "credentials"),
        ] {
            match RemoteClient::new(bad, "t") {
                Err(ServiceError::InvalidInput { field, message }) => {
                    assert_eq!(field, "base_url");
                    assert!(message.contains(says), "{bad}: {message}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_token_must_fit_in_a_header_and_is_never_printed() {
        assert!(matches!(
            RemoteClient::new("http://h:1", " "),
            Err(ServiceError::InvalidInput { field, .. }) if field == "token"
        ));
        assert!(matches!(
            RemoteClient::new("http://h:1", "abc\ndef"),
            Err(ServiceError::InvalidInput { field, .. }) if field == "token"
        ));
        let c = RemoteClient::new("http://h:1", "s3cret-token").unwrap();
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn dot_segments_are_not_found_without_a_request() {
        assert_eq!(
            segment("timeline", ".."),
            Err(ServiceError::not_found("timeline", ".."))
        );
        assert_eq!(segment("timeline", "tml_a"), Ok("tml_a"));
    }

    #[test]
    fn posts_carry_their_own_key_and_only_unsent_deletes_retry() {
        assert_eq!(Call::get(&["v1"]).retry(), Retry::Safe);
        assert_eq!(Call::delete(&["v1"]).retry(), Retry::Unsent);
        let body = serde_json::json!({});
        let (a, b) = (
            Call::post(&["v1"], &body).unwrap(),
            Call::post(&["v1"], &body).unwrap(),
        );
        assert_eq!(a.retry(), Retry::Keyed);
        assert!(a.key.is_some());
        assert_ne!(a.key, b.key, "every call has a key of its own");
        let unkeyed = Call { key: None, ..a };
        assert_eq!(unkeyed.retry(), Retry::Never);
    }

    #[tokio::test]
    async fn an_unreachable_server_is_unavailable_naming_its_url() {
        // Bind then drop a listener: the port is now (very likely) closed.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let base = format!("http://127.0.0.1:{port}");
        let c = RemoteClient::builder(&base, "t")
            .retry_backoff(Duration::from_millis(1))
            .build()
            .unwrap();
        match c.list_timelines(PageRequest::default()).await {
            Err(ServiceError::Unavailable(m)) => {
                assert_eq!(m, format!("cannot reach {base}: connection refused"));
            }
            other => panic!("{other:?}"),
        }
        match c.register_item(NewItem::default()).await {
            Err(ServiceError::Unavailable(m)) => assert!(m.starts_with("cannot reach")),
            other => panic!("{other:?}"),
        }
    }

    /// A stand-in server whose answers a test scripts, counting the requests it gets.
    mod stand_in {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        use axum::Router;
        use axum::http::{HeaderMap, StatusCode, header};
        use axum::response::IntoResponse;
        use axum::routing::get;

        /// Serves `router` on a loopback port; returns its root URL.
        pub async fn serve(router: Router) -> String {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, router).await });
            format!("http://{addr}")
        }

        /// Every route answers 503 until it has been called `fail` times, then 200 `[]`.
        pub fn flaky(fail: usize) -> (Router, Arc<AtomicUsize>) {
            flaky_with(fail, None)
        }

        /// [`flaky`], its 503s carrying `Retry-After: {retry_after}` when given.
        pub fn flaky_with(
            fail: usize,
            retry_after: Option<&'static str>,
        ) -> (Router, Arc<AtomicUsize>) {
            let calls = Arc::new(AtomicUsize::new(0));
            let answer = {
                let calls = calls.clone();
                move || {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        if n < fail {
                            let mut h = HeaderMap::new();
                            h.insert(
                                header::CONTENT_TYPE,
                                "application/problem+json".parse().unwrap(),
                            );
                            if let Some(secs) = retry_after {
                                h.insert(header::RETRY_AFTER, secs.parse().unwrap());
                            }
                            (StatusCode::SERVICE_UNAVAILABLE, h, r#"{"type":"/problems/unavailable","title":"Service unavailable","status":503,"detail":"storage is restarting"}"#).into_response()
                        } else {
                            let mut h = HeaderMap::new();
                            h.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
                            (StatusCode::OK, h, "[]").into_response()
                        }
                    }
                }
            };
            let router = Router::new()
                .route("/v1/timelines", get(answer.clone()))
                .route("/v1/items", axum::routing::post(answer.clone()))
                .route("/v1/timeline/{id}", axum::routing::delete(answer));
            (router, calls)
        }
    }

    fn quick(base: &str) -> RemoteClient {
        RemoteClient::builder(base, "t")
            .retry_backoff(Duration::from_millis(1))
            .build()
            .unwrap()
    }

    /// A server that answers every request 429 with `Retry-After: {retry_after}`.
    async fn always_limited(retry_after: &'static str) -> (String, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let router = axum::Router::new().route(
            "/v1/timelines",
            axum::routing::get(move || {
                seen.fetch_add(1, Ordering::SeqCst);
                async move {
                    (
                        axum::http::StatusCode::TOO_MANY_REQUESTS,
                        [(axum::http::header::RETRY_AFTER, retry_after)],
                        "",
                    )
                }
            }),
        );
        (stand_in::serve(router).await, calls)
    }

    #[tokio::test]
    async fn a_429_is_sent_again_a_bounded_number_of_times_and_said_once() {
        let (base, calls) = always_limited("0").await;
        let told = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&told);
        let c = RemoteClient::builder(&base, "t")
            .retry_rate_limited(RateLimitRetry {
                attempts: 2,
                total_wait: Duration::from_secs(30),
            })
            .on_rate_limit_wait(move |_| {
                count.fetch_add(1, Ordering::SeqCst);
            })
            .build()
            .unwrap();
        assert!(matches!(
            c.list_timelines(PageRequest::default()).await,
            Err(ServiceError::RateLimited { .. })
        ));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "the first try and two more"
        );
        assert_eq!(told.load(Ordering::SeqCst), 1);
        // Without retries (the default) a 429 is the answer at once.
        let _ = quick(&base).list_timelines(PageRequest::default()).await;
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_retry_after_beyond_the_budget_is_the_answer_without_waiting() {
        let (base, calls) = always_limited("3600").await;
        let c = RemoteClient::builder(&base, "t")
            .retry_rate_limited(RateLimitRetry {
                attempts: 5,
                total_wait: Duration::from_secs(30),
            })
            .build()
            .unwrap();
        assert_eq!(
            c.list_timelines(PageRequest::default()).await,
            Err(ServiceError::RateLimited {
                retry_after_secs: 3600
            })
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn reads_retry_twice_after_a_503_and_then_succeed() {
        use std::sync::atomic::Ordering;
        let (router, calls) = stand_in::flaky(2);
        let c = quick(&stand_in::serve(router).await);
        let page = c.list_timelines(PageRequest::default()).await.unwrap();
        assert!(page.items.is_empty());
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn reads_give_up_after_two_retries_with_the_servers_detail() {
        use std::sync::atomic::Ordering;
        let (router, calls) = stand_in::flaky(10);
        let c = quick(&stand_in::serve(router).await);
        assert_eq!(
            c.list_timelines(PageRequest::default()).await,
            Err(ServiceError::Unavailable("storage is restarting".into()))
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    /// A 503 that says when to come back is waited out like a 429, within the same budget,
    /// for what is safe to send again: a read, not a delete the server may have applied.
    #[tokio::test]
    async fn a_503_with_retry_after_is_waited_out_for_what_is_safe_to_send_again() {
        use std::sync::Mutex;
        let patient = |base: &str, told: Arc<Mutex<Vec<Waiting>>>| {
            RemoteClient::builder(base, "t")
                .retry_backoff(Duration::from_millis(1))
                .retry_rate_limited(RateLimitRetry {
                    attempts: 8,
                    total_wait: Duration::from_secs(30),
                })
                .on_rate_limit_wait(move |w| told.lock().unwrap().push(w))
                .build()
                .unwrap()
        };
        let told = Arc::new(Mutex::new(Vec::new()));
        let (router, calls) = stand_in::flaky_with(5, Some("0"));
        let c = patient(&stand_in::serve(router).await, Arc::clone(&told));
        let page = c.list_timelines(PageRequest::default()).await;
        assert!(page.is_ok(), "{page:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 6, "five 503s waited out");
        let told = told.lock().unwrap().clone();
        assert_eq!(told.len(), 1, "said once: {told:?}");
        assert_eq!(told[0].status, 503);

        let (router, calls) = stand_in::flaky_with(5, Some("0"));
        let c = patient(&stand_in::serve(router).await, Arc::default());
        let id: TimelineId = "primary".parse().unwrap();
        assert!(matches!(
            c.delete_timeline(&id).await,
            Err(ServiceError::Unavailable(_))
        ));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "a delete is not sent again"
        );
    }

    #[tokio::test]
    async fn keyed_posts_retry_with_one_key_and_answered_deletes_are_sent_once() {
        use std::sync::atomic::Ordering;
        use std::sync::{Arc, Mutex};
        let keys = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = Arc::clone(&keys);
        let router = axum::Router::new().route(
            "/v1/items",
            axum::routing::post(move |headers: axum::http::HeaderMap| {
                let seen = Arc::clone(&seen);
                async move {
                    let key = headers
                        .get(IDEMPOTENCY_KEY)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("none")
                        .to_owned();
                    seen.lock().unwrap().push(key);
                    axum::http::StatusCode::SERVICE_UNAVAILABLE
                }
            }),
        );
        let c = quick(&stand_in::serve(router).await);
        let err = c.register_item(NewItem::default()).await.unwrap_err();
        assert!(matches!(err, ServiceError::Unavailable(_)), "{err:?}");
        let keys = keys.lock().unwrap().clone();
        assert_eq!(keys.len(), 1 + RETRIES as usize, "tried again: {keys:?}");
        assert!(keys[0].parse::<ulid::Ulid>().is_ok(), "{keys:?}");
        assert!(keys.iter().all(|k| *k == keys[0]), "one key: {keys:?}");

        let (router, calls) = stand_in::flaky(10);
        let c = quick(&stand_in::serve(router).await);
        let err = c
            .delete_timeline(&"tml_a".parse().unwrap())
            .await
            .unwrap_err();
        assert!(matches!(err, ServiceError::Unavailable(_)), "{err:?}");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "a DELETE that was answered is sent once"
        );
    }

    #[tokio::test]
    async fn lists_follow_the_link_header_and_bad_bodies_name_the_route() {
        use axum::http::{HeaderMap, header};
        use axum::routing::get;
        let router = axum::Router::new()
            .route(
                "/v1/items",
                get(|| async {
                    let mut h = HeaderMap::new();
                    h.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
                    h.insert(
                        header::LINK,
                        r#"</v1/items?limit=1&cursor=itm_b&view=full>; rel="next""#
                            .parse()
                            .unwrap(),
                    );
                    (h, "[]")
                }),
            )
            .route("/v1/me", get(|| async { "{\"not\": \"a traveller\"}" }));
        let c = quick(&stand_in::serve(router).await);
        let page = c.list_items(PageRequest::first(1)).await.unwrap();
        assert_eq!(page.next_cursor.as_deref(), Some("itm_b"));
        match c.whoami().await {
            Err(ServiceError::Internal(m)) => assert!(m.contains("GET /v1/me"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_unavailable_after_the_request_timeout() {
        // Accepts connections and reads nothing back: the request can only time out.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let silent = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                open.push(socket);
            }
        });
        let c = RemoteClient::builder(&base, "t")
            .request_timeout(Duration::from_millis(200))
            .retry_backoff(Duration::from_millis(1))
            .build()
            .unwrap();
        assert_eq!(
            c.register_item(NewItem::default()).await,
            Err(ServiceError::Unavailable(format!(
                "cannot reach {base}: no answer within 0.2 s"
            )))
        );
        silent.abort();
    }

    #[tokio::test]
    async fn an_unknown_host_is_unavailable_naming_the_url() {
        // `.invalid` never resolves (RFC 6761); whether the resolver says so or times out,
        // the caller learns which server could not be reached.
        let base = "http://chronoscope.invalid:8080";
        let c = RemoteClient::builder(base, "t")
            .connect_timeout(Duration::from_secs(2))
            .retry_backoff(Duration::from_millis(1))
            .build()
            .unwrap();
        match c.whoami().await {
            Err(ServiceError::Unavailable(m)) => {
                assert!(m.starts_with(&format!("cannot reach {base}: ")), "{m}");
                assert!(
                    m.contains("cannot resolve the host name 'chronoscope.invalid'")
                        || m.contains("no connection within"),
                    "{m}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
