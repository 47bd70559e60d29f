//! Limits and rejections over HTTP: body size (413), rate limit (429 + Retry-After), request
//! timeout (503), unknown paths (404), wrong methods (405), bad bodies (problem+json, never
//! plain text, never 500), and graceful shutdown on a real listener.

mod support;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use chronoscope::server::RateLimit;
use serde_json::json;
use support::http::*;

#[tokio::test]
async fn bodies_over_the_limit_are_413_problems() {
    let mut c = config();
    c.body_limit = 1024;
    let app = App::with(c).await;
    let big = json!({"description": "x".repeat(2000)});
    let r = app.post("/v1/items", &token("ada"), big.clone()).await;
    r.assert_problem(413, "payload-too-large");
    // Also on a GET guide operation taking a body.
    let r = app
        .call(
            Method::GET,
            "/v1/search-events",
            Some(&token("ada")),
            Some(big),
        )
        .await;
    r.assert_problem(413, "payload-too-large");
    // Under the limit is fine.
    let r = app
        .post("/v1/items", &token("ada"), json!({"description": "small"}))
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn a_traveller_over_the_rate_limit_gets_429_with_retry_after_and_others_do_not() {
    let mut c = config();
    c.rate_limit = RateLimit {
        per_second: 0.01,
        burst: 3,
    };
    let app = App::with(c).await;
    let ada = token("ada");
    for _ in 0..3 {
        assert_eq!(app.get("/v1/me", &ada).await.status, StatusCode::OK);
    }
    let r = app.get("/v1/me", &ada).await;
    r.assert_problem(429, "rate-limited");
    let retry: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=100).contains(&retry), "{retry}");
    // Another traveller has their own bucket; open endpoints are not limited.
    assert_eq!(
        app.get("/v1/me", &token("bob")).await.status,
        StatusCode::OK
    );
    let h = app.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(h.status, StatusCode::OK);
}

#[tokio::test]
async fn a_request_slower_than_the_timeout_is_a_503_problem() {
    let mut c = config();
    c.request_timeout = Duration::from_millis(100);
    let app = Wrapped::new(engine().await)
        .slow(Duration::from_secs(5))
        .app(c);
    let r = app.get("/v1/me", &token("ada")).await;
    let p = r.assert_problem(503, "unavailable");
    assert!(detail(&p).contains("longer than"), "{p}");
    // Readiness says so too.
    app.call(Method::GET, "/readyz", None, None)
        .await
        .assert_problem(503, "unavailable");
}

#[tokio::test]
async fn unknown_paths_are_404_and_wrong_methods_405_problems() {
    let app = App::new().await;
    let t = token("ada");
    app.get("/v1/nothing-here", &t)
        .await
        .assert_problem(404, "not-found");
    app.call(Method::GET, "/nothing", None, None)
        .await
        .assert_problem(404, "not-found");
    let r = app.call(Method::PUT, "/v1/timelines", Some(&t), None).await;
    r.assert_problem(405, "method-not-allowed");
    let r = app.call(Method::PATCH, "/healthz", None, None).await;
    r.assert_problem(405, "method-not-allowed");
}

fn raw(method: Method, uri: &str, content_type: Option<&str>, body: &'static str) -> Request<Body> {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {}", token("ada")));
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    req.body(Body::from(body)).unwrap()
}

#[tokio::test]
async fn bad_bodies_are_problems_never_plain_text_or_500() {
    let app = App::new().await;
    let json_ct = Some("application/json");
    let cases: Vec<(Request<Body>, u16, &str)> = vec![
        (
            raw(Method::POST, "/v1/travels", json_ct, "{\"destination\": "),
            400,
            "invalid-request",
        ),
        (
            raw(Method::POST, "/v1/travels", json_ct, "[1, 2]"),
            400,
            "invalid-request",
        ),
        (
            raw(Method::POST, "/v1/travels", json_ct, ""),
            400,
            "invalid-request",
        ),
        (
            raw(Method::POST, "/v1/travels", None, ""),
            400,
            "invalid-request",
        ),
        (
            raw(
                Method::POST,
                "/v1/travels",
                None,
                "{\"destination\": \"primary\"}",
            ),
            415,
            "unsupported-media-type",
        ),
        (
            raw(
                Method::POST,
                "/v1/travels",
                Some("text/plain"),
                "{\"destination\": \"primary\"}",
            ),
            415,
            "unsupported-media-type",
        ),
        (
            raw(
                Method::POST,
                "/v1/travels",
                json_ct,
                "{\"destination\": [\"primary\"]}",
            ),
            400,
            "invalid-request",
        ),
        (
            raw(Method::POST, "/v1/travels", json_ct, "{}"),
            400,
            "invalid-request",
        ),
        (
            raw(
                Method::POST,
                "/v1/paradox-checks",
                json_ct,
                "{\"timeline_id\": \"primary\", \"proposed_changes\": 7}",
            ),
            400,
            "invalid-request",
        ),
        (
            raw(
                Method::POST,
                "/v1/paradox-checks",
                json_ct,
                "{\"timeline_id\": \"has space\"}",
            ),
            400,
            "invalid-request",
        ),
        // The documented operations without a 400 answer 422 for the same mistakes.
        (
            raw(Method::POST, "/v1/timelines", json_ct, "{\"name\": "),
            422,
            "invalid-request",
        ),
        (
            raw(Method::POST, "/v1/items", json_ct, ""),
            422,
            "invalid-request",
        ),
        (
            raw(Method::POST, "/v1/anchors", json_ct, "{\"timestamp\": 5}"),
            422,
            "invalid-request",
        ),
        (
            raw(Method::POST, "/v1/anchors", Some("text/xml"), "<anchor/>"),
            415,
            "unsupported-media-type",
        ),
        // GET guide operations: a body must be JSON too; a bad query is a 400.
        (
            raw(
                Method::GET,
                "/v1/search-events",
                Some("text/plain"),
                "location=x",
            ),
            415,
            "unsupported-media-type",
        ),
        (
            raw(
                Method::GET,
                "/v1/search-events",
                json_ct,
                "{\"limit\": \"ten\"}",
            ),
            400,
            "invalid-request",
        ),
        (
            raw(Method::GET, "/v1/search-events?limit=ten", None, ""),
            400,
            "invalid-request",
        ),
        (
            raw(
                Method::GET,
                "/v1/search-events?time_range=yesterday",
                None,
                "",
            ),
            400,
            "invalid-request",
        ),
        (
            raw(Method::GET, "/v1/monitor-timeline", None, ""),
            400,
            "invalid-request",
        ),
        (
            raw(Method::GET, "/v1/me?view=everything", None, ""),
            400,
            "invalid-request",
        ),
    ];
    for (req, status, slug) in cases {
        let what = format!("{} {}", req.method(), req.uri());
        let r = app.send(req).await;
        assert_eq!(r.status.as_u16(), status, "{what}: {}", r.text);
        r.assert_problem(status, slug);
    }
}

#[tokio::test]
async fn problems_carry_the_service_error_with_view_full() {
    let app = App::new().await;
    let r = app
        .send(raw(
            Method::POST,
            "/v1/items?view=full",
            Some("application/json"),
            "{}",
        ))
        .await;
    assert_eq!(r.status.as_u16(), 422);
    let body = r.json();
    assert_eq!(body["error"]["kind"], "invalid_input");
    let err: chronoscope::error::ServiceError =
        serde_json::from_value(body["error"].clone()).unwrap();
    assert_eq!(err.to_string(), body["detail"].as_str().unwrap());
}

#[tokio::test]
async fn shutdown_lets_in_flight_requests_finish() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sessions = Wrapped::new(engine().await).slow(Duration::from_millis(300));
    let watched = sessions.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(chronoscope::server::run(
        listener,
        config(),
        sessions,
        async {
            let _ = stopped.await;
        },
    ));
    // reqwest is built without a crypto provider of its own: chronoscope's is installed.
    chronoscope::tls::install_default_provider();
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/me");
    let call = tokio::spawn(client.get(&url).bearer_auth(token("ada")).send());
    // Once the request has reached its handler (a session is made for it), ask the server to
    // stop: on a busy machine a fixed pause could stop it before the request arrived.
    let reached = async {
        while watched.sessions_made() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), reached)
        .await
        .expect("the request reaches its handler");
    stop.send(()).unwrap();
    let resp = call
        .await
        .unwrap()
        .expect("the in-flight request is answered");
    assert_eq!(resp.status().as_u16(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["traveller"], "ada");
    server.await.unwrap().unwrap();
    // And it no longer accepts connections.
    assert!(
        client
            .get(format!("http://{addr}/healthz"))
            .send()
            .await
            .is_err()
    );
}

fn from(addr: &str, uri: &str, token: Option<&str>) -> axum::http::Request<axum::body::Body> {
    let mut req = axum::http::Request::get(uri);
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let mut req = req.body(axum::body::Body::empty()).unwrap();
    let peer: std::net::SocketAddr = addr.parse().unwrap();
    req.extensions_mut()
        .insert(axum::extract::ConnectInfo(peer));
    req
}

#[tokio::test]
async fn one_address_over_its_limit_gets_429_before_authentication_and_others_do_not() {
    let mut c = config();
    c.address_rate_limit = RateLimit {
        per_second: 0.01,
        burst: 3,
    };
    let app = App::with(c).await;
    // Unauthenticated requests count: a flood of bad tokens is stopped before verification.
    for _ in 0..3 {
        let r = app.send(from("203.0.113.7:40000", "/v1/me", None)).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
    let r = app.send(from("203.0.113.7:40001", "/v1/me", None)).await;
    r.assert_problem(429, "rate-limited");
    let retry: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=100).contains(&retry), "{retry}");
    // So do a valid token and /readyz (a store query on PostgreSQL) from that address.
    let r = app
        .send(from("203.0.113.7:40002", "/v1/me", Some(&token("ada"))))
        .await;
    r.assert_problem(429, "rate-limited");
    let r = app.send(from("203.0.113.7:40003", "/readyz", None)).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    // Another address has its own allowance.
    let r = app
        .send(from("[2001:db8::1]:40000", "/v1/me", Some(&token("ada"))))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

/// A scan of the log reads the stored log: one traveller may start one per cooldown. The next
/// within it (either scan) is a 429 naming the cooldown, with Retry-After; a mistyped timeline
/// spends no turn; another traveller has their own; an operator is never held.
#[tokio::test]
async fn a_traveller_scans_the_log_once_per_cooldown() {
    let app = App::with(config()).await;
    app.engine.cool_scans(Duration::from_secs(60));
    let ada = token("ada");
    let primary = json!({"timeline_id": "primary"});
    let unknown = json!({"timeline_id": "tml_01jz0000000000000000000000"});
    let r = app.post("/v1/detect-tampering", &ada, unknown).await;
    assert_ne!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(r.status.is_client_error(), "{}", r.status);
    let r = app
        .post("/v1/detect-tampering", &ada, primary.clone())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);

    let r = app
        .post("/v1/validate-integrity", &ada, primary.clone())
        .await;
    let problem = r.assert_problem(429, "rate-limited");
    let retry: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("one scan of the log") && detail.contains("every 60 s"),
        "{detail}"
    );

    let bob = app
        .post("/v1/validate-integrity", &token("bob"), primary.clone())
        .await;
    assert_eq!(bob.status, StatusCode::OK, "{}", bob.text);
    let operator = token_with_scope("ops", "read write admin");
    for _ in 0..2 {
        let r = app
            .post("/v1/detect-tampering", &operator, primary.clone())
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    }
}
