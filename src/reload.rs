//! Live reloads: a new snapshot or keys file is noticed, checked off the request path and put
//! in force atomically; a file that fails its checks is refused once, loudly, and what was in
//! force keeps serving. Also sweeps idle token buckets.
//!
//! Files are watched by polling their identity (device, inode, size, mtime) through any
//! symlink, which notices a file replaced by rename and a symlink re-pointed, on every
//! filesystem; SIGHUP forces a reload of both files.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::ratelimit::EVICTION_INTERVAL;
use crate::state::{FileIdentity, State};

/// Loads the snapshot file now, off the async workers, and logs the outcome.
pub async fn reload_snapshot(state: &Arc<State>) -> bool {
    let path = state.settings.snapshot_path.clone();
    let loader = state.clone();
    let result = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        loader.load_snapshot(&path).map(|loaded| (loaded, started.elapsed()))
    })
    .await;
    match result {
        Ok(Ok((loaded, took))) => {
            let header = loaded.snapshot.header();
            tracing::info!(
                path = %loaded.path.display(),
                dataset_version = %header.dataset_version,
                methodology_version = %header.methodology_version,
                bytes = loaded.snapshot.file_len(),
                load_ms = took.as_millis() as u64,
                "snapshot loaded and in force"
            );
            true
        }
        Ok(Err(err)) => {
            tracing::error!(
                path = %state.settings.snapshot_path.display(),
                error = %err,
                "snapshot refused; still serving the previous one"
            );
            false
        }
        Err(err) => {
            tracing::error!(error = %err, "snapshot load task failed; still serving the previous one");
            false
        }
    }
}

/// Loads the keys file now and logs the outcome.
pub fn reload_keys(state: &State) -> bool {
    let path = &state.settings.keys_path;
    match state.load_keys(path) {
        Ok(count) => {
            tracing::info!(path = %path.display(), keys = count, "keys file loaded and in force");
            true
        }
        Err(err) => {
            tracing::error!(error = %err, "keys file refused; the previous keys stay in force");
            false
        }
    }
}

/// Polls both files every `interval` until shutdown; sweeps idle buckets on the way.
pub fn spawn_watcher(state: Arc<State>, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    tokio::spawn(async move {
        let mut refused: Option<FileIdentity> = None;
        let mut last_sweep = Instant::now();
        // The files were read at start: the first look is one interval later, not at once.
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = shutdown.changed() => return,
            }
            let on_disk = FileIdentity::of(&state.settings.snapshot_path);
            let serving = state.snapshot().and_then(|loaded| loaded.identity);
            if on_disk.is_some() && on_disk != serving && on_disk != refused {
                refused = if reload_snapshot(&state).await { None } else { on_disk };
            }
            if state.keys_changed() {
                reload_keys(&state);
            }
            if last_sweep.elapsed() >= EVICTION_INTERVAL {
                let now = Instant::now();
                state.limiter.evict_idle(now);
                state.auth_failures.evict_idle(now);
                last_sweep = now;
            }
        }
    });
}
