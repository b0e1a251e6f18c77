//! Per-key request budgets: a token bucket per key in a sharded map.
//!
//! A bucket holds up to the key's per-minute budget and refills continuously at budget/60 per
//! second, so a client can burst its whole minute and then proceeds at the steady rate. A full
//! bucket is the same as no bucket, which is how idle buckets are evicted without changing
//! anyone's budget. The same limiter, keyed by client IP, throttles failed authentication.
//!
//! Per request this takes one shard lock and does a few float operations; it never allocates
//! for a key it has seen in the last minute.

use std::hash::Hash;
use std::time::{Duration, Instant};

use dashmap::DashMap;

/// What the rate-limit headers report, and whether the request may proceed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the bucket is full again (the window's reset).
    pub reset_after: u64,
    /// Seconds until one request is possible again; at least 1 when denied.
    pub retry_after: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct TokenBucket {
    tokens: f64,
    capacity: u32,
    updated: Instant,
}

impl TokenBucket {
    pub fn full(capacity: u32, now: Instant) -> TokenBucket {
        TokenBucket {
            tokens: f64::from(capacity),
            capacity,
            updated: now,
        }
    }

    fn per_second(&self) -> f64 {
        f64::from(self.capacity) / 60.0
    }

    fn refill(&mut self, capacity: u32, now: Instant) {
        if capacity != self.capacity {
            // A changed budget (keys reload) applies at once, without a free refill.
            self.tokens = self.tokens.min(f64::from(capacity));
            self.capacity = capacity;
        }
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second()).min(f64::from(self.capacity));
        self.updated = now;
    }

    fn decision(&self, allowed: bool) -> Decision {
        let rate = self.per_second();
        let missing = f64::from(self.capacity) - self.tokens;
        Decision {
            allowed,
            limit: self.capacity,
            remaining: self.tokens.floor().max(0.0) as u32,
            reset_after: (missing / rate).ceil().max(0.0) as u64,
            retry_after: if allowed {
                0
            } else {
                ((1.0 - self.tokens) / rate).ceil().max(1.0) as u64
            },
        }
    }

    /// Spends one token if there is one.
    pub fn try_take(&mut self, capacity: u32, now: Instant) -> Decision {
        self.refill(capacity, now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.decision(true)
        } else {
            self.decision(false)
        }
    }

    /// Whether one token is available, without spending it.
    pub fn has_token(&mut self, capacity: u32, now: Instant) -> bool {
        self.refill(capacity, now);
        self.tokens >= 1.0
    }

    fn is_full(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens + elapsed * self.per_second() >= f64::from(self.capacity)
    }
}

/// Token buckets by key (API key id, or client IP for failed authentication).
#[derive(Debug)]
pub struct RateLimiter<K: Hash + Eq> {
    // foldhash: several times faster than SipHash on these short keys, seeded per process so
    // client-chosen keys (addresses) cannot be aimed at one shard.
    buckets: DashMap<K, TokenBucket, foldhash::fast::RandomState>,
}

impl<K: Hash + Eq + Clone> Default for RateLimiter<K> {
    fn default() -> Self {
        RateLimiter {
            buckets: DashMap::with_hasher(foldhash::fast::RandomState::default()),
        }
    }
}

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    pub fn take(&self, key: &K, capacity: u32, now: Instant) -> Decision {
        if let Some(mut bucket) = self.buckets.get_mut(key) {
            return bucket.try_take(capacity, now);
        }
        let mut bucket = self
            .buckets
            .entry(key.clone())
            .or_insert_with(|| TokenBucket::full(capacity, now));
        bucket.try_take(capacity, now)
    }

    /// The decision a request would get now, without spending anything.
    pub fn peek(&self, key: &K, capacity: u32, now: Instant) -> Decision {
        match self.buckets.get_mut(key) {
            Some(mut bucket) => {
                let allowed = bucket.has_token(capacity, now);
                bucket.decision(allowed)
            }
            None => TokenBucket::full(capacity, now).decision(capacity > 0),
        }
    }

    /// Drops buckets that have refilled completely: they hold no information.
    pub fn evict_idle(&self, now: Instant) -> usize {
        let before = self.buckets.len();
        self.buckets.retain(|_, bucket| !bucket.is_full(now));
        before - self.buckets.len()
    }

    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
}

/// How often idle buckets are swept.
pub const EVICTION_INTERVAL: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_its_budget_then_refuses_with_retry_after() {
        let start = Instant::now();
        let limiter = RateLimiter::default();
        let decisions: Vec<Decision> = (0..11).map(|_| limiter.take(&"k", 10, start)).collect();
        assert_eq!(decisions.iter().filter(|d| d.allowed).count(), 10);
        assert_eq!(
            decisions.iter().map(|d| d.remaining).collect::<Vec<_>>(),
            vec![9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0]
        );
        let denied = decisions[10];
        // 10 per minute refills one token every 6 seconds.
        assert_eq!((denied.allowed, denied.retry_after, denied.reset_after), (false, 6, 60));
        // Six seconds later exactly one more request fits.
        let later = start + Duration::from_secs(6);
        assert!(limiter.take(&"k", 10, later).allowed);
        assert!(!limiter.take(&"k", 10, later).allowed);
    }

    #[test]
    fn full_buckets_are_evicted_and_partial_ones_kept() {
        let start = Instant::now();
        let limiter = RateLimiter::default();
        limiter.take(&"busy", 60, start);
        limiter.take(&"idle", 60, start);
        let later = start + Duration::from_millis(500);
        limiter.take(&"busy", 60, later);
        assert_eq!(limiter.evict_idle(start + Duration::from_millis(1500)), 1);
        assert_eq!(limiter.len(), 1);
    }
}
