//! A session's world files: a timeline exported, timelines imported.

use super::*;

#[async_trait]
impl Transfer for EngineSession {
    async fn export_timeline(&self, id: &TimelineId) -> ServiceResult<WorldFile> {
        let answer = self
            .read(Inline, |world, _| {
                crate::engine::transfer::export(world, id)
            })
            .await;
        self.noted("export_timeline", Some(id), answer)
    }

    async fn import_timelines(&self, req: ImportRequest) -> ServiceResult<ImportReport> {
        // Parsed once, outside the writer lock; decided (and re-decided after a race) on the
        // latest state.
        let file = crate::engine::transfer::parse(&req.document)?;
        let input = crate::engine::transfer::ImportInput {
            file: &file,
            text: &req.document,
            default_window: self.engine.config().default_window,
            safety_check: req.safety_check,
            progress: req.progress.as_ref(),
        };
        self.write(|world, ctx| crate::engine::transfer::decide(world, ctx, &input))
            .await
    }
}
