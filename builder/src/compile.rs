//! The build pipeline: dataset -> append-only check -> methodology -> rendered bodies ->
//! snapshot file.
//!
//! Companies are rendered in parallel in bounded chunks and streamed to the writer in slug
//! order, so memory stays proportional to a chunk, not to the dataset, and the output is the
//! same bytes whatever the thread count.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ed25519_dalek::{SigningKey, VerifyingKey};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3;

use crate::dataset::{Company, Dataset, DatasetError, Sector, Status};
use crate::methodology::history::History;
use crate::methodology::indices::{
    plan_sector_indices, IndexBuilder, IndexDay, LatestMembers, Membership, SectorIndices,
};
use crate::methodology::scorecard::disclosure::Disclosure;
use crate::methodology::{usd, Band, Coverage, Fit, MarkDay, Method, METHODOLOGY_VERSION};
use crate::render;
use crate::render::changes;
use crate::render::export::{Spool, SpooledBody};
use crate::render::facts::EventFacts;
use crate::render::indices::{IndexInfo, IndexSummary};
use crate::render::publication_log::{Band95, Entry, EntryOutcome, LogError, PublicationLog, Published};
use crate::render::signing::{self, KeyError};
use crate::writer::{SnapshotWriter, WriteError};
use marks_format::file::etag::{etag_of, quoted};
use marks_format::file::gzip::{self, Piece};
use marks_format::file::layout::{
    compare_rows, mark_is_current, ArchivedIndex, Body, BodyRef, CompanyEntry, EventFingerprint, Export, Exports,
    Index, IndexEntry, LatestBands, LatestConstituents, ListEntry, PageContent, RowKey, SeriesBody, YearStart,
    FREE_UNIVERSE_SIZE, SORTS, STATUS_IPO_COMPLETED, STATUS_PRIVATE, UNIVERSE_ALL, UNIVERSE_FREE,
};
use marks_format::file::reader::{OpenOptions, Snapshot, SnapshotError};
use marks_format::rules::tiers::Tier;

const CHUNK: usize = 256;

#[derive(Debug)]
pub struct BuildOptions {
    pub source: PathBuf,
    pub out: PathBuf,
    /// Signs the resolution records.
    pub signing_key: SigningKey,
    /// The snapshot this one succeeds: its events must all still be here, unchanged.
    pub previous: Option<PathBuf>,
    /// Signs the snapshot header, for servers that require a publisher.
    pub publisher_key: Option<SigningKey>,
    /// 1-9, or 0 to store no compressed variants of single bodies (the exports are always
    /// compressed, at level 1 then).
    pub gzip_level: u32,
    pub progress: bool,
    /// Where to write the publication log, as this build leaves it, in its file form.
    pub log_out: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error("{0}")]
    AppendOnly(String),
    #[error("previous snapshot {path}")]
    Previous { path: PathBuf, source: SnapshotError },
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("cannot compress: {0}")]
    Compress(#[from] std::io::Error),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// What a build produced, for the command line and the benches.
#[derive(Debug)]
pub struct BuildReport {
    pub dataset_version: String,
    pub companies: usize,
    pub events: usize,
    pub series_points: usize,
    pub bytes: u64,
    pub kid: String,
    pub load_time: Duration,
    pub fit_time: Duration,
    pub render_time: Duration,
    pub scorecard: String,
    /// What the build did with the publication log, in a sentence.
    pub log: String,
}

pub fn build(options: &BuildOptions) -> Result<BuildReport, BuildError> {
    let started = Instant::now();
    let dataset = Dataset::load(&options.source)?;
    let mut published_keys = vec![options.signing_key.verifying_key()];
    let previous = match &options.previous {
        Some(path) => Some(
            Snapshot::open(path, &OpenOptions::default()).map_err(|source| BuildError::Previous {
                path: path.clone(),
                source,
            })?,
        ),
        None => None,
    };
    if let Some(previous) = &previous {
        check_append_only(&dataset, previous, &options.source)?;
        let index = previous.index();
        let jwks = previous.body_slice(&index.signing_keys.identity);
        published_keys.extend(signing::parse_jwks(jwks).into_iter().map(|(_, key)| key));
    }
    for path in &dataset.info.publication_log_keys {
        let key = marks_format::rules::signatures::read_verifying_key(path).map_err(|e| LogError::Whole {
            what: path.display().to_string(),
            reason: format!("not a public key for the publication log: {e}"),
        })?;
        if !published_keys.contains(&key) {
            published_keys.push(key);
        }
    }
    let (mut log, carried) = carried_log(&dataset, previous.as_ref(), options, &published_keys)?;
    let load_time = started.elapsed();

    let started = Instant::now();
    let method = Method::new(&dataset);
    let fit = &method.fit;
    let fit_time = started.elapsed();

    let started = Instant::now();
    let version = dataset.info.dataset_version.to_string();
    let log_words = match log.last_version() {
        Some(last) if last == version => {
            format!("{carried}; version {version} is already its last, so nothing was appended")
        }
        Some(last) if last > version.as_str() => {
            return Err(BuildError::Log(LogError::Whole {
                what: "the publication log".into(),
                reason: format!("its last version is {last}, later than this dataset's {version}"),
            }))
        }
        _ => {
            let entries: Vec<(Entry, Band95)> = dataset
                .companies
                .par_iter()
                .enumerate()
                .filter_map(|(position, company)| log_entry(&dataset, fit, position, company, &options.signing_key))
                .collect();
            log.append(&version, &entries, &options.signing_key);
            format!(
                "{carried}; {} marks of version {version} appended ({} entries, {})",
                entries.len(),
                log.leaves.len(),
                versions(log.checkpoints.len())
            )
        }
    };
    let previous = previous.as_ref().map(Snapshot::index);
    let report = write_snapshot(&dataset, &method, &published_keys, previous, &log, options)?;
    Ok(BuildReport {
        load_time,
        fit_time,
        render_time: started.elapsed(),
        scorecard: crate::present::text::scorecard_text(&method.scorecard),
        log: log_words,
        ..report
    })
}

/// The publication log this build appends to, checked: the previous snapshot's, or the one the
/// dataset carries, or a new one; and where it came from, in words. The two, when both exist,
/// must agree where both have a checkpoint (neither forks from the other); the longer is taken.
fn carried_log(
    dataset: &Dataset,
    previous: Option<&Snapshot>,
    options: &BuildOptions,
    keys: &[VerifyingKey],
) -> Result<(PublicationLog, String), BuildError> {
    let from_previous = match previous {
        None => None,
        Some(snapshot) => {
            let file = &snapshot.index().log.file;
            let text = gunzip(snapshot.body_slice(&file.gzip))?;
            let what = format!(
                "{} (its publication log)",
                options.previous.as_deref().unwrap_or(Path::new("--previous")).display()
            );
            Some(PublicationLog::parse(&text, keys, &what)?)
        }
    };
    let from_dataset = match &dataset.info.publication_log {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| LogError::Whole {
                what: path.display().to_string(),
                reason: format!("cannot read it: {e}"),
            })?;
            Some(PublicationLog::parse(&text, keys, &path.display().to_string())?)
        }
    };
    let origin = &dataset.info.log_origin;
    let log = match (from_previous, from_dataset) {
        (None, None) => {
            return Ok((
                PublicationLog::new(origin),
                format!("started a new publication log ({origin}): no --previous and no publication_log"),
            ))
        }
        (Some(log), None) | (None, Some(log)) => log,
        (Some(a), Some(b)) => {
            if !a.agrees_with(&b) {
                return Err(BuildError::Log(LogError::Whole {
                    what: dataset
                        .info
                        .publication_log
                        .as_deref()
                        .unwrap_or(Path::new("publication_log"))
                        .display()
                        .to_string(),
                    reason: "forks from the previous snapshot's publication log: a checkpoint both have differs".into(),
                }));
            }
            if a.checkpoints.len() >= b.checkpoints.len() {
                a
            } else {
                b
            }
        }
    };
    if &log.origin != origin {
        return Err(BuildError::Log(LogError::Whole {
            what: "the publication log".into(),
            reason: format!(
                "its origin is {:?}, not the dataset's log_origin {origin:?}",
                log.origin
            ),
        }));
    }
    let words = format!(
        "carried the publication log ({origin}: {}, {} entries, every checkpoint verified)",
        versions(log.checkpoints.len()),
        log.leaves.len()
    );
    Ok((log, words))
}

/// "1 version", "4 versions".
pub fn versions(n: usize) -> String {
    if n == 1 {
        "1 version".into()
    } else {
        format!("{n} versions")
    }
}

fn gunzip(bytes: &[u8]) -> Result<String, BuildError> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(bytes), &mut text)?;
    Ok(text)
}

/// The entry a company's latest mark makes in the publication log, with the 95% band it
/// commits to: the numbers its items publish.
fn log_entry(
    dataset: &Dataset,
    fit: &Fit,
    position: usize,
    company: &Company,
    key: &SigningKey,
) -> Option<(Entry, Band95)> {
    let history = &fit.histories[position];
    let as_of = dataset.info.as_of;
    let end = history.last_marked_day(as_of);
    if history.anchors.first().is_none_or(|a| a.day > end) {
        return None;
    }
    let marked = fit.marked(history, end, true)?;
    let (band80, band95) = (
        Band::of(marked.bands.band80(marked.x)),
        Band::of(marked.bands.band95(marked.x)),
    );
    let version = dataset.info.dataset_version.to_string();
    let band = Band95::salted(band95.lower, band95.upper, &company.slug, &version, key);
    let facts = EventFacts::of(company, history, as_of);
    let entry = Entry {
        slug: company.slug.clone(),
        dataset_version: version,
        methodology_version: METHODOLOGY_VERSION.to_string(),
        as_of: as_of.to_string(),
        marked_on: end.to_string(),
        value_usd: usd(marked.x.exp()),
        lower_80_usd: band80.lower,
        upper_80_usd: band80.upper,
        band_95_digest: band.digest(),
        confidence_bp: (crate::methodology::round_to(marked.bands.confidence, 4) * 10_000.0).round() as u64,
        outcome: facts.outcome.as_ref().map(|o| EntryOutcome {
            kind: o.kind.as_str().to_string(),
            event_id: o.event_id.to_string(),
            occurred_on: o.occurred_on.to_string(),
            valuation_usd: o.valuation_usd,
        }),
    };
    Some((entry, band))
}

/// A body and its gzip variant, if it has one.
type WithGzip = (Vec<u8>, Option<Vec<u8>>);

/// Every body of one company, rendered, and its lines of the exports, deflated.
struct Rendered {
    list_item: Vec<u8>,
    list_row_csv: Vec<u8>,
    /// The days of the last event and of the outcome, for their sorts.
    sort_days: (i32, Option<i32>),
    /// profile, events, resolution, the CSV events.
    bodies: [WithGzip; 4],
    /// Stored as gzip only: the backtest (below Pro, in full) and the published entries (below
    /// Pro, in full, and both as CSV).
    documents: [Compressed; 6],
    /// The daily series: JSON at 80% and 95%, CSV at 80% and 95%. Each is written once, as
    /// its lines of the series export of its form and coverage.
    series_bodies: [RenderedSeries; 4],
    value_usd: u64,
    latest_bands: LatestBands,
    latest_mark_hash: u64,
    outcome: u8,
    delta_30d_pct: Option<f64>,
    series_points: usize,
    /// The companies export's line, and its CSV row.
    export_line: (Vec<u8>, Piece),
    export_row_csv: (Vec<u8>, Piece),
    /// The published series and the days it counts in the indices, for the indices.
    series: Vec<MarkDay>,
    membership: Option<Membership>,
}

/// One of a company's series as rendered: its text, the text past the head every company's
/// series of its form shares, deflated, and what its [`SeriesBody`] says of the two.
struct RenderedSeries {
    text: Vec<u8>,
    /// Bytes of `text` that are the head.
    head_len: usize,
    rest: Piece,
    /// Where each year after the first begins in a CSV series' rest (none in a JSON series).
    years: Vec<YearStart>,
    crc32: u32,
    identity_etag: String,
    gzip_etag: String,
}

/// A document stored as gzip only: its gzip member, and the length and ETag of its text.
struct Compressed {
    gzip: Vec<u8>,
    identity_len: u64,
    identity_etag: String,
}

impl Compressed {
    fn of(text: &[u8], level: u32) -> std::io::Result<Compressed> {
        Ok(Compressed {
            gzip: gzip::member(&[&Piece::of(text, level)?]),
            identity_len: text.len() as u64,
            identity_etag: etag_of(text),
        })
    }

    fn write(&self, writer: &mut SnapshotWriter) -> Result<Export, WriteError> {
        Ok(Export {
            gzip: writer.append(&self.gzip)?,
            gzip_etag: etag_of(&self.gzip),
            identity_len: self.identity_len,
            identity_etag: self.identity_etag.clone(),
        })
    }
}

/// A body's gzip variant, or none when `level` is 0 or the body too small for it to pay.
fn gzip(bytes: &[u8], level: u32) -> Option<Vec<u8>> {
    if level == 0 || bytes.len() < gzip::MIN_BYTES {
        return None;
    }
    Some(gzip::member(&[&Piece::of(bytes, level).ok()?]))
}

/// What every company's compressed bodies and export lines share, deflated once per build.
struct Deflating {
    /// For single bodies; 0: none.
    gzip_level: u32,
    export_level: u32,
    /// `render::series_prefix`, as text and deflated.
    series_prefix: (Vec<u8>, Piece),
    /// What a series export line adds around a series body's rest: `{` before, a newline after.
    open: Piece,
    newline: Piece,
    /// The CSV series' header row, as text and deflated.
    series_csv_header: (Vec<u8>, Piece),
}

impl Deflating {
    fn new(meta: &[u8], gzip_level: u32) -> std::io::Result<Deflating> {
        let export_level = gzip_level.max(1);
        let prefix = render::series_prefix(meta);
        let csv_header = marks_format::rules::table::header(marks_format::rules::table::SERIES_COLUMNS);
        Ok(Deflating {
            gzip_level,
            export_level,
            series_prefix: (prefix.clone(), Piece::of(&prefix, export_level)?),
            open: Piece::of(b"{", export_level)?,
            newline: Piece::of(b"\n", export_level)?,
            series_csv_header: (csv_header.clone(), Piece::of(&csv_header, export_level)?),
        })
    }

    /// A CSV series body with its rows deflated.
    /// A CSV series body with its rows deflated, flushed where each year begins.
    fn series_csv(&self, body: Vec<u8>) -> std::io::Result<RenderedSeries> {
        RenderedSeries::of(body, &self.series_csv_header, self.export_level, true)
    }

    /// A JSON series body with its text past the prefix deflated.
    fn series(&self, body: Vec<u8>) -> std::io::Result<RenderedSeries> {
        RenderedSeries::of(body, &self.series_prefix, self.export_level, false)
    }
}

impl RenderedSeries {
    /// `text`, which starts with `head` (as text and deflated), with the rest deflated at
    /// `level` (flushed where each year's rows begin when they are CSV `rows`), and the ETags of
    /// the text and of the gzip answer made of the two pieces.
    fn of(text: Vec<u8>, head: &(Vec<u8>, Piece), level: u32, rows: bool) -> std::io::Result<RenderedSeries> {
        debug_assert!(text.starts_with(&head.0));
        let rest_text = &text[head.0.len()..];
        let firsts = if rows {
            first_rows_of_years(rest_text)
        } else {
            Vec::new()
        };
        let points: Vec<usize> = firsts.iter().map(|&(_, at)| at).collect();
        let (rest, deflated_at) = Piece::with_entry_points(rest_text, level, &points)?;
        let years = firsts
            .iter()
            .zip(deflated_at)
            .map(|(&(year, at), deflated_at)| YearStart {
                year,
                text_at: at as u64,
                deflated_at,
            })
            .collect();
        let mut crc = flate2::Crc::new();
        crc.combine(&head.1.crc);
        crc.combine(&rest.crc);
        let crc32 = crc.sum();
        let mut gzip_hash = Xxh3::new();
        for part in [&gzip::HEADER[..], &head.1.deflated, &rest.deflated] {
            gzip_hash.update(part);
        }
        gzip_hash.update(&gzip::trailer(crc32, text.len() as u64));
        Ok(RenderedSeries {
            years,
            identity_etag: etag_of(&text),
            gzip_etag: quoted(gzip_hash.digest()),
            head_len: head.0.len(),
            text,
            rest,
            crc32,
        })
    }

    /// Its entry: `head` where the head is stored, `rest_at` where the rest begins in its
    /// export's spool (placed in the file once the export is: [`place_series`]).
    fn entry(&self, head: BodyRef, rest_at: u64) -> SeriesBody {
        SeriesBody {
            head,
            rest: BodyRef {
                offset: rest_at,
                len: self.rest.deflated.len() as u64,
            },
            crc32: self.crc32,
            identity_len: self.text.len() as u64,
            identity_etag: self.identity_etag.clone(),
            gzip_etag: self.gzip_etag.clone(),
            years: self.years.clone(),
            rest_text_len: (self.text.len() - self.head_len) as u64,
        }
    }
}

/// The year and place of each CSV row (`"slug","YYYY-MM-DD",...` ending in CRLF) that begins a
/// year after the first row's.
fn first_rows_of_years(rows: &[u8]) -> Vec<(i32, usize)> {
    let mut firsts = Vec::new();
    let mut current = None;
    let mut at = 0;
    while at < rows.len() {
        let end = rows[at..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map_or(rows.len(), |i| at + i + 2);
        let year = rows[at..end]
            .split(|&b| b == b',')
            .nth(1)
            .and_then(|cell| cell.get(1..5))
            .and_then(|digits| std::str::from_utf8(digits).ok()?.parse::<i32>().ok());
        if let Some(year) = year {
            if current.is_some_and(|c| c != year) {
                firsts.push((year, at));
            }
            current = Some(year);
        }
        at = end;
    }
    firsts
}

#[allow(clippy::too_many_arguments)]
fn render_company(
    company: &Company,
    position: usize,
    dataset: &Dataset,
    method: &Method,
    meta: &[u8],
    key: &SigningKey,
    kid: &str,
    deflating: &Deflating,
    log: (&PublicationLog, &[Published]),
) -> Result<Rendered, BuildError> {
    let fit = &method.fit;
    let marks = fit.marks(position, company);
    let facts = EventFacts::of(company, &fit.histories[position], dataset.info.as_of);
    let record = render::resolution_record(meta, &dataset.info, company, &marks, &facts, kid)
        .ok_or_else(|| KeyError::Canonical(format!("{} has no mark to resolve", company.slug)))?;
    let dates = render::series_dates(&marks.series);
    let compressed = |text: &[u8]| Compressed::of(text, deflating.export_level);
    let with_gzip = |body: Vec<u8>| {
        let compressed = gzip(&body, deflating.gzip_level);
        (body, compressed)
    };
    let series = |coverage| deflating.series(render::series(meta, &company.slug, coverage, &marks.series, &dates));
    let series_csv =
        |coverage| deflating.series_csv(render::table::series(&company.slug, coverage, &marks.series, &dates));
    let series_bodies = [
        series(Coverage::C80)?,
        series(Coverage::C95)?,
        series_csv(Coverage::C80)?,
        series_csv(Coverage::C95)?,
    ];
    let export_row_csv = render::table::company_row(company, &marks, &facts, true);
    let export_row_piece = Piece::of(&export_row_csv, deflating.export_level)?;
    let resolution = signing::sign_record(record, key)?;
    let export_line = render::export_company(company, &marks, &facts, &resolution);
    let export_piece = Piece::of(&export_line, deflating.export_level)?;
    let latest = marks.latest();
    let band = |coverage| latest.map_or(Band { lower: 0, upper: 0 }, |m| Band::of(m.band(coverage)));
    let (band_80, band_95) = (band(Coverage::C80), band(Coverage::C95));
    Ok(Rendered {
        list_item: render::list_item(company, &marks, &facts),
        list_row_csv: render::table::company_row(company, &marks, &facts, false),
        sort_days: facts.sort_days(),
        bodies: [
            with_gzip(render::profile(meta, company, &marks, &facts, dataset.info.as_of)),
            with_gzip(render::events(meta, company)),
            with_gzip(resolution),
            with_gzip(render::table::events(company)),
        ],
        documents: [
            compressed(&render::backtest(
                meta,
                company,
                method.scorecard.targets_of(position),
                Disclosure::Public,
            ))?,
            compressed(&render::backtest(
                meta,
                company,
                method.scorecard.targets_of(position),
                Disclosure::Full,
            ))?,
            compressed(&log.0.published_json(meta, &company.slug, log.1, false))?,
            compressed(&log.0.published_json(meta, &company.slug, log.1, true))?,
            compressed(&log.0.published_csv(&company.slug, log.1, false))?,
            compressed(&log.0.published_csv(&company.slug, log.1, true))?,
        ],
        value_usd: latest.map_or(0, |m| usd(m.mark)),
        latest_bands: LatestBands {
            lower_80: band_80.lower,
            upper_80: band_80.upper,
            lower_95: band_95.lower,
            upper_95: band_95.upper,
        },
        latest_mark_hash: xxhash_rust::xxh3::xxh3_64(&render::latest_mark_json(&marks, &facts)),
        outcome: crate::render::facts::OutcomeKind::code(facts.outcome_kind()),
        delta_30d_pct: marks.delta_30d_pct,
        series_points: marks.series.len(),
        export_line: (export_line, export_piece),
        export_row_csv: (export_row_csv, export_row_piece),
        series_bodies,
        membership: Membership::of(&marks.series, facts.outcome.as_ref().map(|o| o.occurred_on)),
        series: marks.series,
    })
}

/// The export documents being spooled: companies, series at 80%, series at 95%, as NDJSON
/// and as CSV.
struct Spools([Spool; 6]);

impl Spools {
    fn create(dir: &Path, meta: &[u8], companies: usize, level: u32) -> std::io::Result<Spools> {
        use marks_format::rules::table::{header, EXPORT_COMPANY_COLUMNS, SERIES_COLUMNS};
        let json = |export, coverage| render::export_header(meta, export, coverage, companies);
        Ok(Spools([
            Spool::create(dir, &json("companies", None), level)?,
            Spool::create(dir, &json("series", Some(Coverage::C80)), level)?,
            Spool::create(dir, &json("series", Some(Coverage::C95)), level)?,
            Spool::create(dir, &header(EXPORT_COMPANY_COLUMNS), level)?,
            Spool::create(dir, &header(SERIES_COLUMNS), level)?,
            Spool::create(dir, &header(SERIES_COLUMNS), level)?,
        ]))
    }

    /// A company's lines: as rendered for the companies export; for the series, its series
    /// bodies past their prefix, between `{` and a newline; for the CSV series, its rows.
    /// Returns where each series' rest begins in its spool (JSON 80, 95, CSV 80, 95).
    fn push(&mut self, rendered: &Rendered, deflating: &Deflating) -> std::io::Result<[u64; 4]> {
        let [companies, series_80, series_95, companies_csv, series_80_csv, series_95_csv] = &mut self.0;
        companies.push(&rendered.export_line.0, &rendered.export_line.1)?;
        companies_csv.push(&rendered.export_row_csv.0, &rendered.export_row_csv.1)?;
        let [json_80, json_95, csv_80, csv_95] = &rendered.series_bodies;
        let mut rest_at = [0; 4];
        for (at, (spool, series)) in rest_at[..2]
            .iter_mut()
            .zip([series_80, series_95].into_iter().zip([json_80, json_95]))
        {
            spool.push(b"{", &deflating.open)?;
            *at = spool.push(&series.text[series.head_len..], &series.rest)?;
            spool.push(b"\n", &deflating.newline)?;
        }
        for (at, (spool, series)) in rest_at[2..]
            .iter_mut()
            .zip([series_80_csv, series_95_csv].into_iter().zip([csv_80, csv_95]))
        {
            *at = spool.push(&series.text[series.head_len..], &series.rest)?;
        }
        Ok(rest_at)
    }

    fn finish(self, writer: &mut SnapshotWriter, target: &Path) -> Result<Exports, WriteError> {
        let [companies, series_80, series_95, companies_csv, series_80_csv, series_95_csv] = self.0;
        Ok(Exports {
            companies: companies.finish(writer, target)?,
            series_80: series_80.finish(writer, target)?,
            series_95: series_95.finish(writer, target)?,
            companies_csv: companies_csv.finish(writer, target)?,
            series_80_csv: series_80_csv.finish(writer, target)?,
            series_95_csv: series_95_csv.finish(writer, target)?,
        })
    }
}

fn progress_bar(len: usize, enabled: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(len as u64),
        if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} companies ({eta} left)") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message("rendering");
    bar
}

/// Writes the snapshot: every company (its bodies, export lines and index days), then what is
/// drawn from all of them (lists, sectors, indices, the scorecard and its pages, the exports,
/// the change log and the publication log), then the index that finds each.
fn write_snapshot(
    dataset: &Dataset,
    method: &Method,
    published_keys: &[VerifyingKey],
    previous: Option<&ArchivedIndex>,
    log: &PublicationLog,
    options: &BuildOptions,
) -> Result<BuildReport, BuildError> {
    let meta = render::meta_json(&dataset.info);
    let published = log.by_company();
    let kid = signing::kid(&options.signing_key.verifying_key());
    let deflating = Deflating::new(&meta, options.gzip_level)?;
    let out_dir = options
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let spools = Spools::create(out_dir, &meta, dataset.companies.len(), deflating.export_level)?;
    let mut writer = SnapshotWriter::create(&options.out)?;
    let meta_json = writer.append(&meta)?;
    let series_heads = [
        writer.append(&deflating.series_prefix.1.deflated)?,
        writer.append(&deflating.series_csv_header.1.deflated)?,
    ];
    let (sectors, sector_plan) = sector_indices(dataset);
    let index_codes: Vec<u16> = sector_plan
        .index_of
        .iter()
        .map(|&i| u16::try_from(i).unwrap_or(u16::MAX))
        .collect();
    let pass = CompanyPass {
        dataset,
        method,
        meta: &meta,
        options,
        kid: &kid,
        deflating: &deflating,
        log,
        published: &published,
        sectors: &sectors,
        index_codes: &index_codes,
        index_starts: &sector_plan.starts,
        series_heads,
    };
    let mut index_builder = IndexBuilder::new(first_event_day(dataset), dataset.info.as_of, 1 + sectors.len());
    let mut latest_members = LatestMembers::new(dataset.info.as_of, 1 + sectors.len());
    let (mut companies, series_points, mut writer, spools) =
        pass.write(writer, spools, &mut index_builder, &mut latest_members)?;

    let (lists, list_rows) = list_indexes(dataset, &companies, &sectors);
    let sector_lists = [UNIVERSE_ALL, UNIVERSE_FREE]
        .iter()
        .map(|&universe| {
            let counts = sector_counts(&companies, &sectors, &lists, &list_rows, universe);
            writer.append_body(&render::sectors(&meta, &counts), None)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let search_words = marks_format::rules::search::word_index(companies.iter().map(|c| c.search_names.as_slice()));
    let (indices, index_list, index_summaries) = write_indices(
        &mut writer,
        &meta,
        dataset,
        &sectors,
        (index_builder.finish(), latest_members),
        options.gzip_level,
    )?;
    let usage = Tier::ALL
        .iter()
        .map(|&tier| {
            writer.append_body(
                &marks_format::rules::tiers::usage_body(&meta, tier, tier.rate_per_min()),
                None,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let signing_keys = writer.append_body(&signing::jwks_body(published_keys), None)?;
    let scorecard = ScorecardDocuments::write(&mut writer, &meta, dataset, method, &index_summaries, out_dir, options)?;
    let exports = spools.finish(&mut writer, &options.out)?;
    place_series(&mut companies, &exports);
    let changes = changes::change_log(dataset, &companies, previous);
    let log_index = write_log(&mut writer, &meta, log, out_dir, options)?;
    let dataset_version = dataset.info.dataset_version.to_string();
    let index = Index {
        dataset_version: dataset_version.clone(),
        methodology_version: METHODOLOGY_VERSION.to_string(),
        as_of: dataset.info.as_of.to_string(),
        meta_json,
        companies,
        sectors: sectors.iter().map(|s| s.to_string()).collect(),
        sector_lists,
        search_words,
        indices,
        index_list,
        lists,
        list_rows,
        usage,
        signing_keys,
        scorecard: scorecard.scorecard,
        scorecard_targets: scorecard.targets,
        scorecard_full: scorecard.scorecard_full,
        scorecard_targets_full: scorecard.targets_full,
        home_page: scorecard.home_page,
        scorecard_page: scorecard.scorecard_page,
        events: fingerprints(dataset),
        exports,
        changes,
        log: log_index,
    };
    let header = writer.finish(&index, options.publisher_key.as_ref())?;
    Ok(BuildReport {
        dataset_version,
        companies: dataset.companies.len(),
        events: dataset.event_count(),
        series_points,
        bytes: header.index_offset + header.index_len,
        kid,
        load_time: Duration::ZERO,
        fit_time: Duration::ZERO,
        render_time: Duration::ZERO,
        scorecard: String::new(),
        log: String::new(),
    })
}

/// What rendering a company needs, shared by every company of one build.
struct CompanyPass<'a> {
    dataset: &'a Dataset,
    method: &'a Method,
    meta: &'a [u8],
    options: &'a BuildOptions,
    kid: &'a str,
    deflating: &'a Deflating,
    log: &'a PublicationLog,
    /// Each company's entries in the publication log, by slug.
    published: &'a std::collections::HashMap<String, Vec<Published>>,
    sectors: &'a [&'static str],
    /// Each company's index code (0 is every company's; a sector's is its code).
    index_codes: &'a [u16],
    /// The first day each index counts its constituents (a sector index holds five on each day).
    index_starts: &'a [marks_format::rules::day::Day],
    /// Where the series' shared heads are stored: JSON, CSV.
    series_heads: [BodyRef; 2],
}

/// Where a company's series are: the shared heads (JSON, CSV) and where each series' rest
/// begins in its export's spool (JSON 80, 95, CSV 80, 95).
struct SeriesPlaces {
    heads: [BodyRef; 2],
    rest_at: [u64; 4],
}

/// Moves each series' rest from its place in its export's spool to its place in the file, now
/// that the exports are written.
fn place_series(companies: &mut [CompanyEntry], exports: &Exports) {
    let starts = [
        exports.series_80.gzip.offset,
        exports.series_95.gzip.offset,
        exports.series_80_csv.gzip.offset,
        exports.series_95_csv.gzip.offset,
    ];
    for company in companies {
        let series = [
            &mut company.marks_80,
            &mut company.marks_95,
            &mut company.marks_80_csv,
            &mut company.marks_95_csv,
        ];
        for (series, start) in series.into_iter().zip(starts) {
            series.rest.offset += start;
        }
    }
}

/// What the companies' pass hands back: their index entries, the series points written, and
/// the writer and export spools it wrote through.
type CompaniesWritten = (Vec<CompanyEntry>, usize, SnapshotWriter, Spools);

impl CompanyPass<'_> {
    /// Renders every company and writes it, with its export lines and its days in the indices.
    /// Rendering (parallel, a chunk at a time) and writing (sequential, in slug order) overlap:
    /// a writer thread takes rendered chunks through a short queue while the next chunk renders.
    fn write(
        &self,
        mut writer: SnapshotWriter,
        mut spools: Spools,
        index_builder: &mut IndexBuilder,
        latest_members: &mut LatestMembers,
    ) -> Result<CompaniesWritten, BuildError> {
        let dataset = self.dataset;
        let bar = progress_bar(dataset.companies.len(), self.options.progress);
        let (chunks, queue) = std::sync::mpsc::sync_channel::<(usize, Vec<Rendered>)>(2);
        let written = std::thread::scope(|scope| {
            let (sectors, deflating, index_codes) = (self.sectors, self.deflating, self.index_codes);
            let index_starts = self.index_starts;
            let heads = self.series_heads;
            let consumer = scope.spawn(move || -> Result<_, BuildError> {
                let mut companies = Vec::with_capacity(dataset.companies.len());
                let mut series_points = 0;
                for (start, rendered) in queue {
                    for (offset, (company, r)) in dataset.companies[start..].iter().zip(rendered).enumerate() {
                        series_points += r.series_points;
                        let rest_at = spools.push(&r, deflating)?;
                        // A small sector's companies count in "other".
                        let index_code = index_codes[start + offset];
                        if let Some(membership) = r.membership {
                            index_builder.add(&[0], &r.series, membership);
                            latest_members.add(0, start + offset, &r.series, membership);
                            let sector = usize::from(index_code);
                            if let Some(from_start) = index_starts.get(sector).and_then(|&d| membership.from(d)) {
                                index_builder.add(&[sector], &r.series, from_start);
                                latest_members.add(sector, start + offset, &r.series, from_start);
                            }
                        }
                        let series = SeriesPlaces { heads, rest_at };
                        companies.push(write_company(&mut writer, company, sectors, index_code, r, series)?);
                    }
                }
                Ok((companies, series_points, writer, spools))
            });
            for (number, chunk) in dataset.companies.chunks(CHUNK).enumerate() {
                let rendered: Result<Vec<Rendered>, BuildError> = chunk
                    .par_iter()
                    .enumerate()
                    .map(|(i, company)| self.render(company, number * CHUNK + i))
                    .collect();
                let sent = match rendered {
                    Ok(rendered) => chunks.send((number * CHUNK, rendered)).is_ok(),
                    Err(err) => {
                        drop(chunks);
                        let _ = consumer.join();
                        return Err(err);
                    }
                };
                if !sent {
                    // The writer stopped on an error; it reports it below.
                    break;
                }
                bar.inc(chunk.len() as u64);
            }
            drop(chunks);
            consumer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })?;
        bar.finish_and_clear();
        Ok(written)
    }

    fn render(&self, company: &Company, position: usize) -> Result<Rendered, BuildError> {
        let entries = self.published.get(&company.slug).map_or(&[][..], Vec::as_slice);
        render_company(
            company,
            position,
            self.dataset,
            self.method,
            self.meta,
            &self.options.signing_key,
            self.kid,
            self.deflating,
            (self.log, entries),
        )
    }
}

/// The scorecard in its two disclosures, its scored targets, and the two pages drawn from it
/// (`/` and `/scorecard`).
struct ScorecardDocuments {
    scorecard: Body,
    scorecard_full: Body,
    targets: Export,
    targets_full: Export,
    home_page: PageContent,
    scorecard_page: PageContent,
}

impl ScorecardDocuments {
    fn write(
        writer: &mut SnapshotWriter,
        meta: &[u8],
        dataset: &Dataset,
        method: &Method,
        index_summaries: &[IndexSummary],
        out_dir: &Path,
        options: &BuildOptions,
    ) -> Result<ScorecardDocuments, BuildError> {
        let mut compressed = |body: Vec<u8>| writer.append_body(&body, gzip(&body, options.gzip_level).as_deref());
        let [scorecard, scorecard_full] = Disclosure::ALL
            .map(|disclosure| compressed(render::scorecard(meta, &method.scorecard, index_summaries, disclosure)));
        // The scored targets are the largest documents of all (a third of a synthetic
        // snapshot's text), so they are stored as gzip only, written as they are serialised
        // rather than built whole in memory, the two disclosures side by side (serialising and
        // deflating them is one core's work each), then copied in.
        let spooled = |disclosure| -> Result<SpooledBody, BuildError> {
            let mut body = SpooledBody::create(out_dir, options.gzip_level)?;
            render::scorecard_targets(&mut body, meta, dataset, method, disclosure)?;
            Ok(body)
        };
        let (public, full) = rayon::join(|| spooled(Disclosure::Public), || spooled(Disclosure::Full));
        let targets = public?.finish(writer, &options.out)?;
        let targets_full = full?.finish(writer, &options.out)?;
        let home = crate::present::home::home(dataset, &method.scorecard);
        let home_page = PageContent {
            title: home.title,
            main: writer.append(home.main.as_bytes())?,
        };
        let page = crate::present::scorecard_page::scorecard(dataset, &method.scorecard, index_summaries);
        let scorecard_page = PageContent {
            title: page.title,
            main: writer.append(page.main.as_bytes())?,
        };
        Ok(ScorecardDocuments {
            scorecard: scorecard?,
            scorecard_full: scorecard_full?,
            targets,
            targets_full,
            home_page,
            scorecard_page,
        })
    }
}

/// The publication log's bodies: the latest checkpoint, each earlier version's consistency
/// proof to today's tree, and the whole log in its file form, stored like an export.
fn write_log(
    writer: &mut SnapshotWriter,
    meta: &[u8],
    log: &PublicationLog,
    out_dir: &Path,
    options: &BuildOptions,
) -> Result<marks_format::file::layout::PublicationLog, BuildError> {
    let note = log.checkpoints.last().map_or_else(String::new, |c| c.note.clone());
    let checkpoint = writer.append_body(note.as_bytes(), None)?;
    let mut versions = Vec::with_capacity(log.checkpoints.len());
    for version in &log.checkpoints {
        let body = log.consistency_json(meta, version);
        let consistency = writer.append_body(&body, gzip(&body, options.gzip_level).as_deref())?;
        versions.push(marks_format::file::layout::LogVersion {
            dataset_version: version.dataset_version.clone(),
            tree_size: version.tree_size,
            consistency,
        });
    }
    let text = log.to_file();
    if let Some(path) = &options.log_out {
        std::fs::write(path, &text).map_err(|e| LogError::Whole {
            what: path.display().to_string(),
            reason: format!("cannot write the publication log: {e}"),
        })?;
    }
    let level = options.gzip_level.max(1);
    let file = Spool::create(out_dir, &text, level)?.finish(writer, &options.out)?;
    Ok(marks_format::file::layout::PublicationLog {
        checkpoint,
        versions,
        file,
    })
}

/// Appends one company's bodies and returns its index entry.
fn write_company(
    writer: &mut SnapshotWriter,
    company: &Company,
    sectors: &[&str],
    index_code: u16,
    rendered: Rendered,
    places: SeriesPlaces,
) -> Result<CompanyEntry, WriteError> {
    let [profile, events, resolution, events_csv] = rendered.bodies;
    let [backtest, backtest_full, published, published_full, published_csv, published_full_csv] =
        rendered.documents.each_ref().map(|document| document.write(writer));
    let [json_80, json_95, csv_80, csv_95] = &rendered.series_bodies;
    let [json_head, csv_head] = places.heads;
    let [at_80, at_95, csv_at_80, csv_at_95] = places.rest_at;
    let mut body = |(identity, gzip): WithGzip| writer.append_body(&identity, gzip.as_deref());
    Ok(CompanyEntry {
        slug: company.slug.clone(),
        name: company.name.clone(),
        search_names: marks_format::rules::search::company_names(
            &company.name,
            company.aliases.iter().map(String::as_str),
            &company.slug,
        ),
        sector: sector_code(sectors, company) - 1,
        index_sector: index_code,
        status: match company.status {
            Status::Private => STATUS_PRIVATE,
            Status::IpoCompleted => STATUS_IPO_COMPLETED,
        },
        value_usd: rendered.value_usd,
        latest_bands: rendered.latest_bands,
        latest_mark_hash: rendered.latest_mark_hash,
        outcome: rendered.outcome,
        delta_30d_pct: rendered.delta_30d_pct,
        index_from: rendered.membership.map_or(0, |m| m.first.0),
        index_until: rendered.membership.map_or(0, |m| m.until.0),
        last_event_on: rendered.sort_days.0,
        outcome_on: rendered.sort_days.1,
        profile: body(profile)?,
        marks_80: json_80.entry(json_head, at_80),
        marks_95: json_95.entry(json_head, at_95),
        events: body(events)?,
        resolution: body(resolution)?,
        backtest: backtest?,
        backtest_full: backtest_full?,
        marks_80_csv: csv_80.entry(csv_head, csv_at_80),
        marks_95_csv: csv_95.entry(csv_head, csv_at_95),
        events_csv: body(events_csv)?,
        published: published?,
        published_full: published_full?,
        published_csv: published_csv?,
        published_full_csv: published_full_csv?,
        list_item: writer.append(&rendered.list_item)?,
        list_row_csv: writer.append(&rendered.list_row_csv)?,
    })
}

/// An index's constituents on `as_of` at 80% and 95%, as JSON and CSV (in that order), rendered
/// as the server renders any other day's (`rules::constituents`), with the level its stored CSV
/// series gives that day; none when the index has no row on `as_of`.
fn latest_constituents(
    meta: &[u8],
    dataset: &Dataset,
    id: &str,
    series_csv: [&[u8]; 2],
    members: &[(usize, [u64; 5])],
) -> Option<(String, [Vec<u8>; 4])> {
    use marks_format::rules::constituents::{numbers_of, render, row_on, Day, Member};
    let date_bytes = dataset.info.as_of.iso();
    let date = String::from_utf8_lossy(&date_bytes).into_owned();
    let level =
        |csv: &[u8]| row_on(csv, id, date_bytes).map(|row| numbers_of(row).first().copied().unwrap_or(f64::NAN));
    let levels = [level(series_csv[0])?, level(series_csv[1])?];
    let at = |coverage: u32| -> Vec<Member<'_>> {
        members
            .iter()
            .filter_map(|&(position, n)| {
                let company = dataset.companies.get(position)?;
                let (lower_usd, upper_usd) = if coverage == 95 { (n[3], n[4]) } else { (n[1], n[2]) };
                Some(Member {
                    slug: &company.slug,
                    name: &company.name,
                    mark_usd: n[0],
                    lower_usd,
                    upper_usd,
                })
            })
            .collect()
    };
    let (m80, m95) = (at(80), at(95));
    let day = |coverage: u32, level: f64| Day {
        meta,
        index: id,
        date: &date,
        coverage,
        level,
    };
    let bodies = [
        render(day(80, levels[0]), &m80, false),
        render(day(95, levels[1]), &m95, false),
        render(day(80, levels[0]), &m80, true),
        render(day(95, levels[1]), &m95, true),
    ];
    Some((date.clone(), bodies))
}

/// The sector names present, sorted (byte order), as the index stores them, with "other" when a
/// sector too small for an index of its own folds into it; and the sector indices' plan
/// ([`plan_sector_indices`]): the index each company counts in beside "all" and the day each
/// index starts.
fn sector_indices(dataset: &Dataset) -> (Vec<&'static str>, SectorIndices) {
    let mut sectors: Vec<&'static str> = dataset.companies.iter().map(|c| c.sector.as_str()).collect();
    sectors.push(Sector::Other.as_str());
    sectors.sort_unstable();
    sectors.dedup();
    let memberships: Vec<Option<Membership>> = dataset
        .companies
        .iter()
        .map(|company| {
            let history = History::of(company);
            let first = history.anchors.first()?.day;
            let after_series = history.last_marked_day(dataset.info.as_of).plus(1);
            let outcome = crate::render::facts::outcome_of(company).map(|(_, e)| e.occurred_on);
            Membership::between(first, after_series, outcome)
        })
        .collect();
    let plan = |sectors: &[&str]| {
        let sector_of: Vec<usize> = dataset
            .companies
            .iter()
            .map(|c| usize::from(sector_code(sectors, c)))
            .collect();
        let other = sectors.binary_search(&Sector::Other.as_str()).map_or(0, |p| p + 1);
        let (origin, as_of) = (first_event_day(dataset), dataset.info.as_of);
        plan_sector_indices(&sector_of, &memberships, other, 1 + sectors.len(), origin, as_of)
    };
    let planned = plan(&sectors);
    let other_needed = dataset.companies.iter().any(|c| c.sector == Sector::Other)
        || planned
            .index_of
            .iter()
            .zip(&dataset.companies)
            .any(|(&i, c)| i != usize::from(sector_code(&sectors, c)));
    if other_needed {
        return (sectors, planned);
    }
    sectors.retain(|s| *s != Sector::Other.as_str());
    let planned = plan(&sectors);
    (sectors, planned)
}

/// A company's sector code: its position in the sector table plus one (0 means "any").
fn sector_code(sectors: &[&str], company: &Company) -> u16 {
    let position = sectors.binary_search(&company.sector.as_str()).unwrap_or(0);
    u16::try_from(position + 1).unwrap_or(u16::MAX)
}

/// The order of `SORTS[sort]` over all companies (see `format::compare_rows`).
pub fn sort_permutation(companies: &[CompanyEntry], sort: usize) -> Vec<u32> {
    fn key(sort: usize, c: &CompanyEntry) -> (RowKey<'_>, &str) {
        (c.row_key(sort), c.slug.as_str())
    }
    let mut rows: Vec<u32> = (0..companies.len() as u32).collect();
    rows.sort_by(|&a, &b| {
        compare_rows(
            sort,
            key(sort, &companies[a as usize]),
            key(sort, &companies[b as usize]),
        )
    });
    rows
}

/// Every (sort, universe, sector, status) list, as entries sorted for binary search.
fn list_indexes(dataset: &Dataset, companies: &[CompanyEntry], sectors: &[&str]) -> (Vec<ListEntry>, Vec<u32>) {
    // The free tier's ten: the highest latest values among the marks that are current (still
    // private, or a sale agreed and pending), never a listed, sold or failed company's last
    // private mark.
    let by_value = sort_permutation(companies, SORTS.iter().position(|s| *s == "-value_usd").unwrap_or(0));
    let mut in_free_universe = vec![false; companies.len()];
    let current = |row: &&u32| mark_is_current(companies[**row as usize].outcome);
    for &row in by_value.iter().filter(current).take(FREE_UNIVERSE_SIZE) {
        in_free_universe[row as usize] = true;
    }
    let codes: Vec<u16> = dataset.companies.iter().map(|c| sector_code(sectors, c)).collect();
    let mut lists = Vec::new();
    let mut rows = Vec::new();
    for sort in 0..SORTS.len() {
        let order = sort_permutation(companies, sort);
        for universe in [UNIVERSE_ALL, UNIVERSE_FREE] {
            for sector in 0..=sectors.len() as u16 {
                for status in [0, STATUS_PRIVATE, STATUS_IPO_COMPLETED] {
                    let start = rows.len() as u32;
                    rows.extend(order.iter().copied().filter(|&row| {
                        let i = row as usize;
                        (universe == UNIVERSE_ALL || in_free_universe[i])
                            && (sector == 0 || codes[i] == sector)
                            && (status == 0 || companies[i].status == status)
                    }));
                    let len = rows.len() as u32 - start;
                    if len > 0 {
                        lists.push(ListEntry {
                            sort: sort as u8,
                            universe,
                            sector,
                            status,
                            start,
                            len,
                        });
                    }
                }
            }
        }
    }
    (lists, rows)
}

/// The first day any company has an event: where the indices' days start.
fn first_event_day(dataset: &Dataset) -> marks_format::rules::day::Day {
    dataset
        .companies
        .iter()
        .filter_map(|c| c.events.first().map(|e| e.occurred_on))
        .min()
        .unwrap_or(dataset.info.as_of)
}

/// Appends every index's series (`all` first, then each sector's) and their list.
fn write_indices(
    writer: &mut SnapshotWriter,
    meta: &[u8],
    dataset: &Dataset,
    sectors: &[&'static str],
    (days, latest): (Vec<Vec<IndexDay>>, LatestMembers),
    gzip_level: u32,
) -> Result<(Vec<IndexEntry>, marks_format::file::layout::Body, Vec<IndexSummary>), WriteError> {
    let infos: Vec<(IndexInfo<'_>, u16)> = std::iter::once((
        IndexInfo {
            id: "all",
            name: "All companies".to_string(),
            sector: None,
        },
        0,
    ))
    .chain(sectors.iter().enumerate().map(|(i, &sector)| {
        (
            IndexInfo {
                id: sector,
                name: format!("Sector: {sector}"),
                sector: Some(sector),
            },
            u16::try_from(i + 1).unwrap_or(u16::MAX),
        )
    }))
    .collect();
    // A sector rolled into "other" has no index: nobody counts in it.
    let (infos, days): (Vec<(IndexInfo<'_>, u16)>, Vec<Vec<IndexDay>>) =
        infos.into_iter().zip(days).filter(|(_, days)| !days.is_empty()).unzip();
    let mut body = |bytes: Vec<u8>| writer.append_body(&bytes, gzip(&bytes, gzip_level).as_deref());
    let mut entries = Vec::with_capacity(infos.len());
    for ((info, code), days) in infos.iter().zip(&days) {
        let series_80_csv = render::indices::series_csv(info, Coverage::C80, days);
        let series_95_csv = render::indices::series_csv(info, Coverage::C95, days);
        let members = latest.members.get(usize::from(*code)).map_or(&[][..], Vec::as_slice);
        let constituents = latest_constituents(meta, dataset, info.id, [&series_80_csv, &series_95_csv], members);
        let latest_constituents = match constituents {
            Some((date, [json_80, json_95, csv_80, csv_95])) => Some(LatestConstituents {
                date,
                json_80: body(json_80)?,
                json_95: body(json_95)?,
                csv_80: body(csv_80)?,
                csv_95: body(csv_95)?,
            }),
            None => None,
        };
        entries.push(IndexEntry {
            id: info.id.to_string(),
            name: info.name.clone(),
            sector: *code,
            series_80: body(render::indices::series(meta, info, Coverage::C80, days))?,
            series_95: body(render::indices::series(meta, info, Coverage::C95, days))?,
            series_80_csv: body(series_80_csv)?,
            series_95_csv: body(series_95_csv)?,
            latest_constituents,
        });
    }
    let listed: Vec<(IndexInfo<'_>, &[IndexDay])> = infos
        .into_iter()
        .zip(&days)
        .map(|((info, _), days)| (info, days.as_slice()))
        .collect();
    let list = body(render::indices::list(meta, &listed))?;
    let summaries = listed
        .iter()
        .filter_map(|(info, days)| IndexSummary::of(info, days))
        .collect();
    Ok((entries, list, summaries))
}

/// Each sector's companies (and how many are private) within a universe, from its lists
/// (sorted by slug, sort 0); sectors with none in the universe are left out.
fn sector_counts(
    companies: &[CompanyEntry],
    sectors: &[&'static str],
    lists: &[ListEntry],
    rows: &[u32],
    universe: u8,
) -> Vec<render::SectorCount> {
    sectors
        .iter()
        .enumerate()
        .filter_map(|(i, &sector)| {
            let code = u16::try_from(i + 1).ok()?;
            let list = lists
                .iter()
                .find(|l| (l.sort, l.universe, l.sector, l.status) == (0, universe, code, 0))?;
            let members = &rows[list.start as usize..(list.start + list.len) as usize];
            Some(render::SectorCount {
                sector,
                companies: members.len(),
                private: members
                    .iter()
                    .filter(|&&row| companies[row as usize].status == STATUS_PRIVATE)
                    .count(),
            })
        })
        .collect()
}

fn text_hash(source_url: &str, note: &str) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(source_url.as_bytes());
    hasher.update(&[0]);
    hasher.update(note.as_bytes());
    hasher.digest()
}

fn fingerprints(dataset: &Dataset) -> Vec<EventFingerprint> {
    let mut events: Vec<EventFingerprint> = dataset
        .companies
        .iter()
        .flat_map(|c| {
            c.events.iter().map(|e| EventFingerprint {
                event_id: e.event_id.clone(),
                slug: c.slug.clone(),
                event_type: e.event_type.as_str().to_string(),
                occurred_on: e.occurred_on.to_string(),
                valuation_usd: e.valuation_usd,
                text_hash: text_hash(&e.source_url, &e.note),
                reported_as: e.reported_as.map_or("", |r| r.as_str()).to_string(),
                source_grade: e.source_grade.map_or("", |g| g.as_str()).to_string(),
                supersedes: e.supersedes.clone().unwrap_or_default(),
                line: e.line,
            })
        })
        .collect();
    events.sort_by(|a, b| a.event_id.cmp(&b.event_id));
    events
}

/// Refuses a dataset that changed or dropped any record of the previous snapshot (SPEC 2.9,
/// docs/design.md section 2): a published record's facts never change; a mistake is corrected by
/// appending a record that supersedes it, or withdrawn by appending a retraction. Only
/// `reported_as` and `source_grade` may be filled in, once, where a record predates them.
fn check_append_only(dataset: &Dataset, previous: &Snapshot, source: &Path) -> Result<(), BuildError> {
    let index = previous.index();
    let previous_version = index.dataset_version.as_str();
    let current = fingerprints(dataset);
    let events_csv = source.join("events.csv");
    let refuse = |message: String| Err(BuildError::AppendOnly(message));
    if dataset.info.dataset_version.to_string().as_str() < previous_version {
        return refuse(format!(
            "{}: dataset_version {} is older than the previous snapshot's {previous_version}",
            source.join("dataset.toml").display(),
            dataset.info.dataset_version
        ));
    }
    for old in index.events.iter() {
        let id = old.event_id.as_str();
        let Ok(position) = current.binary_search_by(|e| e.event_id.as_str().cmp(id)) else {
            return refuse(format!(
                "{}:{}: event {id} ({} {} on {}), published on this line in dataset {previous_version}, was removed; \
                 the event history is append-only: keep it and append a retraction that names it in supersedes",
                events_csv.display(),
                old.line.to_native(),
                old.slug,
                old.event_type,
                old.occurred_on
            ));
        };
        let new = &current[position];
        let filled_in_or_kept = |old: &str, new: &str| old.is_empty() || old == new;
        let changed = [
            ("slug", old.slug.as_str() != new.slug),
            ("event_type", old.event_type.as_str() != new.event_type),
            ("occurred_on", old.occurred_on.as_str() != new.occurred_on),
            ("valuation_usd", old.valuation_usd.to_native() != new.valuation_usd),
            ("source_url or note", old.text_hash.to_native() != new.text_hash),
            ("supersedes", old.supersedes.as_str() != new.supersedes),
            (
                "reported_as",
                !filled_in_or_kept(old.reported_as.as_str(), &new.reported_as),
            ),
            (
                "source_grade",
                !filled_in_or_kept(old.source_grade.as_str(), &new.source_grade),
            ),
        ];
        if let Some((field, _)) = changed.iter().find(|(_, differs)| *differs) {
            return refuse(format!(
                "{}:{}: event {id} changes its {field} from dataset {previous_version}; the event history is \
                 append-only: append a record that names {id} in supersedes, with the corrected fields in full",
                events_csv.display(),
                new.line
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::first_rows_of_years;

    #[test]
    fn a_year_begins_where_a_rows_date_is_of_another_year() {
        let rows =
            b"\"a\",\"2023-12-30\",1\r\n\"a\",\"2023-12-31\",2\r\n\"a\",\"2024-01-01\",3\r\n\"a\",\"2026-05-01\",4\r\n";
        let row = |n: usize| rows.split(|&b| b == b'\n').take(n).map(|r| r.len() + 1).sum::<usize>();
        assert_eq!(first_rows_of_years(rows), vec![(2024, row(2)), (2026, row(3))]);
        assert_eq!(first_rows_of_years(b""), vec![]);
        assert_eq!(first_rows_of_years(b"\"a\",\"2024-01-01\",3\r\n"), vec![]);
    }
}
