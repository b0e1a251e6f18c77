//! Work that must never compete with requests: reading and checking a new snapshot or keys
//! file, and handing freed memory back. It runs on a thread of its own under the `SCHED_IDLE`
//! scheduling policy: it uses only CPU time the request threads leave, and a request thread
//! that wakes preempts it at once. (A low nice value is not enough: the kernel lets the running
//! thread finish its time slice first, which `benches/lab/keys.sh` saw as a 2 ms p99 while a keys
//! file was parsed beside a busy request thread.) Afterwards, memory the work freed is given
//! back to the system.
//!
//! Parsing a keys file of a million keys allocates several hundred megabytes in small pieces
//! that are all freed once the key ring is built. The C allocator keeps freed memory for reuse
//! and, since the ring's few large allocations sit between the freed pieces, would keep it
//! resident for good, growing with every reload; `malloc_trim` hands the free pages back.
//!
//! Holds this crate's two calls into the C library, each with its safety argument.

use std::io;

/// Runs `work` on a new idle-priority thread and waits for it without blocking the runtime.
pub async fn run<T, F>(name: &str, work: F) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name(name.to_string()).spawn(move || {
        run_only_when_idle();
        let _ = done.send(work());
        return_free_memory();
    })?;
    result
        .await
        .map_err(|_| io::Error::other("the background thread ended without a result (it panicked)"))
}

/// Puts the calling thread under `SCHED_IDLE`; a failure (another platform) only leaves it at
/// the normal policy.
#[allow(unsafe_code)]
fn run_only_when_idle() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 names the calling
        // thread; the call changes only this thread's scheduling.
        unsafe {
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
        }
    }
}

/// Gives the pages the allocator holds free back to the system.
#[allow(unsafe_code)]
pub fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks glibc's own free lists; it has no preconditions and is
        // safe to call from any thread at any time.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_runs_off_the_runtime_and_its_result_comes_back() {
        let caller = std::thread::current().id();
        let (thread, name) = run("marks-test-work", || {
            (
                std::thread::current().id(),
                std::thread::current().name().map(str::to_owned),
            )
        })
        .await
        .unwrap();
        assert_ne!(thread, caller);
        assert_eq!(name.as_deref(), Some("marks-test-work"));
        let failed = run("marks-test-panic", || -> u8 { panic!("a failing reload") }).await;
        assert!(failed.is_err());
    }
}
