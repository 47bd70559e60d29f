//! What the log's tamper scans recorded (their `ScanResult` records, folded): where the next
//! `recent` scan starts, and the findings still open. The scans themselves are
//! `engine::integrity`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::Instant;
use crate::service::{FINDINGS_LISTED, TamperFinding};

/// What the scans recorded (their `ScanResult` records, folded): where the next `recent`
/// scan starts, and the findings the monitor shows as `log_tampered` anomalies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scans {
    /// The stored head the last scan read up to (`None` before the first scan).
    pub last_head: Option<u64>,
    /// Findings no full scan has cleared since, by record seq, at most [`FINDINGS_LISTED`]
    /// of records beside the structural ones. A `recent` scan only adds to them (it does not
    /// read the older records); a `full` one replaces them all.
    pub open: imbl::OrdMap<u64, Arc<OpenFinding>>,
    /// How many more records than `open` holds were found and not cleared since (counted).
    pub not_listed: u64,
}

/// A finding recorded by a scan and not cleared since.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenFinding {
    /// What the latest scan that found it said.
    pub finding: TamperFinding,
    /// When a scan first found it (of this kind): the anomaly's `detected_at`.
    pub found_at: Instant,
}

impl Scans {
    /// Folds a `ScanResult`: the scan read the stored log up to `head_seq` at `at` and found
    /// `findings` (`full`: in every record). The open findings keep their identity when
    /// nothing changed, so the monitor's kept answers stay valid across scans.
    pub(in crate::engine) fn record(
        &mut self,
        head_seq: u64,
        findings: Vec<TamperFinding>,
        not_listed: u64,
        full: bool,
        at: Instant,
    ) {
        let (mut open, mut more) = if full {
            (imbl::OrdMap::new(), 0)
        } else {
            (self.open.clone(), self.not_listed)
        };
        more += not_listed;
        for finding in findings {
            // A record's finding beyond the first listed ones is counted (a `recent` scan
            // adds to what earlier ones left open); the log's structure always shows.
            let listed = open.values().filter(|o| o.finding.kind.is_record()).count();
            if finding.kind.is_record()
                && listed >= FINDINGS_LISTED
                && !open.contains_key(&finding.seq)
            {
                more += 1;
                continue;
            }
            let found_at = self
                .open
                .get(&finding.seq)
                .filter(|o| o.finding.kind == finding.kind)
                .map_or(at, |o| o.found_at);
            open.insert(finding.seq, Arc::new(OpenFinding { finding, found_at }));
        }
        if open != self.open {
            self.open = open;
        }
        self.not_listed = more;
        self.last_head = Some(head_seq);
    }
}
