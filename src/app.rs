//! The one start-up path, used by `marks serve`, the integration tests and the benches alike:
//! settings in, a running server out.
//!
//! [`App::start`] resolves what the settings name ([`resolve`]: the TLS files, the publisher
//! and cursor keys, the snapshot source), builds the shared state, connects the shared budget
//! store, loads the keys and the first snapshot (refusing to start without either: a typo would
//! otherwise answer 401 or 503 to everyone), starts the server, and starts the two background
//! tasks that keep what is served current: the file watcher and, with `--snapshot-from`, the
//! object-store poller. Logging, the runtime and signals are the command line's.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::api::cursor::{CursorKey, CursorKeyError};
use crate::api::state::State;
use crate::budgets::shared::SharedBudgets;
use crate::reload;
use crate::server::access_log::{AccessLog, Destination};
use crate::server::tls::TlsError;
use crate::server::{self, RunningServer, ServerSetup};
use crate::settings::{LogFormat, Resolved, Settings};
use crate::snapshot::background;
use crate::snapshot::object_store::{Location, SnapshotSource};

/// A running server with its state and access log.
#[derive(Debug)]
pub struct App {
    pub addr: SocketAddr,
    /// Where it listens, with the scheme it answers on (`Listen::url_of`); clients may reach it
    /// under the public base URL instead (`state.resolved`).
    pub url: String,
    pub state: Arc<State>,
    pub access_log: Option<AccessLog>,
    server: RunningServer,
}

/// Why what the settings name cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("--publisher-key")]
    PublisherKey(#[source] marks_format::rules::signatures::KeyError),
    #[error("--cursor-key")]
    CursorKey(#[source] CursorKeyError),
    #[error("--tls-cert/--tls-key")]
    Tls(#[source] TlsError),
    #[error("--snapshot-from")]
    SnapshotFrom(#[source] anyhow::Error),
    #[error("no snapshot to serve: give --snapshot FILE or --snapshot-from s3://BUCKET/PREFIX")]
    NoSnapshot,
    #[error("no keys file: give --keys FILE")]
    NoKeys,
}

/// The second step of reading the settings: the files they name, read and checked.
#[derive(Debug)]
pub struct ResolvedFiles {
    pub resolved: Resolved,
    pub cursor_key: CursorKey,
    /// True when no `--cursor-key` was given: cursors are then this process's own.
    pub cursor_key_generated: bool,
    pub tls: Option<server::tls::ServerTls>,
    pub source: Option<Location>,
}

/// Reads and checks the files the settings name, for a server listening on `bound` (the
/// address it was given, with the port the system picked for port 0).
pub fn resolve(settings: &Settings, bound: SocketAddr) -> Result<ResolvedFiles, ResolveError> {
    let listen = &settings.listen;
    let data = &settings.data;
    let public_base_url = listen.public_base_url.clone().unwrap_or_else(|| listen.url_of(bound));
    let publisher_key = data
        .publisher_key
        .as_deref()
        .map(marks_format::rules::signatures::read_verifying_key)
        .transpose()
        .map_err(ResolveError::PublisherKey)?;
    let (cursor_key, cursor_key_generated) = match &settings.access.cursor_key {
        Some(path) => (CursorKey::from_file(path).map_err(ResolveError::CursorKey)?, false),
        None => (CursorKey::generate(), true),
    };
    let tls = match (&listen.tls_cert, &listen.tls_key) {
        (Some(cert), Some(key)) => Some(server::tls::acceptor(cert, key, listen.http2).map_err(ResolveError::Tls)?),
        _ => None,
    };
    let source = data
        .snapshot_from
        .as_deref()
        .map(Location::parse)
        .transpose()
        .map_err(ResolveError::SnapshotFrom)?;
    let snapshot_path = match (&data.snapshot, &source) {
        (Some(path), _) => path.clone(),
        (None, Some(_)) => SnapshotSource::current_file(&data.snapshot_cache),
        (None, None) => return Err(ResolveError::NoSnapshot),
    };
    let keys_path = data.keys.clone().ok_or(ResolveError::NoKeys)?;
    Ok(ResolvedFiles {
        resolved: Resolved {
            public_base_url: public_base_url.trim_end_matches('/').to_string(),
            publisher_key,
            allow_rollback: data.allow_rollback,
            snapshot_path,
            keys_path,
        },
        cursor_key,
        cursor_key_generated,
        tls,
        source,
    })
}

/// Whether the server may start with no snapshot in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FirstSnapshot {
    Required,
    /// Tests of what a server answers before any snapshot is in force.
    Optional,
}

impl App {
    /// Starts the server on the current runtime, with the first snapshot and the keys in force.
    pub async fn start(settings: Settings) -> Result<App> {
        App::launch(settings, FirstSnapshot::Required).await
    }

    /// Starts the server even when the first snapshot cannot be loaded: it answers 503 and
    /// `/readyz` says not ready until one is published. Production never does this (it
    /// refuses to start); tests use it to see that state.
    pub async fn start_without_snapshot(settings: Settings) -> Result<App> {
        App::launch(settings, FirstSnapshot::Optional).await
    }

    async fn launch(settings: Settings, first: FirstSnapshot) -> Result<App> {
        let listener = server::bind(&settings.listen)?;
        let bound = listener.local_addr().unwrap_or(settings.listen.addr);
        let files = resolve(&settings, bound)?;
        if files.cursor_key_generated {
            tracing::warn!(
                "no --cursor-key file: using a random key for this process; cursors will not survive a restart \
                 or work across replicas"
            );
        }
        let access_log = start_access_log(&settings)?;
        let mut state = State::new(&settings.access, &settings.exports, files.resolved, files.cursor_key);
        if let Some(url) = &settings.fleet.budget_store {
            let timeout = settings.fleet.budget_store_timeout;
            let store =
                SharedBudgets::connect(url, timeout, settings.fleet.budget_lease_window).context("--budget-store")?;
            tracing::info!(store = %store.address, timeout_ms = timeout.as_millis() as u64, "budgets shared through the store");
            state = state.with_shared_budgets(store);
        }
        if let Some(location) = files.source {
            let source = SnapshotSource::new(
                location,
                settings.data.snapshot_cache.clone(),
                settings.data.poll_interval,
            )?;
            state = state.with_snapshot_source(Arc::new(source));
        }
        let state = Arc::new(state);
        let keys_path = state.resolved.keys_path.clone();
        // A server that starts without its keys would answer every client 401: refuse to start.
        let keys = state
            .keys
            .load(&keys_path)
            .context("cannot start without a valid keys file")?;
        // Parsing a large keys file leaves its scraps with the allocator: give them back.
        background::return_free_memory();
        tracing::info!(path = %keys_path.display(), keys, "keys file loaded and in force");
        let snapshot_path = state.resolved.snapshot_path.clone();
        let loaded = match &state.snapshot_source {
            None => load_at_start(&state, &snapshot_path)
                .await
                .context("cannot start without a valid snapshot"),
            Some(source) => start_from_source(&state, source, &snapshot_path).await,
        };
        match (loaded, first) {
            (Ok(()), _) => {}
            (Err(error), FirstSnapshot::Required) => return Err(error),
            (Err(error), FirstSnapshot::Optional) => {
                tracing::warn!(error = %format!("{error:#}"), "starting with no snapshot in force")
            }
        }
        let server = server::start(
            state.clone(),
            listener,
            ServerSetup {
                listen: settings.listen.clone(),
                connections: settings.connections.clone(),
                http2: settings.http2.clone(),
                tls: files.tls,
                access_log: access_log.clone(),
                agents: settings.agents.clone(),
            },
        )
        .await?;
        let url = settings.listen.url_of(server.addr);
        if let Some(path) = &settings.listen.ready_file {
            let ready = serde_json::json!({
                "url": url,
                "addr": server.addr.to_string(),
                "pid": std::process::id(),
            });
            marks_format::file::atomic_file::write(path, ready.to_string().as_bytes())
                .with_context(|| format!("--ready-file {}", path.display()))?;
        }
        let shutdown = server.shutdown_trigger().subscribe();
        reload::spawn_watcher(state.clone(), settings.data.watch_interval, shutdown.clone());
        reload::spawn_source_poller(state.clone(), shutdown);
        Ok(App {
            addr: server.addr,
            url,
            state,
            access_log,
            server,
        })
    }

    /// A handle that begins shutdown when sent `true`, for signal handlers.
    pub fn shutdown_trigger(&self) -> tokio::sync::watch::Sender<bool> {
        self.server.shutdown_trigger()
    }

    /// Waits until the server has been shut down (through a `shutdown_trigger`) and drained;
    /// whether every connection finished in time.
    pub async fn wait(self) -> bool {
        let clean = self.server.wait().await;
        if let Some(log) = &self.access_log {
            log.finish();
        }
        clean
    }

    /// Stops accepting, waits for in-flight requests (up to the grace period); whether every
    /// connection finished in time.
    pub async fn shutdown(self) -> bool {
        let _ = self.server.shutdown_trigger().send(true);
        self.wait().await
    }
}

fn start_access_log(settings: &Settings) -> Result<Option<AccessLog>> {
    let logging = &settings.logging;
    if logging.no_access_log {
        return Ok(None);
    }
    let destination = match &logging.access_log {
        Some(path) => Destination::File(path.clone()),
        None => Destination::Stdout,
    };
    let log = AccessLog::start(destination, logging.log_format == LogFormat::Json)
        .with_context(|| format!("cannot open the access log {:?}", logging.access_log))?;
    Ok(Some(log))
}

async fn load_at_start(state: &Arc<State>, path: &Path) -> Result<()> {
    let loader = state.snapshots.clone();
    let path: PathBuf = path.to_owned();
    tokio::task::spawn_blocking(move || loader.load(&path))
        .await
        .context("the snapshot load task failed")??;
    Ok(())
}

/// With `--snapshot-from`: the cached snapshot if there is one (so a restart serves at once),
/// then what the store publishes now. Refuses to start only when neither gives a snapshot.
async fn start_from_source(state: &Arc<State>, source: &SnapshotSource, cached: &Path) -> Result<()> {
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
    let polled = source.poll(&state.snapshots).await;
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
