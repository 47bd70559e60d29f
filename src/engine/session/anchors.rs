//! A session's anchors (return tickets): set, find, adjust, delete, their stability, and the
//! wormhole simulation.

use super::*;

pub(super) async fn set_anchor(session: &EngineSession, req: NewAnchor) -> ServiceResult<Anchor> {
    session
        .set_precise_anchor(req.into())
        .await
        .map(|r| r.anchor)
}

pub(super) async fn set_precise_anchor(
    session: &EngineSession,
    req: NewPreciseAnchor,
) -> ServiceResult<AnchorRecord> {
    session
        .write(|world, ctx| {
            let (op, anchor) = crate::engine::anchors::set_anchor(world, ctx, &req)?;
            Ok((vec![op], anchor))
        })
        .await
}

pub(super) async fn get_anchor(session: &EngineSession, id: &AnchorId) -> ServiceResult<Anchor> {
    session
        .read(Inline, |world, ctx| {
            world
                .anchors
                .get(id)
                .filter(|a| &a.owner == ctx.traveller)
                .map(|a| a.anchor.clone())
                .ok_or_else(|| ServiceError::not_found("anchor", id))
        })
        .await
}

pub(super) async fn find_anchors(
    session: &EngineSession,
    req: AnchorListQuery,
) -> ServiceResult<Page<AnchorRecord>> {
    let page = PageRequest {
        limit: req.limit,
        cursor: req.cursor,
    };
    let include_spent = req.include_spent.unwrap_or(false);
    session
        .read(Inline, |world, ctx| {
            let keyed = world
                .anchors_of(ctx.traveller)
                .filter(|a| include_spent || a.status == crate::model::AnchorStatus::Active)
                .map(|a| (a.id.to_string(), (**a).clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
}

pub(super) async fn delete_anchor(session: &EngineSession, req: AnchorRef) -> ServiceResult<()> {
    session
        .write(|world, ctx| {
            Ok((
                vec![crate::engine::anchors::delete(world, ctx, &req.anchor_id)?],
                (),
            ))
        })
        .await
}

pub(super) async fn check_anchor_stability(
    session: &EngineSession,
    req: AnchorRef,
) -> ServiceResult<AnchorStability> {
    session
        .read(Inline, |world, ctx| {
            crate::engine::anchors::stability(world, ctx, &req.anchor_id)
        })
        .await
}

pub(super) async fn simulate_wormhole(
    session: &EngineSession,
    req: WormholeRequest,
) -> ServiceResult<WormholeSimulation> {
    session
        .counted(
            "simulate_wormhole",
            req.timeline_id.clone(),
            session.read(Inline, |world, ctx| {
                crate::engine::wormhole::simulate(world, ctx, &req)
            }),
        )
        .await
}

pub(super) async fn adjust_anchor(
    session: &EngineSession,
    req: AdjustAnchorRequest,
) -> ServiceResult<AnchorRecord> {
    session
        .write(|world, ctx| {
            let (op, anchor) = crate::engine::anchors::adjust(world, ctx, &req)?;
            Ok((vec![op], anchor))
        })
        .await
}

pub(super) async fn list_anchors(
    session: &EngineSession,
    page: PageRequest,
) -> ServiceResult<Page<Anchor>> {
    session
        .read(Inline, |world, ctx| {
            let keyed = world
                .anchors_of(ctx.traveller)
                .map(|a| (a.id.to_string(), a.anchor.clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
}
