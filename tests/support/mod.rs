//! Helpers shared by the store tests: a fresh PostgreSQL database per test, or a skip notice.
//!
//! PostgreSQL tests run whenever the server at `CHRONOSCOPE_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`, an admin database) is reachable. When it is
//! not, they print a notice and pass, unless `CHRONOSCOPE_REQUIRE_POSTGRES=1` (CI), which makes
//! them fail.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, Connection};

/// The admin URL used to create and drop test databases.
pub fn admin_url() -> String {
    std::env::var("CHRONOSCOPE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// Whether PostgreSQL tests must run rather than skip.
pub fn postgres_required() -> bool {
    std::env::var("CHRONOSCOPE_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// `url` with its database name replaced by `name` (query string kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    format!("{}/{name}{query}", &base[..path_start])
}

/// A database created for one test and dropped (even after a panic) when this is dropped.
pub struct PgDatabase {
    /// URL of the new database.
    pub url: String,
    /// Its name.
    pub name: String,
    admin: String,
}

async fn admin_connection(admin: &str) -> Result<PgConnection, String> {
    let options = PgConnectOptions::from_str(admin).map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(5), PgConnection::connect_with(&options)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out after 5s".to_owned()),
    }
}

/// A fresh, empty database, or `None` (after a notice) when no server is reachable and none is
/// required.
pub async fn fresh_postgres() -> Option<PgDatabase> {
    let admin = admin_url();
    let mut conn = match admin_connection(&admin).await {
        Ok(conn) => conn,
        Err(e) if postgres_required() => {
            panic!("CHRONOSCOPE_REQUIRE_POSTGRES=1 but PostgreSQL is unreachable: {e}")
        }
        Err(e) => {
            // Written to the process's stderr, not through eprintln!, which libtest captures and
            // hides for a passing test: a skip must be seen in `cargo test`'s output.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr().lock(),
                "SKIPPED {}: PostgreSQL unreachable ({e}); set CHRONOSCOPE_TEST_POSTGRES_URL, or \
                 CHRONOSCOPE_REQUIRE_POSTGRES=1 to fail",
                std::thread::current().name().unwrap_or("a PostgreSQL test")
            );
            return None;
        }
    };
    let name = format!("chronoscope_test_{:016x}", rand::random::<u64>());
    let created = sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await;
    if let Err(e) = created {
        panic!("PostgreSQL is reachable but cannot create a test database: {e}");
    }
    let _ = conn.close().await;
    Some(PgDatabase {
        url: with_database(&admin, &name),
        name,
        admin,
    })
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime, which cannot be blocked on; use a thread with its
        // own. FORCE ends connections the store handles may still hold.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let mut conn = admin_connection(&admin).await?;
                sqlx::query(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .execute(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
                let _ = conn.close().await;
                Ok::<(), String>(())
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

#[test]
fn database_names_are_replaced_in_urls() {
    assert_eq!(
        with_database("postgres://u@h:5432/postgres", "t1"),
        "postgres://u@h:5432/t1"
    );
    assert_eq!(with_database("postgres://u@h", "t1"), "postgres://u@h/t1");
    assert_eq!(
        with_database("postgresql://u:p@h/db?sslmode=disable", "t1"),
        "postgresql://u:p@h/t1?sslmode=disable"
    );
}
