//! The access log survives the server being killed (guide §5.3): the real `chronoscope serve`
//! is SIGKILLed after writes, reads and a refused request; once restarted, every write is in
//! the log exactly once, the reads and the refusal flushed before the kill are there (durable),
//! and nothing is counted twice. An orderly stop (SIGTERM) flushes what it counted. Run on
//! SQLite, and on PostgreSQL when it is reachable (see `support::fresh_postgres`).

mod support;

use std::process::Stdio;
use std::time::Duration;

use chronoscope::client::RemoteClient;
use chronoscope::service::prelude::*;
use chronoscope::service::{AccessAction, AccessLog, AccessLogQuery, PageRequest};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The server's flush interval in these tests (the default is 10 s).
const FLUSH: &str = "1s";

/// A `chronoscope serve` on a free loopback port, with the test secret.
struct Served {
    child: Child,
    url: String,
}

/// Starts the server on the data directory `dir` (and on `database`, when given).
async fn serve(dir: &std::path::Path, database: Option<&str>) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chronoscope"));
    command.arg("--data-dir").arg(dir);
    if let Some(url) = database {
        command.args(["--database", url]);
    }
    let mut child = command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--access-log-flush",
            FLUSH,
        ])
        .env(
            "CHRONOSCOPE_JWT_SECRET",
            std::str::from_utf8(support::SECRET).expect("text"),
        )
        .env_remove("CHRONOSCOPE_JWT_SECRET_FILE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("stderr is readable") {
            if let Some(rest) = line.strip_prefix("chronoscope serving on ") {
                return rest.split_whitespace().next().map(str::to_owned);
            }
        }
        None
    })
    .await
    .expect("the server says where it serves within a minute")
    .expect("the server says where it serves");
    // Keep draining stderr so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Served { child, url }
}

impl Served {
    fn client(&self, traveller: &str, scopes: &str) -> RemoteClient {
        let secret = chronoscope::auth::Secret::from_bytes(support::SECRET.to_vec()).unwrap();
        let token = chronoscope::auth::issue_token(
            &secret,
            traveller,
            &chronoscope::auth::Scopes::parse(scopes),
            Duration::from_secs(3600),
        )
        .unwrap();
        RemoteClient::new(&self.url, token).expect("a client")
    }

    /// SIGKILL: nothing is flushed.
    async fn kill(mut self) {
        self.child.start_kill().expect("kill -9");
        self.child.wait().await.expect("the server ends");
    }

    /// SIGTERM: an orderly stop.
    async fn stop(mut self) {
        let pid = self.child.id().expect("running").to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await
            .expect("kill runs");
        assert!(sent.success());
        let ended = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
        assert!(ended.is_ok(), "the server stops on SIGTERM");
    }
}

/// The sum of the counts of `user`'s `action`s named `operation`, and whether all are durable.
fn total(log: &AccessLog, user: &str, action: AccessAction, operation: &str) -> (u64, bool) {
    let matching = log
        .logs
        .iter()
        .filter(|e| e.user_id == user && e.action == action && e.operation == operation);
    matching.fold((0, true), |(n, durable), e| {
        (n + e.count, durable && e.durable)
    })
}

/// Asserts, for each `(user, action, operation, count)`, that the log counts `count` of them,
/// all durable.
fn assert_durable_totals(log: &AccessLog, expected: &[(&str, AccessAction, &str, u64)]) {
    for &(user, action, operation, count) in expected {
        assert_eq!(
            total(log, user, action, operation),
            (count, true),
            "{user} {operation}: {log:#?}"
        );
    }
}

async fn log_of(server: &Served, timeline: &chronoscope::model::TimelineId) -> AccessLog {
    server
        .client("root", "read write admin")
        .access_logs(AccessLogQuery {
            timeline_id: timeline.clone(),
            time_range: None,
            page: PageRequest::first(1000),
            service_wide: false,
        })
        .await
        .expect("an operator reads the access log")
}

async fn killed_server_keeps_every_write_and_what_it_flushed(database: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let first = serve(dir.path(), database).await;
    let ada = first.client("ada", "read write");
    let vault = ada
        .create_timeline(support::named("Vault"))
        .await
        .expect("ada creates a timeline")
        .id;
    for i in 0..3 {
        ada.add_event(
            &vault,
            support::new_event(&format!("event {i}"), "1900-01-01T00:00:00Z", "Vault", &[]),
        )
        .await
        .expect("ada adds an event");
    }
    for _ in 0..2 {
        ada.get_timeline(&vault).await.expect("ada reads it");
    }
    let stranger = RemoteClient::new(&first.url, "not-a-token").unwrap();
    let refused = stranger.get_timeline(&vault).await;
    assert!(
        matches!(
            refused,
            Err(chronoscope::error::ServiceError::Unauthorized(_))
        ),
        "{refused:?}"
    );
    // More than one flush interval: the reads and the refusal are in the log.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    first.kill().await;

    let second = serve(dir.path(), database).await;
    let log = log_of(&second, &vault).await;
    assert_durable_totals(
        &log,
        &[
            ("ada", AccessAction::Write, "create_timeline", 1),
            ("ada", AccessAction::Write, "add_events", 3),
            ("ada", AccessAction::Read, "get_timeline", 2),
            (
                "unknown",
                AccessAction::UnauthorizedAccessAttempt,
                "unauthenticated",
                1,
            ),
        ],
    );

    // One more read, then an orderly stop: it is flushed on the way out, and nothing before
    // it is counted again.
    second
        .client("ada", "read write")
        .get_timeline(&vault)
        .await
        .expect("ada reads it again");
    second.stop().await;
    let third = serve(dir.path(), database).await;
    let log = log_of(&third, &vault).await;
    // The operator's read of the log before the stop is counted once.
    assert_durable_totals(
        &log,
        &[
            ("ada", AccessAction::Read, "get_timeline", 3),
            ("ada", AccessAction::Write, "add_events", 3),
            ("root", AccessAction::Read, "access_logs", 1),
        ],
    );
    third.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_access_log_survives_a_kill() {
    killed_server_keeps_every_write_and_what_it_flushed(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_access_log_survives_a_kill() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    killed_server_keeps_every_write_and_what_it_flushed(Some(&db.url)).await;
}

/// A memory store whose appends fail while `failing` is set, like a database that is down.
#[derive(Default)]
struct Flaky {
    failing: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl support::StoreHooks for Flaky {
    fn describe(&self, _: &dyn chronoscope::store::Store) -> String {
        "flaky memory".into()
    }

    async fn lock(&self) -> Result<(), chronoscope::store::StoreError> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(chronoscope::store::StoreError::Unavailable(
                "the test's store is down".into(),
            ));
        }
        Ok(())
    }
}

/// A flush whose append fails keeps its counts: they are shown as not durable, and the next
/// flush writes them once.
#[tokio::test]
async fn a_failed_flush_keeps_its_counts_for_the_next() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    let store = Arc::new(support::Hooked::memory(Flaky::default()));
    let clock = Arc::new(chronoscope::engine::ManualClock::new(support::t(
        support::START,
    )));
    let engine = support::engine_on(store.clone(), clock.clone()).await;
    let ada = engine.session("ada".parse().unwrap()).with_admin(false);
    let vault = ada
        .create_timeline(support::named("Vault"))
        .await
        .unwrap()
        .id;
    for _ in 0..2 {
        ada.get_timeline(&vault).await.unwrap();
    }
    let reads = |log: &AccessLog| {
        log.logs
            .iter()
            .filter(|e| e.operation == "get_timeline")
            .map(|e| (e.count, e.durable))
            .collect::<Vec<_>>()
    };
    let query = AccessLogQuery {
        timeline_id: vault.clone(),
        time_range: None,
        page: PageRequest::default(),
        service_wide: false,
    };
    store.failing.store(true, Ordering::SeqCst);
    assert!(engine.flush_access_log().await.is_err());
    store.failing.store(false, Ordering::SeqCst);
    let log = ada.access_logs(query.clone()).await.unwrap();
    assert_eq!(reads(&log), [(2, false)], "{log:#?}");
    assert!(engine.flush_access_log().await.unwrap());
    let log = ada.access_logs(query.clone()).await.unwrap();
    assert_eq!(reads(&log), [(2, true)], "{log:#?}");
    // Another engine on the store folds the same, once.
    let fresh = support::engine_on(store, clock).await;
    let log = fresh
        .session("ada".parse().unwrap())
        .with_admin(false)
        .access_logs(query)
        .await
        .unwrap();
    assert_eq!(reads(&log), [(2, true)], "{log:#?}");
}
