//! The Valuation Marks server, and the offline commands of the `marks` binary.
//!
//! The server answers every `/v1` operation from a memory-mapped snapshot built by the
//! `marks-builder` crate: [`service::handle`] is the whole request path as a plain function;
//! [`server`] puts it behind hyper with connection hygiene, TLS and graceful shutdown;
//! [`state`] and [`reload`] hold and swap the snapshot and keys in force.

pub mod commands;
pub mod cursor;
pub mod head;
pub mod keys;
pub mod list;
pub mod metrics;
pub mod problem;
pub mod query;
pub mod ratelimit;
pub mod reload;
pub mod routes;
pub mod serve;
pub mod server;
pub mod service;
pub mod state;
