//! The data directory and the secrets in it, as the real binary leaves them: a directory we
//! did not create keeps its permissions, and what is secret in it is owner-only.
#![cfg(unix)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn chronoscope(data_dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_chronoscope"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env_remove("CHRONOSCOPE_JWT_SECRET")
        .env_remove("CHRONOSCOPE_JWT_SECRET_FILE")
        .env_remove("CHRONOSCOPE_DATABASE")
        .env_remove("CHRONOSCOPE_LOG_KEY_FILE")
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

#[test]
fn an_existing_data_directory_keeps_its_permissions_and_its_secrets_are_private() {
    let shared = tempfile::tempdir().expect("temporary directory");
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = chronoscope(shared.path(), &["timelines", "list"]);
    support::assert_succeeded(&out);
    let out = chronoscope(shared.path(), &["token", "--subject", "ada"]);
    support::assert_succeeded(&out);
    assert_eq!(
        mode(shared.path()),
        0o755,
        "a directory we did not create was chmodded"
    );
    for file in ["chronoscope.db", "jwt-secret", "log-key"] {
        assert_eq!(mode(&shared.path().join(file)), 0o600, "{file}");
    }
}

#[test]
fn a_data_directory_we_create_is_owner_only() {
    let parent = tempfile::tempdir().expect("temporary directory");
    let dir = parent.path().join("chronoscope");
    let out = chronoscope(&dir, &["timelines", "list"]);
    support::assert_succeeded(&out);
    assert_eq!(mode(&dir), 0o700);
}

#[test]
fn a_short_secret_or_a_secret_file_is_explained() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = chronoscope(
        dir.path(),
        &[
            "token",
            "--subject",
            "ada",
            "--jwt-secret",
            "sixteen bytes ok",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("at least 32") && err.contains("openssl rand -hex 32"),
        "{err}"
    );
    let file = dir.path().join("mounted");
    std::fs::write(&file, "0123456789abcdef0123456789abcdef\n").expect("write");
    let out = chronoscope(
        dir.path(),
        &[
            "token",
            "--subject",
            "ada",
            "--jwt-secret-file",
            file.to_str().expect("utf-8"),
        ],
    );
    support::assert_succeeded(&out);
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let secret =
        chronoscope::auth::Secret::from_bytes("0123456789abcdef0123456789abcdef").expect("secret");
    let claims = chronoscope::auth::verify(&secret, &token).expect("signed with the file's secret");
    assert_eq!(claims.sub, "ada");
}

/// `verify` reads the whole store against the data directory's log key: all good, then the
/// exact record someone changed in the file, with a failing exit status.
#[test]
fn verify_names_the_record_changed_in_the_file() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = chronoscope(dir.path(), &["items", "register", "brass compass"]);
    support::assert_succeeded(&out);
    let out = chronoscope(dir.path(), &["verify"]);
    let said = String::from_utf8_lossy(&out.stdout);
    support::assert_succeeded(&out);
    assert!(said.contains("records verify"), "{said}");

    let conn = rusqlite::Connection::open(dir.path().join("chronoscope.db")).expect("open");
    let seq: i64 = conn
        .query_row(
            "SELECT seq FROM op_log WHERE body LIKE '%brass compass%'",
            [],
            |r| r.get(0),
        )
        .expect("the item's record");
    conn.execute(
        "UPDATE op_log SET body = replace(body, 'brass', 'gold') WHERE seq = ?1",
        [seq],
    )
    .expect("changed");
    drop(conn);

    let out = chronoscope(dir.path(), &["verify"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("record {seq} does not match its link")),
        "{said}"
    );
    // And nothing is served from the changed log: the next command refuses to start.
    let out = chronoscope(dir.path(), &["items", "list"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains("does not verify"), "{said}");
}
