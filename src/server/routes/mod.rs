//! The routes: documented operations, guide operations, extensions, and the open endpoints.

mod access_log;
mod anchors;
pub(super) mod data;
mod documented;
mod extension;
mod guide;
mod integrity;
mod navigation;
pub(super) mod ops;
mod review;
mod security;
mod stream;
mod tutorial;
mod unsupported;
mod wormhole;

use axum::Json;
use axum::http::header::{LINK, LOCATION};
use axum::http::{HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::router::UtoipaMethodRouterExt;
use utoipa_axum::routes;

use super::AppState;
use super::problem::{Problem, RequestCtx};
use super::views::View;

/// What every handler answers.
pub(super) type ApiResult = Result<Response, Problem>;

/// Every authenticated route, with its OpenAPI description; the open ones are added by
/// [`ops::open_router`].
pub(super) fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(super::openapi::base())
        .routes(routes!(
            documented::list_timelines,
            documented::create_timeline
        ))
        .routes(routes!(
            documented::get_timeline,
            documented::delete_timeline
        ))
        .routes(routes!(documented::travel, extension::list_journeys))
        .routes(routes!(documented::register_item, extension::list_items))
        .routes(routes!(documented::manipulate_event))
        .routes(routes!(documented::set_anchor, extension::list_anchors))
        .routes(routes!(documented::check_paradox))
        .routes(routes!(documented::monitor_timeline))
        .routes(routes!(stream::stream_monitor_timeline))
        .routes(routes!(extension::whoami))
        .routes(routes!(
            extension::search_timeline_events,
            extension::add_event
        ))
        .routes(routes!(extension::export_timeline))
        .routes(routes!(extension::import_timelines))
        .routes(routes!(extension::get_item))
        .routes(routes!(extension::get_anchor))
        .routes(routes!(extension::list_scripts))
        .routes(routes!(extension::delete_script))
        .routes(routes!(extension::list_schedules))
        .routes(routes!(extension::delete_schedule))
        .routes(routes!(guide::search_events))
        .routes(routes!(guide::manipulate_event))
        .routes(routes!(guide::create_timeline))
        .routes(routes!(guide::create_parallel_timeline))
        .routes(routes!(guide::check_paradox))
        .routes(routes!(guide::revert_event))
        .routes(routes!(guide::set_anchor))
        .routes(routes!(guide::create_script))
        .routes(routes!(guide::schedule_manipulation))
        .routes(routes!(guide::trigger_external_manipulation))
        .routes(routes!(guide::automation_log))
        .routes(routes!(guide::travel_to_time))
        .routes(routes!(guide::scan_events))
        .routes(routes!(guide::monitor_paradox))
        .routes(routes!(guide::check_timeline))
        .routes(routes!(guide::merge_timelines))
        .routes(routes!(guide::correct_dissonance))
        .routes(routes!(extension::list_merges))
        .routes(routes!(extension::get_merge))
        .routes(routes!(guide::travel))
        .routes(routes!(guide::return_to_anchor))
        .routes(routes!(guide::list_timelines))
        .routes(routes!(guide::switch_timeline))
        .routes(routes!(guide::fast_forward))
        .routes(routes!(guide::rewind))
        .routes(routes!(guide::pause_time))
        .routes(routes!(guide::resume_time))
        .routes(routes!(anchors::list_anchors))
        .routes(routes!(anchors::delete_anchor))
        .routes(routes!(anchors::check_anchor_stability))
        .routes(routes!(anchors::adjust_anchor))
        .routes(routes!(tutorial::manipulate_event))
        .routes(routes!(unsupported::shard_data))
        .routes(routes!(unsupported::entangle_particles))
        .routes(routes!(wormhole::simulate_wormhole).layer(axum::Extension(
            super::extract::RouteScope(crate::auth::Scope::Read),
        )))
        .routes(routes!(data::store_data))
        .routes(routes!(data::retrieve_data))
        .routes(routes!(data::encrypt_data))
        .routes(
            routes!(data::decrypt_data).layer(axum::Extension(super::extract::RouteScope(
                crate::auth::Scope::Read,
            ))),
        )
        .routes(
            routes!(data::create_index).layer(axum::Extension(super::extract::RouteScope(
                crate::auth::Scope::Read,
            ))),
        )
        .routes(routes!(data::enable_caching))
        .routes(routes!(review::review_conflicts))
        .routes(routes!(review::resolve_conflict))
        .routes(routes!(review::abort_merge))
        .routes(routes!(review::diff_timelines))
        .routes(routes!(review::isolate_event))
        .routes(routes!(review::lift_isolation))
        .routes(
            routes!(navigation::retrieve_item, navigation::retrieve_item_post).layer(
                axum::Extension(super::extract::RouteScope(crate::auth::Scope::Write)),
            ),
        )
        .routes(routes!(navigation::monitor_events))
        .routes(routes!(stream::stream_monitor_events))
        .routes(routes!(navigation::disable_caching))
        .routes(routes!(integrity::detect_tampering).layer(axum::Extension(
            super::extract::RouteScope(crate::auth::Scope::Read),
        )))
        .routes(
            routes!(integrity::validate_integrity).layer(axum::Extension(
                super::extract::RouteScope(crate::auth::Scope::Read),
            )),
        )
        .routes(routes!(security::set_access_control))
        .routes(routes!(security::get_access_control))
        .routes(routes!(extension::list_access_controls))
        .routes(
            routes!(security::restrict_time_travel).layer(axum::Extension(
                super::extract::RouteScope(crate::auth::Scope::Admin),
            )),
        )
        .routes(routes!(extension::list_restrictions).layer(axum::Extension(
            super::extract::RouteScope(crate::auth::Scope::Admin),
        )))
        .routes(routes!(access_log::access_logs))
        .merge(ops::open_router())
}

/// The view of the request being answered.
fn view() -> View {
    if RequestCtx::current().full {
        View::Full
    } else {
        View::Documented
    }
}

/// A JSON answer.
fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    (status, Json(body)).into_response()
}

/// The documented projection by default, the full value with `view=full`.
fn projected<'a, F, D>(status: StatusCode, full: &'a F, doc: impl FnOnce(&'a F) -> D) -> Response
where
    F: Serialize,
    D: Serialize,
{
    match view() {
        View::Full => json(status, full),
        View::Documented => json(status, &doc(full)),
    }
}

/// Adds `Link: <next page>; rel="next"` when there is a next page.
fn with_next(mut resp: Response, uri: &Uri, next_cursor: Option<&str>) -> Response {
    if let Some(cursor) = next_cursor {
        let link = format!("<{}>; rel=\"next\"", super::next_page_uri(uri, cursor));
        if let Ok(v) = HeaderValue::from_str(&link) {
            resp.headers_mut().insert(LINK, v);
        }
    }
    resp
}

/// Adds `Location`.
fn located(mut resp: Response, location: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(LOCATION, v);
    }
    resp
}
