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
use crate::error::ServiceError;
use crate::model::Instant;
use crate::service::{RestrictionLevel, TravellerStatus};

/// Why you see nothing new, when an operator restricted you to `no_access` (operators are
/// never restricted).
fn no_access(me: &TravellerStatus) -> Option<String> {
    let r = me.restriction.as_ref().filter(|_| !me.operator)?;
    (r.level == RestrictionLevel::NoAccess).then(|| {
        format!(
            "An operator ({}) restricted you to no_access at {}: the service answers nothing but \
             who you are",
            r.set_by,
            fmt_time(&r.at)
        )
    })
}

/// Whether the service answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Connection {
    /// No answer yet.
    Connecting,
    /// The last call was answered.
    Connected,
    /// The last call failed as unavailable (the server is down, restarting, or slow); asked
    /// again every tick.
    Disconnected(String),
    /// The server cannot be used as configured, and asking again will not change that: its
    /// certificate is not trusted or not for this name, or it speaks http where https was
    /// asked (or the reverse). Still asked every tick, in case the server changes.
    Unusable(String),
    /// The server answers but refuses the token (expired, or signed with another secret).
    TokenRefused(String),
    /// An operator restricted you to `no_access`: the service answers who you are (and why),
    /// and refuses everything else, so nothing on screen is updated.
    Restricted(String),
}

impl Connection {
    /// What an answer says of the connection (`Ok(Some(me))` a `whoami` answer): the service
    /// is gone, refuses the token, answers only who you are (restricted to `no_access`), or
    /// answers; `None` when it says nothing new.
    pub fn after(&self, answer: Result<Option<&TravellerStatus>, &ServiceError>) -> Option<Self> {
        Some(match answer {
            Err(e @ ServiceError::Unavailable(why)) if crate::client::is_lasting(e) => {
                Connection::Unusable(why.clone())
            }
            Err(ServiceError::Unavailable(why)) => Connection::Disconnected(why.clone()),
            Err(ServiceError::Unauthorized(why)) => Connection::TokenRefused(why.clone()),
            Ok(Some(me)) => no_access(me).map_or(Connection::Connected, Connection::Restricted),
            // At no_access only who you are is answered: nothing else lifts it.
            _ if matches!(self, Connection::Restricted(_)) => self.clone(),
            Ok(None) => Connection::Connected,
            // Any other answer is an answer: the server is there.
            Err(_) if *self == Connection::Connecting => Connection::Connected,
            Err(_) => return None,
        })
    }

    /// Why a change is not sent now, when answers do not come: the form keeps what was typed,
    /// to send again once they do.
    pub fn unsent(&self) -> Option<String> {
        self.offline().map(|why| {
            format!(
                "Not sent: {why} (see above). What you typed is kept: send it again once the \
                 header says connected."
            )
        })
    }

    /// What to say when answers come again after this state: `None` on the first answer.
    pub fn welcome_back(&self) -> Option<&'static str> {
        match self {
            Connection::Connecting | Connection::Connected => None,
            Connection::Restricted(_) => Some("Your restriction was lifted."),
            _ => Some("Reconnected."),
        }
    }

    /// Why no answer comes, in a few words, for what the panes have not loaded; `None` when
    /// answers come (or may yet).
    pub fn offline(&self) -> Option<&'static str> {
        match self {
            Connection::Connecting | Connection::Connected => None,
            Connection::Disconnected(_) => Some("the service does not answer"),
            Connection::Unusable(_) => Some("the server cannot be used as configured"),
            Connection::TokenRefused(_) => Some("the server refuses the token"),
            Connection::Restricted(_) => Some("an operator restricted you to no_access"),
        }
    }

    /// The whole story of a failed connection, for the banner under the header; `None` when
    /// there is nothing wrong.
    pub fn banner(&self) -> Option<String> {
        let sentence = |s: &str| {
            let s = s.trim_end_matches('.');
            // A question ends as one: "does it serve plain http:// there?", not "?.".
            let stop = if s.ends_with('?') { "" } else { "." };
            let mut chars = s.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect::<String>() + stop
            })
        };
        match self {
            Connection::Connecting | Connection::Connected => None,
            Connection::Disconnected(why) => Some(format!(
                "✗ {} Asking again every few seconds; what is on screen may be stale.",
                sentence(why)
            )),
            Connection::Unusable(why) => Some(format!(
                "✗ {} Asking again will not help: change the configuration and start the \
                 dashboard again.",
                sentence(why)
            )),
            Connection::TokenRefused(why) => Some(format!(
                "✗ The server refused the token: {}. Nothing on screen is updated; start the \
                 dashboard again with a valid token (--token or CHRONOSCOPE_TOKEN).",
                why.trim_end_matches('.')
            )),
            Connection::Restricted(why) => Some(format!(
                "✗ {} Nothing on screen is updated: what it shows is from before. Ask an \
                 operator to lift the restriction; the dashboard goes on when they do.",
                sentence(why)
            )),
        }
    }
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
    /// Under the header, what is wrong with the connection, whole (no rows when nothing is).
    pub banner: Rect,
    /// Everything between header and footer (modals draw over it).
    pub body: Rect,
    /// The footer.
    pub footer: Rect,
    /// The panes.
    pub panes: Areas,
}

/// Lays out a frame of `area`: the timelines top left, the monitor or the log top right, the
/// search below; a long `flash` (a problem's detail) gets up to three footer lines rather than
/// being cut, unless the command line takes the footer; a `banner` (what is wrong with the
/// connection) gets the lines it needs under the header, up to six.
pub fn layout(
    area: Rect,
    flash: Option<&Flash>,
    command_line: bool,
    banner: Option<&str>,
) -> Screen {
    let width = usize::from(area.width.max(1));
    let footer_lines = match flash {
        Some(f) if !command_line => (f.text.chars().count() + 1).div_ceil(width).clamp(1, 3) as u16,
        _ => 1,
    };
    let banner_lines = banner.map_or(0, |b| wrapped_lines(b, width).clamp(1, 6));
    let [header, banner, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(banner_lines),
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
        banner,
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
        // `room`: the most characters the timeline's name may take (it gives way last).
        // `words`: short words for the connection, the stream and the refresh ("online",
        // "live", "as of") where the long ones do not fit; bare symbols only when even those
        // do not. `title`: whether the program's name leads (it gives way before the words).
        let spans_for = |compact: bool, words: bool, room: usize, title: bool| {
            let mut spans = Vec::new();
            if title {
                spans.push(Span::styled(" chronoscope ", p.title));
            }
            spans.push(match (self.connection, compact) {
                (Connection::Connecting, false) => Span::styled(" ○ connecting ", p.dim),
                (Connection::Connecting, true) => Span::styled(" ○ ", p.dim),
                (Connection::Connected, false) => Span::styled(" ● connected ", p.ok),
                (Connection::Connected, true) if words => Span::styled(" ● online ", p.ok),
                (Connection::Connected, true) => Span::styled(" ● ", p.ok),
                // The banner under the header says why, whole.
                (Connection::Disconnected(_), false) => {
                    Span::styled(" ✗ disconnected — retrying ", p.error)
                }
                (Connection::Disconnected(_), true) => Span::styled(" ✗ disconnected ", p.error),
                (Connection::Unusable(_), _) => Span::styled(" ✗ cannot connect ", p.error),
                (Connection::TokenRefused(_), false) => {
                    Span::styled(" ✗ token refused — not updating ", p.error)
                }
                (Connection::TokenRefused(_), true) => Span::styled(" ✗ token refused ", p.error),
                (Connection::Restricted(_), false) => {
                    Span::styled(" ✗ restricted — not updating ", p.error)
                }
                (Connection::Restricted(_), true) => Span::styled(" ✗ restricted ", p.error),
            });
            // How the monitor learns of changes: pushed, or polled when there is no stream.
            // Not said while calls fail: a stream opened earlier may still push, but nothing
            // else on screen is updated, and "live" next to the failure would say otherwise.
            let answering = matches!(
                self.connection,
                Connection::Connecting | Connection::Connected
            );
            match (self.link, compact) {
                _ if !answering => {}
                (Link::Live, false) => spans.push(Span::styled("↯ live ", p.ok)),
                (Link::Live, true) if words => spans.push(Span::styled("↯ live", p.ok)),
                (Link::Live, true) => spans.push(Span::styled("↯ ", p.ok)),
                (Link::Polling(why), false) => spans.push(Span::styled(
                    format!("⟳ polling ({}) ", widgets::ellipsize(why, 30)),
                    p.warn,
                )),
                (Link::Polling(_), true) => spans.push(Span::styled("⟳ polling ", p.warn)),
                // The server answers calls, so why the stream could not reach it is stale.
                (Link::Unreached(_), false) => {
                    spans.push(Span::styled("⟳ polling (stream reconnecting) ", p.warn))
                }
                (Link::Unreached(_), true) => spans.push(Span::styled("⟳ polling ", p.warn)),
                (Link::Off | Link::Connecting, _) => {}
            }
            if let Some((w, place)) = &self.whoami {
                spans.push(Span::styled(format!(" {}", w.traveller), p.text));
                // What you may not do, said by your name: a token that only reads, a restriction.
                if let Some(limit) = limits(w, compact) {
                    spans.push(Span::styled(limit, p.warn));
                }
                spans.push(Span::styled(
                    format!(
                        " @ {} {} ",
                        widgets::ellipsize(place, room),
                        fmt_time(&w.time)
                    ),
                    p.text,
                ));
                // Your time stands still; said right by it, in words, however narrow.
                if w.position.paused {
                    spans.push(Span::styled("⏸ paused ", p.warn));
                }
            }
            if let Some(at) = self.last_refresh.filter(|_| answering) {
                // Right after the position's trailing space when compact.
                let label = match (compact, words) {
                    (false, _) => " refreshed",
                    (true, true) => "as of",
                    (true, false) => "↻",
                };
                spans.push(Span::styled(
                    format!("{label} {} ", at.format("%H:%M:%S")),
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
        let mut spans = spans_for(false, true, usize::MAX, true);
        // Still too wide: short words, the timeline's name cut (so the time and "paused" stay
        // whole) to no fewer than `least` characters, the program's name left out, then bare
        // symbols.
        for (words, least, title) in [
            (true, usize::MAX, true),
            (true, 12, true),
            (true, 12, false),
            (false, usize::MAX, true),
            (false, 8, true),
        ] {
            if used(&spans) <= width {
                break;
            }
            let room = match &self.whoami {
                Some((_, place)) if least < usize::MAX => {
                    let over = used(&spans) - width;
                    let length = place.chars().count();
                    length.saturating_sub(over).max(least.min(length))
                }
                _ => usize::MAX,
            };
            spans = spans_for(true, words, room, title);
        }
        let room = width.saturating_sub(used(&spans) + 2);
        // After the program's name, when it is there (it gave way first).
        let titled = spans.first().is_some_and(|s| s.content == " chronoscope ");
        if titled && room >= self.source.chars().count().min(16) {
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

/// What the header says by your name when you may not change things: your token allows
/// reading only, or an operator restricted you (operators are never either).
fn limits(w: &TravellerStatus, compact: bool) -> Option<String> {
    let restricted = w
        .restriction
        .as_ref()
        .map(|r| r.level)
        .filter(|l| *l != crate::service::RestrictionLevel::Unrestricted);
    match (w.read_only_token, restricted, compact) {
        _ if w.operator => None,
        (_, Some(level), false) => Some(format!(" (restricted: {})", level.as_str())),
        (_, Some(_), true) => Some(" ⊘".into()),
        (true, None, false) => Some(" (read-only token)".into()),
        (true, None, true) => Some(" ro".into()),
        (false, None, _) => None,
    }
}

/// How many lines `text` takes wrapped at word boundaries to `width` (as [`render_banner`]
/// wraps it).
fn wrapped_lines(text: &str, width: usize) -> u16 {
    u16::try_from(super::widgets::wrap_words(text, width).len()).unwrap_or(u16::MAX)
}

/// Draws the connection's banner: the whole reason, wrapped.
pub fn render_banner(frame: &mut Frame<'_>, area: Rect, text: &str, p: &Palette) {
    if area.height == 0 {
        return;
    }
    frame.render_widget(
        Paragraph::new(Span::styled(text.to_owned(), p.error))
            .wrap(ratatui::widgets::Wrap { trim: true }),
        area,
    );
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
    whole_key: &str,
    p: &Palette,
) {
    if let Some(flash) = flash {
        let style = if flash.error { p.error } else { p.ok };
        let text = fitted(&flash.text, area, whole_key);
        frame.render_widget(
            Paragraph::new(Span::styled(text, style)).wrap(ratatui::widgets::Wrap { trim: false }),
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

/// What the key that shows the last message whole does, said when a message is cut.
const WHOLE_MESSAGE: &str = "reads it whole";

/// A flash as the footer shows it in `area`: whole when it fits, else cut so that it ends with
/// "… KEY reads it whole" (`key`), so that no message is cut without a way to read it.
fn fitted(text: &str, area: Rect, key: &str) -> String {
    let lines = |t: &str| {
        Paragraph::new(t)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .line_count(area.width)
    };
    let shown = format!(" {text}");
    let rows = usize::from(area.height.max(1));
    if lines(&shown) <= rows {
        return shown;
    }
    let tail = format!("… {key} {WHOLE_MESSAGE}");
    let chars: Vec<char> = shown.chars().collect();
    let mut keep = (usize::from(area.width) * rows).min(chars.len());
    loop {
        let cut: String = chars[..keep].iter().collect();
        let candidate = format!("{}{tail}", cut.trim_end());
        if keep == 0 || lines(&candidate) <= rows {
            return candidate;
        }
        keep -= 1;
    }
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
        assert_eq!(layout(area, None, false, None).footer.height, 1);
        assert_eq!(layout(area, Some(&long), false, None).footer.height, 3);
        assert_eq!(layout(area, Some(&long), true, None).footer.height, 1);
        let screen = layout(area, None, false, None);
        assert_eq!(screen.panes.timelines.width, 24, "60% left");
        assert_eq!(screen.panes.search.width, 40, "the search spans the width");
    }

    #[test]
    fn a_narrow_header_keeps_the_state_and_drops_the_source() {
        let p = palette();
        let header = Header {
            palette: &p,
            source: "server: https://chronoscope.example.org",
            connection: &Connection::Disconnected("connection refused".into()),
            link: &Link::Polling("no stream".into()),
            whoami: None,
            last_refresh: None,
            spinner: Some(0),
        };
        let wide = screen(140, 1, |f| header.render(f, f.area()));
        assert!(wide.contains("chronoscope.example.org"), "{wide}");
        assert!(wide.contains("✗ disconnected — retrying"), "{wide}");
        let narrow = screen(60, 1, |f| header.render(f, f.area()));
        assert!(!narrow.contains("example.org"), "{narrow}");
        assert!(narrow.contains("✗ disconnected"), "{narrow}");
        // Connected, how the monitor learns of changes is said too, shorter when narrow.
        let polling = Header {
            connection: &Connection::Connected,
            ..header
        };
        let wide = screen(140, 1, |f| polling.render(f, f.area()));
        assert!(wide.contains("polling (no stream)"), "{wide}");
        let narrow = screen(60, 1, |f| polling.render(f, f.area()));
        assert!(!narrow.contains("example.org"), "{narrow}");
        assert!(narrow.contains("⟳ polling"), "{narrow}");
    }

    #[test]
    fn a_paused_clock_is_said_whole_and_a_long_timeline_name_gives_way() {
        let p = palette();
        let at: Instant = "1957-04-22T15:33:16Z".parse().expect("a time");
        let you = TravellerStatus {
            traveller: "ada".parse().expect("a traveller"),
            timeline_id: crate::model::TimelineId::primary(),
            time: at,
            position: crate::model::Position {
                timeline: crate::model::TimelineId::primary(),
                arrival_time: at,
                arrived_at: at,
                paused: true,
                location: None,
            },
            operator: false,
            restriction: None,
            read_only_token: false,
        };
        let header = Header {
            palette: &p,
            source: "embedded: /tmp/chronoscope.db",
            connection: &Connection::Connected,
            link: &Link::Live,
            whoami: Some((&you, "Katherine Johnson mission to Langley".to_owned())),
            last_refresh: Some(&at),
            spinner: None,
        };
        let wide = screen(140, 1, |f| header.render(f, f.area()));
        assert!(
            wide.contains(
                "ada @ Katherine Johnson mission to Langley 1957-04-22 15:33:16 ⏸ paused"
            ),
            "{wide}"
        );
        let narrow = screen(70, 1, |f| header.render(f, f.area()));
        assert!(narrow.contains("1957-04-22 15:33:16 ⏸ paused"), "{narrow}");
        assert!(narrow.contains("ada @ Katheri…"), "cut, not gone: {narrow}");
    }

    /// The header and the banner of `connection` on a `width` x 12 screen, and the rows the
    /// banner was given.
    fn header_and_banner(connection: &Connection, width: u16) -> (String, Rect) {
        let p = palette();
        let banner = connection.banner();
        let mut banner_area = Rect::default();
        let text = screen(width, 12, |f| {
            let s = layout(f.area(), None, false, banner.as_deref());
            banner_area = s.banner;
            Header {
                palette: &p,
                source: "server: https://localhost:19443",
                connection,
                link: &Link::Off,
                whoami: None,
                last_refresh: None,
                spinner: None,
            }
            .render(f, s.header);
            if let Some(b) = &banner {
                render_banner(f, s.banner, b, &p);
            }
        });
        (text, banner_area)
    }

    /// The words of a screen, across its lines.
    fn words(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn a_connection_that_cannot_work_is_said_whole_and_not_promised_a_retry() {
        let why = "cannot reach https://localhost:19443: the server's certificate is not \
                   trusted (unknown issuer); if a private CA signed it, pass that CA with \
                   --ca-cert FILE (or CHRONOSCOPE_CA_CERT)";
        for width in [80, 140] {
            let (text, banner) = header_and_banner(&Connection::Unusable(why.into()), width);
            let header = text.lines().next().unwrap_or_default();
            assert!(header.contains("✗ cannot connect"), "{text}");
            assert!(!text.contains("retrying"), "{text}");
            // Every word of the reason, none cut, on the rows the banner was given.
            let said = words(&text).to_lowercase();
            let why = words(why).to_lowercase();
            assert!(said.contains(&why) && !text.contains('…'), "{text}");
            assert!(
                words(&text).contains("Asking again will not help"),
                "{text}"
            );
            let lines: Vec<&str> = text.lines().collect();
            let last = usize::from(banner.bottom()) - 1;
            assert!(!lines[last].trim().is_empty(), "{text}");
            assert!(lines[last + 1].trim().is_empty(), "{text}");
        }
    }

    #[test]
    fn a_refused_token_is_said_as_such_and_a_passing_outage_as_retried() {
        let expired = Connection::TokenRefused("the token has expired".into());
        for width in [80, 140] {
            let (text, _) = header_and_banner(&expired, width);
            assert!(
                text.lines()
                    .next()
                    .unwrap_or_default()
                    .contains("✗ token refused")
            );
            assert!(!text.contains("● connected"), "{text}");
            assert!(
                words(&text).contains("The server refused the token: the token has expired."),
                "{text}"
            );
            assert!(words(&text).contains("--token"), "{text}");
        }
        let down = Connection::Disconnected("cannot reach http://x: connection refused".into());
        let (text, _) = header_and_banner(&down, 80);
        assert!(text.contains("✗ disconnected"), "{text}");
        assert!(
            words(&text).contains("Cannot reach http://x: connection refused. Asking again"),
            "{text}"
        );
        for fine in [Connection::Connected, Connection::Connecting] {
            assert_eq!(fine.banner(), None);
            let (text, banner) = header_and_banner(&fine, 80);
            assert_eq!(banner.height, 0, "{text}");
        }
    }

    #[test]
    fn a_stream_still_open_is_not_called_live_while_calls_are_refused() {
        let p = palette();
        let header = |connection: &Connection| {
            let header = Header {
                palette: &p,
                source: "server: https://localhost:19443",
                connection,
                link: &Link::Live,
                whoami: None,
                last_refresh: None,
                spinner: None,
            };
            screen(140, 1, |f| header.render(f, f.area()))
        };
        assert!(header(&Connection::Connected).contains("↯ live"));
        // At 80 columns, short words rather than bare symbols.
        let compact = Header {
            palette: &p,
            source: "server: https://localhost:19443",
            connection: &Connection::Connected,
            link: &Link::Live,
            whoami: None,
            last_refresh: None,
            spinner: None,
        };
        let narrow = screen(30, 1, |f| compact.render(f, f.area()));
        assert!(narrow.contains("● online ↯ live"), "{narrow}");
        let refused = Connection::TokenRefused("the token expired at 06:00:00Z".into());
        let down = Connection::Disconnected("connection refused".into());
        for connection in [refused, down] {
            let text = header(&connection);
            assert!(!text.contains("live") && !text.contains("↯"), "{text}");
            assert!(text.contains('✗'), "{text}");
        }
    }

    #[test]
    fn a_reason_that_asks_a_question_ends_with_it() {
        let tls = Connection::Unusable(
            "cannot reach https://x: the server did not answer in TLS; does it serve plain \
             http:// there?"
                .into(),
        );
        let banner = tls.banner().unwrap_or_default();
        assert!(banner.contains("http:// there? Asking again"), "{banner}");
    }

    #[test]
    fn wrapped_lines_counts_what_the_banner_draws() {
        assert_eq!(wrapped_lines("one two three", 13), 1);
        assert_eq!(wrapped_lines("one two three", 12), 2);
        assert_eq!(wrapped_lines("abcdefghij", 4), 3);
        assert_eq!(wrapped_lines("", 10), 1);
    }

    #[test]
    fn the_footer_shows_the_flash_else_the_hints_that_fit() {
        let p = palette();
        let hints = || vec![("tab".to_owned(), "next pane"), ("q".to_owned(), "quit")];
        let text = screen(20, 1, |f| {
            render_footer(f, f.area(), None, hints(), "w", &p)
        });
        assert_eq!(text.trim_end(), " tab next pane");
        let flash = Flash::info("Created.");
        let text = screen(20, 1, |f| {
            render_footer(f, f.area(), Some(&flash), hints(), "w", &p)
        });
        assert_eq!(text.trim_end(), " Created.");
    }
}
