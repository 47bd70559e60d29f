//! An acknowledged write survives the writer being killed.
//!
//! The test binary re-runs itself as a child (`child_writer`, active only when
//! `CHRONOSCOPE_DURABILITY_CHILD` names a store) that registers items through the real engine
//! and prints each acknowledged id the moment the call returns. The parent SIGKILLs it mid-stream,
//! reopens the store with a fresh engine, and finds every acknowledged item.

mod support;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::model::{ItemId, Traveller};
use chronoscope::service::{NewItem, TimelineService};
use chronoscope::store;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Names the store the child writes to; unset in a normal test run.
const CHILD_ENV: &str = "CHRONOSCOPE_DURABILITY_CHILD";
/// Acknowledgements the parent waits for before killing the child.
const ACKS_BEFORE_KILL: usize = 40;
/// The child stops by itself after this many, so a parent that failed to kill it cannot leave it
/// running for long.
const CHILD_MAX_WRITES: usize = 20_000;

fn traveller() -> Traveller {
    "durability-tester".parse().unwrap()
}

async fn engine(url: &str) -> Arc<Engine> {
    let store = store::open(url).await.unwrap();
    Engine::open(
        store,
        Arc::new(SystemClock),
        EngineConfig::default(),
        Seed::None,
    )
    .await
    .unwrap()
}

/// The child's writing loop; does nothing unless run as the child.
#[tokio::test]
async fn child_writer() {
    let Ok(url) = std::env::var(CHILD_ENV) else {
        return;
    };
    let session = engine(&url).await.session(traveller());
    for i in 0..CHILD_MAX_WRITES {
        let item = session
            .register_item(NewItem {
                description: format!("item-{i}"),
            })
            .await
            .unwrap();
        // One line per acknowledgement, ending in "ok" so that a line cut short by the kill is
        // recognisable; Rust's stdout flushes at each newline.
        println!("ACK {} item-{i} ok", item.id);
    }
}

/// Runs the child on `url`, kills it after some acknowledgements, returns (id, description) of
/// every write it acknowledged.
async fn kill_mid_stream(url: &str) -> Vec<(ItemId, String)> {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, url)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = Vec::new();
    let mut killed = false;
    // Bounds a hung child, not a speed expectation: 40 small writes take well under a second.
    let reading = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let fields: Vec<&str> = line.split(' ').collect();
            if let ["ACK", id, description, "ok"] = fields[..] {
                acked.push((id.parse::<ItemId>().unwrap(), description.to_owned()));
            }
            if acked.len() >= ACKS_BEFORE_KILL && !killed {
                child.start_kill().unwrap(); // SIGKILL
                killed = true;
            }
        }
    });
    reading.await.expect("the child neither wrote nor exited");
    let status = child.wait().await.unwrap();
    assert!(
        killed,
        "the child exited ({status}) after only {} acknowledgements",
        acked.len()
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(9),
        "the child was not killed: {status}"
    );
    acked
}

/// Reopens the store with a fresh engine and checks every acknowledged item is there, then that
/// the store still takes writes.
async fn assert_all_acknowledged_writes_survived(url: &str, acked: &[(ItemId, String)]) {
    assert!(acked.len() >= ACKS_BEFORE_KILL);
    let session = engine(url).await.session(traveller());
    for (id, description) in acked {
        let item = session
            .get_item(id)
            .await
            .unwrap_or_else(|e| panic!("acknowledged item {id} ({description}) is lost: {e}"));
        assert_eq!(&item.description, description);
    }
    session
        .register_item(NewItem {
            description: "written after the crash".into(),
        })
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_acknowledged_writes_when_the_writer_is_killed() {
    if std::env::var(CHILD_ENV).is_ok() {
        return; // this process is a child; only `child_writer` works here
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chronoscope.db");
    let url = format!("sqlite://{}", path.display());

    let acked = kill_mid_stream(&url).await;

    // The file opens cleanly: SQLite's own check, on a connection of our own.
    {
        use sqlx::Connection;
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&path);
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        let verdict: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_all(&mut conn)
            .await
            .unwrap();
        assert_eq!(verdict, ["ok"]);
        conn.close().await.unwrap();
    }
    assert_all_acknowledged_writes_survived(&url, &acked).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_acknowledged_writes_when_the_writer_is_killed() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let acked = kill_mid_stream(&db.url).await;
    assert_all_acknowledged_writes_survived(&db.url, &acked).await;
}
