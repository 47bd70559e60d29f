//! Temporal data (guide operations §6): immutable data entries per timeline, plain or sealed
//! with the customer's key (SSE-C: Argon2id, then AES-256-GCM), the built-in indexes, and the
//! per-traveller bounded-staleness setting. Decisions only, like `rules`; the key derivation
//! runs on the blocking pool, a few at a time ([`off_the_runtime`]).

use std::sync::{Arc, LazyLock};

use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use zeroize::Zeroizing;

pub use super::world::data::DataMap;
use crate::error::ServiceError;
use crate::model::{
    CacheId, DataId, Instant, TimelineId, TravelDuration, format_instant, in_range,
};
use crate::service::{
    CacheScope, CachingRequest, CachingSetting, CachingStatus, DataEntry, DataKey, DataObject,
    DataPayload, IndexReport, IndexRequest, KdfParams, MAX_STALENESS_SECS, ReadStaleness,
    RetrieveDataQuery, RetrievedData, Sealed, StoreDataRequest,
};

use super::rules::{self, Ctx};
use super::world::{Op, World};

/// Largest object stored, as compact JSON.
pub const MAX_DATA_BYTES: usize = 64 * 1024;
/// The cipher, as answered and recorded.
pub const ALGORITHM: &str = "AES-256-GCM";
/// The key derivation (OWASP's Argon2id parameters: 19 MiB, 2 passes, 1 lane).
pub fn kdf_params() -> KdfParams {
    KdfParams {
        algorithm: "argon2id".into(),
        memory_kib: 19 * 1024,
        iterations: 2,
        parallelism: 1,
    }
}

/// The data of a request: a JSON object of at most [`MAX_DATA_BYTES`].
pub fn object(field: &str, value: &serde_json::Value) -> Result<DataObject, ServiceError> {
    let serde_json::Value::Object(map) = value else {
        return Err(ServiceError::invalid(
            field,
            "must be a JSON object of named fields",
        ));
    };
    let size = serde_json::to_vec(map)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_DATA_BYTES {
        return Err(ServiceError::invalid(
            field,
            format!("is {size} bytes as JSON; at most {MAX_DATA_BYTES} are stored"),
        ));
    }
    Ok(map.clone())
}

/// The key's length, checked before any work is done with it.
pub fn check_key(key: &DataKey) -> Result<(), ServiceError> {
    let n = key.expose().chars().count();
    if !(DataKey::MIN_LEN..=DataKey::MAX_LEN).contains(&n) {
        return Err(ServiceError::invalid(
            "encryption_key",
            format!(
                "must be {} to {} characters (got {n})",
                DataKey::MIN_LEN,
                DataKey::MAX_LEN
            ),
        ));
    }
    Ok(())
}

/// Where and when an entry goes: an open timeline the caller names, at the time given, or by
/// default as for events (the timeline's destination time, the caller's time if they are in
/// it, else now).
pub fn placement(
    world: &World,
    ctx: &Ctx<'_>,
    timeline: &TimelineId,
    timestamp: Option<Instant>,
) -> Result<Instant, ServiceError> {
    let state = rules::referenced(world, timeline)?;
    rules::require_open(&state.meta, ctx.now)?;
    match timestamp {
        Some(t) => Ok(in_range("timestamp", t)?),
        None => {
            let position = world.position_of(ctx.traveller, ctx.now);
            Ok(rules::default_time(state, &position, ctx.now))
        }
    }
}

/// A new entry with `payload`, checked against the state it is written on.
pub fn entry(
    world: &World,
    ctx: &Ctx<'_>,
    data_id: DataId,
    timeline: &TimelineId,
    timestamp: Instant,
    payload: DataPayload,
) -> Result<(Op, DataEntry), ServiceError> {
    placement(world, ctx, timeline, Some(timestamp))?;
    let entry = DataEntry {
        data_id,
        timeline_id: timeline.clone(),
        timestamp,
        payload,
        stored_by: ctx.traveller.clone(),
        stored_at: ctx.now,
    };
    Ok((
        Op::StoreData {
            entry: entry.clone(),
        },
        entry,
    ))
}

/// `store-data`: a plain entry.
pub fn store(
    world: &World,
    ctx: &Ctx<'_>,
    req: &StoreDataRequest,
) -> Result<(Op, DataEntry), ServiceError> {
    let data = object("data", &req.data)?;
    let id = DataId::from_ulid((ctx.mint)());
    entry(
        world,
        ctx,
        id,
        &req.timeline_id,
        req.timestamp,
        DataPayload::Plain { data },
    )
}

/// The entries of `timeline` stored at exactly `at`, oldest first.
fn at_time(data: &DataMap, at: Instant) -> impl Iterator<Item = &Arc<DataEntry>> + '_ {
    // Minted ids sort after the nil ULID's, so this is the first key at `at`.
    let first = (at, DataId::from_ulid(ulid::Ulid::nil()));
    data.range(first..)
        .take_while(move |((t, _), _)| *t == at)
        .map(|(_, e)| e)
}

/// `retrieve-data`: the entry named, or the newest plain one at the time.
pub fn retrieve(world: &World, q: &RetrieveDataQuery) -> Result<RetrievedData, ServiceError> {
    let state = rules::referenced(world, &q.timeline_id)?;
    let at = in_range("timestamp", q.timestamp)?;
    let here: Vec<&Arc<DataEntry>> = at_time(&state.data, at).collect();
    let entries = here.iter().map(|e| (&***e).into()).collect();
    let chosen = match &q.data_id {
        Some(id) => here
            .iter()
            .find(|e| &e.data_id == id)
            .ok_or_else(|| ServiceError::unknown("data entry", id))?,
        None => {
            if here.is_empty() {
                return Err(ServiceError::not_found(
                    &format!("data entry at {} in timeline", format_instant(&at)),
                    &q.timeline_id,
                ));
            }
            here.iter()
                .rev()
                .find(|e| matches!(e.payload, DataPayload::Plain { .. }))
                .unwrap_or(&here[here.len() - 1])
        }
    };
    match &chosen.payload {
        DataPayload::Plain { data } => Ok(RetrievedData {
            data_id: chosen.data_id.clone(),
            data: data.clone(),
            entries,
        }),
        DataPayload::Encrypted(_) => {
            let ids: Vec<&str> = here
                .iter()
                .filter(|e| matches!(e.payload, DataPayload::Encrypted(_)))
                .map(|e| e.data_id.as_str())
                .collect();
            let what = if q.data_id.is_some() {
                format!("data entry {} is encrypted", chosen.data_id)
            } else {
                format!(
                    "only encrypted entries are stored at {} in timeline {} ({})",
                    format_instant(&at),
                    q.timeline_id,
                    ids.join(", ")
                )
            };
            Err(ServiceError::Conflict(format!(
                "{what}: decrypt-data reads an encrypted entry with the key it was encrypted with"
            )))
        }
    }
}

/// An entry by id, wherever it was stored (400 when unknown).
pub fn find<'w>(world: &'w World, id: &DataId) -> Result<&'w DataEntry, ServiceError> {
    world
        .data_index
        .get(id)
        .and_then(|(timeline, at)| {
            let key = (*at, id.clone());
            // Where it was stored, else (that timeline deleted) a timeline a merge copied it to.
            world
                .timelines
                .get(timeline)
                .and_then(|t| t.data.get(&key))
                .or_else(|| world.timelines.values().find_map(|t| t.data.get(&key)))
        })
        .map(|e| &**e)
        .ok_or_else(|| ServiceError::unknown("data entry", id))
}

/// `create-index`: the built-in index of that type, reported as it stands.
pub fn index(world: &World, req: &IndexRequest) -> Result<IndexReport, ServiceError> {
    let state = rules::referenced(world, &req.timeline_id)?;
    let events = state.history.len() as u64;
    let data = state.data.len() as u64;
    let (entries, serves): (u64, Vec<&str>) = match req.index_type.trim() {
        "timestamp" => (
            events + data,
            vec![
                "search-events (time_range)",
                "monitor-events",
                "retrieve-data",
                "GET /v1/timeline/{timeline_id}/events",
            ],
        ),
        "location" => (
            events,
            vec![
                "search-events (location)",
                "/api/v1/scan-events",
                "monitor-events",
            ],
        ),
        "timeline_id" => (
            events + data,
            vec!["every query: each timeline's events and data are held apart"],
        ),
        other => {
            return Err(ServiceError::invalid(
                "index_type",
                format!(
                    "'{}' is not an index this service keeps; the supported types are timestamp, location and timeline_id",
                    other.chars().take(40).collect::<String>()
                ),
            ));
        }
    };
    let index_type = req.index_type.trim().to_owned();
    Ok(IndexReport {
        index_id: format!("idx_{}_{index_type}", req.timeline_id),
        index_type,
        timeline_id: req.timeline_id.clone(),
        entries,
        serves: serves.iter().map(|s| (*s).to_owned()).collect(),
        maintained: "on every write".into(),
    })
}

/// `cache_duration`: seconds as a number or a string of digits, or a duration; 0 turns off.
pub fn staleness_secs(value: &serde_json::Value) -> Result<u64, ServiceError> {
    let field = "cache_duration";
    let out_of_range = |what: String| {
        ServiceError::invalid(
            field,
            format!(
                "{what} is out of range: from 1 s to 1 d ({MAX_STALENESS_SECS} s), or 0 to turn it off"
            ),
        )
    };
    let secs = match value {
        serde_json::Value::Number(n) => n.as_u64().ok_or_else(|| out_of_range(n.to_string()))?,
        serde_json::Value::String(s)
            if !s.trim().is_empty() && s.trim().bytes().all(|b| b.is_ascii_digit()) =>
        {
            s.trim()
                .parse::<u64>()
                .map_err(|_| out_of_range(s.clone()))?
        }
        serde_json::Value::String(s) => {
            let d = TravelDuration::parse(field, s)?;
            if d.months > 0 {
                return Err(out_of_range(s.clone()));
            }
            u64::try_from(d.seconds).map_err(|_| out_of_range(s.clone()))?
        }
        _ => {
            return Err(ServiceError::invalid(
                field,
                "must be seconds (a number or a string of digits) or a duration such as 10m or PT1H",
            ));
        }
    };
    if secs > MAX_STALENESS_SECS {
        return Err(out_of_range(format!("{secs} s")));
    }
    Ok(secs)
}

/// What a read in scope is guaranteed to see.
pub fn guarantee(secs: u64, single_process: bool) -> String {
    if secs == 0 {
        return "every read sees every write acknowledged before it (linearizable reads)".into();
    }
    let mut said = format!(
        "a read in scope sees every write acknowledged more than {secs} s before it and every write made through the same replica; it may miss writes other replicas acknowledged within those {secs} s"
    );
    if single_process {
        said.push_str(
            ". This store is served by one process, whose memory is always current: it changes nothing here",
        );
    }
    said
}

/// `enable-caching`: the caller's bounded-staleness reads.
pub fn caching(
    ctx: &Ctx<'_>,
    req: &CachingRequest,
    single_process: bool,
) -> Result<(Op, CachingSetting), ServiceError> {
    let secs = staleness_secs(&req.cache_duration)?;
    let scope = match req.cache_scope.trim() {
        "timeline" => CacheScope::Timeline,
        "event" => CacheScope::Event,
        other => {
            return Err(ServiceError::invalid(
                "cache_scope",
                format!(
                    "'{}' is not a scope; use timeline (every read) or event (event searches and monitor-events)",
                    other.chars().take(40).collect::<String>()
                ),
            ));
        }
    };
    let setting = ReadStaleness {
        cache_id: CacheId::from_ulid((ctx.mint)()),
        traveller: ctx.traveller.clone(),
        scope,
        max_staleness: secs,
    };
    let answer = CachingSetting {
        status: if secs == 0 {
            CachingStatus::Disabled
        } else {
            CachingStatus::Enabled
        },
        cache_id: setting.cache_id.clone(),
        scope,
        max_staleness: secs,
        guarantee: guarantee(secs, single_process),
    };
    Ok((Op::SetReadStaleness { setting }, answer))
}

/// The associated data of an entry's ciphertext: its id, timeline and time, so ciphertext
/// moved to another entry does not decrypt.
pub fn associated_data(id: &DataId, timeline: &TimelineId, at: Instant) -> Vec<u8> {
    format!(
        "{id}\u{0}{timeline}\u{0}{}",
        at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
    )
    .into_bytes()
}

/// The cipher key derived from the customer's key (wiped when dropped).
fn derive(key: &DataKey, salt: &[u8], p: &KdfParams) -> Result<Zeroizing<[u8; 32]>, ServiceError> {
    let internal = |e: argon2::Error| ServiceError::Internal(format!("key derivation: {e}"));
    if p.algorithm != "argon2id" {
        return Err(ServiceError::Internal(format!(
            "the entry names an unknown key derivation '{}'",
            p.algorithm
        )));
    }
    let params =
        Params::new(p.memory_kib, p.iterations, p.parallelism, Some(32)).map_err(internal)?;
    let mut out = Zeroizing::new([0u8; 32]);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password_into(key.expose().as_bytes(), salt, &mut *out)
        .map_err(internal)?;
    Ok(out)
}

/// Seals `plaintext` with a key derived from `key` (fresh salt and nonce).
pub fn seal(key: &DataKey, plaintext: &[u8], aad: &[u8]) -> Result<Sealed, ServiceError> {
    let salt: [u8; 16] = rand::random();
    let nonce: [u8; 12] = rand::random();
    let kdf = kdf_params();
    let derived = derive(key, &salt, &kdf)?;
    let cipher = Aes256Gcm::new_from_slice(&*derived)
        .map_err(|e| ServiceError::Internal(format!("cipher key: {e}")))?;
    let ciphertext = cipher
        .encrypt(
            &Nonce::<U12>::from(nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .map_err(|e| ServiceError::Internal(format!("encryption: {e}")))?;
    Ok(Sealed {
        algorithm: ALGORITHM.into(),
        kdf,
        salt: BASE64.encode(salt),
        nonce: BASE64.encode(nonce),
        ciphertext: BASE64.encode(ciphertext),
    })
}

/// Opens a sealed payload: `None` when the key is wrong (the tag does not verify).
pub fn open(
    key: &DataKey,
    sealed: &Sealed,
    aad: &[u8],
) -> Result<Option<Zeroizing<Vec<u8>>>, ServiceError> {
    let damaged =
        |what: &str| ServiceError::Internal(format!("a stored entry's {what} is damaged"));
    if sealed.algorithm != ALGORITHM {
        return Err(damaged("algorithm"));
    }
    let salt = BASE64.decode(&sealed.salt).map_err(|_| damaged("salt"))?;
    let nonce: [u8; 12] = BASE64
        .decode(&sealed.nonce)
        .ok()
        .and_then(|n| n.try_into().ok())
        .ok_or_else(|| damaged("nonce"))?;
    let ciphertext = BASE64
        .decode(&sealed.ciphertext)
        .map_err(|_| damaged("ciphertext"))?;
    let derived = derive(key, &salt, &sealed.kdf)?;
    let cipher = Aes256Gcm::new_from_slice(&*derived)
        .map_err(|e| ServiceError::Internal(format!("cipher key: {e}")))?;
    Ok(cipher
        .decrypt(
            &Nonce::<U12>::from(nonce),
            Payload {
                msg: &ciphertext,
                aad,
            },
        )
        .ok()
        .map(Zeroizing::new))
}

/// How many key derivations may run at once: one per core. Each takes 19 MiB and a core for a
/// moment; more at once would only queue, and bound guessing less.
static DERIVATIONS: LazyLock<Arc<tokio::sync::Semaphore>> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Arc::new(tokio::sync::Semaphore::new(cores))
});

/// What a request beyond one key derivation per core is answered (503).
pub const DERIVATIONS_BUSY: &str =
    "every core is deriving an encryption key now; try again in a moment";

/// Runs `work` (a key derivation and what needs it) on the blocking pool, at most one per core
/// at once; beyond that the answer is 503 with `Retry-After`.
pub async fn off_the_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    let permit = Arc::clone(&*DERIVATIONS)
        .try_acquire_owned()
        .map_err(|_| ServiceError::Unavailable(DERIVATIONS_BUSY.into()))?;
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work()
    })
    .await
    .map_err(|e| ServiceError::Internal(format!("a key derivation task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> DataKey {
        DataKey::from(s.to_owned())
    }

    #[test]
    fn a_sealed_payload_opens_with_its_key_only_and_only_where_it_was_sealed() {
        let id: DataId = "dat_one".parse().expect("an id");
        let other: DataId = "dat_two".parse().expect("an id");
        let at = Instant::from_timestamp(1_725_148_800, 0).unwrap_or_default();
        let aad = associated_data(&id, &TimelineId::primary(), at);
        let sealed = seal(&key("correct horse"), br#"{"a":1}"#, &aad).expect("sealed");
        assert_eq!(sealed.algorithm, "AES-256-GCM");
        assert!(!sealed.ciphertext.contains("\"a\""));
        let opened = open(&key("correct horse"), &sealed, &aad).expect("opens");
        assert_eq!(
            opened.as_deref().map(Vec::as_slice),
            Some(&br#"{"a":1}"#[..])
        );
        assert!(
            open(&key("wrong horse"), &sealed, &aad)
                .expect("runs")
                .is_none()
        );
        // The same ciphertext moved to another entry does not open.
        let moved = associated_data(&other, &TimelineId::primary(), at);
        assert!(
            open(&key("correct horse"), &sealed, &moved)
                .expect("runs")
                .is_none()
        );
        // A second seal of the same data uses another salt and nonce.
        let again = seal(&key("correct horse"), br#"{"a":1}"#, &aad).expect("sealed");
        assert_ne!(again.salt, sealed.salt);
        assert_ne!(again.ciphertext, sealed.ciphertext);
    }

    #[test]
    fn cache_durations_read_as_seconds_or_durations_within_a_day() {
        use serde_json::json;
        assert_eq!(staleness_secs(&json!("3600")).ok(), Some(3600));
        assert_eq!(staleness_secs(&json!(30)).ok(), Some(30));
        assert_eq!(staleness_secs(&json!("10m")).ok(), Some(600));
        assert_eq!(staleness_secs(&json!("PT1H")).ok(), Some(3600));
        assert_eq!(staleness_secs(&json!("0")).ok(), Some(0));
        for bad in [
            json!("2d"),
            json!(-1),
            json!("P1M"),
            json!(true),
            json!("soon"),
        ] {
            assert!(
                matches!(staleness_secs(&bad), Err(ServiceError::InvalidInput { .. })),
                "{bad} was accepted"
            );
        }
    }

    #[tokio::test]
    async fn derivations_beyond_one_per_core_are_answered_unavailable() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let held = Arc::clone(&*DERIVATIONS)
            .acquire_many_owned(u32::try_from(cores).unwrap_or(u32::MAX))
            .await
            .expect("the permits");
        let refused = off_the_runtime(|| Ok(())).await;
        assert!(
            matches!(refused, Err(ServiceError::Unavailable(_))),
            "{refused:?}"
        );
        drop(held);
        assert_eq!(off_the_runtime(|| Ok(7)).await.ok(), Some(7));
    }
}
