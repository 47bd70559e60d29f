//! The anomaly monitor: the full paradox check plus operational checks (a window closing
//! within 10 % of its length, orphaned events, failed automation). Pure: no I/O, no clock.
//!
//! Every anomaly's id is derived from its cause ([`crate::model::AnomalyId::derived`]), so the
//! same cause gives the same id on every call and on every replica.

#[cfg(test)]
mod tests;

use std::cmp::Reverse;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::model::{
    AnomalyId, EventId, History, Instant, TimeRange, Timeline, TimelineStatus, format_instant,
};
use crate::paradox::{self, Paradox, Subject};

/// How serious an anomaly is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Needs attention soon.
    Warning,
    /// The timeline is unstable.
    Critical,
}

/// What an anomaly is about.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    /// A paradox of the given kind.
    Paradox(paradox::ParadoxKind),
    /// The window closes within 10 % of its length.
    WindowClosing,
    /// An event names a cause the timeline does not have.
    OrphanedEvent,
    /// An automated action failed.
    AutomationFailed,
    /// A record of the stored log failed a `detect-tampering` scan: it counts for every
    /// timeline (a changed record cannot be trusted to say what it touches) until a full scan
    /// no longer finds it.
    LogTampered,
}

/// One anomaly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Anomaly {
    /// Stable: the same cause gives the same id across calls.
    pub anomaly_id: AnomalyId,
    /// A sentence for a person.
    pub description: String,
    /// What it is about.
    pub kind: AnomalyKind,
    /// How serious.
    pub severity: Severity,
    /// Ids of the events, items, scripts or timeline involved.
    pub subjects: Vec<String>,
    /// When it was first seen.
    #[schema(value_type = String, format = DateTime)]
    pub detected_at: Instant,
}

/// An automated action that failed, as the automation log recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct AutomationFailure {
    /// The script or schedule that ran it.
    pub source: String,
    /// The event the action was given.
    pub event_id: EventId,
    /// Why it failed.
    pub message: String,
    /// When.
    pub at: Instant,
}

/// What a full rescan of a timeline's events finds. It depends on the events alone, not on
/// who looks, so it can be kept while the timeline's history is unchanged.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Causal-order, grandfather and loop paradoxes, sorted.
    paradoxes: Vec<Paradox>,
    /// (effect, cause) slots: the cause is not a current event.
    orphans: Vec<(u32, u32)>,
}

impl Graph {
    /// Rescans `history` (grows with the timeline).
    pub fn of(history: &History) -> Self {
        let (paradoxes, found) = paradox::standing(history);
        let mut orphans = found.orphans;
        orphans.sort_unstable();
        Self { paradoxes, orphans }
    }
}

/// A traveller whose items may be in the scanned timeline, and where they are.
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    /// The traveller, their position and their items, in the scanned timeline.
    pub subject: Subject<'a>,
    /// When they arrived in the scanned timeline, if they are in it (their item paradoxes
    /// appear with the journey that brought the items).
    pub arrived_at: Option<Instant>,
}

/// What one scan reads. Nothing here depends on who asks: every viewer of a timeline gets the
/// same anomalies, ids and kinds.
#[derive(Clone, Copy, Debug)]
pub struct Scan<'a> {
    /// The timeline's attributes.
    pub timeline: &'a Timeline,
    /// Its events.
    pub history: &'a History,
    /// What a rescan of `history` found ([`Graph::of`]).
    pub graph: &'a Graph,
    /// Every traveller with items in the timeline (item paradoxes are the timeline's).
    pub owners: &'a [Owner<'a>],
    /// The wall clock now (for the window check).
    pub now: Instant,
    /// When each event was last added, manipulated or restored by a traveller or automation
    /// (events missing here are history as shipped, there since the timeline was made).
    pub touched: &'a imbl::HashMap<EventId, Instant>,
    /// Only look at events in this range.
    pub range: Option<&'a TimeRange>,
    /// Failed automation in this timeline, everyone's.
    pub failures: &'a [AutomationFailure],
    /// The timeline's isolations: what they sever or contain is not an anomaly.
    pub isolated: Option<&'a paradox::Isolated>,
}

/// Scans a timeline.
///
/// Each anomaly's `detected_at` comes from the log, so every replica and every restart gives the
/// same: when the latest change to an event it involves was made (or the timeline was made,
/// for history as shipped), when the items' journey arrived, when the window entered its last
/// tenth, when the automation failed.
///
/// Paradoxes come from a full rescan of the timeline as it stands (critical); with a `range`,
/// only those involving an event in it are kept (item paradoxes involve no event and are
/// always kept). Then the operational checks, each a warning.
pub fn scan(scan: &Scan<'_>) -> Vec<Anomaly> {
    let h = scan.history;
    let in_range = |id: &EventId| {
        scan.range
            .is_none_or(|r| h.current(id).is_some_and(|e| r.contains(&e.time)))
    };
    let mut out = Vec::new();
    let paradoxes: std::borrow::Cow<'_, [Paradox]> = match scan.isolated {
        Some(i) if !i.is_empty() => {
            paradox::without_isolated(h, Some(i), scan.graph.paradoxes.clone()).into()
        }
        _ => scan.graph.paradoxes.as_slice().into(),
    };
    for p in paradoxes.iter() {
        if !p.events.is_empty() && !p.events.iter().any(in_range) {
            continue;
        }
        out.push(paradox_anomaly(p, appeared(scan, p.events.iter())));
    }
    out.extend(item_anomalies(scan.timeline, scan.owners));
    out.extend(window_closing(scan));
    // One anomaly per orphaned event, naming every cause it misses.
    for group in scan.graph.orphans.chunk_by(|a, b| a.0 == b.0) {
        let event = h.view(group[0].0);
        if !in_range(event.id) {
            continue;
        }
        let missing: Vec<&EventId> = group.iter().map(|&(_, c)| h.view(c).id).collect();
        let description = format!(
            "'{}' ({}) at {} names {} as {}, but {} not an event of this timeline.",
            event.event.map_or("", |e| e.description.as_str()),
            event.id,
            format_instant(&event.time),
            list(&missing),
            if missing.len() == 1 {
                "a cause"
            } else {
                "causes"
            },
            if missing.len() == 1 {
                "it is"
            } else {
                "they are"
            },
        );
        let subjects: Vec<String> = std::iter::once(event.id)
            .chain(missing.iter().copied())
            .map(ToString::to_string)
            .collect();
        out.push(anomaly(
            AnomalyKind::OrphanedEvent,
            Severity::Warning,
            "orphaned_event",
            description,
            subjects,
            appeared(
                scan,
                std::iter::once(event.id).chain(missing.iter().copied()),
            ),
        ));
    }
    for failure in scan.failures {
        out.push(anomaly(
            AnomalyKind::AutomationFailed,
            Severity::Warning,
            &format!("automation_failed:{}", format_instant(&failure.at)),
            format!(
                "{} failed on event {} at {}: {}",
                failure.source,
                failure.event_id,
                format_instant(&failure.at),
                failure.message
            ),
            vec![failure.source.clone(), failure.event_id.to_string()],
            failure.at,
        ));
    }
    sorted(out)
}

/// The item paradoxes of `owners`' items in `timeline`: the part of a [`scan`] that reads
/// items and positions only, never the timeline's events.
pub fn item_anomalies(timeline: &Timeline, owners: &[Owner<'_>]) -> Vec<Anomaly> {
    let mut out = Vec::new();
    for owner in owners {
        for p in paradox::standing_items(&owner.subject) {
            let at = timeline.created_at;
            out.push(paradox_anomaly(
                &p,
                owner.arrived_at.map_or(at, |a| a.max(at)),
            ));
        }
    }
    out
}

/// `found` in the order a [`scan`] answers, each anomaly once: critical first, then by kind
/// and subjects, so the same timeline lists the same way.
pub fn sorted(mut out: Vec<Anomaly>) -> Vec<Anomaly> {
    out.sort_by(|a, b| {
        (Reverse(a.severity), a.kind, &a.subjects, &a.description).cmp(&(
            Reverse(b.severity),
            b.kind,
            &b.subjects,
            &b.description,
        ))
    });
    out.dedup_by(|a, b| a.anomaly_id == b.anomaly_id);
    out
}

/// The tamper findings the scans recorded and no full scan has cleared since, each a
/// critical anomaly of every timeline. Its id is derived from the record's seq alone, so a
/// finding keeps its id across scans and timelines; its words name no timeline or operation
/// (the monitor answers every viewer alike, and a record that fails cannot be trusted anyway).
/// `findings`: each with when a scan first found it.
pub fn log_tampered<'f>(
    findings: impl IntoIterator<Item = (&'f crate::service::TamperFinding, Instant)>,
    not_listed: u64,
) -> Vec<Anomaly> {
    let mut latest = None;
    let mut found: Vec<Anomaly> = findings
        .into_iter()
        .map(|(f, found_at)| {
            latest = latest.max(Some(found_at));
            let kind = match f.kind {
                crate::service::FindingKind::Modified => "modified",
                crate::service::FindingKind::Gap => "gap",
                crate::service::FindingKind::Undecodable => "undecodable",
                crate::service::FindingKind::Truncated => "truncated",
                crate::service::FindingKind::KeyMismatch => "key_mismatch",
                crate::service::FindingKind::Rechained => "rechained",
            };
            Anomaly {
                anomaly_id: AnomalyId::derived(&format!("log_tampered|{}", f.seq)),
                description: format!(
                    "The stored log was tampered with ({kind}): {}. It counts for every \
                     timeline until a full detect-tampering scan no longer finds it.",
                    f.reason
                ),
                kind: AnomalyKind::LogTampered,
                severity: Severity::Critical,
                subjects: vec![format!("log record {}", f.seq)],
                detected_at: found_at,
            }
        })
        .collect();
    // The records past the listed ones: one anomaly that counts them.
    if not_listed > 0
        && let Some(at) = latest
    {
        found.push(Anomaly {
            anomaly_id: AnomalyId::derived("log_tampered|not listed"),
            description: format!(
                "The stored log was tampered with in {not_listed} more record{} than are \
                 listed (a scan lists the first {}). It counts for every timeline until a \
                 full detect-tampering scan no longer finds them.",
                if not_listed == 1 { "" } else { "s" },
                crate::service::FINDINGS_LISTED,
            ),
            kind: AnomalyKind::LogTampered,
            severity: Severity::Critical,
            subjects: vec![format!("{not_listed} more log records")],
            detected_at: at,
        });
    }
    found
}

/// A paradox as a critical anomaly, its id derived from its kind and subjects.
fn paradox_anomaly(p: &Paradox, at: Instant) -> Anomaly {
    let subjects: Vec<String> = p
        .events
        .iter()
        .map(ToString::to_string)
        .chain(p.items.iter().map(ToString::to_string))
        .collect();
    anomaly(
        AnomalyKind::Paradox(p.kind),
        Severity::Critical,
        &format!("paradox:{}", p.kind.as_str()),
        p.description.clone(),
        subjects,
        at,
    )
}

/// Where a timeline's window stands at an instant: the only thing about a timeline that
/// changes with time alone, so an anomaly report stays right until the phase changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowPhase {
    /// Unbounded, or more than a tenth of its window left.
    Open,
    /// Open, within the last tenth of its window.
    Closing,
    /// Closed.
    Closed,
}

impl WindowPhase {
    /// `timeline`'s phase at `now`.
    pub fn of(timeline: &Timeline, now: Instant) -> Self {
        let (Some(length), Some(remaining)) =
            (timeline.window.duration(), timeline.remaining_at(now))
        else {
            return Self::Open;
        };
        if timeline.status_at(now) != TimelineStatus::Open {
            Self::Closed
        } else if remaining.checked_mul(10).is_none_or(|r| r >= length) {
            Self::Open
        } else {
            Self::Closing
        }
    }
}

/// The next instant after `now` at which `timeline`'s anomalies may change with time alone
/// (its window entering its last tenth, or closing); `None` when nothing ever will. A watcher
/// sets its timer for it instead of rescanning on a period.
pub fn next_change(timeline: &Timeline, now: Instant) -> Option<Instant> {
    let length = timeline.window.duration()?;
    let closes = timeline.closes_at()?;
    match WindowPhase::of(timeline, now) {
        WindowPhase::Open => Some((closes - length / 10).max(now)),
        WindowPhase::Closing => Some(closes),
        WindowPhase::Closed => None,
    }
}

/// The window closes within 10 % of its length (never for an unbounded or closed timeline).
/// The words name when it closes, not the time left, so they stay the same while it is open:
/// a watcher is told about it once, not again every second.
fn window_closing(scan: &Scan<'_>) -> Option<Anomaly> {
    let tl = scan.timeline;
    if WindowPhase::of(tl, scan.now) != WindowPhase::Closing {
        return None;
    }
    let length = tl.window.duration()?;
    let closes = tl.closes_at()?;
    Some(anomaly(
        AnomalyKind::WindowClosing,
        Severity::Warning,
        "window_closing",
        format!(
            "Timeline {} closes at {}, less than a tenth of its {} window from now; after \
             that it can no longer be travelled to or changed.",
            tl.id,
            format_instant(&closes),
            tl.window,
        ),
        vec![tl.id.to_string()],
        // When the last tenth began.
        closes - length / 10,
    ))
}

/// When an anomaly involving `events` appeared: the latest change to one of them, and never
/// before the timeline itself was made.
fn appeared<'e>(scan: &Scan<'_>, events: impl Iterator<Item = &'e EventId>) -> Instant {
    events
        .filter_map(|id| scan.touched.get(id).copied())
        .fold(scan.timeline.created_at, Instant::max)
}

/// An anomaly whose id is derived from `cause` and its subjects, so the same cause gives the
/// same id on every call and every replica.
fn anomaly(
    kind: AnomalyKind,
    severity: Severity,
    cause: &str,
    description: String,
    subjects: Vec<String>,
    detected_at: Instant,
) -> Anomaly {
    Anomaly {
        anomaly_id: AnomalyId::derived(&format!("{cause}|{}", subjects.join("|"))),
        description,
        kind,
        severity,
        subjects,
        detected_at,
    }
}

fn list(ids: &[&EventId]) -> String {
    let names: Vec<String> = ids.iter().map(|i| format!("'{i}'")).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}
