//! A session's automation: scripts, scheduled and externally triggered manipulations, and the
//! automation log.

use super::*;

#[async_trait]
impl Automation for EngineSession {
    async fn create_script(&self, req: NewScript) -> ServiceResult<Script> {
        self.write(|world, ctx| {
            let script = rules::new_script(world, ctx, &req)?;
            Ok((
                vec![crate::engine::Op::CreateScript {
                    script: script.clone(),
                }],
                automation::script_view(&script),
            ))
        })
        .await
    }

    async fn list_scripts(&self, page: PageRequest) -> ServiceResult<Page<Script>> {
        self.read(Inline, |world, ctx| {
            let keyed = world
                .scripts
                .values()
                .filter(|s| self.admin || &s.owner == ctx.traveller)
                .map(|s| (s.id.to_string(), automation::script_view(s)))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }

    async fn delete_script(&self, id: &ScriptId) -> ServiceResult<()> {
        self.write(|world, ctx| {
            world
                .scripts
                .get(id)
                // The author, or an admin (automation changes shared timelines).
                .filter(|s| self.admin || &s.owner == ctx.traveller)
                .ok_or_else(|| ServiceError::not_found("script", id))?;
            Ok((vec![crate::engine::Op::DeleteScript { id: id.clone() }], ()))
        })
        .await
    }

    async fn schedule_manipulation(&self, req: NewSchedule) -> ServiceResult<Schedule> {
        let timeline = req.timeline_id.clone().unwrap_or_else(TimelineId::primary);
        let action = automation::schedule_action(&req.event_id, &req.manipulation_details);
        self.write(|world, ctx| {
            let job = rules::new_job(
                world,
                ctx,
                &timeline,
                vec![action.clone()],
                req.scheduled_time,
                None,
            )?;
            Ok((
                vec![crate::engine::Op::CreateJob { job: job.clone() }],
                automation::job_view(&job),
            ))
        })
        .await
    }

    async fn trigger_external_manipulation(&self, req: ExternalTrigger) -> ServiceResult<Schedule> {
        let timeline = req.timeline_id.clone().unwrap_or_else(TimelineId::primary);
        let system = rules::text("external_system", &req.external_system)?;
        crate::model::opt_in_range(
            "trigger_conditions.timestamp",
            req.trigger_conditions.timestamp,
        )?;
        self.write(|world, ctx| {
            let at = req
                .trigger_conditions
                .timestamp
                .map_or(ctx.now, |t| t.max(ctx.now));
            let job = rules::new_job(
                world,
                ctx,
                &timeline,
                req.actions.clone(),
                at,
                Some((system.clone(), req.trigger_conditions.build_status.clone())),
            )?;
            Ok((
                vec![crate::engine::Op::CreateJob { job: job.clone() }],
                automation::job_view(&job),
            ))
        })
        .await
    }

    async fn list_schedules(&self, page: PageRequest) -> ServiceResult<Page<Schedule>> {
        self.read(Inline, |world, ctx| {
            let keyed = world
                .jobs
                .values()
                .filter(|j| self.admin || &j.owner == ctx.traveller)
                .map(|j| (j.id.to_string(), automation::job_view(j)))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }

    async fn delete_schedule(&self, id: &ScheduleId) -> ServiceResult<()> {
        self.write(|world, ctx| {
            let job = world
                .jobs
                .get(id)
                .filter(|j| self.admin || &j.owner == ctx.traveller)
                .ok_or_else(|| ServiceError::not_found("schedule", id))?;
            if !job.status.is_pending() {
                return Err(ServiceError::Conflict(format!(
                    "schedule '{id}' is {} and can no longer be cancelled",
                    job.status.as_str()
                )));
            }
            Ok((vec![crate::engine::Op::CancelJob { id: id.clone() }], ()))
        })
        .await
    }

    async fn automation_log(&self, req: LogQuery) -> ServiceResult<Page<LogEntry>> {
        self.read(Inline, |world, ctx| {
            let keyed = world
                .log
                .iter()
                .enumerate()
                // Automation changes shared timelines: an admin sees everyone's.
                .filter(|(_, r)| self.admin || &r.owner == ctx.traveller)
                .filter(|(_, r)| {
                    req.timeline_id
                        .as_ref()
                        .is_none_or(|t| &r.entry.timeline_id == t)
                })
                .filter(|(_, r)| {
                    req.date_range
                        .as_ref()
                        .is_none_or(|range| range.contains(&r.entry.timestamp))
                })
                .map(|(i, r)| {
                    let entry = LogEntry {
                        owner: Some(r.owner.clone()),
                        ..r.entry.clone()
                    };
                    (format!("{i:012}"), entry)
                })
                .collect();
            paginate(keyed, &req.page)
        })
        .await
    }
}
