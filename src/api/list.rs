//! listCompanies pages, assembled from the snapshot's precomputed lists and pre-rendered list
//! items: a binary search to place the cursor, then one copy of each item's bytes.

use std::cmp::Ordering;

use bytes::{BufMut, Bytes, BytesMut};
use marks_format::layout::{compare_rows, ListRow, RowKey};
use xxhash_rust::xxh3::Xxh3;

use crate::api::cursor::{Cursor, CursorKey, SortKey};
use crate::api::query::ListQuery;
use crate::response::problem::ApiError;
use crate::snapshot::LoadedSnapshot;

/// Identifies the list a cursor walks: sort, filters and universe, not the page size.
pub fn binding(query: &ListQuery<'_>, universe: u8) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(&[query.sort, query.status, universe]);
    match query.sector {
        Some(sector) => {
            hasher.update(&[1]);
            hasher.update(sector.as_bytes());
        }
        None => hasher.update(&[0]),
    }
    hasher.digest()
}

fn row_key(key: &SortKey) -> RowKey<'_> {
    match key {
        SortKey::Slug => RowKey::Slug,
        SortKey::Text(text) => RowKey::Text(text),
        SortKey::Number(n) => RowKey::Number(*n),
        SortKey::Null => RowKey::Null,
    }
}

fn sort_key(key: RowKey<'_>) -> SortKey {
    match key {
        RowKey::Slug => SortKey::Slug,
        RowKey::Text(text) => SortKey::Text(text.to_string()),
        RowKey::Number(n) => SortKey::Number(n),
        RowKey::Null => SortKey::Null,
    }
}

/// Writes the PageInfo member of a page: `"page":{"limit":..,"next_cursor":..,"has_more":..}`.
pub fn put_page_info(body: &mut BytesMut, limit: u32, next_cursor: Option<&str>, has_more: bool) {
    body.put_slice(b"\"page\":{\"limit\":");
    body.put_slice(itoa::Buffer::new().format(limit).as_bytes());
    body.put_slice(b",\"next_cursor\":");
    match next_cursor {
        // base64url needs no JSON escaping.
        Some(cursor) => put_plain_string(body, cursor),
        None => body.put_slice(b"null"),
    }
    body.put_slice(if has_more {
        b",\"has_more\":true}"
    } else {
        b",\"has_more\":false}"
    });
}

/// Writes a string that needs no JSON escaping: a date, base64url, a name of this crate's own.
pub fn put_plain_string(body: &mut BytesMut, text: &str) {
    body.put_u8(b'"');
    body.put_slice(text.as_bytes());
    body.put_u8(b'"');
}

/// Writes an array of strings that need no JSON escaping.
pub fn put_plain_array<'a>(body: &mut BytesMut, strings: impl IntoIterator<Item = &'a str>) {
    body.put_u8(b'[');
    for (i, text) in strings.into_iter().enumerate() {
        if i > 0 {
            body.put_u8(b',');
        }
        put_plain_string(body, text);
    }
    body.put_u8(b']');
}

/// One page of a list, placed but not yet rendered: checking a request (its cursor above all)
/// and answering a revalidation need no rendering.
#[derive(Debug)]
pub struct Page<'a> {
    loaded: &'a LoadedSnapshot,
    rows: &'a [ListRow],
    has_more: bool,
    limit: u32,
    binding: u64,
    sort: usize,
}

impl<'a> Page<'a> {
    /// Places the page `query` names within `universe`: 422 `bad_cursor` for a cursor this
    /// server did not issue for this list.
    pub fn place(
        loaded: &'a LoadedSnapshot,
        query: &ListQuery<'_>,
        universe: u8,
        cursor_key: &CursorKey,
    ) -> Result<Page<'a>, ApiError> {
        let index = loaded.snapshot.index();
        let sort = usize::from(query.sort);
        let binding = binding(query, universe);
        let cursor = query
            .cursor
            .map(|text| Cursor::decode(text, cursor_key, binding))
            .transpose()
            .map_err(|e| ApiError::BadCursor(e.to_string()))?;
        let sector = match query.sector {
            None => Some(0),
            Some(name) => index.sector_code(name),
        };
        let rows = match sector {
            Some(sector) => index.list(query.sort, universe, sector, query.status),
            // An unknown sector matches nothing.
            None => &[],
        };
        let companies = index.companies.as_slice();
        let start = match &cursor {
            None => 0,
            Some(cursor) => rows.partition_point(|row| {
                let company = &companies[row.to_native() as usize];
                let ordering = compare_rows(
                    sort,
                    (company.row_key(sort), company.slug.as_str()),
                    (row_key(&cursor.key), &cursor.slug),
                );
                ordering != Ordering::Greater
            }),
        };
        let end = (start + query.limit as usize).min(rows.len());
        Ok(Page {
            loaded,
            rows: &rows[start..end],
            has_more: end < rows.len(),
            limit: query.limit,
            binding,
            sort,
        })
    }

    /// The CompaniesResponse body: meta, the pre-rendered items, and the page info.
    pub fn render(&self, cursor_key: &CursorKey, universe_note: Option<&str>) -> Bytes {
        let loaded = self.loaded;
        let companies = loaded.snapshot.index().companies.as_slice();
        let next_cursor = match self.rows.last() {
            Some(last) if self.has_more => {
                let company = &companies[last.to_native() as usize];
                Some(
                    Cursor {
                        binding: self.binding,
                        key: sort_key(company.row_key(self.sort)),
                        slug: company.slug.to_string(),
                    }
                    .encode(cursor_key),
                )
            }
            _ => None,
        };

        let items: usize = self
            .rows
            .iter()
            .map(|row| companies[row.to_native() as usize].list_item.len.to_native() as usize + 1)
            .sum();
        let mut body = BytesMut::with_capacity(loaded.meta.len() + items + 256);
        body.put_slice(b"{\"meta\":");
        body.put_slice(&loaded.meta);
        body.put_slice(b",\"companies\":[");
        for (i, row) in self.rows.iter().enumerate() {
            if i > 0 {
                body.put_u8(b',');
            }
            let company = &companies[row.to_native() as usize];
            body.put_slice(loaded.snapshot.body_slice(&company.list_item));
        }
        body.put_slice(b"],");
        put_page_info(&mut body, self.limit, next_cursor.as_deref(), self.has_more);
        if let Some(note) = universe_note {
            body.put_slice(b",\"universe_note\":");
            body.put_slice(&serde_json::to_vec(note).unwrap_or_default());
        }
        body.put_u8(b'}');
        body.freeze()
    }
}
