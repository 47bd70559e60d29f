//! What open monitor streams cost a running server: a benchmark, not a test. Used by
//! `scripts/monitor-load.sh --streams N`, which starts the server.
//!
//! ```sh
//! cargo run --release --example monitor_streams -- --base http://127.0.0.1:8080 --token T \
//!     --pid SERVER_PID [--metrics http://127.0.0.1:9464/metrics] [--streams 1000] [--idle 12]
//! ```
//!
//! Opens `--streams` streams of `primary` (`GET /v1/monitor-timeline/stream`), waits for each
//! one's first snapshot, then measures four phases: nothing happening for `--idle` seconds;
//! three item registrations; three events added to another timeline; three events added to
//! `primary` (none of them changes an anomaly). The writes are a second apart, and each phase
//! ends `--settle` (3) seconds after its last write. For each phase it prints the server's CPU
//! time (from `/proc/PID/stat`), the monitor scans it counted (`chronoscope_monitor_scans_total`,
//! when `--metrics` is given and the server has the counter) and the stream events delivered.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;

mod support;
use support::{arg, cpu_seconds, open_stream, stream_client};

/// The scans counter, when the server exposes it.
async fn scans(http: &reqwest::Client, metrics: Option<&str>) -> Option<f64> {
    let text = http.get(metrics?).send().await.ok()?.text().await.ok()?;
    text.lines()
        .find(|l| l.starts_with("chronoscope_monitor_scans_total"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = arg("--base").ok_or("--base URL is needed")?;
    let token = arg("--token").ok_or("--token T is needed")?;
    let pid = arg("--pid").ok_or("--pid PID is needed")?;
    let metrics = arg("--metrics");
    let streams: usize = arg("--streams").map_or(Ok(1000), |v| v.parse())?;
    let idle: u64 = arg("--idle").map_or(Ok(12), |v| v.parse())?;
    let settle: u64 = arg("--settle").map_or(Ok(3), |v| v.parse())?;
    let http = stream_client(streams)?;

    let opened = Arc::new(AtomicU64::new(0));
    let events = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let cpu_before_open = cpu_seconds(&pid)?;
    for _ in 0..streams {
        let resp = open_stream(
            &http,
            &format!("{base}/v1/monitor-timeline/stream?timeline_id=primary"),
            &token,
        )
        .await?;
        let (opened, events) = (Arc::clone(&opened), Arc::clone(&events));
        tokio::spawn(async move {
            let mut body = resp.bytes_stream();
            let mut first = true;
            while let Some(Ok(chunk)) = body.next().await {
                let text = String::from_utf8_lossy(&chunk);
                let n = text.matches("event:").count() as u64;
                if n == 0 {
                    continue;
                }
                if first {
                    first = false;
                    opened.fetch_add(1, Ordering::Relaxed);
                    events.fetch_add(n - 1, Ordering::Relaxed);
                } else {
                    events.fetch_add(n, Ordering::Relaxed);
                }
            }
        });
    }
    while opened.load(Ordering::Relaxed) < streams as u64 {
        if started.elapsed() > Duration::from_secs(900) {
            return Err("the streams did not all start within 15 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "{streams} streams open after {:.1} s, {:.1} CPU-s of the server",
        started.elapsed().as_secs_f64(),
        cpu_seconds(&pid)? - cpu_before_open
    );
    tokio::time::sleep(Duration::from_secs(settle)).await;

    let post = |path: String, body: serde_json::Value| {
        let http = http.clone();
        let token = token.clone();
        let base = base.clone();
        async move {
            let resp = http
                .post(format!("{base}{path}"))
                .bearer_auth(&token)
                .json(&body)
                .send()
                .await?;
            let status = resp.status();
            let text = resp.text().await?;
            if !status.is_success() {
                return Err(format!("POST {path}: {status} {text}").into());
            }
            Ok::<serde_json::Value, Box<dyn std::error::Error>>(
                serde_json::from_str(&text).unwrap_or_default(),
            )
        }
    };
    let other = post(
        "/v1/timelines".into(),
        serde_json::json!({"name": "Elsewhere", "description": "beside the watched one"}),
    )
    .await?;
    let other = other["timeline_id"]
        .as_str()
        .or_else(|| other["id"].as_str())
        .ok_or("the new timeline's id")?
        .to_owned();
    tokio::time::sleep(Duration::from_secs(settle)).await;

    println!(
        "{:<40} {:>12} {:>8} {:>14}",
        "phase", "server CPU s", "scans", "stream events"
    );
    for phase in [
        "idle",
        "3 item registrations",
        "3 events elsewhere",
        "3 events in primary",
    ] {
        let cpu = cpu_seconds(&pid)?;
        let counted = scans(&http, metrics.as_deref()).await;
        let told = events.load(Ordering::Relaxed);
        let began = Instant::now();
        for i in 0..3 {
            let event = |n: &str| {
                serde_json::json!({"description": format!("{n} {i}"), "time": "1999-01-01T00:00:00Z",
                    "location": "Elsewhere"})
            };
            match phase {
                "idle" => break,
                "3 item registrations" => {
                    post(
                        "/v1/items".into(),
                        serde_json::json!({"description": format!("Compass {}", ulid::Ulid::new())}),
                    )
                    .await?;
                }
                "3 events elsewhere" => {
                    post(format!("/v1/timeline/{other}/events"), event("Elsewhere")).await?;
                }
                _ => {
                    post("/v1/timeline/primary/events".into(), event("Uncaused")).await?;
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let wait = if phase == "idle" { idle } else { settle };
        tokio::time::sleep(Duration::from_secs(wait)).await;
        let scanned = match (counted, scans(&http, metrics.as_deref()).await) {
            (Some(a), Some(b)) => format!("{}", b - a),
            _ => "n/a".into(),
        };
        println!(
            "{:<40} {:>12.2} {:>8} {:>14}",
            format!("{phase} ({:.0} s)", began.elapsed().as_secs_f64()),
            cpu_seconds(&pid)? - cpu,
            scanned,
            events.load(Ordering::Relaxed) - told
        );
    }
    Ok(())
}
