//! Strong ETags: a body's XXH3-64, quoted. The builder stamps every stored body with one; the
//! server makes the same for what it prepares itself (its compiled-in files, pages assembled per
//! request).

use xxhash_rust::xxh3::xxh3_64;

/// The strong ETag of a body: its XXH3-64, quoted.
pub fn etag_of(bytes: &[u8]) -> String {
    quoted(xxh3_64(bytes))
}

/// The ETag of bytes whose XXH3-64 was computed piece by piece.
pub fn quoted(xxh3: u64) -> String {
    format!("\"{xxh3:016x}\"")
}
