//! The anchor operations (guide §2): setting one, the recorded conditions' limits,
//! adjusting, deleting, and the stability verdict. Decisions only, like `rules`.

use crate::error::ServiceError;
use crate::model::{
    Anchor, AnchorDetails, AnchorId, AnchorRecord, AnchorStatus, Conditions, Instant, in_range,
};
use crate::monitor::WindowPhase;
use crate::paradox::{self, Change, ParadoxKind};
use crate::service::{AdjustAnchorRequest, AnchorStability, AnchorVerdict, NewPreciseAnchor};

use super::rules::{self, Ctx};
use super::world::{Op, World};

/// Most keys in a recorded environment or quantum state.
pub const MAX_CONDITION_KEYS: usize = 32;
/// Longest key of one.
pub const MAX_CONDITION_KEY: usize = 64;
/// Longest value of one (a string's characters, or a number or bool as written).
pub const MAX_CONDITION_VALUE: usize = 1000;

/// Checks a recorded environment or quantum state against its limits.
pub fn conditions(field: &str, value: &Conditions) -> Result<(), ServiceError> {
    if value.len() > MAX_CONDITION_KEYS {
        return Err(ServiceError::invalid(
            field,
            format!("at most {MAX_CONDITION_KEYS} keys (got {})", value.len()),
        ));
    }
    for (key, v) in value {
        if key.trim().is_empty() || key.chars().count() > MAX_CONDITION_KEY {
            return Err(ServiceError::invalid(
                format!("{field}.{key}"),
                format!("keys must be 1 to {MAX_CONDITION_KEY} characters"),
            ));
        }
        let length = match v {
            serde_json::Value::String(s) => s.chars().count(),
            serde_json::Value::Number(n) => n.to_string().len(),
            serde_json::Value::Bool(_) => 0,
            _ => {
                return Err(ServiceError::invalid(
                    format!("{field}.{key}"),
                    "values must be a string, a number or a boolean",
                ));
            }
        };
        if length > MAX_CONDITION_VALUE {
            return Err(ServiceError::invalid(
                format!("{field}.{key}"),
                format!("values must be at most {MAX_CONDITION_VALUE} characters"),
            ));
        }
    }
    Ok(())
}

/// One of the caller's anchors, named in a request body (400 when unknown or another's).
pub fn own<'w>(
    world: &'w World,
    ctx: &Ctx<'_>,
    id: &AnchorId,
) -> Result<&'w AnchorRecord, ServiceError> {
    world
        .anchors
        .get(id)
        .filter(|a| &a.owner == ctx.traveller)
        .map(|a| &**a)
        .ok_or_else(|| ServiceError::unknown("anchor", id))
}

/// Replacing an active anchor's recorded environment.
pub fn adjust(
    world: &World,
    ctx: &Ctx<'_>,
    req: &AdjustAnchorRequest,
) -> Result<(Op, AnchorRecord), ServiceError> {
    let anchor = own(world, ctx, &req.anchor_id)?;
    conditions("new_environment", &req.new_environment)?;
    if anchor.status == AnchorStatus::Spent {
        return Err(ServiceError::Conflict(format!(
            "anchor {} was returned to and is history: its conditions cannot change; set a new anchor",
            anchor.id
        )));
    }
    let mut adjusted = anchor.clone();
    adjusted.details.environment = Some(req.new_environment.clone());
    Ok((
        Op::AdjustAnchor {
            id: anchor.id.clone(),
            environment: req.new_environment.clone(),
        },
        adjusted,
    ))
}

/// Deleting one of the caller's anchors, active or spent.
pub fn delete(world: &World, ctx: &Ctx<'_>, id: &AnchorId) -> Result<Op, ServiceError> {
    let anchor = own(world, ctx, id)?;
    Ok(Op::DeleteAnchor {
        id: anchor.id.clone(),
    })
}

/// Whether the caller can still come back to an anchor, and safely. Reads only.
pub fn stability(
    world: &World,
    ctx: &Ctx<'_>,
    id: &AnchorId,
) -> Result<AnchorStability, ServiceError> {
    let anchor = own(world, ctx, id)?;
    let mut reasons = Vec::new();
    let mut paradoxes = Vec::new();
    let state = world.timelines.get(&anchor.timeline);
    let mut verdict = AnchorVerdict::Stable;
    if anchor.status == AnchorStatus::Spent {
        verdict = AnchorVerdict::Unstable;
        reasons.push("the anchor was returned to already: it is history, not a destination".into());
    }
    match state {
        None => {
            verdict = AnchorVerdict::Unstable;
            reasons.push(format!(
                "its timeline {} was deleted: a return would be refused",
                anchor.timeline
            ));
        }
        Some(state) => match WindowPhase::of(&state.meta, ctx.now) {
            WindowPhase::Closed => {
                verdict = AnchorVerdict::Unstable;
                reasons.push(format!(
                    "its timeline {} has closed: a return would be refused",
                    anchor.timeline
                ));
            }
            phase => {
                if phase == WindowPhase::Closing {
                    reasons.push(format!(
                        "its timeline {}'s window is in its last tenth",
                        anchor.timeline
                    ));
                }
                let position = world.position_of(ctx.traveller, ctx.now);
                let items = rules::items_of(world, ctx.traveller);
                let carried: Vec<Change> = world
                    .items_of(ctx.traveller)
                    .filter(|i| i.whereabouts == crate::model::Whereabouts::Carried)
                    .map(|i| Change::BringItem {
                        item: i.id.clone(),
                        time: anchor.timestamp,
                    })
                    .collect();
                let subject = rules::subject(ctx, state, &position, &items);
                for p in paradox::check(&subject, &carried) {
                    let near = match p.kind {
                        ParadoxKind::CausalOrder
                        | ParadoxKind::CausalLoop
                        | ParadoxKind::Grandfather => spans(&p.events, state, anchor.timestamp),
                        // Item findings come from bringing what is carried to the timestamp.
                        _ => true,
                    };
                    if near {
                        reasons.push(format!(
                            "a return would land among a paradox: {}",
                            p.description
                        ));
                        paradoxes.push(p);
                    }
                }
                if verdict == AnchorVerdict::Stable && !reasons.is_empty() {
                    verdict = AnchorVerdict::AtRisk;
                }
            }
        },
    }
    Ok(AnchorStability {
        anchor_id: anchor.id.clone(),
        status: verdict,
        current_conditions: anchor.details.environment.clone().unwrap_or_default(),
        reasons,
        timeline_id: anchor.timeline.clone(),
        timeline_status: state.map(|s| s.meta.status_at(ctx.now)),
        closes_at: state.and_then(|s| s.meta.closes_at()),
        paradoxes,
        quantum_state: anchor.details.quantum_state.clone(),
        accuracy: anchor.details.accuracy,
    })
}

/// Whether `at` falls within the time span of the events a violation names.
fn spans(
    events: &[crate::model::EventId],
    state: &super::world::TimelineState,
    at: Instant,
) -> bool {
    let times: Vec<Instant> = events
        .iter()
        .filter_map(|e| state.history.get(e).map(|e| e.time))
        .collect();
    match (times.iter().min(), times.iter().max()) {
        (Some(first), Some(last)) => *first <= at && at <= *last,
        _ => false,
    }
}
/// Setting an anchor in the traveller's current timeline. One active anchor per timeline,
/// timestamp and description: the same instant in another timeline, or for another purpose, is
/// another return point (DESIGN §3).
pub fn set_anchor(
    world: &World,
    ctx: &Ctx<'_>,
    req: &NewPreciseAnchor,
) -> Result<(Op, AnchorRecord), ServiceError> {
    let description = rules::optional_text("description", req.description.as_ref())?;
    in_range("timestamp", req.timestamp)?;
    if let Some(accuracy) = req.accuracy
        && !accuracy.holds(&req.timestamp)
    {
        return Err(ServiceError::invalid(
            "timestamp",
            format!(
                "is given more finely than the accuracy '{}' ({} fraction digits at most)",
                serde_json::to_value(accuracy)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                accuracy.digits()
            ),
        ));
    }
    for (field, value) in [
        ("environment", &req.environment),
        ("quantum_state", &req.quantum_state),
    ] {
        if let Some(value) = value {
            conditions(field, value)?;
        }
    }
    let timeline = world.position_of(ctx.traveller, ctx.now).timeline;
    if let Some(existing) = world.anchors_of(ctx.traveller).find(|a| {
        a.status == AnchorStatus::Active
            && a.timeline == timeline
            && a.timestamp == req.timestamp
            && a.description == description
    }) {
        return Err(ServiceError::AlreadyExists {
            location: format!("/v1/anchors/{}", existing.id),
        });
    }
    let anchor = AnchorRecord {
        anchor: Anchor {
            id: AnchorId::from_ulid((ctx.mint)()),
            owner: ctx.traveller.clone(),
            timeline,
            timestamp: req.timestamp,
            description,
            status: AnchorStatus::Active,
            created_at: ctx.now,
        },
        details: AnchorDetails {
            location: world.location_of(ctx.traveller),
            accuracy: req.accuracy,
            environment: req.environment.clone(),
            quantum_state: req.quantum_state.clone(),
        },
    };
    Ok((
        Op::SetAnchor {
            anchor: anchor.clone(),
        },
        anchor,
    ))
}
