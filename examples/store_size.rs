//! What a SQLite store's file holds, before and after the tidying an open does: a measurement,
//! not a test.
//!
//! ```text
//! cargo run --example big_log -- --database sqlite:///tmp/big.db --events 1000000
//! cargo run --example store_size -- --db /tmp/big.db [--snapshots 3]
//! ```
//!
//! Opens an engine on `--db` (a full replay, or from its snapshot), writes `--snapshots`
//! snapshots as a long-running server would, then leaves a copy of the newest one incomplete,
//! as a crash in the middle of writing it would. It prints the file's make-up at each step (the
//! file and its WAL, the log's bytes, the snapshots' bytes, free pages), then opens the store
//! again and prints it once more.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::store;
use color_eyre::eyre::{Result, WrapErr, bail, eyre};
use sqlx::Connection;

fn usage() -> String {
    "usage: store_size --db FILE [--snapshots N]".to_string()
}

const MIB: f64 = 1024.0 * 1024.0;

/// The one number `sql` answers.
async fn number(conn: &mut sqlx::SqliteConnection, sql: &'static str) -> Result<i64> {
    Ok(sqlx::query_scalar(sql).fetch_one(conn).await?)
}

/// Prints the make-up of the file at `path`, under `label`.
async fn report(path: &Path, label: &str) -> Result<()> {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
    let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
    let log = number(
        &mut conn,
        "SELECT COALESCE(SUM(length(body)), 0) FROM op_log",
    )
    .await?;
    let records = number(&mut conn, "SELECT COUNT(*) FROM op_log").await?;
    let complete = number(
        &mut conn,
        "SELECT COALESCE(SUM(length(data)), 0) FROM snapshot_chunk \
         WHERE snapshot_id IN (SELECT id FROM snapshot WHERE complete = 1)",
    )
    .await?;
    let other = number(
        &mut conn,
        "SELECT COALESCE(SUM(length(data)), 0) FROM snapshot_chunk \
         WHERE snapshot_id NOT IN (SELECT id FROM snapshot WHERE complete = 1)",
    )
    .await?;
    let page = number(&mut conn, "PRAGMA page_size").await?;
    let free = number(&mut conn, "PRAGMA freelist_count").await?;
    let vacuum = number(&mut conn, "PRAGMA auto_vacuum").await?;
    conn.close().await?;
    println!(
        "{label}: file {:.1} MiB + WAL {:.1} MiB; log {records} records, {:.1} MiB; complete \
         snapshots {:.1} MiB; incomplete or orphaned chunks {:.1} MiB; free pages {:.1} MiB; \
         auto_vacuum {vacuum}",
        size(path) as f64 / MIB,
        size(&wal) as f64 / MIB,
        log as f64 / MIB,
        complete as f64 / MIB,
        other as f64 / MIB,
        (free * page) as f64 / MIB,
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    color_eyre::install()?;
    let mut db = None;
    let mut snapshots = 3usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => db = args.next().map(PathBuf::from),
            "--snapshots" => {
                let n = args.next().ok_or_else(|| eyre!(usage()))?;
                snapshots = n
                    .parse()
                    .wrap_err_with(|| format!("--snapshots: '{n}' is not a count"))?;
            }
            other => bail!("unknown argument '{other}'; {}", usage()),
        }
    }
    let db = db.ok_or_else(|| eyre!(usage()))?;
    let url = format!("sqlite://{}", db.display());
    report(&db, "before opening").await?;
    {
        let store = store::open(&url).await?;
        report(&db, "opened").await?;
        let engine = Engine::open(
            Arc::clone(&store),
            Arc::new(SystemClock),
            EngineConfig::default(),
            Seed::None,
        )
        .await?;
        for n in 1..=snapshots {
            engine.write_snapshot().await?;
            report(&db, &format!("snapshot {n} written")).await?;
        }
        drop(engine);
        drop(store);
    }
    // A crash in the middle of the next snapshot: a copy of the newest, never completed.
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&db);
    let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
    sqlx::query(
        "INSERT INTO snapshot (format, seq, bytes) SELECT format, seq, bytes FROM snapshot \
         WHERE complete = 1 ORDER BY id DESC LIMIT 1",
    )
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO snapshot_chunk (snapshot_id, n, data) SELECT \
         (SELECT MAX(id) FROM snapshot), n, data FROM snapshot_chunk WHERE snapshot_id = \
         (SELECT MAX(id) FROM snapshot WHERE complete = 1)",
    )
    .execute(&mut conn)
    .await?;
    conn.close().await?;
    report(&db, "after a crash while writing a snapshot").await?;
    let store = store::open(&url).await?;
    report(&db, "opened again").await?;
    drop(store);
    Ok(())
}
