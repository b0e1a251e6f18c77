//! The keys file: its format, read and written whole. The server reads it into a
//! [`crate::keys::ring::KeyRing`]; the `marks keys` commands change it through
//! [`crate::keys::edit`].
//!
//! The keys file holds only BLAKE3 hashes of keys, never a key: a key is printed once when it
//! is issued and exists nowhere else. Keys carry the `vmk_` prefix so secret scanners can
//! find leaked ones. Nothing in this module logs or returns a plain key except `issue`.
//! Every change is checked (the server must accept the result), made under a lock file and
//! written atomically, so a reloading server never reads half a file.

use std::path::{Path, PathBuf};

use marks_format::file::atomic_file;
use serde::{Deserialize, Serialize};

/// Every key starts with this, so leaked keys are recognisable.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyStatus {
    Active,
    Revoked,
    Suspended,
}

/// One row of the keys file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyEntry {
    pub key_id: String,
    pub tenant: String,
    pub tier: String,
    pub status: KeyStatus,
    pub created: String,
    /// `blake3:<64 hex digits>` of the key.
    pub hash: String,
    /// Overrides the tier's per-minute budget for this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_min: Option<u32>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeysFile {
    #[serde(default, rename = "key")]
    pub(crate) keys: Vec<KeyEntry>,
}

#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("{path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("{path}: key {key_id}: {reason}")]
    Entry {
        path: PathBuf,
        key_id: String,
        reason: String,
    },
}

/// Whether a keys file that does not exist reads as empty (the commands that create it) or
/// is an error (the server, which must not drop every key because of a typo or a move).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Missing {
    Empty,
    Refused,
}

pub(crate) fn read_file_or(path: &Path, missing: Missing) -> Result<KeysFile, KeysError> {
    let fail = |reason: String| KeysError::File {
        path: path.to_owned(),
        reason,
    };
    let text = match marks_format::file::regular_file::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && missing == Missing::Empty => {
            return Ok(KeysFile::default())
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(fail("no such file (create one with `marks keys issue`)".into()))
        }
        Err(err) => return Err(fail(format!("cannot read: {err}"))),
    };
    toml::from_str(&text).map_err(|err| {
        let line = err
            .span()
            .map(|span| text.get(..span.start).unwrap_or(&text).matches('\n').count() + 1);
        match line {
            Some(line) => fail(format!("line {line}: {}", err.message())),
            None => fail(err.message().to_string()),
        }
    })
}

/// The keys file the server reads; a missing file is an error, so that a typo or a move
/// never drops every key.
pub(crate) fn read(path: &Path) -> Result<KeysFile, KeysError> {
    read_file_or(path, Missing::Refused)
}

pub(crate) fn write_file(path: &Path, file: &KeysFile) -> Result<(), KeysError> {
    let fail = |reason: String| KeysError::File {
        path: path.to_owned(),
        reason,
    };
    let body = toml::to_string(file).map_err(|e| fail(format!("cannot encode: {e}")))?;
    let text = format!(
        "# Valuation Marks API keys. Holds only BLAKE3 hashes of keys, never a key.\n\
         # Manage with `marks keys issue|revoke|list`; the server reloads this file on change.\n\n{body}"
    );
    atomic_file::write(path, text.as_bytes()).map_err(|e| fail(format!("cannot write: {e}")))
}

pub fn list(path: &Path) -> Result<Vec<KeyEntry>, KeysError> {
    Ok(read_file_or(path, Missing::Refused)?.keys)
}
