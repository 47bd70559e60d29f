//! The domain rules of DESIGN §3 as decisions: each takes the world as it is, who asks and the
//! time, and returns the ops to log with the answer, or the refusal. Nothing here does I/O.

use crate::error::ServiceError;
use crate::model::{
    AnchorId, AnchorRecord, AnchorStatus, Event, EventId, EventStatus, History, Instant, Item,
    ItemId, Journey, JourneyId, JourneyKind, LeftItem, Position, Timeline, TimelineId,
    TimelineStatus, Traveller, Whereabouts, format_instant, in_range, opt_in_range,
};
use crate::paradox::{self, Change, Paradox, Subject};
use crate::service::{
    EventRecord, ManipulateRequest, NewEvent, NewItem, NewTimeline, ParadoxCheckRequest,
    TimelineInfo, TravelRequest,
};

use super::world::{Op, TimelineState, World};

/// Longest name, description or location accepted.
pub const MAX_TEXT: usize = 1000;
/// Most proposed changes in one paradox check.
pub const MAX_CHANGES: usize = 1000;
/// Most items carried on one journey.
pub const MAX_ITEMS: usize = 1000;

/// Who is asking, when, and how to mint ids.
pub struct Ctx<'a> {
    /// The traveller.
    pub traveller: &'a Traveller,
    /// The wall clock.
    pub now: Instant,
    /// Mints a fresh ULID.
    pub mint: &'a dyn Fn() -> ulid::Ulid,
    /// Whether the traveller acts as an operator (every right, never restricted): recorded on
    /// the scripts and jobs they make, which later run with their rights.
    pub operator: bool,
}

/// A required, trimmed, bounded text field.
pub fn text(field: &str, value: &str) -> Result<String, ServiceError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(ServiceError::invalid(field, "must not be empty"));
    }
    if v.chars().count() > MAX_TEXT {
        return Err(ServiceError::invalid(
            field,
            format!("is longer than {MAX_TEXT} characters"),
        ));
    }
    Ok(v.to_owned())
}

pub fn optional_text(field: &str, value: Option<&String>) -> Result<Option<String>, ServiceError> {
    value.map(|v| text(field, v)).transpose()
}

/// A timeline the request refers to (400 when unknown).
pub fn referenced<'w>(
    world: &'w World,
    id: &TimelineId,
) -> Result<&'w TimelineState, ServiceError> {
    world
        .timelines
        .get(id)
        .ok_or_else(|| ServiceError::unknown("timeline", id))
}

/// A timeline addressed by path (404 when unknown).
pub fn addressed<'w>(world: &'w World, id: &TimelineId) -> Result<&'w TimelineState, ServiceError> {
    world
        .timelines
        .get(id)
        .ok_or_else(|| ServiceError::not_found("timeline", id))
}

/// Refuses changes to, and travel into, a closed timeline.
pub fn require_open(timeline: &Timeline, now: Instant) -> Result<(), ServiceError> {
    match (timeline.status_at(now), timeline.closes_at()) {
        (TimelineStatus::Closed, Some(at)) => Err(ServiceError::TimelineClosed {
            timeline: timeline.id.to_string(),
            closed_at: format_instant(&at),
        }),
        _ => Ok(()),
    }
}

/// What a timeline's full view says besides its own state: the merges waiting for review that
/// name it and the isolations in force on it. Gathered once per answer from the merges waiting
/// and the isolations in force (never every merge ever made), so a list of many timelines does
/// not look for each.
#[derive(Default)]
pub struct Concerns {
    pending_merges: std::collections::HashMap<TimelineId, usize>,
    pending_into: std::collections::HashMap<TimelineId, usize>,
    isolations: std::collections::HashMap<TimelineId, Vec<crate::model::IsolationId>>,
}

impl Concerns {
    /// Those of every timeline of `world`.
    pub fn of(world: &World) -> Self {
        let mut out = Self::default();
        for m in world.pending_merges() {
            *out.pending_merges
                .entry(m.source_timeline_id.clone())
                .or_default() += 1;
            *out.pending_merges
                .entry(m.destination_timeline_id.clone())
                .or_default() += 1;
            *out.pending_into
                .entry(m.destination_timeline_id.clone())
                .or_default() += 1;
        }
        for i in world.isolations.values() {
            out.isolations
                .entry(i.timeline_id.clone())
                .or_default()
                .push(i.isolation_id.clone());
        }
        out
    }
}

/// The response form of a timeline, with the monitor's count of its open anomalies, and the
/// pending merges and isolations that concern it.
pub fn timeline_info(
    concerns: &Concerns,
    state: &TimelineState,
    now: Instant,
    anomalies: usize,
) -> TimelineInfo {
    let t = &state.meta;
    TimelineInfo {
        id: t.id.clone(),
        name: t.name.clone(),
        destination_time: t.destination_time,
        created_at: t.created_at,
        status: t.status_at(now),
        window: t.window,
        description: t.description.clone(),
        variation: t.variation.clone(),
        parent: t.parent.clone(),
        closes_at: t.closes_at(),
        event_count: state.history.len(),
        paradoxes: anomalies,
        paradoxes_recounting: false,
        paradoxes_counted_at: None,
        created_by: t.created_by.clone(),
        pending_merges: concerns
            .pending_merges
            .get(&t.id)
            .copied()
            .unwrap_or_default(),
        pending_into: concerns
            .pending_into
            .get(&t.id)
            .copied()
            .unwrap_or_default(),
        isolations: concerns.isolations.get(&t.id).cloned().unwrap_or_default(),
    }
}

/// The response form of an event.
pub fn event_record(e: &Event) -> EventRecord {
    EventRecord {
        event_id: e.id.clone(),
        description: e.description.clone(),
        time: e.time,
        location: e.location.clone(),
        causes: e.causes.clone(),
        fixed_point: e.fixed_point,
        status: e.status,
        lineage: e.lineage.clone(),
        supersedes: e.supersedes.clone(),
        superseded_by: e.superseded_by.clone(),
        author: e.author.clone(),
    }
}

/// `create-timeline` and friends: a branch of a base (`primary` by default).
pub fn create_timeline(
    world: &World,
    ctx: &Ctx<'_>,
    req: &NewTimeline,
    window: crate::model::Window,
) -> Result<(Op, Timeline), ServiceError> {
    let description = optional_text("description", req.description.as_ref())?;
    let name = match (&req.name, &description) {
        (Some(name), _) => text("name", name)?,
        (None, Some(d)) => d.clone(),
        (None, None) => {
            return Err(ServiceError::invalid(
                "name",
                "give the timeline a name (or a description)",
            ));
        }
    };
    let base = req
        .base_timeline_id
        .clone()
        .unwrap_or_else(TimelineId::primary);
    referenced(world, &base)?;
    let timeline = Timeline {
        id: TimelineId::from_ulid((ctx.mint)()),
        name,
        description,
        variation: optional_text("variation", req.variation.as_ref())?,
        destination_time: opt_in_range("destination_time", req.destination_time)?,
        created_at: ctx.now,
        window,
        parent: Some(base),
        created_by: Some(ctx.traveller.clone()),
    };
    Ok((
        Op::CreateTimeline {
            timeline: timeline.clone(),
        },
        timeline,
    ))
}

/// Deleting: never `primary`, never a timeline with branches or travellers in it; another
/// traveller's timeline (or one of history as shipped) only with `admin`.
pub fn delete_timeline(
    world: &World,
    ctx: &Ctx<'_>,
    id: &TimelineId,
    admin: bool,
) -> Result<Op, ServiceError> {
    let state = addressed(world, id)?;
    if id.is_primary() {
        return Err(ServiceError::Conflict(
            "the primary timeline cannot be deleted".into(),
        ));
    }
    let branches: Vec<String> = world
        .timelines
        .values()
        .filter(|t| t.meta.parent.as_ref() == Some(id))
        .map(|t| t.meta.id.to_string())
        .collect();
    if !branches.is_empty() {
        return Err(ServiceError::Conflict(format!(
            "timeline '{id}' has branches ({}); delete them first",
            branches.join(", ")
        )));
    }
    let pending: Vec<_> = world.pending_merges_naming(id).collect();
    if !pending.is_empty() {
        let ids: Vec<String> = pending.iter().map(ToString::to_string).collect();
        return Err(ServiceError::Conflict(format!(
            "timeline '{id}' is named by merge(s) waiting for review ({}); resolve or abort them \
             first",
            ids.join(", ")
        )));
    }
    let here = world
        .positions
        .iter()
        .filter(|(_, p)| &p.timeline == id)
        .count();
    if here > 0 {
        let who = if world.position_of(ctx.traveller, ctx.now).timeline == *id {
            "you are".to_owned()
        } else {
            format!("{here} traveller(s) are")
        };
        return Err(ServiceError::Conflict(format!(
            "{who} in timeline '{id}'; travel out of it before deleting it"
        )));
    }
    // Checked last, so that a traveller without the scope learns of a conflict first, as one
    // with it would. A timeline with an access-control list is deleted by its admins (checked
    // with every change's rights, `access::permit`).
    if !admin
        && !world.acls.contains_key(id)
        && state.meta.created_by.as_ref() != Some(ctx.traveller)
    {
        return Err(ServiceError::Forbidden(format!(
            "timeline '{id}' was not created by you; deleting another traveller's timeline (or \
             one of history as shipped) needs the 'admin' scope"
        )));
    }
    Ok(Op::DeleteTimeline { id: id.clone() })
}

/// Adding an event: causes must be current events of the same timeline.
pub fn add_event(
    world: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
    req: &NewEvent,
) -> Result<(Op, Event), ServiceError> {
    let state = addressed(world, timeline)?;
    require_open(&state.meta, ctx.now)?;
    let mut causes: Vec<EventId> = Vec::with_capacity(req.causes.len());
    for cause in &req.causes {
        if state.history.current(cause).is_none() {
            // An old version of an event is not a cause; the current one is named instead.
            return Err(match superseded_by(&state.history, cause) {
                Some(head) => ServiceError::invalid(
                    "causes",
                    format!(
                        "event '{cause}' was superseded by '{head}'; use the current event \
                         instead"
                    ),
                ),
                None => ServiceError::unknown("event", cause),
            });
        }
        if !causes.contains(cause) {
            causes.push(cause.clone());
        }
    }
    let id = EventId::from_ulid((ctx.mint)());
    let event = Event {
        lineage: id.clone(),
        id,
        description: text("description", &req.description)?,
        time: in_range("time", req.time)?,
        location: text("location", &req.location)?,
        causes,
        fixed_point: req.fixed_point,
        status: EventStatus::OnSchedule,
        supersedes: None,
        superseded_by: None,
        author: Some(ctx.traveller.clone()),
    };
    Ok((
        Op::AddEvents {
            timeline: timeline.clone(),
            events: vec![event.clone()],
            at: Some(ctx.now),
        },
        event,
    ))
}

/// Registering: the origin is the traveller's position; the same description in the same
/// timeline is the same item (409 with its location).
pub fn register_item(
    world: &World,
    ctx: &Ctx<'_>,
    req: &NewItem,
) -> Result<(Op, Item), ServiceError> {
    let description = text("description", &req.description)?;
    let position = world.position_of(ctx.traveller, ctx.now);
    if let Some(existing) = world.items_of(ctx.traveller).find(|i| {
        i.origin_timeline == position.timeline && i.description.eq_ignore_ascii_case(&description)
    }) {
        return Err(ServiceError::AlreadyExists {
            location: format!("/v1/items/{}", existing.id),
        });
    }
    let item = Item {
        id: ItemId::from_ulid((ctx.mint)()),
        description,
        owner: ctx.traveller.clone(),
        origin_timeline: position.timeline.clone(),
        origin_time: position.time_at(ctx.now),
        taken_at: None,
        whereabouts: Whereabouts::Carried,
        registered_at: ctx.now,
        location: world.location_of(ctx.traveller),
    };
    Ok((Op::RegisterItem { item: item.clone() }, item))
}

/// Where a journey goes: a timeline, or one of the traveller's active anchors.
enum Destination<'w> {
    Timeline(&'w TimelineState),
    Anchor(&'w AnchorRecord, &'w TimelineState),
}

fn destination<'w>(
    world: &'w World,
    ctx: &Ctx<'_>,
    raw: &str,
) -> Result<Destination<'w>, ServiceError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(ServiceError::invalid(
            "destination",
            "name a timeline id or one of your anchor ids",
        ));
    }
    if let Ok(anchor_id) = raw.parse::<AnchorId>()
        && let Some(anchor) = world
            .anchors
            .get(&anchor_id)
            .filter(|a| &a.owner == ctx.traveller)
    {
        if anchor.status == AnchorStatus::Spent {
            return Err(ServiceError::invalid(
                "destination",
                format!(
                    "anchor '{anchor_id}' was already returned to and is spent; set a new anchor"
                ),
            ));
        }
        let state = world.timelines.get(&anchor.timeline).ok_or_else(|| {
            ServiceError::invalid(
                "destination",
                format!(
                    "anchor '{anchor_id}' is in timeline '{}', which was deleted",
                    anchor.timeline
                ),
            )
        })?;
        return Ok(Destination::Anchor(anchor, state));
    }
    let timeline_id: TimelineId = raw
        .parse()
        .map_err(|_| ServiceError::unknown("timeline or anchor", raw))?;
    world
        .timelines
        .get(&timeline_id)
        .map(Destination::Timeline)
        .ok_or_else(|| ServiceError::unknown("timeline or anchor", raw))
}

/// Travel: arrival at the timeline's destination time (or now) or the anchor's timestamp;
/// listed items that are with the traveller come along, everything else carried stays behind.
pub fn travel(
    world: &World,
    ctx: &Ctx<'_>,
    req: &TravelRequest,
    to_time: Option<Instant>,
) -> Result<(Op, Journey), ServiceError> {
    let to_time = opt_in_range("destination_time", to_time)?;
    let dest = destination(world, ctx, &req.destination)?;
    // The place: a return restores the one recorded with the anchor; any other journey keeps
    // the traveller's (callers that name a place set it on the journey).
    let (state, arrival_time, anchor, location) = match dest {
        Destination::Timeline(state) => (
            state,
            to_time.or(state.meta.destination_time).unwrap_or(ctx.now),
            None,
            world.location_of(ctx.traveller),
        ),
        Destination::Anchor(anchor, state) => (
            state,
            anchor.timestamp,
            Some(anchor.id.clone()),
            anchor.details.location.clone(),
        ),
    };
    require_open(&state.meta, ctx.now)?;
    if req.items_transported.len() > MAX_ITEMS {
        return Err(ServiceError::invalid(
            "items_transported",
            format!("at most {MAX_ITEMS} items per journey"),
        ));
    }
    let from = world.position_of(ctx.traveller, ctx.now);
    let from_time = from.time_at(ctx.now);
    let mut transported = Vec::new();
    let mut left = Vec::new();
    for id in &req.items_transported {
        let item = world
            .items
            .get(id)
            .filter(|i| &i.owner == ctx.traveller)
            .ok_or_else(|| ServiceError::unknown("item", id))?;
        if transported.contains(id) {
            return Err(ServiceError::invalid(
                "items_transported",
                format!("item '{id}' is listed twice"),
            ));
        }
        match &item.whereabouts {
            Whereabouts::Carried => transported.push(id.clone()),
            Whereabouts::Left { timeline, .. } if *timeline == from.timeline => {
                transported.push(id.clone())
            }
            Whereabouts::Left { timeline, time } => left.push(LeftItem {
                item_id: id.clone(),
                reason: format!(
                    "not with you: it was left in timeline '{timeline}' at {}",
                    format_instant(time)
                ),
            }),
        }
    }
    for item in world.items_of(ctx.traveller) {
        if item.whereabouts == Whereabouts::Carried && !req.items_transported.contains(&item.id) {
            left.push(LeftItem {
                item_id: item.id.clone(),
                reason: format!(
                    "not taken along (the journey listed the items to take, and not this one): \
                     left in timeline '{}'",
                    from.timeline
                ),
            });
        }
    }
    let journey = Journey {
        id: JourneyId::from_ulid((ctx.mint)()),
        traveller: ctx.traveller.clone(),
        destination: req.destination.trim().to_owned(),
        from_timeline: from.timeline,
        from_time,
        to_timeline: state.meta.id.clone(),
        arrival_time,
        departed_at: ctx.now,
        items_transported: transported,
        kind: Some(JourneyKind::derived(anchor.as_ref())),
        items_left: left,
        anchor,
        location,
    };
    Ok((
        Op::Travel {
            journey: journey.clone(),
        },
        journey,
    ))
}

/// The paradox checker's view for `traveller` in `timeline`.
pub fn subject<'w>(
    ctx: &Ctx<'w>,
    state: &'w TimelineState,
    position: &'w Position,
    items: &'w [Item],
) -> Subject<'w> {
    Subject {
        timeline: &state.meta.id,
        history: &state.history,
        traveller: ctx.traveller,
        position,
        position_time: position.time_at(ctx.now),
        items,
        isolated: Some(&state.isolated),
    }
}

/// The traveller's items, cloned for the checker.
pub fn items_of(world: &World, traveller: &Traveller) -> Vec<Item> {
    world.items_of(traveller).map(|i| (**i).clone()).collect()
}

/// When an event or item without a time arrives: the timeline's destination time, the
/// traveller's time if they are in it, or now.
pub fn default_time(state: &TimelineState, position: &Position, now: Instant) -> Instant {
    state.meta.destination_time.unwrap_or_else(|| {
        if position.timeline == state.meta.id {
            position.time_at(now)
        } else {
            now
        }
    })
}

/// Whether a proposed change's `event` text reads as an event id rather than a new event's
/// description: one token of id characters with a digit, `_` or `-` in it (`evt_01J…`,
/// `abcd1234`, `experiment-initiation`). A plain word (`Coronation`) stays a description.
fn looks_like_an_id(text: &str) -> bool {
    let text = text.trim();
    text.parse::<EventId>().is_ok()
        && text
            .chars()
            .any(|c| c.is_ascii_digit() || c == '_' || c == '-')
}

/// Turns the interface's proposed changes into the checker's, validating each.
pub fn proposed_changes(
    ctx: &Ctx<'_>,
    world: &World,
    state: &TimelineState,
    position: &Position,
    req: &ParadoxCheckRequest,
) -> Result<Vec<Change>, ServiceError> {
    if req.proposed_changes.len() > MAX_CHANGES {
        return Err(ServiceError::invalid(
            "proposed_changes",
            format!("at most {MAX_CHANGES} changes per check"),
        ));
    }
    let fallback = default_time(state, position, ctx.now);
    req.proposed_changes
        .iter()
        .enumerate()
        .map(|(i, change)| {
            let field = format!("proposed_changes[{i}]");
            opt_in_range(&format!("{field}.time"), change.time)?;
            match (&change.event, &change.item_id) {
                (Some(_), Some(_)) => Err(ServiceError::invalid(
                    field,
                    "give either event (with an optional time) or item_id, not both",
                )),
                (None, None) => Err(ServiceError::invalid(
                    field,
                    "give either event (an event id or a new event's description) or item_id",
                )),
                (Some(event), None) => {
                    let time = change.time.unwrap_or(fallback);
                    let id = event.trim().parse::<EventId>().ok();
                    match id.filter(|id| state.history.current(id).is_some()) {
                        Some(id) => Ok(Change::Move { event: id, time }),
                        // An id that names nothing is a typo, not a new event called
                        // "evt_01J…": checking it as one would answer a false all-clear.
                        None if looks_like_an_id(event) => {
                            Err(ServiceError::unknown("event", event.trim()))
                        }
                        None => Ok(Change::Add {
                            event: EventId::from_ulid((ctx.mint)()),
                            description: text(&format!("{field}.event"), event)?,
                            time,
                        }),
                    }
                }
                (None, Some(item)) => {
                    world
                        .items
                        .get(item)
                        .filter(|i| &i.owner == ctx.traveller)
                        .ok_or_else(|| ServiceError::unknown("item", item))?;
                    Ok(Change::BringItem {
                        item: item.clone(),
                        time: change.time.unwrap_or(fallback),
                    })
                }
            }
        })
        .collect()
}

/// The event that now stands for `id`, when `id` is an older version of it.
pub fn superseded_by(history: &crate::model::History, id: &EventId) -> Option<EventId> {
    let event = history.get(id)?;
    if event.status != EventStatus::Superseded {
        return None;
    }
    history.head_of(id).map(|e| e.id.clone())
}

/// The head an interface call acts on: the event itself when current, refusing
/// superseded, reverted and fixed events with the reason.
pub fn manipulable<'w>(state: &'w TimelineState, id: &EventId) -> Result<&'w Event, ServiceError> {
    let event = state
        .history
        .get(id)
        .ok_or_else(|| ServiceError::unknown("event", id))?;
    let locked = |reason: String| ServiceError::EventLocked {
        event: id.to_string(),
        reason,
    };
    match event.status {
        EventStatus::Superseded => Err(locked(format!(
            "it was superseded by '{}'; manipulate the current event instead",
            state
                .history
                .head_of(id)
                .map(|e| e.id.to_string())
                .unwrap_or_default()
        ))),
        EventStatus::Reverted => Err(locked("it is a reverted manipulation".into())),
        _ if event.fixed_point => Err(locked("it is a fixed point".into())),
        _ => Ok(event),
    }
}

/// The description and time a manipulation gives `old`.
fn outcome(old: &Event, req: &ManipulateRequest) -> Result<(String, Instant), ServiceError> {
    let description = match &req.new_outcome.description {
        Some(d) => text("new_outcome.description", d)?,
        None => old.description.clone(),
    };
    for (i, c) in req.new_outcome.changes.iter().enumerate() {
        opt_in_range(&format!("new_outcome.changes[{i}].time"), c.time)?;
    }
    let time = req
        .new_outcome
        .changes
        .iter()
        .rev()
        .find_map(|c| c.time)
        .unwrap_or(old.time);
    Ok((description, time))
}

/// Refuses a manipulation a person asked for that would change nothing (the same description
/// and time). Automation is not refused: a script that sets what is already so still runs.
pub fn refuse_no_op(
    world: &World,
    timeline: &TimelineId,
    req: &ManipulateRequest,
) -> Result<(), ServiceError> {
    let state = referenced(world, timeline)?;
    let old = manipulable(state, &req.event_id)?;
    let (description, time) = outcome(old, req)?;
    if description == old.description && time == old.time {
        return Err(ServiceError::invalid(
            "new_outcome",
            format!(
                "this changes nothing: '{}' already happens at {}; give a new description or \
                 a change with another time",
                old.description,
                crate::model::format_instant(&old.time)
            ),
        ));
    }
    Ok(())
}

/// A manipulation: the new head of the lineage, and (with `safety_check`) the paradoxes the
/// change would add to the timeline.
pub fn manipulate(
    world: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
    req: &ManipulateRequest,
) -> Result<(Op, Event), ServiceError> {
    let state = referenced(world, timeline)?;
    require_open(&state.meta, ctx.now)?;
    let old = manipulable(state, &req.event_id)?;
    let (description, time) = outcome(old, req)?;
    let new_id = EventId::from_ulid((ctx.mint)());
    if req.safety_check {
        let position = world.position_of(ctx.traveller, ctx.now);
        let items = items_of(world, ctx.traveller);
        let subject = subject(ctx, state, &position, &items);
        let change = [Change::Move {
            event: old.id.clone(),
            time,
        }];
        let before = paradox::check(&subject, &[]);
        refuse_paradoxes(
            timeline,
            paradox::check(&subject, &change)
                .into_iter()
                .filter(|p| !before.contains(p))
                .collect(),
        )?;
    }
    let new = Event {
        id: new_id,
        description,
        time,
        location: old.location.clone(),
        causes: old.causes.clone(),
        fixed_point: false,
        status: EventStatus::Manipulated,
        supersedes: Some(old.id.clone()),
        superseded_by: None,
        lineage: old.lineage.clone(),
        author: Some(ctx.traveller.clone()),
    };
    Ok((
        Op::Manipulate {
            timeline: timeline.clone(),
            old: old.id.clone(),
            new: new.clone(),
            at: Some(ctx.now),
        },
        new,
    ))
}

/// A revert: the latest manipulation of the lineage `id` belongs to is undone.
pub fn revert(
    world: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
    id: &EventId,
) -> Result<(Op, EventId, EventId), ServiceError> {
    let state = referenced(world, timeline)?;
    require_open(&state.meta, ctx.now)?;
    let named = state
        .history
        .head_of(id)
        .ok_or_else(|| ServiceError::unknown("event", id))?;
    let locked = |reason: &str| ServiceError::EventLocked {
        event: id.to_string(),
        reason: reason.into(),
    };
    // A reverted event still belongs to its lineage: undo the lineage's latest change, if any.
    let head = if named.status == EventStatus::Reverted {
        match state.history.head_of(&named.lineage) {
            Some(h) if h.supersedes.is_some() && h.status != EventStatus::Reverted => h,
            _ => return Err(locked("its manipulation was already reverted")),
        }
    } else {
        named
    };
    let Some(original) = head.supersedes.clone() else {
        return Err(locked(
            "it was never manipulated, so there is nothing to revert",
        ));
    };
    Ok((
        Op::Revert {
            timeline: timeline.clone(),
            head: head.id.clone(),
            at: Some(ctx.now),
        },
        original,
        head.id.clone(),
    ))
}

/// The safety check of a change made of `ops` (an added event, a revert): refuses it with the
/// paradoxes it would add to `timeline` for this traveller. Paradoxes that stand already are
/// not the change's doing and do not refuse it.
pub fn refuse_introduced(
    world: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
    ops: &[Op],
) -> Result<(), ServiceError> {
    let mut after = world.clone();
    for op in ops {
        after
            .apply(after.seq + 1, op.clone())
            .map_err(|e| ServiceError::Internal(format!("safety check: {e}")))?;
    }
    refuse_introduced_by(world, &after, ctx, timeline)
}

/// The paradoxes standing in `timeline` as the traveller of `ctx` sees it (with their items).
pub fn standing_paradoxes(
    world: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
) -> Result<Vec<Paradox>, ServiceError> {
    let state = referenced(world, timeline)?;
    let position = world.position_of(ctx.traveller, ctx.now);
    let items = items_of(world, ctx.traveller);
    Ok(paradox::check(&subject(ctx, state, &position, &items), &[]))
}

/// As [`refuse_introduced`], given `after`: `world` with the change's ops applied already (a
/// merge has applied them while deciding, and they are not applied a second time).
pub fn refuse_introduced_by(
    world: &World,
    after: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
) -> Result<(), ServiceError> {
    let before = standing_paradoxes(world, ctx, timeline)?;
    let introduced: Vec<Paradox> = standing_paradoxes(after, ctx, timeline)?
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    if introduced.is_empty() {
        return Ok(());
    }
    let stood = &referenced(world, timeline)?.history;
    let would = &referenced(after, timeline)?.history;
    refuse_paradoxes(timeline, named_as_they_stand(introduced, stood, would))
}

/// `paradoxes` found in `would` (the timeline as a change would leave it) named by events of
/// `stood` (as it stands). A version the change would write has an id minted for the check: it
/// exists nowhere if the change is refused, and is another on every try. Each is named by the
/// event it would supersede instead, "(evt_…, changed)", which the reader can look up.
pub(super) fn named_as_they_stand(
    paradoxes: Vec<Paradox>,
    stood: &History,
    would: &History,
) -> Vec<Paradox> {
    let superseded = |id: &EventId| {
        if stood.get(id).is_some() {
            return None;
        }
        would.get(id)?.supersedes.clone()
    };
    paradoxes
        .into_iter()
        .map(|mut p| {
            for id in &mut p.events {
                if let Some(old) = superseded(id) {
                    p.description = p
                        .description
                        .replace(&format!("({id})"), &format!("({old}, changed)"));
                    *id = old;
                }
            }
            p
        })
        .collect()
}

fn refuse_paradoxes(timeline: &TimelineId, introduced: Vec<Paradox>) -> Result<(), ServiceError> {
    if introduced.is_empty() {
        return Ok(());
    }
    Err(ServiceError::ParadoxDetected {
        timeline: timeline.to_string(),
        paradoxes: introduced,
    })
}

/// The named event must exist in the timeline (any status: automation follows lineages).
fn known_event(state: &TimelineState, id: &EventId) -> Result<(), ServiceError> {
    state
        .history
        .get(id)
        .map(|_| ())
        .ok_or_else(|| ServiceError::unknown("event", id))
}

/// A new script, validated.
pub fn new_script(
    world: &World,
    ctx: &Ctx<'_>,
    req: &crate::service::NewScript,
) -> Result<crate::automation::ScriptRecord, ServiceError> {
    let timeline = req.timeline_id.clone().unwrap_or_else(TimelineId::primary);
    let state = referenced(world, &timeline)?;
    let name = text("script_name", &req.script_name)?;
    known_event(state, &req.trigger_event_id)?;
    opt_in_range("conditions.check_date", req.conditions.check_date)?;
    if let Some(status) = &req.conditions.status_check {
        const STATUSES: [EventStatus; 4] = [
            EventStatus::OnSchedule,
            EventStatus::Manipulated,
            EventStatus::Superseded,
            EventStatus::Reverted,
        ];
        if !STATUSES.iter().any(|s| s.as_str() == status) {
            return Err(ServiceError::invalid(
                "conditions.status_check",
                format!(
                    "'{status}' is not an event status; use on_schedule, manipulated, superseded or reverted"
                ),
            ));
        }
    }
    let actions = crate::automation::validate_actions(&req.actions)?;
    for action in &actions {
        known_event(state, &action.event_id)?;
    }
    Ok(crate::automation::ScriptRecord {
        id: crate::model::ScriptId::from_ulid((ctx.mint)()),
        owner: ctx.traveller.clone(),
        name,
        timeline,
        trigger: req.trigger_event_id.clone(),
        conditions: req.conditions.clone(),
        actions,
        created_at: ctx.now,
        status: crate::automation::ScriptStatus::Active,
        triggered: false,
        operator: ctx.operator,
    })
}

/// A new scheduled or externally triggered job, validated.
pub fn new_job(
    world: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
    actions: Vec<crate::service::Action>,
    due: Instant,
    external: Option<(String, Option<String>)>,
) -> Result<crate::automation::Job, ServiceError> {
    let state = referenced(world, timeline)?;
    in_range("scheduled_time", due)?;
    let actions = crate::automation::validate_actions(&actions)?;
    for action in &actions {
        known_event(state, &action.event_id)?;
    }
    let (external_system, build_status, status) = match external {
        Some((system, build)) => (Some(system), build, crate::automation::JobStatus::Triggered),
        None => (None, None, crate::automation::JobStatus::Scheduled),
    };
    Ok(crate::automation::Job {
        id: crate::model::ScheduleId::from_ulid((ctx.mint)()),
        owner: ctx.traveller.clone(),
        timeline: timeline.clone(),
        due,
        actions,
        external_system,
        build_status,
        status,
        created_at: ctx.now,
        operator: ctx.operator,
    })
}
