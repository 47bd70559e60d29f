//! `correct-dissonance` (guide §4): named events that happen before one of their causes are
//! moved to one second after their latest cause, the smallest change that restores order.

use crate::error::ServiceError;
use crate::model::{Event, EventId, EventStatus};
use crate::paradox;
use crate::service::{DissonanceMove, DissonanceRequest, DissonanceResult, SupersededEvent};

use super::rules::{self, Ctx};
use super::world::{Op, World};

/// Most events one request may name.
pub const MAX_NAMED: usize = 100;

/// The named lineages with each one's named causes first, so a moved cause pushes its named
/// effects.
fn causal_order(history: &crate::model::History, lineages: &[EventId]) -> Vec<EventId> {
    fn visit(
        l: &EventId,
        history: &crate::model::History,
        named: &[EventId],
        seen: &mut Vec<EventId>,
        out: &mut Vec<EventId>,
    ) {
        if seen.contains(l) {
            return;
        }
        seen.push(l.clone());
        if let Some(head) = history.head_of(l) {
            for c in &head.causes {
                if let Some(cl) = history.get(c).map(|e| e.lineage.clone())
                    && named.contains(&cl)
                {
                    visit(&cl, history, named, seen, out);
                }
            }
        }
        out.push(l.clone());
    }
    let (mut seen, mut out) = (Vec::new(), Vec::new());
    for l in lineages {
        visit(l, history, lineages, &mut seen, &mut out);
    }
    out
}

/// Decides a correction: the moves to log (none when every named event is in order) and the
/// answer. Refused whole when a named event would still be out of order (a causal loop cannot
/// be fixed by moving: isolate it) or when a move would add a paradox elsewhere.
pub fn correct(
    world: &World,
    ctx: &Ctx<'_>,
    req: &DissonanceRequest,
) -> Result<(Vec<Op>, DissonanceResult), ServiceError> {
    let n = req.conflicting_events.len();
    if n == 0 || n > MAX_NAMED {
        return Err(ServiceError::invalid(
            "conflicting_events",
            format!("names {n} events; name 1 to {MAX_NAMED}"),
        ));
    }
    let tl = &req.timeline_id;
    let state = rules::referenced(world, tl)?;
    rules::require_open(&state.meta, ctx.now)?;
    let mut lineages: Vec<EventId> = Vec::new();
    let mut superseded = Vec::new();
    for id in &req.conflicting_events {
        let e = state
            .history
            .get(id)
            .ok_or_else(|| ServiceError::unknown("event", id))?;
        if !lineages.contains(&e.lineage) {
            lineages.push(e.lineage.clone());
        }
        // An older version is aligned through the event that stands for it: the answer says so.
        if let Some(current) = rules::superseded_by(&state.history, id) {
            superseded.push(SupersededEvent {
                event_id: id.clone(),
                current_event_id: current,
            });
        }
    }
    let order = causal_order(&state.history, &lineages);

    let mut work = world.clone();
    let mut ops = Vec::new();
    let mut moves = Vec::new();
    for l in &order {
        let history = &work
            .timelines
            .get(tl)
            .ok_or_else(|| ServiceError::unknown("timeline", tl))?
            .history;
        let Some(head) = history.head_of(l).map(|e| (**e).clone()) else {
            continue;
        };
        let latest = head
            .causes
            .iter()
            .filter_map(|c| history.current(c))
            .map(|c| c.time)
            .max();
        let Some(latest) = latest.filter(|t| head.time < *t) else {
            continue;
        };
        if head.fixed_point {
            return Err(ServiceError::EventLocked {
                event: head.id.to_string(),
                reason: "it is a fixed point and happens before its cause, so it cannot be moved"
                    .into(),
            });
        }
        let to = latest + chrono::Duration::seconds(1);
        let new = Event {
            id: EventId::from_ulid((ctx.mint)()),
            description: head.description.clone(),
            time: to,
            location: head.location.clone(),
            causes: head.causes.clone(),
            fixed_point: false,
            status: EventStatus::Manipulated,
            supersedes: Some(head.id.clone()),
            superseded_by: None,
            lineage: head.lineage.clone(),
            author: Some(ctx.traveller.clone()),
        };
        moves.push(DissonanceMove {
            event_id: head.id.clone(),
            from: head.time,
            to,
            new_event_id: new.id.clone(),
        });
        let op = Op::Manipulate {
            timeline: tl.clone(),
            old: head.id.clone(),
            new,
            at: Some(ctx.now),
        };
        work.apply(work.seq + 1, op.clone())
            .map_err(|e| ServiceError::Internal(format!("correct-dissonance: {e}")))?;
        ops.push(op);
    }
    let mut result = DissonanceResult {
        status: "already_aligned".into(),
        aligned_events: req.conflicting_events.clone(),
        timeline_id: tl.clone(),
        moves,
        superseded,
    };
    if ops.is_empty() {
        return Ok((ops, result));
    }
    // Nothing new anywhere…
    rules::refuse_introduced(world, ctx, tl, &ops)?;
    // …and no named event still out of order (a loop, or a cause that could not move).
    let after = work
        .timelines
        .get(tl)
        .ok_or_else(|| ServiceError::unknown("timeline", tl))?;
    let heads: Vec<EventId> = lineages
        .iter()
        .filter_map(|l| after.history.head_of(l).map(|e| e.id.clone()))
        .collect();
    let position = work.position_of(ctx.traveller, ctx.now);
    let items = rules::items_of(&work, ctx.traveller);
    let remaining: Vec<_> = paradox::check(&rules::subject(ctx, after, &position, &items), &[])
        .into_iter()
        .filter(|p| p.events.iter().any(|e| heads.contains(e)))
        .collect();
    if !remaining.is_empty() {
        let stood = &rules::referenced(world, tl)?.history;
        return Err(ServiceError::ParadoxDetected {
            timeline: tl.to_string(),
            paradoxes: rules::named_as_they_stand(remaining, stood, &after.history),
        });
    }
    result.status = "aligned".into();
    Ok((ops, result))
}
