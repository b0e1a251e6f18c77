//! The offline subcommands of `marks`: build, keygen, synth, verify-snapshot and keys.
//!
//! Each takes already-parsed arguments, does one job and returns a one-line error on failure;
//! printing of results is here; the arguments of `build` and `synth` are declared here with
//! their commands, the rest in `mod.rs`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use marks_builder::render::signing;
use marks_builder::synth::{self, SynthOptions};
use marks_format::rules::day::Day;
use marks_format::rules::tiers::Tier;

use crate::keys::file::{self as keys_file, KeyStatus};
use marks_builder::BuildOptions;
use marks_format::{OpenOptions, Snapshot};

/// The repository's bundled sample: dataset, demo signing key and demo API keys.
pub fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample")
}

pub fn demo_signing_key() -> PathBuf {
    sample_dir().join("demo-signing-key.pem")
}

pub fn demo_keys_file() -> PathBuf {
    sample_dir().join("demo-keys.toml")
}

/// `marks build`'s arguments.
#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Dataset directory holding dataset.toml, companies.csv and events.csv.
    #[arg(long, value_name = "DIR")]
    pub source: PathBuf,
    /// Snapshot file to write (written to a temp file beside it, then renamed into place). The
    /// default is what `marks serve` serves and watches by default: a build there goes live.
    #[arg(long, value_name = "FILE", default_value = crate::settings::CURRENT_SNAPSHOT)]
    pub out: PathBuf,
    /// Ed25519 private key (PKCS#8 PEM, from `marks keygen`) that signs the resolution records.
    #[arg(long, value_name = "FILE", required = true)]
    pub signing_key: PathBuf,
    /// The snapshot this one succeeds: refuse the build if any of its events changed or vanished,
    /// keep publishing its signing keys, and append to its publication log.
    #[arg(long, value_name = "FILE")]
    pub previous: Option<PathBuf>,
    /// Ed25519 private key that signs the snapshot header, for servers run with --publisher-key.
    #[arg(long, value_name = "FILE")]
    pub publisher_key: Option<PathBuf>,
    /// Gzip level (1-9) of the precompressed body variants and of what is stored compressed only
    /// (the series, the exports, the scored targets, at level 1 when this is 0); 0 stores no gzip
    /// variant of the other bodies. 4 compresses series as well as 6 here at two thirds of the
    /// time.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub gzip_level: u32,
    /// Print only the summary line (no scorecard, no progress bar).
    #[arg(long)]
    pub quiet: bool,
    /// Also write the publication log, as this build leaves it, to FILE (NDJSON, the form of
    /// `GET /v1/export/log` and of a dataset's `publication_log`).
    #[arg(long, value_name = "FILE")]
    pub log_out: Option<PathBuf>,
}

pub fn build(args: &BuildArgs) -> Result<()> {
    let started = Instant::now();
    // The snapshot folder is made on first use; any other folder is the operator's to make.
    if args.out.starts_with(crate::settings::SNAPSHOTS_DIR) {
        std::fs::create_dir_all(crate::settings::SNAPSHOTS_DIR)
            .with_context(|| format!("cannot make the snapshot folder {}", crate::settings::SNAPSHOTS_DIR))?;
    }
    let signing_key = signing::read_signing_key(&args.signing_key)?;
    let publisher_key = args
        .publisher_key
        .as_deref()
        .map(signing::read_signing_key)
        .transpose()?;
    let report = marks_builder::build(&BuildOptions {
        source: args.source.clone(),
        out: args.out.clone(),
        signing_key,
        previous: args.previous.clone(),
        publisher_key,
        gzip_level: args.gzip_level,
        progress: !args.quiet,
        log_out: args.log_out.clone(),
    })?;
    if !args.quiet {
        println!("{}", report.scorecard);
    }
    println!(
        "built {} (dataset {}): {} companies, {} events, {} series points, {} bytes in {:.2}s (read {:.2}s, fit {:.2}s, render+write {:.2}s); records signed by kid {}",
        args.out.display(),
        report.dataset_version,
        report.companies,
        report.events,
        report.series_points,
        report.bytes,
        started.elapsed().as_secs_f64(),
        report.load_time.as_secs_f64(),
        report.fit_time.as_secs_f64(),
        report.render_time.as_secs_f64(),
        report.kid,
    );
    println!("publication log: {}", report.log);
    Ok(())
}

pub fn keygen(out: &Path) -> Result<()> {
    let key = signing::generate_key();
    let public = signing::write_new_key(out, &key)?;
    println!("{}", signing::kid(&key.verifying_key()));
    eprintln!(
        "wrote private key {} (mode 0600) and public key {}; the line above is its kid",
        out.display(),
        public.display()
    );
    Ok(())
}

/// `marks synth`'s arguments.
#[derive(clap::Args, Debug)]
pub struct SynthArgs {
    /// Number of companies.
    #[arg(long, value_name = "N")]
    pub companies: usize,
    /// Total number of events (default: 8 per company).
    #[arg(long, value_name = "N")]
    pub events: Option<usize>,
    /// Random seed; the same seed gives the same files.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// The dataset's as_of date, YYYY-MM-DD.
    #[arg(long, value_name = "DATE")]
    pub as_of: Option<String>,
    /// Directory to write the dataset into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn synth(args: &SynthArgs) -> Result<()> {
    let mut options = SynthOptions::new(args.companies, args.seed);
    if let Some(events) = args.events {
        options.events = events;
    }
    if let Some(as_of) = &args.as_of {
        options.as_of = Day::parse(as_of).with_context(|| format!("--as-of {as_of:?} is not a date YYYY-MM-DD"))?;
    }
    let report =
        synth::generate(&options, &args.out).with_context(|| format!("cannot write {}", args.out.display()))?;
    println!(
        "wrote synthetic dataset {}: {} companies, {} events (seed {})",
        args.out.display(),
        report.companies,
        report.events,
        args.seed
    );
    Ok(())
}

pub fn verify_snapshot(path: &Path, publisher_key: Option<&Path>) -> Result<()> {
    let options = OpenOptions {
        publisher_key: publisher_key.map(signing::read_verifying_key).transpose()?,
    };
    let started = Instant::now();
    let snapshot = Snapshot::open(path, &options).with_context(|| format!("{} refused", path.display()))?;
    let header = snapshot.header();
    let index = snapshot.index();
    println!(
        "{}: ok in {:.3}s; format {}, dataset {}, methodology {}, as_of {}, {} companies, {} events, {} bytes, publisher {}",
        path.display(),
        started.elapsed().as_secs_f64(),
        header.format_version,
        header.dataset_version,
        header.methodology_version,
        header.as_of,
        index.companies.len(),
        index.events.len(),
        snapshot.file_len(),
        match &header.publisher {
            Some((key, _)) => ed25519_dalek::VerifyingKey::from_bytes(key)
                .map(|k| format!("signed, kid {}", signing::kid(&k)))
                .unwrap_or_else(|_| "signed by an invalid key".into()),
            None => "unsigned".into(),
        }
    );
    let exports = &index.exports;
    for (name, export) in [
        ("companies", &exports.companies),
        ("series 80", &exports.series_80),
        ("series 95", &exports.series_95),
        ("companies CSV", &exports.companies_csv),
        ("series 80 CSV", &exports.series_80_csv),
        ("series 95 CSV", &exports.series_95_csv),
    ] {
        println!(
            "  export {name}: {} bytes gzip, {} bytes of text",
            export.gzip.len, export.identity_len
        );
    }
    print_bytes_by_part(index);
    let versions = index.changes.versions.as_slice();
    println!(
        "  change log: {}, {} to {}",
        marks_builder::compile::versions(versions.len()),
        versions.first().map_or("", |v| v.as_str()),
        versions.last().map_or("", |v| v.as_str())
    );
    Ok(())
}

/// Where a snapshot's bytes are: each kind of body summed over the companies (its text and its
/// gzip variant), and the scorecard's, largest first. The lever for a snapshot's size is the
/// part that dominates, so the operator and the scale bench read it here.
fn print_bytes_by_part(index: &marks_format::file::layout::ArchivedIndex) {
    use marks_format::file::layout::ArchivedBody;
    let sizes = |body: &ArchivedBody| {
        let gzip = body.gzip.as_ref().map_or(0, |g| g.bytes.len.to_native());
        (body.identity.len.to_native(), gzip)
    };
    type Part = fn(&marks_format::file::layout::ArchivedCompanyEntry) -> &ArchivedBody;
    let company_parts: [(&str, Part); 4] = [
        ("profile", |c| &c.profile),
        ("events JSON", |c| &c.events),
        ("events CSV", |c| &c.events_csv),
        ("resolution record", |c| &c.resolution),
    ];
    let document_names = [
        "backtest",
        "backtest, whole",
        "published JSON",
        "published JSON, whole",
        "published CSV",
        "published CSV, whole",
    ];
    let mut rows: Vec<(String, u64, u64)> = company_parts
        .iter()
        .map(|(name, part)| {
            let (text, gzip) = index
                .companies
                .iter()
                .map(|c| sizes(part(c)))
                .fold((0, 0), |(t, g), (a, b)| (t + a, g + b));
            (format!("companies' {name}"), text, gzip)
        })
        .collect();
    for (i, name) in document_names.iter().enumerate() {
        let gzip = index
            .companies
            .iter()
            .map(|c| c.documents()[i].gzip.len.to_native())
            .sum();
        rows.push((format!("companies' {name} (gzip only)"), 0, gzip));
    }
    let list_rows = index
        .companies
        .iter()
        .map(|c| c.list_item.len.to_native() + c.list_row_csv.len.to_native())
        .sum();
    rows.push(("companies' list rows (JSON, CSV)".to_owned(), list_rows, 0));
    let exports = &index.exports;
    for (name, export) in [
        ("scorecard targets, public", &index.scorecard_targets),
        ("scorecard targets, whole", &index.scorecard_targets_full),
        ("export companies", &exports.companies),
        ("export companies CSV", &exports.companies_csv),
        ("export series 80, every company's series", &exports.series_80),
        ("export series 95, every company's series", &exports.series_95),
        ("export series 80 CSV, every company's series", &exports.series_80_csv),
        ("export series 95 CSV, every company's series", &exports.series_95_csv),
    ] {
        rows.push((format!("{name} (gzip only)"), 0, export.gzip.len.to_native()));
    }
    for (name, body) in [
        ("scorecard, public", &index.scorecard),
        ("scorecard, whole", &index.scorecard_full),
    ] {
        let (text, gzip) = sizes(body);
        rows.push((name.to_owned(), text, gzip));
    }
    rows.sort_by_key(|(_, text, gzip)| std::cmp::Reverse(text + gzip));
    for (name, text, gzip) in rows {
        println!("  bytes, {name}: {text} text, {gzip} gzip");
    }
}

/// `marks publish`: checks the snapshot and publishes it to object storage for replicas run
/// with `--snapshot-from` (`snapshot_source` describes the layout).
pub fn publish(snapshot: &Path, to: &str, publisher_key: Option<&Path>) -> Result<()> {
    let location = crate::snapshot::object_store::Location::parse(to)?;
    let options = OpenOptions {
        publisher_key: publisher_key.map(signing::read_verifying_key).transpose()?,
    };
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let manifest = runtime.block_on(crate::snapshot::object_store::publish(snapshot, &location, options))?;
    eprintln!(
        "published {} to {location} as snapshots/{}.snap (dataset {}, methodology {}, {} bytes) in {:.2}s; \
         replicas polling it swap at their next look",
        snapshot.display(),
        manifest.sha256,
        manifest.dataset_version,
        manifest.methodology_version,
        manifest.size,
        started.elapsed().as_secs_f64()
    );
    println!("{}", manifest.sha256);
    Ok(())
}

/// Puts a snapshot in place of the one a server watches, the safe way: checks it as the server
/// would, and that it succeeds the snapshot at `live` (a newer dataset version whose publication
/// log extends live's; `rollback` waives that), copies it to a temporary file beside `live`,
/// fsyncs it and renames it over `live`, so the server sees the old file or the whole new one and
/// never a partial copy.
pub fn install(snapshot: &Path, live: &Path, publisher_key: Option<&Path>, rollback: bool) -> Result<()> {
    let options = OpenOptions {
        publisher_key: publisher_key.map(signing::read_verifying_key).transpose()?,
    };
    let checked = Snapshot::open(snapshot, &options)
        .with_context(|| format!("{} refused; {} left as it was", snapshot.display(), live.display()))?;
    if !rollback && live.exists() {
        // What is at `live` now is what a server serves; a file there that fails its checks
        // is in force nowhere, so it binds nothing.
        if let Ok(in_force) = Snapshot::open(live, &OpenOptions::default()) {
            marks_format::file::succession::check_succession(&checked, &in_force).with_context(|| {
                format!(
                    "{} refused: it does not succeed {} (dataset {}); {} left as it was",
                    snapshot.display(),
                    live.display(),
                    in_force.header().dataset_version,
                    live.display()
                )
            })?;
        }
    }
    let header = checked.header().clone();
    drop(checked);
    let started = Instant::now();
    let bytes = marks_format::file::atomic_file::copy(snapshot, live)
        .with_context(|| format!("cannot install {} as {}", snapshot.display(), live.display()))?;
    eprintln!(
        "installed {} as {} (dataset {}, methodology {}, {bytes} bytes) in {:.2}s; a server watching it swaps to it at its next look",
        snapshot.display(),
        live.display(),
        header.dataset_version,
        header.methodology_version,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Builds the bundled sample snapshot with the demo key when it is missing or older than its
/// sources or this program, so that `marks serve` works on a fresh clone and shows what this
/// build renders.
pub fn ensure_sample_snapshot(path: &Path) -> Result<()> {
    // The sample's files, and this program: a new build of it may render the sample anew.
    let program = std::env::current_exe()
        .and_then(std::fs::metadata)
        .and_then(|m| m.modified());
    let newest_source = [
        "dataset.toml",
        "companies.csv",
        "events.csv",
        "aliases.csv",
        "publication-log.jsonl",
        "demo-signing-key.pem",
    ]
    .iter()
    .filter_map(|f| std::fs::metadata(sample_dir().join(f)).and_then(|m| m.modified()).ok())
    .chain(program.ok())
    .max();
    let built = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    // A sample built by an older version of this program is rebuilt too, not refused.
    let current_format = || {
        let mut header = [0u8; marks_format::file::layout::HEADER_LEN];
        std::fs::File::open(path)
            .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut header))
            .ok()
            .and_then(|()| marks_format::file::layout::Header::decode(&header).ok())
            .is_some_and(|h| h.format_version == marks_format::file::layout::FORMAT_VERSION)
    };
    if matches!((built, newest_source), (Some(built), Some(source)) if built >= source) && current_format() {
        return Ok(());
    }
    eprintln!(
        "building the sample snapshot {} from {}",
        path.display(),
        sample_dir().display()
    );
    build(&BuildArgs {
        source: sample_dir(),
        out: path.to_owned(),
        signing_key: demo_signing_key(),
        previous: None,
        publisher_key: None,
        gzip_level: 4,
        quiet: true,
        log_out: None,
    })
}

pub fn keys_issue(path: &Path, tier: Tier, tenant: &str, rate_per_min: Option<u32>) -> Result<()> {
    let (key_id, key) = crate::keys::edit::issue(path, tier, tenant, rate_per_min)?;
    // The key alone on stdout, so scripts can capture it; everything else on stderr.
    println!("{key}");
    eprintln!(
        "issued {key_id} ({tier}, tenant {tenant:?}, {} requests/min) into {}; the key above is shown only now",
        rate_per_min.unwrap_or(tier.rate_per_min()),
        path.display()
    );
    Ok(())
}

/// Revokes, suspends or reinstates a key.
pub fn keys_set_status(path: &Path, key_id: &str, status: KeyStatus) -> Result<()> {
    crate::keys::edit::set_status(path, key_id, status)?;
    let done = match status {
        KeyStatus::Active => "reinstated",
        KeyStatus::Revoked => "revoked",
        KeyStatus::Suspended => "suspended",
    };
    eprintln!(
        "{done} {key_id} in {}; a running server picks it up on its next reload",
        path.display()
    );
    Ok(())
}

pub fn keys_list(path: &Path) -> Result<()> {
    // A file the server would refuse is refused here too, with the server's reason.
    crate::keys::ring::KeyRing::load(path)
        .with_context(|| format!("{} is not a keys file `marks serve` accepts", path.display()))?;
    println!(
        "{:<20} {:<20} {:<11} {:<10} {:<11} {:>10}",
        "key_id", "tenant", "tier", "status", "created", "rate/min"
    );
    for entry in keys_file::list(path)? {
        let rate = entry
            .rate_per_min
            .or_else(|| Tier::parse(&entry.tier).map(Tier::rate_per_min))
            .map_or("-".to_string(), |r| r.to_string());
        println!(
            "{:<20} {:<20} {:<11} {:<10} {:<11} {:>10}",
            entry.key_id,
            entry.tenant,
            entry.tier,
            format!("{:?}", entry.status).to_lowercase(),
            entry.created,
            rate
        );
    }
    Ok(())
}
