//! The `:` command line: its keys, Tab completion over [`COMMAND_WORDS`] and the action names,
//! running a command, and drawing the line in the footer's place.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;
use ratatui::widgets::Paragraph;
use ratatui_textarea::TextArea;

use super::action::Action;
use super::app::App;
use super::chrome::Flash;
use super::modal::Modal;
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

impl App {
    /// A key on the command line: the line after it (or none when it closes or has run).
    pub(super) fn command_key(
        &mut self,
        mut input: Box<TextArea<'static>>,
        key: KeyEvent,
    ) -> Option<Modal> {
        match key.code {
            KeyCode::Esc => None,
            KeyCode::Tab => {
                let line = widgets::input_text(&input);
                let (completed, choices) = complete_command(&line);
                if completed != line {
                    input = Box::new(widgets::input(&completed, "command"));
                }
                if choices.len() > 1 {
                    self.flash_info(choices.join("  "));
                }
                Some(Modal::Command(input))
            }
            KeyCode::Enter => {
                let line = widgets::input_text(&input);
                self.command(&line);
                // The command may have opened a modal of its own.
                self.modal.take()
            }
            _ => {
                widgets::edit(&mut input, key);
                Some(Modal::Command(input))
            }
        }
    }

    /// Runs a `:` command: an action name, `q`, `search LOCATION`, `filter TEXT`.
    fn command(&mut self, line: &str) {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match word {
            "" => {}
            "q" | "quit" => self.quit = true,
            "search" => {
                self.search.anywhere_at_any_time(rest);
                self.focus = PaneId::Search;
                self.request_search();
            }
            "filter" => {
                self.focus = PaneId::Timelines;
                self.timelines.set_filter(rest.to_owned());
                self.selection_changed();
            }
            "monitor" => self.dispatch_focus(PaneId::Monitor),
            "timelines" => self.dispatch_focus(PaneId::Timelines),
            other => match Action::from_name(other) {
                Some(action) => self.dispatch(action),
                None => self.flash_error(format!(
                    "unknown command ':{other}'; try :help, :search PLACE, :filter TEXT or any action name from the help screen"
                )),
            },
        }
    }
}

/// Draws the command line being typed in the footer's `area`, with the flash (what Tab offers,
/// or an error) beside it.
pub(super) fn render(
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
