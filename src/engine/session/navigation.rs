//! A session's journeys and clock: travel, returns, switches, pause and resume, fast-forward and
//! rewind, the journeys made, and the items a traveller registers, picks up and carries.

use super::*;

#[async_trait]
impl Navigation for EngineSession {
    async fn travel(&self, req: TravelRequest) -> ServiceResult<Journey> {
        self.write(|world, ctx| {
            let (op, journey) = rules::travel(world, ctx, &req, None)?;
            Ok((vec![op], journey))
        })
        .await
    }

    /// `travel-to-time`: a trip through time where the traveller is (DESIGN §4), everything
    /// carried coming along: `travel_in_time` without a timeline, a list or the check.
    async fn travel_to_time(&self, req: TimeTravelRequest) -> ServiceResult<Journey> {
        let trip = GuideTravelRequest {
            destination_time: req.destination_time,
            location: req.location,
            timeline_id: None,
            items_transported: None,
            safety_check: false,
        };
        self.travel_in_time(trip).await
    }

    async fn travel_in_time(&self, req: GuideTravelRequest) -> ServiceResult<Journey> {
        let location = req
            .location
            .as_deref()
            .map(|l| rules::text("location", l))
            .transpose()?;
        self.write(|world, ctx| {
            let timeline = match &req.timeline_id {
                Some(named) => rules::referenced(world, named)?.meta.id.clone(),
                None => world.position_of(ctx.traveller, ctx.now).timeline,
            };
            let travel = TravelRequest {
                destination: timeline.to_string(),
                items_transported: listed_or_carried(world, ctx.traveller, &req.items_transported),
            };
            let (mut op, mut journey) =
                rules::travel(world, ctx, &travel, Some(req.destination_time))?;
            journey.location = location.clone();
            if let crate::engine::Op::Travel { journey: logged } = &mut op {
                logged.location = location.clone();
            }
            let (op, journey) = of_kind(op, journey, JourneyKind::TimeTravel);
            if req.safety_check {
                crate::engine::navigation::refuse_unsafe_journey(world, ctx, &op, &journey)?;
            }
            Ok((vec![op], journey))
        })
        .await
    }

    async fn return_to_anchor(&self, req: ReturnRequest) -> ServiceResult<Journey> {
        self.write(|world, ctx| {
            let raw = req.anchor_id.trim();
            let known = raw.parse::<AnchorId>().ok().filter(|id| {
                world
                    .anchors
                    .get(id)
                    .is_some_and(|a| &a.owner == ctx.traveller)
            });
            if known.is_none() {
                return Err(ServiceError::unknown("anchor", raw));
            }
            let travel = TravelRequest {
                destination: raw.to_owned(),
                items_transported: listed_or_carried(world, ctx.traveller, &req.items_transported),
            };
            let (op, journey) = rules::travel(world, ctx, &travel, None).map_err(|e| match e {
                ServiceError::InvalidInput { field, message } if field == "destination" => {
                    ServiceError::invalid("anchor_id", message)
                }
                other => other,
            })?;
            Ok((vec![op], journey))
        })
        .await
    }

    async fn switch_timeline(&self, req: SwitchRequest) -> ServiceResult<Switched> {
        self.write(|world, ctx| {
            let target = rules::referenced(world, &req.timeline_id)?;
            let position = world.position_of(ctx.traveller, ctx.now);
            let time = position.time_at(ctx.now);
            if position.timeline == target.meta.id {
                return Ok((
                    Vec::new(),
                    Switched {
                        status: "already_there".into(),
                        timeline_id: position.timeline.clone(),
                        current_time: time,
                        journey: None,
                    },
                ));
            }
            let travel = TravelRequest {
                destination: target.meta.id.to_string(),
                items_transported: listed_or_carried(world, ctx.traveller, &None),
            };
            let (op, journey) = rules::travel(world, ctx, &travel, Some(time))?;
            let (op, journey) = of_kind(op, journey, JourneyKind::Switch);
            Ok((
                vec![op],
                Switched {
                    status: "switched".into(),
                    timeline_id: journey.to_timeline.clone(),
                    current_time: journey.arrival_time,
                    journey: Some(journey),
                },
            ))
        })
        .await
    }

    async fn pause_time(&self) -> ServiceResult<ClockState> {
        self.write(|world, ctx| {
            let position = world.position_of(ctx.traveller, ctx.now);
            let time = position.time_at(ctx.now);
            if position.paused {
                let state = ClockState {
                    status: "already_paused".into(),
                    time,
                    position,
                    paused_for: None,
                };
                return Ok((Vec::new(), state));
            }
            let op = crate::engine::Op::Pause {
                traveller: ctx.traveller.clone(),
                time,
                at: ctx.now,
            };
            let position = crate::model::Position {
                arrival_time: time,
                arrived_at: ctx.now,
                paused: true,
                ..position
            };
            let state = ClockState {
                status: "paused".into(),
                time,
                position,
                paused_for: None,
            };
            Ok((vec![op], state))
        })
        .await
    }

    async fn resume_time(&self) -> ServiceResult<ClockState> {
        self.write(|world, ctx| {
            let position = world.position_of(ctx.traveller, ctx.now);
            let time = position.time_at(ctx.now);
            if !position.paused {
                let state = ClockState {
                    status: "not_paused".into(),
                    time,
                    position,
                    paused_for: None,
                };
                return Ok((Vec::new(), state));
            }
            let op = crate::engine::Op::Resume {
                traveller: ctx.traveller.clone(),
                at: ctx.now,
            };
            let paused_for = crate::model::describe_elapsed(ctx.now - position.arrived_at);
            let position = crate::model::Position {
                arrived_at: ctx.now,
                paused: false,
                ..position
            };
            let state = ClockState {
                status: "resumed".into(),
                time,
                position,
                paused_for: Some(paused_for),
            };
            Ok((vec![op], state))
        })
        .await
    }

    async fn fast_forward(&self, req: ShiftRequest) -> ServiceResult<Journey> {
        self.shift(req, true).await
    }

    async fn rewind(&self, req: ShiftRequest) -> ServiceResult<Journey> {
        self.shift(req, false).await
    }

    async fn list_journeys(&self, page: PageRequest) -> ServiceResult<Page<Journey>> {
        self.read(Inline, |world, ctx| {
            let keyed = world
                .journeys_of(ctx.traveller)
                .map(|j| (j.id.to_string(), (**j).clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }

    async fn register_item(&self, req: NewItem) -> ServiceResult<Item> {
        self.write(|world, ctx| {
            let (op, item) = rules::register_item(world, ctx, &req)?;
            Ok((vec![op], item))
        })
        .await
    }

    async fn retrieve_item(&self, req: RetrieveItemRequest) -> ServiceResult<RetrievedItem> {
        self.write(|world, ctx| crate::engine::navigation::retrieve_item(world, ctx, &req))
            .await
    }

    async fn get_item(&self, id: &ItemId) -> ServiceResult<Item> {
        self.read(Inline, |world, ctx| {
            world
                .items
                .get(id)
                .filter(|i| &i.owner == ctx.traveller)
                .map(|i| (**i).clone())
                .ok_or_else(|| ServiceError::not_found("item", id))
        })
        .await
    }

    async fn list_items(&self, page: PageRequest) -> ServiceResult<Page<Item>> {
        self.read(Inline, |world, ctx| {
            let keyed = world
                .items_of(ctx.traveller)
                .map(|i| (i.id.to_string(), (**i).clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }
}

impl EngineSession {
    /// `fast-forward` / `rewind`: a journey within the caller's timeline from their time t to
    /// t ± the duration; what they carry comes along.
    async fn shift(&self, req: ShiftRequest, forward: bool) -> ServiceResult<Journey> {
        let duration = crate::model::TravelDuration::parse("duration", &req.duration)?;
        self.write(|world, ctx| {
            let position = world.position_of(ctx.traveller, ctx.now);
            let to_time = duration.shift("duration", position.time_at(ctx.now), forward)?;
            let travel = TravelRequest {
                destination: position.timeline.to_string(),
                items_transported: listed_or_carried(world, ctx.traveller, &None),
            };
            let kind = if forward {
                JourneyKind::FastForward
            } else {
                JourneyKind::Rewind
            };
            let (op, journey) = rules::travel(world, ctx, &travel, Some(to_time))?;
            let (op, journey) = of_kind(op, journey, kind);
            if req.safety_check {
                crate::engine::navigation::refuse_unsafe_journey(world, ctx, &op, &journey)?;
            }
            Ok((vec![op], journey))
        })
        .await
    }
}
