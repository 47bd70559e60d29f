//! What open events streams (`GET /v1/monitor-events/stream`) cost a running server under
//! writes: a benchmark, not a test. Used by `scripts/monitor-load.sh --event-streams N`, which
//! starts the server on a big log.
//!
//! ```sh
//! cargo run --release --example event_streams -- --base http://127.0.0.1:8080 --token T \
//!     --pid SERVER_PID [--streams 20] [--seconds 25] [--every 2]
//! ```
//!
//! Two phases of `--seconds` each, with an event added to `primary` every `--every` seconds:
//! first the writes alone, then the same writes with `--streams` unfiltered streams of
//! `primary` open (opened at the phase's start; each reads everything it is sent). For each it
//! prints the server's CPU seconds (from `/proc/PID/stat`), its peak resident memory (sampled
//! every 50 ms from `/proc/PID/status`) and what the streams were told. What the streams add is
//! the second phase's CPU less the first's, and how far its memory rose above its start less
//! how far the first's did. The budget of issue 38: the streams add at most 200 MiB at peak and
//! 10 CPU-seconds; the program exits 1 past it, or when a stream missed a write.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;

mod support;
use support::{arg, cpu_seconds, open_stream, stream_client};

/// The most the streams may add (issue 38): resident memory at peak, CPU seconds.
const BUDGET_MIB: f64 = 200.0;
const BUDGET_CPU: f64 = 10.0;

/// The server's resident memory now, in MiB.
fn rss_mib(pid: &str) -> Result<f64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .ok_or("no VmRSS in /proc status")?
        .parse()?;
    Ok(kib / 1024.0)
}

/// What the streams of a phase were told.
#[derive(Default)]
struct Told {
    snapshots: AtomicU64,
    changed: AtomicU64,
    removed: AtomicU64,
    bytes: AtomicU64,
}

/// One phase's figures.
struct Phase {
    cpu: f64,
    before_mib: f64,
    peak_mib: f64,
}

/// The server and how to load it.
struct Load {
    http: reqwest::Client,
    base: String,
    token: String,
    pid: String,
    seconds: u64,
    every: u64,
}

/// The server's CPU seconds and resident memory now: where a phase counts from.
fn mark(pid: &str) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    Ok((cpu_seconds(pid)?, rss_mib(pid)?))
}

/// Adds an event to `primary` every `load.every` for `load.seconds`, sampling the server
/// meanwhile; answers the phase's figures counted from `from` (see [`mark`]) and how many
/// events were written.
async fn phase(load: &Load, from: (f64, f64)) -> Result<(Phase, u64), Box<dyn std::error::Error>> {
    let Load {
        http,
        base,
        token,
        pid,
        seconds,
        every,
    } = load;
    let (seconds, every) = (*seconds, *every);
    let (cpu_from, before_mib) = from;
    let peak = Arc::new(std::sync::Mutex::new(before_mib.max(rss_mib(pid)?)));
    let sampler = {
        let (peak, pid) = (Arc::clone(&peak), pid.to_owned());
        tokio::spawn(async move {
            loop {
                if let Ok(now) = rss_mib(&pid) {
                    let mut p = peak.lock().unwrap_or_else(|e| e.into_inner());
                    *p = p.max(now);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let began = Instant::now();
    let mut written = 0;
    while began.elapsed() < Duration::from_secs(seconds) {
        let body = serde_json::json!({
            "description": format!("Load write {}", ulid::Ulid::new()),
            "time": "1999-01-01T00:00:00Z",
            "location": "Load",
        });
        let resp = http
            .post(format!("{base}/v1/timeline/primary/events"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await?;
        if !resp.status().is_success() {
            return Err(format!("a write was refused: {}", resp.text().await?).into());
        }
        written += 1;
        tokio::time::sleep(Duration::from_secs(every)).await;
    }
    // The last write's change reaches the streams within a second.
    tokio::time::sleep(Duration::from_secs(1)).await;
    sampler.abort();
    let peak_mib = *peak.lock().unwrap_or_else(|e| e.into_inner());
    Ok((
        Phase {
            cpu: cpu_seconds(pid)? - cpu_from,
            before_mib,
            peak_mib,
        },
        written,
    ))
}

/// Opens `streams` unfiltered streams of `primary`, each read to the end by a task of its own.
async fn open_streams(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    streams: usize,
    told: &Arc<Told>,
) -> Result<(), Box<dyn std::error::Error>> {
    for _ in 0..streams {
        let resp = open_stream(
            http,
            &format!("{base}/v1/monitor-events/stream?timeline_id=primary"),
            token,
        )
        .await?;
        let told = Arc::clone(told);
        tokio::spawn(async move {
            let mut body = resp.bytes_stream();
            let mut line = Vec::new();
            while let Some(Ok(chunk)) = body.next().await {
                told.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                for &b in chunk.iter() {
                    if b != b'\n' {
                        line.push(b);
                        continue;
                    }
                    let counter = match line.as_slice() {
                        b"event: snapshot" => Some(&told.snapshots),
                        b"event: changed" => Some(&told.changed),
                        b"event: removed" => Some(&told.removed),
                        _ => None,
                    };
                    if let Some(c) = counter {
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                    line.clear();
                }
            }
        });
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = arg("--base").ok_or("--base URL is needed")?;
    let token = arg("--token").ok_or("--token T is needed")?;
    let pid = arg("--pid").ok_or("--pid PID is needed")?;
    let streams: usize = arg("--streams").map_or(Ok(20), |v| v.parse())?;
    let seconds: u64 = arg("--seconds").map_or(Ok(25), |v| v.parse())?;
    let every: u64 = arg("--every").map_or(Ok(2), |v| v.parse())?;
    let http = stream_client(streams)?;

    let load = Load {
        http: http.clone(),
        base: base.clone(),
        token: token.clone(),
        pid: pid.clone(),
        seconds,
        every,
    };
    let (alone, _) = phase(&load, mark(&pid)?).await?;

    // The second phase counts from before the streams open: opening them is part of their cost.
    let told = Arc::new(Told::default());
    let from = mark(&pid)?;
    let opening = Instant::now();
    open_streams(&http, &base, &token, streams, &told).await?;
    let opened_in = opening.elapsed();
    let (beside, written) = phase(&load, from).await?;
    let snapshots = told.snapshots.load(Ordering::Relaxed);
    let changed = told.changed.load(Ordering::Relaxed);

    println!(
        "{:<34} {:>12} {:>16} {:>14}",
        "phase", "server CPU s", "peak RSS MiB", "RSS at start MiB"
    );
    for (name, p) in [
        (format!("writes alone ({seconds} s)"), &alone),
        (format!("writes + {streams} streams ({seconds} s)"), &beside),
    ] {
        println!(
            "{name:<34} {:>12.2} {:>16.0} {:>14.0}",
            p.cpu, p.peak_mib, p.before_mib
        );
    }
    let added_cpu = beside.cpu - alone.cpu;
    // What each phase rose above its start (the server's memory settles between them).
    let added_mib = (beside.peak_mib - beside.before_mib) - (alone.peak_mib - alone.before_mib);
    println!(
        "streams told: {snapshots} snapshots, {changed} changed, {} removed, {:.1} MB; {streams} opened in {:.2} s",
        told.removed.load(Ordering::Relaxed),
        told.bytes.load(Ordering::Relaxed) as f64 / 1e6,
        opened_in.as_secs_f64()
    );
    println!(
        "the streams added {added_cpu:.2} CPU s (budget {BUDGET_CPU}) and {added_mib:.0} MiB at peak (budget {BUDGET_MIB})"
    );
    let mut failed = Vec::new();
    if snapshots < streams as u64 {
        failed.push(format!(
            "only {snapshots} of {streams} streams sent a snapshot"
        ));
    }
    if changed < written * streams as u64 {
        failed.push(format!(
            "{changed} changes told, fewer than {written} writes × {streams} streams"
        ));
    }
    if added_cpu > BUDGET_CPU || added_mib > BUDGET_MIB {
        failed.push("over budget".into());
    }
    if failed.is_empty() {
        println!("within budget");
        Ok(())
    } else {
        Err(failed.join("; ").into())
    }
}
