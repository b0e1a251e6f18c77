//! Live reloads: a new snapshot or keys file is noticed, checked off the request path and put
//! in force atomically; a file that fails its checks is refused once, loudly, and what was in
//! force keeps serving. Also sweeps idle token buckets.
//!
//! Files are watched by polling their identity (device, inode, size, mtime) through any
//! symlink, which notices a file replaced by rename, a symlink re-pointed and a file rewritten
//! in place, on every filesystem; SIGHUP forces a reload of both files. One reload runs at a
//! time (`SnapshotInForce::one_load_at_a_time`, `KeysInForce::one_load_at_a_time`), and files are read on a low-priority thread of their own
//! (`background`), never on the runtime's workers. Looking at the files (open, stat, hashing
//! their ends) runs on a blocking thread with a time bound, so a hung mount or a FIFO at a
//! watched path never holds up a request; anything that is not a regular file is refused. Every sweep of idle buckets also hands
//! freed memory back to the system. The watcher runs under a supervisor: if it ever panics it
//! is started again and counted in `/metrics`, never silently gone.

use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::api::state::State;
use crate::budgets::local::EVICTION_INTERVAL;
use crate::snapshot::background;
use crate::snapshot::identity::FileIdentity;
use crate::snapshot::{with_causes, LoadError};

/// What one look at the snapshot file found.
#[derive(Debug, PartialEq, Eq)]
pub enum SnapshotReload {
    Loaded,
    /// Failed a check: not looked at again until it changes.
    Refused,
    /// Missing, unreadable, or changing while it was read: looked at again at the next poll.
    NotYet,
}

/// Loads the snapshot file now, off the async workers, and logs the outcome.
pub async fn reload_snapshot(state: &Arc<State>) -> SnapshotReload {
    let _one_at_a_time = state.snapshots.one_load_at_a_time().await;
    let path = state.resolved.snapshot_path.clone();
    let loader = state.snapshots.clone();
    let had_one = state.snapshot().is_some();
    let result = background::run("marks-reload", move || {
        let started = Instant::now();
        loader.load(&path).map(|loaded| (loaded, started.elapsed()))
    })
    .await;
    let keeping = if had_one {
        "still serving the previous one"
    } else {
        "no snapshot is being served yet"
    };
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
            SnapshotReload::Loaded
        }
        Ok(Err(LoadError::Refused(err))) => {
            tracing::error!(path = %state.resolved.snapshot_path.display(), error = %with_causes(&err), "snapshot refused; {keeping}");
            SnapshotReload::Refused
        }
        Ok(Err(err @ LoadError::NotASuccessor { .. })) => {
            tracing::error!(error = %err, "snapshot refused as a rollback; {keeping}");
            SnapshotReload::Refused
        }
        Ok(Err(err)) => {
            tracing::warn!(error = %with_causes(&err), "snapshot not loaded; {keeping}");
            SnapshotReload::NotYet
        }
        Err(err) => {
            tracing::error!(error = %err, "snapshot load task failed; {keeping}");
            SnapshotReload::NotYet
        }
    }
}

/// Loads the keys file now, off the async workers, and logs the outcome.
pub async fn reload_keys(state: &Arc<State>) -> bool {
    let _one_at_a_time = state.keys.one_load_at_a_time().await;
    let loader = state.clone();
    let result = background::run("marks-reload", move || {
        let started = Instant::now();
        loader
            .keys
            .load(&loader.resolved.keys_path)
            .map(|count| (count, started.elapsed()))
    })
    .await;
    let path = state.resolved.keys_path.display();
    match result {
        Ok(Ok((count, took))) => {
            tracing::info!(path = %path, keys = count, load_ms = took.as_millis() as u64, "keys file loaded and in force");
            true
        }
        Ok(Err(err)) => {
            tracing::error!(error = %with_causes(&err), "keys file refused; the previous keys stay in force");
            false
        }
        Err(err) => {
            tracing::error!(error = %err, "keys load task failed; the previous keys stay in force");
            false
        }
    }
}

/// Polls both files every `interval` until shutdown, under a supervisor; sweeps idle buckets
/// on the way.
pub fn spawn_watcher(state: Arc<State>, interval: Duration, shutdown: watch::Receiver<bool>) {
    let restarts = state.clone();
    tokio::spawn(supervise(
        "snapshot and keys watcher",
        move || restarts.metrics.watcher_restarts.fetch_add(1, Relaxed),
        move || watch_files(state.clone(), interval, shutdown.clone()),
    ));
}

/// Polls the object store for published snapshots until shutdown (`--snapshot-from`), under a
/// supervisor like the file watcher.
pub fn spawn_source_poller(state: Arc<State>, shutdown: watch::Receiver<bool>) {
    let Some(source) = state.snapshot_source.clone() else {
        return;
    };
    let restarts = state.clone();
    tokio::spawn(supervise(
        "snapshot source poller",
        move || restarts.metrics.watcher_restarts.fetch_add(1, Relaxed),
        move || crate::snapshot::object_store::poll_forever(source.clone(), state.snapshots.clone(), shutdown.clone()),
    ));
}

/// Runs the task `start` makes until it returns; when it panics, counts it, logs it and starts
/// it again, after a pause so a task that panics at once cannot spin.
pub async fn supervise<F, Fut>(name: &'static str, on_restart: impl Fn() -> u64, mut start: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        match tokio::spawn(start()).await {
            Ok(()) => return,
            Err(err) if err.is_panic() => {
                let restarts = on_restart() + 1;
                tracing::error!(task = name, restarts, "task panicked; starting it again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            // Cancelled: the runtime is shutting down.
            Err(_) => return,
        }
    }
}

async fn watch_files(state: Arc<State>, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    let mut refused: Option<FileIdentity> = None;
    let looking = Arc::new(AtomicBool::new(false));
    let mut last_sweep = Instant::now();
    // The files were read at start: the first look is one interval later, not at once.
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.changed() => return,
        }
        if let Some(look) = look_at_files(&state, &looking).await {
            let serving = state.snapshot().and_then(|loaded| loaded.identity);
            if let Some(identity) = look
                .snapshot
                .filter(|&found| Some(found) != serving && Some(found) != refused)
            {
                refused = (reload_snapshot(&state).await == SnapshotReload::Refused).then_some(identity);
            }
            if look.keys_changed {
                reload_keys(&state).await;
            }
        }
        if last_sweep.elapsed() >= EVICTION_INTERVAL {
            let now = Instant::now();
            state.budgets.local.evict_idle(now);
            state.budgets.auth_failures.evict_idle(now);
            if let Some(store) = &state.budgets.shared {
                store.forget_expired_denials(now);
            }
            last_sweep = now;
            // What closed connections and dropped buckets freed goes back to the system too
            // (thousands of stalled HTTP/2 streams leave hundreds of megabytes otherwise).
            let _ = background::run("marks-trim", || ()).await;
        }
    }
}

/// How long one look at the watched files (open, stat, hash of the ends) may take. Local
/// filesystems answer in microseconds; a look that takes this long is a hung mount.
pub const LOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// What one look at the watched files found.
#[derive(Debug)]
struct Look {
    snapshot: Option<FileIdentity>,
    keys_changed: bool,
}

/// Looks at the snapshot and keys files on a blocking thread, never on the runtime's workers,
/// and gives up after [`LOOK_TIMEOUT`]: the tick is skipped, counted and logged, and the files
/// are looked at again at a later tick once the stuck look has returned (`looking` says one is
/// still out, so a hung mount holds one thread, not one per tick).
async fn look_at_files(state: &Arc<State>, looking: &Arc<AtomicBool>) -> Option<Look> {
    if looking.swap(true, SeqCst) {
        state.metrics.file_look_timeouts.fetch_add(1, Relaxed);
        tracing::warn!(
            "the previous look at the snapshot and keys files has not returned (a hung filesystem?); skipping this one"
        );
        return None;
    }
    let (files, done) = (state.clone(), looking.clone());
    let look = tokio::task::spawn_blocking(move || {
        let look = Look {
            snapshot: FileIdentity::of(&files.resolved.snapshot_path),
            keys_changed: files.keys.changed(&files.resolved.keys_path),
        };
        done.store(false, SeqCst);
        look
    });
    match tokio::time::timeout(LOOK_TIMEOUT, look).await {
        Ok(Ok(look)) => Some(look),
        Ok(Err(err)) => {
            looking.store(false, SeqCst);
            tracing::error!(error = %err, "the look at the snapshot and keys files failed");
            None
        }
        Err(_) => {
            state.metrics.file_look_timeouts.fetch_add(1, Relaxed);
            tracing::warn!(
                timeout_ms = LOOK_TIMEOUT.as_millis() as u64,
                snapshot = %state.resolved.snapshot_path.display(),
                keys = %state.resolved.keys_path.display(),
                "the snapshot and keys files did not answer in time (a hung filesystem?); looked at again later"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[tokio::test]
    async fn a_task_that_panics_is_started_again_and_counted() {
        let restarts = Arc::new(AtomicU64::new(0));
        let runs = Arc::new(AtomicU64::new(0));
        let (counted, started) = (restarts.clone(), runs.clone());
        supervise(
            "test task",
            move || counted.fetch_add(1, Relaxed),
            move || {
                let run = started.fetch_add(1, Relaxed);
                async move {
                    if run < 2 {
                        panic!("run {run} fails");
                    }
                }
            },
        )
        .await;
        assert_eq!((runs.load(Relaxed), restarts.load(Relaxed)), (3, 2));
    }
}
