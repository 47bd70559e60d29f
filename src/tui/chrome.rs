//! The screen around the panes: the layout that places them, the header above (source,
//! connection, traveller, refresh, spinner) and the footer below (a [`Flash`] message, the
//! command line, or key hints).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::action::Slot;
use super::app::{App, Connection};
use super::command;
use super::live::Link;
use super::modal::Modal;
use super::mouse::Areas;
use super::panes::timeline_view::SUGGESTED_KEYS;
use super::panes::{Ctx, PaneId};
use super::widgets::{self, fmt_time};

/// How many ticks a flash message stays.
const FLASH_TICKS: u8 = 3;
/// Spinner frames shown while work is pending.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// A message in the footer that clears itself after a few ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flash {
    /// The text.
    pub text: String,
    /// Shown as an error.
    pub error: bool,
    /// Ticks before it goes.
    pub ticks_left: u8,
}

impl App {
    /// Shows an informational flash.
    pub fn flash_info(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash {
            text: text.into(),
            error: false,
            ticks_left: FLASH_TICKS,
        });
    }

    /// Shows an error flash (stays a little longer).
    pub fn flash_error(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash {
            text: text.into(),
            error: true,
            ticks_left: FLASH_TICKS + 2,
        });
    }

    /// A tick passed: the flash has one tick less, and goes when it has none left.
    pub(super) fn age_flash(&mut self) {
        if let Some(flash) = &mut self.flash {
            flash.ticks_left = flash.ticks_left.saturating_sub(1);
            if flash.ticks_left == 0 {
                self.flash = None;
            }
        }
    }

    // ---------------------------------------------------------------- drawing

    /// Draws the whole screen.
    pub fn draw(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        // A long flash (a problem's detail) gets up to three lines rather than being cut.
        let footer_lines = match &self.flash {
            Some(f) if !matches!(self.modal, Some(Modal::Command(_))) => {
                let width = usize::from(area.width.max(1));
                (f.text.chars().count() + 1).div_ceil(width).clamp(1, 3) as u16
            }
            _ => 1,
        };
        let [header, body, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(6),
            Constraint::Length(footer_lines),
        ])
        .areas(area);
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(body);
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(top);
        self.areas = Areas {
            timelines: left,
            search: bottom,
            lower: right,
        };
        self.draw_header(frame, header);
        let p = self.palette;
        let now = self.now();
        let here = self.whoami.as_ref().map(|w| w.timeline_id.clone());
        let ctx = |focused: bool, pending: bool| Ctx {
            palette: &p,
            now,
            focused,
            here: here.as_ref(),
            pending,
        };
        let c = ctx(
            self.focus == PaneId::Timelines,
            self.pending(Slot::Timelines) && !self.timelines.loaded,
        );
        self.timelines.render(frame, left, &c);
        let search_name = self
            .search
            .timeline
            .clone()
            .or_else(|| self.timelines.selected().map(|t| t.id.clone()))
            .map(|id| self.timelines.name_of(&id))
            .unwrap_or_else(|| "primary".into());
        let c = ctx(self.focus == PaneId::Search, self.pending(Slot::Search));
        self.search.render(frame, bottom, &c, &search_name);
        match self.lower {
            PaneId::Log => {
                let c = ctx(self.focus == PaneId::Log, self.pending(Slot::Log));
                self.log.render(frame, right, &c);
            }
            _ => {
                let name = self
                    .monitor
                    .timeline
                    .as_ref()
                    .map(|id| self.timelines.name_of(id))
                    .unwrap_or_default();
                let c = ctx(
                    self.focus == PaneId::Monitor,
                    self.pending(Slot::Monitor) && self.monitor.status.is_none(),
                );
                self.monitor.render(frame, right, &c, &name);
            }
        }
        self.draw_footer(frame, footer);
        self.draw_modal(frame, body);
    }

    /// The header: who and where the traveller is, the connection and the refresh time come
    /// first; on a narrow terminal the words around them shorten, and the data source gives
    /// way (cut with an ellipsis, or left out).
    fn draw_header(&self, frame: &mut Frame<'_>, area: Rect) {
        let p = &self.palette;
        let width = usize::from(area.width);
        let spans_for = |compact: bool| {
            let mut spans = vec![Span::styled(" chronoscope ", p.title)];
            spans.push(match (&self.connection, compact) {
                (Connection::Connecting, false) => Span::styled(" ○ connecting ", p.dim),
                (Connection::Connecting, true) => Span::styled(" ○ ", p.dim),
                (Connection::Connected, false) => Span::styled(" ● connected ", p.ok),
                (Connection::Connected, true) => Span::styled(" ● ", p.ok),
                (Connection::Disconnected(why), false) => Span::styled(
                    format!(
                        " ✗ disconnected ({}) — retrying ",
                        widgets::ellipsize(why, 40)
                    ),
                    p.error,
                ),
                (Connection::Disconnected(why), true) => Span::styled(
                    format!(" ✗ disconnected ({}) ", widgets::ellipsize(why, 40)),
                    p.error,
                ),
            });
            // How the monitor learns of changes: pushed, or polled when there is no stream.
            match (&self.follower.link, compact) {
                (Link::Live, false) => spans.push(Span::styled("↯ live ", p.ok)),
                (Link::Live, true) => spans.push(Span::styled("↯ ", p.ok)),
                (Link::Polling(why), false) => spans.push(Span::styled(
                    format!("⟳ polling ({}) ", widgets::ellipsize(why, 30)),
                    p.warn,
                )),
                (Link::Polling(_), true) => spans.push(Span::styled("⟳ polling ", p.warn)),
                (Link::Off | Link::Connecting, _) => {}
            }
            if let Some(w) = &self.whoami {
                spans.push(Span::styled(
                    format!(
                        " {} @ {} {} ",
                        w.traveller,
                        self.timelines.name_of(&w.timeline_id),
                        fmt_time(&w.time)
                    ),
                    p.text,
                ));
            }
            if let Some(at) = &self.last_refresh {
                let label = if compact { "↻" } else { "refreshed" };
                spans.push(Span::styled(
                    format!(" {label} {} ", at.format("%H:%M:%S")),
                    p.dim,
                ));
            }
            if self.busy() {
                spans.push(Span::styled(SPINNER[self.spinner % SPINNER.len()], p.warn));
            }
            spans
        };
        let used =
            |spans: &[Span]| -> usize { spans.iter().map(|s| s.content.chars().count()).sum() };
        let mut spans = spans_for(false);
        if used(&spans) > width {
            spans = spans_for(true);
        }
        let room = width.saturating_sub(used(&spans) + 2);
        if room >= self.source.chars().count().min(16) {
            spans.insert(
                1,
                Span::styled(
                    format!(" {} ", widgets::ellipsize(&self.source, room)),
                    p.text,
                ),
            );
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
    }

    /// The footer: the flash if there is one, the command line while it is open, else the
    /// key hints of where the keys go.
    fn draw_footer(&mut self, frame: &mut Frame<'_>, area: Rect) {
        let p = self.palette;
        if let Some(Modal::Command(input)) = &mut self.modal {
            command::render(frame, area, input, self.flash.as_ref(), &p);
            return;
        }
        if let Some(flash) = &self.flash {
            let style = if flash.error { p.error } else { p.ok };
            frame.render_widget(
                Paragraph::new(Span::styled(format!(" {}", flash.text), style))
                    .wrap(ratatui::widgets::Wrap { trim: false }),
                area,
            );
            return;
        }
        let hints = if matches!(self.modal, Some(Modal::Picture(_))) {
            // The picture's own keys (it takes every key while it is open).
            let mut hints: Vec<(String, &str)> = SUGGESTED_KEYS
                .iter()
                .map(|(keys, _, what)| (keys.replace(' ', "/"), *what))
                .collect();
            hints.push(("esc".to_owned(), "close"));
            hints
        } else if self.timelines.filter_input.is_some() || self.search.editing.is_some() {
            vec![
                ("enter".to_owned(), "apply"),
                ("tab".to_owned(), "next input"),
                ("esc".to_owned(), "leave the input"),
            ]
        } else {
            self.keymap.hints(self.context())
        };
        let mut spans = Vec::new();
        let mut width = 0usize;
        for (key, what) in hints {
            let len = key.chars().count() + what.chars().count() + 3;
            if width + len > area.width as usize {
                break;
            }
            width += len;
            spans.push(Span::styled(format!(" {key}"), p.key));
            spans.push(Span::styled(format!(" {what} "), p.dim));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
    }
}
