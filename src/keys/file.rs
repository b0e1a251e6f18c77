//! The keys file: its format, and the `marks keys` commands that issue, revoke, suspend,
//! reinstate and list keys in it. The server reads it into a
//! [`crate::keys::ring::KeyRing`].
//!
//! The keys file holds only BLAKE3 hashes of keys, never a key: a key is printed once when it
//! is issued and exists nowhere else. Keys carry the `vmk_` prefix so secret scanners can
//! find leaked ones. Nothing in this module logs or returns a plain key except `issue`.
//! Every change is checked (the server must accept the result), made under a lock file and
//! written atomically, so a reloading server never reads half a file.

use std::path::{Path, PathBuf};

use marks_builder::atomic_file;
use marks_builder::tiers::Tier;
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::keys::ring::{hash_key, KeyRing};

/// Every key starts with this, so leaked keys are recognisable.
pub const KEY_PREFIX: &str = "vmk_";
const HASH_PREFIX: &str = "blake3:";
const KEY_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

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

pub(crate) fn parse_hash(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix(HASH_PREFIX)?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

fn format_hash(hash: &[u8; 32]) -> String {
    let mut out = String::from(HASH_PREFIX);
    for byte in hash {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Whether a keys file that does not exist reads as empty (the commands that create it) or
/// is an error (the server, which must not drop every key because of a typo or a move).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Missing {
    Empty,
    Refused,
}

fn read_file_or(path: &Path, missing: Missing) -> Result<KeysFile, KeysError> {
    let fail = |reason: String| KeysError::File {
        path: path.to_owned(),
        reason,
    };
    let text = match marks_builder::regular_file::read_to_string(path) {
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
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
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

fn write_file(path: &Path, file: &KeysFile) -> Result<(), KeysError> {
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

fn random_text(len: usize) -> String {
    let mut rng = rand::rngs::OsRng;
    (0..len)
        .map(|_| char::from(KEY_ALPHABET[rng.gen_range(0..KEY_ALPHABET.len())]))
        .collect()
}

fn today() -> String {
    let now = time::OffsetDateTime::now_utc().date();
    format!("{:04}-{:02}-{:02}", now.year(), u8::from(now.month()), now.day())
}

/// Issues a key: stores its hash and returns `(key_id, key)`. The key is not kept anywhere.
pub fn issue(path: &Path, tier: Tier, tenant: &str, rate_per_min: Option<u32>) -> Result<(String, String), KeysError> {
    let _lock = lock(path)?;
    let mut file = read_file_or(path, Missing::Empty)?;
    if tenant.trim().is_empty() {
        return Err(KeysError::File {
            path: path.to_owned(),
            reason: "--tenant must not be empty".into(),
        });
    }
    let key = format!("{KEY_PREFIX}{}", random_text(40));
    let key_id = format!("key_{}", random_text(12));
    file.keys.push(KeyEntry {
        key_id: key_id.clone(),
        tenant: tenant.to_string(),
        tier: tier.as_str().to_string(),
        status: KeyStatus::Active,
        created: today(),
        hash: format_hash(&hash_key(&key)),
        rate_per_min,
    });
    // Check the result loads before replacing the file the server reads.
    write_checked(path, &file)?;
    Ok((key_id, key))
}

/// Adds a key whose plain text the caller chose (demo and test keys).
pub fn add_known(path: &Path, entry_key: &str, mut entry: KeyEntry) -> Result<(), KeysError> {
    let _lock = lock(path)?;
    let mut file = read_file_or(path, Missing::Empty)?;
    entry.hash = format_hash(&hash_key(entry_key));
    file.keys.push(entry);
    write_checked(path, &file)
}

/// Writes `file` only if the server would accept it: a refused file must never replace the
/// one in force.
fn write_checked(path: &Path, file: &KeysFile) -> Result<(), KeysError> {
    KeyRing::of(path, file)?;
    write_file(path, file)
}

/// Holds an exclusive lock on `<keys file>.lock` while a command reads, changes and rewrites
/// the keys file, so two commands run at once cannot lose each other's change.
fn lock(path: &Path) -> Result<std::fs::File, KeysError> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .and_then(|file| file.lock().map(|()| file))
        .map_err(|e| KeysError::File {
            path: lock_path.clone(),
            reason: format!("cannot lock: {e}"),
        })?;
    Ok(file)
}

/// Revokes, suspends or reinstates a key. Revocation is for good: a revoked key is never
/// made active or suspended again.
pub fn set_status(path: &Path, key_id: &str, status: KeyStatus) -> Result<(), KeysError> {
    let _lock = lock(path)?;
    let mut file = read_file_or(path, Missing::Refused)?;
    let fail = |reason: String| KeysError::File {
        path: path.to_owned(),
        reason,
    };
    let entry = file
        .keys
        .iter_mut()
        .find(|k| k.key_id == key_id)
        .ok_or_else(|| fail(format!("no key with key_id {key_id}")))?;
    if entry.status == KeyStatus::Revoked && status != KeyStatus::Revoked {
        return Err(fail(format!(
            "{key_id} is revoked, and a revoked key stays revoked; issue a new key"
        )));
    }
    entry.status = status;
    write_checked(path, &file)
}

pub fn list(path: &Path) -> Result<Vec<KeyEntry>, KeysError> {
    Ok(read_file_or(path, Missing::Refused)?.keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_keys_file_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, "[[key]]\nkey_id = \"a\"\ntier = 7\n").unwrap();
        let err = KeyRing::load(&path).unwrap_err().to_string();
        assert!(err.contains("keys.toml") && err.contains("line"), "{err}");
    }
}
