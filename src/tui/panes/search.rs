//! The event search pane: location and time-range inputs, a results table, and the detail of
//! one event with its causes and lineage.

use std::collections::{HashMap, HashSet};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui_textarea::TextArea;

use super::{Ctx, InputKey};
use crate::model::{EventId, EventStatus, TimeRange, TimelineId};
use std::future::Future;
use std::sync::Arc;

use crate::error::ServiceError;
use crate::service::prelude::*;
use crate::service::{EventRecord, MonitorReport, PageRequest, SearchQuery, SignificantEventQuery};
use crate::tui::action::{Reply, Slot};
use crate::tui::requests::Requests;
use crate::tui::theme::Palette;
use crate::tui::widgets::{self, Cursor, ellipsize, fmt_time, pane_block, title};

/// Which input is being edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The location.
    Location,
    /// The time range.
    Range,
}

/// State of the search pane.
#[derive(Debug)]
pub struct SearchPane {
    /// Location input.
    pub location: TextArea<'static>,
    /// Time range input (`START/END`).
    pub range: TextArea<'static>,
    /// The input being edited, if any.
    pub editing: Option<Input>,
    /// The timeline the results come from.
    pub timeline: Option<TimelineId>,
    /// Results of the last search.
    pub results: Vec<EventRecord>,
    /// Selection and scroll in the results.
    pub cursor: Cursor,
    /// Whether the selected event's detail is open.
    pub detail: bool,
    /// The first line of the detail shown, when it is taller than the pane (j/k scroll it).
    pub detail_scroll: usize,
    /// Whether a search has been answered.
    pub searched: bool,
    /// Causes looked up for the detail view because the results did not hold them.
    pub causes: HashMap<EventId, EventRecord>,
    /// Events the monitor's open anomalies name in the searched timeline: their rows say so.
    pub troubled: HashSet<EventId>,
    /// Why the inputs as they were last submitted do not parse: shown under them until a
    /// search that parses is sent.
    pub refused: Option<String>,
}

const LOCATION_HINT: &str = "e.g. Paris (empty: anywhere)";
const RANGE_HINT: &str = "START/END, START/P1M or a date; empty: all";

impl Default for SearchPane {
    fn default() -> Self {
        Self {
            location: widgets::input("", LOCATION_HINT),
            range: widgets::input("", RANGE_HINT),
            editing: None,
            timeline: None,
            results: Vec::new(),
            cursor: Cursor::default(),
            detail: false,
            detail_scroll: 0,
            searched: false,
            causes: HashMap::new(),
            troubled: HashSet::new(),
            refused: None,
        }
    }
}

/// What the inputs ask for, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// Location text, if any.
    pub location: Option<String>,
    /// Time range, if any.
    pub range: Option<TimeRange>,
}

impl SearchPane {
    /// Sends the search of `timeline` with the inputs as they are (the pane shows that
    /// timeline's results from now on); inputs that do not parse are refused under them, and
    /// nothing is sent.
    pub fn send_search(
        &mut self,
        timeline: TimelineId,
        svc: Arc<dyn TimelineService>,
        requests: &mut Requests,
    ) {
        if let Ok(job) = self.fetch(timeline, svc) {
            requests.fetch(Slot::Search, job, Reply::Search);
        }
    }

    /// Looks up the causes the detail of the selected event names, if any are missing (see
    /// [`SearchPane::fetch_causes`]).
    pub fn send_causes(&self, svc: Arc<dyn TimelineService>, requests: &mut Requests) {
        if let Some(job) = self.fetch_causes(svc) {
            requests.fetch(Slot::Causes, job, Reply::Causes);
        }
    }

    /// The search of `timeline` with the inputs as they are (the pane shows that timeline's
    /// results from now on), or why the inputs do not parse (marked invalid).
    fn fetch(
        &mut self,
        timeline: TimelineId,
        svc: Arc<dyn TimelineService>,
    ) -> Result<impl Future<Output = Result<Vec<EventRecord>, ServiceError>> + Send + 'static, String>
    {
        let query = match self.query() {
            Ok(q) => q,
            Err(e) => {
                self.invalid();
                self.refused = Some(e.clone());
                return Err(e);
            }
        };
        self.refused = None;
        self.timeline = Some(timeline.clone());
        Ok(async move {
            svc.search_events(SearchQuery {
                timeline_id: Some(timeline),
                location: query.location,
                time_range: query.range,
                page: PageRequest::first(PageRequest::MAX_LIMIT),
            })
            .await
            .map(|p| p.items)
        })
    }

    /// Looks up the causes of the event in the detail view that the results do not hold (the
    /// search's range or location left them out), so the detail names them; `None` when
    /// there is nothing to look up.
    fn fetch_causes(
        &self,
        svc: Arc<dyn TimelineService>,
    ) -> Option<impl Future<Output = Result<Vec<EventRecord>, ServiceError>> + Send + 'static> {
        let (event, timeline) = (self.selected()?, self.timeline.clone()?);
        let unnamed = self.unnamed_causes(event);
        if unnamed.is_empty() {
            return None;
        }
        Some(async move {
            let mut found = Vec::new();
            for id in unnamed {
                let query = SignificantEventQuery {
                    timeline_id: timeline.clone(),
                    significant_event: id.to_string(),
                };
                // The lineage's event that stands now; a cause that cannot be found stays an id.
                if let Ok(check) = svc.check_timeline(query).await
                    && let Some(mut record) = check.event
                {
                    record.event_id = id;
                    found.push(record);
                }
            }
            Ok(found)
        })
    }

    /// Results arrived: shown, and marked from `known`, what the monitor knows now of the
    /// searched timeline (with changes pushed, the next monitor report may be a long way off).
    pub fn answered(&mut self, results: Vec<EventRecord>, known: Option<&MonitorReport>) {
        self.set_results(results);
        if let Some(report) = known {
            self.mark_troubled(report);
        }
    }

    /// Causes of `event` that neither the results nor earlier look-ups name.
    pub fn unnamed_causes(&self, event: &EventRecord) -> Vec<EventId> {
        event
            .causes
            .iter()
            .filter(|c| !self.causes.contains_key(*c) && self.result(c).is_none())
            .cloned()
            .collect()
    }

    /// Keeps causes looked up for the detail view.
    pub fn name_causes(&mut self, causes: Vec<EventRecord>) {
        for cause in causes {
            self.causes.insert(cause.event_id.clone(), cause);
        }
    }

    /// The latest of `event`'s causes that the results or earlier look-ups name, if any.
    pub fn latest_cause(&self, event: &EventRecord) -> Option<EventRecord> {
        event
            .causes
            .iter()
            .filter_map(|c| self.result(c).or_else(|| self.causes.get(c)))
            .max_by_key(|c| c.time)
            .cloned()
    }

    fn result(&self, id: &EventId) -> Option<&EventRecord> {
        self.results.iter().find(|r| &r.event_id == id)
    }

    /// Asks for events at `location` at any time (`:search PLACE`): a range typed earlier
    /// would silently narrow what a command line says nothing about.
    pub fn anywhere_at_any_time(&mut self, location: &str) {
        self.location = widgets::input(location, LOCATION_HINT);
        self.range = widgets::input("", RANGE_HINT);
        self.detail = false;
    }

    /// Takes the events the monitor's open anomalies name in `timeline`, when it is the one
    /// searched.
    pub fn mark_troubled(&mut self, report: &MonitorReport) {
        if self.timeline.as_ref() != Some(&report.timeline_id) {
            return;
        }
        self.troubled = report
            .anomalies
            .iter()
            .flat_map(|a| a.subjects.iter())
            .filter_map(|s| s.parse::<EventId>().ok())
            .collect();
    }

    /// Forgets the results of a timeline that no longer exists.
    pub fn forget(&mut self) {
        self.troubled.clear();
        self.timeline = None;
        self.causes.clear();
        self.results.clear();
        self.cursor = Cursor::default();
        self.detail = false;
        self.searched = false;
    }

    /// The inputs do not parse: the results of an earlier search go, so nothing on screen
    /// passes for an answer to what is typed now (the title says no count).
    pub fn invalid(&mut self) {
        self.results.clear();
        self.cursor = Cursor::default();
        self.detail = false;
        self.searched = false;
    }

    /// Parses the inputs; the error is for a flash message.
    pub fn query(&self) -> Result<Query, String> {
        let location = widgets::input_text(&self.location);
        let range = widgets::input_text(&self.range);
        let range = if range.is_empty() {
            None
        } else {
            Some(TimeRange::parse_typed("time range", &range).map_err(|e| e.to_string())?)
        };
        Ok(Query {
            location: (!location.is_empty()).then_some(location),
            range,
        })
    }

    /// Takes new results, keeping the selected event selected when it is still there.
    pub fn set_results(&mut self, results: Vec<EventRecord>) {
        let keep = self
            .selected()
            .map(|e| (e.event_id.clone(), e.lineage.clone()));
        self.results = results;
        self.searched = true;
        // The selected event, or, after a manipulation or revert replaced it, its lineage's
        // event that stands now.
        self.cursor.selected = keep
            .and_then(|(id, lineage)| {
                let results = &self.results;
                results
                    .iter()
                    .position(|e| e.event_id == id)
                    .or_else(|| results.iter().position(|e| e.lineage == lineage))
            })
            .unwrap_or(0);
        self.cursor.clamp(self.results.len());
        if self.results.is_empty() {
            self.detail = false;
        }
    }

    /// The selected event.
    pub fn selected(&self) -> Option<&EventRecord> {
        self.results.get(self.cursor.selected)
    }

    /// A key while an input is edited: Enter searches with the inputs, Esc leaves them, Tab
    /// goes to the other input, anything else edits.
    pub fn input_key(&mut self, key: KeyEvent) -> InputKey {
        if self.editing.is_none() {
            return InputKey::NotEditing;
        }
        match key.code {
            KeyCode::Enter => {
                self.editing = None;
                self.detail = false;
                return InputKey::Search;
            }
            KeyCode::Esc => self.editing = None,
            KeyCode::Tab | KeyCode::BackTab => {
                self.editing = Some(match self.editing {
                    Some(Input::Location) => Input::Range,
                    _ => Input::Location,
                });
            }
            _ => {
                if let Some(input) = self.editing_input() {
                    widgets::edit(input, key);
                }
            }
        }
        InputKey::Taken
    }

    /// Starts editing the location, with the results list in view.
    pub fn start_editing(&mut self) {
        self.detail = false;
        self.editing = Some(Input::Location);
    }

    /// The input being edited.
    pub fn editing_input(&mut self) -> Option<&mut TextArea<'static>> {
        match self.editing? {
            Input::Location => Some(&mut self.location),
            Input::Range => Some(&mut self.range),
        }
    }

    /// Draws the pane; `timeline_name` names the searched timeline.
    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        ctx: &Ctx<'_>,
        timeline_name: &str,
    ) {
        let p = ctx.palette;
        let mut extra = vec![format!("in {timeline_name}")];
        if self.searched {
            extra.push(format!("{} found", self.results.len()));
        }
        if let Some(l) = ctx.loading() {
            extra.push(l);
        }
        let block = pane_block(
            title("Event search", Some(extra.join(" · ")), p),
            ctx.focused,
            p,
        );
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [inputs, body] =
            Layout::vertical([Constraint::Length(3), Constraint::Min(0)]).areas(inner);
        let [loc, range] =
            Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)])
                .areas(inputs);
        let editing = self.editing;
        widgets::render_input(
            frame,
            loc,
            &mut self.location,
            "Location",
            editing == Some(Input::Location),
            p,
        );
        widgets::render_input(
            frame,
            range,
            &mut self.range,
            "Time range",
            editing == Some(Input::Range),
            p,
        );
        if self.detail
            && let Some(event) = self.selected()
        {
            {
                let named = |id: &EventId| self.result(id).or_else(|| self.causes.get(id));
                let troubled = self.troubled.contains(&event.event_id);
                let mut lines = detail_lines(event, &named, troubled, body.width, p);
                let height = usize::from(body.height);
                if lines.len() > height && height >= 2 {
                    // Taller than the pane: a window on it, and a last line saying how to
                    // read the rest.
                    let shown = height - 1;
                    let last = lines.len() - shown;
                    self.detail_scroll = self.detail_scroll.min(last);
                    let from = self.detail_scroll;
                    let more = format!(
                        "lines {}–{} of {} · j/k read on",
                        from + 1,
                        from + shown,
                        lines.len()
                    );
                    lines = lines.drain(from..from + shown).collect();
                    lines.push(Line::from(Span::styled(more, p.dim)));
                } else {
                    self.detail_scroll = 0;
                }
                frame.render_widget(Paragraph::new(lines), body);
                return;
            }
        }
        if let Some(why) = &self.refused {
            let text = format!("{}. Fix it and press enter.", why.trim_end_matches('.'));
            let said = Paragraph::new(Span::styled(text, p.error));
            frame.render_widget(said.wrap(ratatui::widgets::Wrap { trim: true }), body);
            return;
        }
        if self.results.is_empty() {
            let msg = if self.searched {
                "No events match. Change the location or the time range and press enter."
            } else {
                "Press / to type a location and a time range, then enter to search."
            };
            frame.render_widget(Paragraph::new(Span::styled(msg, p.dim)), body);
            return;
        }
        let height = body.height.saturating_sub(1) as usize;
        let range = self.cursor.window(self.results.len(), height);
        let selected = self.cursor.selected;
        // What is cut ends in "…" (the description takes what the other columns and their
        // four gaps leave).
        let described = usize::from(body.width).saturating_sub(1 + 19 + 20 + 12 + 4);
        let rows = range.map(|i| {
            let e = &self.results[i];
            let (status, style) = status_cell(e, self.troubled.contains(&e.event_id), p);
            Row::new(vec![
                Cell::from(if i == selected { "▶" } else { " " }),
                Cell::from(fmt_time(&e.time)),
                Cell::from(ellipsize(&e.location, 20)),
                Cell::from(ellipsize(&e.description, described)),
                Cell::from(Span::styled(status, style)),
            ])
            .style(if i == selected { p.selected } else { p.text })
        });
        let table = Table::new(
            rows,
            [
                Constraint::Length(1),
                Constraint::Length(19),
                Constraint::Length(20),
                Constraint::Fill(1),
                Constraint::Length(12),
            ],
        )
        .header(Row::new(["", "Time", "Location", "Description", "Status"]).style(p.title))
        .column_spacing(1);
        frame.render_widget(table, body);
    }
}

/// An event's status as a row shows it; `troubled` when an open anomaly names it (an event in a
/// causal loop is "on schedule" and still in trouble).
fn status_cell(e: &EventRecord, troubled: bool, p: &Palette) -> (String, ratatui::style::Style) {
    if troubled {
        return ("⚠ in paradox".into(), p.error);
    }
    if e.fixed_point {
        return ("fixed point".into(), p.warn);
    }
    match e.status {
        EventStatus::OnSchedule => ("on schedule".into(), p.text),
        EventStatus::Manipulated => ("manipulated".into(), p.warn),
        EventStatus::Superseded => ("superseded".into(), p.dim),
        EventStatus::Reverted => ("reverted".into(), p.dim),
    }
}

/// Width of the detail view's label column, its two spaces included.
const LABEL_WIDTH: usize = 15;

/// The detail of one event: what, when, where, its causes (named when the results hold them or
/// they were looked up) and its lineage; a long value wraps under itself, not under the labels.
fn detail_lines<'a, 'r>(
    e: &EventRecord,
    named: &dyn Fn(&EventId) -> Option<&'r EventRecord>,
    troubled: bool,
    width: u16,
    p: &Palette,
) -> Vec<Line<'a>> {
    let value_width = usize::from(width).saturating_sub(LABEL_WIDTH).max(10);
    let mut lines = vec![Line::from(Span::styled(e.description.clone(), p.title))];
    let mut field = |name: &str, value: String| {
        for (i, part) in widgets::wrap_words(&value, value_width)
            .into_iter()
            .enumerate()
        {
            let label = if i == 0 { name } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("{label:>13}  "), p.dim),
                Span::styled(part, p.text),
            ]));
        }
    };
    field("id", e.event_id.to_string());
    field("time", fmt_time(&e.time));
    field("location", e.location.clone());
    let mut status = status_cell(e, false, p).0;
    // What its row marks "⚠ in paradox" says why here, beside its own state.
    if troubled {
        status.push_str("; ⚠ an open anomaly names it (the monitor says which)");
    }
    field("status", status);
    if e.causes.is_empty() {
        field("causes", "none (an uncaused event)".into());
    }
    for (i, cause) in e.causes.iter().enumerate() {
        let text = named(cause)
            .map(|r| format!("{}, {} ({cause})", r.description, fmt_time(&r.time)))
            .unwrap_or_else(|| cause.to_string());
        field(if i == 0 { "causes" } else { "" }, text);
    }
    let mut lineage = format!("started as {}", e.lineage);
    if let Some(prev) = &e.supersedes {
        lineage.push_str(&format!("; replaces {prev}"));
    }
    if let Some(next) = &e.superseded_by {
        lineage.push_str(&format!("; replaced by {next}"));
    }
    field("lineage", lineage);
    if let Some(author) = &e.author {
        field("changed by", author.to_string());
    }
    lines
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::tui::unit::{key, typed};

    #[test]
    fn tab_switches_inputs_and_enter_asks_for_the_search() {
        let mut pane = SearchPane::default();
        assert_eq!(pane.input_key(key("enter")), InputKey::NotEditing);
        pane.detail = true;
        pane.start_editing();
        assert!(!pane.detail, "the results are in view while typing");
        for k in typed("Paris") {
            assert_eq!(pane.input_key(k), InputKey::Taken);
        }
        pane.input_key(key("tab"));
        assert_eq!(pane.editing, Some(Input::Range));
        for k in typed("1889-03-10") {
            pane.input_key(k);
        }
        assert_eq!(pane.input_key(key("enter")), InputKey::Search);
        assert_eq!(pane.editing, None);
        let query = pane.query().expect("both inputs parse");
        assert_eq!(query.location.as_deref(), Some("Paris"));
        assert!(query.range.is_some());
    }

    #[test]
    fn esc_leaves_the_inputs_as_typed() {
        let mut pane = SearchPane::default();
        pane.start_editing();
        for k in typed("Rome") {
            pane.input_key(k);
        }
        assert_eq!(pane.input_key(key("esc")), InputKey::Taken);
        assert_eq!(pane.editing, None);
        assert_eq!(widgets::input_text(&pane.location), "Rome");
    }
}
