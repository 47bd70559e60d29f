//! Manual review of a merge (guide §3): a pending merge is recomputed against its destination
//! as it stands at every review and at completion; the last resolution completes it in one
//! append with the paradox check; a pending merge with no open conflict left is completed by
//! `resolve-conflict` on a lineage it weighed (or by merging again). Also the read-only diff of
//! two timelines.

use crate::error::ServiceError;
use crate::model::{DataId, Event, EventId, Instant, MergeId, TimelineId, format_instant};
use crate::paradox::Paradox;
use crate::service::{
    ConflictResolution, ConflictReview, DiffLine, DiffQuery, Merge, MergeResolution, PendingReview,
    RESOLUTION_OPTIONS, ResolveRequest, ResolveResult, ReviewConflict, ReviewQuery, TimelineDiff,
    WrittenEvent,
};

use super::merge::{self, Choice, Class, Plan};
use super::rules::{self, Ctx, event_record};
use super::world::{Op, World};

/// A side's outcome as the guide shows it: the description, with " at <time>" when the two
/// sides' times differ.
fn outcome_text(e: &Event, other: &Event) -> String {
    if e.time == other.time {
        e.description.clone()
    } else {
        format!("{} at {}", e.description, format_instant(&e.time))
    }
}

/// The plan of a pending merge against the timelines as they stand now.
fn replan<'w>(world: &'w World, m: &Merge) -> Result<Plan<'w>, ServiceError> {
    merge::plan(world, &m.source_timeline_id, &m.destination_timeline_id)
}

/// The pending merges into `dst` (all of them, or the one named), oldest first.
fn pending_into<'w>(
    world: &'w World,
    dst: Option<&TimelineId>,
    id: Option<&MergeId>,
) -> Result<Vec<&'w Merge>, ServiceError> {
    if let Some(id) = id {
        let m = world
            .merges
            .get(id)
            .filter(|m| dst.is_none_or(|d| &m.destination_timeline_id == d))
            .ok_or_else(|| ServiceError::unknown("merge", id))?;
        if !m.is_pending() {
            return Err(ServiceError::Conflict(format!(
                "merge '{id}' is {}, not waiting for review",
                m.status
            )));
        }
        return Ok(vec![&**m]);
    }
    Ok(world
        .merges
        .values()
        .filter(|m| m.is_pending() && dst.is_none_or(|d| &m.destination_timeline_id == d))
        .map(|m| &**m)
        .collect())
}

/// What a resolution asks for, as a choice the merge's writes understand.
fn choice(r: &MergeResolution) -> Choice {
    match (r.resolution, &r.description, r.time) {
        (ConflictResolution::KeepSource, _, _) => Choice::Source,
        (ConflictResolution::Custom, Some(d), Some(t)) => Choice::Custom(d.clone(), t),
        _ => Choice::Destination,
    }
}

/// `review-conflicts`: the conflicts of every pending merge into the timeline, recomputed now.
pub fn review(world: &World, q: &ReviewQuery) -> Result<ConflictReview, ServiceError> {
    rules::referenced(world, &q.merged_timeline_id)?;
    let mut conflicts = Vec::new();
    let mut merges = Vec::new();
    for m in pending_into(world, Some(&q.merged_timeline_id), q.merge_id.as_ref())? {
        let plan = replan(world, m)?;
        let open = open_conflicts(&plan, &m.resolutions).len();
        merges.push(PendingReview {
            merge_id: m.merge_id.clone(),
            source_timeline_id: m.source_timeline_id.clone(),
            open_conflicts: open,
            resolved_conflicts: plan.count(Class::Conflict) - open,
        });
        for l in plan.conflicts() {
            let (base, Some(s), Some(d)) = plan.sides(l) else {
                continue;
            };
            let allowed = if d.fixed_point {
                vec![ConflictResolution::KeepDestination.option().to_owned()]
            } else {
                RESOLUTION_OPTIONS.iter().map(|o| (*o).to_owned()).collect()
            };
            conflicts.push(ReviewConflict {
                event_id: l.clone(),
                source_outcome: outcome_text(s, d),
                destination_outcome: outcome_text(d, s),
                merge_id: m.merge_id.clone(),
                source_timeline_id: m.source_timeline_id.clone(),
                base: base.map(event_record),
                source: event_record(s),
                destination: event_record(d),
                resolution: m
                    .resolutions
                    .iter()
                    .find(|r| &r.lineage == l)
                    .map(|r| r.resolution),
                allowed,
            });
        }
    }
    Ok(ConflictReview {
        conflicts,
        resolution_options: RESOLUTION_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        merges,
    })
}

/// The custom outcome a Custom Merge asks for, from the destination's current event.
fn custom_outcome(
    d: &Event,
    req: &ResolveRequest,
) -> Result<Option<(String, Instant)>, ServiceError> {
    match (req.resolution, &req.new_outcome) {
        (ConflictResolution::Custom, None) => Err(ServiceError::invalid(
            "new_outcome",
            "is required with 'Custom Merge': give the outcome's description and/or a change \
             with its time, as for manipulate-event (on the command line: --description, --time)",
        )),
        (ConflictResolution::Custom, Some(o)) => {
            let description = match &o.description {
                Some(text) => rules::text("new_outcome.description", text)?,
                None => d.description.clone(),
            };
            let time = o
                .changes
                .iter()
                .rev()
                .find_map(|c| c.time)
                .unwrap_or(d.time);
            Ok(Some((description, time)))
        }
        (r, Some(_)) => Err(ServiceError::invalid(
            "new_outcome",
            format!(
                "is only taken with 'Custom Merge'; '{}' keeps an outcome that exists already",
                r.option()
            ),
        )),
        (_, None) => Ok(None),
    }
}

/// `resolve-conflict`: records a resolution; the last one completes the merge (its writes, the
/// paradox check and `MergeCompleted` in one append). A refused completion records nothing.
pub fn resolve(
    world: &World,
    ctx: &Ctx<'_>,
    req: &ResolveRequest,
) -> Result<(Vec<Op>, ResolveResult), ServiceError> {
    if let Some(t) = &req.merged_timeline_id {
        rules::referenced(world, t)?;
    }
    let mut found: Vec<(&Merge, Plan<'_>, EventId)> = Vec::new();
    // Pending merges that weighed the lineage and have no open conflict left.
    let mut settled: Vec<(&Merge, Plan<'_>)> = Vec::new();
    for m in pending_into(
        world,
        req.merged_timeline_id.as_ref(),
        req.merge_id.as_ref(),
    )? {
        let plan = replan(world, m)?;
        let lineage = plan
            .s
            .get(&req.event_id)
            .or_else(|| plan.d.get(&req.event_id))
            .map(|e| e.lineage.clone());
        let Some(l) = lineage else { continue };
        if plan.classes.get(&l) == Some(&Class::Conflict) {
            found.push((m, plan, l));
        } else if weighed(m, &plan, &l) && open_conflicts(&plan, &m.resolutions).is_empty() {
            settled.push((m, plan));
        }
    }
    let (m, plan, lineage) = match found.len() {
        0 => return complete_settled(world, ctx, req, settled),
        1 => found.remove(0),
        _ => {
            let ids: Vec<String> = found
                .iter()
                .map(|(m, _, _)| m.merge_id.to_string())
                .collect();
            return Err(ServiceError::Conflict(format!(
                "{} pending merges conflict on event '{}' ({}); give merge_id",
                ids.len(),
                req.event_id,
                ids.join(", ")
            )));
        }
    };
    let dst = &m.destination_timeline_id;
    rules::require_open(&rules::referenced(world, dst)?.meta, ctx.now)?;
    let (_, _, Some(d_head)) = plan.sides(&lineage) else {
        return Err(ServiceError::Internal(format!(
            "conflict on {lineage} without a destination event"
        )));
    };
    let custom = custom_outcome(d_head, req)?;
    if d_head.fixed_point && req.resolution != ConflictResolution::KeepDestination {
        return Err(ServiceError::EventLocked {
            event: d_head.id.to_string(),
            reason: format!(
                "it is a fixed point in '{dst}', so only 'Keep Event B' (the destination's \
                 outcome) can resolve this conflict"
            ),
        });
    }
    let resolution = MergeResolution {
        lineage: lineage.clone(),
        resolution: req.resolution,
        description: custom.as_ref().map(|(d, _)| d.clone()),
        time: custom.map(|(_, t)| t),
        by: ctx.traveller.clone(),
    };
    let mut resolutions: Vec<MergeResolution> = m
        .resolutions
        .iter()
        .filter(|r| r.lineage != lineage)
        .cloned()
        .collect();
    resolutions.push(resolution.clone());
    let remaining = open_conflicts(&plan, &resolutions).len();
    let mut ops = vec![Op::ResolveConflict {
        merge: m.merge_id.clone(),
        resolution,
    }];
    let mut result = ResolveResult {
        status: "resolved".into(),
        resolved_event_id: req.event_id.clone(),
        merge_id: m.merge_id.clone(),
        merge_status: merge::PENDING.into(),
        remaining_conflicts: remaining,
        written: Vec::new(),
        data_entries: Vec::new(),
        paradoxes: Vec::new(),
        completed_by: None,
        completed_at: None,
    };
    if remaining > 0 {
        return Ok((ops, result));
    }
    let done = complete(world, ctx, m, &plan, &resolutions, req.safety_check)?;
    ops.extend(done.ops);
    result.merge_status = "merged".into();
    result.completed_by = Some(ctx.traveller.clone());
    result.completed_at = Some(ctx.now);
    result.written = done.written;
    result.data_entries = done.data_entries;
    result.paradoxes = done.paradoxes;
    Ok((ops, result))
}

/// Whether pending merge `m` weighed lineage `l`: when it was recorded, by a resolution, or
/// now.
fn weighed(m: &Merge, plan: &Plan<'_>, l: &EventId) -> bool {
    m.decisions.iter().any(|d| &d.lineage == l)
        || m.resolutions.iter().any(|r| &r.lineage == l)
        || plan.classes.contains_key(l)
}

/// `resolve-conflict` on a lineage that no longer conflicts (the destination changed, say) in
/// a pending merge with no open conflict left: that merge is completed, as the last
/// resolution would. Nothing to record: there is no conflict left to choose for.
fn complete_settled(
    world: &World,
    ctx: &Ctx<'_>,
    req: &ResolveRequest,
    mut settled: Vec<(&Merge, Plan<'_>)>,
) -> Result<(Vec<Op>, ResolveResult), ServiceError> {
    let (m, plan) = match settled.len() {
        0 => {
            return Err(already_resolved(world, req).unwrap_or_else(|| {
                ServiceError::unknown("open conflict on event", &req.event_id)
            }));
        }
        1 => settled.remove(0),
        _ => {
            let ids: Vec<String> = settled
                .iter()
                .map(|(m, _)| m.merge_id.to_string())
                .collect();
            return Err(ServiceError::Conflict(format!(
                "{} pending merges weighed event '{}' and have no open conflict left ({}); give \
                 merge_id",
                ids.len(),
                req.event_id,
                ids.join(", ")
            )));
        }
    };
    rules::require_open(
        &rules::referenced(world, &m.destination_timeline_id)?.meta,
        ctx.now,
    )?;
    if req.resolution == ConflictResolution::Custom || req.new_outcome.is_some() {
        return Err(ServiceError::invalid(
            "resolution",
            format!(
                "event '{}' no longer conflicts in merge '{}' (the two sides agree or only one \
                 changed it), so there is no outcome to choose; 'Keep Event A' or 'Keep Event B' \
                 completes the merge",
                req.event_id, m.merge_id
            ),
        ));
    }
    let done = complete(world, ctx, m, &plan, &m.resolutions, req.safety_check)?;
    Ok((
        done.ops,
        ResolveResult {
            status: "resolved".into(),
            resolved_event_id: req.event_id.clone(),
            merge_id: m.merge_id.clone(),
            merge_status: "merged".into(),
            remaining_conflicts: 0,
            written: done.written,
            data_entries: done.data_entries,
            paradoxes: done.paradoxes,
            completed_by: Some(ctx.traveller.clone()),
            completed_at: Some(ctx.now),
        },
    ))
}

/// Why a resolution of a conflict that a completed merge resolved comes too late (two people
/// resolving the same conflict: the second is told who did it and when), if one did.
fn already_resolved(world: &World, req: &ResolveRequest) -> Option<ServiceError> {
    let lineage_in = |m: &Merge| {
        world
            .timelines
            .get(&m.destination_timeline_id)
            .and_then(|t| t.history.get(&req.event_id))
            .map_or_else(|| req.event_id.clone(), |e| e.lineage.clone())
    };
    let (m, r) = world
        .merges
        .values()
        .filter(|m| m.status == "merged")
        .filter(|m| req.merge_id.as_ref().is_none_or(|id| &m.merge_id == id))
        .filter(|m| {
            req.merged_timeline_id
                .as_ref()
                .is_none_or(|t| &m.destination_timeline_id == t)
        })
        .filter_map(|m| {
            let lineage = lineage_in(m);
            let r = m.resolutions.iter().find(|r| r.lineage == lineage)?;
            Some((m, r))
        })
        .max_by_key(|(m, _)| m.completed_at.unwrap_or(m.at))?;
    let when = m
        .completed_at
        .map(|at| format!(" at {}", format_instant(&at)))
        .unwrap_or_default();
    Some(ServiceError::Conflict(format!(
        "the conflict on event '{}' was already resolved by {}{when} ({}); merge '{}' into '{}' \
         is complete",
        req.event_id,
        r.by,
        r.resolution.option(),
        m.merge_id,
        m.destination_timeline_id
    )))
}

/// The conflicts of `plan` that `resolutions` leave open, in lineage order.
pub(super) fn open_conflicts<'p>(
    plan: &'p Plan<'_>,
    resolutions: &[MergeResolution],
) -> Vec<&'p EventId> {
    plan.conflicts()
        .filter(|l| !resolutions.iter().any(|r| &r.lineage == *l))
        .collect()
}

/// What completing a pending merge writes and answers.
pub(super) struct Completion {
    /// Its writes, then `MergeCompleted`.
    pub ops: Vec<Op>,
    /// The destination's events written.
    pub written: Vec<WrittenEvent>,
    /// The data entries copied.
    pub data_entries: Vec<DataId>,
    /// The paradoxes it adds (only when not refused: `safety_check` off).
    pub paradoxes: Vec<Paradox>,
}

/// Completes pending merge `m`, recomputed as `plan` against the destination as it stands,
/// each conflict decided by `resolutions`: its writes, the paradox check and `MergeCompleted`,
/// for one append.
pub(super) fn complete(
    world: &World,
    ctx: &Ctx<'_>,
    m: &Merge,
    plan: &Plan<'_>,
    resolutions: &[MergeResolution],
    safety_check: bool,
) -> Result<Completion, ServiceError> {
    let dst = &m.destination_timeline_id;
    let choose = |l: &EventId| {
        resolutions
            .iter()
            .find(|r| &r.lineage == l)
            .map_or(Choice::Destination, choice)
    };
    let decided = merge::writes(
        world,
        ctx,
        plan,
        dst,
        &choose,
        ("resolve it with 'Keep Event B'", false),
    )?;
    let paradoxes = merge::checked(world, ctx, dst, &decided, safety_check)?;
    let mut ops = decided.ops;
    ops.push(Op::MergeCompleted {
        merge: m.merge_id.clone(),
        decisions: decided.decisions,
        at: ctx.now,
        by: Some(ctx.traveller.clone()),
    });
    Ok(Completion {
        ops,
        written: decided.written,
        data_entries: plan.data.iter().map(|e| e.data_id.clone()).collect(),
        paradoxes,
    })
}

/// `DELETE /v1/merges/{id}`: abandons a pending merge; its destination is untouched.
pub fn abort(world: &World, ctx: &Ctx<'_>, id: &MergeId) -> Result<Op, ServiceError> {
    let m = world
        .merges
        .get(id)
        .ok_or_else(|| ServiceError::not_found("merge", id))?;
    if !m.is_pending() {
        return Err(ServiceError::Conflict(format!(
            "merge '{id}' is {}; only a merge waiting for review can be aborted",
            m.status
        )));
    }
    Ok(Op::MergeAborted {
        merge: id.clone(),
        at: ctx.now,
    })
}

/// `timelines diff A B`: what merging A into B would weigh, lineage by lineage.
pub fn diff(world: &World, q: &DiffQuery) -> Result<TimelineDiff, ServiceError> {
    let plan = merge::plan(world, &q.source_timeline_id, &q.destination_timeline_id)?;
    let lines = plan
        .classes
        .iter()
        .map(|(l, c)| {
            let (base, s, d) = plan.sides(l);
            DiffLine {
                lineage: l.clone(),
                class: c.word().into(),
                base: base.map(event_record),
                source: s.map(event_record),
                destination: d.map(event_record),
            }
        })
        .collect();
    Ok(TimelineDiff {
        source_timeline_id: q.source_timeline_id.clone(),
        destination_timeline_id: q.destination_timeline_id.clone(),
        base_timeline_id: plan.base_id.clone(),
        lines,
        data_entries: plan.data.iter().map(|e| e.data_id.clone()).collect(),
    })
}
