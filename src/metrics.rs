//! Prometheus metrics: what `serve --metrics-listen ADDR` exposes on `GET /metrics`.
//!
//! The engine and the server record through the [`metrics`] facade, which costs next to nothing
//! while no recorder is installed (the dashboard, the CLI, tests that do not look).
//! [`install`] sets the Prometheus recorder once per process; [`serve`] answers scrapes on a
//! listener of its own, without authentication, so it belongs on an address only the scraper
//! can reach.
//!
//! | metric | kind | labels | what |
//! |---|---|---|---|
//! | `chronoscope_http_requests_total` | counter | method, route, status | answered requests; `route` is the route's template (`/v1/timeline/{timeline_id}`), `unmatched` for unknown paths |
//! | `chronoscope_http_request_duration_seconds` | histogram | method, route, status | time to answer |
//! | `chronoscope_log_position` | gauge | | sequence number of the last log record this process has folded in |
//! | `chronoscope_replica_lag_records` | gauge | | how many records this process's state was behind the store's head when it last looked (a read barrier's head query, or a catch-up) |
//! | `chronoscope_commit_batch_ops` | histogram | | log records per group-commit append |
//! | `chronoscope_commit_append_seconds` | histogram | | time from handing a batch to the store until it is durable (write + fsync) |
//! | `chronoscope_commit_failures_total` | counter | | appends the store refused |
//! | `chronoscope_commit_races_lost_total` | counter | | appends that found another replica had written first (their writes are decided again under the log's lock) |
//! | `chronoscope_writer_lease_taken_total` | counter | | times this process took the writer's lease (PostgreSQL: only the holder writes; it passes on request, see `engine::lease`) |
//! | `chronoscope_writer_lease_held` | gauge | | 1 while this process holds the writer's lease |
//! | `chronoscope_writes_forwarded_total` | counter | | writes received over HTTP and sent on to the replica holding the writer's lease (`server::forward`) |
//! | `chronoscope_access_counts_handed_total` | counter | | access-log flushes handed to the replica holding the writer's lease instead of taking the lease to append them |
//! | `chronoscope_jobs_run_total` | counter | | scheduled jobs and scripts run by this process |
//! | `chronoscope_jobs_failed_total` | counter | | of those, runs with a failed action |
//! | `chronoscope_monitor_scans_total` | counter | | anomaly monitor scans |
//! | `chronoscope_anomalies` | gauge | timeline, severity | each timeline's open anomalies per severity, as its last whole-timeline scan (a monitor call or stream, or a timelines list) found them; removed when the timeline is deleted |
//! | `chronoscope_reads_total` | counter | | reads served |
//! | `chronoscope_read_barriers_total` | counter | | read barrier rounds (one head query each, shared by every read that queued for it), or catch-ups before a read on a store that allows slightly stale reads |
//! | `chronoscope_store_read_queries_total` | counter | | queries reading the store: head queries and record fetches (catch-ups); divided by reads, the database queries per read |

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Answered HTTP requests.
pub const HTTP_REQUESTS: &str = "chronoscope_http_requests_total";
/// Time to answer an HTTP request.
pub const HTTP_DURATION: &str = "chronoscope_http_request_duration_seconds";
/// The last log position folded in.
pub const LOG_POSITION: &str = "chronoscope_log_position";
/// How far behind the store's head this process was when it last looked.
pub const REPLICA_LAG: &str = "chronoscope_replica_lag_records";
/// Log records per group-commit append.
pub const COMMIT_BATCH_OPS: &str = "chronoscope_commit_batch_ops";
/// Time of one append, fsync included.
pub const COMMIT_APPEND_SECONDS: &str = "chronoscope_commit_append_seconds";
/// Appends the store refused.
pub const COMMIT_FAILURES: &str = "chronoscope_commit_failures_total";
/// Appends that lost the race for the next log position to another process.
pub const COMMIT_RACES_LOST: &str = "chronoscope_commit_races_lost_total";
/// Times this process took the writer's lease.
pub const WRITER_LEASE_TAKEN: &str = "chronoscope_writer_lease_taken_total";
/// Whether this process holds the writer's lease.
pub const WRITER_LEASE_HELD: &str = "chronoscope_writer_lease_held";
/// Writes sent on to the replica holding the writer's lease.
pub const WRITES_FORWARDED: &str = "chronoscope_writes_forwarded_total";
/// Access-log flushes handed to the replica holding the writer's lease.
pub const ACCESS_COUNTS_HANDED: &str = "chronoscope_access_counts_handed_total";
/// Jobs and scripts run.
pub const JOBS_RUN: &str = "chronoscope_jobs_run_total";
/// Jobs and scripts whose run had a failed action.
pub const JOBS_FAILED: &str = "chronoscope_jobs_failed_total";
/// Monitor scans.
pub const MONITOR_SCANS: &str = "chronoscope_monitor_scans_total";
/// Open anomalies of each timeline, by severity.
pub const ANOMALIES: &str = "chronoscope_anomalies";
/// What [`ANOMALIES`] is, as a scrape's `# HELP` says.
const ANOMALIES_HELP: &str =
    "Open anomalies of each timeline by severity, as its last whole-timeline scan found them";
/// Heavy jobs (scans, log checks, pages of past versions) waiting for a heavy thread.
pub const HEAVY_WAITING: &str = "chronoscope_heavy_jobs_waiting";
/// Reads served.
pub const READS: &str = "chronoscope_reads_total";
/// Read barrier rounds (or catch-ups before a read where slightly stale reads are allowed).
pub const READ_BARRIERS: &str = "chronoscope_read_barriers_total";
/// Queries reading the store: head queries and record fetches.
pub const STORE_QUERIES: &str = "chronoscope_store_read_queries_total";

/// Latency buckets, in seconds: 100 µs to 10 s.
const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
/// Batch size buckets, in log records.
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 1024.0];
/// How often histogram samples are folded into their buckets between scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();

/// Installs the Prometheus recorder for this process (once; later calls return the same
/// handle). Routers built before it record nothing, so install first.
pub fn install() -> Result<PrometheusHandle, String> {
    HANDLE.get_or_init(build).clone()
}

fn build() -> Result<PrometheusHandle, String> {
    let builder = PrometheusBuilder::new();
    let builder = [HTTP_DURATION, COMMIT_APPEND_SECONDS]
        .into_iter()
        .try_fold(builder, |b, name| {
            b.set_buckets_for_metric(Matcher::Full(name.into()), SECONDS_BUCKETS)
        })
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(COMMIT_BATCH_OPS.into()), BATCH_BUCKETS)
        })
        .map_err(|e| format!("cannot set up metrics: {e}"))?;
    let recorder = builder.build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)
        .map_err(|e| format!("cannot install the metrics recorder: {e}"))?;
    describe();
    register();
    Ok(handle)
}

/// Creates every series without per-request labels at zero, so a scrape right after start-up
/// shows them all and Prometheus's `increase()` sees the first failure as one.
fn register() {
    for name in [
        COMMIT_FAILURES,
        COMMIT_RACES_LOST,
        WRITER_LEASE_TAKEN,
        WRITES_FORWARDED,
        ACCESS_COUNTS_HANDED,
        JOBS_RUN,
        JOBS_FAILED,
        MONITOR_SCANS,
        READS,
        READ_BARRIERS,
        STORE_QUERIES,
    ] {
        metrics::counter!(name).increment(0);
    }
    for name in [LOG_POSITION, REPLICA_LAG, WRITER_LEASE_HELD, HEAVY_WAITING] {
        metrics::gauge!(name).increment(0.0);
    }
    for name in [COMMIT_BATCH_OPS, COMMIT_APPEND_SECONDS] {
        // A handle registers the histogram; it shows with empty buckets until a sample.
        let _ = metrics::histogram!(name);
    }
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests answered, by route template and status"
    );
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time to answer an HTTP request"
    );
    describe_gauge!(
        LOG_POSITION,
        "Last log record folded into this process's state"
    );
    describe_gauge!(
        REPLICA_LAG,
        "Log records this process was behind the store head when it last looked"
    );
    describe_histogram!(COMMIT_BATCH_OPS, "Log records per group-commit append");
    describe_histogram!(
        COMMIT_APPEND_SECONDS,
        Unit::Seconds,
        "Time from handing a batch to the store until it is durable (write and fsync)"
    );
    describe_counter!(COMMIT_FAILURES, "Group-commit appends the store refused");
    describe_counter!(
        COMMIT_RACES_LOST,
        "Appends that found another process had written first"
    );
    describe_counter!(
        WRITER_LEASE_TAKEN,
        "Times this process took the writer's lease (only its holder writes)"
    );
    describe_gauge!(
        WRITER_LEASE_HELD,
        "1 while this process holds the writer's lease"
    );
    describe_counter!(
        WRITES_FORWARDED,
        "Writes received over HTTP and sent on to the replica holding the writer's lease"
    );
    describe_counter!(
        ACCESS_COUNTS_HANDED,
        "Access-log flushes handed to the replica holding the writer's lease (instead of taking it)"
    );
    describe_counter!(JOBS_RUN, "Scheduled jobs and scripts run by this process");
    describe_counter!(JOBS_FAILED, "Job and script runs with a failed action");
    describe_counter!(MONITOR_SCANS, "Anomaly monitor scans");
    describe_gauge!(
        HEAVY_WAITING,
        "Heavy jobs (scans, log checks, pages of past versions) waiting for a heavy thread"
    );
    describe_counter!(READS, "Reads served");
    describe_counter!(READ_BARRIERS, "Read barrier rounds (one head query each)");
    describe_counter!(
        STORE_QUERIES,
        "Queries reading the store: head queries and record fetches (per read: divide by chronoscope_reads_total)"
    );
}

/// Severities of the anomaly gauges, in the order they are kept and shown.
const SEVERITIES: [(crate::monitor::Severity, &str); 3] = [
    (crate::monitor::Severity::Critical, "critical"),
    (crate::monitor::Severity::Warning, "warning"),
    (crate::monitor::Severity::Info, "info"),
];

/// Each timeline's open anomalies per severity (as [`SEVERITIES`]). Kept here rather than in
/// the recorder, which cannot forget a series: a deleted timeline's gauges must go with it,
/// or an alert on them would fire forever.
static ANOMALY_GAUGES: RwLock<AnomalyGauges> = RwLock::new(AnomalyGauges {
    open: std::collections::BTreeMap::new(),
    deleted: std::collections::BTreeSet::new(),
});

/// What [`ANOMALY_GAUGES`] keeps.
struct AnomalyGauges {
    /// Each timeline's open anomalies per severity (as [`SEVERITIES`]).
    open: std::collections::BTreeMap<String, [usize; 3]>,
    /// Timelines deleted (ids are never given again): a scan that began before the deletion
    /// and records after it must not bring their gauges back.
    deleted: std::collections::BTreeSet<String>,
}

/// Sets `timeline`'s anomaly gauges, one per severity, from a scan of the whole timeline.
pub(crate) fn record_anomalies(
    timeline: &crate::model::TimelineId,
    anomalies: &[crate::monitor::Anomaly],
) {
    // Nothing to keep where nobody scrapes (the dashboard, the CLI).
    if HANDLE.get().is_none() {
        return;
    }
    let counts =
        SEVERITIES.map(|(severity, _)| anomalies.iter().filter(|a| a.severity == severity).count());
    let mut gauges = ANOMALY_GAUGES.write().unwrap_or_else(|e| e.into_inner());
    if !gauges.deleted.contains(timeline.as_str()) {
        gauges.open.insert(timeline.to_string(), counts);
    }
}

/// Drops `timeline`'s anomaly gauges: it was deleted.
pub(crate) fn forget_timeline(timeline: &crate::model::TimelineId) {
    if HANDLE.get().is_none() {
        return;
    }
    let mut gauges = ANOMALY_GAUGES.write().unwrap_or_else(|e| e.into_inner());
    gauges.open.remove(timeline.as_str());
    gauges.deleted.insert(timeline.to_string());
}

/// The anomaly gauges in the Prometheus text format, appended to the recorder's.
fn render_anomalies(out: &mut String) {
    use std::fmt::Write as _;
    let gauges = ANOMALY_GAUGES.read().unwrap_or_else(|e| e.into_inner());
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "# HELP {ANOMALIES} {ANOMALIES_HELP}");
    let _ = writeln!(out, "# TYPE {ANOMALIES} gauge");
    for (timeline, counts) in &gauges.open {
        // Timeline ids are lowercase letters, digits and `_`; escaped all the same.
        let timeline = timeline
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        for ((_, severity), n) in SEVERITIES.iter().zip(counts) {
            let _ = writeln!(
                out,
                "{ANOMALIES}{{timeline=\"{timeline}\",severity=\"{severity}\"}} {n}"
            );
        }
    }
    out.push('\n');
}

/// The scrape endpoint alone: `GET /metrics` in the Prometheus text format.
pub fn router(handle: PrometheusHandle) -> Router {
    Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let handle = handle.clone();
            async move {
                (
                    [(
                        header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    {
                        let mut text = handle.render();
                        render_anomalies(&mut text);
                        text
                    },
                )
            }
        }),
    )
}

/// Serves [`router`] on `listener` until `shutdown` resolves, folding histogram samples into
/// their buckets meanwhile.
pub async fn serve(
    listener: tokio::net::TcpListener,
    handle: PrometheusHandle,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let upkeep = {
        let handle = handle.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(UPKEEP_EVERY);
            loop {
                every.tick().await;
                handle.run_upkeep();
            }
        })
    };
    let served = axum::serve(listener, router(handle))
        .with_graceful_shutdown(shutdown)
        .await;
    upkeep.abort();
    served
}

/// Counter and histogram of one method, route and status.
#[derive(Clone)]
struct Handles {
    requests: Counter,
    duration: Histogram,
}

/// Request metrics for one router: the recorder's handles, looked up once per method, route
/// template and status, so a request costs a map lookup and two atomic updates.
#[derive(Default)]
pub(crate) struct HttpMetrics {
    by_route: RwLock<HashMap<Box<str>, ByMethodAndStatus>>,
}

/// A route's handles by method and status.
type ByMethodAndStatus = HashMap<(&'static str, u16), Handles>;

impl HttpMetrics {
    fn observe(&self, method: &'static str, route: &str, status: u16, took: Duration) {
        let known = self
            .by_route
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(route)
            .and_then(|by_status| by_status.get(&(method, status)))
            .cloned();
        let handles = known.unwrap_or_else(|| {
            let mut by_route = self.by_route.write().unwrap_or_else(|e| e.into_inner());
            by_route
                .entry(route.into())
                .or_default()
                .entry((method, status))
                .or_insert_with(|| Handles {
                    requests: metrics::counter!(HTTP_REQUESTS, "method" => method, "route" => route.to_owned(), "status" => status.to_string()),
                    duration: metrics::histogram!(HTTP_DURATION, "method" => method, "route" => route.to_owned(), "status" => status.to_string()),
                })
                .clone()
        });
        handles.requests.increment(1);
        handles.duration.record(took.as_secs_f64());
    }
}

/// Middleware: counts and times every request by its route's template.
pub(crate) async fn track(
    State(metrics): State<Arc<HttpMetrics>>,
    route: Option<MatchedPath>,
    req: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    let response = next.run(req).await;
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    metrics.observe(method, route, response.status().as_u16(), started.elapsed());
    response
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}
