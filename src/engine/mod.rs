//! The embedded engine: every domain rule of DESIGN §3 over an event-sourced state.
//!
//! Reads work on an immutable snapshot of the [`World`] (cheap to clone: its maps are shared).
//! Writes are decided one at a time against the latest state and appended in groups (see
//! `commit`): an answer is given once its ops are durable, and only then are they published.
//! Another process writing the same store (a CLI next to the dashboard, a second server replica)
//! is seen on the next call, and a write that raced one is decided again on the new state.
//!
//! The core is `world` (the state and its one fold per operation, with the state each concern
//! keeps: `world::keys`, `world::access_book`, `world::data`, `world::scans`), `commit` (with the
//! writer's `lease`) and `rules`. The feature modules (anchors, merges and review, access and
//! its log, data, integrity, automation…) import the core and decide with it; the core imports
//! none of them (a test below reads the core's files and fails when one does).

pub mod access;
pub mod access_log;
mod anchors;
pub mod audit;
mod barrier;
mod clock;
mod commit;
mod data;
mod dissonance;
mod events_watch;
mod feed;
pub mod heavy;
pub mod idempotency;
mod integrity;
mod isolation;
mod jobs;
mod lease;
mod merge;
mod navigation;
mod review;
pub(crate) mod rules;
mod seed;
mod session;
pub mod snapshot;
pub mod transfer;
mod watch;
pub mod witnessing;
mod world;
mod wormhole;

use std::sync::{Arc, Mutex, RwLock};

pub use barrier::ReadStats;
pub use clock::{Clock, ManualClock, SystemClock};
pub use data::{ALGORITHM as DATA_ALGORITHM, DERIVATIONS_BUSY};
pub use integrity::{OpenFinding, Scans};
pub use seed::{Seed, WorldFile};
pub use session::EngineSession;
pub use world::{Envelope, Op, TimelineState, World};

use crate::error::ServiceError;
use crate::model::{Instant, Traveller, Window};

/// What `diff-timelines` answers on `world`, for benchmarks and tools (a pure read).
pub fn diff_timelines(
    world: &World,
    q: &crate::service::DiffQuery,
) -> Result<crate::service::TimelineDiff, ServiceError> {
    review::diff(world, q)
}

/// What `merge-timelines` by `traveller` at `now` would append to the log and answer on
/// `world`, for benchmarks and tools: the decision, paradox check included, without the write.
pub fn decide_merge(
    world: &World,
    traveller: &Traveller,
    now: Instant,
    req: &crate::service::MergeRequest,
) -> Result<(Vec<Op>, crate::service::MergeResult), ServiceError> {
    let minted = std::sync::atomic::AtomicU64::new(0);
    let mint = || {
        let n = minted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let millis = u64::try_from(now.timestamp_millis()).unwrap_or_default();
        ulid::Ulid::from((u128::from(millis) << 80) | u128::from(n))
    };
    let ctx = rules::Ctx {
        traveller,
        now,
        mint: &mint,
        operator: true,
    };
    merge::merge(world, &ctx, req)
}
use crate::store::chain::{self, ChainMeta, LogKey};
use crate::store::{NewSnapshot, Store, StoreError};

/// How many log records are read per round trip when catching up.
const CATCH_UP_BATCH: u32 = 10_000;
/// Up to how many records a catch-up folds in on the task that asked; more go to a blocking
/// thread.
const FOLD_INLINE: usize = 32;

/// Appends `ops` to `store` after its last record, as records chained with `key` (`by` none,
/// `at` unknown), chaining an empty store first: for tools that build a log without an engine
/// (load generators, tests). Every engine opened on the store with `key` reads them back.
pub async fn append_ops(store: &dyn Store, key: &LogKey, ops: &[Op]) -> Result<(), ServiceError> {
    if store.chain().await?.is_none() {
        let meta = ChainMeta {
            fingerprint: key.fingerprint(),
            from: 1,
        };
        match store.start_chain(meta, &[]).await {
            Ok(()) | Err(StoreError::AlreadyChained) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let last = store.last_seq().await?;
    let mut previous = match last.checked_sub(1) {
        Some(before) => store
            .read_since(before, 1)
            .await?
            .first()
            .and_then(|r| r.link)
            .ok_or_else(|| ServiceError::Internal(format!("record {last} has no link")))?,
        None => key.genesis(),
    };
    let mut entries = Vec::with_capacity(ops.len());
    for (seq, op) in (last + 1..).zip(ops) {
        let body = Envelope::encode(None, None, op)
            .map_err(|e| ServiceError::Internal(format!("cannot encode a change: {e}")))?;
        previous = key.link(&previous, seq, &body);
        entries.push(crate::store::Entry {
            body,
            link: previous,
        });
    }
    Ok(store.append(last + 1, &entries).await?)
}

/// When `serve` writes snapshots of the folded state (see [`Engine::spawn_snapshots`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotPolicy {
    /// Write one once this many records were appended since the newest snapshot (0: never).
    pub every_records: u64,
    /// Write one once this long has passed since the newest snapshot and anything was appended.
    pub every: std::time::Duration,
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        Self {
            every_records: 20_000,
            every: std::time::Duration::from_secs(600),
        }
    }
}

/// Two snapshots written by one process for time alone ([`SnapshotPolicy::every`]) are at
/// least this far apart. Snapshots due by records are not spaced: the tail a start replays is
/// bounded by what is appended while one snapshot is written, whatever the write rate.
const SNAPSHOT_MIN_GAP: std::time::Duration = std::time::Duration::from_secs(30);

/// How often the snapshot task looks at the clock when nothing is published.
const SNAPSHOT_TICK: std::time::Duration = std::time::Duration::from_secs(1);

/// A graceful stop writes a snapshot when at least this many records (or
/// [`SnapshotPolicy::every_records`], if fewer) were appended since the newest one, so the
/// next start replays nothing long ([`Engine::snapshot_before_exit`]).
pub const EXIT_SNAPSHOT_RECORDS: u64 = 1_000;

/// Settings of an engine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// How long new timelines stay open.
    pub default_window: Window,
    /// The key of the log's chain (see [`crate::store::chain`]); the binary loads the real one.
    pub log_key: LogKey,
    /// How long the access log keeps what it folded (`--access-log-retention`).
    pub access_log_retention: std::time::Duration,
    /// This replica's witness of the store (see [`crate::store::witness`]): checked at start
    /// and by the scans, and moved forward as the head does. `None` (tests, a memory store):
    /// nothing is witnessed.
    pub witness: Option<crate::store::Witness>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            default_window: Window::Seconds(3600),
            log_key: LogKey::development(),
            access_log_retention: access_log::DEFAULT_RETENTION,
            witness: None,
        }
    }
}

/// The engine: one per process, shared by every traveller's [`EngineSession`].
pub struct Engine {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    state: RwLock<Arc<World>>,
    pending: tokio::sync::Mutex<commit::Pending>,
    /// Told when a write joins the open batch, for a flusher waiting to queue it.
    opened: tokio::sync::Notify,
    /// This engine, for work that must outlive the call that started it (a flush).
    me: std::sync::Weak<Engine>,
    ids: Mutex<ulid::Generator>,
    /// When the last catch-up that found nothing new began (a monotonic clock, not the domain's).
    caught_up_at: Mutex<Option<std::time::Instant>>,
    /// Held by the one task fetching and folding in other processes' records at a time (a
    /// second finds them folded in instead of fetching and verifying them again). The state
    /// itself is locked only to publish what was folded.
    catching_up: tokio::sync::Mutex<()>,
    /// Batches the store queries of linearizable reads (see `barrier`).
    barrier: barrier::ReadBarrier,
    /// Record fetches made by catching up.
    fetches: std::sync::atomic::AtomicU64,
    /// What was published, for change streams.
    published: feed::Published,
    /// Held while a snapshot is written, so a process writes one at a time.
    snapshotting: tokio::sync::Mutex<snapshot::Kept>,
    /// Each timeline's open anomalies, kept while unchanged (see `watch`).
    reports: watch::Reports,
    /// One task per watched timeline, shared by its streams (see `watch`).
    hubs: watch::Hubs,
    /// One task per followed events question, shared by its streams (see `events_watch`).
    event_feeds: events_watch::Feeds,
    /// Reads and refusals counted since the last access summary (see `access_log`).
    access: access_log::Counters,
    /// The writer's lease, on a store several processes append to (see `lease`).
    lease: Option<lease::Lease>,
    /// The first record the store's chain record says was linked as written, as found at start
    /// (what the witness records beside the head).
    chain_from: std::sync::OnceLock<u64>,
    /// When each traveller last started a scan of the log (see `integrity::Cooldown`).
    scan_cooldown: integrity::Cooldown,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("store", &self.store.describe())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(_)
            | StoreError::Unavailable(_)
            | StoreError::AlreadyChained
            | StoreError::Interrupted { .. } => ServiceError::Unavailable(e.to_string()),
            StoreError::Corrupt(_) => ServiceError::Internal(e.to_string()),
            StoreError::NotEmpty { .. } => ServiceError::Conflict(e.to_string()),
            StoreError::Missing { seq, .. } => ServiceError::IntegrityFailed(format!(
                "{e}. Nothing from record {seq} on is served; `chronoscope verify` reports the \
                 store's problems. Restore the store from a backup or a standby"
            )),
        }
    }
}

impl Engine {
    /// Opens an engine on `store`: replays its log, or, when the store is empty, writes the
    /// `primary` timeline and the chosen seed.
    pub async fn open(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        config: EngineConfig,
        seed: Seed,
    ) -> Result<Arc<Self>, ServiceError> {
        let lease = store
            .writer_lease()
            .map(|lease| lease::Lease::new(lease, &config.log_key));
        let engine = Arc::new_cyclic(|me| Self {
            me: me.clone(),
            lease,
            store,
            clock,
            config,
            state: RwLock::new(Arc::new(World::default())),
            pending: tokio::sync::Mutex::default(),
            opened: tokio::sync::Notify::new(),
            ids: Mutex::new(ulid::Generator::new()),
            caught_up_at: Mutex::new(None),
            catching_up: tokio::sync::Mutex::new(()),
            barrier: barrier::ReadBarrier::default(),
            fetches: std::sync::atomic::AtomicU64::new(0),
            published: feed::Published::default(),
            snapshotting: tokio::sync::Mutex::default(),
            reports: watch::Reports::default(),
            hubs: watch::Hubs::default(),
            event_feeds: events_watch::Feeds::default(),
            access: access_log::Counters::default(),
            chain_from: std::sync::OnceLock::new(),
            scan_cooldown: integrity::Cooldown::default(),
        });
        engine.establish_chain().await?;
        engine.check_witness_at_start().await?;
        engine.restore_snapshot().await?;
        engine.catch_up().await?;
        // What the start verified is witnessed from now on.
        engine.record_witness().await?;
        engine.follow_pushed_heads();
        engine.spawn_witness();
        if engine.snapshot_now().seq == 0 {
            engine.write_seed(seed).await?;
        }
        Ok(engine)
    }

    /// A handle acting as `traveller`.
    pub fn session(self: &Arc<Self>, traveller: Traveller) -> EngineSession {
        EngineSession::new(Arc::clone(self), traveller, None)
    }

    /// A handle acting as `traveller` for one keyed request: a write it makes is remembered
    /// under the key, and a repeat of the same request is answered as the first was (see
    /// [`idempotency`]).
    pub fn keyed_session(
        self: &Arc<Self>,
        traveller: Traveller,
        request: idempotency::Idempotency,
    ) -> EngineSession {
        EngineSession::new(Arc::clone(self), traveller, Some(request))
    }

    /// Where the data lives.
    pub fn describe_store(&self) -> String {
        self.store.describe()
    }

    /// The store the engine folds (for tools and tests that write beside it).
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.store)
    }

    /// The engine's settings.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The engine's clock.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Checks that the store's chain is keyed with this engine's key. An empty store not chained
    /// yet is chained; one that holds records is refused (see `witnessing::refuse_unchained`).
    async fn establish_chain(&self) -> Result<(), ServiceError> {
        let key = &self.config.log_key;
        loop {
            match self.store.chain().await? {
                Some(meta) if meta.fingerprint == key.fingerprint() => {
                    let _ = self.chain_from.set(meta.from);
                    return Ok(());
                }
                Some(meta) => {
                    return Err(ServiceError::Unavailable(format!(
                        "{} was written with another log key (fingerprint {}; this process has \
                         {}): start with the key file that wrote it (--log-key-file or {}); \
                         every replica of one store uses the same key",
                        self.store.describe(),
                        chain::short(&meta.fingerprint),
                        chain::short(&key.fingerprint()),
                        chain::KEY_FILE_ENV,
                    )));
                }
                None => {
                    // Linking a store that holds records would prove whatever they now say:
                    // only an operator does that, on purpose (`chronoscope link-unchained-store`).
                    witnessing::refuse_unchained(self).await?;
                    let meta = ChainMeta {
                        fingerprint: key.fingerprint(),
                        from: 1,
                    };
                    match self.store.start_chain(meta, &[]).await {
                        Ok(()) => {
                            let _ = self.chain_from.set(meta.from);
                            return Ok(());
                        }
                        // Another process chained it, or appended meanwhile: look again.
                        Err(StoreError::AlreadyChained | StoreError::Conflict(_)) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
    }

    async fn write_seed(&self, seed: Seed) -> Result<(), ServiceError> {
        self.write(None, |world, now| {
            if world.seq > 0 {
                // Another process seeded the store while we were opening it.
                return Ok((Vec::new(), ()));
            }
            let ops = match seed {
                Seed::None => vec![Op::CreateTimeline {
                    timeline: seed::primary_timeline(now),
                }],
                Seed::Demo => WorldFile::demo()?.ops(now, self.config.default_window),
            };
            Ok((ops, ()))
        })
        .await
    }

    /// Mints a new ULID for an id, monotonic within this process.
    pub(crate) fn mint(&self) -> ulid::Ulid {
        let now = self.clock.now();
        let at = std::time::SystemTime::from(now);
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.generate_from_datetime(at)
            .unwrap_or_else(|_| ulid::Ulid::from_datetime(at))
    }

    /// The snapshot as last seen, without asking the store.
    fn snapshot_now(&self) -> Arc<World> {
        Arc::clone(&self.state.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The current snapshot, holding every write any process acknowledged before this call
    /// (behind the batched read barrier), unless the store allows reads to be slightly stale
    /// and the last catch-up is recent enough.
    pub async fn snapshot(&self) -> Result<Arc<World>, ServiceError> {
        self.snapshot_within(std::time::Duration::ZERO).await
    }

    /// Whether one process serves the store (SQLite, memory): its memory is then always
    /// current, and bounded-staleness reads change nothing.
    pub fn single_process(&self) -> bool {
        !self.store.describe().starts_with("postgres")
    }

    /// [`Engine::snapshot`], allowed to be up to `allowed` stale with respect to other
    /// processes' writes (a traveller's bounded-staleness reads, `enable-caching`): without
    /// waiting for the read barrier when this process confirmed the log head less than that
    /// ago.
    pub async fn snapshot_within(
        &self,
        allowed: std::time::Duration,
    ) -> Result<Arc<World>, ServiceError> {
        let staleness = self.store.read_staleness().max(allowed);
        metrics::counter!(crate::metrics::READS).increment(1);
        if staleness.is_zero() {
            self.read_barrier().await?;
            return Ok(self.snapshot_now());
        }
        let recent = self
            .caught_up_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() < staleness);
        if !recent {
            metrics::counter!(crate::metrics::READ_BARRIERS).increment(1);
            self.catch_up().await?;
        }
        Ok(self.snapshot_now())
    }

    /// Folds in every record other processes appended.
    async fn catch_up(&self) -> Result<(), ServiceError> {
        self.catch_up_to(None).await
    }

    /// Folds in records other processes appended, up to `head` when it is known (which saves
    /// the query that would find nothing after it), else until the store has no more.
    async fn catch_up_to(&self, head: Option<u64>) -> Result<(), ServiceError> {
        let started = std::time::Instant::now();
        let mut folded = 0;
        let _one_at_a_time = self.catching_up.lock().await;
        loop {
            let base = self.snapshot_now();
            let seen = base.seq;
            let records = if head.is_some_and(|head| seen >= head) {
                Vec::new()
            } else {
                self.fetches
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                metrics::counter!(crate::metrics::STORE_QUERIES).increment(1);
                self.store.read_since(seen, CATCH_UP_BATCH).await?
            };
            if records.is_empty() {
                *self.caught_up_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(started);
                if head.is_none() {
                    // Without a known head, how far behind it was is what was folded in.
                    metrics::gauge!(crate::metrics::REPLICA_LAG).set(folded as f64);
                }
                metrics::gauge!(crate::metrics::LOG_POSITION).set(seen as f64);
                return Ok(());
            }
            folded += records.len();
            // Verifying and decoding a batch is work for a blocking thread, not a worker; a
            // few records are folded where they arrived.
            let (next, failure) = match self.me.upgrade() {
                Some(engine) if records.len() > FOLD_INLINE => {
                    tokio::task::spawn_blocking(move || engine.fold_all(&base, &records))
                        .await
                        .map_err(|e| ServiceError::Internal(format!("catching up failed: {e}")))?
                }
                _ => self.fold_all(&base, &records),
            };
            // What verified is published even when a later record fails: the state stops
            // exactly before the record that does not verify. (A write of this process may
            // have published a later state meanwhile: `publish` keeps the latest.)
            if let Some(next) = next {
                self.publish(Arc::new(next));
            }
            if let Some(e) = failure {
                return Err(e);
            }
        }
    }

    /// `base` with `records` folded in, up to the first that does not verify (`None` when
    /// none was new), and why that one did not.
    fn fold_all(
        &self,
        base: &World,
        records: &[crate::store::Record],
    ) -> (Option<World>, Option<ServiceError>) {
        let mut next: Option<World> = None;
        for record in records {
            let world = next.get_or_insert_with(|| base.clone());
            if record.seq <= world.seq {
                continue; // folded in before this batch was fetched
            }
            if let Err(e) = self.fold(world, record) {
                return (next.filter(|w| w.seq > base.seq), Some(e));
            }
        }
        (next.filter(|w| w.seq > base.seq), None)
    }

    /// Verifies `record` against `world`'s head link and folds it in; a record that does not
    /// verify or decode is not applied.
    fn fold(&self, world: &mut World, record: &crate::store::Record) -> Result<(), ServiceError> {
        let key = &self.config.log_key;
        let previous = world.link.unwrap_or_else(|| key.genesis());
        let link = chain::verify(
            key,
            &previous,
            record.seq,
            &record.body,
            record.link.as_ref(),
        )
        .map_err(|broken| {
            ServiceError::IntegrityFailed(format!(
                "the log of {} does not verify: {broken}. Nothing from record {} on is \
                     served; `chronoscope verify` reports every bad record. Restore the store \
                     from a backup or a standby",
                self.store.describe(),
                record.seq
            ))
        })?;
        let envelope = Envelope::decode(&record.body).map_err(|e| {
            ServiceError::Internal(format!("log record {} is unreadable: {e}", record.seq))
        })?;
        world
            .apply_recorded(
                record.seq,
                envelope.by.as_ref(),
                envelope.at,
                envelope.change,
                self.config.access_log_retention,
            )
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        world.link = Some(link);
        Ok(())
    }

    /// Catches up in the background whenever the store says another process appended, so the
    /// read barrier usually finds nothing to fetch. Stops when the engine is dropped.
    fn follow_pushed_heads(&self) {
        let Some(mut heads) = self.store.pushed_heads() else {
            return;
        };
        let engine = self.me.clone();
        tokio::spawn(async move {
            while heads.changed().await.is_ok() {
                let head = *heads.borrow_and_update();
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                if head > engine.snapshot_now().seq
                    && let Err(e) = engine.catch_up_to(Some(head)).await
                {
                    tracing::warn!(%e, "catching up after a notification");
                }
            }
        });
    }

    /// Starts from the newest usable snapshot in the store, if any; the log after it is
    /// replayed by the catch-up that follows. A snapshot of another format, a damaged one or
    /// one that cannot be read is logged and skipped: the log is the truth, and without a
    /// usable snapshot the whole of it is replayed. A snapshot that proves (by its seal) the
    /// log once went further than it now does is refused: acknowledged writes were lost.
    async fn restore_snapshot(&self) -> Result<(), ServiceError> {
        let started = std::time::Instant::now();
        let listed = match self.store.snapshots().await {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!(%e, "cannot list snapshots; replaying the whole log");
                return Ok(());
            }
        };
        if listed.is_empty() {
            return Ok(());
        }
        let last_seq = self.store.last_seq().await?;
        for info in listed {
            if info.format != snapshot::FORMAT {
                tracing::info!(
                    id = info.id,
                    seq = info.seq,
                    "ignoring a snapshot of format {} (this version reads format {})",
                    info.format,
                    snapshot::FORMAT
                );
                continue;
            }
            let bytes = match self.store.read_snapshot(info.id).await {
                Ok(bytes) => bytes,
                Err(e) => {
                    tracing::warn!(id = info.id, %e, "cannot read a snapshot; trying an older one");
                    continue;
                }
            };
            if info.seq > last_seq {
                // Only a snapshot this key sealed proves anything: check its seal alone.
                if snapshot::sealed_by(&bytes, &self.config.log_key) {
                    return Err(ServiceError::Unavailable(format!(
                        "the log of {} ends at record {last_seq}, but a snapshot written by \
                         this deployment folds records up to {}: {} acknowledged records are \
                         gone (a write-ahead log cut short, or an older backup restored over \
                         newer data). Restore the store from a standby or a newer backup",
                        self.store.describe(),
                        info.seq,
                        info.seq - last_seq
                    )));
                }
                tracing::warn!(
                    id = info.id,
                    seq = info.seq,
                    last_seq,
                    "ignoring a snapshot ahead of the log"
                );
                continue;
            }
            let parts = match self.store.read_snapshot_parts(info.id).await {
                Ok(parts) => parts,
                Err(e) => {
                    tracing::warn!(id = info.id, %e, "cannot read a snapshot's parts; trying an older one");
                    continue;
                }
            };
            let key = self.config.log_key.clone();
            let decoded =
                tokio::task::spawn_blocking(move || snapshot::decode_owned(bytes, &parts, &key))
                    .await;
            match decoded {
                Ok(Ok(world)) if world.seq == info.seq => {
                    tracing::info!(
                        seq = info.seq,
                        bytes = info.bytes,
                        ms = started.elapsed().as_millis() as u64,
                        "started from a snapshot; replaying the log after it"
                    );
                    self.publish(Arc::new(world));
                    return Ok(());
                }
                Ok(Ok(world)) => tracing::warn!(
                    id = info.id,
                    seq = info.seq,
                    inside = world.seq,
                    "ignoring a snapshot whose header disagrees with its row"
                ),
                Ok(Err(e)) => {
                    tracing::warn!(id = info.id, seq = info.seq, %e, "ignoring a snapshot");
                }
                Err(e) => tracing::warn!(id = info.id, %e, "reading a snapshot failed"),
            }
        }
        tracing::warn!("no usable snapshot; replaying the whole log");
        Ok(())
    }

    /// Writes a snapshot of the state as this process now knows it, beside the log. Encoding
    /// runs on a blocking thread; the store writes it without holding up appends. Answers the
    /// log position it folds up to (`None` when the log is empty).
    pub async fn write_snapshot(&self) -> Result<Option<u64>, ServiceError> {
        let mut writing = self.snapshotting.lock().await;
        self.write_snapshot_held(&mut writing).await
    }

    /// [`Engine::write_snapshot`], with `snapshotting` held by the caller (`kept`: what the
    /// last snapshot written here held, see [`snapshot::Kept`]).
    async fn write_snapshot_held(
        &self,
        kept: &mut snapshot::Kept,
    ) -> Result<Option<u64>, ServiceError> {
        let world = self.snapshot_now();
        if world.seq == 0 {
            return Ok(None);
        }
        let seq = world.seq;
        let key = self.config.log_key.clone();
        let mut taken = std::mem::take(kept);
        let (bytes, taken) = tokio::task::spawn_blocking(move || {
            let bytes = snapshot::encode_kept(&world, &key, &mut taken);
            (bytes, taken)
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("encoding a snapshot failed: {e}")))?;
        *kept = taken;
        self.store
            .put_snapshot(NewSnapshot {
                format: snapshot::FORMAT,
                seq,
                bytes: &bytes,
                parts: &kept.parts(),
            })
            .await?;
        tracing::info!(
            seq,
            bytes = bytes.len(),
            parts = kept.parts().len(),
            "snapshot written"
        );
        Ok(Some(seq))
    }

    /// On a graceful stop: writes a snapshot when the tail after the newest one is long
    /// ([`EXIT_SNAPSHOT_RECORDS`]), after the one being written, if any, is done. Answers the
    /// log position it folds up to, `None` when none was needed (or `policy` writes none).
    pub async fn snapshot_before_exit(
        &self,
        policy: SnapshotPolicy,
    ) -> Result<Option<u64>, ServiceError> {
        if policy.every_records == 0 {
            return Ok(None);
        }
        let mut writing = self.snapshotting.lock().await;
        let seq = self.snapshot_now().seq;
        let stored = self.store.snapshots().await?.first().map_or(0, |s| s.seq);
        if seq.saturating_sub(stored) < EXIT_SNAPSHOT_RECORDS.min(policy.every_records) {
            return Ok(None);
        }
        tracing::info!(
            records = seq - stored,
            "writing a snapshot before stopping, so the next start replays no long tail"
        );
        self.write_snapshot_held(&mut writing).await
    }

    /// Writes snapshots in the background as `policy` says, until the engine is dropped. Any
    /// replica may write one; each first looks at the newest one in the store, so replicas do
    /// not repeat each other's. A failure is logged and tried again later: the log is intact
    /// whatever happens to a snapshot.
    pub fn spawn_snapshots(&self, policy: SnapshotPolicy) {
        if policy.every_records == 0 {
            return;
        }
        let engine = self.me.clone();
        let mut position = self.position();
        tokio::spawn(async move {
            let mut newest: Option<u64> = None;
            let mut since = std::time::Instant::now();
            let mut last_try: Option<std::time::Instant> = None;
            // A failed write is tried again after the spacing, not on every publication.
            let mut failed_at: Option<std::time::Instant> = None;
            loop {
                // A publication may make one due by records; the tick, one due by time.
                tokio::select! {
                    changed = position.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        position.borrow_and_update();
                    }
                    () = tokio::time::sleep(SNAPSHOT_TICK) => {}
                }
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                let seq = engine.snapshot_now().seq;
                let stored = match newest {
                    Some(stored) => stored,
                    None => {
                        let found = engine
                            .store
                            .snapshots()
                            .await
                            .map(|l| l.first().map_or(0, |s| s.seq))
                            .unwrap_or(0);
                        newest = Some(found);
                        found
                    }
                };
                let by_records = seq.saturating_sub(stored) >= policy.every_records;
                let by_time = seq > stored && since.elapsed() >= policy.every;
                let spaced = |at: Option<std::time::Instant>| {
                    at.is_none_or(|t| t.elapsed() >= SNAPSHOT_MIN_GAP)
                };
                if !(by_records || by_time && spaced(last_try)) || !spaced(failed_at) {
                    continue;
                }
                // Another replica may have written one meanwhile.
                if let Ok(listed) = engine.store.snapshots().await {
                    let theirs = listed.first().map_or(0, |s| s.seq);
                    if theirs > stored {
                        newest = Some(theirs);
                        since = std::time::Instant::now();
                        continue;
                    }
                }
                last_try = Some(std::time::Instant::now());
                match engine.write_snapshot().await {
                    Ok(written) => {
                        failed_at = None;
                        newest = Some(written.unwrap_or(stored));
                        since = std::time::Instant::now();
                    }
                    Err(e) => {
                        failed_at = Some(std::time::Instant::now());
                        tracing::warn!(%e, "writing a snapshot failed; the log is intact");
                    }
                }
            }
        });
    }

    /// How many scans of a timeline's events the monitor made (`chronoscope_monitor_scans_total`
    /// counts the same): a kept answer for an unchanged timeline is not a scan.
    pub fn monitor_scans(&self) -> u64 {
        self.reports.scans()
    }

    /// How many timelines have a task watching them for change streams (one each, whatever
    /// the number of streams).
    pub fn watched_timelines(&self) -> usize {
        self.hubs.len()
    }

    /// How many events questions (timeline, location, time range) have a task answering them
    /// for `monitor-events` streams (one each, whatever the number of streams).
    pub fn followed_event_questions(&self) -> usize {
        self.event_feeds.len()
    }

    /// The log position readers see; it changes whenever a write of this process or, once
    /// caught up with, of another is published. What change streams wait on.
    pub fn position(&self) -> tokio::sync::watch::Receiver<u64> {
        self.published.position()
    }

    /// Makes `world` the snapshot readers see, unless a newer one is there already.
    fn publish(&self, world: Arc<World>) {
        let mut guard = self.state.write().unwrap_or_else(|e| e.into_inner());
        if guard.seq < world.seq {
            metrics::gauge!(crate::metrics::LOG_POSITION).set(world.seq as f64);
            self.published.record(&world);
            *guard = world;
        }
    }
}

#[cfg(test)]
mod layering {
    /// The core's files, as compiled.
    const CORE: &[(&str, &str)] = &[
        ("world.rs", include_str!("world.rs")),
        ("world/apply.rs", include_str!("world/apply.rs")),
        ("world/access_book.rs", include_str!("world/access_book.rs")),
        ("world/data.rs", include_str!("world/data.rs")),
        ("world/keys.rs", include_str!("world/keys.rs")),
        ("world/scans.rs", include_str!("world/scans.rs")),
        ("commit.rs", include_str!("commit.rs")),
        ("lease.rs", include_str!("lease.rs")),
        ("rules.rs", include_str!("rules.rs")),
    ];
    /// What the core may name in `crate::engine`.
    const CORE_MODULES: &[&str] = &["world", "commit", "lease", "rules"];

    #[test]
    fn the_core_imports_no_feature_module() {
        // `engine::x` wherever it is written, and `super::x` in the files directly under
        // `engine` (in `world/`, `super` is `world` itself).
        let named = regex::Regex::new(r"(?:crate::engine::|\bsuper::)\{?([a-z_]+)\b").unwrap();
        let listed = regex::Regex::new(r"(?s)use super::\{([^}]*)\}").unwrap();
        let modules = |text: &str, nested: bool| -> Vec<String> {
            let mut found: Vec<String> = Vec::new();
            for c in named.captures_iter(text) {
                let whole = c.get(0).map_or("", |m| m.as_str());
                if !(nested && whole.starts_with("super")) {
                    found.push(c[1].to_owned());
                }
            }
            if !nested {
                for c in listed.captures_iter(text) {
                    found.extend(
                        c[1].split(',')
                            .map(|x| x.trim().split("::").next().unwrap_or("").to_owned()),
                    );
                }
            }
            found
        };
        for (file, text) in CORE {
            let nested = file.contains('/');
            let features: Vec<String> = modules(text, nested)
                .into_iter()
                .filter(|m| {
                    m.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                        && !CORE_MODULES.contains(&m.as_str())
                })
                .collect();
            assert!(
                features.is_empty(),
                "the core's {file} names feature modules {features:?}: move the state it needs \
                 into `world`, or the decision out of the core"
            );
        }
    }
}
