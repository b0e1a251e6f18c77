//! `marks serve`: the start-up wiring. Turns validated options into settings, loads the keys
//! and the snapshot (refusing to start without either), starts the HTTP server (`http_server`)
//! and runs it until SIGTERM or SIGINT. SIGHUP reloads the snapshot and keys files.
//!
//! With no options it serves the bundled sample (building its snapshot on first run) with the
//! demo keys on 127.0.0.1:8080.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use marks_builder::signing;

use crate::api::cursor::CursorKey;
use crate::api::state::{Settings, State};
use crate::budgets::shared::SharedBudgets;
use crate::cli::commands::{demo_keys_file, ensure_sample_snapshot, sample_snapshot};
use crate::reload;
use crate::response::body::DecodeLimits;
use crate::server::access_log::{AccessLog, Destination};
use crate::server::{self, ServerConfig, TlsFiles};
use crate::snapshot::background;
use crate::snapshot::object_store::{Location, SnapshotSource};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug)]
pub struct ServeArgs {
    pub addr: SocketAddr,
    pub snapshot: Option<PathBuf>,
    /// `s3://BUCKET/PREFIX` to pull published snapshots from, instead of `snapshot`.
    pub snapshot_from: Option<String>,
    pub snapshot_cache: PathBuf,
    pub poll_interval: Duration,
    /// Redis URL of the budgets shared by replicas.
    pub budgets: Option<String>,
    pub budgets_timeout: Duration,
    pub keys: Option<PathBuf>,
    pub public_base_url: Option<String>,
    pub publisher_key: Option<PathBuf>,
    pub cursor_key: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub http2: bool,
    pub export_decoding: DecodeLimits,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_header_bytes: usize,
    pub max_connections: usize,
    pub max_connections_per_address: usize,
    pub listen_backlog: u32,
    pub h2_max_concurrent_streams: u32,
    pub h2_max_send_buffer: usize,
    pub h2_stream_timeout: Duration,
    pub max_h2_streams: usize,
    pub control_frames_per_sec: u32,
    pub shutdown_grace: Duration,
    pub watch_interval: Duration,
    pub auth_failures_per_min: u32,
    pub max_throttled_addresses: usize,
    pub client_ip_header: Option<http::HeaderName>,
    pub log_format: LogFormat,
    pub log_level: String,
    pub access_log: bool,
    /// The access log's file (reopened on SIGUSR1); `None`: stdout.
    pub access_log_path: Option<PathBuf>,
    pub threads: Option<usize>,
}

fn init_logging(format: LogFormat, level: &str) -> Result<tracing_appender::non_blocking::WorkerGuard> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .with_context(|| format!("--log-level {level:?} is not a valid filter"))?;
    // Log lines are handed to a writer thread: a slow terminal or pipe never stalls a request.
    let (writer, guard) = tracing_appender::non_blocking(std::io::stdout());
    // Colour only for a person at a terminal: escapes in files and pipes break grep and log
    // shippers. NO_COLOR (no-color.org) turns it off there too.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stdout())
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(colour);
    let result = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
    Ok(guard)
}

pub fn run(args: ServeArgs) -> Result<()> {
    let _log_guard = init_logging(args.log_format, &args.log_level)?;
    let source_location = args.snapshot_from.as_deref().map(Location::parse).transpose()?;
    let sample = args.snapshot.is_none() && source_location.is_none();
    let snapshot_path = match (&args.snapshot, &source_location) {
        (Some(path), _) => path.clone(),
        (None, Some(_)) => SnapshotSource::current_file(&args.snapshot_cache),
        (None, None) => {
            let path = sample_snapshot();
            ensure_sample_snapshot(&path)?;
            path
        }
    };
    let keys_path = args.keys.clone().unwrap_or_else(demo_keys_file);
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        (None, None) => None,
        _ => anyhow::bail!("--tls-cert and --tls-key go together"),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let public_base_url = args
        .public_base_url
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{}", args.addr))
        .trim_end_matches('/')
        .to_string();
    let is_absolute = ["http://", "https://"]
        .iter()
        .any(|prefix| public_base_url.len() > prefix.len() && public_base_url.starts_with(prefix));
    if !is_absolute || public_base_url.bytes().any(|b| !b.is_ascii_graphic()) {
        anyhow::bail!(
            "--public-base-url {public_base_url:?} is not an absolute http(s) URL such as https://api.example.com"
        );
    }
    let publisher_key = args
        .publisher_key
        .as_deref()
        .map(signing::read_verifying_key)
        .transpose()?;
    let cursor_key = match &args.cursor_key {
        Some(path) => CursorKey::from_file(path).map_err(anyhow::Error::msg)?,
        None => {
            tracing::warn!(
                "no --cursor-key file: using a random key for this process; cursors will not survive a restart \
                 or work across replicas"
            );
            CursorKey::generate()
        }
    };
    let settings = Settings {
        public_base_url: public_base_url.clone(),
        auth_failures_per_min: args.auth_failures_per_min,
        max_throttled_addresses: args.max_throttled_addresses,
        client_ip_header: args.client_ip_header,
        publisher_key,
        snapshot_path: snapshot_path.clone(),
        keys_path: keys_path.clone(),
        export_decoding: args.export_decoding,
    };
    let config = ServerConfig {
        addr: args.addr,
        tls,
        http2: args.http2,
        header_read_timeout: args.header_read_timeout,
        idle_timeout: args.idle_timeout,
        max_header_bytes: args.max_header_bytes,
        max_connections: args.max_connections,
        max_connections_per_address: args.max_connections_per_address,
        listen_backlog: args.listen_backlog,
        h2_max_concurrent_streams: args.h2_max_concurrent_streams,
        h2_max_send_buffer: args.h2_max_send_buffer,
        h2_stream_timeout: args.h2_stream_timeout,
        max_h2_streams: args.max_h2_streams,
        control_frames_per_sec: args.control_frames_per_sec,
        shutdown_grace: args.shutdown_grace,
        watch_interval: args.watch_interval,
        access_log: if args.access_log {
            let destination = match &args.access_log_path {
                Some(path) => Destination::File(path.clone()),
                None => Destination::Stdout,
            };
            let log = AccessLog::start(destination, args.log_format == LogFormat::Json)
                .with_context(|| format!("cannot open the access log {:?}", args.access_log_path))?;
            Some(log)
        } else {
            None
        },
        ..ServerConfig::default()
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.threads {
        runtime.worker_threads(threads.max(1));
    }
    let access_log = config.access_log.clone();
    let runtime = runtime.enable_all().build().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let mut state = State::new(settings, cursor_key);
        if let Some(url) = &args.budgets {
            let store = SharedBudgets::connect(url, args.budgets_timeout)?;
            tracing::info!(store = %store.address, timeout_ms = args.budgets_timeout.as_millis() as u64, "budgets shared through the store");
            state = state.with_shared_budgets(store);
        }
        if let Some(location) = source_location {
            let source = SnapshotSource::new(location, args.snapshot_cache.clone(), args.poll_interval)?;
            state = state.with_snapshot_source(Arc::new(source));
        }
        let state = Arc::new(state);
        // A server that starts without its keys would answer every client 401: refuse to start.
        let keys = state
            .load_keys(&keys_path)
            .context("cannot start without a valid keys file")?;
        // Parsing a large keys file leaves its scraps with the allocator: give them back.
        background::return_free_memory();
        tracing::info!(path = %keys_path.display(), keys, "keys file loaded and in force");
        // Likewise without a snapshot: a mistyped path would answer 503 to everything.
        match &state.snapshot_source {
            None => load_at_start(&state, &snapshot_path)
                .await
                .context("cannot start without a valid snapshot")?,
            Some(source) => start_from_source(&state, source, &snapshot_path).await?,
        }
        let signals = Signals::install(access_log.clone())?;
        let server = server::start(state.clone(), config).await?;
        let addr = server.addr;
        eprintln!("Valuation Marks listening on {scheme}://{addr}");
        if sample {
            eprintln!(
                "serving the bundled sample dataset with the demo keys (README: \"Demo keys\"); try:\n  \
                 curl -s -H 'X-API-Key: vmk_demo_enterprise' {scheme}://{addr}/v1/companies?limit=3"
            );
        }
        let trigger = server.shutdown_trigger();
        let reloader = state.clone();
        tokio::spawn(async move {
            signals.wait(reloader).await;
            let _ = trigger.send(true);
        });
        let clean = server.wait().await;
        if let Some(log) = &access_log {
            log.finish();
        }
        tracing::info!(clean, "server stopped");
        eprintln!(
            "stopped{}",
            if clean {
                ""
            } else {
                " (some connections did not finish in time)"
            }
        );
        Ok(())
    })
}

async fn load_at_start(state: &Arc<State>, path: &std::path::Path) -> Result<()> {
    let loader = state.clone();
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || loader.load_snapshot(&path))
        .await
        .context("the snapshot load task failed")??;
    Ok(())
}

/// With `--snapshot-from`: the cached snapshot if there is one (so a restart serves at once),
/// then what the store publishes now. Refuses to start only when neither gives a snapshot.
async fn start_from_source(state: &Arc<State>, source: &SnapshotSource, cached: &std::path::Path) -> Result<()> {
    if cached.exists() {
        match load_at_start(state, cached).await {
            Ok(()) => {
                source.remember_cached();
                tracing::info!(path = %cached.display(), "cached snapshot in force; checking the store for a newer one");
            }
            Err(error) => {
                tracing::warn!(path = %cached.display(), error = %format!("{error:#}"), "cached snapshot not usable")
            }
        }
    }
    let polled = source.poll(state).await;
    match (&polled, state.snapshot().is_some()) {
        (_, true) => {
            if let Err(error) = polled {
                tracing::warn!(source = %source.location, error = %format!("{error:#}"), "snapshot source unreachable; serving the cached snapshot until it answers");
            }
            Ok(())
        }
        (Err(error), false) => anyhow::bail!(
            "cannot start: {error:#}; and {} holds no cached snapshot",
            cached.display()
        ),
        (Ok(_), false) => anyhow::bail!(
            "cannot start: {} published no usable snapshot ({}) and {} holds no cached snapshot",
            source.location,
            source
                .status()
                .last_error
                .map_or_else(|| "no CURRENT manifest".to_string(), |(_, reason)| reason),
            cached.display()
        ),
    }
}

/// The signals `marks serve` answers: SIGTERM and SIGINT stop it, SIGHUP reloads both files,
/// SIGUSR1 reopens the access log's file (after logrotate has renamed it).
/// Installed before the server says it is listening, so that a SIGHUP sent as soon as the
/// address is announced reloads rather than ends the process (SIGHUP's default action).
#[cfg(unix)]
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    usr1: tokio::signal::unix::Signal,
    access_log: Option<AccessLog>,
}

#[cfg(unix)]
impl Signals {
    fn install(access_log: Option<AccessLog>) -> Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        let install = |kind: SignalKind| signal(kind).context("cannot install signal handlers");
        Ok(Signals {
            term: install(SignalKind::terminate())?,
            int: install(SignalKind::interrupt())?,
            hup: install(SignalKind::hangup())?,
            usr1: install(SignalKind::user_defined1())?,
            access_log,
        })
    }

    /// Returns on SIGTERM or SIGINT; reloads both files on SIGHUP meanwhile.
    async fn wait(mut self, state: Arc<State>) {
        loop {
            tokio::select! {
                _ = self.term.recv() => { tracing::info!("SIGTERM: shutting down"); return; }
                _ = self.int.recv() => { tracing::info!("SIGINT: shutting down"); return; }
                _ = self.hup.recv() => {
                    tracing::info!("SIGHUP: reloading the snapshot and keys files");
                    reload::reload_keys(&state).await;
                    reload::reload_snapshot(&state).await;
                }
                _ = self.usr1.recv() => {
                    tracing::info!("SIGUSR1: reopening the access log");
                    if let Some(log) = &self.access_log {
                        log.reopen();
                    }
                }
            }
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install(_access_log: Option<AccessLog>) -> Result<Signals> {
        Ok(Signals)
    }

    async fn wait(self, _state: Arc<State>) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
