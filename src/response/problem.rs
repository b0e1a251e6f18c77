//! Every error the API can answer, as one enum that renders the RFC 9457 problem+json body, so
//! no handler can forget a member or invent a code.
//!
//! Messages say what was wrong with the request and never anything about the server's
//! internals.

use http::StatusCode;
use serde::Serialize;

/// An error response. `code` is SPEC section 7's integration enum, plus docs/design.md's additive
/// codes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiError {
    MissingApiKey,
    InvalidApiKey,
    TierForbidden(String),
    NotFound(String),
    InvalidCoverage(String),
    InvalidSort(String),
    BadCursor(String),
    InvalidParameter {
        name: String,
        reason: String,
    },
    RateLimited {
        retry_after: u64,
    },
    /// A decoded export past its key's share of the decoders: the key's own concurrency, so a
    /// 429 like its budget, with a detail that says which.
    ExportsAtOnce {
        detail: String,
        retry_after: u64,
    },
    /// A failing authentication from an address that has failed too often.
    AuthThrottled {
        retry_after: u64,
    },
    MethodNotAllowed(String),
    /// A byte range that starts past the end of a representation of `length` bytes.
    RangeNotSatisfiable {
        length: u64,
    },
    Internal,
    Unavailable(String),
    /// A request `/mcp` refused before any tool ran (a foreign `Origin`, a body too large,
    /// unfinished, late or not one JSON-RPC message, a method or media type it does not take),
    /// with the reason, its own or its transport's.
    McpTransport {
        status: StatusCode,
        detail: String,
    },
}

#[derive(Serialize)]
struct ProblemBody<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    title: &'a str,
    status: u16,
    detail: &'a str,
    instance: &'a str,
    code: &'a str,
    request_id: &'a str,
}

impl ApiError {
    pub fn invalid_parameter(name: &str, reason: &str) -> ApiError {
        ApiError::InvalidParameter {
            name: name.to_string(),
            reason: reason.to_string(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::MissingApiKey | ApiError::InvalidApiKey => StatusCode::UNAUTHORIZED,
            ApiError::TierForbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::InvalidCoverage(_)
            | ApiError::InvalidSort(_)
            | ApiError::BadCursor(_)
            | ApiError::InvalidParameter { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RateLimited { .. } | ApiError::AuthThrottled { .. } | ApiError::ExportsAtOnce { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RangeNotSatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::McpTransport { status, .. } => *status,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::MissingApiKey => "missing_api_key",
            ApiError::InvalidApiKey => "invalid_api_key",
            ApiError::TierForbidden(_) => "tier_forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::InvalidCoverage(_) => "invalid_coverage",
            ApiError::InvalidSort(_) => "invalid_sort",
            ApiError::BadCursor(_) => "bad_cursor",
            ApiError::InvalidParameter { .. } => "invalid_parameter",
            ApiError::RateLimited { .. } | ApiError::AuthThrottled { .. } | ApiError::ExportsAtOnce { .. } => {
                "rate_limited"
            }
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::RangeNotSatisfiable { .. } => "range_not_satisfiable",
            ApiError::Internal => "internal_error",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::McpTransport { status, .. } => match status.as_u16() {
                403 => "origin_forbidden",
                405 => "method_not_allowed",
                408 => "request_timeout",
                413 => "request_too_large",
                500..=599 => "internal_error",
                _ => "bad_request",
            },
        }
    }

    pub fn title(&self) -> &'static str {
        match self {
            ApiError::MissingApiKey => "API key missing",
            ApiError::InvalidApiKey => "API key not valid",
            ApiError::TierForbidden(_) => "Not included in your tier",
            ApiError::NotFound(_) => "Not found",
            ApiError::InvalidCoverage(_) => "Invalid coverage",
            ApiError::InvalidSort(_) => "Invalid sort",
            ApiError::BadCursor(_) => "Invalid cursor",
            ApiError::InvalidParameter { .. } => "Invalid parameter",
            ApiError::RateLimited { .. } => "Rate limit exceeded",
            ApiError::AuthThrottled { .. } => "Too many failed authentications",
            ApiError::ExportsAtOnce { .. } => "Too many exports at once",
            ApiError::MethodNotAllowed(_) => "Method not allowed",
            ApiError::RangeNotSatisfiable { .. } => "Range not satisfiable",
            ApiError::Internal => "Internal error",
            ApiError::Unavailable(_) => "Service unavailable",
            ApiError::McpTransport { status, .. } => status.canonical_reason().unwrap_or("Refused"),
        }
    }

    pub fn detail(&self) -> String {
        match self {
            ApiError::MissingApiKey => "Send your API key in the X-API-Key request header.".into(),
            ApiError::InvalidApiKey => "The X-API-Key is unknown, revoked or not active.".into(),
            ApiError::TierForbidden(detail)
            | ApiError::NotFound(detail)
            | ApiError::Unavailable(detail)
            | ApiError::ExportsAtOnce { detail, .. }
            | ApiError::McpTransport { detail, .. } => detail.clone(),
            ApiError::InvalidCoverage(value) => format!("coverage {value:?} is not allowed: use 80 or 95."),
            ApiError::InvalidSort(value) => format!(
                "sort {value:?} is not allowed: use slug, name, value_usd, delta_30d_pct, last_event_on or outcome_on, with a leading - for descending."
            ),
            ApiError::BadCursor(reason) => format!("cursor rejected: {reason}."),
            ApiError::InvalidParameter { name, reason } => format!("parameter {name:?} {reason}."),
            ApiError::RateLimited { retry_after } => {
                format!("Request budget exhausted; retry after {retry_after} seconds.")
            }
            ApiError::AuthThrottled { retry_after } => format!(
                "too many failed authentications from this address; retry after {retry_after} seconds"
            ),
            ApiError::MethodNotAllowed(method) => {
                format!("Method {method} is not allowed; this API is read-only: use GET or HEAD.")
            }
            ApiError::RangeNotSatisfiable { length } => format!(
                "The range starts past the end of the representation, which is {length} bytes; Content-Range gives its length."
            ),
            ApiError::Internal => "The request could not be completed; it has been logged.".into(),
        }
    }

    /// The problem+json body, with `type` under the public base URL and `instance` the path.
    pub fn body(&self, base_url: &str, instance: &str, request_id: &str) -> Vec<u8> {
        let kind = format!("{base_url}/problems/{}", self.code());
        let detail = self.detail();
        let body = ProblemBody {
            kind: &kind,
            title: self.title(),
            status: self.status().as_u16(),
            detail: &detail,
            instance,
            code: self.code(),
            request_id,
        };
        serde_json::to_vec(&body).unwrap_or_default()
    }
}

/// A stored series that does not decode: the snapshot is damaged past what its checks caught.
/// Logged here, where it becomes the client's 500.
impl From<crate::snapshot::decoded::DamagedText> for ApiError {
    fn from(damaged: crate::snapshot::decoded::DamagedText) -> ApiError {
        tracing::error!("{damaged}");
        ApiError::Internal
    }
}
