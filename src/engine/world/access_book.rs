//! The access log as a world holds it (folded from accepted records and `Op::AccessSummary`
//! records): counters per timeline (or the service), minute, traveller, action, operation and
//! outcome, within retention. Counting, flushing and answering are `engine::access_log`.

use std::time::Duration;

use imbl::OrdMap;
use serde::{Deserialize, Serialize};

use super::World;
use crate::model::{Instant, TimelineId};
use crate::service::AccessAction;

/// Whether an access was allowed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It was answered.
    #[default]
    Allowed,
    /// It was refused.
    Refused,
}

impl Outcome {
    /// The word the API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Refused => "refused",
        }
    }
}

/// What one counter counts, within a timeline (or the service). Ordered by minute first, so
/// what retention drops is a prefix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Key {
    /// The minute (wall clock) the accesses fell in.
    pub minute: Instant,
    /// The traveller, or [`UNKNOWN_USER`].
    pub user: String,
    /// What they did.
    pub action: AccessAction,
    /// The operation (e.g. `add_events`, `get_timeline`).
    pub operation: String,
    /// Whether it was allowed.
    pub outcome: Outcome,
}

/// How many accesses a key counts, and the last of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// How many.
    pub count: u64,
    /// When the last happened.
    pub last_at: Instant,
}

impl Tally {
    /// Both counts together.
    pub(in crate::engine) fn merged(self, other: Tally) -> Tally {
        Tally {
            count: self.count.saturating_add(other.count),
            last_at: self.last_at.max(other.last_at),
        }
    }
}

/// One counter of an [`Op::AccessSummary`] record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    /// The timeline, or `None` for an access that named none (service-wide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<TimelineId>,
    /// What is counted.
    #[serde(flatten)]
    pub key: Key,
    /// The count.
    #[serde(flatten)]
    pub tally: Tally,
}

/// The folded access log, part of the [`World`] (and of snapshots). Cheap to clone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AccessBook {
    /// Counters by timeline (`None`: service-wide), each ordered by minute.
    scopes: imbl::HashMap<Option<TimelineId>, OrdMap<Key, Tally>>,
    /// Accesses a flush could not carry, by minute.
    dropped: OrdMap<Instant, u64>,
    /// Everything before this minute was dropped by retention.
    retained_from: Option<Instant>,
}

/// The minute `t` falls in.
pub fn minute_of(t: Instant) -> Instant {
    use chrono::{DurationRound, TimeDelta};
    t.duration_trunc(TimeDelta::minutes(1)).unwrap_or(t)
}

impl AccessBook {
    /// Adds `tally` to the counter of `key` in `timeline` (unless retention already dropped
    /// its minute).
    pub(in crate::engine) fn add(&mut self, timeline: Option<TimelineId>, key: Key, tally: Tally) {
        if self.retained_from.is_some_and(|from| key.minute < from) {
            return;
        }
        let counters = self.scopes.entry(timeline).or_default();
        let total = counters.get(&key).map_or(tally, |t| t.merged(tally));
        counters.insert(key, total);
    }

    /// Drops what is older than `retention` before `now` (a record's time, so every replica
    /// drops alike). Cheap unless the minute it keeps from moved.
    pub(in crate::engine) fn retain(&mut self, now: Instant, retention: Duration) {
        let Ok(retention) = chrono::TimeDelta::from_std(retention) else {
            return;
        };
        let Some(from) = now.checked_sub_signed(retention).map(minute_of) else {
            return;
        };
        if self.retained_from.is_some_and(|was| was >= from) {
            return;
        }
        self.retained_from = Some(from);
        let first = Key {
            minute: from,
            user: String::new(),
            action: AccessAction::Read,
            operation: String::new(),
            outcome: Outcome::Allowed,
        };
        let scopes: Vec<_> = self.scopes.keys().cloned().collect();
        for scope in scopes {
            let Some(counters) = self.scopes.get(&scope) else {
                continue;
            };
            if counters.get_min().is_none_or(|(k, _)| k.minute >= from) {
                continue;
            }
            let (_, exact, mut kept) = counters.split_lookup(&first);
            if let Some(tally) = exact {
                kept.insert(first.clone(), tally);
            }
            if kept.is_empty() {
                self.scopes.remove(&scope);
            } else {
                self.scopes.insert(scope, kept);
            }
        }
        let (_, exact, mut kept) = self.dropped.split_lookup(&from);
        if let Some(n) = exact {
            kept.insert(from, n);
        }
        self.dropped = kept;
    }

    /// The counters of `timeline` (or the service's) whose minute is within `from..=to`.
    pub fn within(
        &self,
        timeline: Option<&TimelineId>,
        from: Instant,
        to: Instant,
    ) -> impl Iterator<Item = (&Key, &Tally)> {
        let first = Key {
            minute: minute_of(from),
            user: String::new(),
            action: AccessAction::Read,
            operation: String::new(),
            outcome: Outcome::Allowed,
        };
        self.scopes
            .get(&timeline.cloned())
            .into_iter()
            .flat_map(move |c| c.range(first.clone()..))
            .take_while(move |(k, _)| k.minute <= to)
    }

    /// Accesses no flush could carry, within `from..=to`.
    pub fn dropped_within(&self, from: Instant, to: Instant) -> u64 {
        self.dropped
            .range(minute_of(from)..)
            .take_while(|(m, _)| **m <= to)
            .map(|(_, n)| *n)
            .sum()
    }

    /// Where retention begins (`None`: nothing was dropped yet).
    pub fn retained_from(&self) -> Option<Instant> {
        self.retained_from
    }

    /// Every counter, for snapshots.
    pub(in crate::engine) fn image(&self) -> AccessImage {
        let mut counters: Vec<Counted> = self
            .scopes
            .iter()
            .flat_map(|(timeline, c)| {
                c.iter().map(move |(key, tally)| Counted {
                    timeline: timeline.clone(),
                    key: key.clone(),
                    tally: *tally,
                })
            })
            .collect();
        counters.sort_by(|a, b| (&a.timeline, &a.key).cmp(&(&b.timeline, &b.key)));
        AccessImage {
            counters,
            dropped: self.dropped.iter().map(|(m, n)| (*m, *n)).collect(),
            retained_from: self.retained_from,
        }
    }

    /// The book a snapshot holds.
    pub(in crate::engine) fn from_image(image: AccessImage) -> Self {
        let mut book = AccessBook {
            retained_from: image.retained_from,
            dropped: image.dropped.into_iter().collect(),
            ..AccessBook::default()
        };
        for c in image.counters {
            book.scopes
                .entry(c.timeline)
                .or_default()
                .insert(c.key, c.tally);
        }
        book
    }
}

/// The access log as a snapshot stores it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(in crate::engine) struct AccessImage {
    counters: Vec<Counted>,
    #[serde(default)]
    dropped: Vec<(Instant, u64)>,
    #[serde(default)]
    retained_from: Option<Instant>,
}

impl World {
    /// Folds an access summary's counters (see [`super::Op::AccessSummary`]).
    pub(super) fn apply_access_summary(&mut self, counters: Vec<Counted>, dropped: u64) {
        let mut latest = None;
        for c in counters {
            latest = latest.max(Some(c.key.minute));
            self.access.add(c.timeline, c.key, c.tally);
        }
        if dropped > 0
            && let Some(minute) = latest
        {
            let was = self.access.dropped.get(&minute).copied().unwrap_or(0);
            self.access
                .dropped
                .insert(minute, was.saturating_add(dropped));
        }
    }
}
