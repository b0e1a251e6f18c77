//! The private-market indices over real HTTP: a hand-made dataset whose index is worked out
//! here from the published marks by the rule in docs/methodology.md (value weights capped at
//! 10%, equal below ten constituents; chain-linked; constituents from their first mark until
//! their outcome; sectors of fewer than five companies counted in "other"), across entries and
//! exits by listing, agreed sale and bankruptcy; then the sample's indices, their tiers, their
//! constituents and their weights.

use std::collections::BTreeMap;

use crate::util::*;

const COMPANIES: &str = "slug,name,sector,status\n\
alpha,Alpha,fintech,ipo_completed\n\
beta,Beta,fintech,private\n\
delta,Delta,fintech,private\n\
gamma,Gamma,ai,private\n";

const EVENTS: &str = "event_id,slug,event_type,occurred_on,valuation_usd,source_url,note\n\
a1,alpha,primary_round,2024-01-01,1000000000,https://example.com/a1,\n\
a2,alpha,primary_round,2024-01-11,2000000000,https://example.com/a2,\n\
a3,alpha,ipo,2024-01-21,2500000000,https://example.com/a3,\n\
b1,beta,primary_round,2024-01-06,5000000000,https://example.com/b1,\n\
b2,beta,down_round,2024-01-26,4000000000,https://example.com/b2,\n\
d1,delta,primary_round,2024-01-03,1000000000,https://example.com/d1,\n\
d2,delta,bankruptcy,2024-02-01,0,https://example.com/d2,\n\
g1,gamma,primary_round,2024-01-16,3000000000,https://example.com/g1,\n\
g2,gamma,acquisition,2024-01-31,3500000000,https://example.com/g2,\n";

/// The day a company leaves the indices: its listing, bankruptcy or agreed sale.
fn outcomes() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("alpha", "2024-01-21"),
        ("delta", "2024-02-01"),
        ("gamma", "2024-01-31"),
    ])
}

async fn hand_made_server() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("dataset.toml"),
        "dataset_version = \"2024-02-10\"\nas_of = \"2024-02-10\"\ndata_mode = \"illustrative\"\nprovenance = \"backtest\"\ndisclaimer = \"test\"\n",
    )
    .unwrap();
    std::fs::write(source.join("companies.csv"), COMPANIES).unwrap();
    std::fs::write(source.join("events.csv"), EVENTS).unwrap();
    let snapshot = dir.path().join("indices.snap");
    build(&source, &snapshot);
    let server = TestServer::start_with(Options {
        snapshot: Some(snapshot),
        ..Options::default()
    })
    .await;
    (server, dir)
}

/// Each company's published marks by date: (mark, lower, upper) at a coverage.
async fn published(server: &TestServer, slugs: &[&str], coverage: u32) -> BTreeMap<String, BTreeMap<String, [f64; 3]>> {
    let mut marks = BTreeMap::new();
    for slug in slugs {
        let body = server
            .get(
                &format!("/v1/companies/{slug}/marks?coverage={coverage}"),
                Some(ENTERPRISE),
            )
            .await
            .json();
        let series = body["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let n = |f: &str| p[f].as_f64().unwrap();
                (
                    p["date"].as_str().unwrap().to_string(),
                    [n("mark_usd"), n("lower_usd"), n("upper_usd")],
                )
            })
            .collect();
        marks.insert(slug.to_string(), series);
    }
    marks
}

/// Weights capped at 10% (at 1/n below ten values), what a capped value gives up shared by value
/// among the others, worked out here by capping the largest until none is over.
fn capped_weights(values: &[f64]) -> Vec<f64> {
    let n = values.len();
    let cap = (1.0 / n as f64).max(0.10);
    let mut held = vec![false; n];
    loop {
        let free: f64 = (0..n).filter(|&i| !held[i]).map(|i| values[i]).sum();
        let left = 1.0 - cap * held.iter().filter(|&&h| h).count() as f64;
        let weights: Vec<f64> = (0..n)
            .map(|i| {
                if held[i] {
                    cap
                } else if free > 0.0 {
                    values[i] / free * left
                } else {
                    0.0
                }
            })
            .collect();
        match (0..n)
            .filter(|&i| !held[i] && weights[i] > cap + 1e-15)
            .max_by(|&a, &b| values[a].total_cmp(&values[b]))
        {
            Some(over) => held[over] = true,
            None => return weights,
        }
    }
}

/// The index worked out by hand: for each day with a constituent, (level, lower, upper, count).
fn by_hand(marks: &BTreeMap<String, BTreeMap<String, [f64; 3]>>, members: &[&str]) -> BTreeMap<String, [f64; 4]> {
    let outcomes = outcomes();
    let mut days: Vec<&String> = marks.values().flat_map(|s| s.keys()).collect();
    days.sort();
    days.dedup();
    let member_on = |slug: &str, day: &str| -> Option<[f64; 3]> {
        if outcomes.get(slug).is_some_and(|&out| day >= out) {
            return None;
        }
        marks[slug].get(day).copied()
    };
    let mut index = BTreeMap::new();
    let mut level: Option<f64> = None;
    let mut yesterday: Option<&str> = None;
    for day in days {
        let today: Vec<(&str, [f64; 3])> = members
            .iter()
            .filter_map(|s| member_on(s, day).map(|m| (*s, m)))
            .collect();
        if today.is_empty() {
            yesterday = Some(day);
            continue;
        }
        // Only the companies in on both days link one day to the next, weighted (capped) by
        // their marks of the day before.
        let mut linked: Vec<(f64, f64)> = Vec::new();
        if let Some(yesterday) = yesterday {
            for (slug, mark) in &today {
                if let Some(previous) = member_on(slug, yesterday) {
                    linked.push((previous[0], mark[0]));
                }
            }
        }
        let next = match level {
            None => 100.0,
            Some(level) if !linked.is_empty() => {
                let weights = capped_weights(&linked.iter().map(|l| l.0).collect::<Vec<_>>());
                level * weights.iter().zip(&linked).map(|(w, (b, a))| w * a / b).sum::<f64>()
            }
            Some(level) => level,
        };
        level = Some(next);
        // The bands: each constituent's edge over its mark, weighted (capped) by today's marks.
        let weights = capped_weights(&today.iter().map(|(_, m)| m[0]).collect::<Vec<_>>());
        let ratio = |i: usize| {
            weights
                .iter()
                .zip(&today)
                .map(|(w, (_, m))| w * m[i] / m[0])
                .sum::<f64>()
        };
        index.insert(
            day.clone(),
            [next, next * ratio(1), next * ratio(2), today.len() as f64],
        );
        yesterday = Some(day);
    }
    index
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 + 1e-9 * b.abs()
}

#[tokio::test]
async fn a_hand_made_index_equals_the_one_worked_out_by_hand_across_entries_and_exits() {
    let (server, _dir) = hand_made_server().await;
    for coverage in [80, 95] {
        let marks = published(&server, &["alpha", "beta", "delta", "gamma"], coverage).await;
        // Fintech (three companies) and ai (one) are too small for indices of their own: their
        // companies count in "other", which with four is too small too (a sector index holds five
        // on every day it is published).
        for id in ["fintech", "ai", "other"] {
            server
                .get(&format!("/v1/indices/{id}"), Some(ENTERPRISE))
                .await
                .assert_problem(404, "not_found");
        }
        for (id, members) in [("all", vec!["alpha", "beta", "delta", "gamma"])] {
            let expected = by_hand(&marks, &members);
            let body = server
                .get(&format!("/v1/indices/{id}?coverage={coverage}"), Some(ENTERPRISE))
                .await
                .json();
            assert_eq!(body["index"], id);
            let served: BTreeMap<String, [f64; 4]> = body["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    let n = |f: &str| p[f].as_f64().unwrap();
                    (
                        p["date"].as_str().unwrap().to_string(),
                        [n("level"), n("lower"), n("upper"), n("constituents")],
                    )
                })
                .collect();
            assert_eq!(
                served.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{id} days"
            );
            for (day, want) in &expected {
                let got = served[day];
                for i in 0..4 {
                    assert!(
                        close(got[i], want[i]),
                        "{id} {coverage} {day}: served {got:?}, by hand {want:?}"
                    );
                }
            }
            assert_eq!(served.values().next().unwrap()[0], 100.0, "{id} starts at 100");
        }
        // An entry moves nothing by itself: the day beta enters, the index moves as alpha and
        // delta do.
        let all = by_hand(&marks, &["alpha", "beta", "delta", "gamma"]);
        let without_beta = by_hand(&marks, &["alpha", "delta", "gamma"]);
        let ratio = |index: &BTreeMap<String, [f64; 4]>, a: &str, b: &str| index[b][0] / index[a][0];
        assert!(close(
            ratio(&all, "2024-01-05", "2024-01-06"),
            ratio(&without_beta, "2024-01-05", "2024-01-06")
        ));
        // An exit neither: the day alpha lists, and the day delta's bankruptcy writes it off.
        for (slug, outcome) in [("alpha", "2024-01-21"), ("delta", "2024-02-01")] {
            assert!(
                !marks[slug].contains_key(outcome),
                "the series of {slug} ends the day before its outcome"
            );
        }
        let beta_alone = marks["beta"]["2024-02-01"][0] / marks["beta"]["2024-01-31"][0];
        assert!(
            close(ratio(&all, "2024-01-31", "2024-02-01"), beta_alone),
            "the write-off is not a loss of the index"
        );
    }
}

#[tokio::test]
async fn constituents_of_a_day_are_its_companies_with_their_weights() {
    let (server, _dir) = hand_made_server().await;
    let marks = published(&server, &["alpha", "beta", "delta", "gamma"], 80).await;
    for (day, expected) in [
        ("2024-01-01", vec!["alpha"]),
        ("2024-01-06", vec!["beta", "alpha", "delta"]),
        ("2024-01-20", vec!["beta", "gamma", "alpha", "delta"]),
        ("2024-01-21", vec!["beta", "gamma", "delta"]),
        ("2024-02-01", vec!["beta"]),
    ] {
        let body = server
            .get(&format!("/v1/indices/all/constituents?date={day}"), Some(RESEARCH))
            .await
            .json();
        let members = body["constituents"].as_array().unwrap();
        let mut slugs: Vec<&str> = members.iter().map(|m| m["slug"].as_str().unwrap()).collect();
        let mut want = expected.clone();
        slugs.sort();
        want.sort();
        assert_eq!(slugs, want, "{day}");
        let values: Vec<f64> = expected.iter().map(|s| marks[*s][day][0]).collect();
        let total: f64 = values.iter().sum();
        let weights = capped_weights(&values);
        for member in members {
            let slug = member["slug"].as_str().unwrap();
            let mark = marks[slug][day][0];
            assert_eq!(member["mark_usd"].as_f64().unwrap(), mark);
            let at = expected.iter().position(|s| *s == slug).unwrap();
            assert!(
                (member["weight"].as_f64().unwrap() - weights[at]).abs() < 1e-6,
                "{day} {slug}"
            );
            assert!((member["value_weight"].as_f64().unwrap() - mark / total).abs() < 1e-6);
        }
        let series = server
            .get(&format!("/v1/indices/all?from={day}&to={day}"), Some(RESEARCH))
            .await
            .json();
        assert_eq!(body["level"], series["series"][0]["level"]);
    }
    let latest = server.get("/v1/indices/all/constituents", Some(RESEARCH)).await.json();
    assert_eq!(latest["date"], "2024-02-10");
    server
        .get("/v1/indices/all/constituents?date=2023-12-31", Some(RESEARCH))
        .await
        .assert_problem(422, "invalid_parameter");
    server
        .get("/v1/indices/all/constituents?date=soon", Some(RESEARCH))
        .await
        .assert_problem(422, "invalid_parameter");
}

#[tokio::test]
async fn the_sample_indices_are_research_and_above_with_95_for_pro() {
    let server = TestServer::start_with(Options {
        keys_toml: Some(demo_keys_with_rate(100_000)),
        ..Options::default()
    })
    .await;
    let list = server.get("/v1/indices", Some(RESEARCH)).await.json();
    let indices = list["indices"].as_array().unwrap();
    // A sector with five constituents or more on the latest day (its companies without an
    // outcome) has its index; the smaller ones count in "other".
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for row in sample_csv("companies.csv") {
        counts.entry(row[2].clone()).or_default();
    }
    for (sector, count) in counts.iter_mut() {
        let page = server
            .get(
                &format!("/v1/companies?sector={sector}&outcome=none&limit=200"),
                Some(RESEARCH),
            )
            .await
            .json();
        *count = page["companies"].as_array().unwrap().len();
    }
    let small = counts.iter().any(|(sector, &n)| n < 5 && sector != "other");
    let mut expected: Vec<&str> = counts
        .iter()
        .filter(|(sector, &n)| n >= 5 || sector.as_str() == "other")
        .map(|(sector, _)| sector.as_str())
        .collect();
    if small && !expected.contains(&"other") {
        expected.push("other");
        expected.sort();
    }
    expected.insert(0, "all");
    let ids: Vec<&str> = indices.iter().map(|i| i["index"].as_str().unwrap()).collect();
    assert_eq!(ids, expected);
    // "All companies" on its last day: no weight above 10%, though the largest company's share
    // of the value is well above it.
    let all = server.get("/v1/indices/all/constituents", Some(RESEARCH)).await.json();
    let members = all["constituents"].as_array().unwrap();
    let weight = |m: &serde_json::Value, f: &str| m[f].as_f64().unwrap();
    assert!(members.len() >= 10);
    assert!(members.iter().all(|m| weight(m, "weight") <= 0.1 + 1e-6), "{all}");
    let total: f64 = members.iter().map(|m| weight(m, "weight")).sum();
    assert!((total - 1.0).abs() < 1e-4, "weights sum to {total}");
    assert!(weight(&members[0], "value_weight") > 0.1, "{}", members[0]);
    for entry in indices {
        let id = entry["index"].as_str().unwrap();
        let series = server.get(&format!("/v1/indices/{id}"), Some(RESEARCH)).await.json();
        let points = series["series"].as_array().unwrap();
        assert_eq!(points[0]["level"], 100.0);
        assert_eq!(points.last().unwrap()["level"], entry["latest"]["level"]);
        for point in points.iter().filter(|_| id != "all") {
            let constituents = point["constituents"].as_u64().unwrap();
            assert!(constituents >= 5, "{id} holds {constituents} on {}", point["date"]);
        }
        for point in points {
            let (l, m, u) = (
                point["lower"].as_f64().unwrap(),
                point["level"].as_f64().unwrap(),
                point["upper"].as_f64().unwrap(),
            );
            // The bands are for the next reported value, which runs above today's value: early in
            // the history, with few month-end errors known, the 80% band can sit above the level.
            assert!(l <= u && m > 0.0, "{id} {point}");
        }
        for (path, status) in [
            (format!("/v1/indices/{id}"), 403),
            (format!("/v1/indices/{id}/constituents"), 403),
        ] {
            server
                .get(&path, Some(FREE))
                .await
                .assert_problem(status, "tier_forbidden");
        }
        server
            .get(&format!("/v1/indices/{id}?coverage=95"), Some(RESEARCH))
            .await
            .assert_problem(403, "tier_forbidden");
        assert_eq!(
            server
                .get(&format!("/v1/indices/{id}?coverage=95"), Some(PRO))
                .await
                .status,
            200
        );
        // As CSV, equal row for row.
        let csv = server
            .get_with(
                &format!("/v1/indices/{id}"),
                &[("x-api-key", RESEARCH), ("accept", "text/csv")],
            )
            .await;
        let mut reader = csv::Reader::from_reader(&csv.body[..]);
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), points.len());
        for (row, point) in rows.iter().zip(points) {
            assert_eq!(&row[1], point["date"].as_str().unwrap());
            assert_eq!(row[2].parse::<f64>().unwrap(), point["level"].as_f64().unwrap());
        }
    }
    server
        .get("/v1/indices", Some(FREE))
        .await
        .assert_problem(403, "tier_forbidden");
    server
        .get("/v1/indices/none", Some(RESEARCH))
        .await
        .assert_problem(404, "not_found");
    let constituents = server.get("/v1/indices/all/constituents", Some(RESEARCH)).await.json();
    let weights: f64 = constituents["constituents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["weight"].as_f64().unwrap())
        .sum();
    assert!((weights - 1.0).abs() < 1e-4, "{weights}");
    assert!(constituents["level"].as_f64().unwrap() > 0.0);
}

/// An index's constituents of a past day are made as their body is polled, and hyper polls an
/// HTTP/2 body only when its stream has room: streams with a zero window, which read nothing,
/// run no pass (no constituent's series is read), though each is answered 200 or 429.
#[tokio::test]
async fn http2_streams_that_read_nothing_run_no_constituents_pass() {
    let server = TestServer::start_with(Options::settings(|s| s.listen.http2 = true)).await;
    let misses = |server: &TestServer| {
        let addr = server.addr;
        async move {
            let text = request(addr, http::Method::GET, "/metrics", &[]).await;
            metric(&String::from_utf8_lossy(&text.body), "marks_decoded_cache_misses_total").unwrap_or(0.0)
        }
    };
    let past = "/v1/indices/all/constituents?date=2023-12-29";
    // A pass read through the decoded texts: every constituent not kept is a miss.
    let before = misses(&server).await;
    assert_eq!(server.get(past, Some(RESEARCH)).await.status, 200);
    let one_pass = misses(&server).await - before;
    assert!(
        one_pass >= 5.0,
        "a pass reads its constituents' series ({one_pass} misses)"
    );

    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut sender, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, bytes::Bytes>(tcp)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let before = misses(&server).await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        sender = sender.ready().await.unwrap();
        let request = http::Request::builder()
            .uri(format!("http://{}{past}", server.addr))
            .header("x-api-key", PRO)
            .body(())
            .unwrap();
        let (response, _) = sender.send_request(request, true).unwrap();
        statuses.push(response.await.unwrap().status().as_u16());
    }
    assert!(statuses.contains(&200), "{statuses:?}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        misses(&server).await - before,
        0.0,
        "a stream that reads nothing ran a pass"
    );
    driver.abort();
}
