//! The private-market indices (`/v1/indices`): their list and each one's daily series, stored
//! by the builder, and an index's constituents and weights on any of its days, read from the
//! stored series of the index and of its companies (one binary search each, no other index).

use bytes::Bytes;
use marks_format::file::layout::{ArchivedBody, ArchivedIndexEntry};
use marks_format::rules::dated::{self, DateRange};
use marks_format::rules::day::Day;
use marks_format::rules::table::{self, put_row, Cell, CONSTITUENT_COLUMNS};
use marks_format::rules::tiers::Scope;
use serde::Serialize;
use xxhash_rust::xxh3::Xxh3;

use crate::api::call::{coverage, require, Call};
use crate::api::query::Params;
use crate::api::rows::{self, Form, SeriesText};
use crate::response::body::Payload;
use crate::response::problem::ApiError;
use crate::response::{header_value, Cache, Representation};
use crate::snapshot::LoadedSnapshot;

/// `GET /v1/indices`.
pub fn list(call: &Call<'_>) -> Result<Representation, ApiError> {
    require(call.caller, Scope::Marks80)?;
    Params::parse(call.query, &[])?;
    let index = call.loaded.snapshot.index();
    Ok(call.negotiation.stored(call.loaded, &index.index_list, Cache::Private))
}

/// The index the path names.
fn named<'s>(call: &Call<'s>) -> Result<&'s ArchivedIndexEntry, ApiError> {
    let id = call.slug.unwrap_or("");
    call.loaded.snapshot.index().index_named(id).ok_or_else(|| {
        let shown: String = id.chars().take(64).collect();
        ApiError::NotFound(format!(
            "No index has the id {shown:?}; GET /v1/indices lists them (all, and one per sector)."
        ))
    })
}

/// `GET /v1/indices/{id}`: the index's days, at a coverage, in a date range, as JSON or CSV.
pub fn series(call: &Call<'_>) -> Result<Representation, ApiError> {
    require(call.caller, Scope::Marks80)?;
    let params = Params::parse(call.query, &["coverage", "from", "to"])?;
    let coverage = coverage(call, &params)?;
    let range = rows::date_range(&params)?;
    let entry = named(call)?;
    let form = Form::of(call.negotiation);
    let body = if coverage == 95 {
        form.pick(&entry.series_95, &entry.series_95_csv)
    } else {
        form.pick(&entry.series_80, &entry.series_80_csv)
    };
    if !range.is_whole() {
        return rows::series_range(
            call.loaded,
            call.negotiation,
            entry.id.as_str(),
            SeriesText::Stored(body),
            form,
            &range,
        );
    }
    let stored = call.negotiation.stored(call.loaded, body, Cache::Private);
    Ok(form.dress(call.loaded, stored))
}

/// The numbers of a stored CSV row after its id and date (`"id","YYYY-MM-DD",a,b,c...`).
fn numbers_of(row: &[u8]) -> Vec<f64> {
    std::str::from_utf8(row)
        .unwrap_or("")
        .trim_end()
        .split(',')
        .skip(2)
        .map(|cell| cell.parse().unwrap_or(f64::NAN))
        .collect()
}

/// The row of day `day` in a stored CSV series, if it has that day.
fn row_on<'b>(stored: &'b [u8], id: &str, day: [u8; 10]) -> Option<&'b [u8]> {
    let range = DateRange {
        from: Some(day),
        to: Some(day),
    };
    let cut = dated::records(stored, dated::csv_rows(stored), &dated::csv_row_marker(id), &range);
    (!cut.is_empty()).then(|| &stored[cut])
}

/// The date of the last row of a stored CSV series.
fn last_day(stored: &[u8], id: &str) -> Option<[u8; 10]> {
    let rows = &stored[dated::csv_rows(stored)];
    let body = rows.strip_suffix(b"\r\n")?;
    let start = body.windows(2).rposition(|w| w == b"\r\n").map_or(0, |i| i + 2);
    let date = body.get(start + id.len() + 4..start + id.len() + 14)?;
    let mut day = [0u8; 10];
    day.copy_from_slice(date);
    Some(day)
}

#[derive(Serialize)]
struct Constituent<'a> {
    slug: &'a str,
    name: &'a str,
    /// Its weight in the index: by value, capped (`marks_format::rules::weights`).
    weight: f64,
    /// Its share of the day's value, before capping.
    value_weight: f64,
    mark_usd: u64,
    lower_usd: u64,
    upper_usd: u64,
}

/// `GET /v1/indices/{id}/constituents?date=`: the companies in the index on that day (its last
/// day when none is given) with their marks, bands and weights, largest first.
pub fn constituents(call: &Call<'_>) -> Result<Representation, ApiError> {
    require(call.caller, Scope::Marks80)?;
    let params = Params::parse(call.query, &["coverage", "date"])?;
    let coverage = coverage(call, &params)?;
    // Parameters first, as every operation checks them, then the index.
    let asked_day = params
        .get("date")
        .map(|text| {
            Day::parse(text).ok_or_else(|| ApiError::invalid_parameter("date", "must be a date written YYYY-MM-DD"))
        })
        .transpose()?;
    let entry = named(call)?;
    let loaded = call.loaded;
    let id = entry.id.as_str();
    let pick = |c80: &'_ ArchivedBody, c95: &'_ ArchivedBody| -> Bytes {
        loaded.snapshot.body(&if coverage == 95 { c95 } else { c80 }.identity)
    };
    let index_rows = pick(&entry.series_80_csv, &entry.series_95_csv);
    let day = match asked_day {
        Some(day) => day.iso(),
        None => {
            last_day(&index_rows, id).ok_or_else(|| ApiError::NotFound(format!("The index {id:?} has no days.")))?
        }
    };
    let date = String::from_utf8_lossy(&day).into_owned();
    let Some(index_row) = row_on(&index_rows, id, day) else {
        return Err(ApiError::invalid_parameter(
            "date",
            &format!("({date}) is not a day of the index {id:?}; GET /v1/indices gives its first and last dates"),
        ));
    };
    let level = numbers_of(index_row).first().copied().unwrap_or(f64::NAN);
    let form = Form::of(call.negotiation);
    let mut hasher = Xxh3::with_seed(loaded.etag_seed);
    for part in [
        b"constituents".as_slice(),
        id.as_bytes(),
        &day,
        &[coverage as u8, form as u8],
    ] {
        hasher.update(part);
        hasher.update(&[0]);
    }
    let etag = format!("\"c{:016x}\"", hasher.digest());
    let mut representation = call
        .negotiation
        .conditional(&etag, header_value(&etag), Cache::Private, Bytes::new);
    if representation.status == http::StatusCode::OK {
        representation.body = Payload::Bytes(render(loaded, entry, day, &date, coverage, level, form)?);
    }
    Ok(form.dress(loaded, representation))
}

fn render(
    loaded: &LoadedSnapshot,
    entry: &ArchivedIndexEntry,
    day: [u8; 10],
    date: &str,
    coverage: u32,
    level: f64,
    form: Form,
) -> Result<Bytes, ApiError> {
    let index = loaded.snapshot.index();
    let julian = Day::parse(date).map_or(0, |d| d.0);
    let sector = entry.sector.to_native();
    let mut members: Vec<Constituent<'_>> = Vec::new();
    let counted = index
        .companies
        .iter()
        .filter(|c| c.in_index(sector))
        .filter(|c| c.index_from.to_native() <= julian && julian < c.index_until.to_native());
    for c in counted {
        let series = if coverage == 95 {
            &c.marks_95_csv
        } else {
            &c.marks_80_csv
        };
        // A pass over the index's companies: their texts are read, not kept.
        let text = loaded.series_text_passing(series)?;
        let Some(row) = row_on(&text, c.slug.as_str(), day) else {
            continue;
        };
        let numbers = numbers_of(row);
        let usd = |i: usize| numbers.get(i).copied().unwrap_or(0.0) as u64;
        members.push(Constituent {
            slug: c.slug.as_str(),
            name: c.name.as_str(),
            weight: 0.0,
            value_weight: 0.0,
            mark_usd: usd(0),
            lower_usd: usd(1),
            upper_usd: usd(2),
        });
    }
    let values: Vec<f64> = members.iter().map(|m| m.mark_usd as f64).collect();
    let total: f64 = values.iter().sum();
    let round = |w: f64| (w * 1e6).round() / 1e6;
    for (member, weight) in members.iter_mut().zip(marks_format::rules::weights::weights(&values)) {
        member.weight = round(weight);
        member.value_weight = if total > 0.0 {
            round(member.mark_usd as f64 / total)
        } else {
            0.0
        };
    }
    members.sort_by(|a, b| b.mark_usd.cmp(&a.mark_usd).then_with(|| a.slug.cmp(b.slug)));
    match form {
        Form::Json => {
            #[derive(Serialize)]
            struct Body<'a> {
                meta: Option<&'a serde_json::value::RawValue>,
                index: &'a str,
                date: &'a str,
                coverage: u32,
                level: f64,
                constituents: &'a [Constituent<'a>],
            }
            // `meta` as stored, in its order.
            let meta = serde_json::from_slice(&loaded.meta).ok();
            Ok(Bytes::from(
                serde_json::to_vec(&Body {
                    meta,
                    index: entry.id.as_str(),
                    date,
                    coverage,
                    level,
                    constituents: &members,
                })
                .unwrap_or_default(),
            ))
        }
        Form::Csv => {
            let mut out = table::header(CONSTITUENT_COLUMNS);
            for m in &members {
                put_row(
                    &mut out,
                    &[
                        Cell::Text(entry.id.as_str()),
                        Cell::Text(date),
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
            Ok(Bytes::from(out))
        }
    }
}
