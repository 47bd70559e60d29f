//! `Idempotency-Key` on POST (the IETF httpapi draft): reads the key and fingerprints the
//! request, for [`super::extract::Caller`] to hand the engine a keyed session. The engine does
//! the rest (`crate::engine::idempotency`): a repeat is answered from the log.

use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, Method};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::Onward;
use super::openapi::UNPROCESSABLE_ROUTES;
use super::problem::Problem;
use crate::auth::{Authenticated, Verifier};
use crate::engine::idempotency::{Idempotency, IdempotencyKey};

/// What the keyed layer needs: how much body it may read, and the token check that comes
/// before reading any.
#[derive(Clone, Debug)]
pub(super) struct Keyed {
    /// Largest body read (413 beyond).
    pub(super) body_limit: usize,
    /// Verifies the bearer token.
    pub(super) verifier: Arc<Verifier>,
}

/// The request header.
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// For a POST with an `Idempotency-Key`: checks the token (a 401 before any of the body is
/// read, so no client without one can hold a request open by stalling its body), checks the
/// key, fingerprints the request and leaves both in the request's extensions. Anything else
/// passes untouched.
pub(super) async fn keyed(State(keyed): State<Keyed>, req: Request, next: impl Onward) -> Response {
    if req.method() != Method::POST || !req.headers().contains_key(&IDEMPOTENCY_KEY) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    // A write forwarded by another replica comes with its caller checked there (see `forward`).
    let scopes = match parts.extensions.get::<Authenticated>() {
        Some(forwarded) => forwarded.scopes.clone(),
        None => match Authenticated::from_parts(&parts, &keyed.verifier) {
            Ok(caller) => caller.scopes,
            Err(rejection) => return Problem::from(rejection).into_response(),
        },
    };
    let Some(raw) = parts.headers.get(&IDEMPOTENCY_KEY) else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    // Documented operations without a documented 400 answer validation errors 422.
    let unprocessable = UNPROCESSABLE_ROUTES
        .iter()
        .any(|(method, path)| *method == "post" && *path == parts.uri.path());
    // Bytes that are not text become U+FFFD, which the key refuses by name.
    let key = match String::from_utf8_lossy(raw.as_bytes()).parse::<IdempotencyKey>() {
        Ok(key) => key,
        Err(e) => {
            return Problem::from_error(e)
                .unprocessable_if(unprocessable)
                .into_response();
        }
    };
    let Ok(bytes) = to_bytes(body, keyed.body_limit).await else {
        return Problem::body_too_large().into_response();
    };
    let target = parts.uri.path_and_query().map_or("", |pq| pq.as_str());
    let mut digest = Sha256::new();
    digest.update(parts.method.as_str());
    digest.update(b" ");
    digest.update(target);
    digest.update(b"\n");
    digest.update(canonical_body(&bytes));
    let fingerprint = digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // A request its token's scope refuses is logged under the timeline its body names.
    let named = super::extract::named_if_refused(&parts, &scopes, &bytes);
    let mut req = Request::from_parts(parts, Body::from(bytes));
    req.extensions_mut()
        .insert(Idempotency { key, fingerprint });
    if let Some(named) = named {
        req.extensions_mut().insert(named);
    }
    next.run(req).await
}

/// Fields a fingerprint leaves out: a customer's encryption key is never kept, not even hashed
/// (a hash of a key is something to guess it against).
const UNFINGERPRINTED: &[&str] = &["encryption_key"];

/// The body as the fingerprint reads it: a JSON body re-serialised compactly with its objects'
/// keys sorted, so a retry that a client serialised again (other whitespace, other key order)
/// is the same request, without the fields in [`UNFINGERPRINTED`]; anything else byte for
/// byte.
fn canonical_body(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(mut value) => {
            if let Some(fields) = value.as_object_mut() {
                for field in UNFINGERPRINTED {
                    if let Some(mut secret) = fields.remove(*field)
                        && let serde_json::Value::String(text) = &mut secret
                    {
                        zeroize::Zeroize::zeroize(text);
                    }
                }
            }
            value.sort_all_objects();
            serde_json::to_vec(&value).map_or(Cow::Borrowed(bytes), Cow::Owned)
        }
        Err(_) => Cow::Borrowed(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::canonical_body;

    #[test]
    fn json_bodies_fingerprint_alike_whatever_their_layout() {
        let compact = canonical_body(br#"{"b":{"y":1,"x":[1,2]},"a":"z"}"#).into_owned();
        let spaced = canonical_body(b"{ \"a\" : \"z\",\n  \"b\": { \"x\": [1, 2], \"y\": 1 } }");
        assert_eq!(compact, spaced.as_ref());
        assert_eq!(compact, br#"{"a":"z","b":{"x":[1,2],"y":1}}"#);
        // Another value is another request; bytes that are not JSON are taken as sent.
        assert_ne!(
            compact,
            canonical_body(br#"{"a":"z","b":{"x":[2,1],"y":1}}"#).as_ref()
        );
        assert_eq!(canonical_body(b"not json {").as_ref(), b"not json {");
    }

    #[test]
    fn an_encryption_key_is_no_part_of_a_fingerprint() {
        let keyed = canonical_body(br#"{"data_id":"dat_x","encryption_key":"hunter2hunter2"}"#);
        assert_eq!(keyed.as_ref(), br#"{"data_id":"dat_x"}"#);
        let other = canonical_body(br#"{"data_id":"dat_x","encryption_key":"another key"}"#);
        assert_eq!(keyed, other);
    }
}
