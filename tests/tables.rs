//! CSV from every route that answers rows (`Accept: text/csv`), equal to its JSON row for row,
//! and date ranges of the series (`from`, `to`), cut exactly.

use serde_json::Value;

use crate::util::*;

const CSV: (&str, &str) = ("accept", "text/csv");

/// Rows of a CSV body (RFC 4180, read by the csv crate), as maps from column to cell.
fn parse_csv(body: &[u8]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(body);
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

/// A JSON value as its CSV cell: text as is, numbers in their shortest form, null empty.
fn cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join("; "),
        other => other.to_string(),
    }
}

/// The JSON value a column of a company row stands for.
fn company_field<'v>(item: &'v Value, column: &str) -> &'v Value {
    let mark = &item["latest_mark"];
    match column {
        "as_of_date" => &mark["as_of_date"],
        "value_usd" => &mark["value_usd"],
        "lower_80_usd" => &mark["lower_usd"],
        "upper_80_usd" => &mark["upper_usd"],
        "lower_95_usd" => &mark["band_95"]["lower_usd"],
        "upper_95_usd" => &mark["band_95"]["upper_usd"],
        "confidence" => &mark["confidence"],
        "vs_last_event_pct" => &mark["vs_last_event_pct"],
        "last_event_id" => &item["last_event"]["event_id"],
        "last_event_on" => &item["last_event"]["occurred_on"],
        "last_event_type" => &item["last_event"]["event_type"],
        "last_event_usd" => &item["last_event"]["valuation_usd"],
        "outcome_type" => &item["outcome"]["event_type"],
        "outcome_on" => &item["outcome"]["occurred_on"],
        "outcome_usd" => &item["outcome"]["valuation_usd"],
        "outcome_kind" => &item["outcome"]["kind"],
        "last_event_source_grade" => &item["last_event"]["source_grade"],
        "next_reported_usd" => &mark["next_reported"]["value_usd"],
        "mark_is_current" => &mark["current"],
        other => &item[other],
    }
}

fn assert_company_rows_equal(header: &[String], rows: &[Vec<String>], items: &[Value], what: &str) {
    assert_eq!(rows.len(), items.len(), "{what}: one row per item");
    for (row, item) in rows.iter().zip(items) {
        for (column, got) in header.iter().zip(row) {
            let expected = cell(company_field(item, column));
            assert_eq!(got, &expected, "{what}: {} column {column}", item["slug"]);
        }
    }
}

async fn json_pages(server: &TestServer, query: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor = String::new();
    loop {
        let body = server
            .get(&format!("/v1/companies?limit=50{query}{cursor}"), Some(ENTERPRISE))
            .await
            .json();
        items.extend(body["companies"].as_array().unwrap().iter().cloned());
        match body["page"]["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return items,
        }
    }
}

#[tokio::test]
async fn the_list_as_csv_equals_its_json_row_for_row_over_every_page() {
    let server = TestServer::start().await;
    for query in ["", "&sort=-value_usd", "&q=a&status=private"] {
        let items = json_pages(&server, query).await;
        let mut headers = Vec::new();
        let mut rows = Vec::new();
        let mut cursor = String::new();
        loop {
            let reply = server
                .get_with(
                    &format!("/v1/companies?limit=50{query}{cursor}"),
                    &[("x-api-key", ENTERPRISE), CSV],
                )
                .await;
            assert_eq!(reply.status, 200);
            assert_eq!(
                reply.header("content-type"),
                Some("text/csv; charset=utf-8; header=present")
            );
            assert_eq!(reply.header("vary"), Some("X-API-Key, Accept"));
            let (page_header, page_rows) = parse_csv(&reply.body);
            headers.push(page_header);
            rows.extend(page_rows);
            match reply.header("x-next-cursor") {
                Some(next) => cursor = format!("&cursor={next}"),
                None => break,
            }
        }
        let header = headers.pop().unwrap();
        assert!(headers.iter().all(|h| *h == header), "every page has the same columns");
        assert_eq!(header[..3], ["slug", "name", "aliases"]);
        assert_company_rows_equal(&header, &rows, &items, &format!("list{query}"));
    }
}

#[tokio::test]
async fn series_and_events_as_csv_equal_their_json_for_every_company() {
    let server = TestServer::start().await;
    let companies = sample_csv("companies.csv");
    for row in &companies {
        let slug = &row[0];
        for coverage in [80, 95] {
            let path = format!("/v1/companies/{slug}/marks?coverage={coverage}");
            let json = server.get(&path, Some(ENTERPRISE)).await.json();
            let reply = server.get_with(&path, &[("x-api-key", ENTERPRISE), CSV]).await;
            let (header, rows) = parse_csv(&reply.body);
            assert_eq!(header, ["slug", "date", "mark_usd", "lower_usd", "upper_usd"]);
            let points = json["series"].as_array().unwrap();
            assert_eq!(rows.len(), points.len(), "{path}");
            for (row, point) in rows.iter().zip(points) {
                assert_eq!(row[0], *slug);
                let expected: Vec<String> = ["date", "mark_usd", "lower_usd", "upper_usd"]
                    .iter()
                    .map(|f| cell(&point[f]))
                    .collect();
                assert_eq!(row[1..], expected[..], "{path}");
            }
            assert_eq!(
                reply.header("x-methodology-version"),
                json["meta"]["methodology_version"].as_str()
            );
            assert_eq!(
                reply.header("x-dataset-version"),
                json["meta"]["dataset_version"].as_str()
            );
        }
        let path = format!("/v1/companies/{slug}/events");
        let json = server.get(&path, Some(PRO)).await.json();
        let reply = server.get_with(&path, &[("x-api-key", PRO), CSV]).await;
        let (header, rows) = parse_csv(&reply.body);
        let events = json["events"].as_array().unwrap();
        assert_eq!(rows.len(), events.len());
        for (row, event) in rows.iter().zip(events) {
            for (column, got) in header.iter().zip(row) {
                let expected = if column == "slug" {
                    slug.clone()
                } else {
                    cell(&event[column])
                };
                let expected = match expected.chars().next() {
                    Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{expected}"),
                    _ => expected,
                };
                assert_eq!(got, &expected, "{path} {column}");
            }
        }
    }
}

#[tokio::test]
async fn the_exports_as_csv_equal_their_ndjson() {
    let server = TestServer::start().await;
    let lines = |body: &[u8]| -> Vec<Value> {
        body.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    };
    let json = lines(&server.get("/v1/export", Some(ENTERPRISE)).await.body);
    let reply = server.get_with("/v1/export", &[("x-api-key", ENTERPRISE), CSV]).await;
    assert_eq!(reply.status, 200);
    let (header, rows) = parse_csv(&reply.body);
    assert!(header.contains(&"lower_95_usd".to_string()));
    assert_company_rows_equal(&header, &rows, &json[1..], "export");

    for coverage in [80, 95] {
        let path = format!("/v1/export/series?coverage={coverage}");
        let json = lines(&server.get(&path, Some(ENTERPRISE)).await.body);
        let reply = server.get_with(&path, &[("x-api-key", ENTERPRISE), CSV]).await;
        let (_, rows) = parse_csv(&reply.body);
        let expected: Vec<Vec<String>> = json[1..]
            .iter()
            .flat_map(|line| {
                let slug = line["slug"].as_str().unwrap().to_string();
                line["series"].as_array().unwrap().iter().map(move |p| {
                    let mut row = vec![slug.clone()];
                    row.extend(
                        ["date", "mark_usd", "lower_usd", "upper_usd"]
                            .iter()
                            .map(|f| cell(&p[f])),
                    );
                    row
                })
            })
            .collect();
        assert_eq!(rows.len(), expected.len(), "{path}");
        assert!(rows == expected, "{path}: CSV rows differ from the NDJSON points");
    }
}

#[tokio::test]
async fn each_form_has_its_own_etag_and_both_vary_on_accept() {
    let server = TestServer::start().await;
    for path in [
        "/v1/companies?limit=5",
        "/v1/companies/stripe/marks",
        "/v1/companies/stripe/events",
    ] {
        let json = server.get(path, Some(ENTERPRISE)).await;
        let csv = server.get_with(path, &[("x-api-key", ENTERPRISE), CSV]).await;
        assert_eq!(json.header("content-type"), Some("application/json"));
        for reply in [&json, &csv] {
            assert!(reply.header("vary").unwrap().contains("Accept"), "{path}");
        }
        let (json_tag, csv_tag) = (json.header("etag").unwrap(), csv.header("etag").unwrap());
        assert_ne!(json_tag, csv_tag, "{path}");
        let again = server
            .get_with(path, &[("x-api-key", ENTERPRISE), CSV, ("if-none-match", csv_tag)])
            .await;
        assert_eq!(again.status, 304, "{path}");
        // A JSON ETag does not validate the CSV form.
        let other = server
            .get_with(path, &[("x-api-key", ENTERPRISE), CSV, ("if-none-match", json_tag)])
            .await;
        assert_eq!(other.status, 200, "{path}");
    }
    // JSON stays the default, and wins a tie.
    let tie = server
        .get_with(
            "/v1/companies/stripe/marks",
            &[("x-api-key", ENTERPRISE), ("accept", "text/csv, application/json")],
        )
        .await;
    assert_eq!(tie.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn a_cell_a_spreadsheet_would_run_is_neutralised() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("hostile");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("dataset.toml"),
        "dataset_version = \"2025-06-30\"\nas_of = \"2025-06-30\"\ndata_mode = \"illustrative\"\nprovenance = \"backtest\"\ndisclaimer = \"test\"\n",
    )
    .unwrap();
    std::fs::write(
        source.join("companies.csv"),
        "slug,name,sector,status,aliases\nevil,\"=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",fintech,private,+cmd;@SUM(A1)\n",
    )
    .unwrap();
    std::fs::write(
        source.join("events.csv"),
        "event_id,slug,event_type,occurred_on,valuation_usd,source_url,note\n\
         e1,evil,primary_round,2024-01-01,1000000000,https://example.com/a,-2+3\n\
         e2,evil,primary_round,2025-01-01,2000000000,https://example.com/b,\"@x, \"\"quoted\"\"\"\n",
    )
    .unwrap();
    let snapshot = dir.path().join("hostile.snap");
    build(&source, &snapshot);
    let server = TestServer::start_with(Options {
        snapshot: Some(snapshot),
        ..Options::default()
    })
    .await;
    let list = server
        .get_with("/v1/companies", &[("x-api-key", ENTERPRISE), CSV])
        .await;
    let (_, rows) = parse_csv(&list.body);
    assert_eq!(rows[0][1], "'=HYPERLINK(\"http://x\",\"y\")");
    assert_eq!(rows[0][2], "'+cmd; @SUM(A1)");
    let json = server.get("/v1/companies", Some(ENTERPRISE)).await.json();
    assert_eq!(
        json["companies"][0]["name"], "=HYPERLINK(\"http://x\",\"y\")",
        "JSON keeps the text as it is"
    );
    let events = server
        .get_with("/v1/companies/evil/events", &[("x-api-key", ENTERPRISE), CSV])
        .await;
    let (header, rows) = parse_csv(&events.body);
    let note = header.iter().position(|c| c == "note").unwrap();
    assert_eq!(rows[0][note], "'-2+3");
    assert_eq!(rows[1][note], "'@x, \"quoted\"");
}

/// Spreadsheets skip leading blanks before a formula: a note that starts with spaces and then
/// `=`, `@`, `+` or `-` is neutralised too, while the JSON keeps it as it is.
#[tokio::test]
async fn a_formula_behind_leading_blanks_is_neutralised() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("blanks");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("dataset.toml"),
        "dataset_version = \"2025-06-30\"\nas_of = \"2025-06-30\"\ndata_mode = \"illustrative\"\nprovenance = \"backtest\"\ndisclaimer = \"test\"\n",
    )
    .unwrap();
    std::fs::write(
        source.join("companies.csv"),
        "slug,name,sector,status,aliases\nblank,Blank Co,fintech,private,\n",
    )
    .unwrap();
    let notes = [" =1+2", "   @SUM(A1)", " +cmd", "  -2+3", " plain note", "a - b"];
    let mut events = "event_id,slug,event_type,occurred_on,valuation_usd,source_url,note\n".to_string();
    for (i, note) in notes.iter().enumerate() {
        events.push_str(&format!(
            "e{i},blank,primary_round,2024-0{}-01,{},https://example.com/{i},\"{note}\"\n",
            i + 1,
            (i + 1) * 1_000_000_000
        ));
    }
    std::fs::write(source.join("events.csv"), events).unwrap();
    let snapshot = dir.path().join("blanks.snap");
    build(&source, &snapshot);
    let server = TestServer::start_with(Options {
        snapshot: Some(snapshot),
        ..Options::default()
    })
    .await;
    let csv = server
        .get_with("/v1/companies/blank/events", &[("x-api-key", ENTERPRISE), CSV])
        .await;
    assert_eq!(csv.status, 200);
    let (header, rows) = parse_csv(&csv.body);
    let note = header.iter().position(|c| c == "note").unwrap();
    let written: Vec<&str> = rows.iter().map(|row| row[note].as_str()).collect();
    assert_eq!(
        written,
        ["' =1+2", "'   @SUM(A1)", "' +cmd", "'  -2+3", " plain note", "a - b"]
    );
    let json = server.get("/v1/companies/blank/events", Some(ENTERPRISE)).await.json();
    let kept: Vec<&str> = json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["note"].as_str().unwrap())
        .collect();
    assert_eq!(kept, notes, "JSON keeps the text as it is");
}

/// `Accept` read as RFC 9110 says: its lines are one list, a weight's name is in any case.
#[tokio::test]
async fn accept_lines_are_joined_and_weights_read_in_any_case() {
    let server = TestServer::start().await;
    let path = "/v1/companies/stripe/marks";
    let media = async |accept: &[&str]| {
        let mut headers = vec![("x-api-key", ENTERPRISE)];
        headers.extend(accept.iter().map(|value| ("accept", *value)));
        let reply = server.get_with(path, &headers).await;
        assert_eq!(reply.status, 200, "{accept:?}");
        reply
            .header("content-type")
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string()
    };
    // Two lines, JSON and CSV: one list, a tie, so JSON.
    assert_eq!(media(&["application/json", "text/csv"]).await, "application/json");
    assert_eq!(media(&["application/json;q=0.5", "text/csv"]).await, "text/csv");
    assert_eq!(media(&["text/csv;q=0.5", "application/json"]).await, "application/json");
    // Q=0 is q=0: not acceptable.
    assert_eq!(media(&["text/csv;Q=0"]).await, "application/json");
    assert_eq!(media(&["text/csv;Q=1, application/json;Q=0.1"]).await, "text/csv");
    assert_eq!(media(&["text/csv"]).await, "text/csv");
}

fn dates_of(points: &[Value]) -> Vec<String> {
    points.iter().map(|p| p["date"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn date_ranges_cut_the_series_exactly() {
    let server = TestServer::start().await;
    for slug in ["stripe", "airbnb", "ftx", "anysphere"] {
        let whole = server
            .get(&format!("/v1/companies/{slug}/marks?coverage=95"), Some(ENTERPRISE))
            .await
            .json();
        let points = whole["series"].as_array().unwrap().clone();
        let dates = dates_of(&points);
        let (first, last) = (dates[0].clone(), dates[dates.len() - 1].clone());
        let inside = [dates[dates.len() / 3].clone(), dates[dates.len() / 2].clone()];
        for (from, to) in [
            (Some(inside[0].clone()), Some(inside[1].clone())),
            (Some(inside[1].clone()), None),
            (None, Some(inside[0].clone())),
            (Some(first.clone()), Some(first.clone())),
            (Some(last.clone()), Some(last.clone())),
            (Some("1990-01-01".to_string()), Some("2100-01-01".to_string())),
            (Some("2100-01-01".to_string()), None),
        ] {
            let mut query = format!("/v1/companies/{slug}/marks?coverage=95");
            if let Some(from) = &from {
                query.push_str(&format!("&from={from}"));
            }
            if let Some(to) = &to {
                query.push_str(&format!("&to={to}"));
            }
            let expected: Vec<&Value> = points
                .iter()
                .filter(|p| {
                    let date = p["date"].as_str().unwrap();
                    from.as_deref().is_none_or(|f| date >= f) && to.as_deref().is_none_or(|t| date <= t)
                })
                .collect();
            let cut = server.get(&query, Some(ENTERPRISE)).await;
            assert_eq!(cut.status, 200, "{query}");
            let body = cut.json();
            assert_eq!(body["meta"], whole["meta"]);
            assert_eq!(body["slug"], whole["slug"]);
            let got: Vec<&Value> = body["series"].as_array().unwrap().iter().collect();
            assert_eq!(got, expected, "{query}");
            let csv = server.get_with(&query, &[("x-api-key", ENTERPRISE), CSV]).await;
            let (_, rows) = parse_csv(&csv.body);
            let csv_dates: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
            let json_dates: Vec<&str> = expected.iter().map(|p| p["date"].as_str().unwrap()).collect();
            assert_eq!(csv_dates, json_dates, "{query} as CSV");
            let tag = cut.header("etag").unwrap();
            let again = server
                .get_with(&query, &[("x-api-key", ENTERPRISE), ("if-none-match", tag)])
                .await;
            assert_eq!(again.status, 304);
        }
    }
}

#[tokio::test]
async fn a_ranged_series_export_is_every_series_cut_to_the_range() {
    let server = TestServer::start().await;
    let (from, to) = ("2024-06-01", "2024-06-30");
    let reply = server
        .get(&format!("/v1/export/series?from={from}&to={to}"), Some(ENTERPRISE))
        .await;
    assert_eq!(reply.status, 200);
    let lines: Vec<Value> = reply
        .body
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines[0]["from"], from);
    assert_eq!(lines[0]["to"], to);
    let companies = sample_csv("companies.csv");
    assert_eq!(lines.len(), companies.len() + 1);
    for line in &lines[1..] {
        let slug = line["slug"].as_str().unwrap();
        let expected = server
            .get(
                &format!("/v1/companies/{slug}/marks?from={from}&to={to}"),
                Some(ENTERPRISE),
            )
            .await
            .json();
        assert_eq!(line["series"], expected["series"], "{slug}");
        assert_eq!(line["coverage"], 80);
    }
    let csv = server
        .get_with(
            &format!("/v1/export/series?from={from}&to={to}"),
            &[("x-api-key", ENTERPRISE), CSV],
        )
        .await;
    let (_, rows) = parse_csv(&csv.body);
    let points: usize = lines[1..].iter().map(|l| l["series"].as_array().unwrap().len()).sum();
    assert_eq!(rows.len(), points);
    assert!(rows.iter().all(|r| r[1].as_str() >= from && r[1].as_str() <= to));
}

#[tokio::test]
async fn a_bad_range_is_refused_naming_the_parameter() {
    let server = TestServer::start().await;
    for (query, name) in [
        ("from=2024-13-01", "from"),
        ("to=yesterday", "to"),
        ("from=2024-02-30", "from"),
        ("from=2024-06-02&to=2024-06-01", "from"),
        ("from=2024-06-01&from=2024-06-02", "from"),
    ] {
        for path in ["/v1/companies/stripe/marks", "/v1/export/series"] {
            let problem = server
                .get(&format!("{path}?{query}"), Some(ENTERPRISE))
                .await
                .assert_problem(422, "invalid_parameter");
            assert!(
                problem["detail"].as_str().unwrap().contains(&format!("\"{name}\"")),
                "{problem}"
            );
        }
    }
}

#[tokio::test]
async fn the_csv_forms_keep_the_tiers() {
    let server = TestServer::start_with(Options {
        keys_toml: Some(demo_keys_with_rate(100_000)),
        ..Options::default()
    })
    .await;
    let free = server
        .get_with("/v1/companies?limit=200", &[("x-api-key", FREE), CSV])
        .await;
    let (_, rows) = parse_csv(&free.body);
    assert_eq!(rows.len(), 10, "the free tier's ten companies only");
    assert!(free.header("x-universe-note").is_some());
    for row in sample_csv("companies.csv") {
        let slug = row[0].as_str();
        let series = server
            .get_with(&format!("/v1/companies/{slug}/marks"), &[("x-api-key", FREE), CSV])
            .await;
        assert_eq!(series.status, 403, "{slug}: series are Research's, in any form");
        let events = server
            .get_with(&format!("/v1/companies/{slug}/events"), &[("x-api-key", RESEARCH), CSV])
            .await;
        assert_eq!(events.status, 403, "{slug}: events are Pro's, in any form");
        let wide = server
            .get_with(
                &format!("/v1/companies/{slug}/marks?coverage=95&from=2024-01-01"),
                &[("x-api-key", RESEARCH), CSV],
            )
            .await;
        assert_eq!(wide.status, 403, "{slug}: coverage 95 is Pro's, in any form");
    }
    for key in [FREE, RESEARCH, PRO] {
        for path in ["/v1/export", "/v1/export/series", "/v1/export/series?from=2024-01-01"] {
            let reply = server.get_with(path, &[("x-api-key", key), CSV]).await;
            assert_eq!(reply.status, 403, "{key} {path}");
        }
    }
}

/// The cache of decoded texts: its hits, misses and bytes held, from `/metrics`.
async fn decoded_cache(server: &TestServer) -> (f64, f64, f64) {
    let text = String::from_utf8(server.get("/metrics", None).await.body.to_vec()).unwrap();
    let read = |name: &str| metric(&text, name).unwrap_or_else(|| panic!("{name} in /metrics"));
    (
        read("marks_decoded_cache_hits_total"),
        read("marks_decoded_cache_misses_total"),
        read("marks_decoded_cache_bytes"),
    )
}

/// A company's series is stored once, compressed, as its part of the series export: for every
/// company, form and coverage, the gzip answer (sent as stored) decodes to the text answer
/// (decoded by the server) byte for byte, each under its own ETag, and both revalidate; so do
/// the backtests and published entries, stored as gzip only. A text is decoded once and then
/// kept: a second request is a hit of the cache of decoded texts, and a pass over every company
/// (an index's constituents) leaves the cache as it was.
#[tokio::test]
async fn texts_stored_compressed_answer_gzip_as_stored_and_text_decoded() {
    let server = TestServer::start().await;
    let gzip = ("accept-encoding", "gzip");
    let mut text_bytes = 0;
    for row in &sample_csv("companies.csv") {
        let slug = &row[0];
        for coverage in [80, 95] {
            let path = format!("/v1/companies/{slug}/marks?coverage={coverage}");
            for form in [("accept", "application/json"), CSV] {
                let key = ("x-api-key", ENTERPRISE);
                let text = server.get_with(&path, &[key, form]).await;
                let zipped = server.get_with(&path, &[key, form, gzip]).await;
                assert_eq!((text.status, zipped.status), (200, 200), "{path}");
                assert_eq!(zipped.header("content-encoding"), Some("gzip"), "{path}");
                assert_eq!(text.header("content-encoding"), None, "{path}");
                let mut decoded = Vec::new();
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&zipped.body[..]), &mut decoded).unwrap();
                assert_eq!(decoded, text.body, "{path} {form:?}: the gzip answer is the text");
                let (text_tag, zipped_tag) = (text.header("etag").unwrap(), zipped.header("etag").unwrap());
                assert_ne!(text_tag, zipped_tag, "{path}: each encoding has its own ETag");
                for (tag, encoding) in [(text_tag, None), (zipped_tag, Some(gzip))] {
                    let mut headers = vec![key, form, ("if-none-match", tag)];
                    headers.extend(encoding);
                    assert_eq!(server.get_with(&path, &headers).await.status, 304, "{path}");
                }
                text_bytes += text.body.len();
            }
        }
    }
    // A company's backtests and published entries are stored as gzip only, decoded the same way.
    for row in sample_csv("companies.csv").iter().take(40) {
        let slug = &row[0];
        for (path, form) in [
            (format!("/v1/companies/{slug}/backtest"), ("accept", "application/json")),
            (
                format!("/v1/companies/{slug}/published"),
                ("accept", "application/json"),
            ),
            (format!("/v1/companies/{slug}/published"), CSV),
        ] {
            let key = ("x-api-key", ENTERPRISE);
            let text = server.get_with(&path, &[key, form]).await;
            let zipped = server.get_with(&path, &[key, form, gzip]).await;
            assert_eq!((text.status, zipped.status), (200, 200), "{path}");
            assert_eq!(zipped.header("content-encoding"), Some("gzip"), "{path}");
            let mut decoded = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&zipped.body[..]), &mut decoded).unwrap();
            assert_eq!(decoded, text.body, "{path} {form:?}: the gzip answer is the text");
            assert_ne!(text.header("etag"), zipped.header("etag"), "{path}");
            text_bytes += text.body.len();
        }
    }
    // Every text was decoded once (the 304s decode nothing), and all of them fit the cache.
    let (hits, misses, bytes) = decoded_cache(&server).await;
    assert_eq!(bytes, text_bytes as f64, "the cache holds every text decoded");
    let path = "/v1/companies/stripe/marks?coverage=95";
    let again = server.get_with(path, &[("x-api-key", ENTERPRISE)]).await;
    assert_eq!(again.status, 200);
    let (hits_after, misses_after, _) = decoded_cache(&server).await;
    assert_eq!(
        (hits_after, misses_after),
        (hits + 1.0, misses),
        "a text asked for again is found decoded"
    );

    // A server whose cache holds one series: a pass over every company keeps nothing new.
    let small = TestServer::start_with(Options::settings(|s| s.exports.decoded_cache_mib = 1)).await;
    let first = small.get_with(path, &[("x-api-key", ENTERPRISE)]).await;
    let (_, _, held) = decoded_cache(&small).await;
    assert_eq!(held, first.body.len() as f64);
    let constituents = small.get("/v1/indices/all/constituents", Some(ENTERPRISE)).await;
    assert_eq!(constituents.status, 200);
    let (_, _, held_after) = decoded_cache(&small).await;
    assert_eq!(held_after, held, "the constituents' pass keeps no series");
    let range = small.get(&format!("{path}&from=2025-01-01"), Some(ENTERPRISE)).await;
    assert_eq!(range.status, 200);
    assert_eq!(
        small.get_with(path, &[("x-api-key", ENTERPRISE)]).await.body,
        first.body,
        "the series kept is still served"
    );
}
