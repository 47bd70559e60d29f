//! Printing results: JSON for scripts (`--json`), plain aligned text for people.

use std::io::Write;

use serde::Serialize;

use crate::error::ServiceError;

/// What a command found, beyond having run: each has its own exit status, so a script can
/// test it without reading the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verdict {
    /// Done, nothing found (exit status 0).
    #[default]
    Done,
    /// `detect-tampering` found records changed, deleted or cut off (exit status 3).
    Tampered,
    /// `check` or `stability`: the timeline is, or would be, unstable (exit status 4).
    Unstable,
    /// `holds`: the event's lineage was manipulated (exit status 5).
    Altered,
    /// `holds`: no such event in the timeline (exit status 6).
    Missing,
}

impl Verdict {
    /// The process's exit status for it.
    pub fn exit_status(self) -> u8 {
        match self {
            Self::Done => 0,
            Self::Tampered => 3,
            Self::Unstable => 4,
            Self::Altered => 5,
            Self::Missing => 6,
        }
    }
}

/// Where results go, and in which form.
pub struct Output<'a> {
    out: &'a mut dyn Write,
    json: bool,
    /// What the command found, for the exit status.
    pub verdict: Verdict,
}

impl<'a> Output<'a> {
    /// Prints to `out`, as JSON when `json`.
    pub fn new(out: &'a mut dyn Write, json: bool) -> Self {
        Self {
            out,
            json,
            verdict: Verdict::Done,
        }
    }

    /// The command found `verdict` when `found`.
    pub fn found(&mut self, found: bool, verdict: Verdict) {
        if found {
            self.verdict = verdict;
        }
    }

    /// Prints `value` as pretty JSON or through its human formatter.
    pub fn print<T: Serialize>(
        &mut self,
        value: &T,
        human: impl FnOnce(&T) -> String,
    ) -> Result<(), ServiceError> {
        let text = if self.json {
            let mut s = serde_json::to_string_pretty(value).map_err(|e| {
                ServiceError::Internal(format!("cannot print the result as JSON: {e}"))
            })?;
            s.push('\n');
            s
        } else {
            human(value)
        };
        self.raw(text.as_bytes())
    }

    /// Writes `bytes` as they are (a document, not a result), JSON or not.
    pub fn raw(&mut self, bytes: &[u8]) -> Result<(), ServiceError> {
        self.out
            .write_all(bytes)
            .and_then(|()| self.out.flush())
            .map_err(|e| ServiceError::Internal(format!("cannot write the output: {e}")))
    }
}

impl Output<'_> {
    /// Prints `value` as one line of compact JSON (JSON Lines, for a stream of results) or
    /// through its human formatter.
    pub fn print_line<T: Serialize>(
        &mut self,
        value: &T,
        human: impl FnOnce(&T) -> String,
    ) -> Result<(), ServiceError> {
        if !self.json {
            return self.print(value, human);
        }
        let mut line = serde_json::to_string(value)
            .map_err(|e| ServiceError::Internal(format!("cannot print the result as JSON: {e}")))?;
        line.push('\n');
        self.raw(line.as_bytes())
    }
}

/// Text forms of each result. Times are shown to the second, as `whoami` and the dashboard
/// show them (`--json` keeps every digit): a wall-clock time's nanoseconds are noise to a reader.
pub mod human {
    use std::fmt::Write;

    use crate::model::{
        Anchor, AnchorStatus, Instant, Item, Journey, JourneyKind, TimelineId, Whereabouts,
    };
    use crate::service::{
        ClockState, DissonanceResult, EventRecord, LogEntry, ManipulationResult, Merge,
        MergeResult, MonitorReport, Page, ParadoxReport, RevertResult, Schedule, Script, Switched,
        TimelineCheck, TimelineInfo, TravellerStatus,
    };
    use crate::service::{ConflictReview, Isolation, ResolveResult, TimelineDiff};
    use crate::service::{IntegrityReport, TamperReport};
    use crate::service::{MonitoredEvent, Relative, RetrievedItem};

    /// An instant as text shows it: RFC 3339, UTC, to the second.
    pub(crate) fn format_instant(t: &Instant) -> String {
        t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    /// Formats rows as left-aligned columns under a header.
    pub(crate) fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: Vec<String>, out: &mut String| {
            let mut l = String::new();
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i + 1 == cells.len() {
                    l.push_str(cell);
                } else {
                    let _ = write!(l, "{cell:<w$}  ");
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(header.iter().map(|h| h.to_string()).collect(), &mut out);
        for row in rows {
            line(row, &mut out);
        }
        out
    }

    /// A page of `T` as a table under `header`, a row of cells per item (see [`more`]).
    pub(crate) fn page_table<T>(
        page: &Page<T>,
        header: &[&str],
        row: impl Fn(&T) -> Vec<String>,
    ) -> String {
        more(page, table(header, page.items.iter().map(row).collect()))
    }

    pub(crate) fn more<T>(page: &Page<T>, mut text: String) -> String {
        if page.items.is_empty() {
            text = "nothing found\n".into();
        }
        if let Some(c) = &page.next_cursor {
            let _ = writeln!(text, "more: --cursor '{c}'");
        }
        text
    }

    /// `whoami`.
    pub fn whoami(me: &TravellerStatus) -> String {
        let mut s = format!(
            "you are {}{}\nin timeline {} at {}{}\n",
            me.traveller,
            if me.operator {
                " (operator)"
            } else if me.read_only_token {
                " (your token allows reading only)"
            } else {
                ""
            },
            me.timeline_id,
            format_instant(&me.time),
            if me.position.paused {
                ", your clock paused (resume lets it run)"
            } else {
                ""
            }
        );
        if let Some(r) = &me.restriction {
            let _ = writeln!(
                s,
                "restricted to {} by {} at {}: you may do {}",
                r.level.as_str(),
                r.set_by,
                format_instant(&r.at),
                r.level.allows()
            );
        }
        s
    }

    /// One timeline.
    pub fn timeline(t: &TimelineInfo) -> String {
        let mut s = format!("{}  {}\n", t.id, t.name);
        let status = serde_json::to_value(t.status).ok();
        let status = status.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
        let _ = writeln!(s, "  status:      {status} (window {})", t.window);
        if let Some(at) = t.closes_at {
            let _ = writeln!(s, "  closes at:   {}", format_instant(&at));
        }
        if let Some(d) = t.destination_time {
            let _ = writeln!(s, "  destination: {}", format_instant(&d));
        }
        if let Some(p) = &t.parent {
            let _ = writeln!(s, "  branched from {p}");
        }
        if let Some(d) = &t.description {
            let _ = writeln!(s, "  description: {d}");
        }
        if let Some(v) = &t.variation {
            let _ = writeln!(s, "  variation:   {v}");
        }
        let _ = writeln!(s, "  events:      {}", t.event_count);
        if t.paradoxes_recounting {
            let last = match t.paradoxes_counted_at {
                Some(at) => format!("{} as of {}", t.paradoxes, format_instant(&at)),
                None => "not counted yet".to_string(),
            };
            let _ = writeln!(
                s,
                "  anomalies:   {last}; being recounted after a change (see `monitor`)"
            );
        } else if t.paradoxes > 0 {
            let _ = writeln!(s, "  anomalies:   {} open (see `monitor`)", t.paradoxes);
        }
        if !t.isolations.is_empty() {
            let ids: Vec<&str> = t.isolations.iter().map(|id| id.as_str()).collect();
            let _ = writeln!(
                s,
                "  isolations:  {} (`chronoscope events lift ID` lifts one)",
                ids.join(", ")
            );
        }
        s
    }

    /// A page of timelines. ANOMALIES is each one's open anomalies as the dashboard's ⚠ column
    /// counts them, "…" after a count being redone since a change (`show` says as of when).
    pub fn timelines(page: &Page<TimelineInfo>) -> String {
        page_table(
            page,
            &[
                "ID",
                "STATUS",
                "WINDOW",
                "ANOMALIES",
                "DESTINATION",
                "PARENT",
                "NAME",
            ],
            |t| {
                vec![
                    t.id.to_string(),
                    format!("{:?}", t.status).to_lowercase(),
                    t.window.to_string(),
                    format!(
                        "{}{}",
                        t.paradoxes,
                        if t.paradoxes_recounting { "…" } else { "" }
                    ),
                    t.destination_time
                        .map(|d| format_instant(&d))
                        .unwrap_or_default(),
                    t.parent
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    t.name.clone(),
                ]
            },
        )
    }

    /// One event.
    pub fn event(e: &EventRecord) -> String {
        let mut s = format!("{}  {}\n", e.event_id, e.description);
        let _ = writeln!(s, "  at {} in {}", format_instant(&e.time), e.location);
        let _ = writeln!(
            s,
            "  status: {}{}",
            e.status.as_str(),
            if e.fixed_point { ", fixed point" } else { "" }
        );
        if !e.causes.is_empty() {
            let causes: Vec<String> = e.causes.iter().map(ToString::to_string).collect();
            let _ = writeln!(s, "  caused by: {}", causes.join(", "));
        }
        if e.lineage != e.event_id {
            let _ = writeln!(s, "  lineage: {}", e.lineage);
        }
        s
    }

    /// A page of events.
    pub fn events(page: &Page<EventRecord>) -> String {
        page_table(page, &["TIME", "EVENT", "LOCATION", "DESCRIPTION"], |e| {
            vec![
                format_instant(&e.time),
                e.event_id.to_string(),
                e.location.clone(),
                e.description.clone(),
            ]
        })
    }

    /// An event's change state in words: past or future, when it last changed, in paradox.
    pub fn event_state(m: &MonitoredEvent) -> String {
        let mut state = vec![
            match m.relative {
                Relative::Past => "past",
                Relative::Future => "future",
            }
            .to_owned(),
        ];
        if let Some(at) = &m.changed_at {
            state.push(format!("changed {}", format_instant(at)));
        }
        if m.in_paradox {
            state.push("in paradox".into());
        }
        state.join(", ")
    }

    /// A page of `monitor-events`: each event with its change state.
    pub fn monitored_events(page: &Page<MonitoredEvent>) -> String {
        page_table(
            page,
            &["TIME", "EVENT", "LOCATION", "STATE", "DESCRIPTION"],
            |m| {
                let e = &m.event;
                vec![
                    format_instant(&e.time),
                    e.event_id.to_string(),
                    e.location.clone(),
                    event_state(m),
                    e.description.clone(),
                ]
            },
        )
    }

    /// A manipulation.
    pub fn manipulation(m: &ManipulationResult) -> String {
        // The lineage is what a person knows the event by; a later version also says which
        // one it replaced.
        let lineage = m.lineage.as_ref().unwrap_or(&m.original_event_id);
        let replacing = if *lineage == m.original_event_id {
            String::new()
        } else {
            format!(" (replacing {})", m.original_event_id)
        };
        format!(
            "{}: {} now stands for {lineage} in {}{replacing}\n  {} at {}\n",
            m.status,
            m.new_event_id,
            m.timeline_id,
            m.description,
            format_instant(&m.time)
        )
    }

    /// A revert.
    pub fn revert(r: &RevertResult) -> String {
        format!(
            "{}: {} stands again in {} ({} undone)\n",
            r.status, r.original_event_id, r.timeline_id, r.reverted_event_id
        )
    }

    fn whereabouts(w: &Whereabouts) -> String {
        match w {
            Whereabouts::Carried => "with you".into(),
            Whereabouts::Left { timeline, time } => {
                format!("left in {timeline} at {}", format_instant(time))
            }
        }
    }

    /// One item.
    pub fn item(i: &Item) -> String {
        format!(
            "{}  {}\n  found in {} at {}; {}\n",
            i.id,
            i.description,
            i.origin_timeline,
            format_instant(&i.origin_time),
            whereabouts(&i.whereabouts)
        )
    }

    /// What `items retrieve` did.
    pub fn retrieved(r: &RetrievedItem) -> String {
        let mut s = String::new();
        if let Some(j) = &r.journey {
            s.push_str(&journey(j));
        }
        let place = r
            .item
            .location
            .as_deref()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{}: {}  {}{place}, {}",
            r.status,
            r.item.id,
            r.item.description,
            format_instant(&r.item.origin_time)
        );
        s
    }

    /// What `detect-tampering` found: the sentence, then each finding.
    pub fn tampering(r: &TamperReport) -> String {
        let headline = if r.tampering_detected {
            "TAMPERED: "
        } else {
            ""
        };
        let mut s = format!("{headline}{}\n", r.details);
        // A single finding is the details already: not said twice.
        let said = matches!(r.findings.as_slice(), [f] if r.details.contains(&f.reason));
        for f in r.findings.iter().filter(|_| !said) {
            let _ = writeln!(s, "  record {}: {}", f.seq, f.reason);
        }
        if r.recorded_seq.is_none() {
            s.push_str(
                "  (this scan could not be recorded in the log: the monitor does not show its \
                 findings, and the next recent scan starts where the last recorded one ended)\n",
            );
        }
        s
    }

    /// What `validate-integrity` found: the score, then each item that did not pass.
    pub fn integrity(r: &IntegrityReport) -> String {
        let mut s = format!(
            "{}: {} of {} pass as of {}\n",
            r.integrity_score,
            r.passed,
            r.examined,
            format_instant(&r.timestamp)
        );
        for f in &r.failures {
            let _ = writeln!(s, "  {}: {}", f.id, f.reason);
        }
        s
    }

    /// A page of items.
    pub fn items(page: &Page<Item>) -> String {
        page_table(page, &["ITEM", "WHERE", "DESCRIPTION"], |i| {
            vec![
                i.id.to_string(),
                whereabouts(&i.whereabouts),
                i.description.clone(),
            ]
        })
    }

    fn anchor_status(a: &Anchor) -> &'static str {
        match a.status {
            AnchorStatus::Active => "active",
            AnchorStatus::Spent => "spent",
        }
    }

    /// One anchor.
    pub fn anchor(a: &Anchor) -> String {
        format!(
            "{}  {} in {} at {}{}\n",
            a.id,
            anchor_status(a),
            a.timeline,
            format_instant(&a.timestamp),
            a.description
                .as_ref()
                .map(|d| format!(" — {d}"))
                .unwrap_or_default()
        )
    }

    /// A simulated journey.
    pub fn wormhole(w: &crate::service::WormholeSimulation) -> String {
        let verdict = match w.stability {
            crate::service::WormholeStability::Stable => "stable",
            crate::service::WormholeStability::Unstable => "unstable",
            crate::service::WormholeStability::NotChecked => "not checked",
        };
        let direction = match w.direction {
            crate::service::Direction::Past => "into the past",
            crate::service::Direction::Future => "into the future",
        };
        let mut out = format!(
            "{} {direction} in {}: {verdict}\n",
            w.time_difference, w.timeline_id
        );
        if let Some(why) = &w.refused {
            let _ = writeln!(out, "  - {why}");
        }
        for p in &w.paradoxes {
            let _ = writeln!(out, "  - {}", p.description);
        }
        out
    }

    /// An anchor with what was recorded with it.
    pub fn anchor_record(a: &crate::model::AnchorRecord) -> String {
        let mut out = anchor(&a.anchor);
        if let Some(accuracy) = a.details.accuracy {
            let _ = writeln!(out, "  timestamp {}", accuracy.print(&a.timestamp));
        }
        for (what, conditions) in [
            ("environment", &a.details.environment),
            ("quantum state", &a.details.quantum_state),
        ] {
            for (key, value) in conditions.iter().flatten() {
                let _ = writeln!(
                    out,
                    "  {what} {key}: {}",
                    value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_owned)
                );
            }
        }
        out
    }

    /// A page of anchors with their details.
    /// A page of anchors, an active one whose timeline is in `gone` marked dead (a return to
    /// it would be refused), with a line saying so.
    pub fn anchor_records(
        page: &Page<crate::model::AnchorRecord>,
        gone: &std::collections::HashSet<TimelineId>,
    ) -> String {
        let dead = |a: &Anchor| a.status == AnchorStatus::Active && gone.contains(&a.timeline);
        let mut text = page_table(
            page,
            &["ANCHOR", "STATUS", "TIMELINE", "TIMESTAMP", "DESCRIPTION"],
            |record| {
                let a = &record.anchor;
                vec![
                    a.id.to_string(),
                    if dead(a) { "dead" } else { anchor_status(a) }.into(),
                    a.timeline.to_string(),
                    format_instant(&a.timestamp),
                    a.description.clone().unwrap_or_default(),
                ]
            },
        );
        if page.items.iter().any(|record| dead(&record.anchor)) {
            text.push_str(
                "dead: its timeline is gone (deleted, or hidden from you); a return would be refused\n",
            );
        }
        text
    }

    /// An anchor's stability verdict and why.
    pub fn anchor_stability(s: &crate::service::AnchorStability) -> String {
        let verdict = match s.status {
            crate::service::AnchorVerdict::Stable => "stable",
            crate::service::AnchorVerdict::AtRisk => "at risk",
            crate::service::AnchorVerdict::Unstable => "unstable",
        };
        let mut out = format!("{}  {verdict} (in {})\n", s.anchor_id, s.timeline_id);
        for reason in &s.reasons {
            let _ = writeln!(out, "  - {reason}");
        }
        for (key, value) in &s.current_conditions {
            let _ = writeln!(
                out,
                "  {key}: {}",
                value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned)
            );
        }
        out
    }

    /// One journey.
    pub fn clock(c: &ClockState) -> String {
        let paused_for = c
            .paused_for
            .as_deref()
            .map(|d| format!(" (stood still for {d})"))
            .unwrap_or_default();
        format!(
            "{}: {} in {}{paused_for}\n",
            c.status,
            format_instant(&c.time),
            c.position.timeline
        )
    }

    pub fn switched(s: &Switched) -> String {
        match &s.journey {
            Some(j) => journey(j),
            None => format!(
                "already in {} ({})\n",
                s.timeline_id,
                format_instant(&s.current_time)
            ),
        }
    }

    pub fn journey(j: &Journey) -> String {
        let mut s = format!(
            "{}: {} ({}) -> {} ({})\n",
            j.id,
            j.from_timeline,
            format_instant(&j.from_time),
            j.to_timeline,
            format_instant(&j.arrival_time)
        );
        if let Some(place) = &j.location {
            let _ = writeln!(s, "  at {place}");
        }
        for i in &j.items_transported {
            let _ = writeln!(s, "  carried {i}");
        }
        for l in &j.items_left {
            let _ = writeln!(s, "  left {}: {}", l.item_id, l.reason);
        }
        if let Some(a) = &j.anchor {
            let _ = writeln!(s, "  returned to anchor {a} (now spent)");
        }
        s
    }

    /// A page of journeys.
    pub fn journeys(page: &Page<Journey>) -> String {
        page_table(
            page,
            &["JOURNEY", "KIND", "FROM", "TO", "ARRIVAL", "ITEMS"],
            |j| {
                // The kind as the JSON says it (fast_forward, rewind, switch, …).
                let kind = j
                    .kind
                    .unwrap_or_else(|| JourneyKind::derived(j.anchor.as_ref()));
                vec![
                    j.id.to_string(),
                    kind.as_str().to_owned(),
                    j.from_timeline.to_string(),
                    j.to_timeline.to_string(),
                    format_instant(&j.arrival_time),
                    j.items_transported.len().to_string(),
                ]
            },
        )
    }

    /// A paradox check.
    pub fn paradox_report(r: &ParadoxReport) -> String {
        if r.is_stable {
            return format!("{} is stable\n", r.timeline_id);
        }
        let mut s = format!("{} would be UNSTABLE:\n", r.timeline_id);
        for p in &r.paradoxes {
            let _ = writeln!(s, "  {}: {}", p.kind.as_str(), p.description);
        }
        s
    }

    /// The data entries a merge copies (`what`: "copied", "to copy"), one line with their ids;
    /// nothing when there are none.
    fn data_entries(out: &mut String, ids: &[crate::model::DataId], what: &str) {
        if ids.is_empty() {
            return;
        }
        let listed: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let n = ids.len();
        let entries = if n == 1 { "entry" } else { "entries" };
        let _ = writeln!(out, "  {n} data {entries} {what}: {}", listed.join(", "));
    }

    /// Whether a significant event holds.
    pub fn holds(c: &TimelineCheck) -> String {
        let mut s = format!(
            "{}: '{}' in {}\n",
            c.status, c.significant_event, c.timeline_id
        );
        if let Some(e) = &c.event {
            s.push_str(&event(e));
        }
        s
    }

    /// One script.
    pub fn script(s: &Script) -> String {
        format!(
            "{}  {} ({})\n  fires when {} changes in {}; {} action(s)\n",
            s.script_id,
            s.script_name,
            s.status,
            s.trigger_event_id,
            s.timeline_id,
            s.actions.len()
        )
    }

    /// What a dissonance correction did.
    pub fn aligned(r: &DissonanceResult) -> String {
        let mut out = format!("{} in {}\n", r.status, r.timeline_id);
        for s in &r.superseded {
            out.push_str(&format!(
                "  {} was superseded by {}: the current event was aligned instead\n",
                s.event_id, s.current_event_id
            ));
        }
        for m in &r.moves {
            out.push_str(&format!(
                "  moved {} from {} to {} (now {})\n",
                m.event_id,
                format_instant(&m.from),
                format_instant(&m.to),
                m.new_event_id
            ));
        }
        out
    }

    /// The events a merge wrote and the paradoxes it added.
    fn written_and_added(
        out: &mut String,
        written: &[crate::service::WrittenEvent],
        paradoxes: &[crate::paradox::Paradox],
    ) {
        for w in written {
            out.push_str(&format!("  wrote {} (lineage {})\n", w.event_id, w.lineage));
        }
        for p in paradoxes {
            out.push_str(&format!("  paradox added: {}\n", p.description));
        }
    }

    /// What a merge did.
    pub fn merged(r: &MergeResult) -> String {
        let mut out = match &r.merge_id {
            Some(id) => format!(
                "{} into {} ({id}): {} incoming, {} added, {} conflict(s), {} convergent, {} kept\n",
                r.status,
                r.merged_timeline_id,
                r.incoming,
                r.added,
                r.conflicts,
                r.convergent,
                r.kept
            ),
            None => format!(
                "{}: {} has everything to merge already\n",
                r.status, r.merged_timeline_id
            ),
        };
        data_entries(&mut out, &r.data_entries, "copied");
        written_and_added(&mut out, &r.written, &r.paradoxes);
        out
    }

    /// Recorded merges.
    pub fn merges(page: &Page<Merge>) -> String {
        page_table(
            page,
            &["MERGE", "STATUS", "SOURCE", "DESTINATION", "STRATEGY", "AT"],
            |m| {
                vec![
                    m.merge_id.to_string(),
                    m.status.clone(),
                    m.source_timeline_id.to_string(),
                    m.destination_timeline_id.to_string(),
                    m.strategy.as_str().to_owned(),
                    format_instant(&m.at),
                ]
            },
        )
    }

    /// One merge, lineage by lineage.
    pub fn merge(m: &Merge) -> String {
        // A merge left for review is credited to whoever completed it, when; who recorded it
        // pending comes after.
        let by = match (&m.completed_by, m.completed_at) {
            (Some(who), Some(at)) => format!(
                "completed by {who} at {} (left for review by {} at {})",
                format_instant(&at),
                m.by,
                format_instant(&m.at)
            ),
            (None, Some(at)) => format!(
                "completed at {} (left for review by {} at {})",
                format_instant(&at),
                m.by,
                format_instant(&m.at)
            ),
            _ if m.is_pending() => {
                format!("left for review by {} at {}", m.by, format_instant(&m.at))
            }
            _ => format!("by {} at {}", m.by, format_instant(&m.at)),
        };
        let mut out = format!(
            "{}  {}: {} into {} ({}) {by}\n",
            m.merge_id,
            m.status,
            m.source_timeline_id,
            m.destination_timeline_id,
            m.strategy.as_str(),
        );
        for r in &m.resolutions {
            out.push_str(&format!(
                "  resolved {}: {} by {}\n",
                r.lineage,
                r.resolution.as_str(),
                r.by
            ));
        }
        for d in &m.decisions {
            out.push_str(&format!(
                "  {} {}: {}{}\n",
                d.class,
                d.lineage,
                d.decision,
                d.written_event
                    .as_ref()
                    .map(|e| format!(" -> {e}"))
                    .unwrap_or_default()
            ));
        }
        out
    }

    /// A diff of two timelines, lineage by lineage.
    pub fn diff(d: &TimelineDiff) -> String {
        let mut out = format!(
            "{} into {} (base: the parent of {} when it was created): {} changed lineage(s)\n",
            d.source_timeline_id,
            d.destination_timeline_id,
            d.base_timeline_id,
            d.lines.len()
        );
        data_entries(&mut out, &d.data_entries, "to copy");
        let side = |e: &Option<EventRecord>| {
            e.as_ref().map_or("-".to_owned(), |e| {
                format!("{} @ {}", e.description, format_instant(&e.time))
            })
        };
        for l in &d.lines {
            out.push_str(&format!(
                "  {:<10} {}\n    base: {}\n    A:    {}\n    B:    {}\n",
                l.class,
                l.lineage,
                side(&l.base),
                side(&l.source),
                side(&l.destination)
            ));
        }
        out
    }

    /// The conflicts waiting for review.
    pub fn review(r: &ConflictReview) -> String {
        if r.conflicts.is_empty() {
            return "no conflicts waiting for review\n".into();
        }
        let mut out = String::new();
        for c in &r.conflicts {
            out.push_str(&format!(
                "{} ({} from {}){}\n  A (source):      {}\n  B (destination): {}\n  options: {}\n",
                c.event_id,
                c.merge_id,
                c.source_timeline_id,
                c.resolution
                    .map(|r| format!(": resolved '{}'", r.option()))
                    .unwrap_or_default(),
                c.source_outcome,
                c.destination_outcome,
                c.allowed.join(", ")
            ));
        }
        out
    }

    /// What a resolution did.
    pub fn resolved(r: &ResolveResult) -> String {
        let mut out = format!(
            "{} {} in {}: {}, {} conflict(s) left\n",
            r.status, r.resolved_event_id, r.merge_id, r.merge_status, r.remaining_conflicts
        );
        if let (Some(who), Some(at)) = (&r.completed_by, &r.completed_at) {
            out.push_str(&format!("  completed by {who} at {}\n", format_instant(at)));
        }
        written_and_added(&mut out, &r.written, &r.paradoxes);
        out
    }

    /// An isolation.
    pub fn isolation(i: &Isolation) -> String {
        let mut out = format!(
            "{} {} in {}: {}\n  members: {}\n",
            i.status,
            i.isolation_id,
            i.timeline_id,
            i.description,
            i.members
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        for s in &i.severed {
            out.push_str(&format!("  severed: {} <- {}\n", s.effect, s.cause));
        }
        for p in &i.contained {
            out.push_str(&format!("  no longer reported: {}\n", p.description));
        }
        // What the timeline's paradox count still holds, and why isolating did not clear it.
        for p in &i.left {
            out.push_str(&format!(
                "  still reported, inside the isolation: {}\n",
                p.description
            ));
        }
        if !i.left.is_empty() && i.members.len() > 1 {
            out.push_str(
                "  (order among an isolation's members still counts, and no move puts a loop in \
                 order, so it stays while the loop does)\n",
            );
        }
        out
    }

    /// A page of scripts.
    pub fn scripts(page: &Page<Script>) -> String {
        page_table(page, &["SCRIPT", "STATUS", "TRIGGER", "NAME"], |s| {
            vec![
                s.script_id.to_string(),
                s.status.clone(),
                s.trigger_event_id.to_string(),
                s.script_name.clone(),
            ]
        })
    }

    /// One scheduled or triggered job.
    pub fn schedule(j: &Schedule) -> String {
        format!(
            "{}  {} for {} in {}{}\n",
            j.schedule_id,
            j.status,
            format_instant(&j.scheduled_time),
            j.timeline_id,
            j.external_system
                .as_ref()
                .map(|s| format!(" (from {s})"))
                .unwrap_or_default()
        )
    }

    /// A page of jobs.
    pub fn schedules(page: &Page<Schedule>) -> String {
        page_table(page, &["SCHEDULE", "STATUS", "RUNS AT", "TIMELINE"], |j| {
            vec![
                j.schedule_id.to_string(),
                j.status.clone(),
                format_instant(&j.scheduled_time),
                j.timeline_id.to_string(),
            ]
        })
    }

    /// The automation log.
    pub fn log(page: &Page<LogEntry>) -> String {
        page_table(page, &["TIME", "OUTCOME", "EVENT", "ACTION"], |e| {
            vec![
                format_instant(&e.timestamp),
                e.outcome.clone(),
                e.event_id.to_string(),
                e.action_taken.clone(),
            ]
        })
    }

    /// A monitor scan.
    pub fn monitor(r: &MonitorReport) -> String {
        if r.anomalies.is_empty() {
            return format!("{}: stable, no anomalies\n", r.timeline_id);
        }
        let rows = r
            .anomalies
            .iter()
            .map(|a| {
                vec![
                    a.anomaly_id.to_string(),
                    format!("{:?}", a.severity).to_lowercase(),
                    a.description.clone(),
                ]
            })
            .collect();
        let n = r.anomalies.len();
        format!(
            "{}: {n} {}\n{}",
            r.timeline_id,
            if n == 1 { "anomaly" } else { "anomalies" },
            table(&["ANOMALY", "SEVERITY", "DESCRIPTION"], rows)
        )
    }
}
