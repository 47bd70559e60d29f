//! The client side of `GET /v1/monitor-timeline/stream` (Server-Sent Events, parsed by
//! `eventsource-stream`).
//!
//! The request has no overall deadline (a stream lasts as long as it is read); instead a stream
//! that brings nothing at all, not even the server's heartbeat, for [`SILENCE`] is taken as
//! lost and ends with an error, so a caller can reconnect with the last position it saw.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};

use super::{Call, RemoteClient, failure};
use crate::error::ServiceError;
use crate::service::{
    Anomaly, EventsChange, EventsStream, EventsUpdate, MonitorChange, MonitorEvent,
    MonitorEventsQuery, MonitorReport, MonitorStream, MonitorWatch,
};

/// The server sends a heartbeat every 15 s of quiet; three missed ones mean the stream is gone.
const SILENCE: Duration = Duration::from_secs(45);

/// A stream has no deadline of its own (reqwest needs one: this is "never" for a person).
const NO_DEADLINE: Duration = Duration::from_secs(365 * 24 * 3600);

const ROUTE: &str = "GET /v1/monitor-timeline/stream";
const EVENTS_ROUTE: &str = "GET /v1/monitor-events/stream";

/// One Server-Sent Event as it came: its name, id and data.
type Raw = (String, String, String);

impl RemoteClient {
    /// Opens the monitor stream of `req.timeline_id`, resuming after `req.after` if given.
    pub(super) async fn monitor_stream(
        &self,
        req: MonitorWatch,
    ) -> Result<MonitorStream, ServiceError> {
        let call = Call::get(&["v1", "monitor-timeline", "stream"])
            .param("timeline_id", Some(&req.timeline_id));
        let raw = self.open_stream(call, ROUTE, req.after).await?;
        Ok(until_error(raw.filter_map(|item| {
            futures::future::ready(
                item.and_then(|(name, id, data)| decode(&name, &id, &data))
                    .transpose(),
            )
        })))
    }

    /// Opens `monitor-events/stream` with `req`'s filters.
    pub(super) async fn events_stream(
        &self,
        req: MonitorEventsQuery,
    ) -> Result<EventsStream, ServiceError> {
        let call = Call::get(&["v1", "monitor-events", "stream"])
            .param("timeline_id", req.timeline_id.as_ref())
            .param("location", req.location.as_ref())
            .param("time_range", req.time_range.as_ref());
        let raw = self.open_stream(call, EVENTS_ROUTE, None).await?;
        Ok(until_error(raw.filter_map(|item| {
            futures::future::ready(
                item.and_then(|(name, id, data)| decode_events(&name, &id, &data))
                    .transpose(),
            )
        })))
    }

    /// Opens an event stream: refusals answered as problems, a response that is not a stream
    /// refused, silence beyond [`SILENCE`] an error.
    async fn open_stream(
        &self,
        call: Call<'_>,
        route: &'static str,
        after: Option<u64>,
    ) -> Result<futures::stream::BoxStream<'static, Result<Raw, ServiceError>>, ServiceError> {
        let url = self.url(&call)?;
        let mut request = self
            .http
            .get(url)
            .header(AUTHORIZATION, self.auth.clone())
            .header(ACCEPT, "text/event-stream, application/problem+json")
            .timeout(NO_DEADLINE);
        if let Some(after) = after {
            request = request.header("last-event-id", after.to_string());
        }
        let response = match tokio::time::timeout(self.request_timeout, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(self.unreachable(&e)),
            Err(_) => {
                return Err(ServiceError::Unavailable(format!(
                    "cannot reach {}: no answer within {} s",
                    self.shown,
                    self.request_timeout.as_secs_f32()
                )));
            }
        };
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            // The request has no deadline of its own: the refusal's body gets the usual one.
            let body = tokio::time::timeout(self.request_timeout, response.bytes())
                .await
                .map_err(|_| {
                    ServiceError::Unavailable(format!(
                        "cannot reach {}: no answer within {} s",
                        self.shown,
                        self.request_timeout.as_secs_f32()
                    ))
                })?
                .map_err(|e| self.unreachable(&e))?;
            if status == StatusCode::NOT_FOUND && !body.starts_with(b"{") {
                return Err(not_streamed(&self.shown));
            }
            return Err(failure(status, &headers, &body, route));
        }
        let streams = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !streams {
            return Err(not_streamed(&self.shown));
        }
        let shown = self.shown.clone();
        let lost = move |why: String| {
            ServiceError::Unavailable(format!("the stream from {shown} was cut: {why}"))
        };
        let bytes = quiet_ends(response.bytes_stream(), SILENCE);
        let events = bytes.eventsource().map(move |item| match item {
            Ok(event) => Ok((event.event, event.id, event.data)),
            Err(e) => Err(lost(e.to_string())),
        });
        Ok(events.boxed())
    }
}

/// `items` up to and including the first error: nothing comes after one (the server ends the
/// stream after an `error` event; a cut connection is for the caller to open again).
fn until_error<T: Send + 'static>(
    items: impl futures::Stream<Item = Result<T, ServiceError>> + Send + 'static,
) -> futures::stream::BoxStream<'static, Result<T, ServiceError>> {
    items
        .scan(false, |ended, item| {
            let out = (!*ended).then_some(item);
            if let Some(Err(_)) = &out {
                *ended = true;
            }
            futures::future::ready(out)
        })
        .boxed()
}

/// The error for a server that has no such stream (one older than this client).
fn not_streamed(shown: &str) -> ServiceError {
    ServiceError::Unavailable(format!(
        "{shown} does not stream these changes (an older chronoscope server?)"
    ))
}

/// A byte stream that ends with an error after `silence` without a byte.
fn quiet_ends<S, B>(
    inner: S,
    silence: Duration,
) -> impl futures::Stream<Item = Result<B, String>> + Send + 'static
where
    S: futures::Stream<Item = reqwest::Result<B>> + Send + Unpin + 'static,
    B: Send + 'static,
{
    futures::stream::unfold(Some(inner), move |state| async move {
        let mut inner = state?;
        match tokio::time::timeout(silence, inner.next()).await {
            Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(inner))),
            Ok(Some(Err(e))) => Some((Err(super::root_cause(&e)), None)),
            Ok(None) => None,
            Err(_) => Some((
                Err(format!(
                    "nothing, not even a heartbeat, for {} s",
                    silence.as_secs()
                )),
                None,
            )),
        }
    })
}

/// One event of the stream, as the server names and encodes it (see `server::routes::stream`);
/// `None` for an event this client does not know (a newer server's), which it skips.
fn decode(name: &str, id: &str, data: &str) -> Result<Option<MonitorEvent>, ServiceError> {
    let odd = |why: String| {
        ServiceError::Internal(format!("{ROUTE} sent an event that makes no sense: {why}"))
    };
    if name == "error" || name == "access_revoked" {
        return Err(stream_error(data, ROUTE));
    }
    if !matches!(name, "snapshot" | "appeared" | "resolved") {
        return Ok(None);
    }
    let position = id
        .trim()
        .parse::<u64>()
        .map_err(|_| odd(format!("id '{id}' is not a log position")))?;
    let change = match name {
        "snapshot" => MonitorChange::Snapshot(
            serde_json::from_str::<MonitorReport>(data).map_err(|e| odd(e.to_string()))?,
        ),
        "appeared" => MonitorChange::Appeared(
            serde_json::from_str::<Anomaly>(data).map_err(|e| odd(e.to_string()))?,
        ),
        "resolved" => MonitorChange::Resolved(
            serde_json::from_str::<Anomaly>(data).map_err(|e| odd(e.to_string()))?,
        ),
        _ => unreachable!("names checked above"),
    };
    Ok(Some(MonitorEvent { position, change }))
}

/// The problem an `error` event carries, as the error of `route`.
fn stream_error(data: &str, route: &str) -> ServiceError {
    let status = serde_json::from_str::<serde_json::Value>(data)
        .ok()
        .and_then(|v| v.get("status").and_then(serde_json::Value::as_u64))
        .and_then(|s| StatusCode::from_u16(s as u16).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    failure(status, &Default::default(), data.as_bytes(), route)
}

/// One event of `monitor-events/stream`; `None` for one this client does not know.
fn decode_events(name: &str, id: &str, data: &str) -> Result<Option<EventsUpdate>, ServiceError> {
    if name == "error" || name == "access_revoked" {
        return Err(stream_error(data, EVENTS_ROUTE));
    }
    if !matches!(name, "snapshot" | "changed" | "removed") {
        return Ok(None);
    }
    let odd = |why: String| {
        ServiceError::Internal(format!(
            "{EVENTS_ROUTE} sent an event that makes no sense: {why}"
        ))
    };
    let position = id
        .trim()
        .parse::<u64>()
        .map_err(|_| odd(format!("id '{id}' is not a log position")))?;
    let change: EventsChange = serde_json::from_str(data).map_err(|e| odd(e.to_string()))?;
    Ok(Some(EventsUpdate { position, change }))
}
