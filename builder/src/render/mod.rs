//! Every response body of the data endpoints, rendered once at build time to final JSON bytes.
//!
//! Field names and shapes follow SPEC section 2; fields this service adds are additive. The
//! `meta` object is rendered once and spliced into every body as raw JSON. Amounts are whole
//! US dollars.

pub mod changes;
pub mod export;
pub mod facts;
pub mod indices;
pub mod signing;
pub mod table;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::dataset::{Company, DatasetInfo, EventType, Sector, Status};
use crate::methodology::forecasters::backtest::Forecaster;
use crate::methodology::scorecard::disclosure::{DisclosedScorecard, DisclosedTargets, Disclosure};
use crate::methodology::scorecard::{Target, TargetKind, Verdict};
use crate::methodology::{round_to, usd, Band, CompanyMarks, Coverage, Fit, MarkBasis, MarkDay, METHODOLOGY_VERSION};
use crate::render::facts::EventFacts;
use marks_format::day::{iso_date, Day};

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
    confidence: f64,
    coverage: u32,
    /// The mark against the value of the company's last event, in percent.
    vs_last_event_pct: Option<f64>,
}

impl MarkPoint {
    /// A company's latest mark, with the confidence the method states for it.
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
        })
    }
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
        facts,
    })
}

/// SPEC 2.7 CompanyProfileResponse, with what the latest mark rests on as its
/// `observations` (docs/design.md section 4a): the event that sets it and the drift's part, in
/// numbers and words. No source link or note: a company's history is getMarkEvents's (Pro).
pub fn profile(meta: &[u8], company: &Company, marks: &CompanyMarks, facts: &EventFacts<'_>) -> Vec<u8> {
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
        #[serde(flatten)]
        facts: &'a EventFacts<'a>,
        observations: Vec<Observation<'a>>,
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
        facts,
        observations: marks.basis.map_or_else(Vec::new, |basis| observations(company, &basis)),
    })
}

/// One part of what a latest mark rests on.
#[derive(Serialize)]
#[serde(tag = "part", rename_all = "snake_case")]
enum Observation<'a> {
    /// The event the mark starts from; all of the mark moves with its value.
    Event {
        event_id: &'a str,
        occurred_on: Day,
        event_type: EventType,
        valuation_usd: u64,
        weight: f64,
        explanation: String,
    },
    /// What the method adds for the days since that event.
    Drift {
        days: i32,
        drift_pct: f64,
        explanation: String,
    },
}

fn observations<'a>(company: &'a Company, basis: &MarkBasis) -> Vec<Observation<'a>> {
    let Some(event) = company.events.get(basis.event) else {
        return Vec::new();
    };
    let kind = event.event_type.as_str().replace('_', " ");
    let explanation = if event.event_type == EventType::Bankruptcy {
        format!(
            "The value reported after the {kind} on {} is the mark.",
            event.occurred_on
        )
    } else {
        format!("The mark starts from the value of this {kind}.")
    };
    let mut parts = vec![Observation::Event {
        event_id: &event.event_id,
        occurred_on: event.occurred_on,
        event_type: event.event_type,
        valuation_usd: event.valuation_usd,
        weight: 1.0,
        explanation,
    }];
    if event.event_type != EventType::Bankruptcy {
        let drift_pct = round_to((basis.drift_log.exp() - 1.0) * 100.0, 2);
        let explanation = if event.event_type == EventType::Acquisition {
            // Methodology v0.4.0: an agreed sale fixes the price.
            format!(
                "The mark adds nothing after an agreed sale: the agreed price holds, {} days on, while its \
                 bands widen with the time since, because agreed deals can fail.",
                basis.days
            )
        } else {
            format!(
                "The mark adds {drift_pct}% for {} days without a reported valuation, learnt from how \
                 valuations moved after similar gaps across every company.",
                basis.days
            )
        };
        parts.push(Observation::Drift {
            days: basis.days,
            drift_pct,
            explanation,
        });
    }
    parts
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
/// series export reuses (`build`).
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

/// An element of MarkEventsResponse.events.
#[derive(Serialize)]
struct EventJson<'a> {
    event_id: &'a str,
    occurred_on: Day,
    event_type: EventType,
    valuation_usd: u64,
    source_url: &'a str,
    note: &'a str,
}

/// A company's whole append-only history, oldest first.
fn event_history(company: &Company) -> Vec<EventJson<'_>> {
    company
        .events
        .iter()
        .map(|e| EventJson {
            event_id: &e.event_id,
            occurred_on: e.occurred_on,
            event_type: e.event_type,
            valuation_usd: e.valuation_usd,
            source_url: &e.source_url,
            note: &e.note,
        })
        .collect()
}

/// What every MarkSeriesResponse body starts with: `{"meta":{...},`.
pub fn series_prefix(meta: &[u8]) -> Vec<u8> {
    [&b"{\"meta\":"[..], meta, b","].concat()
}

/// SPEC 2.9 MarkEventsResponse: the company's whole append-only history, oldest first.
/// How the method did on one company (getBacktest): every scored event with the forecast made
/// before it (the mark, its bands, the confidence it stated) and what happened, and its listing
/// or bankruptcy, in date order. Below Pro, what happened at an event is told by where it fell
/// (inside a band, above or below the mark, a hit) and not by its value: a company's event
/// values are getMarkEvents's. Outcomes' values are every company item's anyway.
pub fn backtest(meta: &[u8], company: &Company, targets: &[Target], disclosure: Disclosure) -> Vec<u8> {
    #[derive(Serialize)]
    struct Scored<'a> {
        kind: TargetKind,
        event_type: EventType,
        occurred_on: Day,
        marked_on: Day,
        gap_years: f64,
        mark_usd: u64,
        band_80: &'a Band,
        #[serde(skip_serializing_if = "Option::is_none")]
        band_95: Option<&'a Band>,
        confidence: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        event_id: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        observed_usd: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error_pct: Option<f64>,
        /// The observed value was above the mark.
        above: bool,
        inside_80: bool,
        inside_95: bool,
        hit: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        verdict: Option<Verdict>,
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
        forecaster: &'static str,
        disclosure: &'static str,
        summary: Summary,
        targets: Vec<Scored<'a>>,
    }
    let full = disclosure == Disclosure::Full;
    let method = Forecaster::Method.index();
    let scored: Vec<Scored<'_>> = targets
        .iter()
        .filter_map(|t| {
            let f = t.forecasts.get(method)?;
            let told = full || t.kind != TargetKind::Event;
            Some(Scored {
                kind: t.kind,
                event_type: t.event_type,
                occurred_on: t.occurred_on,
                marked_on: t.marked_on,
                gap_years: round_to(t.gap_years, 4),
                mark_usd: usd(f.mark_usd),
                band_80: &f.band_80,
                band_95: full.then_some(&f.band_95),
                confidence: round_to(f.confidence, 4),
                event_id: told.then_some(t.event_id.as_str()),
                observed_usd: told.then_some(t.observed_usd),
                error_pct: if told { f.error_pct() } else { None },
                above: (t.observed_usd as f64) > f.mark_usd,
                inside_80: f.inside_80,
                inside_95: f.inside_95,
                hit: f.hit,
                verdict: f.verdict,
            })
        })
        .collect();
    let events: Vec<&Scored<'_>> = scored.iter().filter(|s| s.kind == TargetKind::Event).collect();
    to_json(&Backtest {
        meta: raw(meta),
        slug: &company.slug,
        methodology_version: METHODOLOGY_VERSION,
        forecaster: Forecaster::Method.name(),
        disclosure: if full { "full" } else { "research" },
        summary: Summary {
            scored_events: events.len(),
            inside_80: events.iter().filter(|s| s.inside_80).count(),
            inside_95: events.iter().filter(|s| s.inside_95).count(),
            hits: events.iter().filter(|s| s.hit).count(),
        },
        targets: scored,
    })
}

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
        facts,
        events: event_history(company),
        resolution: raw(resolution),
    });
    line.push(b'\n');
    line
}

/// The unsigned resolution record of SPEC 2.10 with docs/design.md section 4's versioned identifiers: the mark
/// of record at `as_of`, or for a listed company the listing value with its last private bands.
pub fn resolution_record(
    meta: &[u8],
    info: &DatasetInfo,
    company: &Company,
    marks: &CompanyMarks,
    key_id: &str,
) -> Option<Map<String, Value>> {
    let latest = marks.latest()?;
    let (basis, basis_date, value) = match (company.listing(), company.bankruptcy()) {
        (Some(listing), _) => ("listing", listing.occurred_on, listing.valuation_usd),
        // The series ends on the bankruptcy at the reported value, bands included.
        (None, Some(bankruptcy)) => ("bankruptcy", bankruptcy.occurred_on, bankruptcy.valuation_usd),
        (None, None) => ("mark", latest.day, usd(latest.mark)),
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

/// Every scored target of the backtest with each forecaster's numbers, so that every figure of
/// the scorecard can be recomputed from it, in one of its two disclosures.
/// Written to `out` as it is serialised: a million targets make gigabytes.
pub fn scorecard_targets(
    out: impl std::io::Write,
    meta: &[u8],
    fit: &Fit,
    disclosure: Disclosure,
) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct Targets<'a> {
        meta: &'a RawValue,
        methodology_version: &'static str,
        /// Which form this is: `public` (relative quantities only) or `full` (Pro and above).
        disclosure: &'static str,
        /// `hit` and `confidence` are about landing within this many percent of the mark.
        tolerance_pct: f64,
        forecasters: Vec<&'static str>,
        targets: DisclosedTargets<'a>,
    }
    let targets = Targets {
        meta: raw(meta),
        methodology_version: METHODOLOGY_VERSION,
        disclosure: disclosure.as_str(),
        tolerance_pct: crate::methodology::conformal::CONFIDENCE_TOLERANCE * 100.0,
        forecasters: fit.scorecard.forecasters.iter().map(|f| f.figures.name).collect(),
        targets: fit.scorecard.disclosed_targets(disclosure),
    };
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    serde_json::to_writer(&mut out, &targets).map_err(std::io::Error::from)?;
    std::io::Write::flush(&mut out)
}

/// The published backtest: the method's constants (and the comparison forecasters'), the
/// quantiles now in force, and the scorecard, in one of its two disclosures.
pub fn scorecard(meta: &[u8], fit: &Fit, disclosure: Disclosure) -> Vec<u8> {
    #[derive(Serialize)]
    struct Scorecard<'a> {
        meta: &'a RawValue,
        methodology_version: &'static str,
        /// Which form this is: `public` (relative quantities only) or `full` (Pro and above).
        disclosure: &'static str,
        params: Value,
        comparison_params: Value,
        quantiles_in_force: crate::methodology::Quantiles,
        /// The method's bands in force after `as_of`, with the 80% level and what set it.
        bands_in_force: crate::methodology::adaptive::BandState,
        #[serde(flatten)]
        scorecard: DisclosedScorecard<'a>,
    }
    to_json(&Scorecard {
        meta: raw(meta),
        methodology_version: METHODOLOGY_VERSION,
        disclosure: disclosure.as_str(),
        params: fit.params.to_json(),
        comparison_params: fit.params.comparison_json(),
        quantiles_in_force: fit.bands_on(fit.as_of.plus(1)).quantiles(),
        bands_in_force: fit.bands_on(fit.as_of.plus(1)),
        scorecard: fit.scorecard.disclosed(disclosure),
    })
}
