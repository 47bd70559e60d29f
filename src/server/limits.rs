//! Limits: a per-traveller token bucket and the request timeout.
//! (The body size limit is axum's `DefaultBodyLimit`, answered 413 by our extractors.)

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

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

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets beyond this many are pruned of the ones that refilled (idle travellers).
const PRUNE_ABOVE: usize = 10_000;

/// Token buckets keyed by traveller (`sub`).
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    /// A limiter enforcing `limit`.
    pub fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `key`; `Err(seconds)` says how long to wait when there is none.
    pub fn check(&self, key: &str) -> Result<(), u64> {
        self.check_at(key, Instant::now())
    }

    fn check_at(&self, key: &str, now: Instant) -> Result<(), u64> {
        if self.limit.is_off() {
            return Ok(());
        }
        let burst = f64::from(self.limit.burst);
        let rate = self.limit.per_second;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refilled = now.duration_since(bucket.at).as_secs_f64() * rate;
        bucket.tokens = (bucket.tokens + refilled).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) / rate;
            Err(wait.ceil().max(1.0) as u64)
        }
    }
}

/// Answers 503 when the request takes longer than the configured timeout.
pub async fn timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => Problem::from_error(ServiceError::Unavailable(format!(
            "the request took longer than {} s and was abandoned; try again",
            limit.as_secs_f64()
        )))
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_says_how_long_to_wait() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 0.5,
            burst: 2,
        });
        let t0 = Instant::now();
        assert!(limiter.check_at("ada", t0).is_ok());
        assert!(limiter.check_at("ada", t0).is_ok());
        assert_eq!(limiter.check_at("ada", t0), Err(2));
        // Another traveller has their own bucket.
        assert!(limiter.check_at("bob", t0).is_ok());
        // Two seconds refill one token at 0.5/s.
        assert!(limiter.check_at("ada", t0 + Duration::from_secs(2)).is_ok());
    }

    #[test]
    fn zero_turns_the_limit_off() {
        let limiter = RateLimiter::new(RateLimit::OFF);
        for _ in 0..1000 {
            assert!(limiter.check("ada").is_ok());
        }
    }
}
