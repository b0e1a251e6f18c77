//! A hostile HTTP/2 client for `benches/lab/stalled-streams.sh`: opens CONNECTIONS connections
//! with a zero flow-control window, STREAMS streams on each for `/v1/openapi.json` (no key
//! needed), never reads a byte of any response, and sends a PING on every connection every
//! second, until the server closes them or HOLD seconds pass. With `busy`, each connection
//! also asks for one more stalled response every second, which keeps it busy (requests are
//! activity, PINGs are not) and keeps it at its stream limit as the server resets streams.
//! Prints the streams opened, how many the server reset, and the connections it closed.
//!
//!   cargo run --release --example stalled_streams -- ADDR CONNECTIONS STREAMS HOLD [busy]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What one run saw, across its connections.
#[derive(Debug, Default)]
struct Seen {
    opened: AtomicUsize,
    /// Streams the server reset (RST_STREAM), answered or not.
    reset: AtomicUsize,
    /// Streams answered 503.
    refused: AtomicUsize,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let (addr, connections, streams, hold, busy) = match args.as_slice() {
        [_, addr, connections, streams, hold] => (addr, connections, streams, hold, false),
        [_, addr, connections, streams, hold, busy] if busy == "busy" => (addr, connections, streams, hold, true),
        _ => return Err("usage: stalled_streams ADDR CONNECTIONS STREAMS HOLD_SECS [busy]".into()),
    };
    let addr: SocketAddr = addr.parse()?;
    let (connections, streams, hold): (usize, usize, u64) = (connections.parse()?, streams.parse()?, hold.parse()?);
    let started = Instant::now();
    let seen = Arc::new(Seen::default());
    let tasks: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(stall(addr, streams, Duration::from_secs(hold), busy, seen.clone())))
        .collect();
    let (mut closed_by_server, mut last_close) = (0, Duration::ZERO);
    for task in tasks {
        if let Some(at) = task.await?? {
            closed_by_server += 1;
            last_close = last_close.max(at);
        }
    }
    println!(
        "opened {} stalled streams on {connections} connections{}; the server reset {} streams, answered {} with 503, and closed {closed_by_server} connections, the last after {:.1} s (run {:.1} s)",
        seen.opened.load(Relaxed),
        if busy { ", one more a second on each" } else { "" },
        seen.reset.load(Relaxed),
        seen.refused.load(Relaxed),
        last_close.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Opens one stalled stream and notes how it ends: reset, or answered 503 (and then stalled).
fn open(sender: &mut h2::client::SendRequest<Bytes>, addr: SocketAddr, seen: &Arc<Seen>) -> Result<(), BoxError> {
    let request = http::Request::builder()
        .uri(format!("http://{addr}/v1/openapi.json"))
        .body(())?;
    let (response, _) = sender.send_request(request, true)?;
    seen.opened.fetch_add(1, Relaxed);
    let seen = seen.clone();
    tokio::spawn(async move {
        let body = match response.await {
            Ok(response) if response.status() == 503 => {
                seen.refused.fetch_add(1, Relaxed);
                response.into_body()
            }
            Ok(response) => response.into_body(),
            Err(error) => {
                if error.is_reset() {
                    seen.reset.fetch_add(1, Relaxed);
                }
                return;
            }
        };
        // Never read: this only waits for how the stream ends.
        let mut body = body;
        if let Some(Err(error)) = body.data().await {
            if error.is_reset() {
                seen.reset.fetch_add(1, Relaxed);
            }
        }
    });
    Ok(())
}

/// One connection: its streams opened, then PINGs (and with `busy`, a new stream a second)
/// until the server hangs up or `hold` ends. Returns when the server closed it, if it did.
async fn stall(
    addr: SocketAddr,
    streams: usize,
    hold: Duration,
    busy: bool,
    seen: Arc<Seen>,
) -> Result<Option<Duration>, BoxError> {
    let started = Instant::now();
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, mut connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .initial_connection_window_size(65_535)
        .handshake::<_, Bytes>(tcp)
        .await?;
    let mut ping_pong = connection.ping_pong().ok_or("no ping handle")?;
    let mut driver = tokio::spawn(connection);
    for _ in 0..streams {
        sender = match sender.ready().await {
            Ok(ready) => ready,
            Err(_) => return Ok(Some(started.elapsed())),
        };
        if open(&mut sender, addr, &seen).is_err() {
            break;
        }
    }
    let deadline = tokio::time::sleep(hold);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut driver => return Ok(Some(started.elapsed())),
            _ = &mut deadline => { driver.abort(); return Ok(None); }
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                if ping_pong.ping(h2::Ping::opaque()).await.is_err() {
                    return Ok(Some(started.elapsed()));
                }
                // Only when the connection has a stream to spare; never wait for one.
                if busy {
                    let slot = std::future::poll_fn(|cx| std::task::Poll::Ready(sender.poll_ready(cx))).await;
                    if matches!(slot, std::task::Poll::Ready(Ok(()))) {
                        let _ = open(&mut sender, addr, &seen);
                    }
                }
            }
        }
    }
}
