//! The real `marks` binary, started on a free port (its `--ready-file` says where) and
//! stopped by signal.

use super::*;

/// Starts the real binary on a free port; returns the child and its address, read from the
/// file `--ready-file` names (the one way every harness learns where a server listens).
pub async fn spawn_binary(dir: &Path, extra: &[&str]) -> (tokio::process::Child, std::net::SocketAddr) {
    let snapshot = dir.join("live.snap");
    std::fs::copy(sample_snapshot(), &snapshot).unwrap();
    let keys = dir.join("keys.toml");
    std::fs::copy(sample_dir().join("demo-keys.toml"), &keys).unwrap();
    let ready = dir.join("ready.json");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_marks"));
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        // JSON logs unless the test picks a format itself.
        .args(if extra.contains(&"--log-format") {
            &[][..]
        } else {
            &["--log-format", "json"][..]
        })
        .arg("--snapshot")
        .arg(&snapshot)
        .arg("--keys")
        .arg(&keys)
        .arg("--ready-file")
        .arg(&ready)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        // The banner and the last words: a few lines, read by tests that check them.
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let addr = loop {
        if let Ok(text) = std::fs::read_to_string(&ready) {
            let written: serde_json::Value = serde_json::from_str(&text).unwrap();
            break written["addr"].as_str().unwrap().parse().unwrap();
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the server exited before listening"
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server did not listen within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    (child, addr)
}

/// `kill(2)` through the libc crate; the only unsafe call in the tests.
#[allow(unsafe_code)]
pub fn send_signal(pid: i32, signal: i32) -> i32 {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, signal) }
}

/// Sends SIGTERM to a server started by `spawn_binary` and asserts it exits 0 within 10 s.
pub async fn stop_binary(child: &mut tokio::process::Child) {
    let pid = child.id().expect("the server is still running") as i32;
    assert_eq!(send_signal(pid, libc::SIGTERM), 0);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server did not stop within 10 s")
        .expect("wait for the server");
    assert!(status.success(), "exit status {status:?}");
}
