//! `marks`: the one binary of the Valuation Marks service. It parses the command line once and
//! hands each subcommand its arguments; all behaviour lives in the library.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use marks::cli::commands;
use marks::cli::serve::{self as serve_command, LogFormat, ServeArgs};
use marks::keys::file::KeyStatus;
use marks::response::body::DecodeLimits;
use marks_builder::tiers::Tier;

#[derive(Parser, Debug)]
#[command(
    name = "marks",
    version,
    about = "Valuation Marks: build signed valuation snapshots and serve them over HTTP/JSON",
    long_about = "Valuation Marks: build signed valuation snapshots and serve them over HTTP/JSON.\n\n\
                  Quick start: `marks serve` serves the bundled sample dataset with demo keys on 127.0.0.1:8080."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a snapshot over HTTP/JSON. With no options: the bundled sample with demo keys on 127.0.0.1:8080.
    Serve(Box<ServeCommand>),
    /// Manage API keys: the keys file holds only hashes; a key is shown once, when issued.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Compile a dataset directory (dataset.toml, companies.csv, events.csv) into one snapshot file.
    Build {
        /// Dataset directory holding dataset.toml, companies.csv and events.csv.
        #[arg(long, value_name = "DIR")]
        source: PathBuf,
        /// Snapshot file to write (written to a temp file beside it, then renamed into place).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Ed25519 private key (PKCS#8 PEM, from `marks keygen`) that signs the resolution records.
        #[arg(long, value_name = "FILE", required = true)]
        signing_key: PathBuf,
        /// The snapshot this one succeeds: refuse the build if any of its events changed or vanished,
        /// and keep publishing its signing keys.
        #[arg(long, value_name = "FILE")]
        previous: Option<PathBuf>,
        /// Ed25519 private key that signs the snapshot header, for servers run with --publisher-key.
        #[arg(long, value_name = "FILE")]
        publisher_key: Option<PathBuf>,
        /// Gzip level (1-9) of the precompressed body variants; 0 stores none. 4 compresses series as
        /// well as 6 here at two thirds of the time.
        #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=9))]
        gzip_level: u32,
        /// Print only the summary line (no scorecard, no progress bar).
        #[arg(long)]
        quiet: bool,
    },
    /// Make a new Ed25519 signing key: FILE (private, mode 0600) and FILE.pub; prints its kid.
    Keygen {
        /// Path of the new private key; refuses to overwrite an existing file.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Write a synthetic dataset from a selection world (companies report after rises), for scale tests and benches.
    Synth {
        /// Number of companies.
        #[arg(long, value_name = "N")]
        companies: usize,
        /// Total number of events (default: 8 per company).
        #[arg(long, value_name = "N")]
        events: Option<usize>,
        /// Random seed; the same seed gives the same files.
        #[arg(long, value_name = "S", default_value_t = 1)]
        seed: u64,
        /// The dataset's as_of date, YYYY-MM-DD.
        #[arg(long, value_name = "DATE")]
        as_of: Option<String>,
        /// Directory to write the dataset into.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Publish a snapshot to a server's --snapshot path safely: check it, copy it beside LIVE,
    /// fsync, rename over LIVE. The server swaps to it at its next look.
    Install {
        /// The new snapshot file (from `marks build`).
        #[arg(long, value_name = "NEW")]
        snapshot: PathBuf,
        /// The file the server serves (its --snapshot path); replaced atomically.
        #[arg(long, value_name = "LIVE")]
        to: PathBuf,
        /// Refuse to install a snapshot not signed by this publisher public key (PEM).
        #[arg(long, value_name = "PUB")]
        publisher_key: Option<PathBuf>,
    },
    /// Publish a snapshot to S3-compatible object storage for replicas run with --snapshot-from:
    /// check it, upload it as PREFIX/snapshots/<sha256>.snap, then point PREFIX/CURRENT at it.
    /// Endpoint and credentials come from the AWS environment variables (README, "Fleet").
    Publish {
        /// The new snapshot file (from `marks build`).
        #[arg(long, value_name = "FILE")]
        snapshot: PathBuf,
        /// Where replicas look: s3://BUCKET/PREFIX.
        #[arg(long, value_name = "S3_URL")]
        to: String,
        /// Refuse to publish a snapshot not signed by this publisher public key (PEM).
        #[arg(long, value_name = "PUB")]
        publisher_key: Option<PathBuf>,
    },
    /// Serve the API's operations as Model Context Protocol tools over stdio, for LLM agents; the
    /// tools call the API at --base-url with the key in MARKS_API_KEY.
    Mcp {
        /// The API to call, e.g. https://api.example.com or http://127.0.0.1:8080.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8080")]
        base_url: String,
    },
    /// Check a snapshot file offline the way the server does, and print its versions.
    VerifySnapshot {
        /// The snapshot file.
        file: PathBuf,
        /// Also require a header signature by this publisher public key (PEM).
        #[arg(long, value_name = "PUB")]
        publisher_key: Option<PathBuf>,
    },
}

#[derive(clap::Args, Debug)]
struct ServeCommand {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Snapshot file to serve; replaced files (rename or re-pointed symlink) are picked up live.
    /// Default: the bundled sample, built on first run.
    #[arg(long, value_name = "FILE", conflicts_with = "snapshot_from")]
    snapshot: Option<PathBuf>,
    /// Serve the snapshots `marks publish` puts at s3://BUCKET/PREFIX: poll its CURRENT manifest,
    /// download, check and swap to each new one. AWS environment variables configure the store.
    #[arg(long, value_name = "S3_URL")]
    snapshot_from: Option<String>,
    /// With --snapshot-from: the directory holding the downloaded snapshot (served after a restart
    /// when the store is unreachable).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "marks-snapshot-cache",
        requires = "snapshot_from"
    )]
    snapshot_cache: PathBuf,
    /// With --snapshot-from: milliseconds between looks at the manifest.
    #[arg(long, value_name = "MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(100..))]
    poll_interval_ms: u64,
    /// Share per-key budgets (and the failed-authentication throttle) between replicas through
    /// Redis or Valkey: redis://[USER:PASSWORD@]HOST:PORT[/DB]. Without it, budgets are per process.
    #[arg(long, value_name = "URL")]
    budgets: Option<String>,
    /// With --budgets: milliseconds to wait for the store before metering a request with this
    /// replica's own buckets.
    #[arg(long, value_name = "MS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    budgets_timeout_ms: u64,
    /// Keys file (hashes only), reloaded on change. Default: the sample's demo keys.
    #[arg(long, value_name = "FILE")]
    keys: Option<PathBuf>,
    /// Public base URL, used in problem `type` URIs. Default: derived from --addr.
    #[arg(long, value_name = "URL")]
    public_base_url: Option<String>,
    /// Refuse snapshots whose header is not signed by this publisher public key (PEM).
    #[arg(long, value_name = "PUB")]
    publisher_key: Option<PathBuf>,
    /// File holding the secret that authenticates pagination cursors; share it between replicas.
    /// Default: a random key per process (cursors then do not survive a restart).
    #[arg(long, value_name = "FILE")]
    cursor_key: Option<PathBuf>,
    /// TLS certificate chain (PEM); with --tls-key, serve HTTPS.
    #[arg(long, value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, value_name = "FILE")]
    tls_key: Option<PathBuf>,
    /// Offer HTTP/2 (ALPN over TLS, prior knowledge over plain TCP) besides HTTP/1.1.
    #[arg(long)]
    http2: bool,
    /// Seconds one request head may take to arrive (from accept, for a connection's first);
    /// a connection that keeps completing requests is never cut by it.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    header_read_timeout: u64,
    /// Seconds a connection may stay idle (no bytes either way) before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    idle_timeout: u64,
    /// Largest request head accepted, in bytes (at least 8192); larger gets 431.
    #[arg(long, value_name = "BYTES", default_value_t = 16384)]
    max_header_bytes: usize,
    /// Connections served at once; further clients wait in the listen backlog.
    #[arg(long, value_name = "N", default_value_t = 10000)]
    max_connections: usize,
    /// Connections one client address (IPv6: one /64) may hold at once; more are closed at
    /// accept. Behind a proxy, cap per client at the proxy instead.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_address: u64,
    /// Connections the kernel may queue before they are accepted, for bursts; the kernel caps it
    /// at net.core.somaxconn.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    listen_backlog: u32,
    /// HTTP/2 streams one connection may have open at once.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    h2_max_concurrent_streams: u32,
    /// Bytes HTTP/2 may hold per stream for a peer that does not read its response.
    #[arg(long, value_name = "BYTES", default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1024..))]
    h2_max_send_buffer: u64,
    /// Seconds an HTTP/2 stream may go without its response making progress (the peer taking a
    /// piece of at most 16 KiB) before it is reset; other streams of its connection go on.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    h2_stream_timeout: u64,
    /// HTTP/2 streams the whole server holds at once (a few KB each while stalled); past it,
    /// new HTTP/2 requests get 503 with Retry-After until streams end or are reset.
    #[arg(long, value_name = "N", default_value_t = 20000, value_parser = clap::value_parser!(u64).range(1..))]
    max_h2_streams: u64,
    /// PING and SETTINGS frames an HTTP/2 peer may send per second before its connection is closed.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    max_control_frames_per_sec: u32,
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    shutdown_grace: u64,
    /// Exports one key may have decoded at once for clients that do not accept gzip (the server
    /// decodes four at once); a further one gets 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=4))]
    export_decoders_per_key: u64,
    /// The least a decoded export must move, in KiB per second averaged over each window of
    /// --export-decode-window-secs; a slower reader is cut and its decoder's place freed.
    #[arg(long, value_name = "KIB", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    export_decode_floor_kib_per_sec: u64,
    /// Seconds over which a decoded export's rate is measured against the floor.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    export_decode_window_secs: u64,
    /// Milliseconds between checks of the snapshot and keys files for replacement.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    watch_interval_ms: u64,
    /// Failed authentications allowed per client address (IPv6: per /64) per minute; past it,
    /// a failing attempt gets 429. A request with a valid key is never refused by it.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    auth_failures_per_min: u32,
    /// Most client addresses whose failed authentications are remembered at once; past it the
    /// least recently seen are forgotten, so a flood of addresses cannot grow memory.
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(16..))]
    max_throttled_addresses: u64,
    /// Behind a reverse proxy: the request header to which it appends the client's address
    /// (e.g. X-Forwarded-For); its last address is the one failed authentication is counted
    /// against. Only set it when every request comes through that proxy.
    #[arg(long, value_name = "HEADER")]
    client_ip_header: Option<http::HeaderName>,
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Log filter (tracing env-filter syntax); RUST_LOG overrides it.
    #[arg(long, value_name = "FILTER", default_value = "info")]
    log_level: String,
    /// Do not log one line per request.
    #[arg(long)]
    no_access_log: bool,
    /// Append the per-request lines to this file instead of stdout; SIGUSR1 reopens it (for
    /// logrotate: rename the file, then signal).
    #[arg(long, value_name = "PATH")]
    access_log: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

#[derive(Subcommand, Debug)]
enum KeysCommand {
    /// Issue a key: prints the key alone on stdout (shown once) and stores its hash.
    Issue {
        /// Keys file to add the key to (created if missing).
        #[arg(long, value_name = "FILE")]
        keys: PathBuf,
        /// Tier of the key: free, research, pro, business or enterprise.
        #[arg(long, value_parser = parse_tier)]
        tier: Tier,
        /// Tenant (customer) the key belongs to.
        #[arg(long, value_name = "NAME")]
        tenant: String,
        /// Per-minute budget for this key instead of its tier's (negotiated contracts, load tests).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        rate_per_min: Option<u32>,
    },
    /// Revoke a key by its key_id, for good; takes effect when the server reloads the file.
    Revoke {
        /// Keys file holding the key.
        #[arg(long, value_name = "FILE")]
        keys: PathBuf,
        /// The key_id shown by `marks keys list`.
        key_id: String,
    },
    /// Suspend a key (it answers 401 until reinstated); takes effect on the server's next reload.
    Suspend {
        /// Keys file holding the key.
        #[arg(long, value_name = "FILE")]
        keys: PathBuf,
        /// The key_id shown by `marks keys list`.
        key_id: String,
    },
    /// Make a suspended key active again.
    Reinstate {
        /// Keys file holding the key.
        #[arg(long, value_name = "FILE")]
        keys: PathBuf,
        /// The key_id shown by `marks keys list`.
        key_id: String,
    },
    /// List the keys in a keys file (ids, tenants, tiers, status; never keys).
    List {
        /// Keys file to list.
        #[arg(long, value_name = "FILE")]
        keys: PathBuf,
    },
}

fn parse_tier(text: &str) -> Result<Tier, String> {
    Tier::parse(text).ok_or_else(|| "expected free, research, pro, business or enterprise".to_string())
}

fn serve_args(c: ServeCommand) -> ServeArgs {
    ServeArgs {
        addr: c.addr,
        snapshot: c.snapshot,
        snapshot_from: c.snapshot_from,
        snapshot_cache: c.snapshot_cache,
        poll_interval: Duration::from_millis(c.poll_interval_ms),
        budgets: c.budgets,
        budgets_timeout: Duration::from_millis(c.budgets_timeout_ms),
        keys: c.keys,
        public_base_url: c.public_base_url,
        publisher_key: c.publisher_key,
        cursor_key: c.cursor_key,
        tls_cert: c.tls_cert,
        tls_key: c.tls_key,
        http2: c.http2,
        export_decoding: DecodeLimits {
            per_key: c.export_decoders_per_key as usize,
            floor_bytes_per_sec: c.export_decode_floor_kib_per_sec * 1024,
            floor_window: Duration::from_secs(c.export_decode_window_secs),
            ..DecodeLimits::default()
        },
        header_read_timeout: Duration::from_secs(c.header_read_timeout.max(1)),
        idle_timeout: Duration::from_secs(c.idle_timeout.max(1)),
        max_header_bytes: c.max_header_bytes,
        max_connections: c.max_connections,
        max_connections_per_address: usize::try_from(c.max_connections_per_address).unwrap_or(usize::MAX),
        listen_backlog: c.listen_backlog,
        h2_max_concurrent_streams: c.h2_max_concurrent_streams,
        h2_max_send_buffer: usize::try_from(c.h2_max_send_buffer).unwrap_or(usize::MAX),
        h2_stream_timeout: Duration::from_secs(c.h2_stream_timeout),
        max_h2_streams: usize::try_from(c.max_h2_streams).unwrap_or(usize::MAX),
        control_frames_per_sec: c.max_control_frames_per_sec,
        shutdown_grace: Duration::from_secs(c.shutdown_grace),
        watch_interval: Duration::from_millis(c.watch_interval_ms.max(10)),
        auth_failures_per_min: c.auth_failures_per_min,
        max_throttled_addresses: usize::try_from(c.max_throttled_addresses).unwrap_or(usize::MAX),
        client_ip_header: c.client_ip_header,
        log_format: c.log_format,
        log_level: c.log_level,
        access_log: !c.no_access_log,
        access_log_path: c.access_log,
        threads: c.threads,
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(command) => serve_command::run(serve_args(*command)),
        Command::Keys { command } => match command {
            KeysCommand::Issue {
                keys,
                tier,
                tenant,
                rate_per_min,
            } => commands::keys_issue(&keys, tier, &tenant, rate_per_min),
            KeysCommand::Revoke { keys, key_id } => commands::keys_set_status(&keys, &key_id, KeyStatus::Revoked),
            KeysCommand::Suspend { keys, key_id } => commands::keys_set_status(&keys, &key_id, KeyStatus::Suspended),
            KeysCommand::Reinstate { keys, key_id } => commands::keys_set_status(&keys, &key_id, KeyStatus::Active),
            KeysCommand::List { keys } => commands::keys_list(&keys),
        },
        Command::Build {
            source,
            out,
            signing_key,
            previous,
            publisher_key,
            gzip_level,
            quiet,
        } => commands::build(&commands::BuildArgs {
            source,
            out,
            signing_key,
            previous,
            publisher_key,
            gzip_level,
            quiet,
        }),
        Command::Keygen { out } => commands::keygen(&out),
        Command::Mcp { base_url } => marks::cli::mcp::run(&base_url),
        Command::Publish {
            snapshot,
            to,
            publisher_key,
        } => commands::publish(&snapshot, &to, publisher_key.as_deref()),
        Command::Synth {
            companies,
            events,
            seed,
            as_of,
            out,
        } => commands::synth(&commands::SynthArgs {
            companies,
            events,
            seed,
            as_of,
            out,
        }),
        Command::Install {
            snapshot,
            to,
            publisher_key,
        } => commands::install(&snapshot, &to, publisher_key.as_deref()),
        Command::VerifySnapshot { file, publisher_key } => commands::verify_snapshot(&file, publisher_key.as_deref()),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line: the chain of causes, outermost first, never a backtrace.
            eprintln!("marks: {err:#}");
            ExitCode::FAILURE
        }
    }
}
