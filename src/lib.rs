//! The Valuation Marks server, and the offline commands of the `marks` binary.
//!
//! The server answers every `/v1` operation from a memory-mapped snapshot built by the
//! `marks-builder` crate. Where to look:
//! - [`service::handle`] is the whole request path as a plain function, its steps in order:
//!   [`access`] (who is asking, and the throttle on failed authentication), [`operations`]
//!   (what each endpoint answers), [`representation`] (how an answer becomes a response:
//!   conditional requests, encodings, ranges, caching, headers), with [`response_headers`]
//!   holding the header names, values and prebuilt blocks and [`response_body`] the bodies;
//!   [`list`] and [`changes`] assemble the paginated answers;
//! - [`http_server`] puts it behind hyper: the accept loop, TLS, HTTP/2, graceful shutdown,
//!   with [`connection_guard`] enforcing the per-connection deadlines, [`h2_streams`] the
//!   per-stream one and the server's budget of HTTP/2 streams, and [`access_log`] writing one
//!   line per request;
//! - [`shared_budgets`] keeps the budgets in Redis when replicas share them;
//!   [`snapshot_source`] publishes snapshots to object storage and pulls them into replicas;
//! - [`state`] and [`reload`] hold and swap the snapshot and keys in force, reading new files
//!   on [`background`] threads; [`key_ring`] is the keys as the server sees them, [`keys_file`]
//!   the file and the commands that edit it;
//! - [`mcp`] serves the API's operations as Model Context Protocol tools over stdio;
//! - [`serve_command`] turns `marks serve` flags into a running server; [`commands`] runs the
//!   other subcommands.

pub mod access;
pub mod access_log;
pub mod background;
pub mod byte_ranges;
pub mod changes;
pub mod commands;
pub mod connection_guard;
pub mod cursor;
pub mod h2_streams;
pub mod http_server;
pub mod key_ring;
pub mod keys_file;
pub mod list;
pub mod mcp;
pub mod metrics;
pub mod operations;
pub mod problem;
pub mod query;
pub mod ratelimit;
pub mod reload;
pub mod representation;
pub mod response_body;
pub mod response_headers;
pub mod routes;
pub mod serve_command;
pub mod service;
pub mod shared_budgets;
pub mod snapshot_source;
pub mod state;

/// Makes `ring` the process's TLS provider for outbound HTTPS (object storage, `marks mcp`),
/// as for the server's own TLS. Harmless when one is installed already.
pub fn use_ring_for_outbound_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
