//! How long a change takes to reach a client of `GET /v1/monitor-timeline/stream`: a benchmark,
//! not a test (DESIGN's budget: ≤ 1 s after it was acknowledged, whatever the tick).
//!
//! ```sh
//! cargo run --release --example push_latency -- [--changes 200] [--pause-ms 200] [--db FILE]
//! ```
//!
//! Serves an engine (SQLite in a temporary directory, or `--db FILE`) on a loopback port, opens
//! the stream of `primary` with `RemoteClient` (as the remote dashboard does), then, `--changes`
//! times, another client makes an anomaly appear (an event moved before its cause) or resolve
//! (moved back after it), and the time from the write's acknowledgement to the change arriving
//! is recorded. Prints the median, p99 and worst.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chronoscope::auth::{Scopes, Secret, issue_token};
use chronoscope::client::RemoteClient;
use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::model::{EventId, TimelineId, parse_instant};
use chronoscope::server::ServerConfig;
use chronoscope::service::*;
use futures::StreamExt;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let changes: usize = arg("--changes").map_or(Ok(200), |v| v.parse())?;
    // Changes back to back are coalesced (a stream rescans at most every 100 ms); with a pause
    // longer than that each change is seen on its own.
    let pause = Duration::from_millis(arg("--pause-ms").map_or(Ok(200), |v| v.parse())?);
    let dir = tempfile_dir()?;
    let db = arg("--db").map_or_else(|| dir.join("push.db"), std::path::PathBuf::from);
    let store = chronoscope::store::open(&format!("sqlite://{}", db.display())).await?;
    let engine = Engine::open(
        store,
        Arc::new(SystemClock),
        EngineConfig::default(),
        Seed::None,
    )
    .await?;
    let secret = Secret::from_bytes("push latency benchmark secret, not for use")?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(chronoscope::server::run(
        listener,
        ServerConfig::new(secret.clone()),
        Arc::clone(&engine),
        std::future::pending(),
    ));
    let client = |who: &str| -> Result<RemoteClient, Box<dyn std::error::Error>> {
        let token = issue_token(
            &secret,
            who,
            &Scopes::parse("read write"),
            Duration::from_secs(3600),
        )?;
        Ok(RemoteClient::new(&base, token)?)
    };
    let (ada, bob) = (client("ada")?, client("bob")?);
    let primary = TimelineId::primary();
    let at = |s: &str| parse_instant("t", s);
    // An event in Turin at `time`, caused by `causes`.
    let in_turin = |description: &str, time: &str, causes: Vec<EventId>| {
        Ok::<_, Box<dyn std::error::Error>>(NewEvent {
            description: description.into(),
            time: at(time)?,
            location: "Turin".into(),
            causes,
            fixed_point: false,
            safety_check: false,
        })
    };
    let treaty = in_turin("Treaty", "1860-06-01T12:00:00Z", vec![])?;
    let cause = bob.add_event(&primary, treaty).await?;
    let celebrated = in_turin(
        "Treaty celebrated",
        "1861-06-01T12:00:00Z",
        vec![cause.event_id.clone()],
    )?;
    let effect = bob.add_event(&primary, celebrated).await?;
    let mut stream = ada
        .watch_monitor(MonitorWatch {
            timeline_id: primary.clone(),
            after: None,
        })
        .await?;
    stream.next().await.ok_or("the stream ended at once")??; // the snapshot
    let mut current = effect.event_id.clone();
    let mut waits = Vec::with_capacity(changes);
    for i in 0..changes {
        tokio::time::sleep(pause).await;
        // Odd changes move the celebration before the treaty (a paradox appears), even ones
        // move it back (it resolves).
        let time = if i % 2 == 0 {
            "1855-06-01T12:00:00Z"
        } else {
            "1861-06-01T12:00:00Z"
        };
        let made = bob
            .manipulate_event(ManipulateRequest {
                timeline_id: Some(primary.clone()),
                event_id: current.clone(),
                new_outcome: NewOutcome {
                    description: None,
                    changes: vec![OutcomeChange {
                        action: None,
                        time: Some(at(time)?),
                    }],
                },
                safety_check: false,
            })
            .await?;
        let acknowledged = Instant::now();
        current = made.new_event_id;
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await?
            .ok_or("the stream ended")??;
        waits.push(acknowledged.elapsed());
        let expected = if i % 2 == 0 { "appeared" } else { "resolved" };
        if event.change.name() != expected {
            return Err(format!("change {i}: expected {expected}, got {:?}", event.change).into());
        }
    }
    waits.sort();
    println!(
        "{changes} changes {} ms apart, acknowledgement to arrival over SSE: median {:.1} ms, p99 {:.1} ms, worst {:.1} ms",
        pause.as_millis(),
        percentile(&waits, 0.5).as_secs_f64() * 1e3,
        percentile(&waits, 0.99).as_secs_f64() * 1e3,
        waits.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

/// A fresh directory under the system's temporary directory.
fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("chronoscope-push-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
