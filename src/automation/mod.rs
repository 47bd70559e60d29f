//! Automation: scripts, scheduled and externally triggered manipulations, the automation log.
//!
//! Scripts and jobs are records of the engine's log like everything else. Running one is a
//! single write whose batch holds the manipulations it made *and* the record that it ran, so a
//! crash either keeps both or neither (it runs again after a restart), and two replicas racing
//! for the same job cannot both win: the loser's append conflicts, it catches up, and finds the
//! job already done. That is what "exactly once" rests on, on SQLite and PostgreSQL alike.
//!
//! This module holds the records and their rules; the engine's `jobs` module finds what is due
//! and runs it.

use serde::{Deserialize, Serialize};

use crate::error::ServiceError;
use crate::model::{EventId, Instant, ScheduleId, ScriptId, TimelineId, Traveller};
use crate::service::{
    Action, LogEntry, ManipulateRequest, ManipulationDetails, NewOutcome, OutcomeChange,
    ScriptConditions,
};

/// Whether a script can still fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptStatus {
    /// Waiting for its trigger.
    Active,
    /// Fired; every action succeeded.
    Fired,
    /// Fired; at least one action failed (see the automation log).
    Failed,
}

impl ScriptStatus {
    /// The word used in responses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Fired => "fired",
            Self::Failed => "failed",
        }
    }
}

/// A stored script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptRecord {
    /// Its id.
    pub id: ScriptId,
    /// Whose it is.
    pub owner: Traveller,
    /// Its name.
    pub name: String,
    /// The timeline it watches and acts in.
    pub timeline: TimelineId,
    /// The lineage whose manipulation or revert fires it.
    pub trigger: EventId,
    /// Date and status conditions.
    pub conditions: ScriptConditions,
    /// What it does.
    pub actions: Vec<Action>,
    /// When it was stored.
    pub created_at: Instant,
    /// Whether it can still fire.
    pub status: ScriptStatus,
    /// Set when its trigger lineage was manipulated or reverted: it fires on the next run.
    pub triggered: bool,
    /// Whether an operator made it: it runs with every right (older records: no).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
}

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Waiting for its time (a scheduled manipulation).
    Scheduled,
    /// Waiting for its time (an external trigger).
    Triggered,
    /// Ran; every action succeeded.
    Done,
    /// Ran; at least one action failed.
    Failed,
    /// Cancelled before it ran.
    Cancelled,
}

impl JobStatus {
    /// The word used in responses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Triggered => "triggered",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the job has yet to run.
    pub fn is_pending(self) -> bool {
        matches!(self, Self::Scheduled | Self::Triggered)
    }
}

/// A scheduled manipulation or an external trigger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Its id.
    pub id: ScheduleId,
    /// Whose it is.
    pub owner: Traveller,
    /// The timeline it acts in.
    pub timeline: TimelineId,
    /// When it runs (wall clock).
    pub due: Instant,
    /// Its actions.
    pub actions: Vec<Action>,
    /// The outside system, for external triggers.
    pub external_system: Option<String>,
    /// The outside build status, for external triggers.
    pub build_status: Option<String>,
    /// Where it stands.
    pub status: JobStatus,
    /// When it was created.
    pub created_at: Instant,
    /// Whether an operator made it: it runs with every right (older records: no).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
}

/// One automation log entry, with its owner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    /// Whose automation it was.
    pub owner: Traveller,
    /// The entry.
    pub entry: LogEntry,
}

/// Something due to run, and what ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Due {
    /// A script.
    Script(ScriptId),
    /// A job.
    Job(ScheduleId),
}

/// The action a schedule's manipulation details amount to.
pub fn schedule_action(event_id: &EventId, details: &ManipulationDetails) -> Action {
    Action {
        action_type: "manipulate".into(),
        event_id: event_id.clone(),
        new_time: details.new_time,
        new_details: details.new_details.clone(),
    }
}

/// The action words accepted, each with the canonical word stored and shown in the log:
/// ours, and the one the public Warp guides use (`modify_event`).
pub const ACTION_WORDS: [(&str, &str); 3] = [
    ("manipulate", "manipulate"),
    ("revert", "revert"),
    ("modify_event", "manipulate"),
];

/// The canonical word for an accepted action word.
pub fn canonical_action(word: &str) -> Option<&'static str> {
    ACTION_WORDS
        .iter()
        .find(|(w, _)| *w == word)
        .map(|(_, canonical)| *canonical)
}

/// Validates actions as they are stored (known types, something to change) and returns them
/// with canonical action words.
pub fn validate_actions(actions: &[Action]) -> Result<Vec<Action>, ServiceError> {
    if actions.is_empty() {
        return Err(ServiceError::invalid("actions", "give at least one action"));
    }
    if actions.len() > 100 {
        return Err(ServiceError::invalid("actions", "at most 100 actions"));
    }
    let mut canonical = Vec::with_capacity(actions.len());
    for (i, a) in actions.iter().enumerate() {
        crate::model::opt_in_range(&format!("actions[{i}].new_time"), a.new_time)?;
        let Some(word) = canonical_action(&a.action_type) else {
            let words: Vec<&str> = ACTION_WORDS.iter().map(|(w, _)| *w).collect();
            return Err(ServiceError::invalid(
                format!("actions[{i}].action_type"),
                format!(
                    "'{}' is not an action; use {}",
                    a.action_type,
                    words.join(", ")
                ),
            ));
        };
        if word == "manipulate"
            && a.new_time.is_none()
            && a.new_details.as_deref().is_none_or(|d| d.trim().is_empty())
        {
            return Err(ServiceError::invalid(
                format!("actions[{i}]"),
                "a manipulate action needs new_time or new_details",
            ));
        }
        canonical.push(Action {
            action_type: word.to_owned(),
            ..a.clone()
        });
    }
    Ok(canonical)
}

/// The manipulation request an action amounts to, acting on `head` of its lineage.
pub fn manipulation_for(
    action: &Action,
    timeline: &TimelineId,
    head: &EventId,
) -> ManipulateRequest {
    ManipulateRequest {
        timeline_id: Some(timeline.clone()),
        event_id: head.clone(),
        new_outcome: NewOutcome {
            description: action.new_details.clone(),
            changes: vec![OutcomeChange {
                action: Some(action.action_type.clone()),
                time: action.new_time,
            }],
        },
        safety_check: false,
    }
}

/// How a script or job presents itself to clients.
pub fn script_view(s: &ScriptRecord) -> crate::service::Script {
    crate::service::Script {
        script_id: s.id.clone(),
        owner: Some(s.owner.clone()),
        status: s.status.as_str().into(),
        script_name: s.name.clone(),
        trigger_event_id: s.trigger.clone(),
        conditions: s.conditions.clone(),
        actions: s.actions.clone(),
        timeline_id: s.timeline.clone(),
        created_at: s.created_at,
    }
}

/// How a job presents itself to clients.
pub fn job_view(j: &Job) -> crate::service::Schedule {
    crate::service::Schedule {
        schedule_id: j.id.clone(),
        owner: Some(j.owner.clone()),
        status: j.status.as_str().into(),
        scheduled_time: j.due,
        timeline_id: j.timeline.clone(),
        actions: j.actions.clone(),
        external_system: j.external_system.clone(),
    }
}
