//! A session's integrity operations: the tamper scan of the log's hash chain and the validation of
//! a timeline against the verified log, off the runtime's workers.

use super::*;

#[async_trait]
impl Integrity for EngineSession {
    async fn detect_tampering(&self, req: TamperQuery) -> ServiceResult<TamperReport> {
        self.counted("detect_tampering", Some(req.timeline_id.clone()), async {
            // Unknown to a traveller who may not read it, as everywhere.
            let (hidden, restriction) = self
                .read(Inline, |world, ctx| {
                    rules::referenced(world, &req.timeline_id)?;
                    // The view keeps every list, so it says what it hid.
                    Ok((
                        access::hidden_from(world, ctx.traveller, self.admin),
                        access::restriction_of(world, ctx.traveller, self.admin),
                    ))
                })
                .await?;
            // A timeline that exists, then a turn (a mistyped id costs none).
            self.engine.start_scan(&self.traveller, self.admin)?;
            // Only a caller who may write has their scan recorded (it is a record in the
            // log): a reader's scan is answered the same, and appends nothing.
            let may_record = self.may_write
                && !matches!(
                    restriction,
                    Some(
                        RestrictionLevel::NoAccess
                            | RestrictionLevel::ReadOnly
                            | RestrictionLevel::LimitedAccess
                    )
                );
            crate::engine::integrity::detect(
                &self.engine,
                may_record.then_some(&self.traveller),
                &req.timeline_id,
                req.scan_depth,
                self.admin,
                &hidden,
            )
            .await
        })
        .await
    }

    async fn validate_integrity(&self, req: IntegrityQuery) -> ServiceResult<IntegrityReport> {
        self.counted("validate_integrity", Some(req.timeline_id.clone()), async {
            let served = self
                .engine
                .snapshot_within(self.allowed_staleness(CacheScope::Timeline))
                .await?;
            self.refuse_if_barred(&served, false)?;
            let served = self.visible(served);
            rules::referenced(&served, &req.timeline_id)?;
            self.engine.start_scan(&self.traveller, self.admin)?;
            crate::engine::integrity::validate(
                &self.engine,
                served,
                &req.timeline_id,
                req.timestamp,
            )
            .await
        })
        .await
    }
}
