//! Input that used to panic or to reach the edge of chrono's range: every face refuses it with
//! a problem naming the accepted range, and nothing is written.

mod support;

use axum::http::StatusCode;
use serde_json::json;
use support::http::*;

const RANGE: &str = "years 0001 to 9999";

#[tokio::test]
async fn an_interval_too_long_to_compute_is_a_400_naming_the_accepted_range() {
    let app = App::new().await;
    let t = token("ada");
    for uri in [
        "/v1/search-events?time_range=2025-01-01T00:00:00Z/P100000000000D100000000000D",
        "/v1/search-events?time_range=2025-01-01T00:00:00Z/P100000000000D",
        "/v1/search-events?time_range=P9223372036854775807Y/2025-01-01T00:00:00Z",
        "/v1/search-events?time_range=2025-01-01T00:00:00Z/P8000Y",
        "/api/v1/monitor-paradox?timeline_id=primary&time_range=2025-01-01T00:00:00Z/PT9223372036854775807S",
        "/v1/automation-log?date_range=2025-01-01T00:00:00Z/P1W9223372036854775807D",
    ] {
        let p = app
            .get(uri, &t)
            .await
            .assert_problem(400, "invalid-request");
        let detail = detail(&p);
        assert!(detail.contains(RANGE), "{uri}: {detail}");
    }
    // The service is still there.
    let r = app.get("/v1/timelines", &t).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

#[tokio::test]
async fn json_times_outside_years_1_to_9999_are_refused_and_change_nothing() {
    let app = App::new().await;
    let t = token("ada");
    let far = "+262142-12-31T23:59:59Z";
    let before = app.get("/v1/timelines", &t).await.json();
    let cases = [
        (
            "/v1/create-timeline",
            json!({"description": "edge", "destination_time": far}),
            400,
        ),
        (
            "/v1/timelines",
            json!({"name": "edge", "destination_time": far}),
            422,
        ),
        (
            "/api/v1/travel",
            json!({"destination_time": far, "location": "edge"}),
            400,
        ),
        ("/v1/anchors", json!({"timestamp": far}), 422),
        (
            "/v1/set-anchor",
            json!({"timestamp": "0000-06-01T00:00:00Z"}),
            400,
        ),
        (
            "/v1/timeline/primary/events",
            json!({"description": "edge", "time": far, "location": "here"}),
            400,
        ),
        (
            "/v1/paradox-checks",
            json!({"timeline_id": "primary", "proposed_changes": [{"event": "edge", "time": far}]}),
            400,
        ),
        (
            "/v1/trigger-external-manipulation",
            json!({"external_system": "ci", "trigger_conditions": {"timestamp": far},
                   "actions": [{"action_type": "revert", "event_id": "evt_01jfake"}]}),
            400,
        ),
    ];
    for (uri, body, status) in cases {
        let r = app.post(uri, &t, body).await;
        let p = r.assert_problem(status, "invalid-request");
        let detail = detail(&p);
        assert!(detail.contains(RANGE), "{uri}: {detail}");
    }
    assert_eq!(app.get("/v1/timelines", &t).await.json(), before);
    let me = app.get("/v1/me", &t).await.json();
    assert_eq!(me["timeline_id"], "primary", "{me}");
    assert_eq!(app.get("/v1/anchors", &t).await.json(), json!([]));
    assert_eq!(app.get("/v1/travels", &t).await.json(), json!([]));
}

#[tokio::test]
async fn the_edges_of_the_range_are_accepted() {
    let app = App::new().await;
    let t = token("ada");
    let r = app
        .post(
            "/v1/create-timeline",
            &t,
            json!({"description": "the end", "destination_time": "9999-12-31T23:59:59Z"}),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    let r = app
        .post(
            "/v1/anchors",
            &t,
            json!({"timestamp": "0001-01-01T00:00:00Z"}),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
}

#[tokio::test]
async fn deleting_another_travellers_timeline_needs_the_admin_scope() {
    let app = App::new().await;
    let ada = token("ada");
    let created = app
        .post("/v1/timelines", &ada, json!({"name": "ada's branch"}))
        .await
        .json();
    let id = created["id"].as_str().unwrap().to_owned();
    let uri = format!("/v1/timeline/{id}");
    // Bob may read it, not delete it.
    let bob = token("bob");
    let p = app
        .delete(&uri, &bob)
        .await
        .assert_problem(403, "forbidden");
    assert!(detail(&p).contains("admin"), "{p}");
    assert_eq!(app.get(&uri, &bob).await.status, StatusCode::OK);
    // An administrator may; so may its creator (shown with view=full).
    let full = app.get(&format!("{uri}?view=full"), &ada).await.json();
    assert_eq!(full["created_by"], "ada", "{full}");
    let r = app.delete(&uri, &token_with_scope("root", "admin")).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let mine = app
        .post("/v1/timelines", &ada, json!({"name": "another"}))
        .await
        .json();
    let r = app
        .delete(
            &format!("/v1/timeline/{}", mine["id"].as_str().unwrap()),
            &ada,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    // Refusals other than the scope are unchanged: primary cannot be deleted at all.
    app.delete("/v1/timeline/primary", &ada)
        .await
        .assert_problem(409, "conflict");
}
