//! An index's constituents on one of its days (`GET /v1/indices/{id}/constituents`), rendered
//! once here for both sides: the builder stores every index's latest day at each coverage, and
//! the server makes any other day as it is asked, so the two answers of one day are the same
//! bytes. Also the reading of a stored CSV series row both sides need for it.

use serde::Serialize;

use crate::rules::dated::{self, DateRange};
use crate::rules::table::{self, put_row, Cell, CONSTITUENT_COLUMNS};
use crate::rules::weights::weights;

/// A company in the index on the day, with its published mark and band at the coverage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    pub slug: &'a str,
    pub name: &'a str,
    pub mark_usd: u64,
    pub lower_usd: u64,
    pub upper_usd: u64,
}

/// What the answer says about the day besides its members.
#[derive(Clone, Copy, Debug)]
pub struct Day<'a> {
    /// `meta` as stored, in its order (the JSON form only).
    pub meta: &'a [u8],
    pub index: &'a str,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    pub coverage: u32,
    /// The index's level that day, as its stored series row gives it.
    pub level: f64,
}

#[derive(Serialize)]
struct Constituent<'a> {
    slug: &'a str,
    name: &'a str,
    /// Its weight in the index: by value, capped (`crate::rules::weights`).
    weight: f64,
    /// Its share of the day's value, before capping.
    value_weight: f64,
    mark_usd: u64,
    lower_usd: u64,
    upper_usd: u64,
}

/// The JSON (or, with `csv`, the CSV) answer: the members weighted, largest first.
pub fn render(day: Day<'_>, members: &[Member<'_>], csv: bool) -> Vec<u8> {
    let values: Vec<f64> = members.iter().map(|m| m.mark_usd as f64).collect();
    let total: f64 = values.iter().sum();
    let round = |w: f64| (w * 1e6).round() / 1e6;
    let mut rows: Vec<Constituent<'_>> = members
        .iter()
        .zip(weights(&values))
        .map(|(m, weight)| Constituent {
            slug: m.slug,
            name: m.name,
            weight: round(weight),
            value_weight: if total > 0.0 {
                round(m.mark_usd as f64 / total)
            } else {
                0.0
            },
            mark_usd: m.mark_usd,
            lower_usd: m.lower_usd,
            upper_usd: m.upper_usd,
        })
        .collect();
    rows.sort_by(|a, b| b.mark_usd.cmp(&a.mark_usd).then_with(|| a.slug.cmp(b.slug)));
    if csv {
        let mut out = table::header(CONSTITUENT_COLUMNS);
        for m in &rows {
            put_row(
                &mut out,
                &[
                    Cell::Text(day.index),
                    Cell::Text(day.date),
                    Cell::Text(m.slug),
                    Cell::Text(m.name),
                    Cell::Decimal(m.weight),
                    Cell::Whole(m.mark_usd),
                    Cell::Whole(m.lower_usd),
                    Cell::Whole(m.upper_usd),
                    Cell::Decimal(m.value_weight),
                ],
            );
        }
        return out;
    }
    #[derive(Serialize)]
    struct Body<'a> {
        meta: Option<&'a serde_json::value::RawValue>,
        index: &'a str,
        date: &'a str,
        coverage: u32,
        level: f64,
        constituents: &'a [Constituent<'a>],
    }
    serde_json::to_vec(&Body {
        meta: serde_json::from_slice(day.meta).ok(),
        index: day.index,
        date: day.date,
        coverage: day.coverage,
        level: day.level,
        constituents: &rows,
    })
    .unwrap_or_default()
}

/// The numbers of a stored CSV row after its id and date (`"id","YYYY-MM-DD",a,b,c...`).
pub fn numbers_of(row: &[u8]) -> Vec<f64> {
    std::str::from_utf8(row)
        .unwrap_or("")
        .trim_end()
        .split(',')
        .skip(2)
        .map(|cell| cell.parse().unwrap_or(f64::NAN))
        .collect()
}

/// The row of day `day` in a stored CSV series (its header row first), if it has that day.
pub fn row_on<'b>(stored: &'b [u8], id: &str, day: [u8; 10]) -> Option<&'b [u8]> {
    row_among(&stored[dated::csv_rows(stored)], id, day)
}

/// The row of day `day` among rows of a CSV series (without its header row), if they have it.
pub fn row_among<'b>(rows: &'b [u8], id: &str, day: [u8; 10]) -> Option<&'b [u8]> {
    let range = DateRange {
        from: Some(day),
        to: Some(day),
    };
    let cut = dated::records(rows, 0..rows.len(), &dated::csv_row_marker(id), &range);
    (!cut.is_empty()).then(|| &rows[cut])
}

/// The date of the last row of a stored CSV series.
pub fn last_day(stored: &[u8], id: &str) -> Option<[u8; 10]> {
    let rows = &stored[dated::csv_rows(stored)];
    let body = rows.strip_suffix(b"\r\n")?;
    let start = body.windows(2).rposition(|w| w == b"\r\n").map_or(0, |i| i + 2);
    let date = body.get(start + id.len() + 4..start + id.len() + 14)?;
    let mut day = [0u8; 10];
    day.copy_from_slice(date);
    Some(day)
}
