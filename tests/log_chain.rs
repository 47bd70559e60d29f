//! The log's keyed hash chain, against real stores: a record changed behind chronoscope's back
//! (a SQLite file, a PostgreSQL row) stops the start at exactly that record, a store written
//! with another key is refused, a log shorter than its sealed snapshot is refused, and a store
//! written before chains existed is refused until the operator links it on purpose.

mod support;

use std::path::Path;
use std::sync::Arc;

use chronoscope::engine::audit::audit;
use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::error::ServiceError;
use chronoscope::service::prelude::*;
use chronoscope::service::{NewItem, PageRequest};
use chronoscope::store::{self, LogKey, Store};

fn config(key: &LogKey) -> EngineConfig {
    EngineConfig {
        log_key: key.clone(),
        ..EngineConfig::default()
    }
}

async fn open(store: Arc<dyn Store>, key: &LogKey) -> Result<Arc<Engine>, ServiceError> {
    Engine::open(store, Arc::new(SystemClock), config(key), Seed::None).await
}

fn sqlite_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("log.db").display())
}

/// Registers `descriptions` as ada's items (each its own acknowledged write); answers the seq
/// of each item's record.
async fn register(engine: &Arc<Engine>, descriptions: &[&str]) -> Vec<u64> {
    let ada = engine.session("ada".parse().unwrap());
    let mut seqs = Vec::new();
    for description in descriptions {
        ada.register_item(NewItem {
            description: (*description).to_owned(),
        })
        .await
        .unwrap();
        seqs.push(engine.snapshot().await.unwrap().seq);
    }
    seqs
}

async fn item_descriptions(engine: &Arc<Engine>) -> Vec<String> {
    let ada = engine.session("ada".parse().unwrap());
    let page = ada.list_items(PageRequest::default()).await.unwrap();
    page.items.into_iter().map(|i| i.description).collect()
}

fn refusal(opened: Result<Arc<Engine>, ServiceError>) -> String {
    match opened {
        Ok(_) => panic!("the engine opened"),
        Err(e) => e.to_string(),
    }
}

/// Changes record `seq`'s body in the SQLite file with `edit`, as someone with the file would.
fn edit_sqlite_record(dir: &Path, seq: u64, edit: impl Fn(&str) -> String) {
    let conn = rusqlite::Connection::open(dir.join("log.db")).unwrap();
    let body: String = conn
        .query_row(
            "SELECT body FROM op_log WHERE seq = ?1",
            [seq as i64],
            |r| r.get(0),
        )
        .unwrap();
    let changed = edit(&body);
    assert_ne!(changed, body, "the edit changed nothing");
    // Still valid JSON: only the chain can tell.
    serde_json::from_str::<serde_json::Value>(&changed).unwrap();
    conn.execute(
        "UPDATE op_log SET body = ?1 WHERE seq = ?2",
        (changed, seq as i64),
    )
    .unwrap();
}

#[tokio::test]
async fn a_record_changed_in_the_sqlite_file_stops_the_start_at_that_record() {
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let seqs = register(&engine, &["compass", "pocket watch", "lantern"]).await;
    drop(engine);

    // Without the change, a restart serves what was acknowledged: the test can tell.
    let again = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    assert_eq!(
        item_descriptions(&again).await,
        ["compass", "pocket watch", "lantern"]
    );
    drop(again);

    edit_sqlite_record(dir.path(), seqs[1], |body| {
        body.replace("pocket watch", "pocket knife")
    });
    let message = refusal(open(store::open(&url).await.unwrap(), &key).await);
    assert!(
        message.contains(&format!("record {} does not match its link", seqs[1])),
        "{message}"
    );
    assert!(message.contains("chronoscope verify"), "{message}");

    // `verify` names the same record and says which records before it are sound.
    let store = store::open(&url).await.unwrap();
    let found = audit(&*store, &key).await.unwrap();
    assert_eq!(found.verified, seqs[1] - 1);
    assert_eq!(found.problem.map(|p| p.seq), Some(Some(seqs[1])));
}

#[tokio::test]
async fn a_store_written_with_another_key_is_refused_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path());
    let key = LogKey::from_bytes(b"the key that wrote it");
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    register(&engine, &["compass"]).await;
    drop(engine);
    let other = LogKey::from_bytes(b"another key");
    let message = refusal(open(store::open(&url).await.unwrap(), &other).await);
    support::assert_contains_all(&message, &["another log key", "--log-key-file"]);
    // The right key still opens it, untouched.
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    assert_eq!(item_descriptions(&engine).await, ["compass"]);
}

#[tokio::test]
async fn a_log_shorter_than_its_sealed_snapshot_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path());
    let key = LogKey::from_bytes(b"k");
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    register(&engine, &["a", "b", "c", "d"]).await;
    let snapshot_at = engine.write_snapshot().await.unwrap().unwrap();
    drop(engine);
    // The tail of the log is lost, as with a write-ahead log cut short.
    let conn = rusqlite::Connection::open(dir.path().join("log.db")).unwrap();
    conn.execute(
        "DELETE FROM op_log WHERE seq > ?1",
        [snapshot_at as i64 - 2],
    )
    .unwrap();
    drop(conn);
    let message = refusal(open(store::open(&url).await.unwrap(), &key).await);
    assert!(
        message.contains(&format!("ends at record {}", snapshot_at - 2)),
        "{message}"
    );
    assert!(
        message.contains("2 acknowledged records are gone"),
        "{message}"
    );
}

#[tokio::test]
async fn a_store_from_before_chains_is_linked_by_the_operators_command_and_then_protected() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path());
    let key = LogKey::from_bytes(b"k");
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let seqs = register(&engine, &["compass", "lantern"]).await;
    drop(engine);
    // What an older version left: no links, no chain record.
    let conn = rusqlite::Connection::open(dir.path().join("log.db")).unwrap();
    conn.execute_batch("UPDATE op_log SET link = NULL; DELETE FROM log_chain;")
        .unwrap();
    drop(conn);

    // No start links it (that would prove whatever the records now say): the operator does.
    let message = refusal(open(store::open(&url).await.unwrap(), &key).await);
    assert!(message.contains("link-unchained-store"), "{message}");
    let store = store::open(&url).await.unwrap();
    chronoscope::engine::witnessing::link_unchained_store(&*store, &key, None, false)
        .await
        .unwrap();
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    assert_eq!(item_descriptions(&engine).await, ["compass", "lantern"]);
    let chain = store.chain().await.unwrap().unwrap();
    assert_eq!(chain.from, seqs[1] + 1);
    register(&engine, &["rope"]).await;
    drop(engine);
    assert!(audit(&*store, &key).await.unwrap().is_sound());

    // From now on an old record is protected like a new one.
    edit_sqlite_record(dir.path(), seqs[0], |body| {
        body.replace("compass", "compasS")
    });
    let message = refusal(open(store::open(&url).await.unwrap(), &key).await);
    assert!(
        message.contains(&format!("record {} does not match", seqs[0])),
        "{message}"
    );
}

#[tokio::test]
async fn a_record_changed_in_a_postgresql_row_stops_the_start_at_that_record() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let engine = open(store::open(&db.url).await.unwrap(), &key)
        .await
        .unwrap();
    let seqs = register(&engine, &["compass", "pocket watch", "lantern"]).await;
    drop(engine);

    let options: sqlx::postgres::PgConnectOptions = db.url.parse().unwrap();
    let pool = sqlx::PgPool::connect_with(options).await.unwrap();
    let changed =
        sqlx::query("UPDATE op_log SET body = replace(body, 'lantern', 'lanterN') WHERE seq = $1")
            .bind(seqs[2] as i64)
            .execute(&pool)
            .await
            .unwrap();
    assert_eq!(changed.rows_affected(), 1);
    pool.close().await;

    let message = refusal(open(store::open(&db.url).await.unwrap(), &key).await);
    assert!(
        message.contains(&format!("record {} does not match its link", seqs[2])),
        "{message}"
    );
}

/// Three events and a data entry in `primary`, each its own write; answers each record's seq
/// and the events' ids.
async fn chronicle(engine: &Arc<Engine>) -> (Vec<u64>, Vec<chronoscope::model::EventId>) {
    use chronoscope::service::StoreDataRequest;
    let ada = engine.session("ada".parse().unwrap());
    let primary = chronoscope::model::TimelineId::primary();
    let mut seqs = Vec::new();
    let mut ids = Vec::new();
    for (description, time) in [
        ("Compass found", "2024-09-01T09:00:00Z"),
        ("Pocket watch wound", "2024-09-02T09:00:00Z"),
        ("Lantern lit", "2024-09-03T09:00:00Z"),
    ] {
        let added = ada
            .add_event(&primary, support::new_event(description, time, "HQ", &[]))
            .await
            .unwrap();
        ids.push(added.event_id);
        seqs.push(engine.snapshot().await.unwrap().seq);
    }
    ada.store_data(StoreDataRequest {
        timeline_id: primary,
        timestamp: support::t("2024-09-01T12:00:00Z"),
        data: serde_json::json!({"weather": "clear"}),
    })
    .await
    .unwrap();
    seqs.push(engine.snapshot().await.unwrap().seq);
    (seqs, ids)
}

/// What `detect-tampering` (every record) and `validate-integrity` (now, or as of `at`) say
/// about `primary` to an operator.
async fn ask(
    engine: &Arc<Engine>,
    at: Option<&str>,
) -> (
    chronoscope::service::TamperReport,
    chronoscope::service::IntegrityReport,
) {
    use chronoscope::service::IntegrityQuery;
    let ada = engine.session("ada".parse().unwrap());
    let primary = chronoscope::model::TimelineId::primary();
    let found = ada
        .detect_tampering(support::full_scan(primary.clone()))
        .await
        .unwrap();
    let proven = ada
        .validate_integrity(IntegrityQuery {
            timeline_id: primary,
            timestamp: at.map(support::t),
        })
        .await
        .unwrap();
    (found, proven)
}

/// While the server runs (its memory still holds what was written), a record changed in the
/// store is located by `detect-tampering`, and `validate-integrity` fails exactly the event
/// that record produced.
async fn tampering_is_located_while_running(
    engine: &Arc<Engine>,
    seqs: &[u64],
    ids: &[chronoscope::model::EventId],
    tamper: impl std::future::Future<Output = ()>,
) {
    use chronoscope::service::FindingKind;
    let (clean, proven) = ask(engine, None).await;
    assert!(!clean.tampering_detected, "{clean:?}");
    assert_eq!(
        clean.details,
        format!(
            "No tampering: {} records verified (1–{})",
            clean.head_seq, clean.head_seq
        )
    );
    assert_eq!(
        (proven.integrity_score.as_str(), proven.examined),
        ("100%", 4)
    );

    tamper.await;
    let (found, proven) = ask(engine, None).await;
    assert!(found.tampering_detected);
    let located: Vec<_> = found.findings.iter().map(|f| (f.seq, f.kind)).collect();
    assert_eq!(located, [(seqs[1], FindingKind::Modified)]);
    assert_eq!(found.findings[0].op.as_deref(), Some("add_events"));
    assert!(
        found.details.starts_with(&format!(
            "Record {} (add_events in primary, written ",
            seqs[1]
        )),
        "{}",
        found.details
    );
    assert_eq!(proven.integrity_score, "75.0%");
    let failed: Vec<_> = proven
        .failures
        .iter()
        .map(|f| (f.id.clone(), f.seq))
        .collect();
    assert_eq!(failed, [(ids[1].to_string(), Some(seqs[1]))]);

    // As of a time before that event, what is examined all passes; the scan still says.
    let (_, before) = ask(engine, Some("2024-09-01T23:00:00Z")).await;
    assert_eq!(
        (before.integrity_score.as_str(), before.examined),
        ("100%", 2)
    );

    // A traveller who is no operator asking about another timeline: the finding counts there
    // too (a changed record cannot be trusted to say what it touches), but what it says it
    // holds is withheld.
    let bob = engine.session("bob".parse().unwrap()).with_admin(false);
    let other = bob
        .create_timeline(support::named("elsewhere"))
        .await
        .unwrap();
    let seen = bob
        .detect_tampering(support::full_scan(other.id))
        .await
        .unwrap();
    assert!(seen.tampering_detected);
    assert_eq!(seen.findings[0].seq, seqs[1]);
    assert_eq!(seen.findings[0].op, None);
    assert!(seen.findings[0].timelines.is_empty());
}

#[tokio::test]
async fn detect_tampering_and_validate_integrity_locate_a_changed_sqlite_record() {
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let (seqs, ids) = chronicle(&engine).await;
    let path = dir.path().to_owned();
    let at = seqs[1];
    tampering_is_located_while_running(&engine, &seqs, &ids, async move {
        edit_sqlite_record(&path, at, |body| {
            body.replace("Pocket watch", "Pocket knife")
        });
    })
    .await;
}

#[tokio::test]
async fn detect_tampering_and_validate_integrity_locate_a_changed_postgresql_row() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let engine = open(store::open(&db.url).await.unwrap(), &key)
        .await
        .unwrap();
    let (seqs, ids) = chronicle(&engine).await;
    let url = db.url.clone();
    let at = seqs[1];
    tampering_is_located_while_running(&engine, &seqs, &ids, async move {
        let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        let pool = sqlx::PgPool::connect_with(options).await.unwrap();
        let changed = sqlx::query(
            "UPDATE op_log SET body = replace(body, 'Pocket watch', 'Pocket knife') WHERE seq = $1",
        )
        .bind(at as i64)
        .execute(&pool)
        .await
        .unwrap();
        assert_eq!(changed.rows_affected(), 1);
        pool.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_deleted_record_is_named_as_the_gap_and_what_follows_it_is_unproven() {
    use chronoscope::service::FindingKind;
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let (seqs, ids) = chronicle(&engine).await;
    let conn = rusqlite::Connection::open(dir.path().join("log.db")).unwrap();
    let deleted = conn
        .execute("DELETE FROM op_log WHERE seq = ?1", [seqs[1] as i64])
        .unwrap();
    assert_eq!(deleted, 1);
    drop(conn);

    let (found, proven) = ask(&engine, None).await;
    let located: Vec<_> = found.findings.iter().map(|f| (f.seq, f.kind)).collect();
    assert_eq!(located, [(seqs[1], FindingKind::Gap)], "{found:?}");
    assert_eq!(
        found.records_checked,
        seqs[1] - 1,
        "every record before it verified"
    );
    // The event before the hole is proven; the one it held and what came after are not.
    let failed: Vec<_> = proven.failures.iter().map(|f| f.id.clone()).collect();
    assert_eq!(proven.examined, 4);
    assert!(!failed.contains(&ids[0].to_string()), "{proven:?}");
    assert!(failed.contains(&ids[1].to_string()), "{proven:?}");
    assert!(failed.contains(&ids[2].to_string()), "{proven:?}");
    assert_eq!(proven.integrity_score, "25.0%");
    assert!(
        proven.failures[0]
            .reason
            .contains(&format!("no record {}", seqs[1])),
        "{proven:?}"
    );
}

/// `detect-tampering` on `primary` as ada, an operator.
async fn scan(
    engine: &Arc<Engine>,
    depth: chronoscope::service::ScanDepth,
) -> chronoscope::service::TamperReport {
    use chronoscope::service::TamperQuery;
    engine
        .session("ada".parse().unwrap())
        .detect_tampering(TamperQuery {
            timeline_id: chronoscope::model::TimelineId::primary(),
            scan_depth: depth,
        })
        .await
        .unwrap()
}

/// The `log_tampered` anomalies the monitor shows on `timeline`: (id, severity, subjects).
async fn tamper_anomalies(
    engine: &Arc<Engine>,
    timeline: &chronoscope::model::TimelineId,
) -> Vec<(
    chronoscope::model::AnomalyId,
    chronoscope::monitor::Severity,
    Vec<String>,
)> {
    use chronoscope::monitor::AnomalyKind;
    use chronoscope::service::MonitorQuery;
    let report = engine
        .session("bob".parse().unwrap())
        .with_admin(false)
        .monitor_timeline(MonitorQuery {
            timeline_id: timeline.clone(),
            time_range: None,
        })
        .await
        .unwrap();
    report
        .anomalies
        .into_iter()
        .filter(|a| a.kind == AnomalyKind::LogTampered)
        .map(|a| (a.anomaly_id, a.severity, a.subjects))
        .collect()
}

#[tokio::test]
async fn a_recent_scan_checks_only_the_records_after_the_last_scan() {
    use chronoscope::service::ScanDepth;
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    chronicle(&engine).await;

    // No scan and no snapshot yet: every record.
    let first = scan(&engine, ScanDepth::Recent).await;
    assert_eq!((first.from_seq, first.records_checked), (1, first.head_seq));
    let recorded = first.recorded_seq.expect("the scan is recorded");
    assert_eq!(recorded, first.head_seq + 1);

    let items = register(&engine, &["compass", "lantern"]).await;
    let second = scan(&engine, ScanDepth::Recent).await;
    // Its own record and the two registrations: nothing before.
    assert_eq!(second.from_seq, first.head_seq + 1);
    assert_eq!(second.records_checked, 3);
    assert_eq!(second.head_seq, items[1]);
    assert!(!second.tampering_detected);
    assert_eq!(
        second.details,
        format!(
            "No tampering: 3 records verified ({}–{}), those after the last scan, which checked \
             up to record {}",
            first.head_seq + 1,
            items[1],
            first.head_seq
        )
    );

    // A full scan still reads everything.
    let full = scan(&engine, ScanDepth::Full).await;
    assert_eq!((full.from_seq, full.records_checked), (1, full.head_seq));
}

#[tokio::test]
async fn a_tampered_record_is_a_critical_anomaly_on_every_timeline_until_a_full_scan_clears_it() {
    use chronoscope::model::TimelineId;
    use chronoscope::monitor::{AnomalyKind, Severity};
    use chronoscope::service::{MonitorChange, MonitorWatch, ScanDepth};
    use futures::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let (seqs, _) = chronicle(&engine).await;
    // Bob's timeline: the changed record says nothing about it, yet counts there too.
    let elsewhere = engine
        .session("bob".parse().unwrap())
        .create_timeline(support::named("elsewhere"))
        .await
        .unwrap()
        .id;
    let primary = TimelineId::primary();
    assert!(!scan(&engine, ScanDepth::Full).await.tampering_detected);
    assert_eq!(tamper_anomalies(&engine, &primary).await, []);
    // Bob follows his timeline's monitor.
    let mut stream = engine
        .session("bob".parse().unwrap())
        .watch_monitor(MonitorWatch {
            timeline_id: elsewhere.clone(),
            after: None,
        })
        .await
        .unwrap();
    assert!(matches!(
        stream.next().await,
        Some(Ok(e)) if matches!(e.change, MonitorChange::Snapshot(_))
    ));

    let path = dir.path().to_owned();
    edit_sqlite_record(&path, seqs[1], |body| {
        body.replace("Pocket watch", "Pocket knife")
    });
    // Found; until then nothing shows (the monitor does not read the stored log).
    assert_eq!(tamper_anomalies(&engine, &primary).await, []);
    let found = scan(&engine, ScanDepth::Full).await;
    assert!(found.tampering_detected);
    let shown = tamper_anomalies(&engine, &primary).await;
    assert_eq!(shown.len(), 1, "{shown:?}");
    let (id, severity, subjects) = shown[0].clone();
    assert_eq!(severity, Severity::Critical);
    assert_eq!(subjects, [format!("log record {}", seqs[1])]);
    assert_eq!(tamper_anomalies(&engine, &elsewhere).await, shown);
    let appeared = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            match stream.next().await {
                Some(Ok(e)) => {
                    if let MonitorChange::Appeared(a) = e.change
                        && a.kind == AnomalyKind::LogTampered
                    {
                        return a;
                    }
                }
                other => panic!("the stream ended: {other:?}"),
            }
        }
    })
    .await
    .expect("the stream tells the anomaly");
    assert_eq!(appeared.anomaly_id, id);

    // Scanned again, it keeps its id; a recent scan does not read it again, yet says it is
    // still open.
    let again = scan(&engine, ScanDepth::Recent).await;
    assert!(again.findings.is_empty(), "{again:?}");
    assert!(again.tampering_detected);
    // What is open leads: a headline "TAMPERED: " before it reads true.
    assert!(
        again.details.starts_with(&format!(
            "Record {} found by an earlier scan is still open until a full scan no longer \
             finds it; no new tampering: ",
            seqs[1]
        )),
        "{}",
        again.details
    );
    assert_eq!(scan(&engine, ScanDepth::Full).await.findings.len(), 1);
    assert_eq!(tamper_anomalies(&engine, &primary).await, shown);

    // Restored (from a backup, say): a recent scan cannot clear it, a full one does.
    edit_sqlite_record(&path, seqs[1], |body| {
        body.replace("Pocket knife", "Pocket watch")
    });
    scan(&engine, ScanDepth::Recent).await;
    assert_eq!(tamper_anomalies(&engine, &primary).await, shown);
    let clean = scan(&engine, ScanDepth::Full).await;
    assert!(!clean.tampering_detected, "{clean:?}");
    assert!(
        clean.details.starts_with("No tampering: "),
        "{}",
        clean.details
    );
    assert_eq!(tamper_anomalies(&engine, &primary).await, []);
    assert_eq!(tamper_anomalies(&engine, &elsewhere).await, []);
    let resolved = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            match stream.next().await {
                Some(Ok(e)) => {
                    if let MonitorChange::Resolved(a) = e.change {
                        return a;
                    }
                }
                other => panic!("the stream ended: {other:?}"),
            }
        }
    })
    .await
    .expect("the stream tells it resolved");
    assert_eq!(resolved.anomaly_id, id);
}

#[tokio::test]
async fn a_recorded_finding_survives_a_snapshot_and_a_restart() {
    use chronoscope::model::TimelineId;
    use chronoscope::service::ScanDepth;
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let (seqs, _) = chronicle(&engine).await;
    edit_sqlite_record(dir.path(), seqs[1], |body| {
        body.replace("Pocket watch", "Pocket knife")
    });
    let found = scan(&engine, ScanDepth::Full).await;
    let recorded = found.recorded_seq.expect("recorded");
    let shown = tamper_anomalies(&engine, &TimelineId::primary()).await;
    assert_eq!(shown.len(), 1);
    // The snapshot covers the changed record, so the restart does not fold it again.
    assert_eq!(engine.write_snapshot().await.unwrap(), Some(recorded));
    drop(engine);

    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    assert_eq!(
        tamper_anomalies(&engine, &TimelineId::primary()).await,
        shown
    );
    // And the next recent scan starts after the recorded one, not after the snapshot.
    let next = scan(&engine, ScanDepth::Recent).await;
    assert_eq!(next.from_seq, found.head_seq + 1);
    assert!(next.tampering_detected, "still open: {next:?}");
}

#[tokio::test]
async fn a_scan_of_a_truncated_log_answers_its_findings_though_it_cannot_be_recorded() {
    use chronoscope::service::{FindingKind, ScanDepth};
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let (seqs, _) = chronicle(&engine).await;
    let last = *seqs.last().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("log.db")).unwrap();
    conn.execute("DELETE FROM op_log WHERE seq = ?1", [last as i64])
        .unwrap();
    drop(conn);
    let started = std::time::Instant::now();
    let found = scan(&engine, ScanDepth::Full).await;
    let located: Vec<_> = found.findings.iter().map(|f| (f.seq, f.kind)).collect();
    assert_eq!(located, [(last, FindingKind::Truncated)], "{found:?}");
    assert!(found.tampering_detected);
    // The store refuses to append below what this server folded: not recorded, but answered.
    assert_eq!(found.recorded_seq, None, "{found:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// The real `chronoscope detect-tampering` against a server whose SQLite record was changed
/// behind its back: a TAMPERED headline, the finding said once, and an exit status of its own
/// (3) that a script can test; before the change, intact and 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_exits_3_when_it_finds_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let (seqs, _) = chronicle(&engine).await;
    let served = format!(
        "http://127.0.0.1:{}",
        support::serve_port(engine, None).await
    );
    let here = tempfile::tempdir().unwrap();
    let detect = || {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_chronoscope"))
            .arg("--data-dir")
            .arg(here.path())
            .args(["--remote", &served, "--token", &support::token("ada")])
            .args(["detect-tampering", "primary", "--full"])
            .output()
    };
    let intact = detect().await.expect("the CLI runs");
    let said = String::from_utf8_lossy(&intact.stdout);
    assert_eq!(intact.status.code(), Some(0), "{said}{intact:?}");
    assert!(!said.contains("TAMPERED"), "{said}");

    edit_sqlite_record(dir.path(), seqs[1], |body| {
        body.replace("Pocket watch", "Pocket knife")
    });
    let found = detect().await.expect("the CLI runs");
    let said = String::from_utf8_lossy(&found.stdout);
    assert_eq!(found.status.code(), Some(3), "{said}{found:?}");
    assert!(said.starts_with("TAMPERED: "), "{said}");
    assert_eq!(
        said.matches("does not match its link").count(),
        1,
        "said once: {said}"
    );
}

/// A log rewritten wholesale: a scan lists the first 100 records that do not verify and counts
/// the rest, records that much, and the monitor shows as many anomalies plus one that counts
/// the others, on every timeline, instead of one per record.
#[tokio::test]
async fn a_wholesale_rewrite_is_listed_to_the_first_hundred_records_and_counted_beyond() {
    use chronoscope::model::TimelineId;
    use chronoscope::service::{FINDINGS_LISTED, ScanDepth};
    let dir = tempfile::tempdir().unwrap();
    let key = LogKey::from_bytes(b"a key kept outside the database");
    let url = sqlite_url(dir.path());
    let engine = open(store::open(&url).await.unwrap(), &key).await.unwrap();
    let names: Vec<String> = (0..130).map(|i| format!("trinket {i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let seqs = register(&engine, &names).await;
    for seq in &seqs {
        edit_sqlite_record(dir.path(), *seq, |body| body.replace("trinket", "bauble"));
    }

    let report = scan(&engine, ScanDepth::Full).await;
    assert!(report.tampering_detected);
    assert_eq!(
        report.findings.len(),
        FINDINGS_LISTED,
        "{:?}",
        report.details
    );
    assert_eq!(report.findings_not_listed, 30);
    let listed: Vec<u64> = report.findings.iter().map(|f| f.seq).collect();
    assert_eq!(
        listed,
        seqs[..FINDINGS_LISTED],
        "the first hundred, in order"
    );
    assert!(
        report.details.contains("129 more findings (30 not listed"),
        "{}",
        report.details
    );
    assert!(report.recorded_seq.is_some(), "and recorded");

    let shown = tamper_anomalies(&engine, &TimelineId::primary()).await;
    assert_eq!(
        shown.len(),
        FINDINGS_LISTED + 1,
        "a hundred and one that counts"
    );
    assert!(
        shown
            .iter()
            .any(|(_, _, subjects)| subjects == &["30 more log records".to_owned()]),
        "{:?}",
        shown.last()
    );
}
