//! The HTTP side of the test support: a router over an in-memory engine, tokens, calls (used
//! by the tests/http_*.rs suites as `support::http`).
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chronoscope::error::ServiceError;
use chronoscope::model::*;
use chronoscope::server::Sessions;
use chronoscope::service::*;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use chronoscope::auth::{Claims, Scope, Scopes, Secret, issue_token, sign};
use chronoscope::engine::idempotency::Idempotency;
use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::server::{RateLimit, ServerConfig, build_router};
use chronoscope::store::MemoryStore;
use serde_json::Value;
use tower::ServiceExt;

pub const SECRET: &str = "test secret that is long enough for HS256";

pub fn secret() -> Secret {
    Secret::from_bytes(SECRET).expect("secret")
}

pub fn config() -> ServerConfig {
    let mut c = ServerConfig::new(secret());
    c.rate_limit = RateLimit::OFF;
    c
}

pub async fn engine() -> Arc<Engine> {
    Engine::open(
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
        EngineConfig::default(),
        Seed::None,
    )
    .await
    .expect("engine")
}

pub struct App {
    pub router: Router,
    pub engine: Arc<Engine>,
    /// Whether each answer's status must be one its operation documents (not for services
    /// made to fail with errors the engine never gives there).
    pub documented: bool,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?} {}", self.status, self.text))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }

    /// Asserts a problem+json body with exactly the five members and the given status/type.
    pub fn assert_problem(&self, status: u16, slug: &str) -> Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        assert_eq!(
            self.content_type(),
            "application/problem+json",
            "{}",
            self.text
        );
        let body = self.json();
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            ["detail", "instance", "status", "title", "type"],
            "{}",
            self.text
        );
        assert_eq!(body["type"], format!("/problems/{slug}"), "{}", self.text);
        assert_eq!(body["status"], status);
        assert!(body["instance"].as_str().unwrap().starts_with("/requests/"));
        body
    }
}

impl App {
    pub async fn new() -> Self {
        Self::with(config()).await
    }

    pub async fn with(config: ServerConfig) -> Self {
        let engine = engine().await;
        Self {
            router: build_router(config, Arc::clone(&engine)),
            engine,
            documented: true,
        }
    }

    pub async fn send(&self, req: Request<Body>) -> Resp {
        if self.documented {
            send_to(&self.router, req).await
        } else {
            answer(&self.router, req).await
        }
    }

    /// A call as `token` (None: no Authorization header), with an optional JSON body.
    pub async fn call(
        &self,
        method: Method,
        uri: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let body = match body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        self.send(req.body(body).unwrap()).await
    }

    pub async fn get(&self, uri: &str, token: &str) -> Resp {
        self.call(Method::GET, uri, Some(token), None).await
    }

    /// The JSON array a GET of `uri` as `token` answers.
    pub async fn list(&self, uri: &str, token: &str) -> Vec<Value> {
        let resp = self.get(uri, token).await;
        match resp.json() {
            Value::Array(items) => items,
            other => panic!("not a JSON array: {:?} {other}", resp.status),
        }
    }

    pub async fn post(&self, uri: &str, token: &str, body: Value) -> Resp {
        self.call(Method::POST, uri, Some(token), Some(body)).await
    }

    pub async fn delete(&self, uri: &str, token: &str) -> Resp {
        self.call(Method::DELETE, uri, Some(token), None).await
    }
}

/// Sends `req` through `router` and reads the whole answer. Every answer of an operation the
/// served description lists must carry a status that operation documents: each HTTP test is
/// also a check that a generated client or schemathesis would not meet an undocumented status.
pub async fn send_to(router: &Router, req: Request<Body>) -> Resp {
    let method = req.method().as_str().to_ascii_lowercase();
    let path = req.uri().path().to_owned();
    let resp = answer(router, req).await;
    if let Some(documented) = documented_statuses(&method, &path) {
        assert!(
            documented.contains(&resp.status.as_str().to_owned()),
            "{} {path} answered {}, which its operation does not document ({documented:?})",
            method.to_uppercase(),
            resp.status
        );
    }
    resp
}

/// Sends `req` through `router` and reads the whole answer, whatever its status.
async fn answer(router: &Router, req: Request<Body>) -> Resp {
    let resp = router.clone().oneshot(req).await.expect("infallible");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("body");
    Resp {
        status,
        headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The statuses the served description documents for `method` on the concrete `path` (a
/// template segment like `{timeline_id}` matches any one segment), or None when it lists no
/// such operation.
pub fn documented_statuses(method: &str, path: &str) -> Option<Vec<String>> {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let doc = DOC.get_or_init(chronoscope::server::openapi);
    let segments: Vec<&str> = path.split('/').collect();
    // A literal path wins over a template that also matches (`/v1/timelines/import`).
    let (_, item) = doc["paths"]
        .as_object()?
        .iter()
        .filter(|(template, _)| {
            let parts: Vec<&str> = template.split('/').collect();
            parts.len() == segments.len()
                && parts
                    .iter()
                    .zip(&segments)
                    .all(|(t, s)| t == s || (t.starts_with('{') && !s.is_empty()))
        })
        .min_by_key(|(template, _)| template.matches('{').count())?;
    let responses = item.get(method)?.get("responses")?.as_object()?;
    Some(responses.keys().cloned().collect())
}

/// A POST with a JSON body and, when given, an `Idempotency-Key`.
pub fn keyed(uri: &str, token: &str, key: Option<&str>, body: &Value) -> Request<Body> {
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json");
    if let Some(key) = key {
        req = req.header("idempotency-key", key);
    }
    req.body(Body::from(body.to_string())).expect("a request")
}

/// Sends a POST with a JSON body and, when given, an `Idempotency-Key` (see [`keyed`]).
pub async fn post_keyed(
    router: &Router,
    uri: &str,
    token: &str,
    key: Option<&str>,
    body: &Value,
) -> Resp {
    send_to(router, keyed(uri, token, key, body)).await
}

/// A read+write token for `sub`.
pub fn token(sub: &str) -> String {
    let scopes: Scopes = [Scope::Read, Scope::Write].into_iter().collect();
    issue_token(&secret(), sub, &scopes, Duration::from_secs(600)).unwrap()
}

/// A token for `sub` with exactly `scope`.
pub fn token_with_scope(sub: &str, scope: &str) -> String {
    let now = now();
    sign(
        &secret(),
        &Claims {
            sub: sub.into(),
            exp: now + 600,
            iat: now,
            scope: scope.into(),
        },
    )
    .unwrap()
}

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The `detail` of a problem body.
pub fn detail(problem: &Value) -> &str {
    problem["detail"].as_str().expect("a problem has a detail")
}

pub fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
    k.sort();
    k
}

/// Sessions over the engine that can pause before every call and fail chosen operations:
/// for timeouts and for errors the engine cannot be made to give on demand.
#[derive(Clone)]
pub struct Wrapped {
    pub engine: Arc<Engine>,
    pause: Duration,
    failures: Arc<HashMap<&'static str, ServiceError>>,
    /// Sessions made so far, by every clone: one per request that reached a handler.
    sessions_made: Arc<std::sync::atomic::AtomicUsize>,
}

impl Wrapped {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            pause: Duration::ZERO,
            failures: Arc::new(HashMap::new()),
            sessions_made: Arc::default(),
        }
    }

    /// How many sessions were made so far (by this value and its clones): a request has
    /// reached its handler once this counts it.
    pub fn sessions_made(&self) -> usize {
        self.sessions_made.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn slow(mut self, pause: Duration) -> Self {
        self.pause = pause;
        self
    }

    /// `operation` (a trait method name) answers `error`.
    pub fn failing(mut self, operation: &'static str, error: ServiceError) -> Self {
        Arc::make_mut(&mut self.failures).insert(operation, error);
        self
    }

    pub fn app(self, config: ServerConfig) -> App {
        // Failures are injected where the engine never gives them: not the description's.
        let documented = self.failures.is_empty();
        App {
            engine: Arc::clone(&self.engine),
            router: build_router(config, self),
            documented,
        }
    }
}

impl Sessions for Wrapped {
    fn session(
        &self,
        traveller: Traveller,
        idempotency: Option<Idempotency>,
        scopes: &chronoscope::auth::Scopes,
    ) -> Arc<dyn TimelineService> {
        use chronoscope::auth::Scope;
        self.sessions_made
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Arc::new(WrappedService {
            inner: match idempotency {
                Some(request) => self.engine.keyed_session(traveller, request),
                None => self.engine.session(traveller),
            }
            .with_admin(scopes.allows(Scope::Admin))
            .with_write(scopes.allows(Scope::Write)),
            pause: self.pause,
            failures: Arc::clone(&self.failures),
        })
    }
}

struct WrappedService {
    inner: chronoscope::engine::EngineSession,
    pause: Duration,
    failures: Arc<HashMap<&'static str, ServiceError>>,
}

impl WrappedService {
    async fn hook(&self, operation: &str) -> ServiceResult<()> {
        if !self.pause.is_zero() {
            tokio::time::sleep(self.pause).await;
        }
        match self.failures.get(operation) {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

macro_rules! wrapped {
    ($(impl $concern:ident { $($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)* })*) => {
        $(
            #[async_trait]
            impl $concern for WrappedService {
                $(async fn $name(&self, $($arg: $ty),*) -> ServiceResult<$ret> {
                    self.hook(stringify!($name)).await?;
                    self.inner.$name($($arg),*).await
                })*
            }
        )*
    };
}

wrapped! {
    impl Timelines {
        whoami() -> TravellerStatus;
        list_timelines(page: PageRequest) -> Page<TimelineInfo>;
        find_timelines(req: TimelineQuery) -> Page<TimelineInfo>;
        create_timeline(req: NewTimeline) -> TimelineInfo;
        get_timeline(id: &TimelineId) -> TimelineInfo;
        delete_timeline(id: &TimelineId) -> ();
    }
    impl Transfer {
        export_timeline(id: &TimelineId) -> WorldFile;
        import_timelines(req: ImportRequest) -> ImportReport;
    }
    impl Navigation {
        retrieve_item(req: RetrieveItemRequest) -> RetrievedItem;
        travel(req: TravelRequest) -> Journey;
        travel_to_time(req: TimeTravelRequest) -> Journey;
        travel_in_time(req: GuideTravelRequest) -> Journey;
        return_to_anchor(req: ReturnRequest) -> Journey;
        switch_timeline(req: SwitchRequest) -> Switched;
        fast_forward(req: ShiftRequest) -> Journey;
        pause_time() -> ClockState;
        resume_time() -> ClockState;
        rewind(req: ShiftRequest) -> Journey;
        list_journeys(page: PageRequest) -> Page<Journey>;
        register_item(req: NewItem) -> Item;
        get_item(id: &ItemId) -> Item;
        list_items(page: PageRequest) -> Page<Item>;
    }
    impl Anchors {
        set_anchor(req: NewAnchor) -> Anchor;
        get_anchor(id: &AnchorId) -> Anchor;
        list_anchors(page: PageRequest) -> Page<Anchor>;
        set_precise_anchor(req: NewPreciseAnchor) -> AnchorRecord;
        find_anchors(req: AnchorListQuery) -> Page<AnchorRecord>;
        delete_anchor(req: AnchorRef) -> ();
        check_anchor_stability(req: AnchorRef) -> AnchorStability;
        adjust_anchor(req: AdjustAnchorRequest) -> AnchorRecord;
        simulate_wormhole(req: WormholeRequest) -> WormholeSimulation;
    }
    impl Events {
        monitor_events(req: MonitorEventsQuery) -> Page<MonitoredEvent>;
        watch_events(req: MonitorEventsQuery) -> EventsStream;
        search_events(req: SearchQuery) -> Page<EventRecord>;
        event_versions(req: SearchQuery) -> Page<EventRecord>;
        add_event(timeline: &TimelineId, req: NewEvent) -> EventRecord;
        manipulate_event(req: ManipulateRequest) -> ManipulationResult;
        revert_event(req: RevertRequest) -> RevertResult;
    }
    impl Paradoxes {
        check_paradox(req: ParadoxCheckRequest) -> ParadoxReport;
        check_stability(req: StabilityQuery) -> ParadoxReport;
        monitor_timeline(req: MonitorQuery) -> MonitorReport;
        watch_monitor(req: MonitorWatch) -> MonitorStream;
        check_timeline(req: SignificantEventQuery) -> TimelineCheck;
        correct_dissonance(req: DissonanceRequest) -> DissonanceResult;
        isolate_event(req: IsolateRequest) -> Isolation;
        lift_isolation(id: &IsolationId) -> ();
    }
    impl Automation {
        create_script(req: NewScript) -> Script;
        list_scripts(page: PageRequest) -> Page<Script>;
        delete_script(id: &ScriptId) -> ();
        schedule_manipulation(req: NewSchedule) -> Schedule;
        trigger_external_manipulation(req: ExternalTrigger) -> Schedule;
        list_schedules(page: PageRequest) -> Page<Schedule>;
        delete_schedule(id: &ScheduleId) -> ();
        automation_log(req: LogQuery) -> Page<LogEntry>;
    }
    impl Merges {
        merge_timelines(req: MergeRequest) -> MergeResult;
        list_merges(page: PageRequest) -> Page<Merge>;
        get_merge(id: &MergeId) -> Merge;
        review_conflicts(req: ReviewQuery) -> ConflictReview;
        resolve_conflict(req: ResolveRequest) -> ResolveResult;
        abort_merge(id: &MergeId) -> ();
        diff_timelines(req: DiffQuery) -> TimelineDiff;
    }
    impl Data {
        disable_caching(id: &chronoscope::model::CacheId) -> ();
        store_data(req: StoreDataRequest) -> DataEntryInfo;
        retrieve_data(req: RetrieveDataQuery) -> RetrievedData;
        encrypt_data(req: EncryptDataRequest) -> DataEntryInfo;
        decrypt_data(req: DecryptDataRequest) -> DecryptedData;
        report_index(req: IndexRequest) -> IndexReport;
        enable_caching(req: CachingRequest) -> CachingSetting;
    }
    impl Integrity {
        detect_tampering(req: TamperQuery) -> TamperReport;
        validate_integrity(req: IntegrityQuery) -> IntegrityReport;
    }
    impl Security {
        set_access_control(req: SetAccessControlRequest) -> AccessControlSet;
        access_control(timeline: &TimelineId) -> AccessControlView;
        list_access_controls(page: PageRequest) -> Page<AccessControlView>;
        restrict_time_travel(req: RestrictRequest) -> Restricted;
        list_restrictions(page: PageRequest) -> Page<Restriction>;
        access_logs(req: AccessLogQuery) -> AccessLog;
    }
}
