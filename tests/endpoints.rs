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
    assert_eq!(meta["methodology_version"], "v0.5.0");
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
    // company's last anchor in its effective history, which carries all of the mark, and the
    // drift since.
    let histories = sample_histories();
    let last = histories["stripe"].anchors.last().unwrap();
    let observations = body["observations"].as_array().unwrap();
    assert_eq!(observations.len(), 2, "{observations:?}");
    let (event, drift) = (&observations[0], &observations[1]);
    assert_eq!(event["part"], "event");
    assert_eq!(event["event_id"], last["event_id"].as_str());
    assert_eq!(
        event["valuation_usd"].as_u64().unwrap().to_string(),
        last["valuation_usd"]
    );
    assert_eq!(event["source_grade"], last["source_grade"].as_str());
    assert_eq!(event["weight"], 1.0);
    assert!(
        event.get("source_url").is_none() && event.get("note").is_none(),
        "sources are getMarkEvents's"
    );
    assert_eq!(drift["part"], "drift");
    let as_of = body["meta"]["as_of"].as_str().unwrap();
    assert_eq!(
        drift["days"].as_i64().unwrap(),
        days_between(&last["occurred_on"], as_of)
    );
    // The drift's part is the mark over the event's value.
    let mark = body["latest_mark"]["value_usd"].as_f64().unwrap();
    let value: f64 = last["valuation_usd"].parse().unwrap();
    let drift_pct = drift["drift_pct"].as_f64().unwrap();
    assert!((drift_pct - (mark / value - 1.0) * 100.0).abs() < 0.01, "{drift_pct}");
    let words = drift["explanation"].as_str().unwrap();
    assert!(words.contains(&format!("{drift_pct:+}%")), "{words}");
    // Beside it, the next-print forecast, labelled as what it is.
    let next = &body["latest_mark"]["next_reported"];
    assert!(next["value_usd"].as_u64().unwrap() > 0);
    assert!(next["label"].as_str().unwrap().contains("not today's value"), "{next}");
}

/// Days from one `YYYY-MM-DD` to another.
fn days_between(from: &str, to: &str) -> i64 {
    let day = |s: &str| marks_format::rules::day::Day::parse(s).unwrap();
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

/// A bankruptcy ends the private period like any outcome: the series stops the day before, the
/// company's outcome says what happened, and the resolution record is the reported value (0:
/// written off) with the last private bands.
#[tokio::test]
async fn a_bankrupt_company_series_ends_the_day_before_its_bankruptcy() {
    let server = TestServer::start().await;
    for coverage in [80, 95] {
        let path = format!("/v1/companies/ftx/marks?coverage={coverage}");
        let body = server.get(&path, Some(ENTERPRISE)).await.json();
        let series = body["series"].as_array().unwrap();
        let last = series.last().unwrap();
        assert_eq!(last["date"], "2022-11-10");
        assert!(last["mark_usd"].as_u64().unwrap() > 0);
    }
    let profile = server.get("/v1/companies/ftx", Some(PRO)).await.json();
    assert_eq!(profile["status"], "private");
    assert_eq!(profile["latest_mark"]["as_of_date"], "2022-11-10");
    assert_eq!(profile["latest_mark"]["next_reported"], Value::Null);
    assert_eq!(profile["outcome"]["kind"], "bankrupt");
    assert_eq!(profile["outcome"]["event_type"], "bankruptcy");
    assert_eq!(profile["outcome"]["occurred_on"], "2022-11-11");
    assert_eq!(profile["outcome"]["valuation_usd"], 0);
    let record = server
        .get("/v1/companies/ftx/resolution", Some(ENTERPRISE))
        .await
        .json();
    assert_eq!(
        (record["basis"].as_str(), record["value_usd"].as_u64()),
        (Some("bankruptcy"), Some(0))
    );
    assert_eq!(record["marked_on"], "2022-11-10");
    assert_eq!(record["methodology_version"], "v0.5.0");
}

#[tokio::test]
async fn mark_events_are_the_whole_append_only_history() {
    let server = TestServer::start().await;
    let reply = server.get("/v1/companies/klarna/events", Some(PRO)).await;
    assert_eq!(reply.status, 200);
    let body = reply.json();
    assert_meta(&body);
    assert_eq!(body["slug"], "klarna");
    let mut expected: Vec<Record> = sample_records("events.csv")
        .into_iter()
        .filter(|r| r["slug"] == "klarna")
        .collect();
    // Date order, file order within a day.
    expected.sort_by(|a, b| a["occurred_on"].cmp(&b["occurred_on"]));
    let events = body["events"].as_array().unwrap();
    assert_eq!(events.len(), expected.len());
    let optional = |text: &str| {
        if text.is_empty() {
            Value::Null
        } else {
            Value::from(text)
        }
    };
    for (event, row) in events.iter().zip(&expected) {
        assert_eq!(event["event_id"], row["event_id"].as_str());
        assert_eq!(event["event_type"], row["event_type"].as_str());
        assert_eq!(event["occurred_on"], row["occurred_on"].as_str());
        assert_eq!(
            event["valuation_usd"].as_u64().unwrap().to_string(),
            row["valuation_usd"]
        );
        assert_eq!(event["source_url"], row["source_url"].as_str());
        assert_eq!(event["note"], row["note"].as_str());
        assert_eq!(event["reported_as"], optional(&row["reported_as"]));
        assert_eq!(event["source_grade"], optional(&row["source_grade"]));
        assert_eq!(event["supersedes"], optional(&row["supersedes"]));
        // The record that corrects this one, if any, named from the other side.
        let by = expected.iter().find(|r| r["supersedes"] == row["event_id"]);
        assert_eq!(
            event["superseded_by"],
            optional(by.map_or("", |r| r["event_id"].as_str()))
        );
    }
    assert!(
        events.iter().any(|e| e["superseded_by"].is_string()),
        "klarna's history carries corrections"
    );
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
    let names: Vec<&str> = body["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, SCORED_NUMBERS);
    assert_eq!(body["methodology_version"], "v0.5.0");
    assert_eq!(body["numbers"][0]["methodology_version"], "v0.5.0");
    assert_eq!(body["params"]["drift_half_life_years"], 1.0);
    assert_eq!(body["params"]["confidence_tolerance"], 0.2);
    // Every outcome of the effective history with a value (a failure always) is scored, marked
    // the day before, counted here from the source CSV.
    let effective = sample_effective_events();
    // A listing is an outcome once closed: one announced or in talks ends nothing (data v6).
    let count = |types: &[&str], valued_only: bool| {
        effective
            .iter()
            .filter(|r| types.contains(&r["event_type"].as_str()) && (!valued_only || r["valuation_usd"] != "0"))
            .filter(|r| {
                let listing = matches!(r["event_type"].as_str(), "ipo" | "direct_listing" | "spac_listing");
                !listing
                    || matches!(
                        r.get("reported_as").map(String::as_str),
                        None | Some("") | Some("closed")
                    )
            })
            .count() as u64
    };
    let event_day = &body["event_day"];
    assert_eq!(
        event_day["listing"]["n"],
        count(&["ipo", "direct_listing", "spac_listing"], true)
    );
    assert_eq!(event_day["failure"]["n"], count(&["bankruptcy", "wind_down"], false));
    assert_eq!(event_day["sale"]["n"], count(&["acquisition_closed"], true));
    // The rows behind the figures: as many month-ends as the figure says.
    let rows = server.get("/v1/scorecard/targets", None).await.json();
    assert_eq!(
        rows["month_ends"].as_array().unwrap().len() as u64,
        body["month_end"]["n"].as_u64().unwrap()
    );
    // And the findings say which number wins which score, in words.
    let findings = body["findings"].as_array().unwrap();
    assert!(findings.len() >= 4, "{findings:?}");

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

/// `GET /v1/scorecard/targets` publishes every scored row (event-day targets and month-ends)
/// with the three numbers' errors, and every summary figure of `/v1/scorecard` is recomputed
/// from those public rows here: median, mean and bias of each number on each score, coverage
/// (overall, by silence, by kind), the hits within +/-20%, and `confidence` judged as a forecast
/// (Brier score, base rate, skill, mean stated).
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
    assert_eq!(body["tolerance_pct"], 20.0);
    let card = server.get("/v1/scorecard", None).await.json();
    let four = |v: f64| round_to(v, 4);
    let figures = |errors: &[f64]| -> (Option<f64>, Option<f64>, Option<f64>) {
        let abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
        (
            median(abs.clone()).map(four),
            mean(&abs).map(four),
            mean(errors).map(four),
        )
    };
    let numbers = SCORED_NUMBERS;
    let check = |figure: &Value, errors: &[f64], what: &str| {
        let (median, mean, bias) = figures(errors);
        assert_eq!(served(&figure["median_abs_log_error"]), median, "{what}");
        assert_eq!(served(&figure["mean_abs_log_error"]), mean, "{what}");
        assert_eq!(served(&figure["bias"]), bias, "{what}");
    };
    let within = |e: f64| (0.8f64.ln()..=1.2f64.ln()).contains(&e);
    let inside = |row: &Value, low: &str, high: &str, e: f64| {
        let q = &row["band_offsets"];
        q[low].as_f64().unwrap() <= e && e <= q[high].as_f64().unwrap()
    };

    // Event day, by kind.
    let targets = body["targets"].as_array().unwrap();
    for kind in ["event", "listing", "failure", "sale"] {
        let rows: Vec<&Value> = targets.iter().filter(|t| t["kind"] == kind).collect();
        let score = &card["event_day"][kind];
        if rows.is_empty() {
            assert!(score.is_null(), "{kind}");
            continue;
        }
        assert_eq!(score["n"], rows.len(), "{kind}");
        for number in numbers {
            let errors: Vec<f64> = rows.iter().map(|t| t["log_error"][number].as_f64().unwrap()).collect();
            check(&score["errors"][number], &errors, &format!("event day {kind} {number}"));
        }
        for row in &rows {
            let e = row["log_error"]["mark"].as_f64().unwrap();
            assert_eq!(row["inside_80"], inside(row, "q10", "q90", e), "{row}");
            assert_eq!(row["inside_95"], inside(row, "q025", "q975", e), "{row}");
            assert_eq!(row["hit"], within(e), "{row}");
        }
        let count = |flag: &str| rows.iter().filter(|t| t[flag] == true).count();
        assert_eq!(score["coverage_80"]["inside"], count("inside_80"), "{kind}");
        assert_eq!(score["coverage_95"]["inside"], count("inside_95"), "{kind}");
    }

    // Month-ends: S1 against the next reported value, S2 against the bridged value.
    let month_ends = body["month_ends"].as_array().unwrap();
    let score = &card["month_end"];
    assert_eq!(score["n"], month_ends.len());
    for (field, served_field) in [("next_reported_error", "next_reported"), ("bridged_error", "bridged")] {
        for number in numbers {
            let errors: Vec<f64> = month_ends.iter().map(|m| m[field][number].as_f64().unwrap()).collect();
            check(
                &score[served_field][number],
                &errors,
                &format!("month-end {served_field} {number}"),
            );
        }
    }
    for row in month_ends {
        let e = row["next_reported_error"]["mark"].as_f64().unwrap();
        assert_eq!(row["inside_80"], inside(row, "q10", "q90", e), "{row}");
        assert_eq!(row["hit"], within(e), "{row}");
    }
    let count = |rows: &[&Value], flag: &str| rows.iter().filter(|m| m[flag] == true).count();
    let all: Vec<&Value> = month_ends.iter().collect();
    assert_eq!(score["coverage_80"]["inside"], count(&all, "inside_80"));
    assert_eq!(score["coverage_95"]["inside"], count(&all, "inside_95"));
    let edges = [0.5, 1.0, 2.0];
    let by_gap = score["coverage_by_gap"].as_array().unwrap();
    assert_eq!(by_gap.len(), 4);
    for (bucket, served_bucket) in by_gap.iter().enumerate() {
        let rows: Vec<&Value> = month_ends
            .iter()
            .filter(|m| edges.iter().filter(|&&e| m["gap_years"].as_f64().unwrap() >= e).count() == bucket)
            .collect();
        assert_eq!(served_bucket["n"], rows.len(), "bucket {bucket}");
        assert_eq!(served_bucket["coverage_80"]["inside"], count(&rows, "inside_80"));
        assert_eq!(served_bucket["coverage_95"]["inside"], count(&rows, "inside_95"));
    }
    // confidence judged as a forecast of landing within +/-20%.
    let stated: Vec<(f64, f64)> = month_ends
        .iter()
        .map(|m| (m["confidence"].as_f64().unwrap(), f64::from(u8::from(m["hit"] == true))))
        .collect();
    let brier = mean(&stated.iter().map(|(p, h)| (p - h).powi(2)).collect::<Vec<_>>()).unwrap();
    let base = mean(&stated.iter().map(|s| s.1).collect::<Vec<_>>()).unwrap();
    let c = &score["confidence"];
    assert_eq!(served(&c["brier"]), Some(four(brier)));
    assert_eq!(served(&c["base_rate"]), Some(four(base)));
    assert_eq!(
        served(&c["brier_skill"]),
        Some(four(1.0 - brier / (base * (1.0 - base))))
    );
    assert_eq!(
        served(&c["mean_stated"]),
        mean(&stated.iter().map(|s| s.0).collect::<Vec<_>>()).map(four)
    );
    // Confidence is a track record once 200 residuals are known: the same for every company on
    // a day.
    let mut by_day: BTreeMap<&str, f64> = BTreeMap::new();
    for row in month_ends
        .iter()
        .filter(|m| m["residuals_known"].as_u64().unwrap() >= 200)
    {
        let c = row["confidence"].as_f64().unwrap();
        let first = *by_day.entry(row["day"].as_str().unwrap()).or_insert(c);
        assert_eq!(first, c, "{row}");
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
    let histories = sample_histories();
    let as_of = server.get("/readyz", None).await.json()["as_of"]
        .as_str()
        .unwrap()
        .to_string();
    let list = server.get("/v1/companies?limit=200", Some(ENTERPRISE)).await.json();
    let mut items: Vec<Value> = list["companies"].as_array().unwrap().clone();
    let next = list["page"]["next_cursor"].as_str().unwrap();
    let rest = server
        .get(&format!("/v1/companies?limit=200&cursor={next}"), Some(ENTERPRISE))
        .await
        .json();
    items.extend(rest["companies"].as_array().unwrap().iter().cloned());
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
    for item in &items {
        let slug = item["slug"].as_str().unwrap();
        let history = &histories[slug];
        let last = history.mark_anchor().unwrap();
        let profile = server
            .get(&format!("/v1/companies/{slug}"), Some(RESEARCH))
            .await
            .json();
        for (place, company) in [("list", item), ("profile", &profile), ("export", &export_lines[slug])] {
            let seen = &company["last_event"];
            assert_eq!(seen["event_id"], last["event_id"].as_str(), "{slug} {place}");
            assert_eq!(seen["occurred_on"], last["occurred_on"].as_str(), "{slug} {place}");
            assert_eq!(seen["event_type"], last["event_type"].as_str());
            assert_eq!(
                seen["valuation_usd"].as_u64().unwrap().to_string(),
                last["valuation_usd"]
            );
            let grade = last["source_grade"].as_str();
            assert_eq!(
                seen["source_grade"],
                if grade.is_empty() {
                    Value::Null
                } else {
                    Value::from(grade)
                }
            );
            assert!(seen.get("source_url").is_none() && seen.get("note").is_none());
            assert_eq!(
                company["days_since_last_event"].as_i64().unwrap(),
                days_between(&last["occurred_on"], &as_of),
                "{slug} {place}"
            );
            match &history.outcome {
                None => assert!(company["outcome"].is_null(), "{slug} {place}"),
                Some((kind, o)) => {
                    assert_eq!(company["outcome"]["kind"], *kind, "{slug} {place}");
                    assert_eq!(company["outcome"]["event_id"], o["event_id"].as_str(), "{slug} {place}");
                    assert_eq!(company["outcome"]["occurred_on"], o["occurred_on"].as_str());
                }
            }
            let mark = &company["latest_mark"];
            let value: f64 = last["valuation_usd"].parse().unwrap();
            match mark["vs_last_event_pct"].as_f64() {
                Some(pct) => {
                    let expected = (mark["value_usd"].as_f64().unwrap() / value - 1.0) * 100.0;
                    assert!((pct - expected).abs() < 0.006, "{slug} {place}: {pct} vs {expected}");
                }
                None => assert_eq!(value, 0.0, "{slug}: only a written-off value has no ratio"),
            }
            // A 30-day change and a next-print forecast only for a company still private today.
            if mark["as_of_date"] != as_of.as_str() {
                assert!(company["delta_30d_pct"].is_null(), "{slug} {place}");
                assert!(mark["next_reported"].is_null(), "{slug} {place}");
            } else {
                assert!(
                    mark["next_reported"]["value_usd"].as_u64().unwrap() > 0,
                    "{slug} {place}"
                );
            }
        }
    }
    // The analyst's cases: an agreed sale held its price until it closed; a failed sale anchors
    // nothing, and a later sale closed at a price not disclosed (Windsurf: OpenAI's deal ended,
    // Cognition's closed); a listing is the outcome.
    let wiz = server.get("/v1/companies/wiz", Some(RESEARCH)).await.json();
    assert_eq!(wiz["latest_mark"]["value_usd"], 32_000_000_000u64);
    assert_eq!(wiz["latest_mark"]["as_of_date"], "2026-03-10");
    assert_eq!(wiz["outcome"]["kind"], "sold");
    assert_eq!(wiz["outcome"]["event_type"], "acquisition_closed");
    assert_eq!(wiz["latest_mark"]["vs_last_event_pct"], 0.0);
    let windsurf = server.get("/v1/companies/windsurf", Some(RESEARCH)).await.json();
    assert_eq!(windsurf["outcome"]["kind"], "sold");
    assert_eq!(windsurf["outcome"]["valuation_usd"], 0);
    assert_eq!(windsurf["last_event"]["event_type"], "primary_round");
    assert_ne!(
        windsurf["latest_mark"]["value_usd"].as_u64().unwrap(),
        3_000_000_000,
        "the failed $3B sale anchors nothing (an agreed sale would hold its price)"
    );
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
            assert_eq!(got["event_id"], target["event_id"]);
            assert_eq!(got["observed_usd"], target["observed_usd"]);
            assert_eq!(got["mark_usd"], target["mark_usd"]);
            assert_eq!(got["next_print_usd"], target["next_print_usd"]);
            let mark = target["mark_log"].as_f64().unwrap();
            let offset = |q: &str| target["band_offsets"][q].as_f64().unwrap();
            assert_eq!(
                got["band_80"]["lower"].as_f64().unwrap(),
                (mark + offset("q10")).exp().round()
            );
            assert_eq!(
                got["band_95"]["upper"].as_f64().unwrap(),
                (mark + offset("q975")).exp().round()
            );
            assert_eq!(
                (&got["inside_80"], &got["inside_95"], &got["hit"]),
                (&target["inside_80"], &target["inside_95"], &target["hit"])
            );
        }
        let research = server
            .get(&format!("/v1/companies/{slug}/backtest"), Some(RESEARCH))
            .await
            .json();
        assert_eq!(research["disclosure"], "research");
        for (got, target) in research["targets"].as_array().unwrap().iter().zip(&mine) {
            if target["kind"] == "event" {
                for hidden in ["observed_usd", "event_id", "error_pct", "band_95", "last_print_usd"] {
                    assert!(got.get(hidden).is_none(), "{slug}: {hidden} below Pro");
                }
            } else {
                assert_eq!(
                    got["observed_usd"], target["observed_usd"],
                    "an outcome is every item's"
                );
            }
            assert_eq!(got["above"], target["log_error"]["mark"].as_f64().unwrap() > 0.0);
        }
    }
    server
        .get("/v1/companies/stripe/backtest", Some(FREE))
        .await
        .assert_problem(403, "tier_forbidden");
}

/// Every page of a list query, in the largest pages there are.
async fn every_page(server: &TestServer, query: &str, key: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor = String::new();
    loop {
        let reply = server
            .get(&format!("/v1/companies?limit=7&{query}{cursor}"), Some(key))
            .await;
        assert_eq!(reply.status, 200, "{query}: {}", String::from_utf8_lossy(&reply.body));
        let body = reply.json();
        items.extend(body["companies"].as_array().unwrap().iter().cloned());
        match body["page"]["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return items,
        }
    }
}

/// `outcome=` filters the list by what ended or fixed a company's marks, worked out here from
/// the source CSV's effective history, alone or as a set, with a sort, a search and pages of 7;
/// the free tier's ten are the highest current marks, and an unknown outcome is refused.
#[tokio::test]
async fn the_list_filters_on_a_companys_outcome() {
    let server = TestServer::start_with(Options {
        keys_toml: Some(demo_keys_with_rate(1_000_000)),
        ..Options::default()
    })
    .await;
    let histories = sample_histories();
    let kind_of = |slug: &str| histories[slug].outcome.as_ref().map_or("none", |(kind, _)| *kind);
    let slugs =
        |items: &[Value]| -> Vec<String> { items.iter().map(|c| c["slug"].as_str().unwrap().to_string()).collect() };
    for outcome in ["none", "listed", "sold", "sale_agreed", "bankrupt", "wound_down"] {
        let items = every_page(&server, &format!("outcome={outcome}"), ENTERPRISE).await;
        let expected: Vec<String> = histories.keys().filter(|s| kind_of(s) == outcome).cloned().collect();
        assert!(!expected.is_empty(), "{outcome}");
        assert_eq!(slugs(&items), expected, "{outcome}");
        for item in &items {
            let kind = item["outcome"]["kind"].as_str().unwrap_or("none");
            assert_eq!(kind, outcome);
        }
    }
    // Current marks, by value: the union, in the sort asked for.
    let current = every_page(&server, "outcome=none,sale_agreed&sort=-value_usd", ENTERPRISE).await;
    let expected = histories
        .keys()
        .filter(|s| matches!(kind_of(s), "none" | "sale_agreed"))
        .count();
    assert_eq!(current.len(), expected);
    let values: Vec<u64> = current
        .iter()
        .map(|c| c["latest_mark"]["value_usd"].as_u64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] >= w[1]), "descending by value");
    assert!(current.iter().all(|c| c["latest_mark"]["current"] == true));
    // The free tier's ten are those ten, and say so.
    let free = server.get("/v1/companies?limit=200", Some(FREE)).await.json();
    let mut free_slugs = slugs(free["companies"].as_array().unwrap());
    free_slugs.sort();
    let mut top: Vec<String> = slugs(&current[..10]);
    top.sort();
    assert_eq!(free_slugs, top);
    assert!(free["universe_note"].as_str().unwrap().contains("current"));
    // With a search and a filter together.
    let found = every_page(&server, "q=ai&outcome=listed", ENTERPRISE).await;
    assert!(found.iter().all(|c| c["outcome"]["kind"] == "listed"));
    // Refused with what is wrong.
    for bad in ["public", "none,", "LISTED", ""] {
        let reply = server
            .get(&format!("/v1/companies?outcome={bad}"), Some(RESEARCH))
            .await;
        let problem = reply.assert_problem(422, "invalid_parameter");
        assert!(problem["detail"].as_str().unwrap().contains("outcome"), "{bad}");
    }
}
