//! `isolate-event` (guide §4): an overlay on a timeline that cuts an event, or the causal loop
//! through it, off from the rest. No event is rewritten, so it can be lifted.

use std::collections::BTreeSet;

use crate::error::ServiceError;
use crate::model::{EventId, IsolationId};
use crate::paradox::{self, ParadoxKind};
use crate::service::{IsolateRequest, Isolation, IsolationType, SeveredEdge};

use super::rules::{self, Ctx};
use super::world::World;

/// Decides an isolation: its members (the event's strongly connected component among current
/// events for `closed_loop`, the event alone for `event`), the edges it severs and the
/// paradoxes it stops reporting.
pub fn isolate(
    world: &World,
    ctx: &Ctx<'_>,
    req: &IsolateRequest,
) -> Result<Isolation, ServiceError> {
    let timeline = req
        .timeline_id
        .clone()
        .unwrap_or_else(|| world.position_of(ctx.traveller, ctx.now).timeline);
    let state = rules::referenced(world, &timeline)?;
    rules::require_open(&state.meta, ctx.now)?;
    let h = &state.history;
    let named = h
        .get(&req.event_id)
        .ok_or_else(|| ServiceError::unknown("event", &req.event_id))?;
    if h.current(&req.event_id).is_none() {
        let head = h.head_of(&named.lineage).map(|e| e.id.to_string());
        return Err(ServiceError::EventLocked {
            event: req.event_id.to_string(),
            reason: format!(
                "it is {} and no longer part of the timeline; isolate the current event of its \
                 lineage{}",
                named.status.as_str(),
                head.map(|h| format!(" ({h})")).unwrap_or_default()
            ),
        });
    }
    let slot = h
        .slot(&req.event_id)
        .ok_or_else(|| ServiceError::Internal(format!("event {} has no slot", req.event_id)))?;
    let slots: Vec<u32> = match req.isolation_type {
        IsolationType::Event => vec![slot],
        IsolationType::ClosedLoop => h
            .standing_loops()
            .find(|l| l.contains(&slot))
            .map(<[u32]>::to_vec)
            .unwrap_or_else(|| vec![slot]),
    };
    let set: BTreeSet<u32> = slots.iter().copied().collect();
    let mut members = Vec::with_capacity(slots.len());
    let mut severed = Vec::new();
    for &s in &slots {
        let view = h.view(s);
        let Some(event) = view.event else { continue };
        if event.fixed_point {
            return Err(ServiceError::EventLocked {
                event: event.id.to_string(),
                reason: "it is a fixed point: it cannot be cut off from the timeline".into(),
            });
        }
        if let Some(other) = state.isolated.get(&event.lineage) {
            return Err(ServiceError::Conflict(format!(
                "event '{}' is already isolated by '{other}'; lift that isolation first \
                 (`chronoscope events lift {other}`)",
                event.id
            )));
        }
        members.push(event.lineage.clone());
        for &c in view.causes {
            if !set.contains(&c) && h.view(c).current {
                severed.push(SeveredEdge {
                    effect: event.id.clone(),
                    cause: h.view(c).id.clone(),
                });
            }
        }
        for &f in view.effects.iter() {
            if !set.contains(&f) && h.view(f).current {
                severed.push(SeveredEdge {
                    effect: h.view(f).id.clone(),
                    cause: event.id.clone(),
                });
            }
        }
    }
    members.sort();
    severed.sort_by(|a, b| (&a.effect, &a.cause).cmp(&(&b.effect, &b.cause)));
    let id = IsolationId::from_ulid((ctx.mint)());
    // What stands now, against what would stand with the new isolation in place.
    let position = world.position_of(ctx.traveller, ctx.now);
    let items = rules::items_of(world, ctx.traveller);
    let subject = rules::subject(ctx, state, &position, &items);
    let before = paradox::check(&subject, &[]);
    let mut with = state.isolated.clone();
    for l in &members {
        with.insert(l.clone(), id.clone());
    }
    let after = paradox::without_isolated(h, Some(&with), before.clone());
    let member_events: BTreeSet<&EventId> = slots.iter().map(|&s| h.view(s).id).collect();
    let left: Vec<_> = after
        .iter()
        .filter(|p| p.events.iter().any(|e| member_events.contains(e)))
        .cloned()
        .collect();
    let contained: Vec<_> = before
        .into_iter()
        .filter(|p| !after.contains(p))
        .filter(|p| {
            matches!(
                p.kind,
                ParadoxKind::CausalOrder | ParadoxKind::Grandfather | ParadoxKind::CausalLoop
            )
        })
        .collect();
    let description = match req.description.as_deref() {
        Some(d) => rules::text("description", d)?,
        None => generated(named.description.as_str(), &named.id, members.len()),
    };
    Ok(Isolation {
        isolation_id: id,
        status: "isolated".into(),
        description,
        timeline_id: timeline,
        isolation_type: req.isolation_type,
        members,
        severed,
        contained,
        left,
        by: ctx.traveller.clone(),
        at: ctx.now,
    })
}

/// The sentence an isolation without a description gets.
fn generated(description: &str, id: &EventId, members: usize) -> String {
    if members > 1 {
        format!(
            "'{description}' ({id}) isolated in a closed loop with {} other events",
            members - 1
        )
    } else {
        format!("'{description}' ({id}) isolated from the rest of its timeline")
    }
}
