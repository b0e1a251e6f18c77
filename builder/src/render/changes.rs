//! The change log behind `GET /v1/changes?since=VERSION`: for each of the last dataset
//! versions, which companies changed between it and this snapshot's (added, new events, a new
//! latest mark, bands, confidence or next-print forecast, a new status), so a client that synced several versions ago asks once.
//!
//! A build with `--previous` compares the two versions (the step) and carries the previous
//! snapshot's log forward: what changed since an older version is what changed up to the
//! previous one, merged with the step. Marks move with time even without events (the drift
//! and the uncertainty grow with the gap since a company's last event), so after an `as_of`
//! that moves, most companies show `mark`; a client refetches what it needs, or the export.

use crate::dataset::Dataset;
use marks_format::file::layout::{
    ArchivedIndex, ChangeLog, ChangeRow, CompanyEntry, CHANGE_ADDED, CHANGE_EVENTS, CHANGE_MARK, CHANGE_STATUS,
};

/// How many earlier versions the log answers for; a client further behind re-syncs from the
/// export.
pub const LOG_DEPTH: usize = 100;

/// The change log of a snapshot of `dataset` whose companies are `companies` (same order),
/// succeeding `previous` if there is one.
pub fn change_log(dataset: &Dataset, companies: &[CompanyEntry], previous: Option<&ArchivedIndex>) -> ChangeLog {
    let version = dataset.info.dataset_version.to_string();
    let Some(previous) = previous else {
        return ChangeLog {
            versions: vec![version],
            since: Vec::new(),
        };
    };
    let step = step(dataset, companies, previous);
    // Where each of the previous snapshot's companies is now. None ever goes (its events
    // would have to go too, which the append-only check refuses), but a row that cannot be
    // placed is dropped rather than trusted.
    let moved: Vec<Option<u32>> = previous
        .companies
        .iter()
        .map(|old| {
            companies
                .binary_search_by(|c| c.slug.as_str().cmp(old.slug.as_str()))
                .ok()
                .map(|i| i as u32)
        })
        .collect();
    let mut versions: Vec<String> = previous.changes.versions.iter().map(|v| v.to_string()).collect();
    if versions.is_empty() {
        versions.push(previous.dataset_version.to_string());
    }
    let mut since: Vec<Vec<ChangeRow>> = previous
        .changes
        .since
        .iter()
        .map(|rows| {
            let carried: Vec<ChangeRow> = rows
                .iter()
                .filter_map(|row| {
                    Some(ChangeRow {
                        company: (*moved.get(row.company.to_native() as usize)?)?,
                        kinds: row.kinds,
                        events_added: row.events_added.to_native(),
                    })
                })
                .collect();
            merge(&carried, &step)
        })
        .collect();
    // A rebuild of the same version (a methodology fix, say) is not a version of its own: its
    // changes reach clients that synced earlier versions, and "since" this version stays empty.
    if versions.last() != Some(&version) {
        since.push(step);
        versions.push(version);
    }
    let excess = since.len().saturating_sub(LOG_DEPTH);
    since.drain(..excess);
    versions.drain(..excess);
    ChangeLog { versions, since }
}

/// What changed from the previous snapshot to this one.
fn step(dataset: &Dataset, companies: &[CompanyEntry], previous: &ArchivedIndex) -> Vec<ChangeRow> {
    let known_event = |id: &str| {
        previous
            .events
            .as_slice()
            .binary_search_by(|e| e.event_id.as_str().cmp(id))
            .is_ok()
    };
    companies
        .iter()
        .zip(&dataset.companies)
        .enumerate()
        .filter_map(|(position, (entry, company))| {
            let (kinds, events_added) = match previous.company(&entry.slug) {
                None => (CHANGE_ADDED, company.events.len()),
                Some((_, old)) => {
                    let added = company.events.iter().filter(|e| !known_event(&e.event_id)).count();
                    let mut kinds = 0;
                    if added > 0 {
                        kinds |= CHANGE_EVENTS;
                    }
                    let old_bands = &old.latest_bands;
                    let bands = [
                        (old_bands.lower_80.to_native(), entry.latest_bands.lower_80),
                        (old_bands.upper_80.to_native(), entry.latest_bands.upper_80),
                        (old_bands.lower_95.to_native(), entry.latest_bands.lower_95),
                        (old_bands.upper_95.to_native(), entry.latest_bands.upper_95),
                    ];
                    let moved = old.value_usd.to_native() != entry.value_usd
                        || bands.iter().any(|(a, b)| a != b)
                        || old.latest_mark_hash.to_native() != entry.latest_mark_hash;
                    if moved {
                        kinds |= CHANGE_MARK;
                    }
                    if old.status != entry.status {
                        kinds |= CHANGE_STATUS;
                    }
                    (kinds, added)
                }
            };
            (kinds != 0).then(|| ChangeRow {
                company: position as u32,
                kinds,
                events_added: u32::try_from(events_added).unwrap_or(u32::MAX),
            })
        })
        .collect()
}

/// Two change lists over the same companies, both sorted by company, as one: kinds joined,
/// events summed. A company added in between is reported as added, nothing more.
fn merge(older: &[ChangeRow], newer: &[ChangeRow]) -> Vec<ChangeRow> {
    let mut merged = Vec::with_capacity(older.len().max(newer.len()));
    let (mut i, mut j) = (0, 0);
    loop {
        let row = match (older.get(i), newer.get(j)) {
            (Some(x), Some(y)) if x.company == y.company => {
                i += 1;
                j += 1;
                ChangeRow {
                    company: x.company,
                    kinds: x.kinds | y.kinds,
                    events_added: x.events_added.saturating_add(y.events_added),
                }
            }
            (Some(x), Some(y)) if x.company < y.company => {
                i += 1;
                *x
            }
            (Some(x), None) => {
                i += 1;
                *x
            }
            (_, Some(y)) => {
                j += 1;
                *y
            }
            (None, None) => break,
        };
        let kinds = if row.kinds & CHANGE_ADDED != 0 {
            CHANGE_ADDED
        } else {
            row.kinds
        };
        merged.push(ChangeRow { kinds, ..row });
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(company: u32, kinds: u8, events_added: u32) -> ChangeRow {
        ChangeRow {
            company,
            kinds,
            events_added,
        }
    }

    #[test]
    fn merging_joins_kinds_sums_events_and_keeps_company_order() {
        let older = [
            row(0, CHANGE_MARK, 0),
            row(2, CHANGE_EVENTS, 2),
            row(5, CHANGE_ADDED, 3),
        ];
        let newer = [
            row(1, CHANGE_ADDED, 1),
            row(2, CHANGE_MARK | CHANGE_EVENTS, 1),
            row(5, CHANGE_MARK, 0),
        ];
        assert_eq!(
            merge(&older, &newer),
            vec![
                row(0, CHANGE_MARK, 0),
                row(1, CHANGE_ADDED, 1),
                row(2, CHANGE_EVENTS | CHANGE_MARK, 3),
                row(5, CHANGE_ADDED, 3),
            ]
        );
        assert_eq!(merge(&[], &newer).len(), 3);
        assert_eq!(merge(&older, &[]), older.to_vec());
    }
}
