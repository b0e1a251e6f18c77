//! A file's identity: what the watcher compares to notice a snapshot or keys file replaced
//! (by rename or a re-pointed symlink) or rewritten in place, without reading it whole and
//! without ever waiting on something that is not a regular file.

use std::fs::File;
use std::path::Path;
use std::time::SystemTime;

use marks_format::file::regular_file;

/// Identifies a file's content cheaply, to notice a file replaced (by rename or a re-pointed
/// symlink) or rewritten in place.
///
/// Metadata alone can miss a rewrite: file times are coarse (a few milliseconds), so a file
/// read half-written and completed within the same tick would keep the identity of the half
/// file it was refused as, and never be read again. So the identity also hashes the file's
/// first and last bytes: the header, and the end of the index, which any writer writes last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
    ends: u64,
}

/// How many bytes at each end of a file its identity covers.
const IDENTITY_ENDS: u64 = 4096;

impl FileIdentity {
    /// Follows symlinks, so re-pointing a link is a change. Never waits on the file: something
    /// that is not a regular file (a FIFO, a device) is identified by its metadata alone, so
    /// that it is seen as a change, refused once by the load, and not read again until it
    /// changes.
    pub fn of(path: &Path) -> Option<FileIdentity> {
        match regular_file::open(path) {
            Ok(file) => FileIdentity::of_file(&file),
            Err(err) if err.kind() == std::io::ErrorKind::InvalidInput => {
                FileIdentity::of_metadata(&std::fs::metadata(path).ok()?, 0)
            }
            Err(_) => None,
        }
    }

    /// The identity of an open file: the file actually read, whatever its path names now.
    pub fn of_file(file: &File) -> Option<FileIdentity> {
        let meta = file.metadata().ok()?;
        let ends = ends_hash(file, meta.len());
        FileIdentity::of_metadata(&meta, ends)
    }

    fn of_metadata(meta: &std::fs::Metadata, ends: u64) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let (device, inode) = (meta.dev(), meta.ino());
        Some(FileIdentity {
            device,
            inode,
            len: meta.len(),
            modified: meta.modified().ok(),
            ends,
        })
    }
}

/// XXH3 of a file's first and last `IDENTITY_ENDS` bytes (what could be read of them).
fn ends_hash(file: &File, len: u64) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = [0u8; IDENTITY_ENDS as usize];
    for start in [0, len.saturating_sub(IDENTITY_ENDS)] {
        let read = read_at(file, &mut buf, start);
        hasher.update(&buf[..read]);
    }
    hasher.digest()
}

fn read_at(file: &File, buf: &mut [u8], offset: u64) -> usize {
    use std::os::unix::fs::FileExt;
    file.read_at(buf, offset).unwrap_or(0)
}
