//! Durable storage: an append-only log of the engine's operations.
//!
//! The engine is event-sourced. Every accepted change is one JSON record with a gap-free
//! sequence number; the engine's in-memory state is the fold of the log. This keeps the store
//! small and identical across backends, lets several processes (a CLI next to a dashboard,
//! several server replicas) share one state by catching up from the last sequence they saw, and
//! makes "acknowledged" mean "committed to the log".
//!
//! A write names the sequence number it expects to take; a second writer that raced it gets
//! [`StoreError::Conflict`], catches up, re-validates and tries again.

mod memory;

use async_trait::async_trait;

pub use memory::MemoryStore;

/// One stored record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Position in the log, from 1, without gaps.
    pub seq: u64,
    /// The operation, as JSON.
    pub body: String,
}

/// What can go wrong in a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another writer appended first; catch up and retry.
    #[error("another writer appended record {0} first")]
    Conflict(u64),
    /// The database could not be reached or refused the request.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The data on disk is not what this version expects.
    #[error("storage is corrupt or from another version: {0}")]
    Corrupt(String),
}

/// The log every backend keeps.
#[async_trait]
pub trait Store: Send + Sync {
    /// Appends `bodies` as records `first_seq`, `first_seq + 1`, … in one transaction, durable
    /// when this returns. `first_seq` must be the last sequence number plus one, otherwise
    /// nothing is written and [`StoreError::Conflict`] is returned.
    async fn append(&self, first_seq: u64, bodies: &[String]) -> Result<(), StoreError>;

    /// Records after `after`, in order, at most `limit`.
    async fn read_since(&self, after: u64, limit: u32) -> Result<Vec<Record>, StoreError>;

    /// The last sequence number written (0 when empty).
    async fn last_seq(&self) -> Result<u64, StoreError>;

    /// Where the data lives, for headers and logs (no secrets).
    fn describe(&self) -> String;
}
