//! What a new, empty store is filled with: the `primary` timeline always, and with
//! `--seed demo` the world in `assets/worlds/demo.json`.

use std::collections::HashMap;
use std::str::FromStr;

use super::world::Op;
use crate::error::ServiceError;
use crate::model::{Event, EventId, EventStatus, Instant, Timeline, TimelineId, Window};
pub use crate::service::{
    WorldEvent, WorldFile, WorldManipulation, WorldStep, WorldStepManipulate,
    WorldStepPendingMerge, WorldStepRevert, WorldTimeline,
};

/// The demo world shipped with the binary.
const DEMO_WORLD: &str = include_str!("../../assets/worlds/demo.json");

/// What to fill a new store with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Seed {
    /// A history worth exploring: centuries of events, causal chains, fixed points, branches.
    Demo,
    /// Only the empty `primary` timeline.
    None,
}

impl FromStr for Seed {
    type Err = ServiceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "demo" => Ok(Seed::Demo),
            "none" => Ok(Seed::None),
            other => Err(ServiceError::invalid(
                "seed",
                format!("'{other}' is not a seed; use demo or none"),
            )),
        }
    }
}

impl WorldFile {
    /// The demo world.
    pub fn demo() -> Result<Self, ServiceError> {
        serde_json::from_str(DEMO_WORLD)
            .map_err(|e| ServiceError::Internal(format!("the bundled demo world is invalid: {e}")))
    }

    /// The ops that create this world, all timelines created at `now`.
    ///
    /// A manipulation's new event keeps the place and causes of the event it replaces.
    pub fn ops(self, now: Instant, default_window: Window) -> Vec<Op> {
        let mut ops = Vec::new();
        if !self.timelines.iter().any(|t| t.id.is_primary()) {
            ops.push(Op::CreateTimeline {
                timeline: primary_timeline(now),
            });
        }
        let mut known: HashMap<EventId, Known> = HashMap::new();
        for tl in self.timelines {
            timeline_ops(&mut ops, &mut known, tl, now, default_window);
        }
        for step in self.steps {
            match step {
                WorldStep::Manipulate(WorldStepManipulate {
                    timeline,
                    event_id,
                    new_id,
                    description,
                    time,
                }) => manipulation_ops(
                    &mut ops,
                    &mut known,
                    &timeline,
                    WorldManipulation {
                        event_id,
                        new_id,
                        description,
                        time,
                        reverted: false,
                    },
                ),
                WorldStep::Branch(tl) => {
                    timeline_ops(&mut ops, &mut known, tl, now, default_window)
                }
                WorldStep::Revert(WorldStepRevert { timeline, head }) => ops.push(Op::Revert {
                    timeline,
                    head,
                    at: None,
                }),
                WorldStep::PendingMerge(WorldStepPendingMerge {
                    id,
                    source,
                    destination,
                    by,
                }) => ops.push(Op::Merge {
                    merge: crate::service::Merge {
                        merge_id: id,
                        // The seed's merges are of a branch into its parent.
                        base_timeline_id: source.clone(),
                        source_timeline_id: source,
                        destination_timeline_id: destination,
                        strategy: crate::service::MergeStrategy::ManualReview,
                        by,
                        at: now,
                        status: "pending_review".into(),
                        decisions: Vec::new(),
                        resolutions: Vec::new(),
                        completed_by: None,
                        completed_at: None,
                    },
                }),
            }
        }
        ops
    }
}

/// What the world file said of an event: its place, causes and lineage.
type Known = (String, Vec<EventId>, EventId);

/// The ops that create one timeline of a world file, with its events and manipulations.
fn timeline_ops(
    ops: &mut Vec<Op>,
    known: &mut HashMap<EventId, Known>,
    tl: WorldTimeline,
    now: Instant,
    default_window: Window,
) {
    let window = if tl.id.is_primary() {
        Window::Unbounded
    } else {
        tl.window.unwrap_or(default_window)
    };
    ops.push(Op::CreateTimeline {
        timeline: Timeline {
            id: tl.id.clone(),
            name: tl.name,
            description: tl.description,
            variation: tl.variation,
            destination_time: tl.destination_time,
            created_at: now,
            window,
            parent: tl.parent,
            created_by: None,
        },
    });
    for e in &tl.events {
        known.insert(
            e.id.clone(),
            (e.location.clone(), e.causes.clone(), e.id.clone()),
        );
    }
    if !tl.events.is_empty() {
        let lineages = super::transfer::lineages(&tl.events);
        ops.push(Op::AddEvents {
            timeline: tl.id.clone(),
            events: tl
                .events
                .into_iter()
                .zip(lineages)
                .map(|(e, lineage)| into_event(e, lineage))
                .collect(),
            at: None,
        });
    }
    for m in tl.manipulations {
        manipulation_ops(ops, known, &tl.id, m);
    }
}

/// The ops of one manipulation of a world file (and its revert, if it was undone). The new
/// event keeps the place and causes of the event it replaces and joins its lineage.
fn manipulation_ops(
    ops: &mut Vec<Op>,
    known: &mut HashMap<EventId, Known>,
    timeline: &TimelineId,
    m: WorldManipulation,
) {
    let (location, causes, lineage) = known
        .get(&m.event_id)
        .cloned()
        .unwrap_or_else(|| (String::new(), Vec::new(), m.event_id.clone()));
    known.insert(
        m.new_id.clone(),
        (location.clone(), causes.clone(), lineage.clone()),
    );
    ops.push(Op::Manipulate {
        timeline: timeline.clone(),
        old: m.event_id.clone(),
        new: Event {
            id: m.new_id.clone(),
            description: m.description,
            time: m.time,
            location,
            causes,
            fixed_point: false,
            status: EventStatus::Manipulated,
            supersedes: Some(m.event_id),
            superseded_by: None,
            lineage,
            author: None,
        },
        at: None,
    });
    if m.reverted {
        ops.push(Op::Revert {
            timeline: timeline.clone(),
            head: m.new_id,
            at: None,
        });
    }
}

/// A world file's event as the engine's, in `lineage`.
fn into_event(e: WorldEvent, lineage: EventId) -> Event {
    Event {
        lineage,
        id: e.id,
        description: e.description,
        time: e.time,
        location: e.location,
        causes: e.causes,
        fixed_point: e.fixed_point,
        status: e.status,
        supersedes: e.supersedes,
        superseded_by: e.superseded_by,
        author: None,
    }
}

/// The primary timeline as every store starts with it.
pub fn primary_timeline(now: Instant) -> Timeline {
    Timeline {
        id: TimelineId::primary(),
        name: "Primary".into(),
        description: Some("The main timeline".into()),
        variation: None,
        destination_time: None,
        created_at: now,
        window: Window::Unbounded,
        parent: None,
        created_by: None,
    }
}
