//! The Valuation Marks server and the offline commands of the `marks` binary.

pub mod commands;
