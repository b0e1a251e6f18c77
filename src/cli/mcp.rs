//! `marks mcp`: the API's tools ([`crate::mcp`]) as a Model Context Protocol server over stdio,
//! for agents that speak only stdio. Each tool is one HTTP call to a server with the user's own
//! key (`MARKS_API_KEY`). Stdout is the protocol's: logs go to stderr. A server run with `--mcp`
//! hosts the same tools at `/mcp` for agents that connect to a URL.

use anyhow::Context;
use rmcp::ServiceExt;

use crate::mcp::MarksTools;

/// The environment variable holding the API key the tools call with.
pub const API_KEY_VARIABLE: &str = "MARKS_API_KEY";

/// Serves the tools over stdin/stdout until the client closes them.
pub fn run(base_url: &str) -> anyhow::Result<()> {
    let api_key = std::env::var(API_KEY_VARIABLE)
        .map_err(|_| anyhow::anyhow!("set {API_KEY_VARIABLE} to the API key the tools should call with"))?;
    let tools = MarksTools::over_http(base_url, api_key)?;
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
