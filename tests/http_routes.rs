//! The routes of HTTP.md over an in-memory engine: statuses, exact documented shapes,
//! view=full, Location headers, pagination, and travellers kept apart.

mod support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use support::http::*;

async fn add_event(
    app: &App,
    t: &str,
    timeline: &str,
    description: &str,
    time: &str,
    location: &str,
) -> Value {
    let r = app
        .post(
            &format!("/v1/timeline/{timeline}/events"),
            t,
            json!({"description": description, "time": time, "location": location}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.json()
}

#[tokio::test]
async fn documented_timeline_operations_answer_exactly_the_documented_properties() {
    let app = App::new().await;
    let t = token("ada");
    let r = app
        .post(
            "/v1/timelines",
            &t,
            json!({"name": "Tesla", "destination_time": "1889-03-10T23:50:00+01:00", "id": "ignored", "status": "closed"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let body = r.json();
    assert_eq!(
        keys(&body),
        [
            "created_at",
            "destination_time",
            "id",
            "name",
            "status",
            "window"
        ]
    );
    assert_eq!(body["status"], "open");
    assert_eq!(body["destination_time"], "1889-03-10T22:50:00Z");
    let id = body["id"].as_str().unwrap().to_owned();
    assert_ne!(id, "ignored");
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/timeline/{id}").as_str())
    );

    let one = app.get(&format!("/v1/timeline/{id}"), &t).await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.json(), body);
    let full = app
        .get(&format!("/v1/timeline/{id}?view=full"), &t)
        .await
        .json();
    assert_eq!(full["parent"], "primary");
    assert!(full.get("event_count").is_some());

    let list = app.get("/v1/timelines", &t).await;
    assert_eq!(list.status, StatusCode::OK);
    let items = list.json();
    let items = items.as_array().unwrap();
    assert_eq!(items[0]["id"], "primary");
    for item in items {
        for k in keys(item) {
            assert!(
                [
                    "created_at",
                    "destination_time",
                    "id",
                    "name",
                    "status",
                    "window"
                ]
                .contains(&k.as_str()),
                "undocumented {k}"
            );
        }
    }
    let del = app.delete(&format!("/v1/timeline/{id}"), &t).await;
    assert_eq!(del.status, StatusCode::NO_CONTENT);
    assert!(del.text.is_empty());
    app.get(&format!("/v1/timeline/{id}"), &t)
        .await
        .assert_problem(404, "not-found");
    // primary cannot be deleted: a conflict problem.
    app.delete("/v1/timeline/primary", &t)
        .await
        .assert_problem(409, "conflict");
}

#[tokio::test]
async fn validation_errors_are_422_where_no_400_is_documented() {
    let app = App::new().await;
    let t = token("ada");
    let r = app
        .post(
            "/v1/timelines",
            &t,
            json!({"destination_time": "1889-03-10T23:50:00Z"}),
        )
        .await;
    let p = r.assert_problem(422, "invalid-request");
    assert!(detail(&p).contains("name"), "{p}");
    let r = app
        .post(
            "/v1/timelines",
            &t,
            json!({"name": "x", "base_timeline_id": "tml_nope"}),
        )
        .await;
    r.assert_problem(422, "unknown-reference");
    // Wrong field type on a 422 route.
    app.post("/v1/items", &t, json!({"description": 42}))
        .await
        .assert_problem(422, "invalid-request");
    app.post("/v1/anchors", &t, json!({"timestamp": "yesterday"}))
        .await
        .assert_problem(422, "invalid-request");
    // The same mistakes on a route with a documented 400 are 400.
    app.post("/v1/travels", &t, json!({"destination": 42}))
        .await
        .assert_problem(400, "invalid-request");
}

#[tokio::test]
async fn a_mission_items_anchors_travel_and_bodiless_conflicts() {
    let app = App::new().await;
    let t = token("ada");
    let anchor = app
        .post(
            "/v1/anchors",
            &t,
            json!({"timestamp": "2024-09-16T05:04:00Z", "description": "Home"}),
        )
        .await;
    assert_eq!(anchor.status, StatusCode::CREATED, "{}", anchor.text);
    let a = anchor.json();
    assert_eq!(keys(&a), ["description", "id", "timestamp"]);
    let anchor_id = a["id"].as_str().unwrap().to_owned();
    assert_eq!(
        anchor.header("location"),
        Some(format!("/v1/anchors/{anchor_id}").as_str())
    );

    // The same timeline, timestamp and description again: 409, no body, Location of the
    // existing anchor.
    for path in ["/v1/anchors", "/v1/set-anchor"] {
        let again = app
            .post(
                path,
                &t,
                json!({"timestamp": "2024-09-16T05:04:00Z", "description": "Home"}),
            )
            .await;
        assert_eq!(again.status, StatusCode::CONFLICT, "{path}");
        assert!(again.text.is_empty(), "{path}: {}", again.text);
        assert_eq!(
            again.header("location"),
            Some(format!("/v1/anchors/{anchor_id}").as_str())
        );
    }

    let tl = app
        .post(
            "/v1/timelines",
            &t,
            json!({"name": "Tesla", "destination_time": "1889-03-10T23:50:00Z"}),
        )
        .await
        .json();
    let tl_id = tl["id"].as_str().unwrap();
    let j = app
        .post("/v1/travels", &t, json!({"destination": tl_id}))
        .await;
    assert_eq!(j.status, StatusCode::OK, "{}", j.text);
    assert_eq!(
        j.json(),
        json!({"destination": tl_id, "arrival_time": "1889-03-10T23:50:00Z", "items_transported": []})
    );

    let item = app
        .post("/v1/items", &t, json!({"description": "Tesla's blueprint"}))
        .await;
    assert_eq!(item.status, StatusCode::OK, "{}", item.text);
    let item = item.json();
    assert_eq!(keys(&item), ["description", "id"]);
    let item_id = item["id"].as_str().unwrap().to_owned();
    let again = app
        .post("/v1/items", &t, json!({"description": "Tesla's blueprint"}))
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(again.text.is_empty());
    assert_eq!(
        again.header("location"),
        Some(format!("/v1/items/{item_id}").as_str())
    );

    let check = app
        .post(
            "/v1/paradox-checks",
            &t,
            json!({"timeline_id": tl_id, "proposed_changes": [
                {"event": "Retrieve the blueprint", "time": "1889-03-10T23:50:00Z"},
                {"item_id": item_id}]}),
        )
        .await;
    assert_eq!(check.status, StatusCode::OK, "{}", check.text);
    assert_eq!(keys(&check.json()), ["is_stable"]);

    let back = app
        .post(
            "/v1/travels?view=full",
            &t,
            json!({"destination": anchor_id, "items_transported": [item_id]}),
        )
        .await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.text);
    let back = back.json();
    assert_eq!(back["arrival_time"], "2024-09-16T05:04:00Z");
    assert_eq!(back["items_transported"], json!([item_id]));
    assert_eq!(back["anchor"], anchor_id.as_str());

    // The anchor is spent: travelling to it again is a 400 problem.
    app.post("/v1/travels", &t, json!({"destination": anchor_id}))
        .await
        .assert_problem(400, "invalid-request");

    let journeys = app.get("/v1/travels", &t).await.json();
    assert_eq!(journeys.as_array().unwrap().len(), 2);
    let got = app.get(&format!("/v1/items/{item_id}"), &t).await.json();
    assert_eq!(got["id"], item_id.as_str());
    let got = app
        .get(&format!("/v1/anchors/{anchor_id}"), &t)
        .await
        .json();
    assert_eq!(got["status"], "spent");
}

#[tokio::test]
async fn unknown_destination_is_a_400_unknown_reference() {
    let app = App::new().await;
    let r = app
        .post(
            "/v1/travels",
            &token("ada"),
            json!({"destination": "tml_nowhere"}),
        )
        .await;
    let p = r.assert_problem(400, "unknown-reference");
    assert!(detail(&p).contains("tml_nowhere"));
    // With view=full the problem carries the ServiceError itself.
    let r = app
        .post(
            "/v1/travels?view=full",
            &token("ada"),
            json!({"destination": "tml_nowhere"}),
        )
        .await;
    let p = r.json();
    assert_eq!(
        p["error"],
        json!({"kind": "unknown_reference", "what": "timeline or anchor", "id": "tml_nowhere"})
    );
}

#[tokio::test]
async fn events_search_manipulate_revert_and_fixed_points() {
    let app = App::new().await;
    let t = token("ada");
    let e1 = add_event(
        &app,
        &t,
        "primary",
        "Edison demo",
        "1889-03-10T20:00:00Z",
        "New York",
    )
    .await;
    let e1_id = e1["event_id"].as_str().unwrap().to_owned();
    let fixed = app
        .post(
            "/v1/timeline/primary/events",
            &t,
            json!({"description": "Moon landing", "time": "1969-07-20T20:17:00Z", "location": "Moon", "fixed_point": true}),
        )
        .await
        .json();
    let fixed_id = fixed["event_id"].as_str().unwrap().to_owned();

    // Fixed point: 400 event-locked on the documented route.
    let r = app
        .post(
            "/v1/events",
            &t,
            json!({"timeline_id": "primary", "event_id": fixed_id, "new_outcome": {"description": "Nope"}}),
        )
        .await;
    r.assert_problem(400, "event-locked");
    // timeline_id is required on the documented route only.
    app.post(
        "/v1/events",
        &t,
        json!({"event_id": e1_id, "new_outcome": {}}),
    )
    .await
    .assert_problem(400, "invalid-request");

    let m = app
        .post(
            "/v1/events",
            &t,
            json!({"timeline_id": "primary", "event_id": e1_id, "new_outcome": {"description": "Tesla demo", "changes": [{"action": "swap", "time": "1889-03-10T21:00:00Z"}]}}),
        )
        .await;
    assert_eq!(m.status, StatusCode::OK, "{}", m.text);
    let m = m.json();
    assert_eq!(keys(&m), ["new_event_id", "status"]);
    assert_eq!(m["status"], "applied");

    // Guide manipulate-event on the new head (timeline defaults to primary).
    let head = m["new_event_id"].as_str().unwrap();
    let g = app
        .post(
            "/v1/manipulate-event",
            &t,
            json!({"event_id": head, "new_outcome": {"description": "Tesla wins"}}),
        )
        .await;
    assert_eq!(g.status, StatusCode::OK, "{}", g.text);
    assert_eq!(
        keys(&g.json()),
        ["description", "new_event_id", "status", "time"]
    );

    let rv = app
        .post("/v1/revert-event", &t, json!({"event_id": e1_id}))
        .await;
    assert_eq!(rv.status, StatusCode::OK, "{}", rv.text);
    assert_eq!(keys(&rv.json()), ["original_event_id", "status"]);
    assert_eq!(rv.json()["status"], "reverted");

    // search-events: by query and by JSON body on a GET, same answer.
    let q = app.get("/v1/search-events?location=new%20york", &t).await;
    assert_eq!(q.status, StatusCode::OK, "{}", q.text);
    let q = q.json();
    assert_eq!(keys(&q), ["events"]);
    for e in q["events"].as_array().unwrap() {
        assert_eq!(keys(e), ["description", "event_id", "location", "time"]);
    }
    let b = app
        .call(
            Method::GET,
            "/v1/search-events",
            Some(&t),
            Some(json!({"location": "YORK"})),
        )
        .await;
    assert_eq!(b.status, StatusCode::OK, "{}", b.text);
    assert_eq!(b.json(), q);
    let scan = app
        .post(
            "/api/v1/scan-events",
            &t,
            json!({"location": "york", "time_range": "1889-01-01T00:00:00Z/1890-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(scan.status, StatusCode::OK, "{}", scan.text);
    assert_eq!(scan.json(), q);

    let cp = app.get("/v1/check-paradox?timeline_id=primary", &t).await;
    assert_eq!(cp.status, StatusCode::OK, "{}", cp.text);
    assert_eq!(cp.json()["status"], "checked");
    let cp = app
        .call(
            Method::GET,
            "/v1/check-paradox",
            Some(&t),
            Some(json!({"timeline_id": "primary"})),
        )
        .await;
    assert_eq!(cp.status, StatusCode::OK, "{}", cp.text);
    // Missing required query field: a 400 problem.
    app.get("/v1/check-paradox", &t)
        .await
        .assert_problem(400, "invalid-request");

    let ct = app
        .get(
            "/api/v1/check-timeline?timeline_id=primary&significant_event=Moon%20landing",
            &t,
        )
        .await;
    assert_eq!(ct.status, StatusCode::OK, "{}", ct.text);
    assert_eq!(ct.json()["status"], "holds");

    let mon = app
        .get("/v1/monitor-timeline?timeline_id=primary", &t)
        .await;
    assert_eq!(mon.status, StatusCode::OK, "{}", mon.text);
    assert_eq!(keys(&mon.json()), ["anomalies", "status"]);
    app.get("/v1/monitor-timeline?timeline_id=tml_nope", &t)
        .await
        .assert_problem(400, "unknown-reference");
    let mp = app
        .get(
            "/api/v1/monitor-paradox?timeline_id=primary&time_range=1889-01-01T00:00:00Z/P1Y",
            &t,
        )
        .await;
    assert_eq!(mp.status, StatusCode::OK, "{}", mp.text);
    assert!(mp.json().get("checked_at").is_some());
}

#[tokio::test]
async fn guide_timeline_creation_and_travel_to_time() {
    let app = App::new().await;
    let t = token("ada");
    let c = app
        .post(
            "/v1/create-timeline",
            &t,
            json!({"base_timeline_id": "primary", "description": "Alt 1889"}),
        )
        .await;
    assert_eq!(c.status, StatusCode::CREATED, "{}", c.text);
    let c = c.json();
    assert_eq!(keys(&c), ["description", "status", "timeline_id"]);
    assert_eq!(c["status"], "created");
    let p = app
        .post(
            "/v1/create-parallel-timeline?view=full",
            &t,
            json!({"base_timeline_id": c["timeline_id"], "description": "Alt 2", "variation": "Tesla wins"}),
        )
        .await;
    assert_eq!(p.status, StatusCode::CREATED, "{}", p.text);
    assert_eq!(p.json()["variation"], "Tesla wins");
    assert_eq!(p.json()["parent"], c["timeline_id"]);

    let j = app
        .post(
            "/api/v1/travel",
            &t,
            json!({"destination_time": "1969-07-20T20:17:00Z", "location": "Houston"}),
        )
        .await;
    assert_eq!(j.status, StatusCode::OK, "{}", j.text);
    assert_eq!(j.json()["location"], "Houston");
    let me = app.get("/v1/me", &t).await.json();
    assert_eq!(me["traveller"], "ada");
}

#[tokio::test]
async fn lists_are_paginated_with_a_link_header_walking_every_page() {
    let app = App::new().await;
    let t = token("ada");
    for i in 0..7 {
        let r = app
            .post("/v1/timelines", &t, json!({"name": format!("t{i}")}))
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let mut uri = "/v1/timelines?limit=3&view=full".to_owned();
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let r = app.get(&uri, &t).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        pages += 1;
        for item in r.json().as_array().unwrap() {
            assert!(
                item.get("event_count").is_some(),
                "view=full kept on next pages"
            );
            seen.push(item["id"].as_str().unwrap().to_owned());
        }
        match r.header("link") {
            Some(link) => {
                let start = link.find('<').unwrap() + 1;
                let end = link.find('>').unwrap();
                assert!(link.ends_with("rel=\"next\""));
                uri = link[start..end].to_owned();
            }
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 8);
    let mut dedup = seen.clone();
    dedup.dedup();
    assert_eq!(dedup, seen);
    assert_eq!(seen[0], "primary");

    // Events of a timeline, paginated the same way.
    for i in 0..5 {
        add_event(
            &app,
            &t,
            "primary",
            &format!("e{i}"),
            &format!("2000-01-0{}T00:00:00Z", i + 1),
            "Paris",
        )
        .await;
    }
    let first = app
        .get("/v1/timeline/primary/events?limit=2&location=paris", &t)
        .await;
    assert_eq!(first.json().as_array().unwrap().len(), 2);
    let link = first.header("link").expect("next page");
    assert!(link.contains("location=paris"), "{link}");
    app.get("/v1/timeline/tml_nope/events", &t)
        .await
        .assert_problem(404, "not-found");
    app.get("/v1/timelines?limit=0", &t)
        .await
        .assert_problem(400, "invalid-request");
    app.get("/v1/timelines?limit=lots", &t)
        .await
        .assert_problem(400, "invalid-request");
}

#[tokio::test]
async fn travellers_never_see_each_others_items_anchors_or_journeys() {
    let app = App::new().await;
    let (a, b) = (token("ada"), token("bob"));
    let item = app
        .post("/v1/items", &a, json!({"description": "lamp"}))
        .await
        .json();
    let anchor = app
        .post(
            "/v1/anchors",
            &a,
            json!({"timestamp": "2020-01-01T00:00:00Z"}),
        )
        .await
        .json();
    app.post("/v1/travels", &a, json!({"destination": "primary"}))
        .await;

    assert_eq!(app.get("/v1/items", &b).await.json(), json!([]));
    assert_eq!(app.get("/v1/anchors", &b).await.json(), json!([]));
    assert_eq!(app.get("/v1/travels", &b).await.json(), json!([]));
    app.get(&format!("/v1/items/{}", item["id"].as_str().unwrap()), &b)
        .await
        .assert_problem(404, "not-found");
    app.get(
        &format!("/v1/anchors/{}", anchor["id"].as_str().unwrap()),
        &b,
    )
    .await
    .assert_problem(404, "not-found");
    app.post("/v1/travels", &b, json!({"destination": anchor["id"]}))
        .await
        .assert_problem(400, "unknown-reference");
    app.post(
        "/v1/travels",
        &b,
        json!({"destination": "primary", "items_transported": [item["id"]]}),
    )
    .await
    .assert_problem(400, "unknown-reference");
    // Bob registering the same description is his own item, not a conflict.
    assert_eq!(
        app.post("/v1/items", &b, json!({"description": "lamp"}))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(app.list("/v1/items", &a).await.len(), 1);
}

#[tokio::test]
async fn open_endpoints_answer_without_a_token() {
    let app = App::new().await;
    let h = app.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(h.status, StatusCode::OK);
    assert_eq!(h.json(), json!({"status": "ok"}));
    let r = app.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let p = app
        .call(Method::GET, "/problems/event-locked", None, None)
        .await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(p.content_type().starts_with("text/plain"));
    assert!(p.text.contains("fixed point"));
    app.call(Method::GET, "/problems/no-such-thing", None, None)
        .await
        .assert_problem(404, "not-found");
    let o = app.call(Method::GET, "/v1/openapi.json", None, None).await;
    assert_eq!(o.status, StatusCode::OK);
    assert_eq!(o.json()["openapi"], "3.1.0");
}

#[tokio::test]
async fn request_ids_are_echoed_generated_and_named_in_problems() {
    let app = App::new().await;
    let req = Request::builder()
        .uri("/v1/nowhere")
        .header("x-request-id", "abc-123")
        .body(Body::empty())
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.header("x-request-id"), Some("abc-123"));
    let p = r.assert_problem(404, "not-found");
    assert_eq!(p["instance"], "/requests/abc-123");

    let r = app.call(Method::GET, "/healthz", None, None).await;
    let id = r.header("x-request-id").expect("generated id");
    assert_eq!(id.len(), 26, "a ULID: {id}");
}

#[tokio::test]
async fn guide_anchor_operations_answer_the_guides_shapes() {
    let app = App::new().await;
    let t = token("ada");
    let r = app
        .post(
            "/v1/set-anchor",
            &t,
            json!({"timestamp": "2024-09-01T00:00:00.1Z", "description": "lab", "accuracy": "microsecond",
                   "environment": {"temperature": "20C"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let set = r.json();
    assert_eq!(
        keys(&set),
        [
            "accuracy",
            "anchor_id",
            "environment",
            "status",
            "timestamp"
        ]
    );
    assert_eq!(set["timestamp"], "2024-09-01T00:00:00.100000Z");
    let id = set["anchor_id"].as_str().unwrap().to_owned();
    app.post(
        "/v1/set-anchor",
        &t,
        json!({"timestamp": "2024-09-01T00:00:00.1234Z", "accuracy": "millisecond"}),
    )
    .await
    .assert_problem(400, "invalid-request");

    // No body at all, with the JSON content type, as the guide sends it.
    let r = app
        .send(
            Request::builder()
                .method(Method::GET)
                .uri("/v1/list-anchors")
                .header("authorization", format!("Bearer {t}"))
                .header("content-type", "application/json")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"anchors": [{"anchor_id": id, "timestamp": "2024-09-01T00:00:00.100000Z", "description": "lab"}]})
    );
    app.call(
        Method::GET,
        "/v1/list-anchors?limit=5",
        Some(&t),
        Some(json!({"limit": 6})),
    )
    .await
    .assert_problem(400, "invalid-request");

    let r = app
        .call(
            Method::GET,
            "/v1/check-anchor-stability",
            Some(&t),
            Some(json!({"anchor_id": id})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"status": "stable", "current_conditions": {"temperature": "20C"}})
    );
    let r = app
        .post(
            "/v1/adjust-anchor",
            &t,
            json!({"anchor_id": id, "new_environment": {"temperature": "22C"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"status": "adjusted", "new_conditions": {"temperature": "22C"}})
    );
    let r = app
        .delete(&format!("/v1/delete-anchor?anchor_id={id}"), &t)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.json(), json!({"status": "deleted"}));
    app.call(
        Method::DELETE,
        "/v1/delete-anchor",
        Some(&t),
        Some(json!({"anchor_id": id})),
    )
    .await
    .assert_problem(400, "unknown-reference");
}

#[tokio::test]
async fn simulate_wormhole_only_reads_and_the_unsupported_operations_say_why() {
    let app = App::new().await;
    let reader = token_with_scope("ada", "read");
    let r = app
        .post(
            "/v1/simulate-wormhole",
            &reader,
            json!({"entry_point": "2024-09-01T00:00:00Z", "exit_point": "1924-09-01T00:00:00Z", "stability_check": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"status": "simulated", "stability": "stable", "time_difference": "100 years"})
    );
    let writer = token("ada");
    for (path, hint) in [
        ("/v1/shard-data", "create-index"),
        ("/v1/entangle-particles", "check-paradox"),
    ] {
        let r = app.post(path, &writer, json!({"anything": 1})).await;
        let problem = r.assert_problem(501, "unsupported-operation");
        assert!(detail(&problem).contains(hint), "{problem}");
        app.call(Method::POST, path, None, Some(json!({})))
            .await
            .assert_problem(401, "unauthorized");
    }
}

/// Automation changes shared timelines: an admin token lists everyone's scripts, jobs and log
/// entries, each naming its owner, and removes them; another member sees and touches none.
#[tokio::test]
async fn an_admin_sees_and_removes_everyones_automation_another_member_nothing() {
    let app = App::new().await;
    let (ada, bob) = (token("ada"), token("bob"));
    let root = token_with_scope("root", "admin");
    let launch = add_event(
        &app,
        &ada,
        "primary",
        "launch",
        "2025-03-01T12:00:00Z",
        "Cape Canaveral",
    )
    .await["event_id"]
        .clone();
    // Nothing touches the script's trigger: it stays active and fires nothing here.
    let quiet = add_event(
        &app,
        &ada,
        "primary",
        "countdown",
        "2025-03-01T11:00:00Z",
        "Cape Canaveral",
    )
    .await["event_id"]
        .clone();
    let action =
        json!({"action_type": "manipulate", "event_id": launch, "new_details": "scrubbed"});
    let script = app
        .post(
            "/v1/create-script",
            &ada,
            json!({"script_name": "follow", "trigger_event_id": quiet,
                   "conditions": {}, "actions": [action]}),
        )
        .await;
    assert_eq!(script.status, StatusCode::CREATED, "{}", script.text);
    let script = script.json()["script_id"].as_str().unwrap().to_owned();
    let waiting = app
        .post(
            "/v1/schedule-manipulation",
            &ada,
            json!({"event_id": launch, "scheduled_time": "2099-01-01T00:00:00Z",
                   "manipulation_details": {"new_details": "much later"}}),
        )
        .await;
    assert_eq!(waiting.status, StatusCode::CREATED, "{}", waiting.text);
    let now = app
        .post(
            "/v1/trigger-external-manipulation",
            &ada,
            json!({"external_system": "ci", "trigger_conditions": {"build_status": "success"},
                   "actions": [action]}),
        )
        .await;
    assert_eq!(now.status, StatusCode::ACCEPTED, "{}", now.text);
    assert_eq!(app.engine.run_due().await.unwrap(), 1);

    // Bob, a member: nothing of ada's, and no way to remove it.
    assert_eq!(app.get("/v1/scripts", &bob).await.json(), json!([]));
    assert_eq!(app.get("/v1/schedules", &bob).await.json(), json!([]));
    assert_eq!(
        app.get("/v1/automation-log?view=full", &bob).await.json()["log_entries"],
        json!([])
    );
    app.delete(&format!("/v1/scripts/{script}"), &bob)
        .await
        .assert_problem(404, "not-found");

    // The admin: everything of ada's, named as hers.
    let scripts = app.get("/v1/scripts", &root).await.json();
    assert_eq!(scripts.as_array().unwrap().len(), 1, "{scripts}");
    assert_eq!(scripts[0]["script_id"], script.as_str());
    assert_eq!(scripts[0]["owner"], "ada");
    let jobs = app.get("/v1/schedules", &root).await.json();
    let owners: Vec<&Value> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| &j["owner"])
        .collect();
    assert_eq!(owners, [&json!("ada"), &json!("ada")], "{jobs}");
    let log = app.get("/v1/automation-log?view=full", &root).await.json();
    assert_eq!(log["log_entries"].as_array().unwrap().len(), 1, "{log}");
    assert_eq!(log["log_entries"][0]["owner"], "ada");
    // The documented view keeps the guide's shape.
    let log = app.get("/v1/automation-log", &root).await.json();
    assert_eq!(
        keys(&log["log_entries"][0]),
        ["action_taken", "event_id", "timestamp"]
    );

    let waiting = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["status"] == "scheduled")
        .unwrap_or_else(|| panic!("a waiting job: {jobs}"))["schedule_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.delete(&format!("/v1/schedules/{waiting}"), &bob)
        .await
        .assert_problem(404, "not-found");
    for uri in [
        format!("/v1/scripts/{script}"),
        format!("/v1/schedules/{waiting}"),
    ] {
        let r = app.delete(&uri, &root).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{uri}: {}", r.text);
    }
    assert_eq!(app.get("/v1/scripts", &ada).await.json(), json!([]));
    let jobs = app.get("/v1/schedules", &ada).await.json();
    assert!(
        jobs.as_array()
            .unwrap()
            .iter()
            .any(|j| j["schedule_id"] == waiting.as_str() && j["status"] == "cancelled"),
        "{jobs}"
    );
}

/// Timeline A with one event, its branch B, the event changed one way in each, and B merged
/// into A with `manual_review`: a merge waiting for review. Returns A, the event and the merge.
async fn waiting_merge(app: &App, t: &str) -> (String, String, String) {
    let created = app
        .post("/v1/create-timeline", t, json!({"description": "A"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let a = created.json()["timeline_id"].as_str().unwrap().to_owned();
    let e = add_event(app, t, &a, "launch", "1900-01-01T10:00:00Z", "Pad").await;
    let e = e["event_id"].as_str().unwrap().to_owned();
    let branched = app
        .post(
            "/v1/create-timeline",
            t,
            json!({"base_timeline_id": a, "description": "B"}),
        )
        .await;
    let b = branched.json()["timeline_id"].as_str().unwrap().to_owned();
    for (tl, what) in [(&b, "launch in B"), (&a, "launch in A")] {
        let r = app
            .post(
                "/v1/manipulate-event",
                t,
                json!({"timeline_id": tl, "event_id": e, "new_outcome": {"description": what}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    }
    let merged = app
        .post(
            "/v1/merge-timelines?view=full",
            t,
            json!({"source_timeline_id": b, "destination_timeline_id": a, "conflict_resolution": "manual_review"}),
        )
        .await;
    assert_eq!(merged.status, StatusCode::OK, "{}", merged.text);
    assert_eq!(merged.json()["status"], "pending_review");
    let merge_id = merged.json()["merge_id"].as_str().unwrap().to_owned();
    (a, e, merge_id)
}

/// The guide's review-conflicts, resolve-conflict and isolate-event answer exactly the fields
/// the guide shows; the resolution's words are read in any case, a wrong word is a 400 naming
/// the field; aborting a merge that is not waiting is a 409.
#[tokio::test]
async fn review_resolve_and_isolate_answer_the_guides_shapes() {
    let app = App::new().await;
    let t = token("ada");
    let (a, e, merge_id) = waiting_merge(&app, &t).await;

    let review = app
        .get(&format!("/v1/review-conflicts?merged_timeline_id={a}"), &t)
        .await;
    assert_eq!(review.status, StatusCode::OK, "{}", review.text);
    let body = review.json();
    assert_eq!(keys(&body), ["conflicts", "resolution_options"]);
    assert_eq!(
        keys(&body["conflicts"][0]),
        ["destination_outcome", "event_id", "source_outcome"]
    );
    assert_eq!(body["conflicts"][0]["event_id"], e.as_str());
    assert_eq!(body["conflicts"][0]["source_outcome"], "launch in B");
    assert_eq!(body["conflicts"][0]["destination_outcome"], "launch in A");

    let wrong = app
        .post(
            "/v1/resolve-conflict",
            &t,
            json!({"event_id": e, "resolution": "Keep Event C"}),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::BAD_REQUEST, "{}", wrong.text);
    assert!(wrong.text.contains("resolution"), "{}", wrong.text);
    let resolved = app
        .post(
            "/v1/resolve-conflict",
            &t,
            json!({"event_id": e, "resolution": "KEEP EVENT a"}),
        )
        .await;
    assert_eq!(resolved.status, StatusCode::OK, "{}", resolved.text);
    assert_eq!(keys(&resolved.json()), ["resolved_event_id", "status"]);
    assert_eq!(resolved.json()["resolved_event_id"], e.as_str());
    let again = app.delete(&format!("/v1/merges/{merge_id}"), &t).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text);

    let isolated = app
        .post(
            "/v1/isolate-event",
            &t,
            json!({"event_id": e, "timeline_id": a, "isolation_type": "event"}),
        )
        .await;
    assert_eq!(
        isolated.status,
        StatusCode::BAD_REQUEST,
        "a superseded event: {}",
        isolated.text
    );
    let head = app
        .get(&format!("/v1/search-events?timeline_id={a}"), &t)
        .await
        .json()["events"][0]["event_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let isolated = app
        .post(
            "/v1/isolate-event",
            &t,
            json!({"event_id": head, "timeline_id": a}),
        )
        .await;
    assert_eq!(isolated.status, StatusCode::OK, "{}", isolated.text);
    assert_eq!(
        keys(&isolated.json()),
        ["description", "isolation_id", "status"]
    );
    let id = isolated.json()["isolation_id"].as_str().unwrap().to_owned();
    let lifted = app.delete(&format!("/v1/isolations/{id}"), &t).await;
    assert_eq!(lifted.status, StatusCode::NO_CONTENT, "{}", lifted.text);
}

/// The guide's answers of schedule-manipulation, trigger-external-manipulation and a merge
/// carry no id (the guide's fields only), so each names what it made in `Location`: a client
/// cancels the job or reads the pending merge there without listing first. A merge that wrote
/// nothing (`up_to_date`) made nothing and names nothing.
#[tokio::test]
async fn jobs_and_merges_name_what_they_made_in_location() {
    let app = App::new().await;
    let t = token("ada");
    let launch = add_event(
        &app,
        &t,
        "primary",
        "launch",
        "2025-03-01T12:00:00Z",
        "Cape Canaveral",
    )
    .await["event_id"]
        .clone();
    let scheduled = app
        .post(
            "/v1/schedule-manipulation",
            &t,
            json!({"event_id": launch, "scheduled_time": "2099-01-01T00:00:00Z",
                   "manipulation_details": {"new_details": "much later"}}),
        )
        .await;
    assert_eq!(scheduled.status, StatusCode::CREATED, "{}", scheduled.text);
    assert_eq!(keys(&scheduled.json()), ["scheduled_time", "status"]);
    let job = scheduled
        .header("location")
        .unwrap_or_else(|| panic!("no Location: {:?}", scheduled.headers))
        .to_owned();
    let jobs = app.get("/v1/schedules", &t).await.json();
    assert_eq!(
        format!("/v1/schedules/{}", jobs[0]["schedule_id"].as_str().unwrap()),
        job
    );
    let cancelled = app.delete(&job, &t).await;
    assert_eq!(
        cancelled.status,
        StatusCode::NO_CONTENT,
        "{}",
        cancelled.text
    );

    let action =
        json!({"action_type": "manipulate", "event_id": launch, "new_details": "scrubbed"});
    let triggered = app
        .post(
            "/v1/trigger-external-manipulation",
            &t,
            json!({"external_system": "ci",
                   "trigger_conditions": {"build_status": "success", "timestamp": "2099-01-01T00:00:00Z"},
                   "actions": [action]}),
        )
        .await;
    assert_eq!(triggered.status, StatusCode::ACCEPTED, "{}", triggered.text);
    assert_eq!(keys(&triggered.json()), ["external_system", "status"]);
    let job = triggered.header("location").unwrap_or_default().to_owned();
    assert!(job.starts_with("/v1/schedules/sch_"), "{job}");
    let cancelled = app.delete(&job, &t).await;
    assert_eq!(
        cancelled.status,
        StatusCode::NO_CONTENT,
        "{}",
        cancelled.text
    );

    // A merge waiting for review: its record is where Location says.
    let a = app
        .post("/v1/create-timeline", &t, json!({"description": "A"}))
        .await
        .json()["timeline_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let e = add_event(&app, &t, &a, "launch", "1900-01-01T10:00:00Z", "Pad").await["event_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let b = app
        .post(
            "/v1/create-timeline",
            &t,
            json!({"base_timeline_id": a, "description": "B"}),
        )
        .await
        .json()["timeline_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let merge = |conflicts: &'static str| json!({"source_timeline_id": b, "destination_timeline_id": a, "conflict_resolution": conflicts});
    let nothing = app
        .post("/v1/merge-timelines", &t, merge("manual_review"))
        .await;
    assert_eq!(nothing.json()["status"], "up_to_date", "{}", nothing.text);
    assert_eq!(nothing.header("location"), None, "nothing was made");
    for (tl, what) in [(&b, "launch in B"), (&a, "launch in A")] {
        let r = app
            .post(
                "/v1/manipulate-event",
                &t,
                json!({"timeline_id": tl, "event_id": e, "new_outcome": {"description": what}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    }
    let pending = app
        .post("/v1/merge-timelines", &t, merge("manual_review"))
        .await;
    assert_eq!(pending.status, StatusCode::OK, "{}", pending.text);
    assert_eq!(
        keys(&pending.json()),
        ["conflicts_resolved", "merged_timeline_id", "status"]
    );
    assert_eq!(pending.json()["status"], "pending_review");
    let record = pending.header("location").unwrap_or_default().to_owned();
    assert!(record.starts_with("/v1/merges/mrg_"), "{record}");
    let read = app.get(&record, &t).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.text);
    assert_eq!(read.json()["status"], "pending_review", "{}", read.text);
}

/// The state-dependent refusals of three guide reads are 409 `conflict` problems, and their
/// operations document the 409 (every call through `App` checks that): reviewing a merge that
/// was aborted, retrieving data stored only encrypted, and retrieving again an item left in
/// another time. Schemathesis's stateful phase met the first one undocumented.
#[tokio::test]
async fn state_refusals_of_reads_are_documented_conflicts() {
    let app = App::new().await;
    let t = token("ada");
    let (a, _, merge_id) = waiting_merge(&app, &t).await;
    let aborted = app.delete(&format!("/v1/merges/{merge_id}"), &t).await;
    assert_eq!(aborted.status, StatusCode::NO_CONTENT, "{}", aborted.text);
    let review = app
        .get(
            &format!("/v1/review-conflicts?merged_timeline_id={a}&merge_id={merge_id}"),
            &t,
        )
        .await;
    let p = review.assert_problem(409, "conflict");
    assert!(detail(&p).contains("aborted"), "{p}");

    let sealed = app
        .post(
            "/v1/encrypt-data",
            &t,
            json!({"timeline_id": "primary", "timestamp": "2024-09-01T00:00:00Z",
                   "data": {"secret": "s"}, "encryption_key": "a key of enough length"}),
        )
        .await;
    assert_eq!(sealed.status, StatusCode::CREATED, "{}", sealed.text);
    let plain = app
        .get(
            "/v1/retrieve-data?timeline_id=primary&timestamp=2024-09-01T00:00:00Z",
            &t,
        )
        .await;
    let p = plain.assert_problem(409, "conflict");
    assert!(detail(&p).contains("decrypt-data"), "{p}");

    let lamp = "/v1/retrieve-item?item_description=lamp";
    let got = app.get(lamp, &t).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text);
    let away = app.post("/v1/travels", &t, json!({"destination": a})).await;
    assert_eq!(away.status, StatusCode::OK, "{}", away.text);
    let back = app
        .post("/v1/travels", &t, json!({"destination": "primary"}))
        .await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.text);
    for again in [
        app.get(lamp, &t).await,
        app.post("/v1/retrieve-item", &t, json!({"item_description": "lamp"}))
            .await,
    ] {
        let p = again.assert_problem(409, "conflict");
        assert!(detail(&p).contains("left it"), "{p}");
    }
}
