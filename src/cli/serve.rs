//! `marks serve`: what belongs to the command line around the one start-up path
//! ([`App::start`]): logging, the runtime, the bundled sample as the default dataset, the
//! banner, and the signals. SIGTERM and SIGINT stop it; SIGHUP reloads the snapshot and keys
//! files; SIGUSR1 reopens the access log's file.
//!
//! With no options it serves the bundled sample (building its snapshot on first run) with the
//! demo keys on 127.0.0.1:8080.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::api::state::State;
use crate::app::App;
use crate::cli::commands::{demo_keys_file, ensure_sample_snapshot};
use crate::reload;
use crate::server::access_log::AccessLog;
use crate::settings::{LogFormat, Settings, CURRENT_SNAPSHOT, SAMPLE_SNAPSHOT};

/// What the log never carries, whatever the filter asked: rmcp's own lines (the `/mcp`
/// transport's), which quote what clients send (an unknown method in full, a refused Origin)
/// and add lines per request. `/mcp` logs its own, bounded (`mcp::hosted`).
const ALWAYS_OFF: &str = "rmcp=off";

fn init_logging(format: LogFormat, level: &str) -> Result<tracing_appender::non_blocking::WorkerGuard> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .with_context(|| format!("--log-level {level:?} is not a valid filter"))?
        .add_directive(ALWAYS_OFF.parse().context("the log filter's fixed part")?);
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
    result
        .map_err(|e| anyhow::Error::msg(e.to_string()))
        .context("cannot start logging")?;
    Ok(guard)
}

pub fn run(mut settings: Settings) -> Result<()> {
    let _log_guard = init_logging(settings.logging.log_format, &settings.logging.log_level)?;
    // No snapshot named: the snapshot folder's current one; when there is none yet, the bundled
    // sample, with its demo keys.
    let mut sample = false;
    if settings.data.snapshot.is_none() && settings.data.snapshot_from.is_none() {
        let current = PathBuf::from(CURRENT_SNAPSHOT);
        sample = current_is_sample(&current);
        if sample {
            ensure_sample_snapshot(Path::new(SAMPLE_SNAPSHOT))?;
            point_at_sample(&current)?;
            settings.data.keys.get_or_insert_with(demo_keys_file);
            // The demo shows agents the hosted tools too.
            settings.agents.mcp = true;
        }
        settings.data.snapshot = Some(current);
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = settings.listen.threads {
        runtime.worker_threads(usize::from(threads));
    }
    let runtime = runtime.enable_all().build().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        // Installed before the server says it is listening, so that a SIGHUP sent as soon as
        // the address is announced reloads rather than ends the process.
        let signals = Signals::install()?;
        let app = App::start(settings).await?;
        // Where it listens, with the scheme it answers on; the public base URL, when another,
        // on a line of its own (a proxy in front may serve https for a server that listens
        // with http).
        let url = &app.url;
        eprintln!("Valuation Marks listening on {url}");
        let public = &app.state.resolved.public_base_url;
        if public != url {
            eprintln!("public base URL (problem types, links): {public}");
        }
        if sample {
            eprintln!(
                "serving the bundled sample dataset with the demo keys (README: \"Demo keys\"); try:\n  \
                 curl -s -H 'X-API-Key: vmk_demo_enterprise' {url}/v1/companies?limit=3\n\
                 agents: MCP at {url}/mcp with the X-API-Key header (docs/clients.md)"
            );
        }
        let trigger = app.shutdown_trigger();
        let (state, access_log) = (app.state.clone(), app.access_log.clone());
        tokio::spawn(async move {
            signals.wait(state, access_log).await;
            let _ = trigger.send(true);
        });
        let clean = app.wait().await;
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

/// Whether `snapshots/current.snap` is (or is to be) the bundled sample: absent, or a link to it.
fn current_is_sample(current: &Path) -> bool {
    match std::fs::read_link(current) {
        Ok(target) => target == Path::new("sample.snap"),
        Err(_) => std::fs::symlink_metadata(current).is_err(),
    }
}

/// `snapshots/current.snap` as a link to the sample beside it, made atomically: a later `marks
/// build` renames a real snapshot over the link, and the server's watcher serves it.
fn point_at_sample(current: &Path) -> Result<()> {
    let temporary = current.with_extension("snap.link");
    let _ = std::fs::remove_file(&temporary);
    std::os::unix::fs::symlink("sample.snap", &temporary)
        .and_then(|()| std::fs::rename(&temporary, current))
        .with_context(|| format!("cannot point {} at the sample", current.display()))
}

/// The signals `marks serve` answers: SIGTERM and SIGINT stop it, SIGHUP reloads both files,
/// SIGUSR1 reopens the access log's file (after logrotate has renamed it).
/// Installed before the server says it is listening, so that a SIGHUP sent as soon as the
/// address is announced reloads rather than ends the process (SIGHUP's default action).
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    usr1: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        let install = |kind: SignalKind| signal(kind).context("cannot install signal handlers");
        Ok(Signals {
            term: install(SignalKind::terminate())?,
            int: install(SignalKind::interrupt())?,
            hup: install(SignalKind::hangup())?,
            usr1: install(SignalKind::user_defined1())?,
        })
    }

    /// Returns on SIGTERM or SIGINT; reloads both files on SIGHUP meanwhile.
    async fn wait(mut self, state: Arc<State>, access_log: Option<AccessLog>) {
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
                    if let Some(log) = &access_log {
                        log.reopen();
                    }
                }
            }
        }
    }
}
