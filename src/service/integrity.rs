//! Asking whether the stored history was altered (guide operations §5.4): `detect-tampering`
//! checks the stored log's keyed hash chain record by record; `validate-integrity` proves a
//! timeline's events and data entries as of a time against what the verified log produces.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::model::{Instant, TimelineId};

/// How much of the stored log `detect-tampering` reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScanDepth {
    /// Every record, from the first.
    Full,
    /// The records after the stored head the last scan recorded (its `ScanResult` record),
    /// or, before any scan, after the newest snapshot (every record when there is neither).
    #[default]
    Recent,
}

/// `detect-tampering`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TamperQuery {
    /// The timeline the answer is about.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// `full` or `recent` (the default).
    #[serde(default)]
    pub scan_depth: ScanDepth,
}

/// The most records that did not verify a scan lists, records in the log and shows the
/// monitor (the first, by record); the rest are counted. A log rewritten wholesale would
/// otherwise put one anomaly per record on every timeline, and one record of them in the log.
pub const FINDINGS_LISTED: usize = 100;

/// What is wrong with a stored record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Its content, or the link stored before it, changed after it was written (or it has no
    /// link though the chain covers it).
    Modified,
    /// A hole in the numbering: records were deleted.
    Gap,
    /// It verifies but cannot be read.
    Undecodable,
    /// The stored log ends before a record this process already folded.
    Truncated,
    /// The store was chained with another log key.
    KeyMismatch,
    /// The store's chain record was removed or rewritten, or the record at the head this
    /// replica witnessed is another one: the log was re-linked or replaced.
    Rechained,
}

impl FindingKind {
    /// Whether it is about one record (modified, undecodable) rather than the log's shape (a
    /// gap, a truncation, another key, a rewritten chain): those are the ones counted past
    /// the first listed.
    pub fn is_record(self) -> bool {
        matches!(self, Self::Modified | Self::Undecodable)
    }
}

/// One record (or stretch of the log) that does not verify.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TamperFinding {
    /// The record.
    pub seq: u64,
    /// What is wrong.
    pub kind: FindingKind,
    /// When the record says it was written (it cannot be trusted: it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub written_at: Option<Instant>,
    /// The operation the record says it holds; withheld from non-operators when it names no
    /// timeline they asked about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// The timelines the record says it touches (same rule).
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub timelines: Vec<TimelineId>,
    /// A sentence for a person.
    pub reason: String,
}

/// What `detect-tampering` found. A record that fails cannot be trusted to say what it
/// touches, so every finding counts for every timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TamperReport {
    /// `complete`.
    pub status: String,
    /// Whether any finding bears on the timeline: one of this scan's, or one an earlier scan
    /// recorded that this one leaves open (only a full scan clears them).
    pub tampering_detected: bool,
    /// One sentence.
    pub details: String,
    /// The records that do not verify, oldest first: the first 100, and the log's gap,
    /// truncation or rewritten chain if found (see `findings_not_listed`).
    pub findings: Vec<TamperFinding>,
    /// How many records were read.
    pub records_checked: u64,
    /// The first record read.
    pub from_seq: u64,
    /// The stored log's last record.
    pub head_seq: u64,
    /// The first record linked as it was written (earlier ones were linked on upgrade, and are
    /// proven only from then on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_from: Option<u64>,
    /// The log record that recorded this scan (its `ScanResult`: the record it checked up to
    /// and the findings, which the monitor shows as `log_tampered` anomalies and the next `recent`
    /// scan starts after). Absent when it could not be written (the store refused the append,
    /// as it does below a truncated log): the findings are then only in this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_seq: Option<u64>,
    /// How many more records did not verify than `findings` lists: a scan lists, records and
    /// shows the monitor the first 100 (by record) and counts the rest. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub findings_not_listed: u64,
}

/// `validate-integrity`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IntegrityQuery {
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// Prove it as of this time (default: now): its events and data entries at or before it.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub timestamp: Option<Instant>,
}

/// An event or data entry whose served state the verified log does not produce.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IntegrityFailure {
    /// The event or data entry.
    pub id: String,
    /// A stored record that failed verification and that says it touches this timeline, when
    /// there is one (the likely producer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Why it does not pass.
    pub reason: String,
}

/// What `validate-integrity` found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IntegrityReport {
    /// `validated`.
    pub status: String,
    /// passed / examined: "100%" only when all pass, otherwise rounded down to one decimal.
    pub integrity_score: String,
    /// Current events with `time` at or before the timestamp (inherited ones included) and data
    /// entries with `timestamp` at or before it.
    pub examined: u64,
    /// How many of them pass.
    pub passed: u64,
    /// Those that do not.
    pub failures: Vec<IntegrityFailure>,
    /// The time it was proven as of.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
}

/// The score of `passed` out of `examined`: "100%" only when every one passed (or none was
/// examined), otherwise rounded down to one decimal, so 99.96 % reads "99.9%".
pub fn integrity_score(passed: u64, examined: u64) -> String {
    if passed >= examined {
        return "100%".into();
    }
    let tenths = passed * 1000 / examined;
    format!("{}.{}%", tenths / 10, tenths % 10)
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_round_down_and_only_a_clean_sweep_is_a_hundred() {
        assert_eq!(integrity_score(0, 0), "100%");
        assert_eq!(integrity_score(5, 5), "100%");
        assert_eq!(integrity_score(9_999, 10_000), "99.9%");
        assert_eq!(integrity_score(1, 3), "33.3%");
        assert_eq!(integrity_score(0, 7), "0.0%");
    }
}
