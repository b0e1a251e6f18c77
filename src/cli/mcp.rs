//! `marks mcp`: the API as a Model Context Protocol server over stdio, for LLM agents.
//!
//! Each tool is one API operation, called over HTTP with the user's own key (`MARKS_API_KEY`),
//! so budgets, tiers and errors are exactly the API's. A tool's result is the response body as
//! it came, `meta` included (illustrative data, backtest provenance, the disclaimer), both as
//! structured content and as its JSON text: an agent cannot get the values without it. A
//! problem response comes back as a tool error carrying the problem's `code`, `status`,
//! `detail` and `request_id`; an unreachable API as a tool error with code `unreachable`.
//! Stdout is the protocol's: logs go to stderr.

use std::time::Duration;

use anyhow::Context;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig as McpServerInfo};
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{json, Value};

/// The environment variable holding the API key the tools call with.
pub const API_KEY_VARIABLE: &str = "MARKS_API_KEY";

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListCompaniesArgs {
    #[schemars(description = "Companies per page, 1 to 200 (default 50)")]
    pub limit: Option<u32>,
    #[schemars(description = "page.next_cursor of the previous page, with the same sort and filters")]
    pub cursor: Option<String>,
    #[schemars(description = "Only this sector (e.g. ai, fintech)")]
    pub sector: Option<String>,
    #[schemars(description = "Only companies with this status: private or ipo_completed")]
    pub status: Option<String>,
    #[schemars(
        description = "Order: slug, name, value_usd or delta_30d_pct; a leading - sorts descending (e.g. -value_usd)"
    )]
    pub sort: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CompanyArgs {
    #[schemars(description = "The company's slug, as listed by list_companies (e.g. stripe)")]
    pub slug: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SeriesArgs {
    #[schemars(description = "The company's slug")]
    pub slug: String,
    #[schemars(description = "Interval coverage in percent: 80 (default) or 95 (pro tier and above)")]
    pub coverage: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ChangesArgs {
    #[schemars(
        description = "The dataset version your copy holds: meta.dataset_version of the data you synced (YYYY-MM-DD)"
    )]
    pub since: String,
    #[schemars(description = "Changed companies per page, 1 to 200 (default 50)")]
    pub limit: Option<u32>,
    #[schemars(description = "page.next_cursor of the previous page, with the same since")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone)]
pub struct MarksTools {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl MarksTools {
    pub fn new(base_url: &str, api_key: String) -> anyhow::Result<MarksTools> {
        crate::use_ring_for_outbound_tls();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("marks-mcp/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("cannot start the HTTP client")?;
        Ok(MarksTools {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            tool_router: Self::tool_router(),
        })
    }

    #[tool(
        description = "List companies with their latest valuation mark (value_usd with an 80% interval and a confidence) \
                       and 30-day change, one page at a time. Returns {meta, companies, page: {next_cursor, has_more}}; \
                       pass page.next_cursor as cursor, with the same sort and filters, for the next page. meta says the \
                       data is illustrative, from a backtest: indicative, not transactable prices."
    )]
    async fn list_companies(
        &self,
        Parameters(args): Parameters<ListCompaniesArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = url_query(&[
            ("limit", args.limit.map(|l| l.to_string())),
            ("cursor", args.cursor),
            ("sector", args.sector),
            ("status", args.status),
            ("sort", args.sort),
        ]);
        self.get(&format!("/v1/companies{query}")).await
    }

    #[tool(
        description = "One company's profile: name, sector, status, latest mark with its 80% interval and confidence, \
                       30-day change, and the observations (valuation events) behind the mark. Returns {meta, slug, name, \
                       sector, status, latest_mark, delta_30d_pct, observations}."
    )]
    async fn get_company(&self, Parameters(args): Parameters<CompanyArgs>) -> Result<CallToolResult, ErrorData> {
        match company_path(&args.slug, "") {
            Ok(path) => self.get(&path).await,
            Err(refused) => Ok(refused),
        }
    }

    #[tool(
        description = "A company's daily mark series: one point a day with mark_usd and the interval at the chosen \
                       coverage (80 or 95). Returns {meta, slug, coverage, series: [{date, mark_usd, lower_usd, upper_usd}]}."
    )]
    async fn get_mark_series(&self, Parameters(args): Parameters<SeriesArgs>) -> Result<CallToolResult, ErrorData> {
        let coverage = args.coverage.map_or_else(String::new, |c| format!("?coverage={c}"));
        match company_path(&args.slug, &format!("/marks{coverage}")) {
            Ok(path) => self.get(&path).await,
            Err(refused) => Ok(refused),
        }
    }

    #[tool(
        description = "A company's append-only history of valuation events (funding rounds, tenders, listings...), oldest \
                       first, each with its source URL. Returns {meta, slug, events: [{event_id, occurred_on, event_type, \
                       valuation_usd, source_url, note}]}. Pro tier and above."
    )]
    async fn get_mark_events(&self, Parameters(args): Parameters<CompanyArgs>) -> Result<CallToolResult, ErrorData> {
        match company_path(&args.slug, "/events") {
            Ok(path) => self.get(&path).await,
            Err(refused) => Ok(refused),
        }
    }

    #[tool(
        description = "A company's Ed25519-signed resolution record: the value of record with its 80% and 95% bands, \
                       its basis (mark, listing or bankruptcy) and the signature, verifiable offline against \
                       /v1/signing-keys. Returns {meta, record_id, slug, value_usd, band_80, band_95, ..., signature}. \
                       Enterprise tier."
    )]
    async fn get_resolution(&self, Parameters(args): Parameters<CompanyArgs>) -> Result<CallToolResult, ErrorData> {
        match company_path(&args.slug, "/resolution") {
            Ok(path) => self.get(&path).await,
            Err(refused) => Ok(refused),
        }
    }

    #[tool(
        description = "The calling key's tier, per-minute budget and what it may call. Returns {meta, key_id, tier, \
                       rate_per_min, ...}."
    )]
    async fn get_usage(&self) -> Result<CallToolResult, ErrorData> {
        self.get("/v1/usage").await
    }

    #[tool(
        description = "Which companies changed since a dataset version you already hold: added, new events (with how \
                       many), a new latest mark or bands, a new status; each with the company as list_companies shows \
                       it now. Returns {meta, since, dataset_version, versions, changes: [{slug, changes, events_added, \
                       company}], page: {next_cursor, has_more}}. A version too old for the change log is a tool error \
                       (invalid_parameter): start again from a full listing. Pro tier and above."
    )]
    async fn get_changes(&self, Parameters(args): Parameters<ChangesArgs>) -> Result<CallToolResult, ErrorData> {
        let query = url_query(&[
            ("since", Some(args.since)),
            ("limit", args.limit.map(|l| l.to_string())),
            ("cursor", args.cursor),
        ]);
        self.get(&format!("/v1/changes{query}")).await
    }
}

impl MarksTools {
    /// One GET with the user's key; the body as the tool's result, or the problem as a tool error.
    async fn get(&self, path_and_query: &str) -> Result<CallToolResult, ErrorData> {
        let url = format!("{}{path_and_query}", self.base_url);
        let reply = self
            .http
            .get(&url)
            .header("X-API-Key", &self.api_key)
            .header("Accept-Encoding", "identity")
            .send()
            .await;
        let response = match reply {
            Ok(response) => response,
            Err(error) => {
                return Ok(CallToolResult::structured_error(json!({
                    "code": "unreachable",
                    "detail": format!("cannot reach {url}: {error}"),
                })))
            }
        };
        let status = response.status();
        let body: Value = match response.bytes().await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            Err(error) => {
                return Ok(CallToolResult::structured_error(json!({
                    "code": "unreachable",
                    "detail": format!("the answer from {url} broke off: {error}"),
                })))
            }
        };
        if status.is_success() {
            return Ok(CallToolResult::structured(body));
        }
        Ok(CallToolResult::structured_error(json!({
            "code": body.get("code").cloned().unwrap_or_else(|| json!("http_error")),
            "status": status.as_u16(),
            "title": body.get("title").cloned().unwrap_or(Value::Null),
            "detail": body.get("detail").cloned().unwrap_or_else(|| json!(status.to_string())),
            "request_id": body.get("request_id").cloned().unwrap_or(Value::Null),
        })))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MarksTools {
    fn get_info(&self) -> McpServerInfo {
        McpServerInfo::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "Valuation marks for private companies: latest marks with 80%/95% intervals, daily series, valuation \
             events, signed resolution records, and what changed since a dataset version. Every result carries meta: the data is illustrative, from a \
             backtest; indicative valuations, not transactable prices, not investment advice. Say so when you use it.",
        )
    }
}

/// Serves the tools over stdin/stdout until the client closes them.
pub fn run(base_url: &str) -> anyhow::Result<()> {
    let api_key = std::env::var(API_KEY_VARIABLE)
        .map_err(|_| anyhow::anyhow!("set {API_KEY_VARIABLE} to the API key the tools should call with"))?;
    let tools = MarksTools::new(base_url, api_key)?;
    // Warnings and errors to stderr (stdout is the protocol's), so that what the transport
    // drops, such as a message over its 16 MiB line limit, is said. RUST_LOG overrides.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let service = tools
            .serve(rmcp::transport::stdio())
            .await
            .context("MCP initialisation failed")?;
        service.waiting().await.context("the MCP server stopped")?;
        Ok(())
    })
}

/// What a tool argument may carry unencoded: letters, digits, `-`, `_` and `~`. Dots are
/// encoded too, so `..` cannot become a dot segment that the URL parser would resolve.
const ARGUMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

/// A tool argument as one path segment or one query value: it cannot reach another path or
/// add a parameter.
fn encode_argument(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, ARGUMENT).to_string()
}

/// `/v1/companies/{slug}{tail}`, or a tool error when `slug` is not a slug. Checked before any
/// URL is built: a slug such as `.` would otherwise become a dot segment that URL parsers
/// resolve (`/v1/companies/./marks` is `/v1/companies/marks`), calling another operation.
fn company_path(slug: &str, tail: &str) -> Result<String, CallToolResult> {
    if !marks_format::names::is_valid_slug(slug) {
        return Err(CallToolResult::structured_error(json!({
            "code": "invalid_slug",
            "detail": format!(
                "{slug:?} is not a company slug: 1 to {} lowercase letters, digits and '-', starting with a letter or digit (list_companies gives them)",
                marks_format::names::MAX_SLUG_BYTES
            ),
        })));
    }
    Ok(format!("/v1/companies/{}{tail}", encode_argument(slug)))
}

/// `?name=value&...` of the arguments given, or nothing when none is.
fn url_query(pairs: &[(&str, Option<String>)]) -> String {
    let given: Vec<String> = pairs
        .iter()
        .filter_map(|(name, value)| value.as_ref().map(|v| format!("{name}={}", encode_argument(v))))
        .collect();
    if given.is_empty() {
        String::new()
    } else {
        format!("?{}", given.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_cannot_leave_their_path_segment_or_query_value() {
        assert_eq!(encode_argument("stripe"), "stripe");
        assert_eq!(encode_argument("../usage"), "%2E%2E%2Fusage");
        assert_eq!(
            url_query(&[
                ("sort", Some("-value_usd".into())),
                ("sector", None),
                ("cursor", Some("a&b=c".into()))
            ]),
            "?sort=-value_usd&cursor=a%26b%3Dc"
        );
        assert_eq!(url_query(&[("sector", None)]), "");
    }

    #[test]
    fn a_slug_outside_the_grammar_never_becomes_a_url() {
        assert_eq!(company_path("stripe", "/marks").unwrap(), "/v1/companies/stripe/marks");
        for slug in [".", "..", "../usage", "Stripe", "", "-x", "a/b", "%2e"] {
            let refused = company_path(slug, "/marks").unwrap_err();
            let body = refused.structured_content.unwrap();
            assert_eq!(body["code"], "invalid_slug", "{slug:?}");
        }
    }
}
