//! What the dashboard is built from, besides the service: where the data comes from, styles,
//! keys, the clock and whether to follow pushed changes.

use std::sync::Arc;

use super::keymap::KeyMap;
use super::theme::Palette;
use crate::engine::Clock;

/// What the dashboard is built from, besides the service.
#[derive(Clone, Debug)]
pub struct AppConfig {
    /// Where the data comes from, for the header (`embedded: ...` or `server: ...`).
    pub source: String,
    /// Styles.
    pub palette: Palette,
    /// Key bindings.
    pub keymap: KeyMap,
    /// The clock countdowns and "last refresh" are read from.
    pub clock: Arc<dyn Clock>,
    /// Follow the monitor's stream of changes (see [`super::live`]); without it the monitor
    /// is polled on every tick.
    pub push: bool,
}
