//! Safe retries: a write sent with an `Idempotency-Key` is done once, and a repeat of it is
//! answered with the first answer.
//!
//! The key and the answer are logged in the same batch as the write's changes
//! ([`Op::Remember`]), so a repeat that reaches another replica, or this one after a restart,
//! finds them; and two copies of one request racing on two replicas cannot both be written,
//! because the loser decides again on a state that already remembers the winner's key.
//! Keys belong to their traveller and are kept for [`KEEP_FOR`].

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Op, World};
use crate::error::ServiceError;
use crate::model::{Instant, Traveller};

pub use super::world::keys::{
    DEFAULT_KEYS_PER_TRAVELLER, IdempotencyKey, KEEP_FOR, Keys, MAX_KEY_LEN, Remembered,
    set_keys_per_traveller,
};

/// What a keyed request brings: its key, and a fingerprint of the request itself (method,
/// target and body) that tells a repeat from another request reusing the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Idempotency {
    /// The client's key.
    pub key: IdempotencyKey,
    /// Equal for equal requests, different otherwise (a digest, say).
    pub fingerprint: String,
}

/// Decides a keyed write: a repeat of a remembered request is answered from the log, anything
/// else is decided by `decide` and, when it writes, remembered with the same batch.
///
/// `durable_seq` is the last log position known to be durable. A repeat that arrives while
/// the first write is still being appended joins the log behind it (its answer rests on that
/// append), so it is not acknowledged before the first is.
pub(super) fn decide<T: Serialize + DeserializeOwned>(
    world: &World,
    traveller: &Traveller,
    request: &Idempotency,
    now: Instant,
    durable_seq: u64,
    decide: impl FnOnce() -> Result<(Vec<Op>, T), ServiceError>,
) -> Result<(Vec<Op>, T), ServiceError> {
    let remember = |answer: serde_json::Value, at: Instant| Op::Remember {
        traveller: traveller.clone(),
        key: request.key.clone(),
        fingerprint: request.fingerprint.clone(),
        answer,
        at,
    };
    if let Some(first) = world.keys.get(traveller, &request.key, now) {
        if first.fingerprint != request.fingerprint {
            return Err(ServiceError::IdempotencyKeyReused {
                key: request.key.to_string(),
            });
        }
        let answer = serde_json::from_value(first.answer.clone()).map_err(|e| {
            ServiceError::Internal(format!(
                "the answer remembered for key '{}' is unreadable: {e}",
                request.key
            ))
        })?;
        let ops = if first.seq > durable_seq {
            vec![remember(first.answer.clone(), first.at)]
        } else {
            Vec::new()
        };
        return Ok((ops, answer));
    }
    let (mut ops, answer) = decide()?;
    if !ops.is_empty() {
        let json = serde_json::to_value(&answer)
            .map_err(|e| ServiceError::Internal(format!("cannot remember an answer: {e}")))?;
        ops.push(remember(json, now));
    }
    Ok((ops, answer))
}
