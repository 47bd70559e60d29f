//! The SQLite store's writer: one thread owning the one connection that writes.
//!
//! Every append waits for the one before it (SQLite has one writer), so what a write costs is
//! mostly how long the writer connection is busy per append and how long it sits idle between
//! two. Driving it through an async pool cost a round trip to a worker thread per statement and
//! a wait for the caller to be scheduled before the connection was free again. Here a request is
//! one message: the thread locks, checks, inserts and commits without leaving its loop, and
//! takes the next request as soon as it has answered, whether or not the caller has woken yet.
//!
//! The write lock ([`super::Store::lock`]) is a `BEGIN IMMEDIATE` transaction held open by the
//! thread until the holder commits or releases; requests that arrive meanwhile wait their turn,
//! as they would for the lock in another process.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use tokio::sync::oneshot;

use super::{Appending, ChainMeta, Entry, Link, LogLock, Restoring, StoreError};

/// A request to the writer thread.
enum Job {
    /// Append after `first_seq - 1`, or answer [`StoreError::Conflict`]; when `chained`, only
    /// if the request just before this one was an append that succeeded.
    Append {
        first_seq: u64,
        entries: Vec<Entry>,
        chained: bool,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    /// Take the write lock and answer the last sequence number; the thread then serves only the
    /// `Commit` or `Release` naming `id`, keeping other requests for later.
    Lock {
        id: u64,
        reply: oneshot::Sender<Result<u64, StoreError>>,
    },
    Commit {
        id: u64,
        entries: Vec<Entry>,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    Release {
        id: u64,
    },
    /// Work on the writer connection between two appends (a chunk of a snapshot, say): it
    /// runs in turn like an append, so it never waits for the write lock or holds it for
    /// longer than the one short transaction it makes.
    Exec(Work),
    /// Stop once the requests sent before this one are served; a holder's lock, and requests
    /// still waiting behind it, are given up (their callers hear the store was closed).
    Close {
        reply: oneshot::Sender<()>,
    },
}

/// Work run on the writer connection (see [`Job::Exec`]).
type Work = Box<dyn FnOnce(&Connection, &Path) + Send>;

/// The handle to the writer thread; the thread ends when the last handle is dropped or on
/// [`Writer::close`].
#[derive(Debug, Clone)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Job>,
    next_lock: Arc<AtomicU64>,
    path: PathBuf,
}

impl Writer {
    /// Opens the writer connection to the (already created and migrated) file at `path` on a
    /// thread of its own.
    pub(super) async fn start(path: &Path, busy_timeout: Duration) -> Result<Self, StoreError> {
        let (jobs, incoming) = mpsc::channel();
        let (opened, is_open) = oneshot::channel();
        let owned = path.to_owned();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || match open(&owned, busy_timeout) {
                Ok(conn) => {
                    if opened.send(Ok(())).is_ok() {
                        serve(&conn, &owned, &incoming);
                    }
                }
                Err(e) => {
                    let _ = opened.send(Err(e));
                }
            })
            .map_err(|e| {
                StoreError::Unavailable(format!(
                    "cannot start the writer for {}: {e}",
                    path.display()
                ))
            })?;
        is_open.await.map_err(|_| stopped(path))??;
        Ok(Self {
            jobs,
            next_lock: Arc::new(AtomicU64::new(0)),
            path: path.to_owned(),
        })
    }

    pub(super) async fn append(&self, first_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        self.append_queued(first_seq, entries, false).await
    }

    /// Sends the append before returning; the future answers when it has been tried.
    pub(super) fn append_queued(
        &self,
        first_seq: u64,
        entries: &[Entry],
        chained: bool,
    ) -> Appending {
        let (reply, answer) = oneshot::channel();
        let sent = self.send(Job::Append {
            first_seq,
            entries: entries.to_vec(),
            chained,
            reply,
        });
        let path = self.path.clone();
        Box::pin(async move {
            sent?;
            answer.await.map_err(|_| stopped(&path))?
        })
    }

    pub(super) async fn lock(&self) -> Result<Box<dyn LogLock>, StoreError> {
        let id = self.next_lock.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.send(Job::Lock { id, reply })?;
        // Until the answer is read, the lock is this guard's: should this future be dropped
        // meanwhile, dropping the guard lets the lock go (the thread also lets go when it finds
        // nobody left to answer).
        let mut lock = WriterLock {
            writer: self.clone(),
            id,
            last_seq: 0,
            done: false,
        };
        match answer.await {
            Ok(Ok(last_seq)) => {
                lock.last_seq = last_seq;
                Ok(Box::new(lock))
            }
            Ok(Err(e)) => {
                lock.done = true;
                Err(e)
            }
            Err(_) => Err(stopped(&self.path)),
        }
    }

    /// Runs `work` on the writer connection in turn with the appends (see [`Job::Exec`]).
    pub(super) async fn exec<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &Path) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.send(Job::Exec(Box::new(move |conn, path| {
            let _ = reply.send(work(conn, path));
        })))?;
        answer.await.map_err(|_| stopped(&self.path))?
    }

    /// Serves the requests already sent (a lock still held is let go, and whatever waits behind
    /// it is refused), then closes the connection.
    pub(super) async fn close(&self) {
        let (reply, closed) = oneshot::channel();
        if self.send(Job::Close { reply }).is_ok() {
            let _ = closed.await;
        }
    }

    fn send(&self, job: Job) -> Result<(), StoreError> {
        self.jobs.send(job).map_err(|_| stopped(&self.path))
    }
}

fn stopped(path: &Path) -> StoreError {
    StoreError::Unavailable(format!(
        "cannot write {}: the store was closed",
        path.display()
    ))
}

/// The write lock held by the writer thread for one holder.
struct WriterLock {
    writer: Writer,
    id: u64,
    last_seq: u64,
    done: bool,
}

#[async_trait]
impl LogLock for WriterLock {
    fn last_seq(&self) -> u64 {
        self.last_seq
    }

    async fn commit(mut self: Box<Self>, entries: &[Entry]) -> Result<(), StoreError> {
        self.done = true;
        let (reply, answer) = oneshot::channel();
        self.writer.send(Job::Commit {
            id: self.id,
            entries: entries.to_vec(),
            reply,
        })?;
        answer.await.map_err(|_| stopped(&self.writer.path))?
    }

    async fn release(mut self: Box<Self>) {
        self.done = true;
        let _ = self.writer.send(Job::Release { id: self.id });
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.writer.send(Job::Release { id: self.id });
        }
    }
}

fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| map_err(path, "open", e))?;
    conn.busy_timeout(busy_timeout)
        // FULL: a commit is fsynced before it returns, so an acknowledged write survives an OS
        // crash or power loss too, not only a killed process (NORMAL in WAL mode can roll back
        // the last commits then). The fsync is most of a write's cost (README, "Figures"); the
        // engine's group commit shares one among every write waiting then.
        .and_then(|()| conn.pragma_update(None, "synchronous", "FULL"))
        // Checkpoint every ~40 MB of log rather than every 4 MB: a checkpoint fsyncs the
        // database file inside whichever commit triggers it, and doing that ten times less often
        // removes most of the write latency spikes.
        .and_then(|()| conn.pragma_update(None, "wal_autocheckpoint", 10_000))
        .map_err(|e| map_err(path, "open", e))?;
    Ok(conn)
}

/// The thread's loop: one request at a time, in the order they were sent.
fn serve(conn: &Connection, path: &Path, incoming: &mpsc::Receiver<Job>) {
    let log = Log { conn, path };
    // Requests that arrived while a holder had the lock, served once it is let go.
    let mut waiting: VecDeque<Job> = VecDeque::new();
    // Whether the last request was an append that succeeded, for a chained one.
    let mut appended = false;
    loop {
        let Some(job) = waiting.pop_front().or_else(|| incoming.recv().ok()) else {
            return;
        };
        let was_appended = std::mem::replace(&mut appended, false);
        match job {
            Job::Append {
                first_seq,
                entries,
                chained,
                reply,
            } => {
                let result = if chained && !was_appended {
                    Err(StoreError::Conflict(first_seq))
                } else {
                    log.append(first_seq, &entries)
                };
                appended = result.is_ok();
                let _ = reply.send(result);
            }
            Job::Lock { id, reply } => {
                let last_seq = match log.begin() {
                    Ok(last_seq) => last_seq,
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        continue;
                    }
                };
                if reply.send(Ok(last_seq)).is_err() {
                    // The caller stopped waiting for the lock.
                    log.rollback();
                    continue;
                }
                if !hold(&log, id, last_seq, incoming, &mut waiting) {
                    return;
                }
            }
            Job::Commit { reply, .. } => {
                let _ = reply.send(Err(StoreError::Unavailable(format!(
                    "cannot write {}: the write lock was already let go",
                    path.display()
                ))));
            }
            Job::Release { .. } => {}
            Job::Exec(work) => {
                work(conn, path);
                // It did not touch the log: an append chained to the one before still may go.
                appended = was_appended;
            }
            Job::Close { reply } => {
                let _ = reply.send(());
                return;
            }
        }
    }
}

/// Serves the holder of lock `id` until it commits or lets go; `false` when the thread is to
/// stop (every handle dropped, or closed).
fn hold(
    log: &Log<'_>,
    id: u64,
    last_seq: u64,
    incoming: &mpsc::Receiver<Job>,
    waiting: &mut VecDeque<Job>,
) -> bool {
    loop {
        let Ok(job) = incoming.recv() else {
            log.rollback();
            return false;
        };
        match job {
            Job::Commit {
                id: holder,
                entries,
                reply,
            } if holder == id => {
                let _ = reply.send(log.commit(last_seq, &entries));
                return true;
            }
            Job::Release { id: holder } if holder == id => {
                log.rollback();
                return true;
            }
            Job::Close { reply } => {
                log.rollback();
                let _ = reply.send(());
                return false;
            }
            other => waiting.push_back(other),
        }
    }
}

/// The writer connection and what it does in one request.
struct Log<'a> {
    conn: &'a Connection,
    path: &'a Path,
}

impl Log<'_> {
    /// Appends after `first_seq - 1` in one transaction, or answers a conflict.
    fn append(&self, first_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        let last_seq = self.begin()?;
        if last_seq.checked_add(1) != Some(first_seq) {
            self.rollback();
            return Err(StoreError::Conflict(first_seq));
        }
        self.commit(last_seq, entries)
    }

    /// Takes the write lock (`BEGIN IMMEDIATE`, waiting up to the busy timeout for another
    /// process) and reads the last sequence number under it.
    fn begin(&self) -> Result<u64, StoreError> {
        self.run("BEGIN IMMEDIATE")
            .map_err(|e| map_err(self.path, "write", e))?;
        let last: Result<i64, _> = self
            .conn
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM op_log")
            .and_then(|mut last| last.query_row([], |row| row.get(0)));
        match last.map(u64::try_from) {
            Ok(Ok(last)) => Ok(last),
            Ok(Err(_)) => {
                self.rollback();
                Err(StoreError::Corrupt(format!(
                    "sqlite://{}: negative sequence number",
                    self.path.display()
                )))
            }
            Err(e) => {
                self.rollback();
                Err(map_err(self.path, "read", e))
            }
        }
    }

    /// Inserts `entries` after `last_seq` and commits the open transaction (durable on return:
    /// `synchronous = FULL`), or rolls it back.
    fn commit(&self, last_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        let written = self.insert(last_seq, entries).and_then(|()| {
            self.run("COMMIT")
                .map_err(|e| map_err(self.path, "commit to", e))
        });
        if written.is_err() {
            self.rollback();
        }
        written
    }

    fn insert(&self, last_seq: u64, entries: &[Entry]) -> Result<(), StoreError> {
        let mut insert = self
            .conn
            .prepare_cached("INSERT INTO op_log (seq, body, link) VALUES (?1, ?2, ?3)")
            .map_err(|e| map_err(self.path, "write", e))?;
        for (offset, entry) in (1u64..).zip(entries) {
            let seq = last_seq
                .checked_add(offset)
                .and_then(|seq| i64::try_from(seq).ok())
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "{}: the log is full at record {last_seq}",
                        self.path.display()
                    ))
                })?;
            let row = (seq, &entry.body, entry.link.as_slice());
            insert.execute(row).map_err(|e| match &e {
                // SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE: the number is taken.
                rusqlite::Error::SqliteFailure(failure, _)
                    if failure.code == ErrorCode::ConstraintViolation
                        && matches!(failure.extended_code, 1555 | 2067) =>
                {
                    StoreError::Conflict(last_seq + 1)
                }
                _ => map_err(self.path, "write", e),
            })?;
        }
        Ok(())
    }

    /// Ends the open transaction without writing. SQLite may have ended it already (some
    /// failed statements roll back on their own); there is nothing else to undo.
    fn rollback(&self) {
        if !self.conn.is_autocommit() {
            let _ = self.run("ROLLBACK");
        }
    }

    /// Runs a statement without parameters, prepared once per connection: parsing even
    /// `COMMIT` anew is a measurable part of a small append.
    fn run(&self, sql: &str) -> rusqlite::Result<()> {
        self.conn.prepare_cached(sql)?.execute([]).map(drop)
    }
}

/// [`super::Store::start_chain`] on the writer connection, in one transaction.
pub(super) fn start_chain(
    conn: &Connection,
    path: &Path,
    meta: ChainMeta,
    links: &[Link],
) -> Result<(), StoreError> {
    let log = Log { conn, path };
    let last_seq = log.begin()?;
    let chained = || -> Result<(), StoreError> {
        let fail = |e| map_err(path, "chain", e);
        let exists: bool = conn
            .query_row("SELECT EXISTS (SELECT 1 FROM log_chain)", [], |row| {
                row.get(0)
            })
            .map_err(fail)?;
        if exists {
            return Err(StoreError::AlreadyChained);
        }
        if last_seq.checked_add(1) != Some(meta.from) || links.len() as u64 != last_seq {
            return Err(StoreError::Conflict(meta.from));
        }
        let mut update = conn
            .prepare_cached("UPDATE op_log SET link = ?1 WHERE seq = ?2")
            .map_err(fail)?;
        for (seq, link) in (1i64..).zip(links) {
            update.execute((link.as_slice(), seq)).map_err(fail)?;
        }
        let from = i64::try_from(meta.from).map_err(|_| StoreError::Conflict(meta.from))?;
        insert_chain_row(conn, &meta, from).map_err(fail)?;
        log.run("COMMIT").map_err(fail)
    };
    let done = chained();
    if done.is_err() {
        log.rollback();
    }
    done
}

/// [`super::Store::restore`] on the writer connection: one transaction, holding the write lock
/// (`BEGIN IMMEDIATE`) from the emptiness check to the commit, fed batch by batch as the caller
/// reads and verifies them. Dropped without [`Restoring::Done`], it rolls back.
pub(super) fn restore(
    conn: &Connection,
    path: &Path,
    shown: &str,
    meta: ChainMeta,
    mut batches: tokio::sync::mpsc::Receiver<Restoring>,
) -> Result<(), StoreError> {
    let log = Log { conn, path };
    let records = log.begin()?;
    let mut restored = || -> Result<(), StoreError> {
        if records > 0 {
            return Err(StoreError::NotEmpty {
                store: shown.to_owned(),
                records,
            });
        }
        let fail = |e| map_err(path, "restore", e);
        let mut last = 0u64;
        loop {
            match batches.blocking_recv() {
                Some(Restoring::Records(entries)) => {
                    log.insert(last, &entries)?;
                    last += entries.len() as u64;
                }
                Some(Restoring::Done) => break,
                None => return Err(super::restore_interrupted(shown)),
            }
        }
        let from = i64::try_from(meta.from).map_err(|_| StoreError::Conflict(meta.from))?;
        conn.execute("DELETE FROM log_chain", []).map_err(fail)?;
        insert_chain_row(conn, &meta, from).map_err(fail)?;
        for table in [
            "snapshot_chunk",
            "snapshot_part_ref",
            "snapshot_part",
            "snapshot",
        ] {
            conn.execute(&format!("DELETE FROM {table}"), [])
                .map_err(fail)?;
        }
        log.run("COMMIT").map_err(fail)?;
        // The whole log went through the write-ahead file: fold it into the database now,
        // rather than leave a second copy of it on disk until the next start.
        let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
        Ok(())
    };
    let done = restored();
    if done.is_err() {
        log.rollback();
    }
    done
}

/// The chain record: which key chains the log, and from which record on.
fn insert_chain_row(conn: &Connection, meta: &ChainMeta, from: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "INSERT INTO log_chain (id, fingerprint, chain_from) VALUES (1, ?1, ?2)",
        (meta.fingerprint.as_slice(), from),
    )
}

pub(super) fn map_err(path: &Path, action: &str, e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(failure, message) => {
            let message = message.unwrap_or_else(|| failure.to_string());
            super::sqlite::map_code(path, action, failure.extended_code, &message)
        }
        e => StoreError::Unavailable(format!("cannot {action} {}: {e}", path.display())),
    }
}
