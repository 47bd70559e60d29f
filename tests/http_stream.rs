//! `GET /v1/monitor-timeline/stream` on a real listener, read by the remote client (as the
//! dashboard and `monitor --follow` read it) and byte by byte (as any SSE client would): a
//! change another client makes arrives within a second, a resumed stream starts with the state
//! now, heartbeats, refusals, rate limits, deletion and shutdown.

mod support;

use std::sync::Arc;
use std::time::Duration;

use chronoscope::client::RemoteClient;
use chronoscope::engine::Engine;
use chronoscope::error::ServiceError;
use chronoscope::model::{EventId, TimelineId, parse_instant};
use chronoscope::server::{RateLimit, ServerConfig};
use chronoscope::service::*;
use futures::StreamExt;
use support::http::*;

/// A server on a loopback port, stopped when asked (or when dropped, with the runtime).
struct Served {
    base: String,
    engine: Arc<Engine>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Served {
    async fn start(config: ServerConfig) -> Self {
        chronoscope::tls::install_default_provider();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let engine = engine().await;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(chronoscope::server::run(
            listener,
            config,
            Arc::clone(&engine),
            async {
                let _ = stopped.await;
            },
        ));
        Self {
            base,
            engine,
            stop: Some(stop),
            task,
        }
    }

    fn client(&self, who: &str) -> RemoteClient {
        RemoteClient::new(&self.base, token(who)).expect("a client")
    }

    /// A GET of `path` (with its query) as `who`, over the wire.
    async fn get(&self, path: &str, who: &str) -> reqwest::Response {
        reqwest::Client::new()
            .get(format!("{}{path}", self.base))
            .bearer_auth(token(who))
            .send()
            .await
            .expect("the server answers")
    }
}

fn at(s: &str) -> chronoscope::model::Instant {
    parse_instant("t", s).unwrap()
}

fn event(description: &str, time: &str, causes: &[&EventId]) -> NewEvent {
    support::new_event(description, time, "Turin", causes)
}

/// A treaty and its celebration a year later, in `timeline`; answers the celebration's id.
async fn treaty_and_celebration(who: &dyn TimelineService, timeline: &TimelineId) -> EventId {
    let treaty = who
        .add_event(timeline, event("Treaty", "1860-06-01T12:00:00Z", &[]))
        .await
        .unwrap();
    who.add_event(
        timeline,
        event(
            "Treaty celebrated",
            "1861-06-01T12:00:00Z",
            &[&treaty.event_id],
        ),
    )
    .await
    .unwrap()
    .event_id
}

/// Moves the celebration before the treaty it celebrates: a paradox.
async fn celebrate_early(who: &dyn TimelineService, timeline: &TimelineId, celebration: &EventId) {
    who.manipulate_event(ManipulateRequest {
        timeline_id: Some(timeline.clone()),
        event_id: celebration.clone(),
        new_outcome: NewOutcome {
            description: None,
            changes: vec![OutcomeChange {
                action: Some("moved".into()),
                time: Some(at("1855-06-01T12:00:00Z")),
            }],
        },
        safety_check: false,
    })
    .await
    .unwrap();
}

/// `service`'s monitor stream of `timeline`, from its first snapshot on.
async fn watch(service: &(impl TimelineService + ?Sized), timeline: &TimelineId) -> MonitorStream {
    let watch = MonitorWatch {
        timeline_id: timeline.clone(),
        after: None,
    };
    service.watch_monitor(watch).await.unwrap()
}

/// The snapshot `stream` starts with.
async fn snapshot(stream: &mut MonitorStream) -> MonitorReport {
    let first = next(stream).await;
    let MonitorChange::Snapshot(report) = first.change else {
        panic!("a stream starts with a snapshot: {first:?}");
    };
    report
}

async fn next(stream: &mut MonitorStream) -> MonitorEvent {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("a change within 5 s")
        .expect("the stream goes on")
        .expect("a change, not an error")
}

#[tokio::test]
async fn another_clients_manipulation_reaches_a_stream_within_a_second_and_its_revert_too() {
    let server = Served::start(config()).await;
    let ada = server.client("ada");
    let bob = server.client("bob");
    let primary = TimelineId::primary();
    let celebration = treaty_and_celebration(&bob, &primary).await;

    let mut stream = watch(&ada, &primary).await;
    let first = next(&mut stream).await;
    let MonitorChange::Snapshot(report) = &first.change else {
        panic!("a stream starts with a snapshot: {first:?}");
    };
    assert_eq!(report.status, "stable");
    assert!(report.anomalies.is_empty());

    celebrate_early(&bob, &primary, &celebration).await;
    let acknowledged = std::time::Instant::now();
    let appeared = next(&mut stream).await;
    let waited = acknowledged.elapsed();
    let MonitorChange::Appeared(anomaly) = &appeared.change else {
        panic!("expected an anomaly to appear: {appeared:?}");
    };
    assert!(
        waited < Duration::from_secs(1),
        "the change arrived {waited:?} after it was acknowledged"
    );
    assert!(appeared.position > first.position);
    assert!(
        anomaly.subjects.contains(&celebration.to_string())
            || anomaly.description.contains("Treaty"),
        "{anomaly:?}"
    );
    // The same anomaly as the monitor reports.
    let polled = support::monitor(&ada, &primary).await;
    assert_eq!(polled.anomalies, vec![anomaly.clone()]);

    bob.revert_event(RevertRequest {
        event_id: celebration.clone(),
        timeline_id: Some(primary.clone()),
        safety_check: false,
    })
    .await
    .unwrap();
    let resolved = next(&mut stream).await;
    assert_eq!(
        resolved.change,
        MonitorChange::Resolved(anomaly.clone()),
        "the revert resolves it"
    );
    assert!(resolved.position > appeared.position);
}

#[tokio::test]
async fn a_resumed_stream_starts_with_the_state_now_so_nothing_missed_is_lost() {
    let server = Served::start(config()).await;
    let ada = server.client("ada");
    let primary = TimelineId::primary();
    let celebration = treaty_and_celebration(&ada, &primary).await;
    let watch = |after| MonitorWatch {
        timeline_id: primary.clone(),
        after,
    };

    let mut stream = ada.watch_monitor(watch(None)).await.unwrap();
    let seen = next(&mut stream).await.position;
    drop(stream);

    // A change while the client is away, then it comes back with the last id it saw.
    celebrate_early(&ada, &primary, &celebration).await;
    let mut stream = ada.watch_monitor(watch(Some(seen))).await.unwrap();
    let first = next(&mut stream).await;
    let MonitorChange::Snapshot(report) = &first.change else {
        panic!("a resumed stream starts with the state now: {first:?}");
    };
    assert_eq!(report.anomalies.len(), 1, "the change missed is in it");
    assert_eq!(first.position, server.engine.snapshot().await.unwrap().seq);
    assert!(first.position > seen);
}

/// Reads the raw stream until `needle` shows, or `within` passes; answers what was read.
async fn read_until(resp: &mut reqwest::Response, needle: &str, within: Duration) -> String {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + within;
    while !text.contains(needle) {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => text.push_str(&String::from_utf8_lossy(&chunk)),
            _ => break,
        }
    }
    text
}

#[tokio::test]
async fn on_the_wire_it_is_server_sent_events_with_ids_and_heartbeats() {
    let server = Served::start(ServerConfig {
        heartbeat: Duration::from_millis(200),
        ..config()
    })
    .await;
    let url = "/v1/monitor-timeline/stream?timeline_id=primary";
    let mut resp = server.get(url, "ada").await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let text = read_until(&mut resp, ": heartbeat", Duration::from_secs(3)).await;
    let mut lines = text.lines();
    let head: Vec<&str> = lines.by_ref().take(3).collect();
    assert!(head.contains(&"event: snapshot"), "{text}");
    let id = head
        .iter()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("no id: {text}"));
    assert!(id.parse::<u64>().is_ok(), "{text}");
    let data = head
        .iter()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no data: {text}"));
    let report: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(report["status"], "stable");
    assert!(
        text.contains(": heartbeat"),
        "a quiet stream sends heartbeats: {text}"
    );
}

#[tokio::test]
async fn refusals_are_problems_before_the_stream_starts() {
    let server = Served::start(config()).await;
    let http = reqwest::Client::new();
    let get = |query: &str, last: Option<&str>, who: Option<&str>| {
        let mut req = http.get(format!("{}/v1/monitor-timeline/stream{query}", server.base));
        if let Some(who) = who {
            req = req.bearer_auth(token(who));
        }
        if let Some(last) = last {
            req = req.header("last-event-id", last);
        }
        req.send()
    };
    let problem = |resp: reqwest::Response| async move {
        let status = resp.status().as_u16();
        let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(ct, "application/problem+json", "{body}");
        (status, body)
    };

    let (status, body) = problem(
        get("?timeline_id=primary", Some("soon"), Some("ada"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(detail(&body).contains("Last-Event-ID"), "{body}");

    let (status, _) = problem(get("", None, Some("ada")).await.unwrap()).await;
    assert_eq!(status, 400, "timeline_id is required");

    let (status, body) = problem(get("?timeline_id=primary", None, None).await.unwrap()).await;
    assert_eq!(status, 401, "{body}");

    // An unknown timeline: the same refusal as the monitor's.
    let unknown = "tml_01jbz0000000000000000000zz";
    let (status, body) = problem(
        get(&format!("?timeline_id={unknown}"), None, Some("ada"))
            .await
            .unwrap(),
    )
    .await;
    let url = format!("/v1/monitor-timeline?timeline_id={unknown}");
    let polled = server.get(&url, "ada").await;
    assert_eq!(status, polled.status().as_u16(), "{body}");
    assert!((400..500).contains(&status), "{body}");
}

#[tokio::test]
async fn opening_a_stream_counts_in_the_rate_limit() {
    let server = Served::start(ServerConfig {
        rate_limit: RateLimit {
            per_second: 1.0 / 3600.0,
            burst: 1,
        },
        ..config()
    })
    .await;
    let ada = server.client("ada");
    let watch = MonitorWatch {
        timeline_id: TimelineId::primary(),
        after: None,
    };
    let _open = ada
        .watch_monitor(watch.clone())
        .await
        .expect("the first stream opens");
    match ada.watch_monitor(watch).await {
        Err(ServiceError::RateLimited { .. }) => {}
        other => panic!("expected RateLimited, got {:?}", other.map(|_| "a stream")),
    }
}

#[tokio::test]
async fn a_deleted_timeline_ends_its_stream_with_the_reason() {
    let server = Served::start(config()).await;
    let ada = server.client("ada");
    let made = ada
        .create_timeline(support::named("Short-lived"))
        .await
        .unwrap();
    let mut stream = watch(&ada, &made.id).await;
    next(&mut stream).await;
    ada.delete_timeline(&made.id).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("told within 5 s");
    let Some(Err(e)) = end else {
        panic!("expected an error, got {end:?}");
    };
    assert!(e.to_string().contains(made.id.as_str()), "{e}");
    assert!(stream.next().await.is_none(), "nothing after the error");
}

#[tokio::test]
async fn shutting_down_ends_open_streams_instead_of_waiting_for_them() {
    let mut server = Served::start(config()).await;
    let mut stream = watch(&server.client("ada"), &TimelineId::primary()).await;
    next(&mut stream).await;
    server.stop.take().unwrap().send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), &mut server.task)
        .await
        .expect("the server stops within 5 s although a stream was open")
        .unwrap()
        .unwrap();
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("the stream ends");
    assert!(
        !matches!(end, Some(Ok(_))),
        "no change after shutdown: {end:?}"
    );
}

/// The served description names each event of the stream and the JSON its `data` carries
/// (the component its `x-itemSchema` names, which schemathesis checks each event against): every event a real stream sends
/// (snapshot, appeared, resolved, error) matches exactly one documented event, with the
/// fields and the required members of its `data` the description asks for.
#[tokio::test]
async fn every_event_on_the_wire_is_one_the_description_names() {
    let server = Served::start(config()).await;
    let doc = chronoscope::server::openapi();
    let op = &doc["paths"]["/v1/monitor-timeline/stream"]["get"];
    let media = &op["responses"]["200"]["content"]["text/event-stream"];
    let event = media["x-itemSchema"]["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .unwrap_or_else(|| panic!("no event schema: {media}"));
    let documented = doc["components"]["schemas"][event]["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("no event schemas: {}", doc["components"]["schemas"][event]))
        .clone();
    assert!(
        op["responses"]["400"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("unknown timeline")),
        "the 400 says it stands for an unknown timeline"
    );

    let ada = server.client("ada");
    let made = ada
        .create_timeline(support::named("Watched"))
        .await
        .unwrap();
    let celebration = treaty_and_celebration(&ada, &made.id).await;
    let url = format!("/v1/monitor-timeline/stream?timeline_id={}", made.id);
    let mut resp = server.get(&url, "ada").await;
    let mut text = read_until(&mut resp, "event: snapshot", Duration::from_secs(5)).await;
    celebrate_early(&ada, &made.id, &celebration).await;
    text += &read_until(&mut resp, "event: appeared", Duration::from_secs(5)).await;
    ada.delete_timeline(&made.id).await.unwrap();
    text += &read_until(&mut resp, "event: error", Duration::from_secs(5)).await;
    text += &read_until(&mut resp, "\n\n", Duration::from_secs(1)).await;

    let mut seen = Vec::new();
    for block in text.split("\n\n").filter(|b| b.contains("data:")) {
        let field = |name: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}: ")))
                .map(str::to_owned)
        };
        let name = field("event").unwrap_or_else(|| "message".into());
        let matching: Vec<_> = documented
            .iter()
            .filter(|s| s["properties"]["event"]["const"] == name.as_str())
            .collect();
        assert_eq!(
            matching.len(),
            1,
            "event '{name}' is documented once: {block}"
        );
        let schema = matching[0];
        for required in schema["required"].as_array().unwrap() {
            let required = required.as_str().unwrap();
            assert!(
                required == "event" || field(required).is_some(),
                "'{name}' lacks {required}: {block}"
            );
        }
        let data: serde_json::Value = serde_json::from_str(&field("data").unwrap())
            .unwrap_or_else(|e| panic!("'{name}' data is not JSON ({e}): {block}"));
        let component = schema["properties"]["data"]["contentSchema"]["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .unwrap_or_else(|| panic!("'{name}' names its data's schema"));
        let component = &doc["components"]["schemas"][component];
        for member in component["required"].as_array().unwrap() {
            let member = member.as_str().unwrap();
            assert!(
                data.get(member).is_some(),
                "'{name}' data lacks {member}: {data}"
            );
        }
        seen.push(name);
    }
    assert_eq!(seen, ["snapshot", "appeared", "error"], "{text}");
}

/// Reads each stream's first change (its snapshot).
async fn opened(streams: &mut [MonitorStream]) {
    for stream in streams.iter_mut() {
        let first = next(stream).await;
        assert!(
            matches!(first.change, MonitorChange::Snapshot(_)),
            "{first:?}"
        );
    }
}

/// Waits until `scans` no longer grows for a while; answers the count then.
async fn settled(engine: &Engine) -> u64 {
    let mut seen = engine.monitor_scans();
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = engine.monitor_scans();
        if now == seen {
            return now;
        }
        seen = now;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_streams_of_a_timeline_cost_one_scan_per_write_to_it_and_none_otherwise() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let primary = TimelineId::primary();
    let celebration = treaty_and_celebration(&ada, &primary).await;
    let other = ada
        .create_timeline(support::named("Elsewhere"))
        .await
        .unwrap()
        .id;
    let mut streams = Vec::new();
    for _ in 0..1000 {
        streams.push(
            ada.watch_monitor(MonitorWatch {
                timeline_id: primary.clone(),
                after: None,
            })
            .await
            .unwrap(),
        );
    }
    opened(&mut streams).await;
    assert_eq!(
        engine.watched_timelines(),
        1,
        "one watcher for all the streams"
    );
    let before = settled(&engine).await;

    // A write to another timeline, and an item registration: no scan, nothing told.
    ada.add_event(&other, event("Elsewhere", "1900-01-01T00:00:00Z", &[]))
        .await
        .unwrap();
    ada.register_item(NewItem {
        description: "A compass".into(),
    })
    .await
    .unwrap();
    assert_eq!(
        settled(&engine).await,
        before,
        "writes elsewhere cost scans"
    );
    for stream in &mut streams {
        let quiet = tokio::time::timeout(Duration::from_millis(1), stream.next()).await;
        assert!(quiet.is_err(), "a stream was told something: {quiet:?}");
    }

    // A write to the timeline: one scan, and every stream is told.
    celebrate_early(&ada, &primary, &celebration).await;
    for stream in &mut streams {
        let change = next(stream).await;
        assert!(
            matches!(change.change, MonitorChange::Appeared(_)),
            "{change:?}"
        );
    }
    assert_eq!(
        settled(&engine).await,
        before + 1,
        "one scan for 1,000 streams"
    );
    // A monitor call reads the same scan; the timelines list too, scanning only the other
    // timeline, which changed since it was last scanned.
    ada.monitor_timeline(MonitorQuery {
        timeline_id: primary.clone(),
        time_range: None,
    })
    .await
    .unwrap();
    assert_eq!(engine.monitor_scans(), before + 1);
    ada.list_timelines(PageRequest::default()).await.unwrap();
    assert_eq!(engine.monitor_scans(), before + 2);
    ada.list_timelines(PageRequest::default()).await.unwrap();
    assert_eq!(engine.monitor_scans(), before + 2);

    drop(streams);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        engine.watched_timelines(),
        0,
        "the watcher stops with its last stream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_stream_scans_only_at_its_windows_boundaries() {
    let engine = Engine::open(
        Arc::new(chronoscope::store::MemoryStore::new()),
        Arc::new(chronoscope::engine::SystemClock),
        chronoscope::engine::EngineConfig {
            default_window: chronoscope::model::Window::Seconds(4),
            ..chronoscope::engine::EngineConfig::default()
        },
        chronoscope::engine::Seed::None,
    )
    .await
    .unwrap();
    let ada = engine.session("ada".parse().unwrap());
    let brief = ada
        .create_timeline(support::named("Brief"))
        .await
        .unwrap()
        .id;
    let mut stream = watch(&ada, &brief).await;
    let report = snapshot(&mut stream).await;
    // The stream's own first scan is done, but the hub's first look, spawned when the stream
    // subscribed, may still be in flight on a loaded machine (it scans too when it ran before
    // the stream's scan was cached): let it land (the count holds still for 100 ms), well before
    // the 3.6 s boundary. From here on only the boundaries may cost scans.
    let mut before = engine.monitor_scans();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = engine.monitor_scans();
        if now == before {
            break;
        }
        before = now;
    }
    assert!(report.anomalies.is_empty(), "{report:?}");
    // The last tenth of 4 s begins at 3.6 s: the warning appears, once, then resolves at the
    // close (4 s); a scan at each boundary and none between them.
    let appeared = next(&mut stream).await;
    let MonitorChange::Appeared(warning) = &appeared.change else {
        panic!("{appeared:?}");
    };
    assert!(warning.description.contains("closes at"), "{warning:?}");
    let resolved = next(&mut stream).await;
    assert_eq!(resolved.change, MonitorChange::Resolved(warning.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(engine.monitor_scans(), before + 2);
}

#[tokio::test]
async fn streams_beyond_the_caps_are_refused_with_retry_after() {
    let server = Served::start(ServerConfig {
        max_streams_per_traveller: 2,
        max_streams: 3,
        ..config()
    })
    .await;
    let watch = MonitorWatch {
        timeline_id: TimelineId::primary(),
        after: None,
    };
    let ada = server.client("ada");
    let mut first = ada.watch_monitor(watch.clone()).await.unwrap();
    next(&mut first).await;
    let _second = ada.watch_monitor(watch.clone()).await.unwrap();
    match ada.watch_monitor(watch.clone()).await {
        Err(ServiceError::RateLimited { retry_after_secs }) => assert!(retry_after_secs > 0),
        other => panic!("a third stream of ada: {:?}", other.map(|_| "a stream")),
    }
    let _bob = server
        .client("bob")
        .watch_monitor(watch.clone())
        .await
        .unwrap();
    // Three in all: cy is refused too, on the wire a 429 problem with Retry-After.
    let refused = server
        .get("/v1/monitor-timeline/stream?timeline_id=primary", "cy")
        .await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(
        refused.headers()["content-type"],
        "application/problem+json"
    );
    let body: serde_json::Value = refused.json().await.unwrap();
    assert!(detail(&body).contains("--max-streams"), "{body}");
    // A closed stream gives its place back.
    drop(first);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match ada.watch_monitor(watch.clone()).await {
            Ok(_) => break,
            Err(e) => assert!(std::time::Instant::now() < deadline, "still refused: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What `who` is shown of `timeline`'s anomalies: (id, kind) through the monitor, through its
/// stream's snapshot, and as the raw `view=full` JSON; and the timelines list's count.
async fn shown_to(
    server: &Served,
    who: &str,
    timeline: &TimelineId,
) -> (
    Vec<(String, AnomalyKind)>,
    Vec<(String, AnomalyKind)>,
    serde_json::Value,
    usize,
) {
    let client = server.client(who);
    let ids = |anomalies: &[Anomaly]| -> Vec<(String, AnomalyKind)> {
        anomalies
            .iter()
            .map(|a| (a.anomaly_id.to_string(), a.kind))
            .collect()
    };
    let polled = support::monitor(&client, timeline).await;
    let mut stream = watch(&client, timeline).await;
    let streamed = snapshot(&mut stream).await;
    let url = format!("/v1/monitor-timeline?timeline_id={timeline}&view=full");
    let raw: serde_json::Value = server.get(&url, who).await.json().await.unwrap();
    let listed = support::listed(&client, timeline).await.paradoxes;
    (
        ids(&polled.anomalies),
        ids(&streamed.anomalies),
        raw["anomalies"].clone(),
        listed,
    )
}

/// Ada moves her own celebration before the treaty it celebrates: the grandfather paradox of
/// her doing. Bob, looking at the same timeline, is shown the same anomaly (id and kind) on
/// every face, and the list's count is the monitor's.
#[tokio::test]
async fn two_travellers_are_shown_one_anomaly_identity_and_the_list_counts_it() {
    let server = Served::start(config()).await;
    let ada = server.client("ada");
    let primary = TimelineId::primary();
    let celebration = treaty_and_celebration(&ada, &primary).await;
    celebrate_early(&ada, &primary, &celebration).await;

    let (polled, streamed, raw, listed) = shown_to(&server, "ada", &primary).await;
    assert_eq!(
        polled.iter().map(|(_, kind)| *kind).collect::<Vec<_>>(),
        [AnomalyKind::Paradox(
            chronoscope::paradox::ParadoxKind::Grandfather
        )],
        "{raw}"
    );
    assert_eq!(streamed, polled, "the stream shows what the monitor does");
    assert_eq!(raw[0]["anomaly_id"], polled[0].0.as_str());
    assert_eq!(
        listed,
        polled.len(),
        "the list counts what the monitor shows"
    );

    let by_bob = shown_to(&server, "bob", &primary).await;
    assert_eq!(
        by_bob,
        (polled, streamed, raw, listed),
        "bob is shown what ada is"
    );
}

async fn next_update(stream: &mut EventsStream) -> EventsUpdate {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("a change within 5 s")
        .expect("the stream goes on")
        .expect("a change, not an error")
}

/// `monitor-events/stream` (the guide's "real time"), followed by `watcher` while `writer`
/// changes the timeline: a snapshot of the matching events, then a manipulation arrives
/// within a second as the old event removed and the new head changed (in paradox), an event
/// elsewhere is not told, and the revert brings the original back; a deleted timeline ends it.
async fn events_stream_follows_changes(
    watcher: &dyn TimelineService,
    writer: &dyn TimelineService,
) {
    let made = writer
        .create_timeline(support::named("Turin 1860"))
        .await
        .unwrap();
    let timeline = made.id.clone();
    let celebration = treaty_and_celebration(writer, &timeline).await;
    let mut stream = watcher
        .watch_events(SearchQuery {
            timeline_id: Some(timeline.clone()),
            location: Some("turin".into()),
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    let first = next_update(&mut stream).await;
    let EventsChange::Snapshot { events, .. } = &first.change else {
        panic!("a stream starts with a snapshot: {first:?}");
    };
    let described: Vec<_> = events
        .iter()
        .map(|e| (e.event.description.as_str(), e.in_paradox))
        .collect();
    assert_eq!(described, [("Treaty", false), ("Treaty celebrated", false)]);

    // Elsewhere: nothing to tell.
    writer
        .add_event(
            &timeline,
            NewEvent {
                location: "Paris".into(),
                ..event("Elsewhere", "1860-07-01T12:00:00Z", &[])
            },
        )
        .await
        .unwrap();
    celebrate_early(writer, &timeline, &celebration).await;
    let acknowledged = std::time::Instant::now();
    let mut told = vec![next_update(&mut stream).await];
    let waited = acknowledged.elapsed();
    assert!(
        waited < Duration::from_secs(1),
        "the change arrived {waited:?} after it was acknowledged"
    );
    while told.len() < 3 {
        told.push(next_update(&mut stream).await);
    }
    let mut changed = Vec::new();
    let mut removed = Vec::new();
    for update in &told {
        assert!(update.position > first.position);
        match &update.change {
            EventsChange::Changed { event } => {
                changed.push((event.event.description.clone(), event.in_paradox))
            }
            EventsChange::Removed { event_id } => removed.push(event_id.clone()),
            other => panic!("unexpected {other:?}"),
        }
    }
    changed.sort();
    assert_eq!(
        changed,
        [
            ("Treaty".to_owned(), true),
            ("Treaty celebrated".to_owned(), true)
        ],
        "the new head and its cause are now named by a paradox"
    );
    assert_eq!(
        removed,
        std::slice::from_ref(&celebration),
        "the old head no longer stands"
    );

    writer
        .revert_event(RevertRequest {
            event_id: celebration.clone(),
            timeline_id: Some(timeline.clone()),
            safety_check: false,
        })
        .await
        .unwrap();
    let mut back = Vec::new();
    while back.len() < 3 {
        back.push(next_update(&mut stream).await.change);
    }
    assert!(
        back.iter()
            .any(|c| matches!(c, EventsChange::Changed { event }
            if event.event.event_id == celebration && !event.in_paradox)),
        "the original is back, out of paradox: {back:?}"
    );

    writer.delete_timeline(&timeline).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("told within 5 s");
    let Some(Err(e)) = end else {
        panic!("expected an error, got {end:?}");
    };
    assert!(e.to_string().contains(timeline.as_str()), "{e}");
}

#[tokio::test]
async fn the_events_stream_tells_changes_within_a_second_over_http() {
    let server = Served::start(config()).await;
    let ada = server.client("ada");
    let bob = server.client("bob");
    events_stream_follows_changes(&ada, &bob).await;
}

#[tokio::test]
async fn the_events_stream_tells_changes_within_a_second_embedded() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let bob = engine.session("bob".parse().unwrap());
    events_stream_follows_changes(&ada, &bob).await;
}

/// A stream re-checks read on every push (guide §5.1): when the timeline's admin takes the
/// follower's read away, their monitor stream and their events stream end with an
/// `access_revoked` event on the wire, a problem naming the timeline, and the timeline is then
/// unknown to them.
#[tokio::test]
async fn taking_read_away_ends_the_streams_with_access_revoked() {
    let server = Served::start(config()).await;
    let ada = server.client("ada");
    let made = ada
        .create_timeline(support::named("Archive"))
        .await
        .unwrap();
    let lists = |read: &[&str]| SetAccessControlRequest {
        timeline_id: made.id.clone(),
        permissions: Some(Permissions {
            read: read.iter().map(|n| n.parse().unwrap()).collect(),
            write: Vec::new(),
            admin: vec!["ada".parse().unwrap()],
        }),
    };
    ada.set_access_control(lists(&["bob"])).await.unwrap();
    let http = reqwest::Client::new();
    let open = |path: &str| {
        http.get(format!("{}{path}?timeline_id={}", server.base, made.id))
            .bearer_auth(token("bob"))
            .send()
    };
    let mut monitor = open("/v1/monitor-timeline/stream").await.unwrap();
    let mut events = open("/v1/monitor-events/stream").await.unwrap();
    assert_eq!(
        (monitor.status().as_u16(), events.status().as_u16()),
        (200, 200)
    );
    for stream in [&mut monitor, &mut events] {
        let first = read_until(stream, "event: snapshot", Duration::from_secs(3)).await;
        assert!(first.contains("event: snapshot"), "{first}");
    }
    ada.set_access_control(lists(&[])).await.unwrap();
    for stream in [&mut monitor, &mut events] {
        let end = read_until(stream, "\n\n", Duration::from_secs(5)).await;
        let end = if end.contains("access_revoked") {
            end
        } else {
            end + &read_until(stream, "access_revoked", Duration::from_secs(5)).await
        };
        assert!(end.contains("event: access_revoked"), "{end}");
        assert!(end.contains(made.id.as_str()), "{end}");
        assert!(
            matches!(stream.chunk().await, Ok(None)),
            "the stream ends after access_revoked"
        );
    }
    let again = open("/v1/monitor-timeline/stream").await.unwrap();
    assert_eq!(again.status().as_u16(), 400, "unknown to bob now");
}

/// The remote client (the dashboard's, `monitor --follow`'s) ends a stream whose read was
/// taken away with the error, as the engine in-process does, not quietly.
#[tokio::test]
async fn the_client_ends_a_revoked_stream_with_the_reason() {
    let server = Served::start(config()).await;
    let ada = server.client("ada");
    let made = ada.create_timeline(support::named("Ledger")).await.unwrap();
    let set = |read: Vec<&str>| SetAccessControlRequest {
        timeline_id: made.id.clone(),
        permissions: Some(Permissions {
            read: read.into_iter().map(|n| n.parse().unwrap()).collect(),
            write: Vec::new(),
            admin: vec!["ada".parse().unwrap()],
        }),
    };
    ada.set_access_control(set(vec!["bob"])).await.unwrap();
    let mut stream = watch(&server.client("bob"), &made.id).await;
    next(&mut stream).await;
    ada.set_access_control(set(Vec::new())).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("told within 5 s");
    assert!(
        matches!(&end, Some(Err(ServiceError::AccessRevoked { timeline })) if timeline == made.id.as_str()),
        "{end:?}"
    );
    assert!(stream.next().await.is_none(), "nothing after it");
}

/// `set-access-control` needs `permissions`: a body without it (or with it misspelt) is refused
/// rather than taken for a removal that would open the timeline to everyone.
#[tokio::test]
async fn a_missing_permissions_field_is_refused_not_taken_for_a_removal() {
    let server = Served::start(config()).await;
    let http = reqwest::Client::new();
    for body in [
        r#"{"timeline_id":"primary"}"#,
        r#"{"timeline_id":"primary","permision":null}"#,
    ] {
        let resp = http
            .post(format!("{}/v1/set-access-control", server.base))
            .bearer_auth(token("ada"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 400, "{body}");
        let problem: serde_json::Value = resp.json().await.unwrap();
        assert!(detail(&problem).contains("permissions"), "{problem}");
    }
}

/// A big timeline followed by many: streams asking the same question (timeline, location,
/// range) share one task, whatever their number; a snapshot is one page (the stream's `limit`)
/// with the cursor of the rest in `monitor-events`; the changes then cover every matching
/// event, on a page or not, and the task stops when its last stream goes.
#[tokio::test]
async fn streams_asking_the_same_question_share_one_feed_and_a_snapshot_is_one_page() {
    let engine = engine().await;
    let ada = engine.session("ada".parse().unwrap());
    let made = ada
        .create_timeline(support::named("Turin archive"))
        .await
        .unwrap();
    let timeline = made.id.clone();
    for day in 1..=25 {
        let time = format!("1860-03-{day:02}T12:00:00Z");
        ada.add_event(&timeline, event(&format!("Day {day}"), &time, &[]))
            .await
            .unwrap();
    }
    let ask = |location: &str| SearchQuery {
        timeline_id: Some(timeline.clone()),
        location: Some(location.into()),
        page: PageRequest::first(10),
        ..SearchQuery::default()
    };
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(ada.watch_events(ask("turin")).await.unwrap());
    }
    let elsewhere = ada.watch_events(ask("paris")).await.unwrap();
    assert_eq!(
        engine.followed_event_questions(),
        2,
        "three streams of Turin share one task; Paris has its own"
    );

    let mut cursor = None;
    for stream in &mut streams {
        let first = next_update(stream).await;
        let EventsChange::Snapshot {
            events,
            next_cursor,
        } = first.change
        else {
            panic!("a stream starts with a snapshot");
        };
        let days: Vec<_> = events.iter().map(|e| e.event.description.clone()).collect();
        let want: Vec<_> = (1..=10).map(|d| format!("Day {d}")).collect();
        assert_eq!(days, want, "the first page, in time order");
        cursor = next_cursor;
    }
    let rest = ada
        .monitor_events(SearchQuery {
            page: PageRequest {
                limit: Some(PageRequest::MAX_LIMIT),
                cursor: Some(cursor.expect("a cursor: 15 more events match")),
            },
            ..ask("turin")
        })
        .await
        .unwrap();
    let days: Vec<_> = rest
        .items
        .iter()
        .map(|e| e.event.description.clone())
        .collect();
    let want: Vec<_> = (11..=25).map(|d| format!("Day {d}")).collect();
    assert_eq!(
        days, want,
        "monitor-events reads the rest from the snapshot's cursor"
    );

    // An event after every page of the snapshot is told to every stream, and only once.
    let late = ada
        .add_event(&timeline, event("Day 26", "1860-03-26T12:00:00Z", &[]))
        .await
        .unwrap();
    for stream in &mut streams {
        let update = next_update(stream).await;
        let EventsChange::Changed { event } = &update.change else {
            panic!("expected the new event, got {update:?}");
        };
        assert_eq!(event.event.event_id, late.event_id);
        assert!(
            tokio::time::timeout(Duration::from_millis(300), stream.next())
                .await
                .is_err(),
            "one change, told once"
        );
    }

    drop(streams);
    drop(elsewhere);
    let gone = tokio::time::Instant::now() + Duration::from_secs(2);
    while engine.followed_event_questions() > 0 {
        assert!(
            tokio::time::Instant::now() < gone,
            "the tasks stop with their last stream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
