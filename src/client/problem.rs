//! Reading the server's answers back into the service's types: problem+json bodies into
//! [`ServiceError`], `Link` headers into cursors.
//!
//! Everything here is pure (bytes and header values in, values out) so it is unit-tested
//! without a server.

use serde::Deserialize;

use crate::error::{self, ServiceError};
use crate::paradox::Paradox;

/// The members of a problem+json body the client reads; all optional, since a proxy or a
/// server of another version may answer with less.
#[derive(Debug, Default, Deserialize)]
struct ProblemBody {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    title: Option<String>,
    /// `view=full`: the serde JSON of the server's [`ServiceError`].
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// `view=full` on paradox-detected.
    #[serde(default)]
    paradoxes: Option<Vec<Paradox>>,
}

/// What the client saw of a failed response.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Failure<'a> {
    /// HTTP status code.
    pub status: u16,
    /// The `Location` header, for the bodiless 409.
    pub location: Option<&'a str>,
    /// The `Retry-After` header, for 429.
    pub retry_after: Option<&'a str>,
    /// The body (may be empty or not JSON).
    pub body: &'a [u8],
    /// The route called, for messages about answers that make no sense.
    pub route: &'a str,
}

/// Turns a failed response into the [`ServiceError`] the server meant.
///
/// With `view=full` the body's `error` member is that error, serialized: it is decoded back
/// into the identical value. Without it (an older server, a proxy, a bare status) the
/// closest variant is rebuilt from the status, the problem type and the detail.
pub(crate) fn decode(f: Failure<'_>) -> ServiceError {
    if f.status == 409 && f.body.iter().all(u8::is_ascii_whitespace) {
        return match f.location {
            Some(location) => ServiceError::AlreadyExists {
                location: path_of(location),
            },
            None => ServiceError::Conflict(format!(
                "{} answered 409 Conflict without saying why",
                f.route
            )),
        };
    }
    if f.status == 429 {
        let retry_after_secs = retry_after_secs(f.retry_after);
        // The scans' cooldown says why it holds a traveller back: kept, so the dashboard and
        // the CLI say it rather than "too many requests".
        let problem: ProblemBody = serde_json::from_slice(f.body).unwrap_or_default();
        let detail = problem.detail.unwrap_or_default();
        if let Some(every) = between(&detail, "one scan of the log", " s,")
            .and_then(|words| words.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
        {
            return ServiceError::ScansTooOften {
                retry_after_secs,
                every_secs: every,
            };
        }
        return ServiceError::RateLimited { retry_after_secs };
    }
    let problem: ProblemBody = serde_json::from_slice(f.body).unwrap_or_default();
    if let Some(err) = problem
        .error
        .clone()
        .and_then(|e| serde_json::from_value::<ServiceError>(e).ok())
    {
        return err;
    }
    fallback(f, problem)
}

/// The closest [`ServiceError`] when the body does not carry one.
fn fallback(f: Failure<'_>, problem: ProblemBody) -> ServiceError {
    let slug = problem.kind.as_deref().and_then(slug_of);
    let detail = problem
        .detail
        .clone()
        .or_else(|| problem.title.clone())
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(f.body);
            let text = text.trim();
            if text.is_empty() {
                format!("{} answered {} with no explanation", f.route, f.status)
            } else {
                // A proxy's plain-text or HTML page: keep it short.
                format!(
                    "{} answered {}: {}",
                    f.route,
                    f.status,
                    text.chars().take(200).collect::<String>()
                )
            }
        });
    // A slug we know decides; otherwise the status does.
    let slug = slug
        .filter(|s| error::problem_type(s).is_some())
        .unwrap_or(match f.status {
            400 | 413 | 415 | 422 => "invalid-request",
            401 => "unauthorized",
            403 => "forbidden",
            404 => "not-found",
            409 => "conflict",
            502..=504 => "unavailable",
            _ => "internal",
        });
    match slug {
        "unknown-reference" => parse_unknown(&detail).unwrap_or_else(|| invalid(&detail)),
        "timeline-closed" => parse_closed(&detail).unwrap_or_else(|| invalid(&detail)),
        "event-locked" => parse_locked(&detail).unwrap_or_else(|| invalid(&detail)),
        "paradox-detected" => ServiceError::ParadoxDetected {
            timeline: between(&detail, "timeline '", "'")
                .unwrap_or_default()
                .to_owned(),
            paradoxes: problem.paradoxes.unwrap_or_default(),
        },
        "not-found" => parse_not_found(&detail).unwrap_or_else(|| ServiceError::NotFound {
            what: "resource".into(),
            id: detail.clone(),
        }),
        "conflict" => ServiceError::Conflict(detail),
        "idempotency-key-reused" => ServiceError::IdempotencyKeyReused {
            key: between(&detail, "Idempotency-Key '", "' was used")
                .unwrap_or_default()
                .to_owned(),
        },
        "unauthorized" => ServiceError::Unauthorized(detail),
        "forbidden" => ServiceError::Forbidden(detail),
        "rate-limited" => ServiceError::RateLimited {
            retry_after_secs: retry_after_secs(f.retry_after),
        },
        "unavailable" => ServiceError::Unavailable(detail),
        "unsupported-operation" => ServiceError::Unsupported(detail),
        "integrity-failed" => ServiceError::IntegrityFailed(detail),
        "internal" | "method-not-allowed" => ServiceError::Internal(detail),
        "decryption-failed" => ServiceError::DecryptionFailed {
            data_id: between(&detail, "data entry '", "'")
                .unwrap_or_default()
                .to_owned(),
        },
        "access-denied" => ServiceError::AccessDenied {
            timeline: between(&detail, "timeline '", "'")
                .unwrap_or_default()
                .to_owned(),
            right: between(&detail, "the ", " right")
                .unwrap_or_default()
                .to_owned(),
            message: detail,
        },
        "travel-restricted" => {
            let level = between(&detail, "restricted you to ", ":").unwrap_or_default();
            let allows = detail
                .split_once(": you may do ")
                .map_or("", |(_, allows)| allows);
            ServiceError::TravelRestricted {
                level: level.to_owned(),
                allows: allows.to_owned(),
            }
        }
        // invalid-request, unprocessable, payload-too-large, unsupported-media-type.
        _ => invalid(&detail),
    }
}

/// `field: message` details (the server's InvalidInput) split back; anything else names the
/// request as a whole.
fn invalid(detail: &str) -> ServiceError {
    match detail.split_once(": ") {
        Some((field, message)) if !field.is_empty() && !field.contains(' ') => {
            ServiceError::invalid(field, message)
        }
        _ => ServiceError::invalid("request", detail),
    }
}

/// `no {what} '{id}' is known to you`.
fn parse_unknown(detail: &str) -> Option<ServiceError> {
    let rest = detail
        .strip_prefix("no ")?
        .strip_suffix("' is known to you")?;
    let (what, id) = rest.split_once(" '")?;
    Some(ServiceError::unknown(what, id))
}

/// `no {what} '{id}'`.
fn parse_not_found(detail: &str) -> Option<ServiceError> {
    let rest = detail.strip_prefix("no ")?.strip_suffix('\'')?;
    let (what, id) = rest.split_once(" '")?;
    Some(ServiceError::not_found(what, id))
}

/// `timeline '{timeline}' closed at {closed_at}; ...`.
fn parse_closed(detail: &str) -> Option<ServiceError> {
    let timeline = between(detail, "timeline '", "'")?;
    let closed_at = between(detail, "' closed at ", ";")?;
    Some(ServiceError::TimelineClosed {
        timeline: timeline.into(),
        closed_at: closed_at.into(),
    })
}

/// `event '{event}' cannot be manipulated: {reason}`.
fn parse_locked(detail: &str) -> Option<ServiceError> {
    let rest = detail.strip_prefix("event '")?;
    let (event, reason) = rest.split_once("' cannot be manipulated: ")?;
    Some(ServiceError::EventLocked {
        event: event.into(),
        reason: reason.into(),
    })
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(&text[from..from + len])
}

/// The slug of a problem `type`: `/problems/{slug}`, relative or absolute.
fn slug_of(kind: &str) -> Option<&str> {
    let (_, slug) = kind.rsplit_once("/problems/")?;
    let slug = slug.trim_end_matches('/');
    (!slug.is_empty()).then_some(slug)
}

/// `Retry-After` in seconds; an HTTP date or garbage waits one second.
pub(crate) fn retry_after_secs(header: Option<&str>) -> u64 {
    header
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1)
}

/// The path (and query) of a `Location`, so an absolute URL and the engine's relative
/// `/v1/items/{id}` compare equal.
fn path_of(location: &str) -> String {
    let location = location.trim();
    match location.split_once("://") {
        Some((_, rest)) => match rest.find('/') {
            Some(i) => rest[i..].to_owned(),
            None => "/".to_owned(),
        },
        None => location.to_owned(),
    }
}

/// The `cursor` of the `rel="next"` link among `Link` header values, if any.
pub(crate) fn next_cursor<'a>(links: impl IntoIterator<Item = &'a str>) -> Option<String> {
    links
        .into_iter()
        .flat_map(parse_links)
        .find(|(_, rels)| rels.iter().any(|r| r.eq_ignore_ascii_case("next")))
        .and_then(|(target, _)| cursor_of(&target))
}

/// Splits one `Link` header value into (target, rel values). Commas inside `<...>` or quotes
/// do not separate links.
fn parse_links(value: &str) -> Vec<(String, Vec<String>)> {
    let mut links = Vec::new();
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let target = rest[open + 1..open + close].trim().to_owned();
        rest = &rest[open + close + 1..];
        // Parameters run to the next comma outside quotes.
        let mut end = rest.len();
        let mut quoted = false;
        for (i, c) in rest.char_indices() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let params = &rest[..end];
        rest = &rest[end..];
        let mut rels = Vec::new();
        for param in params.split(';') {
            if let Some((name, v)) = param.split_once('=')
                && name.trim().eq_ignore_ascii_case("rel")
            {
                rels.extend(
                    v.trim()
                        .trim_matches('"')
                        .split_whitespace()
                        .map(str::to_owned),
                );
            }
        }
        links.push((target, rels));
    }
    links
}

/// The decoded `cursor` query parameter of a link target (absolute or relative).
fn cursor_of(target: &str) -> Option<String> {
    let base = reqwest::Url::parse("http://link.invalid/").ok()?;
    let url = base.join(target).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == "cursor")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paradox::ParadoxKind;

    fn failure(status: u16, body: &str) -> Failure<'_> {
        Failure {
            status,
            body: body.as_bytes(),
            route: "POST /v1/items",
            ..Default::default()
        }
    }

    #[test]
    fn the_full_view_error_member_comes_back_identical() {
        let errors = [
            ServiceError::invalid("name", "must not be empty"),
            ServiceError::unknown("timeline", "tml_nope"),
            ServiceError::TimelineClosed {
                timeline: "tml_x".into(),
                closed_at: "2026-11-22T11:00:00Z".into(),
            },
            ServiceError::EventLocked {
                event: "evt_a".into(),
                reason: "it is a fixed point".into(),
            },
            ServiceError::ParadoxDetected {
                timeline: "primary".into(),
                paradoxes: vec![Paradox {
                    kind: ParadoxKind::CausalOrder,
                    description: "b before a".into(),
                    events: vec!["evt_a".parse().unwrap()],
                    items: vec![],
                }],
            },
            ServiceError::not_found("item", "itm_x"),
            ServiceError::AlreadyExists {
                location: "/v1/anchors/anc_x".into(),
            },
            ServiceError::Conflict("the primary timeline cannot be deleted".into()),
            ServiceError::Unavailable("automation is paused".into()),
            ServiceError::Forbidden("this operation needs the write scope".into()),
            ServiceError::IdempotencyKeyReused { key: "k-1".into() },
            ServiceError::DecryptionFailed {
                data_id: "dat_x".into(),
            },
        ];
        for err in errors {
            let body = serde_json::json!({
                "type": format!("/problems/{}", err.problem_type().slug),
                "title": err.problem_type().title,
                "status": err.problem_type().status,
                "detail": err.to_string(),
                "instance": "/requests/1",
                "error": err,
            })
            .to_string();
            let status = err.problem_type().status;
            assert_eq!(decode(failure(status, &body)), err);
            // The same error answered 422 (documented routes) decodes the same.
            if status == 400 {
                assert_eq!(decode(failure(422, &body)), err);
            }
        }
    }

    #[test]
    fn without_the_error_member_the_detail_is_parsed_back() {
        let cases = [
            ServiceError::unknown("timeline or anchor", "tml_nope"),
            ServiceError::TimelineClosed {
                timeline: "tml_x".into(),
                closed_at: "2026-11-22T11:00:00Z".into(),
            },
            ServiceError::EventLocked {
                event: "evt_a".into(),
                reason: "it was superseded by 'evt_b'; manipulate the current event instead".into(),
            },
            ServiceError::not_found("timeline", "tml_gone"),
            ServiceError::invalid("limit", "0 is out of range; ask for 1 to 1000"),
            ServiceError::Conflict(
                "timeline 'tml_a' has branches (tml_b); delete them first".into(),
            ),
            // A server of another version may send no `error` member (or null); the
            // message-only variants' detail is their whole message.
            ServiceError::Forbidden("this operation needs the write scope".into()),
            ServiceError::Unauthorized("the token has expired".into()),
            ServiceError::Unavailable("automation is not available in this build yet".into()),
            ServiceError::Internal("log record 3 is unreadable".into()),
            ServiceError::IdempotencyKeyReused {
                key: "it's-mine".into(),
            },
            ServiceError::DecryptionFailed {
                data_id: "dat_01kakzq3xv9d5v3m0f4g8q2h7c".into(),
            },
            // A 429 that says why (the scans' cooldown) keeps its reason; the wait is the
            // header's (none here: a second).
            ServiceError::ScansTooOften {
                retry_after_secs: 1,
                every_secs: 5,
            },
            crate::engine::access::denied(&"tml_x".parse().unwrap(), crate::service::Right::Write),
            ServiceError::TravelRestricted {
                level: "read_only".into(),
                allows: crate::service::RestrictionLevel::ReadOnly.allows().into(),
            },
        ];
        for err in cases {
            let body = serde_json::json!({
                "type": format!("/problems/{}", err.problem_type().slug),
                "title": err.problem_type().title,
                "status": err.problem_type().status,
                "detail": err.to_string(),
                "instance": "/requests/1",
            })
            .to_string();
            assert_eq!(decode(failure(err.problem_type().status, &body)), err);
            // A server that could not serialize the error sends `"error": null`.
            let mut with_null: serde_json::Value = serde_json::from_str(&body).unwrap();
            with_null["error"] = serde_json::Value::Null;
            let with_null = with_null.to_string();
            assert_eq!(decode(failure(err.problem_type().status, &with_null)), err);
        }
    }

    #[test]
    fn a_bodiless_409_is_already_exists_at_the_location_path() {
        let f = Failure {
            location: Some("http://127.0.0.1:8080/v1/items/itm_01"),
            ..failure(409, "")
        };
        assert_eq!(
            decode(f),
            ServiceError::AlreadyExists {
                location: "/v1/items/itm_01".into()
            }
        );
        let f = Failure {
            location: Some("/v1/anchors/anc_01"),
            ..failure(409, "")
        };
        assert_eq!(
            decode(f),
            ServiceError::AlreadyExists {
                location: "/v1/anchors/anc_01".into()
            }
        );
        assert!(matches!(
            decode(failure(409, "")),
            ServiceError::Conflict(m) if m.contains("POST /v1/items")
        ));
    }

    #[test]
    fn rate_limits_wait_as_long_as_retry_after_says() {
        let f = Failure {
            retry_after: Some("7"),
            ..failure(429, "{}")
        };
        assert_eq!(
            decode(f),
            ServiceError::RateLimited {
                retry_after_secs: 7
            }
        );
        let f = Failure {
            retry_after: Some("Wed, 21 Oct 2015 07:28:00 GMT"),
            ..failure(429, "")
        };
        assert_eq!(
            decode(f),
            ServiceError::RateLimited {
                retry_after_secs: 1
            }
        );
    }

    #[test]
    fn bare_statuses_and_foreign_bodies_map_to_the_nearest_variant() {
        assert!(matches!(
            decode(failure(502, "<html>Bad gateway</html>")),
            ServiceError::Unavailable(m) if m.contains("Bad gateway") && m.contains("502")
        ));
        assert!(matches!(
            decode(failure(500, "")),
            ServiceError::Internal(m) if m.contains("POST /v1/items") && m.contains("500")
        ));
        assert!(matches!(
            decode(failure(401, r#"{"type":"/problems/unauthorized","detail":"token expired"}"#)),
            ServiceError::Unauthorized(m) if m == "token expired"
        ));
        assert!(matches!(
            decode(failure(415, r#"{"type":"/problems/unsupported-media-type","detail":"send JSON"}"#)),
            ServiceError::InvalidInput { field, message } if field == "request" && message == "send JSON"
        ));
        // A paradox problem without the error member still lists the paradoxes.
        let body = r#"{"type":"/problems/paradox-detected","detail":"the change would make timeline 'primary' unstable: fixed_point",
            "paradoxes":[{"kind":"fixed_point","description":"x","events":[],"items":[]}]}"#;
        match decode(failure(400, body)) {
            ServiceError::ParadoxDetected {
                timeline,
                paradoxes,
            } => {
                assert_eq!(timeline, "primary");
                assert_eq!(paradoxes.len(), 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_next_link_gives_the_cursor() {
        assert_eq!(
            next_cursor([r#"</v1/timelines?limit=2&cursor=abc%7Cdef&view=full>; rel="next""#]),
            Some("abc|def".into())
        );
        // Several links, absolute targets, unquoted and multi-valued rel.
        assert_eq!(
            next_cursor([
                r#"<http://h:1/v1/items?cursor=p>; rel="prev", <http://h:1/v1/items?cursor=n,x>; rel="last next""#
            ]),
            Some("n,x".into())
        );
        assert_eq!(
            next_cursor([
                "</v1/items?cursor=a>; rel=prev",
                "</v1/items?cursor=b>; rel=next"
            ]),
            Some("b".into())
        );
        assert_eq!(next_cursor([r#"</v1/items?cursor=a>; rel="prev""#]), None);
        assert_eq!(next_cursor([r#"</v1/items>; rel="next""#]), None);
        assert_eq!(next_cursor(["garbage"]), None);
        assert_eq!(next_cursor(Vec::<&str>::new()), None);
    }
}
