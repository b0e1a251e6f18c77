//! What the server shares across requests: the snapshot in force, the keys in force, the
//! token buckets, the cursor key and the metrics.
//!
//! Snapshots and key rings are swapped whole behind `ArcSwap`: a request loads the current one
//! once and finishes on it, even if a newer one is published meanwhile; the old one is dropped
//! (and unmapped) when its last request is done. Loading and checking happen off the request
//! path; a file that fails a check never replaces what is being served.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::{ArcSwap, ArcSwapOption};
use bytes::Bytes;
use ed25519_dalek::VerifyingKey;
use marks_builder::{OpenOptions, Snapshot, SnapshotError};

use crate::cursor::CursorKey;
use crate::keys::{KeyRing, KeysError};
use crate::metrics::{Gauges, Metrics};
use crate::ratelimit::RateLimiter;

/// Identifies a file's content without reading it, to notice a replaced file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileIdentity {
    /// Follows symlinks, so re-pointing a link is a change.
    pub fn of(path: &Path) -> Option<FileIdentity> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        Some(FileIdentity {
            device,
            inode,
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// A snapshot in force, with what the hot path needs precomputed.
#[derive(Debug)]
pub struct LoadedSnapshot {
    pub snapshot: Snapshot,
    pub path: PathBuf,
    pub identity: Option<FileIdentity>,
    pub loaded_at: SystemTime,
    /// The `meta` object, spliced into list pages.
    pub meta: Bytes,
    /// Seeds list-page ETags: a page's bytes are a function of the snapshot and the query.
    pub etag_seed: u64,
}

/// Why a file was last refused, for `/readyz` and the logs.
#[derive(Clone, Debug)]
pub struct Refusal {
    pub at: SystemTime,
    pub path: PathBuf,
    pub reason: String,
}

pub fn epoch_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Settings fixed at start.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Prefix of problem `type` URIs.
    pub public_base_url: String,
    /// Failed authentications allowed per client IP per minute.
    pub auth_failures_per_min: u32,
    /// Behind a proxy: the header whose last address is the client's (e.g. X-Forwarded-For).
    pub client_ip_header: Option<http::HeaderName>,
    pub publisher_key: Option<VerifyingKey>,
    pub snapshot_path: PathBuf,
    pub keys_path: PathBuf,
}

#[derive(Debug)]
pub struct State {
    snapshot: ArcSwapOption<LoadedSnapshot>,
    keys: ArcSwap<KeyRing>,
    pub limiter: RateLimiter<Arc<str>>,
    pub auth_failures: RateLimiter<IpAddr>,
    pub cursor_key: CursorKey,
    pub metrics: Metrics,
    pub settings: Settings,
    snapshot_refusal: Mutex<Option<Refusal>>,
    keys_refusal: Mutex<Option<Refusal>>,
    keys_identity: Mutex<Option<FileIdentity>>,
    request_counter: AtomicU64,
    request_id_seed: u64,
}

impl State {
    pub fn new(settings: Settings, cursor_key: CursorKey) -> State {
        State {
            snapshot: ArcSwapOption::empty(),
            keys: ArcSwap::from_pointee(KeyRing::default()),
            limiter: RateLimiter::default(),
            auth_failures: RateLimiter::default(),
            cursor_key,
            metrics: Metrics::default(),
            settings,
            snapshot_refusal: Mutex::new(None),
            keys_refusal: Mutex::new(None),
            keys_identity: Mutex::new(None),
            request_counter: AtomicU64::new(0),
            request_id_seed: rand::random(),
        }
    }

    pub fn snapshot(&self) -> Option<Arc<LoadedSnapshot>> {
        self.snapshot.load_full()
    }

    pub fn keys(&self) -> arc_swap::Guard<Arc<KeyRing>> {
        self.keys.load()
    }

    /// Maps and checks a snapshot file, then publishes it. Blocking: call it off the request
    /// path. On failure the snapshot in force stays, and the refusal is recorded.
    pub fn load_snapshot(&self, path: &Path) -> Result<Arc<LoadedSnapshot>, SnapshotError> {
        let identity = FileIdentity::of(path);
        let options = OpenOptions {
            publisher_key: self.settings.publisher_key,
        };
        match Snapshot::open(path, &options) {
            Ok(snapshot) => {
                let meta = snapshot.body(&snapshot.index().meta_json);
                let etag_seed = snapshot.header().checksum as u64;
                let loaded = Arc::new(LoadedSnapshot {
                    snapshot,
                    path: path.to_owned(),
                    identity,
                    loaded_at: SystemTime::now(),
                    meta,
                    etag_seed,
                });
                self.snapshot.store(Some(loaded.clone()));
                self.metrics.snapshot_loads.fetch_add(1, Relaxed);
                Ok(loaded)
            }
            Err(err) => {
                self.metrics.snapshot_refusals.fetch_add(1, Relaxed);
                if let Ok(mut refusal) = self.snapshot_refusal.lock() {
                    *refusal = Some(Refusal {
                        at: SystemTime::now(),
                        path: path.to_owned(),
                        reason: err.to_string(),
                    });
                }
                Err(err)
            }
        }
    }

    pub fn last_snapshot_refusal(&self) -> Option<Refusal> {
        self.snapshot_refusal.lock().ok().and_then(|r| r.clone())
    }

    /// Loads the keys file and puts it in force; a malformed file leaves the old keys.
    pub fn load_keys(&self, path: &Path) -> Result<usize, KeysError> {
        let identity = FileIdentity::of(path);
        match KeyRing::load(path) {
            Ok(ring) => {
                let count = ring.len();
                self.keys.store(Arc::new(ring));
                self.metrics.keys_reloads.fetch_add(1, Relaxed);
                if let Ok(mut known) = self.keys_identity.lock() {
                    *known = identity;
                }
                Ok(count)
            }
            Err(err) => {
                self.metrics.keys_refusals.fetch_add(1, Relaxed);
                if let Ok(mut refusal) = self.keys_refusal.lock() {
                    *refusal = Some(Refusal {
                        at: SystemTime::now(),
                        path: path.to_owned(),
                        reason: err.to_string(),
                    });
                }
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
        let now = FileIdentity::of(&self.settings.keys_path);
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
        self.metrics.render(&Gauges {
            dataset_version: header.map(|h| h.dataset_version.as_str()),
            methodology_version: header.map(|h| h.methodology_version.as_str()),
            snapshot_bytes: loaded.as_ref().map_or(0, |l| l.snapshot.file_len()),
            snapshot_loaded_at: loaded.as_ref().map(|l| epoch_seconds(l.loaded_at)),
            last_refusal_at: self.last_snapshot_refusal().map(|r| epoch_seconds(r.at)),
            keys: self.keys().len(),
            buckets: self.limiter.len() + self.auth_failures.len(),
        })
    }
}
