//! `chronoscope monitor ID --follow`: the anomalies now, then each change as it comes (and
//! `events monitor --follow`: the matching events, likewise).
//!
//! A stream that is cut (the server restarted, the network dropped) is opened again after a
//! pause; it starts again with a snapshot, of which a person is shown only what changed (with
//! `--json` the snapshot line is printed: replace what you had). A first refusal (an unknown
//! timeline, a bad token) or the timeline's deletion ends it.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use serde::Serialize;

use super::output::{Output, human};
use crate::error::ServiceError;
use crate::model::{EventId, TimelineId, format_instant};
use crate::service::prelude::*;
use crate::service::{
    Anomaly, EventsChange, MonitorChange, MonitorEvent, MonitorEventsQuery, MonitorReport,
    MonitorWatch, MonitoredEvent, Page, PageRequest,
};

/// First pause before reconnecting; doubled up to [`MOST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_secs(1);
const MOST_PAUSE: Duration = Duration::from_secs(30);

/// One printed change, as `--json` writes it (one object per line).
#[derive(Serialize)]
struct Line<'a> {
    /// The log position it was seen at.
    position: u64,
    /// `snapshot`, `appeared` or `resolved`.
    event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<&'a MonitorReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    anomaly: Option<&'a Anomaly>,
}

impl<'a> From<&'a MonitorEvent> for Line<'a> {
    fn from(e: &'a MonitorEvent) -> Self {
        let (report, anomaly) = match &e.change {
            MonitorChange::Snapshot(r) => (Some(r), None),
            MonitorChange::Appeared(a) | MonitorChange::Resolved(a) => (None, Some(a)),
        };
        Line {
            position: e.position,
            event: e.change.name(),
            report,
            anomaly,
        }
    }
}

/// Prints changes of `timeline`'s anomalies until interrupted or refused.
pub async fn follow(
    service: &dyn TimelineService,
    timeline: TimelineId,
    out: &mut Output<'_>,
) -> Result<(), ServiceError> {
    let mut after = None;
    // What was printed as open: a stream opened again starts with a snapshot, of which a person
    // is shown only what changed.
    let mut open: Option<Vec<Anomaly>> = None;
    let mut backoff = Backoff::default();
    loop {
        let watch = MonitorWatch {
            timeline_id: timeline.clone(),
            after,
        };
        let cut = match service.watch_monitor(watch).await {
            // Only a stream that was running is retried: a first refusal is the answer.
            Err(e) if open.is_none() => return Err(e),
            Err(e) => backoff.refused(e)?,
            Ok(mut changes) => loop {
                match changes.next().await {
                    Some(Ok(event)) => {
                        after = Some(event.position);
                        backoff = Backoff::default();
                        let text = text(&event, open.as_deref());
                        out.print_line(&Line::from(&event), |_| text)?;
                        fold(&mut open, event.change);
                    }
                    Some(Err(e)) => break cut_by(e)?,
                    None => break "the server ended the stream".to_owned(),
                }
            },
        };
        backoff.wait(&cut).await;
    }
}

/// The pause before a stream is opened again: [`FIRST_PAUSE`] after a change was seen, doubled
/// after each cut up to [`MOST_PAUSE`], and at least as long as a rate limit asks.
struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Self(FIRST_PAUSE)
    }
}

impl Backoff {
    /// Why a stream that was running could not be opened again, when it is worth another try
    /// (the store is down, too many requests); otherwise the error that ends following.
    fn refused(&mut self, e: ServiceError) -> Result<String, ServiceError> {
        match e {
            ServiceError::RateLimited { retry_after_secs } => {
                self.0 = self.0.max(Duration::from_secs(retry_after_secs));
                Ok("too many requests".to_owned())
            }
            e => cut_by(e),
        }
    }

    /// Says why the stream was cut (`cut`) and waits before it is opened again.
    async fn wait(&mut self, cut: &str) {
        eprintln!("chronoscope: {cut}; reconnecting in {} s", self.0.as_secs());
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(MOST_PAUSE);
    }
}

/// Why a stream was cut by `e`, when it is worth opening again (the server is unavailable);
/// otherwise the error that ends following.
fn cut_by(e: ServiceError) -> Result<String, ServiceError> {
    match e {
        ServiceError::Unavailable(_) => Ok(e.to_string()),
        e => Err(e),
    }
}

/// The anomalies open after `change`.
fn fold(open: &mut Option<Vec<Anomaly>>, change: MonitorChange) {
    let list = open.get_or_insert_with(Vec::new);
    match change {
        MonitorChange::Snapshot(report) => *list = report.anomalies,
        MonitorChange::Appeared(a) => {
            list.retain(|o| o.anomaly_id != a.anomaly_id);
            list.push(a);
        }
        MonitorChange::Resolved(a) => list.retain(|o| o.anomaly_id != a.anomaly_id),
    }
}

/// A change for a person: the report first, then `+` for what appears, `-` for what resolves;
/// a later snapshot (after a reconnection) only as what changed since `open`.
fn text(e: &MonitorEvent, open: Option<&[Anomaly]>) -> String {
    let appeared = |a: &Anomaly| {
        format!(
            "+ {} {} {}\n",
            a.anomaly_id,
            format!("{:?}", a.severity).to_lowercase(),
            a.description
        )
    };
    let resolved = |a: &Anomaly| format!("- {} resolved: {}\n", a.anomaly_id, a.description);
    match (&e.change, open) {
        (MonitorChange::Snapshot(report), None) => human::monitor(report),
        (MonitorChange::Snapshot(report), Some(open)) => {
            let mut out = String::new();
            for a in &report.anomalies {
                if !open.contains(a) {
                    out.push_str(&appeared(a));
                }
            }
            for a in open {
                if !report
                    .anomalies
                    .iter()
                    .any(|n| n.anomaly_id == a.anomaly_id)
                {
                    out.push_str(&resolved(a));
                }
            }
            out
        }
        (MonitorChange::Appeared(a), _) => appeared(a),
        (MonitorChange::Resolved(a), _) => resolved(a),
    }
}

/// `chronoscope events monitor --follow`: the matching events now, then each change as it
/// comes; a cut stream is opened again, and of its snapshot a person is shown only what
/// changed meanwhile (with `--json`, one object per line, the snapshot too).
pub async fn follow_events(
    service: &dyn TimelineService,
    query: MonitorEventsQuery,
    out: &mut Output<'_>,
) -> Result<(), ServiceError> {
    let mut known: Option<HashMap<EventId, MonitoredEvent>> = None;
    let mut backoff = Backoff::default();
    loop {
        let cut = match service.watch_events(query.clone()).await {
            Err(e) if known.is_none() => return Err(e),
            Err(e) => backoff.refused(e)?,
            Ok(mut changes) => loop {
                match changes.next().await {
                    Some(Ok(mut update)) => {
                        backoff = Backoff::default();
                        if let EventsChange::Snapshot {
                            events,
                            next_cursor,
                        } = &mut update.change
                        {
                            rest_of_snapshot(service, &query, events, next_cursor.take()).await?;
                        }
                        let text = events_text(&update.change, known.as_ref());
                        out.print_line(&update, |_| text)?;
                        fold_events(&mut known, update.change);
                    }
                    Some(Err(e)) => break cut_by(e)?,
                    None => break "the server ended the stream".to_owned(),
                }
            },
        };
        backoff.wait(&cut).await;
    }
}

/// Completes a snapshot page: the pages of `monitor-events` after `cursor`, so a person
/// following sees every matching event (a stream's snapshot is one page).
async fn rest_of_snapshot(
    service: &dyn TimelineService,
    query: &MonitorEventsQuery,
    events: &mut Vec<MonitoredEvent>,
    mut cursor: Option<String>,
) -> Result<(), ServiceError> {
    while let Some(after) = cursor {
        let mut next = query.clone();
        next.page = PageRequest {
            limit: Some(PageRequest::MAX_LIMIT),
            cursor: Some(after),
        };
        let page = service.monitor_events(next).await?;
        events.extend(page.items);
        cursor = page.next_cursor;
    }
    Ok(())
}

/// The events known after `change`.
fn fold_events(known: &mut Option<HashMap<EventId, MonitoredEvent>>, change: EventsChange) {
    let map = known.get_or_insert_with(HashMap::new);
    match change {
        EventsChange::Snapshot { events, .. } => {
            *map = events
                .into_iter()
                .map(|e| (e.event.event_id.clone(), e))
                .collect();
        }
        EventsChange::Changed { event } => {
            map.insert(event.event.event_id.clone(), event);
        }
        EventsChange::Removed { event_id } => {
            map.remove(&event_id);
        }
    }
}

/// A change for a person: the table first; then `+` for a new event, `~` for one whose state
/// moved, `-` for one that no longer stands; a later snapshot only as what changed.
fn events_text(change: &EventsChange, known: Option<&HashMap<EventId, MonitoredEvent>>) -> String {
    let line = |mark: char, m: &MonitoredEvent| {
        let state = human::event_state(m);
        format!(
            "{mark} {} {} {} [{state}] {}\n",
            format_instant(&m.event.time),
            m.event.event_id,
            m.event.location,
            m.event.description
        )
    };
    let told = |m: &MonitoredEvent| match known.and_then(|k| k.get(&m.event.event_id)) {
        None => Some(line('+', m)),
        Some(old) if old != m => Some(line('~', m)),
        Some(_) => None,
    };
    match (change, known) {
        (EventsChange::Snapshot { events, .. }, None) => human::monitored_events(&Page {
            items: events.clone(),
            next_cursor: None,
        }),
        (EventsChange::Snapshot { events, .. }, Some(known)) => {
            let mut out: String = events.iter().filter_map(told).collect();
            for id in known.keys() {
                if !events.iter().any(|e| &e.event.event_id == id) {
                    out.push_str(&format!("- {id} no longer stands\n"));
                }
            }
            out
        }
        (EventsChange::Changed { event }, _) => told(event).unwrap_or_default(),
        (EventsChange::Removed { event_id }, _) => format!("- {event_id} no longer stands\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EventStatus, parse_instant};
    use crate::service::{EventRecord, Relative};

    fn monitored(id: &str, in_paradox: bool) -> MonitoredEvent {
        let event_id: EventId = id.parse().expect("an event id");
        MonitoredEvent {
            event: EventRecord {
                event_id: event_id.clone(),
                description: format!("event {id}"),
                time: parse_instant("t", "1860-06-01T12:00:00Z").expect("a time"),
                location: "Turin".into(),
                causes: Vec::new(),
                fixed_point: false,
                status: EventStatus::OnSchedule,
                lineage: event_id,
                supersedes: None,
                superseded_by: None,
                author: None,
            },
            changed_at: None,
            in_paradox,
            relative: Relative::Past,
        }
    }

    #[test]
    fn a_snapshot_after_reconnecting_prints_only_what_changed_meanwhile() {
        let mut known = None;
        fold_events(
            &mut known,
            EventsChange::Snapshot {
                events: vec![monitored("evt_a", false), monitored("evt_b", false)],
                next_cursor: None,
            },
        );
        let again = EventsChange::Snapshot {
            events: vec![monitored("evt_a", true), monitored("evt_c", false)],
            next_cursor: None,
        };
        let text = events_text(&again, known.as_ref());
        let lines: Vec<_> = text.lines().map(|l| l.split(' ').next()).collect();
        assert_eq!(lines, [Some("~"), Some("+"), Some("-")], "{text}");
        assert!(text.contains("in paradox") && text.contains("evt_b no longer stands"));
        assert_eq!(
            events_text(&again, known.as_ref()),
            text,
            "printing changes nothing"
        );
        fold_events(&mut known, again.clone());
        assert!(events_text(&again, known.as_ref()).is_empty());
    }
}
