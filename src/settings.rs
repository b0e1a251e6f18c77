//! Everything `marks serve` is told: the clap arguments are the settings, grouped into the
//! sections `marks serve --help` shows as headings (listening, data, connections, HTTP/2,
//! access, exports, fleet, logging). Each default and each bound is written once, here, in its
//! argument's attributes; a value out of bounds is refused by the parser, never clamped.
//! Each part of the server takes only its own section.
//!
//! Durations are written with a unit (`500ms`, `10s`, `2m`); a bare number is read in the unit
//! the flag has always had (its help says which), so operators' scripts keep working. Flags
//! renamed for one prefix order and one unit style keep their old names as hidden aliases.
//!
//! Files named here (TLS, keys, cursor key, publisher key) are read in a second, named step
//! (`app::resolve`, into [`Resolved`]), with a typed error that says which file and why. This
//! file imports nothing else of the crate: every part below the app takes its section from
//! here.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use ed25519_dalek::VerifyingKey;

/// `marks serve`'s arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct Settings {
    #[command(flatten)]
    pub listen: Listen,
    #[command(flatten)]
    pub data: Data,
    #[command(flatten)]
    pub connections: Connections,
    #[command(flatten)]
    pub http2: Http2,
    #[command(flatten)]
    pub access: Access,
    #[command(flatten)]
    pub exports: Exports,
    #[command(flatten)]
    pub fleet: Fleet,
    #[command(flatten)]
    pub agents: Agents,
    #[command(flatten)]
    pub logging: Logging,
}

/// Where and how the server listens.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Listening")]
pub struct Listen {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// TLS certificate chain (PEM); with --tls-key, serve HTTPS.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Offer HTTP/2 (ALPN over TLS, prior knowledge over plain TCP) besides HTTP/1.1.
    #[arg(long)]
    pub http2: bool,
    /// Connections the kernel may queue before they are accepted, for bursts; the kernel caps it
    /// at net.core.somaxconn.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub listen_backlog: u32,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Public base URL, used in problem `type` URIs. Default: http(s)://ADDR of this server.
    #[arg(long, value_name = "URL", value_parser = absolute_url)]
    pub public_base_url: Option<String>,
    /// Once listening, write where to this file (JSON: `url`, `addr`, `pid`), atomically: how a
    /// supervisor or a test harness learns the port of `--addr HOST:0` without reading logs.
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// With TLS: the `Strict-Transport-Security` max-age every response carries, so browsers
    /// keep to HTTPS for that long; 0s sends none.
    #[arg(long, value_name = "DURATION", default_value = "365d", value_parser = seconds)]
    pub hsts_max_age: Duration,
}

impl Listen {
    /// The scheme this server answers on, here and nowhere else: https with a TLS certificate,
    /// else http. `--public-base-url` may name another (a TLS-terminating proxy in front): that
    /// is where clients reach it, not what it listens with.
    pub fn scheme(&self) -> &'static str {
        if self.tls_cert.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// The URL of the address this server listens on (`bound`: with the port the system picked
    /// for port 0).
    pub fn url_of(&self, bound: SocketAddr) -> String {
        format!("{}://{bound}", self.scheme())
    }
}

/// The snapshot folder: where `marks build` writes and `marks serve` reads and watches by
/// default, the operator's drop folder for a new dataset (snapshots/README.md).
pub const SNAPSHOTS_DIR: &str = "snapshots";
/// The snapshot `marks build` writes and `marks serve` serves when told no other.
pub const CURRENT_SNAPSHOT: &str = "snapshots/current.snap";
/// Where `marks serve` builds the bundled sample, the first time it runs with no snapshot.
pub const SAMPLE_SNAPSHOT: &str = "snapshots/sample.snap";

/// What the server serves, and how it notices a new version.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Data")]
pub struct Data {
    /// Snapshot file to serve; replaced files (rename or re-pointed symlink) are picked up live.
    /// Default: snapshots/current.snap, where `marks build` writes; when there is none, the
    /// bundled sample, built into snapshots/sample.snap on first run.
    #[arg(long, value_name = "FILE", conflicts_with = "snapshot_from")]
    pub snapshot: Option<PathBuf>,
    /// Serve the snapshots `marks publish` puts at s3://BUCKET/PREFIX: poll its CURRENT manifest,
    /// download, check and swap to each new one. AWS environment variables configure the store.
    #[arg(long, value_name = "S3_URL")]
    pub snapshot_from: Option<String>,
    /// With --snapshot-from: the directory holding the downloaded snapshot (served after a restart
    /// when the store is unreachable).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "marks-snapshot-cache",
        requires = "snapshot_from"
    )]
    pub snapshot_cache: PathBuf,
    /// With --snapshot-from: how often to look at the manifest (a bare number is milliseconds;
    /// at least 100ms).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = millis_at_least::<100>,
          alias = "poll-interval-ms")]
    pub poll_interval: Duration,
    /// Keys file (hashes only), reloaded on change. Default, when serving the bundled sample
    /// only: its demo keys.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Refuse snapshots whose header is not signed by this publisher public key (PEM).
    #[arg(long, value_name = "PUB")]
    pub publisher_key: Option<PathBuf>,
    /// Put in force a snapshot of an older or the same dataset version, or one whose publication
    /// log does not extend the log in force (a rollback). Without it such a file is refused, the
    /// snapshot in force keeps serving, and the refusal is logged and counted.
    #[arg(long)]
    pub allow_rollback: bool,
    /// How often the snapshot and keys files are checked for replacement (a bare number is
    /// milliseconds; at least 10ms).
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = millis_at_least::<10>,
          alias = "watch-interval-ms")]
    pub watch_interval: Duration,
}

/// What each connection is held to.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Connections")]
pub struct Connections {
    /// How long one request head may take to arrive (from accept, for a connection's first); a
    /// connection that keeps completing requests is never cut by it (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = seconds_at_least_one)]
    pub header_read_timeout: Duration,
    /// How long a connection may stay idle (no bytes either way) before it is closed (a bare
    /// number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = seconds_at_least_one)]
    pub idle_timeout: Duration,
    /// Largest request head accepted, in bytes (at least 8192); larger gets 431.
    #[arg(long, value_name = "BYTES", default_value_t = 16384, value_parser = clap::value_parser!(u32).range(8192..))]
    pub max_header_bytes: u32,
    /// Connections served at once; further clients wait in the listen backlog.
    #[arg(long, value_name = "N", default_value_t = 10000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Connections one client address (IPv6: one /64) may hold at once; more are closed at
    /// accept. Behind a proxy, cap per client at the proxy instead.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_address: u32,
    /// How long in-flight requests get to finish after SIGTERM/SIGINT (a bare number is
    /// seconds).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = seconds)]
    pub shutdown_grace: Duration,
}

/// HTTP/2's limits.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "HTTP/2")]
pub struct Http2 {
    /// HTTP/2 streams one connection may have open at once.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub h2_max_concurrent_streams: u32,
    /// Bytes HTTP/2 may hold per stream for a peer that does not read its response.
    #[arg(long, value_name = "BYTES", default_value_t = 65536, value_parser = clap::value_parser!(u32).range(1024..))]
    pub h2_max_send_buffer: u32,
    /// How long an HTTP/2 stream may go without its response making progress (the peer taking
    /// a piece of at most 16 KiB) before it is reset; other streams of its connection go on (a
    /// bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = seconds_at_least_one)]
    pub h2_stream_timeout: Duration,
    /// HTTP/2 streams the whole server holds at once (a few KB each while stalled); past it,
    /// new HTTP/2 requests get 503 with Retry-After until streams end or are reset.
    #[arg(long, value_name = "N", default_value_t = 20000, value_parser = clap::value_parser!(u32).range(1..),
          alias = "max-h2-streams")]
    pub h2_max_streams: u32,
    /// PING and SETTINGS frames an HTTP/2 peer may send per second before its connection is
    /// closed.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..),
          alias = "max-control-frames-per-sec")]
    pub h2_max_control_frames_per_sec: u32,
}

/// Who may ask, and what a failed attempt costs.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Access")]
pub struct Access {
    /// Failed authentications allowed per client address (IPv6: per /64) per minute; past it,
    /// a failing attempt gets 429. A request with a valid key is never refused by it.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub auth_failures_per_min: u32,
    /// Most client addresses whose failed authentications are remembered at once; past it the
    /// least recently seen are forgotten, so a flood of addresses cannot grow memory.
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(16..))]
    pub max_throttled_addresses: u32,
    /// Behind a reverse proxy: the request header to which it appends the client's address
    /// (e.g. X-Forwarded-For); its last address is the one failed authentication is counted
    /// against. Only set it when every request comes through that proxy.
    #[arg(long, value_name = "HEADER")]
    pub client_ip_header: Option<http::HeaderName>,
    /// File holding the secret that authenticates pagination cursors; share it between replicas.
    /// Default: a random key per process (cursors then do not survive a restart).
    #[arg(long, value_name = "FILE")]
    pub cursor_key: Option<PathBuf>,
}

/// Exports and series decoded for clients that do not accept gzip (the server decodes four
/// exports at once).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Exports")]
pub struct Exports {
    /// MiB of text kept once decoded from what the snapshot stores compressed only (companies'
    /// daily series, backtests, published entries): what a client without gzip, a date range
    /// and an index's constituents read; a text not kept is decoded again (a fraction of a
    /// millisecond).
    #[arg(long, value_name = "MIB", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub decoded_cache_mib: u32,
    /// Exports one key may have decoded at once; a further one gets 429 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=4))]
    pub export_decoders_per_key: u8,
    /// The least a decoded export must move, in KiB per second averaged over each window; a
    /// slower reader is cut and its decoder's place freed.
    #[arg(long, value_name = "KIB", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub export_decode_floor_kib_per_sec: u32,
    /// The window a decoded export's rate is measured over (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = seconds_at_least_one,
          alias = "export-decode-window-secs")]
    pub export_decode_window: Duration,
}

/// Running as one replica of several.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Fleet")]
pub struct Fleet {
    /// Share per-key budgets (and the failed-authentication throttle) between replicas through
    /// Redis or Valkey, at `redis://[USER:PASSWORD@]HOST:PORT[/DB]`, or a Redis Cluster at
    /// `redis-cluster://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]` (any of its nodes). Without it,
    /// budgets are per process.
    #[arg(long, value_name = "URL", alias = "budgets")]
    pub budget_store: Option<String>,
    /// With --budget-store: how long to wait for the store before metering a request with this
    /// replica's own buckets (a bare number is milliseconds; at least 1ms).
    #[arg(long, value_name = "DURATION", default_value = "5ms", value_parser = millis_at_least::<1>,
          alias = "budgets-timeout-ms")]
    pub budget_store_timeout: Duration,
    /// With --budget-store: how much of a key's per-minute budget one round trip may lease to
    /// this replica, spent here without asking again (held at most 1 s, the rest returned). A
    /// key under 600/min at the default leases one token a time, as with no lease; 0 turns
    /// leasing off. The overshoot this allows is stated in docs/fleet.md.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = millis_at_least::<0>)]
    pub budget_lease_window: Duration,
}

/// Agents: the Model Context Protocol endpoint.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Agents")]
pub struct Agents {
    /// Answer the Model Context Protocol at /mcp (streamable HTTP, stateless: no sessions are
    /// held), its tools answered in this process under each request's X-API-Key, metered as
    /// the API is. Off unless given (on when serving the bundled sample): an endpoint that
    /// takes POST bodies is one more surface to run and watch (docs/operations.md).
    #[arg(long)]
    pub mcp: bool,
    /// A browser origin allowed to call /mcp, as scheme://host or scheme://host:port (http or
    /// https; no path, query, userinfo or trailing slash; repeat for more). Matched exactly on
    /// scheme, host and port, a port-less entry meaning the scheme's default (80 or 443). A
    /// request whose Origin is any other is refused (403), against DNS rebinding; agents
    /// outside a browser send no Origin.
    #[arg(long, value_name = "ORIGIN", value_parser = Origin::parse)]
    pub mcp_allowed_origin: Vec<Origin>,
    /// The largest /mcp request body accepted; a larger one is refused (413).
    #[arg(long, value_name = "BYTES", default_value_t = 65536, value_parser = clap::value_parser!(u32).range(1024..))]
    pub mcp_max_request_bytes: u32,
}

/// What the server writes about itself.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Logging")]
pub struct Logging {
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log filter (tracing env-filter syntax); RUST_LOG overrides it.
    #[arg(long, value_name = "FILTER", default_value = "info")]
    pub log_level: String,
    /// Do not log one line per request.
    #[arg(long)]
    pub no_access_log: bool,
    /// Append the per-request lines to this file instead of stdout; SIGUSR1 reopens it (for
    /// logrotate: rename the file, then signal).
    #[arg(long, value_name = "PATH", conflicts_with = "no_access_log")]
    pub access_log: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

impl Default for Settings {
    /// The defaults of the arguments' attributes: the only place they are written.
    fn default() -> Settings {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            settings: Settings,
        }
        Only::parse_from(["marks"]).settings
    }
}

/// What the settings name, resolved at start: the URL problems are under, the publisher key,
/// and where the snapshot and keys files are.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub public_base_url: String,
    pub publisher_key: Option<VerifyingKey>,
    /// `--allow-rollback`: a snapshot need not succeed the one in force.
    pub allow_rollback: bool,
    pub snapshot_path: PathBuf,
    pub keys_path: PathBuf,
}

/// A web origin (RFC 6454): scheme, host and port, as `--mcp-allowed-origin` names one and a
/// browser's `Origin` header sends one. Scheme and host are kept in lowercase, and the port
/// always (the scheme's default when none was written), so two origins are the same exactly
/// when they are equal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub scheme: &'static str,
    pub host: String,
    pub port: u16,
}

impl Origin {
    /// `scheme://host[:port]`, http or https, and nothing more; what is wrong otherwise.
    pub fn parse(text: &str) -> Result<Origin, String> {
        let (scheme, rest) = text
            .split_once("://")
            .ok_or("not an origin: write scheme://host or scheme://host:port, such as https://app.example.com")?;
        let (scheme, default_port) = match scheme.to_ascii_lowercase().as_str() {
            "http" => ("http", 80),
            "https" => ("https", 443),
            _ => return Err(format!("the scheme {scheme:?} is not http or https")),
        };
        if let Some(extra) = rest.find(['/', '?', '#']) {
            return Err(format!(
                "an origin has no path, query or trailing slash: remove {:?}",
                &rest[extra..]
            ));
        }
        if rest.contains('@') {
            return Err("an origin has no user name or password (user@)".into());
        }
        // The port follows the last colon, outside an IPv6 address's brackets.
        let (host, port) = match rest.rfind(':') {
            Some(colon) if !rest[colon..].contains(']') => (&rest[..colon], Some(&rest[colon + 1..])),
            _ => (rest, None),
        };
        let port = match port {
            None => default_port,
            Some(digits) => match digits.parse::<u16>() {
                Ok(port) if port > 0 && digits.bytes().all(|b| b.is_ascii_digit()) => port,
                _ => return Err(format!("the port {digits:?} is not a number from 1 to 65535")),
            },
        };
        let bracketed = host.len() > 2 && host.starts_with('[') && host.ends_with(']');
        let valid_host = if bracketed {
            host[1..host.len() - 1].parse::<std::net::Ipv6Addr>().is_ok()
        } else {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        };
        if !valid_host {
            return Err(format!(
                "the host {host:?} is not a name, an IPv4 address or a bracketed IPv6 address"
            ));
        }
        Ok(Origin {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// An absolute http(s) URL of visible ASCII, such as https://api.example.com.
fn absolute_url(text: &str) -> Result<String, String> {
    let is_absolute = ["http://", "https://"]
        .iter()
        .any(|prefix| text.len() > prefix.len() && text.starts_with(prefix));
    if !is_absolute || text.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err("not an absolute http(s) URL such as https://api.example.com".into());
    }
    Ok(text.trim_end_matches('/').to_string())
}

/// A duration with a unit (`500ms`, `10s`, `2m`), or a bare number in `bare`.
fn duration(text: &str, bare: fn(u64) -> Duration) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(number) => Ok(bare(number)),
        Err(_) => {
            humantime::parse_duration(text).map_err(|e| format!("{e}; write a duration such as 500ms, 10s or 2m"))
        }
    }
}

fn seconds(text: &str) -> Result<Duration, String> {
    duration(text, Duration::from_secs)
}

fn seconds_at_least_one(text: &str) -> Result<Duration, String> {
    let value = seconds(text)?;
    if value < Duration::from_secs(1) {
        return Err("must be at least 1s".into());
    }
    Ok(value)
}

fn millis_at_least<const MIN: u64>(text: &str) -> Result<Duration, String> {
    let value = duration(text, Duration::from_millis)?;
    if value < Duration::from_millis(MIN) {
        return Err(format!("must be at least {MIN}ms"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Parser, Debug)]
    struct Serve {
        #[command(flatten)]
        settings: Settings,
    }

    fn parse(args: &[&str]) -> Result<Settings, String> {
        Serve::try_parse_from(std::iter::once("marks").chain(args.iter().copied()))
            .map(|s| s.settings)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_come_from_the_arguments() {
        let settings = Settings::default();
        assert_eq!(settings.connections.max_header_bytes, 16384);
        assert_eq!(settings.connections.idle_timeout, Duration::from_secs(60));
        assert_eq!(settings.data.watch_interval, Duration::from_millis(500));
        assert_eq!(settings.fleet.budget_store_timeout, Duration::from_millis(5));
        assert_eq!(settings.exports.export_decode_floor_kib_per_sec, 256);
    }

    #[test]
    fn bounds_are_refused_never_clamped() {
        let err = parse(&["--max-header-bytes", "100"]).unwrap_err();
        assert!(err.contains("--max-header-bytes") && err.contains("8192"), "{err}");
        assert!(parse(&["--watch-interval", "5ms"])
            .unwrap_err()
            .contains("at least 10ms"));
        assert!(parse(&["--idle-timeout", "0"]).unwrap_err().contains("at least 1s"));
        assert!(parse(&["--threads", "0"]).is_err());
        assert!(parse(&["--public-base-url", "api.example.com"]).is_err());
        assert!(
            parse(&["--tls-cert", "cert.pem"]).is_err(),
            "--tls-cert needs --tls-key"
        );
    }

    #[test]
    fn an_allowed_origin_is_scheme_host_and_port_and_nothing_else() {
        let origin = |text: &str| Origin::parse(text).map(|o| o.to_string());
        assert_eq!(origin("http://localhost").unwrap(), "http://localhost:80");
        assert_eq!(
            origin("HTTPS://App.Example.COM").unwrap(),
            "https://app.example.com:443"
        );
        assert_eq!(
            origin("https://app.example.com:8443").unwrap(),
            "https://app.example.com:8443"
        );
        assert_eq!(origin("http://[::1]:3000").unwrap(), "http://[::1]:3000");
        assert_eq!(origin("http://[::1]").unwrap(), "http://[::1]:80");
        assert_eq!(origin("http://127.0.0.1:80"), origin("http://127.0.0.1"));
        for (bad, says) in [
            ("localhost:3000", "scheme://host"),
            ("app.example.com", "scheme://host"),
            ("ftp://example.com", "not http or https"),
            ("https://example.com/", "trailing slash"),
            ("https://example.com/app", "no path"),
            ("https://example.com?x=1", "query"),
            ("https://user@example.com", "user name"),
            ("https://example.com:0", "port"),
            ("https://example.com:99999", "port"),
            ("https://example.com:", "port"),
            ("https://example.com:+80", "port"),
            ("https://", "host"),
            ("https://exa mple.com", "host"),
            ("http://[nope]:80", "host"),
        ] {
            let err = Origin::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        let err = parse(&["--mcp-allowed-origin", "localhost:3000"]).unwrap_err();
        assert!(
            err.contains("localhost:3000") && err.contains("--mcp-allowed-origin"),
            "{err}"
        );
        let settings = parse(&[
            "--mcp-allowed-origin",
            "https://a.example",
            "--mcp-allowed-origin",
            "http://b:8080",
        ])
        .unwrap();
        assert_eq!(settings.agents.mcp_allowed_origin.len(), 2);
    }

    #[test]
    fn durations_take_units_and_bare_numbers_keep_their_old_unit() {
        let settings = parse(&[
            "--watch-interval",
            "2s",
            "--idle-timeout",
            "90",
            "--budget-store-timeout",
            "20",
        ])
        .unwrap();
        assert_eq!(settings.data.watch_interval, Duration::from_secs(2));
        assert_eq!(settings.connections.idle_timeout, Duration::from_secs(90));
        assert_eq!(settings.fleet.budget_store_timeout, Duration::from_millis(20));
        assert!(parse(&["--idle-timeout", "soon"])
            .unwrap_err()
            .contains("such as 500ms"));
    }

    #[test]
    fn old_flag_names_still_work() {
        let settings = parse(&[
            "--watch-interval-ms",
            "200",
            "--max-h2-streams",
            "7",
            "--max-control-frames-per-sec",
            "9",
            "--budgets",
            "redis://127.0.0.1:6379",
            "--budgets-timeout-ms",
            "3",
            "--export-decode-window-secs",
            "5",
        ])
        .unwrap();
        assert_eq!(settings.data.watch_interval, Duration::from_millis(200));
        assert_eq!(settings.http2.h2_max_streams, 7);
        assert_eq!(settings.http2.h2_max_control_frames_per_sec, 9);
        assert_eq!(settings.fleet.budget_store.as_deref(), Some("redis://127.0.0.1:6379"));
        assert_eq!(settings.fleet.budget_store_timeout, Duration::from_millis(3));
        assert_eq!(settings.exports.export_decode_window, Duration::from_secs(5));
    }
}
