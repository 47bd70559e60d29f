//! A session's merges and their review, the diff of two timelines, isolations and dissonance
//! corrections: the operations that reconcile timelines.

use super::*;

pub(super) async fn merge_timelines(
    session: &EngineSession,
    req: MergeRequest,
) -> ServiceResult<MergeResult> {
    session
        .write(|world, ctx| crate::engine::merge::merge(world, ctx, &req))
        .await
}

pub(super) async fn list_merges(
    session: &EngineSession,
    page: PageRequest,
) -> ServiceResult<Page<Merge>> {
    session
        .read(Inline, |world, _ctx| {
            let keyed = world
                .merges
                .values()
                // Oldest first, as documented (ids of the demo's merges are not in time order).
                .map(|m| {
                    let key = format!("{}|{}", m.at.format("%Y%m%dT%H%M%S%.9f"), m.merge_id);
                    (key, (**m).clone())
                })
                .collect();
            paginate(keyed, &page)
        })
        .await
}

pub(super) async fn get_merge(session: &EngineSession, id: &MergeId) -> ServiceResult<Merge> {
    session
        .read(Inline, |world, _ctx| {
            world
                .merges
                .get(id)
                .map(|m| (**m).clone())
                .ok_or_else(|| ServiceError::not_found("merge", id))
        })
        .await
}

pub(super) async fn review_conflicts(
    session: &EngineSession,
    req: ReviewQuery,
) -> ServiceResult<ConflictReview> {
    session
        .counted(
            "review_conflicts",
            Some(req.merged_timeline_id.clone()),
            session.read(Inline, |world, _ctx| {
                crate::engine::review::review(world, &req)
            }),
        )
        .await
}

pub(super) async fn resolve_conflict(
    session: &EngineSession,
    req: ResolveRequest,
) -> ServiceResult<ResolveResult> {
    session
        .write(|world, ctx| crate::engine::review::resolve(world, ctx, &req))
        .await
}

pub(super) async fn abort_merge(session: &EngineSession, id: &MergeId) -> ServiceResult<()> {
    session
        .write(|world, ctx| Ok((vec![crate::engine::review::abort(world, ctx, id)?], ())))
        .await
}

pub(super) async fn diff_timelines(
    session: &EngineSession,
    req: DiffQuery,
) -> ServiceResult<TimelineDiff> {
    session
        .counted(
            "diff_timelines",
            Some(req.destination_timeline_id.clone()),
            session.read(Inline, |world, _ctx| {
                crate::engine::review::diff(world, &req)
            }),
        )
        .await
}

pub(super) async fn isolate_event(
    session: &EngineSession,
    req: IsolateRequest,
) -> ServiceResult<Isolation> {
    session
        .write(|world, ctx| {
            let isolation = crate::engine::isolation::isolate(world, ctx, &req)?;
            Ok((
                vec![crate::engine::Op::Isolate {
                    isolation: isolation.clone(),
                }],
                isolation,
            ))
        })
        .await
}

pub(super) async fn lift_isolation(session: &EngineSession, id: &IsolationId) -> ServiceResult<()> {
    session
        .write(|world, _ctx| {
            if !world.isolations.contains_key(id) {
                return Err(ServiceError::not_found("isolation", id));
            }
            Ok((
                vec![crate::engine::Op::LiftIsolation { id: id.clone() }],
                (),
            ))
        })
        .await
}

pub(super) async fn correct_dissonance(
    session: &EngineSession,
    req: DissonanceRequest,
) -> ServiceResult<DissonanceResult> {
    session
        .write(|world, ctx| crate::engine::dissonance::correct(world, ctx, &req))
        .await
}
