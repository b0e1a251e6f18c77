//! The bundled sample and its demo keys, read independently of the builder, and snapshots
//! of it and of its later versions built by the real builder.

use super::*;

pub const FREE: &str = "vmk_demo_free";
pub const RESEARCH: &str = "vmk_demo_research";
pub const PRO: &str = "vmk_demo_pro";
pub const BUSINESS: &str = "vmk_demo_business";
pub const ENTERPRISE: &str = "vmk_demo_enterprise";
pub const REVOKED: &str = "vmk_demo_revoked";

/// The three numbers the scorecard scores, in its order (docs/methodology.md): the mark, the
/// next-print forecast and the last print.
pub const SCORED_NUMBERS: [&str; 3] = ["mark", "next_print", "last_print"];

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn sample_dir() -> PathBuf {
    repo().join("sample")
}

pub fn demo_signing_key() -> ed25519_dalek::SigningKey {
    marks_builder::render::signing::read_signing_key(&sample_dir().join("demo-signing-key.pem")).expect("demo key")
}

/// Builds a dataset directory into a snapshot with the demo signing key.
pub fn build(source: &Path, out: &Path) -> BuildReport {
    try_build(source, out, None).unwrap_or_else(|e| panic!("build of {} failed: {e}", source.display()))
}

pub fn try_build(source: &Path, out: &Path, previous: Option<&Path>) -> Result<BuildReport, marks_builder::BuildError> {
    marks_builder::build(&BuildOptions {
        source: source.to_owned(),
        out: out.to_owned(),
        signing_key: demo_signing_key(),
        previous: previous.map(Path::to_owned),
        publisher_key: None,
        gzip_level: 1,
        progress: false,
        log_out: None,
    })
}

/// The bundled sample, built once per test process into Cargo's temporary directory for the
/// tests (`target/tmp`): a fixed name, replaced by each run's build, so runs leave no copies
/// behind (the build writes a temporary file and renames it, so a process that has the old
/// one open keeps reading it).
pub fn sample_snapshot() -> &'static Path {
    static SNAPSHOT: OnceLock<PathBuf> = OnceLock::new();
    SNAPSHOT.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sample.snap");
        build(&sample_dir(), &out);
        out
    })
}

/// The sample's companies.csv and events.csv as rows of fields, read independently of the
/// builder, so tests compare the API against the source data rather than against itself.
pub fn sample_csv(name: &str) -> Vec<Vec<String>> {
    let mut reader = csv::Reader::from_path(sample_dir().join(name)).expect("sample csv");
    reader
        .records()
        .map(|r| r.expect("record").iter().map(str::to_string).collect())
        .collect()
}

/// One row of a sample CSV, by column name.
pub type Record = std::collections::HashMap<String, String>;

/// The sample's companies.csv or events.csv as rows by column name, read independently of the
/// builder.
pub fn sample_records(name: &str) -> Vec<Record> {
    let mut reader = csv::Reader::from_path(sample_dir().join(name)).expect("sample csv");
    let headers = reader.headers().expect("header row").clone();
    reader
        .records()
        .map(|r| {
            let r = r.expect("record");
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// The sample's effective events (docs/design.md section 2): the records no later record
/// supersedes or retracts, retractions left out, in file order. What the marks, lists and
/// pages read; getMarkEvents returns every record.
pub fn sample_effective_events() -> Vec<Record> {
    let records = sample_records("events.csv");
    let gone: std::collections::HashSet<String> = records
        .iter()
        .map(|r| r["supersedes"].clone())
        .filter(|s| !s.is_empty())
        .collect();
    records
        .into_iter()
        .filter(|r| !gone.contains(&r["event_id"]) && r["event_type"] != "retraction")
        .collect()
}

/// One company's effective history as docs/design.md sections 2, 3 and 4a read it, worked out
/// here from the source CSV independently of the builder.
#[derive(Debug, Default)]
pub struct SampleHistory {
    /// Observations of value a mark may start from, in date order (file order within a day).
    pub anchors: Vec<Record>,
    /// What ended or fixed its private marks: `listed`, `sold`, `bankrupt`, `wound_down` (the
    /// first outcome), or `sale_agreed` (an agreed sale no later record terminated and no later
    /// value followed).
    pub outcome: Option<(&'static str, Record)>,
}

impl SampleHistory {
    /// The outcome that ended the private period, if any (a pending sale did not).
    pub fn ended(&self) -> Option<&Record> {
        self.outcome
            .as_ref()
            .filter(|(kind, _)| *kind != "sale_agreed")
            .map(|(_, record)| record)
    }

    /// The anchor the last mark starts from: the last one, or for a company whose private
    /// period ended the last one before the outcome's day.
    pub fn mark_anchor(&self) -> Option<&Record> {
        let ended_on = self.ended().map(|o| o["occurred_on"].as_str());
        self.anchors
            .iter()
            .rfind(|a| ended_on.is_none_or(|end| a["occurred_on"].as_str() < end))
    }
}

/// Every company's effective history, by slug.
pub fn sample_histories() -> std::collections::BTreeMap<String, SampleHistory> {
    let mut by_company: std::collections::BTreeMap<String, Vec<Record>> = Default::default();
    for record in sample_effective_events() {
        by_company.entry(record["slug"].clone()).or_default().push(record);
    }
    let anchor_types = [
        "primary_round",
        "down_round",
        "tender_offer",
        "secondary_sale",
        "acquisition",
        "fund_mark",
    ];
    by_company
        .into_iter()
        .map(|(slug, mut records)| {
            // Date order, file order within a day (the sort is stable).
            records.sort_by(|a, b| a["occurred_on"].cmp(&b["occurred_on"]));
            let mut history = SampleHistory::default();
            let mut pending: Option<Record> = None;
            for record in records {
                let kind = record["event_type"].as_str();
                let listing = matches!(kind, "ipo" | "direct_listing" | "spac_listing");
                // Data v6: a listing ends the private period once closed; one announced is an
                // agreed deal, one in talks (a filing) evidence only.
                let firmness = record.get("reported_as").map_or("", String::as_str);
                if listing && firmness == "in_talks" {
                    continue;
                }
                if listing && firmness == "announced" {
                    pending = Some(record.clone());
                    history.anchors.push(record);
                    continue;
                }
                let ended = match kind {
                    "ipo" | "direct_listing" | "spac_listing" => Some("listed"),
                    "acquisition_closed" => Some("sold"),
                    "bankruptcy" => Some("bankrupt"),
                    "wind_down" => Some("wound_down"),
                    _ => None,
                };
                if let Some(ended) = ended {
                    history.outcome = Some((ended, record));
                    pending = None;
                    break;
                }
                let valued = record["valuation_usd"] != "0" || (kind == "fund_mark" && !history.anchors.is_empty());
                match kind {
                    "acquisition_terminated" => {
                        pending = None;
                        let agreed = |a: &Record| {
                            a["event_type"] == "acquisition"
                                || a.get("reported_as").is_some_and(|r| r == "announced")
                                    && matches!(a["event_type"].as_str(), "ipo" | "direct_listing" | "spac_listing")
                        };
                        if history.anchors.iter().any(|a| !agreed(a)) {
                            history.anchors.retain(|a| !agreed(a));
                        }
                    }
                    "acquisition" => pending = Some(record.clone()),
                    // A value reported after an agreement: the company is no longer waiting on it.
                    _ if anchor_types.contains(&kind) && record["valuation_usd"] != "0" => pending = None,
                    _ => {}
                }
                if anchor_types.contains(&kind) && valued {
                    history.anchors.push(record);
                }
            }
            if let Some(deal) = pending {
                let kind = if deal["event_type"] == "acquisition" {
                    "sale_agreed"
                } else {
                    "listing_agreed"
                };
                history.outcome = Some((kind, deal));
            }
            (slug, history)
        })
        .collect()
}

/// The bundled sample's `dataset_version`, read from its dataset.toml.
pub fn sample_version() -> String {
    let text = std::fs::read_to_string(sample_dir().join("dataset.toml")).expect("sample dataset.toml");
    let toml: toml::Value = toml::from_str(&text).expect("dataset.toml parses");
    toml["dataset_version"].as_str().expect("dataset_version").to_string()
}

/// The bundled sample's `as_of`, read from its dataset.toml: the last day an event may be dated.
pub fn sample_as_of() -> String {
    let text = std::fs::read_to_string(sample_dir().join("dataset.toml")).expect("sample dataset.toml");
    let toml: toml::Value = toml::from_str(&text).expect("dataset.toml parses");
    toml["as_of"].as_str().expect("as_of").to_string()
}

/// The day after a `YYYY-MM-DD` version: the version a test publishes next.
pub fn day_after(version: &str) -> String {
    marks_format::rules::day::Day::parse(version)
        .expect("a YYYY-MM-DD version")
        .plus(1)
        .to_string()
}

/// The demo keys with every key's budget raised to `rate_per_min`, for tests that walk the
/// whole sample with each tier.
pub fn demo_keys_with_rate(rate_per_min: u32) -> String {
    let text = std::fs::read_to_string(sample_dir().join("demo-keys.toml")).expect("demo keys");
    text.lines()
        .map(|line| {
            if line.starts_with("hash = ") {
                format!("{line}\nrate_per_min = {rate_per_min}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}

/// Copies a dataset directory so a test can edit it: its three files and, where it has them,
/// its aliases, and the publication log it carries with the key that signed it.
pub fn copy_dataset(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for name in ["dataset.toml", "companies.csv", "events.csv"] {
        std::fs::copy(from.join(name), to.join(name)).expect("copy dataset file");
    }
    for name in ["aliases.csv", "publication-log.jsonl", "demo-signing-key.pem.pub"] {
        if from.join(name).exists() {
            std::fs::copy(from.join(name), to.join(name)).expect("copy dataset file");
        }
    }
}

/// A small synthetic dataset and `versions` successors, each one day newer with one more
/// event, built as a chain with `--previous` (so every step also passes the append-only check).
pub fn build_versions(dir: &Path, versions: usize) -> Vec<(String, PathBuf)> {
    build_chain(dir, versions, |v, source, version| {
        append_line(
            &source.join("events.csv"),
            &format!(
                "v{v:04},synth-000001,tender_offer,{version},{},https://example.com/v,",
                1_000_000_000 + v
            ),
        )
    })
}

/// A chain of `versions` builds of a 30-company synthetic dataset, each one day newer than the
/// last (dataset_version and as_of both), each built with `--previous`. Before each build but
/// the first, `edit(v, source_dir, version)` changes the source as that version should.
pub fn build_chain(dir: &Path, versions: usize, edit: impl Fn(usize, &Path, &str)) -> Vec<(String, PathBuf)> {
    let source = dir.join("source");
    let mut options = marks_builder::synth::SynthOptions::new(30, 3);
    options.events = 150;
    options.history_days = (200, 400);
    marks_builder::synth::generate(&options, &source).unwrap();
    let toml = std::fs::read_to_string(source.join("dataset.toml")).unwrap();
    let as_of = marks_format::rules::day::Day::parse("2026-06-30").unwrap();
    let mut built: Vec<(String, PathBuf)> = Vec::new();
    for v in 0..versions {
        let version = as_of.plus(v as i32).to_string();
        let text = toml
            .replace(
                "dataset_version = \"2026-06-30\"",
                &format!("dataset_version = \"{version}\""),
            )
            .replace("as_of = \"2026-06-30\"", &format!("as_of = \"{version}\""));
        std::fs::write(source.join("dataset.toml"), text).unwrap();
        if v > 0 {
            edit(v, &source, &version);
        }
        let out = dir.join(format!("v{v:02}.snap"));
        try_build(&source, &out, built.last().map(|(_, p)| p.as_path())).unwrap();
        built.push((version, out));
    }
    built
}

/// Appends one line to a text file.
pub fn append_line(path: &Path, line: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
}
