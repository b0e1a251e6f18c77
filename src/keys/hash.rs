//! How keys are kept: never in plain text, only as the BLAKE3 hash of the key, written in the
//! keys file as `blake3:` and 64 hex digits. The leaf every other part of `keys` uses.

const HASH_PREFIX: &str = "blake3:";

/// The BLAKE3 hash of a key: what the keys file holds and the ring looks keys up by.
pub fn hash_key(key: &str) -> [u8; 32] {
    *blake3::hash(key.as_bytes()).as_bytes()
}

/// A hash as the keys file writes it; `None` unless `blake3:` and 64 hex digits.
pub fn parse_hash(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix(HASH_PREFIX)?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A hash as the keys file writes it.
pub fn format_hash(hash: &[u8; 32]) -> String {
    let mut out = String::from(HASH_PREFIX);
    for byte in hash {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}
