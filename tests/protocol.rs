//! SPEC 4.3, 4.4 and 7; docs/design.md section 4: caching, request ids, methods, errors, malformed requests.

use std::io::Read;

use http::Method;

use crate::util::*;

#[tokio::test]
async fn matching_if_none_match_gives_304_with_headers_and_no_body() {
    let server = TestServer::start().await;
    for path in [
        "/v1/companies/openai",
        "/v1/companies?limit=5&sort=name",
        "/v1/companies/openai/marks",
    ] {
        let first = server.get(path, Some(PRO)).await;
        let etag = first.header("etag").unwrap().to_string();
        assert!(etag.starts_with('"') && etag.ends_with('"'), "strong, quoted: {etag}");
        assert_eq!(first.header("cache-control"), Some("private, no-cache"));
        assert_eq!(first.header("content-type"), Some("application/json"));
        assert!(first.header("vary").unwrap().contains("X-API-Key"));
        let weak = format!("W/{etag}");
        for candidate in [etag.as_str(), "*", weak.as_str(), &format!("\"other\", {etag}")] {
            let again = server
                .get_with(path, &[("x-api-key", PRO), ("if-none-match", candidate)])
                .await;
            assert_eq!(again.status, 304, "{path} with If-None-Match: {candidate}");
            assert!(again.body.is_empty());
            assert_eq!(again.header("etag"), Some(etag.as_str()));
            assert_eq!(again.header("cache-control"), Some("private, no-cache"));
            assert_eq!(again.header("vary"), first.header("vary"));
            assert!(again.header("x-ratelimit-remaining").is_some() && again.header("ratelimit").is_some());
            assert!(again
                .header("x-request-id")
                .is_some_and(|id| id != first.header("x-request-id").unwrap()));
            assert_eq!(again.header("content-type"), None, "a 304 describes no body");
        }
        let stale = server
            .get_with(path, &[("x-api-key", PRO), ("if-none-match", "\"stale\"")])
            .await;
        assert_eq!(stale.status, 200);
    }
}

#[tokio::test]
async fn etags_follow_the_bytes() {
    let server = TestServer::start().await;
    let etag = |reply: &Reply| reply.header("etag").unwrap().to_string();
    let a = server.get("/v1/companies?limit=5", Some(PRO)).await;
    let b = server.get("/v1/companies?limit=6", Some(PRO)).await;
    let a_again = server.get("/v1/companies?limit=5", Some(ENTERPRISE)).await;
    let free = server.get("/v1/companies?limit=5", Some(FREE)).await;
    assert_ne!(etag(&a), etag(&b), "another query string is another variant");
    assert_eq!(etag(&a), etag(&a_again), "same bytes, same tag");
    assert_eq!(a.body, a_again.body);
    assert_ne!(etag(&a), etag(&free), "the free universe is another variant");
    let p80 = server.get("/v1/companies/openai/marks?coverage=80", Some(PRO)).await;
    let p95 = server.get("/v1/companies/openai/marks?coverage=95", Some(PRO)).await;
    assert_ne!(etag(&p80), etag(&p95));
}

#[tokio::test]
async fn gzip_variants_decode_to_the_same_body_with_their_own_etag() {
    let server = TestServer::start().await;
    let path = "/v1/companies/openai/marks?coverage=95";
    let plain = server.get(path, Some(PRO)).await;
    let gzip = server
        .get_with(path, &[("x-api-key", PRO), ("accept-encoding", "br, gzip;q=0.8")])
        .await;
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    assert_eq!(gzip.header("vary"), Some("X-API-Key, Accept, Accept-Encoding"));
    assert_ne!(gzip.header("etag"), plain.header("etag"));
    assert!(
        gzip.body.len() * 2 < plain.body.len(),
        "series compress at least 2x even at gzip level 1"
    );
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&gzip.body[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, plain.body);
    let refused = server
        .get_with(path, &[("x-api-key", PRO), ("accept-encoding", "gzip;q=0")])
        .await;
    assert_eq!(refused.header("content-encoding"), None);
    let etag = gzip.header("etag").unwrap();
    let revalidated = server
        .get_with(
            path,
            &[("x-api-key", PRO), ("accept-encoding", "gzip"), ("if-none-match", etag)],
        )
        .await;
    assert_eq!(revalidated.status, 304);
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let server = TestServer::start().await;
    let echoed = server
        .get_with(
            "/v1/companies/openai",
            &[("x-api-key", PRO), ("x-request-id", "trace-42")],
        )
        .await;
    assert_eq!(echoed.header("x-request-id"), Some("trace-42"));
    let too_long = "x".repeat(129);
    for bad in [too_long.as_str(), "has space"] {
        let replaced = server
            .get_with("/v1/companies/nope", &[("x-api-key", PRO), ("x-request-id", bad)])
            .await;
        let id = replaced.header("x-request-id").unwrap();
        assert_ne!(id, bad);
        assert!(id.starts_with("req_"));
        // The error body carries the same id.
        replaced.assert_problem(404, "not_found");
    }
    let a = server.get("/v1/companies", Some(PRO)).await;
    let b = server.get("/v1/companies", Some(PRO)).await;
    assert_ne!(a.header("x-request-id"), b.header("x-request-id"));
}

#[tokio::test]
async fn head_is_get_without_a_body() {
    let server = TestServer::start().await;
    for path in [
        "/v1/companies/openai/marks",
        "/v1/companies?limit=3",
        "/v1/companies/nope",
    ] {
        let get = server.get(path, Some(PRO)).await;
        let head = request(server.addr, Method::HEAD, path, &[("x-api-key", PRO)]).await;
        assert_eq!(head.status, get.status, "{path}");
        assert!(head.body.is_empty());
        assert_eq!(
            head.header("content-length").map(str::to_string),
            Some(get.body.len().to_string())
        );
        assert_eq!(head.header("content-type"), get.header("content-type"));
        assert_eq!(head.header("etag"), get.header("etag"));
    }
}

#[tokio::test]
async fn other_methods_get_405_with_allow() {
    let server = TestServer::start().await;
    for method in [
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
    ] {
        let reply = request(server.addr, method.clone(), "/v1/companies", &[("x-api-key", PRO)]).await;
        reply.assert_problem(405, "method_not_allowed");
        assert_eq!(reply.header("allow"), Some("GET, HEAD"), "{method}");
    }
}

#[tokio::test]
async fn unknown_paths_and_slugs_are_404_problems() {
    let server = TestServer::start().await;
    for path in [
        "/nope",
        "/explore/a/b",
        "/assets/no-such-file.css",
        "/v1",
        "/v2/companies",
        "/v1/companies/",
        "/v1/companies/openai/",
        "/v1/companies/openai/marks/x",
    ] {
        let body = server.get(path, Some(PRO)).await.assert_problem(404, "not_found");
        assert_eq!(body["instance"], path);
    }
    let body = server
        .get("/v1/companies/no-such-co", Some(PRO))
        .await
        .assert_problem(404, "not_found");
    assert_eq!(body["instance"], "/v1/companies/no-such-co");
    server
        .get("/v1/companies/openai/marks?coverage=90", Some(PRO))
        .await
        .assert_problem(422, "invalid_coverage");
    server
        .get("/v1/companies/openai/marks?coverage=95&coverage=80", Some(PRO))
        .await
        .assert_problem(422, "invalid_parameter");
    server
        .get("/v1/companies/openai?verbose=1", Some(PRO))
        .await
        .assert_problem(422, "invalid_parameter");
}

#[tokio::test]
async fn malformed_requests_never_get_a_server_error() {
    let server = TestServer::start().await;
    let huge = "a".repeat(6000);
    let many = (0..500).map(|i| format!("p{i}=1")).collect::<Vec<_>>().join("&");
    let paths = [
        "/v1/companies/%ff%fe".to_string(),
        "/v1/companies/%zz".to_string(),
        "/v1/companies?sector=%ff".to_string(),
        "/v1/companies?sector=%e2%82".to_string(),
        "/v1/companies?%=1".to_string(),
        "/v1/companies?=&&&=".to_string(),
        format!("/v1/companies?sector={huge}"),
        format!("/v1/companies?{many}"),
        format!("/v1/companies/{huge}"),
        "/v1/companies?limit=99999999999999999999".to_string(),
        "/v1/companies?cursor=%00%00".to_string(),
        "/v1/companies/%2e%2e/marks".to_string(),
        "/v1/companies/openai%2Fmarks".to_string(),
    ];
    for path in &paths {
        let reply = server.get(path, Some(PRO)).await;
        assert!((200..500).contains(&reply.status), "{path} gave {}", reply.status);
        if reply.status >= 400 {
            let code = reply.json()["code"].as_str().unwrap().to_string();
            reply.assert_problem(reply.status, &code);
        }
    }
    // Bytes no client library would send.
    for raw in [
        &b"GET /v1/companies/\xff\xfe HTTP/1.1\r\nhost: x\r\nx-api-key: vmk_demo_pro\r\n\r\n"[..],
        b"GET /v1/companies?sector=\xc3\x28 HTTP/1.1\r\nhost: x\r\nx-api-key: vmk_demo_pro\r\n\r\n",
        b"GET /v1/companies HTTP/1.1\r\nhost: x\r\nx-api-key: \xff\xfe\r\n\r\n",
        b"BREW /v1/companies HTTP/1.1\r\nhost: x\r\n\r\n",
        b"GET nonsense\r\n\r\n",
    ] {
        // A panic in the handler would drop the connection without an answer.
        let response = raw_exchange(server.addr, raw).await;
        assert!(!response.is_empty(), "no answer to {:?}", String::from_utf8_lossy(raw));
        let status = raw_status(&response);
        assert!((400..500).contains(&status), "{response}");
    }
    // And the server is still answering.
    assert_eq!(server.get("/v1/companies/openai", Some(PRO)).await.status, 200);
    assert_eq!(
        server
            .state
            .metrics
            .requests(marks::api::routes::Operation::Unknown, 500),
        0
    );
}

#[tokio::test]
async fn no_snapshot_means_503_and_not_ready() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("missing.snap");
    std::fs::write(&empty, b"").unwrap();
    let server = TestServer::start_without_snapshot(Options {
        snapshot: Some(empty),
        ..Options::default()
    })
    .await;
    server
        .get("/v1/companies", Some(PRO))
        .await
        .assert_problem(503, "unavailable");
    let ready = server.get("/readyz", None).await;
    assert_eq!(ready.status, 503);
    assert!(ready.json()["last_refusal"]["reason"]
        .as_str()
        .unwrap()
        .contains("truncated"));
    assert_eq!(server.get("/healthz", None).await.status, 200);
}

/// Without `--public-base-url`, a problem's `type` names the address the server listens on,
/// with the port the system picked when port 0 was asked for.
#[tokio::test]
async fn problem_types_name_the_bound_port_when_port_0_was_asked_for() {
    let server = TestServer::start_with(Options::settings(|s| s.listen.public_base_url = None)).await;
    let reply = server.get("/v1/companies/nobody", Some(PRO)).await;
    let body = reply.json();
    let expected = format!("http://127.0.0.1:{}/problems/not_found", server.addr.port());
    assert_eq!(body["type"], expected.as_str(), "{body}");
}
