//! Work that must never compete with requests: reading and checking a new snapshot or keys
//! file. It runs on a thread of its own at a low scheduling priority (nice 10), so that on a
//! busy machine the request threads always go first and a reload costs them at most a short
//! time slice, not half a core; afterwards, memory the work freed is given back to the system.
//!
//! Parsing a keys file of a million keys allocates several hundred megabytes in small pieces
//! that are all freed once the key ring is built. The C allocator keeps freed memory for reuse
//! and, since the ring's few large allocations sit between the freed pieces, would keep it
//! resident for good, growing with every reload; `malloc_trim` hands the free pages back.
//! `benches/keys.sh` measures both effects.
//!
//! Holds this crate's two calls into the C library, each with its safety argument.

use std::io;

/// The niceness background threads run at: low enough that request threads preempt them within
/// a short time slice, high enough that a reload still finishes on a saturated machine.
const BACKGROUND_NICENESS: i32 = 10;

/// Runs `work` on a new low-priority thread and waits for it without blocking the runtime.
pub async fn run<T, F>(name: &str, work: F) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name(name.to_string()).spawn(move || {
        lower_this_threads_priority();
        let _ = done.send(work());
        return_free_memory();
    })?;
    result
        .await
        .map_err(|_| io::Error::other("the background thread ended without a result (it panicked)"))
}

/// Sets the calling thread's niceness; a failure (a platform without per-thread niceness) only
/// leaves it at the normal priority.
#[allow(unsafe_code)]
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take plain integers, touch no memory of ours, and on
        // Linux a thread id names that one thread for PRIO_PROCESS.
        unsafe {
            let thread = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, BACKGROUND_NICENESS);
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
