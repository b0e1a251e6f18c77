//! Query strings: strict parsing into the parameters each operation accepts.
//!
//! Strict on purpose: a misspelt parameter, a repeated one, a malformed percent-escape or
//! bytes that are not UTF-8 are refused with `invalid_parameter` naming the parameter, rather
//! than silently ignored and answered with data the client did not ask for.

use std::borrow::Cow;

use marks_format::file::layout::{OUTCOME_NAMES, SORTS, STATUS_IPO_COMPLETED, STATUS_PRIVATE};
use marks_format::rules::search::{search_form, MAX_QUERY_CHARS};
use marks_format::rules::tiers::{PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX};

use crate::response::problem::ApiError;

/// Decoded `name=value` pairs, in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Params<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

fn decode<'a>(raw: &'a str, what: &str) -> Result<Cow<'a, str>, ApiError> {
    let bytes = raw.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3);
            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                return Err(ApiError::invalid_parameter(what, "contains a malformed percent-escape"));
            }
        }
    }
    if !raw.contains(['+', '%']) {
        return Ok(Cow::Borrowed(raw));
    }
    let plus_free = raw.replace('+', " ");
    percent_encoding::percent_decode_str(&plus_free)
        .decode_utf8()
        .map(|decoded| Cow::Owned(decoded.into_owned()))
        .map_err(|_| ApiError::invalid_parameter(what, "is not valid UTF-8 once percent-decoded"))
}

impl<'a> Params<'a> {
    /// Parses a raw query string, accepting only the names in `allowed`, each at most once.
    pub fn parse(query: Option<&'a str>, allowed: &[&str]) -> Result<Params<'a>, ApiError> {
        let mut pairs: Vec<(Cow<'a, str>, Cow<'a, str>)> = Vec::new();
        for part in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (raw_name, raw_value) = part.split_once('=').unwrap_or((part, ""));
            let name = decode(raw_name, "a query parameter name")?;
            if !allowed.contains(&name.as_ref()) {
                let shown: String = name.chars().take(64).collect();
                return Err(if allowed.is_empty() {
                    ApiError::invalid_parameter(&shown, "is not a parameter of this operation, which takes none")
                } else {
                    ApiError::invalid_parameter(
                        &shown,
                        &format!("is not a parameter of this operation (it takes {})", allowed.join(", ")),
                    )
                });
            }
            if pairs.iter().any(|(n, _)| *n == name) {
                return Err(ApiError::invalid_parameter(&name, "is given more than once"));
            }
            let value = decode(raw_value, &name)?;
            pairs.push((name, value));
        }
        Ok(Params { pairs })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_ref())
    }
}

/// The parameters of listCompanies, validated.
#[derive(Debug, PartialEq, Eq)]
pub struct ListQuery<'a> {
    pub limit: u32,
    pub cursor: Option<&'a str>,
    pub sector: Option<&'a str>,
    /// 0 (any), `STATUS_PRIVATE` or `STATUS_IPO_COMPLETED`.
    pub status: u8,
    /// Index into `SORTS`, or `None` when not given: slug ascending, or with `q` relevance.
    pub sort: Option<u8>,
    /// The search, in `marks_format::rules::search::search_form`: never empty when given.
    pub search: Option<String>,
    /// The outcomes asked for, one bit per `OUTCOME_*` code; 0: any.
    pub outcomes: u8,
}

pub const LIST_PARAMS: &[&str] = &["limit", "cursor", "sector", "status", "sort", "q", "outcome"];

/// `outcome`: a comma-separated set of `none`, `listed`, `sold`, `sale_agreed`, `bankrupt`,
/// `wound_down`, `listing_agreed`, as a bit set over the outcome codes; `all` (as the pages
/// write it) or none given: any.
fn outcomes(params: &Params<'_>) -> Result<u8, ApiError> {
    let Some(text) = params.get("outcome") else {
        return Ok(0);
    };
    if text == "all" {
        return Ok(0);
    }
    let mut set = 0u8;
    for name in text.split(',') {
        let code = OUTCOME_NAMES.iter().position(|known| *known == name).ok_or_else(|| {
            ApiError::invalid_parameter(
                "outcome",
                &format!(
                    "must be all, or one or more of {}, separated by commas",
                    OUTCOME_NAMES.join(", ")
                ),
            )
        })?;
        set |= 1 << code;
    }
    Ok(set)
}

impl<'a> ListQuery<'a> {
    pub fn from_params(params: &'a Params<'a>) -> Result<ListQuery<'a>, ApiError> {
        let limit = limit(params)?;
        let status = match params.get("status") {
            None => 0,
            Some("private") => STATUS_PRIVATE,
            Some("ipo_completed") => STATUS_IPO_COMPLETED,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "status",
                    "must be private or ipo_completed",
                ))
            }
        };
        let sort = match params.get("sort") {
            None => None,
            Some(text) => Some(
                SORTS
                    .iter()
                    .position(|s| *s == text)
                    .ok_or_else(|| ApiError::InvalidSort(text.chars().take(64).collect()))? as u8,
            ),
        };
        let search = match params.get("q") {
            None => None,
            Some(text) if text.chars().count() > MAX_QUERY_CHARS => {
                return Err(ApiError::invalid_parameter(
                    "q",
                    &format!("is longer than {MAX_QUERY_CHARS} characters"),
                ))
            }
            Some(text) => {
                let form = search_form(text);
                if form.is_empty() {
                    return Err(ApiError::invalid_parameter(
                        "q",
                        "must contain a letter or a digit (it is matched against names, aliases and slugs)",
                    ));
                }
                Some(form)
            }
        };
        Ok(ListQuery {
            limit,
            cursor: params.get("cursor"),
            sector: params.get("sector"),
            status,
            sort,
            search,
            outcomes: outcomes(params)?,
        })
    }
}

/// The page size of a paginated operation: `limit`, 1 to 200, 50 when not given.
pub fn limit(params: &Params<'_>) -> Result<u32, ApiError> {
    match params.get("limit") {
        None => Ok(PAGE_SIZE_DEFAULT),
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=PAGE_SIZE_MAX).contains(n) && text.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                ApiError::invalid_parameter("limit", &format!("must be an integer from 1 to {PAGE_SIZE_MAX}"))
            }),
    }
}

/// The coverage of getMarkSeries and the series export: 80 unless 95 is asked for.
pub fn coverage(params: &Params<'_>) -> Result<u32, ApiError> {
    match params.get("coverage") {
        None | Some("80") => Ok(80),
        Some("95") => Ok(95),
        Some(other) => Err(ApiError::InvalidCoverage(other.chars().take(64).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(query: &str) -> Result<(u32, u8, u8), String> {
        let params = Params::parse(Some(query), LIST_PARAMS).map_err(|e| e.code().to_string())?;
        let q = ListQuery::from_params(&params).map_err(|e| e.code().to_string())?;
        Ok((q.limit, q.status, q.sort.unwrap_or(0)))
    }

    #[test]
    fn a_search_is_read_in_search_form_and_bounded() {
        let search = |query: &str| {
            let params = Params::parse(Some(query), LIST_PARAMS).map_err(|e| e.code().to_string())?;
            ListQuery::from_params(&params)
                .map(|q| q.search)
                .map_err(|e| e.code().to_string())
        };
        assert_eq!(search("q=Soci%C3%A9t%C3%A9+G"), Ok(Some("societe g".into())));
        assert_eq!(search("q="), Err("invalid_parameter".into()));
        assert_eq!(search("q=%2D%2D"), Err("invalid_parameter".into()));
        assert_eq!(
            search(&format!("q={}", "a".repeat(101))),
            Err("invalid_parameter".into())
        );
        assert_eq!(search("sort=name"), Ok(None));
    }

    #[test]
    fn list_parameters_are_strict() {
        assert_eq!(list(""), Ok((50, 0, 0)));
        assert_eq!(
            list("limit=200&sort=-value_usd&status=private"),
            Ok((200, STATUS_PRIVATE, 5))
        );
        assert_eq!(list("limit=0"), Err("invalid_parameter".into()));
        assert_eq!(list("limit=201"), Err("invalid_parameter".into()));
        assert_eq!(list("limit=+5"), Err("invalid_parameter".into()));
        assert_eq!(list("limit=5&limit=6"), Err("invalid_parameter".into()));
        assert_eq!(list("limt=5"), Err("invalid_parameter".into()));
        assert_eq!(list("status=public"), Err("invalid_parameter".into()));
        assert_eq!(list("sort=value"), Err("invalid_sort".into()));
        assert_eq!(list("sort=%2Dname"), Ok((50, 0, 3)));
        assert_eq!(list("sector=%zz"), Err("invalid_parameter".into()));
        assert_eq!(list("sector=%ff"), Err("invalid_parameter".into()));
    }

    #[test]
    fn coverage_defaults_to_80() {
        let none = Params::parse(None, &["coverage"]).unwrap();
        assert_eq!(coverage(&none).unwrap(), 80);
        let bad = Params::parse(Some("coverage=90"), &["coverage"]).unwrap();
        assert_eq!(coverage(&bad).unwrap_err().code(), "invalid_coverage");
    }
}
