//! The embedded default: the log in one SQLite file.
//!
//! SQLite allows one writer at a time even in WAL mode, so all writes of a handle go through a
//! single connection, owned by a thread of its own ([`Writer`]). Every write takes the write
//! lock up front (`BEGIN IMMEDIATE`) before it reads the last sequence number: a deferred
//! transaction would read, then fail to upgrade to a write lock with `SQLITE_BUSY` (which the
//! busy timeout cannot wait out) when another process wrote in between. Reads use a small
//! separate pool, which WAL lets run beside the writer.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Row;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteAutoVacuum, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};

use super::sqlite_writer::Writer;
use super::{
    Appending, ChainMeta, Entry, Link, LogLock, NewSnapshot, PartId, Record, Restoring,
    SNAPSHOTS_KEPT, SnapshotInfo, Store, StoreError, parts_read,
};

/// How long a statement waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Concurrent readers per handle; WAL readers never block the writer.
const READERS: u32 = 4;
/// How often opening is tried when it raced another process opening the same new file.
const OPEN_ATTEMPTS: u64 = 5;

/// The migrations, embedded in the binary so an installed program needs no files beside it.
///
/// Built by hand rather than with `sqlx::migrate!`, which needs sqlx's `macros` feature (the
/// sqlx-macros proc-macro crate, otherwise unused here); the version, checksum and table are the
/// ones `migrate!("migrations/sqlite")` would produce, so switching later changes nothing on disk.
fn migrator() -> Migrator {
    super::embedded_migrations(&[
        (
            1,
            "op log",
            include_str!("../../migrations/sqlite/0001_op_log.sql"),
        ),
        (
            2,
            "snapshots",
            include_str!("../../migrations/sqlite/0002_snapshots.sql"),
        ),
        (
            3,
            "chain",
            include_str!("../../migrations/sqlite/0003_chain.sql"),
        ),
        (
            4,
            "snapshot parts",
            include_str!("../../migrations/sqlite/0004_snapshot_parts.sql"),
        ),
    ])
}

/// A snapshot is written in chunks of this size, each its own transaction on the writer
/// connection between two appends, so an append waits at most for one chunk.
const SNAPSHOT_CHUNK: usize = 2 * 1024 * 1024;

/// An incomplete snapshot older than this was cut short by a crash (a live writer finishes far
/// sooner) and is deleted.
const ABANDONED_AFTER: &str = "-10 minutes";

/// The log in a SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    path: PathBuf,
    writer: Writer,
    readers: SqlitePool,
}

impl SqliteStore {
    /// Opens the log at `path`, creating the file and its parent directories when missing and
    /// bringing the schema up to date.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        prepare_file(path)?;
        let mut attempt = 1;
        loop {
            match Self::try_open(path).await {
                Ok(store) => return Ok(store),
                Err(Opening::Raced(_)) if attempt < OPEN_ATTEMPTS => {}
                Err(Opening::Raced(e) | Opening::Failed(e)) => return Err(e),
            }
            tokio::time::sleep(Duration::from_millis(20 * attempt)).await;
            attempt += 1;
        }
    }

    async fn try_open(path: &Path) -> Result<Self, Opening> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // Durable migrations, as the writer's appends (see `sqlite_writer::open`).
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);

        // Creating the file, switching it to WAL and migrating it happen on a connection of
        // their own, closed before the writer opens.
        // Incremental auto-vacuum, set before a new file's first table: deleted snapshots then
        // give their pages back to the file system instead of staying in the file.
        let setup = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(BUSY_TIMEOUT * 3)
            .connect_with(options.clone().auto_vacuum(SqliteAutoVacuum::Incremental))
            .await
            .map_err(|e| Opening::from_sqlx(path, e))?;
        let migrated = migrator().run(&setup).await.map_err(|e| {
            use sqlx::migrate::MigrateError as M;
            match e {
                M::Execute(e) => Opening::from_sqlx(path, e),
                // Another process may have applied this migration between our reading the
                // applied list and running it ("duplicate column name", "table already
                // exists"). Each migration runs in its own transaction, so the failed one left
                // nothing; the retry reads the list again and skips it. A migration that truly
                // cannot run fails the same way on every attempt and is reported.
                M::ExecuteMigration(e, _) => Opening::Raced(map_err(path, "open", e)),
                e => Opening::Failed(map_migrate_err(path, e)),
            }
        });
        if migrated.is_ok()
            && let Err(e) = tidy_snapshots(&setup).await
        {
            // The log is intact either way; the next open tries again.
            tracing::warn!(path = %path.display(), %e, "could not tidy the snapshots at open");
        }
        setup.close().await;
        migrated?;
        let writer = Writer::start(path, BUSY_TIMEOUT)
            .await
            .map_err(Opening::Failed)?;

        // Not pinged before each use (sqlx's default): a connection to a local file cannot
        // have been cut off, and the ping is a round trip to its worker thread.
        let readers = SqlitePoolOptions::new()
            .max_connections(READERS)
            .test_before_acquire(false)
            .acquire_timeout(BUSY_TIMEOUT * 3)
            // Guards against a read path ever writing around the single writer.
            .connect_with(options.pragma("query_only", "ON"))
            .await
            .map_err(|e| Opening::from_sqlx(path, e))?;
        Ok(Self {
            path: path.to_owned(),
            writer,
            readers,
        })
    }

    /// The file the log lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the readers, waiting for connections in use to be returned, and the writer once
    /// it has served the writes already asked of it.
    pub async fn close(&self) {
        self.readers.close().await;
        self.writer.close().await;
    }

    fn err(&self, action: &str, e: sqlx::Error) -> StoreError {
        map_err(&self.path, action, e)
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn lock(&self) -> Result<Box<dyn LogLock>, StoreError> {
        self.writer.lock().await
    }

    /// One request to the writer thread, which locks, checks the last sequence number, inserts
    /// and commits without a round trip in between (see [`Writer`]).
    async fn append(&self, first_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        self.writer.append(first_seq, entries).await
    }

    fn append_queued(&self, first_seq: u64, entries: &[Entry], chained: bool) -> Option<Appending> {
        Some(self.writer.append_queued(first_seq, entries, chained))
    }

    async fn read_since(&self, after: u64, limit: u32) -> Result<Vec<Record>, StoreError> {
        let Some(after_db) = super::read_after(after, limit) else {
            return Ok(Vec::new());
        };
        let rows: Vec<super::Row> = sqlx::query_as(
            "SELECT seq, body, link FROM op_log WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )
        .bind(after_db)
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(|e| self.err("read", e))?;
        super::contiguous(after, rows, &self.describe())
    }

    async fn last_seq(&self) -> Result<u64, StoreError> {
        let last: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM op_log")
            .fetch_one(&self.readers)
            .await
            .map_err(|e| self.err("read", e))?;
        u64::try_from(last).map_err(|_| {
            StoreError::Corrupt(format!(
                "{}: negative sequence number {last}",
                self.describe()
            ))
        })
    }

    async fn chain(&self) -> Result<Option<ChainMeta>, StoreError> {
        let row: Option<(Vec<u8>, i64)> =
            sqlx::query_as("SELECT fingerprint, chain_from FROM log_chain WHERE id = 1")
                .fetch_optional(&self.readers)
                .await
                .map_err(|e| self.err("read", e))?;
        row.map(|(fingerprint, from)| super::chain_meta(&fingerprint, from, &self.describe()))
            .transpose()
    }

    async fn start_chain(&self, meta: ChainMeta, links: &[Link]) -> Result<(), StoreError> {
        let links = links.to_vec();
        self.writer
            .exec(move |conn, path| super::sqlite_writer::start_chain(conn, path, meta, &links))
            .await
    }

    async fn restore(
        &self,
        meta: ChainMeta,
        batches: tokio::sync::mpsc::Receiver<Restoring>,
    ) -> Result<(), StoreError> {
        let shown = self.describe();
        self.writer
            .exec(move |conn, path| {
                super::sqlite_writer::restore(conn, path, &shown, meta, batches)
            })
            .await
    }

    /// The row and the parts' references first (so no part it names is taken as unnamed and
    /// deleted meanwhile), then the parts the file lacks, then the bytes, each a short
    /// transaction of its own; complete once every byte and part is there.
    async fn put_snapshot(&self, snapshot: NewSnapshot<'_>) -> Result<(), StoreError> {
        let (Some(seq_db), Ok(len)) =
            (seq_to_db(snapshot.seq), i64::try_from(snapshot.bytes.len()))
        else {
            return Err(StoreError::Unavailable("snapshot out of range".into()));
        };
        let named: Vec<PartId> = snapshot.parts.iter().map(|part| part.id).collect();
        let (id, lacking) = self
            .writer
            .exec(move |conn, path| {
                let id = conn
                    .prepare_cached("INSERT INTO snapshot (format, seq, bytes) VALUES (?1, ?2, ?3)")
                    .and_then(|mut insert| insert.execute((snapshot.format, seq_db, len)))
                    .map(|_| conn.last_insert_rowid())
                    .map_err(|e| writer_err(path, e))?;
                let mut refer = conn
                    .prepare_cached(
                        "INSERT INTO snapshot_part_ref (snapshot_id, n, part) VALUES (?1, ?2, ?3)",
                    )
                    .map_err(|e| writer_err(path, e))?;
                let mut held = conn
                    .prepare_cached("SELECT 1 FROM snapshot_part WHERE id = ?1")
                    .map_err(|e| writer_err(path, e))?;
                let mut lacking = Vec::new();
                for (n, part) in (0_i64..).zip(&named) {
                    refer
                        .execute((id, n, part.as_slice()))
                        .map_err(|e| writer_err(path, e))?;
                    if !held
                        .exists([part.as_slice()])
                        .map_err(|e| writer_err(path, e))?
                    {
                        lacking.push(*part);
                    }
                }
                Ok((id, lacking))
            })
            .await?;
        for part in snapshot
            .parts
            .iter()
            .filter(|part| lacking.contains(&part.id))
        {
            let (part_id, data) = (part.id, part.bytes.to_vec());
            self.writer
                .exec(move |conn, path| {
                    conn.prepare_cached(
                        "INSERT OR IGNORE INTO snapshot_part (id, data) VALUES (?1, ?2)",
                    )
                    .and_then(|mut insert| insert.execute((part_id.as_slice(), data)))
                    .map(drop)
                    .map_err(|e| writer_err(path, e))
                })
                .await?;
        }
        for (n, chunk) in (0_i64..).zip(snapshot.bytes.chunks(SNAPSHOT_CHUNK)) {
            let chunk = chunk.to_vec();
            self.writer
                .exec(move |conn, path| {
                    conn.prepare_cached(
                        "INSERT INTO snapshot_chunk (snapshot_id, n, data) VALUES (?1, ?2, ?3)",
                    )
                    .and_then(|mut insert| insert.execute((id, n, chunk)))
                    .map(drop)
                    .map_err(|e| writer_err(path, e))
                })
                .await?;
        }
        // Complete only if every byte and part is there (a concurrent pruner may have taken
        // chunks).
        let completed = self
            .writer
            .exec(move |conn, path| {
                conn.prepare_cached(
                    "UPDATE snapshot SET complete = 1 WHERE id = ?1 AND bytes = \
                     (SELECT COALESCE(SUM(length(data)), 0) FROM snapshot_chunk WHERE snapshot_id = ?1) \
                     AND NOT EXISTS (SELECT 1 FROM snapshot_part_ref r WHERE r.snapshot_id = ?1 \
                     AND NOT EXISTS (SELECT 1 FROM snapshot_part p WHERE p.id = r.part))",
                )
                .and_then(|mut update| update.execute([id]))
                .map_err(|e| writer_err(path, e))
            })
            .await?;
        if completed != 1 {
            return Err(StoreError::Unavailable(format!(
                "{}: snapshot {id} was deleted while it was written",
                self.describe()
            )));
        }
        self.prune_snapshots(id).await
    }

    async fn snapshots(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, format, seq, bytes FROM snapshot WHERE complete = 1 \
             ORDER BY seq DESC, id DESC",
        )
        .fetch_all(&self.readers)
        .await
        .map_err(|e| self.err("read", e))?;
        rows.iter()
            .map(|row| {
                let info = (
                    row.try_get::<i64, _>(0)?,
                    row.try_get::<i64, _>(1)?,
                    row.try_get::<i64, _>(2)?,
                    row.try_get::<i64, _>(3)?,
                );
                Ok(info)
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
            .map_err(|e| self.err("read", e))?
            .into_iter()
            .map(|(id, format, seq, bytes)| {
                Ok(SnapshotInfo {
                    id,
                    format: u32::try_from(format).unwrap_or(u32::MAX),
                    seq: u64::try_from(seq).map_err(|_| {
                        StoreError::Corrupt(format!("{}: snapshot {id} at {seq}", self.describe()))
                    })?,
                    bytes: u64::try_from(bytes).unwrap_or(0),
                })
            })
            .collect()
    }

    async fn read_snapshot(&self, id: i64) -> Result<Vec<u8>, StoreError> {
        use futures::TryStreamExt;
        // Chunk by chunk into one buffer of the right size: a big snapshot is held once, not
        // once in chunks and again joined (at start-up, fresh memory costs more than copying).
        let size: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(length(data)), 0) FROM snapshot_chunk WHERE snapshot_id = ?1",
        )
        .bind(id)
        .fetch_one(&self.readers)
        .await
        .map_err(|e| self.err("read", e))?;
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut chunks = sqlx::query_scalar::<_, Vec<u8>>(
            "SELECT data FROM snapshot_chunk WHERE snapshot_id = ?1 ORDER BY n",
        )
        .bind(id)
        .fetch(&self.readers);
        while let Some(chunk) = chunks.try_next().await.map_err(|e| self.err("read", e))? {
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    async fn read_snapshot_parts(&self, id: i64) -> Result<Vec<(PartId, Vec<u8>)>, StoreError> {
        let rows: Vec<(Vec<u8>, Vec<u8>)> = sqlx::query_as(
            "SELECT r.part, p.data FROM snapshot_part_ref r JOIN snapshot_part p ON p.id = r.part \
             WHERE r.snapshot_id = ?1 ORDER BY r.n",
        )
        .bind(id)
        .fetch_all(&self.readers)
        .await
        .map_err(|e| self.err("read", e))?;
        Ok(parts_read(rows))
    }

    /// The processes sharing a SQLite file are one person's dashboard and commands: a change
    /// made by one reaches the others within 25 ms, which saves a query on every read.
    fn read_staleness(&self) -> std::time::Duration {
        std::time::Duration::from_millis(25)
    }

    fn describe(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }
}

impl SqliteStore {
    /// Deletes all but the newest [`SNAPSHOTS_KEPT`] complete snapshots, incomplete ones
    /// begun before snapshot `completed` (it supersedes them) or abandoned by a crash, a few
    /// chunks per transaction so appends go on meanwhile; then gives the freed pages back to
    /// the file system.
    async fn prune_snapshots(&self, completed: i64) -> Result<(), StoreError> {
        let doomed: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM snapshot WHERE complete = 1 ORDER BY seq DESC, id DESC \
             LIMIT -1 OFFSET ?1",
        )
        .bind(SNAPSHOTS_KEPT as i64)
        .fetch_all(&self.readers)
        .await
        .map_err(|e| self.err("read", e))?;
        let abandoned: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM snapshot WHERE complete = 0 \
             AND (id < ?1 OR created_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?2))",
        )
        .bind(completed)
        .bind(ABANDONED_AFTER)
        .fetch_all(&self.readers)
        .await
        .map_err(|e| self.err("read", e))?;
        for id in doomed.into_iter().chain(abandoned) {
            // The row goes first, so a half-deleted snapshot is never listed.
            self.run_on_writer("DELETE FROM snapshot WHERE id = ?1", id)
                .await?;
            while self
                .run_on_writer(
                    "DELETE FROM snapshot_chunk WHERE snapshot_id = ?1 AND n IN \
                     (SELECT n FROM snapshot_chunk WHERE snapshot_id = ?1 LIMIT 8)",
                    id,
                )
                .await?
                > 0
            {}
            self.run_on_writer("DELETE FROM snapshot_part_ref WHERE snapshot_id = ?1", id)
                .await?;
        }
        // The parts no snapshot names any more, a few per transaction.
        while self.run_on_writer(UNNAMED_PARTS, 0).await? > 0 {}
        self.shrink().await
    }

    /// Runs `statement` (with `?1` bound to `id`, when it names it) as one short transaction on
    /// the writer connection, between two appends; answers how many rows it changed.
    async fn run_on_writer(&self, statement: &'static str, id: i64) -> Result<usize, StoreError> {
        self.writer
            .exec(move |conn, path| {
                let mut prepared = conn
                    .prepare_cached(statement)
                    .map_err(|e| writer_err(path, e))?;
                let changed = if prepared.parameter_count() == 0 {
                    prepared.execute([])
                } else {
                    prepared.execute([id])
                };
                changed.map_err(|e| writer_err(path, e))
            })
            .await
    }

    /// Truncates the file's free pages a few at a time (appends go on between the steps),
    /// then the WAL, which a snapshot's chunks passed through.
    async fn shrink(&self) -> Result<(), StoreError> {
        // A file without incremental auto-vacuum (converted at its next open) keeps its free
        // pages: the next snapshot reuses them.
        if self.incremental().await? {
            loop {
                let free = self
                    .writer
                    .exec(|conn, path| {
                        vacuum_step(conn)
                            .and_then(|()| {
                                conn.query_row("PRAGMA freelist_count", [], |row| {
                                    row.get::<_, i64>(0)
                                })
                            })
                            .map_err(|e| writer_err(path, e))
                    })
                    .await?;
                if free == 0 {
                    break;
                }
            }
        }
        self.writer
            .exec(|conn, path| {
                // PASSIVE: never waits for readers; what they still use is truncated next time.
                conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    .map_err(|e| writer_err(path, e))
            })
            .await
    }

    /// Whether the file gives free pages back on `incremental_vacuum`.
    async fn incremental(&self) -> Result<bool, StoreError> {
        let mode: i64 = sqlx::query_scalar("PRAGMA auto_vacuum")
            .fetch_one(&self.readers)
            .await
            .map_err(|e| self.err("read", e))?;
        Ok(mode == 2)
    }
}

/// Pages freed per step of [`SqliteStore::shrink`] (8 MB of 4 KiB pages): one short
/// transaction each.
const VACUUM_STEP: u32 = 2048;

/// Frees up to [`VACUUM_STEP`] pages. The pragma frees one page per row it is stepped through,
/// so every row is stepped through.
fn vacuum_step(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let mut vacuum = conn.prepare_cached(&format!("PRAGMA incremental_vacuum({VACUUM_STEP})"))?;
    let mut rows = vacuum.query([])?;
    while rows.next()?.is_some() {}
    Ok(())
}

/// Deletes up to 8 parts no snapshot names (a part is written after its references, so one
/// being written is always named).
const UNNAMED_PARTS: &str = "DELETE FROM snapshot_part WHERE id IN (SELECT id FROM snapshot_part p \
     WHERE NOT EXISTS (SELECT 1 FROM snapshot_part_ref r WHERE r.part = p.id) LIMIT 8)";

/// At open: deletes what a crash or an interrupted write left of snapshots (incomplete ones,
/// chunks, references and parts no snapshot has any more), gives the freed pages back to the
/// file system, and empties the
/// WAL. An incomplete snapshot another process is writing at this moment is deleted too: its
/// writer hears so when it finishes, and writes a new one later.
async fn tidy_snapshots(setup: &SqlitePool) -> Result<(), sqlx::Error> {
    let mut conn = setup.acquire().await?;
    let rows = sqlx::query("DELETE FROM snapshot WHERE complete = 0")
        .execute(&mut *conn)
        .await?
        .rows_affected();
    let chunks = sqlx::query(
        "DELETE FROM snapshot_chunk WHERE snapshot_id NOT IN (SELECT id FROM snapshot)",
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    sqlx::query("DELETE FROM snapshot_part_ref WHERE snapshot_id NOT IN (SELECT id FROM snapshot)")
        .execute(&mut *conn)
        .await?;
    let parts = sqlx::query(
        "DELETE FROM snapshot_part WHERE NOT EXISTS \
         (SELECT 1 FROM snapshot_part_ref r WHERE r.part = snapshot_part.id)",
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if rows + chunks + parts > 0 {
        tracing::info!(
            snapshots = rows,
            chunks,
            parts,
            "deleted incomplete snapshots"
        );
    }
    let mode: i64 = sqlx::query_scalar("PRAGMA auto_vacuum")
        .fetch_one(&mut *conn)
        .await?;
    if mode == 0 {
        // A file made before incremental auto-vacuum: converted once (a VACUUM rewrites it,
        // which takes a few seconds for a big log), so deleted snapshots shrink it from now on.
        let started = std::time::Instant::now();
        sqlx::query("VACUUM").execute(&mut *conn).await?;
        tracing::info!(
            ms = started.elapsed().as_millis() as u64,
            "converted the file to incremental auto-vacuum"
        );
    } else {
        sqlx::query("PRAGMA incremental_vacuum")
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

fn writer_err(path: &Path, e: rusqlite::Error) -> StoreError {
    super::sqlite_writer::map_err(path, "write a snapshot to", e)
}

/// A sequence number as SQLite stores it; `None` when it cannot be one.
fn seq_to_db(seq: u64) -> Option<i64> {
    i64::try_from(seq).ok()
}

/// Creates the parent directories and checks the file can be opened for writing, so that a
/// mistake reads "cannot open /x.db: permission denied" rather than SQLite's "unable to open
/// database file".
fn prepare_file(path: &Path) -> Result<(), StoreError> {
    if path.as_os_str().is_empty() {
        return Err(StoreError::Unavailable(
            "no SQLite file given: name a path such as sqlite://chronoscope.db".into(),
        ));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            StoreError::Unavailable(format!(
                "cannot create directory {}: {}",
                parent.display(),
                io_reason(&e)
            ))
        })?;
    }
    if path.is_dir() {
        return Err(StoreError::Unavailable(format!(
            "cannot open {}: it is a directory",
            path.display()
        )));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(drop)
        .map_err(|e| {
            StoreError::Unavailable(format!("cannot open {}: {}", path.display(), io_reason(&e)))
        })
}

/// Why opening failed, and whether another process opening the same file at the same moment
/// is the likely cause: switching a new file to WAL takes a lock the busy timeout cannot wait
/// for, and two processes migrating a new file collide on the bookkeeping row. A retry then
/// finds the work done.
enum Opening {
    Raced(StoreError),
    Failed(StoreError),
}

impl Opening {
    fn from_sqlx(path: &Path, e: sqlx::Error) -> Self {
        let raced = match &e {
            sqlx::Error::Database(db) => {
                db.is_unique_violation()
                    || db
                        .code()
                        .and_then(|c| c.parse::<i32>().ok())
                        .is_some_and(|c| matches!(c & 0xff, 5 | 6))
            }
            _ => false,
        };
        let e = map_err(path, "open", e);
        if raced {
            Self::Raced(e)
        } else {
            Self::Failed(e)
        }
    }
}

fn map_migrate_err(path: &Path, e: sqlx::migrate::MigrateError) -> StoreError {
    use sqlx::migrate::MigrateError as M;
    match e {
        M::Execute(e) | M::ExecuteMigration(e, _) => map_err(path, "prepare", e),
        M::VersionMissing(v) | M::VersionNotPresent(v) => StoreError::Corrupt(format!(
            "{} was written by a newer chronoscope (schema version {v}); upgrade to open it",
            path.display()
        )),
        M::VersionMismatch(v) => StoreError::Corrupt(format!(
            "{}: schema version {v} differs from the one this chronoscope knows",
            path.display()
        )),
        other => StoreError::Corrupt(format!("{}: {other}", path.display())),
    }
}

/// A readable reason for an I/O failure ("permission denied" rather than "os error 13").
pub(super) fn io_reason(e: &io::Error) -> String {
    use io::ErrorKind as K;
    match e.kind() {
        K::PermissionDenied
        | K::NotFound
        | K::ReadOnlyFilesystem
        | K::StorageFull
        | K::NotADirectory
        | K::IsADirectory
        | K::ConnectionRefused
        | K::ConnectionReset
        | K::TimedOut
        | K::HostUnreachable
        | K::NetworkUnreachable
        | K::AddrNotAvailable => e.kind().to_string(),
        _ => e.to_string(),
    }
}

/// Maps a driver error to what the engine can act on, naming the file.
fn map_err(file: &Path, action: &str, e: sqlx::Error) -> StoreError {
    let path = file.display();
    match e {
        sqlx::Error::Database(db) => {
            let code = db.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
            map_code(file, action, code, db.message())
        }
        sqlx::Error::Io(e) => {
            StoreError::Unavailable(format!("cannot {action} {path}: {}", io_reason(&e)))
        }
        sqlx::Error::PoolTimedOut => StoreError::Unavailable(format!(
            "cannot {action} {path}: timed out waiting for a connection"
        )),
        sqlx::Error::PoolClosed => {
            StoreError::Unavailable(format!("cannot {action} {path}: the store was closed"))
        }
        e @ (sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::TypeNotFound { .. }) => {
            StoreError::Corrupt(format!("{path} holds data this version cannot read: {e}"))
        }
        sqlx::Error::Migrate(e) => map_migrate_err(file, *e),
        e => StoreError::Unavailable(format!("cannot {action} {path}: {e}")),
    }
}

/// Maps an SQLite result code (extended or primary) and its message, naming the file.
pub(super) fn map_code(file: &Path, action: &str, code: i32, message: &str) -> StoreError {
    let path = file.display();
    // The primary result code is the low byte of the extended one.
    match code & 0xff {
        11 | 26 => StoreError::Corrupt(format!(
            "{path} is damaged or not a chronoscope database: {message}"
        )),
        5 | 6 => StoreError::Unavailable(format!("{path} is locked by another writer: {message}")),
        8 => StoreError::Unavailable(format!("cannot write {path}: it is read-only")),
        13 => StoreError::Unavailable(format!("cannot write {path}: the disk is full")),
        14 => StoreError::Unavailable(format!("cannot open {path}: {message}")),
        _ => StoreError::Unavailable(format!("cannot {action} {path}: {message}")),
    }
}
