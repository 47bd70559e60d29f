//! The decisions behind `retrieve-item`, `monitor-events`, the journeys' safety check and
//! withdrawing a read-staleness setting (guide operations §1, §6). Each takes the world as it
//! stands and answers the ops to append (none for a read or a no-op) with the answer.

use super::rules::{self, Ctx};
use super::{Op, World};
use crate::error::ServiceError;
use crate::model::{
    CacheId, Instant, Item, ItemId, Journey, TimelineId, Whereabouts, format_instant, opt_in_range,
};
use crate::monitor::Anomaly;
use crate::service::{
    EventRecord, MonitoredEvent, ReadStaleness, Relative, RetrieveItemRequest, RetrievedItem,
    TravelRequest,
};

/// A journey's safety check: what the traveller carries, brought to the arrival (the
/// `{item_id}` check of `check-paradox`), must add no paradox to the timeline arrived in.
/// Paradoxes that stand already are not the journey's doing.
pub fn refuse_unsafe_journey(
    world: &World,
    ctx: &Ctx<'_>,
    op: &Op,
    journey: &Journey,
) -> Result<(), ServiceError> {
    rules::refuse_introduced(world, ctx, &journey.to_timeline, std::slice::from_ref(op))
}

/// `retrieve-item`: a journey to the item's time when it is not the traveller's, and the item
/// registered there, carried; or `already_retrieved` with nothing to write.
pub fn retrieve_item(
    world: &World,
    ctx: &Ctx<'_>,
    req: &RetrieveItemRequest,
) -> Result<(Vec<Op>, RetrievedItem), ServiceError> {
    let description = rules::text("item_description", &req.item_description)?;
    let location = match req.location.as_deref() {
        Some(l) => Some(rules::text("location", l)?),
        None => world.location_of(ctx.traveller),
    };
    let time = opt_in_range("time", req.time)?;
    let position = world.position_of(ctx.traveller, ctx.now);
    let state = rules::referenced(world, &position.timeline)?;
    if let Some(existing) = world.items_of(ctx.traveller).find(|i| {
        i.origin_timeline == position.timeline && i.description.eq_ignore_ascii_case(&description)
    }) {
        return match &existing.whereabouts {
            Whereabouts::Carried => Ok((
                Vec::new(),
                RetrievedItem {
                    status: "already_retrieved".into(),
                    item: (**existing).clone(),
                    journey: None,
                },
            )),
            Whereabouts::Left {
                timeline,
                time: left_at,
            } => Err(ServiceError::Conflict(format!(
                "you retrieved '{}' in this timeline before (item '{}') and left it in timeline \
                 '{timeline}' at {}; it comes along again on a journey from there that lists it \
                 in items_transported",
                existing.description,
                existing.id,
                format_instant(left_at)
            ))),
        };
    }
    rules::require_open(&state.meta, ctx.now)?;
    let now_there = position.time_at(ctx.now);
    let mut ops = Vec::new();
    let mut journey = None;
    let at = match time {
        Some(t) if t != now_there => {
            let travel = TravelRequest {
                destination: position.timeline.to_string(),
                items_transported: super::session::listed_or_carried(world, ctx.traveller, &None),
            };
            let (mut op, mut made) = rules::travel(world, ctx, &travel, Some(t))?;
            made.location = location.clone();
            if let Op::Travel { journey: logged } = &mut op {
                logged.location = location.clone();
            }
            let (op, made) = super::session::of_kind(op, made, crate::model::JourneyKind::Retrieve);
            ops.push(op);
            journey = Some(made);
            t
        }
        _ => now_there,
    };
    let item = Item {
        id: ItemId::from_ulid((ctx.mint)()),
        description,
        owner: ctx.traveller.clone(),
        origin_timeline: position.timeline.clone(),
        origin_time: at,
        taken_at: None,
        whereabouts: Whereabouts::Carried,
        registered_at: ctx.now,
        location,
    };
    ops.push(Op::RegisterItem { item: item.clone() });
    Ok((
        ops,
        RetrievedItem {
            status: "retrieved".into(),
            item,
            journey,
        },
    ))
}

/// `monitor-events`: a page of standing events of `timeline`, each with its change state seen
/// from `traveller_time` (the traveller's time when the timeline is theirs; otherwise their time
/// still decides past and future, as the guide's traveller reads it).
pub fn monitored(
    world: &World,
    timeline: &TimelineId,
    events: Vec<EventRecord>,
    open: &[Anomaly],
    traveller_time: Instant,
) -> Result<Vec<MonitoredEvent>, ServiceError> {
    let state = rules::referenced(world, timeline)?;
    Ok(events
        .into_iter()
        .map(|event| {
            let id = event.event_id.to_string();
            let lineage = event.lineage.to_string();
            MonitoredEvent {
                changed_at: state.touched.get(&event.event_id).copied(),
                in_paradox: open
                    .iter()
                    .any(|a| a.subjects.iter().any(|s| *s == id || *s == lineage)),
                relative: if event.time <= traveller_time {
                    Relative::Past
                } else {
                    Relative::Future
                },
                event,
            }
        })
        .collect())
}

/// Withdrawing the caller's read-staleness setting `id`: the same setting at zero, so every
/// replica drops it. Not found unless it is theirs and in force.
pub fn withdraw_caching(world: &World, ctx: &Ctx<'_>, id: &CacheId) -> Result<Op, ServiceError> {
    match world.read_staleness.get(ctx.traveller) {
        Some(s) if &s.cache_id == id && s.max_staleness > 0 => Ok(Op::SetReadStaleness {
            setting: ReadStaleness {
                max_staleness: 0,
                ..s.clone()
            },
        }),
        _ => Err(ServiceError::not_found("cache setting", id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JourneyKind;

    /// A journey record from before kinds existed, to an anchor or not.
    fn old_record(anchor: &str) -> String {
        format!(
            r#"{{"by":"ada","at":"2026-01-01T00:00:00Z","change":{{"op":"travel","journey":{{
                "id":"jrn_01hzzzzzzzzzzzzzzzzzzzzzzz","traveller":"ada","destination":"primary",
                "from_timeline":"primary","from_time":"2026-01-01T00:00:00Z",
                "to_timeline":"primary","arrival_time":"1900-01-01T00:00:00Z",
                "departed_at":"2026-01-01T00:00:00Z","items_transported":[],"items_left":[],
                "anchor":{anchor}}}}}}}"#
        )
    }

    #[test]
    fn journeys_recorded_before_kinds_read_as_return_or_travel() {
        for (anchor, kind) in [
            ("null", JourneyKind::Travel),
            (r#""anc_01hzzzzzzzzzzzzzzzzzzzzzzz""#, JourneyKind::Return),
        ] {
            let envelope = super::super::Envelope::decode(&old_record(anchor)).expect("decodes");
            let mut world = World::default();
            world.apply(1, envelope.change).expect("folds");
            let journeys: Vec<_> = world.journeys.values().map(|j| j.kind).collect();
            assert_eq!(journeys, [Some(kind)]);
        }
    }
}
