//! Writes received by a replica that does not hold the writer's lease are sent on to the one
//! that does (see `engine::lease`), so that one process decides every write.
//!
//! [`forward`] sits inside the address rate limit and the request timeout, before everything
//! else: the holder answers the request as if it had come to it (token, scopes, its rate limit,
//! Idempotency-Key), and its answer is passed back unchanged. A forwarded request carries a
//! proof that it comes from a replica ([`FORWARDED`], derived from the token secret the replicas
//! share); [`mark`], outside the address rate limit, lets such a request through it, since the
//! replica that received it counted it already, and it is never forwarded again.
//!
//! When the holder cannot be reached at all, the write is made here (this process takes the
//! lease); when it was reached but did not answer, the write may have been made, so the client
//! is told to retry (with an Idempotency-Key, a retry is safe).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Sessions;
use super::problem::Problem;
use crate::auth::Secret;

/// The header naming a request forwarded by another replica; its value is [`Forwarding::proof`].
pub(super) const FORWARDED: HeaderName = HeaderName::from_static("x-chronoscope-forwarded");
/// What the proof is derived for.
const PURPOSE: &str = "chronoscope: a write forwarded to the holder of the writer's lease";
/// How long connecting to the holder may take before the write is made here instead.
const CONNECT_LIMIT: Duration = Duration::from_secs(1);

/// Marks a request forwarded by another replica (checked proof), for [`mark`]'s layers inside.
#[derive(Clone, Copy, Debug)]
pub(super) struct Forwarded;

/// What [`forward`] and [`mark`] need.
#[derive(Clone)]
pub(super) struct Forwarding {
    sessions: Arc<dyn Sessions>,
    http: Option<reqwest::Client>,
    proof: HeaderValue,
    body_limit: usize,
}

impl Forwarding {
    pub(super) fn new(
        sessions: Arc<dyn Sessions>,
        secret: &Secret,
        body_limit: usize,
        request_timeout: Duration,
    ) -> Self {
        crate::tls::install_default_provider();
        // Addresses given for forwarding are plain http on the replicas' own network: no
        // certificate is ever checked, no proxy is used, and a redirect is passed back.
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_LIMIT)
            .timeout(request_timeout)
            .tcp_nodelay(true)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .tls_certs_only(Vec::new())
            .build()
            .inspect_err(|e| {
                tracing::warn!(%e, "cannot set up forwarding writes; every write is made here");
            })
            .ok();
        let mut proof = HeaderValue::from_str(&secret.proof(PURPOSE))
            .unwrap_or_else(|_| unreachable!("hex is a header value"));
        proof.set_sensitive(true);
        Self {
            sessions,
            http,
            proof,
            body_limit,
        }
    }

    /// Whether `headers` carry this deployment's proof of a forwarded request.
    fn forwarded(&self, headers: &HeaderMap) -> bool {
        headers
            .get(&FORWARDED)
            .is_some_and(|given| same(given.as_bytes(), self.proof.as_bytes()))
    }
}

/// Compares without stopping at the first difference, so the time taken tells nothing.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Outside the address rate limit: marks a request forwarded by another replica.
pub(super) async fn mark(State(f): State<Forwarding>, mut req: Request, next: Next) -> Response {
    if f.forwarded(req.headers()) {
        req.extensions_mut().insert(Forwarded);
    }
    next.run(req).await
}

/// Sends a write on to the holder of the writer's lease when that is another replica.
pub(super) async fn forward(State(f): State<Forwarding>, req: Request, next: Next) -> Response {
    let write = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !write
        || !req.uri().path().starts_with("/v1/")
        || req.extensions().get::<Forwarded>().is_some()
    {
        return next.run(req).await;
    }
    let Some(http) = &f.http else {
        return next.run(req).await;
    };
    let Some(to) = f.sessions.forward_writes_to().await else {
        return next.run(req).await;
    };
    let (parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, f.body_limit).await else {
        return Problem::body_too_large().into_response();
    };
    let target = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let mut headers = parts.headers.clone();
    for hop in [
        header::HOST,
        header::CONNECTION,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::TE,
        header::UPGRADE,
    ] {
        headers.remove(hop);
    }
    headers.insert(FORWARDED, f.proof.clone());
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
            return next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
        }
        Err(e) => return lost(&f, &to, &e),
    };
    let status = answer.status();
    let mut relayed = answer.headers().clone();
    let body = match answer.bytes().await {
        Ok(body) => body,
        Err(e) => return lost(&f, &to, &e),
    };
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

/// The holder was reached but its answer did not come back whole: the write may have been
/// made, so it is not made here.
fn lost(f: &Forwarding, to: &str, e: &reqwest::Error) -> Response {
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
    use super::*;

    fn forwarding(secret: &Secret) -> Forwarding {
        struct NoWriter;
        impl Sessions for NoWriter {
            fn session(
                &self,
                _: crate::model::Traveller,
                _: Option<crate::engine::idempotency::Idempotency>,
                _: &crate::auth::Scopes,
            ) -> Arc<dyn crate::service::TimelineService> {
                unreachable!("not asked for a session")
            }
        }
        Forwarding::new(Arc::new(NoWriter), secret, 1024, Duration::from_secs(1))
    }

    #[test]
    fn only_this_deployments_proof_marks_a_request_forwarded() {
        let ours = Secret::from_bytes("the secret every replica of this deployment shares")
            .unwrap_or_else(|e| panic!("{e}"));
        let theirs = Secret::from_bytes("the secret of some other deployment entirely")
            .unwrap_or_else(|e| panic!("{e}"));
        let f = forwarding(&ours);
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                FORWARDED,
                HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{e}")),
            );
            headers
        };
        assert!(f.forwarded(&with(&ours.proof(PURPOSE))));
        assert!(!f.forwarded(&with(&theirs.proof(PURPOSE))));
        assert!(!f.forwarded(&with(&ours.proof("another purpose"))));
        assert!(!f.forwarded(&with("1")));
        assert!(!f.forwarded(&HeaderMap::new()));
    }

    #[test]
    fn proofs_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }
}
