//! The `marks keys` commands that change the keys file: issue, add a known key, revoke,
//! suspend and reinstate. Every change is checked (the server must accept the result: the file
//! is loaded into a [`KeyRing`] first), made under a lock file and written atomically, so a
//! reloading server never reads half a file.

use std::path::{Path, PathBuf};

use marks_format::rules::tiers::Tier;
use rand::Rng;

use crate::keys::file::{read_file_or, write_file, KeyEntry, KeyStatus, KeysError, KeysFile, Missing};
use crate::keys::hash::{format_hash, hash_key};
use crate::keys::ring::KeyRing;

/// Every key starts with it, so secret scanners can find leaked ones.
pub const KEY_PREFIX: &str = "vmk_";
const KEY_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::keys::ring::Authentication;

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
    fn keys_of_one_budget_share_their_headers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        let (_, first) = issue(&path, Tier::Pro, "a", None).unwrap();
        let (_, second) = issue(&path, Tier::Pro, "b", None).unwrap();
        let (_, own) = issue(&path, Tier::Pro, "c", Some(1234)).unwrap();
        let ring = KeyRing::load(&path).unwrap();
        let caller = |key: &str| match ring.authenticate(key) {
            Authentication::Valid(caller) => caller.clone(),
            Authentication::Invalid => panic!("valid key refused"),
        };
        assert!(Arc::ptr_eq(&caller(&first).headers, &caller(&second).headers));
        assert_eq!(caller(&own).headers.limit, "1234");
        assert!(!Arc::ptr_eq(&caller(&first).headers, &caller(&own).headers));
    }
}
