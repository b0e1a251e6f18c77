//! Finding a company by name: the one definition of how names, aliases and slugs are matched,
//! used by the builder to precompute the index and by the server to read a query.
//!
//! Text is compared in its search form: decomposed (NFKD), accents and other combining marks
//! dropped, apostrophes dropped, lowercased, anything else but letters and digits a space. A
//! query matches a company when each of its words is the start of one of the company's words
//! (from its name, its aliases or its slug), so `cur` finds Cursor and `zhi ai` finds Zhipu AI.
//! Matches whose name, alias or slug starts with the whole query rank first.
//!
//! Only when nothing matches so, the query is forgiven: first as one word (`x.ai` is `xai`),
//! then with one typo (a letter added, dropped, changed, or two swapped) in each of its words of
//! five letters or more (`klarma` finds Klarna), shorter words still matching as typed. A
//! query that matches as typed never gets a forgiven match beside it.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use crate::file::layout::{ArchivedIndex, SearchWord};

/// How much of a query is read: longer queries name no company better.
pub const MAX_QUERY_CHARS: usize = 100;

/// The search form of a text: lowercase letters and digits, single spaces, no accents; an
/// apostrophe joins what it stands between (Byju's is `byjus`).
pub fn search_form(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = true;
    for c in text
        .nfkd()
        .filter(|c| !is_combining_mark(*c) && !matches!(c, '\'' | '\u{2019}'))
        .flat_map(char::to_lowercase)
    {
        if c.is_alphanumeric() {
            out.push(c);
            space = false;
        } else if !space {
            out.push(' ');
            space = true;
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// The names a company is found by, in search form: its name, each alias, its slug.
pub fn company_names<'a>(name: &str, aliases: impl IntoIterator<Item = &'a str>, slug: &str) -> Vec<String> {
    let mut names = vec![search_form(name)];
    names.extend(aliases.into_iter().map(search_form));
    names.push(search_form(slug));
    names.retain(|n| !n.is_empty());
    names.dedup();
    names
}

/// How well a company's names (in search form) match a query (in search form): `Some(0)` when
/// one of them starts with the whole query, `Some(1)` when every word of the query starts one
/// of their words, `None` otherwise.
pub fn rank<S: AsRef<str>>(names: &[S], query: &str) -> Option<u8> {
    if query.is_empty() {
        return None;
    }
    if names.iter().any(|n| n.as_ref().starts_with(query)) {
        return Some(0);
    }
    let every_word = query
        .split(' ')
        .all(|q| names.iter().any(|n| n.as_ref().split(' ').any(|w| w.starts_with(q))));
    every_word.then_some(1)
}

/// Fewer letters than this, a word is matched only as typed: a typo in a short word leaves too
/// many words it could have meant.
pub const FORGIVEN_FROM_LETTERS: usize = 5;

/// Whether `a` and `b` differ by at most one edit: a letter inserted, deleted or substituted, or
/// two neighbours transposed (optimal string alignment distance <= 1).
pub fn within_one_edit(a: &[char], b: &[char]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let same = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    if same == short.len() {
        return true;
    }
    if short.len() == long.len() {
        // One substitution, or one transposition of neighbours.
        let rest = same + 1;
        short[rest..] == long[rest..]
            || (rest < short.len()
                && short[same] == long[rest]
                && short[rest] == long[same]
                && short[rest + 1..] == long[rest + 1..])
    } else {
        // One insertion into the shorter.
        short[same..] == long[same + 1..]
    }
}

/// Whether a query word, typed with at most one typo, starts `word`: some start of `word` one
/// letter shorter, as long or one letter longer is within one edit of it.
pub fn starts_with_one_typo(word: &str, query_word: &str) -> bool {
    let q: Vec<char> = query_word.chars().collect();
    let w: Vec<char> = word.chars().collect();
    if q.len() < FORGIVEN_FROM_LETTERS {
        return word.starts_with(query_word);
    }
    (q.len() - 1..=q.len() + 1)
        .filter(|&n| n <= w.len())
        .any(|n| within_one_edit(&q, &w[..n]))
}

/// The rank of a forgiven match: after every match as typed.
pub const RANK_FORGIVEN: u8 = 2;

/// Whether every word of a query starts a word of the names, with one typo forgiven in each
/// word of five letters or more.
fn matches_with_one_typo<S: AsRef<str>>(names: &[S], query: &str) -> bool {
    query.split(' ').all(|q| {
        names
            .iter()
            .any(|n| n.as_ref().split(' ').any(|w| starts_with_one_typo(w, q)))
    })
}

/// The words of every company's search names, sorted, as `Index::search_words` stores them.
pub fn word_index<'a>(names_by_company: impl IntoIterator<Item = &'a [String]>) -> Vec<SearchWord> {
    let mut words: Vec<SearchWord> = names_by_company
        .into_iter()
        .enumerate()
        .flat_map(|(company, names)| {
            names.iter().flat_map(|n| n.split(' ')).map(move |word| SearchWord {
                word: word.to_string(),
                company: company as u32,
            })
        })
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// The companies a query (in search form, not empty) matches, as (position in
/// `Index::companies`, `rank`), by position. Candidates come from the word index (the
/// companies with a word its longest word starts), so a query costs two binary searches and
/// one look at each candidate, however many companies there are. When nothing matches, the
/// forgiving forms (one word; one typo a word) look at every word of the index once.
pub fn find(index: &ArchivedIndex, query: &str) -> Vec<(u32, u8)> {
    let exact = find_as_typed(index, query);
    if !exact.is_empty() {
        return exact;
    }
    if query.contains(' ') {
        let joined = find_as_typed(index, &query.replace(' ', ""));
        if !joined.is_empty() {
            return joined
                .into_iter()
                .map(|(position, _)| (position, RANK_FORGIVEN))
                .collect();
        }
    }
    if !query.split(' ').any(|w| w.chars().count() >= FORGIVEN_FROM_LETTERS) {
        return Vec::new();
    }
    // Candidates: the companies with a word that the query's longest word starts, forgiving
    // one typo; then every word of the query, forgiven likewise.
    let Some(probe) = query.split(' ').max_by_key(|w| w.chars().count()) else {
        return Vec::new();
    };
    let mut candidates: Vec<u32> = index
        .search_words
        .iter()
        .filter(|w| starts_with_one_typo(w.word.as_str(), probe))
        .map(|w| w.company.to_native())
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    let companies = index.companies.as_slice();
    candidates
        .into_iter()
        .filter(|&position| {
            companies
                .get(position as usize)
                .is_some_and(|c| matches_with_one_typo(c.search_names.as_slice(), query))
        })
        .map(|position| (position, RANK_FORGIVEN))
        .collect()
}

/// The companies a query matches as typed.
fn find_as_typed(index: &ArchivedIndex, query: &str) -> Vec<(u32, u8)> {
    let Some(probe) = query.split(' ').max_by_key(|w| w.len()) else {
        return Vec::new();
    };
    let words = index.search_words.as_slice();
    let start = words.partition_point(|w| w.word.as_str() < probe);
    let mut candidates: Vec<u32> = words[start..]
        .iter()
        .take_while(|w| w.word.as_str().starts_with(probe))
        .map(|w| w.company.to_native())
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    let companies = index.companies.as_slice();
    candidates
        .into_iter()
        .filter_map(|position| {
            let names = companies.get(position as usize)?.search_names.as_slice();
            rank(names, query).map(|rank| (position, rank))
        })
        .collect()
}

/// The order of matches when no sort is asked for, as one number (smaller first): whole-name
/// matches before word matches, then the higher latest value first. Exact in an f64 for any
/// value below 10^15 dollars (larger ones tie), so a list cursor can carry it.
pub fn relevance_key(rank: u8, value_usd: u64) -> f64 {
    const SPAN: u64 = 1_000_000_000_000_000;
    (u64::from(rank) * SPAN + (SPAN - 1 - value_usd.min(SPAN - 1))) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_form_drops_case_accents_and_punctuation() {
        assert_eq!(search_form("Société Générale (SG)"), "societe generale sg");
        assert_eq!(search_form("  Byju's   (Think & Learn) "), "byjus think learn");
        assert_eq!(search_form("Byju\u{2019}s"), "byjus");
        assert_eq!(search_form("Zürich"), "zurich");
        assert_eq!(search_form("---"), "");
    }

    #[test]
    fn a_query_matches_word_starts_and_whole_names_rank_first() {
        let cursor = company_names("Anysphere (Cursor)", ["Cursor"], "anysphere");
        assert_eq!(
            rank(&cursor, &search_form("Cursor")),
            Some(0),
            "an alias starts with it"
        );
        assert_eq!(rank(&cursor, &search_form("any")), Some(0));
        assert_eq!(rank(&cursor, &search_form("curs")), Some(0));
        let zhipu = company_names("Zhipu AI (Knowledge Atlas)", ["Knowledge Atlas"], "zhipu-ai");
        assert_eq!(
            rank(&zhipu, &search_form("atlas")),
            Some(1),
            "a later word starts with it"
        );
        assert_eq!(rank(&zhipu, &search_form("zhi ai")), Some(1), "every word starts one");
        assert_eq!(rank(&zhipu, &search_form("zhipu ai")), Some(0));
        assert_eq!(rank(&zhipu, &search_form("ipu")), None, "not the middle of a word");
        assert_eq!(rank(&zhipu, &search_form("")), None);
    }

    #[test]
    fn one_edit_by_hand() {
        let chars = |s: &str| s.chars().collect::<Vec<char>>();
        let one = |a: &str, b: &str| within_one_edit(&chars(a), &chars(b));
        assert!(one("klarna", "klarna"));
        assert!(one("klarma", "klarna"), "a letter changed");
        assert!(one("klrna", "klarna"), "a letter dropped");
        assert!(one("klarnna", "klarna"), "a letter added");
        assert!(one("kalrna", "klarna"), "two neighbours swapped");
        assert!(!one("kalrma", "klarna"), "two edits");
        assert!(!one("klar", "klarna"), "two letters short");
        assert!(!one("anrlka", "klarna"));
    }

    #[test]
    fn a_typo_is_forgiven_in_a_long_word_only() {
        assert!(starts_with_one_typo("klarna", "klarma"));
        assert!(
            starts_with_one_typo("databricks", "datbr"),
            "a prefix with a letter dropped"
        );
        assert!(
            starts_with_one_typo("anthropic", "antrhop"),
            "a prefix with two letters swapped"
        );
        assert!(!starts_with_one_typo("stripe", "strp"), "short words as typed");
        assert!(starts_with_one_typo("stripe", "stri"));
        let names = company_names("Klarna", [], "klarna");
        assert!(matches_with_one_typo(&names, "klarma"));
        assert!(!matches_with_one_typo(&names, "klarma bank"), "every word must match");
    }
}
