//! Extractors that own their rejections, so every refusal is problem+json (never axum's
//! plain-text rejections, never a 500): JSON bodies, query strings, the guide operations'
//! "JSON body or query" and the authenticated caller.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde::de::DeserializeOwned;

use super::AppState;
use super::problem::Problem;
use super::routes::table::{Does, Operation};
use crate::auth::{Authenticated, Scope};
use crate::engine::idempotency::Idempotency;
use crate::error::{self, ServiceError};
use crate::model::Traveller;
use crate::service::prelude::*;

/// The caller: authenticated, allowed by the scope the operation table gives the route, within
/// their rate limit.
pub struct Caller {
    /// Who is calling.
    pub traveller: Traveller,
    /// The service acting as them.
    pub service: Arc<dyn TimelineService>,
    /// What their token allows.
    pub scopes: crate::auth::Scopes,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        // Every authenticated route is in the table (`routes::tests` checks); were one not,
        // it would need the most a token gives.
        let does = parts
            .extensions
            .get::<Arc<Operation>>()
            .map_or(Does::writes().needing(Scope::Admin), |op| op.does);
        // HEAD must change nothing, and axum answers it with the GET handler: a GET that
        // writes does not answer HEAD.
        if parts.method == Method::HEAD && does.writes {
            return Err(Problem::of_kind(
                &crate::error::METHOD_NOT_ALLOWED,
                "method",
                format!(
                    "{} does not answer HEAD: its GET makes a change (use GET or POST)",
                    parts.uri.path()
                ),
            )
            .with_header(axum::http::header::ALLOW, "GET, POST"));
        }
        let auth = match Authenticated::from_request_parts(parts, state).await {
            Ok(auth) => auth,
            Err(rejection) => {
                // One operation for every request without a valid token, so a flood of them
                // costs a counter per timeline and minute, whatever routes it tries.
                let (timeline, _) = refused_request(parts);
                state.sessions.note_refusal(
                    timeline,
                    crate::engine::access_log::UNKNOWN_USER,
                    "unauthenticated",
                );
                return Err(rejection.into());
            }
        };
        let needed = does.scope.unwrap_or(Scope::Read);
        if !auth.scopes.allows(needed) {
            let (timeline, operation) = refused_request(parts);
            state
                .sessions
                .note_refusal(timeline, auth.traveller.as_str(), &operation);
            return Err(Problem::from_error(ServiceError::Forbidden(scope_refusal(
                &auth.scopes,
                needed,
                does.writes,
            ))));
        }
        if let Err(retry_after_secs) = state.limiter.check(&auth.traveller.as_str().to_owned()) {
            return Err(Problem::from_error(ServiceError::RateLimited {
                retry_after_secs,
            }));
        }
        let keyed = parts.extensions.get::<Idempotency>().cloned();
        Ok(Caller {
            service: state
                .sessions
                .session(auth.traveller.clone(), keyed, &auth.scopes),
            traveller: auth.traveller,
            scopes: auth.scopes,
        })
    }
}

/// Why a token with `granted` may not do what needs `needed` (and `writes`, or only reads), in
/// words (no method or path: the caller knows what they asked, and a dashboard shows this to a
/// person).
fn scope_refusal(granted: &crate::auth::Scopes, needed: Scope, writes: bool) -> String {
    let allows = if granted.allows(Scope::Write) {
        "reading and changing timelines"
    } else if granted.allows(Scope::Read) {
        "reading"
    } else {
        "nothing"
    };
    let what = match needed {
        Scope::Admin => "this is for operators",
        Scope::Write if writes => "this makes a change",
        // A check that only reads, as a change would be checked (paradox-checks).
        Scope::Write => "this checks a change before it is made, which needs the 'write' scope too",
        Scope::Read => "this reads",
    };
    format!(
        "your token only allows {allows} (scope '{}'), and {what}: ask whoever issues your \
         tokens for one with the '{needed}' scope",
        granted.to_claim()
    )
}

/// What the access log records of a request refused before a session saw it: the timeline
/// named in its path (`/v1/timeline/{id}…`) or query (`timeline_id`), if any, and the route
/// (`GET /v1/timeline/{timeline_id}`). The body is never read.
/// The timeline a request's JSON body names (`timeline_id`), read by the keyed stage, which
/// holds the body, for a request its token's scope refuses: the refusal is then logged under
/// that timeline, not service-wide.
#[derive(Clone, Debug)]
pub(super) struct NamedTimeline(crate::model::TimelineId);

/// [`NamedTimeline`] of a request with `body`, when `scopes` do not allow its operation.
/// Costs nothing for requests the scope allows.
pub(super) fn named_if_refused(
    parts: &Parts,
    scopes: &crate::auth::Scopes,
    body: &[u8],
) -> Option<NamedTimeline> {
    let op = parts.extensions.get::<Arc<Operation>>()?;
    if scopes.allows(op.does.scope.unwrap_or(Scope::Read)) {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Named {
        timeline_id: Option<String>,
    }
    let named: Named = serde_json::from_slice(body).ok()?;
    named.timeline_id?.parse().ok().map(NamedTimeline)
}

fn refused_request(parts: &Parts) -> (Option<crate::model::TimelineId>, String) {
    let in_path = parts
        .uri
        .path()
        .strip_prefix("/v1/timeline/")
        .and_then(|rest| rest.split('/').next());
    let in_query = || {
        serde_urlencoded::from_str::<Vec<(String, String)>>(parts.uri.query()?)
            .ok()?
            .into_iter()
            .find(|(k, _)| k == "timeline_id")
            .map(|(_, v)| v)
    };
    let timeline = in_path
        .map(str::to_owned)
        .or_else(in_query)
        .and_then(|t| t.parse().ok())
        .or_else(|| parts.extensions.get::<NamedTimeline>().map(|n| n.0.clone()));
    let operation = match parts.extensions.get::<Arc<Operation>>() {
        Some(op) => op.log_name.clone(),
        None => format!("{} {}", parts.method, parts.uri.path()),
    };
    (timeline, operation)
}

/// Whether the request declares a JSON body (`application/json` or `application/*+json`).
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Reads the body, answering 413 when it is larger than the configured limit.
async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, Problem> {
    Bytes::from_request(req, state)
        .await
        .map_err(|e: BytesRejection| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Problem::body_too_large()
            } else {
                Problem::invalid("body", format!("the request body could not be read: {e}"))
            }
        })
}

/// Parses a JSON body that is known to be non-empty and declared as JSON.
fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    serde_json::from_slice(bytes).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                format!("malformed JSON: {e}")
            }
            _ => e.to_string(),
        };
        Problem::invalid("body", what)
    })
}

/// Checks the body is there and declared as JSON, then parses it.
fn json_body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &[u8]) -> Result<T, Problem> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Problem::invalid(
            "body",
            "a JSON body is required (Content-Type: application/json)",
        ));
    }
    if !is_json(headers) {
        return Err(Problem::of_kind(
            &error::UNSUPPORTED_MEDIA_TYPE,
            "content-type",
            "send the body as JSON with Content-Type: application/json",
        ));
    }
    parse_json(bytes)
}

/// A required JSON body as its text, unparsed: for a handler that parses it itself (an
/// imported world file, whose refusals name its own lines).
pub struct JsonText(pub String);

impl<S: Send + Sync> FromRequest<S> for JsonText {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let headers = req.headers().clone();
        let bytes = body_bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(Problem::invalid(
                "body",
                "a JSON body is required (Content-Type: application/json)",
            ));
        }
        if !is_json(&headers) {
            return Err(Problem::of_kind(
                &error::UNSUPPORTED_MEDIA_TYPE,
                "content-type",
                "send the body as JSON with Content-Type: application/json",
            ));
        }
        String::from_utf8(bytes.to_vec())
            .map(JsonText)
            .map_err(|e| Problem::invalid("body", format!("the body is not UTF-8 text: {e}")))
    }
}

/// A required JSON body. With `UNPROCESSABLE`, a 400 is answered 422 (documented operations
/// without a documented 400).
pub struct JsonBody<T, const UNPROCESSABLE: bool = false>(pub T);

impl<T, S, const U: bool> FromRequest<S> for JsonBody<T, U>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let headers = req.headers().clone();
        let bytes = body_bytes(req, state)
            .await
            .map_err(|p| p.unprocessable_if(U))?;
        json_body(&headers, &bytes)
            .map(JsonBody)
            .map_err(|p| p.unprocessable_if(U))
    }
}

/// The body of a guide operation is a JSON object of named fields.
fn not_an_object() -> Problem {
    Problem::invalid("body", "the body must be a JSON object of named fields")
}

/// A body of nothing but white space is not JSON, and not "no body" either: leaving the body out
/// means sending none (schemathesis sends `\n` as a malformed body, rightly).
fn refuse_blank(bytes: &[u8]) -> Result<(), Problem> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Problem::invalid(
            "body",
            "the body is blank: send a JSON object, or no body at all",
        ));
    }
    Ok(())
}

/// A body that may be left out: `None` when there is none (zero length), else its bytes and
/// the JSON value they hold. A blank or malformed body is refused.
async fn body_if_any<S: Send + Sync>(
    req: Request,
    state: &S,
) -> Result<Option<(Bytes, serde_json::Value)>, Problem> {
    let headers = req.headers().clone();
    let bytes = body_bytes(req, state).await?;
    if bytes.is_empty() {
        return Ok(None);
    }
    refuse_blank(&bytes)?;
    let value = json_body(&headers, &bytes)?;
    Ok(Some((bytes, value)))
}

/// A JSON body that may be left out: operations the guides send with
/// `Content-Type: application/json` and no body (`pause-time`, `list-anchors`, …). An absent
/// (zero-length) body counts as `{}`, and so does a JSON `null` (the description marks such a body optional, which
/// OpenAPI says as "may be null"); a body that is there must be JSON and parse like any other.
pub struct OptionalJsonBody<T>(pub T);

impl<T, S> FromRequest<S> for OptionalJsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        match body_if_any(req, state).await? {
            None | Some((_, serde_json::Value::Null)) => parse_json(b"{}").map(OptionalJsonBody),
            Some((bytes, serde_json::Value::Object(_))) => parse_json(&bytes).map(OptionalJsonBody),
            Some(_) => Err(not_an_object()),
        }
    }
}

/// Query parameters, refused as problem+json.
pub struct QueryParams<T, const UNPROCESSABLE: bool = false>(pub T);

fn parse_query<T: DeserializeOwned>(uri: &Uri) -> Result<T, Problem> {
    Query::<T>::try_from_uri(uri)
        .map(|Query(t)| t)
        .map_err(|e| Problem::invalid("query", e.body_text()))
}

impl<T, S, const U: bool> FromRequestParts<S> for QueryParams<T, U>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Problem> {
        parse_query(&parts.uri)
            .map(QueryParams)
            .map_err(|p| p.unprocessable_if(U))
    }
}

/// The guide's GET operations: a JSON body, the query parameters, or both (a field given in
/// both must have the same value in both; both are checked).
pub struct BodyOrQuery<T>(pub T);

impl<T, S> FromRequest<S> for BodyOrQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let uri = req.uri().clone();
        let Some((bytes, body)) = body_if_any(req, state).await? else {
            return parse_query(&uri).map(BodyOrQuery);
        };
        // serde would read a struct from a JSON array too (its fields in order).
        if !body.is_object() {
            return Err(not_an_object());
        }
        let from_body: T = parse_json(&bytes)?;
        let query: Vec<(String, String)> = serde_urlencoded::from_str(uri.query().unwrap_or(""))
            .map_err(|e| Problem::invalid("query", e.to_string()))?;
        let query: Vec<(String, String)> = query.into_iter().filter(|(k, _)| k != "view").collect();
        if query.is_empty() {
            return Ok(BodyOrQuery(from_body));
        }
        // Both: read as one query; a field given in both must say the same in both.
        let body_fields: Vec<(String, String)> = body
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| match v {
                serde_json::Value::String(s) => Some((k.clone(), s.clone())),
                serde_json::Value::Number(n) => Some((k.clone(), n.to_string())),
                serde_json::Value::Bool(b) => Some((k.clone(), b.to_string())),
                _ => None,
            })
            .collect();
        if let Some((k, _)) = query
            .iter()
            .find(|(k, v)| body_fields.iter().any(|(b, bv)| b == k && bv != v))
        {
            return Err(Problem::invalid(
                k,
                "given in the body and in the query with different values; give it once",
            ));
        }
        let mut merged: Vec<(String, String)> = body_fields
            .into_iter()
            .filter(|(k, _)| !query.iter().any(|(q, _)| q == k))
            .collect();
        merged.extend(query);
        let text = serde_urlencoded::to_string(&merged)
            .map_err(|e| Problem::invalid("query", e.to_string()))?;
        serde_urlencoded::from_str(&text)
            .map(BodyOrQuery)
            .map_err(|e| Problem::invalid("query", e.to_string()))
    }
}

/// A path segment naming a resource; one that cannot be an id names nothing (404).
pub fn path_id<T: std::str::FromStr>(what: &str, raw: &str) -> Result<T, Problem> {
    raw.parse()
        .map_err(|_| Problem::from_error(ServiceError::not_found(what, raw)))
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Paging {
        #[serde(default)]
        limit: Option<u32>,
    }

    async fn optional(content_type: Option<&str>, body: &str) -> Result<Paging, Problem> {
        let mut req = axum::http::Request::builder().method("POST").uri("/v1/x");
        if let Some(ct) = content_type {
            req = req.header(CONTENT_TYPE, ct);
        }
        let req = req.body(Body::from(body.to_owned())).expect("a request");
        OptionalJsonBody::<Paging>::from_request(req, &())
            .await
            .map(|OptionalJsonBody(p)| p)
    }

    #[tokio::test]
    async fn an_absent_optional_body_counts_as_an_empty_object() {
        assert_eq!(
            optional(Some("application/json"), "").await.ok(),
            Some(Paging { limit: None })
        );
        assert_eq!(optional(None, "").await.ok(), Some(Paging { limit: None }));
        assert_eq!(
            optional(Some("application/json"), "null").await.ok(),
            Some(Paging { limit: None })
        );
    }

    #[tokio::test]
    async fn a_present_optional_body_is_read_like_any_other() {
        assert_eq!(
            optional(Some("application/json"), r#"{"limit": 3}"#)
                .await
                .ok(),
            Some(Paging { limit: Some(3) })
        );
        let wrong_type = optional(Some("text/plain"), r#"{"limit": 3}"#).await;
        assert_eq!(
            wrong_type.err().map(|p| p.status()),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
        let listed = optional(Some("application/json"), "[3]").await;
        assert_eq!(
            listed.err().map(|p| p.status()),
            Some(StatusCode::BAD_REQUEST)
        );
        let blank = optional(Some("application/json"), "\n").await;
        assert_eq!(
            blank.err().map(|p| p.status()),
            Some(StatusCode::BAD_REQUEST)
        );
        let malformed = optional(Some("application/json"), "{").await;
        assert_eq!(
            malformed.err().map(|p| p.status()),
            Some(StatusCode::BAD_REQUEST)
        );
    }
}
