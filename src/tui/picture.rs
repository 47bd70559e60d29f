//! The timeline picture (`v`): the selected timeline's events along time, full screen, with its
//! anomalies, the traveller and their anchors ([`TimelineView`] draws it). This module owns
//! what the picture shows (fetched when it opens, and again when a change is pushed or the
//! events change), its keys and where it is drawn.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::Clear;

use super::action::{Reply, Slot};
use super::app::{App, all_pages};
use super::keymap::Key;
use super::modal::Modal;
use super::panes::Ctx;
use super::panes::timeline_view::{SUGGESTED_KEYS, TimelineView, ViewCommand, ViewData};
use crate::model::{Anchor, TimelineId};
use crate::service::{Anomaly, EventRecord, PageRequest, SearchQuery};

/// Most events the picture fetches (the dashboard's row limit).
const MOST_EVENTS: usize = super::app::MAX_ROWS;

/// What the picture shows and how it is zoomed.
#[derive(Debug)]
pub struct Picture {
    /// The timeline drawn.
    pub timeline: TimelineId,
    /// Its events (current and past heads alike: reverted and superseded ones are drawn too).
    pub events: Vec<EventRecord>,
    /// The traveller's anchors.
    pub anchors: Vec<Anchor>,
    /// Zoom and pan.
    pub view: TimelineView,
    /// Whether its data is being fetched.
    pub loading: bool,
}

impl Picture {
    fn new(timeline: TimelineId) -> Self {
        Self {
            timeline,
            events: Vec::new(),
            anchors: Vec::new(),
            view: TimelineView::new(),
            loading: true,
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

impl App {
    /// Opens the picture of the selected timeline and fetches what it shows.
    pub(super) fn open_picture(&mut self) {
        let Some(timeline) = self.timelines.selected().map(|t| t.id.clone()) else {
            return self.flash_error("No timeline selected.");
        };
        self.modal = Some(Modal::Picture(Box::new(Picture::new(timeline.clone()))));
        self.request_picture(timeline);
    }

    /// Fetches the events of `timeline` (up to the row limit) and the traveller's anchors.
    pub(super) fn request_picture(&mut self, timeline: TimelineId) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Picture, async move {
            let query = |page: PageRequest| SearchQuery {
                timeline_id: Some(timeline.clone()),
                location: None,
                time_range: None,
                page,
            };
            let mut events = all_pages(|page| svc.search_events(query(page))).await?;
            events.truncate(MOST_EVENTS);
            let anchors = all_pages(|page| svc.list_anchors(page)).await?;
            Ok(Reply::Picture {
                timeline,
                events,
                anchors,
            })
        });
    }

    /// Fetches the picture's data again if it is open (something it shows has changed).
    pub(super) fn refresh_picture(&mut self) {
        if let Some(Modal::Picture(p)) = &self.modal {
            let timeline = p.timeline.clone();
            self.request_picture(timeline);
        }
    }

    /// The picture's data arrived: shown if the picture of that timeline is still open.
    pub(super) fn on_picture(
        &mut self,
        timeline: TimelineId,
        events: Vec<EventRecord>,
        anchors: Vec<Anchor>,
    ) {
        if let Some(Modal::Picture(p)) = &mut self.modal
            && p.timeline == timeline
        {
            p.events = events;
            p.anchors = anchors;
            p.loading = false;
        }
    }

    /// A key in the picture: a view command, or Esc / q / v to close it.
    pub(super) fn picture_key(&mut self, mut p: Box<Picture>, key: KeyEvent) -> Option<Modal> {
        if matches!(
            key.code,
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('v')
        ) {
            return None;
        }
        if let Some(command) = command_for(key) {
            let Picture {
                timeline,
                events,
                anchors,
                view,
                ..
            } = &mut *p;
            self.with_view_data(timeline, events, anchors, |data| {
                view.apply(command, data);
            });
        }
        Some(Modal::Picture(p))
    }

    /// Runs `f` with what the view draws of `timeline`: its events and anchors as fetched, the
    /// open anomalies the monitor knows of there (it watches the selected timeline), and you.
    fn with_view_data<R>(
        &self,
        timeline: &TimelineId,
        events: &[EventRecord],
        anchors: &[Anchor],
        f: impl FnOnce(&ViewData<'_>) -> R,
    ) -> R {
        let anomalies: Vec<&Anomaly> = if self.monitor.timeline.as_ref() == Some(timeline) {
            self.monitor
                .rows
                .iter()
                .filter(|r| r.resolved.is_none())
                .map(|r| &r.anomaly)
                .collect()
        } else {
            Vec::new()
        };
        let name = self.timelines.name_of(timeline);
        f(&ViewData {
            timeline,
            name: &name,
            events,
            anomalies: &anomalies,
            traveller: self.whoami.as_ref(),
            anchors,
        })
    }

    /// Draws the open picture over the panes in `area`.
    pub(super) fn draw_picture(&mut self, frame: &mut Frame<'_>, area: Rect) {
        let Some(Modal::Picture(mut p)) = self.modal.take() else {
            return;
        };
        {
            let Picture {
                timeline,
                events,
                anchors,
                view,
                loading,
            } = &mut *p;
            let ctx = Ctx {
                palette: &self.palette,
                now: self.now(),
                focused: true,
                here: self.whoami.as_ref().map(|w| &w.timeline_id),
                pending: *loading,
            };
            frame.render_widget(Clear, area);
            self.with_view_data(timeline, events, anchors, |data| {
                view.render(frame, area, &ctx, data);
            });
        }
        self.modal = Some(Modal::Picture(p));
    }
}
