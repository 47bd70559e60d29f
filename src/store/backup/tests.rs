use std::sync::atomic::AtomicBool;

use super::*;
use crate::store::MemoryStore;

fn key() -> LogKey {
    LogKey::from_bytes(b"a test log key, thirty-two bytes long")
}

fn body(i: u64) -> String {
    let change = match i % 3 {
        0 => format!(r#"{{"op":"create_timeline","timeline":{{"id":"t{i}"}}}}"#),
        1 => format!(
            r#"{{"op":"add_events","timeline":"t","events":[{{"id":"e{i}"}},{{"id":"f{i}"}}]}}"#
        ),
        _ => r#"{"op":"pause","traveller":"ada"}"#.to_owned(),
    };
    format!(
        r#"{{"by":"ada","at":"2026-11-{:02}T10:00:00Z","change":{change}}}"#,
        1 + i % 28
    )
}

/// A chained memory store holding `n` records.
async fn store_with(key: &LogKey, n: u64) -> MemoryStore {
    let store = MemoryStore::new();
    let meta = ChainMeta {
        fingerprint: key.fingerprint(),
        from: 1,
    };
    store.start_chain(meta, &[]).await.expect("chain");
    let mut previous = key.genesis();
    let entries: Vec<Entry> = (1..=n)
        .map(|seq| {
            let body = body(seq);
            previous = key.link(&previous, seq, &body);
            Entry {
                body,
                link: previous,
            }
        })
        .collect();
    store.append(1, &entries).await.expect("append");
    store
}

async fn all(store: &dyn Store) -> Vec<crate::store::Record> {
    store.read_since(0, u32::MAX).await.expect("read")
}

fn quiet() -> (ProgressBar, AtomicBool) {
    (ProgressBar::hidden(), AtomicBool::new(false))
}

async fn backed_up(n: u64) -> (tempfile::TempDir, PathBuf, MemoryStore) {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("log.backup");
    let store = store_with(&key(), n).await;
    let (bar, stop) = quiet();
    backup(&store, &key(), &file, "ada", false, &bar, &stop)
        .await
        .expect("backup");
    (dir, file, store)
}

/// Rewrites line `n` (from 1) of `file` with `edit`; `None` removes it.
fn edit_line(file: &Path, n: usize, edit: impl Fn(&str) -> Option<String>) {
    let text = std::fs::read_to_string(file).expect("read");
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            if i + 1 == n {
                edit(l)
            } else {
                Some(l.to_owned())
            }
        })
        .collect();
    std::fs::write(file, lines.join("\n") + "\n").expect("write");
}

async fn verified(file: &Path, key: &LogKey) -> Result<Summary, BackupError> {
    let (bar, stop) = quiet();
    verify(file, key, &bar, &stop).await
}

#[tokio::test]
async fn a_backup_restores_the_same_records_links_and_chain() {
    let (_dir, file, source) = backed_up(12_345).await;
    let summary = verified(&file, &key()).await.expect("verifies");
    assert_eq!(summary.records, 12_345);
    assert_eq!(summary.timelines_created, 12_345 / 3);
    assert_eq!(
        summary.events_added,
        2 * (1..=12_345).filter(|i| i % 3 == 1).count() as u64
    );
    assert_eq!(summary.made_by, "ada");
    assert_eq!(summary.first_at.as_deref(), Some("2026-11-02T10:00:00Z"));

    let target = MemoryStore::new();
    let (bar, stop) = quiet();
    let restored = restore(&target, &key(), &file, &bar, &stop)
        .await
        .expect("restore");
    assert_eq!(restored.head.seq, 12_345);
    assert_eq!(all(&target).await, all(&source).await);
    assert_eq!(
        target.chain().await.ok().flatten(),
        source.chain().await.ok().flatten()
    );
    assert_eq!(
        Some(restored.head.link),
        all(&source).await.last().and_then(|r| r.link)
    );
}

#[tokio::test]
async fn an_empty_log_backs_up_and_restores() {
    let (_dir, file, _) = backed_up(0).await;
    assert_eq!(verified(&file, &key()).await.expect("verifies").records, 0);
    let target = MemoryStore::new();
    let (bar, stop) = quiet();
    restore(&target, &key(), &file, &bar, &stop)
        .await
        .expect("restore");
    assert!(target.chain().await.ok().flatten().is_some());
}

#[tokio::test]
async fn a_flipped_byte_is_refused_at_its_line() {
    let (_dir, file, _) = backed_up(50).await;
    // Line 11 holds record 10: one letter of its body changed.
    edit_line(&file, 11, |l| Some(l.replacen("ada", "adb", 1)));
    let refused = verified(&file, &key())
        .await
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("line 11"), "{refused}");
    assert!(
        refused.contains("record 10 does not match its link"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_removed_record_is_refused_naming_the_missing_one() {
    let (_dir, file, _) = backed_up(50).await;
    edit_line(&file, 21, |_| None);
    let refused = verified(&file, &key())
        .await
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("line 21"), "{refused}");
    assert!(refused.contains("record 20 should come first"), "{refused}");
}

#[tokio::test]
async fn a_removed_last_record_or_end_line_is_refused() {
    let (_dir, file, _) = backed_up(5).await;
    // The last record gone: the count no longer matches the header.
    edit_line(&file, 6, |_| None);
    let refused = verified(&file, &key())
        .await
        .expect_err("refused")
        .to_string();
    assert!(
        refused.contains("holds 4 records, but its header says 5"),
        "{refused}"
    );

    let (_dir, file, _) = backed_up(5).await;
    edit_line(&file, 7, |_| None);
    let refused = verified(&file, &key())
        .await
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("cut short after record 5"), "{refused}");
}

#[tokio::test]
async fn an_edited_header_is_refused_by_the_seal() {
    let (_dir, file, _) = backed_up(5).await;
    edit_line(&file, 1, |l| {
        Some(l.replace(r#""made_by":"ada""#, r#""made_by":"eve""#))
    });
    let refused = verified(&file, &key())
        .await
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("seal does not open"), "{refused}");
}

#[tokio::test]
async fn a_backup_made_with_another_key_is_refused_naming_both_keys() {
    let (_dir, file, _) = backed_up(5).await;
    let other = LogKey::from_bytes(b"another key, also thirty-two bytes");
    let refused = verified(&file, &other).await.expect_err("refused");
    assert!(matches!(refused, BackupError::OtherKey { .. }), "{refused}");
    let target = MemoryStore::new();
    let (bar, stop) = quiet();
    assert!(restore(&target, &other, &file, &bar, &stop).await.is_err());
    assert_eq!(target.last_seq().await.ok(), Some(0));
}

#[tokio::test]
async fn a_store_holding_records_is_not_restored_into() {
    let (_dir, file, _) = backed_up(5).await;
    let target = store_with(&key(), 2).await;
    let before = all(&target).await;
    let (bar, stop) = quiet();
    let refused = restore(&target, &key(), &file, &bar, &stop)
        .await
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("holds 2 records"), "{refused}");
    assert!(refused.contains("only into an empty store"), "{refused}");
    assert_eq!(all(&target).await, before);
}

#[tokio::test]
async fn a_damaged_backup_writes_nothing_even_where_the_damage_is_late() {
    let (_dir, file, _) = backed_up(20_000).await;
    edit_line(&file, 19_990, |l| Some(l.replacen("ada", "adb", 1)));
    let target = MemoryStore::new();
    let (bar, stop) = quiet();
    assert!(restore(&target, &key(), &file, &bar, &stop).await.is_err());
    assert_eq!(target.last_seq().await.ok(), Some(0));
    assert_eq!(target.chain().await.ok().flatten(), None);
}

#[tokio::test]
async fn an_interrupted_restore_leaves_the_store_empty() {
    let (_dir, file, _) = backed_up(100).await;
    let target = MemoryStore::new();
    let bar = ProgressBar::hidden();
    let stop = AtomicBool::new(true);
    let refused = restore(&target, &key(), &file, &bar, &stop)
        .await
        .expect_err("interrupted");
    assert!(matches!(refused, BackupError::Interrupted(_)), "{refused}");
    assert_eq!(target.last_seq().await.ok(), Some(0));
}

#[tokio::test]
async fn an_existing_file_is_kept_unless_replace_is_given() {
    let (_dir, file, store) = backed_up(3).await;
    let (bar, stop) = quiet();
    let refused = backup(&store, &key(), &file, "ada", false, &bar, &stop)
        .await
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("--replace"), "{refused}");
    backup(&store, &key(), &file, "bob", true, &bar, &stop)
        .await
        .expect("replaced");
    assert_eq!(
        verified(&file, &key()).await.expect("verifies").made_by,
        "bob"
    );
}

#[tokio::test]
async fn an_interrupted_backup_leaves_no_file() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("log.backup");
    let store = store_with(&key(), 10).await;
    let bar = ProgressBar::hidden();
    let stop = AtomicBool::new(true);
    let refused = backup(&store, &key(), &file, "ada", false, &bar, &stop).await;
    assert!(matches!(refused, Err(BackupError::Interrupted(_))));
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn a_log_that_does_not_verify_is_not_backed_up() {
    let store = MemoryStore::new();
    let k = key();
    store
        .start_chain(
            ChainMeta {
                fingerprint: k.fingerprint(),
                from: 1,
            },
            &[],
        )
        .await
        .expect("chain");
    let good = k.link(&k.genesis(), 1, &body(1));
    let entries = [
        Entry {
            body: body(1),
            link: good,
        },
        Entry {
            body: body(2),
            link: good,
        },
    ];
    store.append(1, &entries).await.expect("append");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("b");
    let (bar, stop) = quiet();
    let refused = backup(&store, &k, &file, "ada", false, &bar, &stop)
        .await
        .expect_err("refused")
        .to_string();
    assert!(
        refused.contains("record 2 does not match its link"),
        "{refused}"
    );
    assert!(!file.exists());
}
