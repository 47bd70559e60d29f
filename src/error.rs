//! One error type for every face of the service, mapping one-to-one onto problem types.
//!
//! The catalogue [`PROBLEM_TYPES`] is the single place a problem's slug, title, status and
//! explanation are written; the server serves it at `/problems/{slug}` and the client decodes
//! problems back into [`ServiceError`] through it.

use serde::{Deserialize, Serialize};

use crate::model::InvalidValue;
use crate::paradox::Paradox;

/// A problem type: what `type`, `title` and `status` of a problem+json body say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProblemType {
    /// Last segment of the type URI: `/problems/{slug}`.
    pub slug: &'static str,
    /// Short summary, the problem's `title`.
    pub title: &'static str,
    /// HTTP status code.
    pub status: u16,
    /// A paragraph for a person, served at `/problems/{slug}`.
    pub explanation: &'static str,
}

macro_rules! problem_types {
    ($($konst:ident = $slug:literal, $status:literal, $title:literal, $explanation:literal;)*) => {
        $(
            #[doc = $title]
            pub const $konst: ProblemType = ProblemType {
                slug: $slug,
                title: $title,
                status: $status,
                explanation: $explanation,
            };
        )*
        /// Every problem type the service can answer with.
        pub const PROBLEM_TYPES: &[ProblemType] = &[$($konst),*];
    };
}

problem_types! {
    INVALID_REQUEST = "invalid-request", 400, "Invalid request",
        "A field of the request is missing, has the wrong type or an impossible value. The detail names the field and what was expected.";
    UNKNOWN_REFERENCE = "unknown-reference", 400, "Unknown reference",
        "The request names a timeline, event, item or anchor that does not exist, or that belongs to another traveller.";
    TIMELINE_CLOSED = "timeline-closed", 400, "Timeline closed",
        "The timeline's window has passed: it can still be read and searched, but not travelled to or changed.";
    EVENT_LOCKED = "event-locked", 400, "Event cannot be manipulated",
        "The event is a fixed point, or has already been superseded or reverted; only the current head of a lineage that is not a fixed point can be changed.";
    PARADOX_DETECTED = "paradox-detected", 400, "Paradox detected",
        "The safety check found that the change would make the timeline unstable. Nothing was written; the paradoxes are listed with view=full.";
    UNAUTHORIZED = "unauthorized", 401, "Unauthorized",
        "The request carries no bearer token, or one that is malformed, expired, tampered with or unsigned.";
    FORBIDDEN = "forbidden", 403, "Forbidden",
        "The token is valid but lacks the scope this operation needs (read, write or admin).";
    NOT_FOUND = "not-found", 404, "Not found",
        "No such resource, or it belongs to another traveller.";
    METHOD_NOT_ALLOWED = "method-not-allowed", 405, "Method not allowed",
        "The path exists but does not answer this HTTP method.";
    CONFLICT = "conflict", 409, "Conflict",
        "The request conflicts with the current state, for example deleting a timeline that still has branches or travellers in it.";
    PAYLOAD_TOO_LARGE = "payload-too-large", 413, "Payload too large",
        "The request body is larger than the server accepts.";
    UNSUPPORTED_MEDIA_TYPE = "unsupported-media-type", 415, "Unsupported media type",
        "Request bodies must be JSON, sent with Content-Type: application/json.";
    UNPROCESSABLE = "unprocessable", 422, "Unprocessable request",
        "The request is well-formed JSON but its content cannot be used.";
    IDEMPOTENCY_KEY_REUSED = "idempotency-key-reused", 422, "Idempotency key reused",
        "The Idempotency-Key was sent before with a different request (another method, path, query or body). A key names one request: repeat that request exactly to get its first answer, or send a new key for a new request.";
    RATE_LIMITED = "rate-limited", 429, "Too many requests",
        "This client address or traveller sent more requests than the server allows; wait for the number of seconds in Retry-After.";
    INTERNAL = "internal", 500, "Internal error",
        "Something went wrong on our side. Nothing was written; the request can be tried again.";
    UNSUPPORTED_OPERATION = "unsupported-operation", 501, "Unsupported operation",
        "The service has no state this operation could act on, so any answer would be invented. The detail says why and what to use instead.";
    UNAVAILABLE = "unavailable", 503, "Service unavailable",
        "The service cannot answer now (storage unreachable, timed out or shutting down); try again shortly.";
    INTEGRITY_FAILED = "integrity-failed", 500, "Store failed its integrity check",
        "The stored log does not verify against the log key, has a record missing, or disagrees with what this replica witnessed of it (records changed, deleted, cut off or re-linked behind chronoscope's back). Trying again does not help: an operator runs `chronoscope verify`, which names the problem, and restores the store from a backup or a standby.";
    DECRYPTION_FAILED = "decryption-failed", 400, "Decryption failed",
        "The key does not decrypt this data entry. The entry's log record verified when it was read, so the key is wrong. The service never keeps keys: only the key the data was encrypted with opens it.";
    ACCESS_DENIED = "access-denied", 403, "Access denied",
        "You may read this timeline, but its access control does not give you the right this operation needs (write or admin). The detail names the right. A timeline's admins or an operator can change its access control.";
    TRAVEL_RESTRICTED = "travel-restricted", 403, "Travel restricted",
        "An operator restricted this traveller. The detail names the level and what it still allows; an operator lifts it with restrict-time-travel and the level unrestricted.";
}

/// Looks a problem type up by its slug.
pub fn problem_type(slug: &str) -> Option<&'static ProblemType> {
    PROBLEM_TYPES.iter().find(|p| p.slug == slug)
}

/// Everything that can go wrong, with a meaning. `Display` is the problem's `detail`.
#[derive(Clone, Debug, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServiceError {
    /// A field is missing, malformed or impossible.
    #[error("{field}: {message}")]
    InvalidInput {
        /// The field at fault.
        field: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// The request names something the caller cannot see.
    #[error("no {what} '{id}' is known to you")]
    UnknownReference {
        /// What kind of thing (timeline, event, item, anchor).
        what: String,
        /// The id given.
        id: String,
    },
    /// A closed timeline cannot be travelled to or changed.
    #[error(
        "timeline '{timeline}' closed at {closed_at}; it can be read but not travelled to or changed"
    )]
    TimelineClosed {
        /// The timeline.
        timeline: String,
        /// When its window ended (RFC 3339).
        closed_at: String,
    },
    /// The event cannot be manipulated (fixed point, superseded, reverted).
    #[error("event '{event}' cannot be manipulated: {reason}")]
    EventLocked {
        /// The event.
        event: String,
        /// Why.
        reason: String,
    },
    /// The safety check found the change unstable; nothing was written.
    #[error(
        "the change would make timeline '{timeline}' unstable: {}",
        summarize(paradoxes)
    )]
    ParadoxDetected {
        /// The timeline checked.
        timeline: String,
        /// What the checker found.
        paradoxes: Vec<Paradox>,
    },
    /// A resource addressed by path does not exist for this caller.
    #[error("no {what} '{id}'")]
    NotFound {
        /// What kind of thing.
        what: String,
        /// The id given.
        id: String,
    },
    /// The thing to create exists already (the documented bodiless 409), said in words from
    /// its location alone (all a remote client gets back).
    #[error("{}", already_exists(location))]
    AlreadyExists {
        /// Path of the existing resource, sent as `Location`.
        location: String,
    },
    /// Refused because of the current state.
    #[error("{0}")]
    #[serde(with = "message")]
    Conflict(String),
    /// Authentication failed.
    #[error("{0}")]
    #[serde(with = "message")]
    Unauthorized(String),
    /// Authenticated but not allowed.
    #[error("{0}")]
    #[serde(with = "message")]
    Forbidden(String),
    /// An `Idempotency-Key` sent again with a different request.
    #[error(
        "the Idempotency-Key '{key}' was used for a different request; repeat that request exactly, or send a new key"
    )]
    IdempotencyKeyReused {
        /// The key.
        key: String,
    },
    /// Too many requests.
    #[error("too many requests; retry in {retry_after_secs} s")]
    RateLimited {
        /// Seconds to wait.
        retry_after_secs: u64,
    },
    /// A traveller asked for another scan of the log sooner than one per `every_secs`
    /// (answered 429 like `RateLimited`).
    #[error(
        "a traveller may start one scan of the log (detect-tampering, validate-integrity) every \
         {every_secs} s, since each reads the stored log; retry in {retry_after_secs} s"
    )]
    ScansTooOften {
        /// Seconds to wait.
        retry_after_secs: u64,
        /// The cooldown, in seconds.
        every_secs: u64,
    },
    /// The operation has nothing in this service to act on (answered 501); the message says
    /// why and what to use instead.
    #[error("{0}")]
    #[serde(with = "message")]
    Unsupported(String),
    /// The storage or a remote server cannot be reached, or took too long.
    #[error("{0}")]
    #[serde(with = "message")]
    Unavailable(String),
    /// The stored log failed its integrity check (a record that does not verify or is missing,
    /// a store that disagrees with the witness): retrying cannot help.
    #[error("{0}")]
    #[serde(with = "message")]
    IntegrityFailed(String),
    /// A bug or an unexpected failure; the message is for logs.
    #[error("{0}")]
    #[serde(with = "message")]
    Internal(String),
    /// The caller may read the timeline but lacks the right the operation needs.
    #[error("{message}")]
    AccessDenied {
        /// The timeline.
        timeline: String,
        /// The right needed: `write` or `admin`.
        right: String,
        /// The sentence for a person.
        message: String,
    },
    /// The follower of a stream lost the read right on its timeline: the stream ends.
    #[error(
        "your read right on timeline '{timeline}' was taken away: this stream ends (its admins or an operator can give it back)"
    )]
    AccessRevoked {
        /// The timeline.
        timeline: String,
    },
    /// An operator restricted the traveller (nothing was done).
    #[error("an operator restricted you to {level}: you may do {allows}")]
    TravelRestricted {
        /// The level.
        level: String,
        /// What it still allows.
        allows: String,
    },
    /// The key does not open an encrypted data entry (nothing was written).
    #[error("the key does not decrypt data entry '{data_id}'; use the key it was encrypted with")]
    DecryptionFailed {
        /// The entry.
        data_id: String,
    },
}

/// Internally tagged enums cannot carry a bare string, so the message-only variants are
/// written `{"kind": "conflict", "message": "..."}` (and read back the same way).
mod message {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Message<T> {
        message: T,
    }

    pub fn serialize<S: Serializer>(message: &str, s: S) -> Result<S::Ok, S::Error> {
        Message { message }.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Message::<String>::deserialize(d).map(|m| m.message)
    }
}

/// What the paradoxes are, in the checker's words (which name the events), the first few of
/// them: a refusal a person can act on without asking for `view=full`.
fn summarize(paradoxes: &[Paradox]) -> String {
    const SHOWN: usize = 3;
    let mut said: Vec<&str> = paradoxes
        .iter()
        .take(SHOWN)
        // One sentence of them: "a; b", never "a.; b".
        .map(|p| p.description.trim_end_matches('.'))
        .collect();
    let more = paradoxes.len().saturating_sub(SHOWN);
    let more = (more > 0).then(|| format!("and {more} more"));
    said.extend(more.as_deref());
    if said.is_empty() {
        "no paradox listed".into()
    } else {
        said.join("; ")
    }
}

impl ServiceError {
    /// Shorthand for [`ServiceError::InvalidInput`].
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidInput {
            field: field.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`ServiceError::UnknownReference`].
    pub fn unknown(what: &str, id: impl std::fmt::Display) -> Self {
        Self::UnknownReference {
            what: what.into(),
            id: id.to_string(),
        }
    }

    /// Shorthand for [`ServiceError::NotFound`].
    pub fn not_found(what: &str, id: impl std::fmt::Display) -> Self {
        Self::NotFound {
            what: what.into(),
            id: id.to_string(),
        }
    }

    /// The error as a person reads it (the CLI, the dashboard): the problem's title, then the
    /// detail, unless the detail already says what the title would (an event that cannot be
    /// manipulated says so itself).
    pub fn explain(&self) -> String {
        let detail = self.to_string();
        match self {
            // Says itself what happened and what to do: no title before it.
            Self::EventLocked { .. } | Self::AlreadyExists { .. } => {
                let mut chars = detail.chars();
                chars
                    .next()
                    .map(|first| first.to_uppercase().chain(chars).collect())
                    .unwrap_or_default()
            }
            // A path that names nothing is, to a person, the same mistake as a body that does
            // (HTTP keeps the 404 and its title): one wording on every face.
            Self::NotFound { what, id } => {
                format!("{}: {}", UNKNOWN_REFERENCE.title, Self::unknown(what, id))
            }
            // One scan asked too soon is not "too many requests" to the person who asked.
            Self::ScansTooOften { .. } => format!("Too soon for another scan: {detail}"),
            // HTTP's status names (401, 403, 409) say nothing to a person at a terminal or a
            // dashboard: what happened, in words, then the detail.
            Self::Unauthorized(_) => format!("Your token was not accepted: {detail}"),
            Self::Forbidden(_) => format!("Not allowed: {detail}"),
            Self::Conflict(_) => format!("Not done: {detail}"),
            _ => format!("{}: {detail}", self.problem_type().title),
        }
    }

    /// The problem type this error is answered with.
    pub fn problem_type(&self) -> &'static ProblemType {
        match self {
            Self::InvalidInput { .. } => &INVALID_REQUEST,
            Self::UnknownReference { .. } => &UNKNOWN_REFERENCE,
            Self::TimelineClosed { .. } => &TIMELINE_CLOSED,
            Self::EventLocked { .. } => &EVENT_LOCKED,
            Self::ParadoxDetected { .. } => &PARADOX_DETECTED,
            Self::NotFound { .. } => &NOT_FOUND,
            Self::AlreadyExists { .. } | Self::Conflict(_) => &CONFLICT,
            Self::Unauthorized(_) => &UNAUTHORIZED,
            Self::Forbidden(_) => &FORBIDDEN,
            Self::IdempotencyKeyReused { .. } => &IDEMPOTENCY_KEY_REUSED,
            Self::RateLimited { .. } | Self::ScansTooOften { .. } => &RATE_LIMITED,
            Self::Unsupported(_) => &UNSUPPORTED_OPERATION,
            Self::Unavailable(_) => &UNAVAILABLE,
            Self::Internal(_) => &INTERNAL,
            Self::IntegrityFailed(_) => &INTEGRITY_FAILED,
            Self::DecryptionFailed { .. } => &DECRYPTION_FAILED,
            Self::AccessDenied { .. } | Self::AccessRevoked { .. } => &ACCESS_DENIED,
            Self::TravelRestricted { .. } => &TRAVEL_RESTRICTED,
        }
    }
}

/// What already exists at `location` (`/v1/anchors/anc_…`, `/v1/items/itm_…`), and what to
/// do instead, in words.
fn already_exists(location: &str) -> String {
    let id = location.rsplit('/').next().unwrap_or(location);
    match location.trim_start_matches('/').split('/').nth(1) {
        Some("anchors") => format!(
            "you already have an active anchor at this time with this description in this \
             timeline ({id}): return to it, or give another description or time"
        ),
        Some("items") => format!(
            "you already registered an item with this description in this timeline ({id}): use \
             that one, or describe this one otherwise"
        ),
        _ => format!("it exists already ({id})"),
    }
}

/// The domain's refusal of a value is the service's refusal of that field: same field, same
/// words.
impl From<InvalidValue> for ServiceError {
    fn from(e: InvalidValue) -> Self {
        Self::InvalidInput {
            field: e.field,
            message: e.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explanations_say_each_thing_once() {
        let locked = ServiceError::EventLocked {
            event: "tea".into(),
            reason: "it is a fixed point".into(),
        };
        assert_eq!(
            locked.explain(),
            "Event 'tea' cannot be manipulated: it is a fixed point"
        );
        let invalid = ServiceError::invalid("limit", "at most 500");
        assert!(
            invalid.explain().starts_with("Invalid request: "),
            "{}",
            invalid.explain()
        );
    }

    #[test]
    fn slugs_are_unique_and_resolvable() {
        for p in PROBLEM_TYPES {
            assert_eq!(problem_type(p.slug), Some(p));
            assert_eq!(PROBLEM_TYPES.iter().filter(|q| q.slug == p.slug).count(), 1);
        }
    }

    #[test]
    fn every_error_survives_a_json_round_trip() {
        for e in [
            ServiceError::invalid("f", "bad"),
            ServiceError::Conflict("busy".into()),
            ServiceError::Unauthorized("no".into()),
            ServiceError::Forbidden("no".into()),
            ServiceError::Unavailable("down".into()),
            ServiceError::Unsupported("no particles".into()),
            ServiceError::Internal("bug".into()),
            ServiceError::RateLimited {
                retry_after_secs: 3,
            },
            ServiceError::DecryptionFailed {
                data_id: "dat_x".into(),
            },
        ] {
            let json = serde_json::to_value(&e).unwrap();
            assert!(json["kind"].is_string(), "{json}");
            assert_eq!(serde_json::from_value::<ServiceError>(json).unwrap(), e);
        }
        let json = serde_json::to_value(ServiceError::Conflict("busy".into())).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "conflict", "message": "busy"})
        );
    }

    #[test]
    fn details_name_what_went_wrong() {
        let e = ServiceError::unknown("timeline", "tml_nope");
        assert_eq!(e.to_string(), "no timeline 'tml_nope' is known to you");
        assert_eq!(e.problem_type().status, 400);
        assert_eq!(
            ServiceError::not_found("timeline", "x")
                .problem_type()
                .status,
            404
        );
    }

    #[test]
    fn a_scan_asked_too_soon_is_said_as_such_not_as_too_many_requests() {
        let e = ServiceError::ScansTooOften {
            retry_after_secs: 7,
            every_secs: 10,
        };
        let said = e.explain();
        assert!(said.starts_with("Too soon for another scan: "), "{said}");
        assert!(!said.contains("Too many requests"), "{said}");
        assert!(said.ends_with("retry in 7 s"), "{said}");
        // HTTP keeps the 429's title.
        assert_eq!(e.problem_type().title, "Too many requests");
    }
}
