//! Opening a file that must be a regular file (a snapshot, a keys file, a key or a
//! certificate) without ever waiting on it.
//!
//! A plain `open()` of a FIFO blocks until a writer appears, and reading a device or a socket
//! can block for good. A server that watches operator-controlled paths must not hang because
//! someone put a FIFO (or `--keys <(...)`) there, so every such path is opened with
//! `O_NONBLOCK`, which makes `open()` of a FIFO return at once, then checked with `fstat` on
//! the open handle (no race with a rename between the check and the open) and refused unless it
//! is a regular file. On a regular file `O_NONBLOCK` changes nothing.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Opens `path` for reading without blocking, and refuses anything but a regular file with an
/// `InvalidInput` error that says what was found (a directory, a FIFO, a socket, a device).
pub fn open(path: &Path) -> io::Result<File> {
    let file = open_nonblocking(path)?;
    let kind = file.metadata()?.file_type();
    match kind_name(&kind) {
        None => Ok(file),
        Some(found) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{found}, not a regular file (replace it with a regular file)"),
        )),
    }
}

/// The whole file, if it is a regular file.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = open(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The whole file as UTF-8, if it is a regular file.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// What a file that is not a regular file is, in words; `None` for a regular file.
fn kind_name(kind: &std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
    }
    Some("not a regular file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, "x = 1\n").unwrap();
        assert_eq!(read_to_string(&path).unwrap(), "x = 1\n");
    }

    #[test]
    fn a_directory_and_a_device_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let err = open(dir.path()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("a directory"), "{err}");
        #[cfg(unix)]
        {
            let err = read(Path::new("/dev/zero")).unwrap_err();
            assert!(err.to_string().contains("a character device"), "{err}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_without_a_writer_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.snap");
        let status = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(status.success());
        // A blocking open() would wait here for a writer forever.
        let err = open(&path).unwrap_err();
        assert!(err.to_string().contains("named pipe (FIFO)"), "{err}");
    }
}
