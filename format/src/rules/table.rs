//! The CSV form of the data routes (`Accept: text/csv`): the one definition of their columns,
//! written by the builder into the snapshot and read by the server, which assembles list pages
//! from stored rows.
//!
//! RFC 4180: a header row, CRLF line ends, text cells in double quotes (a quote inside doubled),
//! numbers bare, a missing value an empty cell. Dates are `YYYY-MM-DD`, dollars whole numbers.
//! The `meta` object is not in the rows, so a table stays one table for every CSV reader: it
//! goes in response headers (`X-Dataset-Version` ...; `response::csv_meta` on the server).
//!
//! A text cell a spreadsheet could run as a formula is neutralised as OWASP's CSV-injection
//! guidance says, a leading `'` and the cell quoted: one that starts with a tab or a carriage
//! return, one whose first character past blanks (spaces, tabs, CR, LF) is `=`, `+`, `-` or
//! `@` (spreadsheets skip leading blanks), and one holding a line break with any of those after
//! it (a reader that splits lines itself would start a row with it). Numbers are never
//! altered: a negative percent is a number cell (`Cell::Decimal`), not text, and is written
//! bare.

use std::borrow::Cow;

/// The media type of every CSV answer (RFC 4180 section 3, with RFC 7111's `header`).
pub const MEDIA_TYPE: &str = "text/csv; charset=utf-8; header=present";

/// listCompanies: one row per CompanyListItem, the latest mark's 80% band.
pub const COMPANY_COLUMNS: &[&str] = &[
    "slug",
    "name",
    "aliases",
    "sector",
    "status",
    "as_of_date",
    "value_usd",
    "lower_80_usd",
    "upper_80_usd",
    "confidence",
    "vs_last_event_pct",
    "delta_30d_pct",
    "last_event_id",
    "last_event_on",
    "last_event_type",
    "last_event_usd",
    "days_since_last_event",
    "outcome_type",
    "outcome_on",
    "outcome_usd",
    "outcome_kind",
    "last_event_source_grade",
    "next_reported_usd",
    "mark_is_current",
    "delta_30d_basis",
];

/// The companies export: a list row and the 95% band.
pub const EXPORT_COMPANY_COLUMNS: &[&str] = &[
    "slug",
    "name",
    "aliases",
    "sector",
    "status",
    "as_of_date",
    "value_usd",
    "lower_80_usd",
    "upper_80_usd",
    "lower_95_usd",
    "upper_95_usd",
    "confidence",
    "vs_last_event_pct",
    "delta_30d_pct",
    "last_event_id",
    "last_event_on",
    "last_event_type",
    "last_event_usd",
    "days_since_last_event",
    "outcome_type",
    "outcome_on",
    "outcome_usd",
    "outcome_kind",
    "last_event_source_grade",
    "next_reported_usd",
    "mark_is_current",
    "delta_30d_basis",
];

/// getMarkSeries and the series export: one row per day; the band of the coverage asked for.
pub const SERIES_COLUMNS: &[&str] = &["slug", "date", "mark_usd", "lower_usd", "upper_usd"];

/// getMarkEvents: one row per event, oldest first.
pub const EVENT_COLUMNS: &[&str] = &[
    "slug",
    "event_id",
    "occurred_on",
    "event_type",
    "valuation_usd",
    "reported_as",
    "source_url",
    "source_grade",
    "note",
    "supersedes",
    "superseded_by",
    "retracted_by",
];

/// getPublished below Pro: one row per entry of the company in the publication log, in
/// publication order, with its proof.
pub const PUBLISHED_COLUMNS: &[&str] = &[
    "slug",
    "as_of",
    "leaf_index",
    "dataset_version",
    "methodology_version",
    "marked_on",
    "value_usd",
    "lower_80_usd",
    "upper_80_usd",
    "confidence_bp",
    "outcome_kind",
    "outcome_event_id",
    "outcome_on",
    "outcome_usd",
    "band_95_digest",
    "leaf_hash",
    "inclusion_proof",
];

/// getPublished for Pro and above: the same with the 95% bounds.
pub const PUBLISHED_FULL_COLUMNS: &[&str] = &[
    "slug",
    "as_of",
    "leaf_index",
    "dataset_version",
    "methodology_version",
    "marked_on",
    "value_usd",
    "lower_80_usd",
    "upper_80_usd",
    "lower_95_usd",
    "upper_95_usd",
    "band_95_salt",
    "confidence_bp",
    "outcome_kind",
    "outcome_event_id",
    "outcome_on",
    "outcome_usd",
    "band_95_digest",
    "leaf_hash",
    "inclusion_proof",
];

/// An index's series: one row per day; the band of the coverage asked for.
pub const INDEX_COLUMNS: &[&str] = &["index", "date", "level", "lower", "upper", "constituents"];

/// An index's constituents on one day.
pub const CONSTITUENT_COLUMNS: &[&str] = &[
    "index",
    "date",
    "slug",
    "name",
    "weight",
    "mark_usd",
    "lower_usd",
    "upper_usd",
    "value_weight",
];

/// One cell of a row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    Text(&'a str),
    Whole(u64),
    Int(i64),
    /// Written as the JSON bodies write it: the shortest text that reads back as the same number.
    Decimal(f64),
    Empty,
}

impl<'a> From<Option<&'a str>> for Cell<'a> {
    fn from(text: Option<&'a str>) -> Cell<'a> {
        text.map_or(Cell::Empty, Cell::Text)
    }
}

/// A text cell as a spreadsheet may safely open it: one that could start a formula (see the
/// module's notes) gets `'` before it.
pub fn neutralised(text: &str) -> Cow<'_, str> {
    if could_run(text) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Whether a spreadsheet, or a reader that splits lines itself, could take the cell `text` for
/// a formula. Blanks before a trigger are any Unicode white space or invisible character (a
/// no-break space, a zero-width joiner), which a spreadsheet may drop before it reads the cell;
/// the full-width triggers count too, since some spreadsheets fold them to ASCII.
fn could_run(text: &str) -> bool {
    let is_blank = |c: char| c.is_whitespace() || super::names::is_invisible(c);
    let is_trigger = |c: char| {
        matches!(
            c,
            '=' | '+' | '-' | '@' | '\u{ff1d}' | '\u{ff0b}' | '\u{ff0d}' | '\u{ff20}'
        )
    };
    if text.starts_with(['\t', '\r']) {
        return true;
    }
    if text.chars().find(|&c| !is_blank(c)).is_some_and(is_trigger) {
        return true;
    }
    match text.find(['\r', '\n']) {
        Some(line_break) => text[line_break..].chars().any(is_trigger),
        None => false,
    }
}

/// Appends one record, CRLF-terminated.
pub fn put_row(out: &mut Vec<u8>, cells: &[Cell<'_>]) {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match *cell {
            Cell::Text(text) => {
                out.push(b'"');
                for piece in neutralised(text).split_inclusive('"') {
                    out.extend_from_slice(piece.as_bytes());
                    if piece.ends_with('"') {
                        out.push(b'"');
                    }
                }
                out.push(b'"');
            }
            Cell::Whole(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Cell::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
            // As the JSON bodies write it (serde_json), so a cell reads as its JSON number does.
            Cell::Decimal(x) if x.is_finite() => {
                out.extend_from_slice(serde_json::to_string(&x).unwrap_or_default().as_bytes())
            }
            Cell::Decimal(_) | Cell::Empty => {}
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// The header row of a table.
pub fn header(columns: &[&str]) -> Vec<u8> {
    let mut out = columns.join(",").into_bytes();
    out.extend_from_slice(b"\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[Cell<'_>]) -> String {
        let mut out = Vec::new();
        put_row(&mut out, cells);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cells_are_quoted_numbers_bare_and_formulas_neutralised() {
        assert_eq!(
            row(&[
                Cell::Text("Byju's \"Think\", Learn"),
                Cell::Whole(12),
                Cell::Decimal(-3.25),
                Cell::Empty
            ]),
            "\"Byju's \"\"Think\"\", Learn\",12,-3.25,\r\n"
        );
        for formula in ["=HYPERLINK(\"x\")", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"] {
            let text = row(&[Cell::Text(formula)]);
            assert!(text.starts_with("\"'"), "{formula:?} -> {text:?}");
        }
        assert_eq!(row(&[Cell::Int(-7), Cell::Text("a-b")]), "-7,\"a-b\"\r\n");
        assert_eq!(header(SERIES_COLUMNS), b"slug,date,mark_usd,lower_usd,upper_usd\r\n");
    }

    #[test]
    fn a_formula_behind_blanks_or_a_line_break_is_neutralised() {
        for formula in [
            " =1+2",
            "   @SUM(A1)",
            " \t+1",
            "\n=cmd|' /C calc'!A0",
            "\r\n-2",
            "Sold in 2024\r\n=HYPERLINK(\"http://x\")",
            "first line\nsecond line, then @A1",
            "note\r\n  -1",
            "\u{a0}=1+2",
            "\u{a0}\u{200d} @SUM(A1)",
            "\u{3000}+1",
            "\u{ff1d}HYPERLINK(\"x\")",
        ] {
            assert_eq!(neutralised(formula), format!("'{formula}"), "{formula:?}");
            let text = row(&[Cell::Text(formula)]);
            assert!(text.starts_with("\"'"), "{formula:?} -> {text:?}");
        }
        for plain in [
            "Stripe",
            "a-b",
            "Series B (+20%)",
            "x@y.com",
            "",
            "  ",
            "one\ntwo",
            " plain",
        ] {
            assert_eq!(neutralised(plain), plain, "{plain:?}");
        }
        // Numbers stay numbers, however negative.
        assert_eq!(row(&[Cell::Decimal(-12.5), Cell::Int(-3)]), "-12.5,-3\r\n");
    }
}
