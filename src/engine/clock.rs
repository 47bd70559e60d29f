//! The injected clock: the engine never reads the time itself, so tests can move it.

use std::sync::Mutex;

use chrono::{Duration, Utc};

use crate::model::Instant;

/// Where the engine gets "now".
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current wall-clock instant.
    fn now(&self) -> Instant;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Utc::now()
    }
}

/// A clock that only moves when told to (tests).
#[derive(Debug)]
pub struct ManualClock(Mutex<Instant>);

impl ManualClock {
    /// A clock stopped at `at`.
    pub fn new(at: Instant) -> Self {
        Self(Mutex::new(at))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }

    /// Sets the clock.
    pub fn set(&self, at: Instant) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
