//! `Idempotency-Key` on POST: a repeat gets the first answer and changes nothing, on one
//! engine, after a restart (SQLite) and across two replicas on one PostgreSQL database.

mod support;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use chronoscope::engine::ManualClock;
use chronoscope::server::build_router;
use chronoscope::store::{self, MemoryStore};
use serde_json::json;
use support::http::*;

async fn send(router: &Router, req: Request<Body>) -> Resp {
    send_to(router, req).await
}

/// How many journeys `token`'s traveller has made.
async fn journeys(router: &Router, token: &str) -> usize {
    let req = Request::get("/v1/travels?limit=1000")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let resp = send(router, req).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    resp.json().as_array().expect("array").len()
}

/// A timeline to travel to, created without a key.
async fn destination(router: &Router, token: &str) -> String {
    let body = json!({"name": "Destination"});
    let resp = post_keyed(router, "/v1/timelines", token, None, &body).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    resp.json()["id"].as_str().expect("id").to_owned()
}

#[tokio::test]
async fn a_repeated_keyed_post_answers_the_first_response_and_travels_once() {
    let app = App::new().await;
    let ada = token("ada");
    let to = destination(&app.router, &ada).await;
    let travel = json!({"destination": to});
    let first = post_keyed(&app.router, "/v1/travels", &ada, Some("k-1"), &travel).await;
    assert_eq!(first.status, 200, "{}", first.text);
    for _ in 0..3 {
        let again = post_keyed(&app.router, "/v1/travels", &ada, Some("k-1"), &travel).await;
        assert_eq!(again.status, first.status);
        assert_eq!(again.text, first.text, "the very same answer");
    }
    assert_eq!(journeys(&app.router, &ada).await, 1);
    // A new key is a new request.
    let second = post_keyed(&app.router, "/v1/travels", &ada, Some("k-2"), &travel).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_ne!(second.text, first.text);
    assert_eq!(journeys(&app.router, &ada).await, 2);
}

#[tokio::test]
async fn a_repeated_create_answers_201_with_the_same_body_and_location() {
    let app = App::new().await;
    let ada = token("ada");
    let body = json!({"name": "Retried", "destination_time": "1889-03-10T23:50:00Z"});
    let first = post_keyed(&app.router, "/v1/timelines", &ada, Some("c-1"), &body).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let again = post_keyed(&app.router, "/v1/timelines", &ada, Some("c-1"), &body).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.text, first.text);
    assert_eq!(again.header("location"), first.header("location"));
    assert!(first.header("location").is_some());
    let list = app.get("/v1/timelines", &ada).await.json();
    let named = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "Retried")
        .count();
    assert_eq!(named, 1, "one timeline, however often it was asked for");
}

#[tokio::test]
async fn the_same_key_with_another_body_is_422_and_writes_nothing() {
    let app = App::new().await;
    let ada = token("ada");
    let lamp = json!({"description": "lamp"});
    let coil = json!({"description": "coil"});
    let first = post_keyed(&app.router, "/v1/items", &ada, Some("i-1"), &lamp).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let other = post_keyed(&app.router, "/v1/items", &ada, Some("i-1"), &coil).await;
    let problem = other.assert_problem(422, "idempotency-key-reused");
    assert!(detail(&problem).contains("'i-1'"), "{problem}");
    // Another path with the key is another request too.
    let anchor = json!({"timestamp": "2024-09-16T05:04:00Z"});
    let elsewhere = post_keyed(&app.router, "/v1/set-anchor", &ada, Some("i-1"), &anchor).await;
    elsewhere.assert_problem(422, "idempotency-key-reused");
    let items = app.get("/v1/items", &ada).await.json();
    let names: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["description"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lamp"]);
    assert!(app.list("/v1/anchors", &ada).await.is_empty());
}

#[tokio::test]
async fn keys_belong_to_their_traveller() {
    let app = App::new().await;
    let (ada, bob) = (token("ada"), token("bob"));
    let body = json!({"description": "lamp"});
    for who in [&ada, &bob] {
        let resp = post_keyed(&app.router, "/v1/items", who, Some("same"), &body).await;
        assert_eq!(resp.status, 200, "{}", resp.text);
        let items = app.get("/v1/items", who).await.json();
        assert_eq!(items.as_array().unwrap().len(), 1, "each did their own");
    }
}

#[tokio::test]
async fn an_unkeyed_post_behaves_as_before() {
    let app = App::new().await;
    let ada = token("ada");
    let body = json!({"description": "lamp"});
    let first = post_keyed(&app.router, "/v1/items", &ada, None, &body).await;
    assert_eq!(first.status, 200);
    let again = post_keyed(&app.router, "/v1/items", &ada, None, &body).await;
    assert_eq!(again.status, 409, "the documented conflict: {}", again.text);
    assert!(again.text.is_empty());
}

#[tokio::test]
async fn a_refused_keyed_request_is_not_remembered() {
    let app = App::new().await;
    let ada = token("ada");
    let nowhere = json!({"destination": "tml_01jaaaaaaaaaaaaaaaaaaaaaaa"});
    for _ in 0..2 {
        // Decided afresh each time: a refusal writes nothing, so there is nothing to remember.
        let refused = post_keyed(&app.router, "/v1/travels", &ada, Some("r-1"), &nowhere).await;
        refused.assert_problem(400, "unknown-reference");
    }
    assert_eq!(journeys(&app.router, &ada).await, 0);
    // So the key is still free for the request the client meant.
    let to = destination(&app.router, &ada).await;
    let travel = json!({"destination": to});
    let later = post_keyed(&app.router, "/v1/travels", &ada, Some("r-1"), &travel).await;
    assert_eq!(later.status, 200, "{}", later.text);
    assert_eq!(journeys(&app.router, &ada).await, 1);
}

#[tokio::test]
async fn malformed_keys_are_refused_by_name() {
    let app = App::new().await;
    let ada = token("ada");
    let long = "k".repeat(256);
    let primary = json!({"destination": "primary"});
    let item = json!({"description": "x"});
    for bad in ["a b", long.as_str()] {
        let travel = post_keyed(&app.router, "/v1/travels", &ada, Some(bad), &primary).await;
        let problem = travel.assert_problem(400, "invalid-request");
        assert!(
            detail(&problem).starts_with("Idempotency-Key:"),
            "{problem}"
        );
        // Documented operations without a documented 400 answer 422.
        let refused = post_keyed(&app.router, "/v1/items", &ada, Some(bad), &item).await;
        refused.assert_problem(422, "invalid-request");
    }
    assert!(app.list("/v1/items", &ada).await.is_empty());
}

#[tokio::test]
async fn concurrent_copies_of_one_keyed_post_travel_once() {
    let app = App::new().await;
    let ada = token("ada");
    let to = destination(&app.router, &ada).await;
    let travel = json!({"destination": to});
    let copies = (0..16).map(|_| {
        let router = app.router.clone();
        let req = keyed("/v1/travels", &ada, Some("burst"), &travel);
        tokio::spawn(async move { send(&router, req).await })
    });
    let answers: Vec<Resp> = futures::future::join_all(copies)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();
    for answer in &answers {
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.text, answers[0].text);
    }
    assert_eq!(journeys(&app.router, &ada).await, 1);
}

#[tokio::test]
async fn a_key_is_forgotten_after_24_hours() {
    let clock = Arc::new(ManualClock::new(
        "2030-01-01T00:00:00Z".parse().expect("time"),
    ));
    let engine =
        support::engine_on(Arc::new(MemoryStore::new()), Arc::clone(&clock) as Arc<_>).await;
    let router = build_router(config(), Arc::clone(&engine));
    let ada = token("ada");
    let note = json!({"timestamp": "2024-09-16T05:04:00Z", "description": "home"});
    let first = post_keyed(&router, "/v1/set-anchor", &ada, Some("a-1"), &note).await;
    assert_eq!(first.status, 201, "{}", first.text);
    clock.advance(chrono::TimeDelta::hours(23));
    let within = post_keyed(&router, "/v1/set-anchor", &ada, Some("a-1"), &note).await;
    assert_eq!(within.text, first.text, "still remembered after 23 h");
    clock.advance(chrono::TimeDelta::hours(1));
    let after = post_keyed(&router, "/v1/set-anchor", &ada, Some("a-1"), &note).await;
    // Forgotten: decided afresh, and the anchor exists now (the documented bodiless 409).
    assert_eq!(after.status, 409, "{}", after.text);
}

#[tokio::test]
async fn a_repeat_after_a_restart_answers_the_first_result() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("c.db").display());
    let open = || async {
        let store = store::open(&url).await.unwrap();
        support::system_engine(store).await
    };
    let ada = token("ada");
    let (first, travel) = {
        let engine = open().await;
        let router = build_router(config(), Arc::clone(&engine));
        let to = destination(&router, &ada).await;
        let travel = json!({"destination": to});
        let first = post_keyed(&router, "/v1/travels", &ada, Some("boot"), &travel).await;
        assert_eq!(first.status, 200, "{}", first.text);
        (first, travel)
    };
    let engine = open().await;
    let router = build_router(config(), Arc::clone(&engine));
    let again = post_keyed(&router, "/v1/travels", &ada, Some("boot"), &travel).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.text, first.text);
    assert_eq!(journeys(&router, &ada).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_keyed_post_sent_to_two_postgres_replicas_at_once_makes_one_journey() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let replica = || async {
        let store = store::open(&db.url).await.unwrap();
        let engine = support::system_engine(store).await;
        build_router(config(), engine)
    };
    let (a, b) = (replica().await, replica().await);
    let ada = token("ada");
    let to = destination(&a, &ada).await;
    for round in 0..20 {
        let key = format!("both-{round}");
        let travel = json!({"destination": if round % 2 == 0 { to.as_str() } else { "primary" }});
        let (ra, rb) = tokio::join!(
            post_keyed(&a, "/v1/travels", &ada, Some(&key), &travel),
            post_keyed(&b, "/v1/travels", &ada, Some(&key), &travel),
        );
        assert_eq!(ra.status, 200, "{}", ra.text);
        assert_eq!(rb.status, 200, "{}", rb.text);
        assert_eq!(ra.text, rb.text, "both replicas give the one answer");
        assert_eq!(journeys(&a, &ada).await, round + 1);
        assert_eq!(journeys(&b, &ada).await, round + 1);
    }
}

/// Serves `router` on a loopback port.
async fn serve(router: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(axum::serve(listener, router).into_future());
    addr
}

/// A proxy to `upstream` whose first connection carries the request through but loses the
/// answer: it closes as soon as the server starts to reply. Counts the connections.
async fn answer_losing_proxy(
    upstream: std::net::SocketAddr,
) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&connections);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let nth = counted.fetch_add(1, Ordering::SeqCst);
            let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                continue;
            };
            tokio::spawn(async move {
                if nth > 0 {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    return;
                }
                let (mut from_client, _to_client) = client.split();
                let (mut from_server, mut to_server) = server.split();
                let forward = tokio::io::copy(&mut from_client, &mut to_server);
                let mut first = [0u8; 1];
                // The server answers only once the request has been carried out.
                tokio::select! {
                    _ = forward => {}
                    _ = from_server.read(&mut first) => {}
                }
                // Both ends are dropped here: the client sees the connection close unanswered.
            });
        }
    });
    (addr, connections)
}

#[tokio::test]
async fn the_remote_client_retries_a_post_whose_answer_was_lost_and_travels_once() {
    use chronoscope::client::RemoteClient;
    use chronoscope::service::PageRequest;
    use chronoscope::service::prelude::*;
    let app = App::new().await;
    let ada = token("ada");
    let to = destination(&app.router, &ada).await;
    let server = serve(app.router.clone()).await;
    let (proxy, connections) = answer_losing_proxy(server).await;
    let client = RemoteClient::builder(&format!("http://{proxy}"), ada.clone())
        .retry_backoff(std::time::Duration::from_millis(5))
        .build()
        .unwrap();
    let journey = client
        .travel(support::trip(&to, &[]))
        .await
        .expect("answered on the retry");
    assert_eq!(journey.to_timeline.as_str(), to);
    assert!(
        connections.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "the first answer was lost, so the client asked again"
    );
    let made = client.list_journeys(PageRequest::default()).await.unwrap();
    assert_eq!(made.items.len(), 1, "carried out once: {:?}", made.items);
}

/// A retry that the client serialised again (other whitespace, other key order) is the same
/// request: it gets the first answer, not a 422.
#[tokio::test]
async fn a_retry_with_the_body_laid_out_otherwise_is_the_same_request() {
    let app = App::new().await;
    let ada = token("ada");
    let raw = |body: &str| {
        Request::builder()
            .method(Method::POST)
            .uri("/v1/set-anchor")
            .header("authorization", format!("Bearer {ada}"))
            .header("content-type", "application/json")
            .header("idempotency-key", "laid-out")
            .body(Body::from(body.to_owned()))
            .unwrap()
    };
    let first = send(
        &app.router,
        raw(r#"{"timestamp":"2024-09-16T05:04:00Z","description":"lamp"}"#),
    )
    .await;
    assert!(first.status.is_success(), "{}", first.text);
    let retry = send(
        &app.router,
        raw("{\n  \"description\": \"lamp\",\n  \"timestamp\": \"2024-09-16T05:04:00Z\"\n}"),
    )
    .await;
    assert_eq!(retry.status, first.status, "{}", retry.text);
    assert_eq!(retry.json(), first.json());
}
