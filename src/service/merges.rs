//! The types of manual review (guide §3: `review-conflicts`, `resolve-conflict`, aborting a
//! pending merge), the timeline diff, and isolations (guide §4: `isolate-event`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{EventRecord, NewOutcome, WrittenEvent};
use crate::model::{DataId, EventId, Instant, IsolationId, MergeId, TimelineId, Traveller};
use crate::paradox::Paradox;

/// The three answers to a conflict, as the guide names them.
pub const RESOLUTION_OPTIONS: [&str; 3] = ["Keep Event A", "Keep Event B", "Custom Merge"];

/// How one conflict of a pending merge is settled. The guide's words ("Keep Event A": the
/// source's outcome, "Keep Event B": the destination's, "Custom Merge": a new outcome) and the
/// aliases `keep_source`, `keep_destination`, `custom` are accepted in any case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConflictResolution {
    /// The source's outcome ("Keep Event A").
    KeepSource,
    /// The destination's outcome ("Keep Event B").
    KeepDestination,
    /// A new outcome given by the caller ("Custom Merge").
    Custom,
}

impl ConflictResolution {
    /// The word stored in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KeepSource => "keep_source",
            Self::KeepDestination => "keep_destination",
            Self::Custom => "custom",
        }
    }

    /// The guide's words for it.
    pub fn option(self) -> &'static str {
        match self {
            Self::KeepSource => RESOLUTION_OPTIONS[0],
            Self::KeepDestination => RESOLUTION_OPTIONS[1],
            Self::Custom => RESOLUTION_OPTIONS[2],
        }
    }
}

impl fmt::Display for ConflictResolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ConflictResolution {
    type Err = crate::model::InvalidValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let words: String = s
            .split(|c: char| c.is_whitespace() || c == '_' || c == '-')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        match words.as_str() {
            "keep event a" | "keep source" => Ok(Self::KeepSource),
            "keep event b" | "keep destination" => Ok(Self::KeepDestination),
            "custom merge" | "custom" => Ok(Self::Custom),
            _ => Err(crate::model::InvalidValue::new(
                "resolution",
                format!(
                    "'{}' is not a resolution; use 'Keep Event A' (the source's outcome), 'Keep \
                     Event B' (the destination's) or 'Custom Merge' (with new_outcome); \
                     keep_source, keep_destination and custom are accepted too",
                    s.chars().take(40).collect::<String>()
                ),
            )),
        }
    }
}

impl Serialize for ConflictResolution {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ConflictResolution {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl super::Merge {
    /// Whether it waits for the resolutions of its conflicts (manual review).
    pub fn is_pending(&self) -> bool {
        self.status == "pending_review"
    }
}

/// A recorded resolution of one conflict of a pending merge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MergeResolution {
    /// The lineage.
    pub lineage: EventId,
    /// `keep_source`, `keep_destination` or `custom`.
    #[schema(value_type = String)]
    pub resolution: ConflictResolution,
    /// The custom outcome's description (Custom Merge only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The custom outcome's time (Custom Merge only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub time: Option<Instant>,
    /// Who chose it.
    #[schema(value_type = String)]
    pub by: Traveller,
}

/// `review-conflicts`: the open conflicts of pending merges into a timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReviewQuery {
    /// The destination of the pending merges.
    pub merged_timeline_id: TimelineId,
    /// Only this pending merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_id: Option<MergeId>,
}

/// One conflict of a pending merge, recomputed against the destination as it stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReviewConflict {
    /// The lineage (the id of its first event).
    pub event_id: EventId,
    /// The source's outcome: its description, with " at <time>" when the two sides' times
    /// differ.
    pub source_outcome: String,
    /// The destination's outcome, written the same way.
    pub destination_outcome: String,
    /// The pending merge.
    pub merge_id: MergeId,
    /// Where the changes come from.
    pub source_timeline_id: TimelineId,
    /// The lineage at the branch point (absent for a lineage both sides added).
    pub base: Option<EventRecord>,
    /// The source's current event of the lineage.
    pub source: EventRecord,
    /// The destination's current event of the lineage.
    pub destination: EventRecord,
    /// The resolution recorded so far, if any.
    #[schema(value_type = Option<String>)]
    pub resolution: Option<ConflictResolution>,
    /// The resolutions this conflict allows (only "Keep Event B" for a fixed point).
    pub allowed: Vec<String>,
}

/// What `review-conflicts` answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConflictReview {
    /// The conflicts, by merge then lineage.
    pub conflicts: Vec<ReviewConflict>,
    /// "Keep Event A" (the source's outcome), "Keep Event B" (the destination's), "Custom
    /// Merge".
    pub resolution_options: Vec<String>,
    /// Each merge waiting for review into the timeline, with how many of its conflicts are
    /// open now: one with none open is completed by `resolve-conflict` on a lineage it weighed
    /// or by merging again with `manual_review`.
    #[serde(default)]
    #[schema(required = true)]
    pub merges: Vec<PendingReview>,
}

/// A merge waiting for review, as `review-conflicts` finds it now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PendingReview {
    /// The merge.
    pub merge_id: MergeId,
    /// Where its changes come from.
    pub source_timeline_id: TimelineId,
    /// Its conflicts still without a resolution.
    pub open_conflicts: usize,
    /// Its conflicts resolved already.
    pub resolved_conflicts: usize,
}

/// `resolve-conflict`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResolveRequest {
    /// The lineage id, or any event id of it on either side.
    pub event_id: EventId,
    /// "Keep Event A", "Keep Event B" or "Custom Merge" (any case; or `keep_source`,
    /// `keep_destination`, `custom`).
    #[schema(value_type = String)]
    pub resolution: ConflictResolution,
    /// The new outcome (the `manipulate-event` shape): required with Custom Merge, refused
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_outcome: Option<NewOutcome>,
    /// The pending merge, when several conflict on this lineage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_id: Option<MergeId>,
    /// The destination, to narrow the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_timeline_id: Option<TimelineId>,
    /// Refuse a completion that would add a paradox to the destination (default true).
    #[serde(default = "yes")]
    pub safety_check: bool,
}

fn yes() -> bool {
    true
}

/// What `resolve-conflict` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResolveResult {
    /// `resolved`.
    pub status: String,
    /// The `event_id` as given.
    pub resolved_event_id: EventId,
    /// The pending merge.
    pub merge_id: MergeId,
    /// `pending_review` while conflicts remain, `merged` once this resolution completed it.
    pub merge_status: String,
    /// Conflicts still without a resolution.
    pub remaining_conflicts: usize,
    /// The destination's events written (on completion).
    pub written: Vec<WrittenEvent>,
    /// The source's data entries copied into the destination (on completion).
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub data_entries: Vec<DataId>,
    /// Paradoxes the completion added (only with `safety_check: false`).
    pub paradoxes: Vec<Paradox>,
    /// Who completed the merge, once this resolution completed it (as the merge keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub completed_by: Option<Traveller>,
    /// When this resolution completed the merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub completed_at: Option<Instant>,
}

/// `timelines diff A B`: how each lineage changed since the branch point, from A into B.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DiffQuery {
    /// The source side (A).
    pub source_timeline_id: TimelineId,
    /// The destination side (B).
    pub destination_timeline_id: TimelineId,
}

/// One lineage of a diff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DiffLine {
    /// The lineage.
    pub lineage: EventId,
    /// `incoming`, `added`, `kept`, `convergent` or `conflict`.
    pub class: String,
    /// At the branch point.
    pub base: Option<EventRecord>,
    /// In the source.
    pub source: Option<EventRecord>,
    /// In the destination.
    pub destination: Option<EventRecord>,
}

/// What merging A into B would weigh, lineage by lineage; nothing is written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TimelineDiff {
    /// The source.
    pub source_timeline_id: TimelineId,
    /// The destination.
    pub destination_timeline_id: TimelineId,
    /// The branch whose creation-time copy of its parent is the base.
    pub base_timeline_id: TimelineId,
    /// Changed lineages in lineage order.
    pub lines: Vec<DiffLine>,
    /// The source's data entries a merge would copy (those the destination lacks), in time
    /// order.
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub data_entries: Vec<DataId>,
}

/// What `isolate-event` isolates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IsolationType {
    /// Every event on a causal cycle through the event (just the event when it lies on
    /// none).
    #[default]
    ClosedLoop,
    /// The event alone.
    Event,
}

/// `isolate-event`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IsolateRequest {
    /// The event (a current event).
    pub event_id: EventId,
    /// `closed_loop` (default) or `event`.
    #[serde(default)]
    pub isolation_type: IsolationType,
    /// What the isolation is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The timeline (default: where the traveller is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline_id: Option<TimelineId>,
}

/// A causal edge an isolation cuts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SeveredEdge {
    /// The effect.
    pub effect: EventId,
    /// Its cause.
    pub cause: EventId,
}

/// An isolation: an overlay on a timeline; no event is rewritten.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Isolation {
    /// The isolation.
    pub isolation_id: IsolationId,
    /// `isolated`.
    pub status: String,
    /// What it is for.
    pub description: String,
    /// The timeline.
    pub timeline_id: TimelineId,
    /// `closed_loop` or `event`.
    pub isolation_type: IsolationType,
    /// The member lineages.
    pub members: Vec<EventId>,
    /// The causal edges between a member and a non-member, when it was made.
    pub severed: Vec<SeveredEdge>,
    /// The paradoxes it stopped reporting, when it was made.
    pub contained: Vec<Paradox>,
    /// The paradoxes still reported that name a member, when it was made: order among an
    /// isolation's members still counts (guide §4), and a loop's events cannot all follow
    /// their causes, so isolating a loop contains the loop but not that.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<Paradox>,
    /// Who made it.
    #[schema(value_type = String)]
    pub by: Traveller,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: Instant,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolutions_read_the_guides_words_and_the_aliases_in_any_case() {
        for (word, expected) in [
            ("Keep Event A", ConflictResolution::KeepSource),
            ("keep event a", ConflictResolution::KeepSource),
            ("KEEP_SOURCE", ConflictResolution::KeepSource),
            ("Keep Event B", ConflictResolution::KeepDestination),
            ("keep-destination", ConflictResolution::KeepDestination),
            ("Custom Merge", ConflictResolution::Custom),
            ("custom", ConflictResolution::Custom),
        ] {
            assert_eq!(word.parse::<ConflictResolution>(), Ok(expected), "{word}");
        }
        let err = "Keep Event C".parse::<ConflictResolution>().unwrap_err();
        assert_eq!(err.field, "resolution");
        assert!(err.message.contains("Keep Event A"), "{}", err.message);
    }
}
