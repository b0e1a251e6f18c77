//! Replacing a file so that a reader sees the old file or the whole new one, never part of
//! one: write a temporary file beside the target, fsync it, rename it over the target, fsync
//! the directory. A crash at any point leaves the old file or the new one under the target's
//! name; a temporary file left unfinished is removed when its `AtomicFile` is dropped.
//!
//! Snapshots (`marks build`, `marks install`) and the keys file are written this way; the
//! server reloads whichever of them it watches, so it must never find one half written.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// A file being written, not yet in place.
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    temp: NamedTempFile,
}

impl AtomicFile {
    /// Starts a temporary file in the target's directory (the rename must not cross
    /// filesystems), named after the target and hidden.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let name = target
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
        let prefix = format!(".{}.", name.to_string_lossy());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // The new file keeps the mode of the one it replaces (a server running as another user
        // must still read it), or gets the usual 0644 less the umask; never tempfile's 0600.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(target).map_or(0o666 & !umask(), |meta| meta.permissions().mode());
            builder.permissions(std::fs::Permissions::from_mode(mode));
        }
        let temp = builder.tempfile_in(directory_of(target))?;
        Ok(AtomicFile {
            target: target.to_owned(),
            temp,
        })
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temporary file, to write (and seek) as any file.
    pub fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Makes the content durable and moves it into place.
    pub fn commit(self) -> io::Result<()> {
        self.temp.as_file().sync_all()?;
        self.temp.persist(&self.target).map_err(|e| e.error)?;
        // Durability of the rename itself; not every filesystem can sync a directory, which
        // leaves the rename as durable as that filesystem makes it.
        if let Ok(dir) = File::open(directory_of(&self.target)) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

/// Writing goes to the temporary file.
impl io::Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file().flush()
    }
}

/// Replaces `target` with `bytes`.
pub fn write(target: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut file = AtomicFile::create(target)?;
    file.file().write_all(bytes)?;
    file.commit()
}

/// Replaces `target` with a copy of `source`; returns the bytes copied.
pub fn copy(source: &Path, target: &Path) -> io::Result<u64> {
    let mut from = File::open(source)?;
    let mut file = AtomicFile::create(target)?;
    let copied = io::copy(&mut from, file.file())?;
    file.commit()?;
    Ok(copied)
}

/// The process's file-creation mask, from `/proc` (reading it through umask(2) would mean
/// changing it, for every thread); 022 where `/proc` does not say.
#[cfg(unix)]
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Umask:"))
                .and_then(|value| u32::from_str_radix(value.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

fn directory_of(target: &Path) -> &Path {
    target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_appears_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("live.dat");
        write(&target, b"old").unwrap();
        {
            use std::io::Write;
            let mut unfinished = AtomicFile::create(&target).unwrap();
            unfinished.file().write_all(b"half of the new").unwrap();
            // Dropped without commit: the target keeps the old bytes, no temp file remains.
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        write(&target, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("live.dat");
        write(&target, b"old").unwrap();
        let fresh = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(fresh & 0o600, 0o600, "{fresh:o}");
        assert_eq!(
            fresh & 0o044,
            0o044 & !umask(),
            "{fresh:o}: readable as the umask allows, not 0600"
        );
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        copy(&target, &dir.path().join("other.dat")).unwrap();
        write(&target, b"new").unwrap();
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o640);
    }
}
