//! The demo world (`--seed demo`, `assets/worlds/demo.json`) as a traveller meets it through
//! the `TimelineService` trait: a long, causally sound primary history with the ids the public
//! examples use, branches worth visiting, and one deliberate bootstrap loop for the monitor.

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{Datelike, Duration};
use chronoscope::engine::{Engine, EngineConfig, ManualClock, Seed};
use chronoscope::model::{
    EventId, EventStatus, Instant, TimelineId, TimelineStatus, Window, parse_instant,
};
use chronoscope::paradox::ParadoxKind;
use chronoscope::service::*;
use chronoscope::store::MemoryStore;

const TESLA_MISSION: &str = "tml_tesla_mission_1";
const SARAJEVO: &str = "tml_sarajevo_averted";
const AI_CONTAINMENT: &str = "tml_ai_containment";
const BOOTSTRAP: &str = "tml_tesla_bootstrap";

fn t(s: &str) -> Instant {
    parse_instant("t", s).expect("test instant")
}

fn tl(s: &str) -> TimelineId {
    s.parse().expect("timeline id")
}

fn ev(s: &str) -> EventId {
    s.parse().expect("event id")
}

struct Demo {
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
}

impl Demo {
    async fn open() -> Self {
        let clock = Arc::new(ManualClock::new(t("2026-11-22T10:00:00Z")));
        let engine = Engine::open(
            Arc::new(MemoryStore::new()),
            clock.clone(),
            EngineConfig::default(),
            Seed::Demo,
        )
        .await
        .expect("the demo world loads");
        Self { engine, clock }
    }

    fn ada(&self) -> impl TimelineService + use<> {
        self.engine.session("ada".parse().expect("name"))
    }
}

/// Every current event of a timeline, following cursors to the last page.
async fn all_events(svc: &impl TimelineService, timeline: &str) -> Vec<EventRecord> {
    search(svc, timeline, None).await
}

/// Every current event of a timeline whose location matches `location`, all pages.
async fn search(
    svc: &impl TimelineService,
    timeline: &str,
    location: Option<&str>,
) -> Vec<EventRecord> {
    let mut found = Vec::new();
    let mut cursor = None;
    loop {
        let page = svc
            .search_events(SearchQuery {
                timeline_id: Some(tl(timeline)),
                location: location.map(str::to_owned),
                time_range: None,
                page: PageRequest {
                    limit: Some(PageRequest::MAX_LIMIT),
                    cursor,
                },
            })
            .await
            .expect("search");
        found.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return found,
        }
    }
}

fn by_id(events: &[EventRecord]) -> HashMap<&EventId, &EventRecord> {
    events.iter().map(|e| (&e.event_id, e)).collect()
}

fn find<'a>(events: &'a [EventRecord], id: &str) -> &'a EventRecord {
    events
        .iter()
        .find(|e| e.event_id.as_str() == id)
        .unwrap_or_else(|| panic!("event {id} is missing"))
}

/// Causes that are missing from the timeline or happen after their effect, checked directly
/// on the data so the verdict does not depend on the paradox checker.
fn causal_faults(events: &[EventRecord]) -> Vec<String> {
    let index = by_id(events);
    let mut faults = Vec::new();
    for e in events {
        for c in &e.causes {
            match index.get(c) {
                None => faults.push(format!("{} names missing cause {c}", e.event_id)),
                Some(cause) if cause.time > e.time => {
                    faults.push(format!("{} happens before its cause {c}", e.event_id))
                }
                Some(_) => {}
            }
        }
    }
    faults
}

/// Events on a cycle of causes, if any (depth-first search with colours).
fn cycle_members(events: &[EventRecord]) -> HashSet<EventId> {
    fn visit<'a>(
        id: &'a EventId,
        index: &HashMap<&'a EventId, &'a EventRecord>,
        state: &mut HashMap<&'a EventId, bool>,
        stack: &mut Vec<&'a EventId>,
        found: &mut HashSet<EventId>,
    ) {
        state.insert(id, false);
        stack.push(id);
        if let Some(e) = index.get(id) {
            for c in &e.causes {
                match state.get(c) {
                    // On the stack: everything from `c` up to here is a loop.
                    Some(false) => {
                        let start = stack.iter().position(|s| *s == c).unwrap_or(0);
                        found.extend(stack[start..].iter().map(|s| (*s).clone()));
                    }
                    Some(true) => {}
                    None => visit(c, index, state, stack, found),
                }
            }
        }
        stack.pop();
        state.insert(id, true);
    }
    let index = by_id(events);
    let mut state = HashMap::new();
    let mut found = HashSet::new();
    for e in events {
        if !state.contains_key(&e.event_id) {
            visit(&e.event_id, &index, &mut state, &mut Vec::new(), &mut found);
        }
    }
    found
}

/// Links in the longest chain of causes (an uncaused event is a chain of 0 links).
fn longest_chain(events: &[EventRecord]) -> usize {
    let index = by_id(events);
    let mut memo: HashMap<&EventId, usize> = HashMap::new();
    // Time order means every cause is measured before its effects in a sound timeline.
    let mut sorted: Vec<&EventRecord> = events.iter().collect();
    sorted.sort_by_key(|e| e.time);
    for e in sorted {
        let links = e
            .causes
            .iter()
            .filter(|c| index.contains_key(c))
            .map(|c| memo.get(c).copied().unwrap_or(0) + 1)
            .max()
            .unwrap_or(0);
        memo.insert(&e.event_id, links);
    }
    memo.values().copied().max().unwrap_or(0)
}

#[tokio::test]
async fn primary_spans_centuries_and_places_with_deep_chains() {
    let demo = Demo::open().await;
    let events = all_events(&demo.ada(), "primary").await;

    assert!(
        events.len() >= 60,
        "only {} events in primary",
        events.len()
    );
    let years: Vec<i32> = events.iter().map(|e| e.time.year()).collect();
    assert!(years.iter().any(|y| *y < 1600), "nothing before 1600");
    assert!(years.iter().any(|y| *y >= 2030), "nothing in the 2030s");
    let places: HashSet<&str> = events.iter().map(|e| e.location.as_str()).collect();
    for place in ["Florence", "London", "Paris", "New York", "Tokyo", "Geneva"] {
        assert!(places.contains(place), "no event in {place}");
    }
    assert!(places.len() >= 15, "only {} places", places.len());
    let fixed = events.iter().filter(|e| e.fixed_point).count();
    assert!(fixed >= 3, "only {fixed} fixed points");
    assert!(
        events
            .iter()
            .any(|e| e.fixed_point && e.description.contains("lands on the Moon")),
        "the moon landing is not a fixed point"
    );
    assert!(longest_chain(&events) >= 5, "no causal chain of 5 links");
    assert!(
        events.iter().all(|e| e.status == EventStatus::OnSchedule),
        "primary ships unmanipulated"
    );
}

#[tokio::test]
async fn primary_is_causally_sound_and_stable() {
    let demo = Demo::open().await;
    let ada = demo.ada();
    let events = all_events(&ada, "primary").await;

    assert_eq!(causal_faults(&events), Vec::<String>::new());
    assert!(
        cycle_members(&events).is_empty(),
        "primary has a causal loop"
    );

    let report = ada
        .check_stability(StabilityQuery {
            timeline_id: TimelineId::primary(),
            after_event_id: None,
        })
        .await
        .expect("check primary");
    assert!(
        report.is_stable,
        "primary is unstable: {:?}",
        report.paradoxes
    );
    assert!(report.paradoxes.is_empty());

    let scan = support::monitor(&ada, &TimelineId::primary()).await;
    assert_eq!(scan.status, "stable", "anomalies: {:?}", scan.anomalies);
}

#[tokio::test]
async fn the_ids_of_the_public_examples_exist_and_can_be_manipulated() {
    let demo = Demo::open().await;
    let ada = demo.ada();
    let events = all_events(&ada, "primary").await;

    let trigger = find(&events, "ai-malfunction-trigger");
    assert_eq!(trigger.location, "Global AI Hub");
    assert_eq!(trigger.time, t("2025-07-15T14:32:00Z"));
    assert_eq!(trigger.description, "AI system receives corrupted data");

    let plan = find(&events, "assassination-plan");
    assert!(plan.description.to_lowercase().contains("assassination"));
    assert_eq!(plan.location, "Dallas");
    let experiment = find(&events, "experiment-initiation");
    assert_eq!(experiment.time, t("2024-09-01T09:00:00Z"));
    let launch = find(&events, "event-5678abcd");
    assert!(launch.description.to_lowercase().contains("launch"));
    let deployment = find(&events, "event-6789efgh");
    assert!(deployment.description.to_lowercase().contains("deployment"));
    assert!(deployment.causes.contains(&launch.event_id));
    assert!(launch.time <= deployment.time);

    for e in [trigger, plan, experiment, launch, deployment] {
        assert!(!e.fixed_point, "{} is a fixed point", e.event_id);
    }
    // The examples change these events; a fresh demo world must let them.
    let result = ada
        .manipulate_event(ManipulateRequest {
            timeline_id: None,
            event_id: ev("ai-malfunction-trigger"),
            new_outcome: NewOutcome {
                description: Some("AI system rejects the corrupted data".into()),
                changes: Vec::new(),
            },
            safety_check: true,
        })
        .await
        .expect("the trigger can be manipulated safely");
    assert_eq!(result.original_event_id, ev("ai-malfunction-trigger"));
}

#[tokio::test]
async fn location_search_finds_shared_places_case_insensitively() {
    let demo = Demo::open().await;
    let ada = demo.ada();

    let hub = search(&ada, "primary", Some("global ai hub")).await;
    assert!(
        hub.len() >= 3,
        "only {} events at the Global AI Hub",
        hub.len()
    );
    assert!(
        hub.iter()
            .any(|e| e.event_id.as_str() == "ai-malfunction-trigger")
    );
    assert!(
        hub.iter().any(|e| e.location == "Global AI Hub Annex"),
        "a substring search also finds the Annex"
    );
    for e in &hub {
        assert!(e.location.to_lowercase().contains("global ai hub"));
    }
    assert!(
        hub.windows(2).all(|w| w[0].time <= w[1].time),
        "not in time order"
    );

    let geneva = search(&ada, "primary", Some("GENEVA")).await;
    assert!(geneva.len() >= 4, "only {} events in Geneva", geneva.len());
    let springs = search(&ada, "primary", Some("colorado springs")).await;
    assert!(
        springs.len() >= 3,
        "only {} events in Colorado Springs",
        springs.len()
    );
}

#[tokio::test]
async fn branches_have_variations_windows_and_destinations() {
    let demo = Demo::open().await;
    let ada = demo.ada();
    let timelines = ada
        .list_timelines(PageRequest::first(PageRequest::MAX_LIMIT))
        .await
        .expect("list")
        .items;

    assert_eq!(timelines[0].id, TimelineId::primary());
    let branches: Vec<&TimelineInfo> = timelines.iter().filter(|t| !t.id.is_primary()).collect();
    assert!(branches.len() >= 3, "only {} branches", branches.len());
    let ids: HashSet<&TimelineId> = timelines.iter().map(|t| &t.id).collect();
    for b in &branches {
        let parent = b.parent.as_ref().expect("a branch has a parent");
        assert!(
            ids.contains(parent),
            "{} branches from unknown {parent}",
            b.id
        );
        assert!(b.variation.is_some(), "{} has no variation", b.id);
        assert!(
            b.event_count > 60,
            "{} does not see its parent's events",
            b.id
        );
    }
    assert!(branches.iter().any(|b| b.window == Window::Unbounded));

    // The Tesla mission arrives where the worked example says it does.
    let tesla = ada.get_timeline(&tl(TESLA_MISSION)).await.expect("tesla");
    assert_eq!(tesla.destination_time, Some(t("1889-03-10T23:50:00Z")));
    assert_eq!(tesla.window, Window::Unbounded);
    let journey = ada
        .travel(support::trip(TESLA_MISSION, &[]))
        .await
        .expect("travel to the Tesla mission");
    assert_eq!(journey.arrival_time, t("1889-03-10T23:50:00Z"));
    let new_york = search(&ada, TESLA_MISSION, Some("new york")).await;
    assert!(
        new_york
            .iter()
            .any(|e| e.event_id.as_str() == "tesla-oscillator-blueprint")
    );
    assert!(
        new_york
            .iter()
            .any(|e| e.event_id.as_str() == "tesla-mission-arrival")
    );

    // The AI containment drill is a short window: open now, closed after half an hour.
    let drill = ada.get_timeline(&tl(AI_CONTAINMENT)).await.expect("drill");
    assert_eq!(drill.window, Window::Seconds(30 * 60));
    assert_eq!(drill.status, TimelineStatus::Open);
    demo.clock.advance(Duration::minutes(31));
    let drill = ada.get_timeline(&tl(AI_CONTAINMENT)).await.expect("drill");
    assert_eq!(drill.status, TimelineStatus::Closed);
}

#[tokio::test]
async fn a_manipulated_branch_shows_its_lineage_and_leaves_primary_alone() {
    let demo = Demo::open().await;
    let ada = demo.ada();

    let branch = all_events(&ada, SARAJEVO).await;
    let foiled = find(&branch, "sarajevo-attempt-foiled");
    assert_eq!(foiled.status, EventStatus::Manipulated);
    assert_eq!(foiled.supersedes, Some(ev("sarajevo-assassination")));
    assert_eq!(foiled.lineage, ev("sarajevo-assassination"));
    assert!(
        branch
            .iter()
            .all(|e| e.event_id.as_str() != "sarajevo-assassination")
    );
    // What the assassination caused now hangs on the foiled attempt.
    let ultimatum = find(&branch, "austro-hungarian-ultimatum");
    assert_eq!(ultimatum.causes, vec![ev("sarajevo-attempt-foiled")]);
    assert_eq!(causal_faults(&branch), Vec::<String>::new());

    let primary = all_events(&ada, "primary").await;
    assert_eq!(
        find(&primary, "sarajevo-assassination").status,
        EventStatus::OnSchedule
    );
    assert!(
        primary
            .iter()
            .all(|e| e.event_id.as_str() != "sarajevo-attempt-foiled")
    );
}

#[tokio::test]
async fn only_the_bootstrap_branch_contains_a_causal_loop() {
    let demo = Demo::open().await;
    let ada = demo.ada();
    let timelines = ada
        .list_timelines(PageRequest::first(PageRequest::MAX_LIMIT))
        .await
        .expect("list")
        .items;

    let mut looping = Vec::new();
    for timeline in &timelines {
        let events = all_events(&ada, timeline.id.as_str()).await;
        let members = cycle_members(&events);
        if !members.is_empty() {
            looping.push((timeline.id.to_string(), members));
        }
    }
    assert_eq!(looping.len(), 1, "loops: {looping:?}");
    let (id, members) = &looping[0];
    assert_eq!(id, BOOTSTRAP);
    assert!(members.contains(&ev("bootstrap-blueprint-delivered")));
    assert!(
        (2..=3).contains(&members.len()),
        "a little loop: {members:?}"
    );

    let bootstrap = ada.get_timeline(&tl(BOOTSTRAP)).await.expect("bootstrap");
    assert_eq!(bootstrap.parent, Some(tl(TESLA_MISSION)));
}

#[tokio::test]
async fn the_checker_and_monitor_flag_the_bootstrap_loop() {
    let demo = Demo::open().await;
    let ada = demo.ada();

    let report = ada
        .check_stability(StabilityQuery {
            timeline_id: tl(BOOTSTRAP),
            after_event_id: None,
        })
        .await
        .expect("check the bootstrap branch");
    assert!(!report.is_stable);
    assert!(
        report
            .paradoxes
            .iter()
            .any(|p| p.kind == ParadoxKind::CausalLoop
                && p.events.contains(&ev("bootstrap-blueprint-delivered"))),
        "no causal loop reported: {:?}",
        report.paradoxes
    );

    let scan = support::monitor(&ada, &tl(BOOTSTRAP)).await;
    assert_eq!(scan.status, "anomalies_detected");
}

fn manipulation(timeline: Option<&str>, event: &str, time: &str) -> ManipulateRequest {
    ManipulateRequest {
        timeline_id: timeline.map(tl),
        event_id: ev(event),
        new_outcome: NewOutcome {
            description: Some("A guide's change".into()),
            changes: vec![OutcomeChange {
                action: Some("guide".into()),
                time: Some(t(time)),
            }],
        },
        safety_check: true,
    }
}

/// The case studies' safety-checked manipulations, as the guide writes them, pass on a fresh
/// demo world; the same check still refuses a move before an effect's cause.
#[tokio::test]
async fn the_case_studies_manipulations_pass_their_safety_check() {
    let demo = Demo::open().await;
    let ada = demo.ada();

    let in_b = ada
        .manipulate_event(manipulation(
            Some("timeline-b"),
            "experiment-initiation",
            "2024-09-01T10:00:00Z",
        ))
        .await
        .expect("timeline-b's experiment moves by an hour");
    assert_eq!(in_b.timeline_id, tl("timeline-b"));
    let primary = all_events(&ada, "primary").await;
    assert_eq!(
        find(&primary, "experiment-initiation").time,
        t("2024-09-01T09:00:00Z"),
        "the branch's change stays in the branch"
    );
    ada.manipulate_event(manipulation(
        None,
        "assassination-plan",
        "1963-11-22T12:00:00Z",
    ))
    .await
    .expect("the Dallas plot moves to the morning of the 22nd");

    // Tesla's 1899 experiment (the id the guide used to hit) moved past its own effects.
    let refused = ada
        .manipulate_event(manipulation(
            None,
            "colorado-springs-experiment",
            "2024-09-01T10:00:00Z",
        ))
        .await
        .expect_err("moving a cause after its effects is a paradox");
    assert!(
        matches!(
            refused,
            chronoscope::error::ServiceError::ParadoxDetected { .. }
        ),
        "{refused:?}"
    );
    let primary = all_events(&ada, "primary").await;
    assert_eq!(
        find(&primary, "colorado-springs-experiment").time,
        t("1899-06-01T18:00:00Z"),
        "nothing was written"
    );
}

/// The event-manipulation guide: manipulate `efgh5678`, then revert `ijkl9012` (the id its
/// response example shows, a reverted change of the same lineage in the demo world).
#[tokio::test]
async fn reverting_a_reverted_event_undoes_its_lineages_latest_change() {
    let demo = Demo::open().await;
    let ada = demo.ada();

    let primary = all_events(&ada, "primary").await;
    assert_eq!(find(&primary, "efgh5678").status, EventStatus::OnSchedule);
    assert!(primary.iter().all(|e| e.event_id.as_str() != "ijkl9012"));

    let changed = ada
        .manipulate_event(manipulation(None, "efgh5678", "1889-03-10T23:30:00Z"))
        .await
        .expect("the fire can be moved");
    let reverted = ada
        .revert_event(RevertRequest {
            event_id: ev("ijkl9012"),
            timeline_id: None,
            safety_check: false,
        })
        .await
        .expect("ijkl9012 names the fire's lineage");
    assert_eq!(reverted.original_event_id, ev("efgh5678"));
    assert_eq!(reverted.reverted_event_id, changed.new_event_id);
    let primary = all_events(&ada, "primary").await;
    assert_eq!(find(&primary, "efgh5678").time, t("1889-03-10T23:45:00Z"));

    // Nothing is left to undo: the lineage stands at its original again.
    let again = ada
        .revert_event(RevertRequest {
            event_id: ev("ijkl9012"),
            timeline_id: None,
            safety_check: false,
        })
        .await
        .expect_err("nothing to revert");
    assert!(
        matches!(again, chronoscope::error::ServiceError::EventLocked { .. }),
        "{again:?}"
    );
}

/// Seed addition 3 (guide spec §7): a merge of "Project X launch review" into `primary` waits
/// for review with one conflict on `event-5678abcd`, while `primary`'s event stands as
/// shipped; "Keep Event A" completes it and `primary` takes the branch's outcome.
#[tokio::test]
async fn the_pending_merge_into_primary_waits_on_one_conflict() {
    let demo = Demo::open().await;
    let ada = demo.ada();
    let primary = all_events(&ada, "primary").await;
    let launch = find(&primary, "event-5678abcd");
    assert_eq!(launch.status, EventStatus::OnSchedule);
    assert_eq!(
        launch.description,
        "Rocket launch carrying the Sentinel-1 AI oversight satellite"
    );

    let review = ada
        .review_conflicts(ReviewQuery {
            merged_timeline_id: TimelineId::primary(),
            merge_id: None,
        })
        .await
        .expect("review primary");
    let lineages: Vec<&str> = review
        .conflicts
        .iter()
        .map(|c| c.event_id.as_str())
        .collect();
    assert_eq!(lineages, ["event-5678abcd"]);
    let conflict = &review.conflicts[0];
    assert_eq!(conflict.source_timeline_id.as_str(), "tml_project_x_review");
    assert_eq!(conflict.destination_outcome, launch.description);
    assert_ne!(conflict.source_outcome, conflict.destination_outcome);

    let done = ada
        .resolve_conflict(ResolveRequest {
            event_id: ev("event-5678abcd"),
            resolution: "keep event a".parse().expect("the guide's words, any case"),
            new_outcome: None,
            merge_id: None,
            merged_timeline_id: None,
            safety_check: true,
        })
        .await
        .expect("resolve as the guide does");
    assert_eq!(done.merge_status, "merged");
    let primary = all_events(&ada, "primary").await;
    let head = primary
        .iter()
        .find(|e| e.lineage.as_str() == "event-5678abcd")
        .expect("the lineage has a head");
    assert_eq!(head.description, conflict.source_outcome);
    assert_eq!(head.author.as_ref().map(|a| a.as_str()), Some("ada"));
}

/// isolate-event with `closed_loop` takes the whole bootstrap loop: the checker and the
/// monitor stop reporting it; lifting the isolation brings it back.
#[tokio::test]
async fn isolating_the_bootstrap_loop_contains_it_until_lifted() {
    let demo = Demo::open().await;
    let ada = demo.ada();
    let loops = |report: &ParadoxReport| {
        report
            .paradoxes
            .iter()
            .filter(|p| p.kind == ParadoxKind::CausalLoop)
            .count()
    };
    let check = || {
        ada.check_stability(StabilityQuery {
            timeline_id: tl(BOOTSTRAP),
            after_event_id: None,
        })
    };
    let paradox_anomalies = || async {
        ada.monitor_timeline(MonitorQuery {
            timeline_id: tl(BOOTSTRAP),
            time_range: None,
        })
        .await
        .expect("monitor")
        .anomalies
        .iter()
        .filter(|a| matches!(a.kind, AnomalyKind::Paradox(ParadoxKind::CausalLoop)))
        .count()
    };
    assert_eq!(loops(&check().await.expect("check")), 1);
    assert_eq!(paradox_anomalies().await, 1);

    let iso = ada
        .isolate_event(IsolateRequest {
            event_id: ev("bootstrap-blueprint-delivered"),
            isolation_type: IsolationType::ClosedLoop,
            description: None,
            timeline_id: Some(tl(BOOTSTRAP)),
        })
        .await
        .expect("isolate the loop");
    assert!(
        iso.members
            .contains(&ev("bootstrap-blueprint-carried-back"))
    );
    assert!((2..=3).contains(&iso.members.len()), "{:?}", iso.members);
    assert!(
        iso.contained
            .iter()
            .any(|p| p.kind == ParadoxKind::CausalLoop)
    );
    assert_eq!(loops(&check().await.expect("check")), 0);
    assert_eq!(paradox_anomalies().await, 0);

    ada.lift_isolation(&iso.isolation_id)
        .await
        .expect("lift the isolation");
    assert_eq!(loops(&check().await.expect("check")), 1);
    assert_eq!(paradox_anomalies().await, 1);
}
