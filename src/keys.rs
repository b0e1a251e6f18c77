//! API keys: the keys file, the in-memory `KeyRing` the server authenticates against, and the
//! `marks keys` commands that issue, revoke and list keys.
//!
//! The keys file holds only BLAKE3 hashes of keys, never a key: a key is printed once when it
//! is issued and exists nowhere else. Keys carry the `vmk_` prefix so secret scanners can
//! find leaked ones. Nothing in this module logs or returns a plain key except `issue`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use marks_builder::tiers::Tier;
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::head::{Composed, MeteredHead, MINUTE_POLICY};

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
struct KeysFile {
    #[serde(default, rename = "key")]
    keys: Vec<KeyEntry>,
}

/// An authenticated caller: what the server needs to authorise and meter a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub key_id: Arc<str>,
    pub tenant: Arc<str>,
    pub tier: Tier,
    pub rate_per_min: u32,
    /// True when the key's budget differs from its tier's, so its usage body is rendered.
    pub custom_rate: bool,
    /// `X-RateLimit-Limit` and `RateLimit-Policy`, fixed per key: made once at load.
    pub limit_header: http::HeaderValue,
    pub policy_header: http::HeaderValue,
    /// The header blocks of this key's metered answers, built from the two above.
    pub head: MeteredHead,
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

/// The keys in force: active and inactive, by hash.
#[derive(Debug, Default)]
pub struct KeyRing {
    by_hash: HashMap<[u8; 32], Option<Arc<Caller>>, foldhash::fast::RandomState>,
    /// Distinct for every ring this process builds, so a [`RememberedKey`] knows when the
    /// keys file it was accepted under has been replaced.
    generation: u64,
}

/// Numbers key rings from 1; a [`RememberedKey`] that remembers nothing holds 0.
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// The key last accepted on one connection.
///
/// A client sends the same key with every request of a keep-alive connection; remembering it
/// there spares all but the first the BLAKE3 hash and the lookup, about 600 of a request's
/// 17,000 instructions (`benches/instructions.sh`). It holds only what that connection already
/// carries and is dropped with it. A presented key is compared with it in constant time: a
/// proxy may carry several clients over one connection, and none may time its way to
/// another's key. A reloaded keys file (a revoked key) is a new ring, which forgets it.
#[derive(Debug, Default)]
pub struct RememberedKey {
    generation: u64,
    presented: Vec<u8>,
    caller: Option<Arc<Caller>>,
}

/// Result of looking a presented key up.
#[derive(Debug, PartialEq, Eq)]
pub enum Authentication<'a> {
    Valid(&'a Arc<Caller>),
    /// Unknown, revoked or suspended: indistinguishable to the client.
    Invalid,
}

pub fn hash_key(key: &str) -> [u8; 32] {
    *blake3::hash(key.as_bytes()).as_bytes()
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
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

fn read_file(path: &Path, missing: Missing) -> Result<KeysFile, KeysError> {
    let fail = |reason: String| KeysError::File {
        path: path.to_owned(),
        reason,
    };
    let text = match std::fs::read_to_string(path) {
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

impl KeyRing {
    /// Loads and checks a keys file; a missing file is an error.
    pub fn load(path: &Path) -> Result<KeyRing, KeysError> {
        KeyRing::of(path, &read_file(path, Missing::Refused)?)
    }

    /// Checks every entry of a keys file (named `path` in errors) and builds the ring.
    fn of(path: &Path, file: &KeysFile) -> Result<KeyRing, KeysError> {
        let mut by_hash = HashMap::with_capacity_and_hasher(file.keys.len(), foldhash::fast::RandomState::default());
        let mut ids = std::collections::HashSet::new();
        for entry in &file.keys {
            let fail = |reason: &str| KeysError::Entry {
                path: path.to_owned(),
                key_id: entry.key_id.clone(),
                reason: reason.to_string(),
            };
            if !ids.insert(entry.key_id.as_str()) {
                return Err(fail("duplicate key_id"));
            }
            let tier = Tier::parse(&entry.tier).ok_or_else(|| fail("unknown tier"))?;
            let hash = parse_hash(&entry.hash).ok_or_else(|| fail("hash must be blake3:<64 hex digits>"))?;
            if entry.rate_per_min == Some(0) {
                return Err(fail("rate_per_min must be at least 1"));
            }
            let rate_per_min = entry.rate_per_min.unwrap_or(tier.rate_per_min());
            let caller = (entry.status == KeyStatus::Active).then(|| {
                let limit_header = http::HeaderValue::from(rate_per_min);
                let policy_header = Composed::new().policy(MINUTE_POLICY, rate_per_min);
                Arc::new(Caller {
                    key_id: entry.key_id.as_str().into(),
                    tenant: entry.tenant.as_str().into(),
                    tier,
                    rate_per_min,
                    custom_rate: entry.rate_per_min.is_some_and(|r| r != tier.rate_per_min()),
                    head: MeteredHead::new(&limit_header, &policy_header),
                    limit_header,
                    policy_header,
                })
            });
            if by_hash.insert(hash, caller).is_some() {
                return Err(fail("the same key hash appears twice"));
            }
        }
        Ok(KeyRing {
            by_hash,
            generation: GENERATION.fetch_add(1, Relaxed),
        })
    }

    pub fn authenticate(&self, presented: &str) -> Authentication<'_> {
        match self.by_hash.get(&hash_key(presented)) {
            Some(Some(caller)) => Authentication::Valid(caller),
            _ => Authentication::Invalid,
        }
    }

    /// [`Self::authenticate`], answered from `remembered` when it holds this key accepted by
    /// this ring, and otherwise remembering the key if it is valid.
    pub fn authenticate_remembering(&self, presented: &str, remembered: &mut RememberedKey) -> Option<Arc<Caller>> {
        let same_key = || constant_time_eq::constant_time_eq(&remembered.presented, presented.as_bytes());
        if remembered.generation == self.generation && same_key() {
            return remembered.caller.clone();
        }
        match self.authenticate(presented) {
            Authentication::Valid(caller) => {
                remembered.generation = self.generation;
                remembered.presented.clear();
                remembered.presented.extend_from_slice(presented.as_bytes());
                remembered.caller = Some(caller.clone());
                Some(caller.clone())
            }
            Authentication::Invalid => None,
        }
    }

    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

/// Writes the keys file atomically (temp file, fsync, rename) so a reloading server never
/// reads half a file.
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
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
        std::process::id()
    ));
    let result = (|| {
        use std::io::Write;
        let mut out = std::fs::File::create(&temp)?;
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        fail(format!("cannot write: {e}"))
    })
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
    let mut file = read_file(path, Missing::Empty)?;
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
    let mut file = read_file(path, Missing::Empty)?;
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
    let mut file = read_file(path, Missing::Refused)?;
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
    Ok(read_file(path, Missing::Refused)?.keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_key_authenticates_and_revoked_key_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        let (key_id, key) = issue(&path, Tier::Pro, "acme", None).unwrap();
        assert!(key.starts_with(KEY_PREFIX));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&key), "the keys file must never hold a key");
        let ring = KeyRing::load(&path).unwrap();
        match ring.authenticate(&key) {
            Authentication::Valid(caller) => {
                assert_eq!(
                    (caller.key_id.as_ref(), caller.tier, caller.rate_per_min),
                    (key_id.as_str(), Tier::Pro, 600)
                )
            }
            Authentication::Invalid => panic!("issued key must authenticate"),
        }
        assert_eq!(ring.authenticate("vmk_wrong"), Authentication::Invalid);
        set_status(&path, &key_id, KeyStatus::Revoked).unwrap();
        assert_eq!(
            KeyRing::load(&path).unwrap().authenticate(&key),
            Authentication::Invalid
        );
    }

    #[test]
    fn malformed_keys_file_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, "[[key]]\nkey_id = \"a\"\ntier = 7\n").unwrap();
        let err = KeyRing::load(&path).unwrap_err().to_string();
        assert!(err.contains("keys.toml") && err.contains("line"), "{err}");
    }
}
