//! The validated, memory-mapped reader of a snapshot file.
//!
//! `Snapshot::open` copies the file into a private, unnamed file (one no other process can
//! open, write or truncate), maps that copy and checks it once, completely: header, versions,
//! region bounds, content checksum, publisher signature and content digest, rkyv archive
//! validation and the internal consistency the server relies on (every body in bounds, every
//! list row a real company, companies sorted). After that, every accessor is infallible and
//! copies nothing: bodies are `Bytes` slices that borrow the map and keep it alive, so a
//! snapshot swapped out while a response is still being written stays mapped until that
//! response is done.
//!
//! Why a private copy: a map is only sound while nobody changes the file under it. Operators
//! publish by rename (`marks install`), but they also `cp` over the live file, truncate it or
//! rewrite it in place; mapping their file directly would turn that into a bus error in the
//! middle of a request. Copying reads the file with ordinary reads (a file cut short while it
//! is copied is a short copy that fails its checks, never a crash), and the copy is what gets
//! mapped. On filesystems with reflinks (XFS, Btrfs) the copy shares blocks and costs no disk.

use std::fs::File;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use ed25519_dalek::{Signature, VerifyingKey};
use memmap2::{Mmap, MmapOptions};
use xxhash_rust::xxh3::xxh3_128;

use crate::file::layout::{
    ArchivedBodyRef, ArchivedIndex, Header, HeaderError, FORMAT_VERSION, HEADER_LEN, INDEX_ALIGN,
    OLDEST_READABLE_VERSION, SIGNED_HEADER_LEN, SORTS,
};

/// Why a snapshot file was refused. Each message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot open snapshot {path}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("not a Valuation Marks snapshot (bad magic bytes); check the path")]
    BadMagic,
    #[error(
        "snapshot is truncated: it needs {expected} bytes but has {got}; the copy was cut short, publish it again (write a new file, then rename it into place)"
    )]
    Truncated { expected: u64, got: u64 },
    #[error(
        "snapshot format version {got} is not readable here (this build reads versions {oldest} to {newest}); rebuild the snapshot with a matching `marks build` or upgrade the server"
    )]
    Version { got: u32, oldest: u32, newest: u32 },
    #[error(
        "snapshot format version {got} is older than this server reads (versions {oldest} to {newest}); rebuild it from its dataset with this version's `marks build`"
    )]
    TooOld { got: u32, oldest: u32, newest: u32 },
    #[error("snapshot content does not match the digest in its header: the content was replaced after it was signed; rebuild it")]
    DigestMismatch,
    #[error("snapshot checksum mismatch: the content was modified or corrupted after it was written; rebuild it")]
    ChecksumMismatch,
    #[error("snapshot header is malformed: {0}; rebuild it")]
    Header(String),
    #[error("snapshot index failed validation: {0}; rebuild it")]
    Archive(String),
    #[error("snapshot is internally inconsistent: {0}; rebuild it")]
    Inconsistent(String),
    #[error(
        "snapshot is not signed by a publisher, but a publisher key is required; build it with `marks build --publisher-key`"
    )]
    Unsigned,
    #[error("snapshot publisher signature does not verify against {0}; it was not published by the configured key")]
    PublisherSignature(&'static str),
}

/// What a reader requires beyond a well-formed file.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Refuse snapshots not signed by this publisher key.
    pub publisher_key: Option<VerifyingKey>,
}

type IndexRef<'a> = &'a ArchivedIndex;

self_cell::self_cell!(
    struct Mapped {
        owner: Bytes,
        #[covariant]
        dependent: IndexRef,
    }
);

/// A checked snapshot. Cheap to share behind an `Arc`.
pub struct Snapshot {
    mapped: Mapped,
    header: Header,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("header", &self.header)
            .field("companies", &self.index().companies.len())
            .finish()
    }
}

/// Maps a file read-only.
///
/// # Safety
///
/// A memory map is only sound while nobody modifies the file. The only file mapped here is the
/// private copy made by [`private_copy`]: unnamed, created by this process, never written after
/// the copy, so no other process can open it by path to write or truncate it.
#[allow(unsafe_code)]
fn map_file(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: see the function docs; the file is never written while mapped. `populate`
    // prefaults the pages the checksum is about to read anyway, in one pass.
    unsafe { MmapOptions::new().populate().map(file) }
}

/// Copies `source` into an unnamed file (`O_TMPFILE` where the platform has it) in `dir`, or in
/// the system's temporary directory when `dir` is not writable. Plain reads, so a source
/// truncated meanwhile gives a short copy, never a fault.
fn private_copy(source: &File, dir: &Path) -> std::io::Result<File> {
    let mut copy = tempfile::tempfile_in(dir).or_else(|_| tempfile::tempfile())?;
    let mut reader = source;
    // `io::copy` between files uses copy_file_range on Linux: in-kernel, and a reflink where the
    // filesystem can make one.
    std::io::copy(&mut reader, &mut copy)?;
    Ok(copy)
}

impl Snapshot {
    /// Copies, maps and checks a snapshot file.
    pub fn open(path: &Path, options: &OpenOptions) -> Result<Snapshot, SnapshotError> {
        let io_error = |source| SnapshotError::Io {
            path: path.to_owned(),
            source,
        };
        let file = crate::file::regular_file::open(path).map_err(io_error)?;
        Snapshot::from_file(&file, path, options)
    }

    /// Copies, maps and checks an open snapshot file (`path` names it in errors, and its
    /// directory is where the private copy goes). Whoever opened it can take the file's
    /// identity from the same handle, before and after, to tell whether it changed meanwhile.
    pub fn from_file(file: &File, path: &Path, options: &OpenOptions) -> Result<Snapshot, SnapshotError> {
        let io_error = |source| SnapshotError::Io {
            path: path.to_owned(),
            source,
        };
        let len = file.metadata().map_err(io_error)?.len();
        if len < HEADER_LEN as u64 {
            return Err(SnapshotError::Truncated {
                expected: HEADER_LEN as u64,
                got: len,
            });
        }
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let copy = private_copy(file, dir).map_err(io_error)?;
        let map = map_file(&copy).map_err(io_error)?;
        Snapshot::from_bytes(Bytes::from_owner(map), options)
    }

    /// Checks a snapshot held in memory. The bytes must be 16-byte aligned (a map is).
    pub fn from_bytes(bytes: Bytes, options: &OpenOptions) -> Result<Snapshot, SnapshotError> {
        let header = Header::decode(&bytes).map_err(|e| match e {
            HeaderError::Short => SnapshotError::Truncated {
                expected: HEADER_LEN as u64,
                got: bytes.len() as u64,
            },
            HeaderError::Magic => SnapshotError::BadMagic,
            HeaderError::Text(field) => SnapshotError::Header(format!("{field} is not UTF-8")),
        })?;
        if header.format_version < OLDEST_READABLE_VERSION {
            return Err(SnapshotError::TooOld {
                got: header.format_version,
                oldest: OLDEST_READABLE_VERSION,
                newest: FORMAT_VERSION,
            });
        }
        if header.min_reader_version > FORMAT_VERSION {
            return Err(SnapshotError::Version {
                got: header.format_version,
                oldest: OLDEST_READABLE_VERSION,
                newest: FORMAT_VERSION,
            });
        }
        check_layout(&header, bytes.len() as u64)?;
        verify_publisher(&header, &bytes[..HEADER_LEN], options)?;
        // The signature vouches for the digest; only a digest check ties it to these bytes, and
        // it comes first, so that a signed file's content is judged by what nobody can forge.
        // Unsigned files skip it: their checksum catches damage, and BLAKE3 costs more.
        if header.publisher.is_some() && *blake3::hash(&bytes[HEADER_LEN..]).as_bytes() != header.content_digest {
            return Err(SnapshotError::DigestMismatch);
        }
        if xxh3_128(&bytes[HEADER_LEN..]) != header.checksum {
            return Err(SnapshotError::ChecksumMismatch);
        }
        let index_range = header.index_offset as usize..(header.index_offset + header.index_len) as usize;
        let bodies_len = header.bodies_len;
        let mapped = Mapped::try_new(bytes, |bytes| {
            let index = rkyv::access::<ArchivedIndex, rkyv::rancor::Error>(&bytes[index_range])
                .map_err(|e| SnapshotError::Archive(e.to_string()))?;
            check_index(index, bodies_len)?;
            Ok::<_, SnapshotError>(index)
        })?;
        Ok(Snapshot { mapped, header })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn index(&self) -> &ArchivedIndex {
        self.mapped.borrow_dependent()
    }

    /// Size of the whole file in bytes.
    pub fn file_len(&self) -> u64 {
        self.mapped.borrow_owner().len() as u64
    }

    /// A body's bytes, borrowing the map (no copy). In bounds: checked at load.
    pub fn body(&self, body: &ArchivedBodyRef) -> Bytes {
        let start = self.header.bodies_offset as usize + body.offset.to_native() as usize;
        self.mapped
            .borrow_owner()
            .slice(start..start + body.len.to_native() as usize)
    }

    /// A `Bytes` view of bytes inside the mapped file (a body, or a string of the index), for
    /// handing to hyper without a copy. Panics if `part` is not inside the file, which only a
    /// caller passing foreign memory can cause.
    pub fn file_slice(&self, part: &[u8]) -> Bytes {
        self.mapped.borrow_owner().slice_ref(part)
    }

    /// A body's bytes as a plain slice, for copying into assembled responses.
    pub fn body_slice(&self, body: &ArchivedBodyRef) -> &[u8] {
        let start = self.header.bodies_offset as usize + body.offset.to_native() as usize;
        &self.mapped.borrow_owner()[start..start + body.len.to_native() as usize]
    }
}

fn check_layout(header: &Header, file_len: u64) -> Result<(), SnapshotError> {
    let inconsistent = |what: &str| SnapshotError::Header(what.to_string());
    if header.bodies_offset != HEADER_LEN as u64 {
        return Err(inconsistent("bodies do not start right after the header"));
    }
    let bodies_end = header
        .bodies_offset
        .checked_add(header.bodies_len)
        .ok_or_else(|| inconsistent("bodies region overflows"))?;
    let end = header
        .index_offset
        .checked_add(header.index_len)
        .ok_or_else(|| inconsistent("index region overflows"))?;
    if header.index_offset < bodies_end || !header.index_offset.is_multiple_of(INDEX_ALIGN) || header.index_len == 0 {
        return Err(inconsistent("index region is misplaced"));
    }
    if file_len < end {
        return Err(SnapshotError::Truncated {
            expected: end,
            got: file_len,
        });
    }
    if file_len > end {
        return Err(inconsistent("unexpected bytes after the index"));
    }
    Ok(())
}

fn verify_publisher(header: &Header, header_bytes: &[u8], options: &OpenOptions) -> Result<(), SnapshotError> {
    let signed = &header_bytes[..SIGNED_HEADER_LEN];
    match (&header.publisher, &options.publisher_key) {
        (None, Some(_)) => Err(SnapshotError::Unsigned),
        (None, None) => Ok(()),
        (Some((key, signature)), required) => {
            let signature = Signature::from_bytes(signature);
            if let Some(required) = required {
                if required.as_bytes() != key {
                    return Err(SnapshotError::PublisherSignature(
                        "the configured publisher key (signed by another key)",
                    ));
                }
            }
            // A signed file whose own signature fails is corrupt even when no key is required.
            let embedded = VerifyingKey::from_bytes(key)
                .map_err(|_| SnapshotError::PublisherSignature("its embedded key (not a valid Ed25519 key)"))?;
            embedded
                .verify_strict(signed, &signature)
                .map_err(|_| SnapshotError::PublisherSignature("the publisher key in its header"))
        }
    }
}

/// The invariants the server's infallible accessors rely on.
fn check_index(index: &ArchivedIndex, bodies_len: u64) -> Result<(), SnapshotError> {
    let fail = |what: String| Err(SnapshotError::Inconsistent(what));
    for body in index.body_refs() {
        let end = body.offset.to_native().checked_add(body.len.to_native());
        if end.is_none_or(|end| end > bodies_len) {
            return fail(format!(
                "a body at offset {} lies outside the bodies region",
                body.offset
            ));
        }
    }
    let companies = index.companies.as_slice();
    // Cursors carry a slug and, for sort=name, a name: their bounds bound a cursor's length.
    if companies.iter().any(|c| {
        c.slug.len() > crate::rules::names::MAX_SLUG_BYTES || c.name.len() > crate::rules::names::MAX_NAME_BYTES
    }) {
        return fail("a company slug or name is longer than a dataset allows".into());
    }
    if companies.windows(2).any(|w| w[0].slug.as_str() >= w[1].slug.as_str()) {
        return fail("companies are not sorted by slug".into());
    }
    if index
        .sectors
        .as_slice()
        .windows(2)
        .any(|w| w[0].as_str() >= w[1].as_str())
    {
        return fail("sectors are not sorted".into());
    }
    let sectors = index.sectors.len();
    if companies.iter().any(|c| usize::from(c.sector.to_native()) >= sectors) {
        return fail("a company names a sector that is not in the sector table".into());
    }
    let lists = index.lists.as_slice();
    if lists.windows(2).any(|w| {
        (w[0].sort, w[0].universe, w[0].sector.to_native(), w[0].status)
            >= (w[1].sort, w[1].universe, w[1].sector.to_native(), w[1].status)
    }) {
        return fail("lists are not sorted".into());
    }
    let rows = index.list_rows.len();
    for list in lists {
        let end = list.start.to_native() as usize + list.len.to_native() as usize;
        if end > rows || usize::from(list.sort) >= SORTS.len() {
            return fail("a list lies outside the list rows".into());
        }
    }
    if index
        .list_rows
        .iter()
        .any(|&row| row.to_native() as usize >= companies.len())
    {
        return fail("a list row names no company".into());
    }
    if index.usage.len() != crate::rules::tiers::Tier::ALL.len() {
        return fail(format!(
            "{} usage bodies for {} tiers",
            index.usage.len(),
            crate::rules::tiers::Tier::ALL.len()
        ));
    }
    let tags = companies
        .iter()
        .flat_map(|c| [&c.profile, &c.events, &c.resolution, &c.events_csv])
        .chain(index.usage.iter())
        .chain(index.sector_lists.iter())
        .chain([&index.signing_keys, &index.scorecard, &index.scorecard_full]);
    let valid = |tag: &str| tag.len() >= 2 && tag.bytes().all(|b| (0x21..0x7f).contains(&b));
    for body in tags {
        if !valid(body.etag.as_str()) || body.gzip.as_ref().is_some_and(|g| !valid(g.etag.as_str())) {
            return fail("an ETag is not a valid header value".into());
        }
    }
    let series_tags = companies
        .iter()
        .flat_map(|c| c.series())
        .flat_map(|s| [s.identity_etag.as_str(), s.gzip_etag.as_str()]);
    for tag in series_tags {
        if !valid(tag) {
            return fail("a series' ETag is not a valid header value".into());
        }
    }
    let exports = &index.exports;
    let documents = companies.iter().flat_map(|c| c.documents());
    for export in documents.chain([
        &index.scorecard_targets,
        &index.scorecard_targets_full,
        &exports.companies,
        &exports.series_80,
        &exports.series_95,
        &exports.companies_csv,
        &exports.series_80_csv,
        &exports.series_95_csv,
    ]) {
        if !valid(export.gzip_etag.as_str()) || !valid(export.identity_etag.as_str()) {
            return fail("the ETag of a document stored as gzip only is not a valid header value".into());
        }
    }
    check_change_log(index)
}

/// The change log names this snapshot's version last, has one list per earlier version, and
/// every list names real companies in order.
fn check_change_log(index: &ArchivedIndex) -> Result<(), SnapshotError> {
    let fail = |what: &str| Err(SnapshotError::Inconsistent(format!("change log: {what}")));
    let log = &index.changes;
    if log.versions.last().map(|v| v.as_str()) != Some(index.dataset_version.as_str()) {
        return fail("it does not end with this snapshot's dataset version");
    }
    if log.since.len() + 1 != log.versions.len() {
        return fail("it does not hold one list per earlier version");
    }
    let companies = index.companies.len();
    for rows in log.since.iter() {
        if rows.iter().any(|row| row.company.to_native() as usize >= companies) {
            return fail("a row names no company");
        }
        if rows.windows(2).any(|w| w[0].company >= w[1].company) {
            return fail("a list is not sorted by company");
        }
    }
    Ok(())
}
