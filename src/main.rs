//! `marks`: the one binary of the Valuation Marks service. It parses the command line once and
//! hands each subcommand its arguments; all behaviour lives in the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use marks::commands;

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
    /// Compile a dataset directory (dataset.toml, companies.csv, events.csv) into one snapshot file.
    Build {
        /// Dataset directory holding dataset.toml, companies.csv and events.csv.
        #[arg(long, value_name = "DIR")]
        source: PathBuf,
        /// Snapshot file to write (written to a temp file beside it, then renamed into place).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Ed25519 private key (PKCS#8 PEM, from `marks keygen`) that signs the resolution records.
        #[arg(long, value_name = "FILE")]
        signing_key: Option<PathBuf>,
        /// The snapshot this one succeeds: refuse the build if any of its events changed or vanished,
        /// and keep publishing its signing keys.
        #[arg(long, value_name = "FILE")]
        previous: Option<PathBuf>,
        /// Ed25519 private key that signs the snapshot header, for servers run with --publisher-key.
        #[arg(long, value_name = "FILE")]
        publisher_key: Option<PathBuf>,
        /// Gzip level (1-9) of the precompressed body variants; 0 stores none.
        #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
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
    /// Write a synthetic dataset drawn from the methodology's own model, for scale tests and benches.
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
    /// Check a snapshot file offline the way the server does, and print its versions.
    VerifySnapshot {
        /// The snapshot file.
        file: PathBuf,
        /// Also require a header signature by this publisher public key (PEM).
        #[arg(long, value_name = "PUB")]
        publisher_key: Option<PathBuf>,
    },
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
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
