//! Budgets shared by every replica: token buckets kept in Redis (or Valkey) when `marks serve
//! --budgets redis://...` is given.
//!
//! One metered request makes at most one round trip: an atomic Lua script (`EVALSHA`, loaded on
//! first use) refills and spends the bucket by the store's own clock, so every replica counts
//! the same tokens and reports the same headers. The buckets follow the same rule as the local
//! ones (`ratelimit`): the whole minute may be spent at once, refilled at budget/60 per second,
//! and a changed budget keeps what was spent. A bucket expires when it would be full again, so
//! the store holds only keys in use.
//!
//! A bucket the store has refused cannot refill before its `Retry-After`, so until then this
//! replica refuses it from a local note without asking again: a client hammering past its
//! budget costs the store nothing.
//!
//! When the store errors or answers slower than `--budgets-timeout-ms`, the request is metered
//! by this process's own buckets (what serves without `--budgets`: never unlimited), and a
//! circuit breaker stops asking for a while (250 ms, doubling up to 5 s). When that has passed,
//! the next request asks again; an answer puts the replica back on shared budgets. Each change
//! of mode logs one line; `/readyz` shows the mode and `/metrics` counts the round trips,
//! errors and fallbacks.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use dashmap::DashMap;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;

use crate::budgets::local::Decision;

/// Refills and spends one token of the bucket `KEYS[1]`, whose budget is `ARGV[1]` per minute.
/// Returns `{allowed, remaining, reset_ms, retry_ms}`: the same facts as a local `Decision`, in
/// milliseconds, by the store's clock.
const TOKEN_BUCKET: &str = r"
local capacity = tonumber(ARGV[1])
if capacity <= 0 then return {0, 0, 0, 60000} end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local held = redis.call('HMGET', KEYS[1], 'tokens', 'capacity', 'updated')
local tokens, budget, updated = tonumber(held[1]), tonumber(held[2]), tonumber(held[3])
if tokens == nil or budget == nil or updated == nil then
  tokens, budget, updated = capacity, capacity, now
end
if budget ~= capacity then
  tokens = math.max(capacity - (budget - tokens), 0)
end
local per_ms = capacity / 60000
if now > updated then
  tokens = math.min(capacity, tokens + (now - updated) * per_ms)
  updated = now
end
local allowed, retry_ms = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  retry_ms = math.ceil((1 - tokens) / per_ms)
end
local reset_ms = math.ceil((capacity - tokens) / per_ms)
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'capacity', capacity, 'updated', updated)
redis.call('PEXPIRE', KEYS[1], math.max(reset_ms, 1))
return {allowed, math.floor(tokens), reset_ms, retry_ms}
";

/// Whose budget a request spends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// An API key's, by its id.
    Key(Arc<str>),
    /// A client address group's failed-authentication budget.
    Address(IpAddr),
}

impl Bucket {
    fn store_key(&self) -> String {
        match self {
            Bucket::Key(id) => format!("marks:budget:key:{id}"),
            Bucket::Address(address) => format!("marks:budget:auth:{address}"),
        }
    }
}

/// A bucket the store refused, noted until it can hold a token again.
#[derive(Clone, Copy, Debug)]
struct Denial {
    until: Instant,
    reset_at: Instant,
    limit: u32,
}

/// The circuit breaker's state.
#[derive(Clone, Copy, Debug)]
enum Circuit {
    /// The store answers: every metered request asks it.
    Closed,
    /// The store failed: requests are metered locally until `until`, then one asks again.
    Open { until: Instant, backoff: Duration },
}

const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Most refused buckets noted at once; past it, new refusals are not noted (they ask the store).
const MAX_DENIALS: usize = 100_000;

/// What `/metrics` reports of the store.
#[derive(Debug, Default)]
pub struct StoreCounters {
    /// Scripts sent to the store.
    pub calls: AtomicU64,
    /// Calls that failed or timed out.
    pub errors: AtomicU64,
    /// Requests metered by this process's buckets because the store was unavailable.
    pub fallbacks: AtomicU64,
    /// Requests refused from a noted denial, without a round trip.
    pub noted_denials: AtomicU64,
}

/// The shared budget store and this replica's view of it.
pub struct SharedBudgets {
    connection: ConnectionManager,
    script: Script,
    timeout: Duration,
    /// The store's address without credentials, for `/readyz` and the logs.
    pub address: String,
    circuit: Mutex<Circuit>,
    shared: AtomicBool,
    denials: DashMap<Bucket, Denial, foldhash::fast::RandomState>,
    pub counters: StoreCounters,
}

impl std::fmt::Debug for SharedBudgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBudgets")
            .field("address", &self.address)
            .field("timeout", &self.timeout)
            .field("shared", &self.is_shared())
            .finish_non_exhaustive()
    }
}

impl SharedBudgets {
    /// Prepares the store at `url` (`redis://[user:password@]host:port[/db]`, or `rediss://`).
    /// Connects on first use: a replica starts even when the store is down, metering locally
    /// until it answers. Needs a Tokio runtime.
    pub fn connect(url: &str, timeout: Duration) -> anyhow::Result<SharedBudgets> {
        let client =
            redis::Client::open(url).with_context(|| format!("--budget-store {:?} is not a Redis URL", redact(url)))?;
        // The breaker, not the manager, decides when to ask again; the manager only reconnects.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(Duration::from_secs(1)))
            .set_number_of_retries(1);
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .with_context(|| format!("cannot prepare the budget store {}", redact(url)))?;
        Ok(SharedBudgets {
            connection,
            script: Script::new(TOKEN_BUCKET),
            timeout,
            address: redact(url),
            circuit: Mutex::new(Circuit::Closed),
            shared: AtomicBool::new(true),
            denials: DashMap::with_hasher(foldhash::fast::RandomState::default()),
            counters: StoreCounters::default(),
        })
    }

    /// Whether budgets are being decided by the store (false: by local buckets, until it
    /// answers again).
    pub fn is_shared(&self) -> bool {
        self.shared.load(Relaxed)
    }

    /// The store's decision for a bucket refused recently, answered without a round trip.
    pub fn noted_denial(&self, bucket: &Bucket, now: Instant) -> Option<Decision> {
        let denial = *self.denials.get(bucket)?;
        if now >= denial.until {
            return None;
        }
        self.counters.noted_denials.fetch_add(1, Relaxed);
        Some(Decision {
            allowed: false,
            limit: denial.limit,
            remaining: 0,
            reset_after: seconds_ceil(denial.reset_at.saturating_duration_since(now)),
            retry_after: seconds_ceil(denial.until - now).max(1),
        })
    }

    /// Spends one token of `bucket` in the store. `None` when the store is unavailable (or the
    /// breaker is open): the caller meters the request locally.
    pub async fn spend(&self, bucket: &Bucket, limit: u32) -> Option<Decision> {
        let asked = Instant::now();
        if !self.may_ask(asked) {
            self.counters.fallbacks.fetch_add(1, Relaxed);
            return None;
        }
        self.counters.calls.fetch_add(1, Relaxed);
        let mut connection = self.connection.clone();
        let mut invocation = self.script.key(bucket.store_key());
        invocation.arg(limit);
        let reply = tokio::time::timeout(
            self.timeout,
            invocation.invoke_async::<(u8, u32, u64, u64)>(&mut connection),
        )
        .await;
        match reply {
            Ok(Ok((allowed, remaining, reset_ms, retry_ms))) => {
                self.answered();
                let decision = Decision {
                    allowed: allowed == 1,
                    limit,
                    remaining,
                    reset_after: reset_ms.div_ceil(1000),
                    retry_after: if allowed == 1 {
                        0
                    } else {
                        retry_ms.div_ceil(1000).max(1)
                    },
                };
                if !decision.allowed {
                    self.note_denial(bucket, asked, limit, reset_ms, retry_ms);
                }
                Some(decision)
            }
            Ok(Err(error)) => {
                self.failed(asked, &error.to_string());
                None
            }
            Err(_) => {
                self.failed(asked, &format!("no answer within {} ms", self.timeout.as_millis()));
                None
            }
        }
    }

    /// Whether a request may ask the store now. With the breaker open, the first request after
    /// the backoff asks (and re-arms the backoff, so a probe that never returns does not stop
    /// the next one); the others meter locally.
    fn may_ask(&self, now: Instant) -> bool {
        let Ok(mut circuit) = self.circuit.lock() else {
            return true;
        };
        match *circuit {
            Circuit::Closed => true,
            Circuit::Open { until, backoff } if now >= until => {
                *circuit = Circuit::Open {
                    until: now + backoff,
                    backoff,
                };
                true
            }
            Circuit::Open { .. } => false,
        }
    }

    fn answered(&self) {
        if self.is_shared() {
            return;
        }
        if let Ok(mut circuit) = self.circuit.lock() {
            if matches!(*circuit, Circuit::Open { .. }) {
                *circuit = Circuit::Closed;
                self.shared.store(true, Relaxed);
                tracing::info!(store = %self.address, "budget store answers again: budgets are shared");
            }
        }
    }

    fn failed(&self, now: Instant, reason: &str) {
        self.counters.errors.fetch_add(1, Relaxed);
        self.counters.fallbacks.fetch_add(1, Relaxed);
        let Ok(mut circuit) = self.circuit.lock() else {
            return;
        };
        let backoff = match *circuit {
            Circuit::Closed => {
                self.shared.store(false, Relaxed);
                tracing::warn!(
                    store = %self.address,
                    reason,
                    "budget store unavailable: metering with this replica's own buckets until it answers"
                );
                FIRST_BACKOFF
            }
            Circuit::Open { backoff, .. } => (backoff * 2).min(MAX_BACKOFF),
        };
        *circuit = Circuit::Open {
            until: now + backoff,
            backoff,
        };
    }

    fn note_denial(&self, bucket: &Bucket, asked: Instant, limit: u32, reset_ms: u64, retry_ms: u64) {
        if self.denials.len() >= MAX_DENIALS {
            self.forget_expired_denials(asked);
            if self.denials.len() >= MAX_DENIALS {
                return;
            }
        }
        // Timed from when the request was sent: the store's clock had moved on by the answer,
        // so the note ends no later than the bucket can refill.
        let denial = Denial {
            until: asked + Duration::from_millis(retry_ms),
            reset_at: asked + Duration::from_millis(reset_ms),
            limit,
        };
        self.denials.insert(bucket.clone(), denial);
    }

    /// Drops the notes of buckets that can hold a token again.
    pub fn forget_expired_denials(&self, now: Instant) {
        self.denials.retain(|_, denial| denial.until > now);
    }
}

fn seconds_ceil(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis().div_ceil(1000)).unwrap_or(u64::MAX)
}

/// The URL without its password, for logs and `/readyz`.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://{}", &url[..scheme_end], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_reach_the_shown_address() {
        assert_eq!(redact("redis://user:secret@cache:6379/2"), "redis://cache:6379/2");
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }
}
