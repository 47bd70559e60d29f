//! Small pieces the panes share: a scrolling cursor that renders only visible rows, pane
//! frames, single-line inputs, forms, and text formatting of times and durations.

use chrono::Duration;
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};
use ratatui_textarea::TextArea;

use super::theme::Palette;
use crate::model::Instant;

/// A selection in a list plus the first row shown, so only the visible slice is rendered
/// (ratatui's `Table` lays out every row it is given).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// Index of the selected row.
    pub selected: usize,
    /// Index of the first row on screen.
    pub offset: usize,
}

impl Cursor {
    /// Moves the selection by `delta` rows within `len`.
    pub fn step(&mut self, delta: isize, len: usize) {
        if len == 0 {
            self.selected = 0;
            return;
        }
        let next = self.selected as isize + delta;
        self.selected = next.clamp(0, len as isize - 1) as usize;
    }

    /// Selects the `row`-th visible row of `len`, if there is one there; true when it did.
    pub fn click(&mut self, row: usize, len: usize) -> bool {
        let target = self.offset + row;
        let hit = target < len;
        if hit {
            self.selected = target;
        }
        hit
    }

    /// Keeps the selection inside `len` rows (after the list shrank).
    pub fn clamp(&mut self, len: usize) {
        self.selected = self.selected.min(len.saturating_sub(1));
    }

    /// Scrolls so the selection is visible in `height` rows; returns the visible index range.
    pub fn window(&mut self, len: usize, height: usize) -> std::ops::Range<usize> {
        self.clamp(len);
        let height = height.max(1);
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + height {
            self.offset = self.selected + 1 - height;
        }
        self.offset = self.offset.min(len.saturating_sub(height));
        self.offset..(self.offset + height).min(len)
    }
}

/// The frame of a pane: title on the border, highlighted when focused.
pub fn pane_block<'a>(title: Line<'a>, focused: bool, palette: &Palette) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused {
            palette.focus
        } else {
            palette.border
        })
        .title(title)
}

/// A title with an optional marker such as `loading…` or `frozen`.
pub fn title<'a>(text: impl Into<String>, extra: Option<String>, palette: &Palette) -> Line<'a> {
    let mut spans = vec![Span::styled(format!(" {} ", text.into()), palette.title)];
    if let Some(extra) = extra {
        spans.push(Span::styled(format!("{extra} "), palette.dim));
    }
    Line::from(spans)
}

/// A centred rectangle `width` x `height` cells inside `area`, clipped to it.
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [row] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [cell] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(row);
    cell
}

/// Clears `area` and draws a modal frame on it; returns the inner area. A column either side
/// is cleared too, so no cut-off text of the pane beneath shows in the gap beside the frame.
pub fn modal(frame: &mut Frame<'_>, area: Rect, title_text: &str, palette: &Palette) -> Rect {
    let widened = Rect {
        x: area.x.saturating_sub(1),
        width: area.width.saturating_add(2),
        ..area
    }
    .intersection(frame.area());
    frame.render_widget(Clear, widened);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Double)
        .border_style(palette.focus)
        .title(Line::from(Span::styled(
            format!(" {title_text} "),
            palette.title,
        )));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
}

/// A one-line text input.
pub fn input(initial: &str, placeholder: &str) -> TextArea<'static> {
    let mut area = TextArea::new(vec![initial.to_owned()]);
    area.move_cursor(ratatui_textarea::CursorMove::End);
    area.set_placeholder_text(placeholder);
    area.set_cursor_line_style(Style::default());
    area
}

/// Feeds a key to an input; ctrl-u clears it, as in a shell (the editor's own ctrl-u is undo).
pub fn edit(area: &mut TextArea<'_>, key: crossterm::event::KeyEvent) {
    use crossterm::event::{KeyCode, KeyModifiers};
    if key.code == KeyCode::Char('u') && key.modifiers.contains(KeyModifiers::CONTROL) {
        area.move_cursor(ratatui_textarea::CursorMove::End);
        area.delete_line_by_head();
    } else {
        area.input(key);
    }
}

/// The text of a one-line input, trimmed.
pub fn input_text(area: &TextArea<'_>) -> String {
    area.lines().join(" ").trim().to_owned()
}

/// Draws an input with a label border; the cursor shows only when `active`.
pub fn render_input(
    frame: &mut Frame<'_>,
    area: Rect,
    input: &mut TextArea<'static>,
    label: &str,
    active: bool,
    palette: &Palette,
) {
    input.set_block(pane_block(
        Line::from(Span::styled(format!(" {label} "), palette.title)),
        active,
        palette,
    ));
    input.set_cursor_style(if active {
        palette.selected
    } else {
        Style::default()
    });
    input.set_placeholder_style(palette.dim);
    frame.render_widget(&*input, area);
}

/// `1889-03-10 23:50:00` (UTC, seconds kept: travellers care).
pub fn fmt_time(t: &Instant) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Splits `text` into lines of at most `width` characters, at spaces where it can.
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let mut word = word.to_owned();
        loop {
            let used = line.chars().count();
            let len = word.chars().count();
            if used > 0 && used + 1 + len <= width {
                line.push(' ');
                line.push_str(&word);
                break;
            }
            if used == 0 && len <= width {
                line = word;
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            // A word longer than the line: cut it.
            let head: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            lines.push(head);
        }
    }
    lines.push(line);
    lines
}

/// A time as a form is filled with it: as the dashboard shows times (`1889-03-10 23:50:00`,
/// UTC), which the form reads back; in RFC 3339 when it has fractions of a second, so that
/// sending it unchanged keeps the very instant.
pub fn typed_time(t: &Instant) -> String {
    if chrono::Timelike::nanosecond(t) == 0 {
        fmt_time(t)
    } else {
        crate::model::format_instant(t)
    }
}

/// A short countdown: `59m12s`, `3h05m`, `2d04h`.
pub fn fmt_countdown(d: Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// Cuts `s` to `max` characters with an ellipsis.
pub fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// One field of a [`Form`].
#[derive(Debug)]
pub struct Field {
    /// Label shown above the input.
    pub label: &'static str,
    /// The input.
    pub input: TextArea<'static>,
}

/// A modal form of one-line fields: Tab moves between them, Enter submits, Esc cancels.
#[derive(Debug)]
pub struct Form<K> {
    /// Title of the modal.
    pub title: String,
    /// What submitting does.
    pub kind: K,
    /// The fields.
    pub fields: Vec<Field>,
    /// The field being edited.
    pub focus: usize,
    /// A line of help under the fields.
    pub note: String,
    /// Sent and waiting for the answer: the form stays open until the change is made.
    pub pending: bool,
    /// Why the last submission was refused, shown until the next one: under the field at
    /// fault ([`Form::refusal_field`]) or, when no one field is, under them all.
    pub refusal: Option<String>,
    /// The field the refusal is about.
    pub refusal_field: Option<usize>,
}

impl<K> Form<K> {
    /// A form with `(label, initial, placeholder)` fields.
    pub fn new(title: impl Into<String>, kind: K, fields: &[(&'static str, String, &str)]) -> Self {
        Self {
            title: title.into(),
            kind,
            fields: fields
                .iter()
                .map(|(label, initial, placeholder)| Field {
                    label,
                    input: input(initial, placeholder),
                })
                .collect(),
            focus: 0,
            note: "enter submit · tab next field · esc cancel".into(),
            pending: false,
            refusal: None,
            refusal_field: None,
        }
    }

    /// Shows `message` as the reason the last submission was refused, beside the field the
    /// request's `field` names (`destination_time`, `new_outcome.changes[0].time`: matched to
    /// the label's words, the last part to the last word) and puts the cursor there.
    pub fn refuse(&mut self, message: String, field: Option<&str>) {
        self.refusal_field = field.and_then(|f| self.field_named(f));
        if let Some(i) = self.refusal_field {
            self.focus = i;
        }
        self.refusal = Some(message);
    }

    /// Clears the last refusal.
    pub fn clear_refusal(&mut self) {
        self.refusal = None;
        self.refusal_field = None;
    }

    fn field_named(&self, field: &str) -> Option<usize> {
        let field = field.trim().to_lowercase().replace('_', " ");
        let last = field.rsplit('.').next().unwrap_or(&field);
        let last = last.split('[').next().unwrap_or(last).trim();
        let key = |label: &str| {
            let label = label.to_lowercase();
            label.split(" (").next().unwrap_or(&label).trim().to_owned()
        };
        let keys: Vec<String> = self.fields.iter().map(|f| key(f.label)).collect();
        keys.iter().position(|k| *k == field).or_else(|| {
            keys.iter()
                .position(|k| !last.is_empty() && k.rsplit(' ').next() == Some(last))
        })
    }

    /// The trimmed value of field `i` (empty when absent).
    pub fn value(&self, i: usize) -> String {
        self.fields
            .get(i)
            .map(|f| input_text(&f.input))
            .unwrap_or_default()
    }

    /// Moves to the next (or previous) field.
    pub fn cycle(&mut self, forward: bool) {
        let n = self.fields.len().max(1);
        self.focus = if forward {
            (self.focus + 1) % n
        } else {
            (self.focus + n - 1) % n
        };
    }

    /// Draws the form as a modal over `area`.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, palette: &Palette) {
        // A refusal gets up to three lines under the fields.
        let refusal_lines: u16 = if self.refusal.is_some() { 3 } else { 0 };
        let width = area.width.saturating_sub(10).min(80);
        let note = if self.pending {
            "sending… (esc closes; the answer still shows below)".to_owned()
        } else {
            self.note.clone()
        };
        // The note wraps rather than being cut (a hint such as restrict's is long).
        let note = Paragraph::new(Span::styled(note, palette.dim))
            .wrap(ratatui::widgets::Wrap { trim: true });
        let note_lines = u16::try_from(note.line_count(width.saturating_sub(2)))
            .unwrap_or(1)
            .max(1);
        let height = self.fields.len() as u16 * 3 + 3 + note_lines + refusal_lines;
        let rect = centered(area, width, height);
        let inner = modal(frame, rect, &self.title, palette);
        // Rows: each field (3 lines), the refusal right under the field at fault (or under
        // them all), the note.
        let n = self.fields.len();
        let refusal_after = self
            .refusal
            .as_ref()
            .map(|_| self.refusal_field.filter(|i| *i < n).map_or(n, |i| i + 1));
        let mut constraints = Vec::with_capacity(n + 2);
        let mut field_rows = Vec::with_capacity(n);
        let mut refusal_row = None;
        for i in 0..=n {
            if refusal_after == Some(i) {
                refusal_row = Some(constraints.len());
                constraints.push(Constraint::Length(refusal_lines));
            }
            if i < n {
                field_rows.push(constraints.len());
                constraints.push(Constraint::Length(3));
            }
        }
        constraints.push(Constraint::Length(note_lines));
        let rows = Layout::vertical(constraints).split(inner);
        if let (Some(refusal), Some(row)) = (&self.refusal, refusal_row) {
            frame.render_widget(
                Paragraph::new(Span::styled(
                    match self.refusal_field {
                        Some(_) if refusal_after != Some(n) => format!("↑ {refusal}"),
                        _ => refusal.clone(),
                    },
                    palette.error,
                ))
                .wrap(ratatui::widgets::Wrap { trim: true }),
                rows[row],
            );
        }
        let focus = self.focus;
        for (i, field) in self.fields.iter_mut().enumerate() {
            render_input(
                frame,
                rows[field_rows[i]],
                &mut field.input,
                field.label,
                i == focus,
                palette,
            );
        }
        if let Some(last) = rows.last() {
            frame.render_widget(note, *last);
        }
    }
}

/// A buffer's symbols, one line per row, trailing spaces trimmed.
pub fn buffer_text(buffer: &ratatui::buffer::Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_wrap_at_spaces_and_long_words_are_cut() {
        assert_eq!(
            wrap_words("the storming of the Bastille", 12),
            ["the storming", "of the", "Bastille"]
        );
        assert_eq!(wrap_words("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap_words("", 4), [""]);
        for line in wrap_words("a fairly long sentence, wrapped into short lines", 7) {
            assert!(line.chars().count() <= 7, "{line:?}");
        }
    }

    #[test]
    fn the_window_follows_the_selection_both_ways() {
        let mut c = Cursor {
            selected: 15,
            offset: 0,
        };
        assert_eq!(c.window(100, 10), 6..16);
        c.selected = 3;
        assert_eq!(c.window(100, 10), 3..13);
        c.selected = 99;
        assert_eq!(c.window(100, 10), 90..100);
        assert_eq!(c.window(5, 10), 0..5);
    }

    #[test]
    fn countdowns_are_short() {
        assert_eq!(fmt_countdown(Duration::seconds(3552)), "59m12s");
        assert_eq!(fmt_countdown(Duration::seconds(3 * 3600 + 300)), "3h05m");
        assert_eq!(fmt_countdown(Duration::seconds(-5)), "0s");
    }
}
