//! The anomaly monitor of the selected timeline, refreshed every tick: new anomalies are
//! highlighted, resolved ones stay a few refreshes, faded, then go; `f` freezes the view. The
//! title carries a sparkline of the anomaly count over the last refreshes.

use std::collections::VecDeque;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::Ctx;
use crate::model::TimelineId;
use std::future::Future;
use std::sync::Arc;

use crate::error::ServiceError;
use crate::service::prelude::*;
use crate::service::{Anomaly, AnomalyKind, MonitorChange, MonitorQuery, MonitorReport, Severity};
use crate::tui::theme::Palette;
use crate::tui::widgets::{Cursor, ellipsize, fmt_time, pane_block, title};

/// How many refreshes a new anomaly stays highlighted.
pub const NEW_FOR: u64 = 3;
/// How many refreshes a resolved anomaly stays on screen, faded.
pub const FADE_FOR: u64 = 3;
/// How many refreshes the anomaly-count history keeps (a minute at the default tick).
pub const HISTORY: usize = 60;
/// The widest the title's sparkline gets.
const SPARK_WIDTH: usize = 16;

/// One anomaly as the pane shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct AnomalyRow {
    /// The anomaly as last reported.
    pub anomaly: Anomaly,
    /// The refresh it first appeared in; `None` when it was there from the first scan.
    pub appeared: Option<u64>,
    /// The refresh it disappeared in.
    pub resolved: Option<u64>,
}

/// State of the monitor pane.
#[derive(Debug, Default)]
pub struct MonitorPane {
    /// The timeline watched.
    pub timeline: Option<TimelineId>,
    /// Anomalies, current and fading.
    pub rows: Vec<AnomalyRow>,
    /// Whether refreshes are paused.
    pub frozen: bool,
    /// How many reports have been applied for this timeline.
    pub refreshes: u64,
    /// Status word of the last report.
    pub status: Option<String>,
    /// Selection and scroll.
    pub cursor: Cursor,
    /// The anomaly count of the last [`HISTORY`] reports, oldest first.
    pub history: VecDeque<u64>,
}

impl MonitorPane {
    /// The scan of the watched timeline for anomalies, if one is watched.
    pub fn fetch(
        &self,
        svc: Arc<dyn TimelineService>,
    ) -> Option<impl Future<Output = Result<MonitorReport, ServiceError>> + Send + 'static> {
        let timeline_id = self.timeline.clone()?;
        Some(async move {
            svc.monitor_timeline(MonitorQuery {
                timeline_id,
                time_range: None,
            })
            .await
        })
    }

    /// Starts watching another timeline (forgets what the last one showed).
    pub fn watch(&mut self, timeline: Option<TimelineId>) {
        if self.timeline != timeline {
            *self = Self {
                timeline,
                frozen: self.frozen,
                ..Self::default()
            };
        }
    }

    /// Folds in a report: marks what is new and what was resolved, drops what has faded.
    pub fn apply(&mut self, report: MonitorReport) {
        if self.timeline.as_ref() != Some(&report.timeline_id) {
            self.watch(Some(report.timeline_id.clone()));
        }
        let first = self.refreshes == 0;
        self.refreshes += 1;
        let now = self.refreshes;
        for row in &mut self.rows {
            if row.resolved.is_none()
                && !report
                    .anomalies
                    .iter()
                    .any(|a| a.anomaly_id == row.anomaly.anomaly_id)
            {
                row.resolved = Some(now);
            }
        }
        for anomaly in report.anomalies {
            match self
                .rows
                .iter_mut()
                .find(|r| r.anomaly.anomaly_id == anomaly.anomaly_id)
            {
                Some(row) => {
                    row.anomaly = anomaly;
                    if row.resolved.take().is_some() {
                        row.appeared = Some(now); // it came back: that is news
                    }
                }
                None => self.rows.push(AnomalyRow {
                    anomaly,
                    appeared: (!first).then_some(now),
                    resolved: None,
                }),
            }
        }
        self.rows
            .retain(|r| r.resolved.is_none_or(|at| now - at < FADE_FOR));
        // Worst first, then oldest; resolved ones sink.
        self.rows.sort_by(|a, b| {
            a.resolved
                .is_some()
                .cmp(&b.resolved.is_some())
                .then(b.anomaly.severity.cmp(&a.anomaly.severity))
                .then(a.anomaly.detected_at.cmp(&b.anomaly.detected_at))
                .then(a.anomaly.anomaly_id.cmp(&b.anomaly.anomaly_id))
        });
        self.status = Some(report.status);
        self.cursor.clamp(self.rows.len());
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        let active = self.rows.iter().filter(|r| r.resolved.is_none()).count();
        self.history.push_back(active as u64);
    }

    /// The anomalies open now, as a report (what a pushed change is folded into).
    pub fn open_report(&self, now: crate::model::Instant) -> MonitorReport {
        let anomalies: Vec<Anomaly> = self
            .rows
            .iter()
            .filter(|r| r.resolved.is_none())
            .map(|r| r.anomaly.clone())
            .collect();
        MonitorReport {
            status: if anomalies.is_empty() {
                "stable".into()
            } else {
                "anomalies_detected".into()
            },
            anomalies,
            timeline_id: self.timeline.clone().unwrap_or_else(TimelineId::primary),
            checked_at: now,
        }
    }

    /// Whether a row is within its highlight period.
    pub fn is_new(&self, row: &AnomalyRow) -> bool {
        row.resolved.is_none() && row.appeared.is_some_and(|at| self.refreshes - at < NEW_FOR)
    }

    /// What the pane says instead of rows, when it has none to list: no timeline watched, its
    /// scan not in yet, or none of its anomalies standing (claimed only while scans come).
    fn nothing_listed(&self, ctx: &Ctx<'_>) -> Option<Paragraph<'static>> {
        let p = ctx.palette;
        let said = if self.timeline.is_none() {
            Span::styled("Select a timeline to watch it.", p.dim)
        } else if self.status.is_none() {
            Span::styled(ctx.not_loaded("Scanning…"), p.dim)
        } else if !self.rows.is_empty() {
            return None;
        } else if let Some(why) = ctx.offline {
            let text = format!("No anomalies at the last scan; not updated: {why}.");
            Span::styled(text, p.dim)
        } else {
            Span::styled("✓ Stable: no anomalies.", p.ok)
        };
        Some(Paragraph::new(said))
    }

    /// Draws the pane; `timeline_name` names the watched timeline.
    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        ctx: &Ctx<'_>,
        timeline_name: &str,
    ) {
        let p = ctx.palette;
        // The verdict comes first and the name last, cut to what is left: on a narrow pane the
        // count is what must stay.
        let mut extra = Vec::new();
        let active = self.rows.iter().filter(|r| r.resolved.is_none()).count();
        if self.status.is_some() {
            // "stable" is a verdict a scan that can no longer come cannot give.
            extra.push(if active == 0 && ctx.offline.is_some() {
                "0 open".into()
            } else if active == 0 {
                "stable".into()
            } else {
                format!("{active} anomal{}", if active == 1 { "y" } else { "ies" })
            });
        }
        if self.frozen {
            extra.push("FROZEN".into());
        }
        if let Some(l) = ctx.loading() {
            extra.push(l);
        }
        // Then the trend beside the count, then the name, each in what room is left.
        let used = |extra: &[String]| -> usize {
            extra.iter().map(|e| e.chars().count() + 3).sum::<usize>() + 12
        };
        let room = usize::from(area.width).saturating_sub(used(&extra));
        // A history of nothing but zeros is left out: "stable" already says it.
        let width = SPARK_WIDTH.min(self.history.len()).min(room / 2);
        if let Some(count) = extra.first_mut().filter(|_| self.status.is_some())
            && width >= 2
            && self.history.iter().any(|&n| n > 0)
        {
            count.push(' ');
            count.push_str(&sparkline(self.history.make_contiguous(), width));
        }
        let room = usize::from(area.width).saturating_sub(used(&extra));
        if room >= 4 {
            extra.push(ellipsize(timeline_name, room));
        }
        let block = pane_block(title("Monitor", Some(extra.join(" · ")), p), ctx.focused, p);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if let Some(said) = self.nothing_listed(ctx) {
            frame.render_widget(said.wrap(ratatui::widgets::Wrap { trim: true }), inner);
            return;
        }
        let height = inner.height.saturating_sub(1) as usize;
        let range = self.cursor.window(self.rows.len(), height);
        let selected = self.cursor.selected;
        // Narrow panes keep what matters: state, severity, the sentence.
        let wide = inner.width >= 70;
        let widest = inner.width >= 100;
        let marks: Vec<&'static str> = range.clone().map(|i| self.mark(&self.rows[i])).collect();
        // The state column is as wide as the marks on screen, and gone when none is: the
        // description gets the rest of the row.
        let mark_width = marks.iter().map(|m| m.chars().count()).max().unwrap_or(0) as u16;
        let mut widths = vec![Constraint::Length(1)];
        let mut header = vec![""];
        if mark_width > 0 {
            widths.push(Constraint::Length(mark_width));
            header.push("");
        }
        widths.push(Constraint::Length(4));
        header.push("Sev.");
        if wide {
            widths.push(Constraint::Length(18));
            header.push("Kind");
        }
        let description_column = widths.len();
        widths.push(Constraint::Fill(1));
        header.push("Description");
        if widest {
            widths.push(Constraint::Length(19));
            header.push("Detected");
        }
        let description_width = Layout::horizontal(widths.clone())
            .spacing(1)
            .split(inner)
            .get(description_column)
            .map_or(0, |r| usize::from(r.width));
        let rows: Vec<Row<'_>> = range
            .zip(marks)
            .map(|(i, mark)| {
                let r = &self.rows[i];
                let a = &r.anomaly;
                let style = if r.resolved.is_some() {
                    p.dim
                } else if self.is_new(r) {
                    p.warn
                } else {
                    match a.severity {
                        Severity::Critical => p.error,
                        Severity::Warning => p.warn,
                        Severity::Info => p.text,
                    }
                };
                let here = i == selected && ctx.focused;
                let mut cells = vec![Cell::from(if here { "▶" } else { " " })];
                if mark_width > 0 {
                    cells.push(Cell::from(mark));
                }
                cells.push(Cell::from(severity_word(a.severity)));
                if wide {
                    cells.push(Cell::from(kind_word(a.kind)));
                }
                // The watched timeline by its name (the row has little room for an id), cut
                // with an ellipsis so a cut one shows it: the detail shows it whole.
                let description = match &self.timeline {
                    Some(id) if !timeline_name.is_empty() => {
                        a.description.replace(id.as_str(), timeline_name)
                    }
                    _ => a.description.clone(),
                };
                cells.push(Cell::from(ellipsize(&description, description_width)));
                if widest {
                    cells.push(Cell::from(fmt_time(&a.detected_at)));
                }
                Row::new(cells).style(if here { p.selected } else { style })
            })
            .collect();
        let table = Table::new(rows, widths)
            .header(Row::new(header).style(p.title))
            .column_spacing(1);
        frame.render_widget(table, inner);
    }

    /// The state word of a row: `NEW`, `resolved`, or nothing.
    fn mark(&self, row: &AnomalyRow) -> &'static str {
        if row.resolved.is_some() {
            "resolved"
        } else if self.is_new(row) {
            "NEW"
        } else {
            ""
        }
    }
}

/// `values` as a line of block characters, one per value, the last `width` of them, scaled
/// to the largest shown: a zero is `▁`, anything above it at least `▂`, the largest `█`
/// (as `bottom` draws its graphs in text).
pub fn sparkline(values: &[u64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let shown = &values[values.len().saturating_sub(width)..];
    let max = shown.iter().copied().max().unwrap_or(0);
    shown
        .iter()
        .map(|&v| {
            if v == 0 || max == 0 {
                BARS[0]
            } else {
                // 1..=7 in u128, so no count can overflow the scaling.
                let level = (u128::from(v) * 7).div_ceil(u128::from(max));
                BARS[usize::try_from(level).unwrap_or(7).clamp(1, 7)]
            }
        })
        .collect()
}

/// Everything about an anomaly, for a detail modal: id, kind, severity, subjects, when it
/// was detected, and the whole description. Draw them in a `Paragraph` with `Wrap` so long
/// lines wrap to the modal's width.
pub fn detail_lines(anomaly: &Anomaly, palette: &Palette) -> Vec<Line<'static>> {
    let field = |label: &str, value: String, style| {
        Line::from(vec![
            Span::styled(format!("{label:<10}"), palette.dim),
            Span::styled(value, style),
        ])
    };
    let severity_style = match anomaly.severity {
        Severity::Critical => palette.error,
        Severity::Warning => palette.warn,
        Severity::Info => palette.text,
    };
    let subjects = if anomaly.subjects.is_empty() {
        "—".to_owned()
    } else {
        anomaly.subjects.join(", ")
    };
    let mut lines = vec![
        field("Anomaly", anomaly.anomaly_id.to_string(), palette.text),
        field("Kind", kind_word(anomaly.kind).to_owned(), palette.text),
        field(
            "Severity",
            severity_name(anomaly.severity).to_owned(),
            severity_style,
        ),
        field("Subjects", subjects, palette.text),
        field("Detected", fmt_time(&anomaly.detected_at), palette.text),
        Line::default(),
    ];
    lines.extend(
        anomaly
            .description
            .lines()
            .map(|l| Line::from(Span::styled(l.to_owned(), palette.text))),
    );
    lines
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Critical => "critical",
    }
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Warning => "warn",
        Severity::Critical => "crit",
    }
}

fn kind_word(k: AnomalyKind) -> &'static str {
    match k {
        AnomalyKind::Paradox(kind) => kind.as_str(),
        AnomalyKind::WindowClosing => "window_closing",
        AnomalyKind::OrphanedEvent => "orphaned_event",
        AnomalyKind::AutomationFailed => "automation_failed",
        AnomalyKind::LogTampered => "log_tampered",
    }
}

/// The monitor's report after `changes`, given the anomalies open before them (`open`): what
/// the monitor pane folds in, exactly as if it had polled.
pub fn report_after(open: MonitorReport, changes: Vec<MonitorChange>) -> MonitorReport {
    changes.into_iter().fold(open, report_after_one)
}

fn report_after_one(open: MonitorReport, change: MonitorChange) -> MonitorReport {
    match change {
        MonitorChange::Snapshot(report) => report,
        MonitorChange::Appeared(anomaly) => {
            let mut report = open;
            report
                .anomalies
                .retain(|a| a.anomaly_id != anomaly.anomaly_id);
            report.anomalies.push(anomaly);
            report.status = "anomalies_detected".into();
            report
        }
        MonitorChange::Resolved(anomaly) => {
            let mut report = open;
            report
                .anomalies
                .retain(|a| a.anomaly_id != anomaly.anomaly_id);
            if report.anomalies.is_empty() {
                report.status = "stable".into();
            }
            report
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparkline_scales_to_its_largest_value_and_keeps_zero_apart() {
        assert_eq!(sparkline(&[0, 1, 2, 4, 8], 10), "▁▂▃▅█");
        assert_eq!(sparkline(&[0, 0, 0], 10), "▁▁▁");
        assert_eq!(sparkline(&[3], 10), "█");
        assert_eq!(sparkline(&[], 10), "");
        // One anomaly among thousands still shows above zero.
        assert_eq!(sparkline(&[0, 1, 7_000], 3), "▁▂█");
        assert_eq!(sparkline(&[u64::MAX, 0, u64::MAX / 2], 3), "█▁▅");
    }

    #[test]
    fn a_sparkline_shows_the_newest_values_that_fit() {
        let values: Vec<u64> = (1..=20).collect();
        let line = sparkline(&values, 4);
        assert_eq!(line.chars().count(), 4);
        // 17..=20 scaled to 20: all in the top two levels.
        assert_eq!(line, "▇███");
        assert_eq!(sparkline(&values, 0), "");
    }

    fn report(n: usize) -> MonitorReport {
        MonitorReport {
            status: if n == 0 {
                "stable"
            } else {
                "anomalies_detected"
            }
            .into(),
            anomalies: (0..n)
                .map(|i| Anomaly {
                    anomaly_id: crate::model::AnomalyId::derived(&format!("a{i}")),
                    description: format!("anomaly {i}"),
                    kind: AnomalyKind::OrphanedEvent,
                    severity: Severity::Warning,
                    subjects: vec![],
                    detected_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
                })
                .collect(),
            timeline_id: TimelineId::primary(),
            checked_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        }
    }

    #[test]
    fn the_history_is_bounded_and_forgotten_with_the_timeline() {
        let mut pane = MonitorPane::default();
        pane.watch(Some(TimelineId::primary()));
        for i in 0..(HISTORY + 10) {
            pane.apply(report(i % 4));
        }
        assert_eq!(pane.history.len(), HISTORY);
        assert_eq!(pane.history.back(), Some(&((HISTORY as u64 + 9) % 4)));
        pane.watch(Some(TimelineId::from_ulid(ulid::Ulid::from(7u128))));
        assert!(pane.history.is_empty());
    }
}
