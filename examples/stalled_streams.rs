//! A hostile HTTP/2 client for `benches/stalled-streams.sh`: opens CONNECTIONS connections
//! with a zero flow-control window, STREAMS streams on each for `/v1/openapi.json` (no key
//! needed), never reads a byte of any response, and sends a PING on every connection every
//! second, until the server closes them or HOLD seconds pass. Prints how many streams were
//! opened and how many connections the server closed, and when.
//!
//!   cargo run --release --example stalled_streams -- ADDR CONNECTIONS STREAMS HOLD

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let [_, addr, connections, streams, hold] = args.as_slice() else {
        return Err("usage: stalled_streams ADDR CONNECTIONS STREAMS HOLD_SECS".into());
    };
    let addr: SocketAddr = addr.parse()?;
    let (connections, streams, hold): (usize, usize, u64) = (connections.parse()?, streams.parse()?, hold.parse()?);
    let started = Instant::now();
    let tasks: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(stall(addr, streams, Duration::from_secs(hold))))
        .collect();
    let (mut opened, mut closed_by_server, mut last_close) = (0, 0, Duration::ZERO);
    for task in tasks {
        let (streams, closed_at) = task.await??;
        opened += streams;
        if let Some(at) = closed_at {
            closed_by_server += 1;
            last_close = last_close.max(at);
        }
    }
    println!(
        "opened {opened} stalled streams on {connections} connections; the server closed {closed_by_server} of them, the last after {:.1} s (run {:.1} s)",
        last_close.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One connection: its streams opened, then PINGs until the server hangs up or `hold` ends.
/// Returns the streams opened and when the server closed the connection, if it did.
async fn stall(addr: SocketAddr, streams: usize, hold: Duration) -> Result<(usize, Option<Duration>), BoxError> {
    let started = Instant::now();
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, mut connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .initial_connection_window_size(65_535)
        .handshake::<_, Bytes>(tcp)
        .await?;
    let mut ping_pong = connection.ping_pong().ok_or("no ping handle")?;
    let mut driver = tokio::spawn(connection);
    let mut responses = Vec::with_capacity(streams);
    for _ in 0..streams {
        let Ok(ready) = sender.ready().await else { break };
        sender = ready;
        let request = http::Request::builder()
            .uri(format!("http://{addr}/v1/openapi.json"))
            .body(())?;
        match sender.send_request(request, true) {
            Ok((response, _)) => responses.push(response),
            Err(_) => break,
        }
    }
    let opened = responses.len();
    let deadline = tokio::time::sleep(hold);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut driver => return Ok((opened, Some(started.elapsed()))),
            _ = &mut deadline => { driver.abort(); return Ok((opened, None)); }
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                if ping_pong.ping(h2::Ping::opaque()).await.is_err() {
                    return Ok((opened, Some(started.elapsed())));
                }
            }
        }
    }
}
