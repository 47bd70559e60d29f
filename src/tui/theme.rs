//! Colours: a dark and a light palette, and a plain one when `NO_COLOR` is set.
//!
//! Panes never name a colour; they ask the [`Palette`] for the style of a role, so the light
//! theme and `NO_COLOR` are one switch here.

use ratatui::style::{Color, Modifier, Style};

/// The colour theme chosen on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Theme {
    /// Light text on a dark terminal.
    #[default]
    Dark,
    /// Dark text on a light terminal.
    Light,
}

/// Styles by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Palette {
    /// Ordinary text.
    pub text: Style,
    /// Secondary text: hints, timestamps, faded rows.
    pub dim: Style,
    /// Titles and the header.
    pub title: Style,
    /// Border of the focused pane.
    pub focus: Style,
    /// Border of other panes.
    pub border: Style,
    /// The selected row.
    pub selected: Style,
    /// Good news: open, stable, connected.
    pub ok: Style,
    /// Needs attention: closing soon, warnings, new anomalies.
    pub warn: Style,
    /// Errors, closed timelines, critical anomalies, disconnected.
    pub error: Style,
    /// Keys in hints and help.
    pub key: Style,
}

impl Palette {
    /// The palette for `theme`; `no_color` drops every colour and keeps only modifiers.
    pub fn new(theme: Theme, no_color: bool) -> Self {
        if no_color {
            let plain = Style::default();
            return Self {
                text: plain,
                dim: plain.add_modifier(Modifier::DIM),
                title: plain.add_modifier(Modifier::BOLD),
                focus: plain.add_modifier(Modifier::BOLD),
                border: plain,
                selected: plain.add_modifier(Modifier::REVERSED),
                ok: plain,
                warn: plain.add_modifier(Modifier::BOLD),
                error: plain.add_modifier(Modifier::BOLD),
                key: plain.add_modifier(Modifier::BOLD),
            };
        }
        let (fg, dim, accent, sel_bg) = match theme {
            Theme::Dark => (
                Color::Gray,
                Color::DarkGray,
                Color::Cyan,
                Color::Rgb(40, 60, 90),
            ),
            Theme::Light => (
                Color::Black,
                Color::Gray,
                Color::Blue,
                Color::Rgb(200, 220, 250),
            ),
        };
        let (ok, warn, error) = match theme {
            Theme::Dark => (Color::Green, Color::Yellow, Color::LightRed),
            Theme::Light => (Color::Green, Color::Rgb(160, 100, 0), Color::Red),
        };
        Self {
            text: Style::default().fg(fg),
            dim: Style::default().fg(dim),
            title: Style::default().fg(accent).add_modifier(Modifier::BOLD),
            focus: Style::default().fg(accent),
            border: Style::default().fg(dim),
            selected: Style::default().bg(sel_bg).add_modifier(Modifier::BOLD),
            ok: Style::default().fg(ok),
            warn: Style::default().fg(warn),
            error: Style::default().fg(error).add_modifier(Modifier::BOLD),
            key: Style::default().fg(accent).add_modifier(Modifier::BOLD),
        }
    }
}

/// Whether the `NO_COLOR` convention asks for no colour (set and not empty).
pub fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_keeps_modifiers_only_and_themes_differ() {
        let plain = Palette::new(Theme::Light, true);
        for style in [plain.text, plain.selected, plain.error, plain.ok, plain.key] {
            assert_eq!(style.fg, None);
            assert_eq!(style.bg, None);
        }
        assert!(plain.selected.add_modifier.contains(Modifier::REVERSED));
        assert_ne!(
            Palette::new(Theme::Dark, false),
            Palette::new(Theme::Light, false)
        );
    }
}
