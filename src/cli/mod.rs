//! The `marks` command line: `serve`, the offline commands (build, synth, keygen,
//! verify-snapshot, install, publish, keys) and `mcp`. The command line is parsed once, here;
//! `marks serve`'s arguments are the server's [`Settings`].

pub mod commands;
pub mod mcp;
pub mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use marks_format::rules::tiers::Tier;

use crate::keys::file::KeyStatus;
use crate::settings::Settings;

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
    Serve(Box<Settings>),
    /// Manage API keys: the keys file holds only hashes; a key is shown once, when issued.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Compile a dataset directory (dataset.toml, companies.csv, events.csv) into one snapshot file.
    Build(commands::BuildArgs),
    /// Make a new Ed25519 signing key: FILE (private, mode 0600) and FILE.pub; prints its kid.
    Keygen {
        /// Path of the new private key; refuses to overwrite an existing file.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Write a synthetic dataset from a selection world (companies report after rises), for scale tests and benches.
    Synth(commands::SynthArgs),
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
        /// Install it even if it does not succeed the snapshot at LIVE (an older or the same
        /// dataset version, or a publication log that does not extend LIVE's).
        #[arg(long)]
        rollback: bool,
    },
    /// Publish a snapshot to S3-compatible object storage for replicas run with --snapshot-from:
    /// check it, upload it as PREFIX/snapshots/<sha256>.snap, then point PREFIX/CURRENT at it.
    /// Endpoint and credentials come from the AWS environment variables (docs/fleet.md, "Publishing").
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

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(settings) => serve::run(*settings),
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
        Command::Build(args) => commands::build(&args),
        Command::Keygen { out } => commands::keygen(&out),
        Command::Mcp { base_url } => mcp::run(&base_url),
        Command::Publish {
            snapshot,
            to,
            publisher_key,
        } => commands::publish(&snapshot, &to, publisher_key.as_deref()),
        Command::Synth(args) => commands::synth(&args),
        Command::Install {
            snapshot,
            to,
            publisher_key,
            rollback,
        } => commands::install(&snapshot, &to, publisher_key.as_deref(), rollback),
        Command::VerifySnapshot { file, publisher_key } => commands::verify_snapshot(&file, publisher_key.as_deref()),
    }
}

/// The `marks` binary: parses the command line once and runs the subcommand; on failure, one
/// line on stderr and a failing exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => err.exit(),
        Err(err) => {
            // A usage error is one line too: clap's first paragraph (which names the argument
            // and the rule it broke), joined.
            let rendered = err.to_string();
            let first: Vec<&str> = rendered
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect();
            eprintln!("marks: {} (see --help)", first.join(" ").trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line: the chain of causes, outermost first, never a backtrace.
            eprintln!("marks: {err:#}");
            ExitCode::FAILURE
        }
    }
}
