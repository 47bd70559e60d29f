//! Scripts, scheduled and external manipulations, and the automation log, driven by an injected
//! clock: no test waits on wall time.

use std::sync::Arc;

use chrono::Duration;
use chronoscope::engine::{Clock, Engine, EngineConfig, ManualClock, Seed};
use chronoscope::error::ServiceError;
use chronoscope::model::{EventId, Instant, TimeRange, TimelineId};
use chronoscope::service::*;
use chronoscope::store::MemoryStore;

#[macro_use]
mod support;

use support::{Fresh, add_to_primary, described, manipulation, monitor, named, new_event, t};

struct Fixture {
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
    store: Arc<MemoryStore>,
    launch: EventId,
    deploy: EventId,
    fixed: EventId,
}

impl Fixture {
    async fn new() -> Self {
        let Fresh {
            engine,
            clock,
            store,
        } = Fresh::new().await;
        let ada = engine.session("ada".parse().unwrap());
        let cape =
            |d: &str, time: &str, causes: &[&EventId]| new_event(d, time, "Cape Canaveral", causes);
        let launch = add_to_primary(&ada, cape("launch", "2025-03-01T12:00:00Z", &[])).await;
        let deploy = add_to_primary(&ada, cape("deploy", "2025-03-02T12:00:00Z", &[&launch])).await;
        let landing = cape("landing", "1969-07-20T20:17:00Z", &[]);
        let fixed = add_to_primary(
            &ada,
            NewEvent {
                fixed_point: true,
                ..landing
            },
        )
        .await;
        Self {
            engine,
            clock,
            store,
            launch,
            deploy,
            fixed,
        }
    }

    fn ada(&self) -> impl TimelineService + use<> {
        self.engine.session("ada".parse().unwrap())
    }

    async fn head_description(&self, lineage: &EventId) -> String {
        let check = self
            .ada()
            .check_timeline(SignificantEventQuery {
                timeline_id: TimelineId::primary(),
                significant_event: lineage.to_string(),
            })
            .await
            .unwrap();
        check.event.map(|e| e.description).unwrap_or_default()
    }

    async fn schedule(&self, job: NewSchedule) -> Schedule {
        self.ada().schedule_manipulation(job).await.unwrap()
    }

    async fn create_script(&self, script: NewScript) -> Script {
        self.ada().create_script(script).await.unwrap()
    }

    /// Why `script` is refused.
    async fn refused_script(&self, script: NewScript) -> ServiceError {
        self.ada().create_script(script).await.unwrap_err()
    }

    async fn trigger(&self, trigger: ExternalTrigger) -> Schedule {
        self.ada()
            .trigger_external_manipulation(trigger)
            .await
            .unwrap()
    }

    async fn change(&self, req: ManipulateRequest) -> ManipulationResult {
        self.ada().manipulate_event(req).await.unwrap()
    }

    async fn log(&self) -> Vec<LogEntry> {
        log_of(&self.ada(), LogQuery::default()).await
    }
}

/// The automation log `service` shows for `query`.
async fn log_of(service: &impl TimelineService, query: LogQuery) -> Vec<LogEntry> {
    service.automation_log(query).await.unwrap().items
}

/// The jobs `service` lists.
async fn schedules_of(service: &impl TimelineService) -> Vec<Schedule> {
    service
        .list_schedules(PageRequest::default())
        .await
        .unwrap()
        .items
}

/// A job that gives `event` the description `details` at `at`, where the traveller is.
fn job(event: &EventId, at: Instant, details: &str) -> NewSchedule {
    NewSchedule {
        event_id: event.clone(),
        scheduled_time: at,
        manipulation_details: ManipulationDetails {
            new_time: None,
            new_details: Some(details.into()),
        },
        timeline_id: None,
    }
}

/// The scripts `service` lists.
async fn scripts_of(service: &impl TimelineService) -> Vec<Script> {
    let page = service.list_scripts(PageRequest::default()).await;
    page.unwrap().items
}

/// A script named `name` that runs `actions` when `trigger` is manipulated, where the traveller
/// is, on no condition.
fn script(name: &str, trigger: &EventId, actions: Vec<Action>) -> NewScript {
    NewScript {
        script_name: name.into(),
        trigger_event_id: trigger.clone(),
        conditions: ScriptConditions::default(),
        actions,
        timeline_id: None,
    }
}

fn manipulate(event: &EventId, details: &str) -> Action {
    Action {
        action_type: "manipulate".into(),
        event_id: event.clone(),
        new_time: None,
        new_details: Some(details.into()),
    }
}

#[tokio::test]
async fn a_scheduled_manipulation_runs_at_its_time_and_only_once() {
    let f = Fixture::new().await;
    let s = f
        .schedule(NewSchedule {
            manipulation_details: ManipulationDetails {
                new_time: Some(t("2025-03-01T18:00:00Z")),
                new_details: Some("launch delayed".into()),
            },
            ..job(&f.launch, t("2026-11-22T10:30:00Z"), "")
        })
        .await;
    assert_eq!(s.status, "scheduled");
    assert_eq!(f.engine.run_due().await.unwrap(), 0, "not due yet");
    assert_eq!(f.head_description(&f.launch).await, "launch");

    f.clock.advance(Duration::minutes(30));
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    assert_eq!(f.engine.run_due().await.unwrap(), 0, "never twice");
    assert_eq!(f.head_description(&f.launch).await, "launch delayed");
    let log = f.log().await;
    assert_eq!(log.len(), 1);
    assert_eq!(
        log[0].event_id, f.launch,
        "the log names the id the action was given"
    );
    assert_eq!(log[0].outcome, "done");
    assert_eq!(log[0].source, s.schedule_id.to_string());
    assert_eq!(log[0].timestamp, f.clock.now());
    let schedules = schedules_of(&f.ada()).await;
    assert_eq!(schedules[0].status, "done");
}

#[tokio::test]
async fn an_action_follows_its_lineage_to_the_current_head() {
    let f = Fixture::new().await;
    f.schedule(job(&f.launch, f.clock.now(), "second change"))
        .await;
    // Someone manipulates the event before the job runs: the job acts on the new head.
    let first = f
        .change(manipulation(None, &f.launch, described("first change")))
        .await;
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    assert_eq!(f.head_description(&f.launch).await, "second change");
    let log = f.log().await;
    assert!(
        log[0].action_taken.contains(first.new_event_id.as_str()),
        "{}",
        log[0].action_taken
    );
}

#[tokio::test]
async fn a_script_fires_once_when_its_trigger_is_manipulated() {
    let f = Fixture::new().await;
    let script = f
        .create_script(script(
            "keep deploy in step",
            &f.launch,
            vec![manipulate(&f.deploy, "deploy rescheduled")],
        ))
        .await;
    assert_eq!(script.status, "active");
    assert_eq!(
        f.engine.run_due().await.unwrap(),
        0,
        "nothing triggered it yet"
    );

    let m = f
        .change(manipulation(None, &f.launch, described("launch moved")))
        .await;
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    assert_eq!(f.head_description(&f.deploy).await, "deploy rescheduled");
    let scripts = scripts_of(&f.ada()).await;
    assert_eq!(scripts[0].status, "fired");

    // Later changes of the trigger do not fire it again.
    f.change(manipulation(None, &m.new_event_id, described("again")))
        .await;
    assert_eq!(f.engine.run_due().await.unwrap(), 0);
    assert_eq!(f.log().await.len(), 1);
}

#[tokio::test]
async fn a_script_fires_when_its_check_date_passes_with_the_status_it_waits_for() {
    let f = Fixture::new().await;
    let waits_for = |status: &str| NewScript {
        conditions: ScriptConditions {
            check_date: Some(t("2026-11-23T00:00:00Z")),
            status_check: Some(status.into()),
        },
        ..script(
            &format!("if still {status}"),
            &f.launch,
            vec![manipulate(&f.deploy, &format!("because {status}"))],
        )
    };
    f.create_script(waits_for("on_schedule")).await;
    f.create_script(waits_for("manipulated")).await;
    assert_eq!(f.engine.run_due().await.unwrap(), 0);
    f.clock.set(t("2026-11-23T00:00:00Z"));
    assert_eq!(
        f.engine.run_due().await.unwrap(),
        1,
        "only the matching status fires"
    );
    assert_eq!(f.head_description(&f.deploy).await, "because on_schedule");
    let err = f.refused_script(waits_for("pending")).await;
    assert!(
        matches!(err, ServiceError::InvalidInput { ref field, .. } if field == "conditions.status_check")
    );
}

#[tokio::test]
async fn an_external_trigger_runs_at_its_timestamp_or_now_if_past() {
    let f = Fixture::new().await;
    let trigger = |at: &str| ExternalTrigger {
        external_system: "CI pipeline".into(),
        trigger_conditions: TriggerConditions {
            build_status: Some("success".into()),
            timestamp: Some(t(at)),
        },
        actions: vec![manipulate(&f.deploy, "deployed by CI")],
        timeline_id: None,
    };
    let past = f.trigger(trigger("2020-01-01T00:00:00Z")).await;
    assert_eq!(past.status, "triggered");
    assert_eq!(
        past.scheduled_time,
        f.clock.now(),
        "a past timestamp means now"
    );
    assert_eq!(past.external_system.as_deref(), Some("CI pipeline"));
    let future = f.trigger(trigger("2026-11-22T12:00:00Z")).await;
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    f.clock.set(t("2026-11-22T12:00:00Z"));
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    let statuses: Vec<_> = f
        .ada()
        .list_schedules(PageRequest::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|s| (s.schedule_id, s.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (past.schedule_id, "done".into()),
            (future.schedule_id, "done".into())
        ]
    );
}

#[tokio::test]
async fn a_failed_action_is_logged_and_marks_the_job_failed() {
    let f = Fixture::new().await;
    f.schedule(job(&f.fixed, f.clock.now(), "no landing")).await;
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    let log = f.log().await;
    assert_eq!(log[0].outcome, "failed");
    assert!(
        log[0].action_taken.contains("fixed point"),
        "{}",
        log[0].action_taken
    );
    let schedules = schedules_of(&f.ada()).await;
    assert_eq!(schedules[0].status, "failed");
    assert_eq!(
        f.head_description(&f.fixed).await,
        "landing",
        "nothing changed"
    );
    // The failure is also an anomaly of the timeline, naming the job that failed.
    let report = monitor(&f.ada(), &TimelineId::primary()).await;
    let failed: Vec<_> = report
        .anomalies
        .iter()
        .filter(|a| a.kind == AnomalyKind::AutomationFailed)
        .collect();
    assert_eq!(failed.len(), 1, "{report:?}");
    assert!(
        failed[0]
            .subjects
            .contains(&schedules[0].schedule_id.to_string()),
        "{:?}",
        failed[0]
    );
    assert_eq!(report.status, "anomalies_detected");
}

#[tokio::test]
async fn a_restart_loses_no_job_and_runs_none_twice() {
    let f = Fixture::new().await;
    for minutes in [5, 10] {
        f.schedule(job(
            &f.deploy,
            f.clock.now() + Duration::minutes(minutes),
            &format!("after {minutes} minutes"),
        ))
        .await;
    }
    f.clock.advance(Duration::minutes(7));
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    drop(f.engine);

    // A new engine on the same store, and a second one racing it for the same jobs.
    f.clock.advance(Duration::minutes(10));
    let open = || {
        Engine::open(
            f.store.clone(),
            f.clock.clone(),
            EngineConfig::default(),
            Seed::None,
        )
    };
    let (a, b) = (open().await.unwrap(), open().await.unwrap());
    let (ra, rb) = tokio::join!(a.run_due(), b.run_due());
    assert_eq!(
        ra.unwrap() + rb.unwrap(),
        1,
        "the remaining job ran exactly once"
    );
    let log = log_of(&a.session("ada".parse().unwrap()), LogQuery::default()).await;
    assert_eq!(log.len(), 2);
}

#[tokio::test]
async fn a_job_can_be_cancelled_until_it_runs() {
    let f = Fixture::new().await;
    let schedule = |at| job(&f.launch, at, "changed");
    let later = f
        .schedule(schedule(f.clock.now() + Duration::hours(1)))
        .await;
    f.ada().delete_schedule(&later.schedule_id).await.unwrap();
    f.clock.advance(Duration::hours(2));
    assert_eq!(
        f.engine.run_due().await.unwrap(),
        0,
        "a cancelled job never runs"
    );

    let now = f.schedule(schedule(f.clock.now())).await;
    f.engine.run_due().await.unwrap();
    let err = f.ada().delete_schedule(&now.schedule_id).await.unwrap_err();
    assert_matches!(err, ServiceError::Conflict(_));
    // A member without the admin scope (an admin could cancel ada's job while it waits).
    let bob = f.engine.session("bob".parse().unwrap()).with_admin(false);
    let err = bob.delete_schedule(&now.schedule_id).await.unwrap_err();
    assert_matches!(err, ServiceError::NotFound { .. });
    assert!(schedules_of(&bob).await.is_empty());
    assert!(log_of(&bob, LogQuery::default()).await.is_empty());
}

#[tokio::test]
async fn automation_input_is_validated_before_anything_is_stored() {
    let f = Fixture::new().await;
    let script = |actions: Vec<Action>, trigger: &EventId| script("s", trigger, actions);
    let unknown: EventId = "no-such-event".parse().unwrap();
    let cases = [
        script(vec![], &f.launch),
        script(
            vec![Action {
                action_type: "explode".into(),
                ..manipulate(&f.deploy, "x")
            }],
            &f.launch,
        ),
        script(
            vec![Action {
                new_details: None,
                ..manipulate(&f.deploy, "x")
            }],
            &f.launch,
        ),
    ];
    for bad in cases {
        let err = f.refused_script(bad).await;
        assert_matches!(err, ServiceError::InvalidInput { .. });
    }
    let err = f
        .refused_script(script(vec![manipulate(&f.deploy, "x")], &unknown))
        .await;
    assert_matches!(err, ServiceError::UnknownReference { .. });
    let err = f
        .ada()
        .trigger_external_manipulation(ExternalTrigger {
            external_system: " ".into(),
            trigger_conditions: TriggerConditions::default(),
            actions: vec![manipulate(&f.deploy, "x")],
            timeline_id: None,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, ServiceError::InvalidInput { ref field, .. } if field == "external_system")
    );
    assert!(scripts_of(&f.ada()).await.is_empty());
    assert!(schedules_of(&f.ada()).await.is_empty());
}

#[tokio::test]
async fn the_log_filters_by_timeline_and_date_range() {
    let f = Fixture::new().await;
    let branch = f.ada().create_timeline(named("branch")).await.unwrap();
    for (timeline, hours) in [(None, 0), (Some(branch.id.clone()), 1), (None, 2)] {
        f.schedule(NewSchedule {
            timeline_id: timeline,
            ..job(&f.deploy, f.clock.now(), &format!("at +{hours}h"))
        })
        .await;
        f.engine.run_due().await.unwrap();
        f.clock.advance(Duration::hours(1));
    }
    let in_branch = log_of(
        &f.ada(),
        LogQuery {
            timeline_id: Some(branch.id.clone()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(in_branch.len(), 1);
    let first_hour = log_of(
        &f.ada(),
        LogQuery {
            date_range: Some(TimeRange::parse("date_range", "2026-11-22T10:00:00Z/PT30M").unwrap()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(first_hour.len(), 1);
    assert_eq!(first_hour[0].timeline_id, TimelineId::primary());
}

/// The public Warp guides write `modify_event`: it is accepted wherever an action is, runs as a
/// manipulation, and is stored and logged under the canonical word.
#[tokio::test]
async fn the_guides_modify_event_is_a_manipulation() {
    let f = Fixture::new().await;
    let modify = |details: &str| Action {
        action_type: "modify_event".into(),
        ..manipulate(&f.deploy, details)
    };
    let script = f
        .create_script(script(
            "guide script",
            &f.launch,
            vec![modify("moved by the script")],
        ))
        .await;
    assert_eq!(script.actions[0].action_type, "manipulate");
    let job = f
        .trigger(ExternalTrigger {
            external_system: "CI/CD Pipeline".into(),
            trigger_conditions: TriggerConditions {
                build_status: Some("failed".into()),
                timestamp: Some(t("2024-09-01T12:00:00Z")),
            },
            actions: vec![modify("Delay launch due to build failure")],
            timeline_id: None,
        })
        .await;
    assert_eq!(job.actions[0].action_type, "manipulate");
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    assert_eq!(
        f.head_description(&f.deploy).await,
        "Delay launch due to build failure"
    );
    let log = f.log().await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].outcome, "done");
    assert!(log[0].action_taken.starts_with("manipulated "), "{log:?}");
}

#[tokio::test]
async fn an_admin_sees_everyones_automation_with_its_owner_others_their_own() {
    let f = Fixture::new().await;
    let as_member = |name: &str| f.engine.session(name.parse().unwrap()).with_admin(false);
    let s = as_member("ada")
        .schedule_manipulation(job(&f.launch, f.clock.now(), "launch scrubbed"))
        .await
        .unwrap();
    assert_eq!(f.engine.run_due().await.unwrap(), 1);
    let admin = f.engine.session("root".parse().unwrap()).with_admin(true);
    let everything = || LogQuery {
        timeline_id: None,
        date_range: None,
        page: PageRequest::default(),
    };

    let schedules = schedules_of(&admin).await;
    assert_eq!(schedules.len(), 1);
    assert_eq!(schedules[0].schedule_id, s.schedule_id);
    assert_eq!(schedules[0].owner, Some("ada".parse().unwrap()));
    let log = log_of(&admin, everything()).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].owner, Some("ada".parse().unwrap()));

    // Another member still sees only their own; the author sees theirs.
    let bob = as_member("bob");
    assert!(schedules_of(&bob).await.is_empty());
    assert!(log_of(&bob, everything()).await.is_empty());
    assert_eq!(schedules_of(&as_member("ada")).await.len(), 1);
}

/// A script and a waiting job of ada's are removed by an admin, never by another member; the
/// admin sees both, each naming ada.
#[tokio::test]
async fn an_admin_removes_anyones_script_and_waiting_job_another_member_cannot() {
    let f = Fixture::new().await;
    let as_member = |name: &str| f.engine.session(name.parse().unwrap()).with_admin(false);
    let ada = as_member("ada");
    let script = ada
        .create_script(script(
            "keep deploy in step",
            &f.launch,
            vec![manipulate(&f.deploy, "deploy rescheduled")],
        ))
        .await
        .unwrap();
    let job = ada
        .schedule_manipulation(job(
            &f.launch,
            f.clock.now() + Duration::hours(1),
            "launch scrubbed",
        ))
        .await
        .unwrap();

    let bob = as_member("bob");
    let err = bob.delete_script(&script.script_id).await.unwrap_err();
    assert_matches!(err, ServiceError::NotFound { .. });
    let err = bob.delete_schedule(&job.schedule_id).await.unwrap_err();
    assert_matches!(err, ServiceError::NotFound { .. });

    let admin = f.engine.session("root".parse().unwrap()).with_admin(true);
    let scripts = scripts_of(&admin).await;
    assert_eq!(
        scripts
            .iter()
            .map(|s| (&s.script_id, s.owner.as_ref().map(|o| o.as_str())))
            .collect::<Vec<_>>(),
        [(&script.script_id, Some("ada"))]
    );
    admin.delete_script(&script.script_id).await.unwrap();
    admin.delete_schedule(&job.schedule_id).await.unwrap();

    // Gone for ada too: the trigger fires nothing and the job never runs.
    assert!(scripts_of(&ada).await.is_empty());
    let jobs = schedules_of(&ada).await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].status, "cancelled");
    f.clock.advance(Duration::hours(2));
    assert_eq!(
        f.engine.run_due().await.unwrap(),
        0,
        "a cancelled job never runs"
    );
}
