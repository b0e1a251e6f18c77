//! The publication log: every mark as first published, in an append-only RFC 6962 Merkle tree
//! that no one can rewrite unseen, not even the publisher.
//!
//! - **Entries.** Each build with a log appends, for every company with a mark, the mark it
//!   publishes as of its `as_of`: value, 80% bounds, a digest of the 95% bounds (so that a
//!   research key, which does not read them, can still check the entry), the track-record
//!   confidence, the methodology and dataset versions and the company's outcome. The leaf is
//!   the entry's RFC 8785 canonical JSON; its hash is RFC 6962's, SHA-256(0x00 || leaf)
//!   (`ct-merkle`). Every number in an entry is an integer, so its canonical bytes are the same
//!   in every language.
//! - **Checkpoints.** Each published version ends with a C2SP `tlog-checkpoint` in the signed-
//!   note format: the log's origin, the tree size, the root hash, an extension line naming the
//!   dataset version, signed with the publisher's Ed25519 key (the key that signs resolution
//!   records). A checkpoint commits to every entry before it: to the tree of every earlier
//!   version.
//! - **Carried.** The log travels from snapshot to snapshot (with `--previous`), or starts from
//!   the file a dataset names (`publication_log` in dataset.toml): either way it is replayed
//!   leaf by leaf and every checkpoint is checked (size, root, signature by a published key)
//!   before anything is appended; a log that does not verify, or that forks from the other one,
//!   is refused. A rebuild of the version already last in the log appends nothing.
//!
//! The file form (what a dataset names, and what `GET /v1/export/log` serves) is NDJSON: a first
//! line `{"origin": ..., "format": 1}`, then `{"leaf": ENTRY, "band_95": {...}}` lines (the 95%
//! bounds beside the entry that commits to them) and, after each version's leaves, a
//! `{"checkpoint": {"dataset_version": ..., "note": ...}}` line.

use std::fmt::Write as _;

use base64::Engine;
use ct_merkle::mem_backed_tree::MemoryBackedTree;
use ct_merkle::RootHash;
use ed25519_dalek::{Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use sha2_merkle::Sha256;

/// The version of the file form and of the entries' fields.
pub const LOG_FORMAT: u32 = 1;

/// A published company's outcome, as its items carry it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryOutcome {
    pub kind: String,
    pub event_id: String,
    pub occurred_on: String,
    pub valuation_usd: u64,
}

/// One published mark.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub slug: String,
    pub dataset_version: String,
    pub methodology_version: String,
    pub as_of: String,
    /// The day of the mark: `as_of`, or the day before the company's outcome.
    pub marked_on: String,
    pub value_usd: u64,
    pub lower_80_usd: u64,
    pub upper_80_usd: u64,
    /// base64url (no padding) of SHA-256 over the canonical JSON of the 95% band
    /// `{"lower_usd": .., "salt": .., "upper_usd": ..}`.
    pub band_95_digest: String,
    /// The confidence in basis points of 1 (0.2041 is 2041): an integer, so the leaf's bytes are
    /// the same in every language.
    pub confidence_bp: u64,
    pub outcome: Option<EntryOutcome>,
}

/// The 95% bounds an entry commits to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band95 {
    pub lower_usd: u64,
    pub upper_usd: u64,
    /// 16 bytes, base64url: without it a key below Pro could find the bounds behind a digest
    /// by trying every whole-dollar pair near the 80% band.
    pub salt: String,
}

impl Band95 {
    /// The band of a company's entry in a version, salted with what only the publisher can
    /// make: the first 16 bytes of its Ed25519 signature over the entry's name (deterministic,
    /// so a rebuild writes the same log, and unguessable without the key).
    pub fn salted(lower_usd: u64, upper_usd: u64, slug: &str, dataset_version: &str, key: &SigningKey) -> Band95 {
        let signature = key.sign(format!("band_95 salt\n{slug}\n{dataset_version}").as_bytes());
        Band95 {
            lower_usd,
            upper_usd,
            salt: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&signature.to_bytes()[..16]),
        }
    }

    /// What an entry carries of them.
    pub fn digest(&self) -> String {
        let canonical = serde_jcs::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical))
    }
}

impl Entry {
    /// The leaf: the entry's canonical JSON (RFC 8785).
    pub fn leaf(&self) -> Vec<u8> {
        serde_jcs::to_vec(self).unwrap_or_default()
    }
}

/// A version's checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub dataset_version: String,
    pub tree_size: u64,
    pub root: [u8; 32],
    /// The signed note, whole.
    pub note: String,
}

/// Why a log was refused.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{what}:{line}: {reason}")]
    Line { what: String, line: usize, reason: String },
    #[error("{what}: {reason}")]
    Whole { what: String, reason: String },
}

/// The log: its origin, every leaf and every version's checkpoint.
pub struct PublicationLog {
    pub origin: String,
    /// Each leaf's canonical bytes, in order.
    pub leaves: Vec<Vec<u8>>,
    /// The 95% bounds each leaf commits to.
    pub bands: Vec<Band95>,
    pub checkpoints: Vec<Checkpoint>,
    tree: MemoryBackedTree<Sha256, Vec<u8>>,
}

impl std::fmt::Debug for PublicationLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublicationLog")
            .field("origin", &self.origin)
            .field("leaves", &self.leaves.len())
            .field("checkpoints", &self.checkpoints.len())
            .finish()
    }
}

/// The key hash of C2SP signed notes for an Ed25519 key: the first four bytes of
/// SHA-256(name || "\n" || 0x01 || key).
pub fn key_hash(name: &str, key: &VerifyingKey) -> [u8; 4] {
    let mut hasher = sha2::Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update(b"\n\x01");
    hasher.update(key.as_bytes());
    let digest = hasher.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

/// The checkpoint's text (C2SP tlog-checkpoint): origin, size, root, and the dataset version as an
/// extension line.
pub fn checkpoint_text(origin: &str, tree_size: u64, root: &[u8; 32], dataset_version: &str) -> String {
    let root = base64::engine::general_purpose::STANDARD.encode(root);
    format!("{origin}\n{tree_size}\n{root}\ndataset_version {dataset_version}\n")
}

/// The text signed as a C2SP note, with the signature line of `key` named after the origin.
pub fn sign_note(text: &str, name: &str, key: &SigningKey) -> String {
    let signature = key.sign(text.as_bytes());
    let mut signed = key_hash(name, &key.verifying_key()).to_vec();
    signed.extend_from_slice(&signature.to_bytes());
    format!(
        "{text}\n\u{2014} {name} {}\n",
        base64::engine::general_purpose::STANDARD.encode(signed)
    )
}

/// The checkpoint a signed note states, once one of its signatures verifies against one of
/// `keys` under `origin`.
pub fn verify_note(note: &str, origin: &str, keys: &[VerifyingKey]) -> Result<(u64, [u8; 32], String), String> {
    let (text, signatures) = note
        .split_once("\n\n")
        .ok_or("not a signed note: no blank line before the signatures")?;
    let text = format!("{text}\n");
    let verified = signatures.lines().any(|line| {
        let Some(rest) = line.strip_prefix("\u{2014} ") else {
            return false;
        };
        let Some((name, signature)) = rest.split_once(' ') else {
            return false;
        };
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(signature) else {
            return false;
        };
        if name != origin || bytes.len() != 68 {
            return false;
        }
        let Ok(signature) = ed25519_dalek::Signature::from_slice(&bytes[4..]) else {
            return false;
        };
        keys.iter()
            .any(|key| key_hash(name, key) == bytes[..4] && key.verify(text.as_bytes(), &signature).is_ok())
    });
    if !verified {
        return Err(format!(
            "no signature by a published key under the origin {origin:?} (the keys checked: this build's signing key, the previous snapshot's published keys, and those dataset.toml names in publication_log_keys)"
        ));
    }
    let mut lines = text.lines();
    let (Some(named), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next()) else {
        return Err("a checkpoint has an origin, a size and a root".into());
    };
    if named != origin {
        return Err(format!("the checkpoint's origin is {named:?}, not {origin:?}"));
    }
    let size: u64 = size
        .parse()
        .map_err(|_| format!("tree size {size:?} is not a number"))?;
    let root: [u8; 32] = base64::engine::general_purpose::STANDARD
        .decode(root)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| format!("root {root:?} is not 32 bytes of base64"))?;
    let version = lines
        .find_map(|line| line.strip_prefix("dataset_version "))
        .ok_or("the checkpoint names no dataset_version")?
        .to_string();
    Ok((size, root, version))
}

/// The header line of the file form.
#[derive(Deserialize, Serialize)]
struct Header {
    origin: String,
    format: u32,
}

impl PublicationLog {
    /// A new, empty log.
    pub fn new(origin: &str) -> PublicationLog {
        PublicationLog {
            origin: origin.to_string(),
            leaves: Vec::new(),
            bands: Vec::new(),
            checkpoints: Vec::new(),
            tree: MemoryBackedTree::new(),
        }
    }

    /// A log read from its file form, replayed and checked: every checkpoint's size, root and
    /// signature by one of `keys`. `what` names the file in refusals.
    pub fn parse(text: &str, keys: &[VerifyingKey], what: &str) -> Result<PublicationLog, LogError> {
        let refuse = |line: usize, reason: String| LogError::Line {
            what: what.to_string(),
            line,
            reason,
        };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let (_, first) = lines.next().ok_or_else(|| LogError::Whole {
            what: what.to_string(),
            reason: "empty: a log starts with its origin".into(),
        })?;
        let header: Header = serde_json::from_str(first)
            .map_err(|e| refuse(1, format!("not the header line {{\"origin\": .., \"format\": 1}}: {e}")))?;
        if header.format != LOG_FORMAT {
            return Err(refuse(1, format!("format {} is not {LOG_FORMAT}", header.format)));
        }
        let mut log = PublicationLog::new(&header.origin);
        for (number, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| refuse(number, format!("not JSON: {e}")))?;
            if let Some(leaf) = value.get("leaf") {
                let entry: Entry = serde_json::from_value(leaf.clone())
                    .map_err(|e| refuse(number, format!("not a log entry: {e}")))?;
                let band: Band95 = value
                    .get("band_95")
                    .cloned()
                    .map(serde_json::from_value)
                    .transpose()
                    .map_err(|e| refuse(number, format!("not a 95% band: {e}")))?
                    .ok_or_else(|| refuse(number, "an entry without its 95% band".into()))?;
                if band.digest() != entry.band_95_digest {
                    return Err(refuse(
                        number,
                        "the 95% band is not the one the entry commits to".into(),
                    ));
                }
                log.push(entry.leaf(), band);
            } else if let Some(checkpoint) = value.get("checkpoint") {
                let note = checkpoint
                    .get("note")
                    .and_then(|n| n.as_str())
                    .ok_or_else(|| refuse(number, "a checkpoint without its note".into()))?;
                let (size, root, version) =
                    verify_note(note, &log.origin, keys).map_err(|reason| refuse(number, reason))?;
                if size != log.leaves.len() as u64 {
                    return Err(refuse(
                        number,
                        format!(
                            "the checkpoint of {version} says {size} entries; {} come before it",
                            log.leaves.len()
                        ),
                    ));
                }
                if root != log.root() {
                    return Err(refuse(
                        number,
                        format!("the checkpoint of {version} does not match the entries before it: a forged, removed or reordered entry"),
                    ));
                }
                if let Some(last) = log.checkpoints.last() {
                    if version <= last.dataset_version {
                        return Err(refuse(
                            number,
                            format!("the checkpoint of {version} follows that of {}", last.dataset_version),
                        ));
                    }
                }
                log.checkpoints.push(Checkpoint {
                    dataset_version: version,
                    tree_size: size,
                    root,
                    note: note.to_string(),
                });
            } else {
                return Err(refuse(number, "neither a leaf nor a checkpoint".into()));
            }
        }
        let checked = log.checkpoints.last().map_or(0, |c| c.tree_size);
        if checked != log.leaves.len() as u64 {
            return Err(LogError::Whole {
                what: what.to_string(),
                reason: format!(
                    "{} entries after the last checkpoint: every entry is published under a checkpoint",
                    log.leaves.len() as u64 - checked
                ),
            });
        }
        Ok(log)
    }

    fn push(&mut self, leaf: Vec<u8>, band: Band95) {
        self.tree.push(leaf.clone());
        self.leaves.push(leaf);
        self.bands.push(band);
    }

    /// The root hash of the whole tree (of the empty tree: SHA-256 of nothing).
    pub fn root(&self) -> [u8; 32] {
        let root = self.tree.root();
        let mut out = [0; 32];
        out.copy_from_slice(root.as_bytes());
        out
    }

    /// The dataset version of the last checkpoint.
    pub fn last_version(&self) -> Option<&str> {
        self.checkpoints.last().map(|c| c.dataset_version.as_str())
    }

    /// Appends a version's entries (each with the 95% band it commits to) and signs its
    /// checkpoint.
    pub fn append(&mut self, dataset_version: &str, entries: &[(Entry, Band95)], key: &SigningKey) {
        for (entry, band) in entries {
            self.push(entry.leaf(), band.clone());
        }
        let size = self.leaves.len() as u64;
        let root = self.root();
        let text = checkpoint_text(&self.origin, size, &root, dataset_version);
        self.checkpoints.push(Checkpoint {
            dataset_version: dataset_version.to_string(),
            tree_size: size,
            root,
            note: sign_note(&text, &self.origin, key),
        });
    }

    /// Whether `other` and this log agree where both have a checkpoint: neither forks from
    /// the other.
    pub fn agrees_with(&self, other: &PublicationLog) -> bool {
        self.origin == other.origin
            && self
                .checkpoints
                .iter()
                .zip(&other.checkpoints)
                .all(|(a, b)| (&a.dataset_version, a.tree_size, a.root) == (&b.dataset_version, b.tree_size, b.root))
    }

    /// The inclusion proof of leaf `index` in the whole tree, as base64 hashes.
    pub fn inclusion_proof(&self, index: usize) -> Vec<String> {
        hashes(self.tree.prove_inclusion(index).as_bytes())
    }

    /// The consistency proof from the tree of `old_size` leaves to the whole tree, as base64
    /// hashes; empty when the sizes are equal.
    pub fn consistency_proof(&self, old_size: u64) -> Vec<String> {
        let additions = self.leaves.len() as u64 - old_size.min(self.leaves.len() as u64);
        if additions == 0 || old_size == 0 {
            return Vec::new();
        }
        hashes(self.tree.prove_consistency(additions as usize).as_bytes())
    }

    /// Checks, with the library's own verifier, that the tree of `old` is a prefix of this one.
    pub fn extends(&self, old: &Checkpoint) -> bool {
        let old_size = old.tree_size;
        if old_size == self.leaves.len() as u64 {
            return old.root == self.root();
        }
        if old_size == 0 || old_size > self.leaves.len() as u64 {
            return old_size == 0;
        }
        let proof = self
            .tree
            .prove_consistency((self.leaves.len() as u64 - old_size) as usize);
        let old_root = RootHash::<Sha256>::new(old.root.into(), old_size);
        self.tree.root().verify_consistency(&old_root, &proof).is_ok()
    }

    /// The file form.
    pub fn to_file(&self) -> Vec<u8> {
        let mut out = String::new();
        let header = Header {
            origin: self.origin.clone(),
            format: LOG_FORMAT,
        };
        let _ = writeln!(out, "{}", serde_json::to_string(&header).unwrap_or_default());
        let mut leaf = 0usize;
        for checkpoint in &self.checkpoints {
            while (leaf as u64) < checkpoint.tree_size {
                let entry: serde_json::Value = serde_json::from_slice(&self.leaves[leaf]).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "leaf": entry, "band_95": &self.bands[leaf] })
                );
                leaf += 1;
            }
            let line = serde_json::json!({
                "checkpoint": { "dataset_version": checkpoint.dataset_version, "note": checkpoint.note }
            });
            let _ = writeln!(out, "{line}");
        }
        out.into_bytes()
    }
}

/// One company's entry in the log, where it is.
#[derive(Clone, Debug)]
pub struct Published {
    pub leaf_index: usize,
    pub entry: Entry,
    pub band_95: Band95,
}

impl PublicationLog {
    /// Every entry, by slug, in publication order.
    pub fn by_company(&self) -> std::collections::HashMap<String, Vec<Published>> {
        let mut out: std::collections::HashMap<String, Vec<Published>> = std::collections::HashMap::new();
        for (leaf_index, (leaf, band)) in self.leaves.iter().zip(&self.bands).enumerate() {
            if let Ok(entry) = serde_json::from_slice::<Entry>(leaf) {
                out.entry(entry.slug.clone()).or_default().push(Published {
                    leaf_index,
                    entry,
                    band_95: band.clone(),
                });
            }
        }
        out
    }

    /// What every body of the log says of the tree its proofs are against.
    fn head(&self) -> serde_json::Value {
        let latest = self.checkpoints.last();
        serde_json::json!({
            "origin": self.origin,
            "tree_size": self.leaves.len(),
            "root_hash": base64::engine::general_purpose::STANDARD.encode(self.root()),
            "checkpoint": latest.map(|c| c.note.as_str()),
        })
    }

    /// Every published version: its dataset version and tree size.
    fn versions(&self) -> Vec<serde_json::Value> {
        self.checkpoints
            .iter()
            .map(|c| serde_json::json!({ "dataset_version": c.dataset_version, "tree_size": c.tree_size }))
            .collect()
    }

    /// PublishedResponse of a company: the log's head, every published version, and the
    /// company's entries in publication order, each with its leaf hash and inclusion proof in
    /// today's tree; `full` (Pro and above) adds each entry's 95% bounds. The entries are the
    /// body's last member, each starting with its `as_of` as `date`, so that a date range is cut
    /// out of the stored body like a series (`marks_format::rules::dated`).
    pub fn published_json(&self, meta: &[u8], slug: &str, entries: &[Published], full: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024 + entries.len() * 1024);
        out.extend_from_slice(b"{\"meta\":");
        out.extend_from_slice(meta);
        let _ = write!(
            Adapter(&mut out),
            ",\"slug\":{},\"log\":{},\"versions\":{},\"series\":[",
            serde_json::Value::from(slug),
            self.head(),
            serde_json::Value::from(self.versions())
        );
        for (i, published) in entries.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let mut record = serde_json::json!({
                "date": published.entry.as_of,
                "leaf_index": published.leaf_index,
                "entry": published.entry,
                "leaf_hash": leaf_hash(&self.leaves[published.leaf_index]),
                "inclusion_proof": self.inclusion_proof(published.leaf_index),
            });
            if full {
                record["band_95"] = serde_json::json!(published.band_95);
            }
            // `date` first, as the dated cut needs: serde_json keeps insertion order only with
            // its preserve_order feature, so the object is written by hand around it.
            let rest = record.as_object().cloned().unwrap_or_default();
            let _ = write!(
                Adapter(&mut out),
                "{{\"date\":{}",
                serde_json::Value::from(published.entry.as_of.clone())
            );
            for (key, value) in rest.iter().filter(|(k, _)| k.as_str() != "date") {
                let _ = write!(Adapter(&mut out), ",{}:{value}", serde_json::Value::from(key.as_str()));
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
        out
    }

    /// The same entries as CSV: one row each, the proof's hashes joined by spaces.
    pub fn published_csv(&self, slug: &str, entries: &[Published], full: bool) -> Vec<u8> {
        use marks_format::rules::table::{header, put_row, Cell, PUBLISHED_COLUMNS, PUBLISHED_FULL_COLUMNS};
        let mut out = header(if full {
            PUBLISHED_FULL_COLUMNS
        } else {
            PUBLISHED_COLUMNS
        });
        for published in entries {
            let e = &published.entry;
            let proof = self.inclusion_proof(published.leaf_index).join(" ");
            let hash = leaf_hash(&self.leaves[published.leaf_index]);
            let outcome = e.outcome.as_ref();
            let mut cells = vec![
                Cell::Text(slug),
                Cell::Text(&e.as_of),
                Cell::Whole(published.leaf_index as u64),
                Cell::Text(&e.dataset_version),
                Cell::Text(&e.methodology_version),
                Cell::Text(&e.marked_on),
                Cell::Whole(e.value_usd),
                Cell::Whole(e.lower_80_usd),
                Cell::Whole(e.upper_80_usd),
            ];
            if full {
                cells.push(Cell::Whole(published.band_95.lower_usd));
                cells.push(Cell::Whole(published.band_95.upper_usd));
                cells.push(Cell::Text(&published.band_95.salt));
            }
            cells.extend([
                Cell::Whole(e.confidence_bp),
                Cell::from(outcome.map(|o| o.kind.as_str())),
                Cell::from(outcome.map(|o| o.event_id.as_str())),
                Cell::from(outcome.map(|o| o.occurred_on.as_str())),
                outcome.map_or(Cell::Empty, |o| Cell::Whole(o.valuation_usd)),
                Cell::Text(&e.band_95_digest),
                Cell::Text(&hash),
                Cell::Text(&proof),
            ]);
            put_row(&mut out, &cells);
        }
        out
    }

    /// ConsistencyResponse: the proof that the tree of `from` is a prefix of today's.
    pub fn consistency_json(&self, meta: &[u8], from: &Checkpoint) -> Vec<u8> {
        let body = serde_json::json!({
            "from": {
                "dataset_version": from.dataset_version,
                "tree_size": from.tree_size,
                "root_hash": base64::engine::general_purpose::STANDARD.encode(from.root),
            },
            "to": self.head(),
            "proof": self.consistency_proof(from.tree_size),
        });
        let mut out = b"{\"meta\":".to_vec();
        out.extend_from_slice(meta);
        out.push(b',');
        let text = body.to_string();
        out.extend_from_slice(&text.as_bytes()[1..]);
        out
    }
}

/// `fmt::Write` over a byte vector, for `write!` into a body.
struct Adapter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Adapter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn hashes(bytes: &[u8]) -> Vec<String> {
    bytes
        .chunks(32)
        .map(|hash| base64::engine::general_purpose::STANDARD.encode(hash))
        .collect()
}

/// The RFC 6962 hash of a leaf: SHA-256(0x00 || leaf), as base64.
pub fn leaf_hash(leaf: &[u8]) -> String {
    let mut hasher = sha2::Sha256::new();
    hasher.update([0u8]);
    hasher.update(leaf);
    base64::engine::general_purpose::STANDARD.encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(slug: &str, version: &str, value: u64) -> (Entry, Band95) {
        let band = Band95::salted(value / 4, value * 4, slug, version, &key(1));
        let entry = Entry {
            slug: slug.into(),
            dataset_version: version.into(),
            methodology_version: "v0.5.0".into(),
            as_of: version.into(),
            marked_on: version.into(),
            value_usd: value,
            lower_80_usd: value / 2,
            upper_80_usd: value * 2,
            band_95_digest: band.digest(),
            confidence_bp: 2041,
            outcome: None,
        };
        (entry, band)
    }

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn two_versions() -> PublicationLog {
        let mut log = PublicationLog::new("example.com/log");
        log.append(
            "2026-01-01",
            &[entry("a", "2026-01-01", 100), entry("b", "2026-01-01", 200)],
            &key(1),
        );
        log.append(
            "2026-02-01",
            &[entry("a", "2026-02-01", 110), entry("b", "2026-02-01", 190)],
            &key(1),
        );
        log
    }

    #[test]
    fn a_log_round_trips_through_its_file_and_every_checkpoint_verifies() {
        let log = two_versions();
        let text = String::from_utf8(log.to_file()).unwrap();
        let again = PublicationLog::parse(&text, &[key(1).verifying_key()], "log").unwrap();
        assert_eq!(again.leaves, log.leaves);
        assert_eq!(again.checkpoints, log.checkpoints);
        assert!(log.extends(&log.checkpoints[0]));
        assert!(log.agrees_with(&again));
    }

    #[test]
    fn a_forged_removed_or_reordered_entry_or_a_foreign_key_is_refused() {
        let text = String::from_utf8(two_versions().to_file()).unwrap();
        let keys = [key(1).verifying_key()];
        let lines: Vec<&str> = text.lines().collect();
        let joined = |lines: &[&str]| lines.join("\n");
        let forged = text.replacen("\"value_usd\":110", "\"value_usd\":111", 1);
        assert!(PublicationLog::parse(&forged, &keys, "log")
            .unwrap_err()
            .to_string()
            .contains("forged, removed or reordered"));
        let mut removed = lines.clone();
        removed.remove(4);
        assert!(PublicationLog::parse(&joined(&removed), &keys, "log").is_err());
        let mut reordered = lines.clone();
        reordered.swap(4, 5);
        let refused = PublicationLog::parse(&joined(&reordered), &keys, "log")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("log:7") && refused.contains("reordered"), "{refused}");
        let foreign = PublicationLog::parse(&text, &[key(2).verifying_key()], "log").unwrap_err();
        assert!(
            foreign.to_string().contains("no signature by a published key"),
            "{foreign}"
        );
    }

    #[test]
    fn the_empty_tree_and_one_leaf_by_hand() {
        // RFC 6962: the empty tree's hash is SHA-256 of nothing; one leaf's is its leaf hash.
        let mut log = PublicationLog::new("o");
        assert_eq!(log.root(), <[u8; 32]>::from(sha2::Sha256::digest(b"")));
        log.push(b"hello".to_vec(), Band95::salted(0, 0, "s", "v", &key(1)));
        assert_eq!(
            base64::engine::general_purpose::STANDARD.encode(log.root()),
            leaf_hash(b"hello")
        );
    }
}
