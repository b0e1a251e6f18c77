//! The snapshot in force, and the one way a new one is put in force: opened without ever
//! waiting on what is at the path, copied, mapped and checked off the request path, one load at a
//! time, refused loudly (and remembered for `/readyz`), then swapped in atomically.
//!
//! Requests load the current snapshot once and finish on it, even if a newer one is put in force
//! meanwhile; the old one is dropped (and unmapped) when its last request is done.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwapOption;
use ed25519_dalek::VerifyingKey;
use marks_format::file::regular_file;
use marks_format::file::succession::{check_succession, NotASuccessor};
use marks_format::{OpenOptions, Snapshot, SnapshotError};

use crate::snapshot::identity::FileIdentity;
use crate::snapshot::{with_causes, LoadError, LoadedSnapshot, Refusal, SlugIndex};

#[derive(Debug)]
pub struct SnapshotInForce {
    current: ArcSwapOption<LoadedSnapshot>,
    /// With `--publisher-key`: snapshots not signed by it are refused.
    publisher_key: Option<VerifyingKey>,
    /// With `--allow-rollback`: a snapshot need not succeed the one in force.
    allow_rollback: bool,
    /// Bytes of decoded series each snapshot in force keeps (`--series-cache`).
    series_cache_bytes: u64,
    refusal: Mutex<Option<Refusal>>,
    /// Held while a file is read and put in force: SIGHUP, the watcher and the object-store
    /// poller never load at once, so an older file is never put in force after a newer one.
    loading: tokio::sync::Mutex<()>,
    /// Snapshots put in force, and files refused, since the start.
    pub loads: AtomicU64,
    pub refusals: AtomicU64,
    /// Of the refusals, the valid files that did not succeed the snapshot in force.
    pub rollbacks_refused: AtomicU64,
}

impl SnapshotInForce {
    pub fn new(publisher_key: Option<VerifyingKey>, allow_rollback: bool, series_cache_bytes: u64) -> SnapshotInForce {
        SnapshotInForce {
            current: ArcSwapOption::empty(),
            publisher_key,
            allow_rollback,
            series_cache_bytes,
            refusal: Mutex::new(None),
            loading: tokio::sync::Mutex::new(()),
            loads: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
            rollbacks_refused: AtomicU64::new(0),
        }
    }

    /// The snapshot in force, if one is.
    pub fn current(&self) -> Option<Arc<LoadedSnapshot>> {
        self.current.load_full()
    }

    /// Waits for any other load to finish; hold the guard across one [`SnapshotInForce::load`].
    pub async fn one_load_at_a_time(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.loading.lock().await
    }

    /// Copies, maps and checks a snapshot file, then puts it in force. Blocking: call it off the
    /// request path, under [`SnapshotInForce::one_load_at_a_time`]. On failure the snapshot in
    /// force stays; a refusal is recorded.
    pub fn load(&self, path: &Path) -> Result<Arc<LoadedSnapshot>, LoadError> {
        let file = match regular_file::open(path) {
            Ok(file) => file,
            // Something that is not a regular file is refused like a file that fails a check.
            Err(source) if source.kind() == std::io::ErrorKind::InvalidInput => {
                return Err(self.refuse(
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
            publisher_key: self.publisher_key,
        };
        let before = FileIdentity::of_file(&file);
        let opened = Snapshot::from_file(&file, path, &options);
        if FileIdentity::of_file(&file) != before {
            return Err(LoadError::Changing { path: path.to_owned() });
        }
        match opened {
            Ok(snapshot) => {
                if let Some(current) = self.current().filter(|_| !self.allow_rollback) {
                    if let Err(reason) = check_succession(&snapshot, &current.snapshot) {
                        return Err(self.refuse_rollback(path, reason));
                    }
                }
                let meta = snapshot.body(&snapshot.index().meta_json);
                let etag_seed = snapshot.header().checksum as u64;
                let loaded = Arc::new(LoadedSnapshot {
                    path: path.to_owned(),
                    identity: before,
                    loaded_at: SystemTime::now(),
                    csv_meta: crate::snapshot::csv_meta(&meta),
                    slugs: SlugIndex::new(&snapshot),
                    pages: crate::snapshot::SnapshotPages::of(&snapshot),
                    decoded_texts: crate::snapshot::decoded::DecodedTexts::new(self.series_cache_bytes),
                    snapshot,
                    meta,
                    etag_seed,
                });
                // Counted before it is in force: whoever sees the new snapshot served finds
                // its load counted already.
                self.loads.fetch_add(1, Relaxed);
                self.current.store(Some(loaded.clone()));
                Ok(loaded)
            }
            Err(err) => Err(self.refuse(path, err)),
        }
    }

    /// Records why a snapshot file was refused, for `/readyz`, and counts it.
    fn refuse(&self, path: &Path, err: SnapshotError) -> LoadError {
        if let Ok(mut refusal) = self.refusal.lock() {
            *refusal = Some(Refusal {
                at: SystemTime::now(),
                path: path.to_owned(),
                reason: with_causes(&err),
            });
        }
        // Counted after the reason is recorded: a count seen going up has its reason in
        // `/readyz` already.
        self.refusals.fetch_add(1, Relaxed);
        LoadError::Refused(err)
    }

    /// Records a valid file that does not succeed the snapshot in force, for `/readyz`, and
    /// counts it both as a refusal and as a rollback refused.
    fn refuse_rollback(&self, path: &Path, reason: NotASuccessor) -> LoadError {
        if let Ok(mut refusal) = self.refusal.lock() {
            *refusal = Some(Refusal {
                at: SystemTime::now(),
                path: path.to_owned(),
                reason: reason.to_string(),
            });
        }
        self.rollbacks_refused.fetch_add(1, Relaxed);
        self.refusals.fetch_add(1, Relaxed);
        LoadError::NotASuccessor {
            path: path.to_owned(),
            reason,
        }
    }

    pub fn last_refusal(&self) -> Option<Refusal> {
        self.refusal.lock().ok().and_then(|r| r.clone())
    }
}
