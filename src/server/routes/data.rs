//! The temporal data operations of the guides (§6): `store-data`, `retrieve-data`,
//! `encrypt-data`, `decrypt-data`, `create-index` and `enable-caching`.

use std::net::SocketAddr;

use axum::extract::ConnectInfo;
use axum::http::{Extensions, StatusCode};
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiResult, projected, viewed};
use crate::model::{CacheId, DataId, Instant};
use crate::server::extract::{BodyOrQuery, Caller, JsonBody};
use crate::server::problem::Problem;
use crate::server::views::view_enum;
use crate::service::{
    CachingRequest, CachingSetting, CachingStatus, DataEntryInfo, DataObject, DecryptDataRequest,
    DecryptStatus, DecryptedData, EncryptDataRequest, IndexReport, IndexRequest, RetrieveDataQuery,
    RetrievedData, StoreDataRequest,
};

/// Marks a request that came over TLS (set by the https server), so a key sent in the clear
/// from another machine can be refused.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OverTls;

/// Refuses a key sent over plain HTTP from a peer that is not this machine: it crossed a
/// network in the clear. In-process requests (no peer address) pass.
fn refuse_key_in_the_clear(extensions: &Extensions) -> Result<(), Problem> {
    let tls = extensions.get::<OverTls>().is_some();
    match extensions.get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(addr)) if !tls && !addr.ip().is_loopback() => Err(Problem::invalid(
            "encryption_key",
            "an encryption key must not cross a network in the clear: call this server over https (serve --tls-cert/--tls-key), or from this machine",
        )),
        _ => Ok(()),
    }
}

/// A busy key derivation pool says so (other 503s keep their reasons for the logs).
fn said(e: crate::error::ServiceError) -> Problem {
    match e {
        crate::error::ServiceError::Unavailable(why) if why == crate::engine::DERIVATIONS_BUSY => {
            Problem::unavailable(why)
        }
        e => e.into(),
    }
}

/// `store-data` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct StoredDoc {
    /// `stored`.
    pub status: String,
    /// The new entry's id.
    #[schema(value_type = String)]
    pub data_id: DataId,
    /// The time it is about.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
}

/// `retrieve-data` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetrievedDoc {
    /// `ok`.
    pub status: String,
    /// The object.
    #[schema(value_type = Object)]
    pub data: DataObject,
}

/// `encrypt-data` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EncryptedDoc {
    /// `encrypted`.
    pub status: String,
    /// The new entry's id: decrypt it with this and your key.
    #[schema(value_type = String)]
    pub data_id: DataId,
    /// `AES-256-GCM`.
    pub encryption: String,
}

/// `encrypt-data` with `view=full`: the entry (never its content) and the algorithm.
#[derive(Debug, Serialize, ToSchema)]
pub struct EncryptedFull {
    /// `encrypted`.
    pub status: String,
    /// `AES-256-GCM`.
    pub encryption: String,
    /// The entry.
    pub entry: DataEntryInfo,
}

/// `decrypt-data` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct DecryptedDoc {
    /// `decrypted`, or `not_encrypted` for an entry stored plain.
    pub status: DecryptStatus,
    /// The object.
    #[schema(value_type = Object)]
    pub data: DataObject,
}

/// `create-index` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct IndexDoc {
    /// `exists`: the index is built in and kept current.
    pub status: String,
    /// `idx_<timeline>_<type>`.
    pub index_id: String,
}

/// `create-index` with `view=full`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IndexFull {
    /// `exists`.
    pub status: String,
    /// The index.
    #[serde(flatten)]
    pub index: IndexReport,
}

/// `enable-caching` as the guide shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct CachingDoc {
    /// `enabled` or `disabled`.
    pub status: CachingStatus,
    /// The setting's id.
    #[schema(value_type = String)]
    pub cache_id: CacheId,
}

view_enum! {
    /// Documented projection or full value (OpenAPI only).
    StoredView = StoredDoc | DataEntryInfo;
    /// Documented projection or full value (OpenAPI only).
    RetrievedView = RetrievedDoc | RetrievedData;
    /// Documented projection or full value (OpenAPI only).
    EncryptedView = EncryptedDoc | EncryptedFull;
    /// Documented projection or full value (OpenAPI only).
    DecryptedView = DecryptedDoc | DecryptedData;
    /// Documented projection or full value (OpenAPI only).
    IndexView = IndexDoc | IndexFull;
    /// Documented projection or full value (OpenAPI only).
    CachingView = CachingDoc | CachingSetting;
}

/// Store a JSON object (at most 64 KiB) in a timeline at a time. Entries are immutable:
/// storing again at the same time adds another. A branch created later sees the entry; the
/// timeline it branched from does not see the branch's.
#[utoipa::path(post, path = "/v1/store-data", tag = "Guide", operation_id = "storeData",
    request_body = StoreDataRequest,
    responses((status = 201, description = "The entry was stored", body = StoredView))
)]
pub async fn store_data(caller: Caller, JsonBody(req): JsonBody<StoreDataRequest>) -> ApiResult {
    let e = caller.service.store_data(req).await?;
    Ok(projected(StatusCode::CREATED, &e, |e| StoredDoc {
        status: "stored".into(),
        data_id: e.data_id.clone(),
        timestamp: e.timestamp,
    }))
}

/// The newest plain entry stored at exactly `timestamp` in a timeline, or the one `data_id`
/// names; with `view=full` also every entry at that time. 404 when nothing is stored there;
/// 409 when only encrypted entries are (read them with `decrypt-data`).
#[utoipa::path(get, path = "/v1/retrieve-data", tag = "Guide", operation_id = "retrieveData",
    params(RetrieveDataQuery),
    request_body(content = RetrieveDataQuery, description = "The same fields as a JSON body, instead of the query"),
    responses(
        (status = 200, description = "The entry", body = RetrievedView),
        (status = 404, description = "Nothing is stored at that time (not-found)",
            body = crate::server::views::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Only encrypted entries are stored there: the detail names them; read them with decrypt-data (conflict)",
            body = crate::server::views::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn retrieve_data(
    caller: Caller,
    BodyOrQuery(q): BodyOrQuery<RetrieveDataQuery>,
) -> ApiResult {
    let r = caller.service.retrieve_data(q).await?;
    Ok(projected(StatusCode::OK, &r, |r| RetrievedDoc {
        status: "ok".into(),
        data: r.data.clone(),
    }))
}

/// Encrypt a JSON object with your key and store only the ciphertext (the S3 SSE-C model):
/// Argon2id derives the key (19 MiB, 2 passes, a random salt), AES-256-GCM seals the data with
/// a random nonce, bound to the entry's id, timeline and time. The key is never stored,
/// logged, nor part of the Idempotency-Key fingerprint: lose it and the data is lost. A key
/// sent over plain HTTP from another machine is refused.
#[utoipa::path(post, path = "/v1/encrypt-data", tag = "Guide", operation_id = "encryptData",
    request_body = EncryptDataRequest,
    responses(
        (status = 201, description = "The data was encrypted and stored", body = EncryptedView),
        (status = 503, description = "Every core is deriving a key now; try again after Retry-After",
            body = crate::server::views::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn encrypt_data(
    caller: Caller,
    extensions: Extensions,
    JsonBody(req): JsonBody<EncryptDataRequest>,
) -> ApiResult {
    refuse_key_in_the_clear(&extensions)?;
    let e = caller.service.encrypt_data(req).await.map_err(said)?;
    let encryption = crate::engine::DATA_ALGORITHM.to_owned();
    let full = || EncryptedFull {
        status: "encrypted".into(),
        encryption: encryption.clone(),
        entry: e.clone(),
    };
    let doc = || EncryptedDoc {
        status: "encrypted".into(),
        data_id: e.data_id.clone(),
        encryption: encryption.clone(),
    };
    Ok(viewed(StatusCode::CREATED, full, doc))
}

/// Decrypt an entry with the key it was encrypted with. Nothing is written, and the answer is
/// never remembered under an Idempotency-Key (it needs only the `read` scope). A wrong key is
/// 400 `decryption-failed`. A key sent over plain HTTP from another machine is refused.
#[utoipa::path(post, path = "/v1/decrypt-data", tag = "Guide", operation_id = "decryptData",
    request_body = DecryptDataRequest,
    responses(
        (status = 200, description = "The data", body = DecryptedView),
        (status = 400, description = "The key does not decrypt this entry (decryption-failed), an unknown entry (unknown-reference), or a malformed request",
            body = crate::server::views::Problem, content_type = "application/problem+json"),
        (status = 503, description = "Every core is deriving a key now; try again after Retry-After",
            body = crate::server::views::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn decrypt_data(
    caller: Caller,
    extensions: Extensions,
    JsonBody(req): JsonBody<DecryptDataRequest>,
) -> ApiResult {
    refuse_key_in_the_clear(&extensions)?;
    let d = caller.service.decrypt_data(req).await.map_err(said)?;
    Ok(projected(StatusCode::OK, &d, |d| DecryptedDoc {
        status: d.status,
        data: d.data.clone(),
    }))
}

/// Report a built-in index: `timestamp` (events and data entries by time), `location` (events
/// by location) or `timeline_id` (every query is already partitioned per timeline). They
/// exist and are kept current on every write, so nothing is created: the answer is 200, and
/// it needs only the `read` scope.
#[utoipa::path(post, path = "/v1/create-index", tag = "Guide", operation_id = "createIndex",
    request_body = IndexRequest,
    responses((status = 200, description = "The index exists", body = IndexView))
)]
pub async fn create_index(caller: Caller, JsonBody(req): JsonBody<IndexRequest>) -> ApiResult {
    let index = caller.service.report_index(req).await?;
    let full = || IndexFull {
        status: "exists".into(),
        index: index.clone(),
    };
    let doc = || IndexDoc {
        status: "exists".into(),
        index_id: index.index_id.clone(),
    };
    Ok(viewed(StatusCode::OK, full, doc))
}

/// Let your own reads be boundedly stale: a read in scope (`timeline`: every read; `event`:
/// event searches and monitor-events) may be answered from the replica's memory without
/// waiting for the read barrier when the replica confirmed the log head less than
/// `cache_duration` ago. It sees every write acknowledged more than `cache_duration` before it
/// and every write made through the same replica. `0` turns it off. On SQLite (one process)
/// memory is always current, so it changes nothing there.
#[utoipa::path(post, path = "/v1/enable-caching", tag = "Guide", operation_id = "enableCaching",
    request_body = CachingRequest,
    responses((status = 200, description = "The setting", body = CachingView))
)]
pub async fn enable_caching(caller: Caller, JsonBody(req): JsonBody<CachingRequest>) -> ApiResult {
    let c = caller.service.enable_caching(req).await?;
    Ok(projected(StatusCode::OK, &c, |c| CachingDoc {
        status: c.status,
        cache_id: c.cache_id.clone(),
    }))
}
