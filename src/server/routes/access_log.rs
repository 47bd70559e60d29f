//! The access log of a timeline (guide operations §5.3): `GET /v1/access-logs`.

use axum::http::{StatusCode, Uri};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{ApiResult, projected, with_next};
use crate::model::{Instant, TimeRange, TimelineId};
use crate::server::extract::{BodyOrQuery, Caller};
use crate::server::views::view_enum;
use crate::service::{AccessAction, AccessLog, AccessLogQuery, PageRequest};

/// `access-logs` (body or query).
#[derive(Debug, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AccessLogParams {
    /// The timeline.
    #[param(value_type = String)]
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// Wall-clock times of the accesses, an ISO 8601 interval (default: the last 24 hours).
    #[param(value_type = Option<String>)]
    #[schema(value_type = Option<String>)]
    pub time_range: Option<TimeRange>,
    /// Most entries to return (1 to 1000, default 100).
    pub limit: Option<u32>,
    /// The cursor of the next page.
    pub cursor: Option<String>,
    /// Also the entries that named no timeline (operators only; default false: a timeline's
    /// log holds its own entries).
    pub service_wide: Option<bool>,
}

/// One entry as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessLogEntryDoc {
    /// The traveller, or `unknown` when no valid token was given.
    pub user_id: String,
    /// `read`, `write`, `travel`, `admin` or `unauthorized_access_attempt`.
    pub action: AccessAction,
    /// The minute (wall clock) the accesses fell in.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
}

/// `access-logs` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessLogDoc {
    /// `ok`.
    pub status: String,
    /// The entries, oldest first.
    pub logs: Vec<AccessLogEntryDoc>,
}

impl From<&AccessLog> for AccessLogDoc {
    fn from(log: &AccessLog) -> Self {
        Self {
            status: log.status.clone(),
            logs: log
                .logs
                .iter()
                .map(|e| AccessLogEntryDoc {
                    user_id: e.user_id.clone(),
                    action: e.action,
                    timestamp: e.timestamp,
                })
                .collect(),
        }
    }
}

view_enum! {
    /// `access-logs`: the guide's fields, or with `view=full` every count.
    AccessLogView = AccessLogDoc | AccessLog;
}

/// Who read, changed, travelled into, administered or tried and failed to reach a timeline,
/// per traveller and minute (wall-clock times of the accesses, not times inside the timeline;
/// default range: the last 24 hours). Accepted changes come from the log itself, exactly once.
/// Reads and refused attempts are counted in memory and made durable within 10 s (reads) or
/// 1 s (refusals): a crash loses at most that replica's last unflushed counts, and this
/// replica's unflushed counts are shown with `durable: false` (`view=full`). Needs the admin
/// right on the timeline; service-wide entries (attempts that named no timeline) are shown
/// to operators only, apart: with `service_wide=true`.
#[utoipa::path(get, path = "/v1/access-logs", tag = "Guide", operation_id = "accessLogs",
    params(AccessLogParams),
    request_body(content = AccessLogParams, description = "The same fields as a JSON body, instead of the query"),
    responses((status = 200, description = "The access log", body = AccessLogView))
)]
pub async fn access_logs(
    caller: Caller,
    uri: Uri,
    BodyOrQuery(q): BodyOrQuery<AccessLogParams>,
) -> ApiResult {
    let query = AccessLogQuery {
        timeline_id: q.timeline_id,
        time_range: q.time_range,
        page: PageRequest {
            limit: q.limit,
            cursor: q.cursor,
        },
        service_wide: q.service_wide.unwrap_or(false),
    };
    let log = caller.service.access_logs(query).await?;
    let resp = projected(StatusCode::OK, &log, AccessLogDoc::from);
    Ok(with_next(resp, &uri, log.next_cursor.as_deref()))
}
