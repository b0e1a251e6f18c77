//! Writes one snapshot file, atomically.
//!
//! Bodies are streamed to a temporary file beside the target as they are rendered, hashed on
//! the way; the index and header come last; then the file is fsynced and renamed into place
//! and the directory fsynced. A crash at any point leaves either no file or a whole one, never
//! a half file under the target name. The temporary file is removed if writing fails.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signer, SigningKey};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::format::{
    Body, BodyRef, Encoded, Header, Index, FORMAT_VERSION, HEADER_LEN, INDEX_ALIGN, OLDEST_READABLE_VERSION,
    SIGNED_HEADER_LEN,
};

/// The strong ETag of a body: its XXH3-64, quoted.
pub fn etag_of(bytes: &[u8]) -> String {
    format!("\"{:016x}\"", xxh3_64(bytes))
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write snapshot {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("cannot encode the snapshot index: {0}")]
    Index(String),
}

pub struct SnapshotWriter {
    target: PathBuf,
    temp: PathBuf,
    out: BufWriter<File>,
    hasher: Xxh3,
    bodies_len: u64,
    finished: bool,
}

impl std::fmt::Debug for SnapshotWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotWriter")
            .field("target", &self.target)
            .field("bodies_len", &self.bodies_len)
            .finish()
    }
}

impl SnapshotWriter {
    pub fn create(target: &Path) -> Result<SnapshotWriter, WriteError> {
        let io_error = |source| WriteError::Io {
            path: target.to_owned(),
            source,
        };
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .ok_or_else(|| io_error(io::Error::new(io::ErrorKind::InvalidInput, "not a file path")))?;
        let temp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .map_err(io_error)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&[0u8; HEADER_LEN]).map_err(io_error)?;
        Ok(SnapshotWriter {
            target: target.to_owned(),
            temp,
            out,
            hasher: Xxh3::new(),
            bodies_len: 0,
            finished: false,
        })
    }

    fn io_error(&self, source: io::Error) -> WriteError {
        WriteError::Io {
            path: self.target.clone(),
            source,
        }
    }

    fn write_hashed(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        self.out.write_all(bytes).map_err(|e| self.io_error(e))?;
        self.hasher.update(bytes);
        Ok(())
    }

    /// Appends raw bytes to the bodies region.
    pub fn append(&mut self, bytes: &[u8]) -> Result<BodyRef, WriteError> {
        let body = BodyRef {
            offset: self.bodies_len,
            len: bytes.len() as u64,
        };
        self.write_hashed(bytes)?;
        self.bodies_len += bytes.len() as u64;
        Ok(body)
    }

    /// Appends a response body and its gzip variant, with their ETags.
    pub fn append_body(&mut self, identity: &[u8], gzip: Option<&[u8]>) -> Result<Body, WriteError> {
        let etag = etag_of(identity);
        let identity = self.append(identity)?;
        let gzip = match gzip {
            Some(bytes) => Some(Encoded {
                etag: etag_of(bytes),
                bytes: self.append(bytes)?,
            }),
            None => None,
        };
        Ok(Body { identity, etag, gzip })
    }

    /// Writes the index and header, makes the file durable and moves it into place.
    pub fn finish(mut self, index: &Index, publisher: Option<&SigningKey>) -> Result<Header, WriteError> {
        let padding = (INDEX_ALIGN - self.bodies_len % INDEX_ALIGN) % INDEX_ALIGN;
        self.write_hashed(&[0u8; INDEX_ALIGN as usize][..padding as usize])?;
        let archive = rkyv::to_bytes::<rkyv::rancor::Error>(index).map_err(|e| WriteError::Index(e.to_string()))?;
        self.write_hashed(&archive)?;
        let index_offset = HEADER_LEN as u64 + self.bodies_len + padding;
        let mut header = Header {
            format_version: FORMAT_VERSION,
            min_reader_version: OLDEST_READABLE_VERSION,
            bodies_offset: HEADER_LEN as u64,
            bodies_len: self.bodies_len,
            index_offset,
            index_len: archive.len() as u64,
            checksum: self.hasher.digest128(),
            dataset_version: index.dataset_version.clone(),
            methodology_version: index.methodology_version.clone(),
            as_of: index.as_of.clone(),
            publisher: None,
        };
        if let Some(key) = publisher {
            // The "signed" flag lies inside the signed bytes; the key and signature after them.
            let public = key.verifying_key().to_bytes();
            header.publisher = Some((public, [0; 64]));
            let signature = key.sign(&header.encode()[..SIGNED_HEADER_LEN]);
            header.publisher = Some((public, signature.to_bytes()));
        }
        self.out.flush().map_err(|e| self.io_error(e))?;
        let file = self.out.get_mut();
        let result = file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&header.encode()))
            .and_then(|_| file.sync_all());
        result.map_err(|e| self.io_error(e))?;
        std::fs::rename(&self.temp, &self.target).map_err(|e| self.io_error(e))?;
        self.finished = true;
        if let Some(dir) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Durability of the rename itself; not every filesystem supports it, which is fine.
            if let Ok(dir) = File::open(dir) {
                let _ = dir.sync_all();
            }
        }
        Ok(header)
    }
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
