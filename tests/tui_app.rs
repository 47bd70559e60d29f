//! The dashboard driven by keys, without a terminal: against the embedded engine, and for the
//! main flows also against a real server on loopback through `RemoteClient`.

use std::sync::Arc;

use chronoscope::engine::{Engine, ManualClock};
use chronoscope::error::ServiceError;
use chronoscope::model::{EventId, TimelineId};
use chronoscope::service::prelude::*;
use chronoscope::service::{NewEvent, NewTimeline, PageRequest, SearchQuery, TravelRequest};
use chronoscope::store::MemoryStore;
use chronoscope::tui::action::{Msg, Reply, Slot};
use chronoscope::tui::app::Connection;
use chronoscope::tui::confirm::Confirm;
use chronoscope::tui::keymap::{KeyMap, KeyMapError};
use chronoscope::tui::modal::Modal;
use chronoscope::tui::panes::PaneId;
use chronoscope::tui::panes::wizard::{Step, Verdict};
use chronoscope::tui::testing::Harness;

mod http_support;
mod support;

use support::{
    START, add_to_primary, all_events, answer_whoami, bound_for, dashboard, engine_on,
    manipulation, named, new_event, retimed, revert, search, serve, submit, t,
};

struct World {
    service: Arc<dyn TimelineService>,
    clock: Arc<ManualClock>,
}

/// An engine on a fresh store with three events in the primary timeline.
async fn engine(clock: Arc<ManualClock>) -> Arc<Engine> {
    let engine = engine_on(Arc::new(MemoryStore::new()), clock).await;
    let ada = engine.session("ada".parse().unwrap());
    for (description, time, location) in [
        ("Storming of the Bastille", "1789-07-14T15:00:00Z", "Paris"),
        (
            "Eiffel Tower opens",
            "1889-03-31T12:00:00Z",
            "Paris, Champ de Mars",
        ),
        ("Great Exhibition opens", "1851-05-01T11:00:00Z", "London"),
    ] {
        add_to_primary(&ada, new_event(description, time, location, &[])).await;
    }
    engine
}

/// The dashboard on the embedded engine.
async fn world() -> World {
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = engine(clock.clone()).await;
    let service: Arc<dyn TimelineService> = Arc::new(engine.session("ada".parse().unwrap()));
    World { service, clock }
}

/// The dashboard on a real server on a loopback port, through `RemoteClient`.
async fn remote_world() -> World {
    let clock = Arc::new(ManualClock::new(t(START)));
    let (url, token) = serve(engine(clock.clone()).await, "ada").await;
    let client = chronoscope::client::RemoteClient::new(&url, token).unwrap();
    World {
        service: Arc::new(client),
        clock,
    }
}

async fn harness(w: &World) -> Harness {
    dashboard(w.service.clone(), w.clock.clone()).await
}

/// The dashboard on the embedded engine, its first answers applied.
async fn embedded() -> Harness {
    harness(&world().await).await
}

/// ada's dashboard on the embedded engine, whose calls are answered but whose monitor stream
/// fails with `why`, and the service it calls.
async fn stream_failing(why: &str) -> (Harness, Arc<dyn TimelineService>) {
    let w = world().await;
    let engine = engine(w.clock.clone()).await;
    let service = chronoscope::server::Sessions::session(
        &http_support::Wrapped::new(Arc::clone(&engine))
            .failing("watch_monitor", ServiceError::Unavailable(why.into())),
        "ada".parse().unwrap(),
        None,
        &chronoscope::auth::Scopes::parse("admin"),
    );
    (Harness::pushed(service.clone(), w.clock.clone()), service)
}

/// The refusal line (marked ↑) comes right under the box of the field labelled `field` (three
/// lines: the labelled border, the input, the border), and the box labelled `next` follows it.
fn assert_reason_right_under(screen: &str, field: &str, next: &str) {
    let lines: Vec<&str> = screen.lines().collect();
    let reason = lines
        .iter()
        .position(|l| l.contains('↑'))
        .unwrap_or_else(|| panic!("no reason marked ↑ on screen:\n{screen}"));
    assert!(
        reason >= 3 && lines[reason - 3].contains(field),
        "the reason is right under the {field} box:\n{screen}"
    );
    assert!(
        lines[reason + 1..].iter().any(|l| l.contains(next)),
        "the {next} box comes after the reason:\n{screen}"
    );
}

async fn timeline_named(service: &Arc<dyn TimelineService>, name: &str) -> Option<TimelineId> {
    let page = service
        .list_timelines(PageRequest::first(1000))
        .await
        .unwrap();
    page.items
        .into_iter()
        .find(|t| t.name == name)
        .map(|t| t.id)
}

async fn typing_a_location_shows_the_events_there(w: World) {
    let mut h = harness(&w).await;
    search(&mut h, "paris").await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Storming of the Bastille"), "{screen}");
    assert!(screen.contains("Eiffel Tower opens"), "{screen}");
    assert!(!screen.contains("Great Exhibition"), "{screen}");
    assert!(screen.contains("2 found"), "{screen}");
}

#[tokio::test]
async fn a_time_range_narrows_the_search_and_a_bad_one_is_explained() {
    let mut h = embedded().await;
    let nineteenth_century = "1800-01-01T00:00:00Z/1900-01-01T00:00:00Z";
    submit(&mut h, "tab /", &["paris", nineteenth_century]).await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Eiffel Tower opens"), "{screen}");
    assert!(!screen.contains("Bastille"), "{screen}");

    submit(&mut h, "/ tab", &["garbage"]).await;
    // Said under the inputs, where the mistake is, and only there (at both widths).
    for width in [80, 140] {
        let screen = h.render(width, 30);
        let unboxed = screen.replace(['┃', '│'], " ");
        let words = unboxed.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("time range: '"), "{screen}");
        assert!(words.contains("garbage' is not a time"), "{screen}");
        assert!(words.contains("Fix it and press enter."), "{screen}");
        // The results of the earlier range do not pass for an answer to this one.
        assert!(!screen.contains("Eiffel Tower opens"), "{screen}");
        assert!(!screen.contains("found"), "{screen}");
    }
    assert!(h.app.flash.is_none(), "{:?}", h.app.flash);

    // Fixed and searched again: the results, and the old error gone with its cause.
    h.press("/ tab");
    h.press(&["backspace"; 7].join(" "));
    h.press("enter");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Eiffel Tower opens"), "{screen}");
    assert!(
        h.app.flash.as_ref().is_none_or(|f| !f.error),
        "a stale error stays: {:?}",
        h.app.flash
    );
    assert!(!screen.contains("time range"), "{screen}");
}

#[tokio::test]
async fn the_detail_names_a_cause_the_search_range_left_out() {
    let w = world().await;
    let bastille = w
        .service
        .search_events(SearchQuery {
            location: Some("Paris".into()),
            time_range: Some(
                chronoscope::model::TimeRange::parse(
                    "range",
                    "1789-01-01T00:00:00Z/1790-01-01T00:00:00Z",
                )
                .unwrap(),
            ),
            ..SearchQuery::default()
        })
        .await
        .unwrap()
        .items
        .remove(0);
    add_to_primary(
        w.service.as_ref(),
        new_event(
            "Napoleon crowned",
            "1804-12-02T10:00:00Z",
            "Paris, Notre-Dame",
            &[&bastille.event_id],
        ),
    )
    .await;
    let mut h = harness(&w).await;
    let nineteenth_century = "1800-01-01T00:00:00Z/1900-01-01T00:00:00Z";
    submit(&mut h, "tab /", &["paris", nineteenth_century]).await;
    let screen = h.render(100, 30);
    assert!(!screen.contains("Bastille"), "outside the range: {screen}");
    h.press("enter"); // Napoleon crowned, the first result
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Napoleon crowned"), "{screen}");
    assert!(
        screen.contains("causes  Storming of the Bastille, 1789-07-14"),
        "the cause is named: {screen}"
    );
}

#[tokio::test]
async fn enter_opens_an_event_with_its_causes_and_esc_goes_back() {
    let w = world().await;
    let bastille = w
        .service
        .search_events(SearchQuery {
            location: Some("Paris".into()),
            ..SearchQuery::default()
        })
        .await
        .unwrap()
        .items[0]
        .event_id
        .clone();
    w.service
        .add_event(
            &TimelineId::primary(),
            NewEvent {
                description: "Napoleon crowned".into(),
                time: t("1804-12-02T10:00:00Z"),
                location: "Paris, Notre-Dame".into(),
                causes: vec![bastille.clone()],
                fixed_point: true,
                safety_check: false,
            },
        )
        .await
        .unwrap();
    let mut h = harness(&w).await;
    search(&mut h, "paris").await;
    h.press("j enter");
    let screen = h.render(100, 30);
    assert!(screen.contains("Napoleon crowned"), "{screen}");
    assert!(
        screen.contains("causes  Storming of the Bastille, 1789-07-14 15:00:00")
            && screen.contains(&format!("({bastille})")),
        "the cause is named: {screen}"
    );
    assert!(screen.contains("fixed point"), "{screen}");
    h.press("esc");
    let screen = h.render(100, 30);
    assert!(
        screen.contains("Eiffel Tower opens"),
        "back to the results: {screen}"
    );
}

#[tokio::test]
async fn n_creates_a_timeline_and_selects_it() {
    let w = world().await;
    let mut h = harness(&w).await;
    h.press("n");
    assert!(matches!(h.app.modal, Some(Modal::Form(_))));
    h.type_text("Tesla 1889");
    h.press("tab");
    h.type_text("1889-03-10T23:50:00Z");
    h.press("enter");
    h.settle().await;
    assert!(timeline_named(&w.service, "Tesla 1889").await.is_some());
    assert_eq!(
        h.app.panes.timelines.selected().map(|t| t.name.as_str()),
        Some("Tesla 1889")
    );
    let screen = h.render(100, 30);
    assert!(screen.contains("Tesla 1889"), "{screen}");
    assert!(screen.contains("1889-03-10 23:50"), "{screen}");
    assert!(screen.contains("Created timeline Tesla 1889"), "{screen}");
}

#[tokio::test]
async fn a_form_with_a_bad_time_stays_open_and_says_why() {
    let w = world().await;
    let mut h = harness(&w).await;
    submit(&mut h, "n", &["Broken", "yesterday"]).await;
    let Some(Modal::Form(form)) = &h.app.modal else {
        panic!("the form stays open");
    };
    let why = form.refusal.clone().expect("the form says why");
    assert!(why.contains("yesterday"), "{why}");
    assert_eq!(
        form.refusal_field,
        Some(1),
        "the destination time is at fault"
    );
    let screen = h.render(100, 30);
    assert!(
        screen.contains("is not a time; write 1889-03-10 23:50"),
        "{screen}"
    );
    assert_reason_right_under(&screen, "Destination time", "Description");
    assert!(timeline_named(&w.service, "Broken").await.is_none());
}

#[tokio::test]
async fn a_form_the_server_refuses_keeps_what_was_typed_and_shows_the_reason() {
    let mut h = embedded().await;
    h.press("e");
    h.type_text("Tea with the Queen");
    h.press("enter"); // no location: only the engine knows it is required
    h.settle().await;
    let Some(Modal::Form(form)) = &h.app.modal else {
        panic!("the form stays open after a refusal");
    };
    assert!(!form.pending);
    assert_eq!(form.value(0), "Tea with the Queen", "the input is kept");
    let why = form.refusal.clone().expect("the reason is shown");
    assert!(why.contains("location"), "{why}");
    assert_eq!(form.refusal_field, Some(2), "the location is at fault");
    let screen = h.render(100, 30);
    assert!(screen.contains("Tea with the Queen"), "{screen}");
    assert_reason_right_under(&screen, "Location", "Causes");

    // Fixed in place (the cursor waits in the field at fault) and sent again: made, and the
    // form closes.
    h.type_text("Windsor");
    h.press("enter");
    h.settle().await;
    assert!(h.app.modal.is_none(), "{:?}", h.app.flash);
    assert!(
        h.app
            .flash
            .as_ref()
            .is_some_and(|f| f.text.starts_with("Added event")),
        "{:?}",
        h.app.flash
    );
}

#[tokio::test]
async fn p_branches_a_parallel_timeline_from_the_selected_one() {
    let w = world().await;
    let mut h = harness(&w).await;
    submit(&mut h, "p", &["What if", "Tesla stays in Paris"]).await;
    let id = timeline_named(&w.service, "What if")
        .await
        .expect("created");
    let info = w.service.get_timeline(&id).await.unwrap();
    assert_eq!(info.parent, Some(TimelineId::primary()));
    assert_eq!(info.variation.as_deref(), Some("Tesla stays in Paris"));
    assert!(h.render(100, 30).contains("Primary"));
}

#[tokio::test]
async fn d_deletes_only_after_yes() {
    let w = world().await;
    w.service.create_timeline(named("Doomed")).await.unwrap();
    let mut h = harness(&w).await;
    h.press("j d");
    assert!(h.render(100, 30).contains("Delete timeline Doomed"));
    h.press("n");
    h.settle().await;
    assert!(
        timeline_named(&w.service, "Doomed").await.is_some(),
        "no keeps it"
    );
    h.press("d y");
    h.settle().await;
    assert!(
        timeline_named(&w.service, "Doomed").await.is_none(),
        "yes deletes it"
    );
    assert!(!h.render(100, 30).contains("Doomed  "));
}

/// The timeline you are in cannot be deleted: said when `d` is pressed, by name, instead of
/// asking and then being refused by the service.
#[tokio::test]
async fn d_on_the_timeline_you_are_in_says_so_before_asking() {
    let w = world().await;
    let doomed = w.service.create_timeline(named("Doomed")).await.unwrap();
    w.service
        .travel(TravelRequest {
            destination: doomed.id.to_string(),
            items_transported: Vec::new(),
        })
        .await
        .unwrap();
    let mut h = harness(&w).await;
    h.settle().await;
    h.press("j d");
    assert!(h.app.modal.is_none(), "nothing to confirm");
    let flash = h.app.flash.as_ref().expect("a message");
    assert!(flash.error, "{}", flash.text);
    assert!(
        flash.text.contains("You are in Doomed yourself"),
        "{}",
        flash.text
    );
    assert!(timeline_named(&w.service, "Doomed").await.is_some());
}

#[tokio::test]
async fn deleting_the_searched_timeline_moves_the_search_off_it() {
    let w = world().await;
    let doomed = w
        .service
        .create_timeline(NewTimeline {
            base_timeline_id: Some("primary".parse().unwrap()),
            ..named("Doomed")
        })
        .await
        .unwrap();
    let mut h = harness(&w).await;
    submit(&mut h, "j tab /", &["london"]).await;
    let screen = h.render(100, 30);
    assert!(screen.contains("in Doomed"), "{screen}");
    assert!(screen.contains("Great Exhibition opens"), "{screen}");

    // Deleted elsewhere (another process, the CLI); the next refresh notices.
    w.service.delete_timeline(&doomed.id).await.unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    let screen = h.render(100, 30);
    // The search moves to the timeline selected now (issue 28: and says why, by name).
    assert!(h.app.panes.timelines.get(&doomed.id).is_none(), "{screen}");
    assert!(!screen.contains("in Doomed"), "{screen}");
    assert!(screen.contains("in Primary"), "{screen}");
}

#[tokio::test]
async fn the_cursor_stays_on_a_manipulated_event() {
    let mut h = embedded().await;
    h.press("tab / enter");
    h.settle().await;
    h.press("j j");
    let chosen = h.app.panes.search.selected().unwrap().clone();
    assert_eq!(h.app.panes.search.cursor.selected, 2);
    submit(&mut h, "m ctrl-u", &["Moved on"]).await;
    let now = h.app.panes.search.selected().expect("a selected event");
    assert_eq!(now.description, "Moved on", "{:?}", h.app.flash);
    assert_eq!(now.lineage, chosen.lineage);
}

#[tokio::test]
async fn the_search_follows_the_selected_timeline() {
    let w = world().await;
    w.service
        .create_timeline(NewTimeline {
            base_timeline_id: Some("primary".parse().unwrap()),
            ..named("Copy")
        })
        .await
        .unwrap();
    let mut h = harness(&w).await;
    search(&mut h, "london").await;
    assert!(h.render(100, 30).contains("in Primary"));
    h.press("shift-tab j");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("in Copy"), "{screen}");
    assert!(screen.contains("Great Exhibition opens"), "{screen}");
    assert_eq!(
        h.app.panes.search.timeline.as_ref().map(|t| t.to_string()),
        h.app.panes.timelines.selected().map(|t| t.id.to_string())
    );
}

#[tokio::test]
async fn tab_cycles_the_panes_on_screen_and_l_toggles_the_log_and_monitor() {
    let mut h = embedded().await;
    assert_eq!(h.app.panes.focus, PaneId::Timelines);
    h.press("tab");
    assert_eq!(h.app.panes.focus, PaneId::Search);
    h.press("tab");
    assert_eq!(h.app.panes.focus, PaneId::Monitor);
    h.press("tab");
    assert_eq!(
        h.app.panes.focus,
        PaneId::Timelines,
        "the hidden log is not a stop"
    );
    h.press("L");
    h.settle().await;
    assert_eq!(h.app.panes.focus, PaneId::Log);
    assert!(h.render(100, 30).contains("Automation log"));
    h.press("shift-tab shift-tab shift-tab");
    assert_eq!(
        h.app.panes.focus,
        PaneId::Log,
        "the log is in the cycle while shown"
    );
    h.press("L");
    assert_eq!(h.app.panes.focus, PaneId::Monitor);
    assert!(h.render(100, 30).contains("Monitor"));
    h.press("l");
    assert_eq!(
        h.app.panes.focus,
        PaneId::Timelines,
        "l moves right, wrapping around"
    );
}

#[tokio::test]
async fn the_primary_timeline_cannot_be_deleted_from_the_dashboard() {
    let mut h = embedded().await;
    h.press("d");
    assert!(h.app.modal.is_none());
    assert!(h.app.flash.as_ref().is_some_and(|f| f.error));
}

async fn the_wizard_travels_with_an_item_and_returns_to_the_anchor(w: World) {
    let mut h = harness(&w).await;
    // An anchor where we are, then a timeline to go to.
    h.press("a enter");
    h.settle().await;
    submit(&mut h, "n", &["Tesla 1889", "1889-03-10T23:50:00Z"]).await;
    let tesla = timeline_named(&w.service, "Tesla 1889").await.unwrap();

    h.press("t");
    h.settle().await;
    assert!(h.render(100, 30).contains("Where to?"));
    h.press("enter"); // the selected timeline is preselected
    h.press("enter"); // no items yet
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("stays stable"), "{screen}");
    h.press("enter");
    assert!(h.render(100, 30).contains("Ready to leave"));
    h.press("enter");
    h.settle().await;
    assert!(
        h.render(100, 30).contains("Ready to leave"),
        "enter does not travel: only y does"
    );
    h.press("y");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Arrived."), "{screen}");
    assert!(
        screen.contains("to        Tesla 1889 at 1889-03-10 23:50:00"),
        "{screen}"
    );
    assert_eq!(w.service.whoami().await.unwrap().timeline_id, tesla);
    assert!(
        screen.contains("ada @ Tesla 1889"),
        "the header follows: {screen}"
    );
    h.press("esc");

    // Found something there; carry it home.
    submit(&mut h, "i", &["Tesla's blueprint"]).await;
    h.press("b");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Return to an anchor"), "{screen}");
    assert!(screen.contains("(return)"), "{screen}");
    h.press("enter");
    let screen = h.render(100, 30);
    assert!(
        screen.contains("[x] Tesla's blueprint"),
        "carried items are preselected: {screen}"
    );
    h.press("enter");
    h.settle().await;
    h.press("enter y");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Returned."), "{screen}");
    assert!(screen.contains("carried   Tesla's blueprint"), "{screen}");
    assert!(screen.contains("is now spent"), "{screen}");
    assert_eq!(
        w.service.whoami().await.unwrap().timeline_id,
        TimelineId::primary()
    );
    h.press("enter");
    assert!(h.app.modal.is_none());
}

#[tokio::test]
async fn backspace_walks_the_wizard_back_and_esc_closes_it_from_any_step() {
    let w = world().await;
    let mut h = harness(&w).await;
    let step = |h: &Harness| match &h.app.modal {
        Some(Modal::Wizard(w)) => Some(w.step),
        _ => None,
    };
    h.press("t");
    h.settle().await;
    h.press("enter enter");
    h.settle().await;
    h.press("enter");
    assert_eq!(step(&h), Some(Step::Confirm));
    h.press("backspace");
    assert_eq!(step(&h), Some(Step::Check));
    h.press("backspace");
    assert_eq!(step(&h), Some(Step::Items));
    h.press("backspace");
    assert_eq!(step(&h), Some(Step::Destination));

    let before = w.service.whoami().await.unwrap().timeline_id;
    h.press("enter enter");
    h.settle().await;
    h.press("enter");
    assert_eq!(step(&h), Some(Step::Confirm));
    h.press("esc");
    assert_eq!(step(&h), None, "one esc closes the wizard");
    h.press("enter");
    h.settle().await;
    assert_eq!(
        w.service.whoami().await.unwrap().timeline_id,
        before,
        "nobody travelled"
    );
}

async fn manipulate_with_the_safety_check_then_revert(w: World) {
    let mut h = harness(&w).await;
    search(&mut h, "london").await;
    h.press("m");
    let form = h.render(100, 30);
    assert!(form.contains("safety checked"));
    // The time as the dashboard shows and reads times, not in RFC 3339.
    assert!(
        form.contains("1851-05-01 11:00:00") && !form.contains("1851-05-01T11:00:00Z"),
        "{form}"
    );
    // Replace the description (select all is not needed: clear the line with ctrl-u).
    h.press("ctrl-u");
    h.type_text("Great Exhibition postponed");
    h.press("enter");
    h.settle().await;
    let flash = h.app.flash.clone().unwrap();
    assert!(!flash.error, "{}", flash.text);
    assert!(flash.text.starts_with("Manipulated"), "{}", flash.text);
    let screen = h.render(100, 30);
    assert!(
        screen.contains("Great Exhibition postponed"),
        "search refreshed: {screen}"
    );
    assert!(screen.contains("manipulated"), "{screen}");
    let london = w.service.search_events(SearchQuery {
        location: Some("London".into()),
        ..SearchQuery::default()
    });
    let found = london.await.unwrap();
    let postponed = found
        .items
        .iter()
        .find(|e| e.description == "Great Exhibition postponed")
        .expect("the manipulated event");
    assert_eq!(
        postponed.time,
        t("1851-05-01T11:00:00Z"),
        "the time sent back unchanged is the same instant"
    );

    h.press("r");
    assert!(h.render(100, 30).contains("Undo the latest change"));
    h.press("y");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Great Exhibition opens"), "{screen}");
    assert!(h.app.flash.as_ref().unwrap().text.starts_with("Reverted"));
}

async fn refusals_show_the_problem_title_and_detail_without_leaving_the_screen(w: World) {
    let mut h = harness(&w).await;
    search(&mut h, "london").await;
    // Nothing to revert on an event never manipulated: said before any question (N2 of the
    // 2026-11-29 walk-through: it asked "Undo…?" and only then refused), nothing sent.
    h.press("r");
    assert!(h.app.modal.is_none(), "no question asked");
    assert!(!h.app.busy(), "nothing sent");
    let flash = h.app.flash.clone().expect("the refusal is shown");
    assert!(flash.error);
    assert!(
        flash
            .text
            .ends_with("was never changed: there is nothing to revert."),
        "{}",
        flash.text
    );
    let screen = h.render(100, 30);
    assert!(
        screen.contains(&flash.text[..flash.text.len().min(60)]),
        "{screen}"
    );
    assert!(screen.contains("Event search"), "still on the dashboard");
    // Nor anything to align on an event without causes (N3: the question waited for causes
    // "being looked up", then answered "Nothing to align").
    h.app.flash = None;
    h.press("C");
    assert!(h.app.modal.is_none(), "no question asked");
    let said = h.app.flash.clone().expect("the refusal is shown");
    assert!(
        said.error && said.text.contains("has no causes: nothing to align"),
        "{}",
        said.text
    );
}

#[tokio::test]
async fn c_checks_a_draft_change_and_shows_the_verdict() {
    let mut h = embedded().await;
    let draft = ["Retrieve the blueprint", "1889-03-10T23:50:00Z"];
    submit(&mut h, "c", &draft).await;
    assert!(matches!(h.app.modal, Some(Modal::Report(..))));
    let screen = h.render(100, 30);
    assert!(screen.contains("Paradox check"), "{screen}");
    assert!(screen.contains("Primary stays stable"), "{screen}");
    h.press("esc");
    assert!(h.app.modal.is_none());
}

#[tokio::test]
async fn a_check_shows_every_paradox_it_counts_and_scrolls_on_a_small_screen() {
    use chronoscope::paradox::{Paradox, ParadoxKind};
    use chronoscope::service::ParadoxReport;
    let mut h = embedded().await;
    let long = |n: usize| {
        format!(
            "Paradox number {n}: {}",
            "an effect that now happens before the cause it depends on ".repeat(3)
        )
    };
    h.send(Msg::Done {
        slot: Slot::Mutation,
        generation: 0,
        result: Ok(Reply::Checked(Verdict {
            report: ParadoxReport {
                is_stable: false,
                timeline_id: TimelineId::primary(),
                paradoxes: (1..=3)
                    .map(|n| Paradox {
                        kind: ParadoxKind::CausalOrder,
                        description: long(n),
                        events: Vec::new(),
                        items: Vec::new(),
                    })
                    .collect(),
            },
            standing: Vec::new(),
        })),
    });
    let screen = h.render(100, 30);
    assert!(screen.contains("3 paradoxes"), "{screen}");
    for n in 1..=3 {
        assert!(screen.contains(&format!("Paradox number {n}")), "{screen}");
    }

    // 80x12 cannot hold them all: the end is reachable by scrolling.
    let small = h.render(80, 12);
    assert!(small.contains("j/k scroll"), "{small}");
    assert!(!small.contains("Paradox number 3"), "{small}");
    let mut seen = small;
    for _ in 0..20 {
        h.press("j");
        seen.push_str(&h.render(80, 12));
    }
    assert!(seen.contains("Paradox number 3"), "{seen}");
}

#[tokio::test]
async fn e_adds_an_event_to_the_selected_timeline() {
    let w = world().await;
    let mut h = harness(&w).await;
    h.press("e");
    h.type_text("Moon landing");
    h.press("tab ctrl-u");
    h.type_text("1969-07-20T20:17:00Z");
    h.press("tab");
    h.type_text("Sea of Tranquility");
    h.press("enter");
    h.settle().await;
    let found = w
        .service
        .search_events(SearchQuery {
            location: Some("tranquility".into()),
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1);
    assert_eq!(found.items[0].description, "Moon landing");
}

#[tokio::test]
async fn the_command_line_runs_searches_and_actions_by_name() {
    let mut h = embedded().await;
    submit(&mut h, ":", &["search london"]).await;
    assert_eq!(h.app.panes.focus, PaneId::Search);
    assert!(h.render(100, 30).contains("Great Exhibition opens"));
    h.press(":");
    h.type_text("new_timeline");
    h.press("enter");
    assert!(matches!(h.app.modal, Some(Modal::Form(_))));
    h.press("esc :");
    h.type_text("warp");
    h.press("enter");
    assert!(
        h.app
            .flash
            .as_ref()
            .is_some_and(|f| f.error && f.text.contains(":warp"))
    );
    h.press(":");
    h.type_text("q");
    h.press("enter");
    assert!(h.app.should_quit());
}

#[tokio::test]
async fn f_freezes_the_monitor_so_ticks_leave_it_alone() {
    let mut h = embedded().await;
    h.press("tab tab f");
    assert!(h.app.panes.monitor.frozen);
    assert!(h.render(100, 30).contains("FROZEN"));
    let before = h.app.generation(Slot::Monitor);
    h.send(Msg::Tick);
    assert_eq!(
        h.app.generation(Slot::Monitor),
        before,
        "no scan while frozen"
    );
    h.settle().await;
    h.press("f");
    assert!(!h.app.panes.monitor.frozen);
    h.send(Msg::Tick);
    h.settle().await;
    assert!(h.app.generation(Slot::Monitor) > before);
}

#[tokio::test]
async fn stale_answers_are_dropped() {
    let mut h = embedded().await;
    search(&mut h, "london").await;
    let newest = h.app.generation(Slot::Search);
    h.send(Msg::Done {
        slot: Slot::Search,
        generation: newest - 1,
        result: Ok(Reply::Search(Vec::new())),
    });
    assert_eq!(
        h.app.panes.search.results.len(),
        1,
        "an older answer does not overwrite"
    );
}

#[tokio::test]
async fn an_unavailable_service_shows_disconnected_and_the_tick_reconnects() {
    let mut h = embedded().await;
    assert_eq!(h.app.connection, Connection::Connected);
    answer_whoami(
        &mut h,
        Err(ServiceError::Unavailable("connection refused".into())),
    );
    assert!(matches!(h.app.connection, Connection::Disconnected(_)));
    let screen = h.render(100, 30);
    assert!(screen.contains("✗ disconnected — retrying"), "{screen}");
    assert!(
        screen.contains("✗ Connection refused. Asking again every few seconds"),
        "{screen}"
    );
    assert!(
        h.app.flash.is_none(),
        "the header says it; no flash every tick"
    );
    h.settle().await; // the real answer of that tick's other calls, then the next tick
    h.send(Msg::Tick);
    h.settle().await;
    assert_eq!(h.app.connection, Connection::Connected);
}

#[tokio::test]
async fn a_change_is_not_sent_while_the_header_says_disconnected_and_the_form_is_kept() {
    let w = world().await;
    let mut h = harness(&w).await;
    answer_whoami(
        &mut h,
        Err(ServiceError::Unavailable("connection refused".into())),
    );
    h.press("n");
    h.type_text("Sent into the void");
    h.press("tab");
    h.type_text("1889-03-10T23:50:00Z");
    h.press("enter");
    h.settle().await;
    // The engine would have answered: nothing was sent, and the form says why, as typed.
    assert!(
        timeline_named(&w.service, "Sent into the void")
            .await
            .is_none()
    );
    let Some(Modal::Form(form)) = &h.app.modal else {
        panic!("the form stays open: {:?}", h.app.modal);
    };
    let why = form.refusal.clone().expect("the form says why");
    assert!(
        why.starts_with("Not sent: the service does not answer"),
        "{why}"
    );
    for width in [80, 140] {
        let screen = h.render(width, 30);
        assert!(
            screen.contains("Sent into the void"),
            "kept as typed: {screen}"
        );
    }
}

#[tokio::test]
async fn a_refused_token_is_said_in_the_header_until_an_answer_comes() {
    let mut h = embedded().await;
    answer_whoami(
        &mut h,
        Err(ServiceError::Unauthorized("the token has expired".into())),
    );
    assert!(matches!(h.app.connection, Connection::TokenRefused(_)));
    for width in [80, 140] {
        let screen = h.render(width, 30);
        assert!(!screen.contains("● connected"), "{screen}");
        assert!(screen.contains("✗ token refused"), "{screen}");
        assert!(
            screen.contains("The server refused the token: the token has expired."),
            "{screen}"
        );
    }
    assert!(
        h.app.flash.is_none(),
        "the header says it; no flash every tick"
    );
    // N14: the ticks meanwhile send nothing but, once in a while, the one call that finds out
    // whether the token is taken again (it polled everything on every tick: about two refused
    // requests a second with an expired token).
    let sent = |h: &Harness| {
        [Slot::Whoami, Slot::Timelines, Slot::Monitor].map(|slot| h.app.generation(slot))
    };
    let before = sent(&h);
    for _ in 1..chronoscope::tui::app::REFUSED_TOKEN_PROBE_TICKS {
        h.send(Msg::Tick);
    }
    assert_eq!(sent(&h), before, "polled with a refused token");
    h.send(Msg::Tick);
    let after = sent(&h);
    assert_eq!(after[0], before[0] + 1, "one call asks again");
    assert_eq!(after[1..], before[1..], "nothing else is polled");
    // Its answer (the embedded engine answers) says it is over.
    h.settle().await;
    assert_eq!(h.app.connection, Connection::Connected);
    assert!(h.render(100, 30).contains("● connected"));
}

#[tokio::test]
async fn an_untrusted_certificate_is_shown_whole_and_not_promised_a_retry() {
    let mut h = embedded().await;
    let why = "cannot reach https://localhost:19443: the server's certificate is not trusted \
               (unknown issuer); if a private CA signed it, pass that CA with --ca-cert FILE \
               (or CHRONOSCOPE_CA_CERT)";
    answer_whoami(&mut h, Err(ServiceError::Unavailable(why.into())));
    assert!(matches!(h.app.connection, Connection::Unusable(_)));
    for width in [80, 140] {
        let screen = h.render(width, 30);
        let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
        let words = words.to_lowercase();
        let want = why.split_whitespace().collect::<Vec<_>>().join(" ");
        let want = want.to_lowercase();
        assert!(words.contains(&want), "{screen}");
        assert!(screen.contains("✗ cannot connect"), "{screen}");
        assert!(!screen.contains("retrying"), "{screen}");
    }
}

#[tokio::test]
async fn panes_that_never_loaded_say_why_instead_of_loading_for_ever() {
    let w = world().await;
    // The first answer is a certificate the dashboard does not trust; nothing has loaded.
    let mut h = Harness::new(w.service.clone(), w.clock.clone());
    let why = "cannot reach https://localhost:19443: the server's certificate is not trusted \
               (unknown issuer); if a private CA signed it, pass that CA with --ca-cert FILE";
    let generation = h.app.generation(Slot::Whoami);
    h.send(Msg::Done {
        slot: Slot::Whoami,
        generation,
        result: Err(ServiceError::Unavailable(why.into())),
    });
    for width in [80, 140] {
        let screen = h.render(width, 30);
        // The timelines pane: the left 60 % of the rows under the banner.
        let left = usize::from(width) * 6 / 10;
        let pane: Vec<String> = screen
            .lines()
            .map(|l| l.chars().take(left).collect())
            .collect();
        let words = pane.join(" ");
        let words = words
            .split(|c: char| c.is_whitespace() || c == '│' || c == '┃')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(!screen.contains("Loading timelines"), "{screen}");
        assert!(
            words.contains("Not loaded: the server cannot be used as configured (see above)."),
            "{screen}"
        );
    }
}

#[tokio::test]
async fn q_quits_and_ctrl_c_quits_even_from_a_form() {
    let w = world().await;
    let mut h = harness(&w).await;
    h.press("n");
    h.type_text("q");
    assert!(!h.app.should_quit(), "q is text inside a form");
    h.press("ctrl-c");
    assert!(h.app.should_quit());
    let mut h = harness(&w).await;
    h.press("q");
    assert!(h.app.should_quit());
}

#[tokio::test]
async fn help_lists_every_binding_from_the_key_map() {
    let mut h = embedded().await;
    h.press("?");
    let screen = h.render(120, 60);
    let keymap = KeyMap::default();
    for b in keymap.bindings() {
        assert!(
            screen.contains(b.description),
            "help misses '{}'",
            b.description
        );
    }
    h.press("esc");
    assert!(h.app.modal.is_none());
}

#[tokio::test]
async fn a_key_map_file_rebinds_and_the_help_and_footer_follow() {
    let w = world().await;
    let keymap = KeyMap::from_json(r#"{"new_timeline": "N", "help": ["?", "f1"]}"#).unwrap();
    let mut h = Harness::with_keymap(w.service.clone(), w.clock.clone(), keymap);
    h.settle().await;
    let screen = h.render(160, 30);
    assert!(screen.contains("N new"), "{screen}");
    h.press("n");
    assert!(h.app.modal.is_none(), "n is no longer bound");
    h.press("N");
    assert!(matches!(h.app.modal, Some(Modal::Form(_))));
    h.press("esc f1");
    assert!(matches!(h.app.modal, Some(Modal::Help(_))));
}

#[test]
fn a_conflicting_key_map_is_refused_naming_both_actions() {
    let err = KeyMap::from_json(r#"{"freeze": "q"}"#).unwrap_err();
    assert_eq!(
        err,
        KeyMapError::Conflict {
            key: "q".into(),
            first: "quit",
            second: "freeze"
        }
    );
    assert!(err.to_string().contains("'quit' and 'freeze'"));
    assert!(matches!(
        KeyMap::from_json(r#"{"warp": "w"}"#),
        Err(KeyMapError::UnknownAction(..))
    ));
    assert!(matches!(
        KeyMap::from_json(r#"{"quit": "hyper-q"}"#),
        Err(KeyMapError::BadKey(_))
    ));
    // Pane-local keys may repeat across panes that are never live together.
    assert!(KeyMap::from_json(r#"{"freeze": "d"}"#).is_ok());
}

#[tokio::test]
async fn the_filter_narrows_the_timelines() {
    let w = world().await;
    for name in ["Alpha", "Beta", "Alphabet"] {
        w.service.create_timeline(named(name)).await.unwrap();
    }
    let mut h = harness(&w).await;
    submit(&mut h, "/", &["alpha"]).await;
    assert_eq!(h.app.panes.timelines.len(), 2);
    let screen = h.render(100, 30);
    assert!(
        screen.contains("Alphabet") && !screen.contains("Beta"),
        "{screen}"
    );
    h.press("esc");
    assert_eq!(h.app.panes.timelines.len(), 4);
}

#[tokio::test]
async fn countdowns_follow_the_clock_and_closed_timelines_say_so() {
    let w = world().await;
    w.service.create_timeline(named("Brief")).await.unwrap();
    let mut h = harness(&w).await;
    assert!(h.render(100, 30).contains("60m00s") || h.render(100, 30).contains("1h00m"));
    w.clock.advance(chrono::Duration::minutes(55));
    let screen = h.render(100, 30);
    assert!(screen.contains("5m00s"), "{screen}");
    w.clock.advance(chrono::Duration::minutes(10));
    let screen = h.render(100, 30);
    assert!(screen.contains("closed"), "{screen}");
    let _ = EventId::from_ulid(ulid::Ulid::nil());
}

#[tokio::test]
async fn a_click_focuses_a_pane_and_selects_the_row_under_the_mouse() {
    use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let w = world().await;
    for name in ["Alpha", "Beta"] {
        w.service.create_timeline(named(name)).await.unwrap();
    }
    let mut h = harness(&w).await;
    h.press("tab");
    let screen = h.render(100, 30); // lays the panes out
    let row = screen
        .lines()
        .position(|l| l.contains("Beta"))
        .expect("Beta is listed") as u16;
    h.send(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 10,
        row,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(h.app.panes.focus, PaneId::Timelines);
    assert_eq!(
        h.app.panes.timelines.selected().map(|t| t.name.as_str()),
        Some("Beta")
    );
}

#[tokio::test]
async fn any_terminal_size_renders_and_no_color_means_no_colour() {
    use ratatui::style::Color;
    let mut h = embedded().await;
    search(&mut h, "paris").await;
    for (width, height) in [(20, 8), (60, 20), (100, 30), (240, 70)] {
        let screen = h.render(width, height);
        assert_eq!(screen.lines().count(), height as usize);
    }
    let buffer = h.render_buffer(100, 30);
    assert!(
        buffer
            .content()
            .iter()
            .all(|c| c.fg == Color::Reset && c.bg == Color::Reset),
        "the harness renders as under NO_COLOR"
    );
    // The wide layout shows more of each row than the narrow one.
    assert!(h.render(240, 70).contains("Paris, Champ de Mars"));
}

#[tokio::test]
async fn help_scrolls_to_its_last_line_and_no_further() {
    let mut h = embedded().await;
    h.press("?");
    assert!(!h.render(100, 30).contains("ctrl-c quits from anywhere"));
    for _ in 0..200 {
        h.press("j");
    }
    let screen = h.render(100, 30);
    assert!(screen.contains("ctrl-c quits from anywhere"), "{screen}");
    assert!(
        screen.contains("Anomaly monitor"),
        "the last page is full: {screen}"
    );
}

/// Moves `event` to `time`; the new head of its lineage.
async fn move_event(service: &Arc<dyn TimelineService>, event: &EventId, time: &str) -> EventId {
    service
        .manipulate_event(manipulation(None, event, retimed(time)))
        .await
        .unwrap()
        .new_event_id
}

/// The picture's row of the lane called `name`.
fn lane<'s>(screen: &'s str, name: &str) -> &'s str {
    screen
        .lines()
        .find(|l| l.contains(name))
        .unwrap_or_else(|| panic!("no lane '{name}' in\n{screen}"))
}

async fn the_picture_shows_superseded_and_reverted_versions_in_their_lanes(w: World) {
    // The Great Exhibition (1851) moved to 1860, then to 1870, and that last move undone:
    // 1851 is superseded, 1870 reverted, 1860 stands as the manipulated event.
    let exhibition = event_called(&w.service, "Great Exhibition opens").await;
    let moved = move_event(&w.service, &exhibition, "1860-05-01T11:00:00Z").await;
    move_event(&w.service, &moved, "1870-05-01T11:00:00Z").await;
    w.service.revert_event(revert(&exhibition)).await.unwrap();
    let mut h = harness(&w).await;
    h.press("v");
    h.settle().await;
    let screen = h.render(140, 30);
    let column = |row: &str, glyph: char| {
        row.chars()
            .position(|c| c == glyph)
            .unwrap_or_else(|| panic!("no {glyph} in '{row}' of\n{screen}"))
    };
    let superseded = column(lane(&screen, "superseded "), '○');
    let manipulated = column(lane(&screen, "manipulated "), '▲');
    let reverted = column(lane(&screen, "reverted "), '×');
    assert!(
        superseded < manipulated && manipulated < reverted,
        "1851, 1860, 1870 from left to right:\n{screen}"
    );
    for legend in ["○ superseded", "× reverted"] {
        assert!(screen.contains(legend), "{legend}:\n{screen}");
    }
    // One event stands for the lineage: the density row counts it once, not its versions.
    let bars = lane(&screen, "per cell")
        .chars()
        .filter(|c| "▁▂▃▄▅▆▇█".contains(*c))
        .count();
    assert_eq!(bars, 3, "{screen}");
}

/// The same key-driven flows against the embedded engine and against a real server.
macro_rules! on_both_faces {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            use super::*;
            $(#[tokio::test]
            async fn $name() {
                super::$name(world().await).await
            })*
        }
        mod remote {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(remote_world().await).await
            })*
        }
    };
}

on_both_faces!(
    typing_a_location_shows_the_events_there,
    the_wizard_travels_with_an_item_and_returns_to_the_anchor,
    manipulate_with_the_safety_check_then_revert,
    refusals_show_the_problem_title_and_detail_without_leaving_the_screen,
    a_change_made_elsewhere_is_pushed_to_the_monitor_without_a_tick,
    the_picture_shows_superseded_and_reverted_versions_in_their_lanes,
    pausing_stops_your_clock_and_the_header_says_so,
    fast_forward_and_rewind_by_a_preset_and_a_typed_duration,
    the_anchors_list_checks_adjusts_and_deletes_after_asking,
    the_wizard_travels_to_a_time_and_place,
    the_picture_shows_you_paused_and_space_resumes_there,
    the_merge_wizard_shows_the_diff_and_merges_only_after_apply_anyway,
    the_diff_view_shows_changed_lineages_side_by_side_or_stacked,
    a_merge_left_for_review_is_marked_in_the_tree,
    correct_dissonance_moves_the_selected_event_after_its_cause,
    isolating_an_event_contains_its_paradox,
    the_review_resolves_a_conflict_with_custom_merge_and_completes_the_merge,
    r_reviews_a_waiting_merge_on_its_destination_and_in_the_diff,
);

#[tokio::test]
async fn help_names_every_command_whole_at_80_columns_and_g_jumps_to_the_end() {
    let mut h = embedded().await;
    h.press("?");
    let top = h.render(80, 24);
    let mut seen = top.clone();
    for _ in 0..80 {
        h.press("j");
        seen.push_str(&h.render(80, 24));
    }
    for binding in h.app.keymap.bindings() {
        let name = format!(":{}", binding.action.name());
        // Whole: what follows the name is not more of a name (a space, the modal's border).
        let shown = seen.match_indices(&name).any(|(at, _)| {
            seen[at + name.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
        });
        assert!(shown, "{name} is cut or missing at 80 columns:\n{seen}");
    }
    h.press("g");
    assert_eq!(h.render(80, 24), top, "g goes back to the top");
    h.press("G");
    let end = h.render(80, 24);
    assert!(end.contains("ctrl-c quits from anywhere"), "{end}");
    h.press("k");
    assert_ne!(
        h.render(80, 24),
        end,
        "one line up from the end moves at once"
    );
}

#[tokio::test]
async fn the_wizard_keeps_the_selected_destination_in_view_at_60_by_15() {
    let w = world().await;
    for n in 1..=8 {
        w.service
            .create_timeline(bound_for(
                &format!("A timeline with a rather long name, number {n}"),
                "1889-03-10T23:50:00Z",
            ))
            .await
            .unwrap();
    }
    let mut h = harness(&w).await;
    h.press("t");
    h.settle().await;
    for _ in 0..8 {
        h.press("j");
        let screen = h.render(60, 15);
        // The wizard's own marker (the timelines pane behind it has a ▶ of its own).
        assert!(
            screen.contains("▶ timeline"),
            "the selected destination is off-screen:\n{screen}"
        );
    }
    match &h.app.modal {
        Some(Modal::Wizard(wizard)) => assert_eq!(wizard.dest_cursor.selected, 8),
        _ => panic!("the wizard is open"),
    }
}

/// The id of the event called `description` in primary.
async fn event_called(service: &Arc<dyn TimelineService>, description: &str) -> EventId {
    all_events(service.as_ref())
        .await
        .into_iter()
        .find(|e| e.description == description)
        .unwrap_or_else(|| panic!("no event '{description}'"))
        .event_id
}

/// Searches `location` in the selected timeline and moves the cursor to the event called
/// `description`.
async fn select_event(h: &mut Harness, location: &str, description: &str) {
    search(h, location).await;
    let Some(row) = h
        .app
        .panes
        .search
        .results
        .iter()
        .position(|e| e.description == description)
    else {
        panic!("no '{description}' at {location}");
    };
    for _ in 0..row {
        h.press("j");
    }
}

/// Souvenirs of the Eiffel Tower sold a century before it opens: an effect before its cause,
/// written without the safety check.
async fn sell_souvenirs_before_the_tower(service: &Arc<dyn TimelineService>) {
    let eiffel = event_called(service, "Eiffel Tower opens").await;
    add_to_primary(
        service.as_ref(),
        new_event(
            "Eiffel souvenirs sold",
            "1790-01-01T12:00:00Z",
            "Paris",
            &[&eiffel],
        ),
    )
    .await;
}

#[tokio::test]
async fn an_event_that_makes_a_paradox_is_applied_only_after_apply_anyway() {
    let w = world().await;
    let eiffel = event_called(&w.service, "Eiffel Tower opens").await;
    let mut h = harness(&w).await;
    // Caused by the Eiffel Tower's opening, yet a century earlier: an effect before its cause.
    h.press("e");
    h.type_text("Eiffel souvenirs sold");
    h.press("tab ctrl-u");
    h.type_text("1790-01-01 12:00"); // as the dashboard shows times
    h.press("tab");
    h.type_text("Paris");
    h.press("tab");
    h.type_text(eiffel.as_str());
    h.press("enter");
    h.settle().await;
    let Some(Modal::Confirm(Confirm::ApplyAnyway { why, .. })) = &h.app.modal else {
        panic!("the safety check asks first: {:?}", h.app.modal);
    };
    assert!(
        why.contains("Eiffel"),
        "the paradox names the events: {why}"
    );
    let screen = h.render(100, 30);
    assert!(screen.contains("Apply it anyway?"), "{screen}");
    let written = || async {
        all_events(w.service.as_ref())
            .await
            .iter()
            .any(|e| e.description == "Eiffel souvenirs sold")
    };
    assert!(!written().await, "nothing is written before the answer");

    // No: back in the form, as typed, saying it was not applied.
    h.press("n");
    let Some(Modal::Form(form)) = &h.app.modal else {
        panic!("n goes back to the form: {:?}", h.app.modal);
    };
    assert_eq!(form.value(0), "Eiffel souvenirs sold");
    assert!(
        form.refusal
            .as_deref()
            .is_some_and(|r| r.starts_with("Not applied"))
    );
    assert!(!written().await);

    // Sent again and applied anyway (only y says yes; enter does not): written, the form closes.
    h.press("enter");
    h.settle().await;
    h.press("enter");
    h.settle().await;
    assert!(matches!(
        h.app.modal,
        Some(Modal::Confirm(Confirm::ApplyAnyway { .. }))
    ));
    assert!(!written().await, "enter is not yes");
    h.press("y");
    h.settle().await;
    assert!(h.app.modal.is_none(), "{:?}", h.app.modal);
    assert!(written().await, "yes applies it");
    let flash = h.app.flash.clone().expect("a flash");
    assert!(flash.text.starts_with("Added event"), "{}", flash.text);
}

#[tokio::test]
async fn a_revert_that_makes_a_paradox_asks_before_it_is_applied() {
    let w = world().await;
    let ada = &w.service;
    // A treaty moved earlier, then a celebration that follows the moved treaty: undoing the move
    // would put the celebration before the treaty it celebrates.
    let treaty = add_to_primary(
        ada.as_ref(),
        new_event("Treaty signed", "1860-06-01T12:00:00Z", "Turin", &[]),
    )
    .await;
    let moved = ada
        .manipulate_event(manipulation(None, &treaty, retimed("1850-06-01T12:00:00Z")))
        .await
        .unwrap();
    add_to_primary(
        ada.as_ref(),
        new_event(
            "Treaty celebrated",
            "1855-06-01T12:00:00Z",
            "Turin",
            &[&moved.new_event_id],
        ),
    )
    .await;

    let mut h = harness(&w).await;
    select_event(&mut h, "turin", "Treaty signed").await;
    h.press("r y");
    h.settle().await;
    let Some(Modal::Confirm(Confirm::ApplyAnyway { why, form, .. })) = &h.app.modal else {
        panic!("the revert is checked first: {:?}", h.app.modal);
    };
    assert!(form.is_none());
    assert!(why.contains("Treaty celebrated"), "{why}");
    h.press("n");
    assert!(h.app.modal.is_none());
    let head = ada
        .check_timeline(chronoscope::service::SignificantEventQuery {
            timeline_id: TimelineId::primary(),
            significant_event: treaty.to_string(),
        })
        .await
        .unwrap();
    assert_eq!(head.status, "altered", "n leaves the manipulation in place");

    h.press("r y");
    h.settle().await;
    h.press("y");
    h.settle().await;
    let flash = h.app.flash.clone().expect("a flash");
    assert!(flash.text.starts_with("Reverted"), "{}", flash.text);
}

#[tokio::test]
async fn a_refused_manipulation_can_be_applied_anyway() {
    let w = world().await;
    let bastille = event_called(&w.service, "Storming of the Bastille").await;
    add_to_primary(
        w.service.as_ref(),
        new_event(
            "Bastille Day first held",
            "1790-07-14T10:00:00Z",
            "Paris",
            &[&bastille],
        ),
    )
    .await;
    let mut h = harness(&w).await;
    select_event(&mut h, "paris", "Storming of the Bastille").await;
    // Moved after its own anniversary: refused by the safety check, then applied anyway.
    submit(&mut h, "m tab ctrl-u", &["1795-07-14"]).await;
    assert!(
        matches!(
            h.app.modal,
            Some(Modal::Confirm(Confirm::ApplyAnyway { .. }))
        ),
        "{:?}",
        h.app.modal
    );
    h.press("y");
    h.settle().await;
    assert!(h.app.modal.is_none(), "{:?}", h.app.modal);
    let flash = h.app.flash.clone().expect("a flash");
    assert!(flash.text.starts_with("Manipulated"), "{}", flash.text);
    assert!(flash.text.contains("1795-07-14"), "{}", flash.text);
}

#[tokio::test]
async fn the_command_line_search_forgets_an_earlier_time_range() {
    let mut h = embedded().await;
    submit(&mut h, "tab / tab", &["1700-01-01/1700-12-31"]).await;
    assert!(h.app.panes.search.results.is_empty());
    submit(&mut h, ":", &["search london"]).await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Great Exhibition opens"), "{screen}");
    assert!(
        !screen.contains("1700-01-01"),
        "the range input is empty: {screen}"
    );
}

#[tokio::test]
async fn times_are_typed_as_they_are_shown_and_a_date_is_a_whole_day() {
    let mut h = embedded().await;
    submit(&mut h, "tab / tab", &["1851-05-01"]).await;
    let found: Vec<_> = h
        .app
        .panes
        .search
        .results
        .iter()
        .map(|e| e.description.clone())
        .collect();
    assert_eq!(found, ["Great Exhibition opens"], "{:?}", h.app.flash);

    submit(&mut h, "/ tab ctrl-u", &["1889-03-31 11:00/PT2H"]).await;
    assert_eq!(h.app.panes.search.results.len(), 1, "{:?}", h.app.flash);
    assert_eq!(
        h.app.panes.search.results[0].description,
        "Eiffel Tower opens"
    );

    h.press("/ tab ctrl-u");
    h.type_text("last week");
    h.press("enter");
    let said = h
        .app
        .panes
        .search
        .refused
        .clone()
        .expect("a bad range is explained");
    assert!(said.contains("START/P1M"), "{said}");
    assert!(!said.contains("premature"), "{said}");
}

#[tokio::test]
async fn a_mistyped_event_id_in_a_check_is_refused_not_passed_as_stable() {
    let mut h = embedded().await;
    submit(&mut h, "c", &["evt_01JTYPO0000000000000000"]).await;
    let Some(Modal::Form(form)) = &h.app.modal else {
        panic!("the form stays open: {:?}", h.app.modal);
    };
    let why = form.refusal.clone().expect("refused");
    assert!(why.starts_with("Unknown reference"), "{why}");
    assert!(why.contains("evt_01JTYPO"), "{why}");
}

#[tokio::test]
async fn events_in_a_paradox_and_timelines_with_one_say_so() {
    let w = world().await;
    sell_souvenirs_before_the_tower(&w.service).await;
    let mut h = harness(&w).await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("⚠1"),
        "the timelines list counts it: {screen}"
    );
    search(&mut h, "paris").await;
    h.send(Msg::Tick);
    h.settle().await;
    let screen = h.render(140, 30);
    let row = |text: &str| {
        screen
            .lines()
            .find(|l| l.contains(text) && l.contains("Paris"))
            .unwrap_or_else(|| panic!("no {text}: {screen}"))
            .to_owned()
    };
    assert!(
        row("Eiffel souvenirs sold").contains("in paradox"),
        "{screen}"
    );
    assert!(row("Eiffel Tower opens").contains("in paradox"), "{screen}");
    assert!(
        row("Storming of the Bastille").contains("on schedule"),
        "{screen}"
    );
    // The detail of a marked event says it too, beside its own state.
    let results = &h.app.panes.search.results;
    let at = results
        .iter()
        .position(|e| e.description == "Eiffel souvenirs sold");
    for _ in 0..at.expect("found") {
        h.press("j");
    }
    h.press("enter");
    h.settle().await;
    let detail = h.render(140, 30);
    assert!(
        detail.contains("on schedule; ⚠ an open anomaly names it"),
        "{detail}"
    );
}

/// Travels to `timeline` and back to primary.
async fn there_and_back(service: &Arc<dyn TimelineService>, timeline: &TimelineId) {
    for destination in [timeline.to_string(), "primary".into()] {
        service
            .travel(chronoscope::service::TravelRequest {
                destination,
                items_transported: vec![],
            })
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn j_lists_the_journeys_newest_first() {
    let w = world().await;
    let tesla = w
        .service
        .create_timeline(bound_for("Tesla 1889", "1889-03-10T23:50:00Z"))
        .await
        .unwrap();
    there_and_back(&w.service, &tesla.id).await;
    w.service
        .fast_forward(chronoscope::service::ShiftRequest {
            duration: "1h".into(),
            safety_check: false,
        })
        .await
        .unwrap();
    let mut h = harness(&w).await;
    h.press("J");
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(screen.contains("Your journeys"), "{screen}");
    let fast_forward = screen.find("fast-forward");
    let first = screen.find("Tesla 1889 1889-03-10 23:50:00 → Primary");
    let second = screen.find("→ Tesla 1889 1889-03-10 23:50:00");
    assert!(
        fast_forward.is_some() && fast_forward < first && first.is_some() && first < second,
        "newest first: {screen}"
    );
    // A route too long for one line at 80 columns goes on two, each whole (not a time cut
    // off onto a line of its own).
    let far = w
        .service
        .create_timeline(bound_for(
            "The long way round by Vienna",
            "1889-03-10T23:50:00Z",
        ))
        .await
        .unwrap();
    w.service
        .travel(chronoscope::service::TravelRequest {
            destination: far.id.to_string(),
            items_transported: vec![],
        })
        .await
        .unwrap();
    h.press("esc");
    h.send(Msg::Tick);
    h.settle().await;
    h.press("J");
    h.settle().await;
    let narrow = h.render(80, 40);
    assert!(
        narrow.contains("to   The long way round by Vienna 1889-03-10 23:50:00"),
        "{narrow}"
    );
    assert!(
        narrow.lines().any(|l| l.contains("from Primary")),
        "{narrow}"
    );
    // Each says its kind, and where from and to on one line when it fits.
    for width in [80, 120] {
        let screen = h.render(width, 40);
        assert_eq!(
            screen.matches("travel to a timeline").count(),
            3,
            "{screen}"
        );
        assert!(
            screen
                .lines()
                .any(|l| l.contains("Primary") && l.contains("→ Tesla 1889 1889-03-10 23:50:00")),
            "{screen}"
        );
    }
    h.press("esc");
    assert!(h.app.modal.is_none());
    // The same from the command line.
    submit(&mut h, ":", &["journeys"]).await;
    assert!(matches!(h.app.modal, Some(Modal::Journeys(..))));
}

/// A journey to a timeline deleted before the dashboard opened says so, instead of a bare id
/// that reads like a timeline still there (F20).
#[tokio::test]
async fn j_marks_a_timeline_deleted_before_the_dashboard_opened() {
    let w = world().await;
    let gone = w
        .service
        .create_timeline(bound_for("Gone by now", "1889-03-10T23:50:00Z"))
        .await
        .unwrap();
    there_and_back(&w.service, &gone.id).await;
    w.service.delete_timeline(&gone.id).await.unwrap();
    let mut h = harness(&w).await;
    h.press("J");
    h.settle().await;
    for width in [80, 140] {
        let screen = h.render(width, 30);
        assert_eq!(
            screen.matches(&format!("{} (not listed)", gone.id)).count(),
            2,
            "there and back: {screen}"
        );
    }
}

#[tokio::test]
async fn tab_completes_a_command_and_lists_the_choices_when_several_fit() {
    let mut h = embedded().await;
    h.press(":");
    h.type_text("jour");
    h.press("tab");
    assert!(h.render(100, 30).contains(":journeys"));
    h.press("esc :");
    h.type_text("re");
    h.press("tab");
    let flash = h.app.flash.clone().expect("the choices are listed");
    let screen = h.render(100, 30);
    let footer = screen.lines().last().unwrap_or_default();
    for choice in ["refresh", "revert", "register_item", "return_to_anchor"] {
        assert!(flash.text.contains(choice), "{}", flash.text);
        assert!(footer.contains(choice), "beside the command line: {footer}");
    }
    h.press("esc :");
    h.type_text("sea");
    h.press("tab");
    h.type_text("london");
    h.press("enter");
    h.settle().await;
    assert!(h.render(100, 30).contains("Great Exhibition opens"));
}

#[tokio::test]
async fn an_anchor_without_a_description_is_named_by_its_timeline() {
    let w = world().await;
    w.service
        .set_anchor(chronoscope::service::NewAnchor {
            timestamp: t("2026-11-22T09:00:00Z"),
            description: None,
        })
        .await
        .unwrap();
    let mut h = harness(&w).await;
    h.press("b");
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(screen.contains("anchor    in Primary"), "{screen}");
    assert!(!screen.contains("anc_"), "no raw id: {screen}");
}

#[tokio::test]
async fn at_80_columns_the_header_keeps_the_position_and_names_keep_room() {
    let w = world().await;
    w.service
        .create_timeline(bound_for(
            "Tesla stays in Colorado Springs",
            "1899-06-01T12:00:00Z",
        ))
        .await
        .unwrap();
    let mut h = harness(&w).await;
    let screen = h.render(80, 24);
    let header = screen.lines().next().unwrap_or_default();
    assert!(header.contains("ada @ Primary"), "{header}");
    assert!(
        header.contains("as of 10:00:00") || header.contains("refreshed 10:00:00"),
        "the refresh time stays, in words: {header}"
    );
    assert!(
        screen.contains("Tesla stays in Col"),
        "a long name keeps more than a few letters: {screen}"
    );
    assert!(
        screen.contains("Monitor stable") || screen.contains("Monitor 0"),
        "the monitor's verdict stays in its title: {screen}"
    );
}

#[tokio::test]
async fn a_parallel_timeline_needs_its_variation_and_forms_name_the_base() {
    let w = world().await;
    let mut h = harness(&w).await;
    h.press("p");
    assert!(
        h.render(100, 30).contains("Parallel timeline of Primary"),
        "named, not an id"
    );
    h.type_text("What if");
    h.press("enter"); // the variation is still empty
    h.settle().await;
    let Some(Modal::Form(form)) = &h.app.modal else {
        panic!("the form stays open: {:?}", h.app.modal);
    };
    assert_eq!(form.focus, 1, "the cursor waits in the variation");
    assert!(
        form.refusal
            .as_deref()
            .is_some_and(|r| r.starts_with("variation"))
    );
    assert!(timeline_named(&w.service, "What if").await.is_none());
    h.press("esc n");
    assert!(
        h.render(100, 30)
            .contains("New timeline (branches from Primary)")
    );
    // With a branch selected, the title says n does not branch that one.
    w.service
        .create_timeline(named("Tesla 1889"))
        .await
        .unwrap();
    h.press("esc");
    h.send(Msg::Tick);
    h.settle().await;
    h.press("j n");
    // Said whole at 80 columns too, under the fields.
    for width in [120, 80] {
        let screen = h.render(width, 30);
        let text = modal_text(&screen, "New timeline (branches from Primary)");
        assert!(
            text.contains("Not from Tesla 1889: p branches that one."),
            "{screen}"
        );
    }
}

#[tokio::test]
async fn the_selected_timeline_shows_its_description_and_variation() {
    let w = world().await;
    w.service
        .create_timeline(NewTimeline {
            description: Some("A study".into()),
            variation: Some("Tesla stays in Paris".into()),
            base_timeline_id: Some(TimelineId::primary()),
            ..named("What if")
        })
        .await
        .unwrap();
    let mut h = harness(&w).await;
    h.press("j");
    let screen = h.render(140, 30);
    assert!(
        screen.contains("What if: A study · variation: Tesla stays in Paris"),
        "{screen}"
    );
}

#[tokio::test]
async fn a_check_tells_paradoxes_already_there_from_new_ones() {
    let w = world().await;
    sell_souvenirs_before_the_tower(&w.service).await;
    let mut h = harness(&w).await;
    submit(&mut h, "c", &["Harmless picnic", "1900-01-01"]).await;
    let screen = h.render(120, 30);
    assert!(
        screen.contains("The change adds no paradox; Primary already has 1 standing"),
        "{screen}"
    );
    assert!(!screen.contains("would become unstable"), "{screen}");
}

/// Makes a paradox in `primary` through `service` (not through the dashboard): an event dated
/// before its own cause.
async fn paradox_elsewhere(service: &Arc<dyn TimelineService>) -> EventId {
    let event = |description: &str, time: &str, causes: Vec<EventId>| NewEvent {
        description: description.into(),
        time: t(time),
        location: "Turin".into(),
        causes,
        fixed_point: false,
        safety_check: false,
    };
    let primary = TimelineId::primary();
    let treaty = service
        .add_event(&primary, event("Treaty", "1860-06-01T12:00:00Z", vec![]))
        .await
        .unwrap();
    service
        .add_event(
            &primary,
            event(
                "Treaty celebrated early",
                "1855-06-01T12:00:00Z",
                vec![treaty.event_id],
            ),
        )
        .await
        .unwrap()
        .event_id
}

async fn a_change_made_elsewhere_is_pushed_to_the_monitor_without_a_tick(w: World) {
    let mut h = Harness::pushed(w.service.clone(), w.clock.clone());
    h.settle().await;
    h.until("live stream", |app| app.follower.is_live()).await;
    h.until("first snapshot", |app| app.panes.monitor.status.is_some())
        .await;
    assert!(h.app.panes.monitor.rows.is_empty());
    let screen = h.render(140, 30);
    assert!(
        screen.lines().next().unwrap().contains("↯ live"),
        "{screen}"
    );

    // A search of where the paradox will be, so its rows can say so.
    h.press("tab /");
    h.type_text("turin");
    h.press("enter esc");
    h.settle().await;

    // No tick is sent from here on: only the push can bring the change.
    let early = paradox_elsewhere(&w.service).await;
    h.until("the pushed anomaly", |app| {
        app.panes.monitor.rows.len() == 1
    })
    .await;
    let row = &h.app.panes.monitor.rows[0];
    assert!(
        row.anomaly.subjects.contains(&early.to_string()),
        "{:?}",
        row.anomaly
    );
    assert!(
        h.app.panes.monitor.is_new(row),
        "a pushed anomaly is marked new"
    );
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("1 anomaly"), "{screen}");
    // The search was asked again, and its rows name the event in the paradox.
    let row = screen
        .lines()
        .find(|l| l.contains("Turin") && l.contains("Treaty celebrated early"))
        .unwrap_or_else(|| panic!("the new event is found: {screen}"));
    assert!(row.contains("⚠ in paradox"), "{row}");
    // Not polled while live, but the NEW mark still ages with the ticks.
    for _ in 0..3 {
        h.send(Msg::Tick);
    }
    h.settle().await;
    assert!(
        !h.app.panes.monitor.is_new(&h.app.panes.monitor.rows[0]),
        "NEW ages"
    );
    assert_eq!(h.app.panes.monitor.rows.len(), 1, "and the anomaly stays");
}

#[tokio::test]
async fn without_a_stream_the_monitor_is_polled_and_the_header_says_so() {
    let (mut h, service) = stream_failing("this server has no stream").await;
    h.settle().await;
    h.until("the fallback", |app| {
        matches!(app.follower.link, chronoscope::tui::live::Link::Polling(_))
    })
    .await;
    let screen = h.render(140, 30);
    let header = screen.lines().next().unwrap();
    assert!(
        header.contains("⟳ polling (this server has no stream)"),
        "{header}"
    );
    h.settle().await; // the poll that stands in for the stream's first snapshot

    paradox_elsewhere(&service).await;
    h.settle().await;
    assert!(
        h.app.panes.monitor.rows.is_empty(),
        "not pushed, not yet polled"
    );
    h.send(Msg::Tick);
    h.settle().await;
    assert_eq!(h.app.panes.monitor.rows.len(), 1, "the tick polls");
}

#[tokio::test]
async fn v_draws_the_selected_timeline_along_time_with_its_anomalies_and_zooms() {
    let w = world().await;
    let early = paradox_elsewhere(&w.service).await;
    let mut h = harness(&w).await;
    assert_eq!(
        h.app.panes.monitor.rows.len(),
        1,
        "the monitor has the paradox"
    );
    h.press("v");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("Timeline of Primary"), "{screen}");
    assert!(screen.contains("(fit)"), "it opens fitted: {screen}");
    for mark in "● on schedule|▲ manipulated|◆ fixed point|⚠ anomaly".split('|') {
        assert!(screen.contains(mark), "the legend names {mark}: {screen}");
    }
    let lane = screen
        .lines()
        .find(|l| l.contains("anomalies"))
        .unwrap_or_else(|| panic!("an anomalies lane: {screen}"));
    assert!(lane.contains('⚠'), "the paradox is marked: {lane}");
    // The event the anomaly is about is among those drawn.
    assert!(
        h.app.panes.monitor.rows[0]
            .anomaly
            .subjects
            .contains(&early.to_string())
    );
    // The footer names the picture's keys.
    assert!(screen.contains("zoom in"), "{screen}");

    let title = |s: &str| s.lines().nth(1).unwrap_or_default().to_owned();
    let fitted = title(&screen);
    h.press("+");
    let zoomed = title(&h.render(140, 30));
    assert_ne!(zoomed, fitted, "zooming changes the span shown");
    assert!(!zoomed.contains("(fit)"), "{zoomed}");
    h.press("0");
    assert!(title(&h.render(140, 30)).contains("(fit)"));
    // Panning far past the calendar's end stays at its end, without a panic.
    for _ in 0..200 {
        h.press("- ]");
    }
    let end = h.render(140, 30);
    assert!(title(&end).contains("9999"), "{}", title(&end));

    h.press("esc");
    assert!(h.app.modal.is_none());
    assert!(!h.render(140, 30).contains("Timeline of Primary"));
}

#[tokio::test]
async fn enter_on_an_anomaly_shows_it_whole() {
    let w = world().await;
    paradox_elsewhere(&w.service).await;
    let mut h = harness(&w).await;
    // The monitor is the third pane.
    h.press("tab tab");
    assert_eq!(h.app.panes.focus, PaneId::Monitor);
    h.press("enter");
    let screen = h.render(80, 30);
    let anomaly = &h.app.panes.monitor.rows[0].anomaly;
    // The whole description is there (wrapped), not cut at the pane's edge.
    let joined: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    let words: Vec<&str> = anomaly.description.split_whitespace().collect();
    let last = words.last().unwrap();
    assert!(
        joined.contains(last),
        "the end of the description shows: {screen}"
    );
    assert!(screen.contains(anomaly.anomaly_id.as_str()), "{screen}");
    h.press("esc");
    assert!(h.app.modal.is_none());
}

#[tokio::test]
async fn a_call_that_panics_ends_as_an_error_and_frees_its_slot() {
    let mut h = embedded().await;
    h.app.spawn_panicking_call();
    h.settle().await;
    assert!(!h.app.busy(), "nothing is left pending");
    let screen = h.render(120, 30);
    assert!(
        screen.contains("Internal error: the call failed unexpectedly"),
        "{screen}"
    );
}

#[tokio::test]
async fn a_selection_change_scans_once_through_the_followed_stream() {
    let w = world().await;
    w.service.create_timeline(named("Second")).await.unwrap();
    let mut h = Harness::pushed(w.service.clone(), w.clock.clone());
    h.settle().await;
    h.until("live stream", |app| app.follower.is_live()).await;
    h.until("first snapshot", |app| app.panes.monitor.status.is_some())
        .await;
    let before = h.app.panes.monitor.timeline.clone();
    h.press("j");
    assert_ne!(
        h.app.panes.monitor.timeline, before,
        "another timeline is watched"
    );
    assert!(
        !h.app.pending(Slot::Monitor),
        "no poll on top of the stream"
    );
    h.until("the new timeline's snapshot", |app| {
        app.follower.is_live() && app.panes.monitor.status.is_some()
    })
    .await;
    assert!(!h.app.pending(Slot::Monitor), "the stream brought it");
}

#[tokio::test]
async fn a_timeline_deleted_elsewhere_is_said_by_name_and_the_search_moves_on() {
    let w = world().await;
    let doomed = w.service.create_timeline(named("Doomed")).await.unwrap().id;
    let mut h = harness(&w).await;
    h.press("j");
    h.settle().await;
    assert_eq!(
        h.app.panes.timelines.selected().map(|t| t.id.clone()),
        Some(doomed.clone())
    );
    h.press("tab /");
    h.press("enter esc");
    h.settle().await;
    assert_eq!(
        h.app.panes.search.timeline,
        Some(doomed.clone()),
        "searching it"
    );

    // Another process deletes it; the next tick finds out.
    let elsewhere = w.service.clone();
    elsewhere.delete_timeline(&doomed).await.unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("Timeline 'Doomed' was deleted."),
        "{screen}"
    );
    assert!(!screen.contains("Unknown reference"), "{screen}");
    assert_eq!(
        h.app.panes.search.timeline,
        h.app.panes.timelines.selected().map(|t| t.id.clone()),
        "the search moved to the timeline selected now"
    );
    assert_ne!(h.app.panes.search.timeline, Some(doomed));
    assert!(h.app.panes.search.searched, "and shows its events");
}

#[tokio::test]
async fn the_picture_of_a_timeline_deleted_elsewhere_closes_and_says_so() {
    let w = world().await;
    let doomed = w.service.create_timeline(named("Doomed")).await.unwrap().id;
    let mut h = harness(&w).await;
    h.press("j v");
    h.settle().await;
    assert!(h.render(140, 30).contains("Timeline of Doomed"));

    w.service.delete_timeline(&doomed).await.unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(h.app.modal.is_none(), "{screen}");
    assert!(!screen.contains("Timeline of Doomed"), "{screen}");
    assert!(
        screen.contains("Timeline 'Doomed' was deleted."),
        "{screen}"
    );
    assert!(!screen.contains("Unknown reference"), "{screen}");
}

// ---------------------------------------------------------------- time controls and anchors

/// The first line of a frame at `width` x 30: the header.
fn header(h: &mut Harness, width: u16) -> String {
    h.render(width, 30)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A tick `minutes` of the clock later, its answers applied.
async fn later(h: &mut Harness, w: &World, minutes: i64) {
    w.clock.advance(chrono::Duration::minutes(minutes));
    h.send(Msg::Tick);
    h.settle().await;
}

async fn pausing_stops_your_clock_and_the_header_says_so(w: World) {
    let mut h = harness(&w).await;
    assert!(header(&mut h, 140).contains("ada @ Primary 2026-11-22 10:00:00"));
    assert!(!header(&mut h, 140).contains("paused"));
    h.press("space");
    h.settle().await;
    let top = header(&mut h, 140);
    assert!(
        top.contains("ada @ Primary 2026-11-22 10:00:00 ⏸ paused"),
        "{top}"
    );
    let flash = h.app.flash.clone().expect("a flash says what happened");
    assert!(
        flash
            .text
            .contains("Your clock is paused at 2026-11-22 10:00:00"),
        "{}",
        flash.text
    );
    assert!(w.service.whoami().await.unwrap().position.paused);

    // Time stands still for you while the world's clock runs.
    later(&mut h, &w, 10).await;
    let top = header(&mut h, 80);
    assert!(top.contains("10:00:00 ⏸ paused"), "narrow too: {top}");
    assert!(top.contains("10:10:00"), "the refresh time runs on: {top}");

    // Resumed, it runs on from where it stood, not from the world's time.
    h.press("space");
    h.settle().await;
    assert!(!header(&mut h, 140).contains("paused"));
    later(&mut h, &w, 5).await;
    let top = header(&mut h, 140);
    assert!(top.contains("ada @ Primary 2026-11-22 10:05:00"), "{top}");
    assert_eq!(
        w.service.whoami().await.unwrap().time,
        t("2026-11-22T10:05:00Z")
    );
}

async fn fast_forward_and_rewind_by_a_preset_and_a_typed_duration(w: World) {
    let mut h = harness(&w).await;
    h.press(">");
    let screen = h.render(100, 30);
    assert!(screen.contains("Fast-forward your own clock"), "{screen}");
    assert!(
        screen.contains("[10 minutes]"),
        "the first preset: {screen}"
    );
    h.press("down enter"); // 1 hour
    h.settle().await;
    assert!(h.app.modal.is_none(), "made: the dialog closes");
    assert_eq!(
        w.service.whoami().await.unwrap().time,
        t("2026-11-22T11:00:00Z")
    );
    assert!(header(&mut h, 140).contains("2026-11-22 11:00:00"));
    let flash = h.app.flash.clone().expect("a flash");
    assert!(
        flash
            .text
            .contains("Fast-forwarded 1 hour: you are in Primary at 2026-11-22 11:00:00."),
        "{}",
        flash.text
    );

    h.press("<");
    h.type_text("1h30m");
    assert!(
        h.render(100, 30)
            .contains("Rewind by 1h30m → 2026-11-22 09:30:00")
    );
    h.press("enter");
    h.settle().await;
    assert_eq!(
        w.service.whoami().await.unwrap().time,
        t("2026-11-22T09:30:00Z")
    );

    // A duration that does not parse is explained, and nothing moves.
    let journeys = w
        .service
        .list_journeys(PageRequest::first(100))
        .await
        .unwrap()
        .items
        .len();
    h.press(">");
    h.type_text("3 parsecs");
    h.press("enter");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(
        screen.contains("'3 parsecs' is not a duration"),
        "a readable reason: {screen}"
    );
    assert!(
        matches!(h.app.modal, Some(Modal::Shift(_))),
        "it stays open"
    );
    // One the service refuses (before the year 1) keeps the dialog, with its reason.
    h.press("ctrl-u tab");
    h.type_text("P3000Y");
    h.press("enter");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("outside the accepted range"), "{screen}");
    assert!(matches!(h.app.modal, Some(Modal::Shift(_))));
    h.press("esc");
    assert_eq!(
        w.service.whoami().await.unwrap().time,
        t("2026-11-22T09:30:00Z")
    );
    let after = w
        .service
        .list_journeys(PageRequest::first(100))
        .await
        .unwrap();
    assert_eq!(after.items.len(), journeys, "no journey was made");
}

async fn the_anchors_list_checks_adjusts_and_deletes_after_asking(w: World) {
    let mut h = harness(&w).await;
    submit(&mut h, "a", &["", "home"]).await;
    h.press("A");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("Your anchors (1)"), "{screen}");
    assert!(screen.contains("● stable"), "{screen}");
    assert!(screen.contains("home"), "{screen}");
    assert!(
        screen.contains("a return would be accepted and would add no paradox"),
        "{screen}"
    );

    // Adjust what it records; a list that is not key=value is refused where it was typed.
    h.press("e");
    h.type_text("temperature");
    h.press("enter");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("'temperature' is not key=value"),
        "{screen}"
    );
    h.press("ctrl-u");
    h.type_text("temperature=21, sealed=true, note=dusty");
    h.press("enter");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("environment note=dusty, sealed=true, temperature=21"),
        "the list shows it, by key: {screen}"
    );
    assert!(
        matches!(&h.app.modal, Some(Modal::Anchors(l)) if l.form.is_none()),
        "the form closed back onto the list"
    );
    let anchors = w
        .service
        .find_anchors(Default::default())
        .await
        .unwrap()
        .items;
    let environment = anchors[0].details.environment.clone().unwrap_or_default();
    assert_eq!(environment.get("temperature"), Some(&serde_json::json!(21)));
    assert_eq!(environment.get("sealed"), Some(&serde_json::json!(true)));

    // Enter goes back there through the return wizard, on this anchor.
    submit(&mut h, "esc a ctrl-u", &["1889-03-10 23:50", "Tesla's lab"]).await;
    h.press("A");
    h.settle().await;
    h.press("g enter");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("Return to an anchor"), "{screen}");
    assert!(
        screen.contains("▶ anchor    home"),
        "the anchor chosen: {screen}"
    );
    h.press("esc A");
    h.settle().await;
    assert!(h.render(140, 30).contains("Your anchors (2)"));

    // Delete asks first; n keeps it.
    h.press("d");
    let screen = h.render(140, 30);
    assert!(screen.contains("Delete anchor 'home'"), "{screen}");
    h.press("n");
    h.settle().await;
    assert_eq!(
        w.service
            .find_anchors(Default::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    assert!(h.render(140, 30).contains("Your anchors (2)"));
    h.press("d y");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("Your anchors (1)"), "{screen}");
    assert!(screen.contains("Deleted anchor 'home'"), "{screen}");
    let left = w
        .service
        .find_anchors(Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].description.as_deref(), Some("Tesla's lab"));
    h.press("esc");
    assert!(h.app.modal.is_none());
}

async fn the_wizard_travels_to_a_time_and_place(w: World) {
    let mut h = harness(&w).await;
    h.press("t");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Arrive at (UTC)"), "{screen}");
    assert!(screen.contains("empty: the present"), "{screen}");
    // A time that does not parse stays at the first step, with the reason.
    h.press("tab");
    h.type_text("next tuesday");
    h.press("enter");
    let screen = h.render(100, 30);
    assert!(screen.contains("✗ arrive at:"), "{screen}");
    assert!(
        matches!(&h.app.modal, Some(Modal::Wizard(w)) if w.step == Step::Destination),
        "it stays at the destination"
    );
    h.press("ctrl-u");
    h.type_text("1900-01-01 12:00");
    h.press("tab");
    h.type_text("Paris");
    h.press("enter enter");
    h.settle().await;
    h.press("enter");
    let screen = h.render(100, 30);
    assert!(
        screen.contains("to        timeline  Primary  → 1900-01-01 12:00:00"),
        "{screen}"
    );
    assert!(screen.contains("arrive in Primary, at Paris"), "{screen}");
    h.press("y");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(
        screen.contains("to        Primary at 1900-01-01 12:00:00, in Paris"),
        "{screen}"
    );
    let you = w.service.whoami().await.unwrap();
    assert_eq!(you.time, t("1900-01-01T12:00:00Z"));
    let journeys = w
        .service
        .list_journeys(PageRequest::first(100))
        .await
        .unwrap()
        .items;
    assert_eq!(
        journeys.last().and_then(|j| j.location.clone()).as_deref(),
        Some("Paris")
    );
    h.press("esc J");
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(
        screen.contains("travel in time, in Paris")
            && screen.contains("→ Primary 1900-01-01 12:00:00"),
        "the journeys say what and where: {screen}"
    );
    h.press("esc");

    // A place alone needs a time when the timeline arrives at the present.
    h.press("t");
    h.settle().await;
    h.press("tab tab");
    h.type_text("Rome");
    h.press("enter");
    assert!(
        h.render(100, 30).contains("a place needs a time too"),
        "{}",
        h.render(100, 30)
    );
}

async fn the_picture_shows_you_paused_and_space_resumes_there(w: World) {
    let mut h = harness(&w).await;
    h.press("space");
    h.settle().await;
    h.press("v");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("▼ you ⏸ paused") || screen.contains("you ⏸ paused ▼"),
        "{screen}"
    );
    assert!(
        screen.contains("┃ you (clock paused)"),
        "the legend: {screen}"
    );
    // The world's clock runs on; you stay where you stood.
    later(&mut h, &w, 30).await;
    let still = h.render(140, 30);
    assert!(still.contains("you (clock paused)"), "{still}");
    h.press("space");
    h.settle().await;
    assert!(
        matches!(h.app.modal, Some(Modal::Picture(_))),
        "the picture stays"
    );
    let screen = h.render(140, 30);
    assert!(!screen.contains("paused"), "{screen}");
    assert!(screen.contains("┃ you "), "{screen}");
}

// ---------------------------------------------------------------- diff and merge

/// A branch "Tesla stays" of primary: in it the Eiffel Tower opens a day later (incoming) and
/// souvenirs of the Great Exhibition are sold in 1890 (added); in primary the exhibition moved
/// to 1900 (kept), after the branch's souvenirs: bringing them over would put an effect before
/// its cause.
async fn branch_with_a_paradox_to_bring(service: &Arc<dyn TimelineService>) -> TimelineId {
    let eiffel = event_called(service, "Eiffel Tower opens").await;
    let exhibition = event_called(service, "Great Exhibition opens").await;
    let branch = service
        .create_timeline(named("Tesla stays"))
        .await
        .unwrap()
        .id;
    service
        .manipulate_event(manipulation(
            Some(&branch),
            &eiffel,
            retimed("1889-04-01T12:00:00Z"),
        ))
        .await
        .unwrap();
    service
        .add_event(
            &branch,
            new_event(
                "Exhibition souvenirs sold",
                "1890-01-01T12:00:00Z",
                "London",
                &[&exhibition],
            ),
        )
        .await
        .unwrap();
    service
        .manipulate_event(manipulation(
            None,
            &exhibition,
            retimed("1900-05-01T11:00:00Z"),
        ))
        .await
        .unwrap();
    branch
}

async fn primary_has(service: &Arc<dyn TimelineService>, description: &str) -> bool {
    all_events(service.as_ref())
        .await
        .iter()
        .any(|e| e.description == description)
}

async fn the_merge_wizard_shows_the_diff_and_merges_only_after_apply_anyway(w: World) {
    branch_with_a_paradox_to_bring(&w.service).await;
    let mut h = harness(&w).await;
    // The tree: Primary, └─ Tesla stays. The merge goes into its parent by default.
    h.press("j M");
    let screen = h.render(140, 30);
    assert!(screen.contains("▶ parent      Primary"), "{screen}");
    h.press("enter");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("1 incoming · 1 added · 1 kept · 0 convergent · 0 conflicts"),
        "{screen}"
    );
    let added = screen
        .lines()
        .find(|l| l.contains("+ added"))
        .unwrap_or_else(|| panic!("an added row:\n{screen}"));
    assert!(
        added.contains("Exhibition souvenirs sold") && added.contains("— (not there)"),
        "A beside B: {added}"
    );
    assert!(
        !screen.contains("Storming of the Bastille"),
        "unchanged lineages are left out:\n{screen}"
    );
    // Strategy, confirm: enter is no yes; y merges, checked, and the check refuses.
    h.press("enter enter enter");
    assert!(h.app.flash.as_ref().is_none_or(|f| !f.error));
    h.press("y");
    h.settle().await;
    let Some(Modal::Merge(wizard)) = &h.app.modal else {
        panic!("the wizard stays: {:?}", h.app.modal);
    };
    let why = &wizard.refused.as_ref().expect("asks: apply anyway?").why;
    assert!(why.contains("Exhibition souvenirs sold"), "{why}");
    assert!(h.render(140, 30).contains("Apply it anyway?"));
    assert!(!primary_has(&w.service, "Exhibition souvenirs sold").await);
    // n keeps it unmade, with the reason.
    h.press("n");
    assert!(h.render(140, 30).contains("Not merged."));
    assert!(!primary_has(&w.service, "Exhibition souvenirs sold").await);
    // y, then y again: applied without the check.
    h.press("y");
    h.settle().await;
    h.press("y");
    h.settle().await;
    assert!(primary_has(&w.service, "Exhibition souvenirs sold").await);
    let screen = h.render(140, 30);
    assert!(
        screen.contains("Merged Tesla stays into Primary."),
        "{screen}"
    );
    assert!(
        screen.contains("applied anyway: 1 paradox added"),
        "{screen}"
    );
    let flash = h.app.flash.clone().expect("a flash");
    assert!(
        flash
            .text
            .starts_with("Merged into Primary: 2 events written"),
        "{}",
        flash.text
    );
    h.press("enter");
    assert!(h.app.modal.is_none());
    // The tree was asked again: primary's paradox shows in it.
    let primary = h.app.panes.timelines.get(&TimelineId::primary()).unwrap();
    assert!(primary.paradoxes > 0);
}

async fn the_diff_view_shows_changed_lineages_side_by_side_or_stacked(w: World) {
    branch_with_a_paradox_to_bring(&w.service).await;
    let mut h = harness(&w).await;
    h.press("j D enter");
    h.settle().await;
    let wide = h.render(140, 30);
    let incoming = wide
        .lines()
        .find(|l| l.contains("→ incoming"))
        .unwrap_or_else(|| panic!("an incoming row:\n{wide}"));
    assert!(
        incoming.contains("1889-04-01 12:00 Eiffel")
            && incoming.contains("1889-03-31 12:00 Eiffel"),
        "A's and B's outcomes side by side: {incoming}"
    );
    assert!(
        wide.contains("base  1889-03-31 12:00 Eiffel Tower opens"),
        "{wide}"
    );
    let narrow = h.render(80, 30);
    let lines: Vec<&str> = narrow.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("→ incoming"))
        .unwrap_or_else(|| panic!("{narrow}"));
    assert!(
        lines[at + 1].contains("A 1889-04-01 12:00 Eiffel Tower opens"),
        "{narrow}"
    );
    assert!(
        lines[at + 2].contains("B 1889-03-31 12:00 Eiffel Tower opens"),
        "{narrow}"
    );
    // Tab swaps the sides: what A added, B lacks.
    h.press("tab");
    h.settle().await;
    let swapped = h.render(140, 30);
    assert!(
        swapped.contains("Diff Primary against Tesla stays"),
        "{swapped}"
    );
    assert!(swapped.contains("1 incoming"), "{swapped}");
    h.press("enter");
    assert!(h.app.modal.is_none(), "the diff alone closes on enter");
}

/// "Tesla stays", a branch of the primary timeline where the Bastille is stormed a day later
/// while the primary has it two days later: a merge of the two conflicts. Its id.
async fn conflicting_branch(service: &Arc<dyn TimelineService>) -> TimelineId {
    let bastille = event_called(service, "Storming of the Bastille").await;
    let branch = service
        .create_timeline(named("Tesla stays"))
        .await
        .unwrap()
        .id;
    for (timeline, time) in [
        (Some(&branch), "1789-07-15T15:00:00Z"),
        (None, "1789-07-16T15:00:00Z"),
    ] {
        service
            .manipulate_event(manipulation(timeline, &bastille, retimed(time)))
            .await
            .unwrap();
    }
    branch
}

async fn a_merge_left_for_review_is_marked_in_the_tree(w: World) {
    conflicting_branch(&w.service).await;
    let mut h = harness(&w).await;
    h.press("j M enter");
    h.settle().await;
    assert!(h.render(140, 30).contains("✗ conflict"));
    // manual_review is the default strategy.
    h.press("enter enter y");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("Waiting for review: 1 conflict to resolve"),
        "{screen}"
    );
    h.press("esc");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("Primary ⇄1"), "{screen}");
    assert!(screen.contains("Tesla stays ⇄1"), "{screen}");
    assert!(
        screen.contains("⇄ 1 merge from it waiting for review where it goes"),
        "the selected one, its source, says it: {screen}"
    );
    // Merging again is refused while it waits: the reason shows in the wizard.
    h.press("M enter");
    h.settle().await;
    h.press("enter enter y");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("waiting for review"), "{screen}");
    assert!(matches!(h.app.modal, Some(Modal::Merge(_))));
}

#[tokio::test]
async fn diff_and_merge_say_why_when_a_timeline_has_no_relative() {
    let mut h = embedded().await;
    h.press("D");
    assert!(h.app.modal.is_none());
    let flash = h.app.flash.clone().expect("a flash");
    assert!(
        flash.error && flash.text.contains("no parent and no branch"),
        "{}",
        flash.text
    );
    h.press("tab M");
    assert!(h.app.modal.is_none(), "M is the timelines pane's");
}

// ---------------------------------------------------------------- isolate, correct dissonance

async fn correct_dissonance_moves_the_selected_event_after_its_cause(w: World) {
    sell_souvenirs_before_the_tower(&w.service).await;
    let mut h = harness(&w).await;
    select_event(&mut h, "paris", "Eiffel souvenirs sold").await;
    h.press("C");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Correct dissonance"), "{screen}");
    // The question says where the event goes, and after which cause.
    for said in [
        "1790-01-01 12:00:00 to 1889-03-31 12:00:01, one second after its",
        "latest cause, Eiffel Tower opens (1889-03-31 12:00:00)?",
    ] {
        assert!(screen.contains(said), "{screen}");
    }
    h.press("n");
    assert!(h.app.modal.is_none(), "n asks nothing of the service");
    h.press("C y");
    h.settle().await;
    let flash = h.app.flash.clone().expect("a flash");
    assert_eq!(
        flash.text,
        "Aligned: 'Eiffel souvenirs sold' moved from 1790-01-01 12:00:00 to 1889-03-31 12:00:01."
    );
    let souvenirs = all_events(w.service.as_ref())
        .await
        .into_iter()
        .find(|e| e.description == "Eiffel souvenirs sold")
        .expect("the souvenirs");
    assert_eq!(souvenirs.time, t("1889-03-31T12:00:01Z"));
    // The search was asked again: the row shows the new time.
    assert!(h.render(100, 30).contains("1889-03-31 12:00:01"));
    // Once aligned, nothing more to do.
    h.press("C y");
    h.settle().await;
    let flash = h.app.flash.clone().expect("a flash");
    assert!(flash.text.starts_with("Nothing to align"), "{}", flash.text);
}

async fn isolating_an_event_contains_its_paradox(w: World) {
    sell_souvenirs_before_the_tower(&w.service).await;
    let mut h = harness(&w).await;
    select_event(&mut h, "paris", "Eiffel souvenirs sold").await;
    h.press("I");
    assert!(h.render(100, 30).contains("Isolate event"));
    h.press("y");
    h.settle().await;
    let flash = h.app.flash.clone().expect("a flash");
    assert!(
        flash.text.starts_with("Isolated 1 event (")
            && flash.text.ends_with("1 paradox contained."),
        "{}",
        flash.text
    );
    let report = w
        .service
        .check_stability(chronoscope::service::StabilityQuery {
            timeline_id: TimelineId::primary(),
            after_event_id: None,
        })
        .await
        .unwrap();
    assert!(report.paradoxes.is_empty(), "{:?}", report.paradoxes);
    // Isolated again: refused, saying how to lift the first one, without HTTP words.
    h.press("I y");
    h.settle().await;
    let flash = h.app.flash.clone().expect("a flash");
    assert!(
        flash
            .text
            .contains("lift that isolation first (`chronoscope events lift iso_"),
        "{}",
        flash.text
    );
    assert!(!flash.text.contains("/v1/"), "{}", flash.text);

    // F8: the timeline's isolations are listed, and one is lifted after asking.
    for _ in 0..4 {
        if h.app.panes.focus == PaneId::Timelines {
            break;
        }
        h.press("tab");
    }
    h.press("U");
    assert!(
        matches!(h.app.modal, Some(Modal::Isolations(_))),
        "{:?}",
        h.app.flash
    );
    for width in [80, 140] {
        let screen = h.render(width, 30);
        assert!(screen.contains("Isolations in Primary (1)"), "{screen}");
        assert!(screen.contains("▶ iso_"), "{screen}");
        assert!(
            screen.contains("x lift the selected one · esc close"),
            "{screen}"
        );
    }
    h.press("x");
    assert!(h.render(100, 30).contains("Lift an isolation"));
    h.press("y");
    h.settle().await;
    let flash = h.app.flash.clone().expect("a flash");
    assert!(flash.text.starts_with("Lifted iso_"), "{}", flash.text);
    assert!(h.render(100, 30).contains("Isolations in Primary (0)"));
    let report = w
        .service
        .check_stability(chronoscope::service::StabilityQuery {
            timeline_id: TimelineId::primary(),
            after_event_id: None,
        })
        .await
        .unwrap();
    assert!(!report.paradoxes.is_empty(), "checked again once lifted");
    // Nothing left to lift: U says so instead of opening an empty list.
    h.press("esc U");
    assert!(h.app.modal.is_none());
    let flash = h.app.flash.clone().expect("a flash");
    assert!(
        flash
            .text
            .starts_with("No isolation is in force on Primary"),
        "{}",
        flash.text
    );
}

async fn the_review_resolves_a_conflict_with_custom_merge_and_completes_the_merge(w: World) {
    conflicting_branch(&w.service).await;
    let mut h = harness(&w).await;
    // Left for review (manual_review), then r reviews its conflicts.
    h.press("j M enter");
    h.settle().await;
    h.press("enter enter y");
    h.settle().await;
    h.press("r");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("Conflicts waiting for review in Primary"),
        "{screen}"
    );
    assert!(screen.contains("· open"), "{screen}");
    assert!(
        screen.contains("A Storming of the Bastille at 1789-07-15"),
        "{screen}"
    );
    // c opens the manipulate form on A's outcome; esc closes it back onto the review.
    h.press("c");
    let Some(Modal::Merge(wizard)) = &h.app.modal else {
        panic!("the wizard: {:?}", h.app.modal);
    };
    let form = wizard.form.as_ref().expect("the Custom Merge form");
    assert_eq!(form.value(0), "Storming of the Bastille");
    h.press("esc");
    assert!(matches!(&h.app.modal, Some(Modal::Merge(w)) if w.form.is_none()));
    // A new outcome: the merge completes with it.
    h.press("c ctrl-u");
    h.type_text("Bastille stormed at noon");
    h.press("tab ctrl-u");
    h.type_text("1789-07-14 12:00");
    h.press("enter");
    h.settle().await;
    let flash = h.app.flash.clone().expect("a flash");
    assert!(flash.text.ends_with(" is complete."), "{}", flash.text);
    // F17: who completed the merge, and when, as the merge record keeps them.
    assert!(
        flash.text.contains("merge mrg_")
            && flash
                .text
                .contains(" completed by ada at 2026-11-22 10:00:00"),
        "{}",
        flash.text
    );
    let screen = h.render(140, 30);
    assert!(
        screen.contains("No conflict waits for review in Primary."),
        "{screen}"
    );
    assert!(
        screen.contains("the merge is complete, completed by ada at 2026-11-22 10:00:00"),
        "{screen}"
    );
    assert!(primary_has(&w.service, "Bastille stormed at noon").await);
    h.press("esc");
    let primary = h.app.panes.timelines.get(&TimelineId::primary()).unwrap();
    assert_eq!(primary.pending_merges, 0, "the mark goes with the merge");
}

/// An engine with three events in the primary timeline that ada may only read (root, an
/// operator, administers it); the operator's session, and ada's dashboard without the
/// operator's rights.
async fn read_only_primary() -> (chronoscope::engine::EngineSession, Harness) {
    use chronoscope::service::{Permissions, SetAccessControlRequest};
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = engine(clock.clone()).await;
    let root = engine.session("root".parse().unwrap());
    root.set_access_control(SetAccessControlRequest {
        timeline_id: TimelineId::primary(),
        permissions: Some(Permissions {
            admin: vec!["root".parse().unwrap()],
            write: vec![],
            read: vec!["ada".parse().unwrap()],
        }),
    })
    .await
    .unwrap();
    let ada: Arc<dyn TimelineService> =
        Arc::new(engine.session("ada".parse().unwrap()).with_admin(false));
    (root, dashboard(ada, clock).await)
}

/// The flash says `what`, as an error, and no call is on its way.
fn refused_unsent(h: &Harness, what: &str) {
    assert!(!h.app.busy(), "nothing is sent: {:?}", h.app);
    let flash = h.app.flash.clone().expect("the refusal is said");
    assert!(flash.error, "{}", flash.text);
    assert!(flash.text.contains(what), "{}", flash.text);
}

#[tokio::test]
async fn edits_on_a_read_only_timeline_are_refused_before_a_request_is_sent() {
    let (root, mut h) = read_only_primary().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Primary ro"), "marked read-only\n{screen}");
    assert!(
        screen.contains("ro: you may read it, not write it"),
        "{screen}"
    );
    h.press("e");
    assert!(h.app.modal.is_none(), "no form to fill in for nothing");
    refused_unsent(
        &h,
        "You may read Primary (primary) but not write it: ask its admins.",
    );
    search(&mut h, "paris").await;
    for key in ["m", "r", "I", "C"] {
        h.app.flash = None;
        h.press(key);
        assert!(h.app.modal.is_none(), "{key} opens nothing");
        refused_unsent(&h, "but not write it: ask its admins");
    }
    assert_eq!(all_events(&root).await.len(), 3, "nothing was written");
}

#[tokio::test]
async fn a_refusal_from_the_service_stays_under_the_form_readably() {
    use chronoscope::service::{Permissions, SetAccessControlRequest};
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = engine(clock.clone()).await;
    let ada: Arc<dyn TimelineService> =
        Arc::new(engine.session("ada".parse().unwrap()).with_admin(false));
    let mut h = dashboard(ada, clock).await;
    // The list changes after the dashboard read the rights: only the service knows.
    let root = engine.session("root".parse().unwrap());
    root.set_access_control(SetAccessControlRequest {
        timeline_id: TimelineId::primary(),
        permissions: Some(Permissions {
            admin: vec!["root".parse().unwrap()],
            write: vec![],
            read: vec!["ada".parse().unwrap()],
        }),
    })
    .await
    .unwrap();
    submit(&mut h, "e", &["Moon landing", "", "Sea of Tranquility"]).await;
    let Some(Modal::Form(form)) = &h.app.modal else {
        panic!("the form stays: {:?}", h.app.modal)
    };
    let why = form.refusal.clone().unwrap_or_default();
    assert!(why.starts_with("Access denied: "), "{why}");
    assert!(why.contains("write"), "{why}");
    assert!(h.render(100, 30).contains("Access denied"));
    // The next refresh brings the rights: the timeline is marked, and the dashboard says no
    // before sending.
    h.press("esc");
    h.send(Msg::Tick);
    h.settle().await;
    assert!(h.render(100, 30).contains("Primary ro"));
}

#[tokio::test]
async fn a_restricted_traveller_is_told_why_before_anything_is_sent() {
    use chronoscope::service::{RestrictRequest, RestrictionLevel};
    let (root, mut h) = read_only_primary().await;
    root.restrict_time_travel(RestrictRequest {
        user_id: "ada".parse().unwrap(),
        restriction_level: RestrictionLevel::ReadOnly,
    })
    .await
    .unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    assert!(header(&mut h, 140).contains("ada (restricted: read_only) @ Primary"));
    // read_only allows no journey either: travel, return, anchors and the clock are refused
    // before the wizard runs its checks, and left out of the footer.
    for key in ["e", "n", "p", "t", "b", "a", "i", ">", "<", "space"] {
        h.app.flash = None;
        h.press(key);
        assert!(h.app.modal.is_none(), "{key} opens nothing");
        refused_unsent(
            &h,
            "Travel restricted: an operator restricted you to read_only",
        );
    }
    let footer = last_lines(&h.render(140, 30), 1);
    for hint in ["t travel", "b return", "a anchor", "space pause"] {
        assert!(!footer.contains(hint), "{hint}: {footer}");
    }
    // limited_access keeps returns home, your anchors, items and clock; not other journeys.
    root.restrict_time_travel(RestrictRequest {
        user_id: "ada".parse().unwrap(),
        restriction_level: RestrictionLevel::LimitedAccess,
    })
    .await
    .unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    for (key, opens) in [("t", false), (">", false), ("b", true), ("a", true)] {
        h.app.flash = None;
        h.press(key);
        assert_eq!(h.app.modal.is_some(), opens, "{key}: {:?}", h.app.flash);
        h.press("esc");
        h.settle().await;
    }
    // The restrictions are an operator's screen: said, not opened.
    h.press("R");
    assert!(h.app.modal.is_none());
    refused_unsent(&h, "for operators");
}

#[tokio::test]
async fn an_operator_edits_access_lists_and_restrictions_and_checks_integrity() {
    let w = world().await;
    let mut h = harness(&w).await;
    // ada (the embedded engine's operator) makes a first list on the primary timeline.
    h.press("S");
    h.settle().await;
    assert!(h.render(100, 30).contains("No access-control list"));
    submit(&mut h, "a", &["bob"]).await;
    let view = w
        .service
        .access_control(&TimelineId::primary())
        .await
        .unwrap();
    let acl = view.access_control.expect("a list now");
    assert_eq!(acl.permissions.read, vec!["bob".parse().unwrap()]);
    let screen = h.render(100, 30);
    assert!(screen.contains("read    bob"), "{screen}");
    assert!(!matches!(h.app.modal, Some(Modal::Form(_))));
    // Taking bob off asks first; the list is then empty, and removing it leaves none.
    h.press("x n");
    h.settle().await;
    assert!(
        !w.service
            .access_control(&TimelineId::primary())
            .await
            .unwrap()
            .access_control
            .unwrap()
            .permissions
            .read
            .is_empty()
    );
    h.press("x y");
    h.settle().await;
    assert!(
        w.service
            .access_control(&TimelineId::primary())
            .await
            .unwrap()
            .access_control
            .unwrap()
            .permissions
            .read
            .is_empty()
    );
    h.press("D y");
    h.settle().await;
    assert!(
        w.service
            .access_control(&TimelineId::primary())
            .await
            .unwrap()
            .access_control
            .is_none()
    );
    let flash = h.app.flash.clone().expect("said");
    assert!(
        flash.text.contains("has no access-control list now"),
        "{}",
        flash.text
    );
    // The restrictions: eve restricted, then lifted.
    h.press("esc R");
    h.settle().await;
    submit(&mut h, "n", &["eve"]).await;
    let screen = h.render(100, 30);
    assert!(
        screen.contains("eve") && screen.contains("read_only"),
        "{screen}"
    );
    h.press("x y");
    h.settle().await;
    assert!(h.render(100, 30).contains("Nobody is restricted"));
    // The integrity check runs a recent scan as it opens.
    h.press("esc T");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("✓ intact"), "{screen}");
}

/// The dashboard of `name`, a traveller who is not an operator, on `engine`.
async fn member(engine: &Arc<Engine>, clock: Arc<ManualClock>, name: &str) -> Harness {
    let session = engine.session(name.parse().unwrap()).with_admin(false);
    dashboard(Arc::new(session), clock).await
}

#[tokio::test]
async fn the_creator_of_a_timeline_makes_its_first_list_and_stays_its_admin() {
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = engine(clock.clone()).await;
    let mut h = member(&engine, clock.clone(), "bob").await;
    submit(&mut h, "n", &["Bob lab"]).await;
    let lab = h
        .app
        .panes
        .timelines
        .selected()
        .expect("selected")
        .id
        .clone();
    h.press("S");
    h.settle().await;
    let screen = h.render(100, 30);
    assert!(screen.contains("Your right: admin"), "{screen}");
    assert!(screen.contains("you stay its admin"), "{screen}");
    submit(&mut h, "a", &["tom"]).await;
    let root = engine.session("root".parse().unwrap());
    let acl = root
        .access_control(&lab)
        .await
        .unwrap()
        .access_control
        .expect("the first list is made");
    assert_eq!(acl.permissions.admin, vec!["bob".parse().unwrap()]);
    assert_eq!(acl.permissions.read, vec!["tom".parse().unwrap()]);
    let screen = h.render(100, 30);
    assert!(!screen.contains("ask its admins"), "{screen}");
    assert!(screen.contains("read    tom"), "{screen}");

    // tom branches it: the branch's list is the lab's, copied, and says so (B7) rather than
    // "set by tom", who set nothing.
    let tom = engine.session("tom".parse().unwrap()).with_admin(false);
    let branch = tom
        .create_timeline(NewTimeline {
            base_timeline_id: Some(lab.clone()),
            ..named("Tom's branch")
        })
        .await
        .unwrap();
    let mut h = member(&engine, clock.clone(), "tom").await;
    h.app.panes.timelines.select(&branch.id);
    h.press("S");
    h.settle().await;
    for width in [80, 140] {
        let screen = h.render(width, 30);
        let unboxed = screen.replace(['║', '│'], " ");
        let words = unboxed.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("List copied from Bob lab when tom branched it"),
            "{screen}"
        );
        assert!(!words.contains("set by tom"), "{screen}");
    }
}

/// N18: Primary has no creator, so while it has no list only operators administer it; its
/// access screen said "its creator acting as its admin" all the same, and "Its creator or an
/// operator may make one". A timeline with a creator names them.
#[tokio::test]
async fn a_timeline_without_a_creator_says_only_operators_administer_it() {
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = engine(clock.clone()).await;
    let mut h = member(&engine, clock.clone(), "bob").await;
    // The words on screen, without the frames of the panes around the screen (box drawing).
    let words = |h: &mut Harness, width: u16| {
        let screen = h.render(width, 30);
        let unboxed: String = screen
            .chars()
            .map(|c| {
                if ('\u{2500}'..='\u{257f}').contains(&c) {
                    ' '
                } else {
                    c
                }
            })
            .collect();
        unboxed.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    h.app.panes.timelines.select(&TimelineId::primary());
    h.press("S");
    h.settle().await;
    for width in [80, 140] {
        let said = words(&mut h, width);
        assert!(
            said.contains("only operators administer it (it has no creator)"),
            "{said}"
        );
        assert!(said.contains("An operator may make one."), "{said}");
        assert!(!said.contains("its creator acting"), "{said}");
    }
    h.press("esc");
    h.settle().await;

    submit(&mut h, "n", &["Bob lab"]).await;
    h.press("S");
    h.settle().await;
    let said = words(&mut h, 140);
    assert!(
        said.contains("bob, its creator, acting as its admin"),
        "{said}"
    );
}

#[tokio::test]
async fn a_read_only_token_is_marked_and_every_change_is_refused_before_anything_is_sent() {
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = engine(clock.clone()).await;
    let tom = chronoscope::server::Sessions::session(
        &engine,
        "tom".parse().unwrap(),
        None,
        &chronoscope::auth::Scopes::parse("read"),
    );
    let mut h = dashboard(tom, clock).await;
    assert!(header(&mut h, 140).contains("tom (read-only token) @ Primary"));
    let narrow = header(&mut h, 80);
    assert!(
        narrow.contains("tom ro @") || narrow.contains("tom (read-only token) @"),
        "{narrow}"
    );
    // The footer offers no key that would only be refused.
    let screen = h.render(140, 30);
    let footer = screen.lines().last().unwrap_or_default();
    assert!(
        !footer.contains("n new")
            && !footer.contains("d delete")
            && !footer.contains("c check")
            && footer.contains("help"),
        "{footer}"
    );
    let refused = "Your token only allows reading: ask whoever issues your tokens for one with \
                   the write scope.";
    for key in [
        "n", "p", "e", "a", "t", "b", "i", "space", ">", "<", "d", "M", "r",
    ] {
        h.app.flash = None;
        h.press(key);
        assert!(h.app.modal.is_none(), "{key} opens nothing");
        refused_unsent(&h, refused);
    }
    // A paradox check writes nothing, but needs the write scope: refused too, saying so.
    h.app.flash = None;
    h.press("c");
    assert!(h.app.modal.is_none(), "c opens nothing");
    refused_unsent(&h, "a paradox check needs the write scope too");
    search(&mut h, "paris").await;
    for key in ["m", "r", "I", "C"] {
        h.app.flash = None;
        h.press(key);
        assert!(h.app.modal.is_none(), "{key} opens nothing");
        refused_unsent(&h, refused);
    }
    // The access screen: the right capped by the token, and why.
    h.press("esc esc S");
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(
        screen.contains("Your right: read (your token allows reading only)"),
        "{screen}"
    );
    h.press("a");
    let screen = h.render(120, 30);
    assert!(
        screen.contains("Your token only allows reading"),
        "{screen}"
    );
}

#[tokio::test]
async fn a_traveller_restricted_to_no_access_is_told_nothing_is_updated_until_it_is_lifted() {
    use chronoscope::service::{RestrictRequest, RestrictionLevel};
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = engine(clock.clone()).await;
    let mut h = member(&engine, clock.clone(), "tom").await;
    let root = engine.session("root".parse().unwrap());
    let restrict = |level| RestrictRequest {
        user_id: "tom".parse().unwrap(),
        restriction_level: level,
    };
    root.restrict_time_travel(restrict(RestrictionLevel::NoAccess))
        .await
        .unwrap();
    clock.advance(chrono::Duration::seconds(5));
    h.send(Msg::Tick);
    h.settle().await;
    assert!(matches!(h.app.connection, Connection::Restricted(_)));
    for width in [80, 140] {
        let screen = h.render(width, 30);
        let head = screen.lines().next().unwrap_or_default();
        assert!(head.contains("✗ restricted"), "{screen}");
        assert!(!head.contains("connected"), "{screen}");
        assert!(
            !head.contains("refreshed") && !head.contains("as of"),
            "{screen}"
        );
        let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("An operator (root) restricted you to no_access"),
            "the banner says who and what: {screen}"
        );
        assert!(words.contains("Nothing on screen is updated"), "{screen}");
        // The panes say it too: no "Stable" from a scan that can no longer come.
        assert!(!words.contains("Stable: no anomalies"), "{screen}");
        assert!(
            screen.contains("No anomalies at the last scan;"),
            "{screen}"
        );
        assert!(screen.contains("Monitor 0 open · not updated"), "{screen}");
        assert!(!screen.contains("Monitor stable"), "{screen}");
        assert!(
            screen
                .lines()
                .any(|l| l.contains("Timelines") && l.contains("not updated")),
            "the list's title says it is as it was: {screen}"
        );
    }
    // Screens that would only open on a refused read say why instead, before asking.
    for key in ["c", "J", "v", "A", "D", "U"] {
        h.app.flash = None;
        h.press(key);
        assert!(h.app.modal.is_none(), "{key} opens nothing");
        refused_unsent(&h, "restricted you to no_access");
    }
    h.app.flash = None;
    // Every tick's refused reads are not repeated in the footer: the banner says it.
    h.send(Msg::Tick);
    h.settle().await;
    assert!(
        h.app.flash.as_ref().is_none_or(|f| !f.error),
        "{:?}",
        h.app.flash
    );

    root.restrict_time_travel(restrict(RestrictionLevel::Unrestricted))
        .await
        .unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    assert_eq!(h.app.connection, Connection::Connected);
    let flash = h.app.flash.clone().expect("said");
    assert!(
        flash.text.contains("restriction was lifted"),
        "{}",
        flash.text
    );
    assert!(header(&mut h, 140).contains("refreshed"));
}

async fn r_reviews_a_waiting_merge_on_its_destination_and_in_the_diff(w: World) {
    use chronoscope::service::{MergeRequest, MergeStrategy};
    let branch = conflicting_branch(&w.service).await;
    let mut h = harness(&w).await;
    // Nothing waits yet: r says so, and the diff does not offer it.
    h.press("r");
    assert!(h.app.modal.is_none());
    let flash = h.app.flash.clone().expect("said");
    assert!(
        flash
            .text
            .contains("No merge into Primary waits for review"),
        "{}",
        flash.text
    );
    h.press("j D enter");
    h.settle().await;
    assert!(!h.render(140, 30).contains("r review pending"));
    h.press("r");
    assert!(
        h.render(140, 30)
            .contains("No merge into B waits for review.")
    );
    h.press("esc");
    w.service
        .merge_timelines(MergeRequest {
            source_timeline_id: branch,
            destination_timeline_id: TimelineId::primary(),
            conflict_resolution: MergeStrategy::ManualReview,
            safety_check: false,
        })
        .await
        .unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    // r on the destination, marked ⇄1, opens its review.
    h.press("k r");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("Review the merges waiting into Primary"),
        "{screen}"
    );
    assert!(screen.contains("a keep A · b keep B"), "{screen}");
    // The merge's source by its name, not its id.
    assert!(screen.contains("from Tesla stays: 1 open"), "{screen}");
    // Neither steps nor a diff it did not go through are offered.
    assert!(
        !screen.contains("2 Diff") && !screen.contains("⌫ diff"),
        "{screen}"
    );
    // And r in the diff of the source with it, as the hint says.
    h.press("esc j D enter");
    h.settle().await;
    assert!(h.render(140, 30).contains("r review pending"));
    h.press("r");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("6 Review"), "{screen}");
    assert!(screen.contains("a keep A · b keep B"), "{screen}");
}

#[tokio::test]
async fn the_access_screen_follows_a_list_set_elsewhere_and_offers_its_reload_key() {
    use chronoscope::service::{Permissions, SetAccessControlRequest};
    let w = world().await;
    let mut h = harness(&w).await;
    h.press("S");
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(screen.contains("No access-control list"), "{screen}");
    assert!(
        screen.contains("s reload"),
        "the admin's keys too: {screen}"
    );
    // Without a list there is nothing to remove: its keys are not offered.
    assert!(
        !screen.contains("x remove") && !screen.contains("D drop the list"),
        "{screen}"
    );
    w.service
        .set_access_control(SetAccessControlRequest {
            timeline_id: TimelineId::primary(),
            permissions: Some(Permissions {
                admin: vec!["ada".parse().unwrap()],
                write: vec![],
                read: vec!["carol".parse().unwrap()],
            }),
        })
        .await
        .unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(screen.contains("read    carol"), "{screen}");
    assert!(!screen.contains("No access-control list"), "{screen}");
    assert!(screen.contains("x remove · D drop the list"), "{screen}");
}

#[tokio::test]
async fn the_merge_wizard_marks_a_read_only_destination_and_refuses_it_at_its_first_step() {
    use chronoscope::service::{Permissions, SetAccessControlRequest};
    use chronoscope::tui::merge::MergeStep;
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = engine(clock.clone()).await;
    let root = engine.session("root".parse().unwrap());
    root.set_access_control(SetAccessControlRequest {
        timeline_id: TimelineId::primary(),
        permissions: Some(Permissions {
            admin: vec!["root".parse().unwrap()],
            write: vec![],
            read: vec!["bob".parse().unwrap()],
        }),
    })
    .await
    .unwrap();
    let bob = engine.session("bob".parse().unwrap()).with_admin(false);
    bob.create_timeline(named("Bob's branch")).await.unwrap();
    let mut h = member(&engine, clock, "bob").await;
    // The tree: Primary ro, └ Bob's branch. M on the branch offers its parent, marked.
    h.press("j");
    h.settle().await;
    h.press("M");
    let screen = h.render(120, 30);
    assert!(screen.contains("▶ parent      Primary ro"), "{screen}");
    // Enter refuses it there, in the wizard, before any diff is asked.
    h.press("enter");
    assert!(!h.app.busy(), "nothing is sent: {:?}", h.app);
    let Some(Modal::Merge(wizard)) = &h.app.modal else {
        panic!("the wizard stays open: {:?}", h.app.modal);
    };
    assert_eq!(wizard.step, MergeStep::Sides);
    let screen = h.render(120, 30);
    let inside = screen
        .lines()
        .find(|l| l.contains("You may read Primary (primary) but not write it"))
        .unwrap_or_else(|| panic!("the refusal is in the wizard:\n{screen}"));
    assert!(inside.contains('║'), "in the wizard's box: {inside}");
    // The diff alone still compares them.
    h.press("esc D enter");
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(
        screen.contains("Diff Bob's branch against Primary"),
        "{screen}"
    );
}

#[tokio::test]
async fn deleting_a_timeline_names_your_anchors_in_it_that_it_leaves_without_a_way_back() {
    use chronoscope::service::{NewAnchor, SwitchRequest};
    let w = world().await;
    let doomed = w.service.create_timeline(named("Doomed")).await.unwrap().id;
    w.service
        .switch_timeline(SwitchRequest {
            timeline_id: doomed.clone(),
        })
        .await
        .unwrap();
    let anchor = w
        .service
        .set_anchor(NewAnchor {
            timestamp: t("1900-01-01T10:00:00Z"),
            description: Some("in branch 2".into()),
        })
        .await
        .unwrap();
    w.service
        .switch_timeline(SwitchRequest {
            timeline_id: TimelineId::primary(),
        })
        .await
        .unwrap();
    let mut h = harness(&w).await;
    h.press("j d");
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(screen.contains("Delete timeline Doomed"), "{screen}");
    let question: String = screen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '║' || c == '│' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        question.contains("Your active anchor in it can no longer be returned to"),
        "{screen}"
    );
    assert!(question.contains("'in branch 2'"), "{screen}");
    assert!(question.contains(anchor.id.as_str()), "{screen}");
    h.press("n");

    // A timeline without your anchors is asked about as before.
    w.service.create_timeline(named("Empty")).await.unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    let row = h
        .app
        .panes
        .timelines
        .all
        .iter()
        .position(|t| t.name == "Empty");
    assert!(row.is_some());
    h.app
        .panes
        .timelines
        .select(&timeline_named(&w.service, "Empty").await.unwrap());
    h.press("d");
    h.settle().await;
    let screen = h.render(120, 30);
    assert!(screen.contains("Delete timeline Empty"), "{screen}");
    assert!(!screen.contains("can no longer be returned to"), "{screen}");
    h.press("n");

    // Once Doomed is deleted, the anchors list names it as it was, marked, not by a dead id.
    w.service.delete_timeline(&doomed).await.unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    h.press("A");
    h.settle().await;
    for (width, name) in [(80, "Doomed (de"), (140, "Doomed (deleted)")] {
        let screen = h.render(width, 30);
        let row = screen.lines().find(|l| l.contains("in branch 2"));
        assert!(row.is_some_and(|r| r.contains(name)), "{screen}");
    }
    // Its reason, under the list, names the timeline too, whole at 80 columns.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for _ in 0..5 {
        if modal_text(&h.render(80, 30), "Your anchors (1)").contains("its timeline 'Doomed'") {
            break;
        }
        h.press("j");
    }
    let screen = h.render(80, 30);
    let text = words(&modal_text(&screen, "Your anchors (1)"));
    assert!(
        text.contains(&format!("its timeline 'Doomed' ({doomed}) was deleted")),
        "{screen}"
    );
}

#[tokio::test]
async fn a_key_of_another_pane_says_where_it_works_and_l_goes_to_the_pane_on_the_right() {
    let mut h = embedded().await;
    assert_eq!(h.app.panes.focus, PaneId::Timelines);
    for key in ["I", "C", "m"] {
        h.app.flash = None;
        h.press(key);
        assert!(h.app.modal.is_none(), "{key} opens nothing here");
        let flash = h
            .app
            .flash
            .clone()
            .unwrap_or_else(|| panic!("{key} says why"));
        assert!(
            flash
                .text
                .contains("select an event in the search first (tab)"),
            "{key}: {}",
            flash.text
        );
    }
    h.press("tab");
    assert_eq!(h.app.panes.focus, PaneId::Search);
    for key in ["M", "D", "U"] {
        h.app.flash = None;
        h.press(key);
        assert!(h.app.modal.is_none(), "{key} opens nothing here");
        let flash = h
            .app
            .flash
            .clone()
            .unwrap_or_else(|| panic!("{key} says why"));
        // The key, what it does in brackets, then where ("U is to isolations of …: list,
        // lift: in the …" read as nonsense).
        assert!(
            flash.text.starts_with(&format!("{key} (")),
            "{key}: {}",
            flash.text
        );
        assert!(
            flash
                .text
                .ends_with("): in the timelines pane (esc goes there)."),
            "{key}: {}",
            flash.text
        );
    }
    // l and h move as the panes are laid out: the monitor is right of the timelines.
    h.press("esc");
    assert_eq!(h.app.panes.focus, PaneId::Timelines);
    h.press("l");
    assert_eq!(h.app.panes.focus, PaneId::Monitor);
    h.press("h");
    assert_eq!(h.app.panes.focus, PaneId::Timelines);
}

#[tokio::test]
async fn once_the_last_conflict_is_resolved_the_review_offers_only_the_ways_out() {
    let w = world().await;
    conflicting_branch(&w.service).await;
    let mut h = harness(&w).await;
    h.press("j M enter");
    h.settle().await;
    h.press("enter enter y");
    h.settle().await;
    h.press("r");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(screen.contains("a keep A · b keep B"), "{screen}");
    h.press("a");
    h.settle().await;
    let screen = h.render(140, 30);
    assert!(
        screen.contains("No conflict waits for review in Primary."),
        "{screen}"
    );
    assert!(!screen.contains("a keep A"), "{screen}");
    assert!(!screen.contains("↑↓ conflict"), "{screen}");
    assert!(screen.contains("esc close"), "{screen}");
}

#[tokio::test]
async fn the_fast_forward_presets_are_chosen_along_their_row() {
    let w = world().await;
    let mut h = harness(&w).await;
    h.press(">");
    let screen = h.render(100, 30);
    assert!(screen.contains("←→ preset"), "{screen}");
    assert!(!screen.contains("↑↓ preset"), "{screen}");
    h.press("right");
    assert!(h.render(100, 30).contains("[1 hour]"));
    h.press("right left");
    assert!(h.render(100, 30).contains("[1 hour]"));
    h.press("enter");
    h.settle().await;
    assert_eq!(
        w.service.whoami().await.unwrap().time,
        t("2026-11-22T11:00:00Z")
    );
}

#[tokio::test]
async fn a_limited_traveller_is_told_what_they_may_do_in_the_second_person() {
    use chronoscope::service::{RestrictRequest, RestrictionLevel};
    let (root, mut h) = read_only_primary().await;
    root.restrict_time_travel(RestrictRequest {
        user_id: "ada".parse().unwrap(),
        restriction_level: RestrictionLevel::LimitedAccess,
    })
    .await
    .unwrap();
    h.send(Msg::Tick);
    h.settle().await;
    h.press("n");
    refused_unsent(
        &h,
        "you may do reading, returning to your own anchors, pausing and resuming your clock, \
         and keeping your own anchors and items",
    );
    let flash = h.app.flash.clone().unwrap_or_else(|| panic!("a refusal"));
    assert!(!flash.text.contains("their"), "{}", flash.text);
}

#[tokio::test]
async fn at_80_columns_the_header_says_connected_live_and_refreshed_in_short_words() {
    let mut h = embedded().await;
    let head = header(&mut h, 80);
    assert!(head.contains("● online"), "{head}");
    assert!(head.contains("as of 10:00:00"), "{head}");
    assert!(head.contains("ada @ Primary 2026-11-22 10:00:00"), "{head}");
    // Wide, the long words.
    let head = header(&mut h, 140);
    assert!(head.contains("● connected"), "{head}");
    assert!(head.contains("refreshed 10:00:00"), "{head}");
    // The embedded dashboard's own traveller has a longer name: the program's name gives way
    // before the words do.
    let w = world().await;
    let service: Arc<dyn TimelineService> = Arc::new(
        engine(w.clock.clone())
            .await
            .session("traveller".parse().unwrap()),
    );
    // With the monitor's stream live, as the dashboard runs.
    let mut h = Harness::pushed(service, w.clock.clone());
    h.settle().await;
    h.until("the stream is live", |app| {
        matches!(app.follower.link, chronoscope::tui::live::Link::Live)
    })
    .await;
    let head = header(&mut h, 80);
    assert!(head.contains("● online ↯ live"), "{head}");
    assert!(head.contains("as of "), "{head}");
    assert!(
        head.contains("traveller @ Primary 2026-11-22 10:00:00"),
        "{head}"
    );
}

#[tokio::test]
async fn a_stream_that_cannot_reach_the_server_is_not_blamed_on_a_server_that_answers() {
    // Calls are answered; the stream alone meets a refused connection (a server restarted
    // between its calls).
    let (mut h, _) = stream_failing("cannot reach http://127.0.0.1:1: connection refused").await;
    h.settle().await;
    h.until("the stream is lost", |app| {
        !matches!(
            app.follower.link,
            chronoscope::tui::live::Link::Connecting | chronoscope::tui::live::Link::Off
        )
    })
    .await;
    h.settle().await;
    for width in [140, 80] {
        let head = header(&mut h, width);
        assert!(head.contains("● "), "connected: {head}");
        assert!(!head.contains("connection refused"), "{head}");
        assert!(head.contains("⟳ polling"), "the monitor is polled: {head}");
    }
    assert!(matches!(h.app.connection, Connection::Connected));
}

#[tokio::test]
async fn a_modal_leaves_no_text_of_the_pane_beneath_in_the_gap_beside_it() {
    let w = world().await;
    branch_with_a_paradox_to_bring(&w.service).await;
    let mut h = harness(&w).await;
    search(&mut h, "paris").await;
    h.press("esc j M");
    for (width, height) in [(140, 30), (80, 24)] {
        let screen = h.render(width, height);
        let rows: Vec<&str> = screen.lines().filter(|l| l.contains('║')).collect();
        assert!(rows.len() > 3, "the wizard is drawn:\n{screen}");
        for row in rows {
            let chars: Vec<char> = row.chars().collect();
            let left = chars.iter().position(|c| *c == '║').unwrap_or(0);
            let right = chars.iter().rposition(|c| *c == '║').unwrap_or(0);
            let beside = [left.checked_sub(1), Some(right + 1)];
            for at in beside.into_iter().flatten() {
                if let Some(c) = chars.get(at) {
                    assert_eq!(*c, ' ', "column {at} beside the frame: {row}\n{screen}");
                }
            }
        }
    }
}

/// C4: an anchor among two paradoxes gives both reasons as one sentence: "a; b.", never "a.; b"
/// nor a sentence ending "..".
#[tokio::test]
async fn an_anchor_among_paradoxes_reads_its_reasons_as_one_sentence() {
    let w = world().await;
    sell_souvenirs_before_the_tower(&w.service).await;
    let eiffel = event_called(&w.service, "Eiffel Tower opens").await;
    add_to_primary(
        w.service.as_ref(),
        new_event(
            "Eiffel postcards printed",
            "1795-01-01T12:00:00Z",
            "Paris",
            &[&eiffel],
        ),
    )
    .await;
    let mut h = harness(&w).await;
    submit(&mut h, "a ctrl-u", &["1800-01-01 12:00", "among them"]).await;
    h.press("A");
    h.settle().await;
    let screen = h.render(140, 40);
    assert!(screen.contains("◐ at risk"), "{screen}");
    // The modal's text as one, whatever the lines it wraps onto.
    let text: String = screen
        .lines()
        .filter_map(|l| Some(l.split('║').nth(1)?.trim()))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("; a return would land among a paradox"),
        "two reasons: {screen}"
    );
    assert!(!text.contains(".;"), "'.;' in: {screen}");
    assert!(!text.contains(".."), "'..' in: {screen}");
}

/// The text inside the modal titled `title` (drawn with a double border, perhaps over
/// another), its lines joined by spaces, so wrapped words read as one text.
fn modal_text(screen: &str, title: &str) -> String {
    let rows: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let head = format!("╔ {title}");
    let Some((top, left)) = rows.iter().enumerate().find_map(|(y, r)| {
        let line: String = r.iter().collect();
        let at = line.find(&head)?;
        Some((y, line[..at].chars().count()))
    }) else {
        return String::new();
    };
    let Some(right) = (left + 1..rows[top].len()).find(|&x| rows[top][x] == '╗') else {
        return String::new();
    };
    rows[top + 1..]
        .iter()
        .take_while(|r| r.get(left) == Some(&'║'))
        .map(|r| r[left + 1..right.min(r.len())].iter().collect::<String>())
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// F14: at 140 and at 80 columns the help's notes, the restrict form's hint, the check form's
/// field titles and the access log's entries read whole: wrapped or shortened, never cut.
#[tokio::test]
async fn help_forms_and_the_access_log_read_whole_at_140_and_80_columns() {
    for (width, height) in [(140u16, 40u16), (80, 24)] {
        let mut h = embedded().await;
        h.press("?");
        let mut help = String::new();
        for _ in 0..120 {
            help.push_str(&modal_text(&h.render(width, height), "Help"));
            help.push(' ');
            h.press("j");
        }
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for note in [
            "ro after a timeline's name: you may read it, not write it (ask its admins; S shows \
             who may).",
            "Restrictions (R): n restrict a traveller · x lift the selected one · s reload · \
             esc close.",
            "Integrity (T): r recent scan · f full scan · v validate its data · j scroll · esc \
             close.",
        ] {
            assert!(help.contains(note), "{width} columns: {note}\n{help}");
        }
        h.press("esc");

        h.press("R");
        h.settle().await;
        h.press("n");
        let screen = h.render(width, height);
        let form = modal_text(&screen, "Restrict a traveller");
        for said in [
            "read_only: reads only · limited_access: also return to own anchors · no_access: \
             only whoami · enter restrict · esc cancel",
            "Level (no_access, read_only, limited_access or unrestricted)",
        ] {
            assert!(form.contains(said), "{width} columns: {said}\n{screen}");
        }
        h.press("esc esc");

        h.press("c");
        let screen = h.render(width, height);
        assert!(screen.contains("Check a draft change"), "{screen}");
        assert!(!screen.contains('…'), "{width} columns, cut:\n{screen}");
        assert!(
            screen.contains("Time (UTC, e.g. 1889-03-10 23:50; empty: the destination time)"),
            "{width} columns:\n{screen}"
        );
        h.press("esc");

        // The access log of the primary timeline: its range's title whole, then each entry
        // whole, the last column included.
        h.press("S");
        h.settle().await;
        h.press("l");
        h.settle().await;
        let screen = h.render(width, height);
        assert!(
            screen.contains("Range (start/end, start/P1D or a date; empty: the last 24 h)"),
            "{width} columns:\n{screen}"
        );
        // F15: the empty field shows an example, marked as one, not a range that looks typed.
        assert!(
            screen.contains("e.g. 2026-11-22"),
            "{width} columns:\n{screen}"
        );
        h.press("enter");
        h.settle().await;
        let screen = h.render(width, height);
        let entries: Vec<&str> = screen.lines().filter(|l| l.contains("×")).collect();
        assert!(!entries.is_empty(), "{width} columns:\n{screen}");
        for entry in entries {
            assert!(!entry.contains('…'), "{width} columns, cut:\n{screen}");
        }
    }
}

/// F4: isolating the demo's bootstrap loop contains the loop, but the timeline keeps one
/// paradox (order among the isolation's members still counts, guide §4): the answer says
/// which one is left, inside the isolation, and why no move clears it, so the words agree
/// with the ⚠1 the tree still shows.
#[tokio::test]
async fn isolating_the_bootstrap_loop_says_which_paradox_is_left_and_why() {
    let mut h = isolate_the_bootstrap_loop().await;
    let flash = h.app.flash.clone().expect("a flash").text;
    for said in [
        "1 paradox contained",
        "1 paradox left inside the isolation: 'A traveller hands the newly arrived Tesla",
        "before its cause 'The traveller carries Tesla's redrawn",
        "order among its members still counts, and no move puts a loop in order",
    ] {
        assert!(flash.contains(said), "{said}: {flash}");
    }
    // The words agree with the mark, and the footer shows them whole.
    let screen = h.render(140, 40);
    let row = screen
        .lines()
        .find(|l| l.contains("└ Tesla bootstrap loop"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(row.contains("⚠1"), "{screen}");
    let footer: String = screen
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flash.ends_with("stays while the loop does.") && footer.contains("Isolated 3 events"),
        "{footer}\n{flash}"
    );
    assert!(
        footer.ends_with("stays while the loop does."),
        "{footer}\n{flash}"
    );
}

/// The demo's Tesla bootstrap loop selected, with the event that closes the loop selected in
/// the search, isolated with `I` `y`: its answer is the longest message the footer gets.
async fn isolate_the_bootstrap_loop() -> Harness {
    let mut h = demo_dashboard().await;
    select_timeline(&mut h, "tml_tesla_bootstrap").await;
    select_event(
        &mut h,
        "new york",
        "A traveller hands the newly arrived Tesla a copy of his own oscillator blueprint",
    )
    .await;
    h.press("I y");
    h.settle().await;
    h
}

/// The last `n` non-empty lines of a screen, trimmed and joined by spaces.
fn last_lines(screen: &str, n: usize) -> String {
    let mut lines: Vec<&str> = screen
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(n)
        .map(str::trim)
        .collect();
    lines.reverse();
    lines.join(" ")
}

/// At 80x24 the isolation's answer needs more than the footer's three lines: the footer cuts it
/// saying which key reads it whole, and that key opens the whole message (also once the flash
/// is gone).
#[tokio::test]
async fn a_message_cut_in_the_footer_reads_whole_on_a_key() {
    let mut h = isolate_the_bootstrap_loop().await;
    let flash = h.app.flash.clone().expect("a flash").text;
    assert!(flash.ends_with("stays while the loop does."), "{flash}");
    let footer = last_lines(&h.render(80, 24), 3);
    assert!(footer.starts_with("Isolated 3 events"), "{footer}");
    assert!(
        footer.ends_with("… w reads it whole"),
        "the cut is said: {footer}"
    );
    // The flash goes with the ticks; the message stays to be read.
    for _ in 0..10 {
        h.send(Msg::Tick);
    }
    h.settle().await;
    assert!(h.app.flash.is_none());
    h.press("w");
    let screen = h.render(80, 24);
    let text = modal_text(&screen, "Last message");
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let hint = [" j/k scroll · enter / esc close", " enter / esc close"];
    let shown = hint.iter().fold(words(&text), |t, h| t.replace(h, ""));
    assert_eq!(shown, words(&flash), "{screen}");
    h.press("esc");
    assert!(h.app.modal.is_none());
}

/// At 80 columns every binding's description in the help reads whole, wrapped under itself,
/// never cut with "…".
#[tokio::test]
async fn the_help_reads_every_description_whole_at_80_columns() {
    let mut h = embedded().await;
    h.press("?");
    // Tall enough for the whole help at once.
    let text = modal_text(&h.render(80, 200), "Help");
    assert!(!text.contains('…'), "{text}");
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    // Each description's first line is followed by its `:command`: without them, the
    // descriptions read as they are written.
    let keymap = KeyMap::default();
    let mut text = words(&text);
    for binding in keymap.bindings() {
        text = text.replace(&format!(" :{}", binding.action.name()), "");
    }
    for binding in keymap.bindings() {
        let description = words(binding.description);
        assert!(text.contains(&description), "{description}: {text}");
    }
    // The notes after the bindings wrap too, the picture's keys to the last.
    assert!(text.contains(", esc closes. Anchors list (A)"), "{text}");
}

/// At 140x30 an anchor among three paradoxes gives every reason whole in the anchors list:
/// the detail under the list grows and wraps, however long the reasons are.
#[tokio::test]
async fn the_anchors_list_wraps_long_paradox_reasons_whole_at_140_by_30() {
    let w = world().await;
    let eiffel = event_called(&w.service, "Eiffel Tower opens").await;
    let printed: Vec<String> = (1..=3)
        .map(|n| format!("Eiffel Tower postcards printed by the workshop of the rue number {n}"))
        .collect();
    for (n, description) in printed.iter().enumerate() {
        let time = format!("179{n}-01-01T12:00:00Z");
        add_to_primary(
            w.service.as_ref(),
            new_event(description, &time, "Paris", &[&eiffel]),
        )
        .await;
    }
    let mut h = harness(&w).await;
    submit(&mut h, "a ctrl-u", &["1800-01-01 12:00", "among them"]).await;
    h.press("A");
    h.settle().await;
    let screen = h.render(140, 30);
    let text = modal_text(&screen, "Your anchors (1)");
    let reasons = text
        .split("at risk: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{screen}"));
    for description in &printed {
        assert!(
            reasons.contains(description.as_str()),
            "{description}:\n{screen}"
        );
    }
    // Each reason whole, the last one to its full stop.
    assert_eq!(
        reasons.matches("the cause of their own act;").count(),
        2,
        "{screen}"
    );
    assert_eq!(
        reasons.matches("the cause of their own act.").count(),
        1,
        "{screen}"
    );
}

/// The help's note on fast-forward and rewind offers the keys the dialog offers, from the same
/// words (it said "↑↓ a preset" while the dialog said "←→ preset").
#[tokio::test]
async fn the_help_and_the_time_dialog_offer_the_same_keys() {
    let mut h = embedded().await;
    h.press(">");
    let dialog = modal_text(&h.render(140, 40), "Fast-forward your own clock");
    let keys = dialog
        .find("enter go")
        .and_then(|at| Some(&dialog[at..at + dialog[at..].find("esc close")? + "esc close".len()]))
        .unwrap_or_else(|| panic!("no key line in the dialog: {dialog}"))
        .to_owned();
    h.press("esc");
    h.press("?");
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = words(&modal_text(&h.render(140, 200), "Help"));
    for offered in keys.split(" · ").filter(|k| !k.starts_with("tab ")) {
        assert!(
            help.contains(&words(offered)),
            "{offered:?} not in the help: {help}"
        );
    }
    assert!(help.contains("tab flips the direction"), "{help}");
}

/// Moves the timelines' cursor down to the timeline `id`.
async fn select_timeline(h: &mut Harness, id: &str) {
    let id: TimelineId = id.parse().unwrap();
    for _ in 0..h.app.panes.timelines.len() {
        if h.app.panes.timelines.selected().map(|t| &t.id) == Some(&id) {
            break;
        }
        h.press("j");
    }
    h.settle().await;
    assert_eq!(h.app.panes.timelines.selected().map(|t| &t.id), Some(&id));
}

/// The demo world in memory, on `clock`.
async fn demo_engine(clock: Arc<ManualClock>) -> Arc<Engine> {
    Engine::open(
        Arc::new(MemoryStore::new()),
        clock,
        chronoscope::engine::EngineConfig::default(),
        chronoscope::engine::Seed::Demo,
    )
    .await
    .expect("the demo world")
}

/// The demo world on a clock of its own, as ada sees it on the dashboard.
async fn demo_dashboard() -> Harness {
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = demo_engine(clock.clone()).await;
    dashboard(Arc::new(engine.session("ada".parse().unwrap())), clock).await
}

/// At 80x24 an event's detail taller than the search pane says so and scrolls with j/k (its
/// lineage, below the causes, was cut off with no way to read it).
#[tokio::test]
async fn an_event_detail_taller_than_the_pane_scrolls_at_80_by_24() {
    let w = world().await;
    let causes: Vec<EventId> = {
        let mut ids = Vec::new();
        for (n, place) in ["Lyon", "Nantes", "Lille"].iter().enumerate() {
            let time = format!("178{n}-01-01T12:00:00Z");
            let e = new_event(&format!("Unrest in {place}"), &time, place, &[]);
            ids.push(add_to_primary(w.service.as_ref(), e).await);
        }
        ids
    };
    let refs: Vec<&EventId> = causes.iter().collect();
    let long = "A crowd gathers before the fortress after a long winter of bread shortages and \
                pamphlets read aloud in every square";
    add_to_primary(
        w.service.as_ref(),
        new_event(long, "1789-07-13T09:00:00Z", "Versailles", &refs),
    )
    .await;
    let mut h = harness(&w).await;
    select_event(&mut h, "versailles", long).await;
    h.press("enter");
    h.settle().await;
    let screen = h.render(80, 24);
    assert!(screen.contains("lines 1–"), "{screen}");
    assert!(screen.contains("j/k read on"), "{screen}");
    assert!(
        !screen.contains("started as"),
        "the lineage is below: {screen}"
    );
    for _ in 0..20 {
        h.press("j");
    }
    let screen = h.render(80, 24);
    assert!(screen.contains("started as"), "{screen}");
    assert!(
        !screen.contains("A crowd gathers"),
        "scrolled past the top: {screen}"
    );
    h.press("g");
    let screen = h.render(80, 24);
    assert!(screen.contains("A crowd gathers"), "{screen}");
    // Tall enough, the whole detail and no scroll line.
    let screen = h.render(140, 60);
    assert!(
        screen.contains("started as") && !screen.contains("j/k read on"),
        "{screen}"
    );
}

/// At 80 columns the selected timeline's line under the list reads whole, on two lines when it
/// needs them ("⇄ 1 merge waiting for review (r revi…" was cut).
#[tokio::test]
async fn the_timelines_about_line_wraps_at_80_columns() {
    let mut h = demo_dashboard().await;
    let screen = h.render(80, 24);
    // The focused list's rows, inside its heavy borders.
    let words = screen
        .lines()
        .filter_map(|l| l.strip_prefix('┃')?.split('┃').next())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains("1 merge waiting for review (r reviews it)"),
        "{screen}"
    );
}

/// `r` on a timeline marked ⇄ only because a merge from it waits (the demo's Project X review,
/// merged into Primary) opens the review where the merge waits, not an empty one on itself;
/// its line says the merge comes from it.
#[tokio::test]
async fn review_on_a_pending_merges_source_opens_it_where_it_waits() {
    let mut h = demo_dashboard().await;
    select_timeline(&mut h, "tml_project_x_review").await;
    let screen = h.render(140, 40);
    assert!(
        screen.contains("⇄ 1 merge from it waiting for review where it goes (r)"),
        "{screen}"
    );
    h.press("r");
    h.settle().await;
    let screen = h.render(140, 40);
    let Some(chronoscope::tui::modal::Modal::Merge(w)) = &h.app.modal else {
        panic!("no review opened: {screen}");
    };
    assert_eq!(
        w.destination.as_ref().map(|d| &d.id),
        Some(&TimelineId::primary()),
        "{screen}"
    );
    assert!(
        screen.contains("a keep A · b keep B"),
        "a conflict to resolve: {screen}"
    );
}

/// A description or place longer than its column ends in "…" in the search's rows, not cut
/// mid-word without a mark (N16 of the 2026-11-29 walk-through).
#[tokio::test]
async fn search_rows_mark_what_they_cut() {
    let w = world().await;
    let long = "A crowd gathers before the fortress after a long winter of bread shortages";
    add_to_primary(
        w.service.as_ref(),
        new_event(
            long,
            "1789-07-13T09:00:00Z",
            "Versailles, the Hall of Mirrors",
            &[],
        ),
    )
    .await;
    let mut h = harness(&w).await;
    search(&mut h, "versailles").await;
    let screen = h.render(80, 24);
    let row = screen
        .lines()
        .find(|l| l.contains("A crowd"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(row.contains("Versailles, the Hal…"), "{row}");
    assert!(
        row.contains("A crowd gathers") && row.contains('…'),
        "{row}"
    );
    let wide = h.render(200, 24);
    assert!(wide.contains(long), "whole when it fits: {wide}");
}

/// N5 of the 2026-11-29 walk-through: a read-only token was offered "(r reviews it)" under the
/// list, and r was refused. The line says what waits, and offers r only to whom may use it.
#[tokio::test]
async fn a_reader_is_told_a_merge_waits_but_not_offered_r() {
    let clock = Arc::new(ManualClock::new(t(START)));
    let engine = demo_engine(clock.clone()).await;
    let tom = chronoscope::server::Sessions::session(
        &engine,
        "tom".parse().unwrap(),
        None,
        &chronoscope::auth::Scopes::parse("read"),
    );
    let mut h = dashboard(tom, clock).await;
    let screen = h.render(140, 40);
    assert!(
        screen.contains("Primary: ⇄ 1 merge waiting for review ·"),
        "{screen}"
    );
    assert!(!screen.contains("(r reviews it)"), "{screen}");
    // ada, who may write, is offered it.
    let mut ada = demo_dashboard().await;
    assert!(ada.render(140, 40).contains("(r reviews it)"));
}
