//! The keys in force in the server: the `KeyRing` every request authenticates against, built
//! from the keys file (`keys_file`), and the key a connection remembers.
//!
//! A keys file may hold a million keys, most of them idle at any moment. So the ring keeps, per
//! key, a compact record in one vector (tier, budget, status, where its id lies in one shared
//! string) and its BLAKE3 hash (never the key) in one hash table: a few large allocations
//! rather than several small ones per key, about a hundred bytes per key, and nothing the
//! allocator cannot give back when a reload drops the ring. The [`Caller`] a request works
//! with is made the first time a key is used, and shared from then on; what is the same for
//! every key of one budget (the rate-limit header values and the prebuilt header blocks of
//! metered answers) is made once per distinct budget. `benches/lab/keys.sh` measures it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use marks_format::rules::tiers::Tier;

use crate::keys::file::{self as keys_file, KeyStatus, KeysError, KeysFile};
use crate::keys::hash::{hash_key, parse_hash};
use crate::response::headers::BudgetHeaders;

/// An authenticated caller: what the server needs to authorise and meter a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub key_id: Arc<str>,
    pub tier: Tier,
    pub rate_per_min: u32,
    /// True when the key's budget differs from its tier's, so its usage body is rendered.
    pub custom_rate: bool,
    /// Shared by every key with this budget.
    pub headers: Arc<BudgetHeaders>,
}

/// The keys in force: active and inactive, by hash.
#[derive(Debug, Default)]
pub struct KeyRing {
    /// A key's hash to its position in `records`.
    by_hash: HashMap<[u8; 32], u32, foldhash::fast::RandomState>,
    records: Vec<KeyRecord>,
    /// Every key id, back to back; a record names its id by position.
    ids: String,
    /// One per distinct budget in the file.
    budgets: HashMap<u32, Arc<BudgetHeaders>>,
    /// Distinct for every ring this process builds, so a [`RememberedKey`] knows when the
    /// keys file it was accepted under has been replaced.
    generation: u64,
}

/// One key of the file, as compact as its uses allow.
#[derive(Debug)]
struct KeyRecord {
    id_start: u32,
    id_len: u32,
    rate_per_min: u32,
    tier: Tier,
    active: bool,
    custom_rate: bool,
    /// Made when the key is first used.
    caller: OnceLock<Arc<Caller>>,
}

/// Numbers key rings from 1; a [`RememberedKey`] that remembers nothing holds 0.
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// The key last accepted on one connection.
///
/// A client sends the same key with every request of a keep-alive connection; remembering it
/// there spares all but the first the BLAKE3 hash and the lookup (`benches/lab/instructions.sh`
/// measures it). It holds only what that connection already carries and is dropped with it.
/// A presented key is compared with it in constant time: a proxy may carry several clients
/// over one connection, and none may time its way to another's key. A reloaded keys file (a
/// revoked key) is a new ring, which forgets it.
#[derive(Clone, Debug, Default)]
pub struct RememberedKey {
    generation: u64,
    presented: Vec<u8>,
    caller: Option<Arc<Caller>>,
}

impl RememberedKey {
    /// The caller remembered for `presented`, if it was accepted by the ring numbered
    /// `generation`: what a keep-alive connection's every request after its first needs,
    /// without loading the ring in force.
    pub fn caller_for(&self, presented: &str, generation: u64) -> Option<Arc<Caller>> {
        if self.generation != generation || !constant_time_eq::constant_time_eq(&self.presented, presented.as_bytes()) {
            return None;
        }
        self.caller.clone()
    }
}

/// Result of looking a presented key up.
#[derive(Debug, PartialEq, Eq)]
pub enum Authentication<'a> {
    Valid(&'a Arc<Caller>),
    /// Unknown, revoked or suspended: indistinguishable to the client.
    Invalid,
}

impl KeyRing {
    /// Loads and checks a keys file; a missing file is an error. Blocking, and for a large
    /// file long (`benches/lab/keys.sh`): the server calls it off its request threads.
    pub fn load(path: &Path) -> Result<KeyRing, KeysError> {
        KeyRing::of(path, &keys_file::read(path)?)
    }

    /// Checks every entry of a keys file (named `path` in errors) and builds the ring.
    pub(crate) fn of(path: &Path, file: &KeysFile) -> Result<KeyRing, KeysError> {
        let count = file.keys.len();
        let mut by_hash = HashMap::with_capacity_and_hasher(count, foldhash::fast::RandomState::default());
        let mut records = Vec::with_capacity(count);
        let mut ids = String::with_capacity(file.keys.iter().map(|k| k.key_id.len()).sum());
        let mut seen_ids = std::collections::HashSet::with_capacity(count);
        let mut budgets: HashMap<u32, Arc<BudgetHeaders>> = HashMap::new();
        for entry in &file.keys {
            let fail = |reason: &str| KeysError::Entry {
                path: path.to_owned(),
                key_id: entry.key_id.clone(),
                reason: reason.to_string(),
            };
            if !seen_ids.insert(entry.key_id.as_str()) {
                return Err(fail("duplicate key_id"));
            }
            let tier = Tier::parse(&entry.tier).ok_or_else(|| fail("unknown tier"))?;
            let hash = parse_hash(&entry.hash).ok_or_else(|| fail("hash must be blake3:<64 hex digits>"))?;
            if entry.rate_per_min == Some(0) {
                return Err(fail("rate_per_min must be at least 1"));
            }
            let rate_per_min = entry.rate_per_min.unwrap_or(tier.rate_per_min());
            let (Ok(position), Ok(id_start), Ok(id_len)) = (
                u32::try_from(records.len()),
                u32::try_from(ids.len()),
                u32::try_from(entry.key_id.len()),
            ) else {
                return Err(fail("the keys file holds more keys than one server can"));
            };
            if by_hash.insert(hash, position).is_some() {
                return Err(fail("the same key hash appears twice"));
            }
            budgets
                .entry(rate_per_min)
                .or_insert_with(|| Arc::new(BudgetHeaders::new(rate_per_min)));
            ids.push_str(&entry.key_id);
            records.push(KeyRecord {
                id_start,
                id_len,
                rate_per_min,
                tier,
                active: entry.status == KeyStatus::Active,
                custom_rate: entry.rate_per_min.is_some_and(|r| r != tier.rate_per_min()),
                caller: OnceLock::new(),
            });
        }
        Ok(KeyRing {
            by_hash,
            records,
            ids,
            budgets,
            generation: GENERATION.fetch_add(1, Relaxed),
        })
    }

    pub fn authenticate(&self, presented: &str) -> Authentication<'_> {
        let Some(record) = self
            .by_hash
            .get(&hash_key(presented))
            .and_then(|&i| self.records.get(i as usize))
        else {
            return Authentication::Invalid;
        };
        if !record.active {
            return Authentication::Invalid;
        }
        Authentication::Valid(record.caller.get_or_init(|| self.caller_of(record)))
    }

    fn caller_of(&self, record: &KeyRecord) -> Arc<Caller> {
        let start = record.id_start as usize;
        let key_id = self.ids.get(start..start + record.id_len as usize).unwrap_or("");
        let headers = match self.budgets.get(&record.rate_per_min) {
            Some(headers) => headers.clone(),
            None => Arc::new(BudgetHeaders::new(record.rate_per_min)),
        };
        Arc::new(Caller {
            key_id: key_id.into(),
            tier: record.tier,
            rate_per_min: record.rate_per_min,
            custom_rate: record.custom_rate,
            headers,
        })
    }

    /// This ring's number, distinct for every ring this process builds.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// [`Self::authenticate`], answered from `remembered` when it holds this key accepted by
    /// this ring, and otherwise remembering the key if it is valid.
    pub fn authenticate_remembering(&self, presented: &str, remembered: &mut RememberedKey) -> Option<Arc<Caller>> {
        if let Some(caller) = remembered.caller_for(presented, self.generation) {
            return Some(caller);
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
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
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
