//! Temporal data over HTTP (guide operations §6): what a user of `store-data`, `retrieve-data`,
//! `encrypt-data` and `decrypt-data` notices. Entries outlive a restart; a key and a plaintext
//! are nowhere in the stored log, Idempotency-Key or not; a wrong key writes nothing; a key
//! crossing a network in the clear is refused; the scopes follow what each operation does.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request};
use chronoscope::engine::{Engine, Envelope, Op};
use chronoscope::server::build_router;
use chronoscope::store;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::http::*;

const KEY: &str = "correct-horse-battery-staple";
const SECRET_TEXT: &str = "the blueprint is under the floorboards";

fn encrypt_body() -> Value {
    json!({
        "timeline_id": "primary",
        "timestamp": "2024-09-01T00:00:00Z",
        "data": {"secret": SECRET_TEXT},
        "encryption_key": KEY
    })
}

/// Every change in the store's log, in order.
async fn logged(store: &dyn store::Store) -> Vec<Op> {
    let records = store.read_since(0, 100_000).await.expect("the log reads");
    records
        .iter()
        .map(|r| Envelope::decode(&r.body).expect("a record").change)
        .collect()
}

async fn sqlite_engine(url: &str) -> (Arc<Engine>, Arc<dyn store::Store>) {
    let store = store::open(url).await.expect("the store opens");
    let engine = support::system_engine(Arc::clone(&store)).await;
    (engine, store)
}

/// Every byte of the SQLite database and its write-ahead log.
fn database_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the directory reads") {
        let path = entry.expect("an entry").path();
        if path.is_file() {
            bytes.extend(std::fs::read(&path).expect("the file reads"));
        }
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn a_stored_entry_is_read_back_after_a_restart_from_the_log_and_from_a_snapshot() {
    let dir = tempfile::tempdir().expect("a directory");
    let url = format!("sqlite://{}", dir.path().join("data.db").display());
    let ada = token("ada");
    let body = json!({
        "timeline_id": "primary",
        "timestamp": "2024-09-01T00:00:00Z",
        "data": {"event": "Project X Launch", "details": "Project X successfully launched on time."}
    });
    {
        let (engine, _) = sqlite_engine(&url).await;
        let router = build_router(config(), engine);
        let stored = post_keyed(&router, "/v1/store-data", &ada, None, &body).await;
        assert_eq!(stored.status, 201, "{}", stored.text);
        assert_eq!(stored.json()["status"], "stored");
        assert!(
            stored.json()["data_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("dat_"))
        );
    }
    let query = "/v1/retrieve-data?timeline_id=primary&timestamp=2024-09-01T00:00:00Z";
    {
        let (engine, _) = sqlite_engine(&url).await;
        let router = build_router(config(), Arc::clone(&engine));
        let got = send_to(&router, get_request(query, &ada)).await;
        assert_eq!(got.status, 200, "{}", got.text);
        assert_eq!(got.json(), json!({"status": "ok", "data": body["data"]}));
        engine
            .write_snapshot()
            .await
            .expect("a snapshot is written");
    }
    let (engine, _) = sqlite_engine(&url).await;
    let router = build_router(config(), engine);
    let got = send_to(&router, get_request(query, &ada)).await;
    assert_eq!(
        got.json()["data"],
        body["data"],
        "read back from the snapshot"
    );
}

fn get_request(uri: &str, token: &str) -> Request<Body> {
    Request::builder()
        .method(Method::GET)
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .expect("a request")
}

#[tokio::test]
async fn neither_the_key_nor_the_plaintext_is_stored_and_a_keyed_retry_answers_the_first_entry() {
    let dir = tempfile::tempdir().expect("a directory");
    let url = format!("sqlite://{}", dir.path().join("data.db").display());
    let ada = token("ada");
    let (engine, store) = sqlite_engine(&url).await;
    let router = build_router(config(), Arc::clone(&engine));
    let body = encrypt_body();
    let first = post_keyed(&router, "/v1/encrypt-data", &ada, Some("enc-1"), &body).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.json()["encryption"], "AES-256-GCM");
    let again = post_keyed(&router, "/v1/encrypt-data", &ada, Some("enc-1"), &body).await;
    assert_eq!(again.status, 201, "{}", again.text);
    assert_eq!(again.text, first.text, "the retry answers the first entry");

    let ops = logged(&*store).await;
    let stored = ops
        .iter()
        .filter(|op| matches!(op, Op::StoreData { .. }))
        .count();
    assert_eq!(stored, 1, "the retry stored nothing more");
    // The remembered fingerprint is that of the request without its key.
    let fingerprint = ops
        .iter()
        .find_map(|op| match op {
            Op::Remember { fingerprint, .. } => Some(fingerprint.clone()),
            _ => None,
        })
        .expect("the keyed answer is remembered");
    let mut without_key = encrypt_body();
    without_key
        .as_object_mut()
        .expect("an object")
        .remove("encryption_key");
    without_key.sort_all_objects();
    let mut digest = Sha256::new();
    digest.update(b"POST /v1/encrypt-data\n");
    digest.update(serde_json::to_vec(&without_key).expect("encodes"));
    let expected: String = digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(fingerprint, expected);
    let remembered = |ops: &[Op]| {
        ops.iter()
            .filter(|op| matches!(op, Op::Remember { .. }))
            .count()
    };
    assert_eq!(remembered(&ops), 1);

    let data_id = first.json()["data_id"].as_str().expect("an id").to_owned();
    let opened = post_keyed(
        &router,
        "/v1/decrypt-data",
        &ada,
        Some("dec-1"),
        &json!({"data_id": data_id, "encryption_key": KEY}),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    assert_eq!(
        opened.json(),
        json!({"status": "decrypted", "data": {"secret": SECRET_TEXT}})
    );
    assert_eq!(
        remembered(&logged(&*store).await),
        1,
        "a keyed decryption is not remembered"
    );
    engine
        .write_snapshot()
        .await
        .expect("a snapshot is written");
    drop(router);
    drop(engine);
    drop(store);
    let bytes = database_bytes(dir.path());
    assert!(contains(&bytes, &data_id), "the entry is in the file");
    assert!(!contains(&bytes, KEY), "the key is in the database file");
    assert!(
        !contains(&bytes, SECRET_TEXT),
        "the plaintext is in the database file"
    );
}

#[tokio::test]
async fn a_wrong_key_is_decryption_failed_writes_nothing_and_is_never_remembered() {
    let app = App::new().await;
    let ada = token("ada");
    let sealed = app.post("/v1/encrypt-data", &ada, encrypt_body()).await;
    assert_eq!(sealed.status, 201, "{}", sealed.text);
    let data_id = sealed.json()["data_id"].as_str().expect("an id").to_owned();
    let head = app.engine.snapshot().await.expect("a state").seq;

    let wrong = json!({"data_id": data_id, "encryption_key": "not the right key"});
    let refused = app
        .send(keyed("/v1/decrypt-data", &ada, Some("dec"), &wrong))
        .await;
    let problem = refused.assert_problem(400, "decryption-failed");
    assert!(detail(&problem).contains(&data_id), "{problem}");
    assert_eq!(
        app.engine.snapshot().await.expect("a state").seq,
        head,
        "a decryption writes nothing"
    );
    // The same Idempotency-Key with the right key (the fingerprint leaves keys out, so it is
    // the same request): the refusal was not remembered, and neither is this answer.
    let right = json!({"data_id": data_id, "encryption_key": KEY});
    let opened = app
        .send(keyed("/v1/decrypt-data", &ada, Some("dec"), &right))
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    assert_eq!(opened.json()["data"]["secret"], SECRET_TEXT);
    assert_eq!(app.engine.snapshot().await.expect("a state").seq, head);
}

#[tokio::test]
async fn a_key_sent_in_the_clear_from_another_machine_is_refused() {
    let app = App::new().await;
    let ada = token("ada");
    let from = |ip: [u8; 4]| {
        let mut req = keyed("/v1/encrypt-data", &ada, None, &encrypt_body());
        req.extensions_mut()
            .insert(ConnectInfo(SocketAddr::from((ip, 40_000))));
        req
    };
    let far = app.send(from([203, 0, 113, 7])).await;
    let problem = far.assert_problem(400, "invalid-request");
    assert!(detail(&problem).contains("https"), "{problem}");
    let near = app.send(from([127, 0, 0, 1])).await;
    assert_eq!(near.status, 201, "{}", near.text);
}

#[tokio::test]
async fn decrypting_and_reporting_an_index_need_only_read_and_storing_needs_write() {
    let app = App::new().await;
    let ada = token("ada");
    let sealed = app.post("/v1/encrypt-data", &ada, encrypt_body()).await;
    let data_id = sealed.json()["data_id"].as_str().expect("an id").to_owned();
    let reader = token_with_scope("ada", "read");
    let opened = app
        .post(
            "/v1/decrypt-data",
            &reader,
            json!({"data_id": data_id, "encryption_key": KEY}),
        )
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let index = app
        .post(
            "/v1/create-index",
            &reader,
            json!({"index_type": "timestamp", "timeline_id": "primary"}),
        )
        .await;
    assert_eq!(index.status, 200, "{}", index.text);
    assert_eq!(
        index.json(),
        json!({"status": "exists", "index_id": "idx_primary_timestamp"})
    );
    let refused = app.post("/v1/encrypt-data", &reader, encrypt_body()).await;
    refused.assert_problem(403, "forbidden");
    let stored = app
        .post(
            "/v1/store-data",
            &reader,
            json!({"timeline_id": "primary", "timestamp": "2024-09-01T00:00:00Z", "data": {}}),
        )
        .await;
    stored.assert_problem(403, "forbidden");
}

#[tokio::test]
async fn only_encrypted_entries_at_a_time_are_a_conflict_that_names_them() {
    let app = App::new().await;
    let ada = token("ada");
    let sealed = app.post("/v1/encrypt-data", &ada, encrypt_body()).await;
    let data_id = sealed.json()["data_id"].as_str().expect("an id").to_owned();
    let got = app
        .call(
            Method::GET,
            "/v1/retrieve-data",
            Some(&ada),
            Some(json!({"timeline_id": "primary", "timestamp": "2024-09-01T00:00:00Z"})),
        )
        .await;
    let problem = got.assert_problem(409, "conflict");
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&data_id) && detail.contains("decrypt-data"),
        "{detail}"
    );
    let nothing = app
        .get(
            "/v1/retrieve-data?timeline_id=primary&timestamp=1999-01-01T00:00:00Z",
            &ada,
        )
        .await;
    nothing.assert_problem(404, "not-found");
    let caching = app
        .post(
            "/v1/enable-caching",
            &ada,
            json!({"cache_duration": "3600", "cache_scope": "timeline"}),
        )
        .await;
    assert_eq!(caching.status, 200, "{}", caching.text);
    assert_eq!(caching.json()["status"], "enabled");
    assert!(
        caching.json()["cache_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("cch_")),
        "{}",
        caching.text
    );
}

#[tokio::test]
async fn a_traveller_who_enabled_caching_reads_without_the_barrier_and_others_still_wait() {
    use chronoscope::service::prelude::*;
    use chronoscope::service::{CachingRequest, PageRequest, SearchQuery};
    let engine = engine().await;
    let ada = engine.session("ada".parse().expect("a traveller"));
    let bob = engine.session("bob".parse().expect("a traveller"));
    let setting = ada
        .enable_caching(CachingRequest {
            cache_duration: json!("60"),
            cache_scope: "event".into(),
        })
        .await
        .expect("caching is enabled");
    assert!(
        setting.guarantee.contains("one process"),
        "memory is always current here, and the answer says so: {}",
        setting.guarantee
    );
    // A first read in scope confirms the head; the next ones within a minute do not wait.
    ada.search_events(SearchQuery::default())
        .await
        .expect("a search");
    let before = engine.read_stats().reads;
    for _ in 0..5 {
        ada.search_events(SearchQuery::default())
            .await
            .expect("a search");
    }
    assert_eq!(
        engine.read_stats().reads,
        before,
        "ada's searches waited for the barrier"
    );
    // Outside the scope, and for everyone else, reads stay linearizable.
    ada.list_timelines(PageRequest::default())
        .await
        .expect("a list");
    bob.search_events(SearchQuery::default())
        .await
        .expect("a search");
    assert_eq!(engine.read_stats().reads, before + 2);
}

#[tokio::test]
async fn the_data_commands_store_read_encrypt_and_decrypt_with_a_key_from_a_file() {
    use chronoscope::error::ServiceError;
    let engine = engine().await;
    let ada = engine.session("ada".parse().expect("a traveller"));
    let stored = support::run_cli(
        &ada,
        &[
            "data",
            "store",
            "primary",
            "2024-09-01 00:00",
            r#"{"event": "Project X Launch"}"#,
        ],
    )
    .await
    .expect("stored");
    assert!(
        stored.starts_with("dat_") && stored.contains("stored in primary at 2024-09-01T00:00:00Z"),
        "{stored}"
    );
    let got = support::run_cli(
        &ada,
        &["--json", "data", "get", "primary", "2024-09-01T00:00:00Z"],
    )
    .await
    .expect("read");
    let got: Value = serde_json::from_str(&got).expect("JSON");
    assert_eq!(got["data"], json!({"event": "Project X Launch"}));

    let dir = tempfile::tempdir().expect("a directory");
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, format!("{KEY}\n")).expect("the key is written");
    let key_file = key_file.to_str().expect("a UTF-8 path").to_owned();
    let sealed = support::run_cli(
        &ada,
        &[
            "--json",
            "data",
            "encrypt",
            "primary",
            r#"{"secret": "under the floorboards"}"#,
            "--key-file",
            &key_file,
        ],
    )
    .await
    .expect("encrypted");
    let sealed: Value = serde_json::from_str(&sealed).expect("JSON");
    assert_eq!(sealed["encrypted"], true);
    assert!(sealed.get("data").is_none(), "{sealed}");
    let id = sealed["data_id"].as_str().expect("an id");
    let opened = support::run_cli(&ada, &["data", "decrypt", id, "--key-file", &key_file])
        .await
        .expect("decrypted");
    assert!(opened.contains("under the floorboards"), "{opened}");

    let wrong_file = dir.path().join("wrong");
    std::fs::write(&wrong_file, "another key entirely").expect("written");
    let wrong = wrong_file.to_str().expect("a UTF-8 path");
    let err = support::run_cli(&ada, &["data", "decrypt", id, "--key-file", wrong])
        .await
        .expect_err("a wrong key");
    assert!(
        matches!(err, ServiceError::DecryptionFailed { .. }),
        "{err:?}"
    );
    let err = support::run_cli(&ada, &["data", "decrypt", id])
        .await
        .expect_err("no key");
    assert!(
        err.to_string().contains("--key-file"),
        "a missing key says how to give one: {err}"
    );
    let err = support::run_cli(&ada, &["data", "store", "primary", "2024-09-01", "[1, 2]"])
        .await
        .expect_err("not an object");
    assert!(
        matches!(&err, ServiceError::InvalidInput { field, .. } if field == "data"),
        "{err:?}"
    );
}
