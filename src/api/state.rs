//! What the server shares across requests: what is in force (the snapshot, the keys), the
//! budgets, the cursor key and the metrics. How a new snapshot or keys file is put in force is
//! theirs (`snapshot::in_force`, `keys::in_force`); when, the watcher's (`reload`).

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::api::cursor::CursorKey;
use crate::api::metrics::{Metrics, ScrapeInputs};
use crate::budgets::local::TokenBuckets;
use crate::budgets::shared::SharedBudgets;
use crate::budgets::streams::StreamBudget;
use crate::keys::in_force::KeysInForce;
use crate::response::body::{DecodeLimits, Decoders};
use crate::settings::{Access, Exports, Resolved};
use crate::snapshot::in_force::SnapshotInForce;
use crate::snapshot::object_store::SnapshotSource;
use crate::snapshot::{epoch_seconds, LoadedSnapshot};

/// Every request budget the server keeps: per key, per failing address, in the shared store,
/// for HTTP/2 streams, and for exports being decoded.
#[derive(Debug)]
pub struct Budgets {
    /// This process's per-key token buckets.
    pub local: TokenBuckets<Arc<str>>,
    /// Failed authentications per client address.
    pub auth_failures: TokenBuckets<IpAddr>,
    /// With `--budget-store`: the store every replica meters against (`local` and
    /// `auth_failures` are then the fallback while it is unavailable).
    pub shared: Option<SharedBudgets>,
    /// HTTP/2 stream tasks alive across the server, and how many may be.
    pub streams: Arc<StreamBudget>,
    /// Exports being decoded for clients that do not accept gzip.
    pub decoders: Decoders,
}

#[derive(Debug)]
pub struct State {
    /// The snapshot in force, and how a new one is put in force.
    pub snapshots: Arc<SnapshotInForce>,
    /// The keys in force, and how a new keys file is put in force.
    pub keys: KeysInForce,
    pub budgets: Budgets,
    /// With `--snapshot-from`: where published snapshots come from.
    pub snapshot_source: Option<Arc<SnapshotSource>>,
    pub cursor_key: CursorKey,
    pub metrics: Metrics,
    /// Who may ask, and what a failed attempt costs (`marks serve`'s Access section).
    pub access: Access,
    /// The problem URL base, the publisher key, and where the snapshot and keys files are.
    pub resolved: Resolved,
    request_counter: AtomicU64,
    request_id_seed: u64,
}

impl State {
    pub fn new(access: &Access, exports: &Exports, resolved: Resolved, cursor_key: CursorKey) -> State {
        State {
            snapshots: Arc::new(SnapshotInForce::new(
                resolved.publisher_key,
                resolved.allow_rollback,
                u64::from(exports.decoded_cache_mib) << 20,
            )),
            keys: KeysInForce::default(),
            budgets: Budgets {
                local: TokenBuckets::default(),
                auth_failures: TokenBuckets::with_max_buckets(access.max_throttled_addresses as usize),
                shared: None,
                streams: Arc::new(StreamBudget::new(usize::MAX)),
                decoders: Decoders::new(DecodeLimits::from(exports)),
            },
            snapshot_source: None,
            cursor_key,
            metrics: Metrics::default(),
            access: access.clone(),
            resolved,
            request_counter: AtomicU64::new(0),
            request_id_seed: rand::random(),
        }
    }

    /// Meters budgets against a shared store from now on.
    pub fn with_shared_budgets(mut self, store: SharedBudgets) -> State {
        self.budgets.shared = Some(store);
        self
    }

    /// Takes published snapshots from object storage from now on.
    pub fn with_snapshot_source(mut self, source: Arc<SnapshotSource>) -> State {
        self.snapshot_source = Some(source);
        self
    }

    /// The snapshot in force, if one is.
    pub fn snapshot(&self) -> Option<Arc<LoadedSnapshot>> {
        self.snapshots.current()
    }

    /// A fresh request id's 64 bits (written out as `req_` and 16 hex digits): a counter
    /// mixed with a per-process seed, unique within this process and not guessable across.
    pub fn next_request_id(&self) -> u64 {
        let n = self.request_counter.fetch_add(1, Relaxed);
        xxhash_rust::xxh3::xxh3_64_with_seed(&n.to_le_bytes(), self.request_id_seed)
    }

    pub fn metrics_text(&self) -> String {
        let loaded = self.snapshot();
        let header = loaded.as_ref().map(|l| l.snapshot.header());
        self.metrics.render(&ScrapeInputs {
            dataset_version: header.map(|h| h.dataset_version.as_str()),
            methodology_version: header.map(|h| h.methodology_version.as_str()),
            snapshot_bytes: loaded.as_ref().map_or(0, |l| l.snapshot.file_len()),
            snapshot_loaded_at: loaded.as_ref().map(|l| epoch_seconds(l.loaded_at)),
            last_refusal_at: self.snapshots.last_refusal().map(|r| epoch_seconds(r.at)),
            snapshot_loads: self.snapshots.loads.load(Relaxed),
            snapshot_refusals: self.snapshots.refusals.load(Relaxed),
            snapshot_rollbacks_refused: self.snapshots.rollbacks_refused.load(Relaxed),
            keys_loads: self.keys.loads.load(Relaxed),
            keys_refusals: self.keys.refusals.load(Relaxed),
            keys: self.keys.ring().len(),
            buckets: self.budgets.local.len() + self.budgets.auth_failures.len(),
            throttle_buckets_dropped: self.budgets.auth_failures.dropped(),
            budget_store: self.budgets.shared.as_ref(),
            snapshot_source: self.snapshot_source.as_deref(),
            h2_streams: Some(&self.budgets.streams),
            export_decoders: Some(&self.budgets.decoders),
            decoded_texts: loaded.as_ref().map(|l| &l.decoded_texts),
        })
    }
}
