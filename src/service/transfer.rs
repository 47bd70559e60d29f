//! Timelines as files: the world-file format (`assets/worlds/demo.json`, `timelines export`,
//! `timelines import`) and what an import answers.
//!
//! A world file holds timelines, parents before branches, each with its events. An event's
//! versions (a manipulated lineage, an undone manipulation) are events of their own that say
//! where they stand (`status`) and which version they replaced (`supersedes`); a hand-written
//! file may instead list `manipulations` after the events, or `steps` across timelines.

use serde::{Deserialize, Serialize};

use crate::model::{EventId, EventStatus, Instant, MergeId, TimelineId, Traveller, Window};
use crate::paradox::Paradox;

/// What `format` says in a world file (optional on import).
pub const WORLD_FORMAT: &str = "chronoscope-world";

/// The version of the format this build writes and reads (optional on import: 1).
pub const WORLD_VERSION: u32 = 1;

/// A world file: timelines in creation order, parents before branches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldFile {
    /// `chronoscope-world` (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The format's version, 1 (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The timelines, parents before their branches.
    pub timelines: Vec<WorldTimeline>,
    /// Changes made after the timelines, in this order, across timelines: what a history of
    /// branches, changes on both sides and merges needs (a pending merge's conflict).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<WorldStep>,
}

/// One ordered step of a world file, after its timelines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum WorldStep {
    /// A manipulation in a timeline.
    Manipulate(WorldStepManipulate),
    /// A branch created now, from its parent as it stands.
    Branch(WorldTimeline),
    /// A manipulation undone.
    Revert(WorldStepRevert),
    /// A merge recorded for manual review.
    PendingMerge(WorldStepPendingMerge),
}

/// A step's manipulation in a timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldStepManipulate {
    /// Where.
    pub timeline: TimelineId,
    /// The event changed (any version of its lineage that is current there).
    pub event_id: EventId,
    /// The id of the new head.
    pub new_id: EventId,
    /// Its description.
    pub description: String,
    /// Its time.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
}

/// A step's revert: a manipulation undone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldStepRevert {
    /// Where.
    pub timeline: TimelineId,
    /// The head undone.
    pub head: EventId,
}

/// A step's merge of `source` into `destination` recorded for manual review: nothing is
/// written into the destination until its conflicts are resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldStepPendingMerge {
    /// The merge's id.
    pub id: MergeId,
    /// Where the changes come from (a branch of the destination).
    pub source: TimelineId,
    /// Where they would be written.
    pub destination: TimelineId,
    /// Who asked for it.
    pub by: Traveller,
}

/// One timeline of a world file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldTimeline {
    /// Its id (`primary` or `tml_...`, or any id of letters, digits, `_`, `-`, `.`).
    pub id: TimelineId,
    /// Its name.
    pub name: String,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How it differs from its parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variation: Option<String>,
    /// The timeline it branches from: one earlier in the file, or (on import) one in the
    /// store. A branch also holds its parent's events as they stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<TimelineId>,
    /// Its window in words (default: the engine's default window; `primary` is unbounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// Where journeys into it arrive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub destination_time: Option<Instant>,
    /// Events of its own (a branch also sees its parent's).
    #[serde(default)]
    pub events: Vec<WorldEvent>,
    /// Manipulations already made in it, applied after its events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manipulations: Vec<WorldManipulation>,
}

/// One event of a world file: one version of a lineage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldEvent {
    /// Its id.
    pub id: EventId,
    /// What happened.
    pub description: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// Where.
    pub location: String,
    /// What it depends on: events of the same timeline (its own or, for a branch, its
    /// parent's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<EventId>,
    /// Whether it is a fixed point.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed_point: bool,
    /// Where it stands in its lineage (default `on_schedule`): `manipulated` (the current
    /// head of a changed lineage), `superseded` or `reverted` (history kept).
    #[serde(default = "on_schedule", skip_serializing_if = "is_on_schedule")]
    pub status: EventStatus,
    /// The version it replaced (required unless `on_schedule`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<EventId>,
    /// The version that replaced it (required when `superseded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<EventId>,
}

fn on_schedule() -> EventStatus {
    EventStatus::OnSchedule
}

fn is_on_schedule(status: &EventStatus) -> bool {
    *status == EventStatus::OnSchedule
}

/// A manipulation already made in a world file's timeline: the new version keeps the place
/// and causes of the version it replaces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldManipulation {
    /// The event changed.
    pub event_id: EventId,
    /// The id of the new head.
    pub new_id: EventId,
    /// Its description.
    pub description: String,
    /// Its time.
    #[schema(value_type = String, format = DateTime)]
    pub time: Instant,
    /// The manipulation was undone again: `new_id` stays in the lineage's history, reverted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reverted: bool,
}

/// Reports how far a long import has come: `(done, total)` events.
pub type ImportProgress = std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>;

/// `timelines import`: a world file, as its text (errors name its lines).
#[derive(Clone, Default)]
pub struct ImportRequest {
    /// The file's text.
    pub document: String,
    /// Refuse an import that leaves a paradox standing in a timeline it creates (default);
    /// `false` imports anyway and lists them.
    pub safety_check: bool,
    /// Told as events are checked (the embedded engine only).
    pub progress: Option<ImportProgress>,
}

impl std::fmt::Debug for ImportRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportRequest")
            .field("document", &format_args!("{} bytes", self.document.len()))
            .field("safety_check", &self.safety_check)
            .finish_non_exhaustive()
    }
}

/// What an import created.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ImportReport {
    /// The timelines created, in the file's order.
    pub timelines: Vec<ImportedTimeline>,
    /// Event versions written, in all.
    pub events: usize,
    /// Every id the file gave that was taken here, with the id used instead.
    pub remapped: Vec<Remapped>,
}

/// One timeline an import created.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ImportedTimeline {
    /// Its id here.
    pub id: TimelineId,
    /// Its id in the file.
    pub from: TimelineId,
    /// Its name.
    pub name: String,
    /// Event versions of its own written (a branch's inherited ones not counted).
    pub events: usize,
    /// Paradoxes standing in it that its parent does not have (only with the safety check
    /// off; with it on, any refuses the import).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paradoxes: Vec<Paradox>,
}

/// An id taken here, and the one used instead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Remapped {
    /// `timeline`, `event` or `merge`.
    pub kind: String,
    /// For an event: the timeline (its id here) it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<TimelineId>,
    /// The id in the file.
    pub from: String,
    /// The id used.
    pub to: String,
}

impl WorldFile {
    /// The file as text, written as `assets/worlds/demo.json` is: one event (or step) per
    /// line, so a refusal's line number points at one event.
    pub fn to_text(&self) -> Result<String, serde_json::Error> {
        let mut fields: Vec<String> = Vec::new();
        if let Some(format) = &self.format {
            fields.push(member("format", format)?);
        }
        if let Some(version) = &self.version {
            fields.push(member("version", version)?);
        }
        let mut timelines = Vec::with_capacity(self.timelines.len());
        for tl in &self.timelines {
            timelines.push(timeline_text(tl)?);
        }
        fields.push(format!(
            "\"timelines\": [\n{}\n  ]",
            indent_lines(&timelines.join(",\n"), "    ")
        ));
        if !self.steps.is_empty() {
            fields.push(format!("\"steps\": {}", lines_array(&self.steps, "    ")?));
        }
        Ok(format!("{{\n  {}\n}}\n", fields.join(",\n  ")))
    }
}

/// `"key": value`, the value compact.
fn member(key: &str, value: &impl Serialize) -> Result<String, serde_json::Error> {
    Ok(format!("\"{key}\": {}", serde_json::to_string(value)?))
}

/// An array with one compact element per line, each indented by `indent`.
fn lines_array<T: Serialize>(items: &[T], indent: &str) -> Result<String, serde_json::Error> {
    if items.is_empty() {
        return Ok("[]".into());
    }
    let mut lines = Vec::with_capacity(items.len());
    for item in items {
        lines.push(format!("{indent}{}", serde_json::to_string(item)?));
    }
    let close = indent.get(2..).unwrap_or("");
    Ok(format!("[\n{}\n{close}]", lines.join(",\n")))
}

fn indent_lines(text: &str, indent: &str) -> String {
    text.lines()
        .map(|l| format!("{indent}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One timeline: its fields one per line, its events and manipulations one per line.
fn timeline_text(tl: &WorldTimeline) -> Result<String, serde_json::Error> {
    let mut fields = vec![member("id", &tl.id)?, member("name", &tl.name)?];
    if let Some(v) = &tl.description {
        fields.push(member("description", v)?);
    }
    if let Some(v) = &tl.variation {
        fields.push(member("variation", v)?);
    }
    if let Some(v) = &tl.parent {
        fields.push(member("parent", v)?);
    }
    if let Some(v) = &tl.window {
        fields.push(member("window", v)?);
    }
    if let Some(v) = &tl.destination_time {
        fields.push(member("destination_time", v)?);
    }
    fields.push(format!("\"events\": {}", lines_array(&tl.events, "    ")?));
    if !tl.manipulations.is_empty() {
        fields.push(format!(
            "\"manipulations\": {}",
            lines_array(&tl.manipulations, "    ")?
        ));
    }
    Ok(format!("{{\n  {}\n}}", fields.join(",\n  ")))
}
