//! A store that remembers being down: after a call fails with "unavailable", every call fails
//! at once (no connect timeout waited out per request) until a background probe finds the store
//! answering again. It also tells readiness whether writes can be made (a store known to be
//! down, a write that failed, a full disk), without making one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use async_trait::async_trait;

use super::{
    Appending, ChainMeta, Entry, Link, LogLock, NewSnapshot, PartId, Record, Restoring,
    SnapshotInfo, Store, StoreError,
};

/// How often the probe asks a store known to be down whether it answers again.
const PROBE_EVERY: Duration = Duration::from_millis(500);
/// The longest a probe's question may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Below this much free space on the SQLite file's filesystem, writes are reported impossible:
/// a WAL frame and a checkpoint need room, and a write that fails half-way helps nobody.
pub const MIN_FREE_BYTES: u64 = 1024 * 1024;

/// How the stores word a full disk (`sqlite::map_code`, `open`).
const DISK_FULL: &str = "the disk is full";

/// What every caller is told while the store is known to be down (no URL, no driver text).
const DOWN: &str = "the store is unreachable; retrying in the background";

/// [`Store`] around another, failing fast while it is known to be down.
pub struct Watched {
    shared: Arc<Shared>,
}

struct Shared {
    inner: Arc<dyn Store>,
    /// The SQLite file, whose filesystem's free space is checked.
    file: Option<PathBuf>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Why the store was found down (for logs), while it is.
    down: Option<String>,
    /// Why the last write failed, until one succeeds or the probe clears it.
    unwritable: Option<String>,
    /// Whether a probe task is running.
    probing: bool,
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("store", &self.shared.inner.describe())
            .finish_non_exhaustive()
    }
}

impl Watched {
    /// Watches `inner`; `file` is the SQLite file, whose filesystem's free space counts.
    pub fn new(inner: Arc<dyn Store>, file: Option<&Path>) -> Self {
        Self {
            shared: Arc::new(Shared {
                inner,
                file: file.map(Path::to_owned),
                state: Mutex::default(),
            }),
        }
    }
}

/// The free bytes (for unprivileged users) on the filesystem holding `file`, when known.
pub fn free_bytes(file: &Path) -> Option<u64> {
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let stat = rustix::fs::statvfs(dir).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails at once while the store is known to be down.
    fn check(&self) -> Result<(), StoreError> {
        match self.state().down {
            Some(_) => Err(StoreError::Unavailable(DOWN.into())),
            None => Ok(()),
        }
    }

    /// Learns from a call's outcome: "unavailable" marks the store down (and, for a write,
    /// unwritable) and starts the probe; a write that succeeded clears "unwritable".
    fn observe<T>(
        self: &Arc<Self>,
        outcome: Result<T, StoreError>,
        write: bool,
    ) -> Result<T, StoreError> {
        match &outcome {
            Err(StoreError::Unavailable(reason)) => {
                let start_probe = {
                    let mut state = self.state();
                    if state.down.is_none() {
                        tracing::warn!(%reason, "the store is unavailable; failing fast until it answers");
                    }
                    state.down = Some(reason.clone());
                    if write {
                        state.unwritable = Some(reason.clone());
                    }
                    !std::mem::replace(&mut state.probing, true)
                };
                if start_probe {
                    tokio::spawn(probe(Arc::downgrade(self)));
                }
            }
            Ok(_) if write => self.state().unwritable = None,
            _ => {}
        }
        outcome
    }

    /// Whether free space keeps writes from being made.
    fn disk_full(&self) -> Option<String> {
        let file = self.file.as_ref()?;
        let free = free_bytes(file)?;
        (free < MIN_FREE_BYTES).then(|| {
            format!(
                "cannot write {}: {DISK_FULL} ({free} bytes free)",
                file.display()
            )
        })
    }
}

/// Asks the store for its head until it answers, then clears "down" and a failed write's
/// "unwritable" (unless the disk was full: [`Store::writable`] looks at the disk for that);
/// ends with the store.
async fn probe(shared: Weak<Shared>) {
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let answered = matches!(
            tokio::time::timeout(PROBE_TIMEOUT, shared.inner.last_seq()).await,
            Ok(Ok(_))
        );
        if !answered {
            continue;
        }
        let mut state = shared.state();
        if state.down.take().is_some() {
            tracing::info!("the store answers again");
        }
        if !state
            .unwritable
            .as_deref()
            .is_some_and(|why| why.contains(DISK_FULL))
        {
            state.unwritable = None;
        }
        state.probing = false;
        return;
    }
}

/// A write lock whose commit is observed.
struct WatchedLock {
    inner: Box<dyn LogLock>,
    shared: Arc<Shared>,
}

#[async_trait]
impl LogLock for WatchedLock {
    fn last_seq(&self) -> u64 {
        self.inner.last_seq()
    }

    async fn commit(self: Box<Self>, entries: &[Entry]) -> Result<(), StoreError> {
        let outcome = self.inner.commit(entries).await;
        self.shared.observe(outcome, true)
    }

    async fn release(self: Box<Self>) {
        self.inner.release().await;
    }
}

#[async_trait]
impl Store for Watched {
    async fn lock(&self) -> Result<Box<dyn LogLock>, StoreError> {
        self.shared.check()?;
        let lock = self.shared.inner.lock().await;
        let inner = self.shared.observe(lock, true)?;
        Ok(Box::new(WatchedLock {
            inner,
            shared: Arc::clone(&self.shared),
        }))
    }

    async fn append(&self, first_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.append(first_seq, entries).await;
        self.shared.observe(outcome, true)
    }

    /// Not failed fast: the backend's queue decides whether a chained append follows the one
    /// before it, so every queued append reaches it (only SQLite queues, a local file).
    fn append_queued(&self, first_seq: u64, entries: &[Entry], chained: bool) -> Option<Appending> {
        let appending = self
            .shared
            .inner
            .append_queued(first_seq, entries, chained)?;
        let shared = Arc::clone(&self.shared);
        Some(Box::pin(
            async move { shared.observe(appending.await, true) },
        ))
    }

    async fn read_since(&self, after: u64, limit: u32) -> Result<Vec<Record>, StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.read_since(after, limit).await;
        self.shared.observe(outcome, false)
    }

    async fn last_seq(&self) -> Result<u64, StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.last_seq().await;
        self.shared.observe(outcome, false)
    }

    fn describe(&self) -> String {
        self.shared.inner.describe()
    }

    async fn chain(&self) -> Result<Option<ChainMeta>, StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.chain().await;
        self.shared.observe(outcome, false)
    }

    async fn restore(
        &self,
        meta: ChainMeta,
        batches: tokio::sync::mpsc::Receiver<Restoring>,
    ) -> Result<(), StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.restore(meta, batches).await;
        self.shared.observe(outcome, true)
    }

    async fn start_chain(&self, meta: ChainMeta, links: &[Link]) -> Result<(), StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.start_chain(meta, links).await;
        self.shared.observe(outcome, true)
    }

    async fn put_snapshot(&self, snapshot: NewSnapshot<'_>) -> Result<(), StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.put_snapshot(snapshot).await;
        self.shared.observe(outcome, true)
    }

    async fn snapshots(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.snapshots().await;
        self.shared.observe(outcome, false)
    }

    async fn read_snapshot(&self, id: i64) -> Result<Vec<u8>, StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.read_snapshot(id).await;
        self.shared.observe(outcome, false)
    }

    async fn read_snapshot_parts(&self, id: i64) -> Result<Vec<(PartId, Vec<u8>)>, StoreError> {
        self.shared.check()?;
        let outcome = self.shared.inner.read_snapshot_parts(id).await;
        self.shared.observe(outcome, false)
    }

    fn pushed_heads(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.shared.inner.pushed_heads()
    }

    fn read_staleness(&self) -> Duration {
        self.shared.inner.read_staleness()
    }

    /// The inner store's, unwatched: waiting for the lease is bounded by the backend's patience,
    /// and a write made under it goes through this store, which watches it.
    fn writer_lease(&self) -> Option<Arc<dyn super::WriterLease>> {
        self.shared.inner.writer_lease()
    }

    fn writable(&self) -> Result<(), StoreError> {
        let full = self.shared.disk_full();
        let mut state = self.shared.state();
        // A write refused for a full disk stands until one succeeds or the disk has room.
        if self.shared.file.is_some()
            && full.is_none()
            && state
                .unwritable
                .as_deref()
                .is_some_and(|why| why.contains(DISK_FULL))
        {
            state.unwritable = None;
        }
        match state
            .down
            .as_ref()
            .or(state.unwritable.as_ref())
            .or(full.as_ref())
        {
            Some(reason) => Err(StoreError::Unavailable(reason.clone())),
            None => Ok(()),
        }
    }
}
