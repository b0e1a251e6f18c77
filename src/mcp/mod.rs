//! The API's operations as Model Context Protocol tools, for LLM agents: hosted by the server
//! at `/mcp` ([`hosted`], streamable HTTP, each tool answered in this process from the snapshot
//! in force) or run beside an agent that speaks only stdio (`marks mcp`, each tool one HTTP
//! call to a server).
//!
//! Either way a tool is one API operation under the caller's key, so tiers and errors are
//! exactly the API's. Over stdio a tool call spends what its API call spends; hosted, the `/mcp`
//! request carrying it has spent one unit already, which its API call takes instead of spending
//! a second ([`McpCall`]). A tool's result is the
//! response body as it came, `meta` included (illustrative data, backtest provenance, the
//! disclaimer), both as structured content and as its JSON text: an agent cannot get the
//! values without it. A problem comes back as a tool error carrying the problem's `code`,
//! `status`, `detail` and `request_id` (and `retry_after` when the budget is spent).

pub mod hosted;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig as McpServerInfo};
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::state::State;
use crate::budgets::local::Decision;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListCompaniesArgs {
    #[schemars(description = "Companies per page, 1 to 200 (default 50)")]
    pub limit: Option<u32>,
    #[schemars(description = "page.next_cursor of the previous page, with the same query, sort and filters")]
    pub cursor: Option<String>,
    #[schemars(description = "Only this sector (list_sectors gives them, e.g. ai, fintech)")]
    pub sector: Option<String>,
    #[schemars(description = "Only companies with this status: private or ipo_completed")]
    pub status: Option<String>,
    #[schemars(
        description = "Order: slug, name, value_usd, delta_30d_pct, last_event_on or outcome_on; a leading - sorts descending (e.g. -value_usd)"
    )]
    pub sort: Option<String>,
    #[schemars(
        description = "Only these outcomes, comma-separated: none, listed, sold, sale_agreed, bankrupt, wound_down, listing_agreed (none,sale_agreed,listing_agreed: the companies whose marks are current)"
    )]
    pub outcome: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    #[schemars(
        description = "Words of a company's name, former or brand name, or slug; each word matches the start of a word (case and accents do not matter), e.g. \"cursor\" or \"open ai\""
    )]
    pub query: String,
    #[schemars(description = "Matches per page, 1 to 200 (default 50)")]
    pub limit: Option<u32>,
    #[schemars(description = "page.next_cursor of the previous page of the same search")]
    pub cursor: Option<String>,
    #[schemars(description = "Only this sector")]
    pub sector: Option<String>,
    #[schemars(description = "Only companies with this status: private or ipo_completed")]
    pub status: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CompanyArgs {
    #[schemars(description = "The company's slug, as search_companies or list_companies give it (e.g. stripe)")]
    pub slug: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SeriesArgs {
    #[schemars(description = "The company's slug")]
    pub slug: String,
    #[schemars(description = "Interval coverage in percent: 80 (default) or 95 (pro tier and above)")]
    pub coverage: Option<u32>,
    #[schemars(description = "First day, YYYY-MM-DD (inclusive); none: from the first mark")]
    pub from: Option<String>,
    #[schemars(description = "Last day, YYYY-MM-DD (inclusive); none: to the latest mark")]
    pub to: Option<String>,
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

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct IndexArgs {
    #[schemars(description = "The index: all, or a sector (list_indices gives them)")]
    pub index: String,
    #[schemars(description = "Band coverage in percent: 80 (default) or 95 (pro tier and above)")]
    pub coverage: Option<u32>,
    #[schemars(description = "First day, YYYY-MM-DD (inclusive)")]
    pub from: Option<String>,
    #[schemars(description = "Last day, YYYY-MM-DD (inclusive)")]
    pub to: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ConstituentsArgs {
    #[schemars(description = "The index: all, or a sector")]
    pub index: String,
    #[schemars(description = "The day, YYYY-MM-DD; none: the index's latest day")]
    pub date: Option<String>,
    #[schemars(description = "Band coverage in percent: 80 (default) or 95 (pro tier and above)")]
    pub coverage: Option<u32>,
}

/// How the tools reach the API.
#[derive(Clone)]
enum Backend {
    /// Over HTTP to a server, with one key (`marks mcp`).
    Http {
        http: reqwest::Client,
        base_url: String,
        api_key: String,
    },
    /// In this process, with the key of the MCP request that carries the call (`/mcp`).
    InProcess { state: Arc<State> },
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Http { base_url, .. } => f.debug_struct("Http").field("base_url", base_url).finish(),
            Backend::InProcess { .. } => f.write_str("InProcess"),
        }
    }
}

/// What an API call answered.
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    body: Bytes,
}

/// What `/mcp` learnt of a request before its tool runs, put in its extensions: the client
/// address (for the failed-authentication throttle), and the unit of the key's budget the
/// request already spent, which the tool's API call takes instead of spending another.
#[derive(Clone, Debug)]
pub struct McpCall {
    pub peer: IpAddr,
    pub key_id: Arc<str>,
    pub decision: Decision,
}

#[derive(Debug, Clone)]
pub struct MarksTools {
    backend: Backend,
    tool_router: ToolRouter<Self>,
}

/// How to check a resolution record offline, sent beside every one.
const HOW_TO_VERIFY: &str = "To verify this record offline: fetch the public keys at /v1/signing-keys (a JWKS of \
Ed25519 keys); pick the key whose kid equals the record's key_id, and check that key_id is that key's RFC 7638 \
thumbprint (do not trust a kid you did not recompute); remove the `signature` member from the record, serialise \
the rest as RFC 8785 canonical JSON, and verify the base64url signature over those bytes with Ed25519. \
docs/api.md (\"Verifying a resolution record\") and the Python SDK's verify() do exactly this.";

#[tool_router]
impl MarksTools {
    /// Tools that call the API at `base_url` over HTTP with `api_key`.
    pub fn over_http(base_url: &str, api_key: String) -> anyhow::Result<MarksTools> {
        crate::use_ring_for_outbound_tls();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("marks-mcp/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("cannot start the HTTP client")?;
        Ok(MarksTools {
            backend: Backend::Http {
                http,
                base_url: base_url.trim_end_matches('/').to_string(),
                api_key,
            },
            tool_router: Self::tool_router(),
        })
    }

    /// Tools answered in this process, under the key of each MCP request.
    pub fn in_process(state: Arc<State>) -> MarksTools {
        MarksTools {
            backend: Backend::InProcess { state },
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Find companies by name: every word of the query matches the start of a word of a company's name, \
                       a former or brand name (aliases, e.g. Cursor for anysphere, Codeium for windsurf) or its slug; \
                       case and accents do not matter. Best matches first (whole-name matches, then the larger marks). \
                       Returns {meta, companies: [{slug, name, aliases, sector, status, latest_mark: {value_usd, \
                       lower_usd, upper_usd, confidence, vs_last_event_pct, next_reported}, last_event (with its \
                       source_grade), outcome (with its kind), ...}], page: {next_cursor, has_more}}, the fields as \
                       list_companies describes them."
    )]
    async fn search_companies(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = url_query(&[
            ("q", Some(args.query)),
            ("limit", args.limit.map(|l| l.to_string())),
            ("cursor", args.cursor),
            ("sector", args.sector),
            ("status", args.status),
        ]);
        self.get(&context, &format!("/v1/companies{query}")).await
    }

    #[tool(
        description = "List companies with their latest valuation mark, one page at a time: latest_mark.value_usd is \
                       today's value estimate with its 80% interval (lower_usd, upper_usd); latest_mark.confidence is a \
                       published track record, the share of past month-end marks whose next reported valuation came \
                       within +/-20%, the same for every company marked that day (not a company-specific probability); \
                       latest_mark.next_reported is the forecast of the valuation at which the company will next be \
                       reported, shown beside the mark and not today's value (null once the private period ended). Each \
                       company also has last_event (the last reported valuation, with its source_grade: A primary \
                       document, B major news organisation, C other outlet, D blog or copy), days_since_last_event, \
                       delta_30d_pct (with delta_30d_basis: events when a value was reported within the 30 days, profile \
                       when only the method's drift moved) and outcome with its kind (listed, sold, sale_agreed, listing_agreed, \
                       bankrupt, wound_down; null while private with no deal agreed); latest_mark.current is false for a company \
                       whose private period ended (its last private mark, not a value today). outcome=none,sale_agreed,listing_agreed \
                       lists the current marks only. Returns {meta, companies, page: {next_cursor, has_more}}; pass \
                       page.next_cursor as cursor, with the same sort and filters, for the next page. meta says the data \
                       is illustrative, from a backtest: indicative, not transactable prices."
    )]
    async fn list_companies(
        &self,
        Parameters(args): Parameters<ListCompaniesArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = url_query(&[
            ("limit", args.limit.map(|l| l.to_string())),
            ("cursor", args.cursor),
            ("sector", args.sector),
            ("status", args.status),
            ("sort", args.sort),
            ("outcome", args.outcome),
        ]);
        self.get(&context, &format!("/v1/companies{query}")).await
    }

    #[tool(
        description = "The sectors companies belong to, each with how many companies (and how many still private) your \
                       key may list. Returns {meta, sectors: [{sector, companies, private}]}."
    )]
    async fn list_sectors(&self, context: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.get(&context, "/v1/sectors").await
    }

    #[tool(
        description = "One company with its latest mark explained: today's value estimate with its 80% interval, the \
                       confidence (a published track record: the share of past month-end marks whose next reported \
                       valuation came within +/-20%, the same for every company that day, not a company-specific \
                       probability), next_reported (the forecast of the next reported valuation, beside the mark, not \
                       today's value; null once the private period ended), the last reported valuation (last_event, with \
                       its source_grade A-D) and how many days ago, the mark against it in percent \
                       (latest_mark.vs_last_event_pct), the outcome by kind (listed, sold, sale_agreed, listing_agreed, \
                       bankrupt, wound_down), and the observations: the event the mark starts from, what the method adds for the \
                       days since, and the outcome that ended the private period (the mark is then the last private one, \
                       not a value today), each with an explanation in words; and the explanation: {case (recently_priced, \
                       quiet, sale_agreed, listing_agreed, listed, sold, bankrupt, wound_down), summary}, the mark in words built for its \
                       case. latest_mark.current is false once the private period ended; delta_30d_basis says whether the \
                       30-day change rests on new events or only on the method's drift. Returns {meta, slug, name, \
                       aliases, sector, status, latest_mark, delta_30d_pct, delta_30d_basis, last_event, \
                       days_since_last_event, outcome, explanation, observations}."
    )]
    async fn get_company(
        &self,
        Parameters(args): Parameters<CompanyArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.company(&context, &args.slug, "").await
    }

    #[tool(
        description = "A company's daily mark series: one point a day with mark_usd and the interval at the chosen \
                       coverage (80 or 95), optionally only the days from..to. Returns {meta, slug, coverage, series: \
                       [{date, mark_usd, lower_usd, upper_usd}]}."
    )]
    async fn get_mark_series(
        &self,
        Parameters(args): Parameters<SeriesArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = url_query(&[
            ("coverage", args.coverage.map(|c| c.to_string())),
            ("from", args.from),
            ("to", args.to),
        ]);
        self.company(&context, &args.slug, &format!("/marks{query}")).await
    }

    #[tool(
        description = "A company's append-only history of valuation events (rounds, tenders, secondaries, fund marks, \
                       listings, sales agreed, closed or terminated, bankruptcies, wind-downs, retractions), every record \
                       oldest first, each with how firm the figure was (reported_as: closed, announced, in_talks, \
                       estimate), its source URL and the source's grade (source_grade: A primary document, B major news \
                       organisation, C other outlet, D blog or copy). Records are never edited: a correction is a later \
                       record whose supersedes names the one it corrects (which then has superseded_by), a withdrawal a \
                       retraction (retracted_by); the marks read only the newest record of each chain. Returns {meta, \
                       slug, events: [{event_id, occurred_on, event_type, valuation_usd, reported_as, source_url, \
                       source_grade, note, supersedes, superseded_by, retracted_by}]}. Pro tier and above."
    )]
    async fn get_mark_events(
        &self,
        Parameters(args): Parameters<CompanyArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.company(&context, &args.slug, "/events").await
    }

    #[tool(
        description = "How the method did on one company: every reported valuation after its first with the numbers of \
                       the day before it (the mark, its 80% band, the confidence track record, next_print_usd: the \
                       next-print forecast), where the reported value fell (above, inside_80, inside_95, hit within \
                       +/-20%), and its outcome (listing, failure or sale) marked the day before. Returns {meta, slug, \
                       disclosure, tolerance_pct, summary, targets: [{kind, event_type, occurred_on, marked_on, mark_usd, \
                       band_80, confidence, next_print_usd, ...}]}. Research tier and above (event values, band_95 and \
                       last_print_usd from Pro)."
    )]
    async fn get_backtest(
        &self,
        Parameters(args): Parameters<CompanyArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.company(&context, &args.slug, "/backtest").await
    }

    #[tool(
        description = "A company's Ed25519-signed resolution record: the value of record with its 80% and 95% bands, \
                       its basis (mark; or listing, sale, bankruptcy or wind_down when the private period ended) and the \
                       signature, verifiable offline against \
                       /v1/signing-keys; a second text item says how. Returns {meta, record_id, slug, value_usd, band_80, \
                       band_95, ..., key_id, signature}. Enterprise tier."
    )]
    async fn get_resolution(
        &self,
        Parameters(args): Parameters<CompanyArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut result = self.company(&context, &args.slug, "/resolution").await?;
        if result.is_error != Some(true) {
            result.content.push(ContentBlock::text(HOW_TO_VERIFY));
        }
        Ok(result)
    }

    #[tool(
        description = "The private-market indices: one over every company and one per sector, daily, value-weighted by \
                       the companies' marks and chain-linked (base 100). Returns {meta, base_level, indices: [{index, name, \
                       sector, first_date, last_date, latest: {date, level, lower, upper, constituents}}]}. Research tier \
                       and above."
    )]
    async fn list_indices(&self, context: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.get(&context, "/v1/indices").await
    }

    #[tool(
        description = "One index's daily levels with their band at the chosen coverage, optionally only from..to. Returns \
                       {meta, index, name, sector, coverage, series: [{date, level, lower, upper, constituents}]}. \
                       Research tier and above (95 from Pro)."
    )]
    async fn get_index(
        &self,
        Parameters(args): Parameters<IndexArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = url_query(&[
            ("coverage", args.coverage.map(|c| c.to_string())),
            ("from", args.from),
            ("to", args.to),
        ]);
        match index_path(&args.index, &query) {
            Ok(path) => self.get(&context, &path).await,
            Err(refused) => Ok(refused),
        }
    }

    #[tool(
        description = "The companies in an index on one day with their marks, bands and weights, largest first. Returns \
                       {meta, index, date, coverage, level, constituents: [{slug, name, weight, mark_usd, lower_usd, \
                       upper_usd}]}. Research tier and above."
    )]
    async fn get_index_constituents(
        &self,
        Parameters(args): Parameters<ConstituentsArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = url_query(&[("date", args.date), ("coverage", args.coverage.map(|c| c.to_string()))]);
        match index_path(&args.index, &format!("/constituents{query}")) {
            Ok(path) => self.get(&context, &path).await,
            Err(refused) => Ok(refused),
        }
    }

    #[tool(
        description = "The published scorecard of the method: three numbers (the mark, the next-print forecast \
                       latest_mark.next_reported, the last print carried forward) on three scores (each reported value \
                       on its day, month-end marks against the next reported value, and against the value on the day), \
                       with the bands' coverage, the confidence judged as a forecast (no skill: it is published as a \
                       track record), bootstrap comparisons and findings in words on which number wins which score. \
                       Also each index on its last day with weights capped and with plain value weights. \
                       Returns {meta, methodology_version, disclosure, params, numbers, event_day, month_end, \
                       comparisons, latest_private, in_force, findings, index_weight_cap, indices}; the figures are \
                       the same for every caller."
    )]
    async fn get_scorecard(&self, context: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.get(&context, "/v1/scorecard").await
    }

    #[tool(
        description = "The calling key's tier, per-minute budget and what it may call. Returns {meta, key_id, tier, \
                       rate_per_min, ...}."
    )]
    async fn get_usage(&self, context: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.get(&context, "/v1/usage").await
    }

    #[tool(
        description = "Which companies changed since a dataset version you already hold: added, new event records \
                       (with how many; corrections and retractions are records too), a change to the latest mark (value, \
                       bands, confidence or next-print forecast), a new status; each with the company as list_companies shows \
                       it now. Returns {meta, since, dataset_version, versions, changes: [{slug, changes, events_added, \
                       company}], page: {next_cursor, has_more}}. A version too old for the change log is a tool error \
                       (invalid_parameter): start again from a full listing. Pro tier and above."
    )]
    async fn get_changes(
        &self,
        Parameters(args): Parameters<ChangesArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let query = url_query(&[
            ("since", Some(args.since)),
            ("limit", args.limit.map(|l| l.to_string())),
            ("cursor", args.cursor),
        ]);
        self.get(&context, &format!("/v1/changes{query}")).await
    }
}

impl MarksTools {
    /// A company operation, or a tool error when `slug` is not a slug.
    async fn company(
        &self,
        context: &RequestContext<RoleServer>,
        slug: &str,
        tail: &str,
    ) -> Result<CallToolResult, ErrorData> {
        match company_path(slug, tail) {
            Ok(path) => self.get(context, &path).await,
            Err(refused) => Ok(refused),
        }
    }

    /// One GET under the caller's key; the body as the tool's result, or the problem as a
    /// tool error.
    async fn get(
        &self,
        context: &RequestContext<RoleServer>,
        path_and_query: &str,
    ) -> Result<CallToolResult, ErrorData> {
        let answer = match &self.backend {
            Backend::Http {
                http,
                base_url,
                api_key,
            } => over_http(http, base_url, api_key, path_and_query).await,
            Backend::InProcess { state } => {
                let parts = context.extensions.get::<http::request::Parts>();
                Ok(in_process(state, parts, path_and_query).await)
            }
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(refused) => return Ok(refused),
        };
        let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        if (200..300).contains(&answer.status) {
            return Ok(CallToolResult::structured(body));
        }
        let mut error = json!({
            "code": body.get("code").cloned().unwrap_or_else(|| json!("http_error")),
            "status": answer.status,
            "title": body.get("title").cloned().unwrap_or(Value::Null),
            "detail": body.get("detail").cloned().unwrap_or_else(|| json!(format!("HTTP {}", answer.status))),
            "request_id": body.get("request_id").cloned().unwrap_or(Value::Null),
        });
        if let Some(seconds) = answer.retry_after {
            error["retry_after"] = json!(seconds);
        }
        Ok(CallToolResult::structured_error(error))
    }
}

/// The GET of a tool over HTTP.
async fn over_http(
    http: &reqwest::Client,
    base_url: &str,
    api_key: &str,
    path_and_query: &str,
) -> Result<Answer, CallToolResult> {
    let url = format!("{base_url}{path_and_query}");
    let unreachable =
        |detail: String| CallToolResult::structured_error(json!({"code": "unreachable", "detail": detail}));
    let response = http
        .get(&url)
        .header("X-API-Key", api_key)
        .header("Accept-Encoding", "identity")
        .send()
        .await
        .map_err(|error| unreachable(format!("cannot reach {url}: {error}")))?;
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let body = response
        .bytes()
        .await
        .map_err(|error| unreachable(format!("the answer from {url} broke off: {error}")))?;
    Ok(Answer {
        status,
        retry_after,
        body,
    })
}

/// The GET of a tool answered in this process: the API's own request path, with the key (and
/// the client-address header, if the server reads one) of the MCP request carrying the call,
/// metered by the unit that request spent (`McpCall`), never a second one.
async fn in_process(state: &State, parts: Option<&http::request::Parts>, path_and_query: &str) -> Answer {
    use http_body_util::BodyExt;
    let mut request = http::Request::get(path_and_query);
    let mut peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut prepaid = None;
    if let Some(parts) = parts {
        for value in parts.headers.get_all("x-api-key") {
            request = request.header("x-api-key", value);
        }
        if let Some(name) = &state.access.client_ip_header {
            for value in parts.headers.get_all(name) {
                request = request.header(name, value);
            }
        }
        if let Some(call) = parts.extensions.get::<McpCall>() {
            peer = call.peer;
            prepaid = Some((call.key_id.clone(), call.decision));
        }
    }
    let Ok(request) = request.body(()) else {
        return Answer {
            status: 400,
            retry_after: None,
            body: Bytes::from_static(
                br#"{"code":"invalid_parameter","detail":"the tool's arguments do not make a request"}"#,
            ),
        };
    };
    let (response, _) = match prepaid {
        Some((key_id, decision)) => crate::api::answer_prepaid(state, &request, peer, key_id, decision).await,
        None => crate::api::answer(state, &request, peer).await,
    };
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let body = response
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    Answer {
        status,
        retry_after,
        body,
    }
}

fn retry_after(headers: &http::HeaderMap) -> Option<u64> {
    headers.get(http::header::RETRY_AFTER)?.to_str().ok()?.parse().ok()
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MarksTools {
    fn get_info(&self) -> McpServerInfo {
        McpServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("valuation-marks", env!("CARGO_PKG_VERSION")))
            .with_instructions(
            "Valuation marks for private companies: find a company by name, its latest mark explained (with 80%/95% \
             intervals, the last reported valuation and what happened since), daily series, valuation events, signed \
             resolution records, private-market indices, the published backtest, and what changed since a dataset \
             version. Every result carries meta: the data is illustrative, from a backtest; indicative valuations, not \
             transactable prices, not investment advice. Say so when you use it.",
        )
    }
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

fn invalid(code: &str, detail: String) -> CallToolResult {
    CallToolResult::structured_error(json!({ "code": code, "detail": detail }))
}

/// `/v1/companies/{slug}{tail}`, or a tool error when `slug` is not a slug. Checked before any
/// URL is built: a slug such as `.` would otherwise become a dot segment that URL parsers
/// resolve (`/v1/companies/./marks` is `/v1/companies/marks`), calling another operation.
fn company_path(slug: &str, tail: &str) -> Result<String, CallToolResult> {
    if !marks_format::rules::names::is_valid_slug(slug) {
        return Err(invalid(
            "invalid_slug",
            format!(
                "{slug:?} is not a company slug: 1 to {} lowercase letters, digits and '-', starting with a letter or digit (search_companies gives them)",
                marks_format::rules::names::MAX_SLUG_BYTES
            ),
        ));
    }
    Ok(format!("/v1/companies/{}{tail}", encode_argument(slug)))
}

/// `/v1/indices/{id}{tail}`, or a tool error when `id` is not an index id (`all` or a sector
/// name, which have the grammar of a slug).
fn index_path(id: &str, tail: &str) -> Result<String, CallToolResult> {
    if !marks_format::rules::names::is_valid_slug(id) {
        return Err(invalid(
            "not_found",
            format!("{id:?} is not an index: all, or a sector as list_indices gives them"),
        ));
    }
    Ok(format!("/v1/indices/{}{tail}", encode_argument(id)))
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
            assert!(index_path(slug, "").is_err(), "{slug:?}");
        }
    }
}
