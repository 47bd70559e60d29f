//! Writes received by a replica that does not hold the writer's lease are sent on to the one
//! that does (see `engine::lease`), so that one process decides every write.
//!
//! Who holds the lease is read from PostgreSQL (`store::postgres_lease`), which anyone with a
//! database login can pose as. So nothing a client entrusted to this replica goes further than
//! to a replica that proved it holds the deployment's keys, and what the holder is sent is no
//! credential:
//!
//! - **The holder is challenged first.** Before the first write goes to an address, this
//!   replica asks it ([`CHALLENGE_PATH`]) to sign a fresh nonce together with its own advertised
//!   address, with a key derived from the log key (the one secret every replica of a deployment
//!   is sure to share; token secrets may differ). An impostor learns nothing and gets nothing:
//!   the write is made here, taking the lease, or, when the lease cannot be had, without it.
//!   A replica that relays the challenge to a genuine one gets a signature over the genuine
//!   one's address, not its own.
//! - **The caller is vouched for, not passed on.** The client's bearer token is checked here,
//!   and the holder is sent the verified claims (subject, scopes, expiry…), signed for this one
//!   request: the HMAC covers the holder's address, method, path and query, a digest of the
//!   body, the claims, a nonce and an expiry ([`FORWARDED`]). The holder refuses one that is
//!   forged, expired, meant for another address, seen before (nonces are kept for as long as
//!   they could count) or whose body is not the one signed. `Authorization`, cookies and every
//!   header not on a short list ([`PASSED_ON`]) stay here.
//! - **Keys never leave.** Operations that carry a customer's key (`encrypt-data`,
//!   `decrypt-data`, [`KEY_BEARING`], or any body naming an `encryption_key`) are never
//!   forwarded, over http or https: this replica makes them itself (taking the lease to write,
//!   which moves it here for a moment). They are slow by design (Argon2id), so the lease's
//!   round trips are a small part of their cost, and the key crosses no link it was not sent
//!   over.
//! - **The answer is signed too** ([`ANSWER`]: HMAC over the request's nonce, the status, the
//!   `Content-Type` and `Location` headers and the body). An answer without a valid signature is
//!   never passed back: the client is told the write may or may not have been made (503).
//!
//! [`forward`] sits inside the address rate limit and the request timeout, before everything
//! else; [`mark`], outside the address rate limit, checks a forwarded request and signs its
//! answer: the holder's rate limit and idempotency apply to the vouched-for caller, and the
//! address rate limit was applied by the replica that received it.
//!
//! When the holder cannot be reached at all, the write is made here (this process takes the
//! lease); when it was reached but did not answer, the write may have been made, so the client
//! is told to retry (with an Idempotency-Key, a retry is safe).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::problem::Problem;
use super::routes::table::Operation;
use super::{Onward, Sessions};
use crate::auth::{Authenticated, Claims, Scopes, Verifier};
use crate::engine::access_log::Handover;
use crate::error::ServiceError;
use crate::store::chain::{hex, unhex};

/// The header of a request forwarded by another replica:
/// `<expiry>.<nonce>.<body digest>.<claims>.<HMAC>` (see [`Keys::request`]).
pub(super) const FORWARDED: HeaderName = HeaderName::from_static("x-chronoscope-forwarded");
/// The header of the holder's answer to a forwarded request: its HMAC (see [`Keys::answer`]).
pub(super) const ANSWER: HeaderName = HeaderName::from_static("x-chronoscope-answer");
/// The nonce a replica is challenged with, and the header of its answer.
const CHALLENGE: HeaderName = HeaderName::from_static("x-chronoscope-challenge");
const PROOF: HeaderName = HeaderName::from_static("x-chronoscope-replica");
/// Where a replica answers a challenge (answered by [`forward`], not a route of the API).
pub(super) const CHALLENGE_PATH: &str = "/replica/challenge";
/// What the keys are derived for from the log key (see `LogKey::derive`).
const REQUEST_LABEL: &str = "chronoscope: a write forwarded to the holder of the writer's lease";
const ANSWER_LABEL: &str =
    "chronoscope: the answer of the writer's lease holder to a forwarded write";
const CHALLENGE_LABEL: &str = "chronoscope: a replica proving where it takes forwarded writes";
/// Where a replica hands its access-log counts to the writer's lease holder (answered by
/// [`forward`] to a request signed like a forwarded write, not a route of the API).
pub(super) const ACCESS_COUNTS_PATH: &str = "/replica/access-counts";
/// The caller a replica names in its own signed requests (the access-log counts).
const REPLICA_CALLER: &str = "chronoscope-replica";
/// The largest access-log handover taken (`access_log::FLUSH_KEYS` counters fit well within).
const HANDOVER_LIMIT: usize = 16 << 20;
/// Operations whose body carries a customer's key: never forwarded.
pub(super) const KEY_BEARING: &[&str] = &["/v1/encrypt-data", "/v1/decrypt-data"];
/// A body naming this field is never forwarded either, whatever its route.
const KEY_FIELD: &[u8] = b"encryption_key";
/// The only request headers passed on to the holder (besides [`FORWARDED`] and the body's
/// length): what the holder needs to answer as this replica would. Never `Authorization`,
/// `Cookie` or anything else a client may put a secret in.
const PASSED_ON: [HeaderName; 5] = [
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::USER_AGENT,
    HeaderName::from_static("idempotency-key"),
    HeaderName::from_static("x-request-id"),
];
/// How long a forwarded request counts once signed.
const VALID_FOR: Duration = Duration::from_secs(30);
/// How far apart the replicas' clocks may be for their requests to count.
const CLOCK_DRIFT: Duration = Duration::from_secs(30);
/// How long a holder that answered a challenge is trusted at that address before being
/// challenged again (its answers are checked every time), and how long one that did not is
/// written around before it is asked again.
const PROVEN_FOR: Duration = Duration::from_secs(10);
const DISPROVEN_FOR: Duration = Duration::from_secs(1);
/// How long connecting to the holder may take before the write is made here instead.
const CONNECT_LIMIT: Duration = Duration::from_secs(1);
/// How long a challenged holder may take to answer: a genuine one answers at once, and one
/// that keeps the connection open without answering must not hold writes up for long.
const CHALLENGE_LIMIT: Duration = Duration::from_secs(2);

/// A request forwarded by another replica, checked by [`mark`]: who the caller is, as that
/// replica verified, and what [`forward`] still checks (the body) and [`mark`] signs.
#[derive(Clone, Debug)]
pub(super) struct Forwarded {
    nonce: String,
    body_digest: String,
}

/// The keys the replicas prove things to each other with, each derived from the log key.
struct Keys {
    request: [u8; 32],
    answer: [u8; 32],
    challenge: [u8; 32],
}

fn mac(key: &[u8; 32], label: &str, fields: &[&str]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(label.as_bytes());
    for field in fields {
        // Every field is text without line breaks (header values, URIs, hex, base64).
        mac.update(b"\n");
        mac.update(field.as_bytes());
    }
    mac
}

/// A forwarded request's signed fields.
struct Signed<'a> {
    to: &'a str,
    method: &'a str,
    target: &'a str,
    body_digest: &'a str,
    claims: &'a str,
    expires: &'a str,
    nonce: &'a str,
}

impl Keys {
    fn of(sessions: &dyn Sessions) -> Option<Self> {
        Some(Self {
            request: sessions.replica_key(REQUEST_LABEL)?,
            answer: sessions.replica_key(ANSWER_LABEL)?,
            challenge: sessions.replica_key(CHALLENGE_LABEL)?,
        })
    }

    fn request(&self, s: &Signed<'_>) -> Hmac<Sha256> {
        mac(
            &self.request,
            REQUEST_LABEL,
            &[
                s.to,
                s.method,
                s.target,
                s.body_digest,
                s.claims,
                s.expires,
                s.nonce,
            ],
        )
    }

    fn answer(
        &self,
        nonce: &str,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Hmac<Sha256> {
        let header = |name: header::HeaderName| {
            headers.get(name).map_or_else(String::new, |v| {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            })
        };
        mac(
            &self.answer,
            ANSWER_LABEL,
            &[
                nonce,
                status.as_str(),
                &header(header::CONTENT_TYPE),
                &header(header::LOCATION),
                &hex(&Sha256::digest(body)),
            ],
        )
    }

    /// The [`FORWARDED`] header for `caller`'s request (`method`, `target`, `body`) sent to
    /// `to` at `now` (unix seconds), and its nonce.
    fn sign(
        &self,
        to: &str,
        method: &Method,
        target: &str,
        body: &[u8],
        caller: &Claims,
        now: u64,
    ) -> Option<(HeaderValue, String)> {
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(serde_json::to_vec(caller).ok()?);
        let nonce = hex(&rand::random::<[u8; 16]>());
        let expires = (now + VALID_FOR.as_secs()).to_string();
        let body_digest = hex(&Sha256::digest(body));
        let tag = self
            .request(&Signed {
                to,
                method: method.as_str(),
                target,
                body_digest: &body_digest,
                claims: &claims,
                expires: &expires,
                nonce: &nonce,
            })
            .finalize()
            .into_bytes();
        let mut value = HeaderValue::from_str(&format!(
            "{expires}.{nonce}.{body_digest}.{claims}.{}",
            hex(&tag)
        ))
        .ok()?;
        value.set_sensitive(true);
        Some((value, nonce))
    }

    fn challenge(&self, at: &str, nonce: &str) -> Hmac<Sha256> {
        mac(&self.challenge, CHALLENGE_LABEL, &[at, nonce])
    }
}

/// What is known of the holder last challenged.
struct Proven {
    url: Arc<str>,
    genuine: bool,
    at: Instant,
}

/// What [`forward`] and [`mark`] need. Cloned by the layers in front of it for every request,
/// so a clone is one reference count (a profile found the fields' clones, the nonce cache's
/// several, among the request path's costliest lines).
#[derive(Clone)]
pub(super) struct Forwarding(Arc<Shared>);

impl std::ops::Deref for Forwarding {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The state behind a [`Forwarding`].
pub(super) struct Shared {
    sessions: Arc<dyn Sessions>,
    verifier: Arc<Verifier>,
    http: Option<reqwest::Client>,
    keys: Option<Arc<Keys>>,
    /// Nonces of the forwarded requests taken, kept until they could no longer count.
    seen: moka::sync::Cache<String, ()>,
    proven: Arc<Mutex<Option<Proven>>>,
    /// Held while a holder is challenged, so one write challenges at a time.
    challenging: Arc<tokio::sync::Mutex<()>>,
    body_limit: usize,
}

impl Forwarding {
    /// Forwarding for `sessions`; `replica_ca` (PEM) is trusted, besides the platform's roots,
    /// for holders advertised at an https address.
    pub(super) fn new(
        sessions: Arc<dyn Sessions>,
        verifier: Arc<Verifier>,
        body_limit: usize,
        request_timeout: Duration,
        replica_ca: Option<&[u8]>,
    ) -> Self {
        crate::tls::install_default_provider();
        // No proxy is used, and a redirect is passed back, never followed.
        let mut http = reqwest::Client::builder()
            .connect_timeout(CONNECT_LIMIT)
            .timeout(request_timeout)
            .tcp_nodelay(true)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none());
        if let Some(pem) = replica_ca {
            match reqwest::Certificate::from_pem_bundle(pem) {
                Ok(certs) => http = http.tls_certs_merge(certs),
                Err(e) => tracing::warn!(%e, "the replicas' CA certificate cannot be used"),
            }
        }
        let http = http
            .build()
            .inspect_err(|e| {
                tracing::warn!(%e, "cannot set up forwarding writes; every write is made here");
            })
            .ok();
        let keys = Keys::of(sessions.as_ref()).map(Arc::new);
        Self(Arc::new(Shared {
            sessions,
            verifier,
            http,
            keys,
            seen: moka::sync::Cache::builder()
                .max_capacity(1_000_000)
                .time_to_live(VALID_FOR + CLOCK_DRIFT * 2)
                .build(),
            proven: Arc::default(),
            challenging: Arc::default(),
            body_limit,
        }))
    }

    /// Checks the [`FORWARDED`] header `given` of a request for `method` and `target` sent to
    /// this replica at `now` (unix seconds): the caller it vouches for, or why it is refused.
    fn check(
        &self,
        method: &Method,
        target: &str,
        given: &HeaderValue,
        now: u64,
    ) -> Result<(Forwarded, Authenticated), &'static str> {
        let (Some(keys), Some(me)) = (&self.keys, self.sessions.advertised()) else {
            return Err("this replica takes no forwarded writes (it gave no address)");
        };
        let given = given.to_str().map_err(|_| "it is not text")?;
        let mut fields = given.split('.');
        let (Some(expires), Some(nonce), Some(body_digest), Some(claims), Some(tag), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err("it is malformed");
        };
        let tag = unhex(tag).ok_or("it is malformed")?;
        let signed = Signed {
            to: &me,
            method: method.as_str(),
            target,
            body_digest,
            claims,
            expires,
            nonce,
        };
        keys.request(&signed).verify_slice(&tag).map_err(
            |_| "its signature does not match (forged, altered, or meant for another replica)",
        )?;
        let expires: u64 = expires.parse().map_err(|_| "it is malformed")?;
        let drift = CLOCK_DRIFT.as_secs();
        if expires.saturating_add(drift) < now {
            return Err("it expired");
        }
        if expires > now + VALID_FOR.as_secs() + drift {
            return Err("it expires too late to be genuine");
        }
        let claims: Claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(claims)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or("its caller is malformed")?;
        let traveller = claims.sub.parse().map_err(|_| "its caller is malformed")?;
        // Last, so that only a request otherwise sound uses its nonce up.
        if !self.seen.entry(nonce.to_owned()).or_insert(()).is_fresh() {
            return Err("it was received before (a replay)");
        }
        Ok((
            Forwarded {
                nonce: nonce.to_owned(),
                body_digest: body_digest.to_owned(),
            },
            Authenticated {
                traveller,
                scopes: Scopes::parse(&claims.scope),
                claims,
            },
        ))
    }

    /// Whether the replica named as the lease's holder at `to` proves it is one of this
    /// deployment's, at that address (asked at most every [`PROVEN_FOR`], or
    /// [`DISPROVEN_FOR`] after it did not).
    async fn genuine(&self, http: &reqwest::Client, keys: &Keys, to: &Arc<str>) -> bool {
        let known = || {
            let proven = self.proven.lock().unwrap_or_else(|e| e.into_inner());
            proven.as_ref().filter(|p| p.url == *to).and_then(|p| {
                let fresh = p.at.elapsed() < if p.genuine { PROVEN_FOR } else { DISPROVEN_FOR };
                fresh.then_some(p.genuine)
            })
        };
        if let Some(genuine) = known() {
            return genuine;
        }
        let _one = self.challenging.lock().await;
        if let Some(genuine) = known() {
            return genuine;
        }
        let nonce = hex(&rand::random::<[u8; 16]>());
        let answer = http
            .get(format!("{to}{CHALLENGE_PATH}"))
            .header(CHALLENGE, &nonce)
            .timeout(CHALLENGE_LIMIT)
            .send()
            .await;
        let genuine = match answer {
            Ok(answer) => {
                let proof = answer
                    .headers()
                    .get(&PROOF)
                    .and_then(|v| v.to_str().ok())
                    .and_then(unhex);
                let genuine = answer.status() == StatusCode::NO_CONTENT
                    && proof.is_some_and(|proof| {
                        keys.challenge(to, &nonce).verify_slice(&proof).is_ok()
                    });
                if !genuine {
                    tracing::warn!(
                        %to,
                        "the process named as holder of the writer's lease did not prove it is \
                         a replica of this deployment (a database login can pose as one); \
                         writes are made here instead of being sent to it"
                    );
                }
                genuine
            }
            Err(e) => {
                tracing::debug!(%e, %to, "the writer's lease holder is not there; writing here");
                false
            }
        };
        *self.proven.lock().unwrap_or_else(|e| e.into_inner()) = Some(Proven {
            url: Arc::clone(to),
            genuine,
            at: Instant::now(),
        });
        genuine
    }
}

/// Seconds since the epoch: forwarded requests expire by the wall clock the replicas share
/// (within [`CLOCK_DRIFT`]).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn refused(why: &str) -> Response {
    Problem::from_error(ServiceError::Forbidden(format!(
        "this request claims to be a write forwarded by a replica of this deployment, but {why}: \
         call with a bearer token and without the {FORWARDED} header"
    )))
    .into_response()
}

/// Outside the address rate limit: checks a request forwarded by another replica, lets the
/// caller it vouches for through as authenticated, and signs the answer.
pub(super) async fn mark(
    State(f): State<Forwarding>,
    mut req: Request,
    next: impl Onward,
) -> Response {
    let Some(given) = req.headers().get(&FORWARDED) else {
        return next.run(req).await;
    };
    let target = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let (forwarded, caller) = match f.check(req.method(), target, given, unix_now()) {
        Ok(checked) => checked,
        Err(why) => {
            tracing::warn!(why, "a request posing as a forwarded write was refused");
            return refused(why);
        }
    };
    let nonce = forwarded.nonce.clone();
    req.extensions_mut().insert(caller);
    req.extensions_mut().insert(forwarded);
    let answer = next.run(req).await;
    let Some(keys) = &f.keys else {
        return answer;
    };
    let (mut parts, body) = answer.into_parts();
    let Ok(body) = to_bytes(body, usize::MAX).await else {
        return Problem::unavailable("the answer to a forwarded write could not be read")
            .into_response();
    };
    let tag = keys
        .answer(&nonce, parts.status, &parts.headers, &body)
        .finalize()
        .into_bytes();
    if let Ok(tag) = HeaderValue::from_str(&hex(&tag)) {
        parts.headers.insert(ANSWER, tag);
    }
    Response::from_parts(parts, Body::from(body))
}

/// Whether a write is made here whatever holds the lease: it carries a customer's key.
fn key_bearing(path: &str, body: &[u8]) -> bool {
    KEY_BEARING.contains(&path) || body.windows(KEY_FIELD.len()).any(|w| w == KEY_FIELD)
}

/// Answers a challenge: this replica's proof that it is one of this deployment's, at the
/// address it advertises.
fn answer_challenge(f: &Forwarding, headers: &HeaderMap) -> Response {
    let nonce = headers
        .get(&CHALLENGE)
        .and_then(|v| v.to_str().ok())
        .filter(|n| n.len() == 32 && unhex(n).is_some());
    match (&f.keys, f.sessions.advertised(), nonce) {
        (Some(keys), Some(me), Some(nonce)) => {
            let tag = keys.challenge(&me, nonce).finalize().into_bytes();
            let mut answer = StatusCode::NO_CONTENT.into_response();
            if let Ok(tag) = HeaderValue::from_str(&hex(&tag)) {
                answer.headers_mut().insert(PROOF, tag);
            }
            answer
        }
        _ => Problem::from_error(ServiceError::not_found("path", CHALLENGE_PATH)).into_response(),
    }
}

/// Sends a write on to the holder of the writer's lease when that is another replica that
/// proves it is one; checks the body of a write forwarded here.
pub(super) async fn forward(
    State(f): State<Forwarding>,
    req: Request,
    next: impl Onward,
) -> Response {
    if let Some(forwarded) = req.extensions().get::<Forwarded>().cloned() {
        if req.uri().path() == ACCESS_COUNTS_PATH && req.method() == Method::POST {
            return receive_counts(&f, &forwarded, req).await;
        }
        return body_checked(&f, &forwarded, req, next).await;
    }
    if req.uri().path() == CHALLENGE_PATH && req.method() == Method::GET {
        return answer_challenge(&f, req.headers());
    }
    // The table says what writes (a GET may, a POST may only read); a request that matched
    // no route is answered here (404, 405).
    let write = req
        .extensions()
        .get::<Arc<Operation>>()
        .is_some_and(|op| op.does.writes);
    if !write || KEY_BEARING.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let (Some(http), Some(keys)) = (&f.http, &f.keys) else {
        return next.run(req).await;
    };
    let Some(to) = f.sessions.forward_writes_to().await else {
        return next.run(req).await;
    };
    let (parts, body) = req.into_parts();
    // Only a caller this replica verified is vouched for; any other request is answered here
    // (with the 401 it deserves).
    let caller = match Authenticated::from_parts(&parts, &f.verifier) {
        Ok(caller) => caller,
        Err(_) => return next.run(Request::from_parts(parts, body)).await,
    };
    let Ok(bytes) = to_bytes(body, f.body_limit).await else {
        return Problem::body_too_large().into_response();
    };
    let here = |mut parts: axum::http::request::Parts, bytes: Bytes, caller: Authenticated| {
        parts.extensions.insert(caller);
        next.run(Request::from_parts(parts, Body::from(bytes)))
    };
    // A customer's key stays here; a holder that does not prove it is a replica of this
    // deployment is sent nothing, and written around until it is asked again.
    if key_bearing(parts.uri.path(), &bytes) {
        return here(parts, bytes, caller).await;
    }
    if !f.genuine(http, keys, &to).await {
        f.sessions.forward_failed(&to);
        return here(parts, bytes, caller).await;
    }
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    let Some((signed, nonce)) = keys.sign(
        &to,
        &parts.method,
        &target,
        &bytes,
        &caller.claims,
        unix_now(),
    ) else {
        return here(parts, bytes, caller).await;
    };
    let mut headers = HeaderMap::new();
    for name in PASSED_ON {
        for value in parts.headers.get_all(&name) {
            headers.append(name.clone(), value.clone());
        }
    }
    headers.insert(FORWARDED, signed);
    let sent = http
        .request(parts.method.clone(), format!("{to}{target}"))
        .headers(headers)
        .body(bytes.clone())
        .send()
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(e) if e.is_connect() => {
            // Nobody there (it stopped, or is starting again): made here, taking the lease.
            tracing::debug!(%e, %to, "the writer's lease holder is not there; writing here");
            f.sessions.forward_failed(&to);
            return here(parts, bytes, caller).await;
        }
        Err(e) => return lost(&f, &to, &e.to_string()),
    };
    let status = answer.status();
    let mut relayed = answer.headers().clone();
    let body = match answer.bytes().await {
        Ok(body) => body,
        Err(e) => return lost(&f, &to, &e.to_string()),
    };
    let proof = relayed
        .remove(&ANSWER)
        .and_then(|v| v.to_str().ok().and_then(unhex));
    let signed = proof.is_some_and(|proof| {
        keys.answer(&nonce, status, &relayed, &body)
            .verify_slice(&proof)
            .is_ok()
    });
    if !signed {
        return lost(
            &f,
            &to,
            "its answer is not signed by a replica of this deployment",
        );
    }
    metrics::counter!(crate::metrics::WRITES_FORWARDED).increment(1);
    for hop in [
        header::CONNECTION,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
    ] {
        relayed.remove(hop);
    }
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = relayed;
    response
}

/// Takes another replica's access-log counts (see [`Forwarding::courier`]), with the body its
/// signature covers.
async fn receive_counts(f: &Forwarding, forwarded: &Forwarded, req: Request) -> Response {
    let bytes = match signed_body(forwarded, req.into_body(), HANDOVER_LIMIT).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    match serde_json::from_slice::<Handover>(&bytes) {
        Ok(handed) => {
            f.sessions.receive_access_counts(handed);
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => Problem::invalid("body", format!("these are not access-log counts: {e}"))
            .into_response(),
    }
}

/// Takes this replica's access-log counts to the writer's lease holder while another replica
/// holds it, so that reading and refusing never move the lease (see `access_log::Handover`).
/// Holds the forwarding weakly: the engine keeps the courier, and the forwarding the engine.
struct Courier(std::sync::Weak<Shared>);

impl crate::engine::access_log::Courier for Courier {
    fn deliver(&self, counts: Handover) -> futures::future::BoxFuture<'static, Result<(), String>> {
        let shared = self.0.clone();
        Box::pin(async move {
            let f = Forwarding(shared.upgrade().ok_or("the server is stopping")?);
            f.hand_over(&counts).await
        })
    }
}

impl Forwarding {
    /// The courier of this replica's access-log counts, when it can reach other replicas.
    pub(super) fn courier(&self) -> Option<Arc<dyn crate::engine::access_log::Courier>> {
        self.http.as_ref()?;
        self.keys.as_ref()?;
        Some(Arc::new(Courier(Arc::downgrade(&self.0))))
    }

    /// Hands `counts` to the replica holding the writer's lease, once it proves it is one;
    /// `Ok` once it answered that it took them, signed.
    async fn hand_over(&self, counts: &Handover) -> Result<(), String> {
        let (Some(http), Some(keys)) = (&self.http, &self.keys) else {
            return Err("this replica does not talk to the others".into());
        };
        let to = self
            .sessions
            .forward_writes_to()
            .await
            .ok_or("no other replica holds the writer's lease")?;
        if !self.genuine(http, keys, &to).await {
            return Err(format!(
                "{to} did not prove it is a replica of this deployment"
            ));
        }
        let body = serde_json::to_vec(counts).map_err(|e| e.to_string())?;
        let now = unix_now();
        let caller = Claims {
            sub: REPLICA_CALLER.into(),
            exp: now + VALID_FOR.as_secs(),
            iat: now,
            scope: String::new(),
        };
        let (signed, nonce) = keys
            .sign(&to, &Method::POST, ACCESS_COUNTS_PATH, &body, &caller, now)
            .ok_or("the counts could not be signed")?;
        let answer = http
            .post(format!("{to}{ACCESS_COUNTS_PATH}"))
            .header(FORWARDED, signed)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = answer.status();
        let headers = answer.headers().clone();
        let body = answer.bytes().await.map_err(|e| e.to_string())?;
        let signed = headers
            .get(&ANSWER)
            .and_then(|v| v.to_str().ok().and_then(unhex))
            .is_some_and(|proof| {
                keys.answer(&nonce, status, &headers, &body)
                    .verify_slice(&proof)
                    .is_ok()
            });
        match (signed, status) {
            (true, StatusCode::NO_CONTENT) => Ok(()),
            (true, status) => Err(format!("{to} answered {status}")),
            (false, _) => Err(format!("{to}'s answer is not signed by a replica")),
        }
    }
}

/// A write forwarded here goes on only with the body its signature covers.
async fn body_checked(
    f: &Forwarding,
    forwarded: &Forwarded,
    req: Request,
    next: impl Onward,
) -> Response {
    let (parts, body) = req.into_parts();
    match signed_body(forwarded, body, f.body_limit).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(refusal) => refusal,
    }
}

/// The body of a request another replica signed, read up to `limit`, if it is the one signed.
async fn signed_body(forwarded: &Forwarded, body: Body, limit: usize) -> Result<Bytes, Response> {
    let Ok(bytes) = to_bytes(body, limit).await else {
        return Err(Problem::body_too_large().into_response());
    };
    if hex(&Sha256::digest(&bytes)) != forwarded.body_digest {
        tracing::warn!("a forwarded request whose body is not the one signed was refused");
        return Err(refused("its body is not the one signed"));
    }
    Ok(bytes)
}

/// The holder was reached but its answer did not come back whole and signed: the write may
/// have been made, so it is not made here.
fn lost(f: &Forwarding, to: &str, e: &str) -> Response {
    tracing::warn!(%e, %to, "a write forwarded to the writer's lease holder got no answer");
    f.sessions.forward_failed(to);
    Problem::unavailable(
        "the replica that makes writes did not answer, so this write may or may not have been \
         made: retry it (with the same Idempotency-Key header, a retry is safe)",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::middleware;
    use axum::routing::post;
    use tower::ServiceExt;

    use super::*;
    use crate::auth::Secret;

    /// Sessions for the holder's side: a log key, an address, no engine.
    struct Replica {
        log_key: crate::store::LogKey,
        at: &'static str,
    }

    impl Sessions for Replica {
        fn session(
            &self,
            _: crate::model::Traveller,
            _: Option<crate::engine::idempotency::Idempotency>,
            _: &crate::auth::Scopes,
        ) -> Arc<dyn crate::service::TimelineService> {
            unreachable!("not asked for a session")
        }

        fn replica_key(&self, label: &str) -> Option<[u8; 32]> {
            Some(self.log_key.derive(label))
        }

        fn advertised(&self) -> Option<Arc<str>> {
            Some(Arc::from(self.at))
        }
    }

    const HOLDER: &str = "http://10.0.0.5:8080";

    fn forwarding(log_key: &str, at: &'static str) -> Forwarding {
        let secret = Secret::from_bytes("this replica's own token secret, not shared")
            .unwrap_or_else(|e| panic!("{e}"));
        Forwarding::new(
            Arc::new(Replica {
                log_key: crate::store::LogKey::from_bytes(log_key),
                at,
            }),
            Arc::new(Verifier::new(secret)),
            1024,
            Duration::from_secs(1),
            None,
        )
    }

    fn claims(sub: &str, scope: &str) -> Claims {
        serde_json::from_value(serde_json::json!({
            "sub": sub, "exp": 4_000_000_000u64, "iat": 1, "scope": scope
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The header a replica sends `to` for `POST /v1/items` with `body`, at `now`.
    fn signed(from: &Forwarding, to: &str, body: &[u8], now: u64) -> HeaderValue {
        let keys = from.keys.as_deref().unwrap_or_else(|| panic!("no keys"));
        keys.sign(
            to,
            &Method::POST,
            "/v1/items?view=full",
            body,
            &claims("marty", "read write"),
            now,
        )
        .unwrap_or_else(|| panic!("not signed"))
        .0
    }

    /// The holder: checks forwarded writes, answers with who it was told called.
    fn holder(f: &Forwarding) -> Router {
        async fn who(req: Request) -> String {
            req.extensions().get::<Authenticated>().map_or_else(
                || "nobody".to_owned(),
                |a| format!("{} {}", a.traveller.as_str(), a.scopes.to_claim()),
            )
        }
        Router::new()
            .route("/v1/items", post(who))
            .layer(middleware::from_fn_with_state(f.clone(), forward))
            .layer(middleware::from_fn_with_state(f.clone(), mark))
    }

    async fn send(
        router: &Router,
        header: Option<HeaderValue>,
        body: &'static [u8],
    ) -> (StatusCode, String, bool) {
        let mut req = Request::post("/v1/items?view=full");
        if let Some(header) = header {
            req = req.header(FORWARDED, header);
        }
        let req = req.body(Body::from(body)).unwrap_or_else(|e| panic!("{e}"));
        let answer = router
            .clone()
            .oneshot(req)
            .await
            .unwrap_or_else(|e| match e {});
        let status = answer.status();
        let signed = answer.headers().contains_key(&ANSWER);
        let body = to_bytes(answer.into_body(), 1 << 16)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        (status, String::from_utf8_lossy(&body).into_owned(), signed)
    }

    #[tokio::test]
    async fn a_forwarded_caller_is_taken_once_and_only_as_signed() {
        // Replicas with different token secrets but one log key vouch for each other.
        let (sender, at_holder) = (
            forwarding("log key", "http://10.0.0.6:8080"),
            forwarding("log key", HOLDER),
        );
        let router = holder(&at_holder);
        let body: &[u8] = br#"{"description":"a hoverboard"}"#;
        let now = unix_now();

        let genuine = signed(&sender, HOLDER, body, now);
        let (status, who, signed_answer) = send(
            &router,
            Some(genuine.clone()),
            b"{\"description\":\"a hoverboard\"}",
        )
        .await;
        assert_eq!((status, who.as_str()), (StatusCode::OK, "marty read write"));
        assert!(signed_answer, "the holder signs its answer");

        // The same request again: a replay.
        let (status, why, _) = send(
            &router,
            Some(genuine),
            b"{\"description\":\"a hoverboard\"}",
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{why}");
        assert!(why.contains("replay"), "{why}");

        // A body swapped after signing.
        let fresh = signed(&sender, HOLDER, body, now);
        let (status, why, _) =
            send(&router, Some(fresh), b"{\"description\":\"a DeLorean\"}").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{why}");
        assert!(why.contains("body"), "{why}");

        // Expired (signed long ago), and signed for too far ahead.
        let old = signed(&sender, HOLDER, body, now - 3600);
        let (status, why, _) =
            send(&router, Some(old), b"{\"description\":\"a hoverboard\"}").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{why}");
        assert!(why.contains("expired"), "{why}");
        let ahead = signed(&sender, HOLDER, body, now + 3600);
        let (status, _, _) =
            send(&router, Some(ahead), b"{\"description\":\"a hoverboard\"}").await;
        assert_eq!(status, StatusCode::FORBIDDEN);

        // Signed with another deployment's log key, meant for another replica, or altered.
        let stranger = forwarding("another log key", "http://10.0.0.6:8080");
        let forged = signed(&stranger, HOLDER, body, now);
        let elsewhere = signed(&sender, "http://10.0.0.7:8080", body, now);
        let text = signed(&sender, HOLDER, body, now)
            .to_str()
            .unwrap_or_else(|e| panic!("{e}"))
            .to_owned();
        // Another caller put in place of the signed one: the operator, say.
        let mut fields: Vec<&str> = text.split('.').collect();
        let admin = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(serde_json::to_vec(&claims("marty", "read write admin")).unwrap_or_default());
        fields[3] = &admin;
        let altered = HeaderValue::from_str(&fields.join(".")).unwrap_or_else(|e| panic!("{e}"));
        for (what, header) in [
            ("another log key", forged),
            ("another replica", elsewhere),
            ("another caller", altered),
            ("garbage", HeaderValue::from_static("1")),
        ] {
            let (status, why, signed_answer) =
                send(&router, Some(header), b"{\"description\":\"a hoverboard\"}").await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {why}");
            assert!(!why.contains("marty"), "{what}: {why}");
            assert!(
                !signed_answer,
                "{what}: a refusal made before checking is not signed"
            );
        }

        // Without the header, nobody is vouched for.
        let (status, who, signed_answer) = send(&router, None, b"{}").await;
        assert_eq!(
            (status, who.as_str(), signed_answer),
            (StatusCode::OK, "nobody", false)
        );
    }

    #[tokio::test]
    async fn only_a_replica_of_this_deployment_answers_a_challenge_for_its_own_address() {
        let ours = forwarding("log key", HOLDER);
        let keys = ours.keys.as_deref().unwrap_or_else(|| panic!("no keys"));
        let mut headers = HeaderMap::new();
        headers.insert(
            CHALLENGE,
            HeaderValue::from_static("00112233445566778899aabbccddeeff"),
        );
        let answer = answer_challenge(&ours, &headers);
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
        let proof = answer
            .headers()
            .get(&PROOF)
            .and_then(|v| v.to_str().ok())
            .and_then(unhex)
            .unwrap_or_else(|| panic!("no proof"));
        let nonce = "00112233445566778899aabbccddeeff";
        assert!(keys.challenge(HOLDER, nonce).verify_slice(&proof).is_ok());
        // Relayed by an impostor at another address, it proves nothing there.
        assert!(
            keys.challenge("http://127.0.0.1:18250", nonce)
                .verify_slice(&proof)
                .is_err()
        );
        // Another deployment's replica cannot answer for this one.
        let theirs = forwarding("another log key", HOLDER);
        let proof = answer_challenge(&theirs, &headers)
            .headers()
            .get(&PROOF)
            .and_then(|v| v.to_str().ok())
            .and_then(unhex)
            .unwrap_or_else(|| panic!("no proof"));
        assert!(keys.challenge(HOLDER, nonce).verify_slice(&proof).is_err());
    }

    #[test]
    fn writes_carrying_a_customer_key_are_never_forwarded() {
        assert!(key_bearing("/v1/encrypt-data", b"{}"));
        assert!(key_bearing("/v1/decrypt-data", b"{}"));
        assert!(key_bearing("/v1/items", br#"{"encryption_key":"hunter2"}"#));
        assert!(!key_bearing("/v1/items", br#"{"description":"a key"}"#));
    }
}
