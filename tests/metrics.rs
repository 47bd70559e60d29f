//! `/metrics`: the server's requests, group commits, jobs, monitor scans and reads move the
//! Prometheus counters a scrape shows.

mod support;

use std::time::Duration;

use chronoscope::service::{ManipulationDetails, MonitorQuery, NewEvent, NewSchedule};

use chronoscope::service::prelude::*;
use serde_json::json;
use support::http::{App, token};

/// The value of the sample `name{labels}` (labels in any order), if the scrape has it.
fn sample(scrape: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    scrape.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let (found, value) = match rest.strip_prefix('{') {
            Some(labelled) => labelled.split_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        let found: Vec<&str> = found.split(',').filter(|l| !l.is_empty()).collect();
        let same =
            found.len() == wanted.len() && wanted.iter().all(|w| found.contains(&w.as_str()));
        same.then(|| value.trim().parse().ok()).flatten()
    })
}

/// The gauge of `timeline`'s open anomalies of `severity`, if the scrape has it.
fn anomalies(scrape: &str, timeline: &str, severity: &str) -> Option<f64> {
    sample(
        scrape,
        "chronoscope_anomalies",
        &[("timeline", timeline), ("severity", severity)],
    )
}

/// `sample`, or 0 when the series does not exist yet.
fn value(scrape: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    sample(scrape, name, labels).unwrap_or(0.0)
}

async fn scrape(url: &str) -> String {
    // reqwest is built without a crypto provider of its own: chronoscope's is installed.
    chronoscope::tls::install_default_provider();
    let answer = reqwest::get(url)
        .await
        .expect("the metrics listener answers");
    assert_eq!(answer.status(), 200);
    let kind = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    answer.text().await.expect("a text body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_requests_commits_jobs_anomalies_and_reads_move() {
    // Installed before the router is built: routers record only once a recorder is there.
    let handle = chronoscope::metrics::install().expect("the recorder installs");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}/metrics", listener.local_addr().expect("address"));
    tokio::spawn(chronoscope::metrics::serve(
        listener,
        handle,
        std::future::pending(),
    ));
    let app = App::new().await;
    let ada = token("ada");
    let list = [
        ("method", "GET"),
        ("route", "/v1/timelines"),
        ("status", "200"),
    ];
    let before = scrape(&url).await;

    assert_eq!(app.get("/v1/timelines", &ada).await.status, 200);
    assert_eq!(app.get("/v1/timelines", &ada).await.status, 200);
    let made = app
        .post("/v1/timelines", &ada, json!({"name": "measured"}))
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    let id = made.json()["id"].as_str().expect("an id").to_owned();
    assert_eq!(
        app.get(&format!("/v1/timeline/{id}"), &ada).await.status,
        200
    );
    assert_eq!(app.get("/no/such/path", &ada).await.status, 404);

    let session = app.engine.session("ada".parse().expect("a name"));
    let add = |description: &str, fixed_point: bool| NewEvent {
        description: description.into(),
        time: app.engine.now(),
        location: "Bern".into(),
        causes: Vec::new(),
        fixed_point,
        safety_check: false,
    };
    let movable = session
        .add_event(&"primary".parse().expect("id"), add("movable", false))
        .await
        .expect("an event");
    let fixed = session
        .add_event(&"primary".parse().expect("id"), add("fixed", true))
        .await
        .expect("a fixed point");
    for event in [movable.event_id, fixed.event_id] {
        session
            .schedule_manipulation(NewSchedule {
                event_id: event,
                scheduled_time: app.engine.now(),
                manipulation_details: ManipulationDetails {
                    new_time: None,
                    new_details: Some("moved".into()),
                },
                timeline_id: None,
            })
            .await
            .expect("a job");
    }
    assert_eq!(app.engine.run_due().await.expect("the jobs run"), 2);
    let report = session
        .monitor_timeline(MonitorQuery {
            timeline_id: "primary".parse().expect("id"),
            time_range: None,
        })
        .await
        .expect("a scan");
    // Another timeline looked at last does not replace primary's figures.
    let calm = session
        .monitor_timeline(MonitorQuery {
            timeline_id: id.parse().expect("id"),
            time_range: None,
        })
        .await
        .expect("a scan");
    assert!(calm.anomalies.is_empty(), "{calm:?}");
    // Histogram samples are folded into buckets at the latest when scraped.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let after = scrape(&url).await;

    let moved = |name: &str, labels: &[(&str, &str)]| {
        value(&after, name, labels) - value(&before, name, labels)
    };
    assert_eq!(moved("chronoscope_http_requests_total", &list), 2.0);
    assert_eq!(
        moved("chronoscope_http_request_duration_seconds_count", &list),
        2.0
    );
    let mut inf = list.to_vec();
    inf.push(("le", "+Inf"));
    assert_eq!(
        moved("chronoscope_http_request_duration_seconds_bucket", &inf),
        2.0,
        "latency is a histogram with buckets"
    );
    assert_eq!(
        moved(
            "chronoscope_http_requests_total",
            &[
                ("method", "POST"),
                ("route", "/v1/timelines"),
                ("status", "201")
            ]
        ),
        1.0
    );
    // By the route's template, never by the raw path.
    assert!(
        moved(
            "chronoscope_http_requests_total",
            &[
                ("method", "GET"),
                ("route", "/v1/timeline/{timeline_id}"),
                ("status", "200")
            ]
        ) >= 1.0,
        "{after}"
    );
    assert!(
        !after.contains(&format!("/v1/timeline/{id}")),
        "a raw path became a label"
    );
    assert_eq!(
        moved(
            "chronoscope_http_requests_total",
            &[("method", "GET"), ("route", "unmatched"), ("status", "404")]
        ),
        1.0
    );
    // The POST, the two events, the two jobs and their runs were appended by group commit.
    assert!(
        moved("chronoscope_commit_batch_ops_count", &[]) >= 1.0,
        "{after}"
    );
    assert!(
        moved("chronoscope_commit_batch_ops_sum", &[]) >= 7.0,
        "{after}"
    );
    assert!(moved("chronoscope_commit_append_seconds_count", &[]) >= 1.0);
    assert!(
        sample(
            &after,
            "chronoscope_commit_append_seconds_bucket",
            &[("le", "+Inf")]
        )
        .is_some()
    );
    assert_eq!(moved("chronoscope_jobs_run_total", &[]), 2.0);
    assert_eq!(moved("chronoscope_jobs_failed_total", &[]), 1.0);
    // The failed job is an anomaly of primary: its gauges show its scan, each timeline its own.
    assert!(moved("chronoscope_monitor_scans_total", &[]) >= 2.0);
    for severity in ["critical", "warning", "info"] {
        let of = |timeline: &str| {
            anomalies(&after, timeline, severity)
                .unwrap_or_else(|| panic!("no {severity} gauge of {timeline}:\n{after}"))
        };
        assert_eq!(of(&id), 0.0, "{severity}");
        let shown = of("primary");
        let found = report
            .anomalies
            .iter()
            .filter(|a| serde_json::to_value(a.severity).ok() == Some(json!(severity)))
            .count();
        assert_eq!(shown, found as f64, "{severity}");
    }
    assert!(!report.anomalies.is_empty(), "the failed job is reported");
    // Every read passed the barrier; on the in-memory store a round is one head query.
    assert!(moved("chronoscope_reads_total", &[]) >= 4.0);
    assert!(moved("chronoscope_read_barriers_total", &[]) >= 1.0);
    assert!(moved("chronoscope_store_read_queries_total", &[]) >= 1.0);
    assert!(sample(&after, "chronoscope_log_position", &[]).is_some_and(|p| p >= 7.0));
    assert_eq!(
        sample(&after, "chronoscope_replica_lag_records", &[]),
        Some(0.0)
    );

    // A deleted timeline's gauges go with it: left behind, an alert on them would never clear.
    session
        .delete_timeline(&id.parse().expect("id"))
        .await
        .expect("the timeline is deleted");
    let gone = scrape(&url).await;
    for severity in ["critical", "warning", "info"] {
        assert_eq!(
            anomalies(&gone, &id, severity),
            None,
            "{severity} of a deleted timeline:\n{gone}"
        );
        assert!(anomalies(&gone, "primary", severity).is_some(), "{gone}");
    }
    assert_eq!(
        gone.matches("# TYPE chronoscope_anomalies gauge").count(),
        1,
        "{gone}"
    );
}
