//! The bulk exports: the whole dataset version as NDJSON, one line per company after a first
//! line carrying `meta`, in three documents (companies with their events and signed records;
//! the daily series at 80%; at 95%), each stored in the snapshot as one gzip member.
//!
//! Companies are rendered in parallel and written in slug order, interleaved with their own
//! bodies, while each export must be contiguous in the file. So each document is spooled to an
//! unnamed temporary file as the companies stream past (already compressed, a piece per line:
//! see [`marks_format::gzip`]) and copied into the snapshot at the end.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use crate::writer::{SnapshotWriter, WriteError};
use marks_format::etag::quoted;
use marks_format::gzip::{Piece, Trailer, HEADER};
use marks_format::layout::Export;

/// One export document being written: the gzip member so far, and the length and hash of the
/// text it stands for.
pub struct Spool {
    file: BufWriter<File>,
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
        let file = tempfile::tempfile_in(dir).or_else(|_| tempfile::tempfile())?;
        let mut spool = Spool {
            file: BufWriter::with_capacity(1 << 20, file),
            trailer: Trailer::default(),
            identity: Xxh3::new(),
        };
        spool.file.write_all(&HEADER)?;
        spool.push(first_line, &Piece::of(first_line, level)?)?;
        Ok(spool)
    }

    /// Appends `text`, deflated as `piece`.
    pub fn push(&mut self, text: &[u8], piece: &Piece) -> io::Result<()> {
        debug_assert_eq!(text.len() as u64, piece.len);
        self.file.write_all(&piece.deflated)?;
        self.trailer.add(piece);
        self.identity.update(text);
        Ok(())
    }

    /// Closes the member and copies it into the snapshot's bodies region.
    pub fn finish(mut self, writer: &mut SnapshotWriter, target: &Path) -> Result<Export, WriteError> {
        let io_error = |source| WriteError::Io {
            path: target.to_owned(),
            source,
        };
        self.file.write_all(&self.trailer.bytes()).map_err(io_error)?;
        let mut file = self.file.into_inner().map_err(|e| io_error(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io_error)?;
        let (gzip, gzip_etag) = writer.append_stream(io::BufReader::with_capacity(1 << 20, file))?;
        Ok(Export {
            gzip,
            gzip_etag,
            identity_len: self.trailer.text_len(),
            identity_etag: quoted(self.identity.digest()),
        })
    }
}
