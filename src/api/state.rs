//! What the server shares across requests: the snapshot in force, the keys in force, the
//! token buckets, the cursor key and the metrics.
//!
//! Snapshots and key rings are swapped whole behind `ArcSwap`: a request loads the current one
//! once and finishes on it, even if a newer one is published meanwhile; the old one is dropped
//! (and unmapped) when its last request is done. Loading and checking happen off the request
//! path, one reload at a time; a file that fails a check never replaces what is being served.

use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::{ArcSwap, ArcSwapOption};
use marks_format::{regular_file, OpenOptions, Snapshot, SnapshotError};

use crate::api::cursor::CursorKey;
use crate::api::metrics::{Metrics, ScrapeInputs};
use crate::budgets::local::TokenBuckets;
use crate::budgets::shared::SharedBudgets;
use crate::budgets::streams::StreamBudget;
use crate::keys::file::KeysError;
use crate::keys::ring::KeyRing;
use crate::response::body::{DecodeLimits, Decoders};
use crate::settings::{Access, Exports, Resolved};
use crate::snapshot::identity::FileIdentity;
use crate::snapshot::object_store::SnapshotSource;
use crate::snapshot::{epoch_seconds, with_causes, LoadError, LoadedSnapshot, Publisher, Refusal};

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
    snapshot: ArcSwapOption<LoadedSnapshot>,
    keys: ArcSwap<KeyRing>,
    /// The generation of the ring in force, stored after the ring is: a connection's
    /// remembered key is checked against it without loading the ring.
    keys_generation: AtomicU64,
    pub budgets: Budgets,
    /// With `--snapshot-from`: where published snapshots come from.
    pub snapshot_source: Option<Arc<SnapshotSource>>,
    pub cursor_key: CursorKey,
    pub metrics: Metrics,
    /// Who may ask, and what a failed attempt costs (`marks serve`'s Access section).
    pub access: Access,
    /// The problem URL base, the publisher key, and where the snapshot and keys files are.
    pub resolved: Resolved,
    snapshot_refusal: Mutex<Option<Refusal>>,
    keys_refusal: Mutex<Option<Refusal>>,
    keys_identity: Mutex<Option<FileIdentity>>,
    /// Held while a snapshot or keys file is read and put in force: SIGHUP and the watcher
    /// never load at once, so an older file cannot be published after a newer one.
    pub reloading: tokio::sync::Mutex<()>,
    request_counter: AtomicU64,
    request_id_seed: u64,
}

impl State {
    pub fn new(access: &Access, exports: &Exports, resolved: Resolved, cursor_key: CursorKey) -> State {
        State {
            snapshot: ArcSwapOption::empty(),
            keys: ArcSwap::from_pointee(KeyRing::default()),
            keys_generation: AtomicU64::new(0),
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
            snapshot_refusal: Mutex::new(None),
            keys_refusal: Mutex::new(None),
            keys_identity: Mutex::new(None),
            reloading: tokio::sync::Mutex::new(()),
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

    pub fn snapshot(&self) -> Option<Arc<LoadedSnapshot>> {
        self.snapshot.load_full()
    }

    pub fn keys(&self) -> arc_swap::Guard<Arc<KeyRing>> {
        self.keys.load()
    }

    /// The generation of the keys in force ([`KeyRing::generation`]).
    pub fn keys_generation(&self) -> u64 {
        self.keys_generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Copies, maps and checks a snapshot file, then publishes it. Blocking: call it off the
    /// request path, under `reloading`. On failure the snapshot in force stays; a refusal is
    /// recorded.
    pub fn load_snapshot(&self, path: &Path) -> Result<Arc<LoadedSnapshot>, LoadError> {
        let file = match regular_file::open(path) {
            Ok(file) => file,
            // Something that is not a regular file is refused like a file that fails a check.
            Err(source) if source.kind() == std::io::ErrorKind::InvalidInput => {
                return Err(self.refuse_snapshot(
                    path,
                    SnapshotError::Io {
                        path: path.to_owned(),
                        source,
                    },
                ))
            }
            Err(error) => {
                return Err(LoadError::Open {
                    path: path.to_owned(),
                    error,
                })
            }
        };
        let options = OpenOptions {
            publisher_key: self.resolved.publisher_key,
        };
        let before = FileIdentity::of_file(&file);
        let opened = Snapshot::from_file(&file, path, &options);
        if FileIdentity::of_file(&file) != before {
            return Err(LoadError::Changing { path: path.to_owned() });
        }
        match opened {
            Ok(snapshot) => {
                let meta = snapshot.body(&snapshot.index().meta_json);
                let etag_seed = snapshot.header().checksum as u64;
                let loaded = Arc::new(LoadedSnapshot {
                    snapshot,
                    path: path.to_owned(),
                    identity: before,
                    loaded_at: SystemTime::now(),
                    meta,
                    etag_seed,
                });
                // Counted before it is in force: whoever sees the new snapshot served finds
                // its load counted already.
                self.metrics.snapshot_loads.fetch_add(1, Relaxed);
                self.snapshot.store(Some(loaded.clone()));
                Ok(loaded)
            }
            Err(err) => Err(self.refuse_snapshot(path, err)),
        }
    }

    /// Records why a snapshot file was refused, for `/readyz`, and counts it.
    fn refuse_snapshot(&self, path: &Path, err: SnapshotError) -> LoadError {
        if let Ok(mut refusal) = self.snapshot_refusal.lock() {
            *refusal = Some(Refusal {
                at: SystemTime::now(),
                path: path.to_owned(),
                reason: with_causes(&err),
            });
        }
        // Counted after the reason is recorded: a count seen going up has its reason in
        // `/readyz` already.
        self.metrics.snapshot_refusals.fetch_add(1, Relaxed);
        LoadError::Refused(err)
    }

    pub fn last_snapshot_refusal(&self) -> Option<Refusal> {
        self.snapshot_refusal.lock().ok().and_then(|r| r.clone())
    }

    /// Loads the keys file and puts it in force; a malformed file leaves the old keys.
    /// Blocking, and long for a large file: call it off the request path. The ring it replaces
    /// is dropped here too, not on a request thread.
    pub fn load_keys(&self, path: &Path) -> Result<usize, KeysError> {
        let identity = FileIdentity::of(path);
        match KeyRing::load(path) {
            Ok(ring) => {
                let count = ring.len();
                let generation = ring.generation();
                // Counted before the keys are in force, as snapshot loads are.
                self.metrics.keys_reloads.fetch_add(1, Relaxed);
                let replaced = self.keys.swap(Arc::new(ring));
                self.keys_generation
                    .store(generation, std::sync::atomic::Ordering::Release);
                drop(replaced);
                if let Ok(mut known) = self.keys_identity.lock() {
                    *known = identity;
                }
                Ok(count)
            }
            Err(err) => {
                if let Ok(mut refusal) = self.keys_refusal.lock() {
                    *refusal = Some(Refusal {
                        at: SystemTime::now(),
                        path: path.to_owned(),
                        reason: with_causes(&err),
                    });
                }
                // Counted after the reason is recorded: a count seen going up has its reason
                // in `/readyz` already.
                self.metrics.keys_refusals.fetch_add(1, Relaxed);
                if let Ok(mut known) = self.keys_identity.lock() {
                    // Do not retry the same bad file every poll; retry when it changes.
                    *known = identity;
                }
                Err(err)
            }
        }
    }

    /// Whether the keys file on disk differs from the one last read.
    pub fn keys_changed(&self) -> bool {
        let now = FileIdentity::of(&self.resolved.keys_path);
        self.keys_identity.lock().is_ok_and(|known| *known != now)
    }

    pub fn last_keys_refusal(&self) -> Option<Refusal> {
        self.keys_refusal.lock().ok().and_then(|r| r.clone())
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
            last_refusal_at: self.last_snapshot_refusal().map(|r| epoch_seconds(r.at)),
            keys: self.keys().len(),
            buckets: self.budgets.local.len() + self.budgets.auth_failures.len(),
            throttle_buckets_dropped: self.budgets.auth_failures.dropped(),
            budget_store: self.budgets.shared.as_ref(),
            snapshot_source: self.snapshot_source.as_deref(),
            h2_streams: Some(&self.budgets.streams),
            export_decoders: Some(&self.budgets.decoders),
        })
    }
}

impl Publisher for State {
    fn serves_a_snapshot(&self) -> bool {
        self.snapshot().is_some()
    }

    fn reload_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.reloading
    }

    fn load(&self, path: &Path) -> Result<Arc<LoadedSnapshot>, LoadError> {
        self.load_snapshot(path)
    }
}
