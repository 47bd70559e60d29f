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
pub(super) mod table;
mod tutorial;
mod unsupported;
mod wormhole;

use axum::Json;
use axum::http::header::{LINK, LOCATION};
use axum::http::{HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::problem::{Problem, RequestCtx};
use super::views::View;
use crate::service::Page;
use table::{Api, Does, Operations};

/// What every handler answers.
pub(super) type ApiResult = Result<Response, Problem>;

/// Every route with its OpenAPI description and what it does (see [`table`]): the
/// authenticated ones here, the open ones in [`ops::open_router`]. A route added with plain
/// `.routes(…)` would be in no table: `tests::every_route_is_in_the_table` fails.
pub(super) fn api_router() -> (OpenApiRouter<AppState>, Operations) {
    use crate::auth::Scope;
    // POSTs that only read: answered by whichever replica receives them. They keep the scope
    // they always needed.
    let checks = Does::reads().needing(Scope::Write);
    let api = Api::new(OpenApiRouter::with_openapi(super::openapi::base()))
        // The documented operations.
        .reads(routes!(documented::list_timelines))
        .writes(routes!(documented::create_timeline))
        .reads(routes!(documented::get_timeline))
        .writes(routes!(documented::delete_timeline))
        .writes(routes!(documented::travel))
        .reads(routes!(extension::list_journeys))
        .writes(routes!(documented::register_item))
        .reads(routes!(extension::list_items))
        .writes(routes!(documented::manipulate_event))
        .writes(routes!(documented::set_anchor))
        .reads(routes!(extension::list_anchors))
        .route(checks, routes!(documented::check_paradox))
        .route(Does::reads().heavy(), routes!(documented::monitor_timeline))
        .route(
            Does::reads().heavy(),
            routes!(stream::stream_monitor_timeline),
        )
        // chronoscope's extensions.
        .reads(routes!(extension::whoami))
        .route(
            Does::reads().heavy(),
            routes!(extension::search_timeline_events),
        )
        .writes(routes!(extension::add_event))
        .route(Does::reads().heavy(), routes!(extension::export_timeline))
        .route(Does::writes().heavy(), routes!(extension::import_timelines))
        .reads(routes!(extension::get_item))
        .reads(routes!(extension::get_anchor))
        .reads(routes!(extension::list_scripts))
        .writes(routes!(extension::delete_script))
        .reads(routes!(extension::list_schedules))
        .writes(routes!(extension::delete_schedule))
        .reads(routes!(extension::list_merges))
        .reads(routes!(extension::get_merge))
        .reads(routes!(extension::list_access_controls))
        .route(
            Does::reads().needing(Scope::Admin),
            routes!(extension::list_restrictions),
        )
        // The guides' operations.
        .route(Does::reads().heavy(), routes!(guide::search_events))
        .writes(routes!(guide::manipulate_event))
        .writes(routes!(guide::create_timeline))
        .writes(routes!(guide::create_parallel_timeline))
        .reads(routes!(guide::check_paradox))
        .writes(routes!(guide::revert_event))
        .writes(routes!(guide::set_anchor))
        .writes(routes!(guide::create_script))
        .writes(routes!(guide::schedule_manipulation))
        .writes(routes!(guide::trigger_external_manipulation))
        .reads(routes!(guide::automation_log))
        .writes(routes!(guide::travel_to_time))
        .route(checks.heavy(), routes!(guide::scan_events))
        .route(Does::reads().heavy(), routes!(guide::monitor_paradox))
        .route(Does::reads().heavy(), routes!(guide::check_timeline))
        .route(Does::writes().heavy(), routes!(guide::merge_timelines))
        .writes(routes!(guide::correct_dissonance))
        .writes(routes!(guide::travel))
        .writes(routes!(guide::return_to_anchor))
        .reads(routes!(guide::list_timelines))
        .writes(routes!(guide::switch_timeline))
        .writes(routes!(guide::fast_forward))
        .writes(routes!(guide::rewind))
        .writes(routes!(guide::pause_time))
        .writes(routes!(guide::resume_time))
        .reads(routes!(anchors::list_anchors))
        .writes(routes!(anchors::delete_anchor))
        .reads(routes!(anchors::check_anchor_stability))
        .writes(routes!(anchors::adjust_anchor))
        .writes(routes!(tutorial::manipulate_event))
        // Answered "not supported" by every replica: nothing to forward.
        .route(checks, routes!(unsupported::shard_data))
        .route(checks, routes!(unsupported::entangle_particles))
        .reads(routes!(wormhole::simulate_wormhole))
        .writes(routes!(data::store_data))
        .reads(routes!(data::retrieve_data))
        // Never forwarded whatever the table says: the body carries a customer's key
        // (`forward::KEY_BEARING`).
        .writes(routes!(data::encrypt_data))
        .reads(routes!(data::decrypt_data))
        .route(Does::reads().heavy(), routes!(data::create_index))
        .writes(routes!(data::enable_caching))
        .reads(routes!(review::review_conflicts))
        .writes(routes!(review::resolve_conflict))
        .writes(routes!(review::abort_merge))
        .route(Does::reads().heavy(), routes!(review::diff_timelines))
        .writes(routes!(review::isolate_event))
        .writes(routes!(review::lift_isolation))
        // A GET that writes (it moves the item): the write scope, no HEAD, forwarded.
        .writes(routes!(navigation::retrieve_item))
        .writes(routes!(navigation::retrieve_item_post))
        .route(Does::reads().heavy(), routes!(navigation::monitor_events))
        .route(
            Does::reads().heavy(),
            routes!(stream::stream_monitor_events),
        )
        .writes(routes!(navigation::disable_caching))
        // Answered by the replica that received them: each reads the stored log, which every
        // replica shares. Only detect-tampering's record of its scan is a write (appended from
        // here, and at most once per traveller per `--scan-cooldown`).
        .route(Does::reads().heavy(), routes!(integrity::detect_tampering))
        .route(
            Does::reads().heavy(),
            routes!(integrity::validate_integrity),
        )
        .writes(routes!(security::set_access_control))
        .reads(routes!(security::get_access_control))
        .route(
            Does::writes().needing(Scope::Admin),
            routes!(security::restrict_time_travel),
        )
        .reads(routes!(access_log::access_logs));
    ops::open_routes(api).finish()
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

/// The full body with `view=full`, the documented one by default: only the one answered is
/// built.
fn viewed<F, D>(status: StatusCode, full: impl FnOnce() -> F, doc: impl FnOnce() -> D) -> Response
where
    F: Serialize,
    D: Serialize,
{
    match view() {
        View::Full => json(status, &full()),
        View::Documented => json(status, &doc()),
    }
}

/// The documented projection by default, the full value with `view=full`.
fn projected<'a, F, D>(status: StatusCode, full: &'a F, doc: impl FnOnce(&'a F) -> D) -> Response
where
    F: Serialize,
    D: Serialize,
{
    viewed(status, || full, || doc(full))
}

/// 201 with what was created, in the view asked for, and its `Location`.
fn created<'a, F, D>(full: &'a F, doc: impl FnOnce(&'a F) -> D, location: String) -> Response
where
    F: Serialize,
    D: Serialize,
{
    located(projected(StatusCode::CREATED, full, doc), &location)
}

/// A page of a listing, 200 in the view asked for, with the `Link` to the next page: `full`
/// is given the page's items and the cursor of the next page, `doc` the items.
fn paged<T, F, D>(
    uri: &Uri,
    page: &Page<T>,
    full: impl FnOnce(Vec<T>, Option<String>) -> F,
    doc: impl FnOnce(&[T]) -> D,
) -> Response
where
    T: Clone,
    F: Serialize,
    D: Serialize,
{
    let resp = viewed(
        StatusCode::OK,
        || full(page.items.clone(), page.next_cursor.clone()),
        || doc(&page.items),
    );
    with_next(resp, uri, page.next_cursor.as_deref())
}

/// What a service call answers, 200, as the service types it (no documented projection).
async fn answer_full<F: Serialize, E>(call: impl Future<Output = Result<F, E>>) -> ApiResult
where
    Problem: From<E>,
{
    Ok(json(StatusCode::OK, &call.await?))
}

/// A call that answers nothing when it succeeds: 204.
async fn no_content<E>(call: impl Future<Output = Result<(), E>>) -> ApiResult
where
    Problem: From<E>,
{
    call.await?;
    Ok(StatusCode::NO_CONTENT.into_response())
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
