//! The service: one request in, one response out, as a plain function over the shared `State`.
//!
//! `handle` is what the HTTP server calls for every request, and what benches and tests call
//! without a socket. It never panics on client input, never reads a request body, never
//! renders a stored body again.
//!
//! The steps of a request, in order, all in `Exchange::answer` and `Exchange::metered`:
//! the server's budget of HTTP/2 streams (503), method (405), route (404; the unmetered
//! documents are answered here), key (`access`: 401,
//! or 429 when a failing attempt's address has failed too often), budget (429; every request
//! reaching a valid key spends one unit), snapshot (503), then the operation itself
//! (`operations`: scope 403, parameters 422, resource 404 or 403 outside the free universe,
//! conditional request 304), and finally the response (`response::Representation`).
//!
//! Budgets are this process's token buckets, or with `--budget-store` the shared store's
//! (`budgets::shared`). Asking the store is the one step that waits, so the request path stays a
//! plain function: [`exchange`] stops at the budget step with a [`StoreAsk`], the server asks
//! the store, and the same request is answered again with the store's answer
//! ([`Budgeting::Answered`]).

pub mod access;
pub mod call;
pub mod changes;
pub mod cursor;
pub mod indices;
pub mod list;
pub mod metrics;
pub mod operations;
pub mod query;
pub mod routes;
pub mod rows;
pub mod state;

use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request};

use crate::api::access::PresentedKey;
use crate::api::call::Call;
use crate::api::routes::{route, Operation};
use crate::api::state::State;
use crate::budgets::local::Decision;
use crate::budgets::shared::Bucket;
use crate::keys::ring::{Caller, RememberedKey};
use crate::response::headers::{
    Composed, Composition, MadeRequestId, Part, AUTH_FAILURES_POLICY, MINUTE_POLICY, PROBLEM_JSON, RATELIMIT,
    RATELIMIT_POLICY, X_RATELIMIT_LIMIT, X_RATELIMIT_REMAINING, X_RATELIMIT_RESET, X_REQUEST_ID,
};
use crate::response::problem::ApiError;
use crate::response::{Budget, Metering, Negotiation, Representation};
use crate::snapshot::{epoch_seconds, LoadedSnapshot};

pub use crate::response::Response;

const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");

/// The request headers the service reads, found in one walk over the few headers a request
/// carries instead of a hashed lookup each (`benches/lab/instructions.sh` measures it).
/// `If-None-Match` and `Accept-Encoding` are only noted here; when present, their values are
/// read where they are compared.
#[derive(Debug, Default)]
struct RequestHeaders<'r> {
    api_key: PresentedKey<'r>,
    request_id: Option<&'r HeaderValue>,
    if_none_match: bool,
    accept_encoding: bool,
    accept: bool,
}

impl<'r> RequestHeaders<'r> {
    fn of(headers: &'r HeaderMap) -> RequestHeaders<'r> {
        let mut asked = RequestHeaders::default();
        for (name, value) in headers {
            if name == header::IF_NONE_MATCH {
                asked.if_none_match = true;
            } else if name == header::ACCEPT_ENCODING {
                asked.accept_encoding = true;
            } else if name == header::ACCEPT {
                asked.accept = true;
            } else if name == X_API_KEY {
                asked.api_key = match asked.api_key {
                    PresentedKey::Missing => PresentedKey::One(value),
                    _ => PresentedKey::Repeated,
                };
            } else if name == X_REQUEST_ID && asked.request_id.is_none() {
                asked.request_id = Some(value);
            }
        }
        asked
    }
}

/// What the service keeps from one request of a connection to the next.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    key: RememberedKey,
}

/// One request being answered, and what was learnt about it on the way.
struct Exchange<'a, B> {
    state: &'a State,
    request: &'a Request<B>,
    peer: IpAddr,
    asked: RequestHeaders<'a>,
    connection: &'a mut Connection,
    /// Read once per request; the budgets and the latency metric share it.
    now: Instant,
    operation: Operation,
    caller: Option<Arc<Caller>>,
    budgeting: Budgeting,
    decision: Option<Decision>,
    /// Set when the client address's failed-authentication budget refused the request.
    auth_throttle: Option<Decision>,
    /// The client's `X-Request-ID`, or one made for it.
    request_id: RequestId,
}

impl<'a, B> Exchange<'a, B> {
    /// A request at its first step: its headers read, its request id decided.
    fn new(
        state: &'a State,
        request: &'a Request<B>,
        peer: IpAddr,
        connection: &'a mut Connection,
        budgeting: Budgeting,
        now: Instant,
    ) -> Exchange<'a, B> {
        let asked = RequestHeaders::of(request.headers());
        let request_id = request_id(state, asked.request_id);
        Exchange {
            state,
            request,
            peer,
            asked,
            connection,
            now,
            operation: Operation::Unknown,
            caller: None,
            budgeting,
            decision: None,
            auth_throttle: None,
            request_id,
        }
    }
}

/// The access-log facts of a request, returned alongside the response.
#[derive(Debug)]
pub struct Outcome {
    pub operation: Operation,
    /// The id the answer carries (`X-Request-ID`).
    pub request_id: RequestId,
    /// The key the request was answered for, if one was accepted.
    pub caller: Option<Arc<Caller>>,
    /// Body bytes sent.
    pub bytes: usize,
    /// Time spent in the handler.
    pub latency: std::time::Duration,
}

/// Where a request's budget is decided.
#[derive(Clone, Debug, Default)]
pub enum Budgeting {
    /// This process's token buckets: without `--budget-store`, and while the store is unavailable.
    #[default]
    Local,
    /// The shared store's: the request stops at its budget step with a [`StoreAsk`] (unless a
    /// recent refusal of the same bucket answers it). Without a store, the same as `Local`.
    Shared,
    /// The store's answer for a bucket, for the request answered again; `None`: the store did
    /// not answer, and this process's buckets decide.
    Answered(Bucket, Option<Decision>),
}

impl Budgeting {
    /// How a new request is budgeted: by the shared store when the server has one.
    pub fn of(state: &State) -> Budgeting {
        if state.budgets.shared.is_some() {
            Budgeting::Shared
        } else {
            Budgeting::Local
        }
    }
}

/// A request waiting for the shared store to spend a unit of `bucket`.
#[derive(Debug)]
pub struct StoreAsk {
    pub bucket: Bucket,
    pub limit: u32,
    /// When the request arrived: its latency counts the wait for the store.
    pub started: Instant,
}

/// Answers a request that stopped to ask the shared store, once the store has answered (or
/// failed to in time).
pub async fn answer_with_store<B>(
    state: &State,
    request: &Request<B>,
    peer: IpAddr,
    connection: &mut Connection,
    mut ask: StoreAsk,
) -> (Response, Outcome) {
    loop {
        let decision = match &state.budgets.shared {
            Some(store) => store.spend(&ask.bucket, ask.limit).await,
            None => None,
        };
        let budgeting = Budgeting::Answered(ask.bucket, decision);
        match exchange(state, request, peer, connection, budgeting, ask.started) {
            Step::Answered(response, outcome) => return (response, outcome),
            // An answered request asks again only if it reached a different bucket (a keys
            // reload in between): ask for that one.
            Step::AskStore(next) => ask = next,
        }
    }
}

/// Answers one request the way the server does, budgets in the shared store included, for a
/// caller inside this process (the MCP tools hosted at `/mcp`).
pub async fn answer<B>(state: &State, request: &Request<B>, peer: IpAddr) -> (Response, Outcome) {
    let mut connection = Connection::default();
    match exchange(
        state,
        request,
        peer,
        &mut connection,
        Budgeting::of(state),
        Instant::now(),
    ) {
        Step::Answered(response, outcome) => (response, outcome),
        Step::AskStore(ask) => answer_with_store(state, request, peer, &mut connection, ask).await,
    }
}

/// Answers an API call made on behalf of a request that has already spent its unit of
/// `key_id`'s budget (a tool called through `/mcp`, whose POST was metered): the budget step
/// takes that unit's `decision` for the same key instead of spending a second one. A call under
/// another key (the keys file reloaded in between) is metered as usual.
pub async fn answer_prepaid<B>(
    state: &State,
    request: &Request<B>,
    peer: IpAddr,
    key_id: Arc<str>,
    decision: Decision,
) -> (Response, Outcome) {
    let mut connection = Connection::default();
    let budgeting = Budgeting::Answered(Bucket::Key(key_id), Some(decision));
    match exchange(state, request, peer, &mut connection, budgeting, Instant::now()) {
        Step::Answered(response, outcome) => (response, outcome),
        Step::AskStore(ask) => answer_with_store(state, request, peer, &mut connection, ask).await,
    }
}

/// Spends one unit of `caller`'s budget for a request that is not an API call (`/mcp`), where
/// the API spends it: the shared store's buckets with `--budget-store` (this process's while
/// the store does not answer), else this process's.
pub async fn spend_one(state: &State, caller: &Caller) -> Decision {
    let now = Instant::now();
    let limit = caller.rate_per_min;
    if let Some(store) = &state.budgets.shared {
        let bucket = Bucket::Key(caller.key_id.clone());
        let known = store
            .noted_denial(&bucket, now)
            .or_else(|| store.take_leased(&bucket, limit, now));
        let decision = match known {
            Some(decision) => Some(decision),
            None => store.spend(&bucket, limit).await,
        };
        if let Some(decision) = decision {
            return decision;
        }
    }
    state.budgets.local.take(&caller.key_id, limit, now)
}

/// The answer to a request that is not an API call (`/mcp`) whose key has spent its budget:
/// 429 `rate_limited` with `Retry-After` and the rate-limit headers, as the API answers it.
pub fn budget_spent<B>(
    state: &State,
    request: &Request<B>,
    peer: IpAddr,
    operation: Operation,
    caller: Arc<Caller>,
    decision: Decision,
) -> Response {
    state.metrics.rate_limited.fetch_add(1, Relaxed);
    let mut connection = Connection::default();
    let mut exchange = Exchange::new(state, request, peer, &mut connection, Budgeting::Local, Instant::now());
    exchange.operation = operation;
    exchange.caller = Some(caller);
    exchange.decision = Some(decision);
    exchange.problem(&ApiError::RateLimited {
        retry_after: decision.retry_after,
    })
}

/// The rate-limit headers of the unit `caller` spent (`decision`), for an answer made outside
/// the request path (`/mcp`'s), so an agent sees its budget as an API client does.
pub fn insert_rate_limit_headers(caller: &Caller, decision: Decision, headers: &mut HeaderMap) {
    let mut text = Composed::new();
    let Some(parts) = budget(&mut text, Some(decision), true, None) else {
        return;
    };
    let composed = text.finish();
    let values = parts.values(&composed);
    headers.insert(X_RATELIMIT_LIMIT, caller.headers.limit.clone());
    headers.insert(RATELIMIT_POLICY, caller.headers.policy.clone());
    headers.insert(X_RATELIMIT_REMAINING, values.remaining);
    headers.insert(X_RATELIMIT_RESET, values.reset);
    headers.insert(RATELIMIT, values.ratelimit);
}

/// Whether a request that is not an API call (the `/mcp` endpoint) carries a key in force:
/// its caller, or the response to send instead: 401 for a missing or unknown key, 429 past
/// the address's failed-authentication budget, counted as the API counts them (with this
/// process's buckets). Nothing is spent here for a valid key: the caller spends its unit
/// with [`spend_one`].
pub fn admit<B>(
    state: &State,
    request: &Request<B>,
    peer: IpAddr,
    operation: Operation,
) -> Result<Arc<Caller>, Box<Response>> {
    let mut connection = Connection::default();
    let mut exchange = Exchange::new(state, request, peer, &mut connection, Budgeting::Local, Instant::now());
    exchange.operation = operation;
    match access::authenticate(state, exchange.asked.api_key, &mut exchange.connection.key) {
        Ok(caller) => Ok(caller),
        Err(error) => {
            let error = match exchange.failed_authentication(error) {
                Stop::Problem(error) => error,
                Stop::AskStore(..) => ApiError::Internal,
            };
            Err(Box::new(exchange.problem(&error)))
        }
    }
}

/// Answers one request, as the first of its connection, with this process's buckets.
pub fn handle<B>(state: &State, request: &Request<B>, peer: IpAddr) -> Response {
    handle_with_outcome(state, request, peer, &mut Connection::default()).0
}

/// Answers one request of `connection` with this process's buckets and reports what it was,
/// for the access log.
pub fn handle_with_outcome<B>(
    state: &State,
    request: &Request<B>,
    peer: IpAddr,
    connection: &mut Connection,
) -> (Response, Outcome) {
    let mut budgeting = Budgeting::Local;
    let started = Instant::now();
    loop {
        match exchange(state, request, peer, connection, budgeting, started) {
            Step::Answered(response, outcome) => return (response, outcome),
            // Only `Budgeting::Shared` asks; with no store to ask, the local buckets decide.
            Step::AskStore(ask) => budgeting = Budgeting::Answered(ask.bucket, None),
        }
    }
}

/// Answers one request of `connection`, or stops at its budget step to ask the shared store.
pub fn exchange<B>(
    state: &State,
    request: &Request<B>,
    peer: IpAddr,
    connection: &mut Connection,
    budgeting: Budgeting,
    started: Instant,
) -> Step {
    let mut exchange = Exchange::new(state, request, peer, connection, budgeting, started);
    let response = match exchange.answer() {
        Ok(representation) => exchange.respond(representation),
        Err(Stop::Problem(error)) => exchange.problem(&error),
        Err(Stop::AskStore(bucket, limit)) => return Step::AskStore(StoreAsk { bucket, limit, started }),
    };
    let bytes = hyper::body::Body::size_hint(response.body()).exact().unwrap_or(0) as usize;
    let latency = started.elapsed();
    state
        .metrics
        .record(exchange.operation, response.status().as_u16(), latency, bytes);
    let outcome = Outcome {
        operation: exchange.operation,
        request_id: exchange.request_id,
        caller: exchange.caller,
        bytes,
        latency,
    };
    Step::Answered(response, outcome)
}

/// Where one pass over a request's steps ended.
#[derive(Debug)]
pub enum Step {
    /// The response, and what it was for the access log.
    Answered(Response, Outcome),
    /// Stopped at the budget step: ask the shared store, then pass over the request again with
    /// its answer ([`Budgeting::Answered`]).
    AskStore(StoreAsk),
}

/// Why a request's steps stopped before its representation.
enum Stop {
    Problem(ApiError),
    /// The budget step needs the shared store's answer for this bucket and limit.
    AskStore(Bucket, u32),
}

impl From<ApiError> for Stop {
    fn from(error: ApiError) -> Stop {
        Stop::Problem(error)
    }
}

/// The id an answer carries: the client's `X-Request-ID` (`asked`) when it is usable, else a
/// new one.
pub(crate) fn request_id(state: &State, asked: Option<&HeaderValue>) -> RequestId {
    match asked {
        Some(value) if valid_request_id(value) => RequestId::Given(value.clone()),
        _ => RequestId::Made(MadeRequestId::new(state.next_request_id())),
    }
}

/// The id an answer carries (`X-Request-ID`).
#[derive(Clone, Debug)]
pub enum RequestId {
    /// A header value already made: the client's own id, echoed.
    Given(HeaderValue),
    /// Made by this server, composed into the answer's headers with its other values.
    Made(MadeRequestId),
}

impl RequestId {
    pub fn as_str(&self) -> &str {
        match self {
            RequestId::Given(value) => value.to_str().unwrap_or(""),
            RequestId::Made(id) => id.as_str(),
        }
    }

    /// The id written into `text`, to be taken from its [`Composition`] with
    /// [`RequestId::composed`]; a given id needs no room.
    fn compose(&self, text: &mut Composed) -> Option<Part> {
        match self {
            RequestId::Given(_) => None,
            RequestId::Made(id) => Some(text.request_id(id)),
        }
    }

    /// The id as a header value, from `composition` where [`RequestId::compose`] put it.
    fn composed(&self, composition: &Composition, part: Option<Part>) -> HeaderValue {
        match (self, part) {
            (RequestId::Made(_), Some(part)) => composition.changing(part),
            _ => self.header_value(),
        }
    }

    /// The id as a header value on its own.
    pub fn header_value(&self) -> HeaderValue {
        match self {
            RequestId::Given(value) => value.clone(),
            RequestId::Made(id) => {
                let mut text = Composed::new();
                let part = text.request_id(id);
                text.finish().changing(part)
            }
        }
    }
}

/// A client's `X-Request-ID` is echoed when it is 1 to 128 visible ASCII characters.
fn valid_request_id(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    (1..=128).contains(&bytes.len()) && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
}

impl<'a, B> Exchange<'a, B> {
    fn answer(&mut self) -> Result<Representation, Stop> {
        let request = self.request;
        let route = route(request.uri().path());
        self.operation = route.operation;
        // Once: a request answered again after the shared store already passed this step, its
        // own stream among those counted.
        let first_pass = !matches!(self.budgeting, Budgeting::Answered(..));
        if first_pass && request.version() == http::Version::HTTP_2 && self.state.budgets.streams.refuses_another() {
            return Err(ApiError::Unavailable(format!(
                "The server holds its limit of {} HTTP/2 streams; retry shortly.",
                self.state.budgets.streams.limit()
            ))
            .into());
        }
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            let shown: String = method.as_str().chars().take(32).collect();
            return Err(ApiError::MethodNotAllowed(shown).into());
        }
        let negotiation = Negotiation {
            headers: request.headers(),
            if_none_match: self.asked.if_none_match,
            accept_encoding: self.asked.accept_encoding,
            accept: self.asked.accept,
            head: method == Method::HEAD,
        };
        let query = request.uri().query();
        match route.operation {
            Operation::Healthz => Ok(operations::healthz()),
            Operation::Readyz => Ok(operations::readyz(self.state)),
            Operation::Metrics => Ok(operations::metrics(self.state)),
            Operation::OpenApi => Ok(operations::openapi(query, &negotiation)?),
            // The scorecard without a key is the public form; with one, a metered call answered
            // in the form the key's tier may read.
            Operation::SigningKeys | Operation::Scorecard | Operation::ScorecardTargets
                if route.operation == Operation::SigningKeys || matches!(self.asked.api_key, PresentedKey::Missing) =>
            {
                Ok(operations::published(
                    route.operation,
                    self.state,
                    self.peer,
                    &*self.loaded()?,
                    query,
                    &negotiation,
                )?)
            }
            Operation::HomePage | Operation::ScorecardPage => Ok(operations::snapshot_page(
                route.operation,
                &*self.loaded()?,
                &negotiation,
            )),
            Operation::ExplorePage
            | Operation::ComparePage
            | Operation::IndicesPage
            | Operation::DocsPage
            | Operation::Asset
            | Operation::Document => Ok(operations::binary_page(
                route.operation,
                route.slug,
                request.uri().path(),
                &negotiation,
            )?),
            Operation::Unknown => Err(ApiError::NotFound(
                "No resource at this path. The API is under /v1; see /v1/openapi.json.".into(),
            )
            .into()),
            operation => self.metered(operation, route.slug, &negotiation),
        }
    }

    /// The steps of an operation that needs a key: who is asking, their budget, the snapshot,
    /// then the operation.
    fn metered(
        &mut self,
        operation: Operation,
        slug: Option<&str>,
        negotiation: &Negotiation<'_>,
    ) -> Result<Representation, Stop> {
        let state = self.state;
        let caller = match access::authenticate(state, self.asked.api_key, &mut self.connection.key) {
            Ok(caller) => caller,
            Err(error) => return Err(self.failed_authentication(error)),
        };
        self.caller = Some(caller.clone());
        let decision = self.spend(BucketOf::Key(&caller.key_id), caller.rate_per_min)?;
        self.decision = Some(decision);
        if !decision.allowed {
            state.metrics.rate_limited.fetch_add(1, Relaxed);
            return Err(ApiError::RateLimited {
                retry_after: decision.retry_after,
            }
            .into());
        }
        let loaded = self.loaded()?;
        Ok(operations::metered(
            operation,
            &Call {
                state,
                loaded: &loaded,
                caller: &caller,
                query: self.request.uri().query(),
                slug,
                negotiation,
            },
        )?)
    }

    /// A failing attempt spends a unit of its address's failure budget; past that budget it is
    /// refused with 429 instead of 401 (`access` gives the rule).
    fn failed_authentication(&mut self, error: ApiError) -> Stop {
        let state = self.state;
        let address = access::client_address(state, self.request.headers(), self.peer);
        let group = access::throttle_group(address);
        let decision = match self.spend(BucketOf::Address(group), state.access.auth_failures_per_min) {
            Ok(decision) => decision,
            Err(stop) => return stop,
        };
        if decision.allowed {
            return error.into();
        }
        state.metrics.auth_throttled.fetch_add(1, Relaxed);
        self.auth_throttle = Some(decision);
        ApiError::AuthThrottled {
            retry_after: decision.retry_after,
        }
        .into()
    }

    /// Spends one unit of a bucket: in this process, or (with `Budgeting::Shared`) by stopping
    /// to ask the store, unless the store refused the bucket so recently that it cannot have
    /// refilled.
    fn spend(&mut self, bucket: BucketOf<'_>, limit: u32) -> Result<Decision, Stop> {
        let state = self.state;
        match (&self.budgeting, &state.budgets.shared) {
            (Budgeting::Shared, Some(store)) => {
                let bucket = bucket.to_owned();
                // A refusal noted, or a token leased earlier: no round trip.
                match store
                    .noted_denial(&bucket, self.now)
                    .or_else(|| store.take_leased(&bucket, limit, self.now))
                {
                    Some(decision) => Ok(decision),
                    None => Err(Stop::AskStore(bucket, limit)),
                }
            }
            (Budgeting::Answered(asked, Some(decision)), _) if bucket.is(asked) => Ok(*decision),
            _ => Ok(match bucket {
                BucketOf::Key(key_id) => state.budgets.local.take(key_id, limit, self.now),
                BucketOf::Address(group) => state.budgets.auth_failures.take(&group, limit, self.now),
            }),
        }
    }

    fn loaded(&self) -> Result<Arc<LoadedSnapshot>, ApiError> {
        self.state
            .snapshot()
            .ok_or_else(|| ApiError::Unavailable("No dataset is loaded yet; retry shortly.".into()))
    }

    /// The response for `representation`, with this request's id and rate-limit headers.
    fn respond(&mut self, representation: Representation) -> Response {
        let head = self.request.method() == Method::HEAD;
        // The answer's own values, composed into one buffer and allocated once.
        let mut text = Composed::new();
        let request_id = self.request_id.compose(&mut text);
        let budget = budget(&mut text, self.decision, self.caller.is_some(), self.auth_throttle);
        let composed = text.finish();
        let metering = Metering {
            request_id: self.request_id.composed(&composed, request_id),
            budget_headers: self.caller.as_deref().map(|caller| &*caller.headers),
            budget: budget.map(|parts| parts.values(&composed)),
        };
        representation.into_response(head, metering)
    }

    fn problem(&mut self, error: &ApiError) -> Response {
        let body = error.body(
            &self.state.resolved.public_base_url,
            self.request.uri().path(),
            self.request_id.as_str(),
        );
        let representation = Representation::uncached(error.status(), Bytes::from(body), PROBLEM_JSON);
        let mut response = self.respond(representation);
        let headers = response.headers_mut();
        match error {
            ApiError::MethodNotAllowed(_) => {
                headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            }
            // For an export: the key's own download holds its place, or its last was cut.
            ApiError::RateLimited { retry_after }
            | ApiError::AuthThrottled { retry_after }
            | ApiError::ExportsAtOnce { retry_after, .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            // Every cause of a 503 passes within moments: a snapshot loading, a stream or
            // decoder freed.
            ApiError::Unavailable(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            ApiError::RangeNotSatisfiable { length } => {
                let unsatisfied = format!("bytes */{length}");
                headers.insert(header::CONTENT_RANGE, crate::response::header_value(&unsatisfied));
            }
            _ => {}
        }
        response
    }
}

/// A bucket as the budget step names it, borrowed: the local path never copies a key id.
#[derive(Clone, Copy)]
enum BucketOf<'a> {
    Key(&'a Arc<str>),
    Address(IpAddr),
}

impl BucketOf<'_> {
    fn to_owned(self) -> Bucket {
        match self {
            BucketOf::Key(key_id) => Bucket::Key(key_id.clone()),
            BucketOf::Address(group) => Bucket::Address(group),
        }
    }

    fn is(self, bucket: &Bucket) -> bool {
        match (self, bucket) {
            (BucketOf::Key(mine), Bucket::Key(theirs)) => mine == theirs,
            (BucketOf::Address(mine), Bucket::Address(theirs)) => mine == *theirs,
            _ => false,
        }
    }
}

/// The budget a request was metered against: the key's, or, when no key was accepted and the
/// client's address was refused, that address's failed-authentication budget; its values
/// written into `text`.
fn budget(
    text: &mut Composed,
    decision: Option<Decision>,
    has_caller: bool,
    auth_throttle: Option<Decision>,
) -> Option<BudgetParts> {
    let (decision, name, throttle_limits) = match (decision, has_caller, auth_throttle) {
        (Some(decision), true, _) => (decision, MINUTE_POLICY, None),
        (_, _, Some(decision)) => {
            let policy = text.policy(AUTH_FAILURES_POLICY, decision.limit);
            (decision, AUTH_FAILURES_POLICY, Some((decision.limit, policy)))
        }
        _ => return None,
    };
    let reset_at = epoch_seconds(SystemTime::now()) + decision.reset_after;
    Some(BudgetParts {
        remaining: text.number(decision.remaining.into()),
        reset: text.number(reset_at),
        ratelimit: text.ratelimit(name, decision.remaining, decision.reset_after),
        throttle_limits,
    })
}

/// Where [`budget`] wrote its values.
struct BudgetParts {
    remaining: Part,
    reset: Part,
    ratelimit: Part,
    /// A failed-authentication budget's limit and `RateLimit-Policy`.
    throttle_limits: Option<(u32, Part)>,
}

impl BudgetParts {
    fn values(self, composed: &Composition) -> Budget {
        Budget {
            remaining: composed.changing(self.remaining),
            reset: composed.value(self.reset),
            ratelimit: composed.changing(self.ratelimit),
            throttle_limits: self
                .throttle_limits
                .map(|(limit, policy)| (HeaderValue::from(limit), composed.value(policy))),
        }
    }
}
