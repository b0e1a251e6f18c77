//! Per-key request budgets: a token bucket per key in a sharded map.
//!
//! A bucket holds up to the key's per-minute budget and refills continuously at budget/60 per
//! second, so a client can burst its whole minute and then proceeds at the steady rate. A full
//! bucket is the same as no bucket, which is how idle buckets are evicted without changing
//! anyone's budget. The same buckets, keyed by client IP, throttles failed authentication.
//!
//! Per request this takes one shard lock and does a few float operations; it never allocates
//! for a key it has seen in the last minute.

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
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
            // A changed budget (keys reload) applies at once, and what the key has spent in
            // the window stays spent: editing the file is no free refill, in either direction.
            let spent = f64::from(self.capacity) - self.tokens;
            self.tokens = (f64::from(capacity) - spent).max(0.0);
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

/// Token buckets by key (API key id, or client address group for failed authentication).
#[derive(Debug)]
pub struct TokenBuckets<K: Hash + Eq> {
    // foldhash: several times faster than SipHash on these short keys, seeded per process so
    // client-chosen keys (addresses) cannot be aimed at one shard.
    buckets: DashMap<K, TokenBucket, foldhash::fast::RandomState>,
    /// Most buckets held at once. Keys chosen by clients (addresses) would otherwise grow the
    /// map without bound; past it, the least recently used quarter is dropped.
    max_buckets: usize,
    /// Buckets dropped to stay under `max_buckets`.
    dropped: AtomicU64,
    trimming: Mutex<()>,
}

impl<K: Hash + Eq + Clone> Default for TokenBuckets<K> {
    fn default() -> Self {
        TokenBuckets::with_max_buckets(usize::MAX)
    }
}

impl<K: Hash + Eq + Clone> TokenBuckets<K> {
    pub fn with_max_buckets(max_buckets: usize) -> Self {
        TokenBuckets {
            buckets: DashMap::with_hasher(foldhash::fast::RandomState::default()),
            max_buckets: max_buckets.max(4),
            dropped: AtomicU64::new(0),
            trimming: Mutex::new(()),
        }
    }

    pub fn take(&self, key: &K, capacity: u32, now: Instant) -> Decision {
        if let Some(mut bucket) = self.buckets.get_mut(key) {
            return bucket.try_take(capacity, now);
        }
        if self.buckets.len() >= self.max_buckets {
            self.trim();
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

    /// Drops the least recently used quarter of the buckets. One caller trims at a time; the
    /// others go on (the map may briefly hold a few more than its maximum). Amortised over the
    /// quarter of inserts it makes room for, a trim costs O(1) per insert.
    fn trim(&self) {
        let Ok(_trimming) = self.trimming.try_lock() else {
            return;
        };
        let mut used: Vec<Instant> = self.buckets.iter().map(|entry| entry.updated).collect();
        if used.len() < self.max_buckets {
            return;
        }
        let quarter = used.len() / 4;
        let (_, &mut cutoff, _) = used.select_nth_unstable(quarter);
        let before = self.buckets.len();
        self.buckets.retain(|_, bucket| bucket.updated > cutoff);
        let dropped = before.saturating_sub(self.buckets.len());
        self.dropped.fetch_add(dropped as u64, Relaxed);
    }

    /// Buckets dropped so far to keep the map under its maximum.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
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
        let limiter = TokenBuckets::default();
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
    fn a_changed_budget_keeps_what_was_spent() {
        let start = Instant::now();
        let limiter = TokenBuckets::default();
        for _ in 0..50 {
            limiter.take(&"k", 60, start);
        }
        // Raised from 60 to 600 with 50 spent: 550 left, not 600.
        assert_eq!(limiter.peek(&"k", 600, start).remaining, 550);
        // Lowered to 40 with 50 spent: nothing left, not a fresh 40.
        let lowered = limiter.take(&"k", 40, start);
        assert_eq!((lowered.allowed, lowered.remaining), (false, 0));
    }

    #[test]
    fn the_map_never_holds_more_than_its_maximum_and_drops_the_oldest() {
        let start = Instant::now();
        let limiter = TokenBuckets::with_max_buckets(100);
        for i in 0..1000u32 {
            limiter.take(&i, 5, start + Duration::from_millis(u64::from(i)));
            assert!(limiter.len() <= 100, "{} buckets after {i}", limiter.len());
        }
        // The newest are kept, the oldest dropped.
        assert_eq!(limiter.peek(&999, 5, start + Duration::from_secs(1)).remaining, 4);
        assert_eq!(limiter.peek(&0, 5, start + Duration::from_secs(1)).remaining, 5);
        assert!(limiter.dropped() >= 900);
    }

    #[test]
    fn full_buckets_are_evicted_and_partial_ones_kept() {
        let start = Instant::now();
        let limiter = TokenBuckets::default();
        limiter.take(&"busy", 60, start);
        limiter.take(&"idle", 60, start);
        let later = start + Duration::from_millis(500);
        limiter.take(&"busy", 60, later);
        assert_eq!(limiter.evict_idle(start + Duration::from_millis(1500)), 1);
        assert_eq!(limiter.len(), 1);
    }
}
