//! Keyset pagination cursors for listCompanies.
//!
//! A cursor names the last row of a page by its sort key and slug, so the next page continues
//! after that row even in a snapshot published since: rows are found by key, not by position.
//! It is bound to the list it came from (sort, filters, universe) and authenticated with a
//! keyed BLAKE3 hash under a server-side key, so a tampered, truncated or foreign cursor, or
//! one replayed against other filters, is refused rather than trusted.
//!
//! Wire form: base64url (no padding) of `payload || tag`, where the tag is the 32-byte keyed
//! hash of the payload and the payload is
//! `version u8 | binding u64le | sort-key tag u8 [| key] | slug len u8 | slug`.

use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

const VERSION: u8 = 1;
const TAG_LEN: usize = 32;
/// The longest payload a cursor can have: a sort key of the longest name a dataset allows and
/// the longest slug.
const MAX_PAYLOAD_LEN: usize = 1
    + 8
    + 1
    + 2
    + marks_format::rules::names::MAX_NAME_BYTES
    + 1
    + marks_format::rules::names::MAX_SLUG_BYTES
    + TAG_LEN;
/// Cursors longer than this are not ours; refused before any decoding work.
pub const MAX_CURSOR_LEN: usize = MAX_PAYLOAD_LEN.div_ceil(3) * 4;

/// Why a cursor key file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CursorKeyError {
    #[error("{path}: cannot read")]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: a cursor key needs at least 16 bytes of secret; it has {bytes}")]
    TooShort { path: std::path::PathBuf, bytes: usize },
}

/// The server-side key that authenticates cursors. Every replica behind one load balancer
/// needs the same key, and it must survive restarts, or cursors break across them.
#[derive(Clone)]
pub struct CursorKey([u8; 32]);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

impl CursorKey {
    pub fn generate() -> CursorKey {
        CursorKey(rand::random())
    }

    /// Derives the key from a file's whole contents (any secret of at least 16 bytes).
    pub fn from_file(path: &Path) -> Result<CursorKey, CursorKeyError> {
        let secret = marks_format::file::regular_file::read(path).map_err(|source| CursorKeyError::Read {
            path: path.to_owned(),
            source,
        })?;
        if secret.len() < 16 {
            return Err(CursorKeyError::TooShort {
                path: path.to_owned(),
                bytes: secret.len(),
            });
        }
        Ok(CursorKey(blake3::derive_key("valuation-marks cursor key v1", &secret)))
    }

    /// A value that changes with the key and reveals nothing of it: list pages hold cursors
    /// made with the key, so their ETags include this.
    pub fn fingerprint(&self) -> u64 {
        let hash = blake3::keyed_hash(&self.0, b"valuation-marks cursor key fingerprint");
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash.as_bytes()[..8]);
        u64::from_le_bytes(first)
    }

    fn tag(&self, payload: &[u8]) -> blake3::Hash {
        blake3::keyed_hash(&self.0, payload)
    }
}

/// The sort key of the last row of a page.
#[derive(Clone, Debug, PartialEq)]
pub enum SortKey {
    /// `sort=slug`: the slug is the key.
    Slug,
    Text(String),
    Number(f64),
    /// The row's key was null (delta_30d_pct not available).
    Null,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cursor {
    /// Hash of the list the cursor belongs to: sort, sector, status and universe.
    pub binding: u64,
    pub key: SortKey,
    pub slug: String,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("the cursor is not one this server issued (malformed)")]
    Malformed,
    #[error("the cursor failed authentication (tampered, truncated or from another server)")]
    Forged,
    #[error("the cursor belongs to a different sort, filter or key tier; send the same parameters as the request that returned it")]
    OtherList,
}

impl Cursor {
    pub fn encode(&self, key: &CursorKey) -> String {
        let mut payload = Vec::with_capacity(64);
        payload.push(VERSION);
        payload.extend_from_slice(&self.binding.to_le_bytes());
        match &self.key {
            SortKey::Slug => payload.push(0),
            SortKey::Text(text) => {
                payload.push(1);
                let bytes = &text.as_bytes()[..text.len().min(u16::MAX as usize)];
                payload.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                payload.extend_from_slice(bytes);
            }
            SortKey::Number(n) => {
                payload.push(2);
                payload.extend_from_slice(&n.to_le_bytes());
            }
            SortKey::Null => payload.push(3),
        }
        let slug = &self.slug.as_bytes()[..self.slug.len().min(u8::MAX as usize)];
        payload.push(slug.len() as u8);
        payload.extend_from_slice(slug);
        let tag = key.tag(&payload);
        payload.extend_from_slice(tag.as_bytes());
        URL_SAFE_NO_PAD.encode(payload)
    }

    /// Decodes and authenticates a cursor, and checks it belongs to the list `binding` names.
    pub fn decode(text: &str, key: &CursorKey, binding: u64) -> Result<Cursor, CursorError> {
        if text.len() > MAX_CURSOR_LEN {
            return Err(CursorError::Malformed);
        }
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| CursorError::Malformed)?;
        if bytes.len() < TAG_LEN + 11 {
            return Err(CursorError::Malformed);
        }
        let (payload, tag) = bytes.split_at(bytes.len() - TAG_LEN);
        let tag: [u8; TAG_LEN] = tag.try_into().map_err(|_| CursorError::Malformed)?;
        // blake3::Hash compares in constant time.
        if key.tag(payload) != blake3::Hash::from(tag) {
            return Err(CursorError::Forged);
        }
        let cursor = parse_payload(payload).ok_or(CursorError::Malformed)?;
        if cursor.binding != binding {
            return Err(CursorError::OtherList);
        }
        Ok(cursor)
    }
}

fn parse_payload(payload: &[u8]) -> Option<Cursor> {
    let mut rest = payload;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
        rest = tail;
        Some(head)
    };
    if take(1)? != [VERSION] {
        return None;
    }
    let binding = u64::from_le_bytes(take(8)?.try_into().ok()?);
    let key = match take(1)?[0] {
        0 => SortKey::Slug,
        1 => {
            let len = u16::from_le_bytes(take(2)?.try_into().ok()?) as usize;
            SortKey::Text(String::from_utf8(take(len)?.to_vec()).ok()?)
        }
        2 => SortKey::Number(f64::from_le_bytes(take(8)?.try_into().ok()?)),
        3 => SortKey::Null,
        _ => return None,
    };
    let len = take(1)?[0] as usize;
    let slug = String::from_utf8(take(len)?.to_vec()).ok()?;
    if !rest.is_empty() {
        return None;
    }
    Some(Cursor { binding, key, slug })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_tampering() {
        let key = CursorKey::generate();
        for sort_key in [
            SortKey::Slug,
            SortKey::Text("Anthropic".into()),
            SortKey::Number(-12.5),
            SortKey::Null,
        ] {
            let cursor = Cursor {
                binding: 42,
                key: sort_key,
                slug: "anthropic".into(),
            };
            let text = cursor.encode(&key);
            assert_eq!(Cursor::decode(&text, &key, 42), Ok(cursor.clone()));
            assert_eq!(Cursor::decode(&text, &key, 43), Err(CursorError::OtherList));
            assert_eq!(
                Cursor::decode(&text, &CursorKey::generate(), 42),
                Err(CursorError::Forged)
            );
            let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
            bytes[3] ^= 1;
            assert_eq!(
                Cursor::decode(&URL_SAFE_NO_PAD.encode(&bytes), &key, 42),
                Err(CursorError::Forged)
            );
            assert!(Cursor::decode(&text[..text.len() - 4], &key, 42).is_err());
        }
        assert_eq!(Cursor::decode("not base64!", &key, 42), Err(CursorError::Malformed));
        assert_eq!(Cursor::decode("", &key, 42), Err(CursorError::Malformed));
    }
}
