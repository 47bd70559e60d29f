//! Driving the dashboard without a terminal: keys in, text out. Used by the tests and the
//! benchmarks; nothing here is needed to run the dashboard.

use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use tokio::sync::mpsc;

use super::app::{App, AppConfig};
use crate::engine::Clock;
use crate::service::prelude::*;
use crate::tui::action::Msg;
use crate::tui::keymap::{Key, KeyMap};
use crate::tui::theme::{Palette, Theme};
pub use crate::tui::widgets::buffer_text;

/// An [`App`] with its queue, driven by hand.
pub struct Harness {
    /// The dashboard.
    pub app: App,
    rx: mpsc::UnboundedReceiver<Msg>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness").field("app", &self.app).finish()
    }
}

impl Harness {
    /// A dashboard on `service` with the default key map, no colour, and `clock`; the first
    /// requests are sent but not yet answered.
    pub fn new(service: Arc<dyn TimelineService>, clock: Arc<dyn Clock>) -> Self {
        Self::with_keymap(service, clock, KeyMap::default())
    }

    /// As [`Harness::new`] with another key map.
    pub fn with_keymap(
        service: Arc<dyn TimelineService>,
        clock: Arc<dyn Clock>,
        keymap: KeyMap,
    ) -> Self {
        Self::built(service, clock, keymap, false)
    }

    /// As [`Harness::new`], following the monitor's pushed changes as the real dashboard does
    /// (without, the monitor changes only when polled: what snapshots need to be repeatable).
    pub fn pushed(service: Arc<dyn TimelineService>, clock: Arc<dyn Clock>) -> Self {
        Self::built(service, clock, KeyMap::default(), true)
    }

    fn built(
        service: Arc<dyn TimelineService>,
        clock: Arc<dyn Clock>,
        keymap: KeyMap,
        push: bool,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut app = App::new(
            service,
            AppConfig {
                source: "embedded: test".into(),
                palette: Palette::new(Theme::Dark, true),
                keymap,
                clock,
                push,
            },
            tx,
        );
        app.start();
        Self { app, rx }
    }

    /// Presses keys written as in the key map, separated by spaces: `"tab j enter"`.
    pub fn press(&mut self, keys: &str) {
        for name in keys.split_whitespace() {
            let key: Key = match name.parse() {
                Ok(k) => k,
                Err(e) => panic!("test key: {e}"),
            };
            let code = key.code;
            let modifiers = key.modifiers;
            self.app.update(Msg::Key(KeyEvent::new(code, modifiers)));
        }
    }

    /// Types text, one character at a time.
    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.app.update(Msg::Key(KeyEvent::new(
                KeyCode::Char(c),
                KeyModifiers::NONE,
            )));
        }
    }

    /// Feeds any message.
    pub fn send(&mut self, msg: Msg) {
        self.app.update(msg);
    }

    /// Applies answers until nothing is in flight (panics after 10 s of silence).
    pub async fn settle(&mut self) {
        loop {
            while let Ok(msg) = self.rx.try_recv() {
                self.app.update(msg);
            }
            if !self.app.busy() {
                return;
            }
            match tokio::time::timeout(Duration::from_secs(10), self.rx.recv()).await {
                Ok(Some(msg)) => self.app.update(msg),
                Ok(None) => return,
                Err(_) => panic!("the dashboard is still waiting after 10 s: {:?}", self.app),
            }
        }
    }

    /// Applies messages as they come until `done` holds (panics after 5 s): for what arrives
    /// without being asked for, such as pushed changes.
    pub async fn until(&mut self, what: &str, done: impl Fn(&App) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !done(&self.app) {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(msg)) => self.app.update(msg),
                Ok(None) => panic!("the queue closed before {what}"),
                Err(_) => panic!("no {what} after 5 s: {:?}", self.app),
            }
        }
    }

    /// One frame at `width` x `height`, as text.
    pub fn render(&mut self, width: u16, height: u16) -> String {
        let buffer = self.render_buffer(width, height);
        buffer_text(&buffer)
    }

    /// One frame at `width` x `height`.
    pub fn render_buffer(&mut self, width: u16, height: u16) -> Buffer {
        let mut terminal = match Terminal::new(TestBackend::new(width, height)) {
            Ok(t) => t,
            Err(e) => panic!("test backend: {e}"),
        };
        if let Err(e) = terminal.draw(|f| self.app.draw(f)) {
            panic!("draw: {e}");
        }
        terminal.backend().buffer().clone()
    }
}
