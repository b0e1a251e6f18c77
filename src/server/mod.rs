//! The HTTP server: the accept loop, connection hygiene, TLS and HTTP/2, graceful shutdown.
//! Every request is handed to `api::handle`.
//!
//! Connection hygiene: at most `max_connections` at once (further clients wait in the listen
//! backlog), a maximum header size per request, and per connection the deadlines of
//! [`ConnectionGuard`] (idle, and one request head arriving too slowly), plus a TLS handshake
//! timeout. HTTP/2 streams are each held to a stall deadline, and the server to a budget of
//! them ([`crate::server::h2_streams`]).
//! Shutdown: stop accepting, let in-flight requests finish within a bound, then return.

pub mod access_log;
pub mod connection_guard;
pub mod h2_streams;

use std::cell::RefCell;
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::Either;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use marks_builder::regular_file;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

use crate::api::access;
use crate::api::state::State;
use crate::api::{self, Budgeting, Connection, Response};
use crate::reload;
use crate::response::body::ResponseBody;
use crate::server::access_log::{AccessLog, Entry};
use crate::server::connection_guard::{ConnectionGuard, Deadlines};
use crate::server::h2_streams::WatchingExecutor;

/// Certificate chain and private key, PEM.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub addr: SocketAddr,
    pub tls: Option<TlsFiles>,
    /// Offer HTTP/2: by ALPN over TLS, by prior knowledge (h2c) over plain TCP.
    pub http2: bool,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub tls_handshake_timeout: Duration,
    pub max_header_bytes: usize,
    pub max_connections: usize,
    /// Connections one client address (IPv6: one /64) may hold at once; more are closed at
    /// accept. Behind a proxy every client shares its address: set it there instead.
    pub max_connections_per_address: usize,
    /// Connections the kernel may queue before they are accepted (capped by
    /// `net.core.somaxconn`).
    pub listen_backlog: u32,
    /// HTTP/2 streams one connection may have open at once.
    pub h2_max_concurrent_streams: u32,
    /// Bytes HTTP/2 may buffer per stream for a peer that does not read.
    pub h2_max_send_buffer: usize,
    /// How long an HTTP/2 stream may go without its response making progress (a piece of at
    /// most 16 KiB taken by the peer) before it is reset.
    pub h2_stream_timeout: Duration,
    /// HTTP/2 streams the whole server holds at once; past it new ones get 503.
    pub max_h2_streams: usize,
    /// PING and SETTINGS frames an HTTP/2 peer may send per second.
    pub control_frames_per_sec: u32,
    pub shutdown_grace: Duration,
    /// How often the snapshot and keys files are checked for replacement.
    pub watch_interval: Duration,
    /// Where each request's line goes; `None`: no access log.
    pub access_log: Option<AccessLog>,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            tls: None,
            http2: false,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            tls_handshake_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            max_connections: 10_000,
            max_connections_per_address: 256,
            listen_backlog: 4096,
            h2_max_concurrent_streams: 100,
            h2_max_send_buffer: 64 * 1024,
            h2_stream_timeout: Duration::from_secs(10),
            max_h2_streams: 20_000,
            control_frames_per_sec: 50,
            shutdown_grace: Duration::from_secs(10),
            watch_interval: Duration::from_millis(500),
            access_log: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The OS error is the source, printed once after this line by whoever shows the chain.
    #[error("cannot listen on {addr}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("TLS: {0}")]
    Tls(String),
}

/// A server running on the current tokio runtime.
#[derive(Debug)]
pub struct RunningServer {
    pub addr: SocketAddr,
    pub state: Arc<State>,
    shutdown: watch::Sender<bool>,
    accept_loop: JoinHandle<bool>,
}

impl RunningServer {
    /// Stops accepting and waits for in-flight requests (up to the grace period). Returns
    /// whether every connection finished in time.
    pub async fn shutdown(self) -> bool {
        let _ = self.shutdown.send(true);
        self.wait().await
    }

    /// Waits until the server has been shut down (through a `shutdown_trigger`) and drained.
    pub async fn wait(self) -> bool {
        self.accept_loop.await.unwrap_or(false)
    }

    /// A handle that begins shutdown when sent `true`, for signal handlers.
    pub fn shutdown_trigger(&self) -> watch::Sender<bool> {
        self.shutdown.clone()
    }
}

fn tls_acceptor(files: &TlsFiles, http2: bool) -> Result<tokio_rustls::TlsAcceptor, ServerError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    // Read as regular files (never waiting on a FIFO or a device), then parsed.
    let read = |path: &std::path::Path, what: &str| {
        regular_file::read(path).map_err(|e| ServerError::Tls(format!("{}: cannot read {what}: {e}", path.display())))
    };
    let cert_pem = read(&files.cert, "certificates")?;
    let key_pem = read(&files.key, "the private key")?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ServerError::Tls(format!("{}: cannot read certificates: {e}", files.cert.display())))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| ServerError::Tls(format!("{}: cannot read the private key: {e}", files.key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| ServerError::Tls(e.to_string()))?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// What every connection task needs.
struct Shared {
    state: Arc<State>,
    config: ServerConfig,
    tls: Option<tokio_rustls::TlsAcceptor>,
    http1: hyper::server::conn::http1::Builder,
    http2: hyper::server::conn::http2::Builder<WatchingExecutor>,
    auto: hyper_util::server::conn::auto::Builder<WatchingExecutor>,
}

/// Binds and starts serving on the current runtime, with the reload watcher running.
pub async fn start(state: Arc<State>, config: ServerConfig) -> Result<RunningServer, ServerError> {
    let tls = config.tls.as_ref().map(|f| tls_acceptor(f, config.http2)).transpose()?;
    let listener = listen(config.addr, config.listen_backlog).map_err(|source| ServerError::Bind {
        addr: config.addr,
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| ServerError::Bind {
        addr: config.addr,
        source,
    })?;
    // Header read and idle deadlines are enforced per connection by `ConnectionGuard`; hyper's
    // own header timer would arm a timer for every request.
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .header_read_timeout(None)
        .max_buf_size(config.max_header_bytes.max(8192))
        .keep_alive(true);
    state.h2_streams.set_limit(config.max_h2_streams);
    let streams = WatchingExecutor::new(state.h2_streams.clone(), config.h2_stream_timeout);
    let mut http2 = hyper::server::conn::http2::Builder::new(streams.clone());
    http2
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX))
        // No server pings: they would keep an unused connection busy past the idle deadline.
        .keep_alive_interval(None)
        .max_concurrent_streams(config.h2_max_concurrent_streams)
        .max_send_buf_size(config.h2_max_send_buffer);
    let mut auto = hyper_util::server::conn::auto::Builder::new(streams);
    auto.http1()
        .header_read_timeout(None)
        .max_buf_size(config.max_header_bytes.max(8192));
    auto.http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX))
        .keep_alive_interval(None)
        .max_concurrent_streams(config.h2_max_concurrent_streams)
        .max_send_buf_size(config.h2_max_send_buffer);
    let (shutdown, shutdown_rx) = watch::channel(false);
    reload::spawn_watcher(state.clone(), config.watch_interval, shutdown_rx.clone());
    reload::spawn_source_poller(state.clone(), shutdown_rx.clone());
    let shared = Arc::new(Shared {
        state: state.clone(),
        config,
        tls,
        http1,
        http2,
        auto,
    });
    let accept_loop = tokio::spawn(accept_loop(listener, shared, shutdown_rx));
    Ok(RunningServer {
        addr,
        state,
        shutdown,
        accept_loop,
    })
}

/// A listening socket with the backlog asked for (std and tokio fix it at 128 and 1024).
fn listen(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog.max(1))
}

/// Connections open per client address group, to hold each to its cap.
#[derive(Debug, Default)]
struct PerAddress {
    open: std::sync::Mutex<std::collections::HashMap<IpAddr, usize>>,
}

/// One connection's place in its address's count, given back when the connection ends.
struct AddressSlot {
    counts: Arc<PerAddress>,
    group: IpAddr,
}

impl PerAddress {
    fn take(counts: &Arc<PerAddress>, peer: IpAddr, cap: usize) -> Option<AddressSlot> {
        let group = access::throttle_group(peer);
        let mut open = counts.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = open.entry(group).or_insert(0);
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            counts: counts.clone(),
            group,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.counts.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = open.get_mut(&self.group) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.group);
            }
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) -> bool {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    let per_address = Arc::new(PerAddress::default());
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => break,
        };
        let cap = shared.config.max_connections_per_address;
        let Some(address_slot) = PerAddress::take(&per_address, peer.ip(), cap) else {
            // Closed at once: one address may not take every slot.
            shared
                .state
                .metrics
                .connections_refused_per_address
                .fetch_add(1, Relaxed);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let metrics = &shared.state.metrics;
            metrics.connections_accepted.fetch_add(1, Relaxed);
            metrics.connections_open.fetch_add(1, Relaxed);
            if let Err(err) = serve_connection(stream, peer, &shared, watcher).await {
                metrics.connection_errors.fetch_add(1, Relaxed);
                tracing::debug!(peer = %peer, error = %err, "connection ended with an error");
            }
            metrics.connections_open.fetch_sub(1, Relaxed);
            drop(address_slot);
            drop(permit);
        });
    }
    // Closing the listener refuses new connections from here on.
    drop(listener);
    let grace = shared.config.shutdown_grace;
    tokio::time::timeout(grace, graceful.shutdown()).await.is_ok()
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    watcher: Watcher,
) -> Result<(), BoxError> {
    let state = shared.state.clone();
    let access_log = shared.config.access_log.clone();
    // The budget step is the one that may wait (for the shared store); everything before it
    // runs inside `call`, where the connection's remembered key is borrowed.
    let connection = RefCell::new(Connection::default());
    let service = service_fn(move |request: hyper::Request<Incoming>| {
        let budgeting = if state.shared_budgets.is_some() {
            Budgeting::Shared
        } else {
            Budgeting::Local
        };
        let started = Instant::now();
        let first = api::exchange(
            &state,
            &request,
            peer.ip(),
            &mut connection.borrow_mut(),
            budgeting,
            started,
        );
        // Over HTTP/2 a body is handed over in paced pieces, the progress its stream's stall
        // deadline watches for.
        let h2 = request.version() == http::Version::HTTP_2;
        let sent = move |response: Response| {
            if h2 {
                response.map(ResponseBody::paced)
            } else {
                response
            }
        };
        match first {
            Ok((response, outcome)) => {
                log_access(&state, &request, peer, &response, &outcome, access_log.as_ref());
                Either::Left(std::future::ready(Ok::<Response, Infallible>(sent(response))))
            }
            Err(ask) => {
                let state = state.clone();
                let access_log = access_log.clone();
                let mut connection = connection.borrow().clone();
                Either::Right(Box::pin(async move {
                    let (response, outcome) = answer_with_store(&state, &request, peer, &mut connection, ask).await;
                    log_access(&state, &request, peer, &response, &outcome, access_log.as_ref());
                    Ok::<Response, Infallible>(sent(response))
                }))
            }
        }
    });
    let deadlines = Deadlines {
        idle: shared.config.idle_timeout,
        head: shared.config.header_read_timeout,
        control_frames_per_sec: shared.config.control_frames_per_sec,
        // Past the stream deadline, so every stream still in its task has been reset by then:
        // what is left is a tail h2 holds with no task to reset it.
        response_tail: shared.config.h2_stream_timeout.saturating_mul(2),
    };
    match &shared.tls {
        None if shared.config.http2 => {
            let stream = ConnectionGuard::new(stream, deadlines);
            let builder = shared.auto.clone();
            watcher
                .watch(builder.serve_connection(TokioIo::new(stream), service))
                .await
        }
        None => {
            let stream = ConnectionGuard::new(stream, deadlines);
            Ok(watcher
                .watch(shared.http1.serve_connection(TokioIo::new(stream), service))
                .await?)
        }
        Some(acceptor) => {
            // A handshake is held to the head deadline too: a socket that never completes one
            // is as silent as one that never sends a head.
            let handshake_deadline = shared.config.tls_handshake_timeout.min(deadlines.head);
            let tls = tokio::time::timeout(handshake_deadline, acceptor.accept(stream))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            // Above TLS, the guard sees the HTTP/2 preface and frames, as over plain TCP.
            let io = TokioIo::new(ConnectionGuard::new(tls, deadlines));
            if h2 {
                Ok(watcher.watch(shared.http2.serve_connection(io, service)).await?)
            } else {
                Ok(watcher.watch(shared.http1.serve_connection(io, service)).await?)
            }
        }
    }
}

/// Answers a request that stopped to ask the shared store, once the store has answered (or
/// failed to in time).
async fn answer_with_store(
    state: &State,
    request: &hyper::Request<Incoming>,
    peer: SocketAddr,
    connection: &mut Connection,
    mut ask: api::StoreAsk,
) -> (Response, api::Outcome) {
    loop {
        let decision = match &state.shared_budgets {
            Some(store) => store.spend(&ask.bucket, ask.limit).await,
            None => None,
        };
        let budgeting = Budgeting::Answered(ask.bucket, decision);
        match api::exchange(state, request, peer.ip(), connection, budgeting, ask.started) {
            Ok(answered) => return answered,
            // An answered request asks again only if it reached a different bucket (a keys
            // reload in between): ask for that one.
            Err(next) => ask = next,
        }
    }
}

fn log_access(
    state: &State,
    request: &hyper::Request<Incoming>,
    peer: SocketAddr,
    response: &Response,
    outcome: &api::Outcome,
    access_log: Option<&AccessLog>,
) {
    let Some(log) = access_log else {
        return;
    };
    let entry = Entry {
        request_id: response
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or(""),
        key_id: outcome.caller.as_ref().map_or("-", |caller| &caller.key_id),
        operation: outcome.operation.name(),
        method: request.method().as_str(),
        path: request.uri().path(),
        status: response.status().as_u16(),
        bytes: outcome.bytes,
        latency_us: outcome.latency.as_micros() as u64,
        peer: peer.ip(),
    };
    if !log.record(&entry) {
        state.metrics.access_log_dropped.fetch_add(1, Relaxed);
    }
}
