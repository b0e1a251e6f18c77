//! Slugs, company names and the text a dataset may hold: the grammar and the bounds the builder
//! enforces on a dataset and the server relies on (a name is a cursor's sort key; a slug is a
//! path segment; a name or note is read by people and by agents, so nothing in it may be unseen).

use unicode_general_category::{get_general_category, GeneralCategory};

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

/// Whether `c` changes how text reads without being seen: a control (C0, C1), a format
/// character (Unicode general category Cf: bidirectional controls, zero-width characters, the
/// soft hyphen, the tag characters of U+E0000 that can spell hidden ASCII), a line or paragraph
/// separator, or a Hangul filler (U+115F, U+1160, U+3164, U+FFA0: letters that draw nothing). A
/// list of what to refuse misses the next such character; the category does not.
pub fn is_invisible(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    ) || matches!(c, '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}')
}

/// Where the text may keep an invisible character: the zero-width non-joiner and joiner
/// (U+200C, U+200D) between two letters or marks of a word, which scripts such as Persian,
/// Hindi or Malayalam need to spell a word right. Names, slugs and addresses take none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Joiners {
    Refused,
    InsideWords,
}

/// The first invisible character of `text` (see [`is_invisible`]) with its position in
/// characters, counted from 1, or `None` when every character shows.
pub fn first_invisible(text: &str, joiners: Joiners) -> Option<(usize, char)> {
    let is_letter = |c: Option<char>| c.is_some_and(|c| c.is_alphabetic() || is_mark(c));
    let chars: Vec<char> = text.chars().collect();
    chars.iter().enumerate().find_map(|(at, &c)| {
        if !is_invisible(c) {
            return None;
        }
        let joins_a_word = matches!(c, '\u{200c}' | '\u{200d}')
            && joiners == Joiners::InsideWords
            && at > 0
            && is_letter(chars.get(at - 1).copied())
            && is_letter(chars.get(at + 1).copied());
        (!joins_a_word).then_some((at + 1, c))
    })
}

fn is_mark(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::NonspacingMark | GeneralCategory::SpacingMark | GeneralCategory::EnclosingMark
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_character_and_hangul_filler_is_invisible() {
        for hidden in [
            '\u{ad}',
            '\u{180e}',
            '\u{fff9}',
            '\u{fffa}',
            '\u{fffb}',
            '\u{3164}',
            '\u{115f}',
            '\u{1160}',
            '\u{ffa0}',
            '\u{e0001}',
            '\u{e0041}',
            '\u{e007f}',
            '\u{200b}',
            '\u{202e}',
            '\u{2066}',
            '\u{feff}',
            '\u{2028}',
            '\u{2029}',
            '\u{0}',
            '\u{7f}',
            '\u{85}',
            '\n',
        ] {
            assert!(is_invisible(hidden), "U+{:04X}", u32::from(hidden));
            let text = format!("Zeta{hidden}Labs");
            assert_eq!(
                first_invisible(&text, Joiners::InsideWords),
                Some((5, hidden)),
                "U+{:04X}",
                u32::from(hidden)
            );
        }
        for shown in ['a', ' ', '\u{e9}', '\u{65e5}', '\u{a0}', '-', '\u{301}'] {
            assert!(!is_invisible(shown), "U+{:04X}", u32::from(shown));
        }
    }

    #[test]
    fn joiners_are_kept_inside_a_word_of_a_note_only() {
        // Persian "mi-khaham" spelt with a zero-width non-joiner; Malayalam with a joiner.
        let persian = "\u{645}\u{6cc}\u{200c}\u{62e}\u{648}\u{627}\u{647}\u{645}";
        let malayalam = "\u{d28}\u{d4d}\u{200d}\u{d31}";
        for word in [persian, malayalam] {
            assert_eq!(first_invisible(word, Joiners::InsideWords), None);
            assert!(first_invisible(word, Joiners::Refused).is_some());
        }
        for stray in ["\u{200d}abc", "abc\u{200c}", "ab \u{200d}c", "a\u{200d}\u{200d}b"] {
            assert!(first_invisible(stray, Joiners::InsideWords).is_some(), "{stray:?}");
        }
    }
}
