//! A session's anchors (return tickets): set, find, adjust, delete, their stability, and the
//! wormhole simulation.

use super::*;

#[async_trait]
impl Anchors for EngineSession {
    async fn set_anchor(&self, req: NewAnchor) -> ServiceResult<Anchor> {
        self.set_precise_anchor(req.into()).await.map(|r| r.anchor)
    }

    async fn set_precise_anchor(&self, req: NewPreciseAnchor) -> ServiceResult<AnchorRecord> {
        self.write(|world, ctx| {
            let (op, anchor) = crate::engine::anchors::set_anchor(world, ctx, &req)?;
            Ok((vec![op], anchor))
        })
        .await
    }

    async fn get_anchor(&self, id: &AnchorId) -> ServiceResult<Anchor> {
        self.read(Inline, |world, ctx| {
            world
                .anchors
                .get(id)
                .filter(|a| &a.owner == ctx.traveller)
                .map(|a| a.anchor.clone())
                .ok_or_else(|| ServiceError::not_found("anchor", id))
        })
        .await
    }

    async fn find_anchors(&self, req: AnchorListQuery) -> ServiceResult<Page<AnchorRecord>> {
        let page = PageRequest {
            limit: req.limit,
            cursor: req.cursor,
        };
        let include_spent = req.include_spent.unwrap_or(false);
        self.read(Inline, |world, ctx| {
            let keyed = world
                .anchors_of(ctx.traveller)
                .filter(|a| include_spent || a.status == crate::model::AnchorStatus::Active)
                .map(|a| (a.id.to_string(), (**a).clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }

    async fn delete_anchor(&self, req: AnchorRef) -> ServiceResult<()> {
        self.write(|world, ctx| {
            Ok((
                vec![crate::engine::anchors::delete(world, ctx, &req.anchor_id)?],
                (),
            ))
        })
        .await
    }

    async fn check_anchor_stability(&self, req: AnchorRef) -> ServiceResult<AnchorStability> {
        self.read(Inline, |world, ctx| {
            crate::engine::anchors::stability(world, ctx, &req.anchor_id)
        })
        .await
    }

    async fn simulate_wormhole(&self, req: WormholeRequest) -> ServiceResult<WormholeSimulation> {
        self.counted(
            "simulate_wormhole",
            req.timeline_id.clone(),
            self.read(Inline, |world, ctx| {
                crate::engine::wormhole::simulate(world, ctx, &req)
            }),
        )
        .await
    }

    async fn adjust_anchor(&self, req: AdjustAnchorRequest) -> ServiceResult<AnchorRecord> {
        self.write(|world, ctx| {
            let (op, anchor) = crate::engine::anchors::adjust(world, ctx, &req)?;
            Ok((vec![op], anchor))
        })
        .await
    }

    async fn list_anchors(&self, page: PageRequest) -> ServiceResult<Page<Anchor>> {
        self.read(Inline, |world, ctx| {
            let keyed = world
                .anchors_of(ctx.traveller)
                .map(|a| (a.id.to_string(), a.anchor.clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }
}
