//! Tamper detection (guide operations §5.4): `detect-tampering` and `validate-integrity`, POSTs
//! that only read, apart from the scan's own bookkeeping record (the `read` scope is enough;
//! their answers are never remembered for an Idempotency-Key).

use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiResult, projected};
use crate::server::extract::{Caller, JsonBody};
use crate::server::views::view_enum;
use crate::service::{IntegrityQuery, IntegrityReport, TamperQuery, TamperReport};

/// `detect-tampering` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TamperDoc {
    /// `complete`.
    pub status: String,
    /// Whether anything bearing on the timeline was altered.
    pub tampering_detected: bool,
    /// One sentence.
    pub details: String,
}

/// `validate-integrity` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntegrityDoc {
    /// `validated`.
    pub status: String,
    /// passed / examined: "100%" only when every item passes, else rounded down ("99.9%").
    pub integrity_score: String,
}

view_enum! {
    /// `detect-tampering`: the guide's fields, or with `view=full` the whole report.
    TamperView = TamperDoc | TamperReport;
    /// `validate-integrity`: the guide's fields, or with `view=full` the whole report.
    IntegrityView = IntegrityDoc | IntegrityReport;
}

/// Check the stored log's keyed hash chain record by record (`scan_depth` `full`, or `recent`:
/// the records after the last recorded scan, or before any scan after the newest snapshot) and
/// say whether anything bearing on the timeline was altered: a record changed after it was
/// written, a hole in the numbering, a record that cannot be read, a log that ends before what
/// the server already folded, or a store chained with another key. A record that fails cannot be trusted to say what it touches, so every
/// finding counts for every timeline; for non-operators, what records that name no asked
/// timeline say they hold is withheld. Limits: someone holding both write access to the
/// database and the log key can rewrite history undetectably, and a truncated log is caught
/// only against a head known outside the store (this server's, or the `chronoscope_log_position`
/// metric an operator records). The scan is recorded in the log (a `ScanResult`: the record it
/// checked up to and its findings; bookkeeping, so the read scope is enough): each finding is
/// then a critical `log_tampered` anomaly on every timeline, with one id per record, until a
/// full scan no longer finds it (a recent scan does not read older records, so it cannot clear
/// them, and its answer says which are still open).
#[utoipa::path(post, path = "/v1/detect-tampering", tag = "Guide", operation_id = "detectTampering",
    request_body = TamperQuery,
    responses((status = 200, description = "The scan (`complete`)", body = TamperView))
)]
pub async fn detect_tampering(caller: Caller, JsonBody(req): JsonBody<TamperQuery>) -> ApiResult {
    let r = caller.service.detect_tampering(req).await?;
    Ok(projected(StatusCode::OK, &r, |r| TamperDoc {
        status: r.status.clone(),
        tampering_detected: r.tampering_detected,
        details: r.details.clone(),
    }))
}

/// Prove a timeline's data as of `timestamp` (default now): every current event at or before
/// it (inherited ones included) and every data entry at or before it passes when the records
/// of the stored log that verify produce exactly what is served, and its lineage is well
/// formed. `integrity_score` is passed / examined. Nothing is written.
#[utoipa::path(post, path = "/v1/validate-integrity", tag = "Guide", operation_id = "validateIntegrity",
    request_body = IntegrityQuery,
    responses((status = 200, description = "The proof (`validated`)", body = IntegrityView))
)]
pub async fn validate_integrity(
    caller: Caller,
    JsonBody(req): JsonBody<IntegrityQuery>,
) -> ApiResult {
    let r = caller.service.validate_integrity(req).await?;
    Ok(projected(StatusCode::OK, &r, |r| IntegrityDoc {
        status: r.status.clone(),
        integrity_score: r.integrity_score.clone(),
    }))
}
