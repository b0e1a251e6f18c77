//! Whether one snapshot may replace another: the rule `marks install` and a running server apply
//! before a new file goes in force, so that a fleet is never rolled back without a word.
//!
//! A publisher signature binds a snapshot's content, not its freshness: an old, validly signed
//! snapshot replayed at the watched path or in the store would verify. So a successor must carry
//! a newer dataset version, and its publication log must extend the log in force (the log in
//! force is a prefix of the successor's: the successor records a version of exactly the log in
//! force's size whose root is the root in force). The same file again is no change.

use base64::Engine;
use serde::Deserialize;

use crate::file::reader::Snapshot;

/// Why a snapshot does not succeed the one in force.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotASuccessor {
    #[error("dataset {candidate} is older than dataset {current} in force: a rollback (allow it with --rollback, or a server's --allow-rollback)")]
    Older { candidate: String, current: String },
    #[error("dataset {candidate} is the dataset version in force with other content: a successor carries a newer version (allow it with --rollback, or a server's --allow-rollback)")]
    SameVersion { candidate: String },
    #[error("its publication log ({candidate_size} entries) does not extend the log in force ({current_size} entries, root {current_root}): the marks published so far would be rewritten (allow it with --rollback, or a server's --allow-rollback)")]
    LogRewritten {
        candidate_size: u64,
        current_size: u64,
        current_root: String,
    },
}

/// `Ok` when `candidate` may replace `current`: the same file, or a newer dataset version whose
/// publication log extends the one in force.
pub fn check_succession(candidate: &Snapshot, current: &Snapshot) -> Result<(), NotASuccessor> {
    let (new, old) = (candidate.header(), current.header());
    if new.checksum == old.checksum && new.content_digest == old.content_digest {
        return Ok(());
    }
    // Dataset versions are dates, YYYY-MM-DD: their text orders as they do.
    match new.dataset_version.cmp(&old.dataset_version) {
        std::cmp::Ordering::Less => {
            return Err(NotASuccessor::Older {
                candidate: new.dataset_version.clone(),
                current: old.dataset_version.clone(),
            })
        }
        std::cmp::Ordering::Equal => {
            return Err(NotASuccessor::SameVersion {
                candidate: new.dataset_version.clone(),
            })
        }
        std::cmp::Ordering::Greater => {}
    }
    let Some((current_size, current_root)) = log_head(current) else {
        // A log in force that cannot be read binds nothing; the snapshot checks refused worse.
        return Ok(());
    };
    let candidate_size = log_head(candidate).map_or(0, |(size, _)| size);
    if recorded_root(candidate, current_size).as_deref() == Some(current_root.as_str()) {
        return Ok(());
    }
    Err(NotASuccessor::LogRewritten {
        candidate_size,
        current_size,
        current_root,
    })
}

/// The size and root (base64) of a snapshot's publication log, from its signed checkpoint (a
/// C2SP note: the origin, the size and the root on its first three lines).
fn log_head(snapshot: &Snapshot) -> Option<(u64, String)> {
    let checkpoint = snapshot.body(&snapshot.index().log.checkpoint.identity);
    let text = std::str::from_utf8(&checkpoint).ok()?;
    let mut lines = text.lines().skip(1);
    let size = lines.next()?.parse().ok()?;
    let root = lines.next()?.to_string();
    base64::engine::general_purpose::STANDARD.decode(&root).ok()?;
    Some((size, root))
}

/// The root of the first `size` entries of `snapshot`'s log, as its builder recorded it: today's
/// root when that is its whole size, else the root of the published version of that size (the
/// `from` of its consistency proof to today's tree, which the builder checked).
fn recorded_root(snapshot: &Snapshot, size: u64) -> Option<String> {
    if let Some((whole, root)) = log_head(snapshot) {
        if whole == size {
            return Some(root);
        }
    }
    #[derive(Deserialize)]
    struct Consistency {
        from: From,
    }
    #[derive(Deserialize)]
    struct From {
        tree_size: u64,
        root_hash: String,
    }
    let version = snapshot
        .index()
        .log
        .versions
        .iter()
        .find(|v| v.tree_size.to_native() == size)?;
    let body = snapshot.body(&version.consistency.identity);
    let consistency: Consistency = serde_json::from_slice(&body).ok()?;
    (consistency.from.tree_size == size).then_some(consistency.from.root_hash)
}
