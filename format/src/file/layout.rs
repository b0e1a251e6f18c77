//! The snapshot file format: the one definition shared by the builder that writes it and the
//! server that maps it.
//!
//! A snapshot is three regions:
//!
//! ```text
//! [ header: 256 bytes ][ bodies: every response body, back to back ][ pad to 16 ][ index: rkyv ]
//! ```
//!
//! The header says what the file is (magic, format version, oldest reader version), where the
//! regions are, the content checksum (XXH3-128 over everything after the header, checked on
//! every load: it catches a damaged or cut copy), the content digest (BLAKE3 over the same
//! bytes) and an optional publisher signature over the header, which covers the content
//! through the digest. XXH3 is fast but not cryptographic (anyone can make other bytes with the
//! same checksum), so the signature covers the BLAKE3 digest, which nobody can forge; the
//! digest is verified whenever the file is signed. The bodies region holds final JSON bytes
//! (and their gzip variants) and the bulk exports (gzip only); the index is an rkyv archive of
//! small records that locate bodies by offset and carry their ETags, the sort permutations and
//! list indexes, the event fingerprints for the append-only check, and the change log that
//! tells a client what changed since an earlier dataset version.
//!
//! Bodies live outside the archive so that the builder can stream gigabytes of them to disk
//! without holding them in memory; the archive stays small enough to validate at load.

use rkyv::{Archive, Deserialize, Serialize};

/// "VMSNAP" + 0x00 + 0x01: identifies a Valuation Marks snapshot.
pub const MAGIC: [u8; 8] = *b"VMSNAP\x00\x01";
/// The format this code writes. Version 2 added the BLAKE3 content digest under the publisher
/// signature (version 1 signed only the XXH3 checksum); version 3 added the bulk exports, the
/// change log and each company's latest bands; version 4 added the scorecard's scored targets
/// and the home and scorecard pages; version 5 the scorecard's two disclosures; version 6 the
/// search index, the sector lists and the CSV bodies; version 7 the corrections and grades of
/// the append-only history in each event's fingerprint (methodology v0.5.0's dataset) and the
/// publication log; version 8 the pages' content without the frame, which the server draws;
/// version 9 each company's daily series stored once, as its lines of the series exports
/// ([`SeriesBody`]), and its backtests and published entries as gzip only; version 10 each
/// index's constituents on its latest day ([`LatestConstituents`]); version 11 where each year
/// begins in a CSV series' deflated rows ([`YearStart`]).
pub const FORMAT_VERSION: u32 = 11;
/// The oldest format this code still reads. Versions 3 to 11 changed the index's layout, so
/// older files are refused and must be rebuilt from their dataset (a version 1 file's signature
/// proved nothing about its content anyway).
pub const OLDEST_READABLE_VERSION: u32 = 11;
/// Header size; a multiple of 16 so the regions after it keep the archive's alignment.
pub const HEADER_LEN: usize = 256;
/// Alignment of the index archive within the file.
pub const INDEX_ALIGN: u64 = 16;
/// The header bytes a publisher signature covers: everything before the signature fields,
/// the content digest included.
pub const SIGNED_HEADER_LEN: usize = 152;

const FLAG_PUBLISHER_SIGNED: u64 = 1;

/// The fixed-layout header, little-endian.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub format_version: u32,
    /// Readers older than this cannot read the file.
    pub min_reader_version: u32,
    pub bodies_offset: u64,
    pub bodies_len: u64,
    pub index_offset: u64,
    pub index_len: u64,
    /// XXH3-128 of every byte after the header.
    pub checksum: u128,
    /// BLAKE3 of every byte after the header; what a publisher signature vouches for.
    pub content_digest: [u8; 32],
    pub dataset_version: String,
    pub methodology_version: String,
    pub as_of: String,
    /// Ed25519 public key and signature over the first `SIGNED_HEADER_LEN` header bytes.
    pub publisher: Option<([u8; 32], [u8; 64])>,
}

/// Why a header could not be read; the reader turns these into operator-facing errors.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderError {
    Short,
    Magic,
    Text(&'static str),
}

fn put_text(buf: &mut [u8], text: &str) {
    let bytes = text.as_bytes();
    let n = bytes.len().min(buf.len());
    buf[..n].copy_from_slice(&bytes[..n]);
}

fn get_text(buf: &[u8], field: &'static str) -> Result<String, HeaderError> {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    std::str::from_utf8(&buf[..end])
        .map(str::to_owned)
        .map_err(|_| HeaderError::Text(field))
}

fn u32_at(buf: &[u8], at: usize) -> u32 {
    let mut bytes = [0; 4];
    bytes.copy_from_slice(&buf[at..at + 4]);
    u32::from_le_bytes(bytes)
}

fn u64_at(buf: &[u8], at: usize) -> u64 {
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(bytes)
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut buf = [0u8; HEADER_LEN];
        buf[0..8].copy_from_slice(&MAGIC);
        buf[8..12].copy_from_slice(&self.format_version.to_le_bytes());
        buf[12..16].copy_from_slice(&self.min_reader_version.to_le_bytes());
        buf[16..24].copy_from_slice(&self.bodies_offset.to_le_bytes());
        buf[24..32].copy_from_slice(&self.bodies_len.to_le_bytes());
        buf[32..40].copy_from_slice(&self.index_offset.to_le_bytes());
        buf[40..48].copy_from_slice(&self.index_len.to_le_bytes());
        buf[48..64].copy_from_slice(&self.checksum.to_le_bytes());
        put_text(&mut buf[64..80], &self.dataset_version);
        put_text(&mut buf[80..96], &self.methodology_version);
        put_text(&mut buf[96..112], &self.as_of);
        let flags = if self.publisher.is_some() {
            FLAG_PUBLISHER_SIGNED
        } else {
            0
        };
        buf[112..120].copy_from_slice(&flags.to_le_bytes());
        buf[120..152].copy_from_slice(&self.content_digest);
        if let Some((key, signature)) = &self.publisher {
            buf[152..184].copy_from_slice(key);
            buf[184..248].copy_from_slice(signature);
        }
        // 248..256 reserved, zero.
        buf
    }

    pub fn decode(buf: &[u8]) -> Result<Header, HeaderError> {
        if buf.len() < HEADER_LEN {
            return Err(HeaderError::Short);
        }
        if buf[0..8] != MAGIC {
            return Err(HeaderError::Magic);
        }
        let flags = u64_at(buf, 112);
        let publisher = (flags & FLAG_PUBLISHER_SIGNED != 0).then(|| {
            let mut key = [0u8; 32];
            let mut signature = [0u8; 64];
            key.copy_from_slice(&buf[152..184]);
            signature.copy_from_slice(&buf[184..248]);
            (key, signature)
        });
        let mut checksum = [0u8; 16];
        checksum.copy_from_slice(&buf[48..64]);
        let mut content_digest = [0u8; 32];
        content_digest.copy_from_slice(&buf[120..152]);
        Ok(Header {
            format_version: u32_at(buf, 8),
            min_reader_version: u32_at(buf, 12),
            bodies_offset: u64_at(buf, 16),
            bodies_len: u64_at(buf, 24),
            index_offset: u64_at(buf, 32),
            index_len: u64_at(buf, 40),
            checksum: u128::from_le_bytes(checksum),
            content_digest,
            dataset_version: get_text(&buf[64..80], "dataset_version")?,
            methodology_version: get_text(&buf[80..96], "methodology_version")?,
            as_of: get_text(&buf[96..112], "as_of")?,
            publisher,
        })
    }
}

/// Where a body's bytes are in the bodies region.
#[derive(Archive, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BodyRef {
    pub offset: u64,
    pub len: u64,
}

/// A compressed variant of a body with its own ETag.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    pub bytes: BodyRef,
    pub etag: String,
}

/// A whole response body: identity bytes, their strong ETag (quoted), and a gzip variant when
/// the body is large enough for compression to pay.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Body {
    pub identity: BodyRef,
    pub etag: String,
    pub gzip: Option<Encoded>,
}

/// A company's daily series in one form (JSON or CSV) at one coverage, stored once: the text
/// past what every company's series of that form starts with (`head`: the JSON body's
/// `{"meta":...,` prefix, the CSV header row) is deflated once, and those bytes are the
/// company's part of the series export of that form and coverage (`rest` lies inside it).
/// The company's gzip answer is [`crate::file::gzip::HEADER`], `head`, `rest` and
/// [`ArchivedSeriesBody::trailer`], four slices sent one after the other; its text is decoded
/// from them on request (the server keeps the series it decoded last in a bounded cache).
/// A series is most of a snapshot's bytes, so storing it once instead of four times (text and
/// gzip, and again in the export) is what lets a snapshot hold tens of thousands of companies.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SeriesBody {
    /// The deflated head, shared by every company's series of the form.
    pub head: BodyRef,
    /// The deflated rest, inside the series export.
    pub rest: BodyRef,
    /// CRC-32 of the whole text, as the gzip trailer carries it.
    pub crc32: u32,
    /// Length and strong ETag of the text.
    pub identity_len: u64,
    pub identity_etag: String,
    /// Strong ETag of the gzip answer (header, head, rest, trailer).
    pub gzip_etag: String,
    /// Where each year after the first begins in a CSV series' rest, which is flushed there (a
    /// JSON series has none): one day's row is found by inflating its year alone, a tenth of a
    /// ten-year series (an index's constituents on a past day read one row of each company).
    pub years: Vec<YearStart>,
    /// Bytes of the rest's text (the text past the head).
    pub rest_text_len: u64,
}

/// The first row of a year in a CSV series' rest: its place in the text (past the header
/// row) and in the deflated bytes, where a raw inflate may start
/// ([`crate::file::gzip::inflate_part`]).
#[derive(Archive, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct YearStart {
    pub year: i32,
    pub text_at: u64,
    pub deflated_at: u64,
}

impl ArchivedSeriesBody {
    /// What closes the gzip answer: the final empty block, CRC-32 and length.
    pub fn trailer(&self) -> [u8; 10] {
        crate::file::gzip::trailer(self.crc32.to_native(), self.identity_len.to_native())
    }

    /// Bytes of the gzip answer.
    pub fn gzip_len(&self) -> u64 {
        (crate::file::gzip::HEADER.len() + 10) as u64 + self.head.len.to_native() + self.rest.len.to_native()
    }

    /// The part of the rest that holds the rows of `year` if it has any: where it lies among the
    /// rest's deflated bytes and how long its text is. The rows before the first stored start
    /// are one part, whatever their years.
    pub fn year_part(&self, year: i32) -> YearPart {
        let years = self.years.as_slice();
        let part = years.partition_point(|start| start.year.to_native() <= year);
        let (deflated_from, text_from) = match part.checked_sub(1).and_then(|i| years.get(i)) {
            Some(start) => (start.deflated_at.to_native(), start.text_at.to_native()),
            None => (0, 0),
        };
        let (deflated_to, text_to) = match years.get(part) {
            Some(next) => (next.deflated_at.to_native(), next.text_at.to_native()),
            None => (self.rest.len.to_native(), self.rest_text_len.to_native()),
        };
        YearPart {
            deflated: deflated_from..deflated_to.max(deflated_from),
            text_len: text_to.saturating_sub(text_from),
        }
    }
}

/// One year's rows of a CSV series ([`ArchivedSeriesBody::year_part`]): a range of the rest's
/// deflated bytes, and the length of the text they inflate to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YearPart {
    pub deflated: std::ops::Range<u64>,
    pub text_len: u64,
}

/// The bands of a company's latest mark, in whole dollars as published: what the next build
/// compares to tell whether the mark changed.
#[derive(Archive, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LatestBands {
    pub lower_80: u64,
    pub upper_80: u64,
    pub lower_95: u64,
    pub upper_95: u64,
}

/// One company: its sort keys and every body about it.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CompanyEntry {
    pub slug: String,
    pub name: String,
    /// The names search finds it by (its name, aliases and slug), in `search::search_form`.
    pub search_names: Vec<String>,
    /// Index into `Index::sectors`.
    pub sector: u16,
    /// The sector index it counts in beside "all" (an `IndexEntry::sector` code): its own
    /// sector's, or "other"'s when its sector is too small for an index of its own.
    pub index_sector: u16,
    /// `STATUS_PRIVATE` or `STATUS_IPO_COMPLETED`.
    pub status: u8,
    /// The latest mark, whole dollars (0 for a company written off).
    pub value_usd: u64,
    pub latest_bands: LatestBands,
    /// XXH3-64 of the latest mark's JSON object: the change log's "mark" is any change of it
    /// (value, bands, confidence, the next-print forecast, its date).
    pub latest_mark_hash: u64,
    /// What ended or fixed its private marks: `OUTCOME_NONE`, `OUTCOME_LISTED` ...
    pub outcome: u8,
    /// As published (two decimals), so sorting agrees with what clients see.
    pub delta_30d_pct: Option<f64>,
    /// The day (Julian day number) of the company's last event, and of its outcome (a listing,
    /// a bankruptcy, or an agreed sale that holds its mark), for the `last_event_on` and
    /// `outcome_on` sorts.
    pub last_event_on: i32,
    pub outcome_on: Option<i32>,
    /// The CompanyListItem JSON object, spliced into list pages.
    pub list_item: BodyRef,
    pub profile: Body,
    pub marks_80: SeriesBody,
    pub marks_95: SeriesBody,
    pub events: Body,
    pub resolution: Body,
    /// How the method did on this company (getBacktest): below Pro without its events'
    /// values, and whole for Pro and above. Stored as gzip only, like the exports (read
    /// seldom, and decoded in well under a millisecond for a client without gzip).
    pub backtest: Export,
    pub backtest_full: Export,
    /// The days (Julian day numbers) it counts in the indices: from `index_from` up to, not
    /// including, `index_until` (both 0: never).
    pub index_from: i32,
    pub index_until: i32,
    /// The CSV forms (`table`): the company's row of a list page, its series and its events.
    pub list_row_csv: BodyRef,
    pub marks_80_csv: SeriesBody,
    pub marks_95_csv: SeriesBody,
    pub events_csv: Body,
    /// The company's entries in the publication log with their inclusion proofs
    /// (`GET /v1/companies/{slug}/published`): without the 95% bounds (a digest of them) below
    /// Pro, with them for Pro and above; JSON and CSV. Stored as gzip only, like the
    /// backtests.
    pub published: Export,
    pub published_full: Export,
    pub published_csv: Export,
    pub published_full_csv: Export,
}

/// A row of a stored list: the position of a company in `Index::companies`.
pub type ListRow = rkyv::Archived<u32>;

pub const STATUS_PRIVATE: u8 = 1;
pub const STATUS_IPO_COMPLETED: u8 = 2;

/// The `sort` values of listCompanies, in the order their permutations are stored.
pub const SORTS: [&str; 12] = [
    "slug",
    "-slug",
    "name",
    "-name",
    "value_usd",
    "-value_usd",
    "delta_30d_pct",
    "-delta_30d_pct",
    "last_event_on",
    "-last_event_on",
    "outcome_on",
    "-outcome_on",
];

/// What a row is sorted by under each of `SORTS`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SortFields<'a> {
    pub name: &'a str,
    pub value_usd: u64,
    pub delta_30d_pct: Option<f64>,
    pub last_event_on: i32,
    pub outcome_on: Option<i32>,
}

/// A row's key under one of `SORTS`, for ordering rows and placing cursors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowKey<'a> {
    /// `slug` sorts: the slug itself is the key.
    Slug,
    Text(&'a str),
    Number(f64),
    /// A missing number (delta_30d_pct not available).
    Null,
}

impl<'a> RowKey<'a> {
    pub fn of(sort: usize, fields: &SortFields<'a>) -> RowKey<'a> {
        match SORTS[sort].trim_start_matches('-') {
            "slug" => RowKey::Slug,
            "name" => RowKey::Text(fields.name),
            "value_usd" => RowKey::Number(fields.value_usd as f64),
            "last_event_on" => RowKey::Number(f64::from(fields.last_event_on)),
            "outcome_on" => fields
                .outcome_on
                .map_or(RowKey::Null, |day| RowKey::Number(f64::from(day))),
            _ => fields.delta_30d_pct.map_or(RowKey::Null, RowKey::Number),
        }
    }
}

/// The order of `SORTS[sort]`: strings by byte order (Unicode code points), numbers
/// numerically, nulls last in both directions, ties by slug ascending. The builder sorts with
/// this and the server places cursors with it, so the two can never disagree.
pub fn compare_rows(sort: usize, a: (RowKey<'_>, &str), b: (RowKey<'_>, &str)) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let descending = SORTS[sort].starts_with('-');
    let directed = |o: Ordering| if descending { o.reverse() } else { o };
    let primary = match (a.0, b.0) {
        (RowKey::Slug, RowKey::Slug) => directed(a.1.cmp(b.1)),
        (RowKey::Text(x), RowKey::Text(y)) => directed(x.as_bytes().cmp(y.as_bytes())),
        (RowKey::Number(x), RowKey::Number(y)) => directed(x.total_cmp(&y)),
        (RowKey::Null, RowKey::Null) => Ordering::Equal,
        (RowKey::Null, _) => Ordering::Greater,
        (_, RowKey::Null) => Ordering::Less,
        // Keys of different sorts never meet; order them stably anyway.
        _ => Ordering::Equal,
    };
    primary.then_with(|| a.1.cmp(b.1))
}

impl ArchivedCompanyEntry {
    /// The company's documents stored as gzip only: the backtest in its two disclosures, and
    /// the published entries in theirs, JSON and CSV.
    pub fn documents(&self) -> [&ArchivedExport; 6] {
        [
            &self.backtest,
            &self.backtest_full,
            &self.published,
            &self.published_full,
            &self.published_csv,
            &self.published_full_csv,
        ]
    }

    /// The company's four series: JSON at 80% and 95%, CSV at 80% and 95%.
    pub fn series(&self) -> [&ArchivedSeriesBody; 4] {
        [&self.marks_80, &self.marks_95, &self.marks_80_csv, &self.marks_95_csv]
    }

    /// Whether the company is in the sector `code` names: a [`ArchivedIndex::sector_code`], the
    /// sector's position plus one, or 0 for any sector. Compared in `u32`, so no position of a
    /// crafted snapshot's sectors overflows.
    pub fn in_sector(&self, code: u16) -> bool {
        code == 0 || u32::from(self.sector.to_native()) + 1 == u32::from(code)
    }

    /// Whether the company counts in the index whose `IndexEntry::sector` is `code` (0: "all").
    pub fn in_index(&self, code: u16) -> bool {
        code == 0 || self.index_sector.to_native() == code
    }

    pub fn row_key(&self, sort: usize) -> RowKey<'_> {
        RowKey::of(
            sort,
            &SortFields {
                name: self.name.as_str(),
                value_usd: self.value_usd.to_native(),
                delta_30d_pct: self.delta_30d_pct.as_ref().map(|d| d.to_native()),
                last_event_on: self.last_event_on.to_native(),
                outcome_on: self.outcome_on.as_ref().map(|d| d.to_native()),
            },
        )
    }
}

impl CompanyEntry {
    pub fn row_key(&self, sort: usize) -> RowKey<'_> {
        RowKey::of(
            sort,
            &SortFields {
                name: &self.name,
                value_usd: self.value_usd,
                delta_30d_pct: self.delta_30d_pct,
                last_event_on: self.last_event_on,
                outcome_on: self.outcome_on,
            },
        )
    }
}

/// Which companies a list may show.
pub const UNIVERSE_ALL: u8 = 0;
/// The free tier's universe: the top 10 by latest value among the marks that are current
/// (no outcome, or a sale agreed and pending).
pub const UNIVERSE_FREE: u8 = 1;
pub const FREE_UNIVERSE_SIZE: usize = 10;

/// One precomputed list: the companies matching (universe, sector, status) in `sort` order,
/// as a range of `Index::list_rows`. Sector 0 and status 0 mean "any".
#[derive(Archive, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListEntry {
    pub sort: u8,
    pub universe: u8,
    pub sector: u16,
    pub status: u8,
    pub start: u32,
    pub len: u32,
}

/// One private-market index: over every company (`sector` 0) or one sector.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct IndexEntry {
    /// `all`, or the sector's name.
    pub id: String,
    pub name: String,
    /// A sector code (as `Index::sector_code`), or 0 for every company.
    pub sector: u16,
    /// IndexSeriesResponse at each coverage, as JSON and CSV.
    pub series_80: Body,
    pub series_95: Body,
    pub series_80_csv: Body,
    pub series_95_csv: Body,
    /// The constituents of its latest day, made by the builder (none for an index whose last
    /// day is not the dataset's `as_of`): the answer a client asks most, served as stored.
    pub latest_constituents: Option<LatestConstituents>,
}

/// An index's constituents on its latest day (`rules::constituents`), at each coverage, as JSON
/// and CSV, each with its gzip variant.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LatestConstituents {
    /// `YYYY-MM-DD`.
    pub date: String,
    pub json_80: Body,
    pub json_95: Body,
    pub csv_80: Body,
    pub csv_95: Body,
}

/// One word of a company's search names, for finding the companies a query's word starts.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SearchWord {
    pub word: String,
    /// Position in `Index::companies`.
    pub company: u32,
}

/// `CompanyEntry::outcome`: none, or the kind of the company's outcome (docs/design.md section 4a).
pub const OUTCOME_NONE: u8 = 0;
pub const OUTCOME_LISTED: u8 = 1;
pub const OUTCOME_SOLD: u8 = 2;
pub const OUTCOME_SALE_AGREED: u8 = 3;
pub const OUTCOME_BANKRUPT: u8 = 4;
pub const OUTCOME_WOUND_DOWN: u8 = 5;
/// A listing agreed and pending (a SPAC merger or direct listing `announced`): data v6.
pub const OUTCOME_LISTING_AGREED: u8 = 6;
/// The names the API gives them, by value.
pub const OUTCOME_NAMES: [&str; 7] = [
    "none",
    "listed",
    "sold",
    "sale_agreed",
    "bankrupt",
    "wound_down",
    "listing_agreed",
];

/// Whether a company's latest mark is a value today: no outcome, or a sale or listing agreed and
/// pending (a listed, sold or failed company's latest mark is its last private one).
pub fn mark_is_current(outcome: u8) -> bool {
    matches!(outcome, OUTCOME_NONE | OUTCOME_SALE_AGREED | OUTCOME_LISTING_AGREED)
}

/// What the append-only check compares: a record's identity and its published facts, compactly.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct EventFingerprint {
    pub event_id: String,
    pub slug: String,
    pub event_type: String,
    pub occurred_on: String,
    pub valuation_usd: u64,
    /// XXH3-64 of `source_url`, a NUL byte and `note`.
    pub text_hash: u64,
    /// Empty where the record predates the column: it may be filled in once, never changed.
    pub reported_as: String,
    pub source_grade: String,
    /// The record this one corrects or withdraws; empty for none.
    pub supersedes: String,
    /// Its line in the dataset's events.csv, so that a refusal can say where it was.
    pub line: u64,
}

/// A document stored only as a gzip member (a bulk export, the scored targets, a company's
/// backtest or published entries), with what it decompresses to, so that clients that do not
/// accept gzip are answered by decoding it.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Export {
    pub gzip: BodyRef,
    /// Strong ETag of the gzip bytes.
    pub gzip_etag: String,
    /// Length and strong ETag of the NDJSON text.
    pub identity_len: u64,
    pub identity_etag: String,
}

/// `GET /v1/export` and `GET /v1/export/series?coverage=80|95`.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Exports {
    pub companies: Export,
    pub series_80: Export,
    pub series_95: Export,
    /// The same three as CSV (`table`).
    pub companies_csv: Export,
    pub series_80_csv: Export,
    pub series_95_csv: Export,
}

/// What changed for a company, as bits of `ChangeRow::kinds`.
pub const CHANGE_ADDED: u8 = 1;
pub const CHANGE_EVENTS: u8 = 2;
pub const CHANGE_MARK: u8 = 4;
pub const CHANGE_STATUS: u8 = 8;
/// The names of the change bits, in bit order, as the API reports them.
pub const CHANGE_KINDS: [(u8, &str); 4] = [
    (CHANGE_ADDED, "added"),
    (CHANGE_EVENTS, "events"),
    (CHANGE_MARK, "mark"),
    (CHANGE_STATUS, "status"),
];

/// A company that changed since some earlier dataset version.
#[derive(Archive, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[rkyv(derive(Debug))]
pub struct ChangeRow {
    /// Position in `Index::companies`.
    pub company: u32,
    /// `CHANGE_*` bits.
    pub kinds: u8,
    /// Events added to its history since then.
    pub events_added: u32,
}

/// What changed between each of the last dataset versions and this snapshot's, carried from
/// snapshot to snapshot by `marks build --previous`.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ChangeLog {
    /// The chain of dataset versions, oldest first, ending with this snapshot's own.
    pub versions: Vec<String>,
    /// `since[i]`: the companies changed from `versions[i]` to this snapshot, sorted by
    /// company position; one entry per version but the last.
    pub since: Vec<Vec<ChangeRow>>,
}

/// The root of the index archive.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Index {
    pub dataset_version: String,
    pub methodology_version: String,
    pub as_of: String,
    /// The `meta` object as JSON, spliced into list pages.
    pub meta_json: BodyRef,
    /// Sorted by slug (byte order).
    pub companies: Vec<CompanyEntry>,
    /// Sector names present in the dataset, sorted.
    pub sectors: Vec<String>,
    /// The SectorsResponse bodies (each sector with its companies), by universe
    /// (`UNIVERSE_ALL`, `UNIVERSE_FREE`).
    pub sector_lists: Vec<Body>,
    /// Every word of every company's search names, sorted (byte order, then company).
    pub search_words: Vec<SearchWord>,
    /// The indices, `all` first then by sector name, and the IndicesResponse that lists them.
    pub indices: Vec<IndexEntry>,
    pub index_list: Body,
    /// Sorted by (sort, universe, sector, status) for binary search.
    pub lists: Vec<ListEntry>,
    /// Company indexes (into `companies`) of every list, back to back.
    pub list_rows: Vec<u32>,
    /// UsageResponse bodies by tier, in `tiers::Tier::ALL` order.
    pub usage: Vec<Body>,
    /// The JWKS of every key that signed resolution records in this or earlier snapshots.
    pub signing_keys: Body,
    /// The scorecard and its scored targets as everyone may read them (relative quantities
    /// only), and whole for Pro and above: `methodology::disclosure`. The scored targets are
    /// the largest documents of all (about 2.7 KB a target, a target per event and month-end),
    /// so, like the exports, they are stored as gzip only and decoded for a client without gzip.
    pub scorecard: Body,
    pub scorecard_targets: Export,
    pub scorecard_full: Body,
    pub scorecard_targets_full: Export,
    /// The pages that depend on the dataset, `/` and `/scorecard`: their content, which the
    /// server draws in its frame when it puts the snapshot in force.
    pub home_page: PageContent,
    pub scorecard_page: PageContent,
    /// Sorted by event_id.
    pub events: Vec<EventFingerprint>,
    pub exports: Exports,
    pub changes: ChangeLog,
    pub log: PublicationLog,
}

/// The publication log (`GET /v1/log/...`): every mark as first published, in an RFC 6962
/// Merkle tree with a signed checkpoint per published version.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PublicationLog {
    /// The latest checkpoint, a C2SP signed note (text).
    pub checkpoint: Body,
    /// Every published version, oldest first, with the proof that its tree is a prefix of
    /// today's (empty for today's own).
    pub versions: Vec<LogVersion>,
    /// The whole log in its file form (NDJSON), stored like an export: what the next build
    /// carries, and `GET /v1/export/log`.
    pub file: Export,
}

/// A page whose content the snapshot carries: its title (plain text) and its `<main>` element
/// (HTML), without the frame every page shares: the server draws that, so a new navigation
/// needs a new binary, never a new snapshot.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PageContent {
    pub title: String,
    pub main: BodyRef,
}

/// One published version of the log.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LogVersion {
    pub dataset_version: String,
    pub tree_size: u64,
    /// ConsistencyResponse from this version's tree to today's.
    pub consistency: Body,
}

impl ArchivedIndex {
    /// Company entry and its position, by exact slug.
    pub fn company(&self, slug: &str) -> Option<(usize, &ArchivedCompanyEntry)> {
        let companies = self.companies.as_slice();
        companies
            .binary_search_by(|c| c.slug.as_str().cmp(slug))
            .ok()
            .map(|i| (i, &companies[i]))
    }

    /// An index by its id.
    pub fn index_named(&self, id: &str) -> Option<&ArchivedIndexEntry> {
        self.indices.iter().find(|i| i.id.as_str() == id)
    }

    /// Index of a sector name in `sectors`, plus one (0 is "any sector"). Sectors are lowercase
    /// with `-` between words; the name is read in any case, with spaces or `_` for `-`.
    pub fn sector_code(&self, sector: &str) -> Option<u16> {
        let sector: String = sector
            .trim()
            .chars()
            .map(|c| match c {
                ' ' | '_' => '-',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        self.sectors
            .as_slice()
            .binary_search_by(|s| s.as_str().cmp(&sector))
            .ok()
            .and_then(|i| u16::try_from(i + 1).ok())
    }

    /// The rows of one precomputed list; empty when no company matches.
    pub fn list(&self, sort: u8, universe: u8, sector: u16, status: u8) -> &[ListRow] {
        let lists = self.lists.as_slice();
        let key = (sort, universe, sector, status);
        let found = lists.binary_search_by(|l| (l.sort, l.universe, l.sector.to_native(), l.status).cmp(&key));
        match found {
            Ok(i) => {
                let start = lists[i].start.to_native() as usize;
                let len = lists[i].len.to_native() as usize;
                self.list_rows.as_slice().get(start..start + len).unwrap_or(&[])
            }
            Err(_) => &[],
        }
    }

    /// Every body reference in the index, for the bounds check at load.
    pub fn body_refs(&self) -> impl Iterator<Item = &ArchivedBodyRef> {
        fn of(body: &ArchivedBody) -> impl Iterator<Item = &ArchivedBodyRef> {
            std::iter::once(&body.identity).chain(body.gzip.as_ref().map(|g| &g.bytes))
        }
        let companies = self.companies.iter().flat_map(|c| {
            std::iter::once(&c.list_item)
                .chain(of(&c.profile))
                .chain(c.series().into_iter().flat_map(|s| [&s.head, &s.rest]))
                .chain(of(&c.events))
                .chain(of(&c.resolution))
                .chain(c.documents().into_iter().map(|d| &d.gzip))
                .chain(std::iter::once(&c.list_row_csv))
                .chain(of(&c.events_csv))
        });
        let exports = &self.exports;
        std::iter::once(&self.meta_json)
            .chain(companies)
            .chain(self.usage.iter().flat_map(of))
            .chain(self.sector_lists.iter().flat_map(of))
            .chain(self.indices.iter().flat_map(|i| {
                of(&i.series_80)
                    .chain(of(&i.series_95))
                    .chain(of(&i.series_80_csv))
                    .chain(of(&i.series_95_csv))
            }))
            .chain(of(&self.index_list))
            .chain(of(&self.signing_keys))
            .chain(of(&self.scorecard))
            .chain(of(&self.scorecard_full))
            .chain([&self.scorecard_targets.gzip, &self.scorecard_targets_full.gzip])
            .chain([&self.home_page.main, &self.scorecard_page.main])
            .chain([
                &exports.companies.gzip,
                &exports.series_80.gzip,
                &exports.series_95.gzip,
                &exports.companies_csv.gzip,
                &exports.series_80_csv.gzip,
                &exports.series_95_csv.gzip,
            ])
    }

    /// The changes from dataset version `since` to this snapshot's: `None` when the log does
    /// not hold that version; an empty list for this snapshot's own version.
    pub fn changes_since(&self, since: &str) -> Option<&[ArchivedChangeRow]> {
        let versions = self.changes.versions.as_slice();
        let position = versions.iter().position(|v| v.as_str() == since)?;
        Some(self.changes.since.get(position).map_or(&[][..], |rows| rows.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let header = Header {
            format_version: FORMAT_VERSION,
            min_reader_version: OLDEST_READABLE_VERSION,
            bodies_offset: HEADER_LEN as u64,
            bodies_len: 1000,
            index_offset: 1264,
            index_len: 77,
            checksum: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
            content_digest: [5; 32],
            dataset_version: "2026-11-20".into(),
            methodology_version: "v0.2.0".into(),
            as_of: "2026-11-20".into(),
            publisher: Some(([7; 32], [9; 64])),
        };
        assert_eq!(Header::decode(&header.encode()), Ok(header.clone()));
        let unsigned = Header {
            publisher: None,
            ..header
        };
        assert_eq!(Header::decode(&unsigned.encode()), Ok(unsigned));
        assert_eq!(Header::decode(&[0u8; 10]), Err(HeaderError::Short));
        assert_eq!(Header::decode(&[0u8; HEADER_LEN]), Err(HeaderError::Magic));
    }
}
