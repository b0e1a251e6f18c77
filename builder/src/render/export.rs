//! The bulk exports: the whole dataset version as NDJSON, one line per company after a first
//! line carrying `meta`, in three documents (companies with their events and signed records;
//! the daily series at 80%; at 95%), each stored in the snapshot as one gzip member.
//!
//! Companies are rendered in parallel and written in slug order, interleaved with their own
//! bodies, while each export must be contiguous in the file. So each document is spooled to an
//! unnamed temporary file as the companies stream past (already compressed, a piece per line:
//! see [`marks_format::file::gzip`]) and copied into the snapshot at the end.
//!
//! A [`SpooledBody`] does the same for a single document too large to hold whole in memory: the
//! scorecard's scored targets, stored as gzip only like the exports.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use crate::writer::{SnapshotWriter, WriteError};
use marks_format::file::etag::quoted;
use marks_format::file::gzip::{Piece, Trailer, HEADER};
use marks_format::file::layout::Export;

/// One export document being written: the gzip member so far, and the length and hash of the
/// text it stands for.
pub struct Spool {
    file: BufWriter<File>,
    /// Bytes of the member written so far.
    gzip_len: u64,
    trailer: Trailer,
    identity: Xxh3,
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("text_len", &self.trailer.text_len())
            .finish()
    }
}

impl Spool {
    /// A spool in `dir` (beside the snapshot being written, so it is on the same disk), or in
    /// the system's temporary directory if `dir` will not take one, starting with `first_line`.
    pub fn create(dir: &Path, first_line: &[u8], level: u32) -> io::Result<Spool> {
        let mut spool = Spool::empty(dir)?;
        spool.push(first_line, &Piece::of(first_line, level)?)?;
        Ok(spool)
    }

    /// A spool in `dir` (or the system's temporary directory) with no text yet.
    fn empty(dir: &Path) -> io::Result<Spool> {
        let mut spool = Spool {
            file: BufWriter::with_capacity(1 << 20, temporary_file(dir)?),
            gzip_len: HEADER.len() as u64,
            trailer: Trailer::default(),
            identity: Xxh3::new(),
        };
        spool.file.write_all(&HEADER)?;
        Ok(spool)
    }

    /// Appends `text`, deflated as `piece`; returns where the piece begins in the member.
    pub fn push(&mut self, text: &[u8], piece: &Piece) -> io::Result<u64> {
        debug_assert_eq!(text.len() as u64, piece.len);
        let at = self.gzip_len;
        self.file.write_all(&piece.deflated)?;
        self.gzip_len += piece.deflated.len() as u64;
        self.trailer.add(piece);
        self.identity.update(text);
        Ok(at)
    }

    /// Closes the member and copies it into the snapshot's bodies region.
    pub fn finish(mut self, writer: &mut SnapshotWriter, target: &Path) -> Result<Export, WriteError> {
        self.file
            .write_all(&self.trailer.bytes())
            .map_err(|source| io_error(target, source))?;
        let (gzip, gzip_etag) = copy_into(self.file, writer, target)?;
        Ok(Export {
            gzip,
            gzip_etag,
            identity_len: self.trailer.text_len(),
            identity_etag: quoted(self.identity.digest()),
        })
    }
}

/// Text deflated a piece at a time: large enough that pieces compress about as well as one
/// stream, small enough to hold.
const PIECE_BYTES: usize = 1 << 20;

/// One document written as it is rendered ([`Write`]) and stored as gzip only, like an export:
/// deflated a mebibyte of text at a time (`PIECE_BYTES`) into a spool, never whole in memory.
/// The scorecard's scored targets, about 2.7 KB a target, so gigabytes for a million events.
pub struct SpooledBody {
    /// Text written but not yet deflated.
    pending: Vec<u8>,
    gzip: Spool,
    level: u32,
}

impl std::fmt::Debug for SpooledBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpooledBody").field("spool", &self.gzip).finish()
    }
}

impl SpooledBody {
    /// A document spooled in `dir`, deflated at `level` (at least 1: it is stored as gzip only).
    pub fn create(dir: &Path, level: u32) -> io::Result<SpooledBody> {
        Ok(SpooledBody {
            pending: Vec::with_capacity(PIECE_BYTES),
            gzip: Spool::empty(dir)?,
            level: level.max(1),
        })
    }

    fn deflate_pending(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.gzip.push(&self.pending, &Piece::of(&self.pending, self.level)?)?;
        }
        self.pending.clear();
        Ok(())
    }

    /// Closes the gzip member and copies it into the snapshot's bodies region.
    pub fn finish(mut self, writer: &mut SnapshotWriter, target: &Path) -> Result<Export, WriteError> {
        self.deflate_pending().map_err(|source| io_error(target, source))?;
        self.gzip.finish(writer, target)
    }
}

impl Write for SpooledBody {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= PIECE_BYTES {
            self.deflate_pending()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An unnamed temporary file in `dir` (beside the snapshot, on the same disk), or in the
/// system's temporary directory if `dir` will not take one.
fn temporary_file(dir: &Path) -> io::Result<File> {
    tempfile::tempfile_in(dir).or_else(|_| tempfile::tempfile())
}

/// Copies what `file` holds from its start into the snapshot's bodies region.
fn copy_into(
    file: BufWriter<File>,
    writer: &mut SnapshotWriter,
    target: &Path,
) -> Result<(marks_format::file::layout::BodyRef, String), WriteError> {
    let mut file = file.into_inner().map_err(|e| io_error(target, e.into_error()))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|source| io_error(target, source))?;
    writer.append_stream(io::BufReader::with_capacity(1 << 20, file))
}

fn io_error(target: &Path, source: io::Error) -> WriteError {
    WriteError::Io {
        path: target.to_owned(),
        source,
    }
}
