//! SPEC sections 5 and 8, docs/design.md section 4: keys, tiers, budgets and rate-limit headers.

use std::time::{Duration, Instant};

use http::Method;

use crate::util::*;

#[tokio::test]
async fn missing_unknown_and_revoked_keys_are_refused() {
    let server = TestServer::start().await;
    server
        .get("/v1/companies", None)
        .await
        .assert_problem(401, "missing_api_key");
    server
        .get("/v1/companies", Some("vmk_not_a_key"))
        .await
        .assert_problem(401, "invalid_api_key");
    server
        .get("/v1/companies", Some(REVOKED))
        .await
        .assert_problem(401, "invalid_api_key");
    // Two keys at once are not a key.
    server
        .get_with("/v1/companies", &[("x-api-key", RESEARCH), ("x-api-key", PRO)])
        .await
        .assert_problem(401, "invalid_api_key");
    // A key in the query string is never read.
    let reply = server.get(&format!("/v1/companies?api_key={ENTERPRISE}"), None).await;
    reply.assert_problem(401, "missing_api_key");
}

/// The whole tier x operation matrix (SPEC section 4's minimum tiers, docs/design.md's free tier).
#[tokio::test]
async fn every_tier_against_every_operation() {
    let server = TestServer::start().await;
    // Free-tier paths use a company in its universe (the top 10 by value).
    let ops = [
        "/v1/companies",
        "/v1/companies/openai",
        "/v1/companies/openai/marks",
        "/v1/companies/openai/marks?coverage=95",
        "/v1/companies/openai/events",
        "/v1/companies/openai/resolution",
        "/v1/usage",
    ];
    let matrix = [
        (FREE, [200, 200, 403, 403, 403, 403, 403]),
        (RESEARCH, [200, 200, 200, 403, 403, 403, 200]),
        (PRO, [200, 200, 200, 200, 200, 403, 200]),
        (BUSINESS, [200, 200, 200, 200, 200, 403, 200]),
        (ENTERPRISE, [200, 200, 200, 200, 200, 200, 200]),
    ];
    for (key, expected) in matrix {
        for (path, status) in ops.iter().zip(expected) {
            let reply = server.get(path, Some(key)).await;
            if status == 403 {
                let body = reply.assert_problem(403, "tier_forbidden");
                assert!(body["detail"].as_str().unwrap().contains("tier or above"), "{body}");
            } else {
                assert_eq!(reply.status, status, "{key} {path}");
            }
        }
    }
}

#[tokio::test]
async fn research_asking_for_95_is_told_which_tier_is_needed() {
    let server = TestServer::start().await;
    let body = server
        .get("/v1/companies/openai/marks?coverage=95", Some(RESEARCH))
        .await
        .assert_problem(403, "tier_forbidden");
    assert!(body["detail"].as_str().unwrap().contains("pro"), "{body}");
}

#[tokio::test]
async fn free_tier_sees_only_the_top_ten_by_value() {
    let server = TestServer::start().await;
    // The ten highest marks that are current: a listed, sold or failed company's last private
    // mark is not among them.
    let all = server
        .get(
            "/v1/companies?sort=-value_usd&outcome=none,sale_agreed&limit=200",
            Some(RESEARCH),
        )
        .await
        .json();
    let ranked: Vec<String> = all["companies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap().to_string())
        .collect();
    let reply = server.get("/v1/companies?limit=200", Some(FREE)).await;
    assert_eq!(reply.status, 200);
    let free = reply.json();
    let mut seen: Vec<String> = free["companies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap().to_string())
        .collect();
    let mut top10 = ranked[..10].to_vec();
    seen.sort();
    top10.sort();
    assert_eq!(seen, top10);
    assert!(free["universe_note"].as_str().unwrap().contains("10 companies"));
    // Inside the universe: allowed. Outside: 403, not 404, since the company exists.
    assert_eq!(
        server
            .get(&format!("/v1/companies/{}", ranked[0]), Some(FREE))
            .await
            .status,
        200
    );
    server
        .get(&format!("/v1/companies/{}", ranked[20]), Some(FREE))
        .await
        .assert_problem(403, "tier_forbidden");
    server
        .get("/v1/companies/no-such-company", Some(FREE))
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn free_key_gets_exactly_ten_of_eleven() {
    let server = TestServer::start().await;
    let mut client = Client::connect(server.addr).await;
    let mut statuses = Vec::new();
    let mut remaining = Vec::new();
    for _ in 0..11 {
        let reply = client
            .send(Method::GET, "/v1/companies/openai", &[("x-api-key", FREE)])
            .await;
        statuses.push(reply.status);
        remaining.push(reply.header_u64("x-ratelimit-remaining"));
        if reply.status == 429 {
            reply.assert_problem(429, "rate_limited");
            let retry = reply.header_u64("retry-after");
            assert!((1..=6).contains(&retry), "10/min refills a token every 6 s: {retry}");
        }
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429]);
    assert_eq!(remaining, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0]);
}

#[tokio::test]
async fn research_key_gets_sixty_of_a_hundred_concurrent_plus_what_refilled_meanwhile() {
    let server = TestServer::start().await;
    let addr = server.addr;
    let started = Instant::now();
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            tokio::spawn(
                async move { request(addr, Method::GET, "/v1/companies/openai", &[("x-api-key", RESEARCH)]).await },
            )
        })
        .collect();
    let mut ok = 0;
    let mut limited = 0;
    for task in tasks {
        let reply = task.await.unwrap();
        match reply.status {
            200 => ok += 1,
            429 => {
                limited += 1;
                assert!(reply.header_u64("retry-after") >= 1);
                assert_eq!(reply.header_u64("x-ratelimit-remaining"), 0);
            }
            other => panic!("unexpected status {other}"),
        }
    }
    // 60/min refills one unit a second: however slow the machine, the burst is 60 and only
    // what refilled while the requests ran may be added to it.
    let refilled = started.elapsed().as_secs();
    assert!((60..=60 + refilled + 1).contains(&ok), "{ok} answered in {refilled} s");
    assert_eq!(ok + limited, 100);
}

#[tokio::test]
async fn rate_limit_headers_count_down_and_agree() {
    // The free tier refills one unit every 6 seconds, so the countdown is exact even on a slow
    // machine.
    let server = TestServer::start().await;
    let mut client = Client::connect(server.addr).await;
    let mut previous = None;
    for _ in 0..5 {
        let reply = client
            .send(Method::GET, "/v1/companies/openai", &[("x-api-key", FREE)])
            .await;
        let limit = reply.header_u64("x-ratelimit-limit");
        let remaining = reply.header_u64("x-ratelimit-remaining");
        let reset = reply.header_u64("x-ratelimit-reset");
        assert_eq!(limit, 10);
        assert_eq!(reply.header("ratelimit-policy"), Some("\"minute\";q=10;w=60"));
        let ratelimit = reply.header("ratelimit").unwrap();
        let (r, t) = parse_ratelimit(ratelimit);
        assert_eq!(r, remaining, "{ratelimit}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(
            reset >= now && reset.abs_diff(now + t) <= 1,
            "reset {reset} now {now} t {t}"
        );
        if let Some(previous) = previous {
            assert_eq!(remaining + 1, previous, "each request spends one unit");
        }
        previous = Some(remaining);
    }
    // 304s spend a unit too.
    let first = client
        .send(Method::GET, "/v1/companies/openai", &[("x-api-key", FREE)])
        .await;
    let etag = first.header("etag").unwrap().to_string();
    let again = client
        .send(
            Method::GET,
            "/v1/companies/openai",
            &[("x-api-key", FREE), ("if-none-match", &etag)],
        )
        .await;
    assert_eq!(again.status, 304);
    assert_eq!(
        again.header_u64("x-ratelimit-remaining") + 1,
        first.header_u64("x-ratelimit-remaining")
    );
}

fn parse_ratelimit(value: &str) -> (u64, u64) {
    let mut r = None;
    let mut t = None;
    for part in value.split(';').skip(1) {
        let (name, number) = part.split_once('=').unwrap();
        match name {
            "r" => r = number.parse().ok(),
            "t" => t = number.parse().ok(),
            _ => {}
        }
    }
    assert!(value.starts_with("\"minute\""), "{value}");
    (r.unwrap(), t.unwrap())
}

#[tokio::test]
async fn failed_authentication_is_throttled_per_address_and_never_a_valid_key() {
    let server = TestServer::start_with(Options::settings(|s| s.access.auth_failures_per_min = 5)).await;
    for _ in 0..5 {
        server
            .get("/v1/companies", Some("vmk_guess"))
            .await
            .assert_problem(401, "invalid_api_key");
    }
    let throttled = server.get("/v1/companies", Some("vmk_guess")).await;
    let body = throttled.assert_problem(429, "rate_limited");
    let retry_after = throttled.header_u64("retry-after");
    assert!(retry_after >= 1);
    assert_eq!(
        body["detail"],
        format!("too many failed authentications from this address; retry after {retry_after} seconds")
    );
    // The 429 reports the budget that refused it: this address's failed authentications.
    assert_eq!(throttled.header_u64("x-ratelimit-limit"), 5);
    assert_eq!(throttled.header_u64("x-ratelimit-remaining"), 0);
    assert_eq!(throttled.header("ratelimit-policy"), Some("\"auth-failures\";q=5;w=60"));
    assert!(throttled
        .header("ratelimit")
        .unwrap()
        .starts_with("\"auth-failures\";r=0;t="));
    assert!(throttled.header_u64("x-ratelimit-reset") > 0);
    // A request without a key is a failing attempt too.
    server
        .get("/v1/companies", None)
        .await
        .assert_problem(429, "rate_limited");
    // Forty more bad keys from the same address (a neighbour behind the same NAT)...
    for _ in 0..40 {
        assert_eq!(server.get("/v1/companies/openai", Some("vmk_guess")).await.status, 429);
    }
    // ...and a valid key from that address is answered, metered by its own budget only.
    let valid = server.get("/v1/companies/openai", Some(ENTERPRISE)).await;
    assert_eq!(valid.status, 200);
    assert_eq!(valid.header_u64("x-ratelimit-limit"), 6000);
    assert_eq!(valid.header("ratelimit-policy"), Some("\"minute\";q=6000;w=60"));
    // Unauthenticated documents stay available.
    assert_eq!(server.get("/v1/signing-keys", None).await.status, 200);
}

#[tokio::test]
async fn behind_a_proxy_failures_count_against_the_address_it_appends() {
    let server = TestServer::start_with(Options::settings(|s| {
        s.access.auth_failures_per_min = 3;
        s.access.client_ip_header = Some(http::HeaderName::from_static("x-forwarded-for"));
    }))
    .await;
    // Whatever a client writes in the header itself comes before what the proxy appends.
    for spoofed in ["198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"] {
        let forwarded = format!("{spoofed}, 203.0.113.7");
        let reply = server
            .get_with(
                "/v1/companies",
                &[("x-api-key", "vmk_guess"), ("x-forwarded-for", &forwarded)],
            )
            .await;
        assert_eq!(
            reply.status,
            if spoofed.ends_with('4') { 429 } else { 401 },
            "{forwarded}"
        );
    }
    // Another failing client behind the same proxy is not affected...
    let other = server
        .get_with(
            "/v1/companies",
            &[("x-api-key", "vmk_guess"), ("x-forwarded-for", "203.0.113.8")],
        )
        .await;
    assert_eq!(other.status, 401);
    // ...and a valid key from the throttled address is answered.
    let valid = server
        .get_with(
            "/v1/companies",
            &[("x-api-key", ENTERPRISE), ("x-forwarded-for", "203.0.113.7")],
        )
        .await;
    assert_eq!(valid.status, 200);
}

/// One subscriber gets a whole IPv6 /64: its addresses share one failure budget, and the next
/// /64 has its own.
#[tokio::test]
async fn ipv6_clients_are_throttled_by_their_64() {
    let server = TestServer::start_with(Options::settings(|s| {
        s.access.auth_failures_per_min = 3;
        s.access.client_ip_header = Some(http::HeaderName::from_static("x-forwarded-for"));
    }))
    .await;
    let fail_from = |address: &'static str| {
        let server = &server;
        async move {
            server
                .get_with(
                    "/v1/companies",
                    &[("x-api-key", "vmk_guess"), ("x-forwarded-for", address)],
                )
                .await
                .status
        }
    };
    for address in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff:ffff:ffff:ffff"] {
        assert_eq!(fail_from(address).await, 401, "{address}");
    }
    assert_eq!(fail_from("2001:db8:1:2:abcd::9").await, 429, "same /64");
    assert_eq!(fail_from("2001:db8:1:3::1").await, 401, "the next /64");
}

/// A flood of addresses cannot grow the failure table past its maximum: the least recently
/// seen are forgotten (and counted), the table stays small, and the server keeps answering.
#[tokio::test]
async fn the_failure_table_is_capped_and_forgets_the_oldest_addresses() {
    let server = TestServer::start_with(Options::settings(|s| {
        s.access.auth_failures_per_min = 1;
        s.access.max_throttled_addresses = 16;
        s.access.client_ip_header = Some(http::HeaderName::from_static("x-forwarded-for"));
    }))
    .await;
    let fail_from = |address: String| {
        let server = &server;
        async move {
            server
                .get_with(
                    "/v1/companies",
                    &[("x-api-key", "vmk_guess"), ("x-forwarded-for", &address)],
                )
                .await
                .status
        }
    };
    let first = "198.51.100.1".to_string();
    assert_eq!(fail_from(first.clone()).await, 401);
    assert_eq!(fail_from(first.clone()).await, 429);
    for i in 0..200 {
        assert_eq!(fail_from(format!("203.0.113.{i}")).await, 401);
    }
    let metrics = String::from_utf8(server.get("/metrics", None).await.body.to_vec()).unwrap();
    let buckets = metric(&metrics, "marks_rate_limit_buckets").unwrap();
    assert!(buckets <= 16.0, "{buckets} buckets held");
    let dropped = metric(&metrics, "marks_auth_throttle_dropped_total").unwrap();
    assert!(dropped >= 185.0, "{dropped} dropped");
    // The first address was the least recently seen: forgotten, it may fail once more.
    assert_eq!(fail_from(first).await, 401);
}

#[tokio::test]
async fn every_key_on_one_connection_is_checked_on_its_own() {
    let server = TestServer::start().await;
    let mut client = Client::connect(server.addr).await;
    let mut tier_of = async |key: &str| {
        let reply = client.send(Method::GET, "/v1/usage", &[("x-api-key", key)]).await;
        (reply.status, reply.json()["tier"].as_str().map(str::to_owned))
    };
    assert_eq!(tier_of(ENTERPRISE).await, (200, Some("enterprise".into())));
    assert_eq!(tier_of(PRO).await, (200, Some("pro".into())));
    // One character off the key accepted just before, and the same length.
    let mut near = ENTERPRISE.to_string();
    let last = near.pop().map_or('x', |c| if c == 'x' { 'y' } else { 'x' });
    near.push(last);
    assert_eq!(tier_of(&near).await.0, 401);
    assert_eq!(tier_of(REVOKED).await.0, 401);
    assert_eq!(tier_of(ENTERPRISE).await, (200, Some("enterprise".into())));
}

#[tokio::test]
async fn revocation_and_new_keys_apply_on_reload_without_failing_requests() {
    let server = TestServer::start().await;
    let addr = server.addr;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    // A client keeps calling with a key that stays valid throughout, paced so that it stays
    // inside the key's budget however fast the machine answers: at most 500 requests a second
    // for the few seconds this test runs, against 6000 a minute plus 100 a second of refill.
    let loop_task = tokio::spawn(async move {
        let mut client = Client::connect(addr).await;
        let mut count = 0;
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            let reply = client
                .send(Method::GET, "/v1/companies/openai", &[("x-api-key", ENTERPRISE)])
                .await;
            assert_eq!(reply.status, 200, "request {count} failed during a keys reload");
            count += 1;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        count
    });
    assert_eq!(server.get("/v1/usage", Some(PRO)).await.status, 200);
    // A connection remembers the key it last accepted; a reload must make it forget.
    let mut kept_alive = Client::connect(addr).await;
    assert_eq!(
        kept_alive
            .send(Method::GET, "/v1/usage", &[("x-api-key", PRO)])
            .await
            .status,
        200
    );
    let (_, new_key) = marks::keys::edit::issue(
        &server.keys_path,
        marks_format::rules::tiers::Tier::Business,
        "acme",
        None,
    )
    .unwrap();
    marks::keys::edit::set_status(&server.keys_path, "demo-pro", marks::keys::file::KeyStatus::Revoked).unwrap();
    let mut applied = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        if server.get("/v1/usage", Some(PRO)).await.status == 401 {
            applied = true;
            break;
        }
    }
    assert!(applied, "revocation never applied");
    kept_alive
        .send(Method::GET, "/v1/usage", &[("x-api-key", PRO)])
        .await
        .assert_problem(401, "invalid_api_key");
    let reply = server.get("/v1/usage", Some(&new_key)).await;
    assert_eq!((reply.status, reply.json()["tier"].as_str()), (200, Some("business")));
    // A suspended key is as invalid as a revoked one.
    marks::keys::edit::set_status(
        &server.keys_path,
        "demo-business",
        marks::keys::file::KeyStatus::Suspended,
    )
    .unwrap();
    let mut suspended = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        let reply = server.get("/v1/usage", Some(BUSINESS)).await;
        if reply.status == 401 {
            reply.assert_problem(401, "invalid_api_key");
            suspended = true;
            break;
        }
    }
    assert!(suspended, "suspension never applied");
    // A keys file that vanishes (a typo in a deploy script, a move) or is malformed is refused,
    // and the keys in force stay.
    let remove: fn(&std::path::Path) = |path| std::fs::remove_file(path).unwrap();
    let garble: fn(&std::path::Path) = |path| std::fs::write(path, "this is not toml [").unwrap();
    for (damage, reason) in [(remove, "no such file"), (garble, "line 1")] {
        damage(&server.keys_path);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(server.get("/v1/usage", Some(&new_key)).await.status, 200);
        let ready = server.get("/readyz", None).await.json();
        let refusal = ready["last_keys_refusal"]["reason"].as_str().unwrap();
        // Named by its role: /readyz is for anyone, so it never says where files live.
        assert!(refusal.contains("the keys file") && refusal.contains(reason), "{ready}");
        assert_eq!(ready["last_keys_refusal"]["file"], "the keys file");
        let keys_dir = server.keys_path.parent().unwrap().display().to_string();
        assert!(!ready.to_string().contains(&keys_dir), "{ready}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let requests = loop_task.await.unwrap();
    assert!(requests > 10, "the loop ran ({requests} requests)");
}

#[tokio::test]
async fn a_key_with_its_own_budget_reports_it() {
    let server = TestServer::start().await;
    let (_, key) = marks::keys::edit::issue(
        &server.keys_path,
        marks_format::rules::tiers::Tier::Pro,
        "loadtest",
        Some(90_000),
    )
    .unwrap();
    server.state.keys.load(&server.keys_path).unwrap();
    let reply = server.get("/v1/usage", Some(&key)).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["rate_per_min"], 90_000);
    assert_eq!(reply.header_u64("x-ratelimit-limit"), 90_000);
}

#[tokio::test]
async fn keys_never_appear_in_responses() {
    let server = TestServer::start().await;
    for (path, key) in [
        ("/v1/companies", ENTERPRISE),
        ("/v1/usage", ENTERPRISE),
        ("/v1/companies/nope", ENTERPRISE),
        ("/v1/companies", "vmk_wrong_key"),
        ("/v1/companies?sort=bad", ENTERPRISE),
    ] {
        let reply = server.get(path, Some(key)).await;
        let text = format!("{:?}{}", reply.headers, String::from_utf8_lossy(&reply.body));
        assert!(!text.contains(key), "{path} echoed the key");
    }
}
