//! Serving (docs/design.md section 5): live swaps under load, refusal of bad snapshots, graceful
//! shutdown, connection hygiene, TLS and HTTP/2, metrics.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use tokio::io::AsyncWriteExt;

use crate::util::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_swap_under_load_without_a_failed_request() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_versions(dir.path(), 22);
    let server = TestServer::start_with(Options {
        snapshot: Some(versions[0].1.clone()),
        ..Options::default()
    })
    .await;
    let (_, key) = marks::keys::edit::issue(
        &server.keys_path,
        marks_format::rules::tiers::Tier::Enterprise,
        "load",
        Some(10_000_000),
    )
    .unwrap();
    server.state.keys.load(&server.keys_path).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicUsize::new(0));
    let paths = [
        "/v1/companies?limit=20&sort=-value_usd",
        "/v1/companies/synth-000001",
        "/v1/companies/synth-000001/marks?coverage=95",
        "/v1/companies/synth-000002/events",
        "/v1/companies/synth-000003/resolution",
        "/v1/usage",
    ];
    let last = versions.last().unwrap().0.clone();
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (done, total, key, addr) = (done.clone(), total.clone(), key.clone(), server.addr);
            let last = last.clone();
            tokio::spawn(async move {
                let mut client = Client::connect(addr).await;
                let mut newest = String::new();
                let mut i = c;
                let mut after_done = 0;
                // A response answered from the old snapshot just before the last swap may reach
                // a starved client after `done`: keep asking (a bounded number of times) until
                // this client has seen the newest dataset too.
                loop {
                    if done.load(Ordering::Relaxed) && i >= 1200 {
                        if newest == last || after_done == 1000 {
                            break;
                        }
                        after_done += 1;
                    }
                    let path = paths[i % paths.len()];
                    let reply = client.send(Method::GET, path, &[("x-api-key", &key)]).await;
                    assert_eq!(
                        reply.status,
                        200,
                        "{path} failed during a swap: {}",
                        String::from_utf8_lossy(&reply.body)
                    );
                    let version = reply.json()["meta"]["dataset_version"].as_str().unwrap().to_string();
                    assert!(
                        version >= newest,
                        "dataset_version went back from {newest} to {version}"
                    );
                    newest = version;
                    total.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                newest
            })
        })
        .collect();
    for (version, path) in &versions[1..] {
        tokio::time::sleep(Duration::from_millis(40)).await;
        server.publish(path);
        server.wait_for_dataset(version).await;
    }
    done.store(true, Ordering::Relaxed);
    for client in clients {
        assert_eq!(client.await.unwrap(), last, "every client ends on the newest dataset");
    }
    let requests = total.load(Ordering::Relaxed);
    assert!(requests >= 4000, "{requests} requests");
    assert_eq!(
        server.state.snapshots.loads.load(Ordering::Relaxed),
        versions.len() as u64
    );
}

#[tokio::test]
async fn bad_snapshots_are_refused_while_the_old_one_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let publisher = marks_builder::render::signing::generate_key();
    let build_signed = |source: &Path, out: &Path, key: Option<&ed25519_dalek::SigningKey>| {
        marks_builder::build(&marks_builder::BuildOptions {
            source: source.to_owned(),
            out: out.to_owned(),
            signing_key: demo_signing_key(),
            previous: None,
            publisher_key: key.cloned(),
            gzip_level: 0,
            progress: false,
            log_out: None,
        })
        .unwrap();
    };
    let mut options = marks_builder::synth::SynthOptions::new(10, 5);
    options.events = 40;
    let source = dir.path().join("source");
    marks_builder::synth::generate(&options, &source).unwrap();
    let good = dir.path().join("good.snap");
    build_signed(&source, &good, Some(&publisher));
    let server = TestServer::start_with(Options {
        snapshot: Some(good.clone()),
        publisher_key: Some(publisher.verifying_key()),
        ..Options::default()
    })
    .await;
    assert_eq!(
        server.get("/readyz", None).await.json()["dataset_version"],
        "2026-06-30"
    );

    let bytes = std::fs::read(&good).unwrap();
    let unsigned = dir.path().join("unsigned.snap");
    build_signed(&source, &unsigned, None);
    let foreign = dir.path().join("foreign.snap");
    build_signed(&source, &foreign, Some(&marks_builder::render::signing::generate_key()));
    let variant = |name: &str, change: &dyn Fn(&mut Vec<u8>)| {
        let mut copy = bytes.clone();
        change(&mut copy);
        let path = dir.path().join(name);
        std::fs::write(&path, copy).unwrap();
        path
    };
    let cases = [
        (
            variant("magic.snap", &|b| b[0] = b'Z'),
            "not a Valuation Marks snapshot",
        ),
        (variant("version.snap", &|b| b[12] = 200), "format version"),
        // Signed: the signed BLAKE3 digest is what refuses changed content.
        (
            variant("flipped.snap", &|b| b[5000] ^= 0x20),
            "does not match the digest",
        ),
        (variant("truncated.snap", &|b| b.truncate(b.len() - 100)), "truncated"),
        (unsigned, "not signed by a publisher"),
        (foreign, "publisher signature"),
    ];
    let mut refusals = 0;
    for (path, reason) in cases {
        server.publish(&path);
        refusals += 1;
        let mut seen = false;
        // Loads run on a thread of idle priority, which a busy machine (the whole suite on two
        // cores) starves for seconds: a generous bound, never a timing.
        for _ in 0..1500 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if server.state.snapshots.refusals.load(Ordering::Relaxed) >= refusals {
                seen = true;
                break;
            }
        }
        assert!(seen, "{} was never refused", path.display());
        let ready = server.get("/readyz", None).await;
        assert_eq!(ready.status, 200, "still ready: serving the previous snapshot");
        let body = ready.json();
        assert!(
            body["last_refusal"]["reason"].as_str().unwrap().contains(reason),
            "{reason}: {body}"
        );
        let reply = server.get("/v1/companies/synth-000001", Some(PRO)).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json()["meta"]["dataset_version"], "2026-06-30");
    }
    let metrics = String::from_utf8(server.get("/metrics", None).await.body.to_vec()).unwrap();
    assert_eq!(
        metric(&metrics, "marks_snapshot_refusals_total"),
        Some(refusals as f64),
        "{metrics}"
    );
}

#[tokio::test]
async fn sigterm_finishes_in_flight_requests_refuses_new_ones_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_binary(dir.path(), &[]).await;
    assert_eq!(
        request(addr, Method::GET, "/v1/companies/openai", &[("x-api-key", PRO)])
            .await
            .status,
        200
    );
    // A request in flight: its head is half sent when the signal arrives.
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /v1/companies/openai HTTP/1.1\r\nhost: test\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let pid = child.id().unwrap() as i32;
    assert_eq!(send_signal(pid, libc::SIGTERM), 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream.write_all(b"x-api-key: vmk_demo_pro\r\n\r\n").await.unwrap();
    let mut response = Vec::new();
    use tokio::io::AsyncReadExt;
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&response);
    assert_eq!(
        raw_status(&response),
        200,
        "the in-flight request completes: {response}"
    );
    assert!(response.contains("\"slug\":\"openai\""));
    // New connections are refused once the listener is closed.
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "new connections are refused"
    );
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "exit status {status:?}");
    // The access log names key ids, never keys.
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).await.unwrap();
    assert!(stdout.contains("\"key_id\":\"demo-pro\""), "{stdout}");
    assert!(!stdout.contains("vmk_demo_pro"), "a key was logged");
}

#[tokio::test]
async fn slow_and_oversized_clients_are_cut_off_while_others_are_served() {
    let server = TestServer::start_with(Options::settings(|s| {
        s.connections.header_read_timeout = Duration::from_millis(500);
        s.connections.idle_timeout = Duration::from_millis(800);
        s.connections.max_header_bytes = 8192;
    }))
    .await;
    // Slowloris: a head that never ends.
    let started = Instant::now();
    let mut slow = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(b"GET /v1/companies HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let other = server.get("/v1/companies/openai", Some(PRO)).await;
    assert_eq!(other.status, 200, "others are served meanwhile");
    let mut rest = Vec::new();
    use tokio::io::AsyncReadExt;
    let _ = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut rest))
        .await
        .expect("slow client is cut off");
    assert!(started.elapsed() < Duration::from_secs(3));
    // An oversized head gets 431.
    let huge = format!(
        "GET /v1/companies HTTP/1.1\r\nhost: x\r\nx-api-key: vmk_demo_pro\r\nx-filler: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    let response = raw_exchange(server.addr, huge.as_bytes()).await;
    assert_eq!(raw_status(&response), 431, "{response}");
    // An idle keep-alive connection is closed after the idle timeout.
    let mut client = Client::connect(server.addr).await;
    assert_eq!(client.send(Method::GET, "/healthz", &[]).await.status, 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        client.try_send(Method::GET, "/healthz", &[]).await.is_err(),
        "idle connection was closed"
    );
    assert_eq!(server.get("/v1/companies/openai", Some(PRO)).await.status, 200);
}

#[tokio::test]
async fn tls_serves_http1_and_http2() {
    use http_body_util::{BodyExt, Empty};
    let dir = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.key_pair.serialize_pem()).unwrap();
    let server = TestServer::start_with(Options::settings(|s| {
        s.listen.tls_cert = Some(cert.clone());
        s.listen.tls_key = Some(key.clone());
        s.listen.http2 = true;
    }))
    .await;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    for alpn in [b"h2".to_vec(), b"http/1.1".to_vec()] {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.clone()];
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = connector.connect(name, tcp).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(alpn.as_slice()));
        let io = hyper_util::rt::TokioIo::new(tls);
        let request = http::Request::builder()
            .uri(format!("https://localhost:{}/v1/companies/openai", server.addr.port()))
            .header("x-api-key", PRO)
            .body(Empty::<bytes::Bytes>::new())
            .unwrap();
        let response = if alpn == b"h2" {
            let (mut sender, connection) =
                hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                    .await
                    .unwrap();
            tokio::spawn(connection);
            sender.send_request(request).await.unwrap()
        } else {
            let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(connection);
            sender.send_request(request).await.unwrap()
        };
        let expected = if alpn == b"h2" {
            http::Version::HTTP_2
        } else {
            http::Version::HTTP_11
        };
        assert_eq!((response.status().as_u16(), response.version()), (200, expected));
        // Over TLS every response tells browsers to keep to HTTPS (--hsts-max-age, a year).
        assert_eq!(
            response
                .headers()
                .get("strict-transport-security")
                .map(|v| v.to_str().unwrap()),
            Some("max-age=31536000")
        );
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["slug"], "openai");
    }
}

#[tokio::test]
async fn every_answer_says_nosniff_and_plain_http_sends_no_hsts() {
    let server = TestServer::start().await;
    let answers = [
        server.get("/v1/companies/openai", Some(PRO)).await,
        server.get("/v1/companies/nobody", Some(PRO)).await,
        server.get("/v1/companies/openai", None).await,
        server.get("/v1/scorecard", None).await,
        server.get("/healthz", None).await,
        server.get("/", None).await,
    ];
    for reply in &answers {
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"), "{reply:?}");
        assert_eq!(reply.header("strict-transport-security"), None);
    }
}

#[tokio::test]
async fn metrics_count_requests_latency_and_the_snapshot() {
    let server = TestServer::start().await;
    for _ in 0..3 {
        server.get("/v1/companies/openai", Some(PRO)).await;
    }
    server.get("/v1/companies/openai", None).await;
    let mut client = Client::connect(server.addr).await;
    for _ in 0..11 {
        client.send(Method::GET, "/v1/usage", &[("x-api-key", FREE)]).await;
    }
    let text = String::from_utf8(server.get("/metrics", None).await.body.to_vec()).unwrap();
    // Whole series compared by value: "_total 1" must not pass for "_total 10".
    for (series, value) in [
        ("marks_requests_total{operation=\"getCompany\",status=\"200\"}", 3.0),
        ("marks_requests_total{operation=\"getCompany\",status=\"401\"}", 1.0),
        ("marks_requests_total{operation=\"getUsage\",status=\"429\"}", 1.0),
        ("marks_rate_limited_total", 1.0),
        (
            &format!(
                "marks_snapshot_info{{dataset_version=\"{}\",methodology_version=\"v0.5.0\"}}",
                sample_version()
            ),
            1.0,
        ),
    ] {
        assert_eq!(metric(&text, series), Some(value), "{series} in\n{text}");
    }
    // Every answered request is in the latency histogram: 3 + 1 + 11.
    assert_eq!(
        metric(&text, "marks_request_duration_seconds_count"),
        Some(15.0),
        "{text}"
    );
}

#[tokio::test]
async fn a_forged_archive_is_refused_and_a_repointed_symlink_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_versions(dir.path(), 3);
    let server = TestServer::start_with(Options {
        snapshot: Some(versions[0].1.clone()),
        ..Options::default()
    })
    .await;
    // Garbage in the index under a checksum recomputed to match: only archive validation can
    // tell, and it must.
    let mut bytes = std::fs::read(&versions[1].1).unwrap();
    let header = marks_format::file::layout::Header::decode(&bytes).unwrap();
    let start = header.index_offset as usize;
    bytes[start..start + 64].fill(0xff);
    let mut forged_header = header.clone();
    forged_header.checksum = xxhash_rust::xxh3::xxh3_128(&bytes[marks_format::file::layout::HEADER_LEN..]);
    bytes[..marks_format::file::layout::HEADER_LEN].copy_from_slice(&forged_header.encode());
    let forged = dir.path().join("forged.snap");
    std::fs::write(&forged, &bytes).unwrap();
    server.publish(&forged);
    let mut refused = false;
    for _ in 0..1500 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if server.state.snapshots.refusals.load(Ordering::Relaxed) == 1 {
            refused = true;
            break;
        }
    }
    assert!(refused, "the forged archive was never refused");
    let ready = server.get("/readyz", None).await.json();
    let reason = ready["last_refusal"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("failed validation") || reason.contains("inconsistent"),
        "{reason}"
    );
    let reply = server.get("/v1/companies/synth-000001", Some(PRO)).await;
    assert_eq!(reply.json()["meta"]["dataset_version"], versions[0].0);

    // Operators who publish by re-pointing a symlink: the server follows the link's target.
    let link = |target: &Path| {
        let temp = dir.path().join(".link.tmp");
        std::os::unix::fs::symlink(target, &temp).unwrap();
        std::fs::rename(&temp, &server.snapshot_path).unwrap();
    };
    link(&versions[1].1);
    server.wait_for_dataset(&versions[1].0).await;
    link(&versions[2].1);
    server.wait_for_dataset(&versions[2].0).await;
    let reply = server.get("/v1/companies/synth-000001", Some(PRO)).await;
    assert_eq!(reply.json()["meta"]["dataset_version"], versions[2].0);
}

#[tokio::test]
async fn sighup_reloads_the_snapshot_and_the_keys_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_versions(dir.path(), 2);
    // The watcher looks once at start and then not for an hour: only SIGHUP can reload.
    // The synthetic version is older than the sample it starts on: rollbacks allowed.
    let (mut child, addr) = spawn_binary(dir.path(), &["--watch-interval-ms", "3600000", "--allow-rollback"]).await;
    let get = |path: &'static str, key: &'static str| async move {
        request(addr, Method::GET, path, &[("x-api-key", key)]).await
    };
    let sample_version = get("/v1/companies/openai", PRO).await.json()["meta"]["dataset_version"]
        .as_str()
        .unwrap()
        .to_string();
    let temp = dir.path().join(".incoming.snap");
    std::fs::copy(&versions[1].1, &temp).unwrap();
    std::fs::rename(&temp, dir.path().join("live.snap")).unwrap();
    marks::keys::edit::set_status(
        &dir.path().join("keys.toml"),
        "demo-pro",
        marks::keys::file::KeyStatus::Revoked,
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = get("/v1/usage", PRO).await;
    assert_eq!(before.status, 200, "nothing reloads without the signal");
    assert_eq!(before.json()["meta"]["dataset_version"], sample_version.as_str());

    assert_eq!(send_signal(child.id().unwrap() as i32, libc::SIGHUP), 0);
    let mut reloaded = false;
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let ready = request(addr, Method::GET, "/readyz", &[]).await.json();
        if ready["dataset_version"] == versions[1].0.as_str() {
            reloaded = true;
            break;
        }
    }
    assert!(reloaded, "SIGHUP did not reload the snapshot");
    let revoked = get("/v1/usage", PRO).await;
    assert_eq!(
        (revoked.status, revoked.json()["code"].as_str()),
        (401, Some("invalid_api_key"))
    );
    let reply = get("/v1/companies/synth-000001", ENTERPRISE).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["meta"]["dataset_version"], versions[1].0.as_str());
    stop_binary(&mut child).await;
}

#[tokio::test]
async fn http2_connections_may_rest_between_requests_and_connections_are_capped() {
    use http_body_util::{BodyExt, Empty};
    let server = TestServer::start_with(Options::settings(|s| {
        s.listen.http2 = true;
        s.connections.header_read_timeout = Duration::from_millis(300);
        s.connections.idle_timeout = Duration::from_secs(5);
        s.connections.max_connections = 2;
    }))
    .await;
    // HTTP/2 by prior knowledge. A series is larger than the initial flow-control window, so
    // the client answers it with WINDOW_UPDATE frames the server has no reply to: that is not
    // an unanswered request, and the connection must survive the head deadline.
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(connection);
    for round in 0..2 {
        let request = http::Request::builder()
            .uri(format!("http://{}/v1/companies/stripe/marks", server.addr))
            .header("x-api-key", PRO)
            .body(Empty::<bytes::Bytes>::new())
            .unwrap();
        sender
            .ready()
            .await
            .unwrap_or_else(|e| panic!("round {round}: connection closed: {e}"));
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(
            (response.status().as_u16(), response.version()),
            (200, http::Version::HTTP_2)
        );
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert!(body.len() > 65_535, "the body outgrows the flow-control window");
        tokio::time::sleep(Duration::from_millis(900)).await;
    }

    // Two connections are served at once; a third waits in the backlog until one closes.
    let mut first = Client::connect(server.addr).await;
    assert_eq!(first.send(Method::GET, "/healthz", &[]).await.status, 200);
    let third = tokio::spawn(request(server.addr, Method::GET, "/healthz", &[]));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!third.is_finished(), "a third connection was served beyond the cap");
    drop(sender);
    drop(first);
    let reply = tokio::time::timeout(Duration::from_secs(5), third)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.status, 200);
}

/// Over HTTP/2 the answers one poll of a connection makes are written together
/// (`src/server/write_batch.rs`): many streams at once on one connection, with batches past the
/// size at which one is written out early, each get their own bytes, whole, as HTTP/1.1 gets
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_http2_streams_at_once_each_get_their_own_whole_answer() {
    use http_body_util::{BodyExt, Empty};
    let server = TestServer::start_with(Options::settings(|s| s.listen.http2 = true)).await;
    let list = server.get("/v1/companies?limit=200", Some(ENTERPRISE)).await.json();
    let mut paths: Vec<String> = list["companies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("/v1/companies/{}", c["slug"].as_str().unwrap()))
        .collect();
    // Series larger than a batch, among the small answers.
    paths.extend(["stripe", "openai", "spacex"].map(|slug| format!("/v1/companies/{slug}/marks")));
    let mut expected = Vec::new();
    for path in &paths {
        let reply = server.get(path, Some(ENTERPRISE)).await;
        assert_eq!(reply.status, 200, "{path}");
        expected.push(reply.body);
    }

    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (sender, connection) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(connection);
    let streams: Vec<_> = paths
        .iter()
        .map(|path| {
            let mut sender = sender.clone();
            let request = http::Request::builder()
                .uri(format!("http://{}{path}", server.addr))
                .header("x-api-key", ENTERPRISE)
                .body(Empty::<bytes::Bytes>::new())
                .unwrap();
            tokio::spawn(async move {
                let response = sender.send_request(request).await.unwrap();
                assert_eq!(response.version(), http::Version::HTTP_2);
                let status = response.status().as_u16();
                (status, response.into_body().collect().await.unwrap().to_bytes())
            })
        })
        .collect();
    for ((path, stream), expected) in paths.iter().zip(streams).zip(expected) {
        let (status, body) = tokio::time::timeout(Duration::from_secs(30), stream)
            .await
            .unwrap_or_else(|_| panic!("{path}: no answer"))
            .unwrap();
        assert_eq!(status, 200, "{path}");
        assert!(
            body == expected,
            "{path}: {} bytes, not the {} HTTP/1.1 got",
            body.len(),
            expected.len()
        );
    }
}
