//! The screen around the panes: the [`layout`] that places them, the [`Header`] above (source,
//! connection, traveller, refresh, spinner) and the footer below (a [`Flash`] message or key
//! hints; the command line draws itself there while it is open).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::live::Link;
use super::mouse::Areas;
use super::panes::timeline_view::SUGGESTED_KEYS;
use super::theme::Palette;
use super::widgets::{self, fmt_time};
use crate::model::Instant;
use crate::service::TravellerStatus;

/// Whether the service answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Connection {
    /// No answer yet.
    Connecting,
    /// The last call was answered.
    Connected,
    /// The last call failed as unavailable; retried every tick.
    Disconnected(String),
}

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

impl Flash {
    /// An informational flash.
    pub fn info(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            error: false,
            ticks_left: FLASH_TICKS,
        }
    }

    /// An error flash (stays a little longer).
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            error: true,
            ticks_left: FLASH_TICKS + 2,
        }
    }

    /// The flash a tick later: one tick less, and gone when it has none left.
    pub fn aged(mut self) -> Option<Self> {
        self.ticks_left = self.ticks_left.saturating_sub(1);
        (self.ticks_left > 0).then_some(self)
    }
}

/// Where a frame puts things.
#[derive(Clone, Copy, Debug)]
pub struct Screen {
    /// The header line.
    pub header: Rect,
    /// Everything between header and footer (modals draw over it).
    pub body: Rect,
    /// The footer.
    pub footer: Rect,
    /// The panes.
    pub panes: Areas,
}

/// Lays out a frame of `area`: the timelines top left, the monitor or the log top right, the
/// search below; a long `flash` (a problem's detail) gets up to three footer lines rather than
/// being cut, unless the command line takes the footer.
pub fn layout(area: Rect, flash: Option<&Flash>, command_line: bool) -> Screen {
    let footer_lines = match flash {
        Some(f) if !command_line => {
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
    Screen {
        header,
        body,
        footer,
        panes: Areas {
            timelines: left,
            search: bottom,
            lower: right,
        },
    }
}

/// What the header shows.
#[derive(Clone, Debug)]
pub struct Header<'a> {
    /// Styles.
    pub palette: &'a Palette,
    /// Where the data comes from.
    pub source: &'a str,
    /// Whether the service answers.
    pub connection: &'a Connection,
    /// How the monitor learns of changes.
    pub link: &'a Link,
    /// Who and where the traveller is, with their timeline's name.
    pub whoami: Option<(&'a TravellerStatus, String)>,
    /// When the last `whoami` answer arrived.
    pub last_refresh: Option<&'a Instant>,
    /// The spinner's frame while work is pending.
    pub spinner: Option<usize>,
}

impl Header<'_> {
    /// Draws the header: who and where the traveller is, the connection and the refresh time
    /// come first; on a narrow terminal the words around them shorten, and the data source
    /// gives way (cut with an ellipsis, or left out).
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let p = self.palette;
        let width = usize::from(area.width);
        let spans_for = |compact: bool| {
            let mut spans = vec![Span::styled(" chronoscope ", p.title)];
            spans.push(match (self.connection, compact) {
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
            match (self.link, compact) {
                (Link::Live, false) => spans.push(Span::styled("↯ live ", p.ok)),
                (Link::Live, true) => spans.push(Span::styled("↯ ", p.ok)),
                (Link::Polling(why), false) => spans.push(Span::styled(
                    format!("⟳ polling ({}) ", widgets::ellipsize(why, 30)),
                    p.warn,
                )),
                (Link::Polling(_), true) => spans.push(Span::styled("⟳ polling ", p.warn)),
                (Link::Off | Link::Connecting, _) => {}
            }
            if let Some((w, place)) = &self.whoami {
                spans.push(Span::styled(
                    format!(" {} @ {} {} ", w.traveller, place, fmt_time(&w.time)),
                    p.text,
                ));
            }
            if let Some(at) = self.last_refresh {
                let label = if compact { "↻" } else { "refreshed" };
                spans.push(Span::styled(
                    format!(" {label} {} ", at.format("%H:%M:%S")),
                    p.dim,
                ));
            }
            if let Some(frame) = self.spinner {
                spans.push(Span::styled(SPINNER[frame % SPINNER.len()], p.warn));
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
                    format!(" {} ", widgets::ellipsize(self.source, room)),
                    p.text,
                ),
            );
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
    }
}

/// The picture's own keys, as footer hints (it takes every key while it is open).
pub fn picture_hints() -> Vec<(String, &'static str)> {
    let mut hints: Vec<(String, &str)> = SUGGESTED_KEYS
        .iter()
        .map(|(keys, _, what)| (keys.replace(' ', "/"), *what))
        .collect();
    hints.push(("esc".to_owned(), "close"));
    hints
}

/// The footer hints while an input is edited.
pub fn input_hints() -> Vec<(String, &'static str)> {
    vec![
        ("enter".to_owned(), "apply"),
        ("tab".to_owned(), "next input"),
        ("esc".to_owned(), "leave the input"),
    ]
}

/// Draws the footer: the flash if there is one, else as many of the key `hints` as fit.
pub fn render_footer(
    frame: &mut Frame<'_>,
    area: Rect,
    flash: Option<&Flash>,
    hints: Vec<(String, &str)>,
    p: &Palette,
) {
    if let Some(flash) = flash {
        let style = if flash.error { p.error } else { p.ok };
        frame.render_widget(
            Paragraph::new(Span::styled(format!(" {}", flash.text), style))
                .wrap(ratatui::widgets::Wrap { trim: false }),
            area,
        );
        return;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::{palette, screen};

    #[test]
    fn a_flash_goes_after_its_ticks_and_an_error_stays_longer() {
        let ticks = |mut flash: Option<Flash>| {
            let mut n = 0;
            while let Some(f) = flash {
                flash = f.aged();
                n += 1;
            }
            n
        };
        assert_eq!(ticks(Some(Flash::info("saved"))), FLASH_TICKS);
        assert_eq!(ticks(Some(Flash::error("refused"))), FLASH_TICKS + 2);
    }

    #[test]
    fn a_long_flash_gets_up_to_three_footer_lines_unless_the_command_line_is_open() {
        let area = Rect::new(0, 0, 40, 30);
        let long = Flash::error("x".repeat(200));
        assert_eq!(layout(area, None, false).footer.height, 1);
        assert_eq!(layout(area, Some(&long), false).footer.height, 3);
        assert_eq!(layout(area, Some(&long), true).footer.height, 1);
        let screen = layout(area, None, false);
        assert_eq!(screen.panes.timelines.width, 24, "60% left");
        assert_eq!(screen.panes.search.width, 40, "the search spans the width");
    }

    #[test]
    fn a_narrow_header_keeps_the_state_and_drops_the_source() {
        let p = palette();
        let header = Header {
            palette: &p,
            source: "server: https://chronoscope.example.org",
            connection: &Connection::Disconnected("refused".into()),
            link: &Link::Polling("no stream".into()),
            whoami: None,
            last_refresh: None,
            spinner: Some(0),
        };
        let wide = screen(140, 1, |f| header.render(f, f.area()));
        assert!(wide.contains("chronoscope.example.org"), "{wide}");
        assert!(wide.contains("disconnected (refused) — retrying"), "{wide}");
        assert!(wide.contains("polling (no stream)"), "{wide}");
        let narrow = screen(60, 1, |f| header.render(f, f.area()));
        assert!(!narrow.contains("example.org"), "{narrow}");
        assert!(narrow.contains("disconnected (refused)"), "{narrow}");
        assert!(narrow.contains("⟳ polling"), "{narrow}");
    }

    #[test]
    fn the_footer_shows_the_flash_else_the_hints_that_fit() {
        let p = palette();
        let hints = || vec![("tab".to_owned(), "next pane"), ("q".to_owned(), "quit")];
        let text = screen(20, 1, |f| render_footer(f, f.area(), None, hints(), &p));
        assert_eq!(text.trim_end(), " tab next pane");
        let flash = Flash::info("Created.");
        let text = screen(20, 1, |f| {
            render_footer(f, f.area(), Some(&flash), hints(), &p)
        });
        assert_eq!(text.trim_end(), " Created.");
    }
}
