//! Writes a big op log for load runs: the `primary` timeline with `--events N` events (a million
//! by default) in 1,000 causal chains, a fixed point every 997 events, a standing causal-order
//! paradox every 10,007 and one causal loop at the end, so a monitor scan has real work to do.
//!
//! ```text
//! cargo run --release --example big_log -- --database sqlite:///tmp/big.db --data-dir /tmp/data \
//!     --events 1000000
//! ```
//!
//! The records are chained with the log key of `--data-dir` (made when missing), the one
//! `chronoscope --data-dir DIR serve` will check them with.
//!
//! The store must be new (empty) or hold only what this example wrote before; the events go in
//! as `AddEvents` records of 10,000 events each (`--per-record N` for another size: 1 makes a
//! log of a million small records, as a busy server's is), appended straight to the log, so a
//! server that opens the store afterwards replays them like any other history.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use chronoscope::engine::{Engine, EngineConfig, Op, Seed, SystemClock, append_ops};
use chronoscope::model::{Event, EventId, EventStatus, TimelineId};
use chronoscope::store::LogKey;
use color_eyre::eyre::{Result, WrapErr, bail, eyre};

const CHAINS: usize = 1_000;
/// Events per append: one transaction, whatever the records' size.
const PER_APPEND: usize = 10_000;
const CITIES: [&str; 8] = [
    "Paris", "London", "Geneva", "Vienna", "Prague", "Tokyo", "Lima", "Boston",
];
const PLACES: [&str; 5] = ["Observatory", "Harbour", "Library", "Market", "Tower"];

fn event_id(i: usize) -> EventId {
    EventId::from_ulid(ulid::Ulid::from((0x0190_0000_0000u128 << 80) | i as u128))
}

/// Event `i` of `n`: a minute after the one before, from 2000-01-01.
fn event(i: usize, n: usize) -> Event {
    let start = DateTime::<Utc>::from_timestamp(946_684_800, 0).unwrap_or_default();
    let mut causes = Vec::new();
    if i >= CHAINS {
        causes.push(event_id(i - CHAINS));
    }
    // A cause named ahead of its event: a standing paradox the monitor reports.
    if i % 10_007 == 5_000 && i + 10 < n {
        causes.push(event_id(i + 10));
    }
    // The last three events close a loop.
    if n >= 3 && i + 3 == n {
        causes.push(event_id(n - 1));
    }
    if n >= 3 && i + 1 == n {
        causes.push(event_id(n - 3));
    }
    Event {
        id: event_id(i),
        description: format!("Event {i} of chain {}", i % CHAINS),
        time: start + chrono::Duration::minutes(i as i64),
        location: format!(
            "{} {}",
            CITIES[i % CITIES.len()],
            PLACES[(i / CITIES.len()) % PLACES.len()]
        ),
        causes,
        fixed_point: i.is_multiple_of(997),
        status: EventStatus::OnSchedule,
        supersedes: None,
        superseded_by: None,
        lineage: event_id(i),
        author: None,
    }
}

fn usage() -> String {
    "usage: big_log --database URL --data-dir DIR [--events N] [--per-record N]".to_string()
}

#[tokio::main]
async fn main() -> Result<()> {
    color_eyre::install()?;
    let mut database = None;
    let mut data_dir = None;
    let mut events = 1_000_000usize;
    let mut per_record = PER_APPEND;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--database" => database = args.next(),
            "--data-dir" => data_dir = args.next(),
            "--events" => {
                let n = args.next().ok_or_else(|| eyre!(usage()))?;
                events = n
                    .parse()
                    .wrap_err_with(|| format!("--events: '{n}' is not a count"))?;
            }
            "--per-record" => {
                let n = args.next().ok_or_else(|| eyre!(usage()))?;
                per_record = n
                    .parse()
                    .ok()
                    .filter(|&n| (1..=PER_APPEND).contains(&n))
                    .ok_or_else(|| {
                        eyre!("--per-record: '{n}' is not a count from 1 to {PER_APPEND}")
                    })?;
            }
            "-h" | "--help" => {
                println!("{}", usage());
                return Ok(());
            }
            other => bail!("unknown argument '{other}'; {}", usage()),
        }
    }
    let database = database.ok_or_else(|| eyre!(usage()))?;
    let data_dir = data_dir.ok_or_else(|| eyre!(usage()))?;
    let log_key = LogKey::load(None, std::path::Path::new(&data_dir))?;

    let store = chronoscope::store::open(&database).await?;
    // Opening an engine writes the `primary` timeline into an empty store.
    Engine::open(
        Arc::clone(&store),
        Arc::new(SystemClock),
        EngineConfig {
            log_key: log_key.clone(),
            ..EngineConfig::default()
        },
        Seed::None,
    )
    .await?;
    let started = std::time::Instant::now();
    for first in (0..events).step_by(PER_APPEND) {
        let ops: Vec<Op> = (first..(first + PER_APPEND).min(events))
            .step_by(per_record)
            .map(|from| Op::AddEvents {
                timeline: TimelineId::primary(),
                events: (from..(from + per_record).min(events))
                    .map(|i| event(i, events))
                    .collect(),
                at: None,
            })
            .collect();
        append_ops(&*store, &log_key, &ops).await?;
    }
    println!(
        "wrote {events} events to {} in {:.1} s (log head {})",
        store.describe(),
        started.elapsed().as_secs_f64(),
        store.last_seq().await?
    );
    Ok(())
}
