//! The HTTP server: the accept loop, connection hygiene, TLS and HTTP/2, graceful shutdown.
//! Every request is handed to `api::exchange` (the shared budget store asked when it stops for
//! it), and its access-log line written.
//!
//! Connection hygiene: at most `max_connections` at once (further clients wait in the listen
//! backlog), a maximum header size per request, and per connection the deadlines of
//! [`ConnectionGuard`] (idle, and one request head arriving too slowly), plus a TLS handshake
//! timeout. HTTP/2 streams are each held to a stall deadline, and the server to a budget of
//! them ([`crate::server::h2_streams`]), and what an HTTP/2 connection writes is written out
//! once per poll of its task ([`crate::server::write_batch`]).
//! Shutdown: stop accepting, let in-flight requests finish within a bound, then return.

pub mod access_log;
pub mod connection_guard;
pub mod h2_streams;
pub mod tls;
pub mod write_batch;

use std::cell::RefCell;
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::Either;
use http::header::{self, HeaderValue};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

use crate::api::access;
use crate::api::state::State;
use crate::api::{self, Budgeting, Connection, Response, Step};
use crate::mcp::hosted::McpEndpoint;
use crate::response::body::ResponseBody;
use crate::server::access_log::{AccessLog, Entry};
use crate::server::connection_guard::{ConnectionGuard, Deadlines};
use crate::server::h2_streams::WatchingExecutor;
use crate::server::write_batch::{TaskPolls, WriteBatch};
use crate::settings::{Agents, Connections, Http2, Listen};

/// What the server is told: its sections of the settings, the TLS acceptor resolved from the
/// files they name, and where each request's line goes.
#[derive(Clone, Debug)]
pub struct ServerSetup {
    pub listen: Listen,
    pub connections: Connections,
    pub http2: Http2,
    pub tls: Option<tls::ServerTls>,
    /// `None`: no access log.
    pub access_log: Option<AccessLog>,
    /// Whether and how `/mcp` is answered.
    pub agents: Agents,
}

/// A TLS handshake is held to this, and to the head deadline when that is shorter.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The OS error is the source, printed once after this line by whoever shows the chain.
    #[error("cannot listen on {addr}")]
    Bind { addr: SocketAddr, source: io::Error },
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

/// What every connection task needs.
struct ConnectionContext {
    state: Arc<State>,
    config: ServerSetup,
    /// Over TLS, the `Strict-Transport-Security` every response carries.
    hsts: Option<HeaderValue>,
    http1: hyper::server::conn::http1::Builder,
    http2: hyper::server::conn::http2::Builder<WatchingExecutor>,
    auto: hyper_util::server::conn::auto::Builder<WatchingExecutor>,
    /// `/mcp`, when `--mcp` is given.
    mcp: Option<Arc<McpEndpoint>>,
}

/// Binds the listening socket: first, so that what depends on the address (the public base URL
/// when none is given, and its port when port 0 was asked for) knows it. Connections wait in
/// the backlog until [`start`] accepts them.
pub fn bind(listen: &Listen) -> Result<TcpListener, ServerError> {
    let addr = listen.addr;
    self::listen(addr, listen.listen_backlog).map_err(|source| ServerError::Bind { addr, source })
}

/// Starts serving on the current runtime on a socket from [`bind`]. Spawns nothing but the
/// accept loop and its connections: the watcher and the object-store poller are the app's.
pub async fn start(
    state: Arc<State>,
    listener: TcpListener,
    config: ServerSetup,
) -> Result<RunningServer, ServerError> {
    let addr = config.listen.addr;
    let addr = listener
        .local_addr()
        .map_err(|source| ServerError::Bind { addr, source })?;
    let max_header_bytes = config.connections.max_header_bytes as usize;
    let h2 = &config.http2;
    // Header read and idle deadlines are enforced per connection by `ConnectionGuard`; hyper's
    // own header timer would arm a timer for every request.
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .header_read_timeout(None)
        .max_buf_size(max_header_bytes)
        .keep_alive(true);
    state.budgets.streams.set_limit(h2.h2_max_streams as usize);
    let streams = WatchingExecutor::new(state.budgets.streams.clone(), h2.h2_stream_timeout);
    // The HTTP/2 settings, for the builder of connections that chose HTTP/2 by ALPN and for the
    // one that tells it by its preface (hyper and hyper-util each have their own builder type).
    macro_rules! http2_settings {
        ($builder:expr) => {
            $builder
                .timer(TokioTimer::new())
                .max_header_list_size(config.connections.max_header_bytes)
                // No server pings: they would keep an unused connection busy past the idle deadline.
                .keep_alive_interval(None)
                .max_concurrent_streams(h2.h2_max_concurrent_streams)
                .max_send_buf_size(h2.h2_max_send_buffer as usize)
        };
    }
    let mut http2 = hyper::server::conn::http2::Builder::new(streams.clone());
    http2_settings!(http2);
    let mut auto = hyper_util::server::conn::auto::Builder::new(streams);
    auto.http1().header_read_timeout(None).max_buf_size(max_header_bytes);
    http2_settings!(auto.http2());
    let (shutdown, shutdown_rx) = watch::channel(false);
    let hsts_secs = config.listen.hsts_max_age.as_secs();
    let hsts = (config.tls.is_some() && hsts_secs > 0)
        .then(|| HeaderValue::try_from(format!("max-age={hsts_secs}")).ok())
        .flatten();
    let mcp = config.agents.mcp.then(|| {
        let head_deadline = config.connections.header_read_timeout;
        Arc::new(McpEndpoint::new(state.clone(), &config.agents, head_deadline))
    });
    let shared = Arc::new(ConnectionContext {
        state: state.clone(),
        config,
        hsts,
        http1,
        http2,
        auto,
        mcp,
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

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<ConnectionContext>,
    mut shutdown: watch::Receiver<bool>,
) -> bool {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(shared.config.connections.max_connections as usize));
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
        let cap = shared.config.connections.max_connections_per_address as usize;
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
    let grace = shared.config.connections.shutdown_grace;
    tokio::time::timeout(grace, graceful.shutdown()).await.is_ok()
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response that waits for something (the shared store, an MCP tool).
type Answering = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, Infallible>> + Send>>;

/// What answers a connection's requests: `/mcp` to the MCP endpoint, everything else through
/// the API's exchange, whose one step that may wait (the shared budget store) becomes a future
/// of its own; each answer logged, marked HSTS where configured, and paced over HTTP/2.
fn request_handler(
    shared: &ConnectionContext,
    peer: SocketAddr,
) -> impl Fn(hyper::Request<Incoming>) -> Either<std::future::Ready<Result<Response, Infallible>>, Answering> {
    let state = shared.state.clone();
    let access_log = shared.config.access_log.clone();
    let hsts = shared.hsts.clone();
    let mcp = shared.mcp.clone();
    // The budget step is the one that may wait (for the shared store); everything before it
    // runs inside `call`, where the connection's remembered key is borrowed.
    let connection = RefCell::new(Connection::default());
    move |request: hyper::Request<Incoming>| {
        // Over HTTP/2 a body is handed over in paced pieces, the progress its stream's stall
        // deadline watches for.
        let h2 = request.version() == http::Version::HTTP_2;
        let hsts = hsts.clone();
        let sent = move |mut response: Response| {
            if let Some(hsts) = hsts {
                response.headers_mut().insert(header::STRICT_TRANSPORT_SECURITY, hsts);
            }
            if h2 {
                response.map(ResponseBody::paced)
            } else {
                response
            }
        };
        if let Some(mcp) = mcp.as_ref().filter(|_| request.uri().path() == McpEndpoint::PATH) {
            let (state, mcp, access_log) = (state.clone(), mcp.clone(), access_log.clone());
            let answering: Answering = Box::pin(async move {
                let method = request.method().clone();
                let path = request.uri().path().to_string();
                let (response, outcome) = mcp.answer(request, peer).await;
                log_entry(
                    &state,
                    method.as_str(),
                    &path,
                    peer,
                    &response,
                    &outcome,
                    access_log.as_ref(),
                );
                Ok::<Response, Infallible>(sent(response))
            });
            return Either::Right(answering);
        }
        let budgeting = Budgeting::of(&state);
        let started = Instant::now();
        let first = api::exchange(
            &state,
            &request,
            peer.ip(),
            &mut connection.borrow_mut(),
            budgeting,
            started,
        );
        match first {
            Step::Answered(response, outcome) => {
                log_access(&state, &request, peer, &response, &outcome, access_log.as_ref());
                Either::Left(std::future::ready(Ok::<Response, Infallible>(sent(response))))
            }
            Step::AskStore(ask) => {
                let state = state.clone();
                let access_log = access_log.clone();
                let mut connection = connection.borrow().clone();
                let answering: Answering = Box::pin(async move {
                    let (response, outcome) =
                        api::answer_with_store(&state, &request, peer.ip(), &mut connection, ask).await;
                    log_access(&state, &request, peer, &response, &outcome, access_log.as_ref());
                    Ok::<Response, Infallible>(sent(response))
                });
                Either::Right(answering)
            }
        }
    }
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &ConnectionContext,
    watcher: Watcher,
) -> Result<(), BoxError> {
    let service = service_fn(request_handler(shared, peer));
    let deadlines = Deadlines {
        idle: shared.config.connections.idle_timeout,
        head: shared.config.connections.header_read_timeout,
        control_frames_per_sec: shared.config.http2.h2_max_control_frames_per_sec,
        // Past the stream deadline, so every stream still in its task has been reset by then:
        // what is left is a tail h2 holds with no task to reset it.
        response_tail: shared.config.http2.h2_stream_timeout.saturating_mul(2),
    };
    match &shared.config.tls {
        None if shared.config.listen.http2 => {
            let polls = TaskPolls::default();
            // The guard decides HTTP/2 or HTTP/1.1 from the first bytes, whatever their read
            // boundaries, before hyper-util sees any; the batch asks it.
            let stream = WriteBatch::new(ConnectionGuard::new(stream, deadlines), polls.clone());
            let builder = shared.auto.clone();
            polls
                .count(watcher.watch(builder.serve_connection(TokioIo::new(stream), service)))
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
            let handshake_deadline = TLS_HANDSHAKE_TIMEOUT.min(deadlines.head);
            let tls = tokio::time::timeout(handshake_deadline, acceptor.0.accept(stream))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            // Above TLS, the guard sees the HTTP/2 preface and frames, as over plain TCP.
            let guarded = ConnectionGuard::new(tls, deadlines);
            if h2 {
                let polls = TaskPolls::default();
                let io = TokioIo::new(WriteBatch::new(guarded, polls.clone()));
                Ok(polls
                    .count(watcher.watch(shared.http2.serve_connection(io, service)))
                    .await?)
            } else {
                Ok(watcher
                    .watch(shared.http1.serve_connection(TokioIo::new(guarded), service))
                    .await?)
            }
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
    log_entry(
        state,
        request.method().as_str(),
        request.uri().path(),
        peer,
        response,
        outcome,
        access_log,
    );
}

/// Writes one request's line to the access log.
fn log_entry(
    state: &State,
    method: &str,
    path: &str,
    peer: SocketAddr,
    response: &Response,
    outcome: &api::Outcome,
    access_log: Option<&AccessLog>,
) {
    let Some(log) = access_log else {
        return;
    };
    let entry = Entry {
        request_id: outcome.request_id.as_str(),
        key_id: outcome.caller.as_ref().map_or("-", |caller| &caller.key_id),
        operation: outcome.operation.name(),
        method,
        path,
        status: response.status().as_u16(),
        bytes: outcome.bytes,
        latency_us: outcome.latency.as_micros() as u64,
        peer: peer.ip(),
    };
    if !log.record(&entry) {
        state.metrics.access_log_dropped.fetch_add(1, Relaxed);
    }
}
