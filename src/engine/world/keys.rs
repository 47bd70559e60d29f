//! The idempotency keys a world remembers (folded from `Op::Remember` records): which write a
//! traveller made with a key, until it expires or the traveller's cap forgets it. What a keyed
//! request is decided by lives in `engine::idempotency`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::ServiceError;
use crate::model::{Instant, Traveller};

/// How long a key is remembered after its write.
pub const KEEP_FOR: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// How many keys a traveller's writes are remembered with at most, unless
/// [`set_keys_per_traveller`] says otherwise: beyond it, their oldest keys are forgotten first
/// (a retry with a forgotten key is done again).
pub const DEFAULT_KEYS_PER_TRAVELLER: usize = 1_000;

/// The cap in force (see [`set_keys_per_traveller`]).
static KEYS_PER_TRAVELLER: AtomicUsize = AtomicUsize::new(DEFAULT_KEYS_PER_TRAVELLER);

/// Sets how many keys are remembered per traveller (at least one), for the whole process: set
/// once at start, before the log is folded, and alike on every replica, so that they forget
/// the same keys.
pub fn set_keys_per_traveller(cap: usize) {
    KEYS_PER_TRAVELLER.store(cap.max(1), Ordering::Relaxed);
}

fn keys_per_traveller() -> usize {
    KEYS_PER_TRAVELLER.load(Ordering::Relaxed)
}

/// Longest key accepted, in characters.
pub const MAX_KEY_LEN: usize = 255;

/// A client's name for one logical request: 1 to 255 visible ASCII characters, taken as sent
/// (the IETF draft's quoted form `"abc"` is a key too, quotes included).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for IdempotencyKey {
    type Err = ServiceError;

    fn from_str(raw: &str) -> Result<Self, ServiceError> {
        let bad = |why: &str| ServiceError::invalid("Idempotency-Key", why);
        let key = raw.trim();
        if key.is_empty() {
            return Err(bad(
                "the key is empty; send 1 to 255 visible ASCII characters",
            ));
        }
        if key.chars().count() > MAX_KEY_LEN {
            return Err(bad("the key is longer than 255 characters"));
        }
        if !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad(
                "the key has a character that is not visible ASCII (spaces included); a UUID or ULID fits",
            ));
        }
        Ok(Self(key.to_owned()))
    }
}

impl TryFrom<String> for IdempotencyKey {
    type Error = ServiceError;

    fn try_from(s: String) -> Result<Self, ServiceError> {
        s.parse()
    }
}

impl From<IdempotencyKey> for String {
    fn from(k: IdempotencyKey) -> Self {
        k.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A keyed write as the log remembers it.
#[derive(Clone, Debug, PartialEq)]
pub struct Remembered {
    /// The request's fingerprint.
    pub fingerprint: String,
    /// The answer given, as JSON.
    pub answer: serde_json::Value,
    /// When it was written.
    pub at: Instant,
    /// The log record that remembers it.
    pub seq: u64,
}

/// The keys a world remembers, oldest first for expiry.
#[derive(Clone, Debug, Default)]
pub struct Keys {
    by_key: imbl::HashMap<(Traveller, IdempotencyKey), Arc<Remembered>>,
    by_age: imbl::OrdMap<(Instant, u64), (Traveller, IdempotencyKey)>,
    /// Each traveller's keys by age, for the cap per traveller.
    by_traveller: imbl::HashMap<Traveller, imbl::OrdMap<(Instant, u64), IdempotencyKey>>,
}

impl Keys {
    /// The write `traveller` made with `key`, if it is still remembered at `now`.
    pub fn get(
        &self,
        traveller: &Traveller,
        key: &IdempotencyKey,
        now: Instant,
    ) -> Option<&Arc<Remembered>> {
        self.by_key
            .get(&(traveller.clone(), key.clone()))
            .filter(|r| now < r.at + KEEP_FOR)
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Every remembered write, for a snapshot.
    pub(crate) fn entries(
        &self,
    ) -> impl Iterator<Item = (&Traveller, &IdempotencyKey, &Arc<Remembered>)> + '_ {
        self.by_key.iter().map(|((t, k), r)| (t, k, r))
    }

    /// The keys a snapshot stored (its [`Keys::entries`]).
    pub(crate) fn from_entries(
        entries: impl IntoIterator<Item = (Traveller, IdempotencyKey, Remembered)>,
    ) -> Self {
        let mut entries: Vec<_> = entries.into_iter().collect();
        entries.sort_by_key(|(_, _, r)| (r.at, r.seq));
        let mut keys = Self::default();
        let cap = keys_per_traveller();
        for (traveller, key, remembered) in entries {
            keys.remember_within(traveller, key, remembered, cap);
        }
        keys
    }

    /// Whether both remember the same writes (for tests and checks).
    pub(crate) fn same_as(&self, other: &Keys) -> bool {
        self.by_key == other.by_key && self.by_age == other.by_age
    }

    /// Folds in a remembered write, first forgetting the keys that expired before it. A key
    /// remembered already keeps its first answer.
    pub(super) fn remember(
        &mut self,
        traveller: Traveller,
        key: IdempotencyKey,
        remembered: Remembered,
    ) {
        self.remember_within(traveller, key, remembered, keys_per_traveller());
    }

    /// [`Keys::remember`], keeping at most `cap` keys of the traveller: their oldest go first.
    fn remember_within(
        &mut self,
        traveller: Traveller,
        key: IdempotencyKey,
        remembered: Remembered,
        cap: usize,
    ) {
        while let Some(age) = self.by_age.get_min().map(|(k, _)| *k) {
            if age.0 + KEEP_FOR > remembered.at {
                break;
            }
            self.forget(age);
        }
        let entry = (traveller, key);
        if self.by_key.contains_key(&entry) {
            return;
        }
        while let Some(oldest) = self
            .by_traveller
            .get(&entry.0)
            .filter(|mine| mine.len() >= cap.max(1))
            .and_then(|mine| mine.get_min().map(|(age, _)| *age))
        {
            self.forget(oldest);
        }
        let age = (remembered.at, remembered.seq);
        self.by_traveller
            .entry(entry.0.clone())
            .or_default()
            .insert(age, entry.1.clone());
        self.by_age.insert(age, entry.clone());
        self.by_key.insert(entry, Arc::new(remembered));
    }

    /// Forgets the key remembered at `age`.
    fn forget(&mut self, age: (Instant, u64)) {
        let Some(entry) = self.by_age.remove(&age) else {
            return;
        };
        self.by_key.remove(&entry);
        if let Some(mine) = self.by_traveller.get_mut(&entry.0) {
            mine.remove(&age);
            if mine.is_empty() {
                self.by_traveller.remove(&entry.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> IdempotencyKey {
        s.parse().unwrap()
    }

    fn at(hours: i64) -> Instant {
        chrono::DateTime::UNIX_EPOCH + chrono::TimeDelta::hours(hours)
    }

    fn remembered(hours: i64, seq: u64) -> Remembered {
        Remembered {
            fingerprint: "f".into(),
            answer: serde_json::json!(seq),
            at: at(hours),
            seq,
        }
    }

    #[test]
    fn keys_are_visible_ascii_up_to_255() {
        assert_eq!(key("\"abc\"").as_str(), "\"abc\"");
        assert_eq!(key("01j9-x_y").as_str(), "01j9-x_y");
        assert!("".parse::<IdempotencyKey>().is_err());
        assert!("a b".parse::<IdempotencyKey>().is_err());
        assert!("é".parse::<IdempotencyKey>().is_err());
        assert!("k".repeat(255).parse::<IdempotencyKey>().is_ok());
        assert!("k".repeat(256).parse::<IdempotencyKey>().is_err());
    }

    #[test]
    fn a_key_is_kept_a_day_and_keeps_its_first_answer() {
        let ada: Traveller = "ada".parse().unwrap();
        let mut keys = Keys::default();
        keys.remember(ada.clone(), key("k1"), remembered(0, 1));
        keys.remember(ada.clone(), key("k1"), remembered(1, 2));
        assert_eq!(keys.get(&ada, &key("k1"), at(23)).unwrap().seq, 1);
        assert!(keys.get(&ada, &key("k1"), at(24)).is_none(), "expired");
        let bob: Traveller = "bob".parse().unwrap();
        assert!(keys.get(&bob, &key("k1"), at(1)).is_none(), "per traveller");
        // A write a day later forgets what expired.
        keys.remember(ada.clone(), key("k2"), remembered(25, 3));
        assert_eq!(keys.len(), 1);
        assert!(keys.get(&ada, &key("k2"), at(25)).is_some());
    }

    #[test]
    fn beyond_the_cap_a_travellers_oldest_keys_are_forgotten_first() {
        let ada: Traveller = "ada".parse().unwrap();
        let bob: Traveller = "bob".parse().unwrap();
        let mut keys = Keys::default();
        keys.remember_within(bob.clone(), key("b0"), remembered(0, 1), 3);
        for i in 0..5 {
            let seq = 2 + i as u64;
            keys.remember_within(ada.clone(), key(&format!("a{i}")), remembered(1, seq), 3);
        }
        let kept: Vec<bool> = (0..5)
            .map(|i| keys.get(&ada, &key(&format!("a{i}")), at(2)).is_some())
            .collect();
        assert_eq!(kept, [false, false, true, true, true]);
        // Another traveller's keys are theirs: bob's older key stays.
        assert!(keys.get(&bob, &key("b0"), at(2)).is_some());
        assert_eq!(keys.len(), 4);
        // A snapshot of them reads back as the same keys.
        let entries: Vec<_> = keys
            .entries()
            .map(|(t, k, r)| (t.clone(), k.clone(), (**r).clone()))
            .collect();
        assert!(Keys::from_entries(entries).same_as(&keys));
    }
}
