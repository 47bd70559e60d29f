//! A session's paradox work: proposed changes and timelines checked, anomalies monitored and
//! followed, dissonance corrected, events isolated.

use super::*;

#[async_trait]
impl Paradoxes for EngineSession {
    async fn check_paradox(&self, req: ParadoxCheckRequest) -> ServiceResult<ParadoxReport> {
        self.counted(
            "check_paradox",
            Some(req.timeline_id.clone()),
            self.read(Inline, |world, ctx| {
                let state = rules::referenced(world, &req.timeline_id)?;
                let position = world.position_of(ctx.traveller, ctx.now);
                let items = rules::items_of(world, ctx.traveller);
                let changes = rules::proposed_changes(ctx, world, state, &position, &req)?;
                let subject = rules::subject(ctx, state, &position, &items);
                let paradoxes = paradox::check(&subject, &changes);
                Ok(ParadoxReport {
                    is_stable: paradoxes.is_empty(),
                    timeline_id: req.timeline_id.clone(),
                    paradoxes,
                })
            }),
        )
        .await
    }

    async fn check_stability(&self, req: StabilityQuery) -> ServiceResult<ParadoxReport> {
        self.counted(
            "check_stability",
            Some(req.timeline_id.clone()),
            self.read(Heavy, move |world, ctx| {
                let state = rules::referenced(world, &req.timeline_id)?;
                let after = match &req.after_event_id {
                    Some(id) => Some(
                        state
                            .history
                            .get(id)
                            .ok_or_else(|| ServiceError::unknown("event", id))?
                            .time,
                    ),
                    None => None,
                };
                let position = world.position_of(ctx.traveller, ctx.now);
                let items = rules::items_of(world, ctx.traveller);
                let subject = rules::subject(ctx, state, &position, &items);
                let paradoxes: Vec<_> = paradox::check(&subject, &[])
                    .into_iter()
                    .filter(|p| {
                        let Some(after) = after else { return true };
                        p.events.is_empty()
                            || p.events
                                .iter()
                                .any(|e| state.history.get(e).is_some_and(|e| e.time >= after))
                    })
                    .collect();
                Ok(ParadoxReport {
                    is_stable: paradoxes.is_empty(),
                    timeline_id: req.timeline_id.clone(),
                    paradoxes,
                })
            }),
        )
        .await
    }

    async fn monitor_timeline(&self, req: MonitorQuery) -> ServiceResult<MonitorReport> {
        self.counted("monitor_timeline", Some(req.timeline_id.clone()), async {
            let engine = Arc::clone(&self.engine);
            self.read(Heavy, move |world, ctx| {
                crate::engine::watch::monitor_report(&engine.reports, world, ctx.now, &req)
            })
            .await
        })
        .await
    }

    async fn watch_monitor(&self, req: MonitorWatch) -> ServiceResult<MonitorStream> {
        self.counted(
            "monitor_timeline_stream",
            Some(req.timeline_id.clone()),
            crate::engine::watch::watch_monitor(self, req),
        )
        .await
    }

    async fn check_timeline(&self, req: SignificantEventQuery) -> ServiceResult<TimelineCheck> {
        self.counted(
            "check_timeline",
            Some(req.timeline_id.clone()),
            self.read(Heavy, move |world, _| {
                let state = rules::referenced(world, &req.timeline_id)?;
                let asked = rules::text("significant_event", &req.significant_event)?;
                let by_id = asked
                    .parse::<EventId>()
                    .ok()
                    .and_then(|id| state.history.get(&id).map(|_| id));
                let (status, event) = match by_id {
                    Some(id) => match state.history.head_of(&id) {
                        Some(head) if head.id == id && head.status.is_current() => {
                            ("holds", Some(head))
                        }
                        Some(head) if head.status.is_current() => ("altered", Some(head)),
                        _ => ("missing", None),
                    },
                    None => match state
                        .history
                        .iter()
                        .find(|e| e.description.eq_ignore_ascii_case(&asked))
                    {
                        Some(e) if e.status == EventStatus::OnSchedule => ("holds", Some(e)),
                        Some(e) => ("altered", Some(e)),
                        None => ("missing", None),
                    },
                };
                Ok(TimelineCheck {
                    status: status.into(),
                    holds: status == "holds",
                    timeline_id: req.timeline_id.clone(),
                    significant_event: asked,
                    event: event.map(|e| rules::event_record(e)),
                })
            }),
        )
        .await
    }

    async fn correct_dissonance(&self, req: DissonanceRequest) -> ServiceResult<DissonanceResult> {
        self.write(|world, ctx| crate::engine::dissonance::correct(world, ctx, &req))
            .await
    }

    async fn isolate_event(&self, req: IsolateRequest) -> ServiceResult<Isolation> {
        self.write(|world, ctx| {
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

    async fn lift_isolation(&self, id: &IsolationId) -> ServiceResult<()> {
        self.write(|world, _ctx| {
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
}
