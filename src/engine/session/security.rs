//! The security operations of a session (guide operations §5): access-control lists, restrictions
//! and the access log, each checked with the caller's rights.

use super::*;

pub(super) async fn set_access_control(
    session: &EngineSession,
    req: SetAccessControlRequest,
) -> ServiceResult<AccessControlSet> {
    let permissions = req.permissions.map(access::validated).transpose()?;
    let answer = session
        .write(|world, ctx| {
            let id = &rules::referenced(world, &req.timeline_id)?.meta.id;
            if access::right_of(world, ctx.traveller, session.admin, id) < Some(Right::Admin) {
                return Err(access::denied(id, Right::Admin));
            }
            let created = world
                .timelines
                .get(id)
                .is_some_and(|t| t.meta.created_by.as_ref() == Some(ctx.traveller));
            // Without a list only the creator administers it: removing it takes admin away
            // from everyone else.
            let keeps_admin = match &permissions {
                Some(p) => p.admin.contains(ctx.traveller),
                None => created,
            };
            if !session.admin && !keeps_admin {
                return Err(ServiceError::Conflict(format!(
                    "this list would take your admin right on timeline '{id}' away; keep \
                 yourself among its admins (`--admin {me}` on the command line, \
                 `permissions.admin` over HTTP; an operator can set any list)",
                    me = ctx.traveller
                )));
            }
            let access_control = permissions.clone().map(|permissions| AccessControl {
                timeline_id: id.clone(),
                permissions,
                set_by: ctx.traveller.clone(),
                at: ctx.now,
            });
            let status = if access_control.is_some() {
                "set"
            } else {
                "removed"
            };
            let answer = AccessControlSet {
                status: status.into(),
                timeline_id: id.clone(),
                access_control: access_control.clone(),
            };
            if access_control.is_none() && !world.acls.contains_key(id) {
                return Ok((Vec::new(), answer));
            }
            let op = crate::engine::Op::SetAccessControl {
                timeline: id.clone(),
                access_control,
            };
            Ok((vec![op], answer))
        })
        .await;
    // A list refused as it stands (one that would take the caller's own admin right away)
    // is a refused attempt to administer the timeline: its log shows it (B4).
    if let Err(ServiceError::Conflict(_)) = &answer {
        session.engine.note_refusal(
            Some(req.timeline_id.clone()),
            session.traveller.as_str(),
            "set_access_control",
        );
    }
    answer
}

pub(super) async fn access_control(
    session: &EngineSession,
    timeline: &TimelineId,
) -> ServiceResult<AccessControlView> {
    session
        .counted(
            "access_control",
            Some(timeline.clone()),
            session.read(Inline, |world, ctx| {
                let id = &rules::addressed(world, timeline)?.meta.id;
                Ok(session.access_view(world, ctx, id))
            }),
        )
        .await
}

pub(super) async fn list_access_controls(
    session: &EngineSession,
    page: PageRequest,
) -> ServiceResult<Page<AccessControlView>> {
    session
        .read(Inline, |world, ctx| {
            let keyed = world
                .acls
                .keys()
                .filter(|id| world.timelines.contains_key(*id))
                .map(|id| (id.to_string(), session.access_view(world, ctx, id)))
                .collect();
            paginate(keyed, &page)
        })
        .await
}

pub(super) async fn restrict_time_travel(
    session: &EngineSession,
    req: RestrictRequest,
) -> ServiceResult<Restricted> {
    session.require_operator("restrict_time_travel", "restricting a traveller")?;
    session
        .write(|_world, ctx| {
            let restriction = Restriction {
                user_id: req.user_id.clone(),
                level: req.restriction_level,
                set_by: ctx.traveller.clone(),
                at: ctx.now,
            };
            let status = if req.restriction_level == RestrictionLevel::Unrestricted {
                "lifted"
            } else {
                "restricted"
            };
            let answer = Restricted {
                status: status.into(),
                restriction: restriction.clone(),
            };
            Ok((
                vec![crate::engine::Op::RestrictTraveller { restriction }],
                answer,
            ))
        })
        .await
}

pub(super) async fn access_logs(
    session: &EngineSession,
    req: AccessLogQuery,
) -> ServiceResult<AccessLog> {
    let retention = session.engine.config().access_log_retention;
    let (engine, operator, query) = (Arc::clone(&session.engine), session.admin, req.clone());
    // Its work grows with the entries in the range: on the blocking pool.
    let answer = session
        .read(Heavy, move |world, ctx| {
            let req = query;
            let id = &rules::referenced(world, &req.timeline_id)?.meta.id;
            if access::right_of(world, ctx.traveller, operator, id) != Some(Right::Admin) {
                return Err(access::denied(id, Right::Admin));
            }
            let (found, dropped, retained_from) = access_log::entries(
                &engine,
                world,
                id,
                operator && req.service_wide,
                req.time_range.as_ref(),
                ctx.now,
                retention,
            );
            let page = paginate(found, &req.page)?;
            Ok(AccessLog {
                status: "ok".into(),
                logs: page.items,
                dropped,
                retained_from: Some(retained_from),
                next_cursor: page.next_cursor,
            })
        })
        .await;
    session.noted("access_logs", Some(&req.timeline_id), answer)
}

pub(super) async fn list_restrictions(
    session: &EngineSession,
    page: PageRequest,
) -> ServiceResult<Page<Restriction>> {
    session.require_operator("list_restrictions", "seeing the restrictions")?;
    session
        .read(Inline, |world, _ctx| {
            let keyed = world
                .restrictions
                .values()
                .map(|r| (r.user_id.to_string(), (**r).clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
}
