//! The `:` command line: its keys, Tab completion over [`COMMAND_WORDS`] and the action names,
//! running a command, and drawing the line in the footer's place.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;
use ratatui::widgets::Paragraph;
use ratatui_textarea::TextArea;

use super::chrome::Flash;
use super::effect::{Effect, Outcome};
use super::intent::Action;
use super::panes::PaneId;
use super::theme::Palette;
use super::widgets;

/// The `:` words besides the action names; those followed by a space take an argument.
pub const COMMAND_WORDS: [&str; 5] = ["search ", "filter ", "monitor", "timelines", "quit"];

/// Tab on the command line: `line` completed as far as the commands it can begin agree, and
/// those commands (more than one: the choice is the user's).
pub fn complete_command(line: &str) -> (String, Vec<&'static str>) {
    if line.contains(' ') {
        return (line.to_owned(), Vec::new()); // past the command word: an argument
    }
    let choices: Vec<&'static str> = COMMAND_WORDS
        .iter()
        .copied()
        .chain(Action::ALL.iter().map(|a| a.name()))
        .filter(|c| c.starts_with(line))
        .collect();
    let Some(first) = choices.first() else {
        return (line.to_owned(), choices);
    };
    let common = choices.iter().fold(first.len(), |n, c| {
        first
            .bytes()
            .zip(c.bytes())
            .take(n)
            .take_while(|(a, b)| a == b)
            .count()
    });
    (first[..common].to_owned(), choices)
}

/// The `:` command line being typed.
#[derive(Debug)]
pub struct CommandLine {
    input: TextArea<'static>,
}

impl Default for CommandLine {
    fn default() -> Self {
        Self {
            input: widgets::input("", "command"),
        }
    }
}

impl CommandLine {
    /// What is typed.
    pub fn text(&self) -> String {
        widgets::input_text(&self.input)
    }

    /// A key on the command line: Tab completes (and flashes the choices), Enter runs the
    /// command and closes the line, Esc closes it.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Esc => Outcome::close(),
            KeyCode::Tab => {
                let line = self.text();
                let (completed, choices) = complete_command(&line);
                if completed != line {
                    self.input = widgets::input(&completed, "command");
                }
                if choices.len() > 1 {
                    Outcome::with(Effect::Info(choices.join("  ")))
                } else {
                    Outcome::keep()
                }
            }
            KeyCode::Enter => Outcome {
                close: true,
                effects: run(&self.text()),
            },
            _ => {
                widgets::edit(&mut self.input, key);
                Outcome::keep()
            }
        }
    }

    /// Draws the line being typed in the footer's `area`, with the flash (what Tab offers, or
    /// an error) beside it.
    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        flash: Option<&Flash>,
        p: &Palette,
    ) {
        render(frame, area, &mut self.input, flash, p);
    }
}

/// What a `:` command asks for: an action name, `q`, `search LOCATION`, `filter TEXT`,
/// `monitor`, `timelines`.
pub fn run(line: &str) -> Vec<Effect> {
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    let effect = match word {
        "" => return Vec::new(),
        "q" | "quit" => Effect::Quit,
        "search" => Effect::Search(rest.to_owned()),
        "filter" => Effect::Filter(rest.to_owned()),
        "monitor" => Effect::Focus(PaneId::Monitor),
        "timelines" => Effect::Focus(PaneId::Timelines),
        other => match Action::from_name(other) {
            Some(action) => Effect::Action(action),
            None => Effect::Error(format!(
                "unknown command ':{other}'; try :help, :search PLACE, :filter TEXT or any action name from the help screen"
            )),
        },
    };
    vec![effect]
}

/// Draws the command line being typed in the footer's `area`, with the flash (what Tab offers,
/// or an error) beside it.
fn render(
    frame: &mut Frame<'_>,
    area: Rect,
    input: &mut TextArea<'static>,
    flash: Option<&Flash>,
    p: &Palette,
) {
    // What Tab offers (or an error) stays in view beside what is typed.
    let typed = widgets::input_text(input).chars().count() as u16;
    let [colon, rest, aside] = Layout::horizontal([
        Constraint::Length(1),
        Constraint::Length(typed.saturating_add(2).max(12)),
        Constraint::Min(0),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(Span::styled(":", p.key)), colon);
    input.set_cursor_style(p.selected);
    frame.render_widget(&*input, rest);
    if let Some(flash) = flash {
        let style = if flash.error { p.error } else { p.dim };
        frame.render_widget(
            Paragraph::new(Span::styled(flash.text.clone(), style)),
            aside,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::{key, palette, screen, typed};

    fn line(text: &str) -> CommandLine {
        let mut line = CommandLine::default();
        for k in typed(text) {
            assert!(line.key(k).effects.is_empty());
        }
        line
    }

    #[test]
    fn tab_completes_as_far_as_the_commands_agree_and_offers_them() {
        let mut one = line("he");
        let outcome = one.key(key("tab"));
        assert_eq!(one.text(), "help");
        assert!(!outcome.close && outcome.effects.is_empty());

        let mut two = line("s");
        let outcome = two.key(key("tab"));
        assert_eq!(two.text(), "se");
        assert!(!outcome.close);
        assert!(
            matches!(&outcome.effects[..], [Effect::Info(choices)] if choices == "search   set_anchor"),
            "{:?}",
            outcome.effects
        );
    }

    #[test]
    fn enter_closes_the_line_with_what_the_command_asks_for() {
        let run = |text: &str| {
            let outcome = line(text).key(key("enter"));
            assert!(outcome.close, "{text}");
            outcome.effects
        };
        assert!(matches!(&run("search Paris")[..], [Effect::Search(p)] if p == "Paris"));
        assert!(matches!(&run("filter tes")[..], [Effect::Filter(f)] if f == "tes"));
        assert!(matches!(&run("q")[..], [Effect::Quit]));
        assert!(matches!(
            &run("monitor")[..],
            [Effect::Focus(PaneId::Monitor)]
        ));
        assert!(matches!(&run("log")[..], [Effect::Action(Action::ShowLog)]));
        assert!(
            matches!(&run("frobnicate")[..], [Effect::Error(e)] if e.starts_with("unknown command ':frobnicate'"))
        );
        assert!(run("").is_empty());
    }

    #[test]
    fn esc_closes_without_running_anything() {
        let outcome = line("quit").key(key("esc"));
        assert!(outcome.close && outcome.effects.is_empty());
    }

    #[test]
    fn the_line_draws_a_colon_what_is_typed_and_the_flash_beside_it() {
        let mut l = line("sear");
        let flash = Flash::error("no such thing");
        let text = screen(40, 1, |f| l.render(f, f.area(), Some(&flash), &palette()));
        assert!(text.starts_with(":sear"), "{text}");
        assert!(text.contains("no such thing"), "{text}");
    }
}
