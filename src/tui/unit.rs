//! What the components' unit tests share: keys by name, a frame as text, a palette, a timeline.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::keymap::Key;
use super::theme::{Palette, Theme};
use super::widgets::buffer_text;
use crate::model::TimelineId;
use crate::service::TimelineInfo;

/// The key written as in the key map (`"enter"`, `"j"`, `"ctrl-c"`).
pub fn key(name: &str) -> KeyEvent {
    match name.parse::<Key>() {
        Ok(k) => KeyEvent::new(k.code, k.modifiers),
        Err(e) => panic!("test key {name}: {e}"),
    }
}

/// The keys that type `text`.
pub fn typed(text: &str) -> impl Iterator<Item = KeyEvent> + '_ {
    text.chars()
        .map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

/// The uncoloured palette the snapshots use.
pub fn palette() -> Palette {
    Palette::new(Theme::Dark, true)
}

/// One frame of `width` x `height` drawn by `draw`, as text.
pub fn screen(width: u16, height: u16, draw: impl FnOnce(&mut ratatui::Frame<'_>)) -> String {
    let mut terminal = match Terminal::new(TestBackend::new(width, height)) {
        Ok(t) => t,
        Err(e) => panic!("test backend: {e}"),
    };
    if let Err(e) = terminal.draw(draw) {
        panic!("draw: {e}");
    }
    buffer_text(terminal.backend().buffer())
}

/// An open timeline without a window's end, `n` > 0 (`0` is the primary one).
pub fn timeline(n: u128, name: &str) -> TimelineInfo {
    let id = if n == 0 {
        TimelineId::primary()
    } else {
        TimelineId::from_ulid(ulid::Ulid::from(n))
    };
    TimelineInfo::bare(id, name, chrono::DateTime::<chrono::Utc>::UNIX_EPOCH)
}
