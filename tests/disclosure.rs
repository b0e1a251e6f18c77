//! What a key may read (SPEC section 5, docs/design.md sections 4 and 4a), held over the whole
//! sample and every route: no route, keyed or not, hands a tier an event's valuation, source or
//! note of a company whose events it may not read.
//!
//! Below Pro, a tier reads of a company's events only what its items carry: its last anchor (the
//! event that sets the mark) and its outcome, as values without source or note, and only for the
//! companies in its universe (the free tier's ten). Without a key, no event value at all. Pro and
//! above read every record, corrected and withdrawn ones included. The allowed sets are worked
//! out here from the source CSV's effective view, not from the server.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::util::*;

/// Who is asking: a demo key, or nobody.
#[derive(Clone, Copy, Debug)]
enum Reader {
    Keyless,
    Key(&'static str),
}

/// One record of the source CSV.
#[derive(Debug)]
struct Event {
    id: String,
    source: String,
    note: String,
}

/// Every record of the history, corrected and withdrawn ones included: their sources and notes
/// are as private as any.
fn events() -> Vec<Event> {
    sample_records("events.csv")
        .into_iter()
        .map(|r| Event {
            id: r["event_id"].clone(),
            source: r["source_url"].clone(),
            note: r["note"].clone(),
        })
        .collect()
}

/// The events a company's items may carry below Pro, from its effective history read as
/// docs/design.md sections 2 and 4a say: the anchor its last mark starts from (for a company
/// whose private period ended, the last one before the outcome's day), and its outcome (the
/// listing, closed sale or failure that ended it, or a sale agreed and pending).
fn item_events() -> BTreeMap<String, BTreeSet<String>> {
    sample_histories()
        .into_iter()
        .map(|(slug, history)| {
            let ids = history
                .mark_anchor()
                .into_iter()
                .chain(history.outcome.as_ref().map(|(_, record)| record))
                .map(|record| record["event_id"].clone())
                .collect();
            (slug, ids)
        })
        .collect()
}

/// Every body a reader gets from every route over the whole sample, with its path.
async fn crawl(server: &TestServer, reader: Reader, slugs: &[String]) -> Vec<(String, Vec<u8>)> {
    let key = match reader {
        Reader::Keyless => None,
        Reader::Key(key) => Some(key),
    };
    let mut paths: Vec<String> = [
        "/",
        "/scorecard",
        "/explore",
        "/docs",
        "/v1/scorecard",
        "/v1/scorecard/targets",
        "/v1/signing-keys",
        "/v1/openapi.json",
        "/v1/usage",
        "/v1/export",
        "/v1/export/series?coverage=80",
        "/v1/export/series?coverage=95",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    paths.push(format!("/v1/changes?since={}", sample_version()));
    for slug in slugs {
        for tail in [
            "",
            "/marks",
            "/marks?coverage=95",
            "/events",
            "/resolution",
            "/backtest",
        ] {
            paths.push(format!("/v1/companies/{slug}{tail}"));
        }
        paths.push(format!("/explore/{slug}"));
    }
    let mut bodies = Vec::new();
    for path in paths {
        let reply = server.get(&path, key).await;
        assert_ne!(reply.status, 429, "{reader:?} ran out of budget at {path}");
        if reply.status == 200 {
            bodies.push((path, reply.body.to_vec()));
        }
    }
    // Every page of the list, in the largest pages there are.
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => "/v1/companies?limit=200".to_string(),
            Some(c) => format!("/v1/companies?limit=200&cursor={c}"),
        };
        let reply = server.get(&path, key).await;
        if reply.status != 200 {
            break;
        }
        let page = reply.json();
        bodies.push((path, reply.body.to_vec()));
        match page["page"]["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    bodies
}

/// Every JSON object in a body (NDJSON too) that carries an event's valuation, as the event id
/// it names, or `None` when it names none.
fn event_values(body: &[u8]) -> Vec<Option<String>> {
    fn walk(value: &Value, found: &mut Vec<Option<String>>) {
        match value {
            Value::Object(map) => {
                let event_id = map.get("event_id").and_then(Value::as_str).map(str::to_string);
                let carries_value = ["valuation_usd", "observed_usd", "listing_value_usd"]
                    .iter()
                    .any(|field| map.contains_key(*field))
                    || (event_id.is_some() && map.contains_key("value_usd"));
                if carries_value {
                    found.push(event_id);
                }
                map.values().for_each(|v| walk(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    let documents: Vec<Value> = match serde_json::from_slice(body) {
        Ok(value) => vec![value],
        Err(_) => body
            .split(|&b| b == b'\n')
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect(),
    };
    documents.iter().for_each(|d| walk(d, &mut found));
    found
}

/// The free tier's universe: the ten companies its list shows.
async fn free_universe(server: &TestServer) -> BTreeSet<String> {
    let list = server.get("/v1/companies?limit=200", Some(FREE)).await.json();
    list["companies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn no_route_gives_a_tier_the_events_of_a_company_it_may_not_read() {
    let server = TestServer::start_with(Options {
        keys_toml: Some(demo_keys_with_rate(1_000_000)),
        ..Options::default()
    })
    .await;
    let events = events();
    let items = item_events();
    let slugs: Vec<String> = items.keys().cloned().collect();
    let free = free_universe(&server).await;
    assert_eq!(free.len(), 10);
    let readers = [
        Reader::Keyless,
        Reader::Key(FREE),
        Reader::Key(RESEARCH),
        Reader::Key(PRO),
        Reader::Key(BUSINESS),
        Reader::Key(ENTERPRISE),
    ];
    for reader in readers {
        let bodies = crawl(&server, reader, &slugs).await;
        assert!(bodies.len() > 20, "{reader:?} read only {} bodies", bodies.len());
        // What this reader may see of each company's events, by event id.
        let allowed: BTreeSet<&str> = match reader {
            Reader::Keyless => BTreeSet::new(),
            Reader::Key(FREE) => free.iter().flat_map(|s| &items[s]).map(String::as_str).collect(),
            Reader::Key(RESEARCH) => items.values().flatten().map(String::as_str).collect(),
            Reader::Key(_) => events.iter().map(|e| e.id.as_str()).collect(),
        };
        let every_event = allowed.len() == events.len();
        let (mut values_seen, mut texts_checked) = (0, 0);
        for (path, body) in &bodies {
            // The interface description names the fields, with no company's values.
            let described = path == "/v1/openapi.json";
            for named in event_values(body).into_iter().filter(|_| !described) {
                values_seen += 1;
                match named {
                    Some(id) => assert!(
                        allowed.contains(id.as_str()),
                        "{reader:?} read the value of event {id} at {path}"
                    ),
                    None => assert!(every_event, "{reader:?} read an unnamed event value at {path}"),
                }
            }
            if every_event {
                continue;
            }
            // Below Pro, no source link and no note of any record, anywhere.
            let text = String::from_utf8_lossy(body);
            for event in events.iter().filter(|e| !e.source.is_empty()) {
                assert!(
                    !text.contains(&event.source),
                    "{reader:?} read the source of {} at {path}",
                    event.id
                );
                if event.note.len() >= 24 {
                    texts_checked += 1;
                    assert!(
                        !text.contains(&event.note),
                        "{reader:?} read the note of {} at {path}",
                        event.id
                    );
                }
            }
        }
        match reader {
            Reader::Keyless => assert_eq!(values_seen, 0),
            _ => assert!(values_seen > 0, "{reader:?} saw no event value at all"),
        }
        if !every_event {
            assert!(texts_checked > 0);
        }
    }
}

/// The scorecard's two forms: without a key and below Pro, relative quantities only; Pro and
/// above, every field, with the same figures.
#[tokio::test]
async fn the_scorecard_names_companies_and_dollars_only_for_pro_and_above() {
    let server = TestServer::start().await;
    let keyless = server.get("/v1/scorecard/targets", None).await;
    assert_eq!(keyless.header("vary"), Some("X-API-Key, Accept-Encoding"));
    let keyless = keyless.json();
    for key in [FREE, RESEARCH] {
        let reply = server.get("/v1/scorecard/targets", Some(key)).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("cache-control"), Some("private, no-cache"));
        assert!(
            reply.header("x-ratelimit-remaining").is_some(),
            "a keyed call is metered"
        );
        assert_eq!(reply.json()["targets"], keyless["targets"], "{key}");
    }
    for key in [PRO, BUSINESS, ENTERPRISE] {
        let full = server.get("/v1/scorecard/targets", Some(key)).await.json();
        let targets = full["targets"].as_array().unwrap();
        assert_eq!(targets.len(), keyless["targets"].as_array().unwrap().len());
        assert!(targets
            .iter()
            .all(|t| t["slug"].is_string() && t["observed_usd"].is_u64()));
        let month_ends = full["month_ends"].as_array().unwrap();
        assert_eq!(month_ends.len(), keyless["month_ends"].as_array().unwrap().len());
        assert!(month_ends
            .iter()
            .all(|m| m["slug"].is_string() && m["next_log"].is_f64()));
    }
    // Without a key, relative quantities only: no company, no event, no dollar, no log value.
    for row in keyless["targets"]
        .as_array()
        .unwrap()
        .iter()
        .chain(keyless["month_ends"].as_array().unwrap())
    {
        let fields: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
        for private in [
            "slug",
            "event_id",
            "anchor_event_id",
            "observed_usd",
            "mark_usd",
            "observed_log",
            "mark_log",
            "next_log",
        ] {
            assert!(!fields.contains(&private), "{private} in a public row: {row}");
        }
    }
    // The scorecard's figures are aggregates: the same either way.
    let public = server.get("/v1/scorecard", None).await.json();
    let full = server.get("/v1/scorecard", Some(PRO)).await.json();
    for field in ["event_day", "month_end", "comparisons", "latest_private", "findings"] {
        assert_eq!(public[field], full[field], "{field}");
    }
    server
        .get("/v1/scorecard", Some("vmk_not_a_key"))
        .await
        .assert_problem(401, "invalid_api_key");
}
