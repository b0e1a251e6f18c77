//! The bodies of the indices (`methodology::indices`): each index's daily series at each
//! coverage, as JSON and CSV, and the list of indices.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::methodology::indices::IndexDay;
use crate::methodology::{round_to, Coverage};
use crate::render::{raw, to_json};
use marks_format::rules::day::Day;
use marks_format::rules::table::{self, put_row, Cell, INDEX_COLUMNS};

/// How an index is named and what it covers.
#[derive(Debug)]
pub struct IndexInfo<'a> {
    pub id: &'a str,
    pub name: String,
    /// None: every company.
    pub sector: Option<&'a str>,
}

fn band(day: &IndexDay, coverage: Coverage) -> (f64, f64) {
    match coverage {
        Coverage::C80 => day.band80,
        Coverage::C95 => day.band95,
    }
}

/// Levels are published to four decimals.
fn level(x: f64) -> f64 {
    round_to(x, 4)
}

/// IndexSeriesResponse: `meta`, which index, and its days. Ends with its series (`]}`), so a
/// date range is cut out of it like a company's series (`marks_format::rules::dated`).
pub fn series(meta: &[u8], info: &IndexInfo<'_>, coverage: Coverage, days: &[IndexDay]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Point {
        date: Day,
        level: f64,
        lower: f64,
        upper: f64,
        constituents: u32,
    }
    #[derive(Serialize)]
    struct Series<'a> {
        meta: &'a RawValue,
        index: &'a str,
        name: &'a str,
        sector: Option<&'a str>,
        coverage: u32,
        series: Vec<Point>,
    }
    to_json(&Series {
        meta: raw(meta),
        index: info.id,
        name: &info.name,
        sector: info.sector,
        coverage: coverage.percent(),
        series: days
            .iter()
            .map(|d| {
                let (lower, upper) = band(d, coverage);
                Point {
                    date: d.day,
                    level: level(d.level),
                    lower: level(lower),
                    upper: level(upper),
                    constituents: d.constituents,
                }
            })
            .collect(),
    })
}

/// The same days as CSV.
pub fn series_csv(info: &IndexInfo<'_>, coverage: Coverage, days: &[IndexDay]) -> Vec<u8> {
    let mut out = table::header(INDEX_COLUMNS);
    for d in days {
        let (lower, upper) = band(d, coverage);
        let date = d.day.to_string();
        put_row(
            &mut out,
            &[
                Cell::Text(info.id),
                Cell::Text(&date),
                Cell::Decimal(level(d.level)),
                Cell::Decimal(level(lower)),
                Cell::Decimal(level(upper)),
                Cell::Whole(u64::from(d.constituents)),
            ],
        );
    }
    out
}

/// IndicesResponse: every index with its span and latest day (80% band).
pub fn list(meta: &[u8], indices: &[(IndexInfo<'_>, &[IndexDay])]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Latest {
        date: Day,
        level: f64,
        lower: f64,
        upper: f64,
        constituents: u32,
    }
    #[derive(Serialize)]
    struct Entry<'a> {
        index: &'a str,
        name: &'a str,
        sector: Option<&'a str>,
        first_date: Option<Day>,
        last_date: Option<Day>,
        latest: Option<Latest>,
    }
    #[derive(Serialize)]
    struct List<'a> {
        meta: &'a RawValue,
        base_level: f64,
        indices: Vec<Entry<'a>>,
    }
    to_json(&List {
        meta: raw(meta),
        base_level: 100.0,
        indices: indices
            .iter()
            .map(|(info, days)| Entry {
                index: info.id,
                name: &info.name,
                sector: info.sector,
                first_date: days.first().map(|d| d.day),
                last_date: days.last().map(|d| d.day),
                latest: days.last().map(|d| Latest {
                    date: d.day,
                    level: level(d.level),
                    lower: level(d.band80.0),
                    upper: level(d.band80.1),
                    constituents: d.constituents,
                }),
            })
            .collect(),
    })
}

/// How an index ended, capped and not: what the scorecard shows of the weight cap.
#[derive(Clone, Debug, Serialize)]
pub struct IndexSummary {
    pub index: String,
    pub name: String,
    pub date: Day,
    pub constituents: u32,
    /// The published level: weights capped at 10%.
    pub level: f64,
    /// Where plain value weights would have taken it.
    pub uncapped_level: f64,
    /// The largest constituent's share of the day's value, before capping.
    pub largest_share_uncapped: f64,
}

impl IndexSummary {
    pub fn of(info: &IndexInfo<'_>, days: &[IndexDay]) -> Option<IndexSummary> {
        let last = days.last()?;
        Some(IndexSummary {
            index: info.id.to_string(),
            name: info.name.clone(),
            date: last.day,
            constituents: last.constituents,
            level: level(last.level),
            uncapped_level: level(last.uncapped_level),
            largest_share_uncapped: round_to(last.largest_share, 4),
        })
    }
}
