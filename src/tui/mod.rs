//! The terminal dashboard (DESIGN §5).
//!
//! One message queue, one [`app::App::update`], background service calls tagged with
//! generations, and a draw only when the queue is drained. [`run`] owns the terminal: it enters
//! the alternate screen and raw mode, and restores both on every way out (quit, error, panic,
//! Ctrl-C).
//!
//! # Dashboard structure
//!
//! Components own their state, take their keys, draw themselves and answer with
//! [`effect::Effect`]s: a [`effect::Call`] to the service, a flash, an intent to route (an
//! [`action::Action`], a focus, a search). The panes ([`panes`]: timelines, search, monitor,
//! log) sit side by side; one [`modal::Modal`] sits on top and takes keys first (forms,
//! [`confirm`], the [`command`] line, the travel wizard, the [`picture`], the read-only
//! help/report/journeys/anomaly views) and reads what it needs of the panes through
//! [`modal::Around`]; [`chrome`] draws the header and footer from values; [`mouse`] turns a
//! mouse event into a [`mouse::Pointer`]. Only the loop in [`app`] (the `App`, its `update`,
//! the background calls with their slots and generations, routing, replies, drawing the
//! frame) knows them all, and no component imports it. A new screen (a merge wizard, time
//! controls, an anchors list, the [`security`] screens) is a component of its own: a pane in
//! [`panes`] if it lives beside the others, else a `Modal` variant; it answers with
//! `Effect`s (add a `Call` variant for a new service call and send it in `app/calls.rs`),
//! its answers are routed in `app/replies.rs`, its opening action in `app/dispatch.rs`, and
//! it gets unit tests of its own (keys in, effects and screen out; see `unit.rs`).

pub mod action;
pub mod anchors;
pub mod app;
pub mod chrome;
pub mod command;
pub mod config;
pub mod confirm;
pub mod effect;
pub mod forms;
pub mod help;
pub mod intent;
pub mod isolations;
pub mod jobs;
pub mod keymap;
pub mod live;
pub mod merge;
pub mod modal;
pub mod mouse;
pub mod offers;
pub mod open;
pub mod paging;
pub mod panes;
pub mod picture;
pub mod requests;
pub mod security;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;
pub mod theme;
pub mod time_controls;
pub mod tree;
#[cfg(test)]
mod unit;
pub mod widgets;

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use color_eyre::eyre::{WrapErr, eyre};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event, EventStream, KeyEventKind};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

pub use theme::Theme;

use crate::engine::SystemClock;
use action::Msg;
use app::{App, AppConfig};
use keymap::KeyMap;
use theme::Palette;

/// How the dashboard is started.
#[derive(Clone, Debug)]
pub struct TuiOptions {
    /// How often the monitor, the timelines and the header refresh.
    pub tick: std::time::Duration,
    /// Capture the mouse (selection and scrolling).
    pub mouse: bool,
    /// A JSON key map file overriding the default bindings.
    pub keymap: Option<std::path::PathBuf>,
    /// Colour theme.
    pub theme: Theme,
    /// Where the data comes from, for the header: `embedded: /path/chronoscope.db` or
    /// `server: http://...`.
    pub source: String,
}

/// Spinner frame rate while work is pending.
const ANIMATE_EVERY: Duration = Duration::from_millis(120);

/// **Test only** (feature `test-hooks`, never in a release). With this variable set to `1` the
/// dashboard panics on the first key it is given, so that a test can check the terminal is
/// restored before the panic report is printed; set to `call`, the first key starts a
/// background call that panics, which must end as an error while the dashboard stays up
/// (tests/tui_e2e.rs). Read once at start; nobody else has a reason to set it.
#[cfg(feature = "test-hooks")]
pub const TEST_PANIC_ENV: &str = "CHRONOSCOPE_TEST_PANIC";

/// The test hook [`TEST_PANIC_ENV`], read once at start.
#[cfg(feature = "test-hooks")]
mod hook {
    use super::{App, TEST_PANIC_ENV};

    /// What the test asked for.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TestPanic {
        /// Nothing: the dashboard as shipped.
        No,
        /// The UI panics on the first key.
        Ui,
        /// The first key starts a background call that panics.
        Call,
    }

    impl TestPanic {
        pub fn from_env() -> Self {
            match std::env::var_os(TEST_PANIC_ENV) {
                Some(v) if v == "1" => Self::Ui,
                Some(v) if v == "call" => Self::Call,
                _ => Self::No,
            }
        }

        /// Does what was asked on a key; whether the key was taken.
        pub fn on_key(&mut self, app: &mut App) -> bool {
            match *self {
                Self::No => false,
                Self::Ui => panic!(
                    "CHRONOSCOPE_TEST_PANIC=1: panicking on the first key, as asked (test only)"
                ),
                Self::Call => {
                    *self = Self::No;
                    app.spawn_panicking_call();
                    true
                }
            }
        }
    }
}

/// A release has no test hooks.
#[cfg(not(feature = "test-hooks"))]
mod hook {
    use super::App;

    /// Nothing to do.
    #[derive(Clone, Copy, Debug)]
    pub struct TestPanic;

    impl TestPanic {
        pub fn from_env() -> Self {
            Self
        }

        pub fn on_key(&mut self, _: &mut App) -> bool {
            false
        }
    }
}

use hook::TestPanic;

/// Runs the dashboard until the user quits. The terminal is restored on every exit path.
pub async fn run(
    service: std::sync::Arc<dyn crate::service::TimelineService>,
    options: TuiOptions,
) -> color_eyre::Result<()> {
    // A bad key map is refused before the terminal is touched, so the message stays readable.
    let keymap = match &options.keymap {
        Some(path) => KeyMap::load(path).map_err(|e| eyre!("{e}"))?,
        None => KeyMap::default(),
    };
    let palette = Palette::new(options.theme, theme::no_color_requested());
    let (tx, rx) = mpsc::unbounded_channel();
    let mut app = App::new(
        service,
        AppConfig {
            source: options.source.clone(),
            palette,
            keymap,
            clock: Arc::new(SystemClock),
            push: true,
        },
        tx,
    );
    let test_panic = TestPanic::from_env();
    install_panic_hook(options.mouse);
    let mut terminal = enter(options.mouse).wrap_err("cannot set up the terminal")?;
    OWNS_TERMINAL.store(true, Ordering::SeqCst);
    let result = event_loop(&mut terminal, &mut app, rx, &options, test_panic).await;
    let restored = leave(options.mouse);
    OWNS_TERMINAL.store(false, Ordering::SeqCst);
    report_other_panics();
    let _ = terminal.show_cursor();
    result?;
    restored.wrap_err("cannot restore the terminal")
}

type Term = Terminal<CrosstermBackend<Stdout>>;

fn enter(mouse: bool) -> io::Result<Term> {
    enable_raw_mode()?;
    let mut stdout = io::stdout();
    // Clear with a plain escape: ratatui's `clear` asks the terminal where the cursor is,
    // which a terminal that never answers (some multiplexers, test harnesses) turns into an error.
    if let Err(e) = execute!(
        stdout,
        EnterAlternateScreen,
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    ) {
        let _ = disable_raw_mode();
        return Err(e);
    }
    if mouse {
        execute!(stdout, EnableMouseCapture)?;
    }
    Terminal::new(CrosstermBackend::new(stdout))
}

/// Puts the terminal back as it was; safe to call more than once.
fn leave(mouse: bool) -> io::Result<()> {
    let mut stdout = io::stdout();
    if mouse {
        let _ = execute!(stdout, DisableMouseCapture);
    }
    let screen = execute!(stdout, LeaveAlternateScreen, crossterm::cursor::Show);
    disable_raw_mode()?;
    screen
}

/// Whether the dashboard owns the terminal (raw mode, alternate screen).
static OWNS_TERMINAL: AtomicBool = AtomicBool::new(false);
/// Most reports of panics in other threads kept for after the dashboard.
const KEPT_PANICS: usize = 8;
/// Panics of other threads while the dashboard owned the terminal, printed when it is left.
static OTHER_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// When the UI itself panics (the thread that runs the dashboard), restores the terminal, then
/// hands the panic to the hook installed before (color-eyre's report, installed by `main`), so
/// the report is printed on the normal screen and readable. A panic in another thread (a
/// background call, caught and shown as an error) leaves the terminal to the dashboard, which
/// goes on drawing: its report is kept and printed once the dashboard is left
/// ([`report_other_panics`]), as printing it now would scribble over the screen.
fn install_panic_hook(mouse: bool) {
    let ui = std::thread::current().id();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let on_ui = std::thread::current().id() == ui;
        if on_ui || !OWNS_TERMINAL.load(Ordering::SeqCst) {
            if on_ui {
                let _ = leave(mouse);
            }
            previous(info);
        } else {
            let mut kept = OTHER_PANICS.lock().unwrap_or_else(|e| e.into_inner());
            if kept.len() < KEPT_PANICS {
                kept.push(info.to_string());
            }
        }
    }));
}

/// Prints what other threads' panics said while the dashboard owned the terminal.
fn report_other_panics() {
    let kept = std::mem::take(&mut *OTHER_PANICS.lock().unwrap_or_else(|e| e.into_inner()));
    for report in kept {
        eprintln!("While the dashboard ran, a background task {report}");
    }
}

async fn event_loop(
    terminal: &mut Term,
    app: &mut App,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    options: &TuiOptions,
    mut test_panic: TestPanic,
) -> color_eyre::Result<()> {
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(options.tick.max(Duration::from_millis(50)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick is immediate; start() already asked for everything
    let mut animate = tokio::time::interval(ANIMATE_EVERY);
    animate.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    app.start();
    terminal.draw(|f| app.draw(f))?;
    loop {
        // Answers first, then input, then time: the UI reflects finished work before new keys.
        let msg = tokio::select! {
            biased;
            Some(msg) = rx.recv() => msg,
            event = events.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind == KeyEventKind::Press => {
                    if test_panic.on_key(app) {
                        continue;
                    }
                    Msg::Key(key)
                }
                Some(Ok(Event::Mouse(mouse))) if options.mouse => Msg::Mouse(mouse),
                Some(Ok(Event::Resize(w, h))) => Msg::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).wrap_err("cannot read the terminal"),
                None => return Ok(()),
            },
            _ = &mut ctrl_c => return Ok(()),
            _ = tick.tick() => Msg::Tick,
            _ = animate.tick(), if app.busy() => Msg::Animate,
        };
        app.update(msg);
        while let Ok(more) = rx.try_recv() {
            app.update(more);
        }
        if app.should_quit() {
            return Ok(());
        }
        terminal.draw(|f| app.draw(f))?;
    }
}

/// The data source line for the header of an embedded engine.
pub fn embedded_source(path: &std::path::Path) -> String {
    format!("embedded: {}", path.display())
}
