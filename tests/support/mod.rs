//! Helpers shared by the tests: an engine on a fresh store, a server on a free port with a
//! token, the dashboard on a `TestBackend`; and a fresh PostgreSQL database per test, or a skip
//! notice.
//!
//! PostgreSQL tests run whenever the server at `CHRONOSCOPE_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`, an admin database) is reachable. When it is
//! not, they print a notice and pass, unless `CHRONOSCOPE_REQUIRE_POSTGRES=1` (CI), which makes
//! them fail.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chronoscope::engine::{Clock, Engine, EngineConfig, ManualClock, Seed};
use chronoscope::error::ServiceError;
use chronoscope::model::{
    Event, EventId, EventStatus, Instant, ItemId, Timeline, TimelineId, Window, parse_instant,
};
use chronoscope::service::prelude::*;
use chronoscope::service::{
    EventRecord, ManipulateRequest, MonitorQuery, MonitorReport, NewEvent, NewOutcome, NewTimeline,
    OutcomeChange, PageRequest, RevertRequest, ScanDepth, SearchQuery, TamperQuery, TimelineInfo,
    TravelRequest,
};
use chronoscope::store::{
    Appending, ChainMeta, Entry, Link, LogLock, MemoryStore, Record, Store, StoreError,
};
use chronoscope::tui::action::{Msg, Reply, Slot};
use chronoscope::tui::testing::Harness;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, Connection};

pub mod http;

/// Asserts that `value` matches the pattern (an `if` guard allowed), showing `value` when not.
#[allow(unused_macros)]
macro_rules! assert_matches {
    ($value:expr, $($pattern:tt)+) => {
        assert!(matches!($value, $($pattern)+), "{:?}", $value)
    };
}

/// Asserts that `text` says every one of `parts`, showing `text` when it does not.
#[track_caller]
pub fn assert_contains_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} is missing from:\n{text}");
    }
}

// ---------------------------------------------------------------- engines, servers, dashboards

/// Where the tests' manual clocks start.
pub const START: &str = "2026-11-22T10:00:00Z";

/// The instant written `s` (RFC 3339 or the other forms a user may type).
pub fn t(s: &str) -> Instant {
    parse_instant("t", s).expect("test instant")
}

/// An engine on `store` with `clock`, nothing seeded.
pub async fn engine_on(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Arc<Engine> {
    Engine::open(store, clock, EngineConfig::default(), Seed::None)
        .await
        .expect("engine opens")
}

/// An engine on `store` on the system clock, nothing seeded.
pub async fn system_engine(store: Arc<dyn Store>) -> Arc<Engine> {
    engine_on(store, Arc::new(chronoscope::engine::SystemClock)).await
}

/// An engine on a fresh in-memory store on the system clock.
pub async fn memory_engine() -> Arc<Engine> {
    system_engine(Arc::new(MemoryStore::new())).await
}

/// An engine on a fresh in-memory store, its clock at [`START`] and moved by hand.
pub struct Fresh {
    /// The engine.
    pub engine: Arc<Engine>,
    /// Its clock.
    pub clock: Arc<ManualClock>,
    /// Its store.
    pub store: Arc<MemoryStore>,
}

impl Fresh {
    /// A new engine on a new store.
    pub async fn new() -> Self {
        let clock = Arc::new(ManualClock::new(t(START)));
        let store = Arc::new(MemoryStore::new());
        let engine = engine_on(store.clone(), clock.clone()).await;
        Self {
            engine,
            clock,
            store,
        }
    }

    /// The traveller `name`'s view of the engine.
    pub fn session(&self, name: &str) -> Arc<dyn TimelineService> {
        Arc::new(self.engine.session(name.parse().expect("traveller name")))
    }
}

/// A timeline as the log records it: `id`, named after itself, branching from `parent`,
/// created at `created_at`, with no description or variation, open forever.
pub fn timeline_record(
    id: TimelineId,
    parent: Option<TimelineId>,
    created_at: Instant,
) -> Timeline {
    Timeline {
        name: id.to_string(),
        id,
        description: None,
        variation: None,
        destination_time: None,
        created_at,
        window: Window::Unbounded,
        parent,
        created_by: None,
    }
}

/// An event as the log records it: `id`, its own lineage, caused by `causes`, on schedule, not
/// a fixed point, by no one.
pub fn event_record(
    id: EventId,
    time: Instant,
    description: String,
    location: String,
    causes: Vec<EventId>,
) -> Event {
    Event {
        lineage: id.clone(),
        id,
        description,
        time,
        location,
        causes,
        fixed_point: false,
        status: EventStatus::OnSchedule,
        supersedes: None,
        superseded_by: None,
        author: None,
    }
}

/// A new event, not safety checked and not a fixed point.
pub fn new_event(description: &str, time: &str, location: &str, causes: &[&EventId]) -> NewEvent {
    NewEvent {
        description: description.into(),
        time: t(time),
        location: location.into(),
        causes: causes.iter().map(|c| (*c).clone()).collect(),
        fixed_point: false,
        safety_check: false,
    }
}

/// A timeline named `name` branching from the primary one.
pub fn named(name: &str) -> NewTimeline {
    NewTimeline {
        name: Some(name.into()),
        ..NewTimeline::default()
    }
}

/// Adds `event` to the primary timeline through `service`: the new event's id.
pub async fn add_to_primary(service: &(impl TimelineService + ?Sized), event: NewEvent) -> EventId {
    service
        .add_event(&TimelineId::primary(), event)
        .await
        .expect("event added")
        .event_id
}

/// An outcome that only gives an event the description `description`.
pub fn described(description: &str) -> NewOutcome {
    NewOutcome {
        description: Some(description.into()),
        changes: vec![],
    }
}

/// An outcome that only moves an event to the time written `time`.
pub fn retimed(time: &str) -> NewOutcome {
    NewOutcome {
        description: None,
        changes: vec![OutcomeChange {
            action: None,
            time: Some(t(time)),
        }],
    }
}

/// A manipulation of `event` (or the head of its lineage) in `timeline` (`None`: where the
/// traveller is) to `outcome`, not safety checked.
pub fn manipulation(
    timeline: Option<&TimelineId>,
    event: &EventId,
    outcome: NewOutcome,
) -> ManipulateRequest {
    ManipulateRequest {
        timeline_id: timeline.cloned(),
        event_id: event.clone(),
        new_outcome: outcome,
        safety_check: false,
    }
}

/// A timeline named `name` branching from `base`.
pub fn branch_of(name: &str, base: &TimelineId) -> NewTimeline {
    NewTimeline {
        base_timeline_id: Some(base.clone()),
        ..named(name)
    }
}

/// A timeline named `name` branching from the primary one, travelling to the instant written
/// `destination`.
pub fn bound_for(name: &str, destination: &str) -> NewTimeline {
    NewTimeline {
        destination_time: Some(t(destination)),
        ..named(name)
    }
}

/// Every event `service` finds in the primary timeline, with no filter (the first page).
pub async fn all_events(service: &(impl TimelineService + ?Sized)) -> Vec<EventRecord> {
    service
        .search_events(SearchQuery::default())
        .await
        .expect("events found")
        .items
}

/// What the monitor finds in `timeline` now, over all of its time, through `service`.
pub async fn monitor(
    service: &(impl TimelineService + ?Sized),
    timeline: &TimelineId,
) -> MonitorReport {
    service
        .monitor_timeline(MonitorQuery {
            timeline_id: timeline.clone(),
            time_range: None,
        })
        .await
        .expect("monitor report")
}

/// The timelines `service` lists on its first page.
pub async fn timelines(service: &(impl TimelineService + ?Sized)) -> Vec<TimelineInfo> {
    let page = service.list_timelines(PageRequest::default()).await;
    page.expect("timelines listed").items
}

/// A tampering scan of all of `timeline`'s history.
pub fn full_scan(timeline: TimelineId) -> TamperQuery {
    TamperQuery {
        timeline_id: timeline,
        scan_depth: ScanDepth::Full,
    }
}

/// The timeline `id` as `service` lists it on its first page.
pub async fn listed(service: &(impl TimelineService + ?Sized), id: &TimelineId) -> TimelineInfo {
    timelines(service)
        .await
        .into_iter()
        .find(|t| &t.id == id)
        .unwrap_or_else(|| panic!("{id} is listed"))
}

/// A trip to `destination` (a timeline's or an anchor's id, or `primary`) carrying `items`.
pub fn trip(destination: impl ToString, items: &[&ItemId]) -> TravelRequest {
    TravelRequest {
        destination: destination.to_string(),
        items_transported: items.iter().map(|&id| id.clone()).collect(),
    }
}

/// A revert of the manipulated event `event` where the traveller is, not safety checked.
pub fn revert(event: &EventId) -> RevertRequest {
    RevertRequest {
        event_id: event.clone(),
        timeline_id: None,
        safety_check: false,
    }
}

/// The secret the served engines sign tokens with.
pub const SECRET: &[u8] = b"dashboard-remote-test-secret-for-hs256";

fn secret() -> chronoscope::auth::Secret {
    chronoscope::auth::Secret::from_bytes(SECRET.to_vec()).expect("secret")
}

/// A read-write token for `traveller`, for the servers [`serve_port`] starts.
pub fn token(traveller: &str) -> String {
    token_with(traveller, "read write")
}

/// A token for `traveller` granting `scopes` (`"read"`, `"read write"`, `"admin"`), for the
/// servers [`serve_port`] starts.
pub fn token_with(traveller: &str, scopes: &str) -> String {
    chronoscope::auth::issue_token(
        &secret(),
        traveller,
        &chronoscope::auth::Scopes::parse(scopes),
        Duration::from_secs(3600),
    )
    .expect("token")
}

/// `engine` served on a free loopback port, over TLS with `tls`: the port.
pub async fn serve_port(engine: Arc<Engine>, tls: Option<Arc<rustls::ServerConfig>>) -> u16 {
    // Whoever talks to it builds a reqwest client, which needs the process's crypto provider;
    // installed here, a test does not depend on another having built one first.
    chronoscope::tls::install_default_provider();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    let config = chronoscope::server::ServerConfig::new(secret());
    let forever = std::future::pending();
    match tls {
        Some(tls) => tokio::spawn(chronoscope::server::run_tls(
            listener, tls, config, engine, forever,
        )),
        None => tokio::spawn(chronoscope::server::run(listener, config, engine, forever)),
    };
    port
}

/// `engine` served over http on a free loopback port: its URL and a read-write token for
/// `traveller`.
pub async fn serve(engine: Arc<Engine>, traveller: &str) -> (String, String) {
    let port = serve_port(engine, None).await;
    (format!("http://127.0.0.1:{port}"), token(traveller))
}

/// The command line `chronoscope args…`, parsed from a real argument list and run on
/// `service`: what it printed.
pub async fn run_cli(service: &dyn TimelineService, args: &[&str]) -> Result<String, ServiceError> {
    use clap::Parser;
    let cli = chronoscope::cli::Cli::try_parse_from(
        std::iter::once("chronoscope").chain(args.iter().copied()),
    )
    .unwrap_or_else(|e| panic!("{args:?} should parse: {e}"));
    let mut out = Vec::new();
    chronoscope::cli::execute(
        cli.command.expect("a subcommand"),
        service,
        cli.global.json,
        &mut out,
    )
    .await?;
    Ok(String::from_utf8(out).expect("utf-8 output"))
}

/// Asserts that the process that gave `out` exited successfully, showing what it said on stderr
/// when not.
#[track_caller]
pub fn assert_succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The global options that point the command line at the server at `url` as `token`,
/// trusting the CA certificate at `ca`.
pub fn remote_options<'a>(url: &'a str, token: &'a str, ca: &'a std::path::Path) -> Vec<&'a str> {
    let ca = ca.to_str().expect("a UTF-8 path");
    vec!["--remote", url, "--token", token, "--ca-cert", ca]
}

/// The dashboard on `service`, drawn on a `TestBackend`, its first answers applied.
pub async fn dashboard(service: Arc<dyn TimelineService>, clock: Arc<dyn Clock>) -> Harness {
    let mut h = Harness::new(service, clock);
    h.settle().await;
    h
}

/// One thing a test does at the dashboard.
pub enum Step<'a> {
    /// Presses keys written as in the key map, separated by spaces: `"tab j enter"`.
    Keys(&'a str),
    /// Types text, one character at a time.
    Type(&'a str),
    /// Applies answers until nothing is in flight.
    Settle,
}

/// Drives the dashboard `h` through `steps`, in order.
pub async fn drive(h: &mut Harness, steps: &[Step<'_>]) {
    for step in steps {
        match step {
            Step::Keys(keys) => h.press(keys),
            Step::Type(text) => h.type_text(text),
            Step::Settle => h.settle().await,
        }
    }
}

/// A tick of the dashboard `h`, and `result` as the answer to the call it makes to learn who the
/// user is (what the header's connection state follows).
pub fn answer_whoami(h: &mut Harness, result: Result<Reply, ServiceError>) {
    h.send(Msg::Tick);
    let generation = h.app.generation(Slot::Whoami);
    h.send(Msg::Done {
        slot: Slot::Whoami,
        generation,
        result,
    });
}

/// Presses `keys` on the dashboard `h` (opening a form, or moving to a field of it), types
/// `fields` one after the other (tab between), submits with enter and applies the answers.
pub async fn submit(h: &mut Harness, keys: &str, fields: &[&str]) {
    h.press(keys);
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            h.press("tab");
        }
        h.type_text(field);
    }
    h.press("enter");
    h.settle().await;
}

/// Searches the dashboard's selected timeline for `text` (the search pane's form: tab /) and
/// applies the results.
pub async fn search(h: &mut Harness, text: &str) {
    submit(h, "tab /", &[text]).await;
}

// ---------------------------------------------------------------- stores that misbehave

/// What a test's store does on the way to the store it wraps (see [`Hooked`]): each hook runs
/// before the call is passed on, and may wait, count, or refuse it (its error is the answer).
#[async_trait::async_trait]
pub trait StoreHooks: Send + Sync {
    /// What the store says it is, `inner` being the store it wraps.
    fn describe(&self, inner: &dyn Store) -> String;

    /// Before the write lock is taken; appends take it too, so they pass here first.
    async fn lock(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Before records are read.
    async fn read_since(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Before the last sequence number is asked.
    async fn last_seq(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Before the log is chained.
    async fn start_chain(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// An answer of its own to a queued append, or `None` to pass it on.
    fn append_queued(&self, first_seq: u64, entries: &[Entry], chained: bool) -> Option<Appending> {
        let _ = (first_seq, entries, chained);
        None
    }
}

/// A store that passes every call to `inner` after its [`StoreHooks`]: a store that is down,
/// slow, full or racing, as a test needs. Its hooks' state is reached through it (`Deref`).
pub struct Hooked<H> {
    /// The store that keeps the log.
    pub inner: Arc<dyn Store>,
    /// What it does on the way.
    pub hooks: H,
}

impl<H> Hooked<H> {
    /// `hooks` over `inner`.
    pub fn new(inner: Arc<dyn Store>, hooks: H) -> Self {
        Self { inner, hooks }
    }

    /// `hooks` over a fresh in-memory store.
    pub fn memory(hooks: H) -> Self {
        Self::new(Arc::new(MemoryStore::new()), hooks)
    }
}

impl<H> std::ops::Deref for Hooked<H> {
    type Target = H;

    fn deref(&self) -> &H {
        &self.hooks
    }
}

#[async_trait::async_trait]
impl<H: StoreHooks> Store for Hooked<H> {
    async fn lock(&self) -> Result<Box<dyn LogLock>, StoreError> {
        self.hooks.lock().await?;
        self.inner.lock().await
    }

    async fn append(&self, first_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        self.hooks.lock().await?;
        self.inner.append(first_seq, entries).await
    }

    fn append_queued(&self, first_seq: u64, entries: &[Entry], chained: bool) -> Option<Appending> {
        let own = self.hooks.append_queued(first_seq, entries, chained);
        own.or_else(|| self.inner.append_queued(first_seq, entries, chained))
    }

    async fn read_since(&self, after: u64, limit: u32) -> Result<Vec<Record>, StoreError> {
        self.hooks.read_since().await?;
        self.inner.read_since(after, limit).await
    }

    async fn last_seq(&self) -> Result<u64, StoreError> {
        self.hooks.last_seq().await?;
        self.inner.last_seq().await
    }

    async fn chain(&self) -> Result<Option<ChainMeta>, StoreError> {
        self.inner.chain().await
    }

    async fn start_chain(&self, meta: ChainMeta, links: &[Link]) -> Result<(), StoreError> {
        self.hooks.start_chain().await?;
        self.inner.start_chain(meta, links).await
    }

    fn describe(&self) -> String {
        self.hooks.describe(self.inner.as_ref())
    }
}

// ---------------------------------------------------------------- PostgreSQL

/// The admin URL used to create and drop test databases.
pub fn admin_url() -> String {
    std::env::var("CHRONOSCOPE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// Whether PostgreSQL tests must run rather than skip.
pub fn postgres_required() -> bool {
    std::env::var("CHRONOSCOPE_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// `url` with its database name replaced by `name` (query string kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    format!("{}/{name}{query}", &base[..path_start])
}

/// A database created for one test and dropped (even after a panic) when this is dropped.
pub struct PgDatabase {
    /// URL of the new database.
    pub url: String,
    /// Its name.
    pub name: String,
    admin: String,
}

async fn admin_connection(admin: &str) -> Result<PgConnection, String> {
    let options = PgConnectOptions::from_str(admin).map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(5), PgConnection::connect_with(&options)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out after 5s".to_owned()),
    }
}

/// A fresh, empty database, or `None` (after a notice) when no server is reachable and none is
/// required.
pub async fn fresh_postgres() -> Option<PgDatabase> {
    let admin = admin_url();
    let mut conn = match admin_connection(&admin).await {
        Ok(conn) => conn,
        Err(e) if postgres_required() => {
            panic!("CHRONOSCOPE_REQUIRE_POSTGRES=1 but PostgreSQL is unreachable: {e}")
        }
        Err(e) => {
            // Written to the process's stderr, not through eprintln!, which libtest captures and
            // hides for a passing test: a skip must be seen in `cargo test`'s output.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr().lock(),
                "SKIPPED {}: PostgreSQL unreachable ({e}); set CHRONOSCOPE_TEST_POSTGRES_URL, or \
                 CHRONOSCOPE_REQUIRE_POSTGRES=1 to fail",
                std::thread::current().name().unwrap_or("a PostgreSQL test")
            );
            return None;
        }
    };
    let name = format!("chronoscope_test_{:016x}", rand::random::<u64>());
    let created = sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await;
    if let Err(e) = created {
        panic!("PostgreSQL is reachable but cannot create a test database: {e}");
    }
    let _ = conn.close().await;
    Some(PgDatabase {
        url: with_database(&admin, &name),
        name,
        admin,
    })
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime, which cannot be blocked on; use a thread with its
        // own. FORCE ends connections the store handles may still hold.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let mut conn = admin_connection(&admin).await?;
                sqlx::query(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .execute(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
                let _ = conn.close().await;
                Ok::<(), String>(())
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

#[test]
fn database_names_are_replaced_in_urls() {
    assert_eq!(
        with_database("postgres://u@h:5432/postgres", "t1"),
        "postgres://u@h:5432/t1"
    );
    assert_eq!(with_database("postgres://u@h", "t1"), "postgres://u@h/t1");
    assert_eq!(
        with_database("postgresql://u:p@h/db?sslmode=disable", "t1"),
        "postgresql://u:p@h/t1?sslmode=disable"
    );
}
