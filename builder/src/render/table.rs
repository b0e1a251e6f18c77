//! The CSV bodies of the data routes (`marks_format::rules::table` defines their columns): a company's
//! list row and export row, its daily series at each coverage, its events. The same numbers as
//! the JSON bodies, from the same inputs, so a CSV row equals its JSON row.

use crate::dataset::Company;
use crate::methodology::{round_to, usd, Band, CompanyMarks, Coverage, MarkDay};
use crate::render::facts::EventFacts;
use marks_format::rules::table::{self, put_row, Cell, EVENT_COLUMNS, SERIES_COLUMNS};

/// A company's row of the list (`with_95`: false) or of the companies export (true).
pub fn company_row(company: &Company, marks: &CompanyMarks, facts: &EventFacts<'_>, with_95: bool) -> Vec<u8> {
    let aliases = company.aliases.join("; ");
    let latest = marks.latest();
    let band = |coverage| latest.map(|m| Band::of(m.band(coverage)));
    let (band_80, band_95) = (band(Coverage::C80), band(Coverage::C95));
    let date = latest.map(|m| m.day.to_string());
    let last = facts.last_event.as_ref();
    let last_on = last.map(|e| e.occurred_on.to_string());
    let outcome = facts.outcome.as_ref();
    let outcome_on = outcome.map(|o| o.occurred_on.to_string());
    let whole = |n: Option<u64>| n.map_or(Cell::Empty, Cell::Whole);
    let decimal = |x: Option<f64>| x.map_or(Cell::Empty, Cell::Decimal);
    let mut cells = vec![
        Cell::Text(&company.slug),
        Cell::Text(&company.name),
        Cell::Text(&aliases),
        Cell::Text(company.sector.as_str()),
        Cell::Text(company.status.as_str()),
        Cell::from(date.as_deref()),
        whole(latest.map(|m| usd(m.mark))),
        whole(band_80.as_ref().map(|b| b.lower)),
        whole(band_80.as_ref().map(|b| b.upper)),
    ];
    if with_95 {
        cells.push(whole(band_95.as_ref().map(|b| b.lower)));
        cells.push(whole(band_95.as_ref().map(|b| b.upper)));
    }
    cells.extend([
        decimal(latest.map(|_| round_to(marks.confidence, 4))),
        decimal(latest.and_then(|m| facts.vs_last_event_pct(m.mark))),
        decimal(marks.delta_30d_pct),
        Cell::from(last.map(|e| e.event_id)),
        Cell::from(last_on.as_deref()),
        Cell::from(last.map(|e| e.event_type.as_str())),
        whole(last.map(|e| e.valuation_usd)),
        facts
            .days_since_last_event
            .map_or(Cell::Empty, |d| Cell::Int(i64::from(d))),
        Cell::from(outcome.map(|o| o.event_type.as_str())),
        Cell::from(outcome_on.as_deref()),
        whole(outcome.map(|o| o.valuation_usd)),
        Cell::from(outcome.map(|o| o.kind.as_str())),
        Cell::from(last.and_then(|e| e.source_grade).map(|g| g.as_str())),
        whole(marks.next_reported.map(usd)),
        Cell::from(latest.map(|_| {
            if facts.outcome_kind().is_none_or(|kind| !kind.ended()) {
                "true"
            } else {
                "false"
            }
        })),
        Cell::from(crate::render::delta_30d_basis(marks)),
    ]);
    let mut row = Vec::with_capacity(256);
    put_row(&mut row, &cells);
    row
}

/// A company's daily series at one coverage, with its header row. `dates` is
/// `render::series_dates`.
pub fn series(slug: &str, coverage: Coverage, series: &[MarkDay], dates: &[[u8; 10]]) -> Vec<u8> {
    let mut out = table::header(SERIES_COLUMNS);
    out.reserve(series.len() * (slug.len() + 48));
    let quoted_slug = [b"\"", slug.as_bytes(), b"\",\""].concat();
    let mut number = itoa::Buffer::new();
    for (point, date) in series.iter().zip(dates) {
        // Written directly (the slug and a date need no quoting or neutralising): the series
        // are most of a large build's bytes.
        let (lower, upper) = point.band(coverage);
        out.extend_from_slice(&quoted_slug);
        out.extend_from_slice(date);
        out.extend_from_slice(b"\",");
        out.extend_from_slice(number.format(usd(point.mark)).as_bytes());
        out.push(b',');
        out.extend_from_slice(number.format(usd(lower)).as_bytes());
        out.push(b',');
        out.extend_from_slice(number.format(usd(upper)).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A company's events, every record of its append-only history oldest first, with the header
/// row.
pub fn events(company: &Company) -> Vec<u8> {
    let mut out = table::header(EVENT_COLUMNS);
    for event in &company.events {
        let date = event.occurred_on.to_string();
        put_row(
            &mut out,
            &[
                Cell::Text(&company.slug),
                Cell::Text(&event.event_id),
                Cell::Text(&date),
                Cell::Text(event.event_type.as_str()),
                Cell::Whole(event.valuation_usd),
                Cell::from(event.reported_as.map(|r| r.as_str())),
                Cell::Text(&event.source_url),
                Cell::from(event.source_grade.map(|g| g.as_str())),
                Cell::Text(&event.note),
                Cell::from(event.supersedes.as_deref()),
                Cell::from(event.superseded_by.as_deref()),
                Cell::from(event.retracted_by.as_deref()),
            ],
        );
    }
    out
}
