//! The access log: one line per request, to stdout or a file; a rotated file reopened on
//! SIGUSR1 with no line lost; no colour escapes in anything that is not a terminal.

use std::time::Duration;

use http::Method;

use crate::util::*;

fn lines_with_ids(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            let json: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            assert_eq!(json["target"], "marks::api::access", "{line}");
            json["request_id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// logrotate's way: rename the file, signal, and the server writes a new one. Every request
/// is in exactly one of the two files, in order.
#[tokio::test]
async fn a_rotated_access_log_is_reopened_on_sigusr1_and_no_line_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let log_arg = log.to_str().unwrap().to_string();
    let (mut child, addr) = spawn_binary(dir.path(), &["--access-log", &log_arg]).await;
    let pid = child.id().unwrap() as i32;
    let mut client = Client::connect(addr).await;
    let mut send = async |id: usize| {
        let tag = format!("r{id:02}");
        let reply = client
            .send(
                Method::GET,
                "/v1/companies/openai",
                &[("x-api-key", PRO), ("x-request-id", &tag)],
            )
            .await;
        assert_eq!(reply.status, 200);
    };
    for id in 1..=10 {
        send(id).await;
        if id == 5 {
            // Rotated while the server writes: lines keep going to the renamed file.
            tokio::time::sleep(Duration::from_millis(200)).await;
            std::fs::rename(&log, dir.path().join("access.log.1")).unwrap();
        }
    }
    assert_eq!(send_signal(pid, libc::SIGUSR1), 0);
    let mut reopened = false;
    for _ in 0..200 {
        if log.exists() {
            reopened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(reopened, "SIGUSR1 did not reopen the access log");
    for id in 11..=15 {
        send(id).await;
    }
    stop_binary(&mut child).await;
    let old = std::fs::read_to_string(dir.path().join("access.log.1")).unwrap();
    let new = std::fs::read_to_string(&log).unwrap();
    let expected = |range: std::ops::RangeInclusive<usize>| range.map(|i| format!("r{i:02}")).collect::<Vec<_>>();
    assert_eq!(lines_with_ids(&old), expected(1..=10), "{old}");
    assert_eq!(lines_with_ids(&new), expected(11..=15), "{new}");
    assert!(!old.contains('\u{1b}') && !new.contains('\u{1b}'));
}

/// Text logs written to a pipe carry no colour escapes (they broke grep and log shippers).
#[tokio::test]
async fn logs_written_to_a_pipe_have_no_colour_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_binary(dir.path(), &["--log-format", "text"]).await;
    assert_eq!(
        request(addr, Method::GET, "/v1/companies/openai", &[("x-api-key", PRO)])
            .await
            .status,
        200
    );
    stop_binary(&mut child).await;
    let mut stdout = String::new();
    use tokio::io::AsyncReadExt;
    child.stdout.take().unwrap().read_to_string(&mut stdout).await.unwrap();
    assert!(stdout.contains("marks::api::access: request_id="), "{stdout}");
    assert!(stdout.contains("path=\"/v1/companies/openai\" status=200"), "{stdout}");
    assert!(!stdout.contains('\u{1b}'), "colour escapes in a pipe: {stdout:?}");
}
