//! The security operations of a session (guide operations §5): access-control lists, restrictions
//! and the access log, each checked with the caller's rights.

use super::*;

#[async_trait]
impl Security for EngineSession {
    async fn set_access_control(
        &self,
        req: SetAccessControlRequest,
    ) -> ServiceResult<AccessControlSet> {
        let permissions = req.permissions.map(access::validated).transpose()?;
        let answer = self
            .write(|world, ctx| {
                let id = &rules::referenced(world, &req.timeline_id)?.meta.id;
                if access::right_of(world, ctx.traveller, self.admin, id) < Some(Right::Admin) {
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
                if !self.admin && !keeps_admin {
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
            self.engine.note_refusal(
                Some(req.timeline_id.clone()),
                self.traveller.as_str(),
                "set_access_control",
            );
        }
        answer
    }

    async fn access_control(&self, timeline: &TimelineId) -> ServiceResult<AccessControlView> {
        self.counted(
            "access_control",
            Some(timeline.clone()),
            self.read(Inline, |world, ctx| {
                let id = &rules::addressed(world, timeline)?.meta.id;
                Ok(self.access_view(world, ctx, id))
            }),
        )
        .await
    }

    async fn list_access_controls(
        &self,
        page: PageRequest,
    ) -> ServiceResult<Page<AccessControlView>> {
        self.read(Inline, |world, ctx| {
            let keyed = world
                .acls
                .keys()
                .filter(|id| world.timelines.contains_key(*id))
                .map(|id| (id.to_string(), self.access_view(world, ctx, id)))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }

    async fn restrict_time_travel(&self, req: RestrictRequest) -> ServiceResult<Restricted> {
        self.require_operator("restrict_time_travel", "restricting a traveller")?;
        self.write(|_world, ctx| {
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

    async fn access_logs(&self, req: AccessLogQuery) -> ServiceResult<AccessLog> {
        let retention = self.engine.config().access_log_retention;
        let (engine, operator, query) = (Arc::clone(&self.engine), self.admin, req.clone());
        // Its work grows with the entries in the range: on the blocking pool.
        let answer = self
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
        self.noted("access_logs", Some(&req.timeline_id), answer)
    }

    async fn list_restrictions(&self, page: PageRequest) -> ServiceResult<Page<Restriction>> {
        self.require_operator("list_restrictions", "seeing the restrictions")?;
        self.read(Inline, |world, _ctx| {
            let keyed = world
                .restrictions
                .values()
                .map(|r| (r.user_id.to_string(), (**r).clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }
}
