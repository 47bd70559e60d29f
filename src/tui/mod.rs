//! The ratatui dashboard.
