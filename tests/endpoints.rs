//! SPEC sections 2, 4 and 9: every operation's fields, through real HTTP.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::util::*;

const META_FIELDS: [&str; 6] = [
    "data_mode",
    "provenance",
    "methodology_version",
    "dataset_version",
    "as_of",
    "disclaimer",
];

fn assert_meta(body: &Value) {
    let meta = body["meta"]
        .as_object()
        .unwrap_or_else(|| panic!("no meta object in {body}"));
    let mut keys: Vec<&str> = meta.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = META_FIELDS.to_vec();
    expected.sort_unstable();
    assert_eq!(keys, expected, "meta has exactly SPEC 2.1's six fields");
    assert_eq!(meta["data_mode"], "illustrative");
    assert_eq!(meta["provenance"], "backtest");
    assert_eq!(meta["methodology_version"], "v0.4.0");
    let dataset = std::fs::read_to_string(sample_dir().join("dataset.toml")).unwrap();
    let version = meta["dataset_version"].as_str().unwrap();
    assert!(
        dataset.contains(&format!("dataset_version = \"{version}\"")),
        "{version}"
    );
    assert!(!meta["disclaimer"].as_str().unwrap().is_empty());
}

fn assert_mark_point(mark: &Value) {
    let value = mark["value_usd"].as_f64().unwrap();
    let (lower, upper) = (mark["lower_usd"].as_f64().unwrap(), mark["upper_usd"].as_f64().unwrap());
    let confidence = mark["confidence"].as_f64().unwrap();
    // A reported terminal value (a bankruptcy) is known: mark and both bands equal to it.
    let reported = lower == value && value == upper && confidence == 1.0;
    assert!(
        reported || (lower < value && value < upper),
        "interval must surround the mark: {mark}"
    );
    assert!((0.0..=1.0).contains(&confidence), "{mark}");
    assert!(mark["as_of_date"].as_str().unwrap().len() == 10);
}

/// Companies of the sample, by slug: (name, sector, status), from companies.csv.
fn sample_companies() -> BTreeMap<String, (String, String, String)> {
    sample_csv("companies.csv")
        .into_iter()
        .map(|r| (r[0].clone(), (r[1].clone(), r[2].clone(), r[3].clone())))
        .collect()
}

#[tokio::test]
async fn list_companies_has_meta_companies_and_page() {
    let server = TestServer::start().await;
    let reply = server.get("/v1/companies", Some(RESEARCH)).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let body = reply.json();
    assert_meta(&body);
    let companies = body["companies"].as_array().unwrap();
    let expected = sample_companies();
    assert_eq!(companies.len(), expected.len().min(50));
    for item in companies {
        let slug = item["slug"].as_str().unwrap();
        let (name, sector, status) = &expected[slug];
        assert_eq!(
            (&item["name"], &item["sector"], &item["status"]),
            (
                &Value::from(name.as_str()),
                &Value::from(sector.as_str()),
                &Value::from(status.as_str())
            )
        );
        assert_mark_point(&item["latest_mark"]);
        assert!(item["delta_30d_pct"].is_number() || item["delta_30d_pct"].is_null());
    }
    assert_eq!(body["page"]["limit"], 50);
    let more = expected.len() > 50;
    assert_eq!(body["page"]["has_more"], more);
    assert_eq!(body["page"]["next_cursor"].is_string(), more);
    assert!(
        body.get("universe_note").is_none(),
        "only the free tier's list carries a universe note"
    );
}

#[tokio::test]
async fn get_company_returns_the_profile_with_observations() {
    let server = TestServer::start().await;
    let reply = server.get("/v1/companies/stripe", Some(RESEARCH)).await;
    assert_eq!(reply.status, 200);
    let body = reply.json();
    assert_meta(&body);
    assert_eq!(
        (body["slug"].as_str(), body["name"].as_str(), body["sector"].as_str()),
        (Some("stripe"), Some("Stripe"), Some("fintech"))
    );
    assert_mark_point(&body["latest_mark"]);
    // The observations are what the latest mark rests on (docs/design.md section 4a): the
    // company's last event before as_of, which carries all of the mark, and the drift since.
    let last = sample_csv("events.csv")
        .into_iter()
        .filter(|r| r[1] == "stripe" && !matches!(r[2].as_str(), "ipo" | "direct_listing" | "bankruptcy"))
        .max_by(|a, b| a[3].cmp(&b[3]).then(a[0].cmp(&b[0])))
        .unwrap();
    let observations = body["observations"].as_array().unwrap();
    assert_eq!(observations.len(), 2, "{observations:?}");
    let (event, drift) = (&observations[0], &observations[1]);
    assert_eq!(event["part"], "event");
    assert_eq!(event["event_id"], last[0].as_str());
    assert_eq!(event["valuation_usd"].as_u64().unwrap().to_string(), last[4]);
    assert_eq!(event["weight"], 1.0);
    assert!(
        event.get("source_url").is_none() && event.get("note").is_none(),
        "sources are getMarkEvents's"
    );
    assert_eq!(drift["part"], "drift");
    let as_of = body["meta"]["as_of"].as_str().unwrap();
    assert_eq!(drift["days"].as_i64().unwrap(), days_between(&last[3], as_of));
    // The drift's part is the mark over the event's value.
    let mark = body["latest_mark"]["value_usd"].as_f64().unwrap();
    let value: f64 = last[4].parse().unwrap();
    let drift_pct = drift["drift_pct"].as_f64().unwrap();
    assert!((drift_pct - (mark / value - 1.0) * 100.0).abs() < 0.01, "{drift_pct}");
    assert!(drift["explanation"]
        .as_str()
        .unwrap()
        .contains(&format!("{drift_pct}%")));
}

/// Days from one `YYYY-MM-DD` to another.
fn days_between(from: &str, to: &str) -> i64 {
    let day = |s: &str| marks_format::day::Day::parse(s).unwrap();
    i64::from(day(to).days_since(day(from)))
}

#[tokio::test]
async fn mark_series_defaults_to_80_and_95_is_wider() {
    let server = TestServer::start().await;
    let default = server.get("/v1/companies/openai/marks", Some(PRO)).await.json();
    let explicit = server
        .get("/v1/companies/openai/marks?coverage=80", Some(PRO))
        .await
        .json();
    let wide = server
        .get("/v1/companies/openai/marks?coverage=95", Some(PRO))
        .await
        .json();
    assert_meta(&default);
    assert_eq!(default, explicit);
    assert_eq!(
        (default["coverage"].as_u64(), wide["coverage"].as_u64()),
        (Some(80), Some(95))
    );
    assert_eq!(default["slug"], "openai");
    let (s80, s95) = (
        default["series"].as_array().unwrap(),
        wide["series"].as_array().unwrap(),
    );
    assert_eq!(s80.len(), s95.len());
    // One point per day from the first event to as_of.
    let first_event = sample_csv("events.csv")
        .into_iter()
        .filter(|r| r[1] == "openai")
        .map(|r| r[3].clone())
        .min()
        .unwrap();
    assert_eq!(s80[0]["date"].as_str().unwrap(), first_event);
    assert_eq!(s80.last().unwrap()["date"], default["meta"]["as_of"]);
    let day = |p: &Value| {
        time::Date::parse(
            p["date"].as_str().unwrap(),
            time::macros::format_description!("[year]-[month]-[day]"),
        )
        .unwrap()
    };
    for pair in s80.windows(2) {
        assert_eq!(day(&pair[1]) - day(&pair[0]), time::Duration::days(1));
    }
    for (p80, p95) in s80.iter().zip(s95) {
        assert_eq!(p80["mark_usd"], p95["mark_usd"]);
        let mark = p80["mark_usd"].as_f64().unwrap();
        let (l80, u80) = (p80["lower_usd"].as_f64().unwrap(), p80["upper_usd"].as_f64().unwrap());
        let (l95, u95) = (p95["lower_usd"].as_f64().unwrap(), p95["upper_usd"].as_f64().unwrap());
        assert!(l95 <= l80 && l80 < mark && mark < u80 && u80 <= u95, "{p80} {p95}");
    }
    // The list's latest mark is the series' last point.
    let profile = server.get("/v1/companies/openai", Some(PRO)).await.json();
    assert_eq!(profile["latest_mark"]["value_usd"], s80.last().unwrap()["mark_usd"]);
    assert_eq!(profile["latest_mark"]["lower_usd"], s80.last().unwrap()["lower_usd"]);
}

#[tokio::test]
async fn a_listed_company_series_stops_the_day_before_its_listing() {
    let server = TestServer::start().await;
    let body = server.get("/v1/companies/arm/marks", Some(PRO)).await.json();
    let series = body["series"].as_array().unwrap();
    let listing = sample_csv("events.csv")
        .into_iter()
        .find(|r| r[1] == "arm" && r[2] == "ipo")
        .unwrap();
    assert_eq!(listing[3], "2023-09-14");
    assert_eq!(series.last().unwrap()["date"], "2023-09-13");
}

#[tokio::test]
async fn a_bankrupt_company_series_ends_on_its_bankruptcy_at_the_reported_value() {
    let server = TestServer::start().await;
    for coverage in [80, 95] {
        let path = format!("/v1/companies/ftx/marks?coverage={coverage}");
        let body = server.get(&path, Some(ENTERPRISE)).await.json();
        let series = body["series"].as_array().unwrap();
        let last = series.last().unwrap();
        assert_eq!(last["date"], "2022-11-11");
        assert_eq!(
            (
                last["mark_usd"].as_u64(),
                last["lower_usd"].as_u64(),
                last["upper_usd"].as_u64()
            ),
            (Some(0), Some(0), Some(0))
        );
        assert!(series[series.len() - 2]["mark_usd"].as_u64().unwrap() > 0);
    }
    let profile = server.get("/v1/companies/ftx", Some(PRO)).await.json();
    assert_eq!(profile["status"], "private");
    assert_eq!(profile["latest_mark"]["value_usd"], 0);
    assert_eq!(profile["latest_mark"]["upper_usd"], 0);
    assert_eq!(profile["latest_mark"]["as_of_date"], "2022-11-11");
    let record = server
        .get("/v1/companies/ftx/resolution", Some(ENTERPRISE))
        .await
        .json();
    assert_eq!(
        (record["basis"].as_str(), record["value_usd"].as_u64()),
        (Some("bankruptcy"), Some(0))
    );
    assert_eq!(record["methodology_version"], "v0.4.0");
}

#[tokio::test]
async fn mark_events_are_the_whole_append_only_history() {
    let server = TestServer::start().await;
    let reply = server.get("/v1/companies/klarna/events", Some(PRO)).await;
    assert_eq!(reply.status, 200);
    let body = reply.json();
    assert_meta(&body);
    assert_eq!(body["slug"], "klarna");
    let mut expected: Vec<Vec<String>> = sample_csv("events.csv")
        .into_iter()
        .filter(|r| r[1] == "klarna")
        .collect();
    expected.sort_by(|a, b| a[3].cmp(&b[3]));
    let events = body["events"].as_array().unwrap();
    assert_eq!(events.len(), expected.len());
    for (event, row) in events.iter().zip(&expected) {
        assert_eq!(event["event_id"], row[0].as_str());
        assert_eq!(event["event_type"], row[2].as_str());
        assert_eq!(event["occurred_on"], row[3].as_str());
        assert_eq!(event["valuation_usd"].as_u64().unwrap().to_string(), row[4]);
        assert_eq!(event["source_url"], row[5].as_str());
        assert_eq!(event["note"], row[6].as_str());
    }
}

#[tokio::test]
async fn resolution_record_is_signed_over_its_canonical_json() {
    use base64::Engine;
    use ed25519_dalek::Verifier;
    let server = TestServer::start().await;
    let jwks = server.get("/v1/signing-keys", None).await;
    assert_eq!(jwks.status, 200);
    let jwks = jwks.json();
    let key = &jwks["keys"][0];
    assert_eq!(
        (key["kty"].as_str(), key["crv"].as_str()),
        (Some("OKP"), Some("Ed25519"))
    );
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let x: [u8; 32] = b64.decode(key["x"].as_str().unwrap()).unwrap().try_into().unwrap();
    let public = ed25519_dalek::VerifyingKey::from_bytes(&x).unwrap();
    // kid is the RFC 7638 thumbprint, recomputed here.
    let thumbprint = format!(
        r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#,
        key["x"].as_str().unwrap()
    );
    use sha2::Digest;
    assert_eq!(
        key["kid"].as_str().unwrap(),
        b64.encode(sha2::Sha256::digest(thumbprint.as_bytes()))
    );

    for slug in ["openai", "airbnb"] {
        let reply = server
            .get(&format!("/v1/companies/{slug}/resolution"), Some(ENTERPRISE))
            .await;
        assert_eq!(reply.status, 200);
        let mut record = reply.json();
        assert_meta(&record);
        assert_eq!(record["slug"], slug);
        assert_eq!(record["key_id"], key["kid"]);
        for field in ["record_id", "dataset_version", "methodology_version", "as_of"] {
            assert!(record[field].is_string(), "{field} in {record}");
        }
        let value = record["value_usd"].as_u64().expect("whole dollars");
        for band in ["band_80", "band_95"] {
            let (lower, upper) = (
                record[band]["lower"].as_u64().unwrap(),
                record[band]["upper"].as_u64().unwrap(),
            );
            assert!(lower < upper, "{band}");
            if slug == "openai" {
                assert!(lower < value && value < upper);
            }
        }
        let signature = record.as_object_mut().unwrap().remove("signature").unwrap();
        let signature: [u8; 64] = b64.decode(signature.as_str().unwrap()).unwrap().try_into().unwrap();
        let message = serde_jcs::to_vec(&record).unwrap();
        public
            .verify(&message, &ed25519_dalek::Signature::from_bytes(&signature))
            .expect("signature verifies against the published key");
        record["value_usd"] = Value::from(value + 1);
        let tampered = serde_jcs::to_vec(&record).unwrap();
        assert!(public
            .verify(&tampered, &ed25519_dalek::Signature::from_bytes(&signature))
            .is_err());
    }
    // A listed company resolves to its listing value.
    let airbnb = server
        .get("/v1/companies/airbnb/resolution", Some(ENTERPRISE))
        .await
        .json();
    assert_eq!(airbnb["value_usd"], 47_000_000_000u64);
}

#[tokio::test]
async fn usage_reports_tier_budget_limits_and_scopes() {
    let server = TestServer::start().await;
    // SPEC 4: getUsage needs Research. A free key is told so, and learns its budget from the
    // rate-limit headers every answer carries, this 403 included.
    let free = server.get("/v1/usage", Some(FREE)).await;
    let body = free.assert_problem(403, "tier_forbidden");
    assert!(
        body["detail"].as_str().unwrap().contains("research tier or above"),
        "{body}"
    );
    assert_eq!(free.header_u64("x-ratelimit-limit"), 10);
    assert_eq!(free.header("ratelimit-policy"), Some("\"minute\";q=10;w=60"));
    let cases = [
        (
            RESEARCH,
            "research",
            60,
            vec!["companies:list", "companies:read", "marks:80", "usage:read"],
            "all",
        ),
        (
            PRO,
            "pro",
            600,
            vec![
                "companies:list",
                "companies:read",
                "marks:80",
                "marks:95",
                "events:read",
                "usage:read",
                "changes:read",
            ],
            "all",
        ),
        (
            BUSINESS,
            "business",
            3000,
            vec![
                "companies:list",
                "companies:read",
                "marks:80",
                "marks:95",
                "events:read",
                "usage:read",
                "changes:read",
            ],
            "all",
        ),
        (
            ENTERPRISE,
            "enterprise",
            6000,
            vec![
                "companies:list",
                "companies:read",
                "marks:80",
                "marks:95",
                "events:read",
                "resolution:read",
                "usage:read",
                "changes:read",
                "export:read",
            ],
            "all",
        ),
    ];
    for (key, tier, rate, scopes, universe) in cases {
        let reply = server.get("/v1/usage", Some(key)).await;
        assert_eq!(reply.status, 200, "{tier}");
        let body = reply.json();
        assert_eq!(body["tier"], tier);
        assert_eq!(body["rate_per_min"], rate);
        assert_eq!(body["limits"]["requests_per_minute"], rate);
        assert_eq!(body["limits"]["page_size_default"], 50);
        assert_eq!(body["limits"]["page_size_max"], 200);
        assert_eq!(body["limits"]["universe"], universe);
        assert_eq!(body["scopes"], serde_json::json!(scopes));
        assert_eq!(reply.header_u64("x-ratelimit-limit"), rate as u64);
    }
}

#[tokio::test]
async fn public_documents_need_no_key() {
    let server = TestServer::start().await;
    let scorecard = server.get("/v1/scorecard", None).await;
    assert_eq!(scorecard.status, 200);
    let body = scorecard.json();
    assert_meta(&body);
    let names: Vec<&str> = body["forecasters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "adaptive_gap_profile",
            "gap_profile_drift",
            "local_linear_trend",
            "last_event_carried_forward",
            "quality_weighted_step"
        ]
    );
    assert_eq!(body["methodology_version"], "v0.4.0");
    assert_eq!(body["forecasters"][0]["methodology_version"], "v0.4.0");
    assert_eq!(body["forecasters"][1]["methodology_version"], "v0.3.0");
    assert_eq!(body["forecasters"][2]["methodology_version"], "v0.2.0");
    // The adaptive 80% level and what set it, published with the bands in force.
    let bands = &body["bands_in_force"];
    let (n, m) = (
        bands["conformal_era"].as_u64().unwrap(),
        bands["misses"].as_u64().unwrap(),
    );
    assert_eq!(
        bands["level80"].as_f64().unwrap(),
        (200.0 - n as f64 + 5.0 * m as f64) / 250.0
    );
    assert_eq!(body["params"]["level80_gamma"], 0.02);
    let bankruptcies: Vec<&str> = body["bankruptcy_outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["slug"].as_str().unwrap())
        .collect();
    let mut bankrupt_in_csv: Vec<String> = sample_csv("events.csv")
        .into_iter()
        .filter(|r| r[2] == "bankruptcy")
        .map(|r| r[1].clone())
        .collect();
    bankrupt_in_csv.sort();
    assert_eq!(bankruptcies, bankrupt_in_csv);
    let listings = sample_csv("events.csv")
        .into_iter()
        .filter(|r| r[2] == "ipo" || r[2] == "direct_listing")
        .count();
    assert_eq!(body["listing_validations"].as_array().unwrap().len(), listings);

    let openapi = server.get("/v1/openapi.json", None).await;
    assert_eq!(openapi.status, 200);
    let doc = openapi.json();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "0.2.0");
    // Unauthenticated, so cheap to serve again and again: gzip (its own tag) and 304.
    let gzip = server
        .get_with("/v1/openapi.json", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!((gzip.status, gzip.header("content-encoding")), (200, Some("gzip")));
    assert!(
        gzip.body.len() * 4 < openapi.body.len(),
        "gzip is a fraction of the text"
    );
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gzip.body[..]), &mut text).unwrap();
    assert_eq!(text, openapi.body);
    assert_ne!(gzip.header("etag"), openapi.header("etag"));
    for reply in [&openapi, &gzip] {
        let encoding = reply.header("content-encoding").unwrap_or("identity");
        let etag = reply.header("etag").unwrap();
        let again = server
            .get_with(
                "/v1/openapi.json",
                &[("accept-encoding", encoding), ("if-none-match", etag)],
            )
            .await;
        assert_eq!((again.status, again.body.len()), (304, 0), "{encoding}");
    }

    let health = server.get("/healthz", None).await;
    assert_eq!((health.status, health.json()["status"].as_str()), (200, Some("ok")));
    let ready = server.get("/readyz", None).await;
    assert_eq!(ready.status, 200);
    let ready = ready.json();
    assert_eq!(ready["dataset_version"], body["meta"]["dataset_version"]);
    assert_eq!(ready["budgets"]["mode"], "local", "{ready}");
    assert!(ready["source"].is_null(), "{ready}");
    // Every field /readyz returns is declared in the document, and every required one returned.
    let schema = &doc["components"]["schemas"]["Readiness"];
    let declared = schema["properties"].as_object().unwrap();
    for field in ready.as_object().unwrap().keys() {
        assert!(
            declared.contains_key(field),
            "/readyz returns {field}, undeclared in Readiness"
        );
    }
    for field in schema["required"].as_array().unwrap() {
        assert!(
            ready.get(field.as_str().unwrap()).is_some(),
            "/readyz lacks required {field}"
        );
    }
    assert!(server.get("/metrics", None).await.body.starts_with(b"# HELP"));
}

#[tokio::test]
async fn every_data_response_carries_meta() {
    let server = TestServer::start().await;
    for path in [
        "/v1/companies",
        "/v1/companies/spacex",
        "/v1/companies/spacex/marks",
        "/v1/companies/spacex/events",
        "/v1/companies/spacex/resolution",
        "/v1/usage",
        "/v1/scorecard",
    ] {
        let reply = server.get(path, Some(ENTERPRISE)).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_meta(&reply.json());
    }
}

fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 0 => Some((values[mid - 1] + values[mid]) / 2.0),
        _ => Some(values[mid]),
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// A figure as served: a number, or null.
fn served(value: &Value) -> Option<f64> {
    value.as_f64()
}

/// `GET /v1/scorecard/targets` publishes every scored target with each forecaster's numbers,
/// and every summary figure of `/v1/scorecard` is recomputed from those rows here: MAPE, the
/// median and mean |log error|, coverage (overall and by gap bucket), band widths, the
/// confidence's Brier score, base rate, skill and reliability table, the listings, the outcome
/// verdicts, the misses and MAPE's largest contributors.
#[tokio::test]
async fn every_scorecard_figure_is_recomputed_from_the_published_targets() {
    let server = TestServer::start().await;
    let reply = server.get("/v1/scorecard/targets", None).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("cache-control"), Some("public, max-age=60"));
    let etag = reply.header("etag").unwrap().to_string();
    let again = server
        .get_with("/v1/scorecard/targets", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status, 304);
    let body = reply.json();
    assert_meta(&body);
    assert_eq!(body["tolerance_pct"], 10.0);
    let targets = body["targets"].as_array().unwrap();
    // Without a key, relative quantities only: nothing names a company or an amount.
    for target in targets {
        for field in ["slug", "event_id", "observed_usd"] {
            assert!(target.get(field).is_none(), "{field} in {target}");
        }
        for forecast in target["forecasts"].as_array().unwrap() {
            for field in ["mark_usd", "band_80", "band_95"] {
                assert!(forecast.get(field).is_none(), "{field} in {forecast}");
            }
        }
    }
    let card = server.get("/v1/scorecard", None).await.json();
    let forecasters = card["forecasters"].as_array().unwrap();
    assert_eq!(forecasters.len(), body["forecasters"].as_array().unwrap().len());
    // Every listing and bankruptcy of the sample is an outcome target.
    let outcomes_in_csv = sample_csv("events.csv")
        .into_iter()
        .filter(|r| matches!(r[2].as_str(), "ipo" | "direct_listing" | "bankruptcy"))
        .map(|r| r[1].clone())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let outcomes = targets.iter().filter(|t| t["kind"] != "event").count();
    assert_eq!(outcomes, outcomes_in_csv);
    for (index, score) in forecasters.iter().enumerate() {
        let name = score["name"].as_str().unwrap();
        let rows: Vec<(&Value, &Value)> = targets
            .iter()
            .map(|t| {
                assert_eq!(t["forecasts"][index]["forecaster"], name);
                (t, &t["forecasts"][index])
            })
            .collect();
        let events: Vec<&(&Value, &Value)> = rows.iter().filter(|(t, _)| t["kind"] == "event").collect();
        let n = events.len();
        assert_eq!(score["n"], n, "{name}");
        let log_errors: Vec<f64> = events.iter().map(|(_, f)| f["log_error"].as_f64().unwrap()).collect();
        let ape: Vec<f64> = log_errors.iter().map(|e| ((-e).exp() - 1.0).abs()).collect();
        let abs_log: Vec<f64> = log_errors.iter().map(|e| e.abs()).collect();
        assert_eq!(
            served(&score["mape_pct"]),
            mean(&ape).map(|m| round_to(m * 100.0, 1)),
            "{name}"
        );
        assert_eq!(
            served(&score["median_abs_log_error"]),
            median(abs_log.clone()).map(|m| round_to(m, 3))
        );
        assert_eq!(
            served(&score["mean_abs_log_error"]),
            mean(&abs_log).map(|m| round_to(m, 3))
        );
        let inside = |rows: &[&(&Value, &Value)], band: &str| rows.iter().filter(|(_, f)| f[band] == true).count();
        for (field, band) in [("coverage_80", "inside_80"), ("coverage_95", "inside_95")] {
            assert_eq!(score[field]["inside"], inside(&events, band), "{name} {field}");
            assert_eq!(score[field]["n"], n);
        }
        assert_eq!(score["misses_total"], n - inside(&events, "inside_95"));
        let widths = |band: &str| {
            median(
                events
                    .iter()
                    .map(|(_, f)| {
                        let band = &f[format!("{band}_rel")];
                        (band["upper"].as_f64().unwrap() - band["lower"].as_f64().unwrap()) * 100.0
                    })
                    .collect(),
            )
            .map(|w| round_to(w, 1))
        };
        assert_eq!(served(&score["median_band_width_80_pct"]), widths("band_80"));
        assert_eq!(served(&score["median_band_width_95_pct"]), widths("band_95"));

        // The confidence claim: Brier score, base rate, skill, reliability.
        let stated: Vec<(f64, bool)> = events
            .iter()
            .map(|(_, f)| (f["confidence"].as_f64().unwrap(), f["hit"].as_bool().unwrap()))
            .collect();
        for &(confidence, _) in &stated {
            assert!((0.0..=1.0).contains(&confidence));
        }
        // A hit is an observed value within +/-10% of the mark.
        for (t, f) in &events {
            let log_error = f["log_error"].as_f64().unwrap();
            assert_eq!(f["hit"], (0.9f64.ln()..=1.1f64.ln()).contains(&log_error), "{t}");
        }
        let hits = stated.iter().filter(|s| s.1).count();
        let c = &score["confidence"];
        assert_eq!(
            (c["n"].as_u64(), c["hits"].as_u64()),
            (Some(n as u64), Some(hits as u64))
        );
        let brier = mean(
            &stated
                .iter()
                .map(|&(p, hit)| (p - f64::from(u8::from(hit))).powi(2))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let base_rate = hits as f64 / n as f64;
        let reference = base_rate * (1.0 - base_rate);
        assert_eq!(served(&c["brier"]), Some(round_to(brier, 4)), "{name}");
        assert_eq!(served(&c["base_rate"]), Some(round_to(base_rate, 4)));
        assert_eq!(served(&c["brier_base_rate"]), Some(round_to(reference, 4)));
        assert_eq!(served(&c["brier_skill"]), Some(round_to(1.0 - brier / reference, 4)));
        let bins = c["reliability"].as_array().unwrap();
        assert_eq!(bins.len(), 10);
        for (k, bin) in bins.iter().enumerate() {
            let in_bin: Vec<(f64, bool)> = stated
                .iter()
                .copied()
                .filter(|&(p, _)| ((p * 10.0).floor() as usize).min(9) == k)
                .collect();
            assert_eq!(bin["n"], in_bin.len(), "{name} bin {k}");
            let stated_mean = mean(&in_bin.iter().map(|s| s.0).collect::<Vec<_>>()).map(|m| round_to(m, 4));
            assert_eq!(served(&bin["mean_stated"]), stated_mean);
            let observed = (!in_bin.is_empty())
                .then(|| round_to(in_bin.iter().filter(|s| s.1).count() as f64 / in_bin.len() as f64, 4));
            assert_eq!(served(&bin["observed"]), observed);
        }

        // Coverage by the gap since the last event.
        let buckets = ["under_6_months", "6_to_12_months", "1_to_2_years", "over_2_years"];
        let by_gap = score["coverage_by_gap"].as_array().unwrap();
        assert_eq!(by_gap.len(), 4);
        for (bucket, served_bucket) in buckets.iter().zip(by_gap) {
            let edge = |years: f64| match years {
                g if g < 0.5 => "under_6_months",
                g if g < 1.0 => "6_to_12_months",
                g if g < 2.0 => "1_to_2_years",
                _ => "over_2_years",
            };
            let in_bucket: Vec<&(&Value, &Value)> = events
                .iter()
                .copied()
                .filter(|(t, _)| edge(t["gap_years"].as_f64().unwrap()) == *bucket)
                .collect();
            assert_eq!(served_bucket["bucket"], *bucket);
            assert_eq!(served_bucket["n"], in_bucket.len(), "{name} {bucket}");
            assert_eq!(served_bucket["coverage_80"]["inside"], inside(&in_bucket, "inside_80"));
            assert_eq!(served_bucket["coverage_95"]["inside"], inside(&in_bucket, "inside_95"));
            let range = &served_bucket["coverage_80"]["binomial_90_range_pct"];
            if let (Some(observed), Some(low), Some(high)) = (
                served(&served_bucket["coverage_80"]["observed_pct"]),
                range[0].as_f64(),
                range[1].as_f64(),
            ) {
                assert_eq!(
                    served_bucket["coverage_80"]["within_binomial_90_range"],
                    (low..=high).contains(&observed)
                );
            }
        }
        assert_eq!(by_gap.iter().map(|b| b["n"].as_u64().unwrap()).sum::<u64>(), n as u64);

        // Outcomes: every verdict from the row's own flags, counted.
        let mut verdicts = BTreeMap::new();
        for (t, f) in rows.iter().filter(|(t, _)| t["kind"] != "event") {
            let expected = if f["hit"] == true {
                "hit"
            } else if f["inside_80"] == true {
                "covered_80"
            } else if f["inside_95"] == true {
                "covered_95"
            } else {
                "miss"
            };
            assert_eq!(f["verdict"], expected, "{t}");
            *verdicts.entry(expected).or_insert(0u64) += 1;
        }
        for verdict in ["hit", "covered_80", "covered_95", "miss"] {
            assert_eq!(
                score["outcome_verdicts"][verdict].as_u64(),
                Some(verdicts.get(verdict).copied().unwrap_or(0)),
                "{name} {verdict}"
            );
        }
        let listings: Vec<&(&Value, &Value)> = rows.iter().filter(|(t, _)| t["kind"] == "listing").collect();
        assert_eq!(score["listings"]["n"], listings.len());
        assert_eq!(score["listings"]["inside_80"], inside(&listings, "inside_80"));
        let listing_errors: Vec<f64> = listings
            .iter()
            .map(|(_, f)| ((-f["log_error"].as_f64().unwrap()).exp() - 1.0).abs() * 100.0)
            .collect();
        assert_eq!(
            served(&score["listings"]["mean_abs_error_pct"]),
            mean(&listing_errors).map(|m| round_to(m, 1))
        );

        // MAPE's largest contributors, with their share of the total.
        let mut contributions: Vec<(f64, &Value)> =
            events.iter().zip(&ape).map(|((t, _), &e)| (e * 100.0, *t)).collect();
        contributions.sort_by(|a, b| b.0.total_cmp(&a.0));
        let total: f64 = ape.iter().sum::<f64>() * 100.0;
        let named = score["mape_top_contributors"].as_array().unwrap();
        assert_eq!(named.len(), 3.min(n));
        for (named, (error, target)) in named.iter().zip(&contributions) {
            assert_eq!(
                (&named["occurred_on"], &named["event_type"]),
                (&target["occurred_on"], &target["event_type"])
            );
            assert!(named.get("slug").is_none() && named.get("event_id").is_none());
            assert_eq!(served(&named["abs_pct_error"]), Some(round_to(*error, 1)));
            assert_eq!(
                served(&named["share_of_mape_pct"]),
                Some(round_to(error / total * 100.0, 1))
            );
        }
    }
}

/// Every company item explains its mark (docs/design.md section 4a): the last event (value,
/// date, type; no source), how many days ago, the outcome that ended or fixed the private
/// marks, and the mark against the last event, worked out here from the source CSV.
#[tokio::test]
async fn every_company_item_says_what_its_mark_rests_on() {
    let server = TestServer::start_with(Options {
        keys_toml: Some(demo_keys_with_rate(1_000_000)),
        ..Options::default()
    })
    .await;
    let events = sample_csv("events.csv");
    let as_of = server.get("/readyz", None).await.json()["as_of"]
        .as_str()
        .unwrap()
        .to_string();
    let list = server.get("/v1/companies?limit=200", Some(ENTERPRISE)).await.json();
    let items = list["companies"].as_array().unwrap();
    assert_eq!(items.len(), sample_csv("companies.csv").len());
    let export = server.get("/v1/export", Some(ENTERPRISE)).await;
    let export_lines: BTreeMap<String, Value> = String::from_utf8_lossy(&export.body)
        .lines()
        .skip(1)
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            (value["slug"].as_str().unwrap().to_string(), value)
        })
        .collect();
    let terminal = |kind: &str| matches!(kind, "ipo" | "direct_listing" | "bankruptcy");
    for item in items {
        let slug = item["slug"].as_str().unwrap();
        let mut history: Vec<&Vec<String>> = events.iter().filter(|r| r[1] == slug).collect();
        // The builder keeps a day's events in file order.
        history.sort_by(|a, b| a[3].cmp(&b[3]));
        let last = history.last().unwrap();
        let outcome = history
            .iter()
            .find(|r| terminal(&r[2]))
            .or(history.last().filter(|r| r[2] == "acquisition"));
        let profile = server
            .get(&format!("/v1/companies/{slug}"), Some(RESEARCH))
            .await
            .json();
        for (place, company) in [("list", item), ("profile", &profile), ("export", &export_lines[slug])] {
            let seen = &company["last_event"];
            assert_eq!(seen["event_id"], last[0].as_str(), "{slug} {place}");
            assert_eq!(seen["occurred_on"], last[3].as_str(), "{slug} {place}");
            assert_eq!(seen["event_type"], last[2].as_str());
            assert_eq!(seen["valuation_usd"].as_u64().unwrap().to_string(), last[4]);
            assert!(seen.get("source_url").is_none() && seen.get("note").is_none());
            assert_eq!(
                company["days_since_last_event"].as_i64().unwrap(),
                days_between(&last[3], &as_of),
                "{slug} {place}"
            );
            match outcome {
                None => assert!(company["outcome"].is_null(), "{slug} {place}"),
                Some(o) => {
                    assert_eq!(company["outcome"]["event_type"], o[2].as_str(), "{slug} {place}");
                    assert_eq!(company["outcome"]["occurred_on"], o[3].as_str());
                }
            }
            let mark = &company["latest_mark"];
            let value: f64 = last[4].parse().unwrap();
            match mark["vs_last_event_pct"].as_f64() {
                Some(pct) => {
                    let expected = (mark["value_usd"].as_f64().unwrap() / value - 1.0) * 100.0;
                    assert!((pct - expected).abs() < 0.006, "{slug} {place}: {pct} vs {expected}");
                }
                None => assert_eq!(value, 0.0, "{slug}: only a written-off value has no ratio"),
            }
            // A 30-day change only for a series that reaches as_of.
            if mark["as_of_date"] != as_of.as_str() {
                assert!(company["delta_30d_pct"].is_null(), "{slug} {place}");
            }
        }
    }
    // The issue's cases: an agreed sale holds its price; a listing is the outcome.
    let wiz = server.get("/v1/companies/wiz", Some(RESEARCH)).await.json();
    assert_eq!(wiz["latest_mark"]["value_usd"], 32_000_000_000u64);
    assert_eq!(wiz["outcome"]["event_type"], "acquisition");
    assert_eq!(wiz["latest_mark"]["vs_last_event_pct"], 0.0);
    let airbnb = server.get("/v1/companies/airbnb", Some(RESEARCH)).await.json();
    assert_eq!(
        (&airbnb["outcome"]["event_type"], &airbnb["outcome"]["occurred_on"]),
        (&Value::from("ipo"), &Value::from("2020-12-10"))
    );
    assert_eq!(airbnb["outcome"]["valuation_usd"], 47_000_000_000u64);
    assert_eq!(
        airbnb["latest_mark"]["as_of_date"], "2020-12-09",
        "private marks end the day before"
    );
}

/// The list sorts by the day of the last event and of the outcome (none last either way).
#[tokio::test]
async fn the_list_sorts_by_last_event_and_outcome_days() {
    let server = TestServer::start().await;
    for (sort, field) in [("last_event_on", "last_event"), ("outcome_on", "outcome")] {
        for descending in [false, true] {
            let sort = if descending {
                format!("-{sort}")
            } else {
                sort.to_string()
            };
            let list = server
                .get(&format!("/v1/companies?limit=200&sort={sort}"), Some(PRO))
                .await
                .json();
            let days: Vec<Option<String>> = list["companies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c[field]["occurred_on"].as_str().map(str::to_string))
                .collect();
            let known: Vec<&String> = days.iter().flatten().collect();
            let mut sorted = known.clone();
            sorted.sort();
            if descending {
                sorted.reverse();
            }
            assert_eq!(known, sorted, "{sort}");
            let first_null = days.iter().position(Option::is_none).unwrap_or(days.len());
            assert!(days[first_null..].iter().all(Option::is_none), "{sort}: none last");
        }
    }
}

/// getBacktest: how the method did on one company, every scored event and the outcome, from
/// the same numbers as the scorecard's targets; below Pro without the events' values.
#[tokio::test]
async fn a_company_backtest_is_its_scorecard_targets() {
    let server = TestServer::start().await;
    let full_targets = server.get("/v1/scorecard/targets", Some(PRO)).await.json();
    for slug in ["stripe", "airbnb", "wiz"] {
        let mine: Vec<&Value> = full_targets["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["slug"] == slug)
            .collect();
        let full = server.get(&format!("/v1/companies/{slug}/backtest"), Some(PRO)).await;
        assert_eq!(full.status, 200);
        let full = full.json();
        assert_meta(&full);
        assert_eq!(full["disclosure"], "full");
        let served = full["targets"].as_array().unwrap();
        assert_eq!(served.len(), mine.len(), "{slug}");
        for (got, target) in served.iter().zip(&mine) {
            let method = &target["forecasts"][0];
            assert_eq!(got["event_id"], target["event_id"]);
            assert_eq!(got["observed_usd"], target["observed_usd"]);
            assert_eq!(
                got["mark_usd"].as_f64().unwrap(),
                method["mark_usd"].as_f64().unwrap().round()
            );
            assert_eq!(got["band_80"], method["band_80"]);
            assert_eq!(
                (&got["inside_80"], &got["inside_95"], &got["hit"]),
                (&method["inside_80"], &method["inside_95"], &method["hit"])
            );
        }
        let research = server
            .get(&format!("/v1/companies/{slug}/backtest"), Some(RESEARCH))
            .await
            .json();
        assert_eq!(research["disclosure"], "research");
        for (got, target) in research["targets"].as_array().unwrap().iter().zip(&mine) {
            if target["kind"] == "event" {
                for hidden in ["observed_usd", "event_id", "error_pct", "band_95"] {
                    assert!(got.get(hidden).is_none(), "{slug}: {hidden} below Pro");
                }
            } else {
                assert_eq!(
                    got["observed_usd"], target["observed_usd"],
                    "an outcome is every item's"
                );
            }
            let above = target["observed_usd"].as_f64().unwrap() > target["forecasts"][0]["mark_usd"].as_f64().unwrap();
            assert_eq!(got["above"], above);
        }
    }
    server
        .get("/v1/companies/stripe/backtest", Some(FREE))
        .await
        .assert_problem(403, "tier_forbidden");
}
