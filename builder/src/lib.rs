//! The Valuation Marks snapshot compiler: a dataset version (`dataset.toml`, `companies.csv`,
//! `events.csv`) goes in; one immutable snapshot file comes out, holding every response body the
//! server will ever send, already rendered, with its ETag, plus every sort order and list
//! index. The file's format, and what the server reads of it, is the `marks-format` crate; the
//! server never depends on this one.
//!
//! In folders by job:
//! - [`dataset`] reads and checks the source files; [`synth`] makes synthetic ones;
//! - [`methodology`] computes marks, bands, confidence and the scorecard's numbers;
//! - [`render`] turns them into response bodies, signed records, the bulk exports and the
//!   change log carried from one snapshot to the next;
//! - [`present`] into what people read: the home and scorecard pages and the scorecard as text;
//! - [`writer`] writes the file; [`compile`] runs the pipeline (named apart from cargo's `build.rs`).

pub mod compile;
pub mod dataset;
pub mod methodology;
pub mod present;
pub mod render;
pub mod synth;
pub mod writer;

pub use compile::{build, BuildError, BuildOptions, BuildReport};
