//! A session's merges and their review, and the diff of two timelines: the operations that
//! reconcile timelines.

use super::*;

#[async_trait]
impl Merges for EngineSession {
    async fn merge_timelines(&self, req: MergeRequest) -> ServiceResult<MergeResult> {
        self.write(|world, ctx| crate::engine::merge::merge(world, ctx, &req))
            .await
    }

    async fn list_merges(&self, page: PageRequest) -> ServiceResult<Page<Merge>> {
        self.read(Inline, |world, _ctx| {
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

    async fn get_merge(&self, id: &MergeId) -> ServiceResult<Merge> {
        self.read(Inline, |world, _ctx| {
            world
                .merges
                .get(id)
                .map(|m| (**m).clone())
                .ok_or_else(|| ServiceError::not_found("merge", id))
        })
        .await
    }

    async fn review_conflicts(&self, req: ReviewQuery) -> ServiceResult<ConflictReview> {
        self.counted(
            "review_conflicts",
            Some(req.merged_timeline_id.clone()),
            self.read(Inline, |world, _ctx| {
                crate::engine::review::review(world, &req)
            }),
        )
        .await
    }

    async fn resolve_conflict(&self, req: ResolveRequest) -> ServiceResult<ResolveResult> {
        self.write(|world, ctx| crate::engine::review::resolve(world, ctx, &req))
            .await
    }

    async fn abort_merge(&self, id: &MergeId) -> ServiceResult<()> {
        self.write(|world, ctx| Ok((vec![crate::engine::review::abort(world, ctx, id)?], ())))
            .await
    }

    async fn diff_timelines(&self, req: DiffQuery) -> ServiceResult<TimelineDiff> {
        self.counted(
            "diff_timelines",
            Some(req.destination_timeline_id.clone()),
            self.read(Inline, |world, _ctx| {
                crate::engine::review::diff(world, &req)
            }),
        )
        .await
    }
}
