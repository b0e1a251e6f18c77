//! listCompanies pages, assembled from the snapshot's precomputed lists and pre-rendered list
//! items: a binary search to place the cursor, then one copy of each item's bytes. A search
//! (`q`) takes its matches from the snapshot's word index instead, filters and orders them
//! (by the sort asked for, or by relevance), and pages them the same way.

use std::cmp::Ordering;

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue};
use marks_format::file::layout::{compare_rows, ArchivedCompanyEntry, ArchivedIndex, RowKey, UNIVERSE_FREE};
use marks_format::rules::search;
use xxhash_rust::xxh3::Xxh3;

use crate::api::cursor::{Cursor, CursorKey, SortKey};
use crate::api::query::ListQuery;
use crate::response::headers::{X_NEXT_CURSOR, X_UNIVERSE_NOTE};
use crate::response::problem::ApiError;
use crate::snapshot::LoadedSnapshot;

/// The order of a list: one of `SORTS`, or a search's relevance when no sort is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Sort(usize),
    Relevance,
}

impl Order {
    fn of(query: &ListQuery<'_>) -> Order {
        match (query.sort, &query.search) {
            (Some(sort), _) => Order::Sort(usize::from(sort)),
            (None, Some(_)) => Order::Relevance,
            (None, None) => Order::Sort(0),
        }
    }

    /// A row's key in this order; `rank` is its search rank (0 when not searching).
    fn key<'c>(self, company: &'c ArchivedCompanyEntry, rank: u8) -> RowKey<'c> {
        match self {
            Order::Sort(sort) => company.row_key(sort),
            Order::Relevance => RowKey::Number(search::relevance_key(rank, company.value_usd.to_native())),
        }
    }

    fn compare(self, a: (RowKey<'_>, &str), b: (RowKey<'_>, &str)) -> Ordering {
        // Relevance keys ascend, like the ascending sorts.
        compare_rows(if let Order::Sort(sort) = self { sort } else { 0 }, a, b)
    }
}

/// Identifies the list a cursor walks: order, filters, search and universe, not the page size.
pub fn binding(query: &ListQuery<'_>, universe: u8) -> u64 {
    let mut hasher = Xxh3::new();
    let order = match Order::of(query) {
        Order::Sort(sort) => sort as u8,
        Order::Relevance => u8::MAX,
    };
    hasher.update(&[order, query.status, universe, query.outcomes]);
    match query.sector {
        Some(sector) => {
            hasher.update(&[1]);
            hasher.update(sector.as_bytes());
        }
        None => hasher.update(&[0]),
    }
    if let Some(search) = &query.search {
        hasher.update(&[1]);
        hasher.update(search.as_bytes());
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
    /// The page's rows: positions in `Index::companies` with their search rank.
    rows: Vec<(u32, u8)>,
    has_more: bool,
    limit: u32,
    binding: u64,
    order: Order,
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
        let order = Order::of(query);
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
        let companies = index.companies.as_slice();
        let after_cursor = |&(position, rank): &(u32, u8)| match &cursor {
            None => false,
            Some(cursor) => {
                let company = &companies[position as usize];
                let ordering = order.compare(
                    (order.key(company, rank), company.slug.as_str()),
                    (row_key(&cursor.key), &cursor.slug),
                );
                ordering != Ordering::Greater
            }
        };
        let limit = query.limit as usize;
        let outcome_asked =
            |position: u32| query.outcomes == 0 || query.outcomes & (1 << companies[position as usize].outcome) != 0;
        let (rows, has_more) = match (sector, &query.search, order) {
            // An unknown sector matches nothing.
            (None, _, _) => (Vec::new(), false),
            (Some(sector), None, Order::Sort(sort)) if query.outcomes == 0 => {
                let rows = index.list(sort as u8, universe, sector, query.status);
                let start = rows.partition_point(|row| after_cursor(&(row.to_native(), 0)));
                let end = (start + limit).min(rows.len());
                let page = rows[start..end].iter().map(|row| (row.to_native(), 0)).collect();
                (page, end < rows.len())
            }
            // An outcome filter walks the stored list (in its order already) and keeps what it
            // asks for: one pass over at most every company.
            (Some(sector), None, Order::Sort(sort)) => {
                let rows = index.list(sort as u8, universe, sector, query.status);
                let start = rows.partition_point(|row| after_cursor(&(row.to_native(), 0)));
                let mut kept = rows[start..]
                    .iter()
                    .map(|row| row.to_native())
                    .filter(|&position| outcome_asked(position));
                let page: Vec<(u32, u8)> = kept.by_ref().take(limit).map(|position| (position, 0)).collect();
                let has_more = kept.next().is_some();
                (page, has_more)
            }
            (Some(sector), search, _) => {
                let mut found = search::find(index, search.as_deref().unwrap_or(""));
                found.retain(|&(position, _)| {
                    let company = &companies[position as usize];
                    company.in_sector(sector)
                        && (query.status == 0 || company.status == query.status)
                        && outcome_asked(position)
                        && (universe != UNIVERSE_FREE || in_free_universe(index, position))
                });
                // Only the page is ordered: the matches after the cursor, the first `limit` of
                // them chosen in linear time, then sorted. Each row's key is read once.
                let mut keyed: Vec<Keyed<'_>> = found
                    .into_iter()
                    .map(|(position, rank)| {
                        let company = &companies[position as usize];
                        ((order.key(company, rank), company.slug.as_str()), (position, rank))
                    })
                    .filter(|(_, row)| !after_cursor(row))
                    .collect();
                let compare =
                    |a: &((RowKey<'_>, &str), (u32, u8)), b: &((RowKey<'_>, &str), (u32, u8))| order.compare(a.0, b.0);
                let has_more = keyed.len() > limit;
                if has_more {
                    keyed.select_nth_unstable_by(limit, compare);
                    keyed.truncate(limit);
                }
                keyed.sort_unstable_by(compare);
                let found: Vec<(u32, u8)> = keyed.into_iter().map(|(_, row)| row).collect();
                (found, has_more)
            }
        };
        Ok(Page {
            loaded,
            rows,
            has_more,
            limit: query.limit,
            binding,
            order,
        })
    }

    /// The cursor of the next page, if there is one.
    fn next_cursor(&self, cursor_key: &CursorKey) -> Option<String> {
        let companies = self.loaded.snapshot.index().companies.as_slice();
        match self.rows.last() {
            Some(&(last, rank)) if self.has_more => {
                let company = &companies[last as usize];
                Some(
                    Cursor {
                        binding: self.binding,
                        key: sort_key(self.order.key(company, rank)),
                        slug: company.slug.to_string(),
                    }
                    .encode(cursor_key),
                )
            }
            _ => None,
        }
    }

    /// The page as CSV: the header row and the stored row of each company.
    pub fn render_csv(&self) -> Bytes {
        let loaded = self.loaded;
        let companies = loaded.snapshot.index().companies.as_slice();
        let header = marks_format::rules::table::header(marks_format::rules::table::COMPANY_COLUMNS);
        let rows: usize = self
            .rows
            .iter()
            .map(|&(row, _)| companies[row as usize].list_row_csv.len.to_native() as usize)
            .sum();
        let mut body = BytesMut::with_capacity(header.len() + rows);
        body.put_slice(&header);
        for &(row, _) in &self.rows {
            body.put_slice(loaded.snapshot.body_slice(&companies[row as usize].list_row_csv));
        }
        body.freeze()
    }

    /// What a CSV page says beyond its rows, as headers: `X-Next-Cursor` (the `cursor` of the
    /// next page; absent on the last) and, for the free tier, `X-Universe-Note`.
    pub fn csv_headers(&self, cursor_key: &CursorKey, universe_note: Option<&str>) -> Vec<(HeaderName, HeaderValue)> {
        let mut headers = Vec::new();
        if let Some(cursor) = self.next_cursor(cursor_key) {
            if let Ok(value) = HeaderValue::from_str(&cursor) {
                headers.push((X_NEXT_CURSOR, value));
            }
        }
        if let Some(value) = universe_note.and_then(|note| HeaderValue::from_str(note).ok()) {
            headers.push((X_UNIVERSE_NOTE, value));
        }
        headers
    }

    /// The CompaniesResponse body: meta, the pre-rendered items, and the page info.
    pub fn render(&self, cursor_key: &CursorKey, universe_note: Option<&str>) -> Bytes {
        let loaded = self.loaded;
        let companies = loaded.snapshot.index().companies.as_slice();
        let next_cursor = self.next_cursor(cursor_key);

        let items: usize = self
            .rows
            .iter()
            .map(|&(row, _)| companies[row as usize].list_item.len.to_native() as usize + 1)
            .sum();
        let mut body = BytesMut::with_capacity(loaded.meta.len() + items + 256);
        body.put_slice(b"{\"meta\":");
        body.put_slice(&loaded.meta);
        body.put_slice(b",\"companies\":[");
        for (i, &(row, _)) in self.rows.iter().enumerate() {
            if i > 0 {
                body.put_u8(b',');
            }
            let company = &companies[row as usize];
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

/// A search's match with its key in the list's order: ((key, slug), (position, rank)).
type Keyed<'a> = ((RowKey<'a>, &'a str), (u32, u8));

/// Whether a company is one of the free tier's (the top 10 by latest value).
fn in_free_universe(index: &ArchivedIndex, position: u32) -> bool {
    index
        .list(0, UNIVERSE_FREE, 0, 0)
        .iter()
        .any(|row| row.to_native() == position)
}
