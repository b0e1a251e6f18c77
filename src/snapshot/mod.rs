//! The snapshot in force and where snapshots come from: putting a file in force
//! ([`in_force`]), the file's identity, the object-store source of a fleet, and the
//! idle-priority thread that reads new files.

pub mod background;
pub mod decoded;
pub mod identity;
pub mod in_force;
pub mod object_store;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use marks_format::file::layout::{ArchivedCompanyEntry, ArchivedExport, ArchivedSeriesBody};
use marks_format::{Snapshot, SnapshotError};

use crate::snapshot::identity::FileIdentity;

/// A snapshot in force, with what the hot path needs precomputed.
#[derive(Debug)]
pub struct LoadedSnapshot {
    pub snapshot: Snapshot,
    pub path: PathBuf,
    pub identity: Option<FileIdentity>,
    pub loaded_at: SystemTime,
    /// The `meta` object, spliced into list pages.
    pub meta: Bytes,
    /// Seeds list-page ETags: a page's bytes are a function of the snapshot and the query.
    pub etag_seed: u64,
    /// What `meta` says, as the response headers of a CSV answer ([`csv_meta`]).
    pub csv_meta: Vec<(http::HeaderName, http::HeaderValue)>,
    /// The companies' positions by slug.
    pub slugs: SlugIndex,
    /// `/` and `/scorecard`, their content the snapshot's, drawn in this binary's frame.
    pub pages: SnapshotPages,
    /// The texts stored compressed only (series, backtests, published entries) decoded last,
    /// for clients without gzip and for cuts.
    pub decoded_texts: decoded::DecodedTexts,
}

/// The pages whose content a snapshot carries, framed and prepared when it is put in force.
#[derive(Debug)]
pub struct SnapshotPages {
    pub home: crate::web::WebFile,
    pub scorecard: crate::web::WebFile,
}

impl SnapshotPages {
    pub fn of(snapshot: &Snapshot) -> SnapshotPages {
        let index = snapshot.index();
        let page = |content: &marks_format::file::layout::ArchivedPageContent, current: &str| {
            let main = String::from_utf8_lossy(snapshot.body_slice(&content.main));
            crate::web::snapshot_page(content.title.as_str(), current, &main)
        };
        SnapshotPages {
            home: page(&index.home_page, "/"),
            scorecard: page(&index.scorecard_page, "/scorecard"),
        }
    }
}

impl LoadedSnapshot {
    /// A company entry and its position, by exact slug.
    pub fn company(&self, slug: &str) -> Option<(usize, &ArchivedCompanyEntry)> {
        let position = self.slugs.position(slug)?;
        self.snapshot.index().companies.get(position).map(|c| (position, c))
    }

    /// A series' text, kept in the cache of decoded texts once decoded
    /// ([`decoded::DecodedTexts::text`]).
    pub fn series_text(&self, series: &ArchivedSeriesBody) -> Result<Bytes, decoded::DamagedText> {
        self.decoded_texts.text(&self.snapshot, series)
    }

    /// The rows of a CSV series holding `year`'s, for a pass that reads one day of every company
    /// ([`decoded::DecodedTexts::rows_of_year_passing`]).
    pub fn series_rows_of_year_passing(
        &self,
        series: &ArchivedSeriesBody,
        year: i32,
    ) -> Result<Bytes, decoded::DamagedText> {
        self.decoded_texts.rows_of_year_passing(&self.snapshot, series, year)
    }

    /// A series' text for a pass over every company ([`decoded::DecodedTexts::text_passing`]).
    pub fn series_text_passing(&self, series: &ArchivedSeriesBody) -> Result<Bytes, decoded::DamagedText> {
        self.decoded_texts.text_passing(&self.snapshot, series)
    }

    /// A document stored as gzip only, its text kept in the cache once decoded.
    /// Whether the text of `document` is kept once decoded, and served from memory.
    pub fn keeps_text(&self, document: &ArchivedExport) -> bool {
        self.decoded_texts.keeps(document.identity_len.to_native())
    }

    pub fn document_text(&self, document: &ArchivedExport) -> Result<Bytes, decoded::DamagedText> {
        self.decoded_texts.document(&self.snapshot, document)
    }
}

/// Slug to position, hashed once when a snapshot is put in force. The snapshot's own index is
/// sorted for binary search, which over the sample's 182 slugs compares eight of them (about
/// 670 instructions of a 17,600-instruction getCompany, `benches/lab/instructions.sh`) and over
/// 10,000 fourteen; a hash finds one. It costs a copy of the slugs: under 1 MB for 10,000.
#[derive(Debug, Default)]
pub struct SlugIndex(std::collections::HashMap<Box<str>, u32, foldhash::fast::RandomState>);

impl SlugIndex {
    pub fn new(snapshot: &Snapshot) -> SlugIndex {
        let companies = snapshot.index().companies.as_slice();
        let mut slugs = std::collections::HashMap::with_capacity_and_hasher(companies.len(), Default::default());
        for (position, company) in (0u32..).zip(companies) {
            slugs.insert(company.slug.as_str().into(), position);
        }
        SlugIndex(slugs)
    }

    pub fn position(&self, slug: &str) -> Option<usize> {
        self.0.get(slug).map(|&position| position as usize)
    }
}

/// Why a file was last refused, for `/readyz` and the logs.
#[derive(Clone, Debug)]
pub struct Refusal {
    pub at: SystemTime,
    pub path: PathBuf,
    pub reason: String,
}

pub fn epoch_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Why a snapshot file was not put in force.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot open {path}: {error}")]
    Open { path: PathBuf, error: std::io::Error },
    /// The file failed a check: refused until it changes.
    #[error(transparent)]
    Refused(#[from] SnapshotError),
    /// The file changed while it was being read (a copy or rewrite in progress): not judged,
    /// read again at the next look.
    #[error("{path} changed while it was being read (still being written?); it is read again once it is complete")]
    Changing { path: PathBuf },
    /// A valid file that does not succeed the snapshot in force (an older dataset, a rewritten
    /// publication log): refused until it changes, unless the server allows rollbacks.
    #[error("{path} refused: {reason}")]
    NotASuccessor {
        path: PathBuf,
        reason: marks_format::file::succession::NotASuccessor,
    },
}

/// An error and each of its causes, outermost first, on one line: what a refusal records and
/// logs, so that the cause (a FIFO at the path, a permission) is said once and never lost.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

/// The response headers that carry `meta` on a CSV answer, whose rows have no room for it:
/// `X-Dataset-Version`, `X-Methodology-Version`, `X-As-Of`, `X-Data-Mode`, `X-Provenance` and
/// `X-Disclaimer` (its characters outside visible ASCII as `?`; the JSON forms carry it exact).
pub fn csv_meta(meta: &[u8]) -> Vec<(http::HeaderName, http::HeaderValue)> {
    let Ok(serde_json::Value::Object(meta)) = serde_json::from_slice::<serde_json::Value>(meta) else {
        return Vec::new();
    };
    let fields = [
        ("dataset_version", "x-dataset-version"),
        ("methodology_version", "x-methodology-version"),
        ("as_of", "x-as-of"),
        ("data_mode", "x-data-mode"),
        ("provenance", "x-provenance"),
        ("disclaimer", "x-disclaimer"),
    ];
    fields
        .iter()
        .filter_map(|(field, name)| {
            let text = meta.get(*field)?.as_str()?;
            let visible: String = text
                .chars()
                .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
                .collect();
            Some((
                http::HeaderName::from_static(name),
                http::HeaderValue::from_str(&visible).ok()?,
            ))
        })
        .collect()
}
