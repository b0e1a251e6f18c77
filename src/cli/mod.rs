//! The `marks` command line: `serve`, the offline commands (build, synth, keygen,
//! verify-snapshot, install, publish, keys) and `mcp`.

pub mod commands;
pub mod mcp;
pub mod serve;
