//! The hosted MCP endpoint (`--mcp`, `/mcp`) over real HTTP: every request metered once per
//! key, a spent key refused with 429; bodies read whole, bounded and in time, an unfinished one
//! 400 or 408 and never 500; one JSON-RPC message per request; browser origins matched exactly;
//! and what a client sends kept out of the log but for a short, escaped excerpt.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use marks::settings::Origin;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::util::*;

/// A server answering `/mcp`, its keys' budgets `rate_per_min` a minute.
async fn mcp_server(rate_per_min: u32, change: impl FnOnce(&mut marks::settings::Settings)) -> TestServer {
    let mut options = Options::settings(|s| {
        s.agents.mcp = true;
        change(s);
    });
    options.keys_toml = Some(demo_keys_with_rate(rate_per_min));
    TestServer::start_with(options).await
}

/// One POST to `/mcp` on a fresh connection, with `key` and the headers the transport asks for
/// (JSON in, JSON or an event stream out), plus `extra`.
async fn post(addr: SocketAddr, key: &str, extra: &[(&str, &str)], body: &str) -> Reply {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("x-api-key", key)
        .header("accept", "application/json, text/event-stream");
    if !extra.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) {
        request = request.header("content-type", "application/json");
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    Reply {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

fn tool_call(name: &str, arguments: Value) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    })
    .to_string()
}

/// Asserts a `/mcp` refusal: problem+json with its status and code, `instance` `/mcp`.
fn assert_mcp_problem(reply: &Reply, status: u16, code: &str) -> Value {
    let body = reply.assert_problem(status, code);
    assert_eq!(body["instance"], "/mcp", "{body}");
    body
}

/// Every POST spends one unit, whatever it asks; a tool call spends no second one; a key whose
/// budget is spent gets 429 problem+json with `Retry-After`, as the API answers it.
#[tokio::test]
async fn every_request_spends_one_unit_a_tool_call_no_second_and_a_spent_key_gets_429() {
    let server = mcp_server(3, |_| {}).await;
    let ping = post(server.addr, ENTERPRISE, &[], PING).await;
    assert_eq!(ping.status, 200, "{:?}", ping.body);
    assert_eq!(ping.header("x-ratelimit-remaining"), Some("2"));
    assert_eq!(ping.header("x-ratelimit-limit"), Some("3"));
    for remaining in ["1", "0"] {
        let call = post(
            server.addr,
            ENTERPRISE,
            &[],
            &tool_call("get_company", serde_json::json!({"slug": "stripe"})),
        )
        .await;
        assert_eq!(call.status, 200);
        assert_eq!(call.header("x-ratelimit-remaining"), Some(remaining));
        let answer = call.json();
        assert_ne!(
            answer["result"]["isError"], true,
            "the tool spent a second unit: {answer}"
        );
        assert_eq!(answer["result"]["structuredContent"]["slug"], "stripe", "{answer}");
    }
    let spent = post(server.addr, ENTERPRISE, &[], PING).await;
    let problem = assert_mcp_problem(&spent, 429, "rate_limited");
    assert!(spent.header_u64("retry-after") >= 1, "{problem}");
    assert_eq!(spent.header("x-ratelimit-remaining"), Some("0"));
    // Another key's budget is its own.
    assert_eq!(post(server.addr, PRO, &[], PING).await.status, 200);
}

/// A refused request spends its unit too (there is no free request to send in a loop), and a
/// failing key stays throttled per address.
#[tokio::test]
async fn refusals_spend_a_unit_and_failed_keys_are_throttled_per_address() {
    let server = mcp_server(3, |s| s.access.auth_failures_per_min = 3).await;
    let batch = post(server.addr, PRO, &[], &format!("[{PING},{PING}]")).await;
    assert_mcp_problem(&batch, 400, "bad_request");
    assert_eq!(batch.header("x-ratelimit-remaining"), Some("2"));
    let foreign = post(server.addr, PRO, &[("origin", "https://evil.example")], PING).await;
    assert_mcp_problem(&foreign, 403, "origin_forbidden");
    assert_eq!(foreign.header("x-ratelimit-remaining"), Some("1"));
    for _ in 0..3 {
        assert_mcp_problem(
            &post(server.addr, "vmk_not_a_key", &[], PING).await,
            401,
            "invalid_api_key",
        );
    }
    assert_mcp_problem(
        &post(server.addr, "vmk_not_a_key", &[], PING).await,
        429,
        "rate_limited",
    );
    // A valid key from the same address is not refused for those failures.
    assert_eq!(post(server.addr, PRO, &[], PING).await.status, 200);
}

/// One JSON-RPC message per request: a batch, text that is not JSON and JSON that is not a
/// message are 400, a body that does not say it is JSON 415, a GET 405; each problem+json.
#[tokio::test]
async fn a_batch_or_a_malformed_body_is_400() {
    let server = mcp_server(1000, |_| {}).await;
    for body in [
        format!("[{PING}]"),
        "  [ ]".to_string(),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":".to_string(),
        "not json at all".to_string(),
        "{}".to_string(),
        "\"ping\"".to_string(),
        String::new(),
    ] {
        let reply = post(server.addr, ENTERPRISE, &[], &body).await;
        let problem = assert_mcp_problem(&reply, 400, "bad_request");
        let detail = problem["detail"].as_str().unwrap();
        assert!(
            !detail.contains("not json at all"),
            "the detail quotes the body: {detail}"
        );
    }
    let batch = post(server.addr, ENTERPRISE, &[], &format!("[{PING}]")).await.json();
    assert!(batch["detail"].as_str().unwrap().contains("batch"), "{batch}");
    let text = post(server.addr, ENTERPRISE, &[("content-type", "text/plain")], PING).await;
    assert_mcp_problem(&text, 415, "bad_request");
    let get = server.get_with("/mcp", &[("x-api-key", ENTERPRISE)]).await;
    assert_mcp_problem(&get, 405, "method_not_allowed");
    assert_eq!(get.header("allow"), Some("POST"));
    // A well-formed message is served.
    assert_eq!(post(server.addr, ENTERPRISE, &[], PING).await.status, 200);
}

/// A POST head with `Content-Length: 200` and only part of its body.
fn unfinished_post(addr: SocketAddr) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nx-api-key: {ENTERPRISE}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: 200\r\n\r\n{{\"jsonrpc\":\"2.0\","
    )
    .into_bytes()
}

/// What the server answers on `stream` until it closes.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// A body that stops short (the client closes its side mid-body) is 400, one that does not
/// arrive in time 408, a client gone mid-body is counted as neither a 500: never a server error.
#[tokio::test]
async fn an_unfinished_body_is_400_a_late_one_408_and_never_500() {
    let server = mcp_server(1000, |s| s.connections.header_read_timeout = Duration::from_secs(2)).await;
    let mut stopped = TcpStream::connect(server.addr).await.unwrap();
    stopped.write_all(&unfinished_post(server.addr)).await.unwrap();
    stopped.shutdown().await.unwrap();
    let answer = read_to_close(&mut stopped).await;
    assert_eq!(raw_status(&answer), 400, "{answer}");
    assert!(
        answer.contains("application/problem+json") && answer.contains("\"bad_request\""),
        "{answer}"
    );

    let mut late = TcpStream::connect(server.addr).await.unwrap();
    late.write_all(&unfinished_post(server.addr)).await.unwrap();
    let answer = read_to_close(&mut late).await;
    assert_eq!(raw_status(&answer), 408, "{answer}");
    assert!(answer.contains("\"request_timeout\""), "{answer}");

    // Gone altogether mid-body: nobody reads the answer, but it is counted, and not as a 500.
    let mut gone = TcpStream::connect(server.addr).await.unwrap();
    gone.write_all(&unfinished_post(server.addr)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(gone);
    let count = |text: &str, status: &str| {
        metric(
            text,
            &format!("marks_requests_total{{operation=\"mcp\",status=\"{status}\"}}"),
        )
        .unwrap_or(0.0)
    };
    let mut text = String::new();
    for _ in 0..400 {
        text = String::from_utf8_lossy(&server.get("/metrics", None).await.body).into_owned();
        if count(&text, "400") >= 2.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(count(&text, "400"), 2.0, "{text}");
    assert_eq!(count(&text, "500"), 0.0, "{text}");
}

/// A body larger than `--mcp-max-request-bytes` is 413 before it is read, whatever its framing.
#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let server = mcp_server(1000, |s| s.agents.mcp_max_request_bytes = 1024).await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2000)
    );
    assert_mcp_problem(
        &post(server.addr, ENTERPRISE, &[], &big).await,
        413,
        "request_too_large",
    );
}

/// `--mcp-allowed-origin http://localhost` admits that origin on its default port and no other
/// port, scheme or host.
#[tokio::test]
async fn allowed_origins_match_scheme_host_and_port_exactly() {
    let server = mcp_server(1000, |s| {
        s.agents.mcp_allowed_origin = vec![
            Origin::parse("http://localhost").unwrap(),
            Origin::parse("https://app.example.test:8443").unwrap(),
        ]
    })
    .await;
    for allowed in [
        "http://localhost",
        "http://localhost:80",
        "HTTP://LOCALHOST",
        "https://app.example.test:8443",
    ] {
        let reply = post(server.addr, ENTERPRISE, &[("origin", allowed)], PING).await;
        assert_eq!(reply.status, 200, "{allowed}: {:?}", reply.body);
    }
    for refused in [
        "http://localhost:9999",
        "https://localhost",
        "http://localhost.evil.example",
        "http://evil.localhost",
        "https://app.example.test",
        "http://app.example.test:8443",
        "null",
        "http://localhost/",
        "localhost",
    ] {
        let reply = post(server.addr, ENTERPRISE, &[("origin", refused)], PING).await;
        assert_mcp_problem(&reply, 403, "origin_forbidden");
    }
    // No Origin: not a browser, served.
    assert_eq!(post(server.addr, ENTERPRISE, &[], PING).await.status, 200);
}

/// What a client sends reaches the log only as a short escaped excerpt: an unknown method
/// 20,000 characters long, a refused Origin as long, a malformed body; rmcp's own lines, which
/// quote them, are never written.
#[tokio::test]
async fn client_text_reaches_the_log_only_as_a_bounded_excerpt() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_binary(dir.path(), &["--mcp"]).await;
    let method = "z".repeat(20_000);
    let unknown = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{}}}}"#);
    let reply = post(addr, ENTERPRISE, &[], &unknown).await;
    assert!(reply.status < 500, "{}", reply.status);
    let origin = format!("http://{}.example", "y".repeat(8_000));
    let reply = post(addr, ENTERPRISE, &[("origin", &origin)], PING).await;
    assert_eq!(reply.status, 403);
    let reply = post(addr, ENTERPRISE, &[], &format!("{{\"{}\u{202e}", "w".repeat(5_000))).await;
    assert_eq!(reply.status, 400);
    for _ in 0..20 {
        assert_eq!(post(addr, ENTERPRISE, &[], PING).await.status, 200);
    }
    stop_binary(&mut child).await;
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).await.unwrap();
    for run in ["z", "y", "w"] {
        assert!(
            !stdout.contains(&run.repeat(65)),
            "more than 64 characters of client text in the log"
        );
    }
    assert!(
        !stdout.contains('\u{202e}'),
        "an unescaped control of the client's in the log"
    );
    let mut refusal_logged = false;
    for line in stdout.lines() {
        let json: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        let target = json["target"].as_str().unwrap_or("");
        assert!(!target.starts_with("rmcp"), "a line of rmcp's: {line}");
        assert!(line.len() < 1_000, "a line of {} bytes: {line:.200}", line.len());
        refusal_logged |= line.contains("refused a browser Origin");
    }
    assert!(refusal_logged, "the refused Origin was not logged: {stdout}");
}
