//! The Valuation Marks snapshot compiler, and the one definition of the snapshot format.
//!
//! A dataset version (`dataset.toml`, `companies.csv`, `events.csv`) goes in; one immutable
//! snapshot file comes out, holding every response body the server will ever send, already
//! rendered, with its ETag, plus every sort order and list index. The server (the `marks`
//! crate) only maps the file and looks bytes up.
//!
//! - [`dataset`] reads and checks the source files;
//! - [`methodology`] computes marks, bands, confidence and the scorecard (v0.3.0, with the
//!   previous method and two baselines as comparison forecasters);
//! - [`render`] and [`signing`] turn them into response bodies and signed records, [`pages`]
//!   into the home and scorecard pages;
//! - [`export`] spools the bulk exports, compressed in pieces by [`gzip`]; [`changes`] keeps the
//!   change log carried from one snapshot to the next;
//! - [`format`](mod@format), [`writer`] and [`snapshot`] define, write and read the file;
//! - [`regular_file`] opens the files an operator names without ever waiting on one;
//! - [`build`](mod@build) runs the pipeline; [`synth`] makes synthetic datasets; [`tiers`] is the access
//!   table shared with the server.

pub mod build;
pub mod changes;
pub mod dataset;
pub mod export;
pub mod methodology;
pub mod pages;
pub mod render;
pub mod signing;
pub mod synth;
pub mod writer;

pub use build::{build, BuildError, BuildOptions, BuildReport};
