//! A session's events: searched, followed, listed by version, added, manipulated and reverted.

use super::*;

#[async_trait]
impl Events for EngineSession {
    async fn search_events(&self, req: SearchQuery) -> ServiceResult<Page<EventRecord>> {
        self.counted(
            "search_events",
            req.timeline_id.clone(),
            self.read_at(Inline, CacheScope::Event, |world, ctx| {
                events_page(world, ctx, &req, |history, location, after, take| {
                    history.search(location, req.time_range.as_ref(), after, take)
                })
            }),
        )
        .await
    }

    async fn monitor_events(&self, req: MonitorEventsQuery) -> ServiceResult<Page<MonitoredEvent>> {
        self.counted("monitor_events", req.timeline_id.clone(), async {
            let engine = Arc::clone(&self.engine);
            self.read_at(Heavy, CacheScope::Event, move |world, ctx| {
                let page = events_page(world, ctx, &req, |history, location, after, take| {
                    history.search(location, req.time_range.as_ref(), after, take)
                })?;
                let timeline = here(world, ctx, &req.timeline_id);
                let state = rules::referenced(world, &timeline)?;
                let open =
                    crate::engine::watch::open_anomalies(&engine.reports, world, state, ctx.now);
                let time = world.position_of(ctx.traveller, ctx.now).time_at(ctx.now);
                Ok(Page {
                    items: crate::engine::navigation::monitored(
                        world, &timeline, page.items, &open, time,
                    )?,
                    next_cursor: page.next_cursor,
                })
            })
            .await
        })
        .await
    }

    async fn watch_events(&self, req: MonitorEventsQuery) -> ServiceResult<EventsStream> {
        self.counted(
            "monitor_events_stream",
            req.timeline_id.clone(),
            crate::engine::events_watch::watch_events(self, req),
        )
        .await
    }

    async fn event_versions(&self, req: SearchQuery) -> ServiceResult<Page<EventRecord>> {
        self.counted(
            "event_versions",
            req.timeline_id.clone(),
            // Past versions have an index of their own: a page reads what it returns, inline
            // like a search of the current events.
            self.read_at(Inline, CacheScope::Event, |world, ctx| {
                events_page(world, ctx, &req, |history, location, after, take| {
                    let every = crate::model::Versions::Every;
                    history.search_among(every, location, req.time_range.as_ref(), after, take)
                })
            }),
        )
        .await
    }

    async fn add_event(&self, timeline: &TimelineId, req: NewEvent) -> ServiceResult<EventRecord> {
        self.write(|world, ctx| {
            let (op, event) = rules::add_event(world, ctx, timeline, &req)?;
            let ops = vec![op];
            if req.safety_check {
                rules::refuse_introduced(world, ctx, timeline, &ops)?;
            }
            Ok((ops, rules::event_record(&event)))
        })
        .await
    }

    async fn manipulate_event(&self, req: ManipulateRequest) -> ServiceResult<ManipulationResult> {
        self.write(|world, ctx| {
            let timeline = here(world, ctx, &req.timeline_id);
            let (op, new) = rules::manipulate(world, ctx, &timeline, &req)?;
            rules::refuse_no_op(world, &timeline, &req)?;
            let result = ManipulationResult {
                status: "applied".into(),
                new_event_id: new.id.clone(),
                description: new.description.clone(),
                time: new.time,
                original_event_id: new
                    .supersedes
                    .clone()
                    .unwrap_or_else(|| req.event_id.clone()),
                timeline_id: timeline.clone(),
                lineage: Some(new.lineage.clone()),
            };
            Ok((vec![op], result))
        })
        .await
    }

    async fn revert_event(&self, req: RevertRequest) -> ServiceResult<RevertResult> {
        self.write(|world, ctx| {
            let timeline = here(world, ctx, &req.timeline_id);
            let (op, original, reverted) = rules::revert(world, ctx, &timeline, &req.event_id)?;
            let ops = vec![op];
            if req.safety_check {
                rules::refuse_introduced(world, ctx, &timeline, &ops)?;
            }
            let result = RevertResult {
                status: "reverted".into(),
                original_event_id: original,
                reverted_event_id: reverted,
                timeline_id: timeline.clone(),
            };
            Ok((ops, result))
        })
        .await
    }
}
