//! Finding a company by name: the one definition of how names, aliases and slugs are matched,
//! used by the builder to precompute the index and by the server to read a query.
//!
//! Text is compared in its search form: decomposed (NFKD), accents and other combining marks
//! dropped, apostrophes dropped, lowercased, anything else but letters and digits a space. A query matches a company when
//! each of its words is the start of one of the company's words (from its name, its aliases or
//! its slug), so `cur` finds Cursor and `zhi ai` finds Zhipu AI. Matches whose name, alias or
//! slug starts with the whole query rank first.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use crate::layout::{ArchivedIndex, SearchWord};

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
/// one look at each candidate, however many companies there are.
pub fn find(index: &ArchivedIndex, query: &str) -> Vec<(u32, u8)> {
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
}
