//! The domain's types: what a timeline, an event, an item, an anchor and a journey are.
//!
//! Pure data with the rules that belong to one record (a timeline's status at an instant,
//! a traveller's time now). Rules that span records live in `engine` and `paradox`.

mod history;
mod ids;
mod invalid;
mod time;

use chrono::Duration;
use serde::{Deserialize, Serialize};

pub use history::{History, Versions};
pub(crate) use history::{HistoryImage, same_history};
pub use ids::{
    AnchorId, AnomalyId, EventId, IsolationId, ItemId, JourneyId, MergeId, ScheduleId, ScriptId,
    TimelineId, Traveller,
};
pub use ids::{CacheId, DataId};
pub use invalid::InvalidValue;
pub use time::{
    ACCEPTED_RANGE, Instant, MAX_INSTANT, TYPED_FORMS, TimeRange, TravelDuration, Window,
    describe_elapsed, format_instant, in_range, opt_in_range, parse_instant, parse_typed_instant,
};

/// Whether a timeline can still be travelled to and changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineStatus {
    /// Within its window.
    Open,
    /// Past its window: read and search only.
    Closed,
}

/// A timeline's own attributes; its events live in a [`History`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Timeline {
    /// Its id (`primary` or `tml_...`).
    pub id: TimelineId,
    /// Short name shown in lists.
    pub name: String,
    /// What the timeline is for (guide operations call this the description).
    pub description: Option<String>,
    /// How a parallel timeline differs from its base.
    pub variation: Option<String>,
    /// Where a journey into it arrives; `None` arrives at the present.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub destination_time: Option<Instant>,
    /// When it was created.
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Instant,
    /// How long it stays open after creation.
    pub window: Window,
    /// The timeline it branched from.
    pub parent: Option<TimelineId>,
    /// The traveller who created it (`None` for the primary and seeded timelines).
    pub created_by: Option<Traveller>,
}

impl Timeline {
    /// When the window closes, `None` if never; a window reaching past the last printable
    /// instant closes there ([`time::MAX_INSTANT`]).
    pub fn closes_at(&self) -> Option<Instant> {
        self.window.duration().map(|d| {
            self.created_at
                .checked_add_signed(d)
                .map_or(time::MAX_INSTANT, |end| end.min(time::MAX_INSTANT))
        })
    }

    /// `open` until `created_at + window`, then `closed`.
    pub fn status_at(&self, now: Instant) -> TimelineStatus {
        match self.closes_at() {
            Some(end) if now >= end => TimelineStatus::Closed,
            _ => TimelineStatus::Open,
        }
    }

    /// Time left before the window closes, `None` if unbounded.
    pub fn remaining_at(&self, now: Instant) -> Option<Duration> {
        self.closes_at()
            .map(|end| end.signed_duration_since(now).max(Duration::zero()))
    }
}

/// Where an event stands in its lineage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// Never changed.
    OnSchedule,
    /// The head of a changed lineage.
    Manipulated,
    /// Replaced by a manipulation; kept as history.
    Superseded,
    /// A manipulation that was undone; kept as history.
    Reverted,
}

impl EventStatus {
    /// Whether an event with this status is part of the timeline as it now stands.
    pub fn is_current(self) -> bool {
        matches!(self, EventStatus::OnSchedule | EventStatus::Manipulated)
    }

    /// The word used in responses and scripts' `status_check`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventStatus::OnSchedule => "on_schedule",
            EventStatus::Manipulated => "manipulated",
            EventStatus::Superseded => "superseded",
            EventStatus::Reverted => "reverted",
        }
    }
}

/// Something that happened in a timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Event {
    /// Its id.
    pub id: EventId,
    /// What happened.
    pub description: String,
    /// When it happened.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// Where it happened.
    pub location: String,
    /// Events it depends on.
    pub causes: Vec<EventId>,
    /// A fixed point cannot be manipulated.
    pub fixed_point: bool,
    /// Where it stands in its lineage.
    pub status: EventStatus,
    /// The event this one replaced (set on manipulations).
    pub supersedes: Option<EventId>,
    /// The event that replaced this one (set while superseded).
    pub superseded_by: Option<EventId>,
    /// The first event of the lineage; automation addresses lineages by it.
    pub lineage: EventId,
    /// The traveller who added or manipulated it; `None` for history as shipped.
    pub author: Option<Traveller>,
}

/// Where a traveller is: a timeline and a time that flows with the wall clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Position {
    /// The timeline they are in.
    pub timeline: TimelineId,
    /// The time they arrived at.
    #[schema(value_type = String, format = DateTime)]
    pub arrival_time: Instant,
    /// The wall-clock instant they arrived (or paused, or resumed).
    #[schema(value_type = String, format = DateTime)]
    pub arrived_at: Instant,
    /// Their clock is paused: their time stands still at `arrival_time` until they resume.
    #[serde(default)]
    pub paused: bool,
    /// The place they are at: where their latest journey arrived (one that named none kept the
    /// place before; a return restores the anchor's). `None` before any place was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl Position {
    /// In `primary` at the present: where every traveller starts.
    pub fn present(now: Instant) -> Self {
        Self {
            timeline: TimelineId::primary(),
            arrival_time: now,
            arrived_at: now,
            paused: false,
            location: None,
        }
    }

    /// The traveller's time in their timeline at wall-clock `now`. Saturates at the last
    /// printable instant ([`time::MAX_INSTANT`]) rather than running past year 9999.
    pub fn time_at(&self, now: Instant) -> Instant {
        if self.paused {
            return self.arrival_time;
        }
        let elapsed = now
            .signed_duration_since(self.arrived_at)
            .max(Duration::zero());
        self.arrival_time
            .checked_add_signed(elapsed)
            .map_or(time::MAX_INSTANT, |t| t.min(time::MAX_INSTANT))
    }
}

/// Where an item is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Whereabouts {
    /// Carried by its traveller.
    Carried,
    /// Left in a timeline at a time.
    Left {
        /// The timeline it was left in.
        timeline: TimelineId,
        /// The time it was left at.
        #[schema(value_type = String, format = DateTime)]
        time: Instant,
    },
}

/// An item a traveller registered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Item {
    /// Its id.
    pub id: ItemId,
    /// What it is.
    pub description: String,
    /// Whose it is.
    pub owner: Traveller,
    /// The timeline it was registered (found) in.
    pub origin_timeline: TimelineId,
    /// The time it was registered at, in that timeline.
    #[schema(value_type = String, format = DateTime)]
    pub origin_time: Instant,
    /// When it first left its origin timeline, in that timeline's time.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub taken_at: Option<Instant>,
    /// Where it is now.
    pub whereabouts: Whereabouts,
    /// Wall-clock instant of registration.
    #[schema(value_type = String, format = DateTime)]
    pub registered_at: Instant,
    /// The place it was found at (`retrieve-item`), or the traveller's place when registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// Whether an anchor can still be returned to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnchorStatus {
    /// A valid destination.
    Active,
    /// Returned to; kept as history.
    Spent,
}

/// How finely an anchor's timestamp is given: its digits after the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Accuracy {
    /// Whole seconds.
    Second,
    /// 3 fraction digits.
    Millisecond,
    /// 6 fraction digits.
    Microsecond,
    /// 9 fraction digits.
    Nanosecond,
}

impl Accuracy {
    /// Fraction digits printed at this accuracy.
    pub fn digits(self) -> u32 {
        match self {
            Self::Second => 0,
            Self::Millisecond => 3,
            Self::Microsecond => 6,
            Self::Nanosecond => 9,
        }
    }

    /// Whether `t` is given no more finely than this accuracy.
    pub fn holds(self, t: &Instant) -> bool {
        use chrono::Timelike;
        t.nanosecond().is_multiple_of(10u32.pow(9 - self.digits()))
    }

    /// `t` printed with exactly this accuracy's fraction digits (RFC 3339, `Z`).
    pub fn print(self, t: &Instant) -> String {
        let format = match self {
            Self::Second => chrono::SecondsFormat::Secs,
            Self::Millisecond => chrono::SecondsFormat::Millis,
            Self::Microsecond => chrono::SecondsFormat::Micros,
            Self::Nanosecond => chrono::SecondsFormat::Nanos,
        };
        t.to_rfc3339_opts(format, true)
    }
}

/// Recorded conditions (an anchor's environment or quantum state): data the traveller gives,
/// at most 32 keys of up to 64 characters, each value a string, number or bool.
pub type Conditions = serde_json::Map<String, serde_json::Value>;

/// A condition's value as typed after `key=` (the dashboard's form, the CLI's `--env`):
/// `true`/`false` a bool, a number a number, anything else a string.
pub fn condition_value(typed: &str) -> serde_json::Value {
    use serde_json::Value;
    match typed {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        v => serde_json::from_str::<serde_json::Number>(v)
            .map(Value::Number)
            .unwrap_or_else(|_| Value::String(v.to_owned())),
    }
}

/// A return ticket: a traveller's point to come back to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Anchor {
    /// Its id.
    pub id: AnchorId,
    /// Whose ticket it is.
    pub owner: Traveller,
    /// The timeline it was set in.
    pub timeline: TimelineId,
    /// The time it returns to.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// What it is for.
    pub description: Option<String>,
    /// Active until returned to.
    pub status: AnchorStatus,
    /// Wall-clock instant it was set.
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Instant,
}

impl Anchor {
    /// How a person is told of it: its description and the time it returns to, then its id
    /// (`'home' at 2026-11-22 10:00:00 (anc_…)`).
    pub fn named(&self) -> String {
        let at = self.timestamp.format("%Y-%m-%d %H:%M:%S");
        match &self.description {
            Some(d) => format!("'{d}' at {at} ({})", self.id),
            None => format!("at {at} ({})", self.id),
        }
    }
}

/// What an anchor records beyond its return point: where the traveller was, how finely the
/// timestamp was given, and the conditions the traveller recorded (measured by no one here).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AnchorDetails {
    /// Where the traveller was when it was set, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// How finely its timestamp was given, when the traveller said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<Accuracy>,
    /// The environment the traveller recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub environment: Option<Conditions>,
    /// The quantum state the traveller recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub quantum_state: Option<Conditions>,
}

/// An anchor with its details, as the engine keeps it and the guide operations answer it: the
/// anchor's fields and the details' side by side in one JSON object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AnchorRecord {
    /// The anchor.
    #[serde(flatten)]
    pub anchor: Anchor,
    /// Its details.
    #[serde(flatten)]
    pub details: AnchorDetails,
}

impl std::ops::Deref for AnchorRecord {
    type Target = Anchor;
    fn deref(&self) -> &Anchor {
        &self.anchor
    }
}

impl std::ops::DerefMut for AnchorRecord {
    fn deref_mut(&mut self) -> &mut Anchor {
        &mut self.anchor
    }
}

/// An item that did not travel, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LeftItem {
    /// The item.
    pub item_id: ItemId,
    /// A sentence a person understands.
    pub reason: String,
}

/// A journey, recorded when it happens and kept forever.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Journey {
    /// Its id.
    pub id: JourneyId,
    /// Who travelled.
    pub traveller: Traveller,
    /// The destination as requested (a timeline or an anchor id).
    pub destination: String,
    /// Timeline left.
    pub from_timeline: TimelineId,
    /// Time left, in that timeline.
    #[schema(value_type = String, format = DateTime)]
    pub from_time: Instant,
    /// Timeline reached.
    pub to_timeline: TimelineId,
    /// Time of arrival, in that timeline.
    #[schema(value_type = String, format = DateTime)]
    pub arrival_time: Instant,
    /// Wall-clock instant of departure.
    #[schema(value_type = String, format = DateTime)]
    pub departed_at: Instant,
    /// Items that came along.
    pub items_transported: Vec<ItemId>,
    /// Items that stayed behind, with the reason.
    pub items_left: Vec<LeftItem>,
    /// The anchor returned to, when the destination was one.
    pub anchor: Option<AnchorId>,
    /// The place arrived at: the one the journey named, else the traveller's (a return
    /// restores the anchor's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// What kind of journey it was. Records from before kinds existed say nothing; folding
    /// fills it in (`return` with an anchor, `travel` otherwise), so it is always there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<JourneyKind>,
}

/// What kind of journey a [`Journey`] was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JourneyKind {
    /// To a timeline (`POST /travels`).
    Travel,
    /// Back to an anchor.
    Return,
    /// To a time (and place), `travel` and `/api/v1/travel`.
    TimeTravel,
    /// Sideways to another timeline at the same time.
    Switch,
    /// Forward by a duration.
    FastForward,
    /// Back by a duration.
    Rewind,
    /// To an item's time, to pick it up (`retrieve-item`).
    Retrieve,
}

impl JourneyKind {
    /// The kind as the interface writes it (`fast_forward`, `time_travel`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Travel => "travel",
            Self::Return => "return",
            Self::TimeTravel => "time_travel",
            Self::Switch => "switch",
            Self::FastForward => "fast_forward",
            Self::Rewind => "rewind",
            Self::Retrieve => "retrieve",
        }
    }

    /// The kind in words, for people.
    pub fn words(self) -> &'static str {
        match self {
            Self::Travel => "travel to a timeline",
            Self::Return => "return to an anchor",
            Self::TimeTravel => "travel in time",
            Self::Switch => "switch of timeline",
            Self::FastForward => "fast-forward",
            Self::Rewind => "rewind",
            Self::Retrieve => "retrieval of an item",
        }
    }

    /// The kind of a journey whose record says none: a return when it went to an anchor.
    pub fn derived(anchor: Option<&AnchorId>) -> Self {
        if anchor.is_some() {
            Self::Return
        } else {
            Self::Travel
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journey_kind_is_written_as_the_interface_writes_it() {
        use JourneyKind as K;
        for kind in [
            K::Travel,
            K::Return,
            K::TimeTravel,
            K::Switch,
            K::FastForward,
            K::Rewind,
            K::Retrieve,
        ] {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json.as_str(), Some(kind.as_str()));
        }
    }

    fn t(s: &str) -> Instant {
        parse_instant("t", s).unwrap()
    }

    #[test]
    fn a_timeline_closes_when_its_window_ends() {
        let tl = Timeline {
            id: "tml_x".parse().unwrap(),
            name: "x".into(),
            description: None,
            variation: None,
            destination_time: None,
            created_at: t("2026-01-01T00:00:00Z"),
            window: "12 minutes".parse().unwrap(),
            parent: None,
            created_by: None,
        };
        assert_eq!(
            tl.status_at(t("2026-01-01T00:11:59Z")),
            TimelineStatus::Open
        );
        assert_eq!(
            tl.status_at(t("2026-01-01T00:12:00Z")),
            TimelineStatus::Closed
        );
        assert_eq!(
            tl.remaining_at(t("2026-01-01T00:02:00Z")),
            Some(Duration::minutes(10))
        );
    }

    #[test]
    fn a_travellers_time_flows_with_the_wall_clock() {
        let p = Position {
            timeline: TimelineId::primary(),
            arrival_time: t("1889-03-10T23:50:00Z"),
            arrived_at: t("2026-01-01T00:00:00Z"),
            paused: false,
            location: None,
        };
        assert_eq!(
            p.time_at(t("2026-01-01T00:05:00Z")),
            t("1889-03-10T23:55:00Z")
        );
    }
}
