//! A store that keeps the log in memory: for tests and benchmarks, never for data.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use tokio::sync::OwnedMutexGuard;

use super::{
    ChainMeta, Entry, Link, LogLock, NewSnapshot, PartId, Record, Restoring, SNAPSHOTS_KEPT,
    SnapshotInfo, Store, StoreError,
};

/// The log in a `Vec`; lost when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Arc<Mutex<Vec<Stored>>>,
    chain: Mutex<Option<ChainMeta>>,
    /// The write lock, apart from the records so that a holder can still read.
    writer: Arc<tokio::sync::Mutex<()>>,
    /// Complete snapshots, oldest first.
    snapshots: Arc<Mutex<Vec<StoredSnapshot>>>,
}

/// A snapshot as listed, with its bytes and the parts it names (shared with the other
/// snapshots that name them).
type StoredSnapshot = (SnapshotInfo, Arc<Vec<u8>>, Vec<(PartId, Arc<Vec<u8>>)>);

/// A record's body and link (`None` until the log is chained).
type Stored = (String, Option<Link>);

impl MemoryStore {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }
}

fn len<T>(records: &Mutex<Vec<T>>) -> u64 {
    records.lock().unwrap_or_else(PoisonError::into_inner).len() as u64
}

#[async_trait]
impl Store for MemoryStore {
    async fn lock(&self) -> Result<Box<dyn LogLock>, StoreError> {
        let held = Arc::clone(&self.writer).lock_owned().await;
        Ok(Box::new(MemoryLock {
            last_seq: len(&self.records),
            records: Arc::clone(&self.records),
            _held: held,
        }))
    }

    async fn read_since(&self, after: u64, limit: u32) -> Result<Vec<Record>, StoreError> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(records.len());
        Ok(records[start..]
            .iter()
            .take(limit as usize)
            .enumerate()
            .map(|(i, (body, link))| Record {
                seq: after + 1 + i as u64,
                body: body.clone(),
                link: *link,
            })
            .collect())
    }

    async fn last_seq(&self) -> Result<u64, StoreError> {
        Ok(len(&self.records))
    }

    fn describe(&self) -> String {
        "memory".into()
    }

    async fn chain(&self) -> Result<Option<ChainMeta>, StoreError> {
        Ok(*self.chain.lock().unwrap_or_else(PoisonError::into_inner))
    }

    async fn restore(
        &self,
        meta: ChainMeta,
        mut batches: tokio::sync::mpsc::Receiver<Restoring>,
    ) -> Result<(), StoreError> {
        let _held = self.writer.lock().await;
        let records = len(&self.records);
        if records > 0 {
            return Err(StoreError::NotEmpty {
                store: self.describe(),
                records,
            });
        }
        let mut restored = Vec::new();
        loop {
            match batches.recv().await {
                Some(Restoring::Records(entries)) => {
                    restored.extend(entries.into_iter().map(|e| (e.body, Some(e.link))))
                }
                Some(Restoring::Done) => break,
                None => return Err(super::restore_interrupted(&self.describe())),
            }
        }
        *self.records.lock().unwrap_or_else(PoisonError::into_inner) = restored;
        *self.chain.lock().unwrap_or_else(PoisonError::into_inner) = Some(meta);
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        Ok(())
    }

    async fn start_chain(&self, meta: ChainMeta, links: &[Link]) -> Result<(), StoreError> {
        let _held = self.writer.lock().await;
        let mut chain = self.chain.lock().unwrap_or_else(PoisonError::into_inner);
        if chain.is_some() {
            return Err(StoreError::AlreadyChained);
        }
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        if records.len() as u64 + 1 != meta.from || links.len() != records.len() {
            return Err(StoreError::Conflict(meta.from));
        }
        for ((_, link), new) in records.iter_mut().zip(links) {
            *link = Some(*new);
        }
        *chain = Some(meta);
        Ok(())
    }

    async fn put_snapshot(&self, snapshot: NewSnapshot<'_>) -> Result<(), StoreError> {
        let NewSnapshot {
            format,
            seq,
            bytes,
            parts,
        } = snapshot;
        let mut snapshots = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let id = snapshots
            .iter()
            .map(|(info, ..)| info.id)
            .max()
            .unwrap_or(0)
            + 1;
        let info = SnapshotInfo {
            id,
            format,
            seq,
            bytes: bytes.len() as u64,
        };
        // A part another snapshot holds is shared, not copied.
        let held = |part: &PartId| {
            snapshots
                .iter()
                .flat_map(|(.., parts)| parts)
                .find(|(id, _)| id == part)
                .map(|(_, bytes)| Arc::clone(bytes))
        };
        let parts = parts
            .iter()
            .map(|part| {
                let bytes = held(&part.id).unwrap_or_else(|| Arc::new(part.bytes.to_vec()));
                (part.id, bytes)
            })
            .collect();
        snapshots.push((info, Arc::new(bytes.to_vec()), parts));
        snapshots.sort_by_key(|(info, ..)| (info.seq, info.id));
        let excess = snapshots.len().saturating_sub(SNAPSHOTS_KEPT);
        snapshots.drain(..excess);
        Ok(())
    }

    async fn snapshots(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        let snapshots = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(snapshots
            .iter()
            .rev()
            .map(|(info, ..)| info.clone())
            .collect())
    }

    async fn read_snapshot(&self, id: i64) -> Result<Vec<u8>, StoreError> {
        let snapshots = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        snapshots
            .iter()
            .find(|(info, ..)| info.id == id)
            .map(|(_, bytes, _)| bytes.to_vec())
            .ok_or_else(|| StoreError::Unavailable(format!("memory has no snapshot {id}")))
    }

    async fn read_snapshot_parts(&self, id: i64) -> Result<Vec<(PartId, Vec<u8>)>, StoreError> {
        let snapshots = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        snapshots
            .iter()
            .find(|(info, ..)| info.id == id)
            .map(|(.., parts)| {
                parts
                    .iter()
                    .map(|(id, bytes)| (*id, bytes.to_vec()))
                    .collect()
            })
            .ok_or_else(|| StoreError::Unavailable(format!("memory has no snapshot {id}")))
    }
}

struct MemoryLock {
    last_seq: u64,
    records: Arc<Mutex<Vec<Stored>>>,
    _held: OwnedMutexGuard<()>,
}

#[async_trait]
impl LogLock for MemoryLock {
    fn last_seq(&self) -> u64 {
        self.last_seq
    }

    async fn commit(self: Box<Self>, entries: &[Entry]) -> Result<(), StoreError> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(entries.iter().map(|e| (e.body.clone(), Some(e.link))));
        Ok(())
    }

    async fn release(self: Box<Self>) {}
}
