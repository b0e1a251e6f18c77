//! `/mcp` (`marks serve --mcp`): the tools over MCP's streamable HTTP transport, rmcp's
//! server, answered in this process from the snapshot in force.
//!
//! Bounded like the rest of the server, each step here before the transport sees anything:
//! - **Keys.** A request without a key in force is refused (401, or 429 past the address's
//!   failed-authentication budget, as the API counts them).
//! - **Budget.** Every request with a key in force spends one unit of the key's budget, whatever
//!   it asks (initialize, a notification, tools/list, a tool call, a refusal below), where the
//!   API spends it (the shared store with `--budget-store`); a key whose budget is spent gets
//!   429 problem+json. The API call a tool makes spends nothing more: it takes that unit's
//!   decision (`api::answer_prepaid`), so each request is metered exactly once.
//! - **Origin.** A request with an `Origin` header must name one of `--mcp-allowed-origin`
//!   exactly (scheme, host and port, a port-less entry meaning the scheme's default; none by
//!   default, so every browser origin is refused, 403), against DNS rebinding. Matched here,
//!   not by the transport, whose own check lets a port-less entry match any port. The `Host`
//!   header is not checked: a public endpoint behind a balancer is reached under names this
//!   process cannot know, and the key decides access.
//! - **Bodies** are read here, whole, before the transport gets them: at most
//!   `--mcp-max-request-bytes` (413, at once when `Content-Length` says more), within half the
//!   head deadline (408), and a body that stops short (the client closed mid-body) is 400: a
//!   client's unfinished body is never a server error. The body must be one JSON-RPC message
//!   (400 for a batch, an array, or anything that is not one), so the transport is handed only
//!   what it reads.
//! - **No sessions.** The transport runs stateless (no `Mcp-Session-Id` is issued, every
//!   JSON-RPC POST is answered on its own, as JSON), so there is no session to cap per key or
//!   to expire: each request stands alone and is authenticated alone.
//! - **The log.** rmcp's own log lines quote what clients send, so `marks serve` turns them off
//!   (`cli/serve.rs`); this endpoint logs one line of its own where something is worth it, with
//!   any client text cut to a short escaped [`excerpt`].
//!
//! Every refusal, this module's and the transport's own (406, 415 in plain text), is answered as
//! the API's problem+json, so a client reads every refusal of this server the same way.
//! JSON-RPC errors stay JSON-RPC: they are the protocol's own answers.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Method, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Body, Incoming};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::api::routes::Operation;
use crate::api::state::State;
use crate::api::{self, access, Outcome, RequestId, Response};
use crate::budgets::local::Decision;
use crate::keys::ring::Caller;
use crate::mcp::{MarksTools, McpCall};
use crate::response::body::{Payload, ResponseBody};
use crate::response::headers::{NOSNIFF, NO_STORE, PROBLEM_JSON, X_REQUEST_ID};
use crate::response::problem::ApiError;
use crate::settings::{Agents, Origin};

/// The hosted tools and their transport.
pub struct McpEndpoint {
    state: Arc<State>,
    service: StreamableHttpService<MarksTools, NeverSessionManager>,
    allowed_origins: Vec<Origin>,
    max_body: usize,
    /// How long a request's body may take to arrive once its head has.
    body_deadline: Duration,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpEndpoint")
    }
}

/// Most characters of client text a log line carries.
const EXCERPT_CHARS: usize = 64;

impl McpEndpoint {
    /// Where it is answered.
    pub const PATH: &'static str = "/mcp";

    /// The endpoint under `agents`' settings. `head_deadline` is the connection's
    /// (`--header-read-timeout`): a body gets half of it, so that its 408 is answered before
    /// the connection's own deadline would cut an HTTP/1.1 connection without one.
    pub fn new(state: Arc<State>, agents: &Agents, head_deadline: Duration) -> McpEndpoint {
        // Origin and body size are this module's: the transport is given bodies already read
        // and checked, and no origin list of its own to judge by.
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(agents.mcp_max_request_bytes as usize);
        let tools_state = state.clone();
        let service = StreamableHttpService::new(
            move || Ok(MarksTools::in_process(tools_state.clone())),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        McpEndpoint {
            state,
            service,
            allowed_origins: agents.mcp_allowed_origin.clone(),
            max_body: agents.mcp_max_request_bytes as usize,
            body_deadline: head_deadline / 2,
        }
    }

    /// One request to `/mcp`.
    pub async fn answer(&self, request: hyper::Request<Incoming>, peer: SocketAddr) -> (Response, Outcome) {
        let started = Instant::now();
        let state = &*self.state;
        let caller = match api::admit(state, &request, peer.ip(), Operation::Mcp) {
            Ok(caller) => caller,
            Err(refusal) => return self.done(*refusal, None, started),
        };
        let decision = api::spend_one(state, &caller).await;
        if !decision.allowed {
            let refusal = api::budget_spent(state, &request, peer.ip(), Operation::Mcp, caller.clone(), decision);
            return self.done(refusal, Some(caller), started);
        }
        // The client's request id if it sent a usable one, as the API answers.
        let request_id = api::request_id(state, request.headers().get(X_REQUEST_ID));
        let mut response = match self.serve(request, peer, &caller, decision).await {
            Ok(response) => response,
            Err(error) => self.problem(&error, &request_id),
        };
        let headers = response.headers_mut();
        headers.insert(X_REQUEST_ID, request_id.header_value());
        headers.insert(header::X_CONTENT_TYPE_OPTIONS, NOSNIFF);
        headers.entry(header::CACHE_CONTROL).or_insert(NO_STORE);
        headers.insert(header::VARY, HeaderValue::from_static("X-API-Key, Origin"));
        api::insert_rate_limit_headers(&caller, decision, headers);
        self.done(response, Some(caller), started)
    }

    /// The steps after the budget: origin, method, media type, body, then the transport.
    async fn serve(
        &self,
        request: hyper::Request<Incoming>,
        peer: SocketAddr,
        caller: &Caller,
        decision: Decision,
    ) -> Result<Response, ApiError> {
        self.check_origin(request.headers(), caller)?;
        if request.method() != Method::POST {
            return Err(refused(
                StatusCode::METHOD_NOT_ALLOWED,
                "/mcp takes JSON-RPC messages as POST requests only (the transport is stateless: there is no \
                 event stream to GET)."
                    .into(),
            ));
        }
        check_content_type(request.headers())?;
        let address: IpAddr = access::client_address(&self.state, request.headers(), peer.ip());
        let (mut parts, body) = request.into_parts();
        let body = self.read_body(body, caller).await?;
        check_message(&body, caller)?;
        parts.extensions.insert(McpCall {
            peer: address,
            key_id: caller.key_id.clone(),
            decision,
        });
        let answer = self
            .service
            .handle(hyper::Request::from_parts(parts, Full::new(body)))
            .await;
        if is_transport_refusal(&answer) {
            return Err(transport_refusal(answer).await);
        }
        Ok(answer.map(ResponseBody::streamed))
    }

    /// A request from a browser page must come from an origin the operator allowed, matched
    /// exactly: scheme, host and port.
    fn check_origin(&self, headers: &HeaderMap, caller: &Caller) -> Result<(), ApiError> {
        let Some(value) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = value.to_str().ok().and_then(|text| Origin::parse(text).ok());
        if origin.is_some_and(|origin| self.allowed_origins.contains(&origin)) {
            return Ok(());
        }
        tracing::info!(
            key_id = %caller.key_id,
            origin = %excerpt(&String::from_utf8_lossy(value.as_bytes())),
            "/mcp refused a browser Origin that --mcp-allowed-origin does not name"
        );
        Err(refused(
            StatusCode::FORBIDDEN,
            "A browser Origin this server does not allow: /mcp answers pages only from the origins its operator \
             gave with --mcp-allowed-origin (scheme, host and port alike); other clients send no Origin."
                .into(),
        ))
    }

    /// The request's body, whole: bounded by `--mcp-max-request-bytes`, within the body
    /// deadline, and complete.
    async fn read_body(&self, body: Incoming, caller: &Caller) -> Result<Bytes, ApiError> {
        let too_large = || {
            refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "The request body is larger than {} bytes (--mcp-max-request-bytes): a request to /mcp is one \
                     JSON-RPC message of a few hundred bytes.",
                    self.max_body
                ),
            )
        };
        if body.size_hint().lower() > self.max_body as u64 {
            return Err(too_large());
        }
        let read = Limited::new(body, self.max_body).collect();
        match tokio::time::timeout(self.body_deadline, read).await {
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
            Ok(Err(_)) => {
                tracing::debug!(key_id = %caller.key_id, "/mcp: a request body ended before its end");
                Err(refused(
                    StatusCode::BAD_REQUEST,
                    "The request body ended before its end: the client stopped sending it or closed the connection."
                        .into(),
                ))
            }
            Err(_) => {
                tracing::debug!(key_id = %caller.key_id, "/mcp: a request body did not arrive in time");
                Err(refused(
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "The request body did not arrive within {} ms of its head; send it whole, at once.",
                        self.body_deadline.as_millis()
                    ),
                ))
            }
        }
    }

    /// A refusal as problem+json (with `Allow` for a 405).
    fn problem(&self, error: &ApiError, request_id: &RequestId) -> Response {
        let body = error.body(&self.state.resolved.public_base_url, Self::PATH, request_id.as_str());
        let mut response = Response::new(ResponseBody::new(Payload::Bytes(Bytes::from(body))));
        *response.status_mut() = error.status();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, PROBLEM_JSON);
        if error.status() == StatusCode::METHOD_NOT_ALLOWED {
            headers.insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        response
    }

    fn done(&self, response: Response, caller: Option<Arc<Caller>>, started: Instant) -> (Response, Outcome) {
        let latency = started.elapsed();
        let bytes = hyper::body::Body::size_hint(response.body()).exact().unwrap_or(0) as usize;
        let request_id = RequestId::Given(
            response
                .headers()
                .get(&X_REQUEST_ID)
                .cloned()
                .unwrap_or(HeaderValue::from_static("")),
        );
        self.state
            .metrics
            .record(Operation::Mcp, response.status().as_u16(), latency, bytes);
        (
            response,
            Outcome {
                operation: Operation::Mcp,
                request_id,
                caller,
                bytes,
                latency,
            },
        )
    }
}

/// A refusal of this endpoint's, before any tool ran.
fn refused(status: StatusCode, detail: String) -> ApiError {
    ApiError::McpTransport { status, detail }
}

/// The body must say it is JSON (`application/json`, parameters allowed), as the transport
/// requires; checked before the body is read.
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    if json {
        return Ok(());
    }
    Err(refused(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "Send the JSON-RPC message with Content-Type: application/json.".into(),
    ))
}

/// The body must be one JSON-RPC 2.0 message, as the transport reads it: a batch (an array),
/// text that is not JSON, or JSON that is not such a message is refused here (400), its detail
/// naming where, never quoting it.
fn check_message(body: &[u8], caller: &Caller) -> Result<(), ApiError> {
    let Err(error) = serde_json::from_slice::<ClientJsonRpcMessage>(body) else {
        return Ok(());
    };
    let batch = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    let detail = if batch {
        "A JSON-RPC batch (an array) is not accepted: send one JSON-RPC message per request.".to_string()
    } else if error.is_syntax() || error.is_eof() {
        format!(
            "The body is not JSON (line {}, column {}): send one JSON-RPC 2.0 message.",
            error.line(),
            error.column()
        )
    } else {
        format!(
            "The body is JSON but not a JSON-RPC 2.0 message (line {}, column {}): an object with jsonrpc \"2.0\", \
             a method and its params, and an id for a request.",
            error.line(),
            error.column()
        )
    };
    tracing::debug!(key_id = %caller.key_id, batch, "/mcp: a body that is not one JSON-RPC message");
    Err(refused(StatusCode::BAD_REQUEST, detail))
}

/// Whether the transport answered with a refusal of its own in plain text (not a JSON-RPC
/// error, which is JSON).
fn is_transport_refusal<B>(answer: &http::Response<B>) -> bool {
    let status = answer.status();
    let json = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|media| media.starts_with("application/json"));
    (status.is_client_error() || status.is_server_error()) && !json
}

/// A refusal of the transport's (its reason is a fixed line of its own, never the client's
/// text), with that reason as the detail.
async fn transport_refusal(refusal: http::Response<BoxBody<Bytes, std::convert::Infallible>>) -> ApiError {
    let (parts, body) = refusal.into_parts();
    // The transport's reasons are a line of text; more is not read.
    let reason = match Limited::new(body, 1024).collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).trim().to_string(),
        Err(_) => String::new(),
    };
    let detail = if reason.is_empty() {
        "The MCP transport refused the request.".to_string()
    } else {
        reason
    };
    refused(parts.status, detail)
}

/// Client text as a log line may carry it: at most 64 characters, every control character,
/// backslash and non-ASCII character escaped (`\u{202e}`), and, when cut, how long the whole
/// was. What a client sends can then neither flood the log nor forge or hide a line of it.
pub fn excerpt(text: &str) -> String {
    let mut out = String::new();
    for (shown, c) in text.chars().enumerate() {
        if shown == EXCERPT_CHARS {
            out.push_str(&format!("... ({} characters)", text.chars().count()));
            break;
        }
        match c {
            ' '..='~' if c != '\\' => out.push(c),
            _ => out.extend(c.escape_unicode()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_is_short_visible_ascii() {
        assert_eq!(excerpt("https://app.example"), "https://app.example");
        assert_eq!(excerpt("a\r\nb\u{202e}c\\"), "a\\u{d}\\u{a}b\\u{202e}c\\u{5c}");
        let long = "x".repeat(60_000);
        let cut = excerpt(&long);
        assert!(
            cut.starts_with(&"x".repeat(64)) && cut.ends_with("... (60000 characters)"),
            "{cut}"
        );
        assert!(cut.len() < 100);
    }
}
