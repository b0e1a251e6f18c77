//! The private-market indices (`/v1/indices`): their list and each one's daily series, stored
//! by the builder, and an index's constituents and weights on any of its days, read from the
//! stored series of the index and of its companies (one binary search each, no other index).

use std::sync::Arc;

use bytes::Bytes;
use marks_format::file::layout::{ArchivedBody, ArchivedIndexEntry};
use marks_format::rules::constituents::{self, last_day, numbers_of, row_among, row_on, Member};
use marks_format::rules::day::Day;
use marks_format::rules::tiers::Scope;
use xxhash_rust::xxh3::Xxh3;

use crate::api::call::{coverage, decoder_place_for, require, Call};
use crate::api::query::Params;
use crate::api::rows::{self, Form, SeriesText};
use crate::response::body::{Payload, Step, Steps};
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
    let form = Form::of(call.negotiation);
    // The latest day, asked most, as the builder stored it.
    if let Some(latest) = entry.latest_constituents.as_ref() {
        if asked_day.is_none_or(|day| day.iso() == latest.date.as_bytes()) {
            let body = match (coverage, form) {
                (95, Form::Csv) => &latest.csv_95,
                (95, Form::Json) => &latest.json_95,
                (_, Form::Csv) => &latest.csv_80,
                (_, Form::Json) => &latest.json_80,
            };
            let stored = call.negotiation.stored(loaded, body, Cache::Private);
            return Ok(form.dress(loaded, stored));
        }
    }
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
        // Another day reads every constituent's series: within the decoders' places, one at a
        // time for a key (its next gets 429 until this one ends).
        let permit = decoder_place_for(call)?;
        let mut pass = ConstituentsPass {
            loaded: Arc::clone(loaded),
            index: index_position(loaded, entry),
            day,
            julian: asked_julian(day),
            year: asked_year(day),
            coverage,
            level,
            form,
            next: 0,
            members: Vec::new(),
            opening: Bytes::new(),
            done: false,
        };
        // The body's first byte, sent before any work: over HTTP/2 hyper holds a frame until
        // the stream has room for it before it polls the body again, so a stream that reads
        // nothing runs no pass.
        pass.opening = pass.render(entry, &[]).slice(..1);
        representation.body = Payload::Made {
            steps: Steps(Box::new(pass)),
            permit,
        };
    }
    Ok(form.dress(loaded, representation))
}

/// A day written `YYYY-MM-DD` as a Julian day number (0 if it is not one).
fn asked_julian(day: [u8; 10]) -> i32 {
    Day::parse(&String::from_utf8_lossy(&day)).map_or(0, |d| d.0)
}

/// The year of a day written `YYYY-MM-DD`.
fn asked_year(day: [u8; 10]) -> i32 {
    std::str::from_utf8(&day[..4])
        .ok()
        .and_then(|y| y.parse().ok())
        .unwrap_or(0)
}

/// The position of an index entry among the snapshot's indices.
fn index_position(loaded: &LoadedSnapshot, entry: &ArchivedIndexEntry) -> usize {
    let indices = loaded.snapshot.index().indices.as_slice();
    indices.iter().position(|i| std::ptr::eq(i, entry)).unwrap_or(0)
}

/// Companies whose row of the day one step of the pass reads: a step inflates a year of this
/// many series, a fraction of a millisecond, so no poll holds a worker for long.
const COMPANIES_A_STEP: usize = 8;

/// An index's constituents of a day, made a few companies at a time as the body is polled:
/// each company's row of that day is read from the year of its CSV series that holds it (that
/// year alone is inflated, and not kept), then the weights and the body at the end.
struct ConstituentsPass {
    loaded: Arc<LoadedSnapshot>,
    /// Position of the index in `Index::indices`.
    index: usize,
    day: [u8; 10],
    /// The same day as a Julian day number, for the companies' index windows.
    julian: i32,
    /// Its year: the part of each company's series the pass inflates.
    year: i32,
    coverage: u32,
    level: f64,
    form: Form,
    /// The next company to look at.
    next: usize,
    /// Each constituent so far: its company's position, and its mark and bounds that day.
    members: Vec<(usize, [u64; 3])>,
    /// The body's first byte until it is sent (the first step), then nothing.
    opening: Bytes,
    done: bool,
}

impl Iterator for ConstituentsPass {
    type Item = std::io::Result<Step>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if !self.opening.is_empty() {
            return Some(Ok(Step::Text(std::mem::take(&mut self.opening))));
        }
        let loaded = Arc::clone(&self.loaded);
        let index = loaded.snapshot.index();
        let Some(entry) = index.indices.get(self.index) else {
            self.done = true;
            return None;
        };
        let companies = index.companies.as_slice();
        if self.next >= companies.len() {
            self.done = true;
            // All but the first byte, sent first.
            return Some(Ok(Step::Text(self.render(entry, &self.members).slice(1..))));
        }
        let julian = self.julian;
        let sector = entry.sector.to_native();
        let mut decoded = 0;
        let end = (self.next + COMPANIES_A_STEP).min(companies.len());
        for (position, c) in companies.iter().enumerate().take(end).skip(self.next) {
            let counted = c.index_from.to_native() <= julian && julian < c.index_until.to_native();
            if !(c.in_index(sector) && counted) {
                continue;
            }
            let series = if self.coverage == 95 {
                &c.marks_95_csv
            } else {
                &c.marks_80_csv
            };
            // A pass over the index's companies: the year of the day of each is read, not kept.
            let rows = match loaded.series_rows_of_year_passing(series, self.year) {
                Ok(text) => text,
                Err(damaged) => {
                    tracing::error!("{damaged}");
                    self.done = true;
                    return Some(Err(std::io::Error::other(damaged)));
                }
            };
            decoded += rows.len() as u64;
            let Some(row) = row_among(&rows, c.slug.as_str(), self.day) else {
                continue;
            };
            let numbers = numbers_of(row);
            let usd = |i: usize| numbers.get(i).copied().unwrap_or(0.0) as u64;
            self.members.push((position, [usd(0), usd(1), usd(2)]));
        }
        self.next = end;
        Some(Ok(Step::Worked(decoded)))
    }
}

impl ConstituentsPass {
    /// The body of the day with `members` (every constituent, once every company has been
    /// looked at; none, for its first byte).
    fn render(&self, entry: &ArchivedIndexEntry, members: &[(usize, [u64; 3])]) -> Bytes {
        let loaded = &self.loaded;
        let companies = loaded.snapshot.index().companies.as_slice();
        let members: Vec<Member<'_>> = members
            .iter()
            .map(|&(position, [mark_usd, lower_usd, upper_usd])| {
                let c = &companies[position];
                Member {
                    slug: c.slug.as_str(),
                    name: c.name.as_str(),
                    mark_usd,
                    lower_usd,
                    upper_usd,
                }
            })
            .collect();
        let date = String::from_utf8_lossy(&self.day).into_owned();
        let day = constituents::Day {
            meta: &loaded.meta,
            index: entry.id.as_str(),
            date: &date,
            coverage: self.coverage,
            level: self.level,
        };
        Bytes::from(constituents::render(day, &members, self.form == Form::Csv))
    }
}
