//! One store suite, written once against `Arc<dyn Store>` and run against every backend:
//! `memory`, `sqlite` (a temporary file) and `postgres` (a fresh database per test; skipped with a
//! notice when no server is reachable, see `support`).

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use chronoscope::store::{self, ChainMeta, Entry, Link, MemoryStore, Record, Store, StoreError};
use tempfile::TempDir;

/// One backend under test; dropping it removes its data.
struct Backend {
    kind: Kind,
}

enum Kind {
    Memory(Arc<dyn Store>),
    Sqlite { _dir: TempDir, url: String },
    Postgres(support::PgDatabase),
}

impl Backend {
    async fn memory() -> Self {
        Self {
            kind: Kind::Memory(Arc::new(MemoryStore::new())),
        }
    }

    async fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("data/log.db").display());
        Self {
            kind: Kind::Sqlite { _dir: dir, url },
        }
    }

    async fn postgres() -> Option<Self> {
        Some(Self {
            kind: Kind::Postgres(support::fresh_postgres().await?),
        })
    }

    /// A new handle on this backend's data, opened through `store::open` like the program does
    /// (the same handle for memory, which cannot be shared otherwise).
    async fn handle(&self) -> Arc<dyn Store> {
        match &self.kind {
            Kind::Memory(store) => Arc::clone(store),
            Kind::Sqlite { url, .. } => store::open(url).await.unwrap(),
            Kind::Postgres(db) => store::open(&db.url).await.unwrap(),
        }
    }
}

fn bodies(items: &[&str]) -> Vec<Entry> {
    entries(items.iter().map(|s| (*s).to_owned()).collect())
}

/// Records with a link each made up from its body (the store keeps links, it does not check
/// them: the engine does).
fn entries(bodies: Vec<String>) -> Vec<Entry> {
    bodies
        .into_iter()
        .map(|body| Entry {
            link: link_of(&body),
            body,
        })
        .collect()
}

fn link_of(body: &str) -> Link {
    let mut link = [0u8; 32];
    for (i, b) in body.bytes().enumerate() {
        link[i % 32] = link[i % 32].wrapping_mul(31).wrapping_add(b);
    }
    link
}

async fn all(store: &dyn Store) -> Vec<Record> {
    store.read_since(0, u32::MAX).await.unwrap()
}

fn pairs(records: &[Record]) -> Vec<(u64, &str)> {
    records.iter().map(|r| (r.seq, r.body.as_str())).collect()
}

// ---- behaviours every store has ----

async fn empty_log_has_last_seq_zero(backend: Backend) {
    let store = backend.handle().await;
    assert_eq!(store.last_seq().await.unwrap(), 0);
    assert!(all(&*store).await.is_empty());
}

async fn appends_get_consecutive_seqs(backend: Backend) {
    let store = backend.handle().await;
    store.append(1, &bodies(&["a"])).await.unwrap();
    store.append(2, &bodies(&["b", "c"])).await.unwrap();
    store.append(4, &bodies(&["d"])).await.unwrap();
    assert_eq!(store.last_seq().await.unwrap(), 4);
    let other = backend.handle().await;
    assert_eq!(
        pairs(&all(&*other).await),
        [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    );
}

async fn a_batch_is_all_or_nothing(backend: Backend) {
    let store = backend.handle().await;
    store.append(1, &bodies(&["a", "b", "c"])).await.unwrap();
    // Overlaps the tail: record 3 exists, 4 and 5 do not; none of the three may land.
    let overlapping = store.append(3, &bodies(&["x", "y", "z"])).await;
    assert!(
        matches!(overlapping, Err(StoreError::Conflict(3))),
        "{overlapping:?}"
    );
    assert_eq!(store.last_seq().await.unwrap(), 3);
    assert_eq!(pairs(&all(&*store).await), [(1, "a"), (2, "b"), (3, "c")]);

    store.append(4, &bodies(&["x", "y", "z"])).await.unwrap();
    // An empty batch at the right place writes nothing and is not an error.
    store.append(7, &[]).await.unwrap();
    assert_eq!(store.last_seq().await.unwrap(), 6);
    assert_eq!(
        pairs(&all(&*store).await),
        [(1, "a"), (2, "b"), (3, "c"), (4, "x"), (5, "y"), (6, "z")]
    );
}

async fn a_stale_first_seq_conflicts_and_writes_nothing(backend: Backend) {
    let store = backend.handle().await;
    store.append(1, &bodies(&["first"])).await.unwrap();
    for first_seq in [1, 0, 3, 1000] {
        let result = store.append(first_seq, &bodies(&["late"])).await;
        assert!(
            matches!(result, Err(StoreError::Conflict(n)) if n == first_seq),
            "append at {first_seq}: {result:?}"
        );
    }
    assert!(matches!(
        store.append(1, &[]).await,
        Err(StoreError::Conflict(1))
    ));
    assert_eq!(store.last_seq().await.unwrap(), 1);
    assert_eq!(pairs(&all(&*store).await), [(1, "first")]);
}

async fn read_since_pages_in_order(backend: Backend) {
    let store = backend.handle().await;
    for batch in 0..5u64 {
        let batch = entries((1..=5).map(|i| format!("r{}", batch * 5 + i)).collect());
        let first = store.last_seq().await.unwrap() + 1;
        store.append(first, &batch).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut after = 0;
    let mut pages = Vec::new();
    loop {
        let page = store.read_since(after, 10).await.unwrap();
        if page.is_empty() {
            break;
        }
        pages.push(page.len());
        after = page.last().unwrap().seq;
        seen.extend(page);
    }
    assert_eq!(pages, [10, 10, 5]);
    let expected: Vec<(u64, String)> = (1..=25).map(|i| (i, format!("r{i}"))).collect();
    let got: Vec<(u64, String)> = seen.into_iter().map(|r| (r.seq, r.body)).collect();
    assert_eq!(got, expected);

    let middle = store.read_since(7, 3).await.unwrap();
    assert_eq!(pairs(&middle), [(8, "r8"), (9, "r9"), (10, "r10")]);
    assert!(store.read_since(7, 0).await.unwrap().is_empty());
    assert!(store.read_since(25, 10).await.unwrap().is_empty());
    assert!(store.read_since(1_000, 10).await.unwrap().is_empty());
    assert!(store.read_since(u64::MAX, 10).await.unwrap().is_empty());
}

async fn racing_handles_never_leave_gaps_or_duplicates(backend: Backend) {
    const TASKS: usize = 8;
    const APPENDS_PER_TASK: usize = 12;
    let handles = [backend.handle().await, backend.handle().await];
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let store = Arc::clone(&handles[task % 2]);
        tasks.push(tokio::spawn(async move {
            for n in 0..APPENDS_PER_TASK {
                // Batches of 1 to 3 so that a lost race can be a partial overlap.
                let batch = entries(
                    (0..=(n % 3))
                        .map(|part| format!("task{task}-append{n}-part{part}"))
                        .collect(),
                );
                loop {
                    let next = store.last_seq().await.unwrap() + 1;
                    match store.append(next, &batch).await {
                        Ok(()) => break,
                        Err(StoreError::Conflict(_)) => {} // lost the race: catch up, retry
                        Err(e) => panic!("task {task}: {e}"),
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }

    let expected_bodies = TASKS * (0..APPENDS_PER_TASK).map(|n| n % 3 + 1).sum::<usize>();
    let records = all(&*handles[0]).await;
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=expected_bodies as u64).collect::<Vec<_>>());
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for record in &records {
        *counts.entry(record.body.as_str()).or_default() += 1;
    }
    assert_eq!(counts.len(), expected_bodies, "some body is missing");
    assert!(
        counts.values().all(|&c| c == 1),
        "some body was written twice"
    );
    // A batch is contiguous even when it raced: its parts sit next to each other in order.
    for pair in records.windows(2) {
        if let (Some((a, pa)), Some((b, pb))) = (
            pair[0].body.rsplit_once("-part"),
            pair[1].body.rsplit_once("-part"),
        ) && a == b
        {
            assert_eq!(pb.parse::<u32>().unwrap(), pa.parse::<u32>().unwrap() + 1);
        }
    }
    assert_eq!(handles[1].last_seq().await.unwrap(), expected_bodies as u64);
}

async fn large_bodies_round_trip(backend: Backend) {
    let store = backend.handle().await;
    let mebibyte = |fill: char| {
        let payload: String = std::iter::repeat_n(fill, 1 << 20).collect();
        format!(r#"{{"op":"big","payload":"{payload}"}}"#)
    };
    let single = entries(vec![mebibyte('a')]);
    store.append(1, &single).await.unwrap();
    let batch = entries(vec![mebibyte('b'), mebibyte('c'), mebibyte('d')]);
    store.append(2, &batch).await.unwrap();

    let records = all(&*backend.handle().await).await;
    assert_eq!(records.len(), 4);
    assert_eq!(records[0].body, single[0].body);
    for (record, entry) in records[1..].iter().zip(&batch) {
        assert!(record.body.len() > 1 << 20);
        assert_eq!(record.body, entry.body);
    }
}

async fn unicode_round_trips(backend: Backend) {
    let store = backend.handle().await;
    let texts = bodies(&[
        r#"{"description":"時間旅行の懐中時計"}"#,
        r#"{"description":"🕰️ 🦕 👩🏽‍🔬 family: 👨‍👩‍👧‍👦"}"#,
        r#"{"description":"Ångström, naïve café, Œuvre, ß"}"#,
        r#"{"description":"مرحبا بالعالم — עברית"}"#,
        "{\"description\":\"e\u{301} combining, \u{200b}zero-width, \u{feff}bom\"}",
        "{\"quotes\":\"\\\"'`\",\"backslash\":\"\\\\\",\"lines\":\"a\\nb\\tc\"}\n\t raw newline and tab",
        "",
    ]);
    store.append(1, &texts).await.unwrap();
    let records = all(&*backend.handle().await).await;
    let got: Vec<&str> = records.iter().map(|r| r.body.as_str()).collect();
    assert_eq!(
        got,
        texts.iter().map(|e| e.body.as_str()).collect::<Vec<_>>()
    );
}

/// While one handle holds the write lock, another handle's lock waits; when the holder
/// commits, the waiter gets the lock with the new last sequence number, and its append follows.
async fn the_write_lock_excludes_other_writers_until_released(backend: Backend) {
    let store = backend.handle().await;
    let other = backend.handle().await;
    store.append(1, &bodies(&["a"])).await.unwrap();

    let held = store.lock().await.unwrap();
    assert_eq!(held.last_seq(), 1);
    let waiter = tokio::spawn(async move {
        let lock = other.lock().await.unwrap();
        let seen = lock.last_seq();
        lock.commit(&bodies(&["from the waiter"])).await.unwrap();
        seen
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !waiter.is_finished(),
        "a second writer got in beside the lock"
    );
    // The holder can still read while it holds the lock (it catches up this way).
    assert_eq!(pairs(&store.read_since(0, 10).await.unwrap()), [(1, "a")]);
    held.commit(&bodies(&["b", "c"])).await.unwrap();

    let seen_by_waiter = tokio::time::timeout(std::time::Duration::from_secs(15), waiter)
        .await
        .expect("the waiter never got the lock")
        .unwrap();
    assert_eq!(seen_by_waiter, 3, "the waiter saw the holder's records");
    assert_eq!(
        pairs(&all(&*store).await),
        [(1, "a"), (2, "b"), (3, "c"), (4, "from the waiter")]
    );
}

/// Releasing (or dropping) the lock writes nothing and lets the next writer in.
async fn a_released_lock_writes_nothing(backend: Backend) {
    let store = backend.handle().await;
    store.append(1, &bodies(&["a"])).await.unwrap();
    store.lock().await.unwrap().release().await;
    drop(store.lock().await.unwrap());
    let lock = tokio::time::timeout(std::time::Duration::from_secs(15), store.lock())
        .await
        .expect("a dropped lock was never released")
        .unwrap();
    assert_eq!(lock.last_seq(), 1);
    lock.commit(&bodies(&["b"])).await.unwrap();
    assert_eq!(pairs(&all(&*store).await), [(1, "a"), (2, "b")]);
}

// ---- behaviours of durable stores ----

async fn data_survives_reopening(backend: Backend) {
    let store = backend.handle().await;
    store
        .append(1, &bodies(&["kept", "also kept"]))
        .await
        .unwrap();
    drop(store);

    let reopened = backend.handle().await;
    assert_eq!(reopened.last_seq().await.unwrap(), 2);
    assert_eq!(
        pairs(&all(&*reopened).await),
        [(1, "kept"), (2, "also kept")]
    );
    reopened
        .append(3, &bodies(&["after reopening"]))
        .await
        .unwrap();
    drop(reopened);

    let again = backend.handle().await;
    assert_eq!(again.last_seq().await.unwrap(), 3);
}

/// Instantiates every behaviour for every backend, as `memory::name`, `sqlite::name`,
/// `postgres::name`.
macro_rules! suite {
    (every store: [$($all:ident),* $(,)?], durable stores: [$($durable:ident),* $(,)?] $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $all() {
                    super::$all(super::Backend::memory().await).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $all() {
                    super::$all(super::Backend::sqlite().await).await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $durable() {
                    super::$durable(super::Backend::sqlite().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $all() {
                    if let Some(backend) = super::Backend::postgres().await {
                        super::$all(backend).await;
                    }
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $durable() {
                    if let Some(backend) = super::Backend::postgres().await {
                        super::$durable(backend).await;
                    }
                }
            )*
        }
    };
}

/// Links are kept as written, records before the chain get theirs in one step, and the chain's
/// record is made once and seen by every handle.
async fn links_and_the_chain_record_round_trip(backend: Backend) {
    let store = backend.handle().await;
    assert_eq!(store.chain().await.unwrap(), None);
    store.append(1, &bodies(&["a", "b"])).await.unwrap();
    let meta = ChainMeta {
        fingerprint: [7; 32],
        from: 3,
    };
    let (one, two) = ([1; 32], [2; 32]);
    // Not where the log ends: refused, nothing recorded.
    let stale = ChainMeta { from: 2, ..meta };
    assert!(matches!(
        store.start_chain(stale, &[one]).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(store.chain().await.unwrap(), None);
    store.start_chain(meta, &[one, two]).await.unwrap();
    assert!(matches!(
        store.start_chain(meta, &[one, two]).await,
        Err(StoreError::AlreadyChained)
    ));
    let other = backend.handle().await;
    assert_eq!(other.chain().await.unwrap(), Some(meta));
    store.append(3, &bodies(&["c"])).await.unwrap();
    let links: Vec<Option<Link>> = all(&*other).await.iter().map(|r| r.link).collect();
    assert_eq!(links, [Some(one), Some(two), Some(link_of("c"))]);
}

suite!(
    every store: [
        links_and_the_chain_record_round_trip,
        empty_log_has_last_seq_zero,
        appends_get_consecutive_seqs,
        a_batch_is_all_or_nothing,
        a_stale_first_seq_conflicts_and_writes_nothing,
        read_since_pages_in_order,
        racing_handles_never_leave_gaps_or_duplicates,
        large_bodies_round_trip,
        unicode_round_trips,
        the_write_lock_excludes_other_writers_until_released,
        a_released_lock_writes_nothing,
    ],
    durable stores: [data_survives_reopening],
);

// ---- opening: what a user sees when the location is wrong ----

fn unavailable(result: Result<Arc<dyn Store>, StoreError>) -> String {
    match result {
        Err(StoreError::Unavailable(message)) => message,
        Err(e) => panic!("expected Unavailable, got {e:?}"),
        Ok(store) => panic!("opened {}", store.describe()),
    }
}

#[tokio::test]
async fn sqlite_open_creates_the_file_and_its_directories_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/chronoscope.db");
    for url in [
        format!("sqlite://{}", path.display()),
        format!("sqlite:{}", path.display()),
        path.display().to_string(),
    ] {
        let store = store::open(&url).await.unwrap();
        assert_eq!(store.describe(), format!("sqlite://{}", path.display()));
        let next = store.last_seq().await.unwrap() + 1;
        store.append(next, &bodies(&["x"])).await.unwrap();
    }
    assert!(path.is_file());

    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&path);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM op_log")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(count, 3, "all three URL forms opened the same file");
}

#[tokio::test]
async fn sqlite_open_names_the_path_when_it_cannot_be_created() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "a file where a directory should be").unwrap();
    let message = unavailable(store::open(&format!("sqlite://{}/x.db", blocker.display())).await);
    assert!(
        message.contains(&blocker.display().to_string()),
        "{message}"
    );
    assert!(message.contains("cannot create directory"), "{message}");

    let message = unavailable(store::open(&dir.path().display().to_string()).await);
    assert!(message.contains("is a directory"), "{message}");
}

#[tokio::test]
async fn sqlite_refuses_a_file_that_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(200)).unwrap();
    match store::open(&path.display().to_string()).await {
        Err(StoreError::Corrupt(message)) => {
            assert!(message.contains(&path.display().to_string()), "{message}")
        }
        Err(e) => panic!("expected Corrupt, got {e:?}"),
        Ok(_) => panic!("opened a text file as a database"),
    }
    // Nothing was written over the user's file.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("these are my notes"));
}

#[tokio::test]
async fn unknown_schemes_are_refused_with_the_accepted_forms() {
    let message = unavailable(store::open("mysql://root:hunter2@db.example/x").await);
    support::assert_contains_all(&message, &["sqlite://PATH", "postgres://"]);
    assert!(!message.contains("hunter2"), "{message}");
}

#[tokio::test]
async fn an_unreachable_postgres_is_a_clear_error_without_the_password() {
    // Port 1 on loopback: nothing listens, so the connection is refused at once.
    let message = unavailable(store::open("postgres://chrono:hunter2@127.0.0.1:1/db").await);
    support::assert_contains_all(&message, &["cannot reach PostgreSQL", "127.0.0.1:1"]);
    assert!(!message.contains("hunter2"), "{message}");
}

#[tokio::test]
async fn postgres_describe_leaves_out_the_password() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    // Use the URL's own password, or add one: the test server trusts local connections, so an
    // added password is accepted and ignored.
    let (scheme, rest) = db.url.split_once("://").unwrap();
    let (user, host) = rest.split_once('@').unwrap();
    let (url, password) = match user.split_once(':') {
        Some((_, password)) => (db.url.clone(), password.to_owned()),
        None => (
            format!("{scheme}://{user}:hunter2@{host}"),
            "hunter2".to_owned(),
        ),
    };
    let store = store::open(&url).await.unwrap();
    let shown = store.describe();
    assert!(!shown.contains(&password), "{shown}");
    assert!(shown.contains(&db.name), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_processes_creating_one_sqlite_file_at_once_all_succeed() {
    // Separate handles have separate connections, which SQLite treats like separate processes.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("new.db").display());
    let opening = (0..8).map(|_| store::open(&url));
    let stores: Vec<Arc<dyn Store>> = futures::future::join_all(opening)
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    for (i, store) in stores.iter().enumerate() {
        store.append(i as u64 + 1, &bodies(&["x"])).await.unwrap();
    }
    assert_eq!(stores[0].last_seq().await.unwrap(), 8);
}

// ---- SQLite's queued appends (the only backend that queues them) ----

async fn sqlite_handles() -> (TempDir, Arc<dyn Store>, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("log.db").display());
    let store = store::open(&url).await.unwrap();
    let other = store::open(&url).await.unwrap();
    (dir, store, other)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_queued_appends_are_written_in_the_order_started() {
    let (_dir, store, _) = sqlite_handles().await;
    let queue = |first, texts: &[&str], chained| {
        store
            .append_queued(first, &bodies(texts), chained)
            .expect("SQLite queues appends")
    };
    let a = queue(1, &["a"], false);
    let b = queue(2, &["b", "c"], true);
    let d = queue(4, &["d"], true);
    // Awaited last to first: each was in the store's hands when it was started.
    d.await.unwrap();
    b.await.unwrap();
    a.await.unwrap();
    assert_eq!(
        pairs(&all(&*store).await),
        [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    );
}

/// Another process takes the next sequence numbers while two appends of this handle wait in
/// its queue. The first is refused, and so must the second be, although the log now ends
/// exactly where it expects: it was decided on top of the first, which is not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_queued_append_built_on_a_refused_one_is_refused() {
    let (_dir, store, other) = sqlite_handles().await;
    store.append(1, &bodies(&["base"])).await.unwrap();
    let theirs = other.lock().await.unwrap();
    let first = store
        .append_queued(2, &bodies(&["mine 2", "mine 3"]), false)
        .unwrap();
    let second = store
        .append_queued(4, &bodies(&["built on mine"]), true)
        .unwrap();
    // A later append that is not chained to them is tried on its own merits.
    let unchained = store
        .append_queued(4, &bodies(&["decided after catching up"]), false)
        .unwrap();
    theirs
        .commit(&bodies(&["theirs 2", "theirs 3"]))
        .await
        .unwrap();

    assert!(matches!(first.await, Err(StoreError::Conflict(2))));
    assert!(matches!(second.await, Err(StoreError::Conflict(4))));
    unchained.await.unwrap();
    assert_eq!(
        pairs(&all(&*store).await),
        [
            (1, "base"),
            (2, "theirs 2"),
            (3, "theirs 3"),
            (4, "decided after catching up")
        ]
    );
}

/// A caller that stops waiting for the write lock (a timeout, a client gone) never leaves it
/// taken, whether it gave up before or after the lock was granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_an_abandoned_lock_request_lets_the_lock_go() {
    let (_dir, store, other) = sqlite_handles().await;
    for wait in 0..60 {
        let _ =
            tokio::time::timeout(std::time::Duration::from_micros(wait * 25), store.lock()).await;
    }
    let appended = |store: Arc<dyn Store>, text: &'static str| async move {
        let next = store.last_seq().await.unwrap() + 1;
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            store.append(next, &bodies(&[text])),
        )
        .await
        .expect("the write lock was never let go")
    };
    appended(Arc::clone(&store), "same handle").await.unwrap();
    appended(other, "another process").await.unwrap();
    assert_eq!(
        pairs(&all(&*store).await),
        [(1, "same handle"), (2, "another process")]
    );
}
