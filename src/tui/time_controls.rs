//! Time controls: fast-forward and rewind along your own timeline by a preset or a typed
//! duration ([`Shift`]). Pausing and resuming your clock need no screen of their own: one key
//! toggles them, and the header says when your clock stands still.
//!
//! The shift is checked as it is typed (the same grammar as the service's: `10m`, `1h30m`,
//! `2w`, `PT45M`, `P1M`), so a duration that does not parse is explained under the input and
//! nothing is sent. A sent one waits, as forms do, for the answer: made, the dialog closes and
//! the footer says where you are; refused, the reason stays under the input.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui_textarea::TextArea;

use super::effect::{Call, Effect, Outcome, Reload};
use super::theme::Palette;
use super::widgets::{self, centered, fmt_time, modal};
use crate::model::{TimelineId, TravelDuration};
use crate::service::{ClockState, Journey, ShiftRequest, TravellerStatus};

/// The preset durations, as sent and as shown, shortest first.
pub const PRESETS: [(&str, &str); 6] = [
    ("10m", "10 minutes"),
    ("1h", "1 hour"),
    ("1d", "1 day"),
    ("1w", "1 week"),
    ("P1M", "1 month"),
    ("P1Y", "1 year"),
];

/// A duration as the user reads it: a preset in words, else as typed.
pub fn spoken(duration: &str) -> String {
    PRESETS
        .iter()
        .find(|(code, _)| code.eq_ignore_ascii_case(duration.trim()))
        .map_or_else(
            || duration.trim().to_owned(),
            |(_, words)| (*words).to_owned(),
        )
}

/// The duration input, empty, with examples of what it takes.
fn empty_input() -> TextArea<'static> {
    widgets::input("", "or type one: 1h30m, 2d, 2w, PT45M, P1M, P1Y")
}

/// The fast-forward / rewind dialog.
#[derive(Debug)]
pub struct Shift {
    /// Forward in time (fast-forward), or back (rewind).
    pub forward: bool,
    /// The preset used when nothing is typed (an index into [`PRESETS`]).
    pub preset: usize,
    /// A typed duration; when empty, the preset is used.
    pub input: TextArea<'static>,
    /// Sent and waiting for the answer.
    pub pending: bool,
    /// Why the last attempt was refused (by the grammar here, or by the service).
    pub refusal: Option<String>,
}

impl Shift {
    /// The dialog, forward or back, on the first preset.
    pub fn new(forward: bool) -> Self {
        Self {
            forward,
            preset: 0,
            input: empty_input(),
            pending: false,
            refusal: None,
        }
    }

    /// The duration that enter sends: what is typed, else the preset.
    pub fn duration(&self) -> String {
        let typed = widgets::input_text(&self.input);
        if typed.is_empty() {
            PRESETS[self.preset.min(PRESETS.len() - 1)].0.to_owned()
        } else {
            typed
        }
    }

    /// What the duration means, or why it means nothing.
    fn parsed(&self) -> Result<TravelDuration, String> {
        TravelDuration::parse("duration", &self.duration()).map_err(|e| e.to_string())
    }

    /// The verb for what it does.
    fn verb(&self) -> &'static str {
        if self.forward {
            "Fast-forward"
        } else {
            "Rewind"
        }
    }

    /// A key: ←→ choose a preset as they are laid out, in a row (while nothing is typed; then
    /// they move in the input), ↑↓ too (and drop what was typed), typing edits the duration, tab
    /// turns forward into back and back into forward, enter sends (once), esc closes.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Esc => return Outcome::close(),
            KeyCode::Enter if self.pending => {}
            KeyCode::Enter => match self.parsed() {
                Ok(_) => {
                    self.pending = true;
                    self.refusal = None;
                    let request = ShiftRequest {
                        duration: self.duration(),
                        ..ShiftRequest::default()
                    };
                    return Outcome::with(Effect::Call(Call::Shift(request, self.forward)));
                }
                Err(why) => self.refusal = Some(why),
            },
            KeyCode::Left if widgets::input_text(&self.input).is_empty() => {
                self.preset = self.preset.saturating_sub(1);
                self.refusal = None;
            }
            KeyCode::Right if widgets::input_text(&self.input).is_empty() => {
                self.preset = (self.preset + 1).min(PRESETS.len() - 1);
                self.refusal = None;
            }
            KeyCode::Up => {
                self.preset = self.preset.saturating_sub(1);
                self.input = empty_input();
                self.refusal = None;
            }
            KeyCode::Down => {
                self.preset = (self.preset + 1).min(PRESETS.len() - 1);
                self.input = empty_input();
                self.refusal = None;
            }
            KeyCode::Tab | KeyCode::BackTab => self.forward = !self.forward,
            _ => {
                widgets::edit(&mut self.input, key);
                self.refusal = None;
            }
        }
        Outcome::keep()
    }

    /// The service refused the shift: the reason shows under the input, as typed.
    pub fn refuse(&mut self, why: String) {
        self.pending = false;
        self.refusal = Some(why);
    }

    /// Draws the dialog over `area`: where you are, the presets, the input, where you would be.
    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        p: &Palette,
        you: Option<&TravellerStatus>,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) {
        let rect = centered(area, area.width.saturating_sub(6).min(84), 13);
        let title = format!("{} your own clock", self.verb());
        let inner = modal(frame, rect, &title, p);
        // Where you are takes a second row when it wraps (a long timeline name), else that
        // row sets it apart from the presets.
        let [here, presets, input, outcome, keys] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Length(1),
            Constraint::Length(3),
            Constraint::Min(1),
            Constraint::Length(1),
        ])
        .areas(inner);
        let here_text = match you {
            Some(w) => format!(
                "You are in {} at {}{}",
                name_of(&w.timeline_id),
                fmt_time(&w.time),
                if w.position.paused {
                    " (your clock is paused)"
                } else {
                    ""
                }
            ),
            None => "Where you are is not known yet.".to_owned(),
        };
        frame.render_widget(
            Paragraph::new(Span::styled(here_text, p.text)).wrap(Wrap { trim: true }),
            here,
        );
        // The preset enter would use is bracketed (readable without colour); typing replaces it.
        let typed = !widgets::input_text(&self.input).is_empty();
        let mut spans = vec![Span::styled("Presets ", p.title)];
        for (i, (_, label)) in PRESETS.iter().enumerate() {
            let chosen = i == self.preset && !typed;
            spans.push(if chosen {
                Span::styled(format!("[{label}]"), p.selected)
            } else {
                Span::styled(format!(" {label} "), p.dim)
            });
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), presets);
        widgets::render_input(
            frame,
            input,
            &mut self.input,
            "Duration (empty: the preset)",
            true,
            p,
        );
        let outcome_line = if let Some(why) = &self.refusal {
            Line::from(Span::styled(format!("✗ {why}"), p.error))
        } else if self.pending {
            Line::from(Span::styled("sending…", p.dim))
        } else {
            match (self.parsed(), you) {
                (Ok(d), Some(w)) => match d.shift("duration", w.time, self.forward) {
                    Ok(to) => Line::from(vec![
                        Span::styled(
                            format!("{} by {} → ", self.verb(), spoken(&self.duration())),
                            p.text,
                        ),
                        Span::styled(fmt_time(&to), p.ok),
                    ]),
                    Err(e) => Line::from(Span::styled(format!("✗ {e}"), p.error)),
                },
                (Ok(_), None) => Line::from(Span::styled(
                    format!("{} by {}", self.verb(), spoken(&self.duration())),
                    p.text,
                )),
                // Still being typed: said whole only if enter is pressed.
                (Err(_), _) => Line::from(Span::styled("(not a duration yet)", p.dim)),
            }
        };
        frame.render_widget(
            Paragraph::new(outcome_line).wrap(Wrap { trim: true }),
            outcome,
        );
        let other = if self.forward {
            "rewind"
        } else {
            "fast-forward"
        };
        frame.render_widget(
            Paragraph::new(Span::styled(keys_hint(&format!("{other} instead")), p.dim)),
            keys,
        );
    }
}

/// The dialog's keys as its hint line says them, and the help from the same words; `flip` says
/// what tab does.
pub fn keys_hint(flip: &str) -> String {
    format!("enter go · ←→ preset · tab {flip} · esc close")
}

impl Shift {
    /// The traveller moved `duration` along their own timeline (`forward` or back): where they
    /// are now (in the timeline named `to`), whether their clock is still `paused`, and what
    /// stayed behind; everything shown is asked again.
    pub fn answer(
        journey: &Journey,
        forward: bool,
        duration: &str,
        to: &str,
        paused: bool,
    ) -> Vec<Effect> {
        let verb = if forward { "Fast-forwarded" } else { "Rewound" };
        let mut text = format!(
            "{verb} {}: you are in {to} at {}",
            spoken(duration),
            fmt_time(&journey.arrival_time)
        );
        if paused {
            text.push_str(", your clock still paused");
        }
        text.push('.');
        if !journey.items_left.is_empty() {
            let n = journey.items_left.len();
            text.push_str(&format!(
                " {n} item{} stayed behind (see J).",
                if n == 1 { "" } else { "s" }
            ));
        }
        vec![
            Effect::Info(text),
            Effect::Reload(Reload::All),
            Effect::Reload(Reload::Picture),
        ]
    }
}

/// Pausing or resuming the clock answered `state`: the header's `whoami` takes where you are
/// now at once (it is asked again too). Answers what it did, in words (`key` pauses and
/// resumes).
pub fn clock_changed(whoami: Option<&mut TravellerStatus>, state: ClockState, key: &str) -> String {
    let said = clock_said(&state, key);
    if let Some(w) = whoami {
        w.timeline_id = state.position.timeline.clone();
        w.time = state.time;
        w.position = state.position;
    }
    said
}

/// What pausing or resuming the clock did, in words (`key` pauses and resumes).
fn clock_said(state: &ClockState, key: &str) -> String {
    let at = fmt_time(&state.time);
    match state.status.as_str() {
        "paused" => format!(
            "Your clock is paused at {at}: your time stands still, the world goes on. Press \
             {key} to resume."
        ),
        "already_paused" => format!("Your clock was already paused at {at}."),
        "resumed" => format!("Your clock runs again, on from {at}."),
        _ => format!("Your clock was not paused; it runs on from {at}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::{key, palette, screen, typed};

    fn sent(outcome: &Outcome) -> Option<(String, bool)> {
        match &outcome.effects[..] {
            [Effect::Call(Call::Shift(req, forward))] => Some((req.duration.clone(), *forward)),
            _ => None,
        }
    }

    #[test]
    fn enter_sends_the_preset_and_arrows_choose_another() {
        let mut shift = Shift::new(true);
        assert_eq!(sent(&shift.key(key("enter"))), Some(("10m".into(), true)));
        assert!(shift.pending);
        assert!(shift.key(key("enter")).effects.is_empty(), "sent once");
        let mut shift = Shift::new(false);
        shift.key(key("down"));
        shift.key(key("down"));
        assert_eq!(sent(&shift.key(key("enter"))), Some(("1d".into(), false)));
    }

    #[test]
    fn a_typed_duration_wins_and_tab_turns_the_direction() {
        let mut shift = Shift::new(true);
        for k in typed("1h30m") {
            shift.key(k);
        }
        shift.key(key("tab"));
        assert_eq!(
            sent(&shift.key(key("enter"))),
            Some(("1h30m".into(), false))
        );
    }

    #[test]
    fn a_bad_duration_is_explained_and_nothing_is_sent() {
        let mut shift = Shift::new(true);
        for k in typed("3 parsecs") {
            shift.key(k);
        }
        let outcome = shift.key(key("enter"));
        assert!(outcome.effects.is_empty() && !outcome.close && !shift.pending);
        let why = shift.refusal.clone().unwrap_or_default();
        assert!(why.contains("'3 parsecs' is not a duration"), "{why}");
        let text = screen(80, 16, |f| {
            shift.render(f, f.area(), &palette(), None, &|id| id.to_string())
        });
        assert!(text.contains("is not a duration"), "{text}");
        assert!(text.contains("Fast-forward your own clock"), "{text}");
    }
}
