//! `GET /v1/monitor-timeline/stream`: a timeline's anomalies as Server-Sent Events.
//!
//! Each event's `id:` is the log position it was seen at. A client that reconnects with
//! `Last-Event-ID` (a browser's EventSource does) is answered like a new one, starting with a
//! snapshot of the state now, so it misses nothing (see `crate::engine` `watch`). Event names:
//! `snapshot` (data: the monitor's report, every open anomaly; replaces what the client knew),
//! `appeared` and `resolved` (data: the anomaly), `error` (data: a problem; the stream then
//! ends, e.g. when the timeline was deleted), `access_revoked` (data: a problem; the caller
//! lost the read right on the timeline, re-checked on every push, and the stream ends). A `: heartbeat` comment comes every 15 s of
//! silence; the stream ends cleanly when the server shuts down. It is authenticated and counted
//! in the rate limits like every other call, once per connection. Open streams are capped per
//! traveller and in all (`--max-streams-per-traveller`, `--max-streams`): beyond, 429 with
//! `Retry-After`. Every stream of one timeline reads one shared scan per change (see
//! `crate::engine` `watch`), so a stream costs its connection, not a scan.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{FromRef, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::StreamExt;
use serde::Deserialize;

use super::ApiResult;
use crate::model::TimelineId;
use crate::server::extract::{Caller, QueryParams};
use crate::server::problem::{Problem, RequestCtx};
use crate::server::views::SearchParams;
use crate::server::{AppState, ServerConfig, Stopping, StreamSlots};
use crate::service::{EventsChange, MonitorChange, MonitorWatch};

/// The query of the stream.
#[derive(Debug, Deserialize)]
pub struct StreamQuery {
    /// The timeline to follow.
    timeline_id: TimelineId,
}

/// Follow a timeline's anomalies as they appear and resolve (Server-Sent Events).
#[utoipa::path(get, path = "/v1/monitor-timeline/stream", tag = "Monitoring",
    operation_id = "streamMonitorTimeline",
    params(
        ("timeline_id" = String, Query, description = "The timeline to follow"),
        ("Last-Event-ID" = Option<String>, Header,
            description = "The `id` of the last event received (the stream then starts with a `snapshot` of the state now)"),
    ),
    responses((status = 200, content_type = "text/event-stream", body = String,
        description = "An event stream: `snapshot` (data: the monitor's report), then \
            `appeared` and `resolved` (data: the anomaly), each with `id:` its log position; \
            `error` (data: a problem) ends it, and so does `access_revoked` (data: a problem) \
            when the caller's read right on the timeline is taken away; a `: heartbeat` \
            comment every 15 s of silence; 429 when the caller or the server has as many streams open as allowed"))
)]
pub async fn stream_monitor_timeline(
    caller: Caller,
    State(streaming): State<Streaming>,
    headers: HeaderMap,
    QueryParams(q): QueryParams<StreamQuery>,
) -> ApiResult {
    let after = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    Problem::invalid(
                        "Last-Event-ID",
                        "must be the id of an event of this stream (a log position, a whole number)",
                    )
                })?,
        ),
    };
    // Held by the stream for as long as it is open.
    let slot = streaming.slots.take(caller.traveller.as_str())?;
    let changes = caller
        .service
        .watch_monitor(MonitorWatch {
            timeline_id: q.timeline_id,
            after,
        })
        .await?;
    Ok(event_stream(changes, slot, streaming, |change| {
        let event = Event::default()
            .id(change.position.to_string())
            .event(change.change.name());
        match &change.change {
            MonitorChange::Snapshot(report) => event.json_data(report),
            MonitorChange::Appeared(anomaly) | MonitorChange::Resolved(anomaly) => {
                event.json_data(anomaly)
            }
        }
    }))
}

/// Follow the events `monitor-events` reports (Server-Sent Events; the same fields, as query
/// parameters): a `snapshot` of the first page of matching events with their change state
/// (`limit`, default and at most 1000; `next_cursor` when more match: read the rest with
/// `GET /v1/monitor-events` and that cursor), then, for every matching event, paged or not,
/// `changed` for one that is added, or is a new head after a manipulation, revert or merge, or
/// whose change state moved (an anomaly names it now or no longer, as after an isolation), and
/// `removed` for one that no longer stands; within a second of the write. Streams asking the
/// same question share the work, which follows what a write touched, not the timeline's size;
/// a stream that falls far behind is sent a fresh `snapshot`. The same caps and heartbeat as
/// the monitor stream; `error` ends it (the timeline was deleted).
#[utoipa::path(get, path = "/v1/monitor-events/stream", tag = "Guide",
    operation_id = "streamMonitorEvents",
    params(SearchParams),
    responses((status = 200, content_type = "text/event-stream", body = String,
        description = "An event stream: `snapshot` (data: `{\"kind\":\"snapshot\",\"events\":[...],\"next_cursor\":...}`, one page), \
            `changed` (data: `{\"kind\":\"changed\",\"event\":{...}}`), `removed` (data: \
            `{\"kind\":\"removed\",\"event_id\":...}`), each with `id:` its log position; \
            `error` (data: a problem) ends it, and so does `access_revoked` (data: a problem) \
            when the caller's read right on the timeline is taken away; a `: heartbeat` \
            comment every 15 s of silence; 429 when the caller or the server has as many streams open as allowed"))
)]
pub async fn stream_monitor_events(
    caller: Caller,
    State(streaming): State<Streaming>,
    QueryParams(q): QueryParams<SearchParams>,
) -> ApiResult {
    let slot = streaming.slots.take(caller.traveller.as_str())?;
    let changes = caller.service.watch_events(q.into()).await?;
    Ok(event_stream(changes, slot, streaming, |update| {
        let name = match &update.change {
            EventsChange::Snapshot { .. } => "snapshot",
            EventsChange::Changed { .. } => "changed",
            EventsChange::Removed { .. } => "removed",
        };
        Event::default()
            .id(update.position.to_string())
            .event(name)
            .json_data(&update.change)
    }))
}

/// What every stream needs of the server: the signal that it stops, the heartbeat's interval
/// and the slots that cap open streams.
#[derive(Clone)]
pub struct Streaming {
    stopping: Stopping,
    config: Arc<ServerConfig>,
    slots: Arc<StreamSlots>,
}

impl FromRef<AppState> for Streaming {
    fn from_ref(state: &AppState) -> Self {
        Self {
            stopping: state.stopping.clone(),
            config: Arc::clone(&state.config),
            slots: Arc::clone(&state.streams),
        }
    }
}

/// A stream of `changes` as Server-Sent Events, each written by `encode`; an error is the
/// `error` event (a problem) that ends it. `slot` is held while it is open; it ends when the
/// server stops; a heartbeat comment comes every `config.heartbeat` of silence.
fn event_stream<T: Send + 'static>(
    changes: futures::stream::BoxStream<'static, Result<T, crate::error::ServiceError>>,
    slot: impl Send + 'static,
    streaming: Streaming,
    encode: impl Fn(&T) -> Result<Event, axum::Error> + Send + 'static,
) -> axum::response::Response {
    let ctx = RequestCtx::current();
    let events = changes
        .map(move |item| {
            let _held = &slot;
            let event = match item {
                Ok(change) => encode(&change),
                Err(e) => Event::default()
                    .event(match e {
                        crate::error::ServiceError::AccessRevoked { .. } => "access_revoked",
                        _ => "error",
                    })
                    .json_data(Problem::from_error(e).body(&ctx)),
            };
            // Serialising our own types cannot fail; if it ever did, a comment says so.
            Ok::<_, Infallible>(event.unwrap_or_else(|e| {
                Event::default().comment(format!("an event could not be written: {e}"))
            }))
        })
        .take_until(streaming.stopping.stopped());
    Sse::new(events)
        .keep_alive(
            KeepAlive::new()
                .interval(streaming.config.heartbeat)
                .text("heartbeat"),
        )
        .into_response()
}
