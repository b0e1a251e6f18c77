//! The load benchmark's reference: a bare hyper server answering every request with one fixed
//! body, set up like `marks serve` (HTTP/1.1 keep-alive, TCP_NODELAY, tokio multi-thread
//! runtime) but doing no work per request. `benches/lab/load.sh` reports marks' throughput as a
//! ratio to this.
//!
//! With `--headers FILE` (lines of `name: value`) it also sends those headers, fixed: the same
//! response bytes as marks, so the ratio isolates marks' per-request work from the cost any
//! server pays to put that many headers on the wire.
//!
//! With `--runtime current-thread` it runs one current-thread runtime per thread instead, each
//! accepting on its own `SO_REUSEPORT` listener: the alternative docs/design.md asks to measure
//! against the multi-thread runtime (`benches/lab/load.sh` reports both).
//!
//! With `--tls-cert FILE --tls-key FILE` it serves TLS (rustls, as marks does) and speaks
//! HTTP/1.1 or HTTP/2 as ALPN decides: the reference for `benches/lab/production.sh`.
//!
//! With `--http2 on` it also answers HTTP/2 with prior knowledge over plain TCP, as `marks serve
//! --http2` does: the reference for the HTTP/2 rows of `benches/lab/instructions.sh`.
//!
//! With `--h2-streams first-poll-inline` an HTTP/2 stream's first poll runs where hyper hands the
//! stream over, and only a stream that has to wait becomes a task, as in `marks serve`
//! (`src/server/h2_streams.rs`); by default (`spawned`) each stream is a task, as hyper's tokio
//! executor runs it. The same-headers reference uses the first, so that it measures what the
//! headers cost a server that runs its streams as marks does.
//!
//! Usage: cargo run --release --example reference_server -- --addr 127.0.0.1:9000 --body FILE
//!        [--headers FILE] [--status 304] [--threads 1] [--runtime multi-thread|current-thread]
//!        [--tls-cert FILE --tls-key FILE] [--http2 on|off] [--h2-streams spawned|first-poll-inline]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::task::{Context, Waker};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

struct Args {
    addr: SocketAddr,
    body: Bytes,
    headers: hyper::HeaderMap,
    status: u16,
    threads: usize,
    current_thread: bool,
    tls: Option<tokio_rustls::TlsAcceptor>,
    tls_files: (Option<String>, Option<String>),
    cleartext_http2: bool,
    streams: StreamExecutor,
}

/// Where an HTTP/2 stream runs (`--h2-streams`).
#[derive(Clone, Copy)]
struct StreamExecutor {
    first_poll_inline: bool,
}

impl<F> hyper::rt::Executor<F> for StreamExecutor
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, stream: F) {
        let mut task = Box::pin(stream);
        if self.first_poll_inline && task.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready() {
            return;
        }
        tokio::spawn(task);
    }
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        addr: SocketAddr::from(([127, 0, 0, 1], 9000)),
        body: Bytes::new(),
        headers: hyper::HeaderMap::new(),
        status: 200,
        threads: 1,
        current_thread: false,
        tls: None,
        tls_files: (None, None),
        cleartext_http2: false,
        streams: StreamExecutor {
            first_poll_inline: false,
        },
    };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--addr" => args.addr = value.parse().map_err(|e| format!("--addr: {e}"))?,
            "--body" => args.body = Bytes::from(std::fs::read(&value).map_err(|e| format!("{value}: {e}"))?),
            "--headers" => {
                let text = std::fs::read_to_string(&value).map_err(|e| format!("{value}: {e}"))?;
                for line in text.lines().filter(|l| l.contains(':')) {
                    let (name, field) = line.split_once(':').unwrap_or_default();
                    let name =
                        hyper::header::HeaderName::from_bytes(name.trim().as_bytes()).map_err(|e| e.to_string())?;
                    let field = hyper::header::HeaderValue::from_str(field.trim()).map_err(|e| e.to_string())?;
                    args.headers.append(name, field);
                }
            }
            "--status" => args.status = value.parse().map_err(|e| format!("--status: {e}"))?,
            "--threads" => args.threads = value.parse().map_err(|e| format!("--threads: {e}"))?,
            "--runtime" => {
                args.current_thread = match value.as_str() {
                    "multi-thread" => false,
                    "current-thread" => true,
                    other => return Err(format!("--runtime: {other}: multi-thread or current-thread")),
                }
            }
            "--tls-cert" => args.tls_files.0 = Some(value),
            "--tls-key" => args.tls_files.1 = Some(value),
            "--http2" => {
                args.cleartext_http2 = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    other => return Err(format!("--http2: {other}: on or off")),
                }
            }
            "--h2-streams" => {
                args.streams.first_poll_inline = match value.as_str() {
                    "spawned" => false,
                    "first-poll-inline" => true,
                    other => return Err(format!("--h2-streams: {other}: spawned or first-poll-inline")),
                }
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if let (Some(cert), Some(key)) = &args.tls_files {
        args.tls = Some(tls_acceptor(cert, key)?);
    }
    Ok(args)
}

/// TLS as marks sets it up: rustls with ring, ALPN offering HTTP/2 and HTTP/1.1.
fn tls_acceptor(cert: &str, key: &str) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{cert}: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{key}: {e}"))?;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)))
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("reference_server: {message}");
            std::process::exit(2);
        }
    };
    if args.current_thread {
        let args = std::sync::Arc::new(args);
        let threads: Vec<_> = (0..args.threads.max(1))
            .map(|_| {
                let args = args.clone();
                std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap_or_else(|e| panic!("runtime: {e}"));
                    runtime.block_on(async {
                        let socket = tokio::net::TcpSocket::new_v4().unwrap_or_else(|e| panic!("socket: {e}"));
                        socket
                            .set_reuseport(true)
                            .unwrap_or_else(|e| panic!("SO_REUSEPORT: {e}"));
                        socket
                            .set_reuseaddr(true)
                            .unwrap_or_else(|e| panic!("SO_REUSEADDR: {e}"));
                        socket
                            .bind(args.addr)
                            .unwrap_or_else(|e| panic!("bind {}: {e}", args.addr));
                        let listener = socket.listen(1024).unwrap_or_else(|e| panic!("listen: {e}"));
                        serve(listener, &args).await
                    })
                })
            })
            .collect();
        eprintln!("reference server on http://{} (current-thread runtimes)", args.addr);
        for thread in threads {
            let _ = thread.join();
        }
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .unwrap_or_else(|e| panic!("bind {}: {e}", args.addr));
        eprintln!("reference server on http://{}", args.addr);
        serve(listener, &args).await
    });
}

async fn serve(listener: tokio::net::TcpListener, args: &Args) {
    let status = hyper::StatusCode::from_u16(args.status).unwrap_or(hyper::StatusCode::OK);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let body = args.body.clone();
        let headers = args.headers.clone();
        let tls = args.tls.clone();
        let cleartext_http2 = args.cleartext_http2;
        let streams = args.streams;
        tokio::spawn(async move {
            let service = service_fn(move |_request| {
                let mut response = hyper::Response::new(Full::new(body.clone()));
                *response.status_mut() = status;
                if headers.is_empty() {
                    response.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static("application/json"),
                    );
                } else {
                    *response.headers_mut() = headers.clone();
                }
                std::future::ready(Ok::<_, Infallible>(response))
            });
            match tls {
                None if cleartext_http2 => {
                    let _ = hyper_util::server::conn::auto::Builder::new(streams)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
                None => {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
                Some(acceptor) => {
                    let Ok(tls) = acceptor.accept(stream).await else { return };
                    let _ = hyper_util::server::conn::auto::Builder::new(streams)
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                }
            }
        });
    }
}
