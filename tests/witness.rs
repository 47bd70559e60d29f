//! A database writer without the log key (DESIGN §8), against the real binary and real stores:
//! removing the chain record after editing records (so that a start would link the edits), and
//! cutting the log's tail, are refused by every start, named by `chronoscope verify` and
//! reported by the scans, because each replica keeps the chained fact and its last verified
//! head in a sealed witness file beside the key. A store is linked only by the operator's
//! explicit `link-unchained-store`; a deliberate restore of an older backup is accepted only
//! with `witness accept --lost-records N`, which records who accepted how many.

mod support;

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::error::ServiceError;
use chronoscope::service::prelude::*;
use chronoscope::service::{FindingKind, IntegrityQuery, NewItem};
use chronoscope::store::{self, LogKey, Witness};

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_chronoscope")
}

/// A store the attacker can write, and the data directory of the replica that serves it (its
/// log key and its witness).
struct Target {
    dir: tempfile::TempDir,
    url: String,
    pg: Option<support::PgDatabase>,
}

impl Target {
    fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("chronoscope.db").display());
        Self { dir, url, pg: None }
    }

    async fn postgres() -> Option<Self> {
        let db = support::fresh_postgres().await?;
        Some(Self {
            dir: tempfile::tempdir().unwrap(),
            url: db.url.clone(),
            pg: Some(db),
        })
    }

    fn key(&self) -> LogKey {
        LogKey::load(None, self.dir.path()).unwrap()
    }

    /// An engine as `serve` opens it: the data directory's key and witness.
    async fn engine(&self) -> Result<Arc<Engine>, ServiceError> {
        let store = store::open(&self.url).await.unwrap();
        let key = self.key();
        let witness = Witness::for_store(self.dir.path(), &*store, &key);
        assert!(witness.is_some());
        let config = EngineConfig {
            log_key: key,
            witness,
            ..EngineConfig::default()
        };
        Engine::open(store, Arc::new(SystemClock), config, Seed::None).await
    }

    /// Runs `statements` on the database, as its writer would.
    async fn sql(&self, statements: &[&str]) {
        match &self.pg {
            Some(db) => {
                let options: sqlx::postgres::PgConnectOptions = db.url.parse().unwrap();
                let pool = sqlx::PgPool::connect_with(options).await.unwrap();
                for statement in statements {
                    sqlx::query(sqlx::AssertSqlSafe(*statement))
                        .execute(&pool)
                        .await
                        .unwrap();
                }
                pool.close().await;
            }
            None => {
                let conn =
                    rusqlite::Connection::open(self.dir.path().join("chronoscope.db")).unwrap();
                for statement in statements {
                    conn.execute_batch(statement).unwrap();
                }
            }
        }
    }

    /// Cuts the log after record `last`, as the database writer would (PostgreSQL keeps its
    /// head in a row of its own).
    async fn cut_after(&self, last: u64) {
        let delete = format!("DELETE FROM op_log WHERE seq > {last}");
        let head = format!("UPDATE op_log_head SET last_seq = {last}");
        if self.pg.is_some() {
            self.sql(&[&delete, &head]).await;
        } else {
            self.sql(&[&delete]).await;
        }
    }

    /// `chronoscope --data-dir DIR --database URL ARGS…`, run to the end.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(binary())
            .arg("--data-dir")
            .arg(self.dir.path())
            .arg("--database")
            .arg(&self.url)
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .env("NO_COLOR", "1")
            .env_remove("CHRONOSCOPE_LOG_KEY_FILE")
            .env_remove("CHRONOSCOPE_JSON")
            .output()
            .expect("the binary runs")
    }

    /// `serve`, which must refuse to start (exit 1) saying each of `needles`: its stderr.
    fn refuses_to_serve(&self, needles: &[&str]) -> String {
        let (status, said) = self.serve_refuses();
        assert_eq!(status.code(), Some(1), "{said}");
        support::assert_contains_all(&said, needles);
        said
    }

    /// `serve`, which must refuse to start: its exit status and stderr.
    fn serve_refuses(&self) -> (std::process::ExitStatus, String) {
        let mut child = Command::new(binary())
            .arg("--data-dir")
            .arg(self.dir.path())
            .arg("--database")
            .arg(&self.url)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("RUST_BACKTRACE", "0")
            .env("NO_COLOR", "1")
            .env_remove("CHRONOSCOPE_LOG_KEY_FILE")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve runs");
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                let mut said = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut said);
                panic!("serve started on the attacked store; it said:\n{said}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut said = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        assert!(!status.success(), "{said}");
        (status, said)
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Registers `descriptions` as ada's items, each its own acknowledged write.
async fn register(engine: &Arc<Engine>, descriptions: &[&str]) {
    let ada = engine.session("ada".parse().unwrap());
    for description in descriptions {
        ada.register_item(NewItem {
            description: (*description).to_owned(),
        })
        .await
        .unwrap();
    }
}

/// Three items written, a sealed snapshot, one more item; the witness holds the head.
async fn history(target: &Target) -> u64 {
    let engine = target.engine().await.unwrap();
    register(&engine, &["compass", "pocket watch", "lantern"]).await;
    engine.write_snapshot().await.unwrap();
    register(&engine, &["rope"]).await;
    engine.record_witness().await.unwrap();
    let head = engine.snapshot().await.unwrap().seq;
    drop(engine);
    let out = target.run(&["verify"]);
    assert!(out.status.success(), "{}", stderr(&out));
    head
}

/// The attack of issue 37: three records edited, then the chain record deleted so that a
/// start would link the edited log as if an older version wrote it (and, with
/// `drop_snapshots`, the sealed snapshots deleted too).
async fn rechain_attack_is_refused(target: &Target, drop_snapshots: bool) {
    history(target).await;
    target
        .sql(&[
            "UPDATE op_log SET body = replace(body, 'pocket watch', 'pocket knife')",
            "UPDATE op_log SET body = replace(body, 'lantern', 'lamp')",
            "UPDATE op_log SET body = replace(body, 'compass', 'sextant')",
            "DELETE FROM log_chain",
        ])
        .await;
    if drop_snapshots {
        target
            .sql(&["DELETE FROM snapshot_chunk", "DELETE FROM snapshot"])
            .await;
    }
    let said = target.refuses_to_serve(&[
        "no chain record",
        "witnessed its log chained",
        "Store failed its integrity check",
    ]);
    assert!(!said.contains("link-unchained-store"), "{said}");
    // Nothing was linked behind the operator's back: the store is as the attacker left it.
    let store = store::open(&target.url).await.unwrap();
    assert_eq!(store.chain().await.unwrap(), None);

    let out = target.run(&["verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no chain record"), "{}", stderr(&out));
    // The explicit command refuses too: this data directory witnessed the store chained.
    let out = target.run(&["link-unchained-store"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("witnessed the store chained"));
}

/// The same attack while a replica serves the store: the scans say so.
async fn rechain_attack_is_reported_by_the_scans(target: &Target) {
    let engine = target.engine().await.unwrap();
    let ada = engine.session("ada".parse().unwrap());
    let primary = chronoscope::model::TimelineId::primary();
    for (description, time) in [
        ("Compass found", "2024-09-01T09:00:00Z"),
        ("Pocket watch wound", "2024-09-02T09:00:00Z"),
    ] {
        ada.add_event(&primary, support::new_event(description, time, "HQ", &[]))
            .await
            .unwrap();
    }
    engine.record_witness().await.unwrap();
    target
        .sql(&[
            "UPDATE op_log SET body = replace(body, 'Pocket watch', 'Pocket knife')",
            "DELETE FROM log_chain",
        ])
        .await;
    let found = ada
        .detect_tampering(support::full_scan(primary.clone()))
        .await
        .unwrap();
    assert!(found.tampering_detected);
    let kinds: Vec<_> = found.findings.iter().map(|f| f.kind).collect();
    assert!(kinds.contains(&FindingKind::Modified), "{found:?}");
    assert!(kinds.contains(&FindingKind::Rechained), "{found:?}");
    let proven = ada
        .validate_integrity(IntegrityQuery {
            timeline_id: primary,
            timestamp: None,
        })
        .await
        .unwrap();
    assert_eq!((proven.examined, proven.passed), (2, 0), "{proven:?}");
    assert!(
        proven.failures[0].reason.contains("no chain record"),
        "{proven:?}"
    );
}

#[tokio::test]
async fn sqlite_rechain_attack_is_refused_by_start_verify_and_the_link_command() {
    rechain_attack_is_refused(&Target::sqlite(), false).await;
}

#[tokio::test]
async fn sqlite_rechain_attack_without_the_snapshots_is_refused_too() {
    rechain_attack_is_refused(&Target::sqlite(), true).await;
}

#[tokio::test]
async fn sqlite_rechain_attack_while_serving_is_reported_by_the_scans() {
    rechain_attack_is_reported_by_the_scans(&Target::sqlite()).await;
}

#[tokio::test]
async fn postgres_rechain_attack_is_refused_by_start_verify_and_the_link_command() {
    if let Some(target) = Target::postgres().await {
        rechain_attack_is_refused(&target, false).await;
    }
}

#[tokio::test]
async fn postgres_rechain_attack_without_the_snapshots_is_refused_too() {
    if let Some(target) = Target::postgres().await {
        rechain_attack_is_refused(&target, true).await;
    }
}

#[tokio::test]
async fn postgres_rechain_attack_while_serving_is_reported_by_the_scans() {
    if let Some(target) = Target::postgres().await {
        rechain_attack_is_reported_by_the_scans(&target).await;
    }
}

/// The log's last three records deleted (with `drop_snapshots`, the snapshots that would have
/// told too): refused until an operator accepts the loss, with the right number, on record.
async fn cut_tail_is_refused_until_accepted(target: &Target, drop_snapshots: bool) {
    let head = history(target).await;
    target.cut_after(head - 3).await;
    if drop_snapshots {
        target
            .sql(&["DELETE FROM snapshot_chunk", "DELETE FROM snapshot"])
            .await;
    }
    target.refuses_to_serve(&[
        "3 acknowledged records are gone",
        "restore the store from a backup",
    ]);

    let out = target.run(&["verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("3 acknowledged records are gone"),
        "{}",
        stderr(&out)
    );
    if !drop_snapshots {
        // The sealed snapshot ahead of the log says the store itself is not whole: it cannot
        // be accepted as a restored backup (whose snapshots would be its own).
        let out = target.run(&["witness", "accept", "--lost-records", "3"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains("does not verify"), "{}", stderr(&out));
        return;
    }

    // A deliberate restore: the number must be the one the refusal gave.
    let out = target.run(&["witness", "accept", "--lost-records", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("lacks 3 witnessed records"));
    let out = target.run(&["--as", "ops", "witness", "accept", "--lost-records", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("ops accepted"), "{}", stderr(&out));
    let out = target.run(&["witness", "show"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("ops accepted the loss of 3 records"),
        "{shown}"
    );
    let out = target.run(&["verify"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The store now starts, from its shorter head.
    let engine = target.engine().await.unwrap();
    assert_eq!(engine.snapshot().await.unwrap().seq, head - 3);
}

#[tokio::test]
async fn sqlite_cut_tail_is_refused_until_the_loss_is_accepted() {
    cut_tail_is_refused_until_accepted(&Target::sqlite(), false).await;
}

#[tokio::test]
async fn sqlite_cut_tail_and_snapshots_are_refused_until_the_loss_is_accepted() {
    cut_tail_is_refused_until_accepted(&Target::sqlite(), true).await;
}

#[tokio::test]
async fn postgres_cut_tail_is_refused_until_the_loss_is_accepted() {
    if let Some(target) = Target::postgres().await {
        cut_tail_is_refused_until_accepted(&target, false).await;
    }
}

#[tokio::test]
async fn postgres_cut_tail_and_snapshots_are_refused_until_the_loss_is_accepted() {
    if let Some(target) = Target::postgres().await {
        cut_tail_is_refused_until_accepted(&target, true).await;
    }
}

/// Removes the data directory's witness files, as for a store this directory never served.
fn forget_witness(target: &Target) {
    for entry in std::fs::read_dir(target.dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(store::witness::FILE_PREFIX) {
            std::fs::remove_file(path).unwrap();
        }
    }
}

#[tokio::test]
async fn only_the_explicit_command_links_a_store_from_before_chains() {
    let target = Target::sqlite();
    let engine = target.engine().await.unwrap();
    register(&engine, &["compass", "lantern"]).await;
    drop(engine);
    // What an older version left: no links, no chain record, no witness.
    target
        .sql(&["UPDATE op_log SET link = NULL", "DELETE FROM log_chain"])
        .await;
    forget_witness(&target);

    let (_, said) = target.serve_refuses();
    support::assert_contains_all(
        &said,
        &[
            "before the log was chained",
            "chronoscope link-unchained-store",
        ],
    );
    let help = target.run(&["link-unchained-store", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("becomes the proven history"), "{help}");

    let out = target.run(&["link-unchained-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("linked 3 records"));
    let out = target.run(&["verify"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = target.run(&["--as", "ada", "items", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("lantern"));
    // Run again on a chained store: nothing to link.
    let out = target.run(&["link-unchained-store"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("chained already"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_store_whose_records_carry_links_is_linked_only_despite_them_and_loudly() {
    let target = Target::sqlite();
    let engine = target.engine().await.unwrap();
    register(&engine, &["compass"]).await;
    drop(engine);
    // The chain record removed on a store this data directory never witnessed.
    target.sql(&["DELETE FROM log_chain"]).await;
    forget_witness(&target);

    let (_, said) = target.serve_refuses();
    assert!(said.contains("record 1 carries a link"), "{said}");
    assert!(!said.contains("link-unchained-store"), "{said}");
    let out = target.run(&["verify"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("carries a link"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("link-unchained-store"));
    let out = target.run(&["link-unchained-store"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("record 1 carries a link"));
    let out = target.run(&["link-unchained-store", "--despite-links"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("WARNING"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_deleted_record_is_named_by_serve_and_verify() {
    let target = Target::sqlite();
    let engine = target.engine().await.unwrap();
    register(&engine, &["a", "b", "c", "d", "e"]).await;
    drop(engine);
    target.sql(&["DELETE FROM op_log WHERE seq = 3"]).await;

    let said = target.refuses_to_serve(&["record 3 is missing", "Restore the store from a backup"]);
    assert!(!said.contains("Internal error"), "{said}");
    assert!(!said.contains("Location:"), "{said}");
    assert!(!said.contains("Backtrace"), "{said}");

    let out = target.run(&["--json", "verify"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verified"], 2, "{report}");
    assert_eq!(report["problem"]["seq"], 3, "{report}");
}

#[tokio::test]
async fn a_forged_head_on_postgresql_is_an_integrity_failure_not_a_retry() {
    let Some(target) = Target::postgres().await else {
        return;
    };
    let engine = target.engine().await.unwrap();
    register(&engine, &["compass"]).await;
    let head = engine.snapshot().await.unwrap().seq;
    chronoscope::tls::install_default_provider();
    let port = support::serve_port(Arc::clone(&engine), None).await;
    // A record appended by someone without the key: its link cannot be right.
    target
        .sql(&[
            &format!(
                "INSERT INTO op_log (seq, body, link) VALUES ({}, '{{}}', '\\x00')",
                head + 1
            ),
            &format!("UPDATE op_log_head SET last_seq = {}", head + 1),
        ])
        .await;
    let refused = engine.snapshot().await.unwrap_err();
    assert!(
        matches!(refused, ServiceError::IntegrityFailed(_)),
        "{refused:?}"
    );
    assert_eq!(refused.problem_type().slug, "integrity-failed");
    let ready = reqwest::get(format!("http://127.0.0.1:{port}/readyz"))
        .await
        .unwrap();
    assert_eq!(ready.status().as_u16(), 500);
    let body = ready.text().await.unwrap();
    assert!(body.contains("/problems/integrity-failed"), "{body}");
    assert!(!body.contains("try again"), "{body}");
    assert!(!body.contains(&target.url), "{body}");
}
