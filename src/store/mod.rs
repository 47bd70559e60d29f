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

pub mod backup;
pub mod chain;
mod memory;
mod postgres;
mod postgres_lease;
mod sqlite;
mod sqlite_writer;
mod watched;
pub mod witness;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

pub use chain::{ChainMeta, Link, LogKey};
pub use memory::MemoryStore;
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
pub use watched::{MIN_FREE_BYTES, Watched, free_bytes};
pub use witness::{Head, Witness, Witnessed};

/// The forms [`open`] accepts, for error messages and `--help`.
pub const ACCEPTED_FORMS: &str = "sqlite://PATH, sqlite:PATH or a plain file path (SQLite); \
postgres://USER[:PASSWORD]@HOST[:PORT]/DB or postgresql://... (PostgreSQL); \
memory: (a throwaway log, lost on exit)";

/// Opens the store `url` names, creating and migrating it as needed:
///
/// - `sqlite:///abs/path.db`, `sqlite://rel/path.db`, `sqlite:path.db`, or a plain path such as
///   `/var/lib/chronoscope/chronoscope.db` or `./x.db`: a SQLite file (parent directories are
///   created);
/// - `postgres://user:password@host:5432/db` or `postgresql://...`: PostgreSQL;
/// - `memory:` (or `sqlite::memory:`): an in-memory log, lost on exit.
///
/// SQLite and PostgreSQL stores are [`Watched`]: once found down they fail fast until they
/// answer again, and they tell readiness whether writes can be made.
pub async fn open(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match Location::parse(url)? {
        Location::Sqlite(path) => {
            let store = SqliteStore::open(&path)
                .await
                .map_err(|e| name_a_full_disk(e, free_bytes(&path)))?;
            Arc::new(Watched::new(Arc::new(store), Some(&path)))
        }
        Location::Postgres => Arc::new(Watched::new(
            Arc::new(PostgresStore::connect(url).await?),
            None,
        )),
        Location::Memory => Arc::new(MemoryStore::new()),
    })
}

/// A failure to open a SQLite file on a filesystem with (almost) no room left says so: SQLite
/// reports most of those as "disk I/O error", which sends people looking for a broken disk.
fn name_a_full_disk(e: StoreError, free: Option<u64>) -> StoreError {
    match (e, free) {
        (StoreError::Unavailable(reason), Some(free)) if free < MIN_FREE_BYTES => {
            if reason.contains("the disk is full") {
                StoreError::Unavailable(reason)
            } else {
                StoreError::Unavailable(format!(
                    "the disk is full ({free} bytes free); free some space and start again \
                     ({reason})"
                ))
            }
        }
        (e, _) => e,
    }
}

/// Which backend a URL names (the PostgreSQL URL itself is passed on untouched).
#[derive(Debug, PartialEq, Eq)]
enum Location {
    Sqlite(PathBuf),
    Postgres,
    Memory,
}

impl Location {
    fn parse(url: &str) -> Result<Self, StoreError> {
        let url = url.trim();
        if url.is_empty() {
            return Err(StoreError::Unavailable(format!(
                "no database given; use {ACCEPTED_FORMS}"
            )));
        }
        let Some((scheme, rest)) = url.split_once(':').filter(|(scheme, _)| is_scheme(scheme))
        else {
            return Ok(Self::Sqlite(PathBuf::from(url)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" => Ok(Self::Postgres),
            "memory" if rest.is_empty() => Ok(Self::Memory),
            "sqlite" if rest == ":memory:" => Ok(Self::Memory),
            "sqlite" => {
                let path = rest.strip_prefix("//").unwrap_or(rest);
                if path.contains('?') {
                    return Err(StoreError::Unavailable(
                        "SQLite URL options (`?...`) are not supported; give only the file path"
                            .into(),
                    ));
                }
                Ok(Self::Sqlite(PathBuf::from(path)))
            }
            // Only the scheme is repeated: the rest may hold a password.
            _ => Err(StoreError::Unavailable(format!(
                "unsupported database `{scheme}:...`; use {ACCEPTED_FORMS}"
            ))),
        }
    }
}

/// Whether `s` looks like a URL scheme; one letter is a Windows drive (`C:\x.db`), not a scheme.
fn is_scheme(s: &str) -> bool {
    s.len() > 1
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// A row as read: sequence number, body, link (absent before the store was chained).
type Row = (i64, String, Option<Vec<u8>>);

/// What a read of at most `limit` records after `after` asks the database: the sequence number
/// as the database stores it, or `None` when no record can answer (none is past `i64::MAX`,
/// and a limit of 0 wants none).
fn read_after(after: u64, limit: u32) -> Option<i64> {
    i64::try_from(after).ok().filter(|_| limit > 0)
}

/// Turns rows read after `after` into records, refusing a log with a hole in it: the engine
/// folds records in order and must never skip one.
fn contiguous(after: u64, rows: Vec<Row>, what: &str) -> Result<Vec<Record>, StoreError> {
    (after + 1..)
        .zip(rows)
        .map(|(expected, (seq, body, link))| {
            if u64::try_from(seq).ok() == Some(expected) {
                Ok(Record {
                    seq: expected,
                    body,
                    // A link of another length is no link: it fails verification.
                    link: link.and_then(|l| Link::try_from(l.as_slice()).ok()),
                })
            } else {
                Err(StoreError::Missing {
                    store: what.to_owned(),
                    seq: expected,
                    found: seq,
                })
            }
        })
        .collect()
}

/// The chain's bookkeeping row as stored, checked.
fn chain_meta(fingerprint: &[u8], from: i64, what: &str) -> Result<ChainMeta, StoreError> {
    match (Link::try_from(fingerprint), u64::try_from(from)) {
        (Ok(fingerprint), Ok(from)) if from >= 1 => Ok(ChainMeta { fingerprint, from }),
        _ => Err(StoreError::Corrupt(format!(
            "{what}: the log's chain record is damaged"
        ))),
    }
}

/// One stored record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Position in the log, from 1, without gaps.
    pub seq: u64,
    /// The operation, as JSON.
    pub body: String,
    /// Its link in the log's chain (see [`chain`]); `None` only in a store not yet chained.
    pub link: Option<Link>,
}

impl Record {
    /// Checks this record against the stored link before it, `previous`: its own link when it
    /// holds (see [`chain::verify`]).
    pub fn verify(&self, key: &LogKey, previous: &Link) -> Result<Link, chain::Broken> {
        chain::verify(key, previous, self.seq, &self.body, self.link.as_ref())
    }
}

/// A record to append: its body and its link, computed by the writer (see [`chain`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The operation, as JSON.
    pub body: String,
    /// Its link.
    pub link: Link,
}

/// What [`Store::restore`] is fed.
#[derive(Debug)]
pub enum Restoring {
    /// The next records, in order.
    Records(Vec<Entry>),
    /// Every record was sent and verified: commit.
    Done,
}

/// The migrations `(version, description, SQL)` embedded in the binary, in order, each run in
/// its own transaction: what `sqlx::migrate!` would build, without its proc-macro crate.
fn embedded_migrations(list: &[(i64, &'static str, &'static str)]) -> sqlx::migrate::Migrator {
    use sqlx::SqlSafeStr;
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    Migrator::with_migrations(
        list.iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    std::borrow::Cow::Borrowed(description),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

/// Why a restore's transaction ended without [`Restoring::Done`].
pub(crate) fn restore_interrupted(store: &str) -> StoreError {
    StoreError::Interrupted {
        store: store.to_owned(),
    }
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
    /// A record is missing from the log: the numbering jumps over it (records were deleted).
    #[error("{store}: record {seq} is missing (the log jumps to record {found}): it was deleted")]
    Missing {
        /// Where the data lives.
        store: String,
        /// The first missing record.
        seq: u64,
        /// The record found in its place.
        found: i64,
    },
    /// A restore stopped before its last record (Ctrl-C, an error reading the backup): its
    /// transaction was rolled back. Not a sign that the store is down.
    #[error("{store}: the restore was interrupted before its last record; nothing was written")]
    Interrupted {
        /// Where the data lives.
        store: String,
    },
    /// A restore was asked into a store that holds records (see [`Store::restore`]).
    #[error(
        "{store} holds {records} records: a backup is restored only into an empty store (a new \
         SQLite file, or a new PostgreSQL database)"
    )]
    NotEmpty {
        /// Where the data lives.
        store: String,
        /// How many records it holds.
        records: u64,
    },
    /// The store was chained by another process first (see [`Store::start_chain`]).
    #[error("the log was chained by another process meanwhile")]
    AlreadyChained,
}

/// A stored snapshot of the folded state (see `engine::snapshot`), as listed before it is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The store's id for it; larger ids were written later.
    pub id: i64,
    /// The layout version it was written in.
    pub format: u32,
    /// The last log record it folds in.
    pub seq: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// How many complete snapshots a store keeps; older ones are deleted when a new one is complete.
pub const SNAPSHOTS_KEPT: usize = 2;

/// The id of a snapshot part: the SHA-256 of its bytes, so a part is stored once however many
/// snapshots name it, and one altered in the database no longer matches the id a sealed
/// snapshot names.
pub type PartId = [u8; 32];

/// Parts as a database hands them back, each id as a [`PartId`]; a row whose id has another
/// length is left out (the snapshot naming it then reads as missing a part).
fn parts_read(rows: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(PartId, Vec<u8>)> {
    rows.into_iter()
        .filter_map(|(id, data)| Some((PartId::try_from(id.as_slice()).ok()?, data)))
        .collect()
}

/// A piece of a snapshot that never changes once written (a full chunk of journeys): stored
/// once and named by every snapshot that holds it, so a snapshot costs what changed since the
/// last one rather than all the history it folds (see `engine::snapshot`).
#[derive(Clone, Copy, Debug)]
pub struct SnapshotPart<'a> {
    /// The SHA-256 of `bytes`.
    pub id: PartId,
    /// What it holds.
    pub bytes: &'a [u8],
}

/// A snapshot to store ([`Store::put_snapshot`]): its sealed bytes, whose header says its
/// `format` and the log's `seq` it folds, and the parts they name.
#[derive(Clone, Copy, Debug)]
pub struct NewSnapshot<'a> {
    /// The snapshot format its bytes are written in.
    pub format: u32,
    /// The last record it folds.
    pub seq: u64,
    /// Its sealed bytes.
    pub bytes: &'a [u8],
    /// The parts it names.
    pub parts: &'a [SnapshotPart<'a>],
}

/// An append started with [`Store::append_queued`], answered when it has been tried.
pub type Appending =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), StoreError>> + Send>>;

/// The log every backend keeps.
#[async_trait]
pub trait Store: Send + Sync {
    /// Takes the log's write lock, waiting while another writer (in this process or any other)
    /// holds it. Until the returned [`LogLock`] commits or is released, nobody else can append,
    /// so what a holder decides after catching up (with [`Store::read_since`], which stays
    /// usable) cannot be overtaken.
    async fn lock(&self) -> Result<Box<dyn LogLock>, StoreError>;

    /// Appends `entries` as records `first_seq`, `first_seq + 1`, … in one transaction, durable
    /// when this returns. `first_seq` must be the last sequence number plus one, otherwise
    /// nothing is written and [`StoreError::Conflict`] is returned.
    async fn append(&self, first_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        let lock = self.lock().await?;
        if lock.last_seq().checked_add(1) != Some(first_seq) {
            lock.release().await;
            return Err(StoreError::Conflict(first_seq));
        }
        lock.commit(entries).await
    }

    /// Starts an append that the backend queues: the request is in the backend's hands when
    /// this returns, and queued appends are tried one at a time in the order they were started,
    /// so a process can start the next before the last has been answered and the backend's
    /// writer goes from one straight to the next. With `chained`, the append is tried only if
    /// the one this handle started just before it succeeded, and is otherwise refused with
    /// [`StoreError::Conflict`] without touching the log: it was decided on top of that one.
    /// Otherwise as [`Store::append`]. `None` when the backend does not queue appends.
    ///
    /// "Just before" counts every request on the handle, so chaining is sound only while one
    /// task starts the handle's queued appends: the engine's flusher, and every process opens
    /// its own store for its one engine. Two engines sharing one handle must not chain.
    fn append_queued(&self, first_seq: u64, entries: &[Entry], chained: bool) -> Option<Appending> {
        let _ = (first_seq, entries, chained);
        None
    }

    /// Records after `after`, in order, at most `limit`.
    async fn read_since(&self, after: u64, limit: u32) -> Result<Vec<Record>, StoreError>;

    /// The last sequence number written (0 when empty).
    async fn last_seq(&self) -> Result<u64, StoreError>;

    /// Which key chains the log and from where, once [`Store::start_chain`] recorded it.
    async fn chain(&self) -> Result<Option<ChainMeta>, StoreError>;

    /// Chains a store written before chains existed (or an empty one): in one transaction,
    /// under the write lock, stores `links` for records `1..meta.from` in order and records
    /// `meta`. Refused with [`StoreError::Conflict`] when the log no longer ends at
    /// `meta.from - 1`, and with [`StoreError::AlreadyChained`] when another process did it.
    async fn start_chain(&self, meta: ChainMeta, links: &[Link]) -> Result<(), StoreError>;

    /// Fills this store, which must hold no records, with a backup's: the records `batches`
    /// yields (numbered from 1 in the order given, their links as given), then the chain record
    /// `meta`, all in one transaction, so a kill at any moment leaves the store empty or
    /// complete. Snapshots the empty store kept are dropped in it too. The sender ends with
    /// [`Restoring::Done`]; a channel closed before it (the restore was interrupted) rolls
    /// everything back and answers [`StoreError::Interrupted`]. A store holding records is
    /// refused with [`StoreError::NotEmpty`] before anything is written. The caller verifies
    /// the links: the store takes them as given.
    async fn restore(
        &self,
        meta: ChainMeta,
        batches: tokio::sync::mpsc::Receiver<Restoring>,
    ) -> Result<(), StoreError> {
        let _ = (meta, batches);
        Err(StoreError::Unavailable(format!(
            "{} cannot be restored into",
            self.describe()
        )))
    }

    /// Where the data lives, for headers and logs (no secrets).
    fn describe(&self) -> String;

    /// Stores a snapshot (its `bytes`, whose header says its `format` and `seq`, and the
    /// `parts` it names) beside the log, then deletes all but the newest [`SNAPSHOTS_KEPT`] and
    /// the parts none of those names. A part the store already holds is not written again. It
    /// never holds the log's write lock for long: appends go on while it is written. A snapshot
    /// cut short by a crash, or missing a part, is never listed by [`Store::snapshots`].
    async fn put_snapshot(&self, snapshot: NewSnapshot<'_>) -> Result<(), StoreError> {
        let _ = snapshot;
        Err(StoreError::Unavailable(format!(
            "{} keeps no snapshots",
            self.describe()
        )))
    }

    /// The complete snapshots, newest (highest `seq`, then latest written) first.
    async fn snapshots(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        Ok(Vec::new())
    }

    /// The bytes of snapshot `id`, as they were stored (the caller checks them).
    async fn read_snapshot(&self, id: i64) -> Result<Vec<u8>, StoreError> {
        Err(StoreError::Unavailable(format!(
            "{} has no snapshot {id}",
            self.describe()
        )))
    }

    /// The parts snapshot `id` names, as they were stored (the caller checks them against the
    /// ids its sealed bytes name).
    async fn read_snapshot_parts(&self, id: i64) -> Result<Vec<(PartId, Vec<u8>)>, StoreError> {
        Err(StoreError::Unavailable(format!(
            "{} has no snapshot {id}",
            self.describe()
        )))
    }

    /// The heads other processes' appends reach, pushed as they commit (PostgreSQL's
    /// LISTEN/NOTIFY), for catching up in the background. Best effort: a push may come late or
    /// be lost (a reconnect), so readers still ask [`Store::last_seq`]. `None` when the backend
    /// does not push.
    fn pushed_heads(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// How stale a read may be with respect to *other processes'* writes. A process always sees
    /// its own writes at once, and writes never act on stale state (an append names the
    /// sequence it takes), so this only bounds how soon one process sees another's changes.
    fn read_staleness(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// The writer's lease, on a backend several processes append to (PostgreSQL): one process
    /// at a time holds it, decides its writes on a state known to be the latest and appends
    /// them without racing anybody (see `engine::lease`). `None` when the backend has one
    /// writer anyway (SQLite's file lock, memory).
    fn writer_lease(&self) -> Option<Arc<dyn WriterLease>> {
        None
    }

    /// Whether a write could be made now, as far as is known without making one (a store
    /// known to be down, a write that just failed, a full disk); `Err` says why, for the logs.
    /// Never waits.
    fn writable(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The writer's lease of a shared store (see [`Store::writer_lease`]).
///
/// It only saves work, never guards correctness: an append still names the sequence number it
/// takes and is refused when another process took it, so a process that lost the lease without
/// noticing (its connection dropped) merely loses races again.
#[async_trait]
pub trait WriterLease: Send + Sync {
    /// Waits until this process holds the lease, telling the holder (through
    /// [`WriterLease::wanted`] in its process) that it is wanted, again and again while it
    /// waits. `Ok(None)` when it was not granted within the backend's patience (a holder that
    /// stopped answering): write without it.
    async fn acquire(&self) -> Result<Option<Box<dyn HeldLease>>, StoreError>;

    /// Moves on each time another process asks for the lease.
    fn wanted(&self) -> tokio::sync::watch::Receiver<u64>;

    /// Names the address at which this process takes writes that other processes forward to
    /// it while it holds the lease (see [`WriterLease::holder`]). Takes effect the next time
    /// the lease is taken; `Err` says why the backend cannot keep this address.
    fn advertise(&self, url: &str) -> Result<(), String>;

    /// Who holds the lease now, as far as the backend knows; `None` when nobody does.
    async fn holder(&self) -> Result<Option<LeaseHolder>, StoreError>;

    /// The key this process's requests for the lease are signed with and other processes'
    /// are checked with (derived from the log key, which every replica shares): a request
    /// anyone else makes moves nothing. Until it is given, requests are neither made nor heard.
    fn sign_requests_with(&self, _key: &LogKey) {}
}

/// The process holding a writer's lease (see [`WriterLease::holder`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseHolder {
    /// Whether it is this process.
    pub mine: bool,
    /// Where it takes forwarded writes, when it said (see [`WriterLease::advertise`]).
    pub url: Option<String>,
}

/// The lease, held; dropping it releases it too, as soon as the backend notices.
#[async_trait]
pub trait HeldLease: Send + Sync {
    /// Gives the lease up for the next process waiting for it.
    async fn release(self: Box<Self>);
}

/// The log's write lock, held from [`Store::lock`] until [`LogLock::commit`] or
/// [`LogLock::release`]. Dropping it releases it too, as soon as the backend can.
#[async_trait]
pub trait LogLock: Send {
    /// The last sequence number when the lock was taken; it cannot move while the lock is held.
    fn last_seq(&self) -> u64;

    /// Appends `entries` as records `last_seq() + 1`, … in one transaction, durable when this
    /// returns, and releases the lock. On error nothing was written.
    async fn commit(self: Box<Self>, entries: &[Entry]) -> Result<(), StoreError>;

    /// Releases the lock without writing.
    async fn release(self: Box<Self>);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(p: &str) -> Location {
        Location::Sqlite(PathBuf::from(p))
    }

    #[test]
    fn urls_choose_the_backend() {
        let cases = [
            ("sqlite:///var/lib/c.db", sqlite("/var/lib/c.db")),
            ("sqlite://data/c.db", sqlite("data/c.db")),
            ("sqlite:c.db", sqlite("c.db")),
            ("SQLite:c.db", sqlite("c.db")),
            ("/tmp/x/c.db", sqlite("/tmp/x/c.db")),
            ("./c.db", sqlite("./c.db")),
            ("c.db", sqlite("c.db")),
            ("C:\\data\\c.db", sqlite("C:\\data\\c.db")),
            ("postgres://u:pw@h:5432/db", Location::Postgres),
            ("postgresql://u@h/db", Location::Postgres),
            ("memory:", Location::Memory),
            ("sqlite::memory:", Location::Memory),
        ];
        for (url, want) in cases {
            assert_eq!(Location::parse(url).ok(), Some(want), "{url}");
        }
    }

    #[test]
    fn unknown_schemes_list_the_accepted_forms_without_echoing_secrets() {
        for url in [
            "mysql://root:hunter2@db/x",
            "http://x",
            "",
            "  ",
            "sqlite://x.db?mode=rwc",
        ] {
            let Err(StoreError::Unavailable(message)) = Location::parse(url) else {
                panic!("{url:?} was accepted");
            };
            assert!(!message.contains("hunter2"), "{message}");
            if !url.starts_with("sqlite") {
                assert!(message.contains("sqlite://PATH"), "{message}");
                assert!(message.contains("postgres://"), "{message}");
            }
        }
    }

    #[test]
    fn a_start_on_a_full_disk_says_the_disk_is_full() {
        let io = || StoreError::Unavailable("cannot open /d/c.db: disk I/O error".into());
        let Err(StoreError::Unavailable(said)) = Err::<(), _>(name_a_full_disk(io(), Some(0)))
        else {
            panic!("not unavailable");
        };
        assert!(
            said.starts_with("the disk is full (0 bytes free)"),
            "{said}"
        );
        // With room left, SQLite's own words stand.
        let said = name_a_full_disk(io(), Some(MIN_FREE_BYTES * 100)).to_string();
        assert!(!said.contains("full"), "{said}");
        // SQLITE_FULL is named as such whatever the free space.
        let said = sqlite::map_code(std::path::Path::new("/d/c.db"), "write", 13, "x").to_string();
        assert!(said.contains("the disk is full"), "{said}");
    }

    #[test]
    fn a_hole_in_the_log_is_corruption() {
        let rows = vec![(3, "a".to_owned(), None), (5, "b".to_owned(), None)];
        assert!(matches!(
            contiguous(2, rows, "x"),
            Err(StoreError::Missing {
                seq: 4,
                found: 5,
                ..
            })
        ));
        let rows = vec![(3, "a".to_owned(), None), (4, "b".to_owned(), None)];
        let records = contiguous(2, rows, "x").ok().unwrap_or_default();
        assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [3, 4]);
    }
}
