//! Response headers: the names and fixed values this service sends, the values a request
//! composes for itself, and the prebuilt header block of a metered answer. (Which headers a
//! response gets is decided in [`crate::response::Representation::into_response`].)
//!
//! A metered answer (a 200 or 304 from the snapshot, to a request that spent a unit of a key's
//! budget) carries ten headers. Inserted one at a time into a `HeaderMap`, each costs a hash of
//! its name, a probe and a push; `benches/lab/instructions.sh` measures that. So each budget (every
//! key of one per-minute rate) gets, when the keys file is read, the block already built, with
//! its fixed values set and placeholders for the five that change per request; an answer
//! clones the block and writes those five by position, hashing nothing.
//!
//! Those five (and the rate-limit values of other answers) are [`Composed`]: text this process
//! writes itself from digits and fixed ASCII, so it is not validated byte by byte again.
//!
//! Over HTTP/2 the values that differ in every answer (the request id, the remaining budget,
//! `RateLimit`; not the reset time, which repeats for a second) are sent as HPACK "never
//! indexed" literals. Indexed, each answer would insert
//! three values no later answer repeats into the connection's 4 KiB header table: they would
//! evict the fixed headers every twenty answers or so, and every lookup of those names would
//! walk a chain of dead values comparing bytes (`benches/lab/production.sh`, the HTTP/2 row).

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::HeaderMap;

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
pub const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

/// The names of the two budgets in `RateLimit` and `RateLimit-Policy`: a key's, and a client
/// address's failed-authentication budget.
pub const MINUTE_POLICY: &[u8] = b"\"minute\"";
pub const AUTH_FAILURES_POLICY: &[u8] = b"\"auth-failures\"";

pub const JSON: HeaderValue = HeaderValue::from_static("application/json");
pub const PROBLEM_JSON: HeaderValue = HeaderValue::from_static("application/problem+json");
pub const NDJSON: HeaderValue = HeaderValue::from_static("application/x-ndjson");
pub const GZIP: HeaderValue = HeaderValue::from_static("gzip");
pub const BYTES: HeaderValue = HeaderValue::from_static("bytes");
pub const PRIVATE_NO_CACHE: HeaderValue = HeaderValue::from_static("private, no-cache");
pub const PUBLIC_MAX_AGE_60: HeaderValue = HeaderValue::from_static("public, max-age=60");
pub const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");
pub const PUBLIC_NO_CACHE: HeaderValue = HeaderValue::from_static("public, no-cache");
pub const IMMUTABLE: HeaderValue = HeaderValue::from_static("public, max-age=31536000, immutable");
pub const NOSNIFF: HeaderValue = HeaderValue::from_static("nosniff");
pub const NO_REFERRER: HeaderValue = HeaderValue::from_static("no-referrer");
/// The pages' policy: everything from this origin only, no inline script, no eval, no frames.
/// The API reference's policy: the page's, with the one theme style element its renderer
/// (RapiDoc) writes, by hash (it follows the `<rapi-doc>` attributes in `web/docs.html`: the
/// browser test fails naming the new hash if they change), and the style attributes it sets.
pub const DOCS_CSP: HeaderValue = HeaderValue::from_static(
    "default-src 'self'; script-src 'self'; style-src 'self' 'sha256-ifPfEjwvvHamc8FM1M6NLjVY4X91dlrbPSPrDOqqpek='; \
     style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
);
pub const PAGE_CSP: HeaderValue = HeaderValue::from_static(
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
     font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
);
pub const VARY_KEY: HeaderValue = HeaderValue::from_static("X-API-Key");
pub const VARY_KEY_ENCODING: HeaderValue = HeaderValue::from_static("X-API-Key, Accept-Encoding");
pub const VARY_ENCODING: HeaderValue = HeaderValue::from_static("Accept-Encoding");
pub const VARY_KEY_ACCEPT: HeaderValue = HeaderValue::from_static("X-API-Key, Accept");
pub const VARY_KEY_ACCEPT_ENCODING: HeaderValue = HeaderValue::from_static("X-API-Key, Accept, Accept-Encoding");
pub const CSV: HeaderValue = HeaderValue::from_static(marks_format::rules::table::MEDIA_TYPE);
/// A checkpoint of the publication log: a C2SP signed note.
pub const TEXT: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
pub const LINK: HeaderName = header::LINK;
pub const X_NEXT_CURSOR: HeaderName = HeaderName::from_static("x-next-cursor");
pub const X_UNIVERSE_NOTE: HeaderName = HeaderName::from_static("x-universe-note");

/// The header values a request composes for itself (its id, remaining budget, reset time,
/// `RateLimit`), written into one buffer on the stack and handed out as slices of one
/// allocation ([`Composed::finish`]): one allocation per request rather than one per value.
/// Every method writes only ASCII digits, lowercase hex and fixed text of this crate, never
/// bytes from a request or a file; that is what lets them skip `HeaderValue`'s byte-by-byte
/// check, which `benches/lab/instructions.sh` counted at 500 instructions per request.
#[derive(Debug)]
pub struct Composed {
    text: [u8; COMPOSED_CAPACITY],
    len: usize,
}

/// Room for the most one answer composes: a request id (20 bytes), a remaining budget and a
/// reset time (at most 10 and 20 digits), a `RateLimit` and a `RateLimit-Policy` value (at
/// most 51 and 33 bytes, for the failed-authentication budget).
const COMPOSED_CAPACITY: usize = 192;

/// Where one value is in a [`Composed`] buffer.
#[derive(Clone, Copy, Debug)]
pub struct Part {
    start: usize,
    end: usize,
}

/// A request id this server made: `req_` and 16 hex digits, from a request counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MadeRequestId([u8; 20]);

impl MadeRequestId {
    pub fn new(mixed: u64) -> MadeRequestId {
        let mut id = *b"req_0000000000000000";
        for (i, slot) in id[4..].iter_mut().enumerate() {
            *slot = b"0123456789abcdef"[((mixed >> (60 - 4 * i)) & 0xf) as usize];
        }
        MadeRequestId(id)
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl Composed {
    pub fn new() -> Composed {
        Composed {
            text: [0; COMPOSED_CAPACITY],
            len: 0,
        }
    }

    /// A request id this server made.
    pub fn request_id(&mut self, id: &MadeRequestId) -> Part {
        self.part(&[&id.0])
    }

    /// A number.
    pub fn number(&mut self, n: u64) -> Part {
        self.part(&[itoa::Buffer::new().format(n).as_bytes()])
    }

    /// The IETF draft `RateLimit` value: `<policy>;r=<remaining>;t=<seconds to full>`.
    pub fn ratelimit(&mut self, policy: &'static [u8], remaining: u32, reset_after: u64) -> Part {
        let (mut r, mut t) = (itoa::Buffer::new(), itoa::Buffer::new());
        self.part(&[
            policy,
            b";r=",
            r.format(remaining).as_bytes(),
            b";t=",
            t.format(reset_after).as_bytes(),
        ])
    }

    /// The IETF draft `RateLimit-Policy` value: `<policy>;q=<quota>;w=60`.
    pub fn policy(&mut self, policy: &'static [u8], quota: u32) -> Part {
        self.part(&[policy, b";q=", itoa::Buffer::new().format(quota).as_bytes(), b";w=60"])
    }

    /// The concatenation of `parts`, which the methods above make only of visible ASCII and
    /// never longer than the buffer holds (a part that would not fit is cut short, never
    /// written past the end).
    fn part(&mut self, parts: &[&[u8]]) -> Part {
        let start = self.len;
        for part in parts {
            let end = (self.len + part.len()).min(COMPOSED_CAPACITY);
            let fits = end - self.len;
            debug_assert_eq!(fits, part.len(), "the composed values outgrew their buffer");
            self.text[self.len..end].copy_from_slice(&part[..fits]);
            self.len = end;
        }
        Part { start, end: self.len }
    }

    /// The values composed so far, in one allocation (none when nothing was composed).
    pub fn finish(self) -> Composition {
        if self.len == 0 {
            return Composition(Bytes::new());
        }
        Composition(Bytes::from_owner(self))
    }
}

impl AsRef<[u8]> for Composed {
    fn as_ref(&self) -> &[u8] {
        &self.text[..self.len]
    }
}

impl Default for Composed {
    fn default() -> Self {
        Composed::new()
    }
}

/// The values of a finished [`Composed`] buffer, each a header value sharing its allocation.
#[derive(Debug)]
pub struct Composition(Bytes);

impl Composition {
    /// A value that stays the same over many answers (a reset time, in whole seconds; a policy).
    #[allow(unsafe_code)]
    pub fn value(&self, part: Part) -> HeaderValue {
        let text = self.0.slice(part.start..part.end);
        debug_assert!(text.iter().all(|b| (0x20..0x7f).contains(b)), "{text:?}");
        // SAFETY: the only requirement is that the bytes be a valid field value, and
        // `Composed` writes nothing else (see its notes).
        unsafe { HeaderValue::from_maybe_shared_unchecked(text) }
    }

    /// A value that changes from one answer to the next (a request id, a remaining budget,
    /// `RateLimit`), marked for HPACK to send literally and keep out of its table (see the
    /// module's notes); HTTP/1.1 ignores the mark.
    pub fn changing(&self, part: Part) -> HeaderValue {
        let mut value = self.value(part);
        value.set_sensitive(true);
        value
    }
}

/// What an answer varies on besides the key: the client's codings (it has a gzip variant) and
/// its `Accept` (it has a CSV form).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vary {
    pub encoding: bool,
    pub accept: bool,
}

impl Vary {
    /// The `Vary` value of a per-key answer.
    pub fn keyed(self) -> HeaderValue {
        match (self.accept, self.encoding) {
            (false, false) => VARY_KEY,
            (false, true) => VARY_KEY_ENCODING,
            (true, false) => VARY_KEY_ACCEPT,
            (true, true) => VARY_KEY_ACCEPT_ENCODING,
        }
    }
}

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

/// One budget's header blocks for metered answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeteredHead {
    /// Indexed by what `Vary` names besides `X-API-Key`: `Accept` (the route answers CSV too)
    /// times two, plus `Accept-Encoding` (the body has a gzip variant).
    blocks: [Block; 4],
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
    /// The blocks for a budget whose `X-RateLimit-Limit` and `RateLimit-Policy` are `limit`
    /// and `policy`.
    pub fn new(limit: &HeaderValue, policy: &HeaderValue) -> MeteredHead {
        let block = |vary: HeaderValue| {
            // Room for the two hyper adds over HTTP/2 (`content-length`, `date`) as well: a
            // clone keeps its original's table, and a full one is rehashed on the next insert.
            let mut headers = HeaderMap::with_capacity(11 + 2);
            headers.insert(header::CONTENT_TYPE, JSON);
            headers.insert(header::CACHE_CONTROL, PRIVATE_NO_CACHE);
            headers.insert(header::VARY, vary);
            headers.insert(header::X_CONTENT_TYPE_OPTIONS, NOSNIFF);
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
            blocks: [
                block(VARY_KEY),
                block(VARY_KEY_ENCODING),
                block(VARY_KEY_ACCEPT),
                block(VARY_KEY_ACCEPT_ENCODING),
            ],
        }
    }

    /// The eleven headers of one metered answer.
    pub fn fill(&self, vary: Vary, values: MeteredValues) -> HeaderMap {
        let block = &self.blocks[usize::from(vary.encoding) + 2 * usize::from(vary.accept)];
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

/// The headers every key of one per-minute budget shares.
#[derive(Debug, PartialEq, Eq)]
pub struct BudgetHeaders {
    /// `X-RateLimit-Limit` and `RateLimit-Policy`.
    pub limit: HeaderValue,
    pub policy: HeaderValue,
    /// The header blocks of metered answers, built from the two above.
    pub head: MeteredHead,
}

impl BudgetHeaders {
    pub fn new(rate_per_min: u32) -> BudgetHeaders {
        let limit = HeaderValue::from(rate_per_min);
        let mut text = Composed::new();
        let policy = text.policy(MINUTE_POLICY, rate_per_min);
        let policy = text.finish().value(policy);
        BudgetHeaders {
            head: MeteredHead::new(&limit, &policy),
            limit,
            policy,
        }
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
        for (encoding, accept) in [(false, false), (true, false), (false, true), (true, true)] {
            let vary = Vary { encoding, accept };
            let headers = head.fill(
                vary,
                MeteredValues {
                    etag: value("\"e\""),
                    request_id: value("req_1"),
                    remaining: value("5999"),
                    reset: value("1800000000"),
                    ratelimit: value("\"minute\";r=5999;t=1"),
                },
            );
            let get = |name: HeaderName| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("missing");
            assert_eq!(headers.len(), 11);
            assert_eq!(get(header::CONTENT_TYPE), "application/json");
            assert_eq!(get(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
            assert_eq!(get(header::ETAG), "\"e\"");
            assert_eq!(get(header::CACHE_CONTROL), "private, no-cache");
            let expected = match (accept, encoding) {
                (false, false) => "X-API-Key",
                (false, true) => "X-API-Key, Accept-Encoding",
                (true, false) => "X-API-Key, Accept",
                (true, true) => "X-API-Key, Accept, Accept-Encoding",
            };
            assert_eq!(get(header::VARY), expected);
            assert_eq!(get(X_REQUEST_ID), "req_1");
            assert_eq!(get(X_RATELIMIT_LIMIT), "6000");
            assert_eq!(get(X_RATELIMIT_REMAINING), "5999");
            assert_eq!(get(X_RATELIMIT_RESET), "1800000000");
            assert_eq!(get(RATELIMIT), "\"minute\";r=5999;t=1");
            assert_eq!(get(RATELIMIT_POLICY), "\"minute\";q=6000;w=60");
        }
    }

    #[test]
    fn values_that_change_per_answer_are_kept_out_of_hpack_tables_and_fixed_ones_are_not() {
        let mut text = Composed::new();
        let id = text.request_id(&MadeRequestId::new(0x0123_4567_89ab_cdef));
        let remaining = text.number(5999);
        let ratelimit = text.ratelimit(MINUTE_POLICY, 5999, 1);
        let policy = text.policy(MINUTE_POLICY, 6000);
        let reset = text.number(1_800_000_000);
        let composed = text.finish();
        let per_answer = [
            composed.changing(id),
            composed.changing(remaining),
            composed.changing(ratelimit),
        ];
        for value in &per_answer {
            assert!(value.is_sensitive(), "{value:?} would be indexed");
        }
        assert_eq!(per_answer[0], "req_0123456789abcdef");
        assert_eq!(per_answer[1], "5999");
        assert_eq!(per_answer[2], "\"minute\";r=5999;t=1");
        let policy = composed.value(policy);
        assert_eq!(policy, "\"minute\";q=6000;w=60");
        assert!(
            !policy.is_sensitive(),
            "a budget's fixed policy is indexed once per connection"
        );
        let reset = composed.value(reset);
        assert_eq!(reset, "1800000000");
        assert!(!reset.is_sensitive(), "a reset time repeats for a second's answers");
    }

    #[test]
    fn the_most_one_answer_composes_fits() {
        let mut text = Composed::new();
        let parts = [
            text.request_id(&MadeRequestId::new(u64::MAX)),
            text.number(u64::from(u32::MAX)),
            text.number(u64::MAX),
            text.ratelimit(AUTH_FAILURES_POLICY, u32::MAX, u64::MAX),
            text.policy(AUTH_FAILURES_POLICY, u32::MAX),
        ];
        let composed = text.finish();
        let values: Vec<String> = parts
            .iter()
            .map(|&part| composed.value(part).to_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(values[0], "req_ffffffffffffffff");
        assert_eq!(values[2], u64::MAX.to_string());
        assert_eq!(values[3], format!("\"auth-failures\";r={};t={}", u32::MAX, u64::MAX));
        assert_eq!(values[4], format!("\"auth-failures\";q={};w=60", u32::MAX));
    }
}
