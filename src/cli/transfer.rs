//! `timelines export` and `timelines import`.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::output::Output;
use crate::error::ServiceError;
use crate::model::TimelineId;
use crate::service::prelude::*;
use crate::service::{ImportReport, ImportRequest};

/// Writes timeline `id` as a world file to `to`, or to `out` when none is given.
pub async fn export(
    service: &dyn TimelineService,
    id: &TimelineId,
    to: Option<&Path>,
    out: &mut Output<'_>,
) -> Result<(), ServiceError> {
    let file = service.export_timeline(id).await?;
    let text = file
        .to_text()
        .map_err(|e| ServiceError::Internal(format!("cannot write the world file: {e}")))?;
    let Some(to) = to else {
        return out.raw(text.as_bytes());
    };
    write_replacing(to, text.as_bytes())
        .map_err(|e| ServiceError::invalid("to", format!("cannot write {}: {e}", to.display())))?;
    let events = file.timelines.iter().map(|t| t.events.len()).sum::<usize>();
    let summary = serde_json::json!({ "exported": id, "to": to, "events": events });
    out.print(&summary, |_| {
        format!(
            "exported timeline {id} ({events} event versions) to {}\n",
            to.display()
        )
    })
}

/// Writes `bytes` to `path` through a temporary file beside it, renamed into place once
/// complete and on disk: a reader never sees half a file.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".chronoscope-export-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Creates the timelines of the world file at `path` (`-`: standard input).
pub async fn import(
    service: &dyn TimelineService,
    path: &Path,
    safety_check: bool,
    out: &mut Output<'_>,
) -> Result<(), ServiceError> {
    let unreadable = |e: std::io::Error| {
        ServiceError::invalid("file", format!("cannot read {}: {e}", path.display()))
    };
    let document = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(unreadable)?;
        text
    } else {
        std::fs::read_to_string(path).map_err(unreadable)?
    };
    let bar: Arc<OnceLock<indicatif::ProgressBar>> = Arc::new(OnceLock::new());
    let progress = std::io::stderr().is_terminal().then(|| {
        let bar = Arc::clone(&bar);
        let report: crate::service::ImportProgress = Arc::new(move |done, total| {
            let bar = bar.get_or_init(|| progress_bar(total));
            bar.set_position(done);
            if done == total {
                // Checked: what is left is writing the batch and applying it.
                bar.set_message("writing");
                bar.enable_steady_tick(std::time::Duration::from_millis(200));
            }
        });
        report
    });
    let imported = service
        .import_timelines(ImportRequest {
            document,
            safety_check,
            progress,
        })
        .await;
    if let Some(bar) = bar.get() {
        bar.finish_and_clear();
    }
    out.print(&imported?, report)
}

/// A bar of `total` events with the rate and the time left.
fn progress_bar(total: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    let style = indicatif::ProgressStyle::with_template(
        "{msg} {bar:40} {human_pos}/{human_len} events, {per_sec}, {eta} left",
    );
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar.set_message("checking");
    bar
}

/// What an import created, for a person.
fn report(r: &ImportReport) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "imported {} timeline{}, {} event versions\n",
        r.timelines.len(),
        if r.timelines.len() == 1 { "" } else { "s" },
        r.events
    );
    for t in &r.timelines {
        let from = if t.from == t.id {
            String::new()
        } else {
            format!(" (was {} in the file)", t.from)
        };
        let _ = writeln!(s, "  {}  {}{from}: {} events", t.id, t.name, t.events);
        for p in &t.paradoxes {
            let _ = writeln!(s, "    paradox: {}", p.description);
        }
    }
    if !r.remapped.is_empty() {
        let _ = writeln!(s, "ids taken here, remapped (old -> new):");
        for m in &r.remapped {
            let within = m
                .timeline
                .as_ref()
                .map(|t| format!(" in {t}"))
                .unwrap_or_default();
            let _ = writeln!(s, "  {} {} -> {}{within}", m.kind, m.from, m.to);
        }
    }
    s
}
