//! The HTTP server: accepting connections, connection hygiene, TLS and HTTP/2, graceful
//! shutdown. Every request is handed to `service::handle`.
//!
//! Connection hygiene: at most `max_connections` at once (further clients wait in the listen
//! backlog), a maximum header size per request, and per connection an idle timeout (no bytes
//! either way) and a request-head timeout (bytes arriving, no answer), plus a TLS handshake
//! timeout.
//! Shutdown: stop accepting, let in-flight requests finish within a bound, then return.

use std::cell::RefCell;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Sleep;

use crate::reload;
use crate::service::{self, Connection, Response};
use crate::state::State;

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
    pub shutdown_grace: Duration,
    /// How often the snapshot and keys files are checked for replacement.
    pub watch_interval: Duration,
    pub access_log: bool,
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
            shutdown_grace: Duration::from_secs(10),
            watch_interval: Duration::from_millis(500),
            access_log: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
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
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ServerError::Tls(format!("{}: cannot read certificates: {e}", files.cert.display())))?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
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
    http2: hyper::server::conn::http2::Builder<TokioExecutor>,
    auto: hyper_util::server::conn::auto::Builder<TokioExecutor>,
}

/// Binds and starts serving on the current runtime, with the reload watcher running.
pub async fn start(state: Arc<State>, config: ServerConfig) -> Result<RunningServer, ServerError> {
    let tls = config.tls.as_ref().map(|f| tls_acceptor(f, config.http2)).transpose()?;
    let listener = TcpListener::bind(config.addr)
        .await
        .map_err(|source| ServerError::Bind {
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
    let mut http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    http2
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX))
        // No server pings: they would keep an unused connection busy past the idle deadline.
        .keep_alive_interval(None);
    let mut auto = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    auto.http1()
        .header_read_timeout(None)
        .max_buf_size(config.max_header_bytes.max(8192));
    auto.http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX));
    let (shutdown, shutdown_rx) = watch::channel(false);
    reload::spawn_watcher(state.clone(), config.watch_interval, shutdown_rx.clone());
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

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) -> bool {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
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
    let access_log = shared.config.access_log;
    // Requests of one connection are answered one at a time, inside `call`.
    let connection = RefCell::new(Connection::default());
    let service = service_fn(move |request: hyper::Request<Incoming>| {
        let response = respond(&state, &request, peer, &mut connection.borrow_mut(), access_log);
        std::future::ready(Ok::<Response, Infallible>(response))
    });
    let stream = ConnectionGuard::new(stream, shared.config.idle_timeout, shared.config.header_read_timeout);
    match &shared.tls {
        None if shared.config.http2 => {
            let builder = shared.auto.clone();
            watcher
                .watch(builder.serve_connection(TokioIo::new(stream), service))
                .await
        }
        None => Ok(watcher
            .watch(shared.http1.serve_connection(TokioIo::new(stream), service))
            .await?),
        Some(acceptor) => {
            let mut tls = tokio::time::timeout(shared.config.tls_handshake_timeout, acceptor.accept(stream))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            if h2 {
                tls.get_mut().0.idle_deadline_only();
            }
            let io = TokioIo::new(tls);
            if h2 {
                Ok(watcher.watch(shared.http2.serve_connection(io, service)).await?)
            } else {
                Ok(watcher.watch(shared.http1.serve_connection(io, service)).await?)
            }
        }
    }
}

fn respond(
    state: &State,
    request: &hyper::Request<Incoming>,
    peer: SocketAddr,
    connection: &mut Connection,
    access_log: bool,
) -> Response {
    let (response, outcome) = service::handle_with_outcome(state, request, peer.ip(), connection);
    if access_log {
        let headers = response.headers();
        tracing::info!(
            target: "marks::access",
            request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or(""),
            key_id = outcome.caller.as_ref().map_or("-", |caller| &caller.key_id),
            operation = outcome.operation.name(),
            method = %request.method(),
            path = request.uri().path(),
            status = response.status().as_u16(),
            bytes = outcome.bytes,
            latency_us = outcome.latency.as_micros() as u64,
            peer = %peer.ip(),
        );
    }
    response
}

/// Both per-connection deadlines on one timer per connection, none per request:
/// - idle: no byte moved in either direction for `idle` (a keep-alive connection nobody uses,
///   a client that stopped sending, or one that stopped reading a response);
/// - unanswered: bytes keep arriving but no response byte goes out for `head` (a request head
///   trickled in slowly, the slowloris pattern).
///
/// I/O only sets flags (no clock read, no timer update on the hot path); the timer ticks every
/// half of the shorter deadline and counts ticks, so a deadline is enforced within half a
/// deadline after it passes.
///
/// HTTP/2 connections get the idle deadline only: a client legitimately sends frames that need
/// no answer (window updates, settings and ping acknowledgements), and hyper's HTTP/2 layer
/// bounds header sizes and pings idle peers itself.
struct ConnectionGuard<S> {
    inner: S,
    timer: Pin<Box<Sleep>>,
    tick: Duration,
    idle_limit: u32,
    head_limit: u32,
    moved: bool,
    awaiting_response: bool,
    /// Nothing read yet: the first bytes tell an HTTP/2 prior-knowledge client.
    first_read: bool,
    idle_ticks: u32,
    unanswered_ticks: u32,
}

/// What an HTTP/2 client sends first over plain TCP (RFC 9113 3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl<S> ConnectionGuard<S> {
    fn new(inner: S, idle: Duration, head: Duration) -> ConnectionGuard<S> {
        let tick = (idle.min(head) / 2).max(Duration::from_millis(10));
        let ticks = |deadline: Duration| (deadline.as_nanos() / tick.as_nanos()).max(1) as u32;
        ConnectionGuard {
            inner,
            timer: Box::pin(tokio::time::sleep(tick)),
            tick,
            idle_limit: ticks(idle),
            head_limit: ticks(head),
            moved: false,
            awaiting_response: false,
            first_read: true,
            idle_ticks: 0,
            unanswered_ticks: 0,
        }
    }

    /// From now on only the idle deadline applies (an HTTP/2 connection).
    fn idle_deadline_only(&mut self) {
        self.head_limit = u32::MAX;
    }

    /// Counts elapsed ticks; true when a deadline has passed.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        while self.timer.as_mut().poll(cx).is_ready() {
            self.idle_ticks = if self.moved { 0 } else { self.idle_ticks + 1 };
            self.unanswered_ticks = if self.awaiting_response {
                self.unanswered_ticks.saturating_add(1)
            } else {
                0
            };
            self.moved = false;
            if self.idle_ticks >= self.idle_limit || self.unanswered_ticks >= self.head_limit {
                return true;
            }
            let next = tokio::time::Instant::now() + self.tick;
            self.timer.as_mut().reset(next);
        }
        false
    }

    /// Passes a ready result through, noting activity; turns a passed deadline into an error.
    fn track<T>(&mut self, poll: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match poll {
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection idle, or request unanswered, for too long",
            ))),
            other => other,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ConnectionGuard<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            if this.first_read {
                this.first_read = false;
                let read = &buf.filled()[before..];
                if read.len() >= 3 && H2_PREFACE.starts_with(&read[..read.len().min(H2_PREFACE.len())]) {
                    this.idle_deadline_only();
                }
            }
            this.moved = true;
            this.awaiting_response = true;
        }
        this.track(poll, cx)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ConnectionGuard<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            this.moved = true;
            this.awaiting_response = false;
        }
        this.track(poll, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            this.moved = true;
            this.awaiting_response = false;
        }
        this.track(poll, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
