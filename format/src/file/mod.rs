//! The snapshot file, and files in general:
//! - [`layout`]: the file (a 256-byte header, the bodies, an rkyv index) and every archived type;
//! - [`reader`]: the validated, memory-mapped [`Snapshot`](reader::Snapshot) (checked once,
//!   then read zero-copy);
//! - [`etag`], [`gzip`]: the ETag of a body, and gzip members built from deflated pieces;
//! - [`regular_file`], [`atomic_file`]: opening an operator's file without ever waiting on one,
//!   and replacing a file atomically.

pub mod atomic_file;
pub mod etag;
pub mod gzip;
pub mod layout;
pub mod reader;
pub mod regular_file;
pub mod succession;
