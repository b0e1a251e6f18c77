//! The Valuation Marks snapshot format, and what the compiler (`marks-builder`) and the server
//! (`marks`) share. Nothing here computes a mark, answers a request or draws a page: the
//! server's request path depends on this crate and never on the compiler.
//!
//! Two rooms, by job:
//! - [`file`](mod@file): the snapshot file and how it is read and written: its layout and archived
//!   types, the validated reader, a body's ETag and gzip framing, and opening or replacing an
//!   operator's file safely;
//! - [`rules`]: what the builder and the server must agree on about the data: tiers and
//!   scopes, signatures, name search, the CSV tables, days and date ranges, slugs and names,
//!   index weights.

pub mod file;
pub mod rules;

pub use file::reader::{OpenOptions, Snapshot, SnapshotError};
