//! Integration tests: real snapshots from the real builder, real servers on 127.0.0.1:0,
//! real HTTP. One module per capability; each test reads like the spec row it checks.

// In tests a panic is the failure report: unwrapping is how a test says "this must hold".
#![allow(clippy::unwrap_used)]

mod util;

mod abuse;
mod access;
mod cli;
mod disclosure;
mod documents;
mod endpoints;
mod explanations;
mod indices;
mod logs;
mod map;
mod mcp;
mod pages;
mod pagination;
mod protocol;
mod publication_log;
mod resilience;
mod search;
mod serving;
mod sync;
mod tables;
