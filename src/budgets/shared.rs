//! Budgets shared by every replica: token buckets kept in Redis (or Valkey), one server or a
//! Redis Cluster, when `marks serve --budget-store redis://...` (or `redis-cluster://...`) is
//! given.
//!
//! An atomic Lua script refills and spends a bucket by the store's own clock, so every replica
//! counts the same tokens. The buckets follow the same rule as the local ones (`ratelimit`): the
//! whole minute may be spent at once, refilled at budget/60 per second, and a changed budget
//! keeps what was spent. A bucket expires when it would be full again, so the store holds only
//! keys in use. On a cluster each bucket is one key (`marks:budget:key:<id>`), so buckets spread
//! over the slots by key id and every script touches one slot.
//!
//! **Leased tokens.** A round trip per request costs more than the rest of a request (and on a
//! cluster more again), so a replica takes a key's tokens a few at a time: a lease of up to
//! `limit x --budget-lease-window / 60 s` tokens (100 ms of the key's budget; at least one), one
//! spent by the request that asked and the rest held here for 1 s, spent without a round trip.
//! A key under 600 a minute leases one token: one round trip per admitted request, exactly as
//! without leases. Tokens are debited in the store when granted, so the fleet never admits more
//! than the store grants: what a lease changes is *when* a token is spent (up to 1 s after it
//! was granted) and *where* (a token held by one replica is not another's). Over any window of
//! T seconds a key is admitted at most `budget + rate x T + 1 + R x (L - 1)` across R replicas
//! leasing L tokens (the last term: tokens granted before the window, spent in it); unspent
//! tokens go back to the store with the replica's next ask for that key. `X-RateLimit-Remaining`
//! is then the store's count plus this replica's held tokens: exact with one replica, within
//! `R x L` across a fleet.
//!
//! A bucket the store has refused cannot refill before its `Retry-After`, so until then this
//! replica refuses it from a local note without asking again: a client hammering past its
//! budget costs the store nothing.
//!
//! When the store errors or answers slower than `--budget-store-timeout`, the request is metered
//! by this process's own buckets (what serves without a store: never unlimited), and a circuit
//! breaker stops asking for a while (250 ms, doubling up to 5 s). When that has passed, the next
//! request asks again; an answer puts the replica back on shared budgets. A cluster connection
//! whose calls time out is rebuilt in the background (at most once a second): a master that
//! stops answering without closing its sockets leaves the client's slot map pointing at it after
//! its replica has taken over, and only a new connection reads the new map. Each change of mode
//! logs one line; `/readyz` shows the mode and `/metrics` counts the round trips, leased
//! admissions, errors and fallbacks.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use arc_swap::ArcSwap;
use dashmap::DashMap;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{ErrorKind, RedisResult, Script, ServerErrorKind};

use crate::budgets::local::Decision;

/// Refills the bucket `KEYS[1]`, whose budget is `ARGV[1]` per minute, takes back `ARGV[3]`
/// unspent tokens of an earlier lease, and grants up to `ARGV[2]` (at least one asked) of what
/// it holds. Returns `{granted, remaining, reset_ms, retry_ms}`: the tokens granted, what the
/// bucket holds after, and when it is full again and holds a token again, in milliseconds by
/// the store's clock. A changed budget keeps what was spent (and the returned tokens, which
/// were the old budget's, are dropped).
const LEASE: &str = r"
local capacity = tonumber(ARGV[1])
local want = math.max(tonumber(ARGV[2]), 1)
local returned = tonumber(ARGV[3]) or 0
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
  returned = 0
end
local per_ms = capacity / 60000
if now > updated then
  tokens = math.min(capacity, tokens + (now - updated) * per_ms)
  updated = now
end
tokens = math.min(capacity, tokens + returned)
local granted = math.min(want, math.floor(tokens))
tokens = tokens - granted
local retry_ms = 0
if tokens < 1 then retry_ms = math.ceil((1 - tokens) / per_ms) end
local reset_ms = math.ceil((capacity - tokens) / per_ms)
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'capacity', capacity, 'updated', updated)
redis.call('PEXPIRE', KEYS[1], math.max(reset_ms, 1))
return {granted, math.floor(tokens), reset_ms, retry_ms}
";

/// How long leased tokens are held before they go back.
const LEASE_HELD: Duration = Duration::from_secs(1);

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

/// Tokens this replica holds of a key's bucket, granted by the store and not yet spent.
#[derive(Clone, Copy, Debug)]
struct Lease {
    held: u32,
    limit: u32,
    /// Held until then; after, they go back with the next ask.
    until: Instant,
    /// What the store held after the grant, and when the bucket is full again.
    store_remaining: u32,
    reset_at: Instant,
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
    /// Requests admitted with a leased token, without a round trip.
    pub leased: AtomicU64,
    /// Cluster connections rebuilt after calls timed out.
    pub rebuilds: AtomicU64,
}

/// The store, one server or a cluster.
enum Store {
    Single(ConnectionManager),
    Cluster(Arc<Cluster>),
}

/// A Redis Cluster and the connection to it in use (replaced when rebuilt).
struct Cluster {
    client: ClusterClient,
    connection: ArcSwap<ClusterConnection>,
    rebuilding: AtomicBool,
    last_rebuild: Mutex<Option<Instant>>,
}

/// A connection's calls are held to this (and to `--budget-store-timeout` by the caller); the
/// client's own retries (a MOVED or ASK redirection each) to two, quickly.
const STORE_IO_TIMEOUT: Duration = Duration::from_secs(1);

impl Cluster {
    fn config() -> ClusterConfig {
        // `with_config` replaces the builder's timeouts with these: both set again here.
        ClusterConfig::new()
            .set_connection_timeout(STORE_IO_TIMEOUT)
            .set_response_timeout(STORE_IO_TIMEOUT)
    }

    /// Connects in the background (a new connection reads the cluster's slot map afresh),
    /// and swaps it in; at most one at a time, at most once a second.
    fn rebuild(self: &Arc<Self>, counters: Arc<StoreCounters>) {
        let now = Instant::now();
        if let Ok(mut last) = self.last_rebuild.lock() {
            if last.is_some_and(|at| now.duration_since(at) < Duration::from_secs(1)) {
                return;
            }
            *last = Some(now);
        }
        if self.rebuilding.swap(true, Relaxed) {
            return;
        }
        let cluster = self.clone();
        tokio::spawn(async move {
            match cluster.client.get_async_connection_with_config(Cluster::config()).await {
                Ok(connection) => {
                    cluster.connection.store(Arc::new(connection));
                    counters.rebuilds.fetch_add(1, Relaxed);
                    tracing::info!("budget store: cluster connection rebuilt");
                }
                Err(error) => tracing::warn!(%error, "budget store: cluster connection not rebuilt"),
            }
            cluster.rebuilding.store(false, Relaxed);
        });
    }
}

/// The shared budget store and this replica's view of it.
pub struct SharedBudgets {
    store: Store,
    script: Script,
    timeout: Duration,
    /// `--budget-lease-window`: how much of a key's budget one ask may lease.
    lease_window: Duration,
    /// The store's address without credentials, for `/readyz` and the logs.
    pub address: String,
    circuit: Mutex<Circuit>,
    shared: AtomicBool,
    denials: DashMap<Bucket, Denial, foldhash::fast::RandomState>,
    leases: DashMap<Bucket, Lease, foldhash::fast::RandomState>,
    pub counters: Arc<StoreCounters>,
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
    /// Prepares the store at `url`: `redis://[user:password@]host:port[/db]` (or `rediss://`)
    /// for one server, `redis-cluster://[user:password@]host:port,host:port,...` for a Redis
    /// Cluster (any of its nodes; the client finds the rest). Connects on first use: a replica
    /// starts even when the store is down, metering locally until it answers. Needs a Tokio
    /// runtime.
    pub fn connect(url: &str, timeout: Duration, lease_window: Duration) -> anyhow::Result<SharedBudgets> {
        let store = match url.strip_prefix("redis-cluster://") {
            Some(nodes) => {
                let (credentials, hosts) = match nodes.rsplit_once('@') {
                    Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
                    None => (String::new(), nodes),
                };
                let seeds: Vec<String> = hosts
                    .split(',')
                    .filter(|h| !h.is_empty())
                    .map(|host| format!("redis://{credentials}{host}"))
                    .collect();
                anyhow::ensure!(
                    !seeds.is_empty() && !hosts.contains('/'),
                    "--budget-store {:?}: a cluster is redis-cluster://HOST:PORT[,HOST:PORT...] (no database: a cluster has only 0)",
                    redact(url)
                );
                let client = ClusterClientBuilder::new(seeds)
                    .retries(2)
                    .min_retry_wait(10)
                    .max_retry_wait(100)
                    .connection_timeout(STORE_IO_TIMEOUT)
                    .response_timeout(STORE_IO_TIMEOUT)
                    .build()
                    .with_context(|| format!("--budget-store {:?} is not a Redis Cluster URL", redact(url)))?;
                let connection = client.get_pending_async_connection_with_config(Cluster::config());
                let cluster = Arc::new(Cluster {
                    client,
                    connection: ArcSwap::from_pointee(connection),
                    rebuilding: AtomicBool::new(false),
                    last_rebuild: Mutex::new(None),
                });
                Store::Cluster(cluster)
            }
            None => {
                let client = redis::Client::open(url)
                    .with_context(|| format!("--budget-store {:?} is not a Redis URL", redact(url)))?;
                // The breaker, not the manager, decides when to ask again; the manager only reconnects.
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(STORE_IO_TIMEOUT))
                    .set_response_timeout(Some(STORE_IO_TIMEOUT))
                    .set_number_of_retries(1);
                let connection = ConnectionManager::new_lazy_with_config(client, config)
                    .with_context(|| format!("cannot prepare the budget store {}", redact(url)))?;
                Store::Single(connection)
            }
        };
        Ok(SharedBudgets {
            store,
            script: Script::new(LEASE),
            timeout,
            lease_window,
            address: redact(url),
            circuit: Mutex::new(Circuit::Closed),
            shared: AtomicBool::new(true),
            denials: DashMap::with_hasher(foldhash::fast::RandomState::default()),
            leases: DashMap::with_hasher(foldhash::fast::RandomState::default()),
            counters: Arc::new(StoreCounters::default()),
        })
    }

    /// How many tokens one ask may lease for a key of `limit` a minute: the key's budget over
    /// the lease window, at least one.
    pub fn lease_size(&self, limit: u32) -> u32 {
        let tokens = u128::from(limit) * self.lease_window.as_millis() / 60_000;
        u32::try_from(tokens).unwrap_or(u32::MAX).max(1)
    }

    /// A token of `bucket` this replica holds from an earlier lease, spent now without a round
    /// trip: the request's decision, or `None` when none is held.
    pub fn take_leased(&self, bucket: &Bucket, limit: u32, now: Instant) -> Option<Decision> {
        let mut lease = self.leases.get_mut(bucket)?;
        if lease.held == 0 || lease.limit != limit || now >= lease.until {
            return None;
        }
        lease.held -= 1;
        self.counters.leased.fetch_add(1, Relaxed);
        Some(Decision {
            allowed: true,
            limit,
            remaining: lease.store_remaining.saturating_add(lease.held),
            reset_after: seconds_ceil(lease.reset_at.saturating_duration_since(now)),
            retry_after: 0,
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

    /// Spends one token of `bucket` in the store, leasing more for later requests when the
    /// key's budget is large (`lease_size`). `None` when the store is unavailable (or the
    /// breaker is open): the caller meters the request locally.
    pub async fn spend(&self, bucket: &Bucket, limit: u32) -> Option<Decision> {
        let asked = Instant::now();
        if !self.may_ask(asked) {
            self.counters.fallbacks.fetch_add(1, Relaxed);
            return None;
        }
        self.counters.calls.fetch_add(1, Relaxed);
        // Tokens of an ended lease under the same budget go back with this ask.
        let returned = match self.leases.get(bucket) {
            Some(lease) if lease.limit == limit && asked >= lease.until => lease.held,
            _ => 0,
        };
        let want = self.lease_size(limit);
        let reply = tokio::time::timeout(self.timeout, self.invoke(bucket, limit, want, returned)).await;
        match reply {
            Ok(Ok((granted, remaining, reset_ms, retry_ms))) => {
                self.answered();
                // The store grants at most what was asked; a reply saying more is not believed.
                let granted = granted.min(want);
                let reset_at = asked + Duration::from_millis(reset_ms);
                let held = self.hold(bucket, limit, granted, returned, remaining, reset_at, asked);
                let allowed = granted >= 1;
                if !allowed {
                    self.note_denial(bucket, asked, limit, reset_ms, retry_ms);
                }
                Some(Decision {
                    allowed,
                    limit,
                    remaining: remaining.saturating_add(held),
                    reset_after: reset_ms.div_ceil(1000),
                    retry_after: if allowed { 0 } else { retry_ms.div_ceil(1000).max(1) },
                })
            }
            Ok(Err(error)) => {
                self.failed(asked, &error.to_string(), false);
                None
            }
            Err(_) => {
                self.failed(
                    asked,
                    &format!("no answer within {} ms", self.timeout.as_millis()),
                    true,
                );
                None
            }
        }
    }

    /// Keeps the tokens granted beyond the one this request spends (after taking back the
    /// `returned` ones the store now has again); returns how many this replica now holds.
    #[allow(clippy::too_many_arguments)]
    fn hold(
        &self,
        bucket: &Bucket,
        limit: u32,
        granted: u32,
        returned: u32,
        store_remaining: u32,
        reset_at: Instant,
        asked: Instant,
    ) -> u32 {
        let extra = granted.saturating_sub(1);
        let mut entry = self.leases.entry(bucket.clone()).or_insert(Lease {
            held: 0,
            limit,
            until: asked,
            store_remaining,
            reset_at,
        });
        let lease = entry.value_mut();
        if lease.limit != limit {
            lease.held = 0;
            lease.limit = limit;
        }
        // What went back is no longer held here; other requests may have spent some meanwhile.
        lease.held = lease.held.saturating_sub(returned).saturating_add(extra);
        lease.until = asked + LEASE_HELD;
        lease.store_remaining = store_remaining;
        lease.reset_at = reset_at;
        lease.held
    }

    /// One call of the lease script: `EVALSHA`, and the script itself when the node answering
    /// has not seen it (a new node, a replica just promoted: scripts are not replicated).
    async fn invoke(&self, bucket: &Bucket, limit: u32, want: u32, returned: u32) -> RedisResult<(u32, u32, u64, u64)> {
        let key = bucket.store_key();
        let call = |command: &str, script: &str| {
            let mut cmd = redis::cmd(command);
            cmd.arg(script).arg(1).arg(&key).arg(limit).arg(want).arg(returned);
            cmd
        };
        let hash = call("EVALSHA", self.script.get_hash());
        let body = call("EVAL", LEASE);
        let no_script = |error: &redis::RedisError| error.kind() == ErrorKind::Server(ServerErrorKind::NoScript);
        match &self.store {
            Store::Single(connection) => {
                let mut connection = connection.clone();
                match hash.query_async(&mut connection).await {
                    Err(error) if no_script(&error) => body.query_async(&mut connection).await,
                    answer => answer,
                }
            }
            Store::Cluster(cluster) => {
                let mut connection = (*cluster.connection.load_full()).clone();
                match hash.query_async(&mut connection).await {
                    Err(error) if no_script(&error) => body.query_async(&mut connection).await,
                    answer => answer,
                }
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

    /// A call that failed (`timed_out`: no answer in time, which for a cluster may mean a
    /// master that stopped answering: its connection is rebuilt).
    fn failed(&self, now: Instant, reason: &str, timed_out: bool) {
        self.counters.errors.fetch_add(1, Relaxed);
        self.counters.fallbacks.fetch_add(1, Relaxed);
        if let Store::Cluster(cluster) = &self.store {
            if timed_out || reason.contains("timed out") {
                cluster.rebuild(self.counters.clone());
            }
        }
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

impl crate::metric::Report for SharedBudgets {
    fn metrics(&self) -> Vec<crate::metric::Metric> {
        use crate::metric::Metric;
        let load = |counter: &AtomicU64| counter.load(Relaxed);
        let c = &self.counters;
        vec![
            Metric::counter(
                "marks_budget_store_calls_total",
                "Round trips to the shared budget store (each leases one token or more).",
                load(&c.calls),
            ),
            Metric::counter(
                "marks_budget_store_errors_total",
                "Round trips to the shared budget store that failed or timed out.",
                load(&c.errors),
            ),
            Metric::counter(
                "marks_budget_fallbacks_total",
                "Requests metered by this replica's own buckets because the shared store was unavailable.",
                load(&c.fallbacks),
            ),
            Metric::counter(
                "marks_budget_noted_denials_total",
                "Requests refused from a recent refusal by the shared store, without a round trip.",
                load(&c.noted_denials),
            ),
            Metric::counter(
                "marks_budget_leased_total",
                "Requests admitted with a token this replica leased earlier, without a round trip.",
                load(&c.leased),
            ),
            Metric::counter(
                "marks_budget_store_rebuilds_total",
                "Cluster connections rebuilt after calls to the store timed out.",
                load(&c.rebuilds),
            ),
            Metric::gauge(
                "marks_budget_shared",
                "1 while budgets are decided by the shared store, 0 while this replica meters locally.",
                u64::from(self.is_shared()),
            ),
        ]
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
