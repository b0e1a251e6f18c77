//! Range requests (RFC 9110 section 14) for the bulk exports, so a broken download resumes
//! where it stopped: one byte range per request, honoured only while `If-Range` (when sent)
//! still names the representation being served.
//!
//! What is not a single valid byte range (several ranges, another unit, a malformed one) is
//! ignored and the whole representation sent, as RFC 9110 14.2 allows; a range that starts
//! past the end is refused with 416.

use http::header::{self, HeaderMap};

/// What a request's `Range` and `If-Range` ask of a representation of `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeRequest {
    Whole,
    /// Bytes `first..=last`, both within the representation.
    Part {
        first: u64,
        last: u64,
    },
    Unsatisfiable,
}

/// The range `headers` ask of the representation tagged `etag` (strong, quoted), `len` bytes.
pub fn asked(headers: &HeaderMap, etag: &str, len: u64) -> RangeRequest {
    let mut ranges = headers.get_all(header::RANGE).iter();
    let (Some(range), None) = (ranges.next(), ranges.next()) else {
        return RangeRequest::Whole;
    };
    // If-Range compares strongly (RFC 9110 13.1.5): a weak tag, another tag or a date (these
    // responses carry no Last-Modified) means the client's partial copy is of something else.
    if let Some(if_range) = headers.get(header::IF_RANGE) {
        if if_range.as_bytes() != etag.as_bytes() {
            return RangeRequest::Whole;
        }
    }
    range.to_str().map_or(RangeRequest::Whole, |text| parse(text, len))
}

fn number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse(text: &str, len: u64) -> RangeRequest {
    let Some((unit, spec)) = text.split_once('=') else {
        return RangeRequest::Whole;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return RangeRequest::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return RangeRequest::Whole;
    };
    match (first, last) {
        ("", suffix) => match number(suffix) {
            None => RangeRequest::Whole,
            Some(0) => RangeRequest::Unsatisfiable,
            Some(_) if len == 0 => RangeRequest::Unsatisfiable,
            Some(suffix) => RangeRequest::Part {
                first: len - suffix.min(len),
                last: len - 1,
            },
        },
        (first, last) => {
            let Some(first) = number(first) else {
                return RangeRequest::Whole;
            };
            let last = if last.is_empty() {
                u64::MAX
            } else {
                match number(last) {
                    Some(last) if last >= first => last,
                    _ => return RangeRequest::Whole,
                }
            };
            if first >= len {
                RangeRequest::Unsatisfiable
            } else {
                RangeRequest::Part {
                    first,
                    last: last.min(len - 1),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn ask(range: &str, if_range: Option<&str>) -> RangeRequest {
        let mut headers = HeaderMap::new();
        headers.insert(header::RANGE, HeaderValue::from_str(range).unwrap());
        if let Some(tag) = if_range {
            headers.insert(header::IF_RANGE, HeaderValue::from_str(tag).unwrap());
        }
        asked(&headers, "\"abc\"", 1000)
    }

    #[test]
    fn single_byte_ranges_are_honoured_and_anything_else_gets_the_whole() {
        assert_eq!(ask("bytes=0-99", None), RangeRequest::Part { first: 0, last: 99 });
        assert_eq!(ask("bytes=900-", None), RangeRequest::Part { first: 900, last: 999 });
        assert_eq!(
            ask("bytes=900-5000", None),
            RangeRequest::Part { first: 900, last: 999 }
        );
        assert_eq!(ask("bytes=-10", None), RangeRequest::Part { first: 990, last: 999 });
        assert_eq!(ask("bytes=-5000", None), RangeRequest::Part { first: 0, last: 999 });
        assert_eq!(ask("Bytes=5-5", None), RangeRequest::Part { first: 5, last: 5 });
        assert_eq!(ask("bytes=1000-", None), RangeRequest::Unsatisfiable);
        assert_eq!(ask("bytes=-0", None), RangeRequest::Unsatisfiable);
        for ignored in [
            "bytes=5-2",
            "bytes=0-1,5-6",
            "items=0-5",
            "bytes=a-",
            "bytes=-",
            "bytes=+1-2",
            "bytes 0-5",
        ] {
            assert_eq!(ask(ignored, None), RangeRequest::Whole, "{ignored}");
        }
        assert_eq!(
            ask("bytes=10-", Some("\"abc\"")),
            RangeRequest::Part { first: 10, last: 999 }
        );
        for stale in ["\"abd\"", "W/\"abc\"", "Tue, 24 Nov 2026 08:00:00 GMT"] {
            assert_eq!(ask("bytes=10-", Some(stale)), RangeRequest::Whole, "{stale}");
        }
        assert_eq!(asked(&HeaderMap::new(), "\"abc\"", 1000), RangeRequest::Whole);
    }
}
