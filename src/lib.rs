//! The Valuation Marks server, and the offline commands of the `marks` binary.
//!
//! The server answers every `/v1` operation from a memory-mapped snapshot built by the
//! `marks-builder` crate. The folders, from the top down (each imports only from those below
//! it; ARCHITECTURE.md walks through them):
//! - [`cli`]: the `marks` subcommands; `serve` sets up logging, the runtime and signals and
//!   hands [`settings::Settings`] to [`app::App::start`];
//! - [`app`]: the one start-up path (production, tests and benches): the state, the keys and
//!   the first snapshot, the server, the file watcher and the object-store poller;
//! - [`settings`]: everything `marks serve` is told, grouped into sections, each default written
//!   once;
//! - [`metric`]: what a part of the server reports to `/metrics`, as plain data (like
//!   `settings`, it imports nothing of the crate);
//! - [`reload`]: the file watcher and the reloads of snapshots and keys;
//! - [`server`]: hyper behind the accept loop: TLS, HTTP/2, connection and stream deadlines,
//!   the access log, graceful shutdown;
//! - [`mcp`]: the API's operations as MCP tools for agents, hosted at `/mcp` (answered in this
//!   process through [`api::answer_prepaid`], metered once per request) or over stdio
//!   (`marks mcp`, over HTTP);
//! - [`api`]: the request path as one plain function ([`api::handle`]): who is asking, what
//!   each operation answers, the state shared across requests, metrics;
//! - [`response`]: how an answer becomes a response: conditional requests, encodings, ranges,
//!   caching, headers, bodies, problem+json;
//! - [`keys`]: the keys file and the keys in force;
//! - [`budgets`]: per-key token buckets, the shared store, the HTTP/2 stream budget;
//! - [`snapshot`]: the snapshot in force, file identities, the object-store source and the
//!   idle-priority thread that reads new files;
//! - [`web`]: the pages' files compiled into the binary (the explorer, the API reference and
//!   their assets).

// The server reads files by offset, idles its loader thread with SCHED_IDLE, answers Unix
// signals and links the sample into place: it is built for Unix (Linux, and macOS for
// development) and nothing else, said here once rather than in branches that never compile.
#[cfg(not(unix))]
compile_error!("marks runs on Unix: Linux in production, macOS for development");

pub mod api;
pub mod app;
pub mod budgets;
pub mod cli;
pub mod keys;
pub mod mcp;
pub mod metric;
pub mod reload;
pub mod response;
pub mod server;
pub mod settings;
pub mod snapshot;
pub mod web;

/// Makes `ring` the process's TLS provider for outbound HTTPS (object storage, `marks mcp`),
/// as for the server's own TLS. Harmless when one is installed already.
pub fn use_ring_for_outbound_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
