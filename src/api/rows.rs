//! The other forms of the routes that answer rows (list, series, events, exports): CSV for a
//! client that prefers it (`Accept: text/csv`), and a date range of a series (`from`, `to`).
//!
//! Every CSV body but a list page is stored in the snapshot like its JSON; a list page is
//! assembled from stored rows. A range is cut out of a series' text by binary search over its
//! bytes (`marks_format::rules::dated`), and a ranged series export is the ranges of every
//! company's series sent one after the other. A company's series is stored once, compressed, so
//! its text is decoded first (or found in the cache of decoded series); an index's series is
//! stored as text.

use std::sync::Arc;

use bytes::Bytes;
use marks_format::file::layout::{ArchivedBody, ArchivedExport, ArchivedSeriesBody};
use marks_format::rules::dated::{self, DateRange, JSON_POINT};
use marks_format::rules::day::Day;
use xxhash_rust::xxh3::Xxh3;

use crate::api::call::{decoder_place_for, Call};
use crate::api::query::Params;
use crate::response::body::{Payload, Step, Steps};
use crate::response::headers::{CSV, NDJSON};
use crate::response::problem::ApiError;
use crate::response::{header_value, Cache, Negotiation, Representation};
use crate::snapshot::LoadedSnapshot;

/// JSON or CSV, as the client's `Accept` prefers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Json,
    Csv,
}

impl Form {
    pub fn of(negotiation: &Negotiation<'_>) -> Form {
        if negotiation.prefers_csv() {
            Form::Csv
        } else {
            Form::Json
        }
    }

    /// One of a stored body's two forms.
    pub fn pick<'b, T>(self, json: &'b T, csv: &'b T) -> &'b T {
        match self {
            Form::Json => json,
            Form::Csv => csv,
        }
    }

    /// Marks a representation as this form of a route that has both: its media type, the
    /// `meta` headers of a CSV answer, and `Vary: Accept`.
    pub fn dress(self, loaded: &LoadedSnapshot, mut representation: Representation) -> Representation {
        representation.vary_accept = true;
        if self == Form::Csv {
            representation.content_type = CSV;
            representation.extra_headers.extend(loaded.csv_meta.iter().cloned());
        }
        representation
    }
}

/// The `from` and `to` of a series, validated: dates `YYYY-MM-DD`, `from` not after `to`.
pub fn date_range(params: &Params<'_>) -> Result<DateRange, ApiError> {
    let day = |name: &str| -> Result<Option<Day>, ApiError> {
        params
            .get(name)
            .map(|text| {
                Day::parse(text).ok_or_else(|| {
                    ApiError::invalid_parameter(name, "must be a date written YYYY-MM-DD (an inclusive bound)")
                })
            })
            .transpose()
    };
    let (from, to) = (day("from")?, day("to")?);
    if let (Some(from), Some(to)) = (from, to) {
        if from > to {
            return Err(ApiError::invalid_parameter(
                "from",
                &format!("({from}) is after to ({to}); the range is inclusive, from <= to"),
            ));
        }
    }
    Ok(DateRange {
        from: from.map(Day::iso),
        to: to.map(Day::iso),
    })
}

/// The ETag of a body's range: a function of the stored body's ETag and the range.
fn range_etag(loaded: &LoadedSnapshot, stored_etag: &str, range: &DateRange, what: &[u8]) -> String {
    let mut hasher = Xxh3::with_seed(loaded.etag_seed);
    hasher.update(stored_etag.as_bytes());
    hasher.update(what);
    for end in [&range.from, &range.to] {
        match end {
            Some(day) => hasher.update(day),
            None => hasher.update(b"-"),
        }
    }
    format!("\"r{:016x}\"", hasher.digest())
}

/// A series' text of one form cut to `range`: for JSON, its text before and after the points
/// kept whole; for CSV, its header row. `id` names the series in its CSV rows (a company's
/// slug, an index's id).
pub fn cut_series(stored: Bytes, id: &str, form: Form, range: &DateRange) -> Vec<Bytes> {
    match form {
        Form::Json => {
            let Some(points) = dated::json_points(&stored) else {
                return vec![stored];
            };
            let kept = dated::records(&stored, points.clone(), JSON_POINT, range);
            vec![
                stored.slice(..points.start),
                stored.slice(kept),
                stored.slice(points.end..),
            ]
        }
        Form::Csv => {
            let rows = dated::csv_rows(&stored);
            let marker = dated::csv_row_marker(id);
            let kept = dated::records(&stored, rows.clone(), &marker, range);
            vec![stored.slice(..rows.start), stored.slice(kept)]
        }
    }
}

/// Where a series' text is: stored as text (an index's series), a company's series, stored
/// once compressed ([`LoadedSnapshot::series_text`]), or a document stored as gzip only (a
/// company's published marks).
#[derive(Clone, Copy)]
pub enum SeriesText<'a> {
    Stored(&'a ArchivedBody),
    Company(&'a ArchivedSeriesBody),
    Document(&'a ArchivedExport),
}

impl std::fmt::Debug for SeriesText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SeriesText").field(&self.etag()).finish()
    }
}

impl SeriesText<'_> {
    /// The strong ETag of the whole text.
    fn etag(&self) -> &str {
        match self {
            SeriesText::Stored(body) => body.etag.as_str(),
            SeriesText::Company(series) => series.identity_etag.as_str(),
            SeriesText::Document(document) => document.identity_etag.as_str(),
        }
    }

    fn text(&self, loaded: &LoadedSnapshot) -> Result<Bytes, ApiError> {
        match self {
            SeriesText::Stored(body) => Ok(loaded.snapshot.body(&body.identity)),
            SeriesText::Company(series) => Ok(loaded.series_text(series)?),
            SeriesText::Document(document) => Ok(loaded.document_text(document)?),
        }
    }
}

/// getMarkSeries or getIndex with `from` or `to`: the series of the coverage asked for, cut.
/// `id` is the company's slug or the index's id.
pub fn series_range(
    loaded: &LoadedSnapshot,
    negotiation: &Negotiation<'_>,
    id: &str,
    series: SeriesText<'_>,
    form: Form,
    range: &DateRange,
) -> Result<Representation, ApiError> {
    let etag = range_etag(loaded, series.etag(), range, b"series");
    let mut representation = negotiation.conditional(&etag, header_value(&etag), Cache::Private, Bytes::new);
    if representation.status == http::StatusCode::OK {
        let text = series.text(loaded)?;
        representation.body = Payload::Bytes(Bytes::from(cut_series(text, id, form, range).concat()));
    }
    Ok(form.dress(loaded, representation))
}

/// The series export with `from` or `to`: a first line (JSON: `meta`, the export, its coverage,
/// the count of companies and the range; CSV: the header row), then every company's series
/// cut to the range. Every series is decoded for it, so it is made as it is sent, a company at
/// a time, within one of the decoders' places ([`Payload::Made`]).
pub fn series_export_range(
    call: &Call<'_>,
    coverage: u32,
    form: Form,
    range: &DateRange,
) -> Result<Representation, ApiError> {
    let (loaded, negotiation) = (call.loaded, call.negotiation);
    let index = loaded.snapshot.index();
    let exports = &index.exports;
    let export = match (coverage, form) {
        (95, Form::Json) => &exports.series_95,
        (95, Form::Csv) => &exports.series_95_csv,
        (_, Form::Json) => &exports.series_80,
        (_, Form::Csv) => &exports.series_80_csv,
    };
    let etag = range_etag(loaded, export.identity_etag.as_str(), range, b"series export");
    let mut representation = negotiation.conditional(&etag, header_value(&etag), Cache::Private, Bytes::new);
    representation.content_type = NDJSON;
    if representation.status != http::StatusCode::OK {
        return Ok(form.dress(loaded, representation));
    }
    let permit = decoder_place_for(call)?;
    let text = |day: &Option<[u8; 10]>| day.map(|d| String::from_utf8_lossy(&d).into_owned());
    let first = match form {
        Form::Json => {
            // As the stored export's first line, in its order, and the range after.
            #[derive(serde::Serialize)]
            struct Header<'a> {
                meta: &'a serde_json::value::RawValue,
                export: &'static str,
                coverage: u32,
                companies: usize,
                from: Option<String>,
                to: Option<String>,
            }
            let meta: Option<&serde_json::value::RawValue> = serde_json::from_slice(&loaded.meta).ok();
            let mut line = meta
                .and_then(|meta| {
                    serde_json::to_vec(&Header {
                        meta,
                        export: "series",
                        coverage,
                        companies: index.companies.len(),
                        from: text(&range.from),
                        to: text(&range.to),
                    })
                    .ok()
                })
                .unwrap_or_default();
            line.push(b'\n');
            Bytes::from(line)
        }
        Form::Csv => Bytes::from(marks_format::rules::table::header(
            marks_format::rules::table::SERIES_COLUMNS,
        )),
    };
    let lines = CompanyLines {
        loaded: Arc::clone(loaded),
        next: 0,
        coverage,
        form,
        range: *range,
    };
    let steps = std::iter::once(Ok(Step::Text(first))).chain(lines);
    representation.body = Payload::Made {
        steps: Steps(Box::new(steps)),
        permit,
    };
    Ok(form.dress(loaded, representation))
}

/// Every company's series cut to a range, a company at a time: a line of the ranged series
/// export each (JSON: `{` and the body past its `meta`, as a line; CSV: its rows).
struct CompanyLines {
    loaded: Arc<LoadedSnapshot>,
    next: usize,
    coverage: u32,
    form: Form,
    range: DateRange,
}

impl Iterator for CompanyLines {
    type Item = std::io::Result<Step>;

    fn next(&mut self) -> Option<Self::Item> {
        // A CSV company with no day in the range has no rows: on to the next.
        loop {
            let line = match self.line()? {
                Ok(line) => line,
                Err(error) => return Some(Err(error)),
            };
            if !line.is_empty() {
                return Some(Ok(Step::Text(Bytes::from(line))));
            }
        }
    }
}

impl CompanyLines {
    /// The next company's line, or none past the last company.
    fn line(&mut self) -> Option<std::io::Result<Vec<u8>>> {
        let company = self.loaded.snapshot.index().companies.get(self.next)?;
        self.next += 1;
        let form = self.form;
        let series = if self.coverage == 95 {
            form.pick(&company.marks_95, &company.marks_95_csv)
        } else {
            form.pick(&company.marks_80, &company.marks_80_csv)
        };
        let text = match self.loaded.series_text_passing(series) {
            Ok(text) => text,
            Err(damaged) => {
                tracing::error!("{damaged}");
                return Some(Err(std::io::Error::other(damaged)));
            }
        };
        let cut = cut_series(text, company.slug.as_str(), form, &self.range);
        Some(Ok(match form {
            Form::Json => {
                let prefix = self.loaded.meta.len() + b"{\"meta\":,".len();
                let mut line = Vec::with_capacity(cut.iter().map(Bytes::len).sum::<usize>() + 2);
                line.push(b'{');
                for (i, piece) in cut.iter().enumerate() {
                    // The body past its `meta`.
                    line.extend_from_slice(if i == 0 {
                        &piece[prefix.min(piece.len())..]
                    } else {
                        piece
                    });
                }
                line.push(b'\n');
                line
            }
            // The rows past the header.
            Form::Csv => cut.get(1..).map_or_else(Vec::new, <[Bytes]>::concat),
        }))
    }
}
