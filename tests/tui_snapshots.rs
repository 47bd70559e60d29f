//! Snapshots of every pane, wizard step, modal and empty state, rendered to text at 100x30
//! without colour (ids redacted: their random part changes from run to run).

use std::sync::Arc;

use chronoscope::engine::ManualClock;
use chronoscope::error::ServiceError;
use chronoscope::model::{AnomalyId, EventId, TimelineId};
use chronoscope::paradox::{Paradox, ParadoxKind};
use chronoscope::service::prelude::*;
use chronoscope::service::{
    Anomaly, AnomalyKind, LogEntry, MonitorReport, NewEvent, NewTimeline, ParadoxReport, Severity,
};
use chronoscope::tui::action::{Msg, Reply, Slot};
use chronoscope::tui::testing::Harness;

const W: u16 = 100;
const H: u16 = 30;

mod support;

use support::Step::{Keys, Settle, Type};
use support::{
    Fresh, Step, all_events, answer_whoami, bound_for, dashboard, drive, named, new_event, search,
    submit, t,
};

/// Replaces the characters after an id prefix with `#`, keeping the layout.
fn redact(screen: &str) -> String {
    const PREFIXES: [&str; 9] = [
        "tml_", "evt_", "itm_", "anc_", "jrn_", "anm_", "scr_", "sch_", "mrg_",
    ];
    let chars: Vec<char> = screen.chars().collect();
    let mut out = String::with_capacity(screen.len());
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..chars.len().min(i + 4)].iter().collect();
        if PREFIXES.contains(&rest.as_str()) {
            out.push_str(&rest);
            i += 4;
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                out.push('#');
                i += 1;
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

struct World {
    service: Arc<dyn TimelineService>,
    clock: Arc<ManualClock>,
    engine: Arc<chronoscope::engine::Engine>,
}

async fn empty_world() -> World {
    let fresh = Fresh::new().await;
    World {
        service: fresh.session("ada"),
        clock: fresh.clock,
        engine: fresh.engine,
    }
}

/// A small world: events in Paris and London, a few timelines, one about to close.
async fn world() -> World {
    let w = empty_world().await;
    let s = &w.service;
    let mut previous: Option<EventId> = None;
    for (description, time, location, fixed) in [
        (
            "Storming of the Bastille",
            "1789-07-14T15:00:00Z",
            "Paris",
            false,
        ),
        (
            "Napoleon crowned",
            "1804-12-02T10:00:00Z",
            "Paris, Notre-Dame",
            true,
        ),
        (
            "Great Exhibition opens",
            "1851-05-01T11:00:00Z",
            "London",
            false,
        ),
        (
            "Eiffel Tower opens",
            "1889-03-31T12:00:00Z",
            "Paris, Champ de Mars",
            false,
        ),
    ] {
        let e = s
            .add_event(
                &TimelineId::primary(),
                NewEvent {
                    causes: previous.iter().cloned().collect(),
                    fixed_point: fixed,
                    ..new_event(description, time, location, &[])
                },
            )
            .await
            .unwrap();
        previous = Some(e.event_id);
    }
    let tesla = s
        .create_timeline(bound_for("Tesla 1889", "1889-03-10T23:50:00Z"))
        .await
        .unwrap();
    s.create_timeline(NewTimeline {
        base_timeline_id: Some(tesla.id.clone()),
        variation: Some("Tesla never leaves Paris".into()),
        destination_time: Some(t("1889-03-10T23:50:00Z")),
        ..named("Tesla stays")
    })
    .await
    .unwrap();
    w.clock.advance(chrono::Duration::minutes(20));
    s.create_timeline(bound_for("Moon 1969", "1969-07-20T20:17:00Z"))
        .await
        .unwrap();
    // Tesla's two timelines are now 4 minutes from closing; the moon has 44.
    w.clock.advance(chrono::Duration::minutes(36));
    w
}

async fn harness(w: &World) -> Harness {
    dashboard(w.service.clone(), w.clock.clone()).await
}

fn screen(h: &mut Harness) -> String {
    redact(&h.render(W, H))
}

#[tokio::test]
async fn start_before_any_answer() {
    let w = empty_world().await;
    let mut h = Harness::new(w.service.clone(), w.clock.clone());
    insta::assert_snapshot!(screen(&mut h));
}

/// Tests that open the dashboard on a world, take `steps` and compare the screen with the
/// snapshot named after the test.
macro_rules! snapshot_after {
    ($($name:ident: $world:ident $steps:tt)*) => {$(
        #[tokio::test]
        async fn $name() {
            let mut h = harness(&$world().await).await;
            drive(&mut h, &$steps).await;
            insta::assert_snapshot!(screen(&mut h));
        }
    )*};
}

/// Paris between 1700 and 1900 searched, and the cursor moved down one.
const PARIS_1700_1900: [Step<'static>; 7] = [
    Keys("tab /"),
    Type("paris"),
    Keys("tab"),
    Type("1700-01-01T00:00:00Z/1900-01-01T00:00:00Z"),
    Keys("enter"),
    Settle,
    Keys("j"),
];

snapshot_after! {
    empty_world_loaded: empty_world []
    timelines_pane: world [Keys("j"), Settle]
    timelines_filter_with_no_match: world [Keys("/"), Type("atlantis")]
    search_results: world PARIS_1700_1900
    search_with_no_results: world [Keys("tab /"), Type("atlantis"), Keys("enter"), Settle]
    event_detail: world [Keys("tab /"), Type("paris"), Keys("enter"), Settle, Keys("j enter")]
    monitor_frozen_and_stable: world [Keys("tab tab f")]
    automation_log_empty: world [Keys("L"), Settle]
    help_screen: empty_world [Keys("?")]
    // The revert is refused: the event was never manipulated, there is nothing to revert.
    error_flash: world [Keys("tab /"), Type("london"), Keys("enter"), Settle, Keys("r y"), Settle]
    new_timeline_form: world [Keys("n"), Type("Tesla 1889")]
    delete_confirmation: world [Keys("G d")]
    command_line: world [Keys(":"), Type("search paris")]
    wizard_without_anchors_or_items: empty_world [Keys("b"), Settle]
}

fn anomaly(cause: &str, kind: AnomalyKind, severity: Severity, description: &str) -> Anomaly {
    Anomaly {
        anomaly_id: AnomalyId::derived(cause),
        description: description.into(),
        kind,
        severity,
        subjects: vec![],
        detected_at: t("2026-11-22T10:56:00Z"),
    }
}

/// What the monitor found in the primary timeline at 10:56.
fn report(anomalies: Vec<Anomaly>) -> MonitorReport {
    MonitorReport {
        status: "anomalies_detected".into(),
        anomalies,
        timeline_id: TimelineId::primary(),
        checked_at: t("2026-11-22T10:56:00Z"),
    }
}

#[tokio::test]
async fn monitor_highlights_new_and_fades_resolved() {
    let mut h = harness(&world().await).await;
    let loop_ = anomaly(
        "loop",
        AnomalyKind::Paradox(ParadoxKind::CausalLoop),
        Severity::Critical,
        "Bastille and coronation cause each other",
    );
    let orphan = anomaly(
        "orphan",
        AnomalyKind::OrphanedEvent,
        Severity::Warning,
        "Eiffel Tower opens names a missing cause",
    );
    let closing = anomaly(
        "closing",
        AnomalyKind::WindowClosing,
        Severity::Info,
        "Window closes in 4 minutes",
    );
    h.app.panes.monitor.watch(Some(TimelineId::primary()));
    h.app
        .panes
        .monitor
        .apply(report(vec![loop_.clone(), orphan]));
    h.app.panes.monitor.apply(report(vec![loop_, closing]));
    h.press("tab tab");
    insta::assert_snapshot!(screen(&mut h));
}

#[tokio::test]
async fn automation_log() {
    let mut h = harness(&world().await).await;
    drive(&mut h, &[Keys("L"), Settle]).await;
    let event: EventId = "event-5678abcd".parse().unwrap();
    h.app.panes.log.set(vec![
        LogEntry {
            owner: None,
            timestamp: t("2026-11-22T10:30:00Z"),
            event_id: event.clone(),
            action_taken: "manipulate: moved to 1889-03-11T00:00:00Z".into(),
            timeline_id: TimelineId::primary(),
            outcome: "done".into(),
            source: "scr_test".into(),
            new_event_id: None,
        },
        LogEntry {
            owner: None,
            timestamp: t("2026-11-22T10:31:00Z"),
            event_id: event,
            action_taken: "revert: nothing to revert".into(),
            timeline_id: TimelineId::primary(),
            outcome: "failed".into(),
            source: "sch_test".into(),
            new_event_id: None,
        },
    ]);
    insta::assert_snapshot!(screen(&mut h));
}

#[tokio::test]
async fn disconnected_header() {
    let mut h = harness(&world().await).await;
    answer_whoami(
        &mut h,
        Err(ServiceError::Unavailable("connection refused".into())),
    );
    h.settle().await;
    insta::assert_snapshot!(screen(&mut h));
}

#[tokio::test]
async fn paradox_check_findings() {
    let w = world().await;
    let mut h = harness(&w).await;
    let ids: Vec<EventId> = all_events(w.service.as_ref())
        .await
        .into_iter()
        .map(|e| e.event_id)
        .collect();
    h.send(Msg::Done {
        slot: Slot::Mutation,
        generation: 0,
        result: Ok(Reply::Checked(chronoscope::tui::panes::wizard::Verdict {
            report: ParadoxReport {
            is_stable: false,
            timeline_id: TimelineId::primary(),
            paradoxes: vec![
                Paradox {
                    kind: ParadoxKind::CausalOrder,
                    description: "Napoleon crowned would happen before its cause, the Storming of the Bastille".into(),
                    events: ids.clone(),
                    items: vec![],
                },
                Paradox {
                    kind: ParadoxKind::FixedPoint,
                    description: "Napoleon crowned is a fixed point".into(),
                    events: vec![],
                    items: vec![],
                },
            ],
            },
            standing: vec![],
        })),
    });
    insta::assert_snapshot!(screen(&mut h));
}

/// Each step of the wizard, travelling to Tesla 1889 with one item, then back.
#[tokio::test]
async fn wizard_steps() {
    let mut h = harness(&world().await).await;
    submit(&mut h, "a", &["", "home"]).await;
    submit(&mut h, "i", &["Pocket watch"]).await;
    h.press("j t");
    h.settle().await;
    insta::assert_snapshot!("wizard_1_destination", screen(&mut h));
    h.press("enter");
    insta::assert_snapshot!("wizard_2_items", screen(&mut h));
    h.press("enter");
    h.settle().await;
    insta::assert_snapshot!("wizard_3_check", screen(&mut h));
    h.press("enter");
    insta::assert_snapshot!("wizard_4_confirm", screen(&mut h));
    h.press("y");
    h.settle().await;
    insta::assert_snapshot!("wizard_5_journey", screen(&mut h));
    h.press("esc b");
    h.settle().await;
    insta::assert_snapshot!("wizard_return_destination", screen(&mut h));
}

/// The capture shown in the README: a wider terminal with results and an anomaly.
#[tokio::test]
async fn readme_capture_120x35() {
    let mut h = harness(&world().await).await;
    search(&mut h, "paris").await;
    h.press("j");
    h.app.panes.monitor.apply(report(vec![anomaly(
        "closing",
        AnomalyKind::WindowClosing,
        Severity::Warning,
        "Tesla 1889 closes in 4 minutes",
    )]));
    insta::assert_snapshot!(redact(&h.render(120, 35)));
}

/// The frame at 80 and at 140 columns (30 rows), as snapshots `{name}_80` and `{name}_140`.
fn at_both_widths(name: &str, h: &mut Harness) {
    for width in [80, 140] {
        insta::assert_snapshot!(format!("{name}_{width}"), redact(&h.render(width, H)));
    }
}

/// The time controls: your clock paused in the header, fast-forward on a preset, a typed
/// duration that does not parse.
#[tokio::test]
async fn time_controls() {
    let mut h = harness(&world().await).await;
    drive(&mut h, &[Keys("space"), Settle]).await;
    at_both_widths("clock_paused", &mut h);
    drive(&mut h, &[Keys("> down")]).await;
    at_both_widths("fast_forward_preset", &mut h);
    drive(&mut h, &[Keys("tab"), Type("3 parsecs"), Keys("enter")]).await;
    at_both_widths("rewind_bad_duration", &mut h);
}

/// Three anchors: one stable with what it records, one in a timeline about to close (at
/// risk), one returned to (spent).
async fn anchored_world() -> World {
    use chronoscope::service::{NewPreciseAnchor, TravelRequest};
    let w = world().await;
    let s = &w.service;
    let mut environment = chronoscope::model::Conditions::new();
    environment.insert("temperature".into(), 20.into());
    environment.insert("sealed".into(), true.into());
    s.set_precise_anchor(NewPreciseAnchor {
        timestamp: t("2026-11-22T10:56:00Z"),
        description: Some("home".into()),
        environment: Some(environment),
        ..NewPreciseAnchor::default()
    })
    .await
    .unwrap();
    let bastille = s
        .set_anchor(chronoscope::service::NewAnchor {
            timestamp: t("1789-07-14T16:00:00Z"),
            description: Some("Bastille".into()),
        })
        .await
        .unwrap();
    let tesla = support::timelines(s.as_ref())
        .await
        .into_iter()
        .find(|t| t.name == "Tesla 1889")
        .unwrap();
    let go = |destination: String| TravelRequest {
        destination,
        items_transported: vec![],
    };
    s.travel(go(tesla.id.to_string())).await.unwrap();
    s.set_anchor(chronoscope::service::NewAnchor {
        timestamp: t("1889-03-10T23:50:00Z"),
        description: Some("Tesla's lab".into()),
    })
    .await
    .unwrap();
    s.travel(go(bastille.id.to_string())).await.unwrap();
    w
}

#[tokio::test]
async fn anchors_list() {
    let mut h = harness(&anchored_world().await).await;
    drive(&mut h, &[Keys("A"), Settle]).await;
    at_both_widths("anchors_list", &mut h);
    drive(&mut h, &[Keys("j d")]).await;
    at_both_widths("anchors_delete_question", &mut h);
    drive(&mut h, &[Keys("n k e")]).await;
    at_both_widths("anchors_adjust_form", &mut h);
}

#[tokio::test]
async fn wizard_time_and_place() {
    let mut h = harness(&world().await).await;
    drive(
        &mut h,
        &[
            Keys("t"),
            Settle,
            Keys("tab"),
            Type("1889-03-31 12:30"),
            Keys("tab"),
            Type("Paris, Champ de Mars"),
        ],
    )
    .await;
    at_both_widths("wizard_time_and_place", &mut h);
    drive(&mut h, &[Keys("enter enter"), Settle, Keys("enter")]).await;
    at_both_widths("wizard_time_and_place_confirm", &mut h);
}

/// Tesla 1889 and its branch Tesla stays, each with its own history since the branch point:
/// in Tesla stays, Tesla stays in Paris (a conflict: Tesla 1889 moved the same event
/// elsewhere), the tower opens a day later (incoming) and a lab is founded (added); in Tesla
/// 1889, the exhibition moved a year (kept).
async fn branched_world() -> World {
    use chronoscope::service::{ManipulateRequest, NewOutcome, OutcomeChange};
    let w = world().await;
    let s = &w.service;
    let all = support::timelines(s.as_ref()).await;
    let id = |name: &str| all.iter().find(|t| t.name == name).unwrap().id.clone();
    let (tesla, stays) = (id("Tesla 1889"), id("Tesla stays"));
    let event = |name: &str| {
        let name = name.to_owned();
        let s = s.clone();
        async move {
            all_events(s.as_ref())
                .await
                .into_iter()
                .find(|e| e.description == name)
                .unwrap()
                .event_id
        }
    };
    let (bastille, eiffel, exhibition) = (
        event("Storming of the Bastille").await,
        event("Eiffel Tower opens").await,
        event("Great Exhibition opens").await,
    );
    let change = |timeline: &TimelineId, event: &EventId, description: Option<&str>, time: &str| {
        ManipulateRequest {
            timeline_id: Some(timeline.clone()),
            event_id: event.clone(),
            new_outcome: NewOutcome {
                description: description.map(Into::into),
                changes: vec![OutcomeChange {
                    action: None,
                    time: Some(t(time)),
                }],
            },
            safety_check: false,
        }
    };
    for req in [
        change(
            &stays,
            &bastille,
            Some("Bastille stormed a day late"),
            "1789-07-15T15:00:00Z",
        ),
        change(
            &tesla,
            &bastille,
            Some("Bastille never stormed"),
            "1789-07-16T15:00:00Z",
        ),
        change(&stays, &eiffel, None, "1889-04-01T12:00:00Z"),
        change(&tesla, &exhibition, None, "1852-05-01T11:00:00Z"),
    ] {
        s.manipulate_event(req).await.unwrap();
    }
    s.add_event(
        &stays,
        new_event(
            "Tesla opens a Paris lab",
            "1889-06-01T09:00:00Z",
            "Paris",
            &[],
        ),
    )
    .await
    .unwrap();
    w
}

/// The diff view from the tree (`D`) and the merge wizard (`M`), step by step, at 80 and
/// 140 columns; a merge left for review marked in the tree.
#[tokio::test]
async fn merge_wizard() {
    let mut h = harness(&branched_world().await).await;
    // The tree: Primary, Tesla 1889, Tesla stays, Moon 1969; Tesla stays is the third row.
    drive(&mut h, &[Keys("j j"), Settle, Keys("D")]).await;
    at_both_widths("diff_sides", &mut h);
    drive(&mut h, &[Keys("enter"), Settle]).await;
    at_both_widths("diff_view", &mut h);
    drive(&mut h, &[Keys("esc M enter"), Settle, Keys("enter")]).await;
    at_both_widths("merge_strategy", &mut h);
    drive(&mut h, &[Keys("enter")]).await;
    at_both_widths("merge_confirm", &mut h);
    drive(&mut h, &[Keys("y"), Settle]).await;
    at_both_widths("merge_waiting_for_review", &mut h);
    drive(&mut h, &[Keys("r"), Settle]).await;
    at_both_widths("merge_review", &mut h);
    drive(&mut h, &[Keys("c")]).await;
    at_both_widths("merge_custom_merge_form", &mut h);
    drive(&mut h, &[Keys("esc esc"), Settle]).await;
    at_both_widths("merge_pending_in_the_tree", &mut h);
}

/// Isolate (`I`) and correct dissonance (`C`) on the selected event: each asks first.
#[tokio::test]
async fn paradox_tools() {
    let mut h = harness(&world().await).await;
    search(&mut h, "paris").await;
    drive(&mut h, &[Keys("j I")]).await;
    at_both_widths("isolate_question", &mut h);
    drive(&mut h, &[Keys("n C")]).await;
    at_both_widths("correct_dissonance_question", &mut h);
}

/// A merge the safety check refuses: the wizard names the paradox and asks "apply anyway?".
#[tokio::test]
async fn merge_refused_for_a_paradox() {
    use chronoscope::service::{ManipulateRequest, NewOutcome, OutcomeChange};
    let w = world().await;
    let s = &w.service;
    let moon = support::timelines(s.as_ref())
        .await
        .into_iter()
        .find(|t| t.name == "Moon 1969")
        .unwrap()
        .id;
    let eiffel = all_events(s.as_ref())
        .await
        .into_iter()
        .find(|e| e.description == "Eiffel Tower opens")
        .unwrap()
        .event_id;
    s.add_event(
        &moon,
        new_event(
            "Tower souvenirs sold",
            "1890-01-01T12:00:00Z",
            "Paris",
            &[&eiffel],
        ),
    )
    .await
    .unwrap();
    s.manipulate_event(ManipulateRequest {
        timeline_id: Some(TimelineId::primary()),
        event_id: eiffel,
        new_outcome: NewOutcome {
            description: None,
            changes: vec![OutcomeChange {
                action: None,
                time: Some(t("1900-04-14T12:00:00Z")),
            }],
        },
        safety_check: false,
    })
    .await
    .unwrap();
    let mut h = harness(&w).await;
    drive(
        &mut h,
        &[Keys("j j j M enter"), Settle, Keys("enter enter y"), Settle],
    )
    .await;
    at_both_widths("merge_apply_anyway", &mut h);
}

/// The small world with access lists, set by an operator: ada may only read Tesla 1889
/// (root administers it); ada administers Moon 1969, bob writes it, carol reads it; eve is
/// restricted to reading. `service` is still the operator's; the second is ada's session
/// without the operator's rights.
async fn guarded_world() -> (World, Arc<dyn TimelineService>) {
    use chronoscope::service::{
        Permissions, RestrictRequest, RestrictionLevel, SetAccessControlRequest,
    };
    let w = world().await;
    let s = &w.service;
    let names = |l: &[&str]| l.iter().map(|n| n.parse().unwrap()).collect::<Vec<_>>();
    let id_of = |list: &[chronoscope::service::TimelineInfo], name: &str| {
        list.iter().find(|t| t.name == name).unwrap().id.clone()
    };
    let list = support::timelines(s.as_ref()).await;
    s.set_access_control(SetAccessControlRequest {
        timeline_id: id_of(&list, "Tesla 1889"),
        permissions: Some(Permissions {
            admin: names(&["root"]),
            write: vec![],
            read: names(&["ada"]),
        }),
    })
    .await
    .unwrap();
    s.set_access_control(SetAccessControlRequest {
        timeline_id: id_of(&list, "Moon 1969"),
        permissions: Some(Permissions {
            admin: names(&["ada"]),
            write: names(&["bob"]),
            read: names(&["carol"]),
        }),
    })
    .await
    .unwrap();
    s.restrict_time_travel(RestrictRequest {
        user_id: "eve".parse().unwrap(),
        restriction_level: RestrictionLevel::ReadOnly,
    })
    .await
    .unwrap();
    let ada: Arc<dyn TimelineService> =
        Arc::new(w.engine.session("ada".parse().unwrap()).with_admin(false));
    (w, ada)
}

/// What ada, no operator, sees: Tesla 1889 marked read-only and an event refused on it
/// before anything is sent; the access screen of Moon 1969, which she administers, with the
/// form that adds a name and the access log (not served yet: said in the screen).
#[tokio::test]
async fn security_as_a_traveller() {
    let (w, ada) = guarded_world().await;
    let mut h = dashboard(ada, w.clock.clone()).await;
    drive(&mut h, &[Keys("j"), Settle, Keys("e")]).await;
    at_both_widths("security_read_only_refused", &mut h);
    drive(&mut h, &[Keys("G S"), Settle]).await;
    at_both_widths("security_access_screen", &mut h);
    drive(&mut h, &[Keys("a"), Type("dan")]).await;
    at_both_widths("security_access_add_form", &mut h);
    drive(&mut h, &[Keys("esc l enter"), Settle]).await;
    at_both_widths("security_access_log", &mut h);
}

/// What an operator sees: the restrictions, the form that sets one, and the integrity check
/// of the primary timeline (a recent tamper scan, then a validation).
#[tokio::test]
async fn security_as_an_operator() {
    let (w, _) = guarded_world().await;
    let mut h = harness(&w).await;
    drive(&mut h, &[Keys("R"), Settle]).await;
    at_both_widths("security_restrictions", &mut h);
    drive(&mut h, &[Keys("n")]).await;
    at_both_widths("security_restrict_form", &mut h);
    drive(&mut h, &[Keys("esc esc g T"), Settle, Keys("v"), Settle]).await;
    at_both_widths("security_integrity", &mut h);
}
