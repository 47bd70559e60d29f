//! `chronoscope backup`, `restore` and `verify --backup`: the operator's side of
//! `chronoscope::store::backup` (progress on a terminal, Ctrl-C, what is printed).

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use color_eyre::eyre::WrapErr;
use indicatif::{ProgressBar, ProgressStyle};

use chronoscope::cli::{BackupArgs, Global, RestoreArgs};
use chronoscope::error::ServiceError;
use chronoscope::store::StoreError;
use chronoscope::store::backup::{self, BackupError, Summary};

use crate::{Failed, data_dir, database_url, log_key, open_store, store_key_witness};

/// A progress bar with rate and time left on a terminal; nothing on a pipe or with `--json`.
fn progress(global: &Global, doing: &str) -> ProgressBar {
    if global.json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{msg} [{wide_bar}] {human_pos}/{human_len} records  {rate}  {eta} left",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .with_key(
        "rate",
        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0}/s", state.per_sec());
        },
    )
    .progress_chars("=> ");
    let bar = ProgressBar::new(0).with_style(style);
    bar.set_message(doing.to_owned());
    bar
}

/// A flag Ctrl-C sets: the work stops at its next batch and cleans up after itself (a partial
/// backup removed, a restore rolled back).
fn stopped_by_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let set = Arc::clone(&stop);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            set.store(true, Ordering::Relaxed);
        }
    });
    stop
}

/// How a failed backup, check or restore is said and what status it exits with: a damaged or
/// foreign backup and a log that does not verify are findings (1); a wrong file name, a store
/// that holds records, an interrupted run are the operator's to change (2).
fn failed(e: BackupError) -> Failed {
    match e {
        BackupError::Damaged { .. }
        | BackupError::OtherKey { .. }
        | BackupError::Refused(_)
        | BackupError::Interrupted(_) => Failed::Finding(e.to_string()),
        BackupError::Io { .. } => Failed::Misconfigured(e.to_string()),
        BackupError::Store(e @ StoreError::NotEmpty { .. }) => {
            Failed::User(ServiceError::Conflict(e.to_string()))
        }
        BackupError::Store(e) => crate::failed(e.into()),
    }
}

/// Prints `summary` as `--json` asks, or as one line after `said`.
fn print(global: &Global, said: &str, summary: &Summary) -> Result<(), Failed> {
    if global.json {
        let mut value = serde_json::to_value(summary).wrap_err("cannot encode the summary")?;
        value["records_per_second"] = serde_json::json!(summary.rate().round());
        println!("{value:#}");
    } else {
        println!(
            "{said} {}: {} ({:.1} s, {:.0} records/s, {:.0} MB/s)",
            summary.file,
            summary.describe(),
            summary.seconds,
            summary.rate(),
            summary.bytes as f64 / 1e6 / summary.seconds.max(1e-9)
        );
    }
    Ok(())
}

/// `chronoscope backup FILE`.
pub(crate) async fn backup(global: &Global, args: BackupArgs) -> Result<(), Failed> {
    let dir = data_dir(global)?;
    let store = open_store(&database_url(global, &dir)).await?;
    let key = log_key(global, &dir)?;
    let by = crate::local_traveller(global)?.to_string();
    let bar = progress(global, "backing up");
    let stop = stopped_by_ctrl_c();
    let made = backup::backup(
        store.as_ref(),
        &key,
        &args.file,
        &by,
        args.replace,
        &bar,
        &stop,
    )
    .await;
    bar.finish_and_clear();
    print(global, "wrote", &made.map_err(failed)?)
}

/// `chronoscope verify --backup FILE`: the log key is all it needs.
pub(crate) async fn verify(global: &Global, file: &Path) -> Result<(), Failed> {
    let dir = data_dir(global)?;
    let key = log_key(global, &dir)?;
    let bar = progress(global, "verifying");
    let stop = stopped_by_ctrl_c();
    let checked = backup::verify(file, &key, &bar, &stop).await;
    bar.finish_and_clear();
    match checked {
        Ok(summary) => print(global, "verified", &summary),
        Err(e) => {
            if global.json {
                let report = serde_json::json!({
                    "file": file.display().to_string(),
                    "sound": false,
                    "problem": e.to_string(),
                });
                println!("{report:#}");
            }
            Err(failed(e))
        }
    }
}

/// `chronoscope restore FILE`.
pub(crate) async fn restore(global: &Global, args: RestoreArgs) -> Result<(), Failed> {
    let (store, key, witness) = store_key_witness(global).await?;
    let by = crate::local_traveller(global)?.to_string();
    let bar = progress(global, "restoring");
    let stop = stopped_by_ctrl_c();
    let restored = backup::restore(store.as_ref(), &key, &args.file, &bar, &stop).await;
    bar.finish_and_clear();
    let restored = restored.map_err(failed)?;
    tracing::info!(
        store = %store.describe(),
        file = %args.file.display(),
        records = restored.summary.records,
        by = %by,
        "restored the store from a backup"
    );
    if let Some(witness) = &witness {
        let restoration = chronoscope::store::witness::Restoration {
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            by,
            file: args.file.display().to_string(),
            made_at: restored.summary.made_at.clone(),
            made_by: restored.summary.made_by.clone(),
            source: restored.summary.source.clone(),
            records: restored.summary.records,
        };
        witness
            .restored(restored.meta.from, restored.head, restoration)
            .map_err(|e| Failed::Finding(e.to_string()))?;
    }
    print(
        global,
        &format!("restored {} from", store.describe()),
        &restored.summary,
    )
}
