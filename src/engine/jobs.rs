//! The engine's scheduler: finds scripts and jobs that are due and runs each in one write.
//!
//! A run is planned against the latest world inside the write, so a job another process ran
//! meanwhile is seen as done and skipped; its changes and its `Ran` record are appended in one
//! batch (see `crate::automation`).

use std::sync::Arc;
use std::time::Duration;

use super::Engine;
use super::rules::{self, Ctx};
use super::world::{Op, World};
use crate::automation::{Due, ScriptStatus, manipulation_for};
use crate::error::ServiceError;
use crate::model::{EventId, Instant, TimelineId};
use crate::service::{Action, LogEntry};

/// What is due at `now`, oldest first.
pub fn due(world: &World, now: Instant) -> Vec<Due> {
    let mut due: Vec<(Instant, Due)> = Vec::new();
    for job in world.jobs.values() {
        if job.status.is_pending() && job.due <= now {
            due.push((job.due, Due::Job(job.id.clone())));
        }
    }
    for script in world.scripts.values() {
        if script_due(world, script, now) {
            due.push((script.created_at, Due::Script(script.id.clone())));
        }
    }
    due.sort_by_key(|(at, _)| *at);
    due.into_iter().map(|(_, d)| d).collect()
}

fn script_due(world: &World, script: &crate::automation::ScriptRecord, now: Instant) -> bool {
    if script.status != ScriptStatus::Active {
        return false;
    }
    if script.triggered {
        return true;
    }
    let Some(check_date) = script.conditions.check_date else {
        return false;
    };
    if check_date > now {
        return false;
    }
    match &script.conditions.status_check {
        None => true,
        Some(wanted) => world
            .timelines
            .get(&script.timeline)
            .and_then(|t| t.history.get(&script.trigger))
            .is_some_and(|e| e.status.as_str() == wanted),
    }
}

/// The ops that running `due` makes, or `None` when it is no longer due (another writer ran it).
pub fn plan(
    world: &World,
    due: &Due,
    now: Instant,
    mint: &dyn Fn() -> ulid::Ulid,
) -> Option<Vec<Op>> {
    let (owner, operator, timeline, actions, source) = match due {
        Due::Job(id) => {
            let job = world
                .jobs
                .get(id)
                .filter(|j| j.status.is_pending() && j.due <= now)?;
            (
                job.owner.clone(),
                job.operator,
                job.timeline.clone(),
                job.actions.clone(),
                id.to_string(),
            )
        }
        Due::Script(id) => {
            let script = world
                .scripts
                .get(id)
                .filter(|s| script_due(world, s, now))?;
            (
                script.owner.clone(),
                script.operator,
                script.timeline.clone(),
                script.actions.clone(),
                id.to_string(),
            )
        }
    };
    let mut scratch = world.clone();
    let mut ops = Vec::new();
    let mut entries = Vec::new();
    for action in &actions {
        let ctx = Ctx {
            traveller: &owner,
            now,
            mint,
            operator,
        };
        // With the owner's rights now, as if they made the change themselves (a traveller who
        // lost write, or was restricted, sees it fail here and in the monitor): checked first,
        // so a failure never describes what they may no longer read.
        let outcome = super::access::may_change(&scratch, &owner, operator, &timeline)
            .and_then(|()| run_action(&scratch, &ctx, &timeline, action))
            .and_then(|done| {
                super::access::permit(&scratch, &owner, operator, std::slice::from_ref(&done.0))
                    .map(|()| done)
            });
        let entry = match outcome {
            Ok((op, new_event, taken)) => {
                if scratch.apply(scratch.seq + 1, op.clone()).is_err() {
                    // Cannot happen for an op the rules just produced; log it rather than panic.
                    failed(
                        now,
                        action,
                        &timeline,
                        &source,
                        "the change could not be applied".into(),
                    )
                } else {
                    ops.push(op);
                    LogEntry {
                        owner: None,
                        timestamp: now,
                        event_id: action.event_id.clone(),
                        action_taken: taken,
                        timeline_id: timeline.clone(),
                        outcome: "done".into(),
                        source: source.clone(),
                        new_event_id: new_event,
                    }
                }
            }
            Err(e) => failed(now, action, &timeline, &source, e.to_string()),
        };
        entries.push(entry);
    }
    let succeeded = entries.iter().all(|e| e.outcome == "done");
    ops.push(Op::Ran {
        due: due.clone(),
        succeeded,
        entries,
    });
    Some(ops)
}

fn failed(
    now: Instant,
    action: &Action,
    timeline: &TimelineId,
    source: &str,
    why: String,
) -> LogEntry {
    LogEntry {
        owner: None,
        timestamp: now,
        event_id: action.event_id.clone(),
        action_taken: format!("{} failed: {why}", action.action_type),
        timeline_id: timeline.clone(),
        outcome: "failed".into(),
        source: source.to_owned(),
        new_event_id: None,
    }
}

/// One action on the current head of its lineage: the op, the event it made, and a sentence.
fn run_action(
    world: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
    action: &Action,
) -> Result<(Op, Option<EventId>, String), ServiceError> {
    let state = rules::referenced(world, timeline)?;
    match action.action_type.as_str() {
        "revert" => {
            let (op, original, undone) = rules::revert(world, ctx, timeline, &action.event_id)?;
            Ok((
                op,
                Some(original.clone()),
                format!("reverted {undone}; {original} stands again"),
            ))
        }
        _ => {
            let head = state
                .history
                .head_of(&action.event_id)
                .ok_or_else(|| ServiceError::unknown("event", &action.event_id))?
                .id
                .clone();
            let req = manipulation_for(action, timeline, &head);
            let (op, new) = rules::manipulate(world, ctx, timeline, &req)?;
            Ok((
                op,
                Some(new.id.clone()),
                format!("manipulated {head} into {}", new.id),
            ))
        }
    }
}

impl Engine {
    /// Runs everything due now, each in its own write. Returns how many ran here.
    pub async fn run_due(&self) -> Result<usize, ServiceError> {
        let world = self.snapshot().await?;
        let mut ran = 0;
        for item in due(&world, self.now()) {
            let mint = || self.mint();
            // Automation is logged as its owner's doing.
            let owner = match &item {
                Due::Script(id) => world.scripts.get(id).map(|s| s.owner.clone()),
                Due::Job(id) => world.jobs.get(id).map(|j| j.owner.clone()),
            };
            let did = self
                .write(owner.as_ref(), |world, now| {
                    match plan(world, &item, now, &mint) {
                        Some(ops) => {
                            let succeeded = ops.iter().any(|op| {
                                matches!(
                                    op,
                                    Op::Ran {
                                        succeeded: true,
                                        ..
                                    }
                                )
                            });
                            Ok((ops, Some(succeeded)))
                        }
                        None => Ok((Vec::new(), None)),
                    }
                })
                .await?;
            if let Some(succeeded) = did {
                ran += 1;
                metrics::counter!(crate::metrics::JOBS_RUN).increment(1);
                if !succeeded {
                    metrics::counter!(crate::metrics::JOBS_FAILED).increment(1);
                }
            }
        }
        Ok(ran)
    }

    /// Runs the scheduler in the background every `period` until the engine is dropped.
    pub fn spawn_scheduler(self: &Arc<Self>, period: Duration) -> tokio::task::JoinHandle<()> {
        let engine = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                if let Err(e) = engine.run_due().await {
                    tracing::warn!(error = %e, "scheduler run failed; retrying on the next tick");
                }
            }
        })
    }
}

/// Failed automation in `timeline`, everyone's, for the monitor (shared like the timeline).
pub fn failures(world: &World, timeline: &TimelineId) -> Vec<crate::monitor::AutomationFailure> {
    world
        .failed_in(timeline)
        .into_iter()
        .flatten()
        .map(|r| crate::monitor::AutomationFailure {
            source: r.entry.source.clone(),
            event_id: r.entry.event_id.clone(),
            message: r.entry.action_taken.clone(),
            at: r.entry.timestamp,
        })
        .collect()
}
