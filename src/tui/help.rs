//! The help screen, generated from the key map: every binding, grouped by where it applies.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::keymap::{Context, KeyMap};
use super::theme::Palette;
use super::widgets::{centered, modal};

/// The help text: one line per binding, a heading per context.
pub fn lines<'a>(keymap: &KeyMap, palette: &Palette) -> Vec<Line<'a>> {
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
            out.push(Line::from(vec![
                Span::styled(format!("  {keys:<14}"), palette.key),
                Span::styled(format!("{:<48}", b.description), palette.text),
                Span::styled(format!(":{}", b.action.name()), palette.dim),
            ]));
        }
    }
    out.push(Line::default());
    out.push(Line::from(Span::styled(
        "In forms: tab next field, enter submit, esc cancel. ctrl-c quits from anywhere.",
        palette.dim,
    )));
    out
}

/// Draws the help modal, scrolled by `scroll` lines.
pub fn render(frame: &mut Frame<'_>, area: Rect, keymap: &KeyMap, palette: &Palette, scroll: u16) {
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(90),
        area.height.saturating_sub(2),
    );
    let inner = modal(frame, rect, "Help — j/k scroll, esc close", palette);
    let lines = lines(keymap, palette);
    // Scrolling stops when the last line is in view.
    let max = (lines.len() as u16).saturating_sub(inner.height);
    frame.render_widget(Paragraph::new(lines).scroll((scroll.min(max), 0)), inner);
}
