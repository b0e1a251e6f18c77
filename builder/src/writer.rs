//! Writes one snapshot file, atomically.
//!
//! Bodies are streamed to a temporary file beside the target as they are rendered, hashed on
//! the way (XXH3 for the checksum, BLAKE3 for the digest a publisher signs); the index and
//! header come last; then the file is moved into place by [`AtomicFile`], so a crash at any
//! point leaves either no file or a whole one under the target name.

use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signer, SigningKey};
use xxhash_rust::xxh3::Xxh3;

use marks_format::file::atomic_file::AtomicFile;
use marks_format::file::etag::{etag_of, quoted};
use marks_format::file::layout::{
    Body, BodyRef, Encoded, Header, Index, FORMAT_VERSION, HEADER_LEN, INDEX_ALIGN, OLDEST_READABLE_VERSION,
    SIGNED_HEADER_LEN,
};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write snapshot {path}")]
    Io { path: PathBuf, source: io::Error },
    #[error("cannot encode the snapshot index: {0}")]
    Index(String),
}

pub struct SnapshotWriter {
    target: PathBuf,
    out: BufWriter<AtomicFile>,
    checksum: Xxh3,
    digest: blake3::Hasher,
    bodies_len: u64,
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
        let file = AtomicFile::create(target).map_err(io_error)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&[0u8; HEADER_LEN]).map_err(io_error)?;
        Ok(SnapshotWriter {
            target: target.to_owned(),
            out,
            checksum: Xxh3::new(),
            digest: blake3::Hasher::new(),
            bodies_len: 0,
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
        self.checksum.update(bytes);
        self.digest.update(bytes);
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

    /// Appends everything `reader` yields (a spooled export) to the bodies region; returns
    /// where it is and its strong ETag.
    pub fn append_stream(&mut self, mut reader: impl io::Read) -> Result<(BodyRef, String), WriteError> {
        let offset = self.bodies_len;
        let mut etag = Xxh3::new();
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_error(e)),
            };
            etag.update(&buffer[..n]);
            self.write_hashed(&buffer[..n])?;
            self.bodies_len += n as u64;
        }
        let body = BodyRef {
            offset,
            len: self.bodies_len - offset,
        };
        Ok((body, quoted(etag.digest())))
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
            checksum: self.checksum.digest128(),
            content_digest: *self.digest.finalize().as_bytes(),
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
        let mut file = self.out.into_inner().map_err(|e| WriteError::Io {
            path: self.target.clone(),
            source: e.into_error(),
        })?;
        let result = file
            .file()
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.file().write_all(&header.encode()))
            .and_then(|_| file.commit());
        result.map_err(|source| WriteError::Io {
            path: self.target,
            source,
        })?;
        Ok(header)
    }
}
