//! Cursor decoding: arbitrary text is refused or decodes to a cursor that encodes back to the
//! same text; it never panics. Cursors encoded here must always decode.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use marks::api::cursor::{Cursor, CursorKey, SortKey};
use marks_format::rules::names::{MAX_NAME_BYTES, MAX_SLUG_BYTES};

fn key() -> &'static CursorKey {
    static KEY: OnceLock<CursorKey> = OnceLock::new();
    KEY.get_or_init(CursorKey::generate)
}

/// The longest prefix of `bytes`, read as UTF-8, that fits in `max` bytes.
fn bounded(bytes: &[u8], max: usize) -> String {
    let mut text = String::new();
    for c in String::from_utf8_lossy(bytes).chars() {
        if text.len() + c.len_utf8() > max {
            break;
        }
        text.push(c);
    }
    text
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(cursor) = Cursor::decode(text, key(), 7) {
            assert_eq!(cursor.encode(key()), text);
        }
    }
    // And the other way round: any cursor we mint decodes to itself.
    let split = data.len() / 2;
    let cursor = Cursor {
        binding: 7,
        key: match data.first() {
            Some(b) if b % 4 == 0 => SortKey::Slug,
            // A dataset's names are at most MAX_NAME_BYTES long; so are the keys we mint.
            Some(b) if b % 4 == 1 => SortKey::Text(bounded(&data[..split], MAX_NAME_BYTES)),
            Some(b) if b % 4 == 2 => SortKey::Number(data.len() as f64 * 1.5),
            _ => SortKey::Null,
        },
        slug: bounded(&data[split..], MAX_SLUG_BYTES),
    };
    assert_eq!(Cursor::decode(&cursor.encode(key()), key(), 7), Ok(cursor));
});
