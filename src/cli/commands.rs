//! Running the scriptable subcommands against any [`TimelineService`].

use std::io::Write;

use super::output::{Output, Verdict, human};
use super::{
    ActionArgs, AnchorCommand, CheckArgs, Command, EventCommand, ItemCommand, MergeCommand,
    MergeStrategyArg, PageArgs, ScheduleCommand, ScriptCommand, TimelineCommand,
};
use crate::error::ServiceError;
use crate::model::{EventId, ItemId, TimelineId, parse_typed_instant};
use crate::paradox::Paradox;
use crate::service::*;

/// The caller's active anchors in `timeline`, every page of them.
async fn active_anchors_in(
    service: &dyn TimelineService,
    timeline: &TimelineId,
) -> Result<Vec<crate::model::Anchor>, ServiceError> {
    let mut found = Vec::new();
    let mut cursor = None;
    loop {
        let page = service
            .find_anchors(AnchorListQuery {
                include_spent: Some(false),
                limit: Some(PageRequest::MAX_LIMIT),
                cursor,
            })
            .await?;
        found.extend(
            page.items
                .into_iter()
                .map(|r| r.anchor)
                .filter(|a| &a.timeline == timeline),
        );
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(found),
        }
    }
}

fn page(args: &PageArgs) -> PageRequest {
    PageRequest {
        limit: args.limit,
        cursor: args.cursor.clone(),
    }
}

fn timeline(id: &str) -> Result<TimelineId, ServiceError> {
    Ok(id.parse()?)
}

/// The timeline named, or where the traveller is (DESIGN §4: an operation that names no
/// timeline acts there), named for the before-and-after paradox comparison.
async fn here_or(
    service: &dyn TimelineService,
    named: Option<&str>,
) -> Result<TimelineId, ServiceError> {
    match named {
        Some(id) => timeline(id),
        None => Ok(service.whoami().await?.timeline_id),
    }
}

/// Every item the traveller carries: what a journey takes along when none are named (the
/// same on every face: `travel`, `jump`, `return`, `switch` and the dashboard's wizard).
async fn carried(service: &dyn TimelineService) -> Result<Vec<ItemId>, ServiceError> {
    let mut found = Vec::new();
    let mut page = PageRequest::first(PageRequest::MAX_LIMIT);
    loop {
        let listed = service.list_items(page.clone()).await?;
        found.extend(
            listed
                .items
                .into_iter()
                .filter(|i| i.whereabouts == crate::model::Whereabouts::Carried)
                .map(|i| i.id),
        );
        match listed.next_cursor {
            Some(cursor) => page.cursor = Some(cursor),
            None => return Ok(found),
        }
    }
}

/// `KEY=VALUE` arguments as recorded conditions (`None` when there are none).
fn conditions(
    flag: &str,
    pairs: &[String],
) -> Result<Option<crate::model::Conditions>, ServiceError> {
    if pairs.is_empty() {
        return Ok(None);
    }
    let mut map = crate::model::Conditions::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(ServiceError::invalid(
                flag,
                format!("expected KEY=VALUE, got '{pair}'"),
            ));
        };
        // Typed as the dashboard types them: sealed=true is a bool, 20 a number.
        map.insert(
            key.trim().to_owned(),
            crate::model::condition_value(value.trim()),
        );
    }
    Ok(Some(map))
}

/// Runs one subcommand (not `serve`, `token`, `completions`, `man` or the dashboard) and prints
/// its result; answers what it found, for the exit status (tampering, a timeline that would be
/// unstable).
pub async fn execute(
    command: Command,
    service: &dyn TimelineService,
    json: bool,
    out: &mut dyn Write,
) -> Result<Verdict, ServiceError> {
    let mut out = Output::new(out, json);
    run(command, service, &mut out).await?;
    Ok(out.verdict)
}

async fn run(
    command: Command,
    service: &dyn TimelineService,
    out: &mut Output<'_>,
) -> Result<(), ServiceError> {
    match command {
        Command::Serve(_)
        | Command::Token(_)
        | Command::Verify(_)
        | Command::Backup(_)
        | Command::Restore(_)
        | Command::LinkUnchainedStore(_)
        | Command::Witness(_)
        | Command::Completions { .. }
        | Command::Man { .. } => Err(ServiceError::Internal(
            "serve, token, the store's commands, completions and man are not service commands"
                .into(),
        )),
        Command::Whoami => out.print(&service.whoami().await?, human::whoami),
        Command::Timelines(cmd) => match cmd {
            TimelineCommand::List { status, page: p } => {
                let status = status.map(|s| match s {
                    super::TimelineStatusArg::Open => crate::model::TimelineStatus::Open,
                    super::TimelineStatusArg::Closed => crate::model::TimelineStatus::Closed,
                });
                let query = TimelineQuery {
                    status,
                    page: page(&p),
                };
                out.print(&service.find_timelines(query).await?, human::timelines)
            }
            TimelineCommand::Show { id } => out.print(
                &service.get_timeline(&timeline(&id)?).await?,
                human::timeline,
            ),
            TimelineCommand::Create {
                name,
                destination_time,
                base,
                description,
                variation,
            } => {
                let created = service
                    .create_timeline(NewTimeline {
                        name: Some(name),
                        destination_time,
                        description,
                        base_timeline_id: Some(timeline(&base)?),
                        variation,
                    })
                    .await?;
                out.print(&created, human::timeline)
            }
            TimelineCommand::Delete { id } => {
                let id = timeline(&id)?;
                // Your active anchors there, which the deletion leaves without a way back.
                let stranded = active_anchors_in(service, &id).await?;
                service.delete_timeline(&id).await?;
                let ids: Vec<_> = stranded.iter().map(|a| a.id.to_string()).collect();
                out.print(
                    &serde_json::json!({ "deleted": id, "stranded_anchors": ids }),
                    |_| {
                        let mut text = format!("deleted timeline {id}\n");
                        if !stranded.is_empty() {
                            let named: Vec<_> = stranded.iter().map(|a| a.named()).collect();
                            text.push_str(&format!(
                                "your active {} in it can no longer be returned to: {}\n",
                                if named.len() == 1 {
                                    "anchor"
                                } else {
                                    "anchors"
                                },
                                named.join(", ")
                            ));
                        }
                        text
                    },
                )
            }
            TimelineCommand::Export { id, to } => {
                super::transfer::export(service, &timeline(&id)?, to.as_deref(), out).await
            }
            TimelineCommand::Import {
                file,
                no_safety_check,
            } => super::transfer::import(service, &file, !no_safety_check, out).await,
            TimelineCommand::Merge {
                source,
                destination,
                strategy,
                no_safety_check,
            } => {
                let merged = service
                    .merge_timelines(MergeRequest {
                        source_timeline_id: timeline(&source)?,
                        destination_timeline_id: timeline(&destination)?,
                        conflict_resolution: match strategy {
                            MergeStrategyArg::SourceOverwrite => MergeStrategy::SourceOverwrite,
                            MergeStrategyArg::DestinationPreserve => {
                                MergeStrategy::DestinationPreserve
                            }
                            MergeStrategyArg::ManualReview => MergeStrategy::ManualReview,
                        },
                        safety_check: !no_safety_check,
                    })
                    .await?;
                out.print(&merged, human::merged)
            }
            TimelineCommand::Diff {
                source,
                destination,
            } => {
                let diff = service
                    .diff_timelines(DiffQuery {
                        source_timeline_id: timeline(&source)?,
                        destination_timeline_id: timeline(&destination)?,
                    })
                    .await?;
                out.print(&diff, human::diff)
            }
        },
        Command::Merges(cmd) => match cmd {
            MergeCommand::List(p) => {
                out.print(&service.list_merges(page(&p)).await?, human::merges)
            }
            MergeCommand::Show { id } => {
                out.print(&service.get_merge(&id.parse()?).await?, human::merge)
            }
            MergeCommand::Review {
                destination,
                merge_id,
            } => {
                let review = service
                    .review_conflicts(ReviewQuery {
                        merged_timeline_id: timeline(&destination)?,
                        merge_id: merge_id.as_deref().map(str::parse).transpose()?,
                    })
                    .await?;
                out.print(&review, human::review)
            }
            MergeCommand::Resolve {
                event,
                resolution,
                description,
                time,
                merge_id,
                no_safety_check,
            } => {
                let resolution: ConflictResolution = resolution.parse()?;
                let custom = description.is_some() || time.is_some();
                let resolved = service
                    .resolve_conflict(ResolveRequest {
                        event_id: event.parse()?,
                        resolution,
                        new_outcome: custom.then(|| NewOutcome {
                            description,
                            changes: time
                                .map(|t| OutcomeChange {
                                    action: None,
                                    time: Some(t),
                                })
                                .into_iter()
                                .collect(),
                        }),
                        merge_id: merge_id.as_deref().map(str::parse).transpose()?,
                        merged_timeline_id: None,
                        safety_check: !no_safety_check,
                    })
                    .await?;
                out.print(&resolved, human::resolved)
            }
            MergeCommand::Abort { id } => {
                let id: crate::model::MergeId = id.parse()?;
                service.abort_merge(&id).await?;
                out.print(&serde_json::json!({ "aborted": id }), |_| {
                    format!("aborted merge {id}; its destination is untouched\n")
                })
            }
        },
        Command::Events(cmd) => match cmd {
            EventCommand::Search {
                timeline: tl,
                location,
                range,
                page: p,
            } => {
                let found = service
                    .search_events(SearchQuery {
                        timeline_id: tl.as_deref().map(timeline).transpose()?,
                        location,
                        time_range: range,
                        page: page(&p),
                    })
                    .await?;
                out.print(&found, human::events)
            }
            EventCommand::Monitor {
                timeline: tl,
                location,
                range,
                follow,
                page: p,
            } => {
                let query = SearchQuery {
                    timeline_id: tl.as_deref().map(timeline).transpose()?,
                    location,
                    time_range: range,
                    page: page(&p),
                };
                if follow {
                    return super::follow::follow_events(service, query, out).await;
                }
                out.print(
                    &service.monitor_events(query).await?,
                    human::monitored_events,
                )
            }
            EventCommand::Add {
                description,
                time,
                location,
                timeline: tl,
                causes,
                fixed_point,
                safety_check,
            } => {
                let causes = causes
                    .iter()
                    .map(|c| c.parse::<EventId>())
                    .collect::<Result<Vec<_>, _>>()?;
                let tl = timeline(&tl)?;
                let before = standing(service, &tl).await;
                let added = service
                    .add_event(
                        &tl,
                        NewEvent {
                            description,
                            time,
                            location,
                            causes,
                            fixed_point,
                            safety_check,
                        },
                    )
                    .await?;
                warn_introduced(service, &tl, before).await;
                out.print(&added, human::event)
            }
            EventCommand::Manipulate {
                id,
                timeline: tl,
                description,
                time,
                action,
                safety_check,
            } => {
                let changes = if time.is_some() || action.is_some() {
                    vec![OutcomeChange { action, time }]
                } else {
                    Vec::new()
                };
                let tl = here_or(service, tl.as_deref()).await?;
                let before = standing(service, &tl).await;
                let result = service
                    .manipulate_event(ManipulateRequest {
                        timeline_id: Some(tl.clone()),
                        event_id: id.parse()?,
                        new_outcome: NewOutcome {
                            description,
                            changes,
                        },
                        safety_check,
                    })
                    .await?;
                warn_introduced(service, &tl, before).await;
                out.print(&result, human::manipulation)
            }
            EventCommand::Revert {
                id,
                timeline: tl,
                safety_check,
            } => {
                let tl = here_or(service, tl.as_deref()).await?;
                let before = standing(service, &tl).await;
                let result = service
                    .revert_event(RevertRequest {
                        event_id: id.parse()?,
                        timeline_id: Some(tl.clone()),
                        safety_check,
                    })
                    .await?;
                warn_introduced(service, &tl, before).await;
                out.print(&result, human::revert)
            }
            EventCommand::Align { ids, timeline: tl } => {
                let result = service
                    .correct_dissonance(DissonanceRequest {
                        timeline_id: here_or(service, tl.as_deref()).await?,
                        conflicting_events: ids
                            .iter()
                            .map(|id| id.parse())
                            .collect::<Result<_, _>>()?,
                    })
                    .await?;
                out.print(&result, human::aligned)
            }
            EventCommand::Isolate {
                event,
                timeline: tl,
                event_only,
                description,
            } => {
                let isolation = service
                    .isolate_event(IsolateRequest {
                        event_id: event.parse()?,
                        isolation_type: if event_only {
                            IsolationType::Event
                        } else {
                            IsolationType::ClosedLoop
                        },
                        description,
                        timeline_id: tl.as_deref().map(timeline).transpose()?,
                    })
                    .await?;
                out.print(&isolation, human::isolation)
            }
            EventCommand::Lift { id } => {
                let id: crate::model::IsolationId = id.parse()?;
                service.lift_isolation(&id).await?;
                out.print(&serde_json::json!({ "lifted": id }), |_| {
                    format!("lifted isolation {id}; its events are checked again\n")
                })
            }
        },
        Command::Items(cmd) => match cmd {
            ItemCommand::Register { description } => out.print(
                &service.register_item(NewItem { description }).await?,
                human::item,
            ),
            ItemCommand::Retrieve {
                description,
                location,
                time,
            } => out.print(
                &service
                    .retrieve_item(RetrieveItemRequest {
                        item_description: description,
                        location,
                        time,
                    })
                    .await?,
                human::retrieved,
            ),
            ItemCommand::List(p) => out.print(&service.list_items(page(&p)).await?, human::items),
        },
        Command::Anchors(cmd) => match cmd {
            AnchorCommand::Set {
                timestamp,
                description,
                accuracy,
                environment,
                quantum_state,
            } => out.print(
                &service
                    .set_precise_anchor(NewPreciseAnchor {
                        timestamp: match timestamp {
                            Some(at) => at,
                            None => service.whoami().await?.time,
                        },
                        description,
                        accuracy,
                        environment: conditions("--env", &environment)?,
                        quantum_state: conditions("--quantum", &quantum_state)?,
                    })
                    .await?,
                human::anchor_record,
            ),
            // With what each records (its environment), as `--json` shows.
            AnchorCommand::List { active, page: p } => {
                let anchors = service
                    .find_anchors(AnchorListQuery {
                        include_spent: Some(!active),
                        limit: p.limit,
                        cursor: p.cursor,
                    })
                    .await?;
                // The timelines of active anchors that are gone: asked once each.
                let mut gone = std::collections::HashSet::new();
                let mut asked = std::collections::HashSet::new();
                for record in &anchors.items {
                    let anchor = &record.anchor;
                    if anchor.status != crate::model::AnchorStatus::Active
                        || !asked.insert(anchor.timeline.clone())
                    {
                        continue;
                    }
                    match service.get_timeline(&anchor.timeline).await {
                        Err(ServiceError::NotFound { .. }) => {
                            gone.insert(anchor.timeline.clone());
                        }
                        Err(e) => return Err(e),
                        Ok(_) => {}
                    }
                }
                out.print(&anchors, |page| human::anchor_records(page, &gone))
            }
            AnchorCommand::Delete { id } => {
                service
                    .delete_anchor(AnchorRef {
                        anchor_id: id.parse()?,
                    })
                    .await?;
                out.print(&serde_json::json!({ "deleted": id }), |_| {
                    format!("deleted anchor {id}\n")
                })
            }
            AnchorCommand::Stability { id } => out.print(
                &service
                    .check_anchor_stability(AnchorRef {
                        anchor_id: id.parse()?,
                    })
                    .await?,
                human::anchor_stability,
            ),
            AnchorCommand::Adjust {
                id,
                environment,
                clear_env: _,
            } => out.print(
                &service
                    .adjust_anchor(AdjustAnchorRequest {
                        anchor_id: id.parse()?,
                        new_environment: conditions("--env", &environment)?.unwrap_or_default(),
                    })
                    .await?,
                human::anchor_record,
            ),
        },
        Command::Wormhole {
            entry,
            exit,
            timeline: tl,
            no_check,
        } => out.print(
            &service
                .simulate_wormhole(WormholeRequest {
                    entry_point: entry,
                    exit_point: exit,
                    stability_check: Some(!no_check),
                    timeline_id: tl.as_deref().map(timeline).transpose()?,
                })
                .await?,
            human::wormhole,
        ),
        Command::Travel(args) => {
            let journey = match (args.destination, args.to_time) {
                // Items named (or none): the guide's travel, which takes only those.
                (_, Some(destination_time)) if !args.items.is_empty() || args.travel_light => {
                    service
                        .travel_in_time(GuideTravelRequest {
                            destination_time,
                            location: args.location,
                            timeline_id: None,
                            items_transported: Some(item_ids(&args.items)?),
                            safety_check: false,
                        })
                        .await?
                }
                (_, Some(destination_time)) => {
                    service
                        .travel_to_time(TimeTravelRequest {
                            destination_time,
                            location: args.location,
                        })
                        .await?
                }
                (Some(destination), None) => {
                    let items = if !args.items.is_empty() || args.travel_light {
                        item_ids(&args.items)?
                    } else {
                        carried(service).await?
                    };
                    service
                        .travel(TravelRequest {
                            destination,
                            items_transported: items,
                        })
                        .await?
                }
                (None, None) => {
                    return Err(ServiceError::invalid(
                        "destination",
                        "name a timeline or anchor, or give --to-time",
                    ));
                }
            };
            out.print(&journey, human::journey)
        }
        Command::Jump(args) => {
            let journey = service
                .travel_in_time(GuideTravelRequest {
                    destination_time: args.time,
                    location: args.location,
                    timeline_id: args.timeline.as_deref().map(timeline).transpose()?,
                    items_transported: named_items(&args.items, args.travel_light)?,
                    safety_check: args.safety_check,
                })
                .await?;
            out.print(&journey, human::journey)
        }
        Command::Return(args) => {
            let journey = service
                .return_to_anchor(ReturnRequest {
                    anchor_id: args.anchor,
                    items_transported: named_items(&args.items, args.travel_light)?,
                })
                .await?;
            out.print(&journey, human::journey)
        }
        Command::Switch { timeline: id } => {
            let switched = service
                .switch_timeline(SwitchRequest {
                    timeline_id: timeline(&id)?,
                })
                .await?;
            out.print(&switched, human::switched)
        }
        Command::DetectTampering { timeline: id, full } => {
            let query = TamperQuery {
                timeline_id: timeline(&id)?,
                scan_depth: if full {
                    ScanDepth::Full
                } else {
                    ScanDepth::Recent
                },
            };
            let report = service.detect_tampering(query).await?;
            out.found(report.tampering_detected, Verdict::Tampered);
            out.print(&report, human::tampering)
        }
        Command::ValidateIntegrity { timeline: id, at } => {
            let query = IntegrityQuery {
                timeline_id: timeline(&id)?,
                timestamp: at,
            };
            out.print(&service.validate_integrity(query).await?, human::integrity)
        }
        Command::Pause => out.print(&service.pause_time().await?, human::clock),
        Command::Resume => out.print(&service.resume_time().await?, human::clock),
        Command::FastForward {
            duration,
            safety_check,
        } => out.print(
            &service
                .fast_forward(ShiftRequest {
                    duration,
                    safety_check,
                })
                .await?,
            human::journey,
        ),
        Command::Rewind {
            duration,
            safety_check,
        } => out.print(
            &service
                .rewind(ShiftRequest {
                    duration,
                    safety_check,
                })
                .await?,
            human::journey,
        ),
        Command::Journeys(p) => out.print(&service.list_journeys(page(&p)).await?, human::journeys),
        Command::Check(args) => {
            let report = service.check_paradox(check_request(&args)?).await?;
            out.found(!report.is_stable, Verdict::Unstable);
            out.print(&report, human::paradox_report)
        }
        Command::Monitor(args) if args.follow => {
            super::follow::follow(service, timeline(&args.timeline)?, out).await
        }
        Command::Monitor(args) => {
            let report = service
                .monitor_timeline(MonitorQuery {
                    timeline_id: timeline(&args.timeline)?,
                    time_range: args.range,
                })
                .await?;
            out.print(&report, human::monitor)
        }
        Command::Stability {
            timeline: tl,
            after,
        } => {
            let report = service
                .check_stability(StabilityQuery {
                    timeline_id: timeline(&tl)?,
                    after_event_id: after.map(|a| a.parse()).transpose()?,
                })
                .await?;
            out.found(!report.is_stable, Verdict::Unstable);
            out.print(&report, human::paradox_report)
        }
        Command::Holds {
            event,
            timeline: tl,
        } => {
            let check = service
                .check_timeline(SignificantEventQuery {
                    timeline_id: timeline(&tl)?,
                    significant_event: event,
                })
                .await?;
            out.found(check.status == "altered", Verdict::Altered);
            out.found(check.status == "missing", Verdict::Missing);
            out.print(&check, human::holds)
        }
        Command::Scripts(cmd) => match cmd {
            ScriptCommand::Create {
                name,
                trigger,
                timeline: tl,
                check_date,
                status_check,
                actions,
            } => {
                let script = service
                    .create_script(NewScript {
                        script_name: name,
                        trigger_event_id: trigger.parse()?,
                        conditions: ScriptConditions {
                            check_date,
                            status_check,
                        },
                        actions: parse_actions(&actions)?,
                        timeline_id: Some(timeline(&tl)?),
                    })
                    .await?;
                out.print(&script, human::script)
            }
            ScriptCommand::List(p) => {
                out.print(&service.list_scripts(page(&p)).await?, human::scripts)
            }
            ScriptCommand::Delete { id } => {
                service.delete_script(&id.parse()?).await?;
                out.print(&serde_json::json!({ "deleted": id }), |_| {
                    format!("deleted script {id}\n")
                })
            }
        },
        Command::Schedules(cmd) => match cmd {
            ScheduleCommand::Create {
                event,
                at,
                new_time,
                new_details,
                timeline: tl,
            } => {
                let job = service
                    .schedule_manipulation(NewSchedule {
                        event_id: event.parse()?,
                        scheduled_time: at,
                        manipulation_details: ManipulationDetails {
                            new_time,
                            new_details,
                        },
                        timeline_id: Some(timeline(&tl)?),
                    })
                    .await?;
                out.print(&job, human::schedule)
            }
            ScheduleCommand::List(p) => {
                out.print(&service.list_schedules(page(&p)).await?, human::schedules)
            }
            ScheduleCommand::Cancel { id } => {
                service.delete_schedule(&id.parse()?).await?;
                out.print(&serde_json::json!({ "cancelled": id }), |_| {
                    format!("cancelled schedule {id}\n")
                })
            }
        },
        Command::Trigger(args) => {
            let job = service
                .trigger_external_manipulation(ExternalTrigger {
                    external_system: args.system,
                    trigger_conditions: TriggerConditions {
                        build_status: args.build_status,
                        timestamp: args.at,
                    },
                    actions: parse_actions(&args.actions)?,
                    timeline_id: Some(timeline(&args.timeline)?),
                })
                .await?;
            out.print(&job, human::schedule)
        }
        Command::Log {
            timeline: tl,
            range,
            page: p,
        } => {
            let log = service
                .automation_log(LogQuery {
                    timeline_id: tl.as_deref().map(timeline).transpose()?,
                    date_range: range,
                    page: page(&p),
                })
                .await?;
            out.print(&log, human::log)
        }
        Command::Data(cmd) => super::data::execute(cmd, service, out).await,
        Command::Access(cmd) => super::access::execute(cmd, service, out).await,
    }
}

/// `--action KIND:EVENT` flags as actions, sharing `--new-time` and `--new-details`.
fn parse_actions(args: &ActionArgs) -> Result<Vec<Action>, ServiceError> {
    args.actions
        .iter()
        .enumerate()
        .map(|(i, raw)| {
            let (kind, event) = raw.split_once(':').ok_or_else(|| {
                ServiceError::invalid(
                    format!("action {}", i + 1),
                    format!("'{raw}' is not KIND:EVENT, e.g. manipulate:event-6789efgh"),
                )
            })?;
            Ok(Action {
                action_type: kind.trim().to_owned(),
                event_id: event.trim().parse()?,
                new_time: args.new_time,
                new_details: args.new_details.clone(),
            })
        })
        .collect()
}

/// `--event "desc@TIME"` and `--item ID` flags as proposed changes.
fn check_request(args: &CheckArgs) -> Result<ParadoxCheckRequest, ServiceError> {
    let mut changes = Vec::new();
    for raw in &args.events {
        let (event, time) = match raw.rsplit_once('@') {
            // Times as everywhere else: RFC 3339, 1889-03-10 23:50 or a date.
            Some((event, time)) => (event, Some(parse_typed_instant("event", time)?)),
            None => (raw.as_str(), None),
        };
        changes.push(ProposedChange {
            event: Some(event.to_owned()),
            time,
            item_id: None,
        });
    }
    for item in &args.items {
        changes.push(ProposedChange {
            item_id: Some(item.parse()?),
            ..Default::default()
        });
    }
    Ok(ParadoxCheckRequest {
        timeline_id: timeline(&args.timeline)?,
        proposed_changes: changes,
    })
}

/// The paradoxes standing in `timeline` now, so that a change can say which it introduced
/// (none known when the check cannot be made: the change itself is what was asked for).
async fn standing(service: &dyn TimelineService, timeline: &TimelineId) -> Option<Vec<Paradox>> {
    service
        .check_stability(StabilityQuery {
            timeline_id: timeline.clone(),
            after_event_id: None,
        })
        .await
        .ok()
        .map(|report| report.paradoxes)
}

/// Tells on stderr (stdout stays the change's answer, JSON or not) which paradoxes a change
/// just made in `timeline` introduced.
async fn warn_introduced(
    service: &dyn TimelineService,
    timeline: &TimelineId,
    before: Option<Vec<Paradox>>,
) {
    let (Some(before), Some(after)) = (before, standing(service, timeline).await) else {
        return;
    };
    let introduced: Vec<_> = after.iter().filter(|p| !before.contains(p)).collect();
    if introduced.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "warning: this change made timeline '{timeline}' unstable ({} new paradox{}):",
        introduced.len(),
        if introduced.len() == 1 { "" } else { "es" }
    );
    for p in introduced {
        let _ = writeln!(err, "  - {}", p.description);
    }
}

/// `--item` values as item ids.
fn item_ids(items: &[String]) -> Result<Vec<ItemId>, ServiceError> {
    Ok(items
        .iter()
        .map(|i| i.parse::<ItemId>())
        .collect::<Result<Vec<_>, _>>()?)
}

/// What a guide journey is asked to carry: the items named, none with `--travel-light`, and
/// without either `None`, which the service reads as everything carried.
fn named_items(items: &[String], travel_light: bool) -> Result<Option<Vec<ItemId>>, ServiceError> {
    Ok(if travel_light {
        Some(Vec::new())
    } else {
        let items = item_ids(items)?;
        (!items.is_empty()).then_some(items)
    })
}
