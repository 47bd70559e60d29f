//! The shared store: the log in PostgreSQL, so several processes (server replicas) share one
//! state.
//!
//! Appenders serialize on a one-row head table (`SELECT ... FOR UPDATE`, which is
//! [`Store::lock`]): the loser of a race waits for the winner's commit, then sees the new last
//! sequence number. Because commits happen in sequence order, a reader that saw record
//! N can never later find an older record appear below it, so catching up is gap-free. The
//! primary key on `seq` backs this up: a duplicate is impossible even if the head were bypassed.
//!
//! So that replicas seldom race at all, one at a time holds the writer's lease
//! (`postgres_lease.rs`, an advisory lock) and only the holder writes; the race above is what
//! keeps the log whole whatever the lease does.

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use sqlx::{Postgres, Row, Transaction};
use tokio::sync::watch;

use super::postgres_lease::{LEASE_CHANNEL, PgLease};
use super::{
    ChainMeta, Entry, Link, LogLock, NewSnapshot, PartId, Record, Restoring, SNAPSHOTS_KEPT,
    SnapshotInfo, Store, StoreError, WriterLease, parts_read,
};

/// How long connecting (or waiting for a pooled connection) may take before the store is
/// reported unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest one statement may run on the server: a query stuck behind a lock or a plan gone
/// wrong ends with an error instead of holding its connection (and the reads waiting on it).
const STATEMENT_TIMEOUT: &str = "30s";
/// The server's TCP keepalives on our connections (idle seconds, interval, probes): a replica
/// that vanished mid-transaction (the head row locked) is noticed in about 25 s, not hours.
/// sqlx offers no client-side keepalive; the read barrier's deadline covers that side.
const SERVER_KEEPALIVES: [(&str, &str); 3] = [
    ("tcp_keepalives_idle", "10"),
    ("tcp_keepalives_interval", "5"),
    ("tcp_keepalives_count", "3"),
];
/// Connections per process: appends are serialized anyway; reads of several requests overlap.
const POOL_SIZE: u32 = 8;
/// A pooled connection idle for longer than this is pinged before use. Busier ones are not:
/// sqlx's default pings every connection it hands out, which doubles the round trips of every
/// query (a dead connection then fails its query, reported as unavailable, and is replaced).
const PING_IDLE_AFTER: Duration = Duration::from_secs(10);

/// The migrations, embedded (see the SQLite store for why not `sqlx::migrate!`).
fn migrator() -> Migrator {
    super::embedded_migrations(&[
        (
            1,
            "op log",
            include_str!("../../migrations/postgres/0001_op_log.sql"),
        ),
        (
            2,
            "notify head",
            include_str!("../../migrations/postgres/0002_notify_head.sql"),
        ),
        (
            3,
            "snapshots",
            include_str!("../../migrations/postgres/0003_snapshots.sql"),
        ),
        (
            4,
            "chain",
            include_str!("../../migrations/postgres/0004_chain.sql"),
        ),
        (
            5,
            "snapshot parts",
            include_str!("../../migrations/postgres/0005_snapshot_parts.sql"),
        ),
    ])
}

/// Snapshot bytes are stored in chunks of this size (rows, not one huge value).
const SNAPSHOT_CHUNK: usize = 4 * 1024 * 1024;
/// The transaction-level advisory lock under which snapshots are written and the parts no
/// snapshot names deleted, so one replica never deletes a part another's new snapshot names:
/// "snapshot" in ASCII.
const SNAPSHOT_LOCK: i64 = 0x736e_6170_7368_6f74;

/// The channel the head row's trigger notifies on (migration 2).
const HEAD_CHANNEL: &str = "chronoscope_log";
/// Pause before listening again after the listening connection failed.
const RELISTEN_AFTER: Duration = Duration::from_secs(1);

/// The log in a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    shown: String,
    /// Heads pushed by the listener task, which runs while any receiver is left.
    heads: watch::Receiver<u64>,
    /// The highest record this handle has tried to append: a notice up to it is (most likely)
    /// about this process's own write, which it publishes itself, so it is not pushed.
    appending: Arc<AtomicU64>,
    /// The writer's lease (see [`Store::writer_lease`]).
    lease: Arc<PgLease>,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/db`) and brings the schema up to
    /// date. Fails within a few seconds when the server cannot be reached.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            // The parser's message never repeats the URL, so no password leaks through it.
            StoreError::Unavailable(format!("invalid PostgreSQL URL: {e}"))
        })?;
        Self::connect_with(options).await
    }

    /// Connects with ready-made options.
    pub async fn connect_with(options: PgConnectOptions) -> Result<Self, StoreError> {
        let shown = describe_options(&options);
        let options = options
            .options([("statement_timeout", STATEMENT_TIMEOUT)])
            .options(SERVER_KEEPALIVES);
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(CONNECT_TIMEOUT)
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for > PING_IDLE_AFTER {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(options.clone());
        let pool = tokio::time::timeout(CONNECT_TIMEOUT * 2, pool)
            .await
            .map_err(|_| {
                StoreError::Unavailable(format!("timed out connecting to PostgreSQL at {shown}"))
            })?
            .map_err(|e| map_err(&shown, "connect to", e))?;
        // Several replicas starting together is fine: sqlx holds an advisory lock while migrating.
        migrator().run(&pool).await.map_err(|e| {
            use sqlx::migrate::MigrateError as M;
            match e {
                M::Execute(e) | M::ExecuteMigration(e, _) => map_err(&shown, "prepare", e),
                M::VersionMissing(v) | M::VersionNotPresent(v) => StoreError::Corrupt(format!(
                    "{shown} was written by a newer chronoscope (schema version {v}); upgrade to use it"
                )),
                other => StoreError::Corrupt(format!("{shown}: {other}")),
            }
        })?;
        // A snapshot is written in one transaction, so an incomplete row is never one being
        // written: deleting them at start is always safe.
        sqlx::query("DELETE FROM snapshot WHERE NOT complete")
            .execute(&pool)
            .await
            .map_err(|e| map_err(&shown, "prepare", e))?;
        let (pushed, heads) = watch::channel(0);
        let (wanted, lease_wanted) = watch::channel(0);
        let appending = Arc::new(AtomicU64::new(0));
        let lease = Arc::new(PgLease::new(
            &options,
            pool.clone(),
            format!("{:08x}", rand::random::<u32>()),
            lease_wanted,
            shown.clone(),
        ));
        tokio::spawn(listen(
            pool.clone(),
            shown.clone(),
            Heard {
                heads: pushed,
                own: Arc::clone(&appending),
                wanted,
                lease: Arc::clone(&lease),
            },
        ));
        Ok(Self {
            pool,
            shown,
            heads,
            appending,
            lease,
        })
    }

    /// Closes the pool, waiting for connections in use to be returned.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The write lock: the head row, locked in a transaction of its own.
    async fn locked(&self) -> Result<PostgresLock, StoreError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| self.err("write to", e))?;
        let last: Option<i64> =
            sqlx::query_scalar("SELECT last_seq FROM op_log_head WHERE id FOR UPDATE")
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| self.err("write to", e))?;
        let Some(last) = last else {
            return Err(StoreError::Corrupt(format!(
                "{}: the op_log_head row is missing",
                self.shown
            )));
        };
        let last_seq = u64::try_from(last).map_err(|_| {
            StoreError::Corrupt(format!("{}: negative sequence number {last}", self.shown))
        })?;
        Ok(PostgresLock {
            tx,
            last_seq,
            shown: self.shown.clone(),
            appending: Arc::clone(&self.appending),
        })
    }

    fn err(&self, action: &str, e: sqlx::Error) -> StoreError {
        map_err(&self.shown, action, e)
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn lock(&self) -> Result<Box<dyn LogLock>, StoreError> {
        Ok(Box::new(self.locked().await?))
    }

    /// One statement, run in autocommit: it moves the head row on only if it still names the
    /// record before `first_seq` (a concurrent appender's row lock makes it wait, then see the
    /// new value and match nothing), and inserts the records only if it did. One round trip
    /// where locking the head, inserting, moving the head and committing in turn are five.
    async fn append(&self, first_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        let conflict = || StoreError::Conflict(first_seq);
        let Some(first) = i64::try_from(first_seq).ok().filter(|&first| first >= 1) else {
            return Err(conflict());
        };
        if entries.is_empty() {
            let last = self.last_seq().await?;
            return if last.checked_add(1) == Some(first_seq) {
                Ok(())
            } else {
                Err(conflict())
            };
        }
        let last = first_seq.saturating_add(entries.len() as u64 - 1);
        self.appending.fetch_max(last, Ordering::AcqRel);
        let (bodies, links) = columns(entries);
        let inserted = sqlx::query(
            "WITH head AS ( \
                 UPDATE op_log_head SET last_seq = $1 + cardinality($2::text[]) - 1 \
                 WHERE id AND last_seq = $1 - 1 RETURNING last_seq) \
             INSERT INTO op_log (seq, body, link) \
             SELECT $1 + t.ord - 1, t.body, t.link \
             FROM UNNEST($2::text[], $3::bytea[]) WITH ORDINALITY AS t(body, link, ord) \
             WHERE EXISTS (SELECT 1 FROM head)",
        )
        .bind(first)
        .bind(bodies)
        .bind(links)
        .execute(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_unique_violation() || lost_race(db.as_ref()) => {
                conflict()
            }
            _ => self.err("write to", e),
        })?
        .rows_affected();
        match usize::try_from(inserted) {
            Ok(n) if n == entries.len() => Ok(()),
            Ok(0) => Err(conflict()),
            _ => Err(StoreError::Corrupt(format!(
                "{}: appending {} records wrote {inserted}",
                self.shown,
                entries.len()
            ))),
        }
    }

    async fn read_since(&self, after: u64, limit: u32) -> Result<Vec<Record>, StoreError> {
        let Some(after_db) = super::read_after(after, limit) else {
            return Ok(Vec::new());
        };
        let rows: Vec<super::Row> = sqlx::query_as(
            "SELECT seq, body, link FROM op_log WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(after_db)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err("read from", e))?;
        super::contiguous(after, rows, &self.shown)
    }

    async fn last_seq(&self) -> Result<u64, StoreError> {
        let last: Option<i64> = sqlx::query_scalar("SELECT last_seq FROM op_log_head WHERE id")
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err("read from", e))?;
        let last = last.ok_or_else(|| {
            StoreError::Corrupt(format!("{}: the op_log_head row is missing", self.shown))
        })?;
        u64::try_from(last).map_err(|_| {
            StoreError::Corrupt(format!("{}: negative sequence number {last}", self.shown))
        })
    }

    fn describe(&self) -> String {
        self.shown.clone()
    }

    async fn chain(&self) -> Result<Option<ChainMeta>, StoreError> {
        let row: Option<(Vec<u8>, i64)> =
            sqlx::query_as("SELECT fingerprint, chain_from FROM log_chain WHERE id")
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| self.err("read from", e))?;
        row.map(|(fingerprint, from)| super::chain_meta(&fingerprint, from, &self.shown))
            .transpose()
    }

    async fn start_chain(&self, meta: ChainMeta, links: &[Link]) -> Result<(), StoreError> {
        let mut lock = self.locked().await?;
        let fail = |e| map_err(&self.shown, "chain", e);
        let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM log_chain)")
            .fetch_one(&mut *lock.tx)
            .await
            .map_err(fail)?;
        if exists {
            return Err(StoreError::AlreadyChained);
        }
        if lock.last_seq.checked_add(1) != Some(meta.from) || links.len() as u64 != lock.last_seq {
            return Err(StoreError::Conflict(meta.from));
        }
        let links: Vec<&[u8]> = links.iter().map(|l| l.as_slice()).collect();
        sqlx::query(
            "UPDATE op_log SET link = t.link \
             FROM UNNEST($1::bytea[]) WITH ORDINALITY AS t(link, ord) WHERE op_log.seq = t.ord",
        )
        .bind(&links)
        .execute(&mut *lock.tx)
        .await
        .map_err(fail)?;
        let from = i64::try_from(meta.from).map_err(|_| StoreError::Conflict(meta.from))?;
        insert_chain_row(&mut lock.tx, meta.fingerprint, from)
            .await
            .map_err(fail)?;
        lock.tx.commit().await.map_err(fail)
    }

    async fn restore(
        &self,
        meta: ChainMeta,
        mut batches: tokio::sync::mpsc::Receiver<Restoring>,
    ) -> Result<(), StoreError> {
        // The head row, locked: no append can slip in between the check and the commit.
        let mut lock = self.locked().await?;
        let fail = |e| map_err(&self.shown, "restore", e);
        let held: i64 = sqlx::query_scalar("SELECT count(*) FROM op_log")
            .fetch_one(&mut *lock.tx)
            .await
            .map_err(fail)?;
        let records = lock.last_seq.max(u64::try_from(held).unwrap_or(0));
        if records > 0 {
            return Err(StoreError::NotEmpty {
                store: self.shown.clone(),
                records,
            });
        }
        let mut last = 0u64;
        loop {
            match batches.recv().await {
                Some(Restoring::Records(entries)) if entries.is_empty() => {}
                Some(Restoring::Records(entries)) => {
                    let first = i64::try_from(last + 1).map_err(|_| StoreError::Conflict(last))?;
                    insert_moving_head(&mut lock.tx, first, &entries)
                        .await
                        .map_err(fail)?;
                    last += entries.len() as u64;
                }
                Some(Restoring::Done) => break,
                // Dropping the transaction rolls it back.
                None => return Err(super::restore_interrupted(&self.shown)),
            }
        }
        let from = i64::try_from(meta.from).map_err(|_| StoreError::Conflict(meta.from))?;
        for statement in [
            "DELETE FROM log_chain",
            "DELETE FROM snapshot_chunk",
            "DELETE FROM snapshot_part_ref",
            "DELETE FROM snapshot_part",
            "DELETE FROM snapshot",
        ] {
            sqlx::query(statement)
                .execute(&mut *lock.tx)
                .await
                .map_err(fail)?;
        }
        insert_chain_row(&mut lock.tx, meta.fingerprint, from)
            .await
            .map_err(fail)?;
        lock.tx.commit().await.map_err(fail)
    }

    /// One transaction, apart from the head row, so appends never wait for it and a crash
    /// leaves the snapshot whole or absent; with the parts the database lacks, and the deletion
    /// of those no kept snapshot names, under [`SNAPSHOT_LOCK`].
    async fn put_snapshot(&self, snapshot: NewSnapshot<'_>) -> Result<(), StoreError> {
        let (Ok(seq_db), Ok(len)) = (
            i64::try_from(snapshot.seq),
            i64::try_from(snapshot.bytes.len()),
        ) else {
            return Err(StoreError::Unavailable("snapshot out of range".into()));
        };
        let err = |e| self.err("write a snapshot to", e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SNAPSHOT_LOCK)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO snapshot (format, seq, bytes, complete) VALUES ($1, $2, $3, TRUE) \
             RETURNING id",
        )
        .bind(i64::from(snapshot.format))
        .bind(seq_db)
        .bind(len)
        .fetch_one(&mut *tx)
        .await
        .map_err(err)?;
        for (n, part) in (0_i32..).zip(snapshot.parts) {
            sqlx::query("INSERT INTO snapshot_part_ref (snapshot_id, n, part) VALUES ($1, $2, $3)")
                .bind(id)
                .bind(n)
                .bind(part.id.as_slice())
                .execute(&mut *tx)
                .await
                .map_err(err)?;
            let held: Option<i32> = sqlx::query_scalar("SELECT 1 FROM snapshot_part WHERE id = $1")
                .bind(part.id.as_slice())
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
            if held.is_none() {
                sqlx::query("INSERT INTO snapshot_part (id, data) VALUES ($1, $2)")
                    .bind(part.id.as_slice())
                    .bind(part.bytes)
                    .execute(&mut *tx)
                    .await
                    .map_err(err)?;
            }
        }
        for (n, chunk) in (0_i32..).zip(snapshot.bytes.chunks(SNAPSHOT_CHUNK)) {
            sqlx::query("INSERT INTO snapshot_chunk (snapshot_id, n, data) VALUES ($1, $2, $3)")
                .bind(id)
                .bind(n)
                .bind(chunk)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        // Chunks and references go with their row (ON DELETE CASCADE). Rows never complete
        // (an older version's, or written by hand) go too: this one supersedes them. Then the
        // parts no snapshot left names.
        sqlx::query(
            "DELETE FROM snapshot WHERE NOT complete OR id IN (SELECT id FROM snapshot \
             WHERE complete ORDER BY seq DESC, id DESC OFFSET $1)",
        )
        .bind(SNAPSHOTS_KEPT as i64)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        sqlx::query(
            "DELETE FROM snapshot_part p WHERE NOT EXISTS \
             (SELECT 1 FROM snapshot_part_ref r WHERE r.part = p.id)",
        )
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        tx.commit().await.map_err(err)
    }

    async fn snapshots(&self) -> Result<Vec<SnapshotInfo>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, format, seq, bytes FROM snapshot WHERE complete \
             ORDER BY seq DESC, id DESC",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err("read", e))?;
        rows.iter()
            .map(|row| {
                let id: i64 = row.try_get(0)?;
                let format: i32 = row.try_get(1)?;
                let seq: i64 = row.try_get(2)?;
                let bytes: i64 = row.try_get(3)?;
                Ok(SnapshotInfo {
                    id,
                    format: u32::try_from(format).unwrap_or(u32::MAX),
                    seq: u64::try_from(seq).unwrap_or(0),
                    bytes: u64::try_from(bytes).unwrap_or(0),
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
            .map_err(|e| self.err("read", e))
    }

    async fn read_snapshot(&self, id: i64) -> Result<Vec<u8>, StoreError> {
        let chunks: Vec<Vec<u8>> =
            sqlx::query_scalar("SELECT data FROM snapshot_chunk WHERE snapshot_id = $1 ORDER BY n")
                .bind(id)
                .fetch_all(&self.pool)
                .await
                .map_err(|e| self.err("read", e))?;
        Ok(chunks.concat())
    }

    async fn read_snapshot_parts(&self, id: i64) -> Result<Vec<(PartId, Vec<u8>)>, StoreError> {
        let rows: Vec<(Vec<u8>, Vec<u8>)> = sqlx::query_as(
            "SELECT r.part, p.data FROM snapshot_part_ref r JOIN snapshot_part p ON p.id = r.part \
             WHERE r.snapshot_id = $1 ORDER BY r.n",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.err("read", e))?;
        Ok(parts_read(rows))
    }

    fn pushed_heads(&self) -> Option<watch::Receiver<u64>> {
        Some(self.heads.clone())
    }

    fn writer_lease(&self) -> Option<Arc<dyn WriterLease>> {
        Some(Arc::clone(&self.lease) as Arc<dyn WriterLease>)
    }
}

/// Where the listener passes on what it hears.
struct Heard {
    /// Heads reached by other processes' appends.
    heads: watch::Sender<u64>,
    /// The highest record this process has tried to append (see [`PostgresStore`]).
    own: Arc<AtomicU64>,
    /// Moved on when another process asks for the writer's lease.
    wanted: watch::Sender<u64>,
    /// Tells requests for the lease another replica made from anyone else's.
    lease: Arc<PgLease>,
}

/// Listens for the heads other processes' appends reach and for requests for the writer's
/// lease, and passes them on, until nobody is left to tell of heads. On a lost connection it
/// listens again (what was sent meanwhile is lost, which both tolerate: readers confirm the
/// head themselves, and a process waiting for the lease asks again).
async fn listen(pool: PgPool, shown: String, heard: Heard) {
    let listen = async {
        loop {
            let mut listener = match PgListener::connect_with(&pool).await {
                Ok(listener) => listener,
                Err(e) if pool.is_closed() => return e,
                Err(e) => {
                    tracing::debug!(%e, store = %shown, "cannot listen for new records yet");
                    tokio::time::sleep(RELISTEN_AFTER).await;
                    continue;
                }
            };
            if let Err(e) = listener.listen_all([HEAD_CHANNEL, LEASE_CHANNEL]).await {
                tracing::debug!(%e, store = %shown, "cannot listen for new records yet");
                tokio::time::sleep(RELISTEN_AFTER).await;
                continue;
            }
            loop {
                match listener.recv().await {
                    Ok(notice) if notice.channel() == LEASE_CHANNEL => {
                        if heard.lease.asked_by_another(notice.payload()) {
                            heard
                                .wanted
                                .send_modify(|asked| *asked = asked.wrapping_add(1));
                        }
                    }
                    Ok(notice) => {
                        // A notice of our own append would only make the engine fetch what it
                        // is about to publish. One that outraced ours is skipped too: losing
                        // the race makes the engine catch up anyway.
                        if let Ok(head) = notice.payload().parse::<u64>()
                            && head > heard.own.load(Ordering::Acquire)
                        {
                            heard.heads.send_if_modified(|seen| {
                                let newer = head > *seen;
                                *seen = (*seen).max(head);
                                newer
                            });
                        }
                    }
                    Err(e) if pool.is_closed() => return e,
                    Err(e) => {
                        tracing::debug!(%e, store = %shown, "listening for new records");
                        tokio::time::sleep(RELISTEN_AFTER).await;
                        break;
                    }
                }
            }
        }
    };
    tokio::select! {
        () = heard.heads.closed() => {}
        _ = listen => {}
    }
}

/// The write lock: a transaction holding the head row `FOR UPDATE`.
struct PostgresLock {
    tx: Transaction<'static, Postgres>,
    last_seq: u64,
    shown: String,
    /// The store's record of what it appends (see [`PostgresStore`]).
    appending: Arc<AtomicU64>,
}

#[async_trait]
impl LogLock for PostgresLock {
    fn last_seq(&self) -> u64 {
        self.last_seq
    }

    async fn commit(mut self: Box<Self>, entries: &[Entry]) -> Result<(), StoreError> {
        let first = self
            .last_seq
            .checked_add(1)
            .and_then(|s| i64::try_from(s).ok());
        let Some(first) = first else {
            return Err(StoreError::Corrupt(format!(
                "{}: the log is full at record {}",
                self.shown, self.last_seq
            )));
        };
        if !entries.is_empty() {
            self.appending
                .fetch_max(self.last_seq + entries.len() as u64, Ordering::AcqRel);
            insert_moving_head(&mut self.tx, first, entries)
                .await
                .map_err(|e| match &e {
                    sqlx::Error::Database(db)
                        if db.is_unique_violation() || lost_race(db.as_ref()) =>
                    {
                        StoreError::Conflict(self.last_seq + 1)
                    }
                    _ => map_err(&self.shown, "write to", e),
                })?;
        }
        self.tx
            .commit()
            .await
            .map_err(|e| map_err(&self.shown, "commit to", e))
    }

    async fn release(self: Box<Self>) {
        // Nothing was written; a failed rollback is finished when the connection is reused.
        let _ = self.tx.rollback().await;
    }
}

/// Inserts `entries` as records `first`, … and moves the head row to the last, in one
/// statement of the transaction `tx` (which holds the head row): a round trip fewer while the
/// lock is held (a data-modifying WITH runs whether or not the query reads it).
async fn insert_moving_head(
    tx: &mut Transaction<'static, Postgres>,
    first: i64,
    entries: &[Entry],
) -> Result<sqlx::postgres::PgQueryResult, sqlx::Error> {
    let (bodies, links) = columns(entries);
    sqlx::query(
        "WITH head AS ( \
             UPDATE op_log_head SET last_seq = $1 + cardinality($2::text[]) - 1 \
             WHERE id RETURNING last_seq) \
         INSERT INTO op_log (seq, body, link) \
         SELECT $1 + t.ord - 1, t.body, t.link \
         FROM UNNEST($2::text[], $3::bytea[]) WITH ORDINALITY AS t(body, link, ord)",
    )
    .bind(first)
    .bind(bodies)
    .bind(links)
    .execute(&mut **tx)
    .await
}

/// The chain record: which key chains the log, and from which record on.
async fn insert_chain_row(
    tx: &mut Transaction<'static, Postgres>,
    fingerprint: Link,
    from: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO log_chain (id, fingerprint, chain_from) VALUES (TRUE, $1, $2)")
        .bind(fingerprint.as_slice())
        .bind(from)
        .execute(&mut **tx)
        .await
        .map(drop)
}

/// The bodies and links of `entries`, as the two arrays an append binds.
fn columns(entries: &[Entry]) -> (Vec<&str>, Vec<&[u8]>) {
    entries
        .iter()
        .map(|e| (e.body.as_str(), e.link.as_slice()))
        .unzip()
}

/// `postgres://user@host:port/db`, never the password.
pub(super) fn describe_options(options: &PgConnectOptions) -> String {
    let host = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    format!(
        "postgres://{}@{}/{}",
        options.get_username(),
        host,
        options.get_database().unwrap_or(options.get_username())
    )
}

/// Maps a driver error to what the engine can act on, naming the server (without secrets).
pub(super) fn map_err(shown: &str, action: &str, e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            let message = db.message();
            match code.as_str() {
                // data_corrupted, index_corrupted
                "XX001" | "XX002" => StoreError::Corrupt(format!("{shown}: {message}")),
                // undefined_table, undefined_column: someone else's schema
                "42P01" | "42703" => StoreError::Corrupt(format!(
                    "{shown} does not hold a chronoscope log: {message}"
                )),
                _ => StoreError::Unavailable(format!(
                    "cannot {action} PostgreSQL at {shown}: {message}"
                )),
            }
        }
        sqlx::Error::Io(e) => StoreError::Unavailable(format!(
            "cannot reach PostgreSQL at {shown}: {}",
            super::sqlite::io_reason(&e)
        )),
        sqlx::Error::Tls(e) => {
            StoreError::Unavailable(format!("TLS with PostgreSQL at {shown} failed: {e}"))
        }
        sqlx::Error::PoolTimedOut => StoreError::Unavailable(format!(
            "cannot reach PostgreSQL at {shown}: no connection within {}s",
            CONNECT_TIMEOUT.as_secs()
        )),
        sqlx::Error::PoolClosed => {
            StoreError::Unavailable(format!("cannot {action} {shown}: the store was closed"))
        }
        e @ (sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::TypeNotFound { .. }) => {
            StoreError::Corrupt(format!("{shown} holds data this version cannot read: {e}"))
        }
        e => StoreError::Unavailable(format!("cannot {action} PostgreSQL at {shown}: {e}")),
    }
}

/// A serialization failure or deadlock (SQLSTATE 40001, 40P01): under a stricter default
/// isolation level than READ COMMITTED, how losing the race for the head row is reported.
/// Nothing was written, so it is a conflict to decide again, not a failure.
fn lost_race(db: &dyn sqlx::error::DatabaseError) -> bool {
    matches!(db.code().as_deref(), Some("40001" | "40P01"))
}
