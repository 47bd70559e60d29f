//! Rights on timelines and restrictions on travellers (guide operations §5.1–5.2), enforced in
//! the engine so every face (HTTP, the CLI, the dashboard, automation) refuses alike.
//!
//! Two checks, both in [`EngineSession`](super::EngineSession):
//! - **Visibility.** A session decides on a [`view`] of the world without the timelines the
//!   caller may not read: to them those timelines do not exist, in lists, lookups and
//!   searches alike. Nothing is copied unless an access-control list hides something.
//! - **Rights of a change.** Whatever a decision wants to log is checked op by op
//!   ([`permit`]): each op names the timelines it touches and the right it needs there
//!   ([`needs`]), and a restricted traveller's ops are held to their level. One check over
//!   what is written, rather than one per operation, so a new operation cannot forget it.
//!
//! Operators (admin-scope sessions and the embedded engine) hold every right and are never
//! restricted, so nobody can lock the service out of its own timelines.

use super::{Op, World};
use crate::error::ServiceError;
use crate::model::{JourneyKind, TimelineId, Traveller};
use crate::service::{Permissions, RestrictionLevel, Right};

/// The refusal of an operation needing `right` on a timeline the caller can read.
pub fn denied(timeline: &TimelineId, right: Right) -> ServiceError {
    let why = match right {
        // Without a list everyone reads and writes, so only a list refuses these.
        Right::Read => "its access control does not list you (its admins or an operator can)",
        Right::Write => {
            "its access control does not list you under write or admin (its admins or an \
             operator can change that)"
        }
        Right::Admin => {
            "only its admins may do this: its creator while it has no access-control list, the \
             names under admin once it has one, and operators"
        }
    };
    ServiceError::AccessDenied {
        timeline: timeline.to_string(),
        right: right.as_str().into(),
        message: format!(
            "you need the {} right on timeline '{timeline}': {why}",
            right.as_str()
        ),
    }
}

/// The refusal of what `level` does not allow.
pub fn restricted(level: RestrictionLevel) -> ServiceError {
    ServiceError::TravelRestricted {
        level: level.as_str().into(),
        allows: level.allows().into(),
    }
}

/// The highest right `who` holds on timeline `id` (`None`: they may not even see it).
///
/// Without an access-control list every traveller may read and write, and the timeline's
/// creator administers it; with one, its lists decide. Operators hold every right.
pub fn right_of(world: &World, who: &Traveller, operator: bool, id: &TimelineId) -> Option<Right> {
    if operator {
        return Some(Right::Admin);
    }
    match world.acls.get(id) {
        Some(acl) => acl.permissions.right_of(who),
        None => {
            let created = world
                .timelines
                .get(id)
                .is_some_and(|t| t.meta.created_by.as_ref() == Some(who));
            Some(if created { Right::Admin } else { Right::Write })
        }
    }
}

/// The restriction `who` is under, if any (operators are never restricted).
pub fn restriction_of(world: &World, who: &Traveller, operator: bool) -> Option<RestrictionLevel> {
    if operator {
        return None;
    }
    world.restrictions.get(who).map(|r| r.level)
}

/// The timelines an access-control list hides from `who`.
pub fn hidden_from(world: &World, who: &Traveller, operator: bool) -> Vec<TimelineId> {
    if operator {
        return Vec::new();
    }
    world
        .acls
        .iter()
        .filter(|(_, acl)| acl.permissions.right_of(who).is_none())
        .map(|(id, _)| id.clone())
        .collect()
}

/// The world as `who` may see it: without the timelines they may not read. `None` when they
/// may see all of it (no copy is made then; the usual case).
pub fn view(world: &World, who: &Traveller, operator: bool) -> Option<World> {
    let hidden = hidden_from(world, who, operator);
    if hidden.is_empty() {
        return None;
    }
    let mut seen = world.clone();
    for id in &hidden {
        seen.timelines.remove(id);
    }
    // What names a hidden timeline goes with it: merges from or into it (found by timeline,
    // not by a pass over every merge), its isolations (those in force).
    seen.hide_merges_of(&hidden);
    let isolations: Vec<_> = seen
        .isolations
        .values()
        .filter(|i| hidden.contains(&i.timeline_id))
        .map(|i| i.isolation_id.clone())
        .collect();
    for id in &isolations {
        seen.isolations.remove(id);
    }
    Some(seen)
}

/// Whether `who` may change shared state in `timeline` now (automation checks this before it
/// runs an action): read, then write, then no restriction.
pub fn may_change(
    world: &World,
    who: &Traveller,
    operator: bool,
    timeline: &TimelineId,
) -> Result<(), ServiceError> {
    if world.timelines.contains_key(timeline) {
        match right_of(world, who, operator, timeline) {
            None => return Err(ServiceError::unknown("timeline", timeline)),
            Some(held) if held < Right::Write => return Err(denied(timeline, Right::Write)),
            Some(_) => {}
        }
    }
    match restriction_of(world, who, operator) {
        Some(level) if level != RestrictionLevel::Unrestricted => Err(restricted(level)),
        _ => Ok(()),
    }
}

/// Refuses what a decision on a partial view could not see: deleting a timeline that has
/// branches hidden from the caller (they are not named).
pub fn guard_unseen(world: &World, ops: &[Op]) -> Result<(), ServiceError> {
    for op in ops {
        if let Op::DeleteTimeline { id } = op
            && world
                .timelines
                .values()
                .any(|t| t.meta.parent.as_ref() == Some(id))
        {
            return Err(ServiceError::Conflict(format!(
                "timeline '{id}' has branches (some of which you may not see); they must be \
                 deleted first"
            )));
        }
    }
    Ok(())
}

/// The timelines `op` touches and the right each needs. Leaving a timeline needs no right;
/// private records (anchors adjusted or deleted, clocks, remembered answers) touch none.
pub fn needs(world: &World, op: &Op) -> Vec<(TimelineId, Right)> {
    let merge_destination = |id: &crate::model::MergeId| {
        world
            .merges
            .get(id)
            .map(|m| vec![(m.destination_timeline_id.clone(), Right::Write)])
            .unwrap_or_default()
    };
    match op {
        Op::CreateTimeline { timeline } => timeline
            .parent
            .iter()
            .map(|p| (p.clone(), Right::Read))
            .collect(),
        Op::DeleteTimeline { id } => vec![(id.clone(), Right::Admin)],
        Op::AddEvents { timeline, .. }
        | Op::Manipulate { timeline, .. }
        | Op::Revert { timeline, .. }
        | Op::CopyData { timeline, .. } => vec![(timeline.clone(), Right::Write)],
        Op::RegisterItem { item } => vec![(item.origin_timeline.clone(), Right::Read)],
        Op::SetAnchor { anchor } => vec![(anchor.anchor.timeline.clone(), Right::Read)],
        Op::Travel { journey } => vec![(journey.to_timeline.clone(), Right::Read)],
        Op::CreateJob { job } => vec![(job.timeline.clone(), Right::Write)],
        Op::CreateScript { script } => vec![(script.timeline.clone(), Right::Write)],
        Op::Merge { merge } => vec![
            (merge.source_timeline_id.clone(), Right::Read),
            (merge.destination_timeline_id.clone(), Right::Write),
        ],
        Op::ResolveConflict { merge, .. }
        | Op::MergeCompleted { merge, .. }
        | Op::MergeAborted { merge, .. } => merge_destination(merge),
        Op::StoreData { entry } => vec![(entry.timeline_id.clone(), Right::Write)],
        Op::Isolate { isolation } => vec![(isolation.timeline_id.clone(), Right::Write)],
        Op::LiftIsolation { id } => world
            .isolations
            .get(id)
            .map(|i| vec![(i.timeline_id.clone(), Right::Write)])
            .unwrap_or_default(),
        Op::SetAccessControl { timeline, .. } => vec![(timeline.clone(), Right::Admin)],
        Op::AdjustAnchor { .. }
        | Op::DeleteAnchor { .. }
        | Op::Pause { .. }
        | Op::Resume { .. }
        | Op::DeleteScript { .. }
        | Op::CancelJob { .. }
        | Op::Remember { .. }
        | Op::Ran { .. }
        | Op::SetReadStaleness { .. }
        | Op::RestrictTraveller { .. }
        | Op::ScanResult { .. }
        | Op::AccessSummary { .. } => Vec::new(),
    }
}

/// Whether a traveller at `level` may log `op`.
fn allowed_at(level: RestrictionLevel, world: &World, who: &Traveller, op: &Op) -> bool {
    match level {
        RestrictionLevel::Unrestricted => true,
        RestrictionLevel::NoAccess | RestrictionLevel::ReadOnly => false,
        RestrictionLevel::LimitedAccess => match op {
            // Their own records and their clock.
            Op::RegisterItem { .. }
            | Op::SetAnchor { .. }
            | Op::AdjustAnchor { .. }
            | Op::DeleteAnchor { .. }
            | Op::Pause { .. }
            | Op::Resume { .. }
            | Op::Remember { .. } => true,
            // Written by the engine, not by a traveller: nothing to restrict.
            Op::AccessSummary { .. } => true,
            // Home to one of their own anchors, and nowhere else.
            Op::Travel { journey } => {
                journey.kind.is_none_or(|k| k == JourneyKind::Return)
                    && journey
                        .anchor
                        .as_ref()
                        .and_then(|a| world.anchors.get(a))
                        .is_some_and(|a| &a.anchor.owner == who)
            }
            _ => false,
        },
    }
}

/// Refuses `ops` unless `who` may log every one of them: their restriction first (a
/// restricted traveller learns that before anything else), then their right on each timeline
/// an op touches. A timeline they may not read is unknown to them.
pub fn permit(
    world: &World,
    who: &Traveller,
    operator: bool,
    ops: &[Op],
) -> Result<(), ServiceError> {
    if let Some(level) = restriction_of(world, who, operator)
        && let Some(_) = ops.iter().find(|op| !allowed_at(level, world, who, op))
    {
        return Err(restricted(level));
    }
    for op in ops {
        for (timeline, needed) in needs(world, op) {
            // A timeline created in the same batch (a branch) is not in `world` yet.
            if !world.timelines.contains_key(&timeline) {
                continue;
            }
            match right_of(world, who, operator, &timeline) {
                None => return Err(ServiceError::unknown("timeline", &timeline)),
                Some(held) if held < needed => return Err(denied(&timeline, needed)),
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Validates the lists of a `set-access-control`: each at most [`MAX_PERMISSION_NAMES`] names,
/// duplicates dropped, order kept.
pub fn validated(mut permissions: Permissions) -> Result<Permissions, ServiceError> {
    for (field, list) in [
        ("permissions.read", &mut permissions.read),
        ("permissions.write", &mut permissions.write),
        ("permissions.admin", &mut permissions.admin),
    ] {
        if list.len() > crate::service::MAX_PERMISSION_NAMES {
            return Err(ServiceError::invalid(
                field,
                format!(
                    "{} names; a list holds at most {}",
                    list.len(),
                    crate::service::MAX_PERMISSION_NAMES
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        list.retain(|t| seen.insert(t.clone()));
    }
    Ok(permissions)
}
