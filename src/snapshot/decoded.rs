//! What a snapshot stores compressed only, as the server answers it: a company's daily series,
//! stored once as its part of the series export ([`marks_format::file::layout::SeriesBody`]),
//! whose gzip answer is four slices sent as they lie; and a company's backtests and published
//! entries, each one gzip member (an [`ArchivedExport`]). Their text is decoded on request.
//!
//! Decoding a series costs a fraction of a millisecond; a client that does not take gzip and
//! asks for the same text again should not pay it again, so the texts decoded last are kept in
//! a bounded cache ([`DecodedTexts`], `--decoded-cache-mib`), one per snapshot in force,
//! dropped with it. Its eviction resists scans: a pass over every company (an index's
//! constituents of a day, a ranged series export) reads through it without pushing out the
//! texts clients keep asking for.

use std::io::Read;

use bytes::Bytes;
use flate2::read::GzDecoder;
use marks_format::file::gzip::HEADER;
use marks_format::file::layout::{ArchivedExport, ArchivedSeriesBody};
use marks_format::Snapshot;

/// The decoded texts of one snapshot, by where their compressed bytes begin in the file (a
/// series' rest, a document's member: unique to each), weighed by their bytes.
#[derive(Debug)]
pub struct DecodedTexts {
    cache: quick_cache::sync::Cache<u64, Bytes, TextWeight>,
}

#[derive(Clone, Debug)]
struct TextWeight;

impl quick_cache::Weighter<u64, Bytes> for TextWeight {
    fn weight(&self, _offset: &u64, text: &Bytes) -> u64 {
        text.len().max(1) as u64
    }
}

/// A text whose stored bytes do not decode to what its entry says: the file is damaged in a way
/// its checksum did not catch.
#[derive(Debug, thiserror::Error)]
#[error("a stored text (at byte {offset} of the bodies) does not decode to its {len} bytes: {reason}")]
pub struct DamagedText {
    pub offset: u64,
    pub len: u64,
    pub reason: String,
}

/// A typical series' text, to size the cache's table: about 90 KB (a company's JSON series at
/// one coverage over seven years).
const TYPICAL_TEXT_BYTES: u64 = 90 * 1024;

impl DecodedTexts {
    /// A cache holding at most `capacity_bytes` of text.
    pub fn new(capacity_bytes: u64) -> DecodedTexts {
        let items = (capacity_bytes / TYPICAL_TEXT_BYTES).max(16) as usize;
        DecodedTexts {
            cache: quick_cache::sync::Cache::with_weighter(items, capacity_bytes.max(1), TextWeight),
        }
    }

    /// The series' text: from the cache, or decoded and kept.
    pub fn text(&self, snapshot: &Snapshot, series: &ArchivedSeriesBody) -> Result<Bytes, DamagedText> {
        self.cache
            .get_or_insert_with(&series.rest.offset.to_native(), || decode(snapshot, series))
    }

    /// Whether a text of `len` bytes is kept once decoded ([`DecodedTexts::document`]): at most
    /// a quarter of the cache, so that one document never empties it. A larger one is decoded as
    /// it is sent, in one of the decoders' places.
    pub fn keeps(&self, len: u64) -> bool {
        len <= self.cache.capacity() / 4
    }

    /// A document's text: from the cache, or decoded and kept.
    pub fn document(&self, snapshot: &Snapshot, document: &ArchivedExport) -> Result<Bytes, DamagedText> {
        self.cache.get_or_insert_with(&document.gzip.offset.to_native(), || {
            let member = snapshot.body_slice(&document.gzip);
            gunzip(
                member,
                member.len() as u64,
                document.identity_len.to_native(),
                document.gzip.offset.to_native(),
            )
        })
    }

    /// The series' text for a pass over many series: from the cache if it is there, else
    /// decoded and not kept, so the pass leaves the cache as it found it.
    pub fn text_passing(&self, snapshot: &Snapshot, series: &ArchivedSeriesBody) -> Result<Bytes, DamagedText> {
        match self.cache.get(&series.rest.offset.to_native()) {
            Some(text) => Ok(text),
            None => decode(snapshot, series),
        }
    }

    /// The rows of a CSV series that hold `year`'s, for a pass that reads one day of each
    /// company: past the header of the whole text if the cache has it, else that year's part
    /// alone, inflated and not kept (a tenth of a ten-year series).
    pub fn rows_of_year_passing(
        &self,
        snapshot: &Snapshot,
        series: &ArchivedSeriesBody,
        year: i32,
    ) -> Result<Bytes, DamagedText> {
        let rest_text_len = series.rest_text_len.to_native();
        if let Some(text) = self.cache.get(&series.rest.offset.to_native()) {
            let head_len = (text.len() as u64).saturating_sub(rest_text_len);
            return Ok(text.slice(usize::try_from(head_len).unwrap_or(0)..));
        }
        let part = series.year_part(year);
        let rest = snapshot.body_slice(&series.rest);
        let damaged = |reason: String| DamagedText {
            offset: series.rest.offset.to_native() + part.deflated.start,
            len: part.text_len,
            reason,
        };
        let range = usize::try_from(part.deflated.start).unwrap_or(usize::MAX)
            ..usize::try_from(part.deflated.end).unwrap_or(usize::MAX);
        let deflated = rest
            .get(range)
            .ok_or_else(|| damaged("its year's part lies outside its bytes".into()))?;
        let len = usize::try_from(part.text_len).map_err(|_| damaged("its year's part is too long".into()))?;
        marks_format::file::gzip::inflate_part(deflated, len)
            .map(Bytes::from)
            .map_err(|error| damaged(error.to_string()))
    }
}

impl crate::metric::Report for DecodedTexts {
    fn metrics(&self) -> Vec<crate::metric::Metric> {
        use crate::metric::Metric;
        vec![
            Metric::gauge(
                "marks_decoded_cache_bytes",
                "Bytes of decoded text kept for the snapshot in force (--decoded-cache-mib).",
                self.cache.weight(),
            ),
            Metric::gauge(
                "marks_decoded_cache_texts",
                "Decoded texts kept for the snapshot in force.",
                self.cache.len() as u64,
            ),
            Metric::counter(
                "marks_decoded_cache_hits_total",
                "Texts found decoded, since the snapshot in force was put in force.",
                self.cache.hits(),
            ),
            Metric::counter(
                "marks_decoded_cache_misses_total",
                "Texts decoded because they were not kept, since the snapshot in force was put in force.",
                self.cache.misses(),
            ),
        ]
    }
}

/// The series' gzip answer, `gzip_len` bytes in four slices: the gzip header, the shared head,
/// the company's rest (inside the series export) and the trailer, as stored.
pub fn gzip_pieces(snapshot: &Snapshot, series: &ArchivedSeriesBody) -> Vec<Bytes> {
    vec![
        Bytes::from_static(&HEADER),
        snapshot.body(&series.head),
        snapshot.body(&series.rest),
        Bytes::copy_from_slice(&series.trailer()),
    ]
}

/// Decodes the series' text, checking its length and CRC-32 against the entry (the gzip
/// decoder checks the trailer made from them).
fn decode(snapshot: &Snapshot, series: &ArchivedSeriesBody) -> Result<Bytes, DamagedText> {
    let trailer = series.trailer();
    let member = HEADER
        .chain(snapshot.body_slice(&series.head))
        .chain(snapshot.body_slice(&series.rest))
        .chain(&trailer[..]);
    let stored = series.rest.len.to_native() + series.head.len.to_native();
    gunzip(
        member,
        stored,
        series.identity_len.to_native(),
        series.rest.offset.to_native(),
    )
}

/// The text of a gzip member of `stored` compressed bytes, which must be `len` bytes; `offset`
/// names it in an error.
fn gunzip(member: impl Read, stored: u64, len: u64, offset: u64) -> Result<Bytes, DamagedText> {
    let damaged = |reason: String| DamagedText { offset, len, reason };
    // Deflate shrinks text at most about 1032 times; a length beyond that is not to be
    // believed before decoding, so it does not size the buffer.
    let capacity = len.min(stored.saturating_mul(1032).saturating_add(1024));
    let mut text = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
    GzDecoder::new(member)
        .read_to_end(&mut text)
        .map_err(|error| damaged(error.to_string()))?;
    if text.len() as u64 != len {
        return Err(damaged(format!("it decodes to {} bytes", text.len())));
    }
    Ok(Bytes::from(text))
}
