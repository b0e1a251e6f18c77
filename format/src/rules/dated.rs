//! The records of a date range inside a stored series body, found by binary search over its
//! bytes: a range is answered from the body the builder stored, with no index of its points
//! and no parse of the rest.
//!
//! A series is a run of records in date order, each starting with a `marker` that the text
//! between records never contains, followed at once by its `YYYY-MM-DD` date: in the JSON
//! body a point starts `{"date":"`; in the CSV body a row starts `"<slug>","`. Dates of that
//! form order as bytes, so nothing is parsed.

use std::ops::Range;

use memchr::memmem;

/// A JSON series' points are between `"series":[` and the closing `]}`.
const JSON_SERIES_OPEN: &[u8] = b"\"series\":[";
/// Where each JSON point starts; its date follows.
pub const JSON_POINT: &[u8] = b"{\"date\":\"";

/// An inclusive range of days, each end optional, as `YYYY-MM-DD` bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DateRange {
    pub from: Option<[u8; 10]>,
    pub to: Option<[u8; 10]>,
}

impl DateRange {
    pub fn is_whole(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }
}

/// The bytes of the records dated within `range`, out of the records that fill `region` of
/// `body`. For JSON, the separating comma after the last record is left out.
pub fn records(body: &[u8], region: Range<usize>, marker: &[u8], range: &DateRange) -> Range<usize> {
    let Some(records) = body.get(region.clone()) else {
        return 0..0;
    };
    let finder = memmem::Finder::new(marker);
    // The first record starting at or after `at`, or the end of the region.
    let record_at = |at: usize| finder.find(&records[at..]).map_or(records.len(), |i| at + i);
    let date_of = |start: usize| records.get(start + marker.len()..start + marker.len() + 10);
    // The first record whose date is not before `day` (`after`: is after `day`).
    let first = |day: &[u8; 10], after: bool| {
        let (mut low, mut high) = (0, records.len());
        while low < high {
            let middle = low + (high - low) / 2;
            let start = record_at(middle);
            let past = start == records.len()
                || date_of(start).is_none_or(|date| if after { date > &day[..] } else { date >= &day[..] });
            if past {
                high = middle;
            } else {
                low = start + 1;
            }
        }
        record_at(low)
    };
    let start = range.from.as_ref().map_or(0, |day| first(day, false));
    let end = range
        .to
        .as_ref()
        .map_or(records.len(), |day| first(day, true))
        .max(start);
    let mut end = end;
    if end > start && records[end - 1] == b',' {
        end -= 1;
    }
    region.start + start..region.start + end
}

/// The points of a stored JSON series body (MarkSeriesResponse): where they are, for
/// [`records`], and the body's text before and after them.
pub fn json_points(body: &[u8]) -> Option<Range<usize>> {
    let open = memmem::find(body, JSON_SERIES_OPEN)? + JSON_SERIES_OPEN.len();
    let close = body
        .len()
        .checked_sub(2)
        .filter(|&c| c >= open && &body[c..] == b"]}")?;
    Some(open..close)
}

/// The rows of a stored CSV body: everything after its header row.
pub fn csv_rows(body: &[u8]) -> Range<usize> {
    let start = memmem::find(body, b"\r\n").map_or(body.len(), |i| i + 2);
    start..body.len()
}

/// Where each CSV row of a company's series starts: `"<slug>","`.
pub fn csv_row_marker(slug: &str) -> Vec<u8> {
    [b"\"", slug.as_bytes(), b"\",\""].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Option<[u8; 10]> {
        let mut day = [0u8; 10];
        day.copy_from_slice(text.as_bytes());
        Some(day)
    }

    fn json(dates: &[&str]) -> Vec<u8> {
        let points: Vec<String> = dates
            .iter()
            .map(|d| format!("{{\"date\":\"{d}\",\"mark_usd\":{}}}", d.len() * 1000))
            .collect();
        format!("{{\"meta\":{{}},\"slug\":\"a\",\"series\":[{}]}}", points.join(",")).into_bytes()
    }

    fn cut(body: &[u8], from: Option<&str>, to: Option<&str>) -> String {
        let region = json_points(body).unwrap();
        let range = DateRange {
            from: from.and_then(day),
            to: to.and_then(day),
        };
        String::from_utf8(body[records(body, region, JSON_POINT, &range)].to_vec()).unwrap()
    }

    #[test]
    fn a_range_cuts_whole_points_at_both_ends() {
        let dates = ["2024-01-30", "2024-01-31", "2024-02-01", "2024-02-02", "2024-02-03"];
        let body = json(&dates);
        let whole = cut(&body, None, None);
        assert_eq!(whole.matches("{\"date\"").count(), 5);
        assert!(!whole.ends_with(','));
        let middle = cut(&body, Some("2024-01-31"), Some("2024-02-02"));
        assert!(middle.starts_with("{\"date\":\"2024-01-31\""), "{middle}");
        assert!(middle.ends_with('}') && middle.contains("2024-02-02") && !middle.contains("2024-02-03"));
        assert_eq!(middle.matches("{\"date\"").count(), 3);
        assert_eq!(cut(&body, Some("2024-02-03"), None).matches("{\"date\"").count(), 1);
        assert_eq!(cut(&body, None, Some("2024-01-30")).matches("{\"date\"").count(), 1);
        assert_eq!(cut(&body, Some("2020-01-01"), Some("2030-01-01")), whole);
        assert_eq!(cut(&body, Some("2025-01-01"), None), "");
        assert_eq!(cut(&body, None, Some("2023-01-01")), "");
        assert_eq!(cut(&body, Some("2024-02-02"), Some("2024-01-31")), "");
    }

    #[test]
    fn every_range_of_a_long_series_is_exact() {
        let dates: Vec<String> = (1..=28).map(|d| format!("2023-02-{d:02}")).collect();
        let refs: Vec<&str> = dates.iter().map(String::as_str).collect();
        let body = json(&refs);
        for from in 0..dates.len() {
            for to in from..dates.len() {
                let text = cut(&body, Some(&dates[from]), Some(&dates[to]));
                let found: Vec<&str> = text.match_indices("2023-02-").map(|(i, _)| &text[i..i + 10]).collect();
                assert_eq!(found, refs[from..=to], "{from}..{to}");
            }
        }
    }

    #[test]
    fn csv_rows_are_cut_by_their_slug_marker() {
        let body =
            b"slug,date,mark_usd\r\n\"a\",\"2024-01-01\",1\r\n\"a\",\"2024-01-02\",2\r\n\"a\",\"2024-01-03\",3\r\n";
        let rows = csv_rows(body);
        let range = DateRange {
            from: day("2024-01-02"),
            to: None,
        };
        let cut = records(body, rows, &csv_row_marker("a"), &range);
        assert_eq!(&body[cut], b"\"a\",\"2024-01-02\",2\r\n\"a\",\"2024-01-03\",3\r\n");
    }
}
