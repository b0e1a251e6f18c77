//! Response headers: the names and fixed values this service sends, and the prebuilt header
//! block of a metered answer.
//!
//! A metered answer (a 200 or 304 from the snapshot, to a request that spent a unit of a key's
//! budget) carries ten headers. Inserted one at a time into a `HeaderMap`, each costs a hash of
//! its name, a probe and a push; `benches/instructions.sh` counted that at about a third of
//! the handler. So each key gets, when the keys file is read, the block already built, with its
//! fixed values set and placeholders for the five that change per request; an answer clones
//! the block and writes those five by position, hashing nothing.

use http::header::{self, HeaderName, HeaderValue};
use http::HeaderMap;

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
pub const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

pub const JSON: HeaderValue = HeaderValue::from_static("application/json");
pub const PROBLEM_JSON: HeaderValue = HeaderValue::from_static("application/problem+json");
pub const GZIP: HeaderValue = HeaderValue::from_static("gzip");
pub const PRIVATE_NO_CACHE: HeaderValue = HeaderValue::from_static("private, no-cache");
pub const PUBLIC_MAX_AGE_60: HeaderValue = HeaderValue::from_static("public, max-age=60");
pub const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");
pub const VARY_KEY: HeaderValue = HeaderValue::from_static("X-API-Key");
pub const VARY_KEY_ENCODING: HeaderValue = HeaderValue::from_static("X-API-Key, Accept-Encoding");
pub const VARY_ENCODING: HeaderValue = HeaderValue::from_static("Accept-Encoding");

/// The values of a metered answer that change from one request to the next.
#[derive(Debug)]
pub struct MeteredValues {
    pub etag: HeaderValue,
    pub request_id: HeaderValue,
    pub remaining: HeaderValue,
    pub reset: HeaderValue,
    pub ratelimit: HeaderValue,
}

/// The header names of [`MeteredValues`], in the order of its fields.
const PER_REQUEST: [HeaderName; 5] = [
    header::ETAG,
    X_REQUEST_ID,
    X_RATELIMIT_REMAINING,
    X_RATELIMIT_RESET,
    RATELIMIT,
];

/// One key's header blocks for metered answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeteredHead {
    /// Indexed by whether `Vary` names `Accept-Encoding` (the body has a gzip variant).
    blocks: [Block; 2],
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Block {
    headers: HeaderMap,
    /// For each header in `headers`' iteration order, which [`PER_REQUEST`] value goes there,
    /// if any. Found by name once here, so `fill` needs no assumption about that order beyond
    /// a clone iterating like its original.
    per_request: Vec<Option<usize>>,
}

impl MeteredHead {
    /// The blocks for a key whose `X-RateLimit-Limit` and `RateLimit-Policy` are `limit` and
    /// `policy`.
    pub fn new(limit: &HeaderValue, policy: &HeaderValue) -> MeteredHead {
        let block = |vary: HeaderValue| {
            let mut headers = HeaderMap::with_capacity(10);
            headers.insert(header::CONTENT_TYPE, JSON);
            headers.insert(header::CACHE_CONTROL, PRIVATE_NO_CACHE);
            headers.insert(header::VARY, vary);
            headers.insert(X_RATELIMIT_LIMIT, limit.clone());
            headers.insert(RATELIMIT_POLICY, policy.clone());
            for name in PER_REQUEST {
                headers.insert(name, HeaderValue::from_static(""));
            }
            let per_request = headers
                .keys()
                .map(|name| PER_REQUEST.iter().position(|n| n == name))
                .collect();
            Block { headers, per_request }
        };
        MeteredHead {
            blocks: [block(VARY_KEY), block(VARY_KEY_ENCODING)],
        }
    }

    /// The ten headers of one metered answer.
    pub fn fill(&self, vary_encoding: bool, values: MeteredValues) -> HeaderMap {
        let block = &self.blocks[usize::from(vary_encoding)];
        let mut headers = block.headers.clone();
        let MeteredValues {
            etag,
            request_id,
            remaining,
            reset,
            ratelimit,
        } = values;
        let mut values = [
            Some(etag),
            Some(request_id),
            Some(remaining),
            Some(reset),
            Some(ratelimit),
        ];
        for (slot, source) in headers.values_mut().zip(&block.per_request) {
            if let Some(value) = source.and_then(|i| values[i].take()) {
                *slot = value;
            }
        }
        headers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_writes_each_value_under_its_name() {
        let head = MeteredHead::new(
            &HeaderValue::from(6000),
            &HeaderValue::from_static("\"minute\";q=6000;w=60"),
        );
        let value = |text: &'static str| HeaderValue::from_static(text);
        for vary_encoding in [false, true] {
            let headers = head.fill(
                vary_encoding,
                MeteredValues {
                    etag: value("\"e\""),
                    request_id: value("req_1"),
                    remaining: value("5999"),
                    reset: value("1800000000"),
                    ratelimit: value("\"minute\";r=5999;t=1"),
                },
            );
            let get = |name: HeaderName| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("missing");
            assert_eq!(headers.len(), 10);
            assert_eq!(get(header::CONTENT_TYPE), "application/json");
            assert_eq!(get(header::ETAG), "\"e\"");
            assert_eq!(get(header::CACHE_CONTROL), "private, no-cache");
            let vary = if vary_encoding {
                "X-API-Key, Accept-Encoding"
            } else {
                "X-API-Key"
            };
            assert_eq!(get(header::VARY), vary);
            assert_eq!(get(X_REQUEST_ID), "req_1");
            assert_eq!(get(X_RATELIMIT_LIMIT), "6000");
            assert_eq!(get(X_RATELIMIT_REMAINING), "5999");
            assert_eq!(get(X_RATELIMIT_RESET), "1800000000");
            assert_eq!(get(RATELIMIT), "\"minute\";r=5999;t=1");
            assert_eq!(get(RATELIMIT_POLICY), "\"minute\";q=6000;w=60");
        }
    }
}
