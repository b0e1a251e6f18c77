//! What operators and clients really do to a running server, and what it must survive:
//! pooled connections kept busy for longer than any deadline, heads trickled byte by byte,
//! sockets that say nothing, and every way an operator replaces (or damages) the snapshot file
//! under load: `cp` over it, truncation, an in-place rewrite, deletion, a symlink, a rename,
//! SIGHUP racing the watcher.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::util::*;

/// A key whose budget no test here can spend, so load loops never meet a 429.
async fn unlimited_key(server: &TestServer) -> String {
    let (_, key) = marks::keys::edit::issue(
        &server.keys_path,
        marks_format::rules::tiers::Tier::Enterprise,
        "load",
        Some(100_000_000),
    )
    .unwrap();
    server.state.keys.load(&server.keys_path).unwrap();
    key
}

fn with_deadlines(header_read: Duration, idle: Duration) -> Options {
    Options::settings(|s| {
        s.connections.header_read_timeout = header_read;
        s.connections.idle_timeout = idle;
    })
}

/// The head deadline is for one slow request head, never for a connection that keeps
/// completing requests: 32 pooled connections, each busy for many times the deadline, lose
/// nothing. Several deadline lengths, since the fault this guards against was a timer that
/// counted ticks at which *some* request was pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_keep_alive_connections_are_never_cut() {
    for deadline in [40, 120, 300].map(Duration::from_millis) {
        let server = TestServer::start_with(with_deadlines(deadline, Duration::from_secs(30))).await;
        let key = unlimited_key(&server).await;
        let run_for = (deadline * 10).max(Duration::from_secs(1));
        let started = Instant::now();
        let clients: Vec<_> = (0..32)
            .map(|_| {
                let (addr, key) = (server.addr, key.clone());
                tokio::spawn(async move {
                    let mut client = Client::connect(addr).await;
                    let mut answered = 0usize;
                    while started.elapsed() < run_for {
                        let reply = client
                            .try_send(Method::GET, "/v1/companies/openai", &[("x-api-key", &key)])
                            .await
                            .unwrap_or_else(|e| panic!("request {answered} cut after {:?}: {e}", started.elapsed()));
                        assert_eq!(reply.status, 200);
                        answered += 1;
                    }
                    answered
                })
            })
            .collect();
        for client in clients {
            assert!(client.await.unwrap() > 0);
        }
        let metrics = String::from_utf8(server.get("/metrics", None).await.body.to_vec()).unwrap();
        assert_eq!(
            metric(&metrics, "marks_connection_errors_total"),
            Some(0.0),
            "deadline {deadline:?}"
        );
        server.stop().await;
    }
}

/// Slowloris: a head that keeps arriving, a byte at a time, never completes; bytes keep moving,
/// so only the head deadline can end it, and it does, not before its time.
#[tokio::test]
async fn a_head_trickled_byte_by_byte_is_cut_at_the_head_deadline() {
    let deadline = Duration::from_millis(400);
    let server = TestServer::start_with(with_deadlines(deadline, Duration::from_secs(30))).await;
    let mut slow = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let started = Instant::now();
    let head = b"GET /v1/companies/openai HTTP/1.1\r\nhost: test\r\nx-filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut cut = None;
    for byte in head.iter().cycle().take(2000) {
        if slow.write_all(&[*byte]).await.is_err() {
            cut = Some(started.elapsed());
            break;
        }
        // The server closing shows as a read of 0 bytes (or a reset) before writes fail.
        let mut buf = [0u8; 64];
        if let Ok(read) = tokio::time::timeout(Duration::from_millis(20), slow.read(&mut buf)).await {
            assert!(!matches!(read, Ok(n) if n > 0), "no response to an unfinished head");
            cut = Some(started.elapsed());
            break;
        }
    }
    let cut = cut.expect("the trickled head was never cut");
    assert!(cut >= deadline, "cut after {cut:?}, before the {deadline:?} deadline");
    assert_eq!(server.get("/v1/companies/openai", Some(PRO)).await.status, 200);
}

/// A socket that connects and sends nothing is closed at the head deadline, counted from
/// accept, not left to the (much longer) idle deadline.
#[tokio::test]
async fn a_silent_socket_is_closed_at_the_head_deadline() {
    let deadline = Duration::from_millis(300);
    let server = TestServer::start_with(with_deadlines(deadline, Duration::from_secs(60))).await;
    let mut silent = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(10), silent.read(&mut buf))
        .await
        .expect("a silent socket was held for 10 s");
    assert!(matches!(read, Ok(0) | Err(_)), "closed without an answer: {read:?}");
    assert!(started.elapsed() >= deadline, "closed after {:?}", started.elapsed());
}

/// Clients that keep asking while the operator works on the live file; each must get 200 from
/// one whole snapshot or the other.
struct Load {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    clients: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(server: &TestServer, key: &str, versions: &[String]) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let clients = (0..4)
            .map(|c| {
                let (stop, answered, key, addr) = (stop.clone(), answered.clone(), key.to_string(), server.addr);
                let versions = versions.to_vec();
                tokio::spawn(async move {
                    let mut client = Client::connect(addr).await;
                    let paths = ["/v1/companies?limit=5", "/v1/companies/synth-000001/marks", "/v1/usage"];
                    let mut i = c;
                    while !stop.load(Ordering::Relaxed) {
                        let path = paths[i % paths.len()];
                        let reply = client.send(Method::GET, path, &[("x-api-key", &key)]).await;
                        assert_eq!(reply.status, 200, "{path}: {}", String::from_utf8_lossy(&reply.body));
                        let version = reply.json()["meta"]["dataset_version"].as_str().unwrap().to_string();
                        assert!(
                            versions.contains(&version),
                            "{version} is none of the published versions"
                        );
                        answered.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                })
            })
            .collect();
        Load {
            stop,
            answered,
            clients,
        }
    }

    async fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        for client in self.clients {
            client.await.unwrap();
        }
        self.answered.load(Ordering::Relaxed)
    }
}

/// Writes `from` over `to` in place, the way `cp` does (truncate, then write the same inode),
/// in small pieces with pauses, so the watcher looks at it half written more than once.
async fn cp_slowly(from: &Path, to: &Path) {
    let bytes = std::fs::read(from).unwrap();
    let mut file = std::fs::OpenOptions::new().write(true).truncate(true).open(to).unwrap();
    use std::io::Write;
    for piece in bytes.chunks(bytes.len() / 8 + 1) {
        file.write_all(piece).unwrap();
        file.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

async fn served(server: &TestServer) -> String {
    server.get("/readyz", None).await.json()["dataset_version"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Whatever happens to the file at the snapshot path, the server keeps answering from the last
/// snapshot it validated, never from a mix of two files, until a complete new one validates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_file_overwritten_truncated_rewritten_or_deleted_under_load_fails_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_versions(dir.path(), 5);
    let names: Vec<String> = versions.iter().map(|(v, _)| v.clone()).collect();
    let server = TestServer::start_with(Options {
        snapshot: Some(versions[0].1.clone()),
        ..Options::default()
    })
    .await;
    let key = unlimited_key(&server).await;
    let load = Load::start(&server, &key, &names);
    let live = server.snapshot_path.clone();

    // `cp new.snap live.snap`, slowly: the half-written file is refused (or skipped while it
    // changes), the old one serves, and the whole new one goes in force.
    cp_slowly(&versions[1].1, &live).await;
    server.wait_for_dataset(&versions[1].0).await;

    // Truncated to half: refused; version 1 keeps serving.
    let refusals = server.state.snapshots.refusals.load(Ordering::Relaxed);
    let len = std::fs::metadata(&live).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&live)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    wait_until(|| server.state.snapshots.refusals.load(Ordering::Relaxed) > refusals).await;
    assert_eq!(served(&server).await, versions[1].0);

    // Rewritten in place without truncation (an editor's save, `rsync --inplace`): the next
    // version's bytes over the half file, then its exact length.
    let next = std::fs::read(&versions[2].1).unwrap();
    {
        use std::io::{Seek, Write};
        let mut file = std::fs::OpenOptions::new().write(true).open(&live).unwrap();
        file.seek(std::io::SeekFrom::Start(0)).unwrap();
        file.write_all(&next).unwrap();
        file.set_len(next.len() as u64).unwrap();
    }
    server.wait_for_dataset(&versions[2].0).await;

    // Deleted: nothing to load; version 2 keeps serving.
    std::fs::remove_file(&live).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(served(&server).await, versions[2].0);

    // Replaced by a symlink, then by a rename: each swaps as usual.
    std::os::unix::fs::symlink(&versions[3].1, &live).unwrap();
    server.wait_for_dataset(&versions[3].0).await;
    server.publish(&versions[4].1);
    server.wait_for_dataset(&versions[4].0).await;

    let answered = load.finish().await;
    assert!(answered > 0);
    let ready = server.get("/readyz", None).await;
    assert_eq!((ready.status, served(&server).await), (200, versions[4].0.clone()));
}

async fn wait_until(condition: impl Fn() -> bool) {
    for _ in 0..400 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the condition never held");
}

/// `marks install` is the recommended way to publish: checked first (a bad file is refused and
/// the live one left alone), then copied beside the live file and renamed over it.
#[tokio::test]
async fn marks_install_refuses_a_bad_file_and_publishes_a_good_one() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_versions(dir.path(), 2);
    let server = TestServer::start_with(Options {
        snapshot: Some(versions[0].1.clone()),
        ..Options::default()
    })
    .await;
    let install = |from: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_marks"))
            .args(["install", "--snapshot"])
            .arg(from)
            .arg("--to")
            .arg(&server.snapshot_path)
            .output()
            .unwrap()
    };
    let broken = dir.path().join("broken.snap");
    let mut bytes = std::fs::read(&versions[1].1).unwrap();
    bytes.truncate(bytes.len() - 10);
    std::fs::write(&broken, bytes).unwrap();
    let before = std::fs::read(&server.snapshot_path).unwrap();
    let refused = install(&broken);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("truncated") && stderr.lines().count() == 1, "{stderr}");
    assert_eq!(
        std::fs::read(&server.snapshot_path).unwrap(),
        before,
        "the live file is untouched"
    );

    let installed = install(&versions[1].1);
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    server.wait_for_dataset(&versions[1].0).await;
    // Nothing but the live file is left beside it.
    let names: Vec<String> = std::fs::read_dir(server.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// A signature binds content, not freshness: `marks install` refuses an older or the same dataset
/// version, or a log that does not extend the live one, unless told `--rollback`; a running
/// server refuses such a file at its watched path (it keeps serving, logs and counts it) unless
/// started with `--allow-rollback`.
#[tokio::test]
async fn a_rollback_is_refused_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_versions(dir.path(), 3);
    // Built apart from the chain, with other values: a newer version whose log does not extend
    // the chain's.
    let fork = dir.path().join("fork");
    std::fs::create_dir_all(&fork).unwrap();
    let forked = build_chain(&fork, 4, |v, source, version| {
        append_line(
            &source.join("events.csv"),
            &format!(
                "f{v:04},synth-000001,tender_offer,{version},{},https://example.com/f,",
                2_000_000_000 + v
            ),
        )
    })
    .pop()
    .unwrap();
    let server = TestServer::start_with(Options {
        snapshot: Some(versions[1].1.clone()),
        ..Options::default()
    })
    .await;
    let install = |from: &Path, extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_marks"))
            .args(["install", "--snapshot"])
            .arg(from)
            .arg("--to")
            .arg(&server.snapshot_path)
            .args(extra)
            .output()
            .unwrap()
    };
    let live = std::fs::read(&server.snapshot_path).unwrap();
    for (older, why) in [
        (&versions[0].1, "is older than dataset"),
        (&forked.1, "does not extend the log in force"),
    ] {
        let refused = install(older, &[]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success() && stderr.contains(why), "{stderr}");
        assert!(stderr.contains("--rollback"), "says how to roll back: {stderr}");
        assert_eq!(
            std::fs::read(&server.snapshot_path).unwrap(),
            live,
            "the live file is untouched"
        );
    }
    // The same file again is no change, and a successor installs.
    assert!(install(&versions[1].1, &[]).status.success());
    assert!(install(&versions[2].1, &[]).status.success());
    server.wait_for_dataset(&versions[2].0).await;

    // Dropped at the watched path by hand: refused, counted, and the newer one keeps serving.
    let refusals = server.state.snapshots.rollbacks_refused.load(Ordering::Relaxed);
    server.publish(&versions[0].1);
    wait_until(|| server.state.snapshots.rollbacks_refused.load(Ordering::Relaxed) > refusals).await;
    assert_eq!(served(&server).await, versions[2].0);
    let ready = server.get("/readyz", None).await;
    let ready = String::from_utf8_lossy(&ready.body).into_owned();
    assert!(ready.contains("is older than dataset"), "{ready}");
    let metrics = server.get("/metrics", None).await;
    let metrics = String::from_utf8_lossy(&metrics.body).into_owned();
    assert!(
        metrics.contains("marks_snapshot_rollbacks_refused_total 1"),
        "{metrics}"
    );

    // Asked for, it rolls back: install --rollback, and a server started with --allow-rollback.
    assert!(install(&versions[0].1, &["--rollback"]).status.success());
    let mut settings = test_settings();
    settings.data.allow_rollback = true;
    let permissive = TestServer::start_with(Options {
        snapshot: Some(versions[2].1.clone()),
        settings,
        ..Options::default()
    })
    .await;
    permissive.publish(&versions[0].1);
    permissive.wait_for_dataset(&versions[0].0).await;
}

/// SIGHUP and the watcher never load at once, so the last file published is the one served,
/// however the two interleave.
#[tokio::test]
async fn sighup_racing_the_watcher_ends_on_the_newest_file() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_versions(dir.path(), 6);
    // The synthetic versions are older than the sample it starts on: rollbacks allowed.
    let (mut child, addr) = spawn_binary(dir.path(), &["--watch-interval-ms", "10", "--allow-rollback"]).await;
    let live = dir.path().join("live.snap");
    let pid = child.id().unwrap() as i32;
    for (_, path) in &versions {
        let temp = dir.path().join(".incoming.snap");
        std::fs::copy(path, &temp).unwrap();
        std::fs::rename(&temp, &live).unwrap();
        assert_eq!(send_signal(pid, libc::SIGHUP), 0);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let newest = versions.last().unwrap().0.as_str();
    let readyz = || async { request(addr, Method::GET, "/readyz", &[]).await.json() };
    let mut reached = false;
    for _ in 0..200 {
        if readyz().await["dataset_version"] == newest {
            reached = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(reached, "never served the newest file");
    // And it stays there: no older load lands after it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(readyz().await["dataset_version"], newest);
    stop_binary(&mut child).await;
}

/// Makes a named pipe at `path` with mkfifo(1).
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Every request is answered within a few seconds: the server never waits on a watched file.
async fn answered(addr: std::net::SocketAddr, path: &str, key: Option<&str>) -> Reply {
    let headers: Vec<(&str, &str)> = key.map(|key| ("x-api-key", key)).into_iter().collect();
    tokio::time::timeout(Duration::from_secs(5), request(addr, Method::GET, path, &headers))
        .await
        .unwrap_or_else(|_| panic!("{path} got no answer within 5 s while a FIFO sat at a watched path"))
}

/// `mv keys.toml keys.good && mkfifo keys.toml` (and the same for the snapshot) against the
/// real binary: the FIFO is refused without being waited on, every request is answered
/// meanwhile, the refusal shows in `/readyz` and `/metrics`, and what was in force keeps
/// serving. Then a FIFO that a writer holds open and never writes, whose read would block for
/// good: refused the same way, without being read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_at_a_watched_path_is_refused_and_never_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_binary(dir.path(), &["--watch-interval-ms", "50"]).await;
    let cases = [
        ("keys.toml", false, "marks_keys_refusals_total", "last_keys_refusal"),
        ("live.snap", false, "marks_snapshot_refusals_total", "last_refusal"),
        ("keys.toml", true, "marks_keys_refusals_total", "last_keys_refusal"),
    ];
    for (name, held_by_a_writer, counter, readiness_field) in cases {
        let path = dir.path().join(name);
        let kept = dir.path().join(format!("{name}.good"));
        let metrics = answered(addr, "/metrics", None).await;
        let refusals_before = metric(&String::from_utf8_lossy(&metrics.body), counter).unwrap_or(0.0);
        std::fs::rename(&path, &kept).unwrap();
        mkfifo(&path);
        // Opening a FIFO for reading and writing never blocks on Linux; this end is never written.
        let writer = held_by_a_writer.then(|| std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap());
        let mut refused = false;
        // The watcher looks every 50 ms; a loaded machine may take far longer, so wait long.
        for _ in 0..2400 {
            assert_eq!(answered(addr, "/healthz", None).await.status, 200);
            let keyed = answered(addr, "/v1/companies/stripe", Some(ENTERPRISE)).await;
            assert_eq!(keyed.status, 200, "the keys and snapshot in force keep serving");
            let metrics = answered(addr, "/metrics", None).await;
            if metric(&String::from_utf8_lossy(&metrics.body), counter).unwrap_or(0.0) > refusals_before {
                refused = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(refused, "{counter} never went up for a FIFO at {name}");
        let ready = answered(addr, "/readyz", None).await.json();
        let reason = ready[readiness_field]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("named pipe (FIFO)") && reason.contains("not a regular file"),
            "{ready}"
        );
        assert_eq!(ready["status"], "ready", "{ready}");
        drop(writer);
        std::fs::remove_file(&path).unwrap();
        std::fs::rename(&kept, &path).unwrap();
    }
    stop_binary(&mut child).await;
}
