//! The automation log: every automated action, done or failed, newest last.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph, Row, Table};

use super::Ctx;
use std::sync::Arc;

use crate::error::ServiceError;
use crate::service::prelude::*;
use crate::service::{LogEntry, LogQuery, PageRequest};
use crate::tui::widgets::{Cursor, fmt_time, pane_block, title};

/// State of the log pane.
#[derive(Debug, Default)]
pub struct LogPane {
    /// Entries as last listed.
    pub entries: Vec<LogEntry>,
    /// Selection and scroll.
    pub cursor: Cursor,
    /// Whether a listing has arrived.
    pub loaded: bool,
}

impl LogPane {
    /// Fetches the automation log's newest page.
    pub async fn fetch(svc: Arc<dyn TimelineService>) -> Result<Vec<LogEntry>, ServiceError> {
        svc.automation_log(LogQuery {
            page: PageRequest::first(PageRequest::MAX_LIMIT),
            ..LogQuery::default()
        })
        .await
        .map(|p| p.items)
    }

    /// Replaces the entries.
    pub fn set(&mut self, entries: Vec<LogEntry>) {
        self.entries = entries;
        self.loaded = true;
        self.cursor.clamp(self.entries.len());
    }

    /// Draws the pane.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, ctx: &Ctx<'_>) {
        let p = ctx.palette;
        let extra = ctx
            .loading()
            .unwrap_or_else(|| format!("{} entries", self.entries.len()));
        let block = pane_block(title("Automation log", Some(extra), p), ctx.focused, p);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if self.entries.is_empty() {
            let msg = if self.loaded {
                "No automated action has run yet.".to_owned()
            } else {
                ctx.not_loaded("Loading the automation log…")
            };
            frame.render_widget(
                Paragraph::new(Span::styled(msg, p.dim))
                    .wrap(ratatui::widgets::Wrap { trim: true }),
                inner,
            );
            return;
        }
        let height = inner.height.saturating_sub(1) as usize;
        let range = self.cursor.window(self.entries.len(), height);
        let selected = self.cursor.selected;
        let rows = range.map(|i| {
            let e = &self.entries[i];
            let outcome_style = if e.outcome == "failed" { p.error } else { p.ok };
            Row::new(vec![
                Cell::from(if i == selected && ctx.focused {
                    "▶"
                } else {
                    " "
                }),
                Cell::from(fmt_time(&e.timestamp)),
                Cell::from(Span::styled(e.outcome.clone(), outcome_style)),
                Cell::from(e.event_id.to_string()),
                Cell::from(e.action_taken.clone()),
            ])
            .style(if i == selected && ctx.focused {
                p.selected
            } else {
                p.text
            })
        });
        let table = Table::new(
            rows,
            [
                Constraint::Length(1),
                Constraint::Length(19),
                Constraint::Length(7),
                Constraint::Length(16),
                Constraint::Fill(1),
            ],
        )
        .header(Row::new(["", "When", "Outcome", "Event", "Action"]).style(p.title))
        .column_spacing(1);
        frame.render_widget(table, inner);
    }
}
