//! `/mcp` (`marks serve --mcp`): the tools over MCP's streamable HTTP transport, rmcp's
//! server, answered in this process from the snapshot in force.
//!
//! Bounded like the rest of the server:
//! - **No sessions.** The transport runs stateless (no `Mcp-Session-Id` is issued, every
//!   JSON-RPC POST is answered on its own, as JSON), so there is no session to cap per key or
//!   to expire: each request stands alone and is authenticated alone.
//! - **Keys.** A request without a key in force is refused before the transport sees it (401,
//!   or 429 past the address's failed-authentication budget, as the API counts them). Listing
//!   the tools spends nothing; each tool call spends one unit, as the API call it makes does.
//! - **Bodies** over `--mcp-max-request-bytes` are refused (413) while they stream.
//! - **Origin.** A request with an `Origin` header must name one of `--mcp-allowed-origin`
//!   (none by default, so every browser origin is refused, 403), the transport's defence
//!   against DNS rebinding. The `Host` header is not checked: a public endpoint behind a
//!   balancer is reached under names this process cannot know, and the key decides access.
//!
//! What the transport refuses itself (403 for the Origin, 405 for a GET, 406 and 415 for the
//! media types, 413) it words in plain text; those answers are rewritten as the API's
//! problem+json, the transport's reason as the detail, so a client reads every refusal of this
//! server the same way. JSON-RPC errors stay JSON-RPC: they are the protocol's own answers.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::api::routes::Operation;
use crate::api::state::State;
use crate::api::{self, access, Outcome, RequestId, Response};
use crate::mcp::{MarksTools, McpPeer};
use crate::response::body::{Payload, ResponseBody};
use crate::response::headers::{NOSNIFF, NO_STORE, PROBLEM_JSON, X_REQUEST_ID};
use crate::response::problem::ApiError;
use crate::settings::Agents;

/// The hosted tools and their transport.
pub struct McpEndpoint {
    state: Arc<State>,
    service: StreamableHttpService<MarksTools, NeverSessionManager>,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpEndpoint")
    }
}

impl McpEndpoint {
    /// Where it is answered.
    pub const PATH: &'static str = "/mcp";

    pub fn new(state: Arc<State>, agents: &Agents, _addr: SocketAddr) -> McpEndpoint {
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .disable_allowed_hosts()
            .with_max_request_body_bytes(agents.mcp_max_request_bytes as usize);
        config = if agents.mcp_allowed_origin.is_empty() {
            config.enforce_origin_validation()
        } else {
            config.with_allowed_origins(agents.mcp_allowed_origin.iter().cloned())
        };
        let tools_state = state.clone();
        let service = StreamableHttpService::new(
            move || Ok(MarksTools::in_process(tools_state.clone())),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        McpEndpoint { state, service }
    }

    /// One request to `/mcp`.
    pub async fn answer(&self, mut request: hyper::Request<Incoming>, peer: SocketAddr) -> (Response, Outcome) {
        let started = Instant::now();
        let state = &*self.state;
        let caller = match api::admit(state, &request, peer.ip(), Operation::Mcp) {
            Ok(caller) => caller,
            Err(refusal) => return self.done(*refusal, None, started),
        };
        let address: IpAddr = access::client_address(state, request.headers(), peer.ip());
        request.extensions_mut().insert(McpPeer(address));
        // The client's request id if it sent a usable one, as the API answers.
        let request_id = api::request_id(state, request.headers().get(X_REQUEST_ID));
        let answer = self.service.handle(request).await;
        let mut response = if is_transport_refusal(&answer) {
            self.problem(answer, &request_id).await
        } else {
            answer.map(ResponseBody::streamed)
        };
        let headers = response.headers_mut();
        headers.insert(X_REQUEST_ID, request_id.header_value());
        headers.insert(header::X_CONTENT_TYPE_OPTIONS, NOSNIFF);
        headers.entry(header::CACHE_CONTROL).or_insert(NO_STORE);
        headers.insert(header::VARY, HeaderValue::from_static("X-API-Key, Origin"));
        self.done(response, Some(caller), started)
    }

    /// A refusal of the transport's, as problem+json with the transport's reason as its detail
    /// (and its `Allow`, for a 405).
    async fn problem(
        &self,
        refusal: http::Response<BoxBody<Bytes, std::convert::Infallible>>,
        request_id: &RequestId,
    ) -> Response {
        let (parts, body) = refusal.into_parts();
        // The transport's reasons are a line of text; more is not read.
        let reason = match Limited::new(body, 1024).collect().await {
            Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).trim().to_string(),
            Err(_) => String::new(),
        };
        let detail = match parts.status.as_u16() {
            403 => "A browser Origin this server does not allow: /mcp answers pages only from the origins its \
                    operator gave with --mcp-allowed-origin; other clients send no Origin."
                .to_string(),
            413 => format!("{reason}: a request to /mcp is one JSON-RPC message of a few hundred bytes."),
            _ if reason.is_empty() => "The MCP transport refused the request.".to_string(),
            _ => reason,
        };
        let error = ApiError::McpTransport {
            status: parts.status,
            detail,
        };
        let body = error.body(&self.state.resolved.public_base_url, Self::PATH, request_id.as_str());
        let mut response = Response::new(ResponseBody::new(Payload::Bytes(Bytes::from(body))));
        *response.status_mut() = error.status();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, PROBLEM_JSON);
        if let Some(allow) = parts.headers.get(header::ALLOW) {
            headers.insert(header::ALLOW, allow.clone());
        }
        response
    }

    fn done(
        &self,
        response: Response,
        caller: Option<Arc<crate::keys::ring::Caller>>,
        started: Instant,
    ) -> (Response, Outcome) {
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
