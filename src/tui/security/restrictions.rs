//! The restrictions screen (`R`, operators): the travellers an operator restricted, at which
//! level, by whom and since when; `n` restricts a traveller (or changes their level), `x`
//! lifts the selected restriction after asking.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{FormKey, YesNo, form_key, render_question, yes_no};
use crate::model::Traveller;
use crate::service::{RestrictRequest, Restricted, Restriction, RestrictionLevel};
use crate::tui::action::Slot;
use crate::tui::effect::{Call, Effect, Outcome, Reload};
use crate::tui::keymap::Key;
use crate::tui::offers::{self, CLOSE, DOWN, Move, Offer, UP};
use crate::tui::theme::Palette;
use crate::tui::widgets::{Cursor, Form, centered, ellipsize, fmt_time, modal};

/// The keys, as the bottom line of the screen lists them.
/// What the screen does with a key.
#[derive(Clone, Copy, Debug)]
pub enum Command {
    /// Restrict a traveller (a form; the selected one's name filled in).
    Restrict,
    /// Lift the selected restriction, after asking.
    Lift,
    /// Ask for the restrictions again.
    Reload,
    /// Close the screen.
    Close,
    /// Move the selection.
    Move(Move),
}

/// The keys of the restrictions screen: its hint line and the help are written from these.
pub const OFFERS: &[Offer<Command>] = &[
    Offer::new(
        Command::Restrict,
        &[Key::char('n'), Key::char('a')],
        "restrict a traveller",
    ),
    Offer::new(
        Command::Lift,
        &[Key::char('x'), Key::code(KeyCode::Delete)],
        "lift the selected one",
    ),
    Offer::new(Command::Reload, &[Key::char('s')], "reload"),
    Offer::new(Command::Close, CLOSE, "close"),
    Offer::quiet(Command::Move(Move::Up), UP),
    Offer::quiet(Command::Move(Move::Down), DOWN),
];

/// The levels a form accepts, as typed.
const LEVELS: &str = "no_access, read_only, limited_access or unrestricted";

/// The level typed, read leniently (`read only`, `read-only` and `READ_ONLY` alike).
pub fn parse_level(text: &str) -> Option<RestrictionLevel> {
    let word = text.trim().to_lowercase().replace([' ', '-'], "_");
    [
        RestrictionLevel::NoAccess,
        RestrictionLevel::ReadOnly,
        RestrictionLevel::LimitedAccess,
        RestrictionLevel::Unrestricted,
    ]
    .into_iter()
    .find(|l| l.as_str() == word)
}

/// The restrictions screen.
#[derive(Debug, Default)]
pub struct RestrictionsScreen {
    /// The restrictions in force.
    pub rows: Vec<Restriction>,
    /// The selected row.
    pub cursor: Cursor,
    /// Waiting for the list (or for it again).
    pub loading: bool,
    /// Whether the list has arrived once.
    pub loaded: bool,
    /// The form open over the screen.
    pub form: Option<Box<Form<()>>>,
    /// The traveller whose restriction it asks to lift.
    pub ask: Option<Traveller>,
    /// A change was sent and waits for its answer.
    pub sent: bool,
    /// A word about the last key or answer, and whether it is a refusal.
    pub note: Option<(String, bool)>,
}

impl RestrictionsScreen {
    /// The screen, waiting for its list.
    pub fn new() -> Self {
        Self {
            loading: true,
            ..Self::default()
        }
    }

    /// The list arrived: the selection stays on the traveller it was on.
    pub fn show(&mut self, rows: Vec<Restriction>) {
        let was = self.selected().map(|r| r.user_id.clone());
        self.rows = rows;
        if let Some(i) = was.and_then(|u| self.rows.iter().position(|r| r.user_id == u)) {
            self.cursor.selected = i;
        }
        self.cursor.clamp(self.rows.len());
        self.loading = false;
        self.loaded = true;
    }

    /// The selected restriction.
    pub fn selected(&self) -> Option<&Restriction> {
        self.rows.get(self.cursor.selected)
    }

    /// Whether a change it sent waits for its answer.
    pub fn waiting(&self) -> bool {
        self.sent
    }

    /// The change it waited for was made: its form closes, and the list is fetched again.
    pub fn answered(&mut self) {
        self.sent = false;
        self.form = None;
        self.loading = true;
    }

    /// The change it waited for was refused: the form (if open) shows `why`, else the screen.
    pub fn refuse(&mut self, why: Option<String>) {
        self.sent = false;
        super::show_refusal(&mut self.form, &mut self.note, why);
    }

    /// A call of `slot` failed with `why`: what waited for it stops waiting and says why.
    /// True when the screen shows it (the footer need not).
    pub fn failed(&mut self, slot: Slot, why: &str) -> bool {
        match slot {
            Slot::Security => {
                self.loading = false;
                self.note = Some((why.to_owned(), true));
                true
            }
            Slot::Mutation => {
                self.refuse(None);
                false
            }
            _ => false,
        }
    }

    /// A key: the form or the question takes it first when open; else ↑↓/jk move, `n`
    /// restricts a traveller, `x` lifts the selected restriction, `s` fetches the list again,
    /// esc or q closes.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(form) = &mut self.form {
            return match form_key(form, key) {
                FormKey::Kept => Outcome::keep(),
                FormKey::Closed => {
                    self.form = None;
                    Outcome::keep()
                }
                FormKey::Submit => self.submit(),
            };
        }
        if let Some(who) = self.ask.take() {
            return match yes_no(key) {
                YesNo::Asking => {
                    self.ask = Some(who);
                    Outcome::keep()
                }
                YesNo::No => Outcome::keep(),
                YesNo::Yes => self.send(who, RestrictionLevel::Unrestricted),
            };
        }
        self.note = None;
        let len = self.rows.len();
        let Some(command) = offers::find(OFFERS, &key) else {
            return Outcome::keep();
        };
        match command {
            Command::Close => return Outcome::close(),
            Command::Move(m) => m.apply(&mut self.cursor, len),
            Command::Reload if self.loading => {
                self.note = Some(("Reloading: the list comes in a moment.".into(), false));
            }
            Command::Reload => {
                self.loading = true;
                return Outcome::with(Effect::Call(Call::Restrictions));
            }
            Command::Restrict | Command::Lift if self.sent => {
                self.note = Some(("Wait for the change sent to be answered.".into(), true));
            }
            Command::Restrict => {
                let (who, level) = self
                    .selected()
                    .map(|r| (r.user_id.to_string(), r.level.as_str().to_owned()))
                    .unwrap_or_else(|| (String::new(), "read_only".to_owned()));
                let mut form = Form::new(
                    "Restrict a traveller",
                    (),
                    &[
                        ("Traveller name (a token's subject)", who, "e.g. eve"),
                        (
                            "Level (no_access, read_only, limited_access or unrestricted)",
                            level,
                            "",
                        ),
                    ],
                );
                form.note = "read_only: reads only · limited_access: also return to own anchors · \
                             no_access: only whoami · enter restrict · esc cancel"
                    .into();
                self.form = Some(Box::new(form));
            }
            Command::Lift => match self.selected() {
                Some(r) => self.ask = Some(r.user_id.clone()),
                None => self.note = Some(("Nobody is restricted.".into(), true)),
            },
        }
        Outcome::keep()
    }

    /// Sends what the form says.
    fn submit(&mut self) -> Outcome {
        let Some(form) = &mut self.form else {
            return Outcome::keep();
        };
        let who: Traveller = match form.value(0).parse() {
            Ok(who) => who,
            Err(e) => {
                form.refuse(format!("traveller name: {e}"), Some("traveller name"));
                return Outcome::keep();
            }
        };
        let Some(level) = parse_level(&form.value(1)) else {
            form.refuse(format!("level: one of {LEVELS}"), Some("level"));
            return Outcome::keep();
        };
        form.pending = true;
        form.clear_refusal();
        self.send(who, level)
    }

    /// Restricts `who` to `level` (lifts it with unrestricted) and waits.
    fn send(&mut self, who: Traveller, level: RestrictionLevel) -> Outcome {
        self.sent = true;
        Outcome::with(Effect::Call(Call::Restrict(RestrictRequest {
            user_id: who,
            restriction_level: level,
        })))
    }

    /// Draws the screen over `area`, the selected restriction explained under the list, and
    /// the form or the question on top.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        let rows = u16::try_from(self.rows.len()).unwrap_or(u16::MAX).max(1);
        let rect = centered(
            area,
            area.width.saturating_sub(4).min(110),
            rows.saturating_add(9).min(area.height.saturating_sub(2)),
        );
        let mut title = "Restrictions on travellers".to_owned();
        if self.loaded {
            title.push_str(&format!(" ({})", self.rows.len()));
        }
        if self.loading || self.sent {
            title.push_str(" · waiting…");
        }
        let inner = modal(frame, rect, &title, p);
        let [list, about, keys] = Layout::vertical([
            Constraint::Min(2),
            Constraint::Length(3),
            Constraint::Length(1),
        ])
        .areas(inner);
        let width = usize::from(inner.width);
        frame.render_widget(
            Paragraph::new(self.list_lines(list.height.into(), width, p)),
            list,
        );
        let about_line = match (&self.note, self.selected()) {
            (Some((text, error)), _) => {
                Span::styled(text.clone(), if *error { p.warn } else { p.ok })
            }
            (None, Some(r)) => Span::styled(
                format!("{} may do {}.", r.user_id, r.level.allows_them()),
                p.dim,
            ),
            (None, None) => Span::styled(
                "Operators are never restricted; a restriction stops a traveller's journeys \
                 and changes on every face.",
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
        if let Some(form) = &mut self.form {
            form.render(frame, area, p);
        }
        if let Some(who) = &self.ask {
            render_question(
                frame,
                area,
                "Lift a restriction",
                &format!(
                    "Lift the restriction on {who}? They may travel and change again. (n keeps it)"
                ),
                p,
            );
        }
    }

    /// The header and the rows in view.
    fn list_lines(&mut self, height: usize, width: usize, p: &Palette) -> Vec<Line<'static>> {
        if self.rows.is_empty() {
            let text = if self.loaded {
                "Nobody is restricted. Press n to restrict a traveller."
            } else if self.loading {
                "Loading the restrictions…"
            } else {
                "The restrictions could not be read."
            };
            return vec![Line::from(Span::styled(text, p.dim))];
        }
        let head = format!(
            "  {:<20}{:<16}{:<14}{}",
            "Traveller", "Level", "Set by", "Since"
        );
        let mut lines = vec![Line::from(Span::styled(ellipsize(&head, width), p.title))];
        let range = self
            .cursor
            .window(self.rows.len(), height.saturating_sub(1));
        for i in range {
            let r = &self.rows[i];
            let selected = i == self.cursor.selected;
            let style = if selected { p.selected } else { p.text };
            let level_style = match r.level {
                RestrictionLevel::NoAccess => p.error,
                RestrictionLevel::Unrestricted => p.dim,
                _ => p.warn,
            };
            lines.push(Line::from(vec![
                Span::styled(if selected { "▶ " } else { "  " }, style),
                Span::styled(format!("{:<20}", ellipsize(r.user_id.as_str(), 19)), style),
                Span::styled(format!("{:<16}", r.level.as_str()), level_style),
                Span::styled(
                    ellipsize(
                        &format!(
                            "{:<14}{}",
                            ellipsize(r.set_by.as_str(), 13),
                            fmt_time(&r.at)
                        ),
                        width.saturating_sub(38),
                    ),
                    style,
                ),
            ]));
        }
        lines
    }
}

impl RestrictionsScreen {
    /// A traveller was restricted, or their restriction lifted: said; the screen, if `open`,
    /// lists the restrictions again; the header asks whether it is you.
    pub fn answer_restricted(open: bool, r: &Restricted) -> Vec<Effect> {
        let who = &r.restriction.user_id;
        let level = r.restriction.level;
        let mut effects = vec![Effect::Info(if level == RestrictionLevel::Unrestricted {
            format!("{who} is not restricted now.")
        } else {
            format!(
                "{who} is restricted to {}: they may do {}.",
                level.as_str(),
                level.allows_them()
            )
        })];
        if open {
            effects.push(Effect::Call(Call::Restrictions));
        }
        effects.push(Effect::Reload(Reload::Whoami));
        effects
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::{key, typed};

    #[test]
    fn levels_are_read_as_a_person_types_them() {
        assert_eq!(parse_level("read only"), Some(RestrictionLevel::ReadOnly));
        assert_eq!(
            parse_level("Limited-Access"),
            Some(RestrictionLevel::LimitedAccess)
        );
        assert_eq!(parse_level("no_access"), Some(RestrictionLevel::NoAccess));
        assert_eq!(parse_level("banned"), None);
    }

    #[test]
    fn n_restricts_a_traveller_and_a_bad_level_stays_in_the_form() {
        let mut s = RestrictionsScreen::new();
        s.show(Vec::new());
        s.key(key("n"));
        for k in typed("eve") {
            s.key(k);
        }
        s.key(key("tab"));
        for _ in 0..9 {
            s.key(key("backspace"));
        }
        for k in typed("sometimes") {
            s.key(k);
        }
        assert!(s.key(key("enter")).effects.is_empty());
        let form = s.form.as_ref().expect("still open");
        assert!(
            form.refusal
                .as_deref()
                .is_some_and(|r| r.contains("read_only"))
        );
        for _ in 0..9 {
            s.key(key("backspace"));
        }
        for k in typed("no access") {
            s.key(k);
        }
        let outcome = s.key(key("enter"));
        assert!(matches!(
            outcome.effects.as_slice(),
            [Effect::Call(Call::Restrict(r))]
                if r.user_id.as_str() == "eve" && r.restriction_level == RestrictionLevel::NoAccess
        ));
        assert!(s.waiting());
    }
}
