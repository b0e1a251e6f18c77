//! Test utilities: snapshots built by the real builder, servers started on 127.0.0.1:0, and
//! an HTTP/1.1 client that reports status, headers and body as they came off the wire.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use marks::api::state::State;
use marks::app::App;
use marks::settings::Settings;
use marks_builder::{BuildOptions, BuildReport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const FREE: &str = "vmk_demo_free";
pub const RESEARCH: &str = "vmk_demo_research";
pub const PRO: &str = "vmk_demo_pro";
pub const BUSINESS: &str = "vmk_demo_business";
pub const ENTERPRISE: &str = "vmk_demo_enterprise";
pub const REVOKED: &str = "vmk_demo_revoked";

/// The three numbers the scorecard scores, in its order (docs/methodology.md): the mark, the
/// next-print forecast and the last print.
pub const SCORED_NUMBERS: [&str; 3] = ["mark", "next_print", "last_print"];

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn sample_dir() -> PathBuf {
    repo().join("sample")
}

pub fn demo_signing_key() -> ed25519_dalek::SigningKey {
    marks_builder::render::signing::read_signing_key(&sample_dir().join("demo-signing-key.pem")).expect("demo key")
}

/// Builds a dataset directory into a snapshot with the demo signing key.
pub fn build(source: &Path, out: &Path) -> BuildReport {
    try_build(source, out, None).unwrap_or_else(|e| panic!("build of {} failed: {e}", source.display()))
}

pub fn try_build(source: &Path, out: &Path, previous: Option<&Path>) -> Result<BuildReport, marks_builder::BuildError> {
    marks_builder::build(&BuildOptions {
        source: source.to_owned(),
        out: out.to_owned(),
        signing_key: demo_signing_key(),
        previous: previous.map(Path::to_owned),
        publisher_key: None,
        gzip_level: 1,
        progress: false,
        log_out: None,
    })
}

/// The bundled sample, built once per test process into Cargo's temporary directory for the
/// tests (`target/tmp`): a fixed name, replaced by each run's build, so runs leave no copies
/// behind (the build writes a temporary file and renames it, so a process that has the old
/// one open keeps reading it).
pub fn sample_snapshot() -> &'static Path {
    static SNAPSHOT: OnceLock<PathBuf> = OnceLock::new();
    SNAPSHOT.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sample.snap");
        build(&sample_dir(), &out);
        out
    })
}

/// The sample's companies.csv and events.csv as rows of fields, read independently of the
/// builder, so tests compare the API against the source data rather than against itself.
pub fn sample_csv(name: &str) -> Vec<Vec<String>> {
    let mut reader = csv::Reader::from_path(sample_dir().join(name)).expect("sample csv");
    reader
        .records()
        .map(|r| r.expect("record").iter().map(str::to_string).collect())
        .collect()
}

/// One row of a sample CSV, by column name.
pub type Record = std::collections::HashMap<String, String>;

/// The sample's companies.csv or events.csv as rows by column name, read independently of the
/// builder.
pub fn sample_records(name: &str) -> Vec<Record> {
    let mut reader = csv::Reader::from_path(sample_dir().join(name)).expect("sample csv");
    let headers = reader.headers().expect("header row").clone();
    reader
        .records()
        .map(|r| {
            let r = r.expect("record");
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// The sample's effective events (docs/design.md section 2): the records no later record
/// supersedes or retracts, retractions left out, in file order. What the marks, lists and
/// pages read; getMarkEvents returns every record.
pub fn sample_effective_events() -> Vec<Record> {
    let records = sample_records("events.csv");
    let gone: std::collections::HashSet<String> = records
        .iter()
        .map(|r| r["supersedes"].clone())
        .filter(|s| !s.is_empty())
        .collect();
    records
        .into_iter()
        .filter(|r| !gone.contains(&r["event_id"]) && r["event_type"] != "retraction")
        .collect()
}

/// One company's effective history as docs/design.md sections 2, 3 and 4a read it, worked out
/// here from the source CSV independently of the builder.
#[derive(Debug, Default)]
pub struct SampleHistory {
    /// Observations of value a mark may start from, in date order (file order within a day).
    pub anchors: Vec<Record>,
    /// What ended or fixed its private marks: `listed`, `sold`, `bankrupt`, `wound_down` (the
    /// first outcome), or `sale_agreed` (an agreed sale no later record terminated and no later
    /// value followed).
    pub outcome: Option<(&'static str, Record)>,
}

impl SampleHistory {
    /// The outcome that ended the private period, if any (a pending sale did not).
    pub fn ended(&self) -> Option<&Record> {
        self.outcome
            .as_ref()
            .filter(|(kind, _)| *kind != "sale_agreed")
            .map(|(_, record)| record)
    }

    /// The anchor the last mark starts from: the last one, or for a company whose private
    /// period ended the last one before the outcome's day.
    pub fn mark_anchor(&self) -> Option<&Record> {
        let ended_on = self.ended().map(|o| o["occurred_on"].as_str());
        self.anchors
            .iter()
            .rfind(|a| ended_on.is_none_or(|end| a["occurred_on"].as_str() < end))
    }
}

/// Every company's effective history, by slug.
pub fn sample_histories() -> std::collections::BTreeMap<String, SampleHistory> {
    let mut by_company: std::collections::BTreeMap<String, Vec<Record>> = Default::default();
    for record in sample_effective_events() {
        by_company.entry(record["slug"].clone()).or_default().push(record);
    }
    let anchor_types = [
        "primary_round",
        "down_round",
        "tender_offer",
        "secondary_sale",
        "acquisition",
        "fund_mark",
    ];
    by_company
        .into_iter()
        .map(|(slug, mut records)| {
            // Date order, file order within a day (the sort is stable).
            records.sort_by(|a, b| a["occurred_on"].cmp(&b["occurred_on"]));
            let mut history = SampleHistory::default();
            let mut pending: Option<Record> = None;
            for record in records {
                let kind = record["event_type"].as_str();
                let ended = match kind {
                    "ipo" | "direct_listing" | "spac_listing" => Some("listed"),
                    "acquisition_closed" => Some("sold"),
                    "bankruptcy" => Some("bankrupt"),
                    "wind_down" => Some("wound_down"),
                    _ => None,
                };
                if let Some(ended) = ended {
                    history.outcome = Some((ended, record));
                    pending = None;
                    break;
                }
                let valued = record["valuation_usd"] != "0" || (kind == "fund_mark" && !history.anchors.is_empty());
                match kind {
                    "acquisition_terminated" => {
                        pending = None;
                        if history.anchors.iter().any(|a| a["event_type"] != "acquisition") {
                            history.anchors.retain(|a| a["event_type"] != "acquisition");
                        }
                    }
                    "acquisition" => pending = Some(record.clone()),
                    // A value reported after an agreement: the company is no longer waiting on it.
                    _ if anchor_types.contains(&kind) && record["valuation_usd"] != "0" => pending = None,
                    _ => {}
                }
                if anchor_types.contains(&kind) && valued {
                    history.anchors.push(record);
                }
            }
            if let Some(sale) = pending {
                history.outcome = Some(("sale_agreed", sale));
            }
            (slug, history)
        })
        .collect()
}

/// The bundled sample's `dataset_version`, read from its dataset.toml.
pub fn sample_version() -> String {
    let text = std::fs::read_to_string(sample_dir().join("dataset.toml")).expect("sample dataset.toml");
    let toml: toml::Value = toml::from_str(&text).expect("dataset.toml parses");
    toml["dataset_version"].as_str().expect("dataset_version").to_string()
}

/// The bundled sample's `as_of`, read from its dataset.toml: the last day an event may be dated.
pub fn sample_as_of() -> String {
    let text = std::fs::read_to_string(sample_dir().join("dataset.toml")).expect("sample dataset.toml");
    let toml: toml::Value = toml::from_str(&text).expect("dataset.toml parses");
    toml["as_of"].as_str().expect("as_of").to_string()
}

/// The day after a `YYYY-MM-DD` version: the version a test publishes next.
pub fn day_after(version: &str) -> String {
    marks_format::day::Day::parse(version)
        .expect("a YYYY-MM-DD version")
        .plus(1)
        .to_string()
}

/// The demo keys with every key's budget raised to `rate_per_min`, for tests that walk the
/// whole sample with each tier.
pub fn demo_keys_with_rate(rate_per_min: u32) -> String {
    let text = std::fs::read_to_string(sample_dir().join("demo-keys.toml")).expect("demo keys");
    text.lines()
        .map(|line| {
            if line.starts_with("hash = ") {
                format!("{line}\nrate_per_min = {rate_per_min}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}

/// Copies a dataset directory so a test can edit it: its three files and, where it has them,
/// its aliases, and the publication log it carries with the key that signed it.
pub fn copy_dataset(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for name in ["dataset.toml", "companies.csv", "events.csv"] {
        std::fs::copy(from.join(name), to.join(name)).expect("copy dataset file");
    }
    for name in ["aliases.csv", "publication-log.jsonl", "demo-signing-key.pem.pub"] {
        if from.join(name).exists() {
            std::fs::copy(from.join(name), to.join(name)).expect("copy dataset file");
        }
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    pub snapshot_path: PathBuf,
    pub keys_path: PathBuf,
    pub state: Arc<State>,
    app: Option<App>,
}

/// What a test server is started with: the production settings (`App::start` is the one
/// start-up path) and the files a test provides.
#[derive(Clone, Debug)]
pub struct Options {
    /// The snapshot to serve (default: the sample), copied into the server's directory.
    pub snapshot: Option<PathBuf>,
    /// The server's settings; the tests' defaults are [`test_settings`].
    pub settings: Settings,
    /// Written to a file and named by `--publisher-key`.
    pub publisher_key: Option<ed25519_dalek::VerifyingKey>,
    /// Written to a file and named by `--cursor-key`.
    pub cursor_secret: Option<Vec<u8>>,
    /// The keys file's text (default: the demo keys).
    pub keys_toml: Option<String>,
}

/// `marks serve`'s defaults, but on a free port, looking at its files every 50 ms, with a
/// short shutdown grace, no access log, and failed authentications hardly throttled.
pub fn test_settings() -> Settings {
    let mut settings = Settings::default();
    settings.listen.addr = SocketAddr::from(([127, 0, 0, 1], 0));
    settings.listen.public_base_url = Some("https://api.example.test".into());
    settings.data.watch_interval = Duration::from_millis(50);
    settings.connections.shutdown_grace = Duration::from_secs(5);
    settings.access.auth_failures_per_min = 10_000;
    settings.logging.no_access_log = true;
    settings
}

impl Default for Options {
    fn default() -> Options {
        Options {
            snapshot: None,
            settings: test_settings(),
            publisher_key: None,
            cursor_secret: None,
            keys_toml: None,
        }
    }
}

impl Options {
    /// The default options with the settings changed by `change`.
    pub fn settings(change: impl FnOnce(&mut Settings)) -> Options {
        let mut options = Options::default();
        change(&mut options.settings);
        options
    }
}

impl TestServer {
    /// The sample snapshot and the demo keys, on a free port.
    pub async fn start() -> TestServer {
        TestServer::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> TestServer {
        TestServer::launch(options, true).await
    }

    /// A server whose snapshot does not load: it starts anyway (`App::start_without_snapshot`).
    pub async fn start_without_snapshot(options: Options) -> TestServer {
        TestServer::launch(options, false).await
    }

    async fn launch(options: Options, snapshot_required: bool) -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let snapshot_path = dir.path().join("current.snap");
        let source = options.snapshot.clone().unwrap_or_else(|| sample_snapshot().to_owned());
        std::fs::copy(&source, &snapshot_path).expect("copy snapshot");
        let keys_path = dir.path().join("keys.toml");
        match &options.keys_toml {
            Some(text) => std::fs::write(&keys_path, text).expect("write keys"),
            None => std::fs::copy(sample_dir().join("demo-keys.toml"), &keys_path)
                .map(drop)
                .expect("copy keys"),
        }
        let mut settings = options.settings;
        settings.data.snapshot = Some(snapshot_path.clone());
        settings.data.keys = Some(keys_path.clone());
        if let Some(key) = options.publisher_key {
            use ed25519_dalek::pkcs8::EncodePublicKey;
            let path = dir.path().join("publisher.pem.pub");
            let pem = key.to_public_key_pem(Default::default()).expect("publisher key as PEM");
            std::fs::write(&path, pem).expect("write publisher key");
            settings.data.publisher_key = Some(path);
        }
        if let Some(secret) = options.cursor_secret {
            let path = dir.path().join("cursor.key");
            std::fs::write(&path, secret).expect("write cursor key");
            settings.access.cursor_key = Some(path);
        }
        let app = if snapshot_required {
            App::start(settings).await
        } else {
            App::start_without_snapshot(settings).await
        }
        .unwrap_or_else(|e| panic!("the server did not start: {e:#}"));
        TestServer {
            addr: app.addr,
            state: app.state.clone(),
            dir,
            snapshot_path,
            keys_path,
            app: Some(app),
        }
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> Reply {
        let headers: Vec<(&str, &str)> = key.map(|k| ("x-api-key", k)).into_iter().collect();
        request(self.addr, Method::GET, path, &headers).await
    }

    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        request(self.addr, Method::GET, path, headers).await
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Publishes a snapshot the way an operator does: copy beside the live file, then rename.
    pub fn publish(&self, snapshot: &Path) {
        let temp = self.dir.path().join(".incoming.snap");
        std::fs::copy(snapshot, &temp).expect("copy snapshot");
        std::fs::rename(&temp, &self.snapshot_path).expect("rename snapshot into place");
    }

    /// Waits until the server serves `dataset_version` (the watcher polls every 50 ms).
    pub async fn wait_for_dataset(&self, dataset_version: &str) {
        for _ in 0..200 {
            if self
                .state
                .snapshot()
                .is_some_and(|l| l.snapshot.header().dataset_version == dataset_version)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("server never served dataset {dataset_version}");
    }

    pub async fn stop(mut self) -> bool {
        match self.app.take() {
            Some(app) => app.shutdown().await,
            None => true,
        }
    }
}

/// A response as received.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().expect("ASCII header"))
    }

    pub fn header_u64(&self, name: &str) -> u64 {
        self.header(name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .parse()
            .unwrap_or_else(|_| panic!("{name} is not an integer"))
    }

    /// Asserts an RFC 9457 problem with all seven members and the given status and code.
    pub fn assert_problem(&self, status: u16, code: &str) -> serde_json::Value {
        assert_eq!(
            (self.status, self.header("content-type")),
            (status, Some("application/problem+json")),
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        let body = self.json();
        let members: Vec<&str> = body.as_object().expect("object").keys().map(String::as_str).collect();
        for member in ["type", "title", "status", "detail", "instance", "code", "request_id"] {
            assert!(members.contains(&member), "problem lacks {member}: {body}");
        }
        assert_eq!(body["code"], code, "{body}");
        assert_eq!(body["status"], status);
        assert_eq!(body["type"], format!("https://api.example.test/problems/{code}"));
        assert_eq!(
            Some(body["request_id"].as_str().expect("string")),
            self.header("x-request-id")
        );
        assert!(!body["detail"].as_str().expect("detail").is_empty());
        body
    }
}

/// One request on a fresh connection.
pub async fn request(addr: SocketAddr, method: Method, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut client = Client::connect(addr).await;
    client.send(method, path, headers).await
}

/// A keep-alive HTTP/1.1 connection.
pub struct Client {
    sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    addr: SocketAddr,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        Client::over(TcpStream::connect(addr).await.expect("connect")).await
    }

    /// A client on a stream already connected (from a chosen local address, say).
    pub async fn over(stream: TcpStream) -> Client {
        let addr = stream.peer_addr().expect("peer address");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(connection);
        Client { sender, addr }
    }

    pub async fn send(&mut self, method: Method, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.try_send(method, path, headers).await.expect("request failed")
    }

    pub async fn try_send(&mut self, method: Method, path: &str, headers: &[(&str, &str)]) -> Result<Reply, String> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string());
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(Empty::new()).map_err(|e| e.to_string())?;
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = self.sender.send_request(request).await.map_err(|e| e.to_string())?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok(Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        })
    }
}

/// Sends raw bytes and returns everything the server answers until it closes or goes quiet.
pub async fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The status code of the first response in a raw exchange.
pub fn raw_status(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {response:?}"))
}

/// The value of one series (a metric name with its labels, exactly as written) in Prometheus
/// text, compared as a whole line so that `x_total 1` never passes for `x_total 10`.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .find(|(name, _)| *name == series)
        .and_then(|(_, value)| value.parse().ok())
}

/// A small synthetic dataset and `versions` successors, each one day newer with one more
/// event, built as a chain with `--previous` (so every step also passes the append-only check).
pub fn build_versions(dir: &Path, versions: usize) -> Vec<(String, PathBuf)> {
    build_chain(dir, versions, |v, source, version| {
        append_line(
            &source.join("events.csv"),
            &format!(
                "v{v:04},synth-000001,tender_offer,{version},{},https://example.com/v,",
                1_000_000_000 + v
            ),
        )
    })
}

/// A chain of `versions` builds of a 30-company synthetic dataset, each one day newer than the
/// last (dataset_version and as_of both), each built with `--previous`. Before each build but
/// the first, `edit(v, source_dir, version)` changes the source as that version should.
pub fn build_chain(dir: &Path, versions: usize, edit: impl Fn(usize, &Path, &str)) -> Vec<(String, PathBuf)> {
    let source = dir.join("source");
    let mut options = marks_builder::synth::SynthOptions::new(30, 3);
    options.events = 150;
    options.history_days = (200, 400);
    marks_builder::synth::generate(&options, &source).unwrap();
    let toml = std::fs::read_to_string(source.join("dataset.toml")).unwrap();
    let as_of = marks_format::day::Day::parse("2026-06-30").unwrap();
    let mut built: Vec<(String, PathBuf)> = Vec::new();
    for v in 0..versions {
        let version = as_of.plus(v as i32).to_string();
        let text = toml
            .replace(
                "dataset_version = \"2026-06-30\"",
                &format!("dataset_version = \"{version}\""),
            )
            .replace("as_of = \"2026-06-30\"", &format!("as_of = \"{version}\""));
        std::fs::write(source.join("dataset.toml"), text).unwrap();
        if v > 0 {
            edit(v, &source, &version);
        }
        let out = dir.join(format!("v{v:02}.snap"));
        try_build(&source, &out, built.last().map(|(_, p)| p.as_path())).unwrap();
        built.push((version, out));
    }
    built
}

/// Appends one line to a text file.
pub fn append_line(path: &Path, line: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
}

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

/// A self-signed certificate for `localhost` in files a server can be given, and a client
/// that trusts it.
pub struct TestTls {
    _dir: tempfile::TempDir,
    pub cert: PathBuf,
    pub key: PathBuf,
    roots: rustls::RootCertStore,
}

impl TestTls {
    pub fn new() -> TestTls {
        let dir = tempfile::tempdir().expect("temp dir");
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert, certified.cert.pem()).expect("write certificate");
        std::fs::write(&key, certified.key_pair.serialize_pem()).expect("write key");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certified.cert.der().clone()).expect("trust the certificate");
        TestTls {
            _dir: dir,
            cert,
            key,
            roots,
        }
    }

    /// The server's settings serve TLS with this certificate.
    pub fn serve(&self, settings: &mut Settings) {
        settings.listen.tls_cert = Some(self.cert.clone());
        settings.listen.tls_key = Some(self.key.clone());
    }

    /// A TLS connection to `addr` offering `alpn` (such as `h2`).
    pub async fn connect(&self, addr: SocketAddr, alpn: &[u8]) -> tokio_rustls::client::TlsStream<TcpStream> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(self.roots.clone())
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.to_vec()];
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(addr).await.expect("connect");
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("server name");
        let tls = connector.connect(name, tcp).await.expect("TLS handshake");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(alpn));
        tls
    }
}
