//! The keys in force, and the one way a new keys file is put in force: read and checked off the
//! request path, one load at a time, refused loudly (a malformed file leaves the old keys), then
//! swapped in whole.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;

use crate::keys::file::KeysError;
use crate::keys::ring::KeyRing;
use crate::snapshot::identity::FileIdentity;
use crate::snapshot::{with_causes, Refusal};

#[derive(Debug)]
pub struct KeysInForce {
    ring: ArcSwap<KeyRing>,
    /// The generation of the ring in force, stored after the ring is: a connection's remembered
    /// key is checked against it without loading the ring.
    generation: AtomicU64,
    refusal: Mutex<Option<Refusal>>,
    /// The file last read (put in force or refused): a file is read again only once it changes.
    identity: Mutex<Option<FileIdentity>>,
    loading: tokio::sync::Mutex<()>,
    /// Keys files put in force, and refused, since the start.
    pub loads: AtomicU64,
    pub refusals: AtomicU64,
}

impl Default for KeysInForce {
    fn default() -> KeysInForce {
        KeysInForce {
            ring: ArcSwap::from_pointee(KeyRing::default()),
            generation: AtomicU64::new(0),
            refusal: Mutex::new(None),
            identity: Mutex::new(None),
            loading: tokio::sync::Mutex::new(()),
            loads: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
        }
    }
}

impl KeysInForce {
    pub fn ring(&self) -> arc_swap::Guard<Arc<KeyRing>> {
        self.ring.load()
    }

    /// The generation of the keys in force ([`KeyRing::generation`]).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Waits for any other load to finish; hold the guard across one [`KeysInForce::load`].
    pub async fn one_load_at_a_time(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.loading.lock().await
    }

    /// Loads a keys file and puts it in force; a malformed file leaves the old keys. Blocking,
    /// and long for a large file: call it off the request path. The ring it replaces is dropped
    /// here too, not on a request thread.
    pub fn load(&self, path: &Path) -> Result<usize, KeysError> {
        let identity = FileIdentity::of(path);
        match KeyRing::load(path) {
            Ok(ring) => {
                let count = ring.len();
                let generation = ring.generation();
                // Counted before the keys are in force, as snapshot loads are.
                self.loads.fetch_add(1, Ordering::Relaxed);
                let replaced = self.ring.swap(Arc::new(ring));
                self.generation.store(generation, Ordering::Release);
                drop(replaced);
                if let Ok(mut known) = self.identity.lock() {
                    *known = identity;
                }
                Ok(count)
            }
            Err(err) => {
                if let Ok(mut refusal) = self.refusal.lock() {
                    *refusal = Some(Refusal {
                        at: SystemTime::now(),
                        path: path.to_owned(),
                        reason: with_causes(&err),
                    });
                }
                // Counted after the reason is recorded: a count seen going up has its reason
                // in `/readyz` already.
                self.refusals.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut known) = self.identity.lock() {
                    // Do not retry the same bad file every poll; retry when it changes.
                    *known = identity;
                }
                Err(err)
            }
        }
    }

    /// Whether the keys file on disk differs from the one last read.
    pub fn changed(&self, path: &Path) -> bool {
        let now = FileIdentity::of(path);
        self.identity.lock().is_ok_and(|known| *known != now)
    }

    pub fn last_refusal(&self) -> Option<Refusal> {
        self.refusal.lock().ok().and_then(|r| r.clone())
    }
}
