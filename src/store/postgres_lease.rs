//! The writer's lease on PostgreSQL: a session-level advisory lock, held on a connection of its
//! own.
//!
//! A process that wants the lease first tries to take the lock. While another process holds
//! it, the one that wants it says so on a notification channel (the holder's listener hears
//! it, see `postgres::listen`) and waits for the lock for [`WANT_AGAIN`], then says so again,
//! up to [`PATIENCE`] in all. The holder gives the lock up (at the engine's pace, see
//! `engine::lease`) with `pg_advisory_unlock`, keeping the connection for the next time.
//!
//! The lease's connection is named (`application_name`) after the process and the address at
//! which it takes forwarded writes, so that the others find the holder with one query of
//! `pg_locks` and `pg_stat_activity` ([`PgLease::holder`]); the name goes with the lock. Any
//! database login can take the lock under such a name: the name is only where to look, and a
//! replica sends nothing to that address before it proved it is one of this deployment's
//! (`server::forward`).
//!
//! A request for the lease is signed with a key derived from the log key ([`REQUEST_LABEL`]),
//! names who asks, expires and carries a nonce ([`Requests`]): anyone may `NOTIFY` on the
//! channel with a database login, but only a replica of this deployment moves the lease, and
//! a request heard once is never heard again.
//!
//! When the holder dies, its connection ends and PostgreSQL frees the lock at once (after
//! kill -9 the kernel closes the socket); a holder cut off by the network is noticed by the
//! server's TCP keepalives (about 25 s), and meanwhile the others write without the lease once
//! their patience runs out. Advisory locks belong to one database, so two deployments in two
//! databases of one server never share a lease.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool};
use tokio::sync::{Mutex, watch};

use super::chain::{hex, unhex};
use super::postgres::map_err;
use super::{HeldLease, LeaseHolder, StoreError, WriterLease};

/// The channel on which a process asks for the lease (the payload is [`Requests::make`]'s).
pub(super) const LEASE_CHANNEL: &str = "chronoscope_lease";
/// What the key requests for the lease are signed with is derived for (see `LogKey::derive`).
const REQUEST_LABEL: &str = "chronoscope: a request for the writer's lease";
/// How long a request for the lease counts once made.
const REQUEST_VALID: Duration = Duration::from_secs(10);
/// How far apart the replicas' clocks may be for their requests to count.
const CLOCK_DRIFT: Duration = Duration::from_secs(30);
/// The advisory lock's key: "chrono" in ASCII.
const LEASE_KEY: i64 = 0x6368_726f_6e6f;
/// How long one wait for the lock lasts before the holder is told again that the lease is
/// wanted, so a notice the holder missed (its listener reconnecting) costs this much at most.
const WANT_AGAIN: Duration = Duration::from_millis(100);
/// How long a process waits for the lease in all before it writes without it. The holder
/// gives it up within milliseconds of being asked; waiting this long means it stopped
/// answering (hung, or cut off from the database but not yet noticed).
const PATIENCE: Duration = Duration::from_secs(3);
/// SQLSTATE lock_not_available: the wait reached `lock_timeout`.
const LOCK_NOT_AVAILABLE: &str = "55P03";
/// What the lease's connection is named, before the process and its address.
const NAME_PREFIX: &str = "chronoscope";
/// The longest `application_name` PostgreSQL keeps (NAMEDATALEN - 1); it cuts longer ones.
const NAME_MAX: usize = 63;

/// The lease of one [`super::PostgresStore`].
pub(super) struct PgLease {
    /// For the lease's own connection: the store's, with `lock_timeout` set to [`WANT_AGAIN`].
    options: PgConnectOptions,
    /// This process, as its notices name it (its listener ignores its own).
    pub(super) me: String,
    /// The lease's connection while the lease is not held.
    idle: Arc<Mutex<Option<PgConnection>>>,
    wanted: watch::Receiver<u64>,
    shown: String,
    /// For asking who holds the lease.
    pool: PgPool,
    /// What the lease's connection is named when it takes the lease: this process and where it
    /// takes forwarded writes.
    name: std::sync::Mutex<String>,
    /// Signs this process's requests for the lease and checks the others'; set once the
    /// engine gives the log key.
    requests: std::sync::OnceLock<Requests>,
}

/// Requests for the lease, signed: `<who> <expiry, unix seconds> <nonce> <HMAC>` with the key
/// derived for [`REQUEST_LABEL`], so that a `NOTIFY` from anyone without the log key (any
/// database login may send one) is ignored, and one heard is never heard again (its nonce is
/// kept until it expired).
pub(super) struct Requests {
    key: [u8; 32],
    seen: moka::sync::Cache<String, ()>,
}

impl Requests {
    pub(super) fn new(key: [u8; 32]) -> Self {
        Self {
            key,
            seen: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(REQUEST_VALID + CLOCK_DRIFT * 2)
                .build(),
        }
    }

    fn mac(&self, who: &str, expires: u64, nonce: &str) -> hmac::Hmac<sha2::Sha256> {
        use hmac::Mac;
        let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(format!("{REQUEST_LABEL}\n{who}\n{expires}\n{nonce}").as_bytes());
        mac
    }

    /// A request for the lease by `who`, made `now` (unix seconds).
    pub(super) fn make(&self, who: &str, now: u64) -> String {
        use hmac::Mac;
        let nonce = hex(&rand::random::<[u8; 16]>());
        let expires = now + REQUEST_VALID.as_secs();
        let tag = self.mac(who, expires, &nonce).finalize().into_bytes();
        format!("{who} {expires} {nonce} {}", hex(&tag))
    }

    /// Whether `payload` is a request made by a process that holds the key, other than `me`,
    /// unexpired at `now` (unix seconds) and not heard before.
    pub(super) fn genuine(&self, payload: &str, me: &str, now: u64) -> bool {
        use hmac::Mac;
        let mut words = payload.split(' ');
        let (Some(who), Some(expires), Some(nonce), Some(tag), None) = (
            words.next(),
            words.next(),
            words.next(),
            words.next(),
            words.next(),
        ) else {
            return false;
        };
        let (Ok(expires), Some(tag)) = (expires.parse::<u64>(), unhex(tag)) else {
            return false;
        };
        let drift = CLOCK_DRIFT.as_secs();
        who != me
            && self.mac(who, expires, nonce).verify_slice(&tag).is_ok()
            && expires.saturating_add(drift) >= now
            && expires <= now + REQUEST_VALID.as_secs() + drift
            && self.seen.entry(nonce.to_owned()).or_insert(()).is_fresh()
    }
}

/// Seconds since the epoch: requests for the lease expire by the wall clock, which the
/// replicas share (within [`CLOCK_DRIFT`]).
pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl std::fmt::Debug for PgLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLease")
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

impl PgLease {
    /// A lease taken with `options`; `wanted` moves when the store's listener hears a request.
    pub(super) fn new(
        options: &PgConnectOptions,
        pool: PgPool,
        me: String,
        wanted: watch::Receiver<u64>,
        shown: String,
    ) -> Self {
        let timeout = format!("{}ms", WANT_AGAIN.as_millis());
        Self {
            options: options
                .clone()
                .options([("lock_timeout", timeout.as_str())]),
            name: std::sync::Mutex::new(format!("{NAME_PREFIX} {me}")),
            me,
            idle: Arc::default(),
            wanted,
            shown,
            pool,
            requests: std::sync::OnceLock::new(),
        }
    }

    /// Whether a notice on [`LEASE_CHANNEL`] is another replica asking for the lease (see
    /// [`Requests`]).
    pub(super) fn asked_by_another(&self, payload: &str) -> bool {
        let genuine = self
            .requests
            .get()
            .is_some_and(|requests| requests.genuine(payload, &self.me, unix_now()));
        if !genuine {
            tracing::debug!(
                "a request for the writer's lease that no replica of this deployment made \
                 (unsigned, forged, expired or heard before) was ignored"
            );
        }
        genuine
    }

    fn name(&self) -> String {
        self.name.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn err(&self, e: sqlx::Error) -> StoreError {
        map_err(&self.shown, "take the writer's lease on", e)
    }

    fn held(&self, conn: PgConnection) -> Box<dyn HeldLease> {
        Box::new(PgHeld {
            conn: Some(conn),
            home: Arc::clone(&self.idle),
        })
    }
}

#[async_trait]
impl WriterLease for PgLease {
    async fn acquire(&self) -> Result<Option<Box<dyn HeldLease>>, StoreError> {
        let idle = self.idle.lock().await.take();
        let mut conn = match idle {
            Some(conn) => conn,
            None => PgConnection::connect_with(&self.options)
                .await
                .map_err(|e| self.err(e))?,
        };
        // Uncontended (one replica, or the lease is free): one round trip, nobody disturbed.
        // The name is set first in the same statement, so whoever sees the lock held sees it.
        let took: bool = sqlx::query_scalar(
            "SELECT pg_try_advisory_lock($1) FROM (SELECT set_config('application_name', $2, false)) named",
        )
        .bind(LEASE_KEY)
        .bind(self.name())
        .fetch_one(&mut conn)
        .await
        .map_err(|e| self.err(e))?;
        if took {
            return Ok(Some(self.held(conn)));
        }
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            // Delivered when this statement commits, so before the wait below begins. Without
            // the key (never, once the engine is open) nobody would listen to an unsigned one.
            if let Some(requests) = self.requests.get() {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(LEASE_CHANNEL)
                    .bind(requests.make(&self.me, unix_now()))
                    .execute(&mut conn)
                    .await
                    .map_err(|e| self.err(e))?;
            }
            let waited = sqlx::query("SELECT pg_advisory_lock($1)")
                .bind(LEASE_KEY)
                .execute(&mut conn)
                .await;
            match waited {
                Ok(_) => return Ok(Some(self.held(conn))),
                Err(sqlx::Error::Database(db))
                    if db.code().as_deref() == Some(LOCK_NOT_AVAILABLE) =>
                {
                    if tokio::time::Instant::now() >= deadline {
                        *self.idle.lock().await = Some(conn);
                        return Ok(None);
                    }
                }
                Err(e) => return Err(self.err(e)),
            }
        }
    }

    fn wanted(&self) -> watch::Receiver<u64> {
        self.wanted.clone()
    }

    fn sign_requests_with(&self, key: &super::LogKey) {
        let _ = self.requests.set(Requests::new(key.derive(REQUEST_LABEL)));
    }

    fn advertise(&self, url: &str) -> Result<(), String> {
        let name = format!("{NAME_PREFIX} {} {url}", self.me);
        if name.len() > NAME_MAX || url.contains(char::is_whitespace) || !url.is_ascii() {
            return Err(format!(
                "PostgreSQL keeps the address of the replica that writes in the name of a \
                 connection, which holds at most {} bytes of an address without spaces; {url} \
                 does not fit",
                NAME_MAX - NAME_PREFIX.len() - self.me.len() - 2
            ));
        }
        *self.name.lock().unwrap_or_else(|e| e.into_inner()) = name;
        Ok(())
    }

    async fn holder(&self) -> Result<Option<LeaseHolder>, StoreError> {
        // An advisory lock on a bigint key is listed with its high half as `classid`, its low
        // half as `objid`, and `objsubid` 1.
        let row: Option<(Option<String>, bool)> = sqlx::query_as(
            "SELECT a.application_name, a.client_addr IS NOT DISTINCT FROM inet_client_addr() \
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
               AND l.classid = ($1::bigint)::oid AND l.objid = ($2::bigint)::oid \
               AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             LIMIT 1",
        )
        .bind(LEASE_KEY >> 32)
        .bind(LEASE_KEY & 0xffff_ffff)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err(&self.shown, "ask who holds the writer's lease on", e))?;
        let Some((name, same_host)) = row else {
            return Ok(None);
        };
        // Named by another program, or not visible to this role: held, by nobody it can name.
        let mut words = name.as_deref().unwrap_or_default().split(' ');
        let (prefix, me, url) = (words.next(), words.next(), words.next());
        if prefix != Some(NAME_PREFIX) {
            return Ok(Some(LeaseHolder {
                mine: false,
                url: None,
            }));
        }
        // A loopback address is the holder's only for a process on its machine (whose
        // connection to the database comes from the same address).
        let reachable = |url: &&str| {
            same_host
                || ![
                    "http://127.",
                    "http://[::1]",
                    "http://localhost",
                    "https://127.",
                    "https://[::1]",
                    "https://localhost",
                ]
                .iter()
                .any(|local| url.starts_with(local))
        };
        Ok(Some(LeaseHolder {
            mine: me == Some(self.me.as_str()),
            url: url
                .filter(|u| !u.is_empty())
                .filter(reachable)
                .map(str::to_owned),
        }))
    }
}

/// The lease, held on `conn`.
struct PgHeld {
    conn: Option<PgConnection>,
    /// Where the connection goes back to once the lease is given up.
    home: Arc<Mutex<Option<PgConnection>>>,
}

#[async_trait]
impl HeldLease for PgHeld {
    async fn release(mut self: Box<Self>) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let unlocked = sqlx::query_scalar::<_, bool>("SELECT pg_advisory_unlock($1)")
            .bind(LEASE_KEY)
            .fetch_one(&mut conn)
            .await;
        match unlocked {
            Ok(_) => *self.home.lock().await = Some(conn),
            // The connection is broken: dropping it frees the lock once the server notices.
            Err(e) => tracing::debug!(%e, "giving the writer's lease up"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(key: &str) -> Requests {
        Requests::new(super::super::LogKey::from_bytes(key).derive(REQUEST_LABEL))
    }

    #[test]
    fn only_a_replica_holding_the_log_key_moves_the_lease_and_only_once() {
        let (ours, theirs) = (requests("the log key"), requests("another log key"));
        let now = 1_800_000_000;
        let asked = ours.make("aaaa0001", now);
        // Another replica of the deployment asking: heard once, never again (a replay).
        assert!(ours.genuine(&asked, "bbbb0002", now));
        assert!(!ours.genuine(&asked, "bbbb0002", now));
        // Its own request, one signed with another key, one expired, made up or altered.
        assert!(!ours.genuine(&ours.make("bbbb0002", now), "bbbb0002", now));
        assert!(!ours.genuine(&theirs.make("aaaa0001", now), "bbbb0002", now));
        let late = now + REQUEST_VALID.as_secs() + CLOCK_DRIFT.as_secs() + 1;
        assert!(!ours.genuine(&ours.make("aaaa0001", now), "bbbb0002", late));
        let early = now - REQUEST_VALID.as_secs() - CLOCK_DRIFT.as_secs() - 1;
        assert!(!ours.genuine(&ours.make("aaaa0001", now), "bbbb0002", early));
        for forged in ["evil", "aaaa0001", "", "a b c d e"] {
            assert!(!ours.genuine(forged, "bbbb0002", now), "{forged}");
        }
        let fresh = ours.make("aaaa0001", now);
        let altered = fresh.replacen("aaaa0001", "cccc0003", 1);
        assert!(!ours.genuine(&altered, "bbbb0002", now));
        assert!(ours.genuine(&fresh, "bbbb0002", now));
    }
}
