//! The Valuation Marks snapshot format, and what the compiler (`marks-builder`) and the server
//! (`marks`) share. Nothing here computes a mark or answers a request: the server's request
//! path depends on this crate and never on the compiler.
//!
//! - [`layout`]: the file (a 256-byte header, the bodies, an rkyv index) and every archived type;
//! - [`reader`]: the validated, memory-mapped [`Snapshot`] (checked once, then read zero-copy);
//! - [`tiers`]: the access table (tiers, scopes, budgets, the usage body);
//! - [`signatures`]: key thumbprints, the JWKS, and checking a signed resolution record;
//! - [`etag`], [`gzip`]: the ETag of a body, and gzip members built from deflated pieces;
//! - [`day`], [`names`]: the calendar day and the slug and name grammar; [`search`]: how a
//!   query finds a company by name, alias or slug;
//! - [`table`]: the CSV form of the data routes (columns, cells safe in a spreadsheet);
//!   [`dated`]: the records of a date range inside a stored series, by binary search;
//! - [`weights`]: how an index weighs its constituents (the cap), for the builder and server;
//! - [`frame`]: the page frame every page is drawn in (`web/frame.html`);
//! - [`regular_file`], [`atomic_file`]: opening an operator's file without ever waiting on one,
//!   and replacing a file atomically.

pub mod atomic_file;
pub mod dated;
pub mod day;
pub mod etag;
pub mod frame;
pub mod gzip;
pub mod layout;
pub mod names;
pub mod reader;
pub mod regular_file;
pub mod search;
pub mod signatures;
pub mod table;
pub mod tiers;
pub mod weights;

pub use reader::{OpenOptions, Snapshot, SnapshotError};
