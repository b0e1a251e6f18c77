//! The service: one request in, one response out, as a plain function over the shared `State`.
//!
//! `handle` is what the HTTP server calls for every request, and what benches and tests call
//! without a socket. It never panics on client input, never reads a request body, never
//! renders a stored body again: data bodies are slices of the mapped snapshot, list pages are
//! assembled from pre-rendered items, and only headers, errors and list pages allocate.
//!
//! Order of checks for the authenticated operations: method, route, key (401, or 429 when the
//! client IP has failed authentication too often), budget (429; every request reaching a
//! valid key spends one unit), snapshot (503), scope (403), parameters (422), resource (404,
//! or 403 outside the free universe), then the conditional request (304).

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::Full;
use marks_builder::format::{ArchivedBody, ArchivedCompanyEntry, UNIVERSE_ALL, UNIVERSE_FREE};
use marks_builder::tiers::{Scope, Tier};
use marks_builder::writer::etag_of;

use crate::cursor::CursorKey;
use crate::head::{
    Composed, MeteredValues, AUTH_FAILURES_POLICY, GZIP, JSON, MINUTE_POLICY, NO_STORE, PRIVATE_NO_CACHE, PROBLEM_JSON,
    PUBLIC_MAX_AGE_60, RATELIMIT, RATELIMIT_POLICY, VARY_ENCODING, VARY_KEY, VARY_KEY_ENCODING, X_RATELIMIT_LIMIT,
    X_RATELIMIT_REMAINING, X_RATELIMIT_RESET, X_REQUEST_ID,
};
use crate::keys::{Caller, RememberedKey};
use crate::list;
use crate::problem::ApiError;
use crate::query::{self, ListQuery, Params, LIST_PARAMS};
use crate::ratelimit::Decision;
use crate::routes::{route, Operation};
use crate::state::{epoch_seconds, LoadedSnapshot, State};

pub type Response = http::Response<Full<Bytes>>;

/// The interface description served at `/v1/openapi.json`.
pub const OPENAPI_JSON: &[u8] = include_bytes!("../openapi/openapi.json");

const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");

/// How a response may be cached, and what it varies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cache {
    /// Per-key data: every client revalidates.
    Private,
    /// The same for everyone (signing keys, scorecard, OpenAPI document).
    Public,
    /// Operational answers and errors.
    NoStore,
}

/// The request headers the service reads, found in one walk over the few headers a request
/// carries instead of a hashed lookup each (`benches/instructions.sh` counted the four lookups
/// at 550 instructions, a fourteenth of the handler). `If-None-Match` and `Accept-Encoding`
/// are only noted here; when present, their values are read where they are compared.
#[derive(Debug, Default)]
struct Asked<'r> {
    api_key: Option<&'r HeaderValue>,
    /// More than one `X-API-Key`: refused, rather than guessing which one was meant.
    api_key_repeated: bool,
    request_id: Option<&'r HeaderValue>,
    if_none_match: bool,
    accept_encoding: bool,
}

impl<'r> Asked<'r> {
    fn of(headers: &'r HeaderMap) -> Asked<'r> {
        let mut asked = Asked::default();
        for (name, value) in headers {
            if name == header::IF_NONE_MATCH {
                asked.if_none_match = true;
            } else if name == header::ACCEPT_ENCODING {
                asked.accept_encoding = true;
            } else if name == X_API_KEY {
                asked.api_key_repeated = asked.api_key.is_some();
                asked.api_key = Some(value);
            } else if name == X_REQUEST_ID && asked.request_id.is_none() {
                asked.request_id = Some(value);
            }
        }
        asked
    }
}

/// What the service keeps from one request of a connection to the next.
#[derive(Debug, Default)]
pub struct Connection {
    key: RememberedKey,
}

/// One request being answered, and what was learnt about it on the way.
struct Exchange<'a, B> {
    state: &'a State,
    request: &'a Request<B>,
    peer: IpAddr,
    asked: Asked<'a>,
    connection: &'a mut Connection,
    /// Read once per request; the budgets and the latency metric share it.
    now: Instant,
    operation: Operation,
    caller: Option<Arc<Caller>>,
    decision: Option<Decision>,
    /// Set when the client IP's failed-authentication budget refused the request.
    auth_throttle: Option<Decision>,
    /// The client's `X-Request-ID`, or one made for it.
    request_id: HeaderValue,
    /// Where this request's own header values are written.
    composed: Composed,
}

/// The rate-limit headers of the budget a request was metered against.
struct Budget {
    remaining: HeaderValue,
    reset: HeaderValue,
    ratelimit: HeaderValue,
    /// `X-RateLimit-Limit` and `RateLimit-Policy` of a failed-authentication budget. A key's
    /// are made once, when the keys load, and read from its `Caller` where they are needed
    /// (the prebuilt block of a metered answer has them already).
    throttle_limits: Option<(HeaderValue, HeaderValue)>,
}

/// The access-log facts of a request, returned alongside the response.
#[derive(Debug)]
pub struct Outcome {
    pub operation: Operation,
    /// The key the request was answered for, if one was accepted.
    pub caller: Option<Arc<Caller>>,
    /// Body bytes sent.
    pub bytes: usize,
    /// Time spent in the handler.
    pub latency: std::time::Duration,
}

/// Answers one request, as the first of its connection.
pub fn handle<B>(state: &State, request: &Request<B>, peer: IpAddr) -> Response {
    handle_with_outcome(state, request, peer, &mut Connection::default()).0
}

/// Answers one request of `connection` and reports what it was, for the access log.
pub fn handle_with_outcome<B>(
    state: &State,
    request: &Request<B>,
    peer: IpAddr,
    connection: &mut Connection,
) -> (Response, Outcome) {
    let started = Instant::now();
    let mut composed = Composed::new();
    let asked = Asked::of(request.headers());
    let request_id = match asked.request_id {
        Some(value) if valid_request_id(value) => value.clone(),
        _ => composed.request_id(state.next_request_id()),
    };
    let mut exchange = Exchange {
        state,
        request,
        peer,
        asked,
        connection,
        now: started,
        operation: Operation::Unknown,
        caller: None,
        decision: None,
        auth_throttle: None,
        request_id,
        composed,
    };
    let response = match exchange.dispatch() {
        Ok(response) => response,
        Err(error) => exchange.problem(&error),
    };
    let bytes = hyper::body::Body::size_hint(response.body()).exact().unwrap_or(0) as usize;
    let latency = started.elapsed();
    state
        .metrics
        .record(exchange.operation, response.status().as_u16(), latency, bytes);
    let outcome = Outcome {
        operation: exchange.operation,
        caller: exchange.caller,
        bytes,
        latency,
    };
    (response, outcome)
}

/// A client's `X-Request-ID` is echoed when it is 1 to 128 visible ASCII characters.
fn valid_request_id(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    (1..=128).contains(&bytes.len()) && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
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
        let quality = pieces
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(quality);
        } else if name == "*" {
            any = Some(quality);
        }
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

fn openapi_etag() -> &'static str {
    static ETAG: OnceLock<String> = OnceLock::new();
    ETAG.get_or_init(|| etag_of(OPENAPI_JSON))
}

impl<B> Exchange<'_, B> {
    fn dispatch(&mut self) -> Result<Response, ApiError> {
        let path = self.request.uri().path();
        let route = route(path);
        self.operation = route.operation;
        let method = self.request.method();
        if method != Method::GET && method != Method::HEAD {
            let shown: String = method.as_str().chars().take(32).collect();
            return Err(ApiError::MethodNotAllowed(shown));
        }
        match route.operation {
            Operation::Healthz => Ok(self.respond(
                StatusCode::OK,
                Bytes::from_static(b"{\"status\":\"ok\"}"),
                JSON,
                None,
                Cache::NoStore,
                false,
            )),
            Operation::Readyz => Ok(self.readyz()),
            Operation::Metrics => Ok(self.respond(
                StatusCode::OK,
                Bytes::from(self.state.metrics_text()),
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                None,
                Cache::NoStore,
                false,
            )),
            Operation::OpenApi => {
                self.no_parameters()?;
                let etag = openapi_etag();
                Ok(self.conditional(etag, header_value(etag), Cache::Public, false, || {
                    Bytes::from_static(OPENAPI_JSON)
                }))
            }
            Operation::SigningKeys | Operation::Scorecard => {
                self.no_parameters()?;
                let loaded = self.loaded()?;
                let index = loaded.snapshot.index();
                let body = if route.operation == Operation::SigningKeys {
                    &index.signing_keys
                } else {
                    &index.scorecard
                };
                Ok(self.stored(&loaded, body, Cache::Public))
            }
            Operation::Unknown => Err(ApiError::NotFound(
                "No resource at this path. The API is under /v1; see /v1/openapi.json.".into(),
            )),
            _ => self.api(route.operation, route.slug),
        }
    }

    fn api(&mut self, operation: Operation, slug: Option<&str>) -> Result<Response, ApiError> {
        let caller = self.authenticate()?;
        let decision = self.state.limiter.take(&caller.key_id, caller.rate_per_min, self.now);
        self.caller = Some(caller.clone());
        self.decision = Some(decision);
        if !decision.allowed {
            self.state.metrics.rate_limited.fetch_add(1, Relaxed);
            return Err(ApiError::RateLimited {
                retry_after: decision.retry_after,
            });
        }
        let loaded = self.loaded()?;
        let index = loaded.snapshot.index();
        match operation {
            Operation::ListCompanies => {
                require(&caller, Scope::CompaniesList)?;
                let params = Params::parse(self.request.uri().query(), LIST_PARAMS)?;
                let query = ListQuery::from_params(&params)?;
                let (universe, note) = if caller.tier.limited_universe() {
                    let note = format!(
                        "The free tier lists the 10 companies with the highest latest value_usd; \
                         Research and above list all {} companies.",
                        index.companies.len()
                    );
                    (UNIVERSE_FREE, Some(note))
                } else {
                    (UNIVERSE_ALL, None)
                };
                let cursor_key = &self.state.cursor_key;
                let page = list::Page::place(&loaded, &query, universe, cursor_key)?;
                let etag = list_etag(&loaded, cursor_key, universe, self.request.uri().query().unwrap_or(""));
                Ok(self.conditional(&etag, header_value(&etag), Cache::Private, false, || {
                    page.render(cursor_key, note.as_deref())
                }))
            }
            Operation::GetCompany => {
                require(&caller, Scope::CompaniesRead)?;
                self.no_parameters()?;
                let company = self.company(&loaded, slug, &caller)?;
                Ok(self.stored(&loaded, &company.profile, Cache::Private))
            }
            Operation::GetMarkSeries => {
                require(&caller, Scope::Marks80)?;
                let params = Params::parse(self.request.uri().query(), &["coverage"])?;
                let coverage = query::coverage(&params)?;
                if coverage == 95 {
                    require(&caller, Scope::Marks95)?;
                }
                let company = self.company(&loaded, slug, &caller)?;
                let body = if coverage == 95 {
                    &company.marks_95
                } else {
                    &company.marks_80
                };
                Ok(self.stored(&loaded, body, Cache::Private))
            }
            Operation::GetMarkEvents => {
                require(&caller, Scope::EventsRead)?;
                self.no_parameters()?;
                let company = self.company(&loaded, slug, &caller)?;
                Ok(self.stored(&loaded, &company.events, Cache::Private))
            }
            Operation::GetResolution => {
                require(&caller, Scope::ResolutionRead)?;
                self.no_parameters()?;
                let company = self.company(&loaded, slug, &caller)?;
                Ok(self.stored(&loaded, &company.resolution, Cache::Private))
            }
            Operation::GetUsage => {
                require(&caller, Scope::UsageRead)?;
                self.no_parameters()?;
                let position = Tier::ALL.iter().position(|&t| t == caller.tier).unwrap_or(0);
                match index.usage.get(position) {
                    Some(body) if !caller.custom_rate => Ok(self.stored(&loaded, body, Cache::Private)),
                    _ => {
                        // A key with its own budget: its usage body is not in the snapshot.
                        let body = marks_builder::tiers::usage_body(&loaded.meta, caller.tier, caller.rate_per_min);
                        let etag = etag_of(&body);
                        Ok(self.conditional(&etag, header_value(&etag), Cache::Private, false, || Bytes::from(body)))
                    }
                }
            }
            _ => Err(ApiError::Internal),
        }
    }

    /// The caller behind `X-API-Key`, with failed attempts throttled per client IP.
    fn authenticate(&mut self) -> Result<Arc<Caller>, ApiError> {
        let state = self.state;
        let limit = state.settings.auth_failures_per_min;
        let client = self.client_ip();
        // Past the failure budget the key is not even looked at, so guessing gains nothing.
        let standing = state.auth_failures.peek(&client, limit, self.now);
        if !standing.allowed {
            return Err(self.auth_throttled(standing));
        }
        let error = match (self.asked.api_key, self.asked.api_key_repeated) {
            (None, _) => ApiError::MissingApiKey,
            (Some(value), false) => {
                let keys = state.keys();
                let remembered = &mut self.connection.key;
                match value.to_str().map(|key| keys.authenticate_remembering(key, remembered)) {
                    Ok(Some(caller)) => return Ok(caller),
                    Ok(None) | Err(_) => ApiError::InvalidApiKey,
                }
            }
            (Some(_), true) => ApiError::InvalidApiKey,
        };
        let decision = state.auth_failures.take(&client, limit, self.now);
        if decision.allowed {
            Err(error)
        } else {
            Err(self.auth_throttled(decision))
        }
    }

    fn auth_throttled(&mut self, decision: Decision) -> ApiError {
        self.state.metrics.auth_throttled.fetch_add(1, Relaxed);
        self.auth_throttle = Some(decision);
        ApiError::RateLimited {
            retry_after: decision.retry_after,
        }
    }

    /// The address failed authentication is counted against: the TCP peer, or behind a proxy
    /// the last address in the header that proxy appends (`--client-ip-header`); a client can
    /// put anything in that header itself, but not after what the proxy appends.
    fn client_ip(&self) -> IpAddr {
        let Some(name) = &self.state.settings.client_ip_header else {
            return self.peer;
        };
        self.request
            .headers()
            .get_all(name)
            .iter()
            .next_back()
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.rsplit(',').next())
            .and_then(|last| last.trim().parse().ok())
            .unwrap_or(self.peer)
    }

    fn loaded(&self) -> Result<Arc<LoadedSnapshot>, ApiError> {
        self.state
            .snapshot()
            .ok_or_else(|| ApiError::Unavailable("No dataset is loaded yet; retry shortly.".into()))
    }

    fn no_parameters(&self) -> Result<(), ApiError> {
        Params::parse(self.request.uri().query(), &[]).map(|_| ())
    }

    fn company<'s>(
        &self,
        loaded: &'s LoadedSnapshot,
        raw_slug: Option<&str>,
        caller: &Caller,
    ) -> Result<&'s ArchivedCompanyEntry, ApiError> {
        let raw_slug = raw_slug.unwrap_or("");
        // Slugs are plain ASCII: decoding is for the rare client that escapes them anyway.
        let slug = if raw_slug.contains('%') {
            percent_encoding::percent_decode_str(raw_slug)
                .decode_utf8()
                .map_err(|_| ApiError::NotFound("No company has this slug.".into()))?
        } else {
            Cow::Borrowed(raw_slug)
        };
        let index = loaded.snapshot.index();
        let shown = || slug.chars().take(64).collect::<String>();
        let (position, company) = index
            .company(&slug)
            .ok_or_else(|| ApiError::NotFound(format!("No company has the slug {:?}.", shown())))?;
        if caller.tier.limited_universe() {
            let free = index.list(0, UNIVERSE_FREE, 0, 0);
            if !free.iter().any(|row| row.to_native() as usize == position) {
                return Err(ApiError::TierForbidden(format!(
                    "The free tier covers the 10 companies with the highest latest value; {:?} needs the {} tier or above.",
                    shown(),
                    Tier::Research
                )));
            }
        }
        Ok(company)
    }

    /// A stored body, in the encoding the client prefers, or 304 if it has it already.
    fn stored(&mut self, loaded: &LoadedSnapshot, body: &ArchivedBody, cache: Cache) -> Response {
        let gzip = body
            .gzip
            .as_ref()
            .filter(|_| self.asked.accept_encoding && accepts_gzip(self.request.headers()));
        let vary_encoding = body.gzip.is_some();
        let (bytes, etag) = match gzip {
            Some(encoded) => (loaded.snapshot.body(&encoded.bytes), encoded.etag.as_str()),
            None => (loaded.snapshot.body(&body.identity), body.etag.as_str()),
        };
        // The tag's bytes live in the mapped file too: the header borrows them, no copy.
        let etag_value = HeaderValue::from_maybe_shared(loaded.snapshot.file_slice(etag.as_bytes()))
            .unwrap_or_else(|_| header_value(etag));
        let mut response = self.conditional(etag, etag_value, cache, vary_encoding, || bytes);
        if gzip.is_some() && response.status() == StatusCode::OK {
            response.headers_mut().insert(header::CONTENT_ENCODING, GZIP);
        }
        response
    }

    /// 200 with the body, or 304 when `If-None-Match` matches its ETag, in which case the body
    /// is never made (a list page is not rendered to be revalidated).
    fn conditional(
        &mut self,
        etag: &str,
        etag_value: HeaderValue,
        cache: Cache,
        vary_encoding: bool,
        body: impl FnOnce() -> Bytes,
    ) -> Response {
        let (status, body) = if self.asked.if_none_match && if_none_match(self.request.headers(), etag) {
            (StatusCode::NOT_MODIFIED, Bytes::new())
        } else {
            (StatusCode::OK, body())
        };
        self.respond(status, body, JSON, Some(etag_value), cache, vary_encoding)
    }

    /// The response with every header it carries: the type, cache policy, ETag and `Vary` of
    /// the body, the request id, and the rate-limit headers of the budget it was metered
    /// against.
    fn respond(
        &mut self,
        status: StatusCode,
        body: Bytes,
        content_type: HeaderValue,
        etag: Option<HeaderValue>,
        cache: Cache,
        vary_encoding: bool,
    ) -> Response {
        let head = self.request.method() == Method::HEAD;
        let length = body.len();
        let with_body = status != StatusCode::NOT_MODIFIED && !head;
        let mut response = Response::new(Full::new(if with_body { body } else { Bytes::new() }));
        *response.status_mut() = status;
        let budget = self.budget();
        let request_id = self.request_id.clone();
        let headers = response.headers_mut();
        match (&self.caller, budget, etag) {
            // A metered answer from the snapshot, nearly every request: the key's prebuilt block.
            (Some(caller), Some(budget), Some(etag)) if cache == Cache::Private && content_type == JSON => {
                let values = MeteredValues {
                    etag,
                    request_id,
                    remaining: budget.remaining,
                    reset: budget.reset,
                    ratelimit: budget.ratelimit,
                };
                *headers = caller.head.fill(vary_encoding, values);
                if status == StatusCode::NOT_MODIFIED {
                    headers.remove(header::CONTENT_TYPE);
                }
            }
            (caller, budget, etag) => {
                // Room for every header, so the map never grows and rehashes.
                headers.reserve(12);
                if status != StatusCode::NOT_MODIFIED {
                    headers.insert(header::CONTENT_TYPE, content_type);
                }
                if let Some(etag) = etag {
                    headers.insert(header::ETAG, etag);
                }
                let (cache_control, vary) = match (cache, vary_encoding) {
                    (Cache::Private, false) => (PRIVATE_NO_CACHE, Some(VARY_KEY)),
                    (Cache::Private, true) => (PRIVATE_NO_CACHE, Some(VARY_KEY_ENCODING)),
                    (Cache::Public, false) => (PUBLIC_MAX_AGE_60, None),
                    (Cache::Public, true) => (PUBLIC_MAX_AGE_60, Some(VARY_ENCODING)),
                    (Cache::NoStore, _) => (NO_STORE, None),
                };
                headers.insert(header::CACHE_CONTROL, cache_control);
                if let Some(vary) = vary {
                    headers.insert(header::VARY, vary);
                }
                headers.insert(X_REQUEST_ID, request_id);
                if let Some(budget) = budget {
                    let limits = budget.throttle_limits.or_else(|| {
                        caller
                            .as_ref()
                            .map(|caller| (caller.limit_header.clone(), caller.policy_header.clone()))
                    });
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
        if head && status != StatusCode::NOT_MODIFIED {
            // What a GET would have sent.
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        }
        response
    }

    /// The budget this request was metered against: the key's, or, when no key was accepted
    /// and the client's address was refused, that address's failed-authentication budget.
    fn budget(&mut self) -> Option<Budget> {
        let text = &mut self.composed;
        let (decision, name, throttle_limits) = match (self.decision, self.caller.as_ref(), self.auth_throttle) {
            (Some(decision), Some(_), _) => (decision, MINUTE_POLICY, None),
            (_, _, Some(decision)) => {
                let policy = text.policy(AUTH_FAILURES_POLICY, decision.limit);
                (
                    decision,
                    AUTH_FAILURES_POLICY,
                    Some((HeaderValue::from(decision.limit), policy)),
                )
            }
            _ => return None,
        };
        let reset_at = epoch_seconds(SystemTime::now()) + decision.reset_after;
        Some(Budget {
            remaining: text.number(decision.remaining.into()),
            reset: text.number(reset_at),
            ratelimit: text.ratelimit(name, decision.remaining, decision.reset_after),
            throttle_limits,
        })
    }

    fn readyz(&mut self) -> Response {
        let loaded = self.state.snapshot();
        let refusal = self.state.last_snapshot_refusal().map(|r| {
            serde_json::json!({
                "at": epoch_seconds(r.at),
                "file": r.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                "reason": r.reason,
            })
        });
        let keys_refusal = self
            .state
            .last_keys_refusal()
            .map(|r| serde_json::json!({ "at": epoch_seconds(r.at), "reason": r.reason }));
        let (status, body) = match &loaded {
            Some(loaded) => {
                let header = loaded.snapshot.header();
                (
                    StatusCode::OK,
                    serde_json::json!({
                        "status": "ready",
                        "dataset_version": header.dataset_version,
                        "methodology_version": header.methodology_version,
                        "as_of": header.as_of,
                        "loaded_at": epoch_seconds(loaded.loaded_at),
                        "companies": loaded.snapshot.index().companies.len(),
                        "last_refusal": refusal,
                        "last_keys_refusal": keys_refusal,
                    }),
                )
            }
            None => (
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({
                    "status": "not_ready",
                    "last_refusal": refusal,
                    "last_keys_refusal": keys_refusal,
                }),
            ),
        };
        let bytes = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
        self.respond(status, bytes, JSON, None, Cache::NoStore, false)
    }

    fn problem(&mut self, error: &ApiError) -> Response {
        let body = error.body(
            &self.state.settings.public_base_url,
            self.request.uri().path(),
            self.request_id.to_str().unwrap_or(""),
        );
        let mut response = self.respond(
            error.status(),
            Bytes::from(body),
            PROBLEM_JSON,
            None,
            Cache::NoStore,
            false,
        );
        let headers = response.headers_mut();
        match error {
            ApiError::MethodNotAllowed(_) => {
                headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            }
            ApiError::RateLimited { retry_after } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            _ => {}
        }
        response
    }
}

fn require(caller: &Caller, scope: Scope) -> Result<(), ApiError> {
    if caller.tier.allows(scope) {
        return Ok(());
    }
    let needed = Tier::lowest_with(scope);
    let what = match scope {
        Scope::Marks95 => "coverage 95".to_string(),
        other => format!("the {} scope", other.as_str()),
    };
    Err(ApiError::TierForbidden(format!(
        "Your key's tier ({}) does not include {what}; it needs the {needed} tier or above.",
        caller.tier
    )))
}

/// A list page's ETag: its bytes are a function of the snapshot, the cursor key (its
/// `next_cursor`), the universe and the query string, so hashing those names them without
/// rendering the page.
fn list_etag(loaded: &LoadedSnapshot, cursor_key: &CursorKey, universe: u8, query: &str) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::with_seed(loaded.etag_seed);
    hasher.update(&cursor_key.fingerprint().to_le_bytes());
    hasher.update(&[universe]);
    hasher.update(query.as_bytes());
    format!("\"{:016x}\"", hasher.digest())
}
