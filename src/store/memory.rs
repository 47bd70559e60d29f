//! A store that keeps the log in memory: for tests and benchmarks, never for data.

use async_trait::async_trait;
use tokio::sync::Mutex;

use super::{Record, Store, StoreError};

/// The log in a `Vec`; lost when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Mutex<Vec<String>>,
}

impl MemoryStore {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn append(&self, first_seq: u64, bodies: &[String]) -> Result<(), StoreError> {
        let mut records = self.records.lock().await;
        let last = records.len() as u64;
        if first_seq != last + 1 {
            return Err(StoreError::Conflict(first_seq));
        }
        records.extend(bodies.iter().cloned());
        Ok(())
    }

    async fn read_since(&self, after: u64, limit: u32) -> Result<Vec<Record>, StoreError> {
        let records = self.records.lock().await;
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(records.len());
        Ok(records[start..]
            .iter()
            .take(limit as usize)
            .enumerate()
            .map(|(i, body)| Record {
                seq: after + 1 + i as u64,
                body: body.clone(),
            })
            .collect())
    }

    async fn last_seq(&self) -> Result<u64, StoreError> {
        Ok(self.records.lock().await.len() as u64)
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}
