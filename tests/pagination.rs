//! SPEC 4.1 and docs/design.md section 4: filters, sorting, keyset cursors and their refusals.

use std::cmp::Ordering;

use serde_json::Value;

use crate::util::*;

const SORTS: [&str; 8] = [
    "slug",
    "-slug",
    "name",
    "-name",
    "value_usd",
    "-value_usd",
    "delta_30d_pct",
    "-delta_30d_pct",
];

/// Follows next_cursor to the end and returns every item, checking the page fields on the way.
async fn walk(server: &TestServer, query: &str, limit: usize, key: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/v1/companies?limit={limit}{query}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let reply = server.get(&path, Some(key)).await;
        assert_eq!(reply.status, 200, "{path}: {}", String::from_utf8_lossy(&reply.body));
        let body = reply.json();
        let page = body["companies"].as_array().unwrap();
        assert!(page.len() <= limit);
        assert_eq!(body["page"]["limit"], limit);
        items.extend(page.iter().cloned());
        match body["page"]["next_cursor"].as_str() {
            Some(next) => {
                assert_eq!(body["page"]["has_more"], true);
                assert_eq!(page.len(), limit, "only the last page may be short");
                cursor = Some(next.to_string());
            }
            None => {
                assert_eq!(body["page"]["has_more"], false);
                return items;
            }
        }
    }
}

/// The expected order, written from the spec rule rather than taken from the server.
fn spec_order(sort: &str, a: &Value, b: &Value) -> Ordering {
    let descending = sort.starts_with('-');
    let field = sort.trim_start_matches('-');
    let direct = |o: Ordering| if descending { o.reverse() } else { o };
    let slug = |v: &Value| v["slug"].as_str().unwrap().to_string();
    let primary = match field {
        "slug" => direct(slug(a).cmp(&slug(b))),
        "name" => direct(a["name"].as_str().unwrap().cmp(b["name"].as_str().unwrap())),
        "value_usd" => direct(
            a["latest_mark"]["value_usd"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["latest_mark"]["value_usd"].as_f64().unwrap()),
        ),
        _ => match (a["delta_30d_pct"].as_f64(), b["delta_30d_pct"].as_f64()) {
            (Some(x), Some(y)) => direct(x.total_cmp(&y)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        },
    };
    primary.then_with(|| slug(a).cmp(&slug(b)))
}

fn slugs(items: &[Value]) -> Vec<String> {
    items.iter().map(|c| c["slug"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn every_sort_and_filter_walks_each_company_exactly_once_in_order() {
    let server = TestServer::start().await;
    let companies = sample_csv("companies.csv");
    for (filter, expected_count) in [
        ("".to_string(), companies.len()),
        (
            "&status=private".to_string(),
            companies.iter().filter(|r| r[3] == "private").count(),
        ),
        (
            "&status=ipo_completed".to_string(),
            companies.iter().filter(|r| r[3] == "ipo_completed").count(),
        ),
        (
            "&sector=fintech".to_string(),
            companies.iter().filter(|r| r[2] == "fintech").count(),
        ),
        (
            "&sector=ai&status=private".to_string(),
            companies.iter().filter(|r| r[2] == "ai" && r[3] == "private").count(),
        ),
    ] {
        for sort in SORTS {
            let items = walk(&server, &format!("{filter}&sort={sort}"), 7, ENTERPRISE).await;
            let mut unique = slugs(&items);
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), items.len(), "duplicates with {filter} {sort}");
            assert_eq!(items.len(), expected_count, "{filter} sort={sort}");
            let mut expected = items.clone();
            expected.sort_by(|a, b| spec_order(sort, a, b));
            assert_eq!(slugs(&items), slugs(&expected), "order of {filter} sort={sort}");
            for item in &items {
                if filter.contains("status=private") {
                    assert_eq!(item["status"], "private");
                }
                if filter.contains("sector=") {
                    assert!(filter.contains(item["sector"].as_str().unwrap()));
                }
            }
        }
    }
}

#[tokio::test]
async fn no_sort_is_slug_ascending_and_nulls_come_last_both_ways() {
    let server = TestServer::start().await;
    let plain = walk(&server, "", 200, ENTERPRISE).await;
    let mut sorted = slugs(&plain);
    sorted.sort();
    assert_eq!(slugs(&plain), sorted);
    for sort in ["delta_30d_pct", "-delta_30d_pct"] {
        let items = walk(&server, &format!("&sort={sort}"), 200, ENTERPRISE).await;
        let nulls: Vec<bool> = items.iter().map(|c| c["delta_30d_pct"].is_null()).collect();
        let first_null = nulls.iter().position(|&n| n).unwrap_or(nulls.len());
        assert!(nulls[first_null..].iter().all(|&n| n), "nulls last for {sort}");
        assert!(first_null > 0, "the sample has companies with a 30-day change");
        // Ties (all the nulls) are broken by slug ascending in both directions.
        let tail = slugs(&items[first_null..]);
        let mut ascending = tail.clone();
        ascending.sort();
        assert_eq!(tail, ascending);
    }
}

#[tokio::test]
async fn unknown_sector_is_an_empty_list() {
    let server = TestServer::start().await;
    let body = server
        .get("/v1/companies?sector=agriculture", Some(RESEARCH))
        .await
        .json();
    assert_eq!(body["companies"].as_array().unwrap().len(), 0);
    assert_eq!(body["page"]["has_more"], false);
}

#[tokio::test]
async fn parameter_rules_give_their_codes() {
    let server = TestServer::start().await;
    for (query, code) in [
        ("limit=0", "invalid_parameter"),
        ("limit=201", "invalid_parameter"),
        ("limit=ten", "invalid_parameter"),
        ("limit=-1", "invalid_parameter"),
        ("limit=1&limit=2", "invalid_parameter"),
        ("status=public", "invalid_parameter"),
        ("colour=red", "invalid_parameter"),
        ("sort=value", "invalid_sort"),
        ("sort=--name", "invalid_sort"),
        ("sort=", "invalid_sort"),
        ("cursor=", "bad_cursor"),
        ("cursor=not-a-cursor", "bad_cursor"),
    ] {
        let body = server
            .get(&format!("/v1/companies?{query}"), Some(RESEARCH))
            .await
            .assert_problem(422, code);
        if code == "invalid_parameter" {
            let name = query.split('=').next().unwrap();
            assert!(body["detail"].as_str().unwrap().contains(name), "{body}");
        }
    }
    assert_eq!(server.get("/v1/companies?limit=1", Some(RESEARCH)).await.status, 200);
    assert_eq!(server.get("/v1/companies?limit=200", Some(RESEARCH)).await.status, 200);
}

#[tokio::test]
async fn cursors_are_bound_to_their_list_and_authenticated() {
    let server = TestServer::start().await;
    let first = server
        .get("/v1/companies?limit=5&sort=-value_usd", Some(PRO))
        .await
        .json();
    let cursor = first["page"]["next_cursor"].as_str().unwrap().to_string();
    let ok = server
        .get(
            &format!("/v1/companies?limit=5&sort=-value_usd&cursor={cursor}"),
            Some(PRO),
        )
        .await;
    assert_eq!(ok.status, 200);
    // The page size may change between pages; the list may not.
    assert_eq!(
        server
            .get(
                &format!("/v1/companies?limit=9&sort=-value_usd&cursor={cursor}"),
                Some(PRO)
            )
            .await
            .status,
        200
    );
    for other in [
        format!("sort=value_usd&cursor={cursor}"),
        format!("sort=-value_usd&status=private&cursor={cursor}"),
        format!("sort=-value_usd&sector=ai&cursor={cursor}"),
        format!("cursor={cursor}"),
    ] {
        server
            .get(&format!("/v1/companies?{other}"), Some(PRO))
            .await
            .assert_problem(422, "bad_cursor");
    }
    // Truncated, tampered, or minted by another server.
    let truncated = &cursor[..cursor.len() - 3];
    let mut tampered = cursor.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let other_server = TestServer::start().await;
    let foreign = other_server
        .get("/v1/companies?limit=5&sort=-value_usd", Some(PRO))
        .await
        .json()["page"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_string();
    for bad in [truncated.to_string(), tampered, foreign] {
        server
            .get(
                &format!("/v1/companies?limit=5&sort=-value_usd&cursor={bad}"),
                Some(PRO),
            )
            .await
            .assert_problem(422, "bad_cursor");
    }
    // A free-tier cursor does not walk the full list.
    let free = server.get("/v1/companies?limit=3", Some(FREE)).await.json();
    let free_cursor = free["page"]["next_cursor"].as_str().unwrap();
    server
        .get(&format!("/v1/companies?limit=3&cursor={free_cursor}"), Some(PRO))
        .await
        .assert_problem(422, "bad_cursor");
}

#[tokio::test]
async fn a_cursor_minted_before_a_swap_continues_after_the_same_row() {
    let server = TestServer::start_with(Options {
        cursor_secret: Some(b"a cursor secret shared by replicas".to_vec()),
        ..Options::default()
    })
    .await;
    let first = server.get("/v1/companies?limit=10&sort=name", Some(PRO)).await.json();
    let last_seen = first["companies"][9]["name"].as_str().unwrap().to_string();
    let cursor = first["page"]["next_cursor"].as_str().unwrap().to_string();

    // A new dataset version adds a company that sorts before the cursor and one after it.
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("next");
    copy_dataset(&sample_dir(), &source);
    let toml = std::fs::read_to_string(source.join("dataset.toml")).unwrap();
    std::fs::write(
        source.join("dataset.toml"),
        toml.replace(&sample_version(), &day_after(&sample_version())),
    )
    .unwrap();
    let mut companies = std::fs::read_to_string(source.join("companies.csv")).unwrap();
    companies.push_str("aaa-first,AAA First,other,private,,,\nzzz-last,ZZZ Last,other,private,,,\n");
    std::fs::write(source.join("companies.csv"), companies).unwrap();
    let mut events = std::fs::read_to_string(source.join("events.csv")).unwrap();
    events.push_str("x0001,aaa-first,primary_round,2025-01-01,1000000000,closed,https://example.com/a,B,,\n");
    events.push_str("x0002,zzz-last,primary_round,2025-01-01,1000000000,closed,https://example.com/z,B,,\n");
    std::fs::write(source.join("events.csv"), events).unwrap();
    let next = dir.path().join("next.snap");
    // Built on the sample (`--previous`), as a successor is: its publication log extends the one
    // in force, so the server puts it in force.
    try_build(&source, &next, Some(sample_snapshot())).unwrap();
    server.publish(&next);
    server.wait_for_dataset(&day_after(&sample_version())).await;

    let rest = walk_from(&server, &cursor).await;
    let names: Vec<&str> = rest.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(
        names.iter().all(|n| *n > last_seen.as_str()),
        "continues after {last_seen}: {names:?}"
    );
    assert!(names.contains(&"ZZZ Last"), "rows added after the cursor are seen");
    assert!(!names.contains(&"AAA First"), "rows added before the cursor are not");
}

async fn walk_from(server: &TestServer, cursor: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor = cursor.to_string();
    loop {
        let body = server
            .get(&format!("/v1/companies?limit=10&sort=name&cursor={cursor}"), Some(PRO))
            .await
            .json();
        items.extend(body["companies"].as_array().unwrap().iter().cloned());
        match body["page"]["next_cursor"].as_str() {
            Some(next) => cursor = next.to_string(),
            None => return items,
        }
    }
}
