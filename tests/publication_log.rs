//! The publication log over real HTTP (`/v1/log/checkpoint`, `/v1/log/consistency`,
//! `/v1/companies/{slug}/published`, `/v1/export/log`): tiers on every route, and every proof
//! the server sends checked here by a second, independent implementation of RFC 9162's
//! verification algorithms (sections 2.1.3.2 and 2.1.4.2), against the demo public key pinned
//! from the repository, never one the server names.

use std::collections::BTreeSet;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::util::*;

type Hash = [u8; 32];

fn leaf_hash(leaf: &[u8]) -> Hash {
    Sha256::new().chain_update([0u8]).chain_update(leaf).finalize().into()
}

fn node(left: &Hash, right: &Hash) -> Hash {
    Sha256::new()
        .chain_update([1u8])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

fn decode(b64: &str) -> Hash {
    STANDARD.decode(b64).unwrap().try_into().unwrap()
}

fn proof_of(value: &Value) -> Vec<Hash> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|h| decode(h.as_str().unwrap()))
        .collect()
}

/// RFC 9162 2.1.3.2: whether `proof` takes the leaf at `index` of a tree of `size` to `root`.
fn inclusion_holds(index: u64, size: u64, leaf: Hash, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s, mut r) = (index, size - 1, leaf);
    for p in proof {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && &r == root
}

/// RFC 9162 2.1.4.2: whether `proof` shows the tree of `size1` (root `root1`) a prefix of the
/// tree of `size2` (root `root2`).
fn consistency_holds(size1: u64, size2: u64, root1: &Hash, root2: &Hash, proof: &[Hash]) -> bool {
    if size1 == size2 {
        return proof.is_empty() && root1 == root2;
    }
    if size1 == 0 || size1 > size2 || proof.is_empty() {
        return false;
    }
    let mut proof = proof.to_vec();
    if size1.is_power_of_two() {
        proof.insert(0, *root1);
    }
    let (mut f, mut s) = (size1 - 1, size2 - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (proof[0], proof[0]);
    for c in &proof[1..] {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            fr = node(c, &fr);
            sr = node(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && &fr == root1 && &sr == root2
}

/// A checkpoint, once its signature verifies against `key` under its own origin (C2SP signed
/// note: the key hash is the first four bytes of SHA-256(name || "\n" || 0x01 || key)).
struct Checkpoint {
    origin: String,
    size: u64,
    root: Hash,
    dataset_version: String,
}

fn verified_checkpoint(note: &str, key: &VerifyingKey) -> Result<Checkpoint, String> {
    let (text, signatures) = note.split_once("\n\n").ok_or("no blank line")?;
    let text = format!("{text}\n");
    let mut lines = text.lines();
    let origin = lines.next().ok_or("no origin")?.to_string();
    let size = lines.next().ok_or("no size")?.parse().map_err(|_| "size")?;
    let root = decode(lines.next().ok_or("no root")?);
    let dataset_version = lines
        .find_map(|l| l.strip_prefix("dataset_version "))
        .ok_or("no dataset_version")?
        .to_string();
    let key_hash: [u8; 4] = Sha256::new()
        .chain_update(origin.as_bytes())
        .chain_update(b"\n\x01")
        .chain_update(key.as_bytes())
        .finalize()[..4]
        .try_into()
        .unwrap();
    let signed = signatures.lines().any(|line| {
        let Some(signature) = line.strip_prefix(&format!("\u{2014} {origin} ")) else {
            return false;
        };
        let bytes = STANDARD.decode(signature).unwrap_or_default();
        bytes.len() == 68
            && bytes[..4] == key_hash
            && Signature::from_slice(&bytes[4..]).is_ok_and(|s| key.verify(text.as_bytes(), &s).is_ok())
    });
    if !signed {
        return Err("no signature by the pinned key".into());
    }
    Ok(Checkpoint {
        origin,
        size,
        root,
        dataset_version,
    })
}

fn pinned_key() -> VerifyingKey {
    demo_signing_key().verifying_key()
}

/// An entry's leaf: its canonical JSON, made here with sorted keys by serde_json (every number
/// in an entry is an integer and every string plain, so this is RFC 8785's form).
fn leaf_of(entry: &Value) -> Vec<u8> {
    serde_json::to_vec(entry).unwrap()
}

/// The checkpoints the sample carries: what an auditor kept from the earlier versions.
fn kept_checkpoints() -> Vec<String> {
    std::fs::read_to_string(sample_dir().join("publication-log.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["checkpoint"]["note"].as_str().map(String::from))
        .collect()
}

#[tokio::test]
async fn every_log_route_keeps_to_its_tier() {
    let server = TestServer::start().await;
    let routes = [
        "/v1/log/checkpoint",
        "/v1/log/consistency?from=41",
        "/v1/companies/stripe/published",
        "/v1/export/log",
    ];
    let matrix = [
        (FREE, [403, 403, 403, 403]),
        (RESEARCH, [200, 200, 200, 403]),
        (PRO, [200, 200, 200, 403]),
        (BUSINESS, [200, 200, 200, 403]),
        (ENTERPRISE, [200, 200, 200, 200]),
    ];
    for (key, expected) in matrix {
        for (path, status) in routes.iter().zip(expected) {
            let reply = server.get(path, Some(key)).await;
            if status == 403 {
                reply.assert_problem(403, "tier_forbidden");
            } else {
                assert_eq!(reply.status, status, "{key} {path}");
            }
        }
    }
    for path in routes {
        server.get(path, None).await.assert_problem(401, "missing_api_key");
    }
    // The 95% bounds, in JSON and in CSV, only from Pro.
    for (key, full) in [(RESEARCH, false), (PRO, true), (ENTERPRISE, true)] {
        let json = server.get("/v1/companies/stripe/published", Some(key)).await;
        assert_eq!(String::from_utf8_lossy(&json.body).contains("band_95\""), full, "{key}");
        let csv = server
            .get_with(
                "/v1/companies/stripe/published",
                &[("x-api-key", key), ("accept", "text/csv")],
            )
            .await;
        assert_eq!(csv.status, 200);
        let header = String::from_utf8_lossy(&csv.body).lines().next().unwrap().to_string();
        assert_eq!(header.contains("lower_95_usd"), full, "{key}: {header}");
    }
}

/// Every company's published entries, as a Pro key reads them: the checkpoint is signed by the
/// pinned key, every entry's leaf hash is its canonical JSON's, every inclusion proof takes it
/// to the checkpoint's root, every 95% band is the one its entry commits to, and every version
/// the log names published an entry for the company in order.
#[tokio::test]
async fn every_published_entry_is_proved_against_a_checkpoint_signed_by_the_pinned_key() {
    let server = TestServer::start().await;
    let key = pinned_key();
    let note = server.get("/v1/log/checkpoint", Some(RESEARCH)).await;
    assert_eq!(note.header("content-type"), Some("text/plain; charset=utf-8"));
    let latest = verified_checkpoint(std::str::from_utf8(&note.body).unwrap(), &key).unwrap();
    assert_eq!(latest.dataset_version, sample_version());
    let companies: BTreeSet<String> = sample_csv("companies.csv")
        .into_iter()
        .map(|row| row[0].clone())
        .collect();
    let mut entries = 0u64;
    let mut leaves = BTreeSet::new();
    for slug in &companies {
        let reply = server.get(&format!("/v1/companies/{slug}/published"), Some(PRO)).await;
        assert_eq!(reply.status, 200, "{slug}");
        let body = reply.json();
        assert_eq!(
            body["log"]["checkpoint"].as_str().unwrap(),
            std::str::from_utf8(&note.body).unwrap()
        );
        let versions: Vec<&str> = body["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["dataset_version"].as_str().unwrap())
            .collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
        let mut last_index = None;
        for item in body["series"].as_array().unwrap() {
            let entry = &item["entry"];
            assert_eq!(entry["slug"], slug.as_str());
            assert_eq!(item["date"], entry["as_of"]);
            assert!(versions.contains(&entry["dataset_version"].as_str().unwrap()), "{item}");
            let index = item["leaf_index"].as_u64().unwrap();
            assert!(
                last_index.is_none_or(|last| last < index),
                "{slug}: entries out of order"
            );
            last_index = Some(index);
            let hash = leaf_hash(&leaf_of(entry));
            assert_eq!(STANDARD.encode(hash), item["leaf_hash"].as_str().unwrap(), "{slug}");
            assert!(
                inclusion_holds(
                    index,
                    latest.size,
                    hash,
                    &proof_of(&item["inclusion_proof"]),
                    &latest.root
                ),
                "{slug}: leaf {index} is not in the tree the checkpoint signs"
            );
            let band = serde_json::to_vec(&item["band_95"]).unwrap();
            assert_eq!(
                URL_SAFE_NO_PAD.encode(Sha256::digest(&band)),
                entry["band_95_digest"].as_str().unwrap(),
                "{slug}: the 95% band is not the one its entry commits to"
            );
            assert!(leaves.insert(index));
            entries += 1;
        }
        // The latest version marks every company with a mark; this one published its own.
        let last = body["series"].as_array().unwrap().last();
        if let Some(last) = last {
            assert!(last["entry"]["value_usd"].as_u64().unwrap() > 0);
        }
    }
    // Every leaf of the tree belongs to one company.
    assert_eq!(entries, latest.size);
    assert_eq!(leaves.len() as u64, latest.size);
}

/// Each checkpoint the sample carries (what an auditor kept from the earlier versions) is
/// proved a prefix of today's tree; a size that no checkpoint had is refused.
#[tokio::test]
async fn every_kept_checkpoint_is_a_prefix_of_todays_tree() {
    let server = TestServer::start().await;
    let key = pinned_key();
    let latest = server.get("/v1/log/checkpoint", Some(RESEARCH)).await;
    let latest = verified_checkpoint(std::str::from_utf8(&latest.body).unwrap(), &key).unwrap();
    let kept = kept_checkpoints();
    assert_eq!(kept.len(), 4, "the sample carries four earlier versions");
    for note in &kept {
        let old = verified_checkpoint(note, &key).unwrap();
        assert_eq!(old.origin, latest.origin);
        let reply = server
            .get(&format!("/v1/log/consistency?from={}", old.size), Some(RESEARCH))
            .await;
        assert_eq!(reply.status, 200);
        let body = reply.json();
        assert_eq!(body["from"]["dataset_version"], old.dataset_version.as_str());
        assert_eq!(body["to"]["tree_size"].as_u64().unwrap(), latest.size);
        let proof = proof_of(&body["proof"]);
        assert!(
            consistency_holds(old.size, latest.size, &old.root, &latest.root, &proof),
            "{}: today's tree does not extend it",
            old.dataset_version
        );
        // The same proof does not take a different old root there: the check can fail.
        let mut other = old.root;
        other[0] ^= 1;
        assert!(!consistency_holds(old.size, latest.size, &other, &latest.root, &proof));
    }
    // Today's own size: the empty proof.
    let today = server
        .get(&format!("/v1/log/consistency?from={}", latest.size), Some(RESEARCH))
        .await
        .json();
    assert!(today["proof"].as_array().unwrap().is_empty());
    let refused = server
        .get("/v1/log/consistency?from=42", Some(RESEARCH))
        .await
        .assert_problem(422, "invalid_parameter");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("not the size of a published checkpoint"),
        "{refused}"
    );
    server
        .get("/v1/log/consistency", Some(RESEARCH))
        .await
        .assert_problem(422, "invalid_parameter");
    server
        .get("/v1/log/consistency?from=-1", Some(RESEARCH))
        .await
        .assert_problem(422, "invalid_parameter");
}

/// The whole log from the enterprise export replays, leaf by leaf, to every checkpoint in it;
/// a company's entries cut by `from`/`to` are those of its whole list in that range.
#[tokio::test]
async fn the_exported_log_replays_to_its_checkpoints_and_dates_cut_the_entries() {
    let server = TestServer::start().await;
    let key = pinned_key();
    let reply = server.get("/v1/export/log", Some(ENTERPRISE)).await;
    assert_eq!(reply.status, 200);
    let text = String::from_utf8(reply.body.to_vec()).unwrap();
    let mut hashes: Vec<Hash> = Vec::new();
    let mut checkpoints = 0;
    for line in text.lines().skip(1) {
        let value: Value = serde_json::from_str(line).unwrap();
        if let Some(entry) = value.get("leaf") {
            hashes.push(leaf_hash(&leaf_of(entry)));
        } else {
            let note = value["checkpoint"]["note"].as_str().unwrap();
            let checkpoint = verified_checkpoint(note, &key).unwrap();
            assert_eq!(checkpoint.size, hashes.len() as u64);
            assert_eq!(checkpoint.root, root_of(&hashes), "{}", checkpoint.dataset_version);
            checkpoints += 1;
        }
    }
    assert_eq!(checkpoints, 5);

    let whole = server
        .get("/v1/companies/stripe/published", Some(RESEARCH))
        .await
        .json();
    let dates: Vec<&str> = whole["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["date"].as_str().unwrap())
        .collect();
    assert!(dates.len() >= 2, "{dates:?}");
    let from = dates[1];
    let cut = server
        .get(&format!("/v1/companies/stripe/published?from={from}"), Some(RESEARCH))
        .await
        .json();
    assert_eq!(
        cut["series"].as_array().unwrap().as_slice(),
        &whole["series"].as_array().unwrap()[1..]
    );
}

/// RFC 9162 2.1.1: the root of a list of leaf hashes, by its recursive definition.
fn root_of(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => Sha256::digest(b"").into(),
        1 => leaves[0],
        n => {
            let k = 1usize << (usize::BITS - (n - 1).leading_zeros() - 1);
            node(&root_of(&leaves[..k]), &root_of(&leaves[k..]))
        }
    }
}
