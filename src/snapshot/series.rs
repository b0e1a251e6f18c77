//! A company's daily series as the server answers it: stored once in the snapshot, as its part
//! of the series export ([`marks_format::file::layout::SeriesBody`]), so its gzip answer is
//! four slices sent as they lie and its text is decoded on request.
//!
//! Decoding a series costs a fraction of a millisecond; a client that does not take gzip and
//! asks for the same series again should not pay it again, so the texts decoded last are kept
//! in a bounded cache ([`SeriesTexts`], `--series-cache`), one per snapshot in force, dropped
//! with it. Its eviction resists scans: a pass over every company (an index's constituents of a
//! day, a ranged series export) reads through it without pushing out the series clients keep
//! asking for.

use std::io::Read;

use bytes::Bytes;
use flate2::read::GzDecoder;
use marks_format::file::gzip::HEADER;
use marks_format::file::layout::ArchivedSeriesBody;
use marks_format::Snapshot;

/// The decoded series texts of one snapshot, by where their rest lies in the file (unique to
/// each series), weighed by their bytes.
#[derive(Debug)]
pub struct SeriesTexts {
    cache: quick_cache::sync::Cache<u64, Bytes, TextWeight>,
}

#[derive(Clone, Debug)]
struct TextWeight;

impl quick_cache::Weighter<u64, Bytes> for TextWeight {
    fn weight(&self, _offset: &u64, text: &Bytes) -> u64 {
        text.len().max(1) as u64
    }
}

/// A series whose stored bytes do not decode to what its entry says: the file is damaged in a
/// way its checksum did not catch.
#[derive(Debug, thiserror::Error)]
#[error("a stored series (at byte {offset} of the bodies) does not decode to its {len} bytes of text: {reason}")]
pub struct DamagedSeries {
    pub offset: u64,
    pub len: u64,
    pub reason: String,
}

/// A typical series' text, to size the cache's table: about 90 KB (a company's JSON series at
/// one coverage over seven years).
const TYPICAL_TEXT_BYTES: u64 = 90 * 1024;

impl SeriesTexts {
    /// A cache holding at most `capacity_bytes` of text.
    pub fn new(capacity_bytes: u64) -> SeriesTexts {
        let items = (capacity_bytes / TYPICAL_TEXT_BYTES).max(16) as usize;
        SeriesTexts {
            cache: quick_cache::sync::Cache::with_weighter(items, capacity_bytes.max(1), TextWeight),
        }
    }

    /// The series' text: from the cache, or decoded and kept.
    pub fn text(&self, snapshot: &Snapshot, series: &ArchivedSeriesBody) -> Result<Bytes, DamagedSeries> {
        self.cache
            .get_or_insert_with(&series.rest.offset.to_native(), || decode(snapshot, series))
    }

    /// The series' text for a pass over many series: from the cache if it is there, else
    /// decoded and not kept, so the pass leaves the cache as it found it.
    pub fn text_passing(&self, snapshot: &Snapshot, series: &ArchivedSeriesBody) -> Result<Bytes, DamagedSeries> {
        match self.cache.get(&series.rest.offset.to_native()) {
            Some(text) => Ok(text),
            None => decode(snapshot, series),
        }
    }
}

impl crate::metric::Report for SeriesTexts {
    fn metrics(&self) -> Vec<crate::metric::Metric> {
        use crate::metric::Metric;
        vec![
            Metric::gauge(
                "marks_series_cache_bytes",
                "Bytes of decoded series text kept for the snapshot in force (--series-cache-mib).",
                self.cache.weight(),
            ),
            Metric::gauge(
                "marks_series_cache_series",
                "Decoded series kept for the snapshot in force.",
                self.cache.len() as u64,
            ),
            Metric::counter(
                "marks_series_cache_hits_total",
                "Series texts found decoded, since the snapshot in force was put in force.",
                self.cache.hits(),
            ),
            Metric::counter(
                "marks_series_cache_misses_total",
                "Series texts decoded because they were not kept, since the snapshot in force was put in force.",
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
fn decode(snapshot: &Snapshot, series: &ArchivedSeriesBody) -> Result<Bytes, DamagedSeries> {
    let len = series.identity_len.to_native();
    let damaged = |reason: String| DamagedSeries {
        offset: series.rest.offset.to_native(),
        len,
        reason,
    };
    let trailer = series.trailer();
    let member = HEADER
        .chain(snapshot.body_slice(&series.head))
        .chain(snapshot.body_slice(&series.rest))
        .chain(&trailer[..]);
    // Deflate shrinks text at most about 1032 times; a length beyond that is not to be
    // believed before decoding, so it does not size the buffer.
    let stored = series.rest.len.to_native() + series.head.len.to_native();
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
