//! A picture of one timeline: its events along time, one lane per kind of event, with the
//! anomalies above the events they are about, the traveller ("you are here") and their anchors
//! as vertical lines, an axis whose ticks fit the zoom, and a legend.
//!
//! The view zooms from the whole calendar (years 0001–9999) down to ten minutes and pans by a
//! quarter of what is shown; it starts fitted to everything it draws and keeps fitting as data
//! changes until the user zooms or pans. Each lane draws one mark per cell whatever the number
//! of events in it, so a frame costs one pass over the events plus the cells on screen.
//!
//! It writes cells itself rather than through `Canvas`: every mark must be a glyph that reads
//! without colour, lined up exactly with the axis ticks, and a canvas would resample each of
//! 10,000 points through floating-point coordinates only to print text at cells in the end.

use std::collections::HashSet;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::Paragraph;

use super::Ctx;
use crate::model::{Anchor, AnchorStatus, EventStatus, Instant, TimelineId};
use crate::service::{Anomaly, EventRecord, TravellerStatus};
use crate::tui::theme::Palette;
use crate::tui::widgets::{ellipsize, pane_block, title};

const MINUTE: i64 = 60;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
const WEEK: i64 = 7 * DAY;
/// A mean Gregorian year (365.2425 days), so a span of years is a span of seconds.
const YEAR: i64 = 31_556_952;
/// A twelfth of [`YEAR`].
const MONTH: i64 = YEAR / 12;

/// 0001-01-01T00:00:00Z, the first instant the service accepts, as a Unix timestamp.
pub const EARLIEST: i64 = -62_135_596_800;
/// 9999-12-31T23:59:59Z, the last instant the service accepts, as a Unix timestamp.
pub const LATEST: i64 = 253_402_300_799;
/// The widest view: the whole accepted calendar.
const MAX_SPAN: i64 = LATEST - EARLIEST;
/// The narrowest view.
const MIN_SPAN: i64 = 10 * MINUTE;

/// The zoom ladder, widest first: `+` and `-` step along it (from a fitted span, to the next
/// step past it).
pub const ZOOMS: [i64; 14] = [
    MAX_SPAN,
    1000 * YEAR,
    500 * YEAR,
    100 * YEAR,
    50 * YEAR,
    10 * YEAR,
    YEAR,
    3 * MONTH,
    MONTH,
    WEEK,
    DAY,
    6 * HOUR,
    HOUR,
    MIN_SPAN,
];

/// What the keys of the view do; [`SUGGESTED_KEYS`] binds them, [`TimelineView::apply`] runs
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViewCommand {
    /// One step down the zoom ladder, keeping the middle.
    ZoomIn,
    /// One step up the zoom ladder, keeping the middle.
    ZoomOut,
    /// A quarter of the view back in time.
    PanEarlier,
    /// A quarter of the view forward in time.
    PanLater,
    /// Everything drawn in view, and kept so as data changes.
    Fit,
    /// The traveller's position in the middle (when they are in this timeline).
    CenterOnTraveller,
}

/// Keys for [`ViewCommand`]s as the key map's table writes them (space-separated), with
/// the words for the help screen. None is bound globally by default (`h`/`l` and the arrows
/// move between panes, so panning takes the brackets).
pub const SUGGESTED_KEYS: [(&str, ViewCommand, &str); 6] = [
    ("+ =", ViewCommand::ZoomIn, "zoom in"),
    ("-", ViewCommand::ZoomOut, "zoom out"),
    ("[", ViewCommand::PanEarlier, "earlier"),
    ("]", ViewCommand::PanLater, "later"),
    ("0", ViewCommand::Fit, "fit all"),
    (".", ViewCommand::CenterOnTraveller, "you"),
];

/// What the view draws; borrowed from the dashboard's state for one frame.
#[derive(Clone, Copy, Debug)]
pub struct ViewData<'a> {
    /// The timeline shown; when it changes the view fits again.
    pub timeline: &'a TimelineId,
    /// Its name, for the title.
    pub name: &'a str,
    /// Its events, in any order.
    pub events: &'a [EventRecord],
    /// Its standing anomalies: each marks the events among its `subjects`.
    pub anomalies: &'a [&'a Anomaly],
    /// Where the traveller is; drawn only when it is in this timeline.
    pub traveller: Option<&'a TravellerStatus>,
    /// The traveller's anchors; those active in this timeline are drawn.
    pub anchors: &'a [Anchor],
}

impl<'a> ViewData<'a> {
    /// The traveller's time, when they are in this timeline.
    fn here(&self) -> Option<Instant> {
        self.traveller
            .filter(|t| &t.timeline_id == self.timeline)
            .map(|t| t.time)
    }

    /// Whether the traveller is in this timeline with their clock paused.
    fn paused_here(&self) -> bool {
        self.traveller
            .is_some_and(|t| &t.timeline_id == self.timeline && t.position.paused)
    }

    /// The anchors drawn: active, in this timeline.
    fn anchors(&self) -> impl Iterator<Item = &'a Anchor> + '_ {
        self.anchors
            .iter()
            .filter(|a| &a.timeline == self.timeline && a.status == AnchorStatus::Active)
    }

    /// The earliest and latest instant of everything drawn, as timestamps.
    fn extent(&self) -> Option<(i64, i64)> {
        let times = self
            .events
            .iter()
            .map(|e| e.time.timestamp())
            .chain(self.anchors().map(|a| a.timestamp.timestamp()))
            .chain(self.here().map(|t| t.timestamp()));
        times.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((lo, hi)) => Some((lo.min(t), hi.max(t))),
        })
    }
}

/// The timeline view's state: what part of time is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineView {
    /// The timeline last drawn.
    timeline: Option<TimelineId>,
    /// Whether the view follows the data (everything in view) rather than the user.
    fit: bool,
    /// The middle of the view, as a timestamp.
    center: i64,
    /// The width of the view, in seconds.
    span: i64,
}

impl Default for TimelineView {
    fn default() -> Self {
        Self {
            timeline: None,
            fit: true,
            center: 0,
            span: DAY,
        }
    }
}

impl TimelineView {
    /// A view fitted to whatever it is given.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the view fits everything (until the user zooms or pans).
    pub fn is_fit(&self) -> bool {
        self.fit
    }

    /// The width of the view (as last fitted, when fitting).
    pub fn span(&self) -> chrono::Duration {
        chrono::Duration::seconds(self.span)
    }

    /// The first and last instant in view.
    pub fn visible(&self) -> (Instant, Instant) {
        let (start, end) = self.bounds();
        (instant(start), instant(end))
    }

    /// One step down the zoom ladder, keeping the middle; stops at ten minutes.
    pub fn zoom_in(&mut self) {
        self.fit = false;
        self.span = ZOOMS
            .iter()
            .copied()
            .find(|&z| z * 100 < self.span * 99)
            .unwrap_or(MIN_SPAN);
        self.clamp();
    }

    /// One step up the zoom ladder, keeping the middle (as far as the calendar allows).
    pub fn zoom_out(&mut self) {
        self.fit = false;
        self.span = ZOOMS
            .iter()
            .rev()
            .copied()
            .find(|&z| z * 99 > self.span * 100)
            .unwrap_or(MAX_SPAN);
        self.clamp();
    }

    /// Shows `span` of time around the same middle (clamped to ten minutes..the calendar).
    pub fn zoom_to(&mut self, span: chrono::Duration) {
        self.fit = false;
        self.span = span.num_seconds();
        self.clamp();
    }

    /// Moves by `steps` quarters of the view, later when positive; stops at the calendar's
    /// ends.
    pub fn pan(&mut self, steps: i32) {
        self.fit = false;
        let step = (self.span / 4).max(1);
        self.center = self
            .center
            .saturating_add(step.saturating_mul(i64::from(steps)));
        self.clamp();
    }

    /// Puts `t` in the middle of the view, zoom kept.
    pub fn center_on(&mut self, t: Instant) {
        self.fit = false;
        self.center = t.timestamp();
        self.clamp();
    }

    /// Shows everything drawn, and keeps doing so as the data changes.
    pub fn fit(&mut self) {
        self.fit = true;
    }

    /// Runs a command. Starts from the fitted view of `data` when fitting, so the first zoom
    /// zooms into what is on screen.
    pub fn apply(&mut self, command: ViewCommand, data: &ViewData<'_>) {
        self.follow(data);
        match command {
            ViewCommand::ZoomIn => self.zoom_in(),
            ViewCommand::ZoomOut => self.zoom_out(),
            ViewCommand::PanEarlier => self.pan(-1),
            ViewCommand::PanLater => self.pan(1),
            ViewCommand::Fit => self.fit(),
            ViewCommand::CenterOnTraveller => {
                if let Some(t) = data.here() {
                    self.center_on(t);
                }
            }
        }
    }

    /// Starts over (fitted) on another timeline, and fits to `data` when fitting; returns
    /// the extent of `data` (`None` when there is nothing to draw).
    fn follow(&mut self, data: &ViewData<'_>) -> Option<(i64, i64)> {
        if self.timeline.as_ref() != Some(data.timeline) {
            *self = Self {
                timeline: Some(data.timeline.clone()),
                ..Self::default()
            };
        }
        let extent = data.extent();
        if self.fit
            && let Some((lo, hi)) = extent
        {
            let lo = lo.clamp(EARLIEST, LATEST);
            let hi = hi.clamp(EARLIEST, LATEST);
            let raw = hi - lo;
            // A margin of a twentieth on each side, so the first and last marks are off the
            // frame; a lone instant gets an hour around it.
            self.span = (raw + raw / 10).max(HOUR);
            self.center = lo + raw / 2;
            self.clamp();
        }
        extent
    }

    /// Keeps the span within the zoom limits and the view within the calendar.
    fn clamp(&mut self) {
        self.span = self.span.clamp(MIN_SPAN, MAX_SPAN);
        let half = self.span / 2;
        self.center = self
            .center
            .clamp(EARLIEST + half, LATEST - (self.span - half));
    }

    /// The first and last second in view.
    fn bounds(&self) -> (i64, i64) {
        let start = self.center - self.span / 2;
        (start, start + self.span)
    }

    /// Draws the view of `data` in `area`, in a pane frame.
    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        ctx: &Ctx<'_>,
        data: &ViewData<'_>,
    ) {
        let has_extent = self.follow(data).is_some();
        let p = ctx.palette;
        let (start, end) = self.bounds();
        let name = ellipsize(data.name, usize::from(area.width / 4).max(8));
        let mut extra = Vec::new();
        if has_extent {
            extra.push(format!(
                "{} → {}",
                fmt_bound(start, self.span),
                fmt_bound(end, self.span)
            ));
            extra.push(if self.fit {
                format!("{} (fit)", fmt_span(self.span))
            } else {
                fmt_span(self.span)
            });
        }
        if let Some(l) = ctx.loading() {
            extra.push(l);
        }
        let extra = (!extra.is_empty()).then(|| format!("· {}", extra.join(" · ")));
        let block = pane_block(
            title(format!("Timeline of {name}"), extra, p),
            ctx.focused,
            p,
        );
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if !has_extent {
            frame.render_widget(
                Paragraph::new(Span::styled(
                    format!("No events in {} yet.", data.name),
                    p.dim,
                )),
                inner,
            );
            return;
        }
        if inner.width < 20 || inner.height < 4 {
            frame.render_widget(
                Paragraph::new(Span::styled("Too small for the timeline.", p.dim)),
                inner,
            );
            return;
        }
        Chart {
            start,
            span: self.span,
            palette: p,
        }
        .draw(frame.buffer_mut(), inner, data);
    }
}

/// The kinds of mark, a lane each, top to bottom: the timeline as it stands (anomalies, fixed
/// points, events on schedule, manipulated ones), then the versions that no longer stand: the
/// time an event had before a manipulation replaced it (superseded), and manipulations that
/// were undone (reverted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    Anomaly,
    Fixed,
    OnSchedule,
    Manipulated,
    Superseded,
    Reverted,
}

impl Mark {
    const LANES: [Mark; 6] = [
        Mark::Anomaly,
        Mark::Fixed,
        Mark::OnSchedule,
        Mark::Manipulated,
        Mark::Superseded,
        Mark::Reverted,
    ];
    /// When all share one lane, the mark a cell shows: the most telling.
    const PRIORITY: [Mark; 6] = [
        Mark::Anomaly,
        Mark::Fixed,
        Mark::Manipulated,
        Mark::OnSchedule,
        Mark::Reverted,
        Mark::Superseded,
    ];

    /// The mark of a version of an event, by where it stands in its lineage.
    fn of(event: &EventRecord) -> Mark {
        match event.status {
            EventStatus::Superseded => Mark::Superseded,
            EventStatus::Reverted => Mark::Reverted,
            _ if event.fixed_point => Mark::Fixed,
            EventStatus::OnSchedule => Mark::OnSchedule,
            EventStatus::Manipulated => Mark::Manipulated,
        }
    }

    /// Whether it marks an event of the timeline as it stands.
    fn standing(self) -> bool {
        !matches!(self, Mark::Superseded | Mark::Reverted)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    fn glyph(self) -> &'static str {
        match self {
            Mark::Anomaly => "⚠",
            Mark::Fixed => "◆",
            Mark::OnSchedule => "●",
            Mark::Manipulated => "▲",
            Mark::Superseded => "○",
            Mark::Reverted => "×",
        }
    }

    /// The lane's name.
    fn lane(self) -> &'static str {
        match self {
            Mark::Anomaly => "anomalies",
            Mark::Fixed => "fixed points",
            Mark::OnSchedule => "on schedule",
            Mark::Manipulated => "manipulated",
            Mark::Superseded => "superseded",
            Mark::Reverted => "reverted",
        }
    }

    /// The legend's words.
    fn legend(self) -> &'static str {
        match self {
            Mark::Anomaly => "anomaly",
            Mark::Fixed => "fixed point",
            Mark::OnSchedule => "on schedule",
            Mark::Manipulated => "manipulated",
            Mark::Superseded => "superseded",
            Mark::Reverted => "reverted",
        }
    }

    fn style(self, p: &Palette) -> Style {
        match self {
            Mark::Anomaly => p.error,
            Mark::Fixed => p.title,
            Mark::OnSchedule => p.ok,
            Mark::Manipulated => p.warn,
            Mark::Superseded | Mark::Reverted => p.dim,
        }
    }
}

/// The traveller's line and label.
const YOU_LINE: &str = "┃";
const YOU_GLYPH: &str = "▼";
/// An anchor's line and the glyph of its label.
const ANCHOR_LINE: &str = "┆";
const ANCHOR_GLYPH: &str = "▽";
/// The width of the lane names' column, when there is room for it.
const LANE_NAMES: u16 = 13;
/// The density row's bars, from one event in a cell to the most in any cell.
const BARS: [&str; 8] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

/// The bar for `count` events in a cell when the fullest cell holds `most`: the lowest bar
/// for one event, the full bar only for the fullest cells.
fn bar(count: u32, most: u32) -> Option<&'static str> {
    if count == 0 || most == 0 {
        return None;
    }
    let level = if most == 1 {
        BARS.len() - 1
    } else {
        // 1 → 0, most → 7, linear between.
        ((u64::from(count - 1) * (BARS.len() as u64 - 1)).div_ceil(u64::from(most - 1))) as usize
    };
    BARS.get(level.min(BARS.len() - 1)).copied()
}

/// Where each part of the chart goes, top to bottom, for an area `height` rows high: the
/// labels row, the lanes (one row each, or one shared lane when short), the density row, the
/// axis and its tick labels, then the legend and the list of events in view on what is left.
#[derive(Debug, PartialEq, Eq)]
struct Rows {
    /// The lanes and their rows; `None` is the shared lane.
    lanes: Vec<(Option<Mark>, u16)>,
    density: Option<u16>,
    axis: u16,
    legend: u16,
    /// The first row of the list of events in view, and how many rows it has.
    list: Option<(u16, u16)>,
}

impl Rows {
    fn new(top: u16, height: u16, legend_lines: u16) -> Rows {
        let full = Mark::LANES.len() as u16;
        // Labels, lanes, density, axis, ticks.
        let (lanes, density): (Vec<(Option<Mark>, u16)>, bool) = if height >= full + 4 {
            let rows = Mark::LANES
                .iter()
                .enumerate()
                .map(|(i, &m)| (Some(m), top + 1 + i as u16))
                .collect();
            (rows, true)
        } else {
            (vec![(None, top + 1)], height >= 5)
        };
        let after_lanes = top + 1 + lanes.len() as u16;
        let density = density.then_some(after_lanes);
        let axis = after_lanes + u16::from(density.is_some());
        let left = (top + height).saturating_sub(axis + 2);
        let legend = legend_lines.min(left);
        // A blank row, then the list, when at least two events' lines fit.
        let list_top = axis + 2 + legend + 1;
        let list_rows = (top + height).saturating_sub(list_top);
        Rows {
            lanes,
            density,
            axis,
            legend,
            list: (list_rows >= 2).then_some((list_top, list_rows)),
        }
    }
}

/// One frame of the chart: the part of time shown and where it goes.
struct Chart<'p> {
    start: i64,
    span: i64,
    palette: &'p Palette,
}

impl Chart<'_> {
    /// The column of `t` among `width`, or `None` when out of view.
    fn column(&self, t: i64, width: u16) -> Option<u16> {
        let offset = t.checked_sub(self.start)?;
        if offset < 0 || offset > self.span {
            return None;
        }
        let col = i128::from(offset) * i128::from(width) / i128::from(self.span);
        u16::try_from(col)
            .ok()
            .map(|c| c.min(width.saturating_sub(1)))
    }

    fn draw(&self, buf: &mut Buffer, area: Rect, data: &ViewData<'_>) {
        let p = self.palette;
        let names = if area.width >= 60 { LANE_NAMES } else { 0 };
        let plot = Rect {
            x: area.x + names,
            width: area.width - names,
            ..area
        };
        let top = area.y;

        // One pass over the events: a bit per kind and a count per column, and what is out
        // of view.
        let width = plot.width;
        let mut cells = vec![0u8; usize::from(width)];
        let mut counts = vec![0u32; usize::from(width)];
        let mut in_view: Vec<(&EventRecord, Mark)> = Vec::new();
        let (mut earlier, mut later) = (0usize, 0usize);
        let anomalous: HashSet<&str> = data
            .anomalies
            .iter()
            .flat_map(|a| a.subjects.iter().map(String::as_str))
            .collect();
        let end = self.start + self.span;
        let marked = data.events.iter().map(|e| (e, Mark::of(e)));
        let mut total = 0usize;
        for (event, mark) in marked {
            total += 1;
            let t = event.time.timestamp();
            if t < self.start {
                earlier += 1;
                continue;
            }
            if t > end {
                later += 1;
                continue;
            }
            let Some(col) = self.column(t, width) else {
                continue;
            };
            let mut bits = mark.bit();
            let shown = if mark.standing() && anomalous.contains(event.event_id.as_str()) {
                bits |= Mark::Anomaly.bit();
                Mark::Anomaly
            } else {
                mark
            };
            in_view.push((event, shown));
            cells[usize::from(col)] |= bits;
            // The density row counts the events of the timeline as it stands.
            if mark.standing() {
                counts[usize::from(col)] = counts[usize::from(col)].saturating_add(1);
            }
        }
        let most = counts.iter().copied().max().unwrap_or(0);
        let paused = data.paused_here();
        let legend = legend_lines(area.width, most, paused);
        let rows = Rows::new(top, area.height, legend.len() as u16);
        let axis = rows.axis;
        let marks_end = rows.density.map_or(axis, |d| d + 1);

        // Vertical lines first, so marks are drawn over them.
        let here = data.here().and_then(|t| self.column(t.timestamp(), width));
        let anchors: Vec<(u16, &Anchor)> = data
            .anchors()
            .filter_map(|a| Some((self.column(a.timestamp.timestamp(), width)?, a)))
            .collect();
        for y in top + 1..marks_end {
            for (col, _) in &anchors {
                set(buf, plot.x + col, y, ANCHOR_LINE, p.text);
            }
            if let Some(col) = here {
                set(buf, plot.x + col, y, YOU_LINE, p.key);
            }
        }

        for &(lane, y) in &rows.lanes {
            if names > 0 {
                let name = lane.map_or("events", Mark::lane);
                buf.set_stringn(area.x, y, name, usize::from(names - 1), p.dim);
            }
            for (col, &bits) in cells.iter().enumerate() {
                let mark = match lane {
                    Some(m) => (bits & m.bit() != 0).then_some(m),
                    None => Mark::PRIORITY.into_iter().find(|m| bits & m.bit() != 0),
                };
                if let Some(m) = mark {
                    set(buf, plot.x + col as u16, y, m.glyph(), m.style(p));
                }
            }
        }
        if let Some(y) = rows.density {
            if names > 0 {
                buf.set_stringn(area.x, y, "per cell", usize::from(names - 1), p.dim);
            }
            for (col, &count) in counts.iter().enumerate() {
                if let Some(b) = bar(count, most) {
                    set(buf, plot.x + col as u16, y, b, p.text);
                }
            }
        }
        if in_view.is_empty() {
            let message = if total == 0 {
                format!("No events in {} yet.", data.name)
            } else {
                format!("No events in view ({earlier} earlier, {later} later).")
            };
            let y = rows
                .lanes
                .get(rows.lanes.len() / 2)
                .map_or(top + 1, |l| l.1);
            let len = message.chars().count() as u16;
            let x = plot.x + width.saturating_sub(len) / 2;
            buf.set_stringn(x, y, &message, usize::from(width), p.dim);
        }

        let labels = Labels {
            here,
            paused,
            earlier,
            later,
            anchors: &anchors,
        };
        self.draw_top_row(buf, plot, top, &labels);
        self.draw_axis(buf, plot, axis);
        self.draw_legend(
            buf,
            area,
            axis + 2,
            &legend[..legend.len().min(usize::from(rows.legend))],
        );

        if let Some((y, height)) = rows.list {
            self.list(buf, Rect::new(area.x, y, area.width, height), in_view);
        }
    }

    /// The top row: you, what is out of view, then anchors, where there is room.
    fn draw_top_row(&self, buf: &mut Buffer, plot: Rect, top: u16, labels: &Labels<'_>) {
        let p = self.palette;
        let width = plot.width;
        let mut taken = vec![false; usize::from(width)];
        // A label points at its column with its glyph: `▼ you` from it rightwards, or
        // `you ▼` leftwards to it when that side is free; one cell apart from the others.
        let label = |buf: &mut Buffer,
                     col: u16,
                     glyph: &str,
                     words: &str,
                     style: Style,
                     taken: &mut [bool]| {
            let len = words.chars().count() as u16 + 2;
            let right = (col + len <= width).then_some(col);
            let left = (col + 1 >= len).then(|| col + 1 - len);
            let free = |from: u16| {
                let lo = usize::from(from.saturating_sub(1));
                let hi = usize::from(from + len + 1).min(taken.len());
                !taken[lo..hi].iter().any(|&t| t)
            };
            let (from, text) = match (right.filter(|&f| free(f)), left.filter(|&f| free(f))) {
                (Some(from), _) => (from, format!("{glyph} {words}")),
                (None, Some(from)) => (from, format!("{words} {glyph}")),
                (None, None) => return,
            };
            taken[usize::from(from)..usize::from(from + len)].fill(true);
            buf.set_stringn(plot.x + from, top, text, usize::from(len), style);
        };
        if let Some(col) = labels.here {
            let you = if labels.paused {
                "you ⏸ paused"
            } else {
                "you"
            };
            label(buf, col, YOU_GLYPH, you, p.selected, &mut taken);
        }
        if labels.earlier > 0 {
            label(buf, 0, "◀", &labels.earlier.to_string(), p.dim, &mut taken);
        }
        if labels.later > 0 {
            label(
                buf,
                width - 1,
                "▶",
                &labels.later.to_string(),
                p.dim,
                &mut taken,
            );
        }
        for (col, anchor) in labels.anchors {
            let what = anchor.description.as_deref().unwrap_or("anchor");
            let what = ellipsize(what, 16);
            label(buf, *col, ANCHOR_GLYPH, &what, p.text, &mut taken);
        }
    }

    /// The axis along `plot` on row `axis`, and its ticks under it.
    fn draw_axis(&self, buf: &mut Buffer, plot: Rect, axis: u16) {
        let p = self.palette;
        let width = plot.width;
        let ticks = ticks(self.start, self.span, width);
        for x in 0..width {
            set(buf, plot.x + x, axis, "─", p.dim);
        }
        let mut free_from = 0u16;
        for (t, text) in ticks {
            let Some(col) = self.column(t, width) else {
                continue;
            };
            set(buf, plot.x + col, axis, "┬", p.dim);
            let len = text.chars().count() as u16;
            if col >= free_from && col + len <= width {
                buf.set_stringn(plot.x + col, axis + 1, &text, usize::from(len), p.text);
                free_from = col + len + 1;
            }
        }
    }

    /// The legend's lines from row `top` on.
    fn draw_legend(&self, buf: &mut Buffer, area: Rect, top: u16, legend: &[Vec<Entry>]) {
        let p = self.palette;
        for (i, line) in legend.iter().enumerate() {
            let y = top + i as u16;
            let mut x = area.x;
            for entry in line {
                buf.set_string(x, y, entry.glyph(), entry.style(p));
                let words = entry.words();
                buf.set_string(x + entry.glyph_width(), y, &words, p.text);
                x += entry.width() as u16 + 2;
            }
        }
    }

    /// The events in view, one a line, in time order: all of them when they fit, else the
    /// most telling (anomalies, fixed points, manipulations, then the rest) and a count of
    /// the others.
    fn list(&self, buf: &mut Buffer, area: Rect, mut events: Vec<(&EventRecord, Mark)>) {
        let p = self.palette;
        let total = events.len();
        if total == 0 {
            return;
        }
        let room = usize::from(area.height);
        let shown = if total <= room { total } else { room - 1 };
        if shown < total {
            let rank = |m: Mark| Mark::PRIORITY.iter().position(|&x| x == m);
            events.sort_by_key(|(e, m)| (rank(*m), e.time, e.event_id.clone()));
            events.truncate(shown);
        }
        events.sort_by_key(|(e, _)| (e.time, e.event_id.clone()));
        let width = usize::from(area.width);
        for (i, (event, mark)) in events.iter().enumerate() {
            let y = area.y + i as u16;
            set(buf, area.x, y, mark.glyph(), mark.style(p));
            let when = event.time.format("%Y-%m-%d %H:%M").to_string();
            buf.set_stringn(area.x + 2, y, &when, width.saturating_sub(2), p.dim);
            let x = 2 + when.chars().count() + 2;
            let mut what = format!("{} · {}", event.description, event.location);
            if !mark.standing() {
                what = format!("{what} ({})", mark.lane());
            }
            let what = ellipsize(&what, width.saturating_sub(x));
            buf.set_stringn(area.x + x as u16, y, what, width.saturating_sub(x), p.text);
        }
        if shown < total {
            let y = area.y + shown as u16;
            let more = format!("… {} more in view; zoom in (+) to see them", total - shown);
            buf.set_stringn(area.x + 2, y, more, width.saturating_sub(2), p.dim);
        }
    }
}

/// Sets one cell, when it is inside the buffer.
/// What the top row labels: you, the events out of view on each side, the anchors.
struct Labels<'a> {
    here: Option<u16>,
    paused: bool,
    earlier: usize,
    later: usize,
    anchors: &'a [(u16, &'a Anchor)],
}

fn set(buf: &mut Buffer, x: u16, y: u16, symbol: &str, style: Style) {
    if let Some(cell) = buf.cell_mut((x, y)) {
        cell.set_symbol(symbol).set_style(style);
    }
}

/// An entry of the legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Mark(Mark),
    /// The traveller, with whether their clock is paused.
    You(bool),
    Anchor,
    /// The density row's bars, with the most events in one cell.
    Density(u32),
}

impl Entry {
    fn all(most: u32, paused: bool) -> [Entry; 9] {
        [
            Entry::Mark(Mark::OnSchedule),
            Entry::Mark(Mark::Manipulated),
            Entry::Mark(Mark::Fixed),
            Entry::Mark(Mark::Anomaly),
            Entry::Mark(Mark::Superseded),
            Entry::Mark(Mark::Reverted),
            Entry::You(paused),
            Entry::Anchor,
            Entry::Density(most),
        ]
    }

    fn glyph(self) -> &'static str {
        match self {
            Entry::Mark(m) => m.glyph(),
            Entry::You(_) => YOU_LINE,
            Entry::Anchor => ANCHOR_LINE,
            Entry::Density(_) => "▁▄█",
        }
    }

    fn glyph_width(self) -> u16 {
        self.glyph().chars().count() as u16 + 1
    }

    fn words(self) -> String {
        match self {
            Entry::Mark(m) => m.legend().to_owned(),
            Entry::You(false) => "you".to_owned(),
            Entry::You(true) => "you (clock paused)".to_owned(),
            Entry::Anchor => "anchor".to_owned(),
            Entry::Density(most) if most > 1 => format!("events per cell (1…{most})"),
            Entry::Density(_) => "events per cell".to_owned(),
        }
    }

    fn style(self, p: &Palette) -> Style {
        match self {
            Entry::Mark(m) => m.style(p),
            Entry::You(_) => p.key,
            Entry::Anchor | Entry::Density(_) => p.text,
        }
    }

    /// Cells it takes: glyph, space, words.
    fn width(self) -> usize {
        usize::from(self.glyph_width()) + self.words().chars().count()
    }
}

/// The legend's entries, wrapped to lines of `width`, two spaces apart.
fn legend_lines(width: u16, most: u32, paused: bool) -> Vec<Vec<Entry>> {
    let mut lines: Vec<Vec<Entry>> = vec![Vec::new()];
    let mut used = 0usize;
    for entry in Entry::all(most, paused) {
        if used > 0 && used + entry.width() > usize::from(width) {
            lines.push(Vec::new());
            used = 0;
        }
        used += entry.width() + 2;
        if let Some(line) = lines.last_mut() {
            line.push(entry);
        }
    }
    lines
}

/// A step between ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Seconds(i64),
    Months(i32),
    Years(i32),
}

impl Step {
    const ALL: [Step; 27] = [
        Step::Seconds(MINUTE),
        Step::Seconds(5 * MINUTE),
        Step::Seconds(10 * MINUTE),
        Step::Seconds(15 * MINUTE),
        Step::Seconds(30 * MINUTE),
        Step::Seconds(HOUR),
        Step::Seconds(3 * HOUR),
        Step::Seconds(6 * HOUR),
        Step::Seconds(12 * HOUR),
        Step::Seconds(DAY),
        Step::Seconds(2 * DAY),
        Step::Seconds(WEEK),
        Step::Seconds(2 * WEEK),
        Step::Months(1),
        Step::Months(3),
        Step::Months(6),
        Step::Years(1),
        Step::Years(2),
        Step::Years(5),
        Step::Years(10),
        Step::Years(20),
        Step::Years(50),
        Step::Years(100),
        Step::Years(200),
        Step::Years(500),
        Step::Years(1000),
        Step::Years(2000),
    ];

    fn seconds(self) -> i64 {
        match self {
            Step::Seconds(s) => s,
            Step::Months(m) => i64::from(m) * MONTH,
            Step::Years(y) => i64::from(y) * YEAR,
        }
    }
}

/// Ticks for the view `start..start + span` drawn `width` cells wide: (timestamp, label),
/// on calendar boundaries (1 January, the first of a month, midnight, the hour), as many as
/// fit with their labels apart. Years for centuries, dates for days, `HH:MM` within a day
/// (the date at midnight).
fn ticks(start: i64, span: i64, width: u16) -> Vec<(i64, String)> {
    let end = start.saturating_add(span);
    let same_year = instant(start).year() == instant(end).year();
    let label_width = |step: Step| match step {
        Step::Seconds(s) if s < DAY => 5,
        Step::Seconds(_) if same_year => 5,
        Step::Seconds(_) => 10,
        Step::Months(_) => 7,
        Step::Years(_) => 4,
    };
    let step = Step::ALL
        .into_iter()
        .find(|&s| {
            let cells = i128::from(s.seconds()) * i128::from(width) / i128::from(span.max(1));
            cells >= i128::from(label_width(s) + 2)
        })
        .unwrap_or(Step::Years(2000));
    let mut out = Vec::new();
    // More ticks than cells cannot be drawn; the bound also keeps the loops finite.
    let most = usize::from(width) + 1;
    match step {
        Step::Seconds(s) => {
            // Every step divides a day or is whole days or weeks, and 0001-01-01 was a
            // Monday at midnight: counting from it aligns ticks on the clock and calendar.
            let from = start.saturating_sub(EARLIEST);
            let mut t = EARLIEST + (from + s - 1).div_euclid(s) * s;
            while t <= end && out.len() < most {
                let at = instant(t);
                let text = if s < DAY && (t - EARLIEST) % DAY != 0 {
                    at.format("%H:%M").to_string()
                } else if same_year {
                    at.format("%m-%d").to_string()
                } else {
                    at.format("%Y-%m-%d").to_string()
                };
                out.push((t, text));
                t += s;
            }
        }
        Step::Months(m) => {
            let first = instant(start);
            let mut index = first.year() * 12 + first.month0() as i32;
            if month_start(index).is_none_or(|t| t < start) {
                index += 1;
            }
            index = (index + m - 1).div_euclid(m) * m;
            while let Some(t) = month_start(index).filter(|&t| t <= end) {
                if out.len() >= most {
                    break;
                }
                out.push((t, instant(t).format("%Y-%m").to_string()));
                index += m;
            }
        }
        Step::Years(y) => {
            let first = instant(start);
            let mut year = first.year();
            if month_start(year * 12).is_none_or(|t| t < start) {
                year += 1;
            }
            year = (year + y - 1).div_euclid(y) * y;
            while let Some(t) = month_start(year * 12).filter(|&t| t <= end) {
                if out.len() >= most {
                    break;
                }
                out.push((t, year.to_string()));
                year += y;
            }
        }
    }
    out
}

/// The first instant of month `index` (year × 12 + month from 0), as a timestamp.
fn month_start(index: i32) -> Option<i64> {
    let year = index.div_euclid(12);
    let month = u32::try_from(index.rem_euclid(12)).ok()? + 1;
    let date = NaiveDate::from_ymd_opt(year, month, 1)?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp())
}

/// A timestamp as an instant, clamped to the accepted calendar.
fn instant(t: i64) -> Instant {
    DateTime::<Utc>::from_timestamp(t.clamp(EARLIEST, LATEST), 0).unwrap_or_default()
}

/// An end of the view, as precise as the view is wide.
fn fmt_bound(t: i64, span: i64) -> String {
    let at = instant(t);
    if span >= 5 * YEAR {
        at.format("%Y").to_string()
    } else if span >= 2 * DAY {
        at.format("%Y-%m-%d").to_string()
    } else {
        at.format("%Y-%m-%d %H:%M").to_string()
    }
}

/// A span in words: `250 years`, `1.5 days`, `10 minutes`.
pub fn fmt_span(seconds: i64) -> String {
    const UNITS: [(i64, &str); 7] = [
        (YEAR, "year"),
        (MONTH, "month"),
        (WEEK, "week"),
        (DAY, "day"),
        (HOUR, "hour"),
        (MINUTE, "minute"),
        (1, "second"),
    ];
    let (unit, word) = UNITS
        .into_iter()
        .find(|&(unit, _)| seconds * 100 >= unit * 95)
        .unwrap_or((1, "second"));
    let value = seconds as f64 / unit as f64;
    let rounded = value.round();
    if value >= 9.5 || (value - rounded).abs() < 0.05 {
        let n = rounded as i64;
        format!("{n} {word}{}", if n == 1 { "" } else { "s" })
    } else {
        format!("{value:.1} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calendar_ends_are_what_the_service_accepts() {
        use crate::model::parse_instant;
        let first = parse_instant("t", "0001-01-01T00:00:00Z").map(|t| t.timestamp());
        let last = parse_instant("t", "9999-12-31T23:59:59Z").map(|t| t.timestamp());
        assert_eq!(first.ok(), Some(EARLIEST));
        assert_eq!(last.ok(), Some(LATEST));
        assert_eq!(instant(EARLIEST).weekday(), chrono::Weekday::Mon);
    }

    #[test]
    fn spans_read_as_words() {
        assert_eq!(fmt_span(250 * YEAR), "250 years");
        assert_eq!(fmt_span(YEAR), "1 year");
        assert_eq!(fmt_span(DAY), "1 day");
        assert_eq!(fmt_span(DAY + DAY / 2), "1.5 days");
        assert_eq!(fmt_span(10 * MINUTE), "10 minutes");
        assert_eq!(fmt_span(MONTH), "1 month");
        assert_eq!(fmt_span(MAX_SPAN), "9999 years");
    }

    #[test]
    fn the_ladder_goes_from_the_calendar_to_ten_minutes_and_back() {
        let mut v = TimelineView::new();
        v.zoom_to(chrono::Duration::seconds(MAX_SPAN));
        let mut down = vec![v.span];
        for _ in 0..20 {
            v.zoom_in();
            down.push(v.span);
        }
        assert_eq!(&down[..ZOOMS.len()], &ZOOMS[..]);
        assert_eq!(v.span, MIN_SPAN);
        for _ in 0..20 {
            v.zoom_out();
        }
        assert_eq!(v.span, MAX_SPAN);
    }

    #[test]
    fn panning_stops_at_the_ends_of_the_calendar() {
        let mut v = TimelineView::new();
        v.zoom_to(chrono::Duration::seconds(DAY));
        v.pan(i32::MAX);
        assert_eq!(v.bounds().1, LATEST);
        v.pan(i32::MIN);
        assert_eq!(v.bounds().0, EARLIEST);
        v.zoom_out();
        assert_eq!(v.bounds().0, EARLIEST);
    }

    #[test]
    fn the_suggested_keys_are_keys_and_free_in_the_default_map() {
        use crate::tui::keymap::{Key, KeyMap};
        let map = KeyMap::default();
        for (keys, _, _) in SUGGESTED_KEYS {
            for name in keys.split_whitespace() {
                let key: Result<Key, _> = name.parse();
                let Ok(key) = key else {
                    panic!("'{name}' is not a key");
                };
                let bound = map.bindings().iter().find(|b| b.keys.contains(&key));
                assert!(bound.is_none(), "'{name}' is bound: {bound:?}");
            }
        }
    }

    fn tick_labels(start: &str, span: i64, width: u16) -> Vec<String> {
        let start = crate::model::parse_instant("t", start)
            .map(|t| t.timestamp())
            .unwrap_or_default();
        ticks(start, span, width)
            .into_iter()
            .map(|(_, l)| l)
            .collect()
    }

    #[test]
    fn ticks_fit_the_zoom() {
        assert_eq!(
            tick_labels("1750-06-01T00:00:00Z", 300 * YEAR, 60),
            ["1800", "1850", "1900", "1950", "2000", "2050"]
        );
        assert_eq!(
            tick_labels("2026-11-21T22:00:00Z", DAY, 60),
            [
                "11-22", "03:00", "06:00", "09:00", "12:00", "15:00", "18:00", "21:00"
            ]
        );
        assert_eq!(
            tick_labels("2026-11-22T10:02:00Z", 10 * MINUTE, 60),
            ["10:05", "10:10"]
        );
        assert_eq!(
            tick_labels("2026-01-15T00:00:00Z", YEAR, 60),
            ["2026-04", "2026-07", "2026-10", "2027-01"]
        );
        // Whole calendar, narrow: a tick every two thousand years at most.
        assert_eq!(
            tick_labels("0001-01-01T00:00:00Z", MAX_SPAN, 20),
            ["2000", "4000", "6000", "8000"]
        );
    }
}
