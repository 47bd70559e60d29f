//! Backups and restores as an operator makes them, with the real binary on real stores: a
//! backup taken while a writer runs holds every write acknowledged before it began; a restore
//! killed with SIGKILL at random moments leaves the store empty or complete; SQLite →
//! PostgreSQL → SQLite gives the same log and the same state; damaged, foreign and misplaced
//! backups are refused saying what is wrong.

mod support;

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::service::prelude::*;
use chronoscope::store::{self, LogKey, Record};

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_chronoscope")
}

/// One data directory (its log key) shared by every store of a test, as an operator moving a
/// store keeps the key file with it.
struct Operator {
    dir: tempfile::TempDir,
}

impl Operator {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("data dir"),
        }
    }

    fn key(&self) -> LogKey {
        LogKey::load(None, self.dir.path()).expect("log key")
    }

    fn sqlite(&self, name: &str) -> String {
        format!("sqlite://{}", self.dir.path().join(name).display())
    }

    fn file(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// `chronoscope --data-dir DIR --database URL ARGS…`.
    fn command(&self, url: &str, args: &[&str]) -> Command {
        let mut command = Command::new(binary());
        command
            .arg("--data-dir")
            .arg(self.dir.path())
            .args(["--database", url, "--as", "ada"])
            .args(args)
            .env_remove("CHRONOSCOPE_REMOTE")
            .env_remove("CHRONOSCOPE_TOKEN");
        command
    }

    fn run(&self, url: &str, args: &[&str]) -> Output {
        self.command(url, args).output().expect("run chronoscope")
    }

    /// Runs and insists on success, answering stdout.
    fn ok(&self, url: &str, args: &[&str]) -> String {
        let out = self.run(url, args);
        assert!(
            out.status.success(),
            "chronoscope {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// An engine on `url` with this directory's key, as the binary opens one.
    async fn engine(&self, url: &str) -> Arc<Engine> {
        let store = store::open(url).await.expect("store");
        let config = EngineConfig {
            log_key: self.key(),
            ..EngineConfig::default()
        };
        Engine::open(store, Arc::new(SystemClock), config, Seed::None)
            .await
            .expect("engine")
    }
}

async fn records(url: &str) -> Vec<Record> {
    let store = store::open(url).await.expect("store");
    let mut all = Vec::new();
    loop {
        let page = store
            .read_since(all.len() as u64, 10_000)
            .await
            .expect("read");
        if page.is_empty() {
            return all;
        }
        all.extend(page);
    }
}

async fn last_seq(url: &str) -> u64 {
    store::open(url)
        .await
        .expect("store")
        .last_seq()
        .await
        .expect("last seq")
}

/// A PostgreSQL database of the test's own, or `None` when PostgreSQL is not required and not
/// there.
async fn postgres() -> Option<support::PgDatabase> {
    support::fresh_postgres().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_a_writer_runs_holds_every_write_acknowledged_before_it_began() {
    let op = Operator::new();
    let url = op.sqlite("live.db");
    let engine = op.engine(&url).await;
    let ada: Arc<dyn TimelineService> = Arc::new(engine.session("ada".parse().expect("name")));
    // A writer that never stops while the backup runs: each acknowledged write counted.
    let acknowledged = Arc::new(AtomicU64::new(0));
    let writing = {
        let (ada, acknowledged) = (ada.clone(), acknowledged.clone());
        tokio::spawn(async move {
            for i in 0u64.. {
                let event =
                    support::new_event(&format!("write {i}"), "1900-01-01T00:00:00Z", "Bern", &[]);
                if ada
                    .add_event(&"primary".parse().expect("id"), event)
                    .await
                    .is_err()
                {
                    break;
                }
                acknowledged.store(i + 1, Ordering::SeqCst);
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = acknowledged.load(Ordering::SeqCst);
    assert!(before > 50, "the writer made only {before} writes");
    let backup = op.file("live.backup");
    let url2 = url.clone();
    let file = backup.display().to_string();
    let out = tokio::task::spawn_blocking({
        let mut command = op.command(&url2, &["--json", "backup", &file]);
        move || command.output().expect("backup")
    })
    .await
    .expect("joined");
    let during = acknowledged.load(Ordering::SeqCst);
    writing.abort();
    support::assert_succeeded(&out);
    assert!(during > before, "the writer did not run during the backup");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["made_by"], "ada");

    // Restored into a new store, every write acknowledged before the backup began is there.
    let restored = op.sqlite("restored.db");
    op.ok(&restored, &["restore", &file]);
    let engine = op.engine(&restored).await;
    let ada = engine.session("ada".parse().expect("name"));
    let mut found = std::collections::HashSet::new();
    let mut query = chronoscope::service::SearchQuery::default();
    query.page.limit = Some(1000);
    loop {
        let page = ada.search_events(query.clone()).await.expect("events");
        found.extend(page.items.into_iter().map(|e| e.description));
        match page.next_cursor {
            Some(cursor) => query.page.cursor = Some(cursor),
            None => break,
        }
    }
    let missing: Vec<u64> = (0..before)
        .filter(|i| !found.contains(&format!("write {i}")))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged before the backup, not in it: {missing:?}"
    );
    op.ok(&restored, &["verify"]);
}

/// A store with a bit of everything: the demo world, an anchor, an item, an access list, a
/// data entry, a deleted timeline.
fn populate(op: &Operator, url: &str) {
    op.ok(url, &["--seed", "demo", "timelines", "list"]);
    op.ok(
        url,
        &[
            "anchors",
            "set",
            "1969-07-20T20:17:00Z",
            "--description",
            "landing",
        ],
    );
    op.ok(url, &["items", "register", "a brass compass"]);
    op.ok(url, &["timelines", "create", "Ada's lab"]);
    op.ok(url, &["timelines", "create", "Scratch"]);
    let listed: serde_json::Value =
        serde_json::from_str(&op.ok(url, &["--json", "timelines", "list"])).expect("json");
    let id_of = |name: &str| {
        listed["items"]
            .as_array()
            .and_then(|items| items.iter().find(|t| t["name"] == name))
            .and_then(|t| t["id"].as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no timeline {name} in {listed}"))
    };
    let lab = id_of("Ada's lab");
    op.ok(
        url,
        &["access", "set", &lab, "--read", "tom", "--admin", "ada"],
    );
    op.ok(
        url,
        &["data", "store", &lab, "2026-01-01", r#"{"sample": 7}"#],
    );
    op.ok(url, &["timelines", "delete", &id_of("Scratch")]);
}

/// What a traveller sees of a store, as the CLI prints it.
fn state(op: &Operator, url: &str) -> Vec<String> {
    let listed = op.ok(url, &["--json", "timelines", "list", "--limit", "1000"]);
    let ids: Vec<String> =
        serde_json::from_str::<serde_json::Value>(&listed).expect("json")["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|t| t["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
    let mut seen = vec![listed];
    for id in &ids {
        seen.push(op.ok(
            url,
            &[
                "--json",
                "events",
                "search",
                "--timeline",
                id,
                "--limit",
                "1000",
            ],
        ));
        seen.push(op.ok(url, &["--json", "access", "show", id]));
    }
    seen.push(op.ok(url, &["--json", "anchors", "list"]));
    seen.push(op.ok(url, &["--json", "items", "list"]));
    seen.push(op.ok(url, &["--json", "merges", "list"]));
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_to_postgresql_and_back_gives_the_same_log_and_the_same_state() {
    let Some(pg) = postgres().await else { return };
    let op = Operator::new();
    let laptop = op.sqlite("laptop.db");
    populate(&op, &laptop);
    let before = state(&op, &laptop);

    let team = op.file("to-team.backup").display().to_string();
    op.ok(&laptop, &["backup", &team]);
    op.ok(&pg.url, &["restore", &team]);
    op.ok(&pg.url, &["verify"]);
    assert_eq!(state(&op, &pg.url), before, "PostgreSQL after the restore");

    let back = op.file("to-laptop.backup").display().to_string();
    op.ok(&pg.url, &["backup", &back]);
    let copy = op.sqlite("copy.db");
    op.ok(&copy, &["restore", &back]);
    op.ok(&copy, &["verify"]);

    let (original, returned) = (records(&laptop).await, records(&copy).await);
    assert_eq!(original.len(), returned.len());
    assert!(
        original == returned,
        "the records (bodies and links) differ after the round trip"
    );
    assert_eq!(records(&pg.url).await, original);
    assert_eq!(state(&op, &copy), before, "SQLite after the round trip");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_killed_at_random_moments_leaves_the_store_empty_or_complete() {
    let op = Operator::new();
    // A log long enough that a restore takes a while: 40 000 records.
    let source = op.sqlite("source.db");
    {
        let store = store::open(&source).await.expect("store");
        let key = op.key();
        let meta = store::ChainMeta {
            fingerprint: key.fingerprint(),
            from: 1,
        };
        store.start_chain(meta, &[]).await.expect("chain");
        let mut previous = key.genesis();
        let mut seq = 0u64;
        for _ in 0..40 {
            let entries: Vec<store::Entry> = (0..1000)
                .map(|i| {
                    seq += 1;
                    let body = format!(
                        r#"{{"by":"ada","at":null,"change":{{"op":"delete_timeline","id":"primary","note":"{i} {}"}}}}"#,
                        "x".repeat(200)
                    );
                    previous = key.link(&previous, seq, &body);
                    store::Entry {
                        body,
                        link: previous,
                    }
                })
                .collect();
            store.append(seq - 999, &entries).await.expect("append");
        }
    }
    let file = op.file("big.backup").display().to_string();
    op.ok(&source, &["backup", &file]);
    let expected = records(&source).await;

    let mut kinds = vec!["SQLite"];
    if support::postgres_required() || postgres().await.is_some() {
        kinds.push("PostgreSQL");
    }
    for kind in kinds {
        // A new target each time (a database of its own on PostgreSQL, dropped after).
        let mut databases = Vec::new();
        let mut target = async |n: usize| match kind {
            "SQLite" => op.sqlite(&format!("target-{n}.db")),
            _ => {
                let pg = postgres().await.expect("PostgreSQL");
                let url = pg.url.clone();
                databases.push(pg);
                url
            }
        };
        // How long a whole restore takes here, and its first part (the file verified before
        // anything is written), to kill while it writes.
        let started = Instant::now();
        op.ok(&source, &["verify", "--backup", &file]);
        let checking = started.elapsed();
        let timing = target(100).await;
        let started = Instant::now();
        op.ok(&timing, &["restore", &file]);
        let whole = started.elapsed();
        let writing = checking.as_secs_f64() / whole.as_secs_f64();
        let mut outcomes = Vec::new();
        for n in 0..3 {
            let url = target(n).await;
            let mut child = op
                .command(&url, &["restore", &file])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn");
            let at = whole.mul_f64(rand::random_range(writing.min(0.9)..0.99));
            std::thread::sleep(at);
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
            if last_seq(&url).await == 0 {
                outcomes.push("empty");
                // Nothing half-made stands in the way of a second try.
                op.ok(&url, &["restore", &file]);
            } else {
                outcomes.push("complete");
            }
            assert!(
                records(&url).await == expected,
                "{kind}, killed after {at:?} of {whole:?}: the store is neither empty nor whole"
            );
            op.ok(&url, &["verify"]);
        }
        eprintln!(
            "{kind}: a restore takes {whole:?} (checking the file {checking:?}); three kills while \
             it wrote left the store {outcomes:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_foreign_and_misplaced_backups_are_refused_saying_what_is_wrong() {
    let op = Operator::new();
    let url = op.sqlite("source.db");
    op.ok(&url, &["--seed", "demo", "timelines", "list"]);
    let file = op.file("demo.backup");
    let name = file.display().to_string();
    op.ok(&url, &["backup", &name]);

    // What it holds, in one line and as JSON.
    let said = op.ok(&url, &["verify", "--backup", &name]);
    assert!(said.contains("timelines created"), "{said}");
    let json: serde_json::Value =
        serde_json::from_str(&op.ok(&url, &["--json", "verify", "--backup", &name])).expect("json");
    let records = json["records"].as_u64().unwrap_or(0);
    assert!(records > 0, "{json}");
    assert!(
        json["timelines_created"].as_u64().unwrap_or(0) >= 3,
        "{json}"
    );

    // An existing file is not written over.
    let out = op.run(&url, &["backup", &name]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--replace"));

    // Not into a store that holds records; the store is left as it was.
    let before = last_seq(&url).await;
    let out = op.run(&url, &["restore", &name]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("only into an empty store"), "{said}");
    assert_eq!(last_seq(&url).await, before);

    // One byte flipped in record 3's body: refused at its line, nothing written.
    let text = std::fs::read_to_string(&file).expect("read");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut record: serde_json::Value = serde_json::from_str(&lines[3]).expect("a record line");
    let body = record["body"].as_str().expect("a body").to_owned();
    let at = body
        .find(|c: char| c.is_ascii_lowercase())
        .expect("a letter");
    let flipped_letter = if &body[at..=at] == "x" { "y" } else { "x" };
    record["body"] = format!("{}{flipped_letter}{}", &body[..at], &body[at + 1..]).into();
    lines[3] = record.to_string();
    let flipped = op.file("flipped.backup");
    std::fs::write(&flipped, lines.join("\n") + "\n").expect("write");
    let empty = op.sqlite("empty.db");
    let out = op.run(&empty, &["restore", &flipped.display().to_string()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    support::assert_contains_all(&said, &["line 4", "record 3 does not match its link"]);
    assert_eq!(last_seq(&empty).await, 0);

    // A record removed.
    let mut removed = text.lines().map(str::to_owned).collect::<Vec<_>>();
    removed.remove(5);
    let cut = op.file("cut.backup");
    std::fs::write(&cut, removed.join("\n") + "\n").expect("write");
    let out = op.run(&empty, &["verify", "--backup", &cut.display().to_string()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("records are missing"), "{said}");

    // Another log key.
    let stranger = Operator::new();
    let _ = stranger.key();
    let out = stranger.run(&stranger.sqlite("x.db"), &["restore", &name]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    support::assert_contains_all(&said, &["another log key", "--log-key-file"]);
    assert_eq!(last_seq(&stranger.sqlite("x.db")).await, 0);

    // The restore is recorded in the data directory's witness.
    op.ok(&empty, &["restore", &name]);
    let shown = op.ok(&empty, &["witness", "show"]);
    assert!(
        shown.contains(&format!("restored {records} records from {name}")),
        "{shown}"
    );
}
