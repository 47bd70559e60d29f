//! Limits: rate limits by client address and by traveller, and the request timeout.
//! (The body size limit is axum's `DefaultBodyLimit`, answered 413 by our extractors.)

use std::hash::Hash;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::response::{IntoResponse, Response};
use governor::Quota;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;

use super::Onward;
use super::problem::Problem;
use crate::error::ServiceError;

/// How many requests a traveller may send: `per_second` on average, bursts of `burst`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    /// Sustained requests per second; 0 turns the limit off.
    pub per_second: f64,
    /// Requests that may be sent at once after a quiet spell.
    pub burst: u32,
}

impl RateLimit {
    /// No limit.
    pub const OFF: RateLimit = RateLimit {
        per_second: 0.0,
        burst: 0,
    };

    /// The default limit per client address: generous enough for many travellers behind one
    /// NAT or proxy, low enough that one address cannot flood authentication or `/readyz`.
    pub const PER_ADDRESS: RateLimit = RateLimit {
        per_second: 500.0,
        burst: 1000,
    };

    fn is_off(&self) -> bool {
        self.per_second <= 0.0 || self.burst == 0
    }
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            per_second: 50.0,
            burst: 100,
        }
    }
}

impl RateLimit {
    /// The quota governor enforces; `None` when the limit is off.
    fn quota(&self) -> Option<Quota> {
        if self.is_off() || !self.per_second.is_finite() {
            return None;
        }
        // A very slow rate is capped at one request a year rather than overflowing.
        let period = Duration::try_from_secs_f64(1.0 / self.per_second)
            .unwrap_or(MAX_PERIOD)
            .min(MAX_PERIOD);
        Quota::with_period(period)
            .map(|q| q.allow_burst(NonZeroU32::new(self.burst).unwrap_or(NonZeroU32::MIN)))
    }
}

/// The longest time one request's allowance takes to come back.
const MAX_PERIOD: Duration = Duration::from_secs(365 * 86_400);

/// How often the keys whose allowance is whole again (clients gone quiet) are forgotten, so
/// that a stream of new addresses cannot grow memory without bound. A key's allowance is whole
/// again after `burst / per_second` (2 s for the default address limit).
pub const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// governor's keyed limiter on a sharded map.
type Keyed<K, C> =
    governor::RateLimiter<K, DashMapStateStore<K>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// Keyed limits (GCRA, from `governor`): by client address before authentication, by
/// traveller (`sub`) after it. The state is sharded, so checks of different keys do not
/// contend on one lock, and a check writes nothing shared but its key's state: keys gone quiet
/// are forgotten by a task of their own ([`RateLimiter::spawn_pruning`]), not by a request.
pub struct RateLimiter<K: Hash + Eq + Clone = String, C: Clock = DefaultClock> {
    keyed: Option<Keyed<K, C>>,
    clock: C,
}

impl<K: Hash + Eq + Clone, C: Clock> std::fmt::Debug for RateLimiter<K, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("on", &self.keyed.is_some())
            .finish()
    }
}

impl<K: Hash + Eq + Clone> RateLimiter<K, DefaultClock> {
    /// A limiter enforcing `limit` on the real clock.
    pub fn new(limit: RateLimit) -> Self {
        Self::with_clock(limit, DefaultClock::default())
    }
}

impl<K, C> RateLimiter<K, C>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + Clone + Send + Sync + 'static,
{
    /// Prunes the limiter every [`PRUNE_EVERY`] on the runtime this is called on, each time on
    /// a blocking thread (a map grown by many addresses takes a while to walk), until the
    /// limiter is dropped. Outside a runtime, or with the limit off, nothing is spawned.
    pub fn spawn_pruning(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.keyed.is_none() {
            return;
        }
        let limiter = Arc::downgrade(self);
        runtime.spawn(async move {
            let mut every = tokio::time::interval(PRUNE_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            every.tick().await;
            loop {
                every.tick().await;
                let Some(limiter) = limiter.upgrade() else {
                    return;
                };
                if tokio::task::spawn_blocking(move || limiter.prune())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
    }
}

impl<K: Hash + Eq + Clone, C: Clock + Clone> RateLimiter<K, C> {
    /// A limiter enforcing `limit` on `clock`.
    pub fn with_clock(limit: RateLimit, clock: C) -> Self {
        Self {
            keyed: limit
                .quota()
                .map(|quota| governor::RateLimiter::dashmap_with_clock(quota, clock.clone())),
            clock,
        }
    }

    /// Counts one request for `key`; `Err(seconds)` says how long to wait when it is over.
    pub fn check(&self, key: &K) -> Result<(), u64> {
        let Some(keyed) = &self.keyed else {
            return Ok(());
        };
        keyed.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            wait.as_secs_f64().ceil().max(1.0) as u64
        })
    }

    /// Forgets the keys whose allowance is whole again: remembering them changes no answer.
    pub fn prune(&self) {
        if let Some(keyed) = &self.keyed {
            keyed.retain_recent();
            keyed.shrink_to_fit();
        }
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        self.keyed.as_ref().map_or(0, |k| k.len())
    }

    /// Whether no key is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Limits requests by client address before anything else is done for them (authentication,
/// `/readyz`'s store query, a 401): a flood from one address is answered 429 cheaply. Requests
/// without a known peer address (in-process tests) pass.
pub(super) async fn by_address(
    State(limiter): State<Arc<RateLimiter<IpAddr>>>,
    req: Request,
    next: impl Onward,
) -> Response {
    // A write another replica forwarded was counted there, against its sender's address.
    if req
        .extensions()
        .get::<super::forward::Forwarded>()
        .is_some()
    {
        return next.run(req).await;
    }
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if let Some(ip) = peer
        && let Err(retry_after_secs) = limiter.check(&ip)
    {
        return Problem::from_error(ServiceError::RateLimited { retry_after_secs }).into_response();
    }
    next.run(req).await
}

/// Answers 503 when the request takes longer than the configured timeout.
pub(super) async fn timeout(
    State(limit): State<Duration>,
    req: Request,
    next: impl Onward,
) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => Problem::unavailable(format!(
            "the request took longer than {} s and was abandoned; try again",
            limit.as_secs_f64()
        ))
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use governor::clock::FakeRelativeClock;

    use super::*;

    /// A limiter of `per_second` and `burst` on a clock the test moves, and the clock.
    fn on_a_fake_clock<K: Hash + Eq + Clone>(
        per_second: f64,
        burst: u32,
    ) -> (RateLimiter<K, FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        let limit = RateLimit { per_second, burst };
        (RateLimiter::with_clock(limit, clock.clone()), clock)
    }

    #[test]
    fn a_key_has_its_burst_then_is_told_how_long_to_wait() {
        let (limiter, clock) = on_a_fake_clock::<String>(0.5, 2);
        let ada = "ada".to_owned();
        assert!(limiter.check(&ada).is_ok());
        assert!(limiter.check(&ada).is_ok());
        assert_eq!(limiter.check(&ada), Err(2));
        // Another key has its own allowance.
        assert!(limiter.check(&"bob".to_owned()).is_ok());
        // Two seconds bring one request back at 0.5/s.
        clock.advance(Duration::from_secs(2));
        assert!(limiter.check(&ada).is_ok());
        assert!(limiter.check(&ada).is_err());
    }

    #[test]
    fn zero_turns_the_limit_off() {
        let limiter: RateLimiter = RateLimiter::new(RateLimit::OFF);
        for _ in 0..1000 {
            assert!(limiter.check(&"ada".to_owned()).is_ok());
        }
        assert!(limiter.is_empty());
    }

    #[test]
    fn idle_keys_are_forgotten() {
        let (limiter, clock) = on_a_fake_clock::<u64>(1000.0, 10);
        for key in 0..1000 {
            assert!(limiter.check(&key).is_ok());
        }
        assert_eq!(limiter.len(), 1000);
        clock.advance(Duration::from_secs(1));
        assert!(limiter.check(&u64::MAX).is_ok());
        // Pruning forgets every key whose allowance is whole again, and only those.
        limiter.prune();
        assert_eq!(limiter.len(), 1, "the key checked just now is kept");
    }

    #[tokio::test]
    async fn quiet_keys_are_forgotten_by_a_task_of_their_own_not_by_a_request() {
        let limiter: Arc<RateLimiter<u64>> = Arc::new(RateLimiter::new(RateLimit {
            per_second: 1_000_000.0,
            burst: 1,
        }));
        limiter.spawn_pruning();
        for key in 0..1000 {
            assert!(limiter.check(&key).is_ok());
        }
        assert_eq!(limiter.len(), 1000, "checks alone forget nothing");
        // A key's allowance is whole again a microsecond later; the task prunes within a
        // period or two.
        let deadline = std::time::Instant::now() + PRUNE_EVERY * 10;
        while !limiter.is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(PRUNE_EVERY / 4).await;
        }
        assert!(limiter.is_empty(), "{} keys kept", limiter.len());
    }

    #[test]
    fn extreme_rates_neither_panic_nor_block_forever() {
        let ada = "ada".to_owned();
        // Slower than one a year: the burst, then told to wait, and the allowance is back
        // after a year (the longest period), not never.
        for per_second in [1e-300, f64::MIN_POSITIVE, 1e-12] {
            let clock = FakeRelativeClock::default();
            let limiter: RateLimiter<String, _> = RateLimiter::with_clock(
                RateLimit {
                    per_second,
                    burst: 1,
                },
                clock.clone(),
            );
            assert!(limiter.check(&ada).is_ok(), "{per_second}/s: the burst");
            assert_eq!(
                limiter.check(&ada),
                Err(MAX_PERIOD.as_secs()),
                "{per_second}/s: wait a year"
            );
            clock.advance(MAX_PERIOD);
            assert!(limiter.check(&ada).is_ok(), "{per_second}/s: a year later");
        }
        // Faster than anything can send, or not a number: nothing is refused.
        for per_second in [1e300, f64::INFINITY, f64::NAN] {
            let limiter: RateLimiter = RateLimiter::new(RateLimit {
                per_second,
                burst: 1,
            });
            for _ in 0..100 {
                assert!(limiter.check(&ada).is_ok(), "{per_second}/s");
            }
        }
    }
}

/// Caps on the monitor streams open at once: per traveller and in all. A stream holds a
/// [`StreamSlot`] for as long as it is open; beyond a cap a new one is answered 429.
#[derive(Debug)]
pub struct StreamSlots {
    per_traveller: usize,
    total: usize,
    /// Open streams in all, and per traveller (travellers with none are not listed).
    open: std::sync::Mutex<(usize, std::collections::HashMap<String, usize>)>,
}

/// Seconds a refused stream is told to wait: streams last long, so a slot frees up slowly.
pub const STREAM_RETRY_AFTER_SECS: u64 = 5;

/// One open stream's place under the caps; given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    traveller: String,
}

impl StreamSlots {
    /// Caps of `per_traveller` streams per traveller and `total` in all.
    pub fn new(per_traveller: usize, total: usize) -> Self {
        Self {
            per_traveller,
            total,
            open: std::sync::Mutex::default(),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, (usize, std::collections::HashMap<String, usize>)> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A slot for one more stream of `traveller`, or the 429 problem saying which cap is
    /// reached.
    pub fn take(self: &Arc<Self>, traveller: &str) -> Result<StreamSlot, Problem> {
        let mut open = self.open();
        let (total, by_traveller) = &mut *open;
        let theirs = by_traveller.get(traveller).copied().unwrap_or(0);
        let refused = if theirs >= self.per_traveller {
            Some(format!(
                "{traveller} has {theirs} monitor streams open, the most one traveller may \
                 (--max-streams-per-traveller); close one, or follow the same timeline from \
                 one stream"
            ))
        } else if *total >= self.total {
            Some(format!(
                "the server has {total} monitor streams open, the most it serves at once \
                 (--max-streams); try again later"
            ))
        } else {
            None
        };
        if let Some(detail) = refused {
            return Err(
                Problem::of_kind(&crate::error::RATE_LIMITED, "monitor streams", detail)
                    .with_header(
                        axum::http::header::RETRY_AFTER,
                        &STREAM_RETRY_AFTER_SECS.to_string(),
                    ),
            );
        }
        *total += 1;
        *by_traveller.entry(traveller.to_owned()).or_default() += 1;
        Ok(StreamSlot {
            slots: Arc::clone(self),
            traveller: traveller.to_owned(),
        })
    }

    /// Streams open now, in all.
    pub fn open_now(&self) -> usize {
        self.open().0
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open();
        let (total, by_traveller) = &mut *open;
        *total = total.saturating_sub(1);
        if let Some(n) = by_traveller.get_mut(&self.traveller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                by_traveller.remove(&self.traveller);
            }
        }
    }
}

#[cfg(test)]
mod stream_tests {
    use super::*;

    #[test]
    fn streams_are_capped_per_traveller_and_in_all_and_slots_come_back() {
        let slots = Arc::new(StreamSlots::new(2, 3));
        let a1 = slots.take("ada").unwrap();
        let _a2 = slots.take("ada").unwrap();
        let refused = slots.take("ada").unwrap_err();
        assert_eq!(refused.status(), axum::http::StatusCode::TOO_MANY_REQUESTS);
        let _b1 = slots.take("bob").unwrap();
        assert!(slots.take("cy").is_err(), "three in all");
        drop(a1);
        assert_eq!(slots.open_now(), 2);
        let _a3 = slots.take("ada").unwrap();
    }
}
