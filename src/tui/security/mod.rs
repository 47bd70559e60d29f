//! The security screens (guide operations §5): who may use the selected timeline and its
//! access log ([`access`], `S`), the restrictions operators put on travellers
//! ([`restrictions`], `R`), and whether the stored history of the selected timeline was
//! altered ([`integrity`], `T`).
//!
//! Each is a modal component in the manner of the anchors list: it owns its state, the form
//! and the question it opens over itself, takes its keys and answers with
//! [`Effect`](super::effect::Effect)s; the loop sends its calls and routes the answers back.
//! What a screen cannot do for you (you lack the right, or are not an operator) it says
//! before anything is sent.

pub mod access;
pub mod integrity;
pub mod restrictions;
pub mod rights;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::theme::Palette;
use super::widgets::{self, Form, centered, modal};

/// What a traveller whose token allows reading only is told when they ask for a change,
/// before anything is sent.
pub const READ_ONLY_TOKEN: &str =
    "Your token only allows reading: ask whoever issues your tokens for one with the write scope.";

/// The same for a paradox check: it writes nothing, but the service asks for the write scope,
/// since it checks a change before it is made.
pub const READ_ONLY_CHECK: &str = "Your token only allows reading, and a paradox check needs the \
     write scope too (it checks a change before it is made): ask whoever issues your tokens for \
     one with it.";

/// What a key did to a form of a security screen.
#[derive(Debug, PartialEq, Eq)]
pub enum FormKey {
    /// The form takes it (an edit, a move between fields, an enter while it waits).
    Kept,
    /// Esc: the form closes.
    Closed,
    /// Enter: what is typed is to be sent.
    Submit,
}

/// A refused change, shown where the person looks: under its form when one is open (which
/// stops waiting), else in the screen's note.
pub fn show_refusal<K>(
    form: &mut Option<Box<Form<K>>>,
    note: &mut Option<(String, bool)>,
    why: Option<String>,
) {
    if let Some(form) = form {
        form.pending = false;
        if let Some(why) = why {
            form.refuse(why, None);
        }
    } else if let Some(why) = why {
        *note = Some((why, true));
    }
}

/// A key on a form: tab and shift-tab move between fields, enter submits (not again while
/// it waits for its answer), esc closes, anything else edits the field.
pub fn form_key<K>(form: &mut Form<K>, key: KeyEvent) -> FormKey {
    match key.code {
        KeyCode::Esc => FormKey::Closed,
        KeyCode::Tab => {
            form.cycle(true);
            FormKey::Kept
        }
        KeyCode::BackTab => {
            form.cycle(false);
            FormKey::Kept
        }
        KeyCode::Enter if form.pending => FormKey::Kept,
        KeyCode::Enter => FormKey::Submit,
        _ => {
            if let Some(field) = form.fields.get_mut(form.focus) {
                widgets::edit(&mut field.input, key);
            }
            FormKey::Kept
        }
    }
}

/// What a yes/no question answers a key with.
#[derive(Debug, PartialEq, Eq)]
pub enum YesNo {
    /// y or enter.
    Yes,
    /// n or esc.
    No,
    /// Any other key: still asking.
    Asking,
}

/// A key on a yes/no question.
pub fn yes_no(key: KeyEvent) -> YesNo {
    match key.code {
        KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => YesNo::Yes,
        KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => YesNo::No,
        _ => YesNo::Asking,
    }
}

/// Draws a yes/no question titled `title` over `area`, as tall as its wrapped text.
pub fn render_question(
    frame: &mut Frame<'_>,
    area: Rect,
    title: &str,
    question: &str,
    p: &Palette,
) {
    let lines = vec![
        Line::from(question.to_owned()),
        Line::default(),
        Line::from(vec![
            Span::styled("y", p.key),
            Span::styled(" yes   ", p.dim),
            Span::styled("n", p.key),
            Span::styled(" no", p.dim),
        ]),
    ];
    let width = area.width.saturating_sub(10).min(70);
    let text = Paragraph::new(lines).wrap(Wrap { trim: false });
    let needed = u16::try_from(text.line_count(width.saturating_sub(2))).unwrap_or(u16::MAX);
    let rect = centered(
        area,
        width,
        needed.saturating_add(2).min(area.height.saturating_sub(2)),
    );
    let inner = modal(frame, rect, title, p);
    frame.render_widget(text, inner);
}

/// `n` and the noun, pluralised with an `s` when `n` is not one.
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
