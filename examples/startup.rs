//! Start-up with a big log, with and without a snapshot: a benchmark, not a test.
//!
//! ```sh
//! cargo run --release --example startup -- [--events 1000000] [--runs 5] [--db FILE]
//! ```
//!
//! Builds (once, then reuses) a SQLite log of `--events` events, one event per record, in 1,000
//! causal chains over 1,000 locations (as `benches/domain.rs`). Then it measures, `--runs`
//! times each: opening the engine on that log with no snapshot (a full replay), writing a
//! snapshot, and opening the engine again (snapshot + tail). When `target/release/chronoscope`
//! exists, it also measures the real thing: from spawning `chronoscope serve` to the first
//! `200` from `/readyz`, with and without the snapshot.
//!
//! `--skip-full` leaves out the full-replay timings (the snapshot is still written from one).
//! `--pause SECS` waits that long before each `serve`, so that each starts on an idle machine, as
//! a replica does: on this project's VM a start right after another one can be twice as fast as
//! a start after a pause of a few seconds, and the second is what a replica sees.
//! `--tail N` also times a start whose snapshot is N records behind the log: a copy of the file
//! (`FILE.tail`) gets N more records after the snapshot, so the log of `--db` stays as it is.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chronoscope::engine::{Engine, EngineConfig, Op, Seed, SystemClock, append_ops};
use chronoscope::model::{Event, EventId, EventStatus, Timeline, TimelineId, Window};
use chronoscope::store::{self, LogKey, Store};

const CHAINS: usize = 1_000;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn event(i: usize, n: usize) -> Event {
    let id = |i: usize| -> EventId {
        EventId::from_ulid(ulid::Ulid::from((0x0190_0000_0000u128 << 80) | i as u128))
    };
    let mut causes = Vec::new();
    if i >= CHAINS {
        causes.push(id(i - CHAINS));
    }
    if i % 10 == 3 && i > 10 {
        causes.push(id(i - 1 - (i / 10) % 10));
    }
    // A cause named ahead now and then: a standing paradox.
    if i % 10_007 == 5_000 && i + 10 < n {
        causes.push(id(i + 10));
    }
    let start = chrono::DateTime::from_timestamp(946_684_800, 0).unwrap_or_default();
    Event {
        id: id(i),
        description: format!("Event {i} of chain {}", i % CHAINS),
        time: start + chrono::Duration::seconds(i as i64 * 60),
        location: format!("City {} Place {}", i % 40, (i / 40) % 25),
        causes,
        fixed_point: i.is_multiple_of(997),
        status: EventStatus::OnSchedule,
        supersedes: None,
        superseded_by: None,
        lineage: id(i),
        author: None,
    }
}

/// Appends `primary` and `n` events, one per record, unless the log is there already.
async fn build_log(store: &dyn Store, key: &LogKey, n: usize) {
    let have = store.last_seq().await.unwrap_or(0);
    if have == n as u64 + 1 {
        eprintln!("reusing the log of {n} events");
        return;
    }
    assert_eq!(
        have, 0,
        "the file holds another log; remove it or pass --db"
    );
    eprintln!("building a log of {n} events (once)...");
    let started = Instant::now();
    let primary = Op::CreateTimeline {
        timeline: Timeline {
            id: TimelineId::primary(),
            name: "Primary".into(),
            description: None,
            variation: None,
            destination_time: None,
            created_at: chrono::DateTime::from_timestamp(946_684_800, 0).unwrap_or_default(),
            window: Window::Unbounded,
            parent: None,
            created_by: None,
        },
    };
    append_ops(store, key, &[primary]).await.unwrap();
    for batch in (0..n).collect::<Vec<_>>().chunks(20_000) {
        let ops: Vec<Op> = batch
            .iter()
            .map(|&i| Op::AddEvents {
                timeline: TimelineId::primary(),
                events: vec![event(i, n)],
                at: None,
            })
            .collect();
        append_ops(store, key, &ops).await.unwrap();
    }
    eprintln!("built in {:.1} s", started.elapsed().as_secs_f64());
}

async fn open(url: &str, key: &LogKey) -> (Arc<Engine>, Duration) {
    let started = Instant::now();
    let store = store::open(url).await.unwrap();
    let engine = Engine::open(
        store,
        Arc::new(SystemClock),
        EngineConfig {
            log_key: key.clone(),
            ..EngineConfig::default()
        },
        Seed::None,
    )
    .await
    .unwrap();
    (engine, started.elapsed())
}

/// Spawns `chronoscope serve` on `url` and times it until `/readyz` answers 200.
fn serve_to_ready(binary: &Path, url: &str, data_dir: &Path) -> Duration {
    let pause = arg("--pause").and_then(|s| s.parse().ok()).unwrap_or(0);
    std::thread::sleep(Duration::from_secs(pause));
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(["--data-dir"])
        .arg(data_dir)
        .args(["--database", url, "serve", "--listen", "127.0.0.1:0"])
        .args(["--snapshot-records", "0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = loop {
        let line = lines.next().expect("serve exited").unwrap();
        if let Some(rest) = line.split("serving on http://").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
        }
    };
    loop {
        if let Ok(mut conn) = std::net::TcpStream::connect(&address) {
            let _ = write!(
                conn,
                "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            );
            let mut answer = String::new();
            let _ = conn.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    took
}

/// Opens the engine on `url` `runs` times, checking each holds `seq` records: how long each
/// open took.
async fn time_opens(url: &str, key: &LogKey, runs: usize, seq: u64) -> Vec<Duration> {
    let mut took = Vec::new();
    for _ in 0..runs {
        let (engine, open_took) = open(url, key).await;
        assert_eq!(engine.snapshot().await.unwrap().seq, seq);
        took.push(open_took);
    }
    took
}

/// Starts `serve` on `url` `runs` times: how long each took to be ready.
fn time_serves(binary: &Path, url: &str, data_dir: &Path, runs: usize) -> Vec<Duration> {
    (0..runs)
        .map(|_| serve_to_ready(binary, url, data_dir))
        .collect()
}

fn summary(label: &str, runs: &[Duration]) {
    let in_order: Vec<f64> = runs.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    let mut sorted = in_order.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let show = |ms: &[f64]| -> String {
        let shown: Vec<String> = ms.iter().map(|m| format!("{m:.0}")).collect();
        shown.join(", ")
    };
    println!(
        "{label}: median {median:.0} ms (runs, sorted: {} ms; in order: {} ms)",
        show(&sorted),
        show(&in_order)
    );
}

async fn clear_snapshots(path: &Path) {
    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    sqlx::query("DELETE FROM snapshot_chunk")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("DELETE FROM snapshot")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

#[tokio::main]
async fn main() {
    let n: usize = arg("--events")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let runs: usize = arg("--runs").and_then(|s| s.parse().ok()).unwrap_or(5);
    let path = PathBuf::from(arg("--db").unwrap_or_else(|| format!("target/startup-bench-{n}.db")));
    let url = format!("sqlite://{}", path.display());
    let binary = PathBuf::from("target/release/chronoscope");
    // Kept beside the file: its log key chains the records, and every start checks them.
    let data_dir = PathBuf::from(format!("{}.data", path.display()));
    let key = LogKey::load(None, &data_dir).unwrap();
    {
        let store = store::open(&url).await.unwrap();
        build_log(&*store, &key, n).await;
    }
    if std::env::args().any(|a| a == "--decode-only") {
        // For profiling: decode the newest stored snapshot `--runs` times.
        let store = store::open(&url).await.unwrap();
        let listed = store.snapshots().await.unwrap();
        let bytes = store.read_snapshot(listed[0].id).await.unwrap();
        let held = store.read_snapshot_parts(listed[0].id).await.unwrap();
        let parts: Vec<store::SnapshotPart<'_>> = held
            .iter()
            .map(|(id, bytes)| store::SnapshotPart { id: *id, bytes })
            .collect();
        let mut took = Vec::new();
        for _ in 0..runs {
            let started = Instant::now();
            let world = chronoscope::engine::snapshot::decode(&bytes, &parts, &key).unwrap();
            took.push(started.elapsed());
            drop(world);
        }
        summary("decoding the newest snapshot", &took);
        return;
    }
    clear_snapshots(&path).await;

    if !std::env::args().any(|a| a == "--skip-full") {
        let full = time_opens(&url, &key, runs, n as u64 + 1).await;
        summary("engine open, full replay (no snapshot)", &full);
        if binary.exists() {
            let serve_full = time_serves(&binary, &url, &data_dir, runs);
            summary("serve to /readyz, full replay", &serve_full);
        }
    }

    let (engine, _) = open(&url, &key).await;
    let started = Instant::now();
    engine.write_snapshot().await.unwrap();
    let wrote = started.elapsed();
    drop(engine);
    let store = store::open(&url).await.unwrap();
    let listed = store.snapshots().await.unwrap();
    println!(
        "snapshot written in {:.0} ms, {:.1} MB",
        wrote.as_secs_f64() * 1e3,
        listed.first().map_or(0, |s| s.bytes) as f64 / 1e6
    );
    let started = Instant::now();
    let bytes = store.read_snapshot(listed[0].id).await.unwrap();
    let parts = store.read_snapshot_parts(listed[0].id).await.unwrap();
    let read = started.elapsed();
    let started = Instant::now();
    let world = chronoscope::engine::snapshot::decode_owned(bytes, &parts, &key).unwrap();
    println!(
        "of which: reading the bytes {:.0} ms, decoding {:.0} ms",
        read.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3
    );
    drop(world);

    let snap = time_opens(&url, &key, runs, n as u64 + 1).await;
    summary("engine open, snapshot + tail", &snap);
    if binary.exists() {
        let serve_snap = time_serves(&binary, &url, &data_dir, runs);
        summary("serve to /readyz, snapshot + tail", &serve_snap);
    } else {
        println!("(build target/release/chronoscope to also time `serve` to /readyz)");
    }

    let tail: usize = arg("--tail").and_then(|s| s.parse().ok()).unwrap_or(0);
    if tail > 0 {
        time_with_tail(&path, n, tail, runs, &binary, &data_dir).await;
    }
}

/// Times starts whose snapshot is `tail` records behind: on a copy of the file, with `tail`
/// more events appended after the snapshot.
async fn time_with_tail(
    path: &Path,
    n: usize,
    tail: usize,
    runs: usize,
    binary: &Path,
    data_dir: &Path,
) {
    let copy = PathBuf::from(format!("{}.tail", path.display()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
    }
    {
        use sqlx::Connection;
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        sqlx::query("VACUUM INTO ?1")
            .bind(copy.display().to_string())
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let url = format!("sqlite://{}", copy.display());
    let store = store::open(&url).await.unwrap();
    let key = LogKey::load(None, data_dir).unwrap();
    let ops: Vec<Op> = (n..n + tail)
        .map(|i| Op::AddEvents {
            timeline: TimelineId::primary(),
            events: vec![event(i, n + tail)],
            at: None,
        })
        .collect();
    for chunk in ops.chunks(5_000) {
        append_ops(&*store, &key, chunk).await.unwrap();
    }
    let seq = store.last_seq().await.unwrap();
    drop(store);
    let snap = time_opens(&url, &key, runs, seq).await;
    summary(
        &format!("engine open, snapshot + {tail}-record tail"),
        &snap,
    );
    if binary.exists() {
        let serve_snap = time_serves(binary, &url, data_dir, runs);
        summary(
            &format!("serve to /readyz, snapshot + {tail}-record tail"),
            &serve_snap,
        );
    }
}
