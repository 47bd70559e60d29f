//! The log's keyed hash chain, against real stores: a record changed behind chronoscope's back
//! (a SQLite file, a PostgreSQL row) stops the start at exactly that record, a store written
//! with another key is refused, a log shorter than its sealed snapshot is refused, and a store
//! written before chains existed is linked on its first start.

mod support;

use std::path::Path;
use std::sync::Arc;

use chronoscope::engine::audit::audit;
use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::error::ServiceError;
use chronoscope::service::{NewItem, PageRequest, TimelineService};
use chronoscope::store::{self, LogKey, Store};

fn config(key: &LogKey) -> EngineConfig {
    EngineConfig {
        log_key: key.clone(),
        ..EngineConfig::default()
    }
}

async fn open(store: Arc<dyn Store>, key: &LogKey) -> Result<Arc<Engine>, ServiceError> {
    Engine::open(store, Arc::new(SystemClock), config(key), Seed::None).await
}

fn sqlite_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("log.db").display())
}

/// Registers `descriptions` as ada's items (each its own acknowledged write); answers the seq
/// of each item's record.
async fn register(engine: &Arc<Engine>, descriptions: &[&str]) -> Vec<u64> {
    let ada = engine.session("ada".parse().unwrap());
    let mut seqs = Vec::new();
    for description in descriptions {
        ada.register_item(NewItem {
            description: (*description).to_owned(),
        })
        .await
        .unwrap();
        seqs.push(engine.snapshot().await.unwrap().seq);
    }
    seqs
}

async fn item_descriptions(engine: &Arc<Engine>) -> Vec<String> {
    let ada = engine.session("ada".parse().unwrap());
    let page = ada.list_items(PageRequest::default()).await.unwrap();
    page.items.into_iter().map(|i| i.description).collect()
}

fn refusal(opened: Result<Arc<Engine>, ServiceError>) -> String {
    match opened {
        Ok(_) => panic!("the engine opened"),
        Err(e) => e.to_string(),
    }
}

/// Changes record `seq`'s body in the SQLite file with `edit`, as someone with the file would.
fn edit_sqlite_record(dir: &Path, seq: u64, edit: impl Fn(&str) -> String) {
    let conn = rusqlite::Connection::open(dir.join("log.db")).unwrap();
    let body: String = conn
        .query_row(
            "SELECT body FROM op_log WHERE seq = ?1",
            [seq as i64],
            |r| r.get(0),
        )
        .unwrap();
    let changed = edit(&body);
    assert_ne!(changed, body, "the edit changed nothing");
    // Still valid JSON: only the chain can tell.
    serde_json::from_str::<serde_json::Value>(&changed).unwrap();
    conn.execute(
        "UPDATE op_log SET body = ?1 WHERE seq = ?2",
        (changed, seq as i64),
    )
    .unwrap();
}

#[tokio::test]
async fn a_record_changed_in_the_sqlite_file_stops_the_start_at_that_record() {
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let seqs = register(&engine, &["compass", "pocket watch", "lantern"]).await;
    drop(engine);

    // Without the change, a restart serves what was acknowledged: the test can tell.
    let again = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    assert_eq!(
        item_descriptions(&again).await,
        ["compass", "pocket watch", "lantern"]
    );
    drop(again);

    edit_sqlite_record(dir.path(), seqs[1], |body| {
        body.replace("pocket watch", "pocket knife")
    });
    let message = refusal(open(store::open(&url).await.unwrap(), &key).await);
    assert!(
        message.contains(&format!("record {} does not match its link", seqs[1])),
        "{message}"
    );
    assert!(message.contains("chronoscope verify"), "{message}");

    // `verify` names the same record and says which records before it are sound.
    let store = store::open(&url).await.unwrap();
    let found = audit(&*store, &key).await.unwrap();
    assert_eq!(found.verified, seqs[1] - 1);
    assert_eq!(found.problem.map(|p| p.seq), Some(Some(seqs[1])));
}

#[tokio::test]
async fn a_store_written_with_another_key_is_refused_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path());
    let key = LogKey::from_bytes(b"the key that wrote it");
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    register(&engine, &["compass"]).await;
    drop(engine);
    let other = LogKey::from_bytes(b"another key");
    let message = refusal(open(store::open(&url).await.unwrap(), &other).await);
    assert!(message.contains("another log key"), "{message}");
    assert!(message.contains("--log-key-file"), "{message}");
    // The right key still opens it, untouched.
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    assert_eq!(item_descriptions(&engine).await, ["compass"]);
}

#[tokio::test]
async fn a_log_shorter_than_its_sealed_snapshot_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path());
    let key = LogKey::from_bytes(b"k");
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    register(&engine, &["a", "b", "c", "d"]).await;
    let snapshot_at = engine.write_snapshot().await.unwrap().unwrap();
    drop(engine);
    // The tail of the log is lost, as with a write-ahead log cut short.
    let conn = rusqlite::Connection::open(dir.path().join("log.db")).unwrap();
    conn.execute(
        "DELETE FROM op_log WHERE seq > ?1",
        [snapshot_at as i64 - 2],
    )
    .unwrap();
    drop(conn);
    let message = refusal(open(store::open(&url).await.unwrap(), &key).await);
    assert!(
        message.contains(&format!("ends at record {}", snapshot_at - 2)),
        "{message}"
    );
    assert!(
        message.contains("2 acknowledged records are gone"),
        "{message}"
    );
}

#[tokio::test]
async fn a_store_from_before_chains_is_linked_on_its_first_start_and_then_protected() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path());
    let key = LogKey::from_bytes(b"k");
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let seqs = register(&engine, &["compass", "lantern"]).await;
    drop(engine);
    // What an older version left: no links, no chain record.
    let conn = rusqlite::Connection::open(dir.path().join("log.db")).unwrap();
    conn.execute_batch("UPDATE op_log SET link = NULL; DELETE FROM log_chain;")
        .unwrap();
    drop(conn);

    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    assert_eq!(item_descriptions(&engine).await, ["compass", "lantern"]);
    let store = store::open(&url).await.unwrap();
    let chain = store.chain().await.unwrap().unwrap();
    assert_eq!(chain.from, seqs[1] + 1);
    register(&engine, &["rope"]).await;
    drop(engine);
    assert!(audit(&*store, &key).await.unwrap().is_sound());

    // From now on an old record is protected like a new one.
    edit_sqlite_record(dir.path(), seqs[0], |body| {
        body.replace("compass", "compasS")
    });
    let message = refusal(open(store::open(&url).await.unwrap(), &key).await);
    assert!(
        message.contains(&format!("record {} does not match", seqs[0])),
        "{message}"
    );
}

#[tokio::test]
async fn a_record_changed_in_a_postgresql_row_stops_the_start_at_that_record() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let engine = open(store::open(&db.url).await.unwrap(), &key)
        .await
        .unwrap();
    let seqs = register(&engine, &["compass", "pocket watch", "lantern"]).await;
    drop(engine);

    let options: sqlx::postgres::PgConnectOptions = db.url.parse().unwrap();
    let pool = sqlx::PgPool::connect_with(options).await.unwrap();
    let changed =
        sqlx::query("UPDATE op_log SET body = replace(body, 'lantern', 'lanterN') WHERE seq = $1")
            .bind(seqs[2] as i64)
            .execute(&pool)
            .await
            .unwrap();
    assert_eq!(changed.rows_affected(), 1);
    pool.close().await;

    let message = refusal(open(store::open(&db.url).await.unwrap(), &key).await);
    assert!(
        message.contains(&format!("record {} does not match its link", seqs[2])),
        "{message}"
    );
}
