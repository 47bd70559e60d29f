//! The isolations in force on a timeline (`U`): each by its id, the one selected lifted after
//! asking, so the paradox checks apply to its members again.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::effect::{Call, Effect, Outcome, Reload};
use super::keymap::Key;
use super::offers::{self, CLOSE, DOWN, Move, Offer, UP};
use super::security::{YesNo, render_question, yes_no};
use super::theme::Palette;
use super::widgets::{Cursor, centered, ellipsize, modal};
use crate::model::{IsolationId, TimelineId};

/// What the screen does with a key.
#[derive(Clone, Copy, Debug)]
pub enum Command {
    /// Lift the selected isolation, after asking.
    Lift,
    /// Close the screen.
    Close,
    /// Move the selection.
    Move(Move),
}

/// The keys of the isolations screen: its hint line and the help are written from these.
pub const OFFERS: &[Offer<Command>] = &[
    Offer::new(
        Command::Lift,
        &[Key::char('x'), Key::code(KeyCode::Delete)],
        "lift the selected one",
    ),
    Offer::new(Command::Close, CLOSE, "close"),
    Offer::quiet(Command::Move(Move::Up), UP),
    Offer::quiet(Command::Move(Move::Down), DOWN),
];

/// The isolations of one timeline, as its listing names them.
#[derive(Debug)]
pub struct IsolationsScreen {
    /// The timeline.
    pub timeline: TimelineId,
    /// Its name, for the title.
    pub name: String,
    /// The isolations in force, oldest first.
    pub ids: Vec<IsolationId>,
    /// The selected one.
    pub cursor: Cursor,
    /// The isolation it asks to lift.
    pub ask: Option<IsolationId>,
    /// A lift was sent and waits for its answer.
    pub sent: bool,
    /// A word about the last key or answer, and whether it is a refusal.
    pub note: Option<(String, bool)>,
}

impl IsolationsScreen {
    /// The screen of `timeline` (named `name`) with the isolations `ids` in force.
    pub fn new(timeline: TimelineId, name: String, ids: Vec<IsolationId>) -> Self {
        Self {
            timeline,
            name,
            ids,
            cursor: Cursor::default(),
            ask: None,
            sent: false,
            note: None,
        }
    }

    /// Whether a lift it sent waits for its answer.
    pub fn waiting(&self) -> bool {
        self.sent
    }

    /// The lift was refused: the screen says why.
    pub fn refuse(&mut self, why: Option<String>) {
        self.sent = false;
        if let Some(why) = why {
            self.note = Some((why, true));
        }
    }

    /// `id` was lifted: gone from the list; what the checks say is asked again.
    pub fn answer_lifted(screen: Option<&mut Self>, id: &IsolationId) -> Vec<Effect> {
        let said = format!("Lifted {id}: the paradox checks apply to its members again.");
        if let Some(screen) = screen {
            screen.sent = false;
            screen.ids.retain(|i| i != id);
            screen.cursor.clamp(screen.ids.len());
            screen.note = Some((said.clone(), false));
        }
        vec![Effect::Info(said), Effect::Reload(Reload::Events)]
    }

    /// A key: the question takes it first when open; else ↑↓/jk move, `x` asks to lift the
    /// selected isolation, esc or q closes.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(id) = self.ask.take() {
            return match yes_no(key) {
                YesNo::Asking => {
                    self.ask = Some(id);
                    Outcome::keep()
                }
                YesNo::No => Outcome::keep(),
                YesNo::Yes => {
                    self.sent = true;
                    Outcome::with(Effect::Call(Call::Lift(self.timeline.clone(), id)))
                }
            };
        }
        self.note = None;
        let len = self.ids.len();
        match offers::find(OFFERS, &key) {
            Some(Command::Close) => return Outcome::close(),
            Some(Command::Move(m)) => m.apply(&mut self.cursor, len),
            Some(Command::Lift) if self.sent => {
                self.note = Some(("Wait for the lift sent to be answered.".into(), true));
            }
            Some(Command::Lift) => match self.ids.get(self.cursor.selected) {
                Some(id) => self.ask = Some(id.clone()),
                None => self.note = Some(("No isolation is in force here.".into(), true)),
            },
            None => {}
        }
        Outcome::keep()
    }

    /// Draws the screen over `area`, the question on top.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        let rows = u16::try_from(self.ids.len()).unwrap_or(u16::MAX).max(1);
        let rect = centered(
            area,
            area.width.saturating_sub(4).min(90),
            rows.saturating_add(7).min(area.height.saturating_sub(2)),
        );
        let mut title = format!("Isolations in {} ({})", self.name, self.ids.len());
        if self.sent {
            title.push_str(" · waiting…");
        }
        let inner = modal(frame, rect, &title, p);
        let [list, about, keys] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(3),
            Constraint::Length(1),
        ])
        .areas(inner);
        let width = usize::from(inner.width);
        let range = self.cursor.window(self.ids.len(), usize::from(list.height));
        let lines: Vec<Line<'static>> = if self.ids.is_empty() {
            vec![Line::from(Span::styled(
                "None in force: every event is checked.",
                p.dim,
            ))]
        } else {
            range
                .map(|i| {
                    let selected = i == self.cursor.selected;
                    let mark = if selected { "▶ " } else { "  " };
                    let style = if selected { p.selected } else { p.text };
                    Line::from(Span::styled(format!("{mark}{}", self.ids[i]), style))
                })
                .collect()
        };
        frame.render_widget(Paragraph::new(lines), list);
        let about_line = match &self.note {
            Some((text, error)) => Span::styled(text.clone(), if *error { p.warn } else { p.ok }),
            None => Span::styled(
                "An isolation cuts events off from the paradox checks; lifting it checks them \
                 again (I isolates the selected event in the search).",
                p.dim,
            ),
        };
        frame.render_widget(
            Paragraph::new(Line::from(about_line)).wrap(Wrap { trim: true }),
            about,
        );
        frame.render_widget(
            Paragraph::new(Span::styled(ellipsize(&offers::hint(OFFERS), width), p.dim)),
            keys,
        );
        if let Some(id) = &self.ask {
            render_question(
                frame,
                area,
                "Lift an isolation",
                &format!(
                    "Lift {id} in {}? The checks will report its members' paradoxes again. \
                     (n keeps it)",
                    self.name
                ),
                p,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::{key, palette, screen};

    fn ids() -> Vec<IsolationId> {
        (1..=2)
            .map(|n| IsolationId::from_ulid(ulid::Ulid::from(n as u128)))
            .collect()
    }

    #[test]
    fn x_asks_and_y_lifts_the_selected_isolation_of_its_timeline() {
        let mut s = IsolationsScreen::new(TimelineId::primary(), "Primary".into(), ids());
        s.key(key("j"));
        assert!(s.key(key("x")).effects.is_empty(), "asks first");
        assert_eq!(s.ask.as_ref(), Some(&ids()[1]));
        assert!(s.key(key("n")).effects.is_empty() && s.ask.is_none());
        s.key(key("x"));
        let outcome = s.key(key("y"));
        assert!(matches!(
            &outcome.effects[..],
            [Effect::Call(Call::Lift(t, id))] if *t == TimelineId::primary() && *id == ids()[1]
        ));
        assert!(s.waiting());
        let effects = IsolationsScreen::answer_lifted(Some(&mut s), &ids()[1]);
        assert_eq!(s.ids, vec![ids()[0].clone()]);
        assert!(matches!(
            &effects[..],
            [Effect::Info(_), Effect::Reload(Reload::Events)]
        ));
        let p = palette();
        for width in [80, 140] {
            let shown = screen(width, 24, |f| s.render(f, f.area(), &p));
            assert!(shown.contains("Isolations in Primary (1)"), "{shown}");
            assert!(shown.contains(ids()[0].as_str()), "{shown}");
            assert!(
                shown.contains("x lift the selected one · esc close"),
                "{shown}"
            );
        }
    }
}
