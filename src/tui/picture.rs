//! The timeline picture (`v`): the selected timeline's events along time, full screen, with its
//! anomalies, the traveller and their anchors ([`TimelineView`] draws it). The [`Picture`] owns
//! what it shows (the loop fetches it when it opens, and again when a change is pushed or the
//! events change), its keys and its drawing; a [`Scene`] lends it what the panes know.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::Clear;

use super::action::Reply;
use super::effect::Outcome;
use super::keymap::Key;
use super::panes::Ctx;
use super::panes::monitor::MonitorPane;
use super::panes::timeline_view::{SUGGESTED_KEYS, TimelineView, ViewCommand, ViewData};
use super::panes::timelines::TimelinesPane;
use crate::model::{Anchor, TimelineId};
use std::sync::Arc;

use super::paging::{MAX_ROWS, all_pages};
use crate::error::ServiceError;
use crate::service::prelude::*;
use crate::service::{Anomaly, EventRecord, PageRequest, SearchQuery, TravellerStatus};

/// What the picture shows and how it is zoomed.
#[derive(Debug)]
pub struct Picture {
    /// The timeline drawn.
    pub timeline: TimelineId,
    /// Its events, every version: standing, superseded and reverted.
    pub events: Vec<EventRecord>,
    /// The traveller's anchors.
    pub anchors: Vec<Anchor>,
    /// Zoom and pan.
    pub view: TimelineView,
    /// Whether its data is being fetched.
    pub loading: bool,
}

impl Picture {
    /// The picture of `timeline`, waiting for its data.
    pub fn new(timeline: TimelineId) -> Self {
        Self {
            timeline,
            events: Vec::new(),
            anchors: Vec::new(),
            view: TimelineView::new(),
            loading: true,
        }
    }

    /// Fetches the events of `timeline`, past versions too (up to the row limit), and the
    /// traveller's anchors: the picture's [`Reply`].
    pub async fn fetch(
        timeline: TimelineId,
        svc: Arc<dyn TimelineService>,
    ) -> Result<Reply, ServiceError> {
        let query = |page: PageRequest| SearchQuery {
            timeline_id: Some(timeline.clone()),
            location: None,
            time_range: None,
            page,
        };
        let mut events = all_pages(|page| svc.event_versions(query(page))).await?;
        events.truncate(MAX_ROWS);
        let anchors = all_pages(|page| svc.list_anchors(page)).await?;
        Ok(Reply::Picture {
            timeline,
            events,
            anchors,
        })
    }

    /// Its data arrived: shown if it is the data of the timeline drawn.
    pub fn show(&mut self, timeline: &TimelineId, events: Vec<EventRecord>, anchors: Vec<Anchor>) {
        if &self.timeline == timeline {
            self.events = events;
            self.anchors = anchors;
            self.loading = false;
        }
    }

    /// A key in the picture: a view command, or Esc / q / v to close it.
    pub fn key(&mut self, key: KeyEvent, scene: &Scene<'_>) -> Outcome {
        if matches!(
            key.code,
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('v')
        ) {
            return Outcome::close();
        }
        if let Some(command) = command_for(key) {
            let data = scene.data(&self.timeline, &self.events, &self.anchors);
            self.view.apply(command, &data);
        }
        Outcome::keep()
    }

    /// Draws the picture over the panes in `area`.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, ctx: &Ctx<'_>, scene: &Scene<'_>) {
        let ctx = Ctx {
            focused: true,
            pending: self.loading,
            ..*ctx
        };
        frame.render_widget(Clear, area);
        let data = scene.data(&self.timeline, &self.events, &self.anchors);
        self.view.render(frame, area, &ctx, &data);
    }
}

/// What the picture draws of the dashboard around it: the open anomalies the monitor knows
/// of in the timeline drawn (it watches the selected timeline), its name, and you.
#[derive(Debug)]
pub struct Scene<'a> {
    name: String,
    anomalies: Vec<&'a Anomaly>,
    traveller: Option<&'a TravellerStatus>,
}

impl<'a> Scene<'a> {
    /// The scene around the picture of `timeline`.
    pub fn of(
        timeline: &TimelineId,
        timelines: &TimelinesPane,
        monitor: &'a MonitorPane,
        traveller: Option<&'a TravellerStatus>,
    ) -> Self {
        let anomalies = if monitor.timeline.as_ref() == Some(timeline) {
            monitor
                .rows
                .iter()
                .filter(|r| r.resolved.is_none())
                .map(|r| &r.anomaly)
                .collect()
        } else {
            Vec::new()
        };
        Self {
            name: timelines.name_of(timeline),
            anomalies,
            traveller,
        }
    }

    fn data<'b>(
        &'b self,
        timeline: &'b TimelineId,
        events: &'b [EventRecord],
        anchors: &'b [Anchor],
    ) -> ViewData<'b> {
        ViewData {
            timeline,
            name: &self.name,
            events,
            anomalies: &self.anomalies,
            traveller: self.traveller,
            anchors,
        }
    }
}

/// The view command a key stands for, from [`SUGGESTED_KEYS`].
fn command_for(key: KeyEvent) -> Option<ViewCommand> {
    let pressed = Key::from_event(&key);
    SUGGESTED_KEYS.iter().find_map(|(keys, command, _)| {
        keys.split_whitespace()
            .filter_map(|k| k.parse::<Key>().ok())
            .any(|k| k == pressed)
            .then_some(*command)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::{key, palette, screen, timeline};

    fn panes() -> (TimelinesPane, MonitorPane) {
        let mut timelines = TimelinesPane::default();
        timelines.set(vec![timeline(0, "primary"), timeline(1, "Tesla 1889")]);
        (timelines, MonitorPane::default())
    }

    #[test]
    fn view_keys_zoom_and_esc_q_v_close() {
        let (timelines, monitor) = panes();
        let tesla = timeline(1, "Tesla 1889").id;
        let scene = Scene::of(&tesla, &timelines, &monitor, None);
        let mut picture = Picture::new(tesla.clone());
        let outcome = picture.key(key("+"), &scene);
        assert!(!outcome.close && outcome.effects.is_empty());
        assert_ne!(picture.view, TimelineView::new(), "+ zooms in");
        for k in ["esc", "q", "v"] {
            assert!(Picture::new(tesla.clone()).key(key(k), &scene).close, "{k}");
        }
    }

    #[test]
    fn data_of_another_timeline_is_not_shown() {
        let mut picture = Picture::new(TimelineId::primary());
        picture.show(&timeline(1, "Tesla 1889").id, Vec::new(), Vec::new());
        assert!(picture.loading, "still waiting for its own data");
        picture.show(&TimelineId::primary(), Vec::new(), Vec::new());
        assert!(!picture.loading);
    }

    #[test]
    fn the_picture_draws_its_timeline_by_name() {
        let (timelines, monitor) = panes();
        let tesla = timeline(1, "Tesla 1889").id;
        let scene = Scene::of(&tesla, &timelines, &monitor, None);
        let mut picture = Picture::new(tesla);
        let p = palette();
        let ctx = Ctx {
            palette: &p,
            now: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            focused: false,
            here: None,
            pending: false,
            offline: None,
        };
        let text = screen(80, 20, |f| picture.render(f, f.area(), &ctx, &scene));
        assert!(text.contains("Tesla 1889"), "{text}");
    }
}
