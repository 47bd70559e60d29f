//! A session's integrity operations: the tamper scan of the log's hash chain and the validation of
//! a timeline against the verified log, off the runtime's workers.

use super::*;

pub(super) async fn detect_tampering(
    session: &EngineSession,
    req: TamperQuery,
) -> ServiceResult<TamperReport> {
    session
        .counted("detect_tampering", Some(req.timeline_id.clone()), async {
            // Unknown to a traveller who may not read it, as everywhere.
            let (hidden, restriction) = session
                .read(Inline, |world, ctx| {
                    rules::referenced(world, &req.timeline_id)?;
                    // The view keeps every list, so it says what it hid.
                    Ok((
                        access::hidden_from(world, ctx.traveller, session.admin),
                        access::restriction_of(world, ctx.traveller, session.admin),
                    ))
                })
                .await?;
            // A timeline that exists, then a turn (a mistyped id costs none).
            session
                .engine
                .start_scan(&session.traveller, session.admin)?;
            // Only a caller who may write has their scan recorded (it is a record in the
            // log): a reader's scan is answered the same, and appends nothing.
            let may_record = session.may_write
                && !matches!(
                    restriction,
                    Some(
                        RestrictionLevel::NoAccess
                            | RestrictionLevel::ReadOnly
                            | RestrictionLevel::LimitedAccess
                    )
                );
            crate::engine::integrity::detect(
                &session.engine,
                may_record.then_some(&session.traveller),
                &req.timeline_id,
                req.scan_depth,
                session.admin,
                &hidden,
            )
            .await
        })
        .await
}

pub(super) async fn validate_integrity(
    session: &EngineSession,
    req: IntegrityQuery,
) -> ServiceResult<IntegrityReport> {
    session
        .counted("validate_integrity", Some(req.timeline_id.clone()), async {
            let served = session
                .engine
                .snapshot_within(session.allowed_staleness(CacheScope::Timeline))
                .await?;
            session.refuse_if_barred(&served, false)?;
            let served = session.visible(served);
            rules::referenced(&served, &req.timeline_id)?;
            session
                .engine
                .start_scan(&session.traveller, session.admin)?;
            crate::engine::integrity::validate(
                &session.engine,
                served,
                &req.timeline_id,
                req.timestamp,
            )
            .await
        })
        .await
}
