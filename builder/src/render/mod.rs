//! Every response body of the data endpoints, rendered once at build time to final JSON bytes.
//!
//! Field names and shapes follow SPEC section 2; fields this service adds are additive. The
//! `meta` object is rendered once and spliced into every body as raw JSON. Amounts are whole
//! US dollars.

pub mod changes;
pub mod export;
pub mod facts;
pub mod indices;
pub mod publication_log;
pub mod signing;
pub mod table;
pub mod words;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::dataset::{Company, Dataset, DatasetInfo, EventType, ReportedAs, Sector, SourceGrade, Status};
use crate::methodology::scorecard::disclosure::{self, Disclosure};
use crate::methodology::scorecard::{Number, Target, TargetKind};
use crate::methodology::{round_to, usd, Band, CompanyMarks, Coverage, MarkDay, Method, METHODOLOGY_VERSION};
use crate::render::facts::{EventFacts, OutcomeKind};
use marks_format::rules::day::{iso_date, Day};

#[derive(Serialize)]
struct Meta<'a> {
    data_mode: &'static str,
    provenance: &'static str,
    methodology_version: &'static str,
    dataset_version: Day,
    as_of: Day,
    disclaimer: &'a str,
}

/// The `meta` object of SPEC 2.1, exactly its six fields.
pub fn meta_json(info: &DatasetInfo) -> Vec<u8> {
    let meta = Meta {
        data_mode: info.data_mode.as_str(),
        provenance: info.provenance.as_str(),
        methodology_version: METHODOLOGY_VERSION,
        dataset_version: info.dataset_version,
        as_of: info.as_of,
        disclaimer: &info.disclaimer,
    };
    to_json(&meta)
}

pub(crate) fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Serialising plain structs of strings and numbers into a Vec cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

pub(crate) fn raw(json: &[u8]) -> &RawValue {
    serde_json::from_slice(json).unwrap_or_else(|_| {
        let null: &RawValue = serde_json::from_str("null").unwrap_or_else(|_| unreachable!());
        null
    })
}

/// SPEC 2.2 MarkPoint; the interval is the 80% band, named by the additive `coverage`.
#[derive(Serialize)]
struct MarkPoint {
    as_of_date: Day,
    value_usd: u64,
    lower_usd: u64,
    upper_usd: u64,
    /// The track record in force: the share of past month-end marks whose next reported value
    /// came within +/-20%, the same for every company on a day.
    confidence: f64,
    coverage: u32,
    /// The mark against the value of the company's last event, in percent.
    vs_last_event_pct: Option<f64>,
    /// The forecast of the next reported valuation, beside the mark (docs/design.md section 3);
    /// null once the private period ended.
    next_reported: Option<NextReported>,
    /// Whether the mark is a value today: false for a listed, sold or failed company, whose
    /// latest mark is its last private one (of the day before its outcome).
    current: bool,
}

/// What a 30-day change rests on: `events` when a value was reported within the 30 days,
/// `profile` when the change is only the method's drift moving with the time since the last one.
pub fn delta_30d_basis(marks: &CompanyMarks) -> Option<&'static str> {
    marks
        .delta_30d_pct
        .map(|_| if marks.delta_30d_has_news { "events" } else { "profile" })
}

/// The next-print forecast, labelled as what it is.
#[derive(Serialize)]
struct NextReported {
    value_usd: u64,
    label: &'static str,
}

/// What `next_reported` is, in every body that carries it.
pub const NEXT_REPORTED_LABEL: &str = "Forecast of the valuation at which the company will next be reported \
     (reported rounds run above the value on the day: companies announce rises); not today's value estimate.";

impl MarkPoint {
    /// A company's latest mark, with the track record in force for it.
    fn latest(marks: &CompanyMarks, facts: &EventFacts<'_>) -> Option<MarkPoint> {
        let day = marks.latest()?;
        let Band { lower, upper } = Band::of(day.band80);
        Some(MarkPoint {
            as_of_date: day.day,
            value_usd: usd(day.mark),
            lower_usd: lower,
            upper_usd: upper,
            confidence: round_to(marks.confidence, 4),
            coverage: 80,
            vs_last_event_pct: facts.vs_last_event_pct(day.mark),
            next_reported: marks.next_reported.map(|value| NextReported {
                value_usd: usd(value),
                label: NEXT_REPORTED_LABEL,
            }),
            current: facts.outcome_kind().is_none_or(|kind| !kind.ended()),
        })
    }
}

/// The latest mark's JSON object (`null` when the company has none), as every item carries it.
pub fn latest_mark_json(marks: &CompanyMarks, facts: &EventFacts<'_>) -> Vec<u8> {
    to_json(&MarkPoint::latest(marks, facts))
}

/// SPEC 2.4 CompanyListItem: a JSON object spliced into list pages, with the facts that explain
/// its mark.
pub fn list_item(company: &Company, marks: &CompanyMarks, facts: &EventFacts<'_>) -> Vec<u8> {
    #[derive(Serialize)]
    struct ListItem<'a> {
        slug: &'a str,
        name: &'a str,
        aliases: &'a [String],
        sector: Sector,
        status: Status,
        latest_mark: Option<MarkPoint>,
        delta_30d_pct: Option<f64>,
        delta_30d_basis: Option<&'static str>,
        #[serde(flatten)]
        facts: &'a EventFacts<'a>,
    }
    to_json(&ListItem {
        slug: &company.slug,
        name: &company.name,
        aliases: &company.aliases,
        sector: company.sector,
        status: company.status,
        latest_mark: MarkPoint::latest(marks, facts),
        delta_30d_pct: marks.delta_30d_pct,
        delta_30d_basis: delta_30d_basis(marks),
        facts,
    })
}

/// SPEC 2.7 CompanyProfileResponse, with what the latest mark rests on as its
/// `observations` (docs/design.md section 4a): the event that sets it and the drift's part, in
/// numbers and words. No source link or note: a company's history is getMarkEvents's (Pro).
pub fn profile(meta: &[u8], company: &Company, marks: &CompanyMarks, facts: &EventFacts<'_>, as_of: Day) -> Vec<u8> {
    #[derive(Serialize)]
    struct Profile<'a> {
        meta: &'a RawValue,
        slug: &'a str,
        name: &'a str,
        aliases: &'a [String],
        sector: Sector,
        status: Status,
        latest_mark: Option<MarkPoint>,
        delta_30d_pct: Option<f64>,
        delta_30d_basis: Option<&'static str>,
        #[serde(flatten)]
        facts: &'a EventFacts<'a>,
        explanation: Option<words::Explanation>,
        observations: Vec<words::Observation<'a>>,
    }
    to_json(&Profile {
        meta: raw(meta),
        slug: &company.slug,
        name: &company.name,
        aliases: &company.aliases,
        sector: company.sector,
        status: company.status,
        latest_mark: MarkPoint::latest(marks, facts),
        delta_30d_pct: marks.delta_30d_pct,
        delta_30d_basis: delta_30d_basis(marks),
        facts,
        explanation: words::explanation(company, marks, facts),
        observations: marks.basis.map_or_else(Vec::new, |basis| {
            words::observations(company, &basis, marks, facts, as_of)
        }),
    })
}

/// The `YYYY-MM-DD` of every day of a series, formatted once for both coverages. The days are
/// consecutive, so only the first needs a calendar conversion.
pub fn series_dates(series: &[MarkDay]) -> Vec<[u8; 10]> {
    let Some(first) = series.first() else {
        return Vec::new();
    };
    let mut date = first.day.date();
    let mut dates = Vec::with_capacity(series.len());
    for _ in series {
        dates.push(iso_date(date));
        date = date.next_day().unwrap_or(date);
    }
    dates
}

/// SPEC 2.8 MarkSeriesResponse. Written by hand rather than through serde because series are
/// most of a large build's bytes (tens of millions of points); the output is plain JSON that
/// the tests parse back. `dates` comes from `series_dates`.
///
/// The body is `series_prefix(meta)` followed by text that does not depend on `meta`, which the
/// series export reuses (`compile`).
pub fn series(meta: &[u8], slug: &str, coverage: Coverage, series: &[MarkDay], dates: &[[u8; 10]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(meta.len() + 64 + series.len() * 96);
    let mut number = itoa::Buffer::new();
    out.extend_from_slice(&series_prefix(meta));
    out.extend_from_slice(b"\"slug\":");
    out.extend_from_slice(&to_json(&slug));
    out.extend_from_slice(b",\"coverage\":");
    out.extend_from_slice(number.format(coverage.percent()).as_bytes());
    out.extend_from_slice(b",\"series\":[");
    for (i, (point, date)) in series.iter().zip(dates).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let (lower, upper) = point.band(coverage);
        out.extend_from_slice(b"{\"date\":\"");
        out.extend_from_slice(date);
        out.extend_from_slice(b"\",\"mark_usd\":");
        out.extend_from_slice(number.format(usd(point.mark)).as_bytes());
        out.extend_from_slice(b",\"lower_usd\":");
        out.extend_from_slice(number.format(usd(lower)).as_bytes());
        out.extend_from_slice(b",\"upper_usd\":");
        out.extend_from_slice(number.format(usd(upper)).as_bytes());
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    out
}

/// An element of MarkEventsResponse.events: one record of the append-only history, with what
/// corrected or withdrew it.
#[derive(Serialize)]
struct EventJson<'a> {
    event_id: &'a str,
    occurred_on: Day,
    event_type: EventType,
    valuation_usd: u64,
    reported_as: Option<ReportedAs>,
    source_url: &'a str,
    source_grade: Option<SourceGrade>,
    note: &'a str,
    /// The earlier record this one corrects (or, for a retraction, withdraws).
    supersedes: Option<&'a str>,
    /// The later record that corrects this one.
    superseded_by: Option<&'a str>,
    /// The later retraction that withdraws this one.
    retracted_by: Option<&'a str>,
}

/// A company's whole append-only history, every record (corrected and withdrawn ones included),
/// oldest first.
fn event_history(company: &Company) -> Vec<EventJson<'_>> {
    company
        .events
        .iter()
        .map(|e| EventJson {
            event_id: &e.event_id,
            occurred_on: e.occurred_on,
            event_type: e.event_type,
            valuation_usd: e.valuation_usd,
            reported_as: e.reported_as,
            source_url: &e.source_url,
            source_grade: e.source_grade,
            note: &e.note,
            supersedes: e.supersedes.as_deref(),
            superseded_by: e.superseded_by.as_deref(),
            retracted_by: e.retracted_by.as_deref(),
        })
        .collect()
}

/// What every MarkSeriesResponse body starts with: `{"meta":{...},`.
pub fn series_prefix(meta: &[u8]) -> Vec<u8> {
    [&b"{\"meta\":"[..], meta, b","].concat()
}

/// How the method did on one company (getBacktest): every scored reported value with the
/// numbers of the day before it (the mark, its bands, the track record in force, the next-print
/// forecast) and where it landed, and its outcome, in date order. Below Pro, what happened at an
/// event is told by where it fell (inside a band, above or below the mark, a hit) and not by its
/// value: a company's event values are getMarkEvents's. Outcomes' values are every company
/// item's anyway.
pub fn backtest(meta: &[u8], company: &Company, targets: &[Target], disclosure: Disclosure) -> Vec<u8> {
    #[derive(Serialize)]
    struct Scored<'a> {
        kind: TargetKind,
        event_type: EventType,
        occurred_on: Day,
        marked_on: Day,
        gap_years: f64,
        mark_usd: u64,
        band_80: Band,
        #[serde(skip_serializing_if = "Option::is_none")]
        band_95: Option<Band>,
        confidence: f64,
        next_print_usd: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        last_print_usd: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        event_id: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        observed_usd: Option<u64>,
        /// The value as scored: the reported one, or a failure's floored at 1% of its anchor.
        #[serde(skip_serializing_if = "Option::is_none")]
        scored_usd: Option<u64>,
        /// (mark / scored - 1) in percent.
        #[serde(skip_serializing_if = "Option::is_none")]
        error_pct: Option<f64>,
        /// The observed value was above the mark.
        above: bool,
        inside_80: bool,
        inside_95: bool,
        hit: bool,
    }
    #[derive(Serialize)]
    struct Summary {
        scored_events: usize,
        inside_80: usize,
        inside_95: usize,
        hits: usize,
    }
    #[derive(Serialize)]
    struct Backtest<'a> {
        meta: &'a RawValue,
        slug: &'a str,
        methodology_version: &'static str,
        disclosure: &'static str,
        /// `hit` is about landing within this many percent of the mark.
        tolerance_pct: f64,
        summary: Summary,
        targets: Vec<Scored<'a>>,
    }
    let full = disclosure == Disclosure::Full;
    let band = |t: &Target, low: usize, high: usize| {
        Band::of((
            (t.mark_log + t.band_offsets[low]).exp(),
            (t.mark_log + t.band_offsets[high]).exp(),
        ))
    };
    let scored: Vec<Scored<'_>> = targets
        .iter()
        .map(|t| {
            let told = full || t.kind != TargetKind::Event;
            let error = t.error(Number::Mark);
            Scored {
                kind: t.kind,
                event_type: t.event_type,
                occurred_on: t.occurred_on,
                marked_on: t.marked_on,
                gap_years: round_to(t.gap_years, 4),
                mark_usd: usd(t.mark_log.exp()),
                band_80: band(t, 0, 1),
                band_95: full.then(|| band(t, 2, 3)),
                confidence: round_to(t.confidence, 4),
                next_print_usd: usd(t.next_print_log.exp()),
                last_print_usd: full.then(|| usd(t.last_print_log.exp())),
                event_id: told.then_some(t.event_id.as_str()),
                observed_usd: told.then_some(t.reported_usd),
                scored_usd: told.then(|| usd(t.observed_log.exp())),
                error_pct: told.then(|| round_to(((-error).exp() - 1.0) * 100.0, 1)),
                above: error > 0.0,
                inside_80: t.inside_80(),
                inside_95: t.inside_95(),
                hit: t.hit(),
            }
        })
        .collect();
    let events: Vec<&Scored<'_>> = scored.iter().filter(|s| s.kind == TargetKind::Event).collect();
    to_json(&Backtest {
        meta: raw(meta),
        slug: &company.slug,
        methodology_version: METHODOLOGY_VERSION,
        disclosure: if full { "full" } else { "research" },
        tolerance_pct: crate::methodology::PARAMS.confidence_tolerance * 100.0,
        summary: Summary {
            scored_events: events.len(),
            inside_80: events.iter().filter(|s| s.inside_80).count(),
            inside_95: events.iter().filter(|s| s.inside_95).count(),
            hits: events.iter().filter(|s| s.hit).count(),
        },
        targets: scored,
    })
}

/// SPEC 2.9 MarkEventsResponse: the company's whole append-only history, oldest first.
pub fn events(meta: &[u8], company: &Company) -> Vec<u8> {
    #[derive(Serialize)]
    struct Events<'a> {
        meta: &'a RawValue,
        slug: &'a str,
        events: Vec<EventJson<'a>>,
    }
    to_json(&Events {
        meta: raw(meta),
        slug: &company.slug,
        events: event_history(company),
    })
}

/// How many companies of a list's universe are in one sector.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct SectorCount {
    pub sector: &'static str,
    pub companies: usize,
    pub private: usize,
}

/// SectorsResponse: the sectors a list can be filtered by, with how many companies (and how
/// many still private) each has in the caller's universe.
pub fn sectors(meta: &[u8], sectors: &[SectorCount]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Sectors<'a> {
        meta: &'a RawValue,
        sectors: &'a [SectorCount],
    }
    to_json(&Sectors {
        meta: raw(meta),
        sectors,
    })
}

/// The first line of an export document: `meta`, which document it is, and how many company
/// lines follow.
pub fn export_header(meta: &[u8], export: &str, coverage: Option<Coverage>, companies: usize) -> Vec<u8> {
    #[derive(Serialize)]
    struct Header<'a> {
        meta: &'a RawValue,
        export: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        coverage: Option<u32>,
        companies: usize,
    }
    let mut line = to_json(&Header {
        meta: raw(meta),
        export,
        coverage: coverage.map(Coverage::percent),
        companies,
    });
    line.push(b'\n');
    line
}

/// One line of the companies export: the company with its latest mark and both bands, its
/// whole event history and its signed resolution record (`resolution`, the exact bytes served
/// by getResolution, so its signature verifies as it stands).
pub fn export_company(company: &Company, marks: &CompanyMarks, facts: &EventFacts<'_>, resolution: &[u8]) -> Vec<u8> {
    #[derive(Serialize)]
    struct BandUsd {
        lower_usd: u64,
        upper_usd: u64,
    }
    #[derive(Serialize)]
    struct LatestMark {
        #[serde(flatten)]
        point: MarkPoint,
        band_95: BandUsd,
    }
    #[derive(Serialize)]
    struct Line<'a> {
        slug: &'a str,
        name: &'a str,
        aliases: &'a [String],
        sector: Sector,
        status: Status,
        latest_mark: Option<LatestMark>,
        delta_30d_pct: Option<f64>,
        delta_30d_basis: Option<&'static str>,
        #[serde(flatten)]
        facts: &'a EventFacts<'a>,
        events: Vec<EventJson<'a>>,
        resolution: &'a RawValue,
    }
    let latest_mark = marks.latest().zip(MarkPoint::latest(marks, facts)).map(|(day, point)| {
        let Band { lower, upper } = Band::of(day.band95);
        LatestMark {
            point,
            band_95: BandUsd {
                lower_usd: lower,
                upper_usd: upper,
            },
        }
    });
    let mut line = to_json(&Line {
        slug: &company.slug,
        name: &company.name,
        aliases: &company.aliases,
        sector: company.sector,
        status: company.status,
        latest_mark,
        delta_30d_pct: marks.delta_30d_pct,
        delta_30d_basis: delta_30d_basis(marks),
        facts,
        events: event_history(company),
        resolution: raw(resolution),
    });
    line.push(b'\n');
    line
}

/// The unsigned resolution record of SPEC 2.10 with docs/design.md section 4's versioned
/// identifiers: the mark of record at `as_of`, or for a company whose private period ended the
/// value of its outcome (the listing, the sale, the failure) with its last private bands.
pub fn resolution_record(
    meta: &[u8],
    info: &DatasetInfo,
    company: &Company,
    marks: &CompanyMarks,
    facts: &EventFacts<'_>,
    key_id: &str,
) -> Option<Map<String, Value>> {
    let latest = marks.latest()?;
    let ended = facts.outcome.as_ref().filter(|o| o.kind.ended());
    let (basis, basis_date, value) = match ended {
        Some(outcome) => {
            let basis = match outcome.kind {
                OutcomeKind::Listed => "listing",
                OutcomeKind::Sold => "sale",
                OutcomeKind::Bankrupt => "bankruptcy",
                _ => "wind_down",
            };
            (basis, outcome.occurred_on, outcome.valuation_usd)
        }
        None => ("mark", latest.day, usd(latest.mark)),
    };
    let meta: Value = serde_json::from_slice(meta).ok()?;
    let record = json!({
        "meta": meta,
        "record_id": format!("{}/{}/{}", company.slug, info.dataset_version, METHODOLOGY_VERSION),
        "slug": company.slug,
        "value_usd": value,
        "band_80": Band::of(latest.band80),
        "band_95": Band::of(latest.band95),
        "basis": basis,
        "basis_date": basis_date,
        "marked_on": latest.day,
        "dataset_version": info.dataset_version,
        "methodology_version": METHODOLOGY_VERSION,
        "as_of": info.as_of,
        "key_id": key_id,
    });
    match record {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// Every scored row of the scorecard (event-day targets and month-ends) with every number, so
/// that every figure can be recomputed from it, in one of its two disclosures. Written to `out`
/// as it is serialised: a million rows make gigabytes.
pub fn scorecard_targets(
    out: impl std::io::Write,
    meta: &[u8],
    dataset: &Dataset,
    method: &Method,
    disclosure: Disclosure,
) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct Rows<'a> {
        meta: &'a RawValue,
        methodology_version: &'static str,
        /// Which form this is: `public` (relative quantities only) or `full` (Pro and above).
        disclosure: &'static str,
        /// `hit` and `confidence` are about landing within this many percent of the mark.
        tolerance_pct: f64,
        numbers: [&'static str; 3],
        #[serde(flatten)]
        rows: disclosure::DisclosedRows<'a>,
    }
    let month_ends: Vec<_> = method
        .fit
        .month_ends
        .iter()
        .map(|row| crate::methodology::scorecard::scored(&method.fit, row))
        .collect();
    let rows = Rows {
        meta: raw(meta),
        methodology_version: METHODOLOGY_VERSION,
        disclosure: disclosure.as_str(),
        tolerance_pct: crate::methodology::PARAMS.confidence_tolerance * 100.0,
        numbers: Number::ALL.map(Number::name),
        rows: disclosure::rows(dataset, &method.scorecard.targets, &month_ends, disclosure),
    };
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    serde_json::to_writer(&mut out, &rows).map_err(std::io::Error::from)?;
    std::io::Write::flush(&mut out)
}

/// The published scorecard: the method's constants, the scores, and each index as published
/// (weights capped) beside where plain value weights would have taken it. Its figures are
/// aggregates, the same in both disclosures; the document names the form of the rows a reader
/// gets.
pub fn scorecard(
    meta: &[u8],
    scorecard: &crate::methodology::Scorecard,
    indices: &[indices::IndexSummary],
    disclosure: Disclosure,
) -> Vec<u8> {
    #[derive(Serialize)]
    struct Scorecard<'a> {
        meta: &'a RawValue,
        methodology_version: &'static str,
        disclosure: &'static str,
        params: &'static crate::methodology::Params,
        #[serde(flatten)]
        scorecard: &'a crate::methodology::Scorecard,
        /// The weight cap of the indices (`marks_format::rules::weights`).
        index_weight_cap: f64,
        indices: &'a [indices::IndexSummary],
    }
    to_json(&Scorecard {
        meta: raw(meta),
        methodology_version: METHODOLOGY_VERSION,
        disclosure: disclosure.as_str(),
        params: &crate::methodology::PARAMS,
        scorecard,
        index_weight_cap: marks_format::rules::weights::WEIGHT_CAP,
        indices,
    })
}
