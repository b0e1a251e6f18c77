//! The pages (`/`, `/scorecard`, `/explore`, `/docs`) and their assets over real HTTP: served
//! without a key and without spending a budget, each with its security headers, ETag, gzip
//! and cache policy; the scorecard page's figures are the ones `/v1/scorecard` serves. (What
//! the pages do in a browser is `tests/browser/`.)

use std::collections::BTreeMap;

use crate::util::*;

const PAGES: [&str; 5] = ["/", "/scorecard", "/explore", "/explore/stripe", "/docs"];

#[tokio::test]
async fn pages_need_no_key_spend_no_budget_and_carry_a_strict_policy() {
    let server = TestServer::start().await;
    for path in PAGES {
        let page = server.get(path, None).await;
        assert_eq!(page.status, 200, "{path}");
        assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"), "{path}");
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"), "{path}");
        assert_eq!(page.header("referrer-policy"), Some("no-referrer"), "{path}");
        let policy = page.header("content-security-policy").unwrap();
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "object-src 'none'",
        ] {
            assert!(policy.contains(directive), "{path}: {policy}");
        }
        assert!(!policy.contains("unsafe-eval"), "{path}: {policy}");
        assert!(page.header("x-ratelimit-limit").is_none(), "{path} is not metered");
        let html = String::from_utf8_lossy(&page.body);
        assert!(html.starts_with("<!doctype html>"), "{path}");
        // No inline script: every script comes from this origin's files.
        assert!(!html.contains("<script>") && !html.contains("onclick="), "{path}");
        let etag = page.header("etag").unwrap().to_string();
        let again = server.get_with(path, &[("if-none-match", &etag)]).await;
        assert_eq!((again.status, again.body.len()), (304, 0), "{path}");
        let gzip = server.get_with(path, &[("accept-encoding", "gzip")]).await;
        if gzip.header("content-encoding") == Some("gzip") {
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gzip.body[..]), &mut text).unwrap();
            assert_eq!(text, page.body, "{path}");
        }
    }
    // The free key's budget is untouched by all of that.
    let usage = server.get("/v1/companies?limit=1", Some(FREE)).await;
    assert_eq!(
        usage.header_u64("x-ratelimit-remaining"),
        usage.header_u64("x-ratelimit-limit") - 1
    );
}

#[tokio::test]
async fn assets_are_served_fingerprinted_for_a_year_and_plain_with_revalidation() {
    let server = TestServer::start().await;
    let explore = String::from_utf8_lossy(&server.get("/explore", None).await.body).to_string();
    let urls: Vec<&str> = explore.split('"').filter(|part| part.starts_with("/assets/")).collect();
    assert!(!urls.is_empty(), "the explorer names its assets");
    assert!(!explore.contains("{{asset:"), "every placeholder was filled");
    for url in urls {
        let fingerprinted = server.get(url, None).await;
        assert_eq!(fingerprinted.status, 200, "{url}");
        assert_eq!(
            fingerprinted.header("cache-control"),
            Some("public, max-age=31536000, immutable"),
            "{url}"
        );
        let (_, name) = url.trim_start_matches("/assets/").split_once('/').unwrap();
        let plain = server.get(&format!("/assets/{name}"), None).await;
        assert_eq!(
            (plain.status, plain.header("cache-control")),
            (200, Some("public, no-cache"))
        );
        assert_eq!(plain.body, fingerprinted.body);
        // A fingerprint that is not the content's is not served.
        server
            .get(&format!("/assets/000000000000/{name}"), None)
            .await
            .assert_problem(404, "not_found");
    }
}

/// Every `data-figure="PATH"` number on the scorecard page is the one the JSON serves at that
/// path (object members and array positions, dot-separated).
#[tokio::test]
async fn the_scorecard_page_shows_the_served_figures() {
    let server = TestServer::start().await;
    let page = String::from_utf8_lossy(&server.get("/scorecard", None).await.body).to_string();
    let card = server.get("/v1/scorecard", None).await.json();
    let mut checked = 0;
    for piece in page.split("data-figure=\"").skip(1) {
        let (name, rest) = piece.split_once("\">").unwrap();
        let shown = rest.split('<').next().unwrap();
        let served = name.split('.').fold(&card, |value, key| match key.parse::<usize>() {
            Ok(index) => &value[index],
            Err(_) => &value[key],
        });
        assert!(!served.is_null() || shown == "–", "{name}: nothing served there");
        assert_eq!(
            shown.parse::<f64>().ok(),
            served.as_f64(),
            "{name}: the page shows {shown}, /v1/scorecard {served}"
        );
        checked += 1;
    }
    // Each number on each score, and the claims beside them.
    for score in [
        "month_end.bridged",
        "month_end.next_reported",
        "event_day.event.errors",
        "event_day.listing.errors",
    ] {
        for number in SCORED_NUMBERS {
            for figure in ["median_abs_log_error", "mean_abs_log_error"] {
                let name = format!("{score}.{number}.{figure}");
                assert!(
                    page.contains(&format!("data-figure=\"{name}\"")),
                    "{name} is not on the page"
                );
            }
        }
    }
    for name in [
        "month_end.coverage_80.observed_pct",
        "month_end.confidence.brier_skill",
        "latest_private.median_mark_over_last",
    ] {
        assert!(
            page.contains(&format!("data-figure=\"{name}\"")),
            "{name} is not on the page"
        );
    }
    assert!(checked > 40, "{checked} figures checked");
    // The findings, in words, as served.
    for finding in card["findings"].as_array().unwrap() {
        let text = marks::web::frame::escape_html(finding.as_str().unwrap());
        assert!(page.contains(&text), "finding missing: {text}");
    }
}

#[tokio::test]
async fn the_home_page_says_what_is_served() {
    let server = TestServer::start().await;
    let page = String::from_utf8_lossy(&server.get("/", None).await.body).to_string();
    let ready = server.get("/readyz", None).await.json();
    for fact in [
        ready["dataset_version"].as_str().unwrap(),
        ready["methodology_version"].as_str().unwrap(),
        &ready["companies"].to_string(),
    ] {
        assert!(page.contains(fact), "{fact} missing from the home page");
    }
    // How fresh the data is, worked out from the source CSV: the newest event, and the median
    // (the lower middle) of the days from each company's last event to as_of.
    let as_of = ready["as_of"].as_str().unwrap();
    let day = |s: &str| marks_format::rules::day::Day::parse(s).unwrap();
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for row in sample_effective_events() {
        let slot = last.entry(row["slug"].clone()).or_default();
        if row["occurred_on"] > *slot {
            *slot = row["occurred_on"].clone();
        }
    }
    let newest = last.values().max().unwrap();
    let mut ages: Vec<i32> = last.values().map(|d| day(as_of).days_since(day(d))).collect();
    ages.sort_unstable();
    let median = ages[(ages.len() - 1) / 2];
    assert!(
        page.contains(&format!("<dd data-fact=\"newest_event\">{newest}</dd>")),
        "newest event"
    );
    assert!(
        page.contains(&format!("<dd data-fact=\"median_last_event_days\">{median} days</dd>")),
        "median age {median}"
    );
    let meta = server.get("/v1/companies?limit=1", Some(PRO)).await.json()["meta"].clone();
    let disclaimer = meta["disclaimer"].as_str().unwrap();
    assert!(page.contains(disclaimer), "the disclaimer is on the page");
    // The bundled sample's quickstart uses its demo key, which works.
    assert!(page.contains("X-API-Key: vmk_demo_research"));
    for link in ["/explore", "/scorecard", "/docs", "/v1/openapi.json"] {
        assert!(page.contains(&format!("href=\"{link}\"")), "{link}");
    }
}
