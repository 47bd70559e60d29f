//! Each problem type of the catalogue as a client meets it over HTTP, and its explanation page.

mod support;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use chronoscope::engine::ManualClock;
use chronoscope::error::{PROBLEM_TYPES, ServiceError};
use chronoscope::paradox::{Paradox, ParadoxKind};
use chronoscope::server::build_router;
use chronoscope::store::MemoryStore;
use serde_json::json;
use support::http::*;

#[tokio::test]
async fn every_problem_type_has_an_explanation_page() {
    let app = App::new().await;
    for p in PROBLEM_TYPES {
        let r = app
            .call(Method::GET, &format!("/problems/{}", p.slug), None, None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", p.slug);
        assert!(
            r.text.contains(p.title) && r.text.contains(p.explanation),
            "{}",
            p.slug
        );
    }
}

#[tokio::test]
async fn a_closed_timeline_is_a_400_timeline_closed() {
    let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
    let engine = support::engine_on(Arc::new(MemoryStore::new()), clock.clone()).await;
    let app = App {
        router: build_router(config(), Arc::clone(&engine)),
        engine,
        documented: true,
    };
    let t = token("ada");
    let tl = app
        .post("/v1/timelines", &t, json!({"name": "brief"}))
        .await
        .json();
    let id = tl["id"].as_str().unwrap();
    clock.advance(chrono::Duration::hours(2));
    let got = app.get(&format!("/v1/timeline/{id}"), &t).await.json();
    assert_eq!(got["status"], "closed");
    let p = app
        .post("/v1/travels", &t, json!({"destination": id}))
        .await
        .assert_problem(400, "timeline-closed");
    assert!(detail(&p).contains(id));
    app.post(
        &format!("/v1/timeline/{id}/events"),
        &t,
        json!({"description": "late", "time": "2026-01-01T00:00:00Z", "location": "here"}),
    )
    .await
    .assert_problem(400, "timeline-closed");
    // Still readable and searchable.
    let r = app
        .get(&format!("/v1/search-events?timeline_id={id}"), &t)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

#[tokio::test]
async fn paradox_detected_lists_the_paradoxes_only_with_view_full() {
    // The refusal itself is the engine's (and its checker's); here the server's rendering.
    let paradox = Paradox {
        kind: ParadoxKind::CausalOrder,
        description: "'Edison demo' would happen before its cause 'Invention'".into(),
        events: vec!["evt_a".parse().unwrap()],
        items: vec![],
    };
    let error = ServiceError::ParadoxDetected {
        timeline: "primary".into(),
        paradoxes: vec![paradox.clone()],
    };
    let app = Wrapped::new(engine().await)
        .failing("manipulate_event", error.clone())
        .app(config());
    let t = token("ada");
    let body = json!({"event_id": "evt_a", "new_outcome": {}, "safety_check": true});
    let p = app
        .post("/v1/manipulate-event", &t, body.clone())
        .await
        .assert_problem(400, "paradox-detected");
    // In words, naming the events, not the kind's internal name.
    assert!(
        detail(&p).contains("'Edison demo' would happen before its cause 'Invention'"),
        "{p}"
    );
    assert!(!detail(&p).contains("causal_order"), "{p}");
    let full = app.post("/v1/manipulate-event?view=full", &t, body).await;
    assert_eq!(full.status, StatusCode::BAD_REQUEST);
    let full = full.json();
    assert_eq!(full["paradoxes"], json!([paradox]));
    let decoded: ServiceError = serde_json::from_value(full["error"].clone()).unwrap();
    assert_eq!(decoded, error);
}

#[tokio::test]
async fn internal_errors_are_500_problems_that_do_not_leak_the_message() {
    let app = Wrapped::new(engine().await)
        .failing(
            "whoami",
            ServiceError::Internal("db password is hunter2".into()),
        )
        .app(config());
    let r = app.get("/v1/me?view=full", &token("ada")).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(!r.text.contains("hunter2"), "{}", r.text);
    let r = app.get("/v1/me", &token("ada")).await;
    r.assert_problem(500, "internal");
}

#[tokio::test]
async fn service_errors_map_to_their_catalogue_status_everywhere() {
    // Each error a service can return, through a route that passes it through unchanged.
    let cases = [
        (ServiceError::invalid("f", "bad"), 400, "invalid-request"),
        (
            ServiceError::unknown("timeline", "x"),
            400,
            "unknown-reference",
        ),
        (
            ServiceError::TimelineClosed {
                timeline: "x".into(),
                closed_at: "2026-01-01T00:00:00Z".into(),
            },
            400,
            "timeline-closed",
        ),
        (
            ServiceError::EventLocked {
                event: "e".into(),
                reason: "fixed".into(),
            },
            400,
            "event-locked",
        ),
        (ServiceError::not_found("item", "x"), 404, "not-found"),
        (ServiceError::Conflict("busy".into()), 409, "conflict"),
        (ServiceError::Unauthorized("no".into()), 401, "unauthorized"),
        (ServiceError::Forbidden("no".into()), 403, "forbidden"),
        (
            ServiceError::RateLimited {
                retry_after_secs: 7,
            },
            429,
            "rate-limited",
        ),
        (ServiceError::Unavailable("down".into()), 503, "unavailable"),
    ];
    for (error, status, slug) in cases {
        let app = Wrapped::new(engine().await)
            .failing("list_items", error.clone())
            .app(config());
        let r = app.get("/v1/items", &token("ada")).await;
        r.assert_problem(status, slug);
        if status == 429 {
            assert_eq!(r.header("retry-after"), Some("7"));
        }
        let full = app.get("/v1/items?view=full", &token("ada")).await.json();
        let decoded: ServiceError = serde_json::from_value(full["error"].clone()).unwrap();
        match error {
            // Why the store is unavailable is for the logs (it may name its URL).
            ServiceError::Unavailable(_) => assert_eq!(
                decoded,
                ServiceError::Unavailable(chronoscope::error::UNAVAILABLE.explanation.to_owned())
            ),
            _ => assert_eq!(decoded, error),
        }
    }
    // On a documented operation without a 400, the same validation errors are 422.
    let app = Wrapped::new(engine().await)
        .failing("register_item", ServiceError::unknown("timeline", "x"))
        .app(config());
    app.post("/v1/items", &token("ada"), json!({"description": "x"}))
        .await
        .assert_problem(422, "unknown-reference");
}

/// The safety check runs the real paradox checker: a move before a cause is refused with
/// `paradox-detected`, the paradoxes are listed with `view=full`, and nothing is written.
#[tokio::test]
async fn safety_check_refuses_a_move_before_a_cause_and_writes_nothing() {
    let app = App::new().await;
    let t = token("ada");
    let cause = app
        .post(
            "/v1/timeline/primary/events",
            &t,
            json!({"description": "Invention", "time": "1880-01-01T00:00:00Z", "location": "Lab"}),
        )
        .await
        .json();
    let effect = app
        .post(
            "/v1/timeline/primary/events",
            &t,
            json!({"description": "Demo", "time": "1890-01-01T00:00:00Z", "location": "NY", "causes": [cause["event_id"]]}),
        )
        .await
        .json();
    let body = json!({
        "event_id": effect["event_id"],
        "safety_check": true,
        "new_outcome": {"changes": [{"time": "1870-01-01T00:00:00Z"}]}
    });
    app.post("/v1/manipulate-event", &t, body.clone())
        .await
        .assert_problem(400, "paradox-detected");
    let full = app
        .post("/v1/manipulate-event?view=full", &t, body)
        .await
        .json();
    let kinds: Vec<&str> = full["paradoxes"]
        .as_array()
        .expect("paradoxes listed with view=full")
        .iter()
        .filter_map(|p| p["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["grandfather"], "{full}");
    let events = app.get("/v1/search-events?view=full", &t).await.json();
    let times: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["time"].as_str())
        .collect();
    assert_eq!(
        times,
        ["1880-01-01T00:00:00Z", "1890-01-01T00:00:00Z"],
        "nothing was written"
    );
    let check = app
        .post(
            "/v1/paradox-checks",
            &t,
            json!({"timeline_id": "primary", "proposed_changes": [{"event": cause["event_id"], "time": "1895-01-01T00:00:00Z"}]}),
        )
        .await;
    assert_eq!(check.json(), json!({"is_stable": false}));
}
