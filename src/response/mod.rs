//! How an answer becomes a response: the [`Representation`] (a body and everything that
//! describes it: status, media type, ETag, cache policy, what it varies on, its content
//! coding) and [`Representation::into_response`], the one function that writes every header a
//! response carries, the request's own (its id, the rate-limit headers of the budget it was
//! metered against) included.
//!
//! Conditional requests (`If-None-Match`), content negotiation (`Accept-Encoding`) and, for the
//! exports, range requests are decided here too, by [`Negotiation`], so a handler only says
//! which body it answers with.

pub mod body;
pub mod headers;
pub mod problem;
pub mod ranges;

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};
use marks_format::file::layout::{ArchivedBody, ArchivedExport, ArchivedSeriesBody};

use crate::response::body::{DecodeHolder, DecodePermit, DecodeRefused, Decoders, Payload, ResponseBody};
use crate::response::headers::{
    BudgetHeaders, MeteredValues, Vary, BYTES, GZIP, IMMUTABLE, JSON, NDJSON, NOSNIFF, NO_REFERRER, NO_STORE,
    PRIVATE_NO_CACHE, PUBLIC_MAX_AGE_60, PUBLIC_NO_CACHE, RATELIMIT, RATELIMIT_POLICY, VARY_ENCODING,
    X_RATELIMIT_LIMIT, X_RATELIMIT_REMAINING, X_RATELIMIT_RESET, X_REQUEST_ID,
};
use crate::response::problem::ApiError;
use crate::response::ranges::RangeRequest;
use crate::snapshot::LoadedSnapshot;
use crate::web::WebFile;

pub type Response = http::Response<ResponseBody>;

/// How a response may be cached, and what it varies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// Per-key data: every client revalidates.
    Private,
    /// The same for everyone (signing keys, OpenAPI document).
    Public,
    /// The same for every client without a key; a key may get another form (the scorecard),
    /// so shared caches key on `X-API-Key` too.
    Keyless,
    /// Operational answers and errors.
    NoStore,
    /// The same for everyone, revalidated every time (unfingerprinted page assets).
    Revalidate,
    /// Never changes under its URL (a fingerprinted asset).
    Immutable,
}

/// A body with everything that describes it.
#[derive(Debug)]
pub struct Representation {
    pub status: StatusCode,
    /// Empty for a 304.
    pub body: Payload,
    pub content_type: HeaderValue,
    pub etag: Option<HeaderValue>,
    pub cache: Cache,
    /// The body has a gzip variant, so caches must key on `Accept-Encoding` too.
    pub vary_encoding: bool,
    /// The route answers CSV too, so caches must key on `Accept` too.
    pub vary_accept: bool,
    /// Headers this answer adds: a CSV answer's `meta` and paging.
    pub extra_headers: Vec<(HeaderName, HeaderValue)>,
    /// The body is the gzip variant.
    pub gzip: bool,
    /// Ranges of it may be asked for (`Accept-Ranges: bytes`).
    pub ranges: bool,
    /// For a 206: which bytes of the representation the body is.
    pub content_range: Option<HeaderValue>,
    /// A page's `Content-Security-Policy`; with it go `X-Content-Type-Options: nosniff` and
    /// `Referrer-Policy: no-referrer`.
    pub page_policy: Option<HeaderValue>,
}

impl Representation {
    /// An operational answer or an error: no validator, not stored by caches.
    pub fn uncached(status: StatusCode, body: Bytes, content_type: HeaderValue) -> Representation {
        Representation {
            status,
            body: Payload::Bytes(body),
            content_type,
            etag: None,
            cache: Cache::NoStore,
            vary_encoding: false,
            vary_accept: false,
            extra_headers: Vec::new(),
            gzip: false,
            ranges: false,
            content_range: None,
            page_policy: None,
        }
    }
}

/// The rate-limit header values of the budget a request was metered against.
#[derive(Debug)]
pub struct Budget {
    pub remaining: HeaderValue,
    pub reset: HeaderValue,
    pub ratelimit: HeaderValue,
    /// `X-RateLimit-Limit` and `RateLimit-Policy` of a failed-authentication budget. A key's
    /// are shared by every key of its budget ([`BudgetHeaders`]).
    pub throttle_limits: Option<(HeaderValue, HeaderValue)>,
}

/// What a response says about the request it answers.
#[derive(Debug)]
pub struct Metering<'a> {
    /// The client's `X-Request-ID`, or one made for it.
    pub request_id: HeaderValue,
    /// The header values shared by every key of the budget of the key the request was
    /// answered for.
    pub budget_headers: Option<&'a BudgetHeaders>,
    pub budget: Option<Budget>,
}

impl Representation {
    /// The response with every header it carries. `head`: a HEAD request, answered like GET
    /// without the body.
    pub fn into_response(self, head: bool, metering: Metering<'_>) -> Response {
        let Representation {
            status,
            body,
            content_type,
            etag,
            cache,
            vary_encoding,
            vary_accept,
            extra_headers,
            gzip,
            ranges,
            content_range,
            page_policy,
        } = self;
        let vary_on = Vary {
            encoding: vary_encoding,
            accept: vary_accept,
        };
        let length = body.known_len();
        let with_body = status != StatusCode::NOT_MODIFIED && !head;
        let mut response = Response::new(if with_body {
            ResponseBody::new(body)
        } else {
            ResponseBody::empty()
        });
        *response.status_mut() = status;
        let headers = response.headers_mut();
        let Metering {
            request_id,
            budget_headers,
            budget,
        } = metering;
        match (budget_headers, budget, etag) {
            // A metered answer from the snapshot, nearly every request: the budget's prebuilt
            // block, cloned and five values written by position (`headers::MeteredHead`).
            (Some(shared), Some(budget), Some(etag))
                if cache == Cache::Private && content_type == JSON && extra_headers.is_empty() =>
            {
                let values = MeteredValues {
                    etag,
                    request_id,
                    remaining: budget.remaining,
                    reset: budget.reset,
                    ratelimit: budget.ratelimit,
                };
                *headers = shared.head.fill(vary_on, values);
                if status == StatusCode::NOT_MODIFIED {
                    headers.remove(header::CONTENT_TYPE);
                }
            }
            (shared, budget, etag) => {
                // Room for every header, so the map never grows and rehashes.
                headers.reserve(13 + extra_headers.len());
                if status != StatusCode::NOT_MODIFIED {
                    headers.insert(header::CONTENT_TYPE, content_type);
                }
                if let Some(etag) = etag {
                    headers.insert(header::ETAG, etag);
                }
                let (cache_control, vary) = match (cache, vary_encoding) {
                    (Cache::Private, _) => (PRIVATE_NO_CACHE, Some(vary_on.keyed())),
                    (Cache::Public, false) => (PUBLIC_MAX_AGE_60, None),
                    (Cache::Public, true) => (PUBLIC_MAX_AGE_60, Some(VARY_ENCODING)),
                    (Cache::Keyless, _) => (PUBLIC_MAX_AGE_60, Some(vary_on.keyed())),
                    (Cache::NoStore, _) => (NO_STORE, None),
                    (Cache::Revalidate, false) => (PUBLIC_NO_CACHE, None),
                    (Cache::Revalidate, true) => (PUBLIC_NO_CACHE, Some(VARY_ENCODING)),
                    (Cache::Immutable, false) => (IMMUTABLE, None),
                    (Cache::Immutable, true) => (IMMUTABLE, Some(VARY_ENCODING)),
                };
                headers.insert(header::CACHE_CONTROL, cache_control);
                if let Some(vary) = vary {
                    headers.insert(header::VARY, vary);
                }
                headers.insert(X_REQUEST_ID, request_id);
                // Every answer is what its Content-Type says: JSON, problems and pages alike.
                headers.insert(header::X_CONTENT_TYPE_OPTIONS, NOSNIFF);
                if let Some(policy) = page_policy {
                    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
                    headers.insert(header::REFERRER_POLICY, NO_REFERRER);
                }
                for (name, value) in extra_headers {
                    headers.insert(name, value);
                }
                if let Some(budget) = budget {
                    let limits = budget
                        .throttle_limits
                        .or_else(|| shared.map(|shared| (shared.limit.clone(), shared.policy.clone())));
                    if let Some((limit, policy)) = limits {
                        headers.insert(X_RATELIMIT_LIMIT, limit);
                        headers.insert(RATELIMIT_POLICY, policy);
                    }
                    headers.insert(X_RATELIMIT_REMAINING, budget.remaining);
                    headers.insert(X_RATELIMIT_RESET, budget.reset);
                    headers.insert(RATELIMIT, budget.ratelimit);
                }
            }
        }
        if gzip && (status == StatusCode::OK || status == StatusCode::PARTIAL_CONTENT) {
            headers.insert(header::CONTENT_ENCODING, GZIP);
        }
        if ranges {
            headers.insert(header::ACCEPT_RANGES, BYTES);
        }
        if let Some(content_range) = content_range {
            headers.insert(header::CONTENT_RANGE, content_range);
        }
        if let (true, Some(length)) = (head && status != StatusCode::NOT_MODIFIED, length) {
            // What a GET would have sent, when it is known before the body is made.
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        }
        response
    }
}

/// What a request asked of the representation: its validators and the codings it accepts.
/// The flags say whether the headers are there at all, found in the one walk over the
/// request's headers (`api::RequestHeaders`); their values are read only when present.
#[derive(Debug)]
pub struct Negotiation<'r> {
    pub headers: &'r HeaderMap,
    pub if_none_match: bool,
    pub accept_encoding: bool,
    /// An `Accept` header is there (read only by routes with a CSV form).
    pub accept: bool,
    /// A HEAD request: no body will be sent, and ranges apply to GET only (RFC 9110 14.2).
    pub head: bool,
}

impl Negotiation<'_> {
    /// A stored body, in the encoding the client prefers, or 304 if it has it already.
    /// A file compiled into the binary: its gzip variant for a client that accepts gzip, 304
    /// when `If-None-Match` matches.
    pub fn web_file(&self, file: &WebFile, cache: Cache) -> Representation {
        let gzip = file.gzip.as_ref().filter(|_| self.accepts_gzip());
        let (bytes, etag) = match gzip {
            Some((bytes, etag)) => (bytes.clone(), etag.as_str()),
            None => (file.bytes.clone(), file.etag.as_str()),
        };
        let mut representation = self.conditional(etag, header_value(etag), cache, || bytes);
        representation.content_type = file.content_type.clone();
        representation.vary_encoding = file.gzip.is_some();
        representation.gzip = gzip.is_some();
        representation
    }

    /// Whether the client prefers CSV to JSON (`prefers_csv`), every `Accept` line read as one
    /// list.
    pub fn prefers_csv(&self) -> bool {
        self.accept
            && prefers_csv(
                self.headers
                    .get_all(header::ACCEPT)
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
            )
    }

    /// Whether the response may be gzip: the client accepts it and the route allows encodings.
    pub fn accepts_gzip(&self) -> bool {
        self.accept_encoding && accepts_gzip(self.headers)
    }

    pub fn stored(&self, loaded: &LoadedSnapshot, body: &ArchivedBody, cache: Cache) -> Representation {
        let gzip = body.gzip.as_ref().filter(|_| self.accepts_gzip());
        let (bytes, etag) = match gzip {
            Some(encoded) => (loaded.snapshot.body(&encoded.bytes), encoded.etag.as_str()),
            None => (loaded.snapshot.body(&body.identity), body.etag.as_str()),
        };
        let etag_value = mapped_header_value(loaded, etag);
        let mut representation = self.conditional(etag, etag_value, cache, || bytes);
        representation.vary_encoding = body.gzip.is_some();
        representation.gzip = gzip.is_some();
        representation
    }

    /// A company's daily series: its gzip answer as stored for a client that accepts gzip,
    /// else its text, decoded or from the cache of decoded series; 304 when `If-None-Match`
    /// matches, and then nothing is decoded.
    pub fn series(&self, loaded: &LoadedSnapshot, series: &ArchivedSeriesBody) -> Result<Representation, ApiError> {
        let etags = (series.gzip_etag.as_str(), series.identity_etag.as_str());
        self.compressed(loaded, etags, |gzip| {
            Ok(match gzip {
                true => Payload::Pieces {
                    pieces: crate::snapshot::decoded::gzip_pieces(&loaded.snapshot, series),
                    len: series.gzip_len(),
                },
                false => Payload::Bytes(loaded.series_text(series)?),
            })
        })
    }

    /// A company's document stored as gzip only (a backtest, its published entries): the stored
    /// member for a client that accepts gzip, else its text, decoded or from the cache of
    /// decoded texts (a few kilobytes: no decoder's place); 304 when `If-None-Match` matches.
    pub fn document(&self, loaded: &LoadedSnapshot, document: &ArchivedExport) -> Result<Representation, ApiError> {
        let etags = (document.gzip_etag.as_str(), document.identity_etag.as_str());
        self.compressed(loaded, etags, |gzip| {
            Ok(Payload::Bytes(match gzip {
                true => loaded.snapshot.body(&document.gzip),
                false => loaded.document_text(document)?,
            }))
        })
    }

    /// What [`Negotiation::series`] and [`Negotiation::document`] share: a text stored
    /// compressed only, under its gzip and identity ETags, in the encoding the client takes;
    /// `body(gzip)` is made only when the answer is not a 304.
    fn compressed(
        &self,
        loaded: &LoadedSnapshot,
        (gzip_etag, identity_etag): (&str, &str),
        body: impl FnOnce(bool) -> Result<Payload, ApiError>,
    ) -> Result<Representation, ApiError> {
        let gzip = self.accepts_gzip();
        let etag = if gzip { gzip_etag } else { identity_etag };
        let mut representation = self.conditional(etag, mapped_header_value(loaded, etag), Cache::Private, Bytes::new);
        representation.vary_encoding = true;
        representation.gzip = gzip;
        if representation.status == StatusCode::OK {
            representation.body = body(gzip)?;
        }
        Ok(representation)
    }

    /// A stored export: its gzip bytes as stored for a client that accepts gzip, else its
    /// text decoded as it is sent (one of `decoders`' places, or 503 while all are taken); 304
    /// when `If-None-Match` matches, and the single byte range asked for (206, or 416).
    pub fn export(
        &self,
        loaded: &LoadedSnapshot,
        export: &ArchivedExport,
        decoders: &Decoders,
        key: &Arc<str>,
    ) -> Result<Representation, ApiError> {
        // The exports are Enterprise's.
        self.gzip_document(loaded, export, decoders, &DecodeHolder::key(key, true), true)
    }

    /// A document stored as gzip only ([`Negotiation::export`]), with byte ranges (`ranges`) or
    /// always whole (the scored targets, a JSON document, not a download to resume); `holder`
    /// is the key that would hold a decoder's place, and whether it is an Enterprise key's.
    pub fn gzip_document(
        &self,
        loaded: &LoadedSnapshot,
        export: &ArchivedExport,
        decoders: &Decoders,
        holder: &DecodeHolder,
        ranges: bool,
    ) -> Result<Representation, ApiError> {
        let gzip = self.accepts_gzip();
        let (etag, len) = if gzip {
            (export.gzip_etag.as_str(), export.gzip.len.to_native())
        } else {
            (export.identity_etag.as_str(), export.identity_len.to_native())
        };
        let etag_value = mapped_header_value(loaded, etag);
        let mut representation = self.conditional(etag, etag_value, Cache::Private, Bytes::new);
        representation.content_type = NDJSON;
        representation.vary_encoding = true;
        representation.gzip = gzip;
        representation.ranges = ranges;
        if representation.status == StatusCode::NOT_MODIFIED {
            return Ok(representation);
        }
        let asked = if self.head || !ranges {
            RangeRequest::Whole
        } else {
            ranges::asked(self.headers, etag, len)
        };
        let (first, last) = match asked {
            RangeRequest::Whole => (0, len.saturating_sub(1)),
            RangeRequest::Unsatisfiable => return Err(ApiError::RangeNotSatisfiable { length: len }),
            RangeRequest::Part { first, last } => {
                representation.status = StatusCode::PARTIAL_CONTENT;
                representation.content_range = Some(header_value(&format!("bytes {first}-{last}/{len}")));
                (first, last)
            }
        };
        let part_len = if len == 0 { 0 } else { last - first + 1 };
        representation.body = if gzip {
            let stored = loaded.snapshot.body(&export.gzip);
            Payload::Bytes(stored.slice(first as usize..(first + part_len) as usize))
        } else {
            // A HEAD decodes nothing, so it takes no decoder's place.
            let permit = match self.head {
                true => None,
                false => Some(decoder_place(decoders, holder)?),
            };
            Payload::Gunzip {
                gzip: loaded.snapshot.body(&export.gzip),
                skip: first,
                len: part_len,
                permit,
            }
        };
        Ok(representation)
    }

    /// 200 with the body, or 304 when `If-None-Match` matches its ETag, in which case the body
    /// is never made (a list page is not rendered to be revalidated).
    pub fn conditional(
        &self,
        etag: &str,
        etag_value: HeaderValue,
        cache: Cache,
        body: impl FnOnce() -> Bytes,
    ) -> Representation {
        let (status, body) = if self.if_none_match && if_none_match(self.headers, etag) {
            (StatusCode::NOT_MODIFIED, Bytes::new())
        } else {
            (StatusCode::OK, body())
        };
        Representation {
            status,
            body: Payload::Bytes(body),
            content_type: JSON,
            etag: Some(etag_value),
            cache,
            vary_encoding: false,
            vary_accept: false,
            extra_headers: Vec::new(),
            gzip: false,
            ranges: false,
            content_range: None,
            page_policy: None,
        }
    }
}

/// One of `decoders`' places for `key`, to decode a stored document for a client without gzip
/// or to pass over every company's series; or why not, said to the client: 429 past the key's
/// share or while it cools down after a cut, 503 while every place is taken.
pub fn decoder_place(decoders: &Decoders, holder: &DecodeHolder) -> Result<DecodePermit, ApiError> {
    decoders.try_acquire(holder).map_err(|refused| match refused {
        DecodeRefused::KeyShare { held } => ApiError::ExportsAtOnce {
            detail: format!(
                "this key is already decoding {held} document(s) (an export or the scored targets for a client that does not accept gzip, a ranged series export, an index's constituents), its share of the server's {} decoders; retry when that ends, or send Accept-Encoding: gzip, with which a whole export or the scored targets are always served.",
                decoders.limits().places
            ),
            retry_after: 5,
        },
        DecodeRefused::CoolingDown { retry_after } => ApiError::ExportsAtOnce {
            detail: format!(
                "this key's last decoded document was cut for reading slower than {} KiB/s; it may start another in {retry_after} s, or send Accept-Encoding: gzip, with which a whole export or the scored targets are always served.",
                decoders.limits().floor_bytes_per_sec / 1024
            ),
            retry_after,
        },
        DecodeRefused::AllTaken { active, turn } => ApiError::Unavailable(format!(
            "{active} documents are being decoded (exports and the scored targets for clients that do not accept gzip, ranged series exports, indices' constituents); this key is number {turn} in line for the next free decoder and keeps its turn if it asks again within {} s; or send Accept-Encoding: gzip, with which a whole export or the scored targets are always served.",
            crate::response::body::TURN_KEPT.as_secs()
        )),
    })
}

/// Whether an `Accept` header prefers CSV to JSON, read as RFC 9110 12.5.1 says: its lines
/// (`lines`) joined into one list; each media type takes the weight of the most specific range
/// that matches it (`text/csv`, then `text/*`, then `*/*`), none matching meaning not acceptable;
/// parameter names in any case (`Q=0`). CSV is chosen when `text/csv` weighs more than JSON
/// (`application/json`, or `application/x-ndjson`, the exports' JSON form); a tie is JSON.
pub fn prefers_csv<'a>(lines: impl IntoIterator<Item = &'a str>) -> bool {
    let ranges: Vec<(String, f32)> = lines
        .into_iter()
        .flat_map(|line| line.split(','))
        .filter_map(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let weight = weight(parts)?;
            (!media.is_empty()).then_some((media, weight))
        })
        .collect();
    let weight_of = |kind: &str, subtype: &str| -> f32 {
        let exact = format!("{kind}/{subtype}");
        let any_subtype = format!("{kind}/*");
        [exact.as_str(), any_subtype.as_str(), "*/*"]
            .iter()
            .find_map(|wanted| {
                ranges
                    .iter()
                    .filter(|(media, _)| media == wanted)
                    .map(|&(_, weight)| weight)
                    .reduce(f32::max)
            })
            .unwrap_or(0.0)
    };
    let csv = weight_of("text", "csv");
    let json = weight_of("application", "json").max(weight_of("application", "x-ndjson"));
    csv > json
}

/// The weight (`q`, its name in any case) among a range's parameters: 1 when none is given,
/// `None` when it is not a number from 0 to 1 (the range is then ignored).
fn weight<'a>(parameters: impl Iterator<Item = &'a str>) -> Option<f32> {
    for parameter in parameters {
        let Some((name, value)) = parameter.split_once('=') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("q") {
            return value.trim().parse::<f32>().ok().filter(|q| (0.0..=1.0).contains(q));
        }
    }
    Some(1.0)
}

/// The header value of text inside the mapped snapshot (a stored ETag): it borrows the bytes,
/// no copy.
fn mapped_header_value(loaded: &LoadedSnapshot, text: &str) -> HeaderValue {
    HeaderValue::from_maybe_shared(loaded.snapshot.file_slice(text.as_bytes())).unwrap_or_else(|_| header_value(text))
}

/// A header value from text this server made (an ETag), which is always valid; should it not
/// be, a harmless placeholder rather than a panic.
pub fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

/// Whether `If-None-Match` matches `etag` under the weak comparison of RFC 9110 13.1.2.
pub fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    let opaque = |tag: &str| -> Option<usize> { tag.strip_prefix("W/").unwrap_or(tag).find('"') };
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || (opaque(tag) == Some(0) && tag.strip_prefix("W/").unwrap_or(tag) == etag))
}

/// Whether the client accepts gzip, honouring `q=0` and `*`.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let (mut gzip, mut any) = (None, None);
    for part in headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut pieces = part.split(';');
        let name = pieces.next().unwrap_or("").trim();
        let Some(quality) = weight(pieces) else {
            continue;
        };
        if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(quality);
        } else if name == "*" {
            any = Some(quality);
        }
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefers_csv(accept: &str) -> bool {
        super::prefers_csv([accept])
    }

    #[test]
    fn accept_lines_are_one_list_and_weights_are_read_as_rfc_9110_says() {
        assert!(!super::prefers_csv(["application/json", "text/csv"]), "a tie is JSON");
        assert!(!super::prefers_csv(["text/csv;q=0.5", "application/json"]));
        assert!(super::prefers_csv(["application/json;q=0.2", "text/csv"]));
        assert!(!prefers_csv("text/csv;Q=0"));
        assert!(!prefers_csv("text/csv; Q = 0"));
        assert!(!prefers_csv("text/csv;q=0, text/*"), "the most specific range decides");
        assert!(prefers_csv("text/*, application/json;q=0.5"));
        assert!(!prefers_csv("text/csv;q=0.3, application/*;q=0.4"));
        assert!(!prefers_csv("text/csv;q=2"), "an impossible weight is no preference");
        let gzip = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
            accepts_gzip(&headers)
        };
        assert!(gzip("gzip") && !gzip("gzip;Q=0") && !gzip("*;Q=0") && gzip("br, gzip;q=0.1"));
    }

    #[test]
    fn csv_is_chosen_only_when_preferred() {
        assert!(prefers_csv("text/csv"));
        assert!(prefers_csv("text/csv, application/json;q=0.5"));
        assert!(prefers_csv("TEXT/CSV; charset=utf-8"));
        assert!(!prefers_csv("application/json"));
        assert!(!prefers_csv("*/*"));
        assert!(!prefers_csv("text/csv;q=0.5, */*"));
        assert!(!prefers_csv("text/csv, application/json"));
        assert!(!prefers_csv("text/html"));
        assert!(!prefers_csv("text/csv;q=0"));
        assert!(!prefers_csv("application/x-ndjson, text/csv;q=0.5"));
        assert!(!prefers_csv("text/csv, application/x-ndjson"));
    }
}
