//! An acknowledged write survives the writer being killed.
//!
//! The test binary re-runs itself as a child (when `CHRONOSCOPE_DURABILITY_CHILD` names a
//! store) that registers items through the real engine and prints each acknowledged id the
//! moment the call returns. The parent SIGKILLs it mid-stream, reopens the store with a fresh
//! engine, and finds every acknowledged item.
//!
//! The binary has its own `main` (`harness = false`): the child's writing loop is not a test,
//! so it is not counted as one, and a PostgreSQL test without a server says "skipped" in the
//! summary instead of passing silently. It takes name filters like libtest.

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

/// The child's writing loop.
async fn child_writer(url: &str) {
    let session = engine(url).await.session(traveller());
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

async fn sqlite_keeps_acknowledged_writes_when_the_writer_is_killed() -> Verdict {
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
    Verdict::Passed
}

async fn postgres_keeps_acknowledged_writes_when_the_writer_is_killed() -> Verdict {
    let Some(db) = support::fresh_postgres().await else {
        return Verdict::Skipped("no PostgreSQL server answered");
    };
    let acked = kill_mid_stream(&db.url).await;
    assert_all_acknowledged_writes_survived(&db.url, &acked).await;
    Verdict::Passed
}

/// How a test that did not panic ended.
enum Verdict {
    Passed,
    Skipped(&'static str),
}

type Test = fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Verdict>>>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn main() -> std::process::ExitCode {
    if let Ok(url) = std::env::var(CHILD_ENV) {
        runtime().block_on(child_writer(&url));
        return std::process::ExitCode::SUCCESS;
    }
    let tests: [(&str, Test); 2] = [
        (
            "sqlite_keeps_acknowledged_writes_when_the_writer_is_killed",
            || Box::pin(sqlite_keeps_acknowledged_writes_when_the_writer_is_killed()),
        ),
        (
            "postgres_keeps_acknowledged_writes_when_the_writer_is_killed",
            || Box::pin(postgres_keeps_acknowledged_writes_when_the_writer_is_killed()),
        ),
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in &tests {
            println!("{name}: test");
        }
        return std::process::ExitCode::SUCCESS;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let chosen: Vec<_> = tests
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", chosen.len());
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (name, test) in chosen {
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime().block_on(test())));
        match outcome {
            Ok(Verdict::Passed) => {
                passed += 1;
                println!("test {name} ... ok");
            }
            Ok(Verdict::Skipped(why)) => {
                skipped += 1;
                println!("test {name} ... SKIPPED ({why})");
            }
            Err(_) => {
                failed += 1;
                println!("test {name} ... FAILED");
            }
        }
    }
    let result = if failed == 0 { "ok" } else { "FAILED" };
    println!("\ntest result: {result}. {passed} passed; {failed} failed; {skipped} skipped\n");
    if failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
