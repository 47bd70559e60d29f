//! The help screen, generated from the key map: every binding, grouped by where it applies.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::anchors;
use super::keymap::{Context, KeyMap};
use super::merge;
use super::offers;
use super::panes::wizard;
use super::security::{access, integrity, restrictions};
use super::theme::Palette;
use super::time_controls;
use super::widgets::{self, centered, modal};

/// Width of the keys column.
const KEYS_WIDTH: usize = 16;
/// The description column never gets narrower than this; past it, descriptions wrap.
const MIN_DESCRIPTION: usize = 20;

/// The help text for a modal `width` columns wide: one line per binding, a heading per
/// context. The `:command` names are what a user types, so they are always shown whole; the
/// descriptions wrap onto more lines when the terminal is narrow.
pub fn lines<'a>(keymap: &KeyMap, palette: &Palette, width: u16) -> Vec<Line<'a>> {
    let longest_name = keymap
        .bindings()
        .iter()
        .map(|b| b.action.name().len() + 1)
        .max()
        .unwrap_or(0);
    let description_width = usize::from(width)
        .saturating_sub(KEYS_WIDTH + longest_name + 1)
        .clamp(MIN_DESCRIPTION, 48);
    let mut out = Vec::new();
    for context in [
        Context::Global,
        Context::Timelines,
        Context::Search,
        Context::Monitor,
        Context::Log,
    ] {
        let rows: Vec<_> = keymap
            .bindings()
            .iter()
            .filter(|b| b.context == context)
            .collect();
        if rows.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(Line::default());
        }
        out.push(Line::from(Span::styled(context.title(), palette.title)));
        for b in rows {
            let keys = b
                .keys
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(" ");
            // A description wraps under itself: each reads whole at any width.
            let mut description = widgets::wrap_words(b.description, description_width).into_iter();
            let first = description.next().unwrap_or_default();
            out.push(Line::from(vec![
                Span::styled(format!("  {keys:<14}"), palette.key),
                Span::styled(format!("{first:<description_width$} "), palette.text),
                Span::styled(format!(":{}", b.action.name()), palette.dim),
            ]));
            out.extend(description.map(|more| {
                Line::from(Span::styled(
                    format!("{:KEYS_WIDTH$}{more}", ""),
                    palette.text,
                ))
            }));
        }
    }
    out.push(Line::default());
    let picture: Vec<String> = crate::tui::panes::timeline_view::SUGGESTED_KEYS
        .iter()
        .map(|(keys, _, what)| format!("{} {what}", keys.replace(' ', "/")))
        .collect();
    let key = |action| keymap.key_for(action);
    use crate::tui::intent::Action;
    let notes = [
        format!(
            "In the timeline picture ({}): {}, esc closes.",
            key(Action::TimelineView),
            picture.join(", ")
        ),
        format!(
            "Anchors list ({}): {}.",
            key(Action::Anchors),
            offers::hint(anchors::OFFERS)
        ),
        format!(
            "{} and {}: {}; or type 1h30m, 2d, PT45M.",
            key(Action::FastForward),
            key(Action::Rewind),
            time_controls::keys_hint("flips the direction")
        ),
        format!(
            "Travel wizard ({}): {} (tab: a time and place to arrive at, in a timeline); then \
             {}; {} at the last step.",
            key(Action::Travel),
            offers::hint(wizard::DESTINATION),
            offers::hint(wizard::ITEMS),
            offers::hint_where(wizard::CONFIRM, |c| c == wizard::Command::Travel)
        ),
        format!(
            "Diff {} / merge {}: ↑↓ the other side, enter diff; then {}; y merges (checked).",
            key(Action::Diff),
            key(Action::Merge),
            offers::hint(merge::DIFF)
        ),
        format!(
            "Merge review ({} on a timeline marked ⇄, or r in its diff): {} (Custom Merge: a \
             form).",
            key(Action::Review),
            offers::hint(merge::RESOLVE)
        ),
        format!(
            "ro after a timeline's name: you may read it, not write it (ask its admins; {} \
             shows who may).",
            key(Action::AccessControl)
        ),
        format!(
            "Access ({}): {}.",
            key(Action::AccessControl),
            offers::hint(access::OFFERS)
        ),
        format!(
            "Restrictions ({}): {}.",
            key(Action::Restrictions),
            offers::hint(restrictions::OFFERS)
        ),
        format!(
            "Integrity ({}): {}.",
            key(Action::Integrity),
            offers::hint(integrity::OFFERS)
        ),
        "In forms: tab next field, enter submit, esc cancel.".to_owned(),
        "ctrl-c quits from anywhere.".to_owned(),
    ];
    // Each note whole, wrapped at word boundaries to the width (the scroll counts its lines).
    let width = usize::from(width.max(20));
    for note in notes {
        out.extend(
            word_lines(&note, width)
                .into_iter()
                .map(|line| Line::from(Span::styled(line, palette.dim))),
        );
    }
    out
}

/// `text` cut into lines of at most `width` characters at spaces (a longer word is a line of
/// its own), the lines after the first indented by two.
fn word_lines(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let Some(line) = lines.last_mut() else { break };
        let used = line.chars().count();
        if used > 2 && used + 1 + word.chars().count() > width {
            lines.push(format!("  {word}"));
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// Draws the help modal, scrolled by `scroll` lines; the scroll is kept where the last line
/// is in view (`G` asks for the end as `u16::MAX`), so scrolling back up starts from there.
pub fn render(
    frame: &mut Frame<'_>,
    area: Rect,
    keymap: &KeyMap,
    palette: &Palette,
    scroll: &mut u16,
) {
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(90),
        area.height.saturating_sub(2),
    );
    let inner = modal(
        frame,
        rect,
        "Help — j/k scroll, g/G top/end, esc close",
        palette,
    );
    let lines = lines(keymap, palette, inner.width);
    let max = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_sub(inner.height);
    *scroll = (*scroll).min(max);
    frame.render_widget(Paragraph::new(lines).scroll((*scroll, 0)), inner);
}
