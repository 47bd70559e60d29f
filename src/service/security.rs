//! Who may do what (guide operations §5.1–5.2): access-control lists on timelines, set by their
//! admins or an operator, and restrictions an operator puts on a traveller.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::model::{Instant, TimelineId, Traveller};

/// The most names one list of an access-control list holds.
pub const MAX_PERMISSION_NAMES: usize = 1000;

/// A right on a timeline; each includes the ones before it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Right {
    /// See it: list, get, search, scan, monitor; be there; branch it; merge from it.
    Read,
    /// Change it: events, isolations, data; merge into it; resolve its conflicts.
    Write,
    /// Set its access control, delete it, read its access log.
    Admin,
}

impl Right {
    /// The word the API and the messages use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Admin => "admin",
        }
    }
}

/// Who holds which right on a timeline, by traveller name (the token's `sub`). Being listed
/// under `admin` also gives write and read; under `write`, read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Permissions {
    /// May read.
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub read: Vec<Traveller>,
    /// May read and write.
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub write: Vec<Traveller>,
    /// May read, write and administer.
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub admin: Vec<Traveller>,
}

impl Permissions {
    /// The highest right these lists give `who`.
    pub fn right_of(&self, who: &Traveller) -> Option<Right> {
        if self.admin.contains(who) {
            Some(Right::Admin)
        } else if self.write.contains(who) {
            Some(Right::Write)
        } else if self.read.contains(who) {
            Some(Right::Read)
        } else {
            None
        }
    }
}

/// A timeline's access-control list as it stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AccessControl {
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// The lists.
    pub permissions: Permissions,
    /// Who set it (for a branch's inherited list: who created the branch).
    #[schema(value_type = String)]
    pub set_by: Traveller,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: Instant,
}

impl AccessControl {
    /// Whether this is the list a branch was given when `by` made it at `made` (its base's,
    /// copied: the engine records it as set by the branch's creator at its creation), not one
    /// set since, which always comes after the timeline was made.
    pub fn copied_at_branching(&self, by: &Traveller, made: &Instant) -> bool {
        self.set_by == *by && self.at == *made
    }
}

/// `set-access-control`: `permissions: null` removes the list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SetAccessControlRequest {
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// The lists, or `null` to remove them (the timeline is then open to every traveller
    /// again, its creator acting as its admin). Required: a body without it is refused rather
    /// than taken for a removal.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schema(required = true)]
    pub permissions: Option<Permissions>,
}

/// What `set-access-control` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AccessControlSet {
    /// `set` or `removed`.
    pub status: String,
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// The list now in force (null when removed).
    #[schema(required = true)]
    pub access_control: Option<AccessControl>,
}

/// How far an operator restricted a traveller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RestrictionLevel {
    /// Nothing but `whoami`.
    NoAccess,
    /// Reads only: no journey, no change.
    ReadOnly,
    /// Reads, returning to their own anchors, pausing and resuming, and their private records
    /// (anchors, items).
    LimitedAccess,
    /// No restriction (setting it lifts one).
    Unrestricted,
}

impl RestrictionLevel {
    /// The word the API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoAccess => "no_access",
            Self::ReadOnly => "read_only",
            Self::LimitedAccess => "limited_access",
            Self::Unrestricted => "unrestricted",
        }
    }

    /// What you may still do at this level, said to the traveller restricted ("you may do …").
    pub fn allows(self) -> &'static str {
        match self {
            Self::NoAccess => "nothing but whoami",
            Self::ReadOnly => "reading, with no journey and no change",
            Self::LimitedAccess => {
                "reading, returning to your own anchors, pausing and resuming your clock, and \
                 keeping your own anchors and items"
            }
            Self::Unrestricted => "everything your token and the timelines' rights allow",
        }
    }

    /// What a traveller at this level may still do, said of them to someone else ("eve may
    /// do …").
    pub fn allows_them(self) -> &'static str {
        match self {
            Self::LimitedAccess => {
                "reading, returning to their own anchors, pausing and resuming their clock, and \
                 keeping their own anchors and items"
            }
            Self::Unrestricted => "everything their token and the timelines' rights allow",
            other => other.allows(),
        }
    }
}

/// `restrict-time-travel`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RestrictRequest {
    /// The traveller (a token's `sub`).
    #[schema(value_type = String)]
    pub user_id: Traveller,
    /// `no_access`, `read_only`, `limited_access`, or `unrestricted` to lift a restriction.
    pub restriction_level: RestrictionLevel,
}

/// A restriction in force.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Restriction {
    /// The traveller.
    #[schema(value_type = String)]
    pub user_id: Traveller,
    /// The level (`unrestricted` only in the answer that lifted one).
    pub level: RestrictionLevel,
    /// The operator who set it.
    #[schema(value_type = String)]
    pub set_by: Traveller,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: Instant,
}

/// What `restrict-time-travel` did: the status beside the restriction as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Restricted {
    /// `restricted` or `lifted`.
    pub status: String,
    /// The restriction as recorded (`user_id`, `level`, `set_by`, `at`).
    #[serde(flatten)]
    pub restriction: Restriction,
}

/// A timeline's access control as the caller sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AccessControlView {
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// Its list (`None`: open to every traveller, its creator acting as its admin).
    pub access_control: Option<AccessControl>,
    /// The caller's highest right on it: `read`, `write` or `admin`, capped at `read` when
    /// their token allows reading only.
    pub your_right: Right,
    /// Whether the caller's token allows reading only (no `write` scope), which caps
    /// `your_right` at `read`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only_token: bool,
}

/// `access-logs` (guide operations §5.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AccessLogQuery {
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// Wall-clock times of the accesses, `start/end` (default: the last 24 hours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub time_range: Option<crate::model::TimeRange>,
    /// Paging.
    #[serde(flatten)]
    pub page: crate::service::PageRequest,
    /// Also the entries that named no timeline (service-wide; operators only). Without it a
    /// timeline's log holds its own entries only, so service-wide ones are not repeated in
    /// every timeline's log.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub service_wide: bool,
}

/// What an access-log entry counts.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AccessAction {
    /// A read.
    Read,
    /// An accepted change.
    Write,
    /// A journey into the timeline.
    Travel,
    /// An access-control change or a deletion.
    Admin,
    /// A refused attempt (no token, a missing scope or right, a restriction, a wrong
    /// decryption key, a hidden timeline named).
    UnauthorizedAccessAttempt,
}

/// One access-log entry: the accesses of one traveller, of one kind, within one minute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AccessLogEntry {
    /// The traveller, or `unknown` when no valid token was given.
    pub user_id: String,
    /// What they did.
    pub action: AccessAction,
    /// The minute (wall clock) the accesses fell in.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// How many.
    pub count: u64,
    /// The last of them.
    #[schema(value_type = String, format = DateTime)]
    pub last_at: Instant,
    /// The operation (e.g. `add_events`, `get_timeline`).
    pub operation: String,
    /// `allowed` or `refused`.
    pub outcome: String,
    /// False for this replica's counts not yet flushed to the log.
    pub durable: bool,
    /// `timeline`, or `service` for an attempt that named no timeline (shown to operators).
    pub scope: String,
}

/// `access-logs`' answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AccessLog {
    /// `ok`.
    pub status: String,
    /// The entries, oldest first.
    pub logs: Vec<AccessLogEntry>,
    /// Accesses not counted because a flush had more distinct keys than it keeps.
    pub dropped: u64,
    /// Where retention begins: older summaries are in the op log only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub retained_from: Option<Instant>,
    /// The cursor of the next page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
