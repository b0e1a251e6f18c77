//! Slugs and company names: the grammar and the bounds the builder enforces on a dataset and the
//! server relies on (a name is a cursor's sort key; a slug is a path segment).

/// The longest slug accepted (ASCII, so bytes and characters agree).
pub const MAX_SLUG_BYTES: usize = 64;

/// The longest company name accepted. A name is the sort key `sort=name` cursors carry, so it
/// bounds the cursor's length.
pub const MAX_NAME_BYTES: usize = 256;

/// The slug grammar: 1 to [`MAX_SLUG_BYTES`] of lowercase letters, digits and `-`, starting with
/// a letter or digit. Shared with every client that builds a path from a slug.
pub fn is_valid_slug(slug: &str) -> bool {
    let bytes = slug.as_bytes();
    (1..=MAX_SLUG_BYTES).contains(&bytes.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}
