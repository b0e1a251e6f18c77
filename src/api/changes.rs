//! `GET /v1/changes?since=VERSION` pages: the companies changed between a dataset version a
//! client synced and the one served, from the change log the builder carries in the snapshot,
//! with each company's current list item spliced in so that a client can update its copy of
//! the list without another request.
//!
//! Pagination works as for listCompanies: keyset cursors on the slug (the log's lists are in
//! slug order), bound to the `since` they came from, so a cursor keeps working after a swap.

use bytes::{BufMut, Bytes, BytesMut};
use marks_format::file::layout::{ArchivedChangeRow, CHANGE_KINDS};
use marks_format::rules::day::Day;
use xxhash_rust::xxh3::Xxh3;

use crate::api::cursor::{Cursor, CursorKey, SortKey};
use crate::api::list::{put_page_info, put_plain_array, put_plain_string};
use crate::api::query::{self, Params};
use crate::response::problem::ApiError;
use crate::snapshot::LoadedSnapshot;

pub const CHANGES_PARAMS: &[&str] = &["since", "limit", "cursor"];

/// Where a client that cannot be answered from the log starts again.
const RESYNC: &str = "re-sync from /v1/export (or page through /v1/companies) and then ask for changes since the dataset_version it gives";

/// The parameters of getChanges, validated.
#[derive(Debug)]
pub struct ChangesQuery<'a> {
    pub since: &'a str,
    pub limit: u32,
    pub cursor: Option<&'a str>,
}

impl<'a> ChangesQuery<'a> {
    pub fn from_params(params: &'a Params<'a>) -> Result<ChangesQuery<'a>, ApiError> {
        let since = params.get("since").ok_or_else(|| {
            ApiError::invalid_parameter(
                "since",
                "is required: the dataset_version your copy holds (meta.dataset_version); a new copy starts from /v1/export",
            )
        })?;
        if Day::parse(since).is_none() {
            return Err(ApiError::invalid_parameter(
                "since",
                "must be a dataset version, a date YYYY-MM-DD",
            ));
        }
        Ok(ChangesQuery {
            since,
            limit: query::limit(params)?,
            cursor: params.get("cursor"),
        })
    }
}

/// One page of changes, placed but not yet rendered.
#[derive(Debug)]
pub struct Page<'a> {
    loaded: &'a LoadedSnapshot,
    since: &'a str,
    rows: &'a [ArchivedChangeRow],
    has_more: bool,
    limit: u32,
    binding: u64,
}

/// Identifies the list a cursor walks: the version it counts from.
fn binding(since: &str) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(b"changes\0");
    hasher.update(since.as_bytes());
    hasher.digest()
}

impl<'a> Page<'a> {
    /// Places the page `query` names: 422 `invalid_parameter` for a version the log does not
    /// hold, `bad_cursor` for a cursor this server did not issue for this `since`.
    pub fn place(
        loaded: &'a LoadedSnapshot,
        query: &ChangesQuery<'a>,
        cursor_key: &CursorKey,
    ) -> Result<Page<'a>, ApiError> {
        let index = loaded.snapshot.index();
        let rows = index
            .changes_since(query.since)
            .ok_or_else(|| unknown_version(loaded, query.since))?;
        let binding = binding(query.since);
        let cursor = query
            .cursor
            .map(|text| Cursor::decode(text, cursor_key, binding))
            .transpose()
            .map_err(|e| ApiError::BadCursor(e.to_string()))?;
        let companies = index.companies.as_slice();
        let start = match &cursor {
            None => 0,
            Some(cursor) => rows.partition_point(|row| {
                companies[row.company.to_native() as usize].slug.as_str() <= cursor.slug.as_str()
            }),
        };
        let end = (start + query.limit as usize).min(rows.len());
        Ok(Page {
            loaded,
            since: query.since,
            rows: &rows[start..end],
            has_more: end < rows.len(),
            limit: query.limit,
            binding,
        })
    }

    /// The ChangesResponse body.
    pub fn render(&self, cursor_key: &CursorKey) -> Bytes {
        let loaded = self.loaded;
        let index = loaded.snapshot.index();
        let companies = index.companies.as_slice();
        let versions = index.changes.versions.as_slice();
        let chain = &versions[versions.iter().position(|v| v.as_str() == self.since).unwrap_or(0)..];
        let items: usize = self
            .rows
            .iter()
            .map(|row| companies[row.company.to_native() as usize].list_item.len.to_native() as usize + 96)
            .sum();
        let mut body = BytesMut::with_capacity(loaded.meta.len() + items + 256 + chain.len() * 13);
        body.put_slice(b"{\"meta\":");
        body.put_slice(&loaded.meta);
        // Versions are dates (checked at build and here), so they need no JSON escaping.
        body.put_slice(b",\"since\":");
        put_plain_string(&mut body, self.since);
        body.put_slice(b",\"dataset_version\":");
        put_plain_string(&mut body, index.dataset_version.as_str());
        body.put_slice(b",\"versions\":");
        put_plain_array(&mut body, chain.iter().map(|v| v.as_str()));
        body.put_slice(b",\"changes\":[");
        for (i, row) in self.rows.iter().enumerate() {
            if i > 0 {
                body.put_u8(b',');
            }
            let company = &companies[row.company.to_native() as usize];
            body.put_slice(b"{\"slug\":");
            body.put_slice(&serde_json::to_vec(company.slug.as_str()).unwrap_or_default());
            body.put_slice(b",\"changes\":");
            let kinds = CHANGE_KINDS.iter().filter(|(bit, _)| row.kinds & bit != 0);
            put_plain_array(&mut body, kinds.map(|(_, name)| *name));
            body.put_slice(b",\"events_added\":");
            body.put_slice(itoa::Buffer::new().format(row.events_added.to_native()).as_bytes());
            body.put_slice(b",\"company\":");
            body.put_slice(loaded.snapshot.body_slice(&company.list_item));
            body.put_u8(b'}');
        }
        let next_cursor = match self.rows.last() {
            Some(last) if self.has_more => Some(
                Cursor {
                    binding: self.binding,
                    key: SortKey::Slug,
                    slug: companies[last.company.to_native() as usize].slug.to_string(),
                }
                .encode(cursor_key),
            ),
            _ => None,
        };
        body.put_slice(b"],");
        put_page_info(&mut body, self.limit, next_cursor.as_deref(), self.has_more);
        body.put_u8(b'}');
        body.freeze()
    }
}

/// Why the log cannot answer for `since`, and what to do instead.
fn unknown_version(loaded: &LoadedSnapshot, since: &str) -> ApiError {
    let versions = loaded.snapshot.index().changes.versions.as_slice();
    let (oldest, newest) = match (versions.first(), versions.last()) {
        (Some(oldest), Some(newest)) => (oldest.as_str(), newest.as_str()),
        _ => ("", ""),
    };
    let reason = if since > newest {
        format!("is newer than the dataset version served ({newest}); {RESYNC}")
    } else if since < oldest {
        format!("is older than the change log, which goes back to {oldest}; {RESYNC}")
    } else {
        format!("is not a dataset version the change log holds (it holds {oldest} to {newest}); {RESYNC}")
    };
    ApiError::invalid_parameter("since", &reason)
}
