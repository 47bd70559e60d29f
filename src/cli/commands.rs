//! Running the scriptable subcommands against any [`TimelineService`].

use std::io::Write;

use super::output::{Output, human};
use super::{
    AnchorCommand, CheckArgs, Command, EventCommand, ItemCommand, PageArgs, TimelineCommand,
};
use crate::error::ServiceError;
use crate::model::{EventId, ItemId, TimelineId, parse_instant};
use crate::service::*;

fn page(args: &PageArgs) -> PageRequest {
    PageRequest {
        limit: args.limit,
        cursor: args.cursor.clone(),
    }
}

fn timeline(id: &str) -> Result<TimelineId, ServiceError> {
    id.parse()
}

/// Runs one subcommand (not `serve`, `token` or the dashboard) and prints its result.
pub async fn execute(
    command: Command,
    service: &dyn TimelineService,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), ServiceError> {
    let mut out = Output::new(out, json);
    match command {
        Command::Serve(_) | Command::Token(_) => Err(ServiceError::Internal(
            "serve and token are not service commands".into(),
        )),
        Command::Whoami => out.print(&service.whoami().await?, human::whoami),
        Command::Timelines(cmd) => match cmd {
            TimelineCommand::List(p) => {
                out.print(&service.list_timelines(page(&p)).await?, human::timelines)
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
                service.delete_timeline(&id).await?;
                out.print(&serde_json::json!({ "deleted": id }), |_| {
                    format!("deleted timeline {id}\n")
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
                        timeline_id: Some(timeline(&tl)?),
                        location,
                        time_range: range,
                        page: page(&p),
                    })
                    .await?;
                out.print(&found, human::events)
            }
            EventCommand::Add {
                description,
                time,
                location,
                timeline: tl,
                causes,
                fixed_point,
            } => {
                let causes = causes
                    .iter()
                    .map(|c| c.parse::<EventId>())
                    .collect::<Result<Vec<_>, _>>()?;
                let added = service
                    .add_event(
                        &timeline(&tl)?,
                        NewEvent {
                            description,
                            time,
                            location,
                            causes,
                            fixed_point,
                        },
                    )
                    .await?;
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
                let result = service
                    .manipulate_event(ManipulateRequest {
                        timeline_id: Some(timeline(&tl)?),
                        event_id: id.parse()?,
                        new_outcome: NewOutcome {
                            description,
                            changes,
                        },
                        safety_check,
                    })
                    .await?;
                out.print(&result, human::manipulation)
            }
            EventCommand::Revert { id, timeline: tl } => {
                let result = service
                    .revert_event(RevertRequest {
                        event_id: id.parse()?,
                        timeline_id: Some(timeline(&tl)?),
                    })
                    .await?;
                out.print(&result, human::revert)
            }
        },
        Command::Items(cmd) => match cmd {
            ItemCommand::Register { description } => out.print(
                &service.register_item(NewItem { description }).await?,
                human::item,
            ),
            ItemCommand::List(p) => out.print(&service.list_items(page(&p)).await?, human::items),
        },
        Command::Anchors(cmd) => match cmd {
            AnchorCommand::Set {
                timestamp,
                description,
            } => out.print(
                &service
                    .set_anchor(NewAnchor {
                        timestamp,
                        description,
                    })
                    .await?,
                human::anchor,
            ),
            AnchorCommand::List(p) => {
                out.print(&service.list_anchors(page(&p)).await?, human::anchors)
            }
        },
        Command::Travel(args) => {
            let items = args
                .items
                .iter()
                .map(|i| i.parse::<ItemId>())
                .collect::<Result<Vec<_>, _>>()?;
            let journey = service
                .travel(TravelRequest {
                    destination: args.destination,
                    items_transported: items,
                })
                .await?;
            out.print(&journey, human::journey)
        }
        Command::Journeys(p) => out.print(&service.list_journeys(page(&p)).await?, human::journeys),
        Command::Check(args) => {
            let request = check_request(&args)?;
            out.print(
                &service.check_paradox(request).await?,
                human::paradox_report,
            )
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
    }
}

/// `--event "desc@TIME"` and `--item ID` flags as proposed changes.
fn check_request(args: &CheckArgs) -> Result<ParadoxCheckRequest, ServiceError> {
    let mut changes = Vec::new();
    for raw in &args.events {
        let (event, time) = match raw.rsplit_once('@') {
            Some((event, time)) => (event, Some(parse_instant("event", time)?)),
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
