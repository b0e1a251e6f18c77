//! Servers started in this process through `App::start` (the one start-up path) on
//! 127.0.0.1:0, and an HTTP/1.1 client that reports status, headers and body as they came off
//! the wire.

use super::*;

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

    /// Publishes a snapshot the way an operator does: copy beside the live file, then rename.
    pub fn publish(&self, snapshot: &Path) {
        let temp = self.dir.path().join(".incoming.snap");
        std::fs::copy(snapshot, &temp).expect("copy snapshot");
        std::fs::rename(&temp, &self.snapshot_path).expect("rename snapshot into place");
    }

    /// Waits until the server serves `dataset_version` (the watcher polls every 50 ms). A load
    /// takes a time that depends on the machine (a debug build checking a 46 MB file on a busy
    /// runner took over 5 s), so the wait is long; a refusal does not end it (a file copied in
    /// slowly is refused until it is whole), and the last one is said if it runs out.
    pub async fn wait_for_dataset(&self, dataset_version: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while std::time::Instant::now() < deadline {
            if self
                .state
                .snapshot()
                .is_some_and(|l| l.snapshot.header().dataset_version == dataset_version)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let last = self.state.snapshots.last_refusal().map(|r| r.reason);
        panic!("server never served dataset {dataset_version} (last refusal: {last:?})");
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
