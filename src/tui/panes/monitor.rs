//! The anomaly monitor of the selected timeline, refreshed every tick: new anomalies are
//! highlighted, resolved ones stay a few refreshes, faded, then go; `f` freezes the view.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::Ctx;
use crate::model::TimelineId;
use crate::service::{Anomaly, AnomalyKind, MonitorReport, Severity};
use crate::tui::widgets::{Cursor, fmt_time, pane_block, title};

/// How many refreshes a new anomaly stays highlighted.
pub const NEW_FOR: u64 = 3;
/// How many refreshes a resolved anomaly stays on screen, faded.
pub const FADE_FOR: u64 = 3;

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
}

impl MonitorPane {
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
            extra.push(if active == 0 {
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
        let used: usize = extra.iter().map(|e| e.chars().count() + 3).sum::<usize>() + 12;
        let room = usize::from(area.width).saturating_sub(used);
        if room >= 4 {
            extra.push(crate::tui::widgets::ellipsize(timeline_name, room));
        }
        let block = pane_block(title("Monitor", Some(extra.join(" · ")), p), ctx.focused, p);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if self.timeline.is_none() {
            frame.render_widget(
                Paragraph::new(Span::styled("Select a timeline to watch it.", p.dim)),
                inner,
            );
            return;
        }
        if self.status.is_none() {
            frame.render_widget(Paragraph::new(Span::styled("Scanning…", p.dim)), inner);
            return;
        }
        if self.rows.is_empty() {
            frame.render_widget(
                Paragraph::new(Span::styled("✓ Stable: no anomalies.", p.ok)),
                inner,
            );
            return;
        }
        let height = inner.height.saturating_sub(1) as usize;
        let range = self.cursor.window(self.rows.len(), height);
        let selected = self.cursor.selected;
        // Narrow panes keep what matters: state, severity, the sentence.
        let wide = inner.width >= 70;
        let widest = inner.width >= 100;
        let rows: Vec<Row<'_>> = range
            .map(|i| {
                let r = &self.rows[i];
                let a = &r.anomaly;
                let (mark, style) = if r.resolved.is_some() {
                    ("resolved", p.dim)
                } else if self.is_new(r) {
                    ("NEW", p.warn)
                } else {
                    (
                        "",
                        match a.severity {
                            Severity::Critical => p.error,
                            Severity::Warning => p.warn,
                            Severity::Info => p.text,
                        },
                    )
                };
                let here = i == selected && ctx.focused;
                let mut cells = vec![
                    Cell::from(if here { "▶" } else { " " }),
                    Cell::from(mark),
                    Cell::from(severity_word(a.severity)),
                ];
                if wide {
                    cells.push(Cell::from(kind_word(a.kind)));
                }
                cells.push(Cell::from(a.description.clone()));
                if widest {
                    cells.push(Cell::from(fmt_time(&a.detected_at)));
                }
                Row::new(cells).style(if here { p.selected } else { style })
            })
            .collect();
        let mut widths = vec![
            Constraint::Length(1),
            Constraint::Length(8),
            Constraint::Length(4),
        ];
        let mut header = vec!["", "", "Sev."];
        if wide {
            widths.push(Constraint::Length(18));
            header.push("Kind");
        }
        widths.push(Constraint::Fill(1));
        header.push("Description");
        if widest {
            widths.push(Constraint::Length(19));
            header.push("Detected");
        }
        let table = Table::new(rows, widths)
            .header(Row::new(header).style(p.title))
            .column_spacing(1);
        frame.render_widget(table, inner);
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
    }
}
