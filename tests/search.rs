//! Finding companies: `q` on listCompanies (name, aliases, slug; case- and accent-insensitive;
//! prefix matches first; with filters, sorts and cursors) and the sector list.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::util::*;

/// Every page of a list, following its cursors.
async fn walk(server: &TestServer, query: &str, limit: usize, key: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/v1/companies?limit={limit}&{query}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let reply = server.get(&path, Some(key)).await;
        assert_eq!(reply.status, 200, "{path}: {}", String::from_utf8_lossy(&reply.body));
        let body = reply.json();
        items.extend(body["companies"].as_array().unwrap().iter().cloned());
        match body["page"]["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return items,
        }
    }
}

fn slugs(items: &[Value]) -> Vec<String> {
    items.iter().map(|c| c["slug"].as_str().unwrap().to_string()).collect()
}

/// The words of a text as the docs describe them: lowercase runs of letters and digits, an
/// apostrophe dropped (the sample's names are ASCII, so no accent folding is needed here).
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace('\'', "")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// A company's names as a test reads them from companies.csv: name, aliases, slug.
fn names_of(row: &[String]) -> Vec<String> {
    let mut names = vec![row[1].clone(), row[0].clone()];
    names.extend(
        row.get(4)
            .map(String::as_str)
            .unwrap_or("")
            .split(';')
            .filter(|a| !a.is_empty())
            .map(str::to_string),
    );
    names
}

/// The documented rule: every word of the query starts a word of one of the names.
fn matches(names: &[String], query: &str) -> bool {
    let name_words: Vec<String> = names.iter().flat_map(|n| words(n)).collect();
    words(query)
        .iter()
        .all(|q| name_words.iter().any(|w| w.starts_with(q.as_str())))
}

/// Whether one of the names starts with the whole query (a prefix match, ranked first).
fn prefix_match(names: &[String], query: &str) -> bool {
    let query = words(query).join(" ");
    names.iter().any(|n| words(n).join(" ").starts_with(&query))
}

fn item_names(item: &Value) -> Vec<String> {
    let mut names = vec![
        item["name"].as_str().unwrap().to_string(),
        item["slug"].as_str().unwrap().to_string(),
    ];
    names.extend(
        item["aliases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    names
}

#[tokio::test]
async fn every_company_is_found_by_each_word_of_its_names_and_by_a_prefix_of_each() {
    let server = TestServer::start().await;
    let companies = sample_csv("companies.csv");
    let aliased = companies
        .iter()
        .filter(|r| r.get(4).is_some_and(|a| !a.is_empty()))
        .count();
    assert!(aliased >= 10, "the sample names its companies' other names ({aliased})");
    let mut queries = 0;
    for row in &companies {
        let slug = &row[0];
        for name in names_of(row) {
            for word in words(&name) {
                let prefix: String = word.chars().take(3).collect();
                // As typed: upper case, and the prefix of each word.
                for query in [word.to_uppercase(), prefix] {
                    let found = walk(&server, &format!("q={query}"), 200, ENTERPRISE).await;
                    queries += 1;
                    assert!(slugs(&found).contains(slug), "{query:?} does not find {slug} ({name})");
                    for item in &found {
                        assert!(matches(&item_names(item), &query), "{query:?} found {item}");
                    }
                }
            }
        }
    }
    assert!(queries > 2 * companies.len());
}

#[tokio::test]
async fn former_and_brand_names_find_their_company() {
    let server = TestServer::start().await;
    for (query, slug) in [
        ("Cursor", "anysphere"),
        ("codeium", "windsurf"),
        ("transferwise", "wise"),
        ("Nu Holdings", "nubank"),
        ("knowledge atl", "zhipu-ai"),
    ] {
        let body = server
            .get(&format!("/v1/companies?q={}", query.replace(' ', "+")), Some(RESEARCH))
            .await
            .json();
        assert_eq!(
            slugs(body["companies"].as_array().unwrap()).first().map(String::as_str),
            Some(slug),
            "{query}"
        );
    }
    // Accents and case do not matter: the query is folded like the names.
    let accented = server.get("/v1/companies?q=C%C3%9CRS", Some(RESEARCH)).await.json();
    assert_eq!(slugs(accented["companies"].as_array().unwrap()), ["anysphere"]);
}

/// A query that matches nothing as typed is forgiven: as one word (`x.ai`), then one typo in
/// each word of five letters or more; a brand the sample names (TikTok) finds its company.
#[tokio::test]
async fn a_typo_or_a_brand_still_finds_the_company() {
    let server = TestServer::start().await;
    for (query, slug) in [
        ("klarma", "klarna"),
        ("Kalrna", "klarna"),
        ("databriks", "databricks"),
        ("anthropik", "anthropic"),
        ("x.ai", "xai"),
        ("TikTok", "bytedance"),
        ("tiktok", "bytedance"),
    ] {
        let found = walk(&server, &format!("q={query}"), 50, RESEARCH).await;
        assert_eq!(
            slugs(&found).first().map(String::as_str),
            Some(slug),
            "{query}: {:?}",
            slugs(&found)
        );
    }
    // Short words are matched only as typed: a typo in four letters is not guessed at.
    assert!(walk(&server, "q=strp", 50, RESEARCH).await.is_empty());
    // Two typos in one word are not one.
    assert!(walk(&server, "q=kalrma", 50, RESEARCH).await.is_empty());
}

#[tokio::test]
async fn prefix_matches_come_first_then_the_larger_marks() {
    let server = TestServer::start().await;
    for query in ["ai", "a", "lab", "s"] {
        let found = walk(&server, &format!("q={query}"), 9, ENTERPRISE).await;
        assert!(!found.is_empty(), "{query}");
        let ranks: Vec<(bool, f64)> = found
            .iter()
            .map(|item| {
                let value = item["latest_mark"]["value_usd"].as_f64().unwrap_or(0.0);
                (!prefix_match(&item_names(item), query), -value)
            })
            .collect();
        let mut expected = ranks.clone();
        expected.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        assert_eq!(ranks, expected, "relevance order of {query:?}");
        // And exactly the companies the rule matches, each once.
        let companies = sample_csv("companies.csv");
        let mut expected: Vec<String> = companies
            .iter()
            .filter(|r| matches(&names_of(r), query))
            .map(|r| r[0].clone())
            .collect();
        let mut got = slugs(&found);
        expected.sort();
        got.sort();
        assert_eq!(got, expected, "{query}");
    }
}

#[tokio::test]
async fn a_search_combines_with_filters_sorts_and_cursors() {
    let server = TestServer::start().await;
    let everything = walk(&server, "sort=-value_usd", 200, ENTERPRISE).await;
    for (query, sort) in [
        ("a", "name"),
        ("ai", "-value_usd"),
        ("s", "-last_event_on"),
        ("co", "slug"),
    ] {
        for filter in [
            "",
            "&sector=AI",
            "&status=private",
            "&sector=Fintech&status=ipo_completed",
        ] {
            let found = walk(&server, &format!("q={query}&sort={sort}{filter}"), 4, ENTERPRISE).await;
            let plain = walk(&server, &format!("sort={sort}{filter}"), 200, ENTERPRISE).await;
            let expected: Vec<Value> = plain
                .into_iter()
                .filter(|item| matches(&item_names(item), query))
                .collect();
            assert_eq!(slugs(&found), slugs(&expected), "q={query} sort={sort}{filter}");
        }
    }
    assert_eq!(everything.len(), sample_csv("companies.csv").len());

    // A cursor belongs to its search.
    let first = server.get("/v1/companies?q=a&limit=2", Some(PRO)).await.json();
    let cursor = first["page"]["next_cursor"].as_str().unwrap();
    let second = server
        .get(&format!("/v1/companies?q=a&limit=2&cursor={cursor}"), Some(PRO))
        .await;
    assert_eq!(second.status, 200);
    server
        .get(&format!("/v1/companies?q=b&limit=2&cursor={cursor}"), Some(PRO))
        .await
        .assert_problem(422, "bad_cursor");
    server
        .get(&format!("/v1/companies?limit=2&cursor={cursor}"), Some(PRO))
        .await
        .assert_problem(422, "bad_cursor");
}

#[tokio::test]
async fn the_free_tier_searches_its_own_universe_only() {
    let server = TestServer::start_with(Options {
        keys_toml: Some(demo_keys_with_rate(100_000)),
        ..Options::default()
    })
    .await;
    let free: Vec<String> = slugs(&walk(&server, "", 200, FREE).await);
    assert_eq!(free.len(), 10);
    let companies = sample_csv("companies.csv");
    for row in &companies {
        let query = words(&row[1]).remove(0);
        let found = slugs(&walk(&server, &format!("q={query}"), 200, FREE).await);
        assert!(found.iter().all(|slug| free.contains(slug)), "{query}: {found:?}");
        assert_eq!(found.contains(&row[0]), free.contains(&row[0]), "{query}");
    }
}

#[tokio::test]
async fn a_search_with_nothing_to_match_or_too_long_is_refused() {
    let server = TestServer::start().await;
    for query in ["q=", "q=%20%2D%20", &format!("q={}", "x".repeat(101))] {
        let problem = server
            .get(&format!("/v1/companies?{query}"), Some(RESEARCH))
            .await
            .assert_problem(422, "invalid_parameter");
        assert!(problem["detail"].as_str().unwrap().contains("\"q\""), "{problem}");
    }
    let none = server.get("/v1/companies?q=zzzzqqq", Some(RESEARCH)).await.json();
    assert_eq!(none["companies"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn sectors_are_listed_with_their_counts_and_read_in_any_case() {
    let server = TestServer::start().await;
    let companies = sample_csv("companies.csv");
    let mut expected: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for row in &companies {
        let entry = expected.entry(row[2].clone()).or_default();
        entry.0 += 1;
        entry.1 += u64::from(row[3] == "private");
    }
    let body = server.get("/v1/sectors", Some(RESEARCH)).await.json();
    assert!(body["meta"]["dataset_version"].is_string());
    let listed: BTreeMap<String, (u64, u64)> = body["sectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["sector"].as_str().unwrap().to_string(),
                (s["companies"].as_u64().unwrap(), s["private"].as_u64().unwrap()),
            )
        })
        .collect();
    assert_eq!(listed, expected);

    // The free tier's counts are of its ten companies.
    let free_items = walk(&server, "", 200, FREE).await;
    let free = server.get("/v1/sectors", Some(FREE)).await.json();
    let total: u64 = free["sectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["companies"].as_u64().unwrap())
        .sum();
    assert_eq!(total as usize, free_items.len());

    for (sector, (count, _)) in &expected {
        let shouted = sector.to_uppercase().replace('-', "+");
        let items = walk(&server, &format!("sector={shouted}"), 200, ENTERPRISE).await;
        assert_eq!(items.len() as u64, *count, "sector={shouted}");
    }
    server
        .get("/v1/sectors?x=1", Some(RESEARCH))
        .await
        .assert_problem(422, "invalid_parameter");
    assert_eq!(server.get("/v1/sectors", None).await.status, 401);
}
