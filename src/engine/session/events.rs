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

/// One page of a timeline's events (the one named, else where the traveller is), as `find`
/// chooses them given the location (trimmed; absent when blank), the cursor's position and how
/// many to take (one more than the page, to know whether another follows).
pub(in crate::engine) fn events_page(
    world: &crate::engine::World,
    ctx: &Ctx<'_>,
    req: &SearchQuery,
    find: impl FnOnce(
        &crate::model::History,
        Option<&str>,
        Option<&(Instant, EventId)>,
        usize,
    ) -> Vec<Arc<crate::model::Event>>,
) -> Result<Page<EventRecord>, ServiceError> {
    let timeline = here(world, ctx, &req.timeline_id);
    let state = rules::referenced(world, &timeline)?;
    let limit = limit(&req.page)?;
    let after = req
        .page
        .cursor
        .as_deref()
        .map(parse_event_cursor)
        .transpose()?;
    let location = req
        .location
        .as_deref()
        .map(str::trim)
        .filter(|l| !l.is_empty());
    let mut found = find(&state.history, location, after.as_ref(), limit + 1);
    let more = found.len() > limit;
    found.truncate(limit);
    let next_cursor = if more {
        found.last().map(|e| event_cursor(&(e.time, e.id.clone())))
    } else {
        None
    };
    Ok(Page {
        items: found.iter().map(|e| rules::event_record(e)).collect(),
        next_cursor,
    })
}

fn event_cursor(key: &(Instant, EventId)) -> String {
    format!("{}|{}", crate::model::format_instant(&key.0), key.1)
}

fn parse_event_cursor(cursor: &str) -> Result<(Instant, EventId), ServiceError> {
    let bad = || ServiceError::invalid("cursor", "not a cursor this server handed out");
    let (time, id) = cursor.split_once('|').ok_or_else(bad)?;
    Ok((
        parse_instant("cursor", time).map_err(|_| bad())?,
        id.parse().map_err(|_| bad())?,
    ))
}
