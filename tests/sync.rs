//! Mirroring and syncing: the bulk export (`GET /v1/export`, `/v1/export/series`) against the
//! per-company endpoints it stands for, its conditional and range requests, and the change log
//! (`GET /v1/changes?since=`) against what a client sees change from one version to the next;
//! and the scored targets, stored as gzip only like the exports and decoded for a client
//! without gzip within the same decoders.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::Value;

use crate::util::*;

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut text).unwrap();
    text
}

/// An export's lines, parsed: the header line, then one value per company.
fn ndjson(text: &[u8]) -> (Value, Vec<Value>) {
    let text = std::str::from_utf8(text).unwrap();
    assert!(text.ends_with('\n'), "every line ends with a newline");
    let mut lines = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap());
    let header = lines.next().expect("a header line");
    (header, lines.collect())
}

async fn gzip_export(server: &TestServer, path: &str) -> Reply {
    server
        .get_with(path, &[("x-api-key", ENTERPRISE), ("accept-encoding", "gzip")])
        .await
}

#[tokio::test]
async fn the_export_is_every_company_with_its_mark_bands_events_and_signed_record() {
    let server = TestServer::start().await;
    let reply = gzip_export(&server, "/v1/export").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(reply.header("content-encoding"), Some("gzip"));
    assert_eq!(reply.header("vary"), Some("X-API-Key, Accept, Accept-Encoding"));
    assert_eq!(reply.header("accept-ranges"), Some("bytes"));
    assert_eq!(reply.header("cache-control"), Some("private, no-cache"));
    assert!(reply.header("etag").is_some_and(|t| t.starts_with('"')));
    // A fresh key's first request leaves its budget one short: one request, one unit.
    assert_eq!(reply.header_u64("x-ratelimit-remaining"), 5999);

    let (header, lines) = ndjson(&gunzip(&reply.body));
    let usage = server.get("/v1/usage", Some(ENTERPRISE)).await.json();
    assert_eq!(header["meta"], usage["meta"]);
    assert_eq!(header["export"], "companies");
    let mut slugs: Vec<String> = sample_csv("companies.csv")
        .into_iter()
        .map(|row| row[0].clone())
        .collect();
    slugs.sort();
    assert_eq!(header["companies"], slugs.len());
    let exported: Vec<&str> = lines.iter().map(|l| l["slug"].as_str().unwrap()).collect();
    assert_eq!(exported, slugs, "one line per company, in slug order");

    let keys = marks_format::rules::signatures::parse_jwks(&server.get("/v1/signing-keys", None).await.body);
    for line in &lines {
        let slug = line["slug"].as_str().unwrap();
        let profile = server
            .get(&format!("/v1/companies/{slug}"), Some(ENTERPRISE))
            .await
            .json();
        for field in ["name", "sector", "status", "delta_30d_pct"] {
            assert_eq!(line[field], profile[field], "{slug} {field}");
        }
        let mut latest = line["latest_mark"].clone();
        let band_95 = latest.as_object_mut().unwrap().remove("band_95").expect("band_95");
        assert_eq!(
            latest, profile["latest_mark"],
            "{slug}: the same latest mark as getCompany"
        );
        let series_95 = server
            .get(&format!("/v1/companies/{slug}/marks?coverage=95"), Some(ENTERPRISE))
            .await
            .json();
        let last = series_95["series"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            (band_95["lower_usd"].clone(), band_95["upper_usd"].clone()),
            (last["lower_usd"].clone(), last["upper_usd"].clone()),
            "{slug}: band_95 is the last point of the 95% series"
        );
        let events = server
            .get(&format!("/v1/companies/{slug}/events"), Some(ENTERPRISE))
            .await
            .json();
        assert_eq!(line["events"], events["events"], "{slug}");
        let resolution = server
            .get(&format!("/v1/companies/{slug}/resolution"), Some(ENTERPRISE))
            .await;
        assert_eq!(line["resolution"], resolution.json(), "{slug}");
        let record = serde_json::to_vec(&line["resolution"]).unwrap();
        assert_eq!(
            marks_format::rules::signatures::verify_record(&record, &keys),
            Ok(()),
            "{slug}"
        );
    }
}

#[tokio::test]
async fn the_series_exports_hold_every_company_series_at_their_coverage() {
    let server = TestServer::start().await;
    for (query, coverage) in [("", 80), ("?coverage=80", 80), ("?coverage=95", 95)] {
        let reply = gzip_export(&server, &format!("/v1/export/series{query}")).await;
        assert_eq!(reply.status, 200, "{query}");
        let (header, lines) = ndjson(&gunzip(&reply.body));
        assert_eq!(
            (header["export"].as_str(), header["coverage"].as_u64()),
            (Some("series"), Some(coverage))
        );
        assert_eq!(header["companies"], lines.len());
        for line in lines.iter().step_by(7) {
            let slug = line["slug"].as_str().unwrap();
            let mut body = server
                .get(
                    &format!("/v1/companies/{slug}/marks?coverage={coverage}"),
                    Some(ENTERPRISE),
                )
                .await
                .json();
            body.as_object_mut().unwrap().remove("meta");
            assert_eq!(*line, body, "{slug}: the line is getMarkSeries without meta");
        }
    }
    let bad = server.get("/v1/export/series?coverage=90", Some(ENTERPRISE)).await;
    bad.assert_problem(422, "invalid_coverage");
    let unknown = server.get("/v1/export?since=2026-01-01", Some(ENTERPRISE)).await;
    unknown.assert_problem(422, "invalid_parameter");
    for key in [FREE, RESEARCH, PRO, BUSINESS] {
        for path in ["/v1/export", "/v1/export/series"] {
            let refused = server.get(path, Some(key)).await;
            let body = refused.assert_problem(403, "tier_forbidden");
            assert!(body["detail"].as_str().unwrap().contains("enterprise tier"), "{body}");
        }
    }
    server
        .get("/v1/export", None)
        .await
        .assert_problem(401, "missing_api_key");
}

#[tokio::test]
async fn a_client_without_gzip_gets_the_same_text_decoded() {
    let server = TestServer::start().await;
    for path in ["/v1/export", "/v1/export/series?coverage=95"] {
        let gzip = gzip_export(&server, path).await;
        let plain = server.get(path, Some(ENTERPRISE)).await;
        assert_eq!(plain.status, 200);
        assert_eq!(plain.header("content-encoding"), None);
        assert_eq!(plain.header_u64("content-length"), plain.body.len() as u64);
        assert_eq!(plain.body, gunzip(&gzip.body), "{path}");
        assert_ne!(
            plain.header("etag"),
            gzip.header("etag"),
            "each representation has its own tag"
        );
        let refused = server
            .get_with(path, &[("x-api-key", ENTERPRISE), ("accept-encoding", "gzip;q=0, br")])
            .await;
        assert_eq!(
            (refused.header("content-encoding"), refused.body.len()),
            (None, plain.body.len())
        );
        let head = request(server.addr, http::Method::HEAD, path, &[("x-api-key", ENTERPRISE)]).await;
        assert_eq!(head.status, 200);
        assert!(head.body.is_empty());
        assert_eq!(head.header_u64("content-length"), plain.body.len() as u64);
        // Ranges are for GET (RFC 9110 14.2): a HEAD with one describes the whole.
        let ranged_head = request(
            server.addr,
            http::Method::HEAD,
            path,
            &[("x-api-key", ENTERPRISE), ("range", "bytes=0-9")],
        )
        .await;
        assert_eq!((ranged_head.status, ranged_head.header("content-range")), (200, None));
        assert_eq!(ranged_head.header_u64("content-length"), plain.body.len() as u64);
        // A range deep into the text is reached by decoding up to it, over many polls.
        let deep = plain.body.len() * 2 / 3;
        let tail = server
            .get_with(path, &[("x-api-key", ENTERPRISE), ("range", &format!("bytes={deep}-"))])
            .await;
        assert_eq!(tail.status, 206);
        assert_eq!(&tail.body[..], &plain.body[deep..], "{path}");
    }
}

/// `GET /v1/export` with the enterprise key, the given `Accept-Encoding` and more headers.
async fn export_with(server: &TestServer, encoding: &str, more: &[(&str, &str)]) -> Reply {
    let mut headers = vec![("x-api-key", ENTERPRISE), ("accept-encoding", encoding)];
    headers.extend_from_slice(more);
    server.get_with("/v1/export", &headers).await
}

#[tokio::test]
async fn a_broken_download_resumes_with_range_and_if_range() {
    let server = TestServer::start().await;
    for encoding in ["gzip", "identity"] {
        let full = export_with(&server, encoding, &[]).await;
        let etag = full.header("etag").unwrap().to_string();
        let len = full.body.len();
        let cut = len / 3;
        // The first part arrived before the connection broke; the rest is asked for by range.
        let from_cut = format!("bytes={cut}-");
        let rest = export_with(&server, encoding, &[("range", &from_cut), ("if-range", &etag)]).await;
        assert_eq!(rest.status, 206, "{encoding}");
        assert_eq!(
            rest.header("content-range"),
            Some(format!("bytes {cut}-{}/{len}", len - 1).as_str())
        );
        assert_eq!(rest.header("etag"), Some(etag.as_str()));
        assert_eq!(rest.header_u64("content-length"), (len - cut) as u64);
        let resumed = [&full.body[..cut], &rest.body[..]].concat();
        assert_eq!(resumed, full.body, "{encoding}: the two parts make the whole");

        let middle = export_with(&server, encoding, &[("range", "bytes=10-19")]).await;
        assert_eq!((middle.status, &middle.body[..]), (206, &full.body[10..20]));
        let suffix = export_with(&server, encoding, &[("range", "bytes=-5")]).await;
        assert_eq!((suffix.status, &suffix.body[..]), (206, &full.body[len - 5..]));

        // A partial copy of another version of the export gets the whole current one.
        let stale = export_with(
            &server,
            encoding,
            &[("range", &from_cut), ("if-range", "\"0000000000000000\"")],
        )
        .await;
        assert_eq!((stale.status, stale.body.len()), (200, len));
        // Several ranges at once are not served: the whole is.
        let several = export_with(&server, encoding, &[("range", "bytes=0-1,5-6")]).await;
        assert_eq!((several.status, several.body.len()), (200, len));

        let past = export_with(&server, encoding, &[("range", &format!("bytes={len}-"))]).await;
        past.assert_problem(416, "range_not_satisfiable");
        assert_eq!(past.header("content-range"), Some(format!("bytes */{len}").as_str()));

        let unchanged = export_with(&server, encoding, &[("if-none-match", &etag)]).await;
        assert_eq!((unchanged.status, unchanged.body.len()), (304, 0));
        assert_eq!(unchanged.header("etag"), Some(etag.as_str()));
    }
}

/// What an export says of each company, for telling what changed between two versions the way
/// a client mirroring the data would.
#[derive(Debug, PartialEq)]
struct Mirrored {
    latest_mark: Value,
    status: Value,
    events: usize,
}

async fn mirror(server: &TestServer) -> BTreeMap<String, Mirrored> {
    let reply = gzip_export(server, "/v1/export").await;
    assert_eq!(reply.status, 200);
    let (_, lines) = ndjson(&gunzip(&reply.body));
    lines
        .into_iter()
        .map(|line| {
            // The change log's "mark": anything of the latest mark changed (its value, bands,
            // confidence, next_reported, vs_last_event_pct: the OpenAPI document's ChangeKind).
            let mark = line["latest_mark"].clone();
            (
                line["slug"].as_str().unwrap().to_string(),
                Mirrored {
                    latest_mark: mark,
                    status: line["status"].clone(),
                    events: line["events"].as_array().unwrap().len(),
                },
            )
        })
        .collect()
}

/// Every change since `since`, walked page by page.
async fn changes_since(server: &TestServer, since: &str, limit: usize) -> (Value, BTreeMap<String, Value>) {
    let mut cursor: Option<String> = None;
    let mut seen = BTreeMap::new();
    let mut first = None;
    loop {
        let mut path = format!("/v1/changes?since={since}&limit={limit}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let reply = server.get(&path, Some(PRO)).await;
        assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
        let body = reply.json();
        let changes = body["changes"].as_array().unwrap();
        assert!(changes.len() <= limit);
        for change in changes {
            let slug = change["slug"].as_str().unwrap().to_string();
            assert!(
                seen.insert(slug.clone(), change.clone()).is_none(),
                "{slug} listed twice"
            );
        }
        cursor = body["page"]["next_cursor"].as_str().map(str::to_string);
        assert_eq!(body["page"]["has_more"], cursor.is_some());
        first.get_or_insert(body);
        if cursor.is_none() {
            break;
        }
    }
    let slugs: Vec<&String> = seen.keys().collect();
    let mut sorted = slugs.clone();
    sorted.sort();
    assert_eq!(slugs, sorted, "in slug order");
    (first.unwrap(), seen)
}

#[tokio::test]
async fn changes_since_each_earlier_version_are_what_a_mirror_saw_change() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_chain(dir.path(), 4, |v, source, version| match v {
        // New events for one company.
        1 => append_line(
            &source.join("events.csv"),
            &format!("c0001,synth-000001,tender_offer,{version},1500000000,https://example.com/t,"),
        ),
        // A new company.
        2 => {
            append_line(
                &source.join("companies.csv"),
                "synth-new,Synthetic Newcomer,fintech,private",
            );
            append_line(
                &source.join("events.csv"),
                &format!("c0002,synth-new,primary_round,{version},800000000,https://example.com/n,"),
            );
        }
        // A listing: a new event and a new status.
        _ => {
            let companies = std::fs::read_to_string(source.join("companies.csv")).unwrap();
            let line = companies.lines().find(|l| l.starts_with("synth-000002,")).unwrap();
            let listed = line.replace(",private", ",ipo_completed");
            std::fs::write(source.join("companies.csv"), companies.replace(line, &listed)).unwrap();
            append_line(
                &source.join("events.csv"),
                &format!("c0003,synth-000002,ipo,{version},2500000000,https://example.com/i,"),
            );
        }
    });
    let server = TestServer::start_with(Options {
        snapshot: Some(versions[0].1.clone()),
        ..Options::default()
    })
    .await;
    let mut mirrors = Vec::new();
    for (version, path) in &versions {
        server.publish(path);
        server.wait_for_dataset(version).await;
        mirrors.push(mirror(&server).await);
    }
    let all: Vec<&str> = versions.iter().map(|(v, _)| v.as_str()).collect();
    let now = mirrors.last().unwrap();
    let listed = server.get("/v1/companies?limit=200", Some(PRO)).await.json();
    let listed = listed["companies"].as_array().unwrap();
    for (k, since) in all.iter().enumerate() {
        let (first_page, changes) = changes_since(&server, since, 7).await;
        assert_eq!(first_page["since"], *since);
        assert_eq!(first_page["dataset_version"], *all.last().unwrap());
        assert_eq!(
            first_page["versions"],
            serde_json::json!(all[k..]),
            "the chain in between"
        );
        assert_eq!(first_page["meta"]["dataset_version"], *all.last().unwrap());
        let then = &mirrors[k];
        let mut expected = BTreeMap::new();
        for (slug, current) in now {
            let kinds: Vec<&str> = match then.get(slug) {
                None => vec!["added"],
                Some(old) => [
                    ("events", old.events != current.events),
                    ("mark", old.latest_mark != current.latest_mark),
                    ("status", old.status != current.status),
                ]
                .into_iter()
                .filter(|(_, changed)| *changed)
                .map(|(kind, _)| kind)
                .collect(),
            };
            if !kinds.is_empty() {
                let added = current.events - then.get(slug).map_or(0, |old| old.events);
                expected.insert(slug.clone(), (serde_json::json!(kinds), added));
            }
        }
        let reported: BTreeMap<String, (Value, usize)> = changes
            .iter()
            .map(|(slug, c)| {
                (
                    slug.clone(),
                    (c["changes"].clone(), c["events_added"].as_u64().unwrap() as usize),
                )
            })
            .collect();
        assert_eq!(reported, expected, "since {since}");
        if k + 1 == all.len() {
            assert!(changes.is_empty(), "nothing changed since the version served");
        }
        for (slug, change) in &changes {
            let item = listed.iter().find(|c| c["slug"] == *slug).unwrap();
            assert_eq!(
                change["company"], *item,
                "{slug}: the company as listCompanies shows it now"
            );
        }
    }
    let (_, since_first) = changes_since(&server, all[0], 200).await;
    assert_eq!(since_first["synth-new"]["changes"], serde_json::json!(["added"]));
    assert_eq!(
        since_first["synth-000002"]["changes"],
        serde_json::json!(["events", "mark", "status"])
    );
    assert_eq!(since_first["synth-000001"]["events_added"], 1);
}

#[tokio::test]
async fn a_since_the_log_cannot_answer_is_refused_with_the_way_to_resync() {
    let dir = tempfile::tempdir().unwrap();
    let versions = build_versions(dir.path(), 3);
    let server = TestServer::start_with(Options {
        snapshot: Some(versions[2].1.clone()),
        ..Options::default()
    })
    .await;
    for since in [
        "2026-06-29",
        "2026-07-15",
        "2026-06-30T00:00:00Z",
        "yesterday",
        "2026-13-01",
        "",
    ] {
        let reply = server.get(&format!("/v1/changes?since={since}"), Some(PRO)).await;
        let body = reply.assert_problem(422, "invalid_parameter");
        assert!(body["detail"].as_str().unwrap().contains("since"), "{body}");
    }
    for since in ["2026-06-29", "2026-07-15"] {
        let body = server
            .get(&format!("/v1/changes?since={since}"), Some(PRO))
            .await
            .json();
        assert!(body["detail"].as_str().unwrap().contains("/v1/export"), "{body}");
    }
    let missing = server.get("/v1/changes", Some(PRO)).await;
    assert!(missing.assert_problem(422, "invalid_parameter")["detail"]
        .as_str()
        .unwrap()
        .contains("required"));
    server
        .get("/v1/changes?since=2026-06-30&limit=0", Some(PRO))
        .await
        .assert_problem(422, "invalid_parameter");
    server
        .get("/v1/changes?since=2026-06-30&sort=slug", Some(PRO))
        .await
        .assert_problem(422, "invalid_parameter");
    server
        .get("/v1/changes?since=2026-06-30", Some(RESEARCH))
        .await
        .assert_problem(403, "tier_forbidden");
    for key in [PRO, BUSINESS, ENTERPRISE] {
        assert_eq!(server.get("/v1/changes?since=2026-07-02", Some(key)).await.status, 200);
    }

    // A cursor is bound to the version it counts from, and revalidation works as everywhere.
    let page = server.get("/v1/changes?since=2026-06-30&limit=2", Some(PRO)).await;
    let cursor = page.json()["page"]["next_cursor"].as_str().unwrap().to_string();
    server
        .get(
            &format!("/v1/changes?since=2026-07-01&limit=2&cursor={cursor}"),
            Some(PRO),
        )
        .await
        .assert_problem(422, "bad_cursor");
    server
        .get("/v1/changes?since=2026-06-30&limit=2&cursor=AAAA", Some(PRO))
        .await
        .assert_problem(422, "bad_cursor");
    let etag = page.header("etag").unwrap().to_string();
    let again = server
        .get_with(
            "/v1/changes?since=2026-06-30&limit=2",
            &[("x-api-key", PRO), ("if-none-match", &etag)],
        )
        .await;
    assert_eq!((again.status, again.body.len()), (304, 0));
}

/// Sends a GET for a decoded export on a raw connection and reads only the head and the first
/// bytes after it; the connection stays open, unread, for as long as the caller holds it.
async fn start_unread_export(server: &TestServer, path: &str, key: &str) -> (u16, String, tokio::net::TcpStream) {
    start_unread_export_at(server.addr, path, key).await
}

/// An enterprise key of a tenant of its own.
fn second_enterprise_key(server: &TestServer) -> String {
    let (_, key) = marks::keys::edit::issue(
        &server.keys_path,
        marks_format::rules::tiers::Tier::Enterprise,
        "another-tenant",
        None,
    )
    .unwrap();
    server.state.keys.load(&server.keys_path).unwrap();
    key
}

/// One key's readers that stop reading hold its share of the decoders (one place), never all
/// of them: the key's further decoded exports get 429 saying why, and another key's decoded
/// export is served whole meanwhile.
#[tokio::test]
async fn one_keys_stalled_readers_hold_only_its_share_of_the_decoders() {
    let server = TestServer::start().await;
    let other = second_enterprise_key(&server);
    let path = "/v1/export/series?coverage=95";
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(start_unread_export(&server, path, ENTERPRISE).await);
    }
    let statuses: Vec<u16> = held.iter().map(|(status, _, _)| *status).collect();
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 7, "{statuses:?}");
    let refused = held.iter().find(|(status, _, _)| *status == 429).unwrap();
    assert!(
        refused.1.to_ascii_lowercase().contains("retry-after: 5"),
        "{}",
        refused.1
    );
    let refused_again = server.get(path, Some(ENTERPRISE)).await;
    let problem = refused_again.assert_problem(429, "rate_limited");
    assert!(problem["detail"].as_str().unwrap().contains("its share"), "{problem}");
    let theirs = server.get(path, Some(&other)).await;
    assert_eq!(theirs.status, 200, "another key's decoded export is served");
    let gzip = gzip_export(&server, path).await;
    assert_eq!(theirs.body, gunzip(&gzip.body));
    let metrics = String::from_utf8_lossy(&server.get("/metrics", None).await.body).to_string();
    assert_eq!(
        metric(&metrics, "marks_export_decodes_refused_for_share_total"),
        Some(8.0)
    );
    drop(held);
}

/// A reader that trickles (1 KiB every 100 ms) moves far less than the floor (here 1 MiB/s
/// over 1 s windows): once the socket buffers are full its response is cut, its decoder's
/// place freed at once, its key told to wait a window, and the bytes it still reads end short
/// of the length announced.
#[tokio::test]
async fn a_trickling_reader_of_a_decoded_export_is_cut_at_the_floor_rate() {
    use tokio::io::AsyncReadExt;
    let server = TestServer::start_with(Options::settings(|s| {
        s.exports.export_decode_floor_kib_per_sec = 1024;
        s.exports.export_decode_window = std::time::Duration::from_secs(1);
    }))
    .await;
    let path = "/v1/export/series?coverage=95";
    let (status, head, mut stream) = start_unread_export(&server, path, ENTERPRISE).await;
    assert_eq!(status, 200);
    let announced: usize = head
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_string)
        })
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let cut = |server: &TestServer| {
        let server_addr = server.addr;
        async move {
            let text = request(server_addr, http::Method::GET, "/metrics", &[]).await;
            metric(
                &String::from_utf8_lossy(&text.body),
                "marks_export_decodes_cut_slow_total",
            )
        }
    };
    let mut got = head.len();
    let mut piece = [0u8; 1024];
    for _ in 0..600 {
        if cut(&server).await == Some(1.0) {
            break;
        }
        got += stream.read(&mut piece).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(cut(&server).await, Some(1.0), "the trickling reader was never cut");
    // Its place is free at once, but its key waits a window before decoding again, then is
    // served.
    let other = second_enterprise_key(&server);
    let theirs = server
        .get_with(path, &[("x-api-key", &other), ("accept-encoding", "identity")])
        .await;
    assert_eq!(theirs.status, 200);
    let again = server.get(path, Some(ENTERPRISE)).await;
    let problem = again.assert_problem(429, "rate_limited");
    assert!(problem["detail"].as_str().unwrap().contains("was cut"), "{problem}");
    let wait: u64 = again.header_u64("retry-after");
    assert!((1..=1).contains(&wait), "{wait}");
    tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    let again = server.get(path, Some(ENTERPRISE)).await;
    assert_eq!(again.status, 200);
    // What the cut reader still gets ends before the announced length.
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest).await;
    got += rest.len();
    assert!(got < head.len() + announced, "the cut response still arrived whole");
}

/// Four keys whose stalled readers ask again at once after every cut cannot keep another key
/// out: a cut key waits a window before it may decode again (429 saying so), and a key refused
/// for want of a place keeps its turn, so it is served as soon as places are freed.
#[tokio::test]
async fn keys_that_ask_again_after_each_cut_cannot_keep_another_key_out() {
    let server = TestServer::start_with(Options::settings(|s| {
        s.exports.export_decode_floor_kib_per_sec = 1024;
        s.exports.export_decode_window = std::time::Duration::from_secs(1);
    }))
    .await;
    let path = "/v1/export/series?coverage=95";
    let greedy: Vec<String> = (0..4).map(|_| second_enterprise_key(&server)).collect();
    let waiting = second_enterprise_key(&server);
    // Each greedy key holds a stalled reader, and opens another whenever it may.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for key in greedy.clone() {
        let (addr, stop) = (server.addr, stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut held = Vec::new();
            let mut cooled = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (status, _, stream) = start_unread_export_at(addr, path, &key).await;
                match status {
                    200 => held.push(stream),
                    429 => cooled += 1,
                    _ => {}
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            cooled
        }));
    }
    // Let the greedy keys take every place first.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let started = std::time::Instant::now();
    let mut refusals = 0;
    let served = loop {
        let reply = server
            .get_with(path, &[("x-api-key", &waiting), ("accept-encoding", "identity")])
            .await;
        if reply.status == 200 {
            break reply;
        }
        let problem = reply.assert_problem(503, "unavailable");
        assert!(problem["detail"].as_str().unwrap().contains("in line"), "{problem}");
        refusals += 1;
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the waiting key was refused {refusals} times over a minute"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(refusals > 0, "every place was taken when the waiting key first asked");
    let gzip = gzip_export(&server, path).await;
    assert_eq!(served.body, gunzip(&gzip.body));
    let mut cooled = 0;
    for task in tasks {
        cooled += task.await.unwrap();
    }
    assert!(cooled > 0, "no greedy key was told to wait after a cut");
}

/// [`start_unread_export`] against an address, for tasks of their own.
async fn start_unread_export_at(
    addr: std::net::SocketAddr,
    path: &str,
    key: &str,
) -> (u16, String, tokio::net::TcpStream) {
    start_unread_from([127, 0, 0, 1], addr, path, key).await
}

/// [`start_unread_export_at`] from a chosen loopback address, so one test can be several
/// clients.
async fn start_unread_from(
    local: [u8; 4],
    addr: std::net::SocketAddr,
    path: &str,
    key: &str,
) -> (u16, String, tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A small receive buffer, set before connecting so the window is small from the start: the
    // server can then write only a few kilobytes ahead of a reader that stops, whatever the
    // machine's buffer autotuning would allow (several megabytes on loopback, as much as a
    // decoded document), so the decode holds its place until the reader goes.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind(std::net::SocketAddr::from((local, 0))).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    // An empty key sends none: a keyless client.
    let key_line = if key.is_empty() {
        String::new()
    } else {
        format!("x-api-key: {key}\r\n")
    };
    let head = format!("GET {path} HTTP/1.1\r\nhost: test\r\n{key_line}accept-encoding: identity\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut first = vec![0u8; 4096];
    let mut read = 0;
    while !first[..read].windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut first[read..]).await.unwrap();
        assert!(n > 0, "the server closed before the response head");
        read += n;
    }
    let text = String::from_utf8_lossy(&first[..read]).to_string();
    (raw_status(&text), text, stream)
}

/// The scored targets are stored as gzip only: a client that takes gzip gets the stored bytes,
/// one that does not gets them decoded, the same JSON under its own ETag, both revalidating.
/// The scored targets' text is decoded once and kept with the decoded texts, so no reader holds a
/// decoder's place for it: a keyless reader that stops keeps nothing from another keyless
/// client, and free keys and keyless readers together cannot make an enterprise decoded export
/// wait.
#[tokio::test]
async fn the_scored_targets_are_stored_as_gzip_and_decoded_within_the_shared_decoders() {
    let server = TestServer::start().await;
    let path = "/v1/scorecard/targets";
    let text = server.get(path, None).await;
    let gzip = server.get_with(path, &[("accept-encoding", "gzip")]).await;
    assert_eq!((text.status, gzip.status), (200, 200));
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    assert_eq!(text.header("content-encoding"), None);
    for reply in [&text, &gzip] {
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert!(reply
            .header("vary")
            .unwrap()
            .to_ascii_lowercase()
            .contains("accept-encoding"));
        assert_eq!(reply.header("cache-control"), Some("public, max-age=60"));
    }
    assert!(gzip.body.len() * 3 < text.body.len(), "stored compressed");
    assert_eq!(gunzip(&gzip.body), text.body, "the same document in both encodings");
    assert_ne!(gzip.header("etag"), text.header("etag"));
    let targets: Value = serde_json::from_slice(&text.body).unwrap();
    assert_eq!(targets["disclosure"], "public");
    for (reply, encoding) in [(&text, "identity"), (&gzip, "gzip")] {
        let etag = reply.header("etag").unwrap();
        let again = server
            .get_with(path, &[("accept-encoding", encoding), ("if-none-match", etag)])
            .await;
        assert_eq!((again.status, again.body.len()), (304, 0), "{encoding}");
    }

    // Keyless readers that stop, and three free keys' readers that stop: each is answered, and
    // none holds a place.
    let mut stalled = Vec::new();
    for key in ["", "", "", FREE, FREE, FREE] {
        let reader = start_unread_export(&server, path, key).await;
        assert_eq!(reader.0, 200, "{}", reader.1);
        stalled.push(reader);
    }
    assert_eq!(server.state.budgets.decoders.active(), 0, "no decoder's place is held");
    let another = server.get(path, None).await;
    assert_eq!(another.body, text.body, "another keyless client is served whole");
    let keyed = server.get(path, Some(PRO)).await;
    assert_eq!(
        keyed.status, 200,
        "a keyed client is served while keyless readers stall"
    );
    let whole: Value = keyed.json();
    assert_eq!(whole["disclosure"], "full");
    // An enterprise key's decoded export starts at once.
    let export = start_unread_export(&server, "/v1/export/series?coverage=95", ENTERPRISE).await;
    assert_eq!(export.0, 200, "{}", export.1);
    drop((stalled, export));
}

/// When the scored targets are too large to keep decoded (here beside a 1 MiB cache of decoded
/// texts), a keyless client without gzip decodes them in the one share every keyless client
/// shares; a keyless reader cut for slowness makes its own address wait, not every keyless
/// client.
#[tokio::test]
async fn a_keyless_reader_cut_for_slowness_makes_only_its_address_wait() {
    let server = TestServer::start_with(Options::settings(|s| {
        s.exports.decoded_cache_mib = 1;
        s.exports.export_decode_floor_kib_per_sec = 1024;
        s.exports.export_decode_window = std::time::Duration::from_secs(1);
    }))
    .await;
    let path = "/v1/scorecard/targets";
    let (status, head, stalled) = start_unread_from([127, 0, 0, 2], server.addr, path, "").await;
    assert_eq!(status, 200, "{head}");
    assert_eq!(
        server.state.budgets.decoders.active(),
        1,
        "decoded in a place, not kept"
    );
    let cut = || async {
        let text = request(server.addr, http::Method::GET, "/metrics", &[]).await;
        metric(
            &String::from_utf8_lossy(&text.body),
            "marks_export_decodes_cut_slow_total",
        )
    };
    for _ in 0..600 {
        if cut().await == Some(1.0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(cut().await, Some(1.0), "the stalled keyless reader was never cut");
    // Its address waits ...
    let (status, again, _) = start_unread_from([127, 0, 0, 2], server.addr, path, "").await;
    assert_eq!(status, 429, "{again}");
    assert!(again.contains("was cut"), "{again}");
    // ... another keyless client does not, and is served whole.
    let other = server.get_with(path, &[("accept-encoding", "identity")]).await;
    assert_eq!(other.status, 200);
    let gzip = server.get_with(path, &[("accept-encoding", "gzip")]).await;
    assert_eq!(other.body, gunzip(&gzip.body));
    drop(stalled);
}

/// An index's constituents of its latest day are stored by the builder and answered as stored
/// (with a gzip variant, and no decoder's place); any other day reads every constituent's series,
/// so it is made within the decoders' places, one at a time for a key: while the key holds its
/// share, its next gets 429 with Retry-After, and another key is served.
#[tokio::test]
async fn the_latest_constituents_are_stored_and_another_day_takes_a_decoders_place() {
    let server = TestServer::start().await;
    let other = second_enterprise_key(&server);
    let latest = server.get("/v1/indices/all/constituents", Some(ENTERPRISE)).await;
    assert_eq!(latest.status, 200);
    let date = latest.json()["date"].as_str().unwrap().to_string();
    let same = server
        .get(&format!("/v1/indices/all/constituents?date={date}"), Some(ENTERPRISE))
        .await;
    assert_eq!(
        (same.body.clone(), same.header("etag")),
        (latest.body.clone(), latest.header("etag"))
    );
    let gzip = server
        .get_with(
            "/v1/indices/all/constituents",
            &[("x-api-key", ENTERPRISE), ("accept-encoding", "gzip")],
        )
        .await;
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    assert_eq!(
        gunzip(&gzip.body),
        latest.body,
        "the stored gzip variant is the same answer"
    );
    let past = "/v1/indices/all/constituents?date=2023-12-29";
    let served = server.get(past, Some(&other)).await;
    assert_eq!(served.status, 200);
    assert_eq!(served.json()["date"], "2023-12-29");

    // The key holds its one place (a ranged export whose reader stopped) ...
    let (status, _, held) = start_unread_export(&server, "/v1/export/series?from=2020-01-01", ENTERPRISE).await;
    assert_eq!(status, 200);
    let refused = server.get(past, Some(ENTERPRISE)).await;
    let problem = refused.assert_problem(429, "rate_limited");
    assert!(refused.header("retry-after").is_some(), "{problem}");
    // ... the latest day, stored, takes no place, and another key's past day is served.
    assert_eq!(
        server
            .get("/v1/indices/all/constituents", Some(ENTERPRISE))
            .await
            .status,
        200
    );
    assert_eq!(server.get(past, Some(&other)).await.body, served.body);
    drop(held);
}

/// A ranged series export decodes every company's series, so it is made as it is sent, a
/// company at a time, within the decoders' places: without a `Content-Length` (its length is
/// known only at its end), and held against its key's share while its reader holds it, like a
/// decoded export.
#[tokio::test]
async fn a_ranged_series_export_is_made_as_it_is_sent_within_the_decoders() {
    let server = TestServer::start().await;
    let other = second_enterprise_key(&server);
    let ranged = "/v1/export/series?from=2020-01-01";
    let whole = "/v1/export/series?coverage=95";
    let served = server.get(ranged, Some(&other)).await;
    assert_eq!(served.status, 200);
    assert_eq!(served.header("content-length"), None, "made as it is sent");
    assert_eq!(served.header("transfer-encoding"), Some("chunked"));
    let (first, rows) = ndjson(&served.body);
    assert_eq!(first["from"], "2020-01-01");
    assert_eq!(
        rows.len(),
        sample_csv("companies.csv").len(),
        "every company has its line"
    );
    let head = request(server.addr, hyper::Method::HEAD, ranged, &[("x-api-key", &other)]).await;
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!(
        head.header("content-length"),
        None,
        "a HEAD says no length it does not know"
    );

    // A ranged export whose reader stops holds the key's one place ...
    let (status, _, held) = start_unread_export(&server, ranged, ENTERPRISE).await;
    assert_eq!(status, 200);
    let refused = server.get(whole, Some(ENTERPRISE)).await;
    let problem = refused.assert_problem(429, "rate_limited");
    assert!(problem["detail"].as_str().unwrap().contains("its share"), "{problem}");
    let refused = server.get(ranged, Some(ENTERPRISE)).await;
    refused.assert_problem(429, "rate_limited");
    // ... and another key is served meanwhile.
    assert_eq!(server.get(ranged, Some(&other)).await.body, served.body);
    drop(held);
}
