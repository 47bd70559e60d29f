//! Snapshots of the dashboard's pictures, rendered on their own at 140 and 80 columns without
//! colour: the timeline view (fitted, zoomed to a day, panned, empty), the timelines pane as a
//! tree of branches, and the monitor's title with its sparkline. Every instant is fixed.

use chronoscope::model::{
    Anchor, AnchorId, AnchorStatus, AnomalyId, EventId, EventStatus, Instant, Position, TimelineId,
    Window, parse_instant,
};
use chronoscope::paradox::ParadoxKind;
use chronoscope::service::{
    Anomaly, AnomalyKind, EventRecord, MonitorReport, Severity, TimelineInfo, TravellerStatus,
};
use chronoscope::tui::panes::Ctx;
use chronoscope::tui::panes::monitor::{MonitorPane, detail_lines};
use chronoscope::tui::panes::timeline_view::{TimelineView, ViewCommand, ViewData};
use chronoscope::tui::panes::timelines::TimelinesPane;
use chronoscope::tui::testing::buffer_text;
use chronoscope::tui::theme::{Palette, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Paragraph, Wrap};

const HEIGHT: u16 = 18;

fn t(s: &str) -> Instant {
    parse_instant("t", s).unwrap()
}

fn now() -> Instant {
    t("2026-11-22T10:00:00Z")
}

fn plain() -> Palette {
    Palette::new(Theme::Dark, true)
}

/// Unfocused: the thin frame keeps `┃` for the traveller's line.
fn ctx(palette: &Palette) -> Ctx<'_> {
    Ctx {
        palette,
        now: now(),
        focused: false,
        here: None,
        pending: false,
        offline: None,
    }
}

/// How many times `glyph` is drawn in the chart: the rows between the title and the axis
/// (the legend and the list of events below the axis repeat the glyphs).
fn drawn(screen: &str, glyph: &str) -> usize {
    screen
        .lines()
        .skip(1)
        .take_while(|line| !line.contains('┬'))
        .map(|line| line.matches(glyph).count())
        .sum()
}

/// The rows of the list of events in view, below the axis: a mark, then a date.
fn listed(screen: &str) -> Vec<&str> {
    let marks = ["●", "▲", "◆", "⚠", "○", "×"];
    screen
        .lines()
        .skip_while(|line| !line.contains('┬'))
        .map(|line| {
            line.trim_start_matches('│')
                .trim_end_matches('│')
                .trim_end()
        })
        .filter(|line| {
            marks.iter().any(|m| {
                line.strip_prefix(m)
                    .and_then(|rest| rest.strip_prefix(' '))
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            })
        })
        .collect()
}

/// Draws with `draw` on a `width` x `height` test terminal.
fn draw(width: u16, height: u16, draw: impl FnOnce(&mut ratatui::Frame<'_>, Rect)) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| {
            let area = f.area();
            draw(f, area);
        })
        .unwrap();
    terminal.backend().buffer().clone()
}

fn event_id(n: u128) -> EventId {
    EventId::from_ulid(ulid::Ulid::from(n))
}

fn event(n: u128, description: &str, time: &str, status: EventStatus, fixed: bool) -> EventRecord {
    EventRecord {
        event_id: event_id(n),
        description: description.into(),
        time: t(time),
        location: "Paris".into(),
        causes: vec![],
        fixed_point: fixed,
        status,
        lineage: event_id(n),
        supersedes: None,
        superseded_by: None,
        author: None,
    }
}

fn tesla() -> TimelineId {
    TimelineId::from_ulid(ulid::Ulid::from(1u128))
}

/// A history with one event of each kind, an anomaly, the traveller and anchors.
struct Fixture {
    timeline: TimelineId,
    events: Vec<EventRecord>,
    anomalies: Vec<Anomaly>,
    traveller: TravellerStatus,
    anchors: Vec<Anchor>,
}

fn fixture() -> Fixture {
    use EventStatus::*;
    let events = vec![
        event(
            1,
            "Storming of the Bastille",
            "1789-07-14T15:00:00Z",
            OnSchedule,
            false,
        ),
        event(
            2,
            "Napoleon crowned",
            "1804-12-02T10:00:00Z",
            OnSchedule,
            true,
        ),
        event(
            3,
            "Great Exhibition opens",
            "1851-05-01T11:00:00Z",
            Superseded,
            false,
        ),
        event(
            4,
            "Great Exhibition opens (moved)",
            "1851-09-01T11:00:00Z",
            Manipulated,
            false,
        ),
        event(
            5,
            "Tesla's lecture, moved back",
            "1889-03-10T18:00:00Z",
            Reverted,
            false,
        ),
        event(
            6,
            "Tesla meets Edison",
            "1889-03-10T23:50:00Z",
            OnSchedule,
            false,
        ),
        event(
            7,
            "Eiffel Tower opens",
            "1889-03-31T12:00:00Z",
            OnSchedule,
            false,
        ),
    ];
    let anomalies = vec![Anomaly {
        anomaly_id: AnomalyId::derived("order"),
        description: "Tesla meets Edison happens before its cause".into(),
        kind: AnomalyKind::Paradox(ParadoxKind::CausalOrder),
        severity: Severity::Critical,
        subjects: vec![event_id(6).to_string()],
        detected_at: now(),
    }];
    let traveller = TravellerStatus {
        traveller: "ada".parse().unwrap(),
        timeline_id: tesla(),
        time: t("1889-03-11T02:00:00Z"),
        position: Position {
            timeline: tesla(),
            arrival_time: t("1889-03-11T01:00:00Z"),
            arrived_at: now(),
            paused: false,
            location: None,
        },
        operator: false,
        restriction: None,
        read_only_token: false,
    };
    let anchor = |n: u128, timeline: TimelineId, at: &str, what: &str, status| Anchor {
        id: AnchorId::from_ulid(ulid::Ulid::from(n)),
        owner: "ada".parse().unwrap(),
        timeline,
        timestamp: t(at),
        description: Some(what.into()),
        status,
        created_at: now(),
    };
    let anchors = vec![
        anchor(
            1,
            tesla(),
            "1889-03-10T20:00:00Z",
            "home",
            AnchorStatus::Active,
        ),
        // Neither is drawn: another timeline's, and one already returned to.
        anchor(
            2,
            TimelineId::primary(),
            "1889-03-10T21:00:00Z",
            "elsewhere",
            AnchorStatus::Active,
        ),
        anchor(
            3,
            tesla(),
            "1889-03-10T22:00:00Z",
            "spent",
            AnchorStatus::Spent,
        ),
    ];
    Fixture {
        timeline: tesla(),
        events,
        anomalies,
        traveller,
        anchors,
    }
}

impl Fixture {
    fn render(&self, view: &mut TimelineView, width: u16, palette: &Palette) -> Buffer {
        self.render_sized(view, width, HEIGHT, palette)
    }

    fn render_sized(
        &self,
        view: &mut TimelineView,
        width: u16,
        height: u16,
        palette: &Palette,
    ) -> Buffer {
        let anomalies: Vec<&Anomaly> = self.anomalies.iter().collect();
        let data = ViewData {
            timeline: &self.timeline,
            name: "Tesla 1889",
            events: &self.events,
            anomalies: &anomalies,
            traveller: Some(&self.traveller),
            anchors: &self.anchors,
        };
        draw(width, height, |f, area| {
            view.render(f, area, &ctx(palette), &data)
        })
    }

    fn screen(&self, view: &mut TimelineView, width: u16) -> String {
        buffer_text(&self.render(view, width, &plain()))
    }

    fn apply(&self, view: &mut TimelineView, command: ViewCommand) {
        let anomalies: Vec<&Anomaly> = self.anomalies.iter().collect();
        view.apply(
            command,
            &ViewData {
                timeline: &self.timeline,
                name: "Tesla 1889",
                events: &self.events,
                anomalies: &anomalies,
                traveller: Some(&self.traveller),
                anchors: &self.anchors,
            },
        );
    }
}

/// Each mark with its words in the legend.
const LEGEND: [(&str, &str); 9] = [
    ("●", "on schedule"),
    ("▲", "manipulated"),
    ("◆", "fixed point"),
    ("⚠", "anomaly"),
    ("○", "superseded"),
    ("×", "reverted"),
    ("┃", "you"),
    ("┆", "anchor"),
    ("▁▄█", "events per cell"),
];

/// Whether the traveller's label is drawn (`▼ you`, or `you ▼` near the right edge).
fn shows_you(screen: &str) -> bool {
    screen.contains("▼ you") || screen.contains("you ▼")
}

/// The title: the first line, between the corners.
fn title_of(screen: &str) -> &str {
    screen.lines().next().unwrap_or_default()
}

#[test]
fn timeline_view_fitted() {
    let f = fixture();
    for width in [140, 80] {
        let mut view = TimelineView::new();
        let screen = f.screen(&mut view, width);
        insta::assert_snapshot!(format!("timeline_fit_{width}"), screen);
        assert!(view.is_fit());
        // Everything drawn is in view: the first and last events, you, the anchor.
        let (start, end) = view.visible();
        assert!(start <= t("1789-07-14T15:00:00Z") && end >= t("1889-03-31T12:00:00Z"));
        // The legend names each mark, and each kind of event is drawn with its own glyph.
        for (glyph, words) in LEGEND {
            let legend = format!("{glyph} {words}");
            assert!(screen.contains(&legend), "no '{legend}' in\n{screen}");
        }
        // At this zoom the anchor shares your column, and you are drawn over it.
        for glyph in ["●", "▲", "◆", "⚠", "┃"] {
            assert!(drawn(&screen, glyph) >= 1, "no {glyph} drawn in\n{screen}");
        }
        // The lanes are compact: one row each, one under the other, then the density row.
        let lanes: Vec<usize> = [
            "anomalies",
            "fixed points",
            "on schedule",
            "manipulated",
            "superseded",
            "reverted",
        ]
        .iter()
        .map(|lane| {
            let row = screen
                .lines()
                .position(|l| l.starts_with(&format!("│{lane}")));
            row.unwrap_or_else(|| panic!("no lane '{lane}' in\n{screen}"))
        })
        .collect();
        assert_eq!(lanes, [2, 3, 4, 5, 6, 7], "{screen}");
        // Versions that no longer stand are drawn in their own lanes: the Great Exhibition's
        // time before it was moved, and Tesla's lecture moved back and reverted.
        let lines: Vec<&str> = screen.lines().collect();
        assert_eq!(lines[6].matches('○').count(), 1, "{screen}");
        assert_eq!(lines[7].matches('×').count(), 1, "{screen}");
        let density = screen.lines().nth(8).unwrap_or_default();
        assert!(density.contains("per cell"), "{screen}");
        // Two events share the last column (a year and more per cell): the fullest bar
        // there, the lowest for a cell of one.
        assert!(density.contains('█') && density.contains('▁'), "{screen}");
        assert!(shows_you(&screen), "{screen}");
        assert!(!screen.contains("elsewhere") && !screen.contains("spent"));
        assert!(title_of(&screen).contains("(fit)"), "{screen}");
        // Centuries are labelled by year.
        assert!(
            screen.contains("1800") && screen.contains("1880"),
            "{screen}"
        );
    }
}

#[test]
fn timeline_view_zoomed_to_a_day_then_panned() {
    let f = fixture();
    for width in [140, 80] {
        let mut view = TimelineView::new();
        let fitted = f.screen(&mut view, width);
        view.center_on(t("1889-03-10T23:00:00Z"));
        view.zoom_to(chrono::Duration::days(1));
        let day = f.screen(&mut view, width);
        insta::assert_snapshot!(format!("timeline_day_{width}"), day);
        assert_ne!(title_of(&day), title_of(&fitted));
        assert!(
            title_of(&day).contains("1889-03-10 11:00 → 1889-03-11 11:00 · 1 day"),
            "{day}"
        );
        // Hours are labelled as such, midnight by its date; what is out of view is counted.
        assert!(day.contains("12:00") && day.contains("03-11"), "{day}");
        assert!(day.contains("◀ 4") && day.contains("1 ▶"), "{day}");
        assert!(shows_you(&day) && day.contains("▽ home"), "{day}");
        for glyph in ["●", "⚠", "┃", "┆"] {
            assert!(drawn(&day, glyph) >= 1, "no {glyph} drawn in\n{day}");
        }
        for glyph in ["▲", "◆"] {
            assert_eq!(drawn(&day, glyph), 0, "{glyph} is out of view:\n{day}");
        }

        view.pan(2);
        let panned = f.screen(&mut view, width);
        insta::assert_snapshot!(format!("timeline_day_panned_{width}"), panned);
        assert!(
            title_of(&panned).contains("1889-03-10 23:00 → 1889-03-11 23:00"),
            "{panned}"
        );
    }
}

#[test]
fn zooming_steps_along_the_ladder_from_the_fitted_view() {
    let f = fixture();
    let mut view = TimelineView::new();
    f.screen(&mut view, 140);
    let fitted = view.span();
    f.apply(&mut view, ViewCommand::ZoomIn);
    assert!(!view.is_fit());
    assert!(view.span() < fitted);
    // A hundred mean Gregorian years.
    assert_eq!(view.span(), chrono::Duration::seconds(100 * 31_556_952));
    let screen = f.screen(&mut view, 140);
    assert!(title_of(&screen).contains("100 years"), "{screen}");
    f.apply(&mut view, ViewCommand::CenterOnTraveller);
    for _ in 0..20 {
        f.apply(&mut view, ViewCommand::ZoomIn);
    }
    let screen = f.screen(&mut view, 140);
    assert!(title_of(&screen).contains("10 minutes"), "{screen}");
    assert!(shows_you(&screen), "{screen}");
    f.apply(&mut view, ViewCommand::Fit);
    let screen = f.screen(&mut view, 140);
    assert_eq!(view.span(), fitted);
    assert!(title_of(&screen).contains("(fit)"), "{screen}");
}

#[test]
fn panning_past_the_calendar_stays_at_its_end() {
    let mut f = fixture();
    f.events.push(event(
        8,
        "The last day",
        "9999-12-31T12:00:00Z",
        EventStatus::OnSchedule,
        false,
    ));
    f.events.push(event(
        9,
        "The first day",
        "0001-01-01T00:00:00Z",
        EventStatus::OnSchedule,
        false,
    ));
    let mut view = TimelineView::new();
    let screen = f.screen(&mut view, 80);
    assert!(title_of(&screen).contains("0001 → 9999"), "{screen}");
    view.center_on(t("9999-12-31T00:00:00Z"));
    view.zoom_to(chrono::Duration::hours(1));
    for _ in 0..1_000 {
        view.pan(1_000);
    }
    view.pan(i32::MAX);
    assert_eq!(view.visible().1, t("9999-12-31T23:59:59Z"));
    let screen = f.screen(&mut view, 80);
    assert!(
        title_of(&screen).contains("9999-12-31 22:59 → 9999-12-31 23:59"),
        "{screen}"
    );
    assert!(
        screen.contains("No events in view (9 earlier, 0 later).") && screen.contains("◀ 9"),
        "{screen}"
    );
    for _ in 0..30 {
        view.zoom_out();
        f.screen(&mut view, 80);
    }
    assert_eq!(
        view.visible(),
        (t("0001-01-01T00:00:00Z"), t("9999-12-31T23:59:59Z"))
    );
    view.zoom_to(chrono::Duration::minutes(1));
    view.pan(i32::MIN);
    assert_eq!(view.visible().0, t("0001-01-01T00:00:00Z"));
    assert_eq!(view.span(), chrono::Duration::minutes(10));
    let screen = f.screen(&mut view, 80);
    assert_eq!(drawn(&screen, "●"), 1, "the first day's event:\n{screen}");
}

#[test]
fn an_empty_timeline_says_so() {
    let mut f = fixture();
    f.events.clear();
    f.anchors.clear();
    f.traveller.timeline_id = TimelineId::primary();
    for width in [140, 80] {
        let screen = f.screen(&mut TimelineView::new(), width);
        insta::assert_snapshot!(format!("timeline_empty_{width}"), screen);
        assert!(screen.contains("No events in Tesla 1889 yet."), "{screen}");
    }
}

#[test]
fn an_empty_timeline_with_you_in_it_still_shows_you() {
    let mut f = fixture();
    f.events.clear();
    let screen = f.screen(&mut TimelineView::new(), 80);
    assert!(screen.contains("No events in Tesla 1889 yet."), "{screen}");
    assert!(shows_you(&screen), "{screen}");
}

#[test]
fn kinds_of_event_differ_in_colour_as_well_as_glyph() {
    let f = fixture();
    let palette = Palette::new(Theme::Dark, false);
    let buffer = f.render(&mut TimelineView::new(), 140, &palette);
    let style_of = |glyph: &str| {
        buffer
            .content()
            .iter()
            .find(|c| c.symbol() == glyph)
            .map(|c| c.fg)
    };
    let colours: Vec<_> = ["●", "▲", "◆", "⚠"].map(style_of).into_iter().collect();
    assert!(colours.iter().all(Option::is_some), "{colours:?}");
    for (i, a) in colours.iter().enumerate() {
        for b in &colours[i + 1..] {
            assert_ne!(a, b, "{colours:?}");
        }
    }
}

#[test]
fn ten_thousand_events_in_one_cell_draw_one_mark() {
    let mut f = fixture();
    f.events = (0..10_000)
        .map(|i| {
            event(
                100 + i as u128,
                "crowd",
                "1900-01-01T00:00:00Z",
                EventStatus::OnSchedule,
                false,
            )
        })
        .collect();
    let mut view = TimelineView::new();
    view.center_on(t("1900-01-01T00:00:00Z"));
    view.zoom_to(chrono::Duration::days(365 * 100));
    let screen = f.screen(&mut view, 140);
    assert_eq!(drawn(&screen, "●"), 1, "{screen}");
    // The density row says the cell is full, and the list says how many it leaves out.
    assert_eq!(drawn(&screen, "█"), 1, "{screen}");
    assert!(screen.contains("… 9997 more in view"), "{screen}");
}

#[test]
fn the_height_left_lists_the_events_in_view_most_telling_first() {
    let f = fixture();
    // Tall enough for every version: all seven, in time order, those that no longer stand
    // saying so.
    let tall = buffer_text(&f.render_sized(&mut TimelineView::new(), 140, 30, &plain()));
    let rows = listed(&tall);
    assert_eq!(rows.len(), 7, "{tall}");
    for (row, (mark, what)) in rows.iter().zip([
        ("●", "1789-07-14 15:00  Storming of the Bastille · Paris"),
        ("◆", "1804-12-02 10:00  Napoleon crowned"),
        (
            "○",
            "1851-05-01 11:00  Great Exhibition opens · Paris (superseded)",
        ),
        ("▲", "1851-09-01 11:00  Great Exhibition opens (moved)"),
        (
            "×",
            "1889-03-10 18:00  Tesla's lecture, moved back · Paris (reverted)",
        ),
        ("⚠", "1889-03-10 23:50  Tesla meets Edison"),
        ("●", "1889-03-31 12:00  Eiffel Tower opens"),
    ]) {
        assert!(row.starts_with(&format!("{mark} {what}")), "{row}\n{tall}");
    }
    assert!(!tall.contains("more in view"), "{tall}");

    // Short: the anomaly's event and the fixed point before the ones on schedule, and
    // versions that no longer stand last.
    let short = f.screen(&mut TimelineView::new(), 80);
    let rows = listed(&short);
    assert_eq!(rows.len(), 2, "{short}");
    assert!(rows[0].contains("Napoleon crowned"), "{short}");
    assert!(rows[1].contains("Tesla meets Edison"), "{short}");
    assert!(short.contains("… 5 more in view"), "{short}");
}

fn timeline(n: u128, name: &str, parent: Option<u128>, minute: i64) -> TimelineInfo {
    let id = |n: u128| {
        if n == 0 {
            TimelineId::primary()
        } else {
            TimelineId::from_ulid(ulid::Ulid::from(n))
        }
    };
    TimelineInfo {
        destination_time: (n > 0).then(|| t("1889-03-10T23:50:00Z")),
        window: if n == 0 {
            Window::Unbounded
        } else {
            Window::Seconds(3600)
        },
        parent: parent.map(id),
        closes_at: (n > 0).then(|| now() + chrono::Duration::minutes(minute + 60)),
        ..TimelineInfo::bare(id(n), name, now() + chrono::Duration::minutes(minute))
    }
}

fn branches() -> Vec<TimelineInfo> {
    vec![
        timeline(0, "Primary", None, -600),
        timeline(1, "Tesla 1889", Some(0), 1),
        timeline(2, "Tesla stays", Some(1), 2),
        timeline(3, "Moon 1969", Some(0), 3),
        timeline(4, "Tesla stays, rich", Some(2), 4),
        timeline(5, "Tesla leaves", Some(1), 5),
        // Its parent was deleted: a root of its own.
        timeline(6, "Orphan", Some(99), 6),
        timeline(7, "Orphan's branch", Some(6), 7),
    ]
}

fn timelines_screen(pane: &mut TimelinesPane, width: u16) -> String {
    let palette = plain();
    let primary = TimelineId::primary();
    let ctx = Ctx {
        here: Some(&primary),
        ..ctx(&palette)
    };
    buffer_text(&draw(width, 14, |f, area| pane.render(f, area, &ctx)))
}

#[test]
fn the_timelines_pane_is_a_tree_of_branches() {
    for width in [140, 80] {
        let mut pane = TimelinesPane::default();
        pane.set(branches());
        pane.select(&TimelineId::from_ulid(ulid::Ulid::from(4u128)));
        let screen = timelines_screen(&mut pane, width);
        insta::assert_snapshot!(format!("timelines_tree_{width}"), screen);
        assert_eq!(
            pane.selected().map(|t| t.name.as_str()),
            Some("Tesla stays, rich")
        );
        // Three cells a level where the names fit, two where one would not.
        let rows = if width == 140 {
            [
                "● Primary",
                "├─ Tesla 1889",
                "│  ├─ Tesla stays",
                "│  │  └─ Tesla stays, rich",
                "│  └─ Tesla leaves",
                "└─ Moon 1969",
                "└─ Orphan's branch",
            ]
        } else {
            [
                "● Primary",
                "├ Tesla 1889",
                "│ ├ Tesla stays",
                "│ │ └ Tesla stays, rich",
                "│ └ Tesla leaves",
                "└ Moon 1969",
                "└ Orphan's branch",
            ]
        };
        for row in rows {
            assert!(screen.contains(row), "no '{row}' in\n{screen}");
        }
        assert!(
            screen
                .lines()
                .any(|l| l.contains("   Orphan ") && !l.contains("└ Orphan ")),
            "the orphan is a root:\n{screen}"
        );
    }
}

#[test]
fn a_filtered_tree_keeps_only_true_connectors_and_the_selection() {
    let mut pane = TimelinesPane::default();
    pane.set(branches());
    pane.select(&TimelineId::from_ulid(ulid::Ulid::from(4u128)));
    pane.set_filter("tesla".into());
    let screen = timelines_screen(&mut pane, 80);
    insta::assert_snapshot!("timelines_tree_filtered_80", screen);
    assert_eq!(pane.len(), 4);
    assert_eq!(
        pane.selected().map(|t| t.name.as_str()),
        Some("Tesla stays, rich")
    );
    // Primary is filtered out: Tesla 1889 is a root.
    assert!(
        screen
            .lines()
            .any(|l| l.contains("   Tesla 1889") && !l.contains("─ Tesla 1889")),
        "{screen}"
    );
    assert!(screen.contains("│  └─ Tesla stays, rich"), "{screen}");
    assert!(screen.contains("└─ Tesla leaves"), "{screen}");
    // Moving down walks the rows as drawn.
    pane.cursor.selected = 0;
    let names: Vec<String> = (0..pane.len())
        .map(|i| {
            pane.cursor.selected = i;
            pane.selected().map(|t| t.name.clone()).unwrap_or_default()
        })
        .collect();
    assert_eq!(
        names,
        [
            "Tesla 1889",
            "Tesla stays",
            "Tesla stays, rich",
            "Tesla leaves"
        ]
    );
}

fn report(anomalies: &[(&str, Severity, &str)]) -> MonitorReport {
    MonitorReport {
        status: if anomalies.is_empty() {
            "stable"
        } else {
            "anomalies_detected"
        }
        .into(),
        anomalies: anomalies
            .iter()
            .map(|(cause, severity, description)| Anomaly {
                anomaly_id: AnomalyId::derived(cause),
                description: (*description).into(),
                kind: AnomalyKind::OrphanedEvent,
                severity: *severity,
                subjects: vec![event_id(6).to_string()],
                detected_at: now(),
            })
            .collect(),
        timeline_id: TimelineId::primary(),
        checked_at: now(),
    }
}

const LONG: &str = "Eiffel Tower opens names a missing cause: the event it depends on was \
                    deleted with its timeline, so nothing in this timeline explains it";

#[test]
fn the_monitor_title_has_a_sparkline_of_the_count() {
    let mut pane = MonitorPane::default();
    pane.watch(Some(TimelineId::primary()));
    let a = ("a", Severity::Warning, LONG);
    let b = (
        "b",
        Severity::Critical,
        "Bastille and coronation cause each other",
    );
    let c = ("c", Severity::Info, "Window closes in 4 minutes");
    for anomalies in [
        vec![],
        vec![a],
        vec![a, b],
        vec![a, b, c],
        vec![a, b, c],
        vec![a],
        vec![a, b],
    ] {
        pane.apply(report(&anomalies));
    }
    assert_eq!(
        pane.history.iter().copied().collect::<Vec<_>>(),
        [0, 1, 2, 3, 3, 1, 2]
    );
    let palette = plain();
    for width in [140, 80] {
        let screen = buffer_text(&draw(width, 8, |f, area| {
            pane.render(f, area, &ctx(&palette), "Primary")
        }));
        insta::assert_snapshot!(format!("monitor_sparkline_{width}"), screen);
        assert!(
            title_of(&screen).contains("2 anomalies ▁▄▆██▄▆ · Primary"),
            "{screen}"
        );
    }
    // Narrow: the count stays, the trend shrinks to what is left.
    let screen = buffer_text(&draw(40, 8, |f, area| {
        pane.render(f, area, &ctx(&palette), "Primary")
    }));
    assert!(
        title_of(&screen).contains("2 anomalies ▁▄▆██▄▆"),
        "{screen}"
    );
}

#[test]
fn a_monitor_stable_all_along_has_no_sparkline() {
    let mut pane = MonitorPane::default();
    pane.watch(Some(TimelineId::primary()));
    for _ in 0..5 {
        pane.apply(report(&[]));
    }
    let palette = plain();
    let screen = buffer_text(&draw(80, 6, |f, area| {
        pane.render(f, area, &ctx(&palette), "Primary")
    }));
    assert!(
        title_of(&screen).contains("Monitor stable · Primary"),
        "{screen}"
    );
    // Once something happened, the trend shows, even back at zero.
    pane.apply(report(&[("a", Severity::Info, "x")]));
    pane.apply(report(&[]));
    let screen = buffer_text(&draw(80, 6, |f, area| {
        pane.render(f, area, &ctx(&palette), "Primary")
    }));
    assert!(
        title_of(&screen).contains("Monitor stable ▁▁▁▁▁█▁ · Primary"),
        "{screen}"
    );
}

#[test]
fn the_description_takes_the_rest_of_the_row_and_shows_it_is_cut() {
    let mut pane = MonitorPane::default();
    pane.watch(Some(TimelineId::primary()));
    pane.apply(report(&[("a", Severity::Warning, LONG)]));
    let palette = plain();
    let focused = Ctx {
        focused: true,
        ..ctx(&palette)
    };
    let screen = buffer_text(&draw(60, 6, |f, area| {
        pane.render(f, area, &focused, "Primary")
    }));
    // No empty state column: the description starts after the severity.
    assert!(
        screen.contains("▶ warn Eiffel Tower opens names a missing cause: the even…┃"),
        "{screen}"
    );
}

#[test]
fn the_watched_timeline_reads_by_name_in_a_description() {
    let mut pane = MonitorPane::default();
    pane.watch(Some(tesla()));
    let mut report = report(&[("w", Severity::Warning, "")]);
    report.timeline_id = tesla();
    report.anomalies[0].description = format!("Timeline {} closes in 4 minutes", tesla());
    pane.apply(report.clone());
    let palette = plain();
    let screen = buffer_text(&draw(80, 6, |f, area| {
        pane.render(f, area, &ctx(&palette), "Tesla 1889")
    }));
    assert!(
        screen.contains("Timeline Tesla 1889 closes in 4 minutes"),
        "{screen}"
    );
    // The detail keeps the id: it is what the CLI and the API take.
    let detail = detail_lines(&report.anomalies[0], &palette);
    let text: Vec<String> = detail.iter().map(ToString::to_string).collect();
    assert!(
        text.iter().any(|l| l.contains(tesla().as_str())),
        "{text:?}"
    );
}

#[test]
fn an_anomaly_detail_shows_everything_wrapped() {
    let anomaly = report(&[("a", Severity::Critical, LONG)])
        .anomalies
        .remove(0);
    let palette = plain();
    let lines = detail_lines(&anomaly, &palette);
    let screen = buffer_text(&draw(50, 14, |f, area| {
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area)
    }));
    insta::assert_snapshot!("anomaly_detail_50", screen);
    let text = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains(LONG), "{screen}");
    assert!(
        text.contains("critical") && text.contains("orphaned_event"),
        "{screen}"
    );
    assert!(text.contains(&event_id(6).to_string()), "{screen}");
    assert!(text.contains("2026-11-22 10:00:00"), "{screen}");
}

#[test]
fn your_paused_position_is_marked_in_the_picture() {
    let mut f = fixture();
    f.traveller.position.paused = true;
    f.traveller.time = f.traveller.position.arrival_time;
    for width in [140, 80] {
        let screen = f.screen(&mut TimelineView::new(), width);
        insta::assert_snapshot!(format!("timeline_paused_{width}"), screen);
        assert!(screen.contains("┃ you (clock paused)"), "{screen}");
    }
    let screen = f.screen(&mut TimelineView::new(), 140);
    assert!(
        screen.contains("▼ you ⏸ paused") || screen.contains("you ⏸ paused ▼"),
        "{screen}"
    );
    // Running, the same place says only "you".
    let f = fixture();
    let screen = f.screen(&mut TimelineView::new(), 140);
    assert!(!screen.contains("paused"), "{screen}");
}
