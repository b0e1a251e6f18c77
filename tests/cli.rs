//! The `marks` command line: help for every flag, one-line errors, keys shown once.

use std::path::Path;
use std::process::Command;

use crate::util::*;

fn marks(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_marks")).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_explains_every_subcommand_and_flag() {
    let help = text(&marks(&["--help"]).stdout);
    for command in [
        "serve",
        "keys",
        "build",
        "install",
        "keygen",
        "synth",
        "verify-snapshot",
        "publish",
        "mcp",
    ] {
        assert!(help.contains(command), "{command} missing from --help");
    }
    let serve = text(&marks(&["serve", "--help"]).stdout);
    for flag in [
        "--addr",
        "--snapshot",
        "--keys",
        "--publisher-key",
        "--cursor-key",
        "--tls-cert",
        "--http2",
        "--header-read-timeout",
        "--idle-timeout",
        "--max-header-bytes",
        "--max-connections",
        "--max-connections-per-address",
        "--listen-backlog",
        "--h2-max-concurrent-streams",
        "--h2-max-send-buffer",
        "--h2-max-control-frames-per-sec",
        "--h2-max-streams",
        "--max-throttled-addresses",
        "--shutdown-grace",
        "--log-format",
        "--snapshot-from",
        "--snapshot-cache",
        "--poll-interval",
        "--watch-interval",
        "--budget-store",
        "--budget-store-timeout",
        "--export-decoders-per-key",
    ] {
        let lines: Vec<&str> = serve.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim_start().split([' ', '=']).next() == Some(flag))
            .unwrap_or_else(|| panic!("{flag} undocumented"));
        // clap puts the explanation beside the flag, or on the next line when flags are long.
        let explained = lines[at].len() > flag.len() + 20
            || lines
                .get(at + 1)
                .is_some_and(|next| !next.trim_start().starts_with('-') && next.trim().len() > 10);
        assert!(explained, "{flag} has no explanation: {}", lines[at]);
    }
    // The flags are grouped under headings, one per section of the settings.
    for heading in [
        "Listening:",
        "Data:",
        "Connections:",
        "HTTP/2:",
        "Access:",
        "Exports:",
        "Fleet:",
        "Logging:",
    ] {
        assert!(
            serve.lines().any(|l| l == heading),
            "{heading} missing from serve --help:\n{serve}"
        );
    }
    // The old names of renamed flags are hidden, and still taken: a value out of bounds is
    // refused with the new name's rule, so it was read as that flag.
    for (old, value, rule) in [
        ("--watch-interval-ms", "5", "at least 10ms"),
        ("--poll-interval-ms", "50", "at least 100ms"),
        ("--budgets-timeout-ms", "0", "at least 1ms"),
        ("--max-h2-streams", "0", "0"),
        ("--max-control-frames-per-sec", "0", "0"),
        ("--export-decode-window-secs", "0", "at least 1s"),
    ] {
        assert!(!serve.contains(old), "{old} shows in --help");
        let refused = marks(&["serve", old, value]);
        let stderr = text(&refused.stderr);
        assert!(!refused.status.success() && stderr.contains(rule), "{old}: {stderr}");
        assert!(
            !stderr.contains("unexpected argument"),
            "{old} is no longer taken: {stderr}"
        );
    }
    // Bounds are refused by the parser, never silently clamped.
    let small = text(&marks(&["serve", "--max-header-bytes", "100"]).stderr);
    assert!(
        small.contains("--max-header-bytes") && small.contains("8192"),
        "{small}"
    );
    // Every flag of every subcommand says what it does.
    for command in [
        &["serve"][..],
        &["build"],
        &["install"],
        &["keygen"],
        &["synth"],
        &["verify-snapshot"],
        &["publish"],
        &["mcp"],
        &["keys", "issue"],
        &["keys", "revoke"],
        &["keys", "suspend"],
        &["keys", "reinstate"],
        &["keys", "list"],
    ] {
        let args: Vec<&str> = command.iter().copied().chain(["--help"]).collect();
        let help = text(&marks(&args).stdout);
        let lines: Vec<&str> = help.lines().collect();
        for (at, line) in lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with("--"))
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            let beside = words.iter().skip(1).any(|w| !w.starts_with('<') && !w.starts_with('-'));
            let below = lines
                .get(at + 1)
                .is_some_and(|next| !next.trim_start().starts_with('-') && next.trim().len() > 10);
            assert!(beside || below, "{command:?}: {line:?} has no explanation");
        }
    }
    let build = text(&marks(&["build", "--help"]).stdout);
    assert!(build.contains("--previous"));
    // The signing key is required, and the usage line says so (not in brackets).
    let usage = build.lines().find(|l| l.starts_with("Usage:")).unwrap();
    assert!(
        usage.contains(" --signing-key <FILE>") && !usage.contains("[--signing-key"),
        "{usage}"
    );
    let missing = marks(&["build", "--source", "x", "--out", "y"]);
    assert!(
        text(&missing.stderr).contains("--signing-key <FILE>"),
        "{}",
        text(&missing.stderr)
    );
    assert!(text(&marks(&["keys", "issue", "--help"]).stdout).contains("--rate-per-min"));
}

#[test]
fn a_bad_dataset_is_one_line_with_file_and_line_and_a_failing_exit() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("data");
    copy_dataset(&sample_dir(), &source);
    let mut events = std::fs::read_to_string(source.join("events.csv")).unwrap();
    events.push_str("x1,nobody,primary_round,2024-01-01,100,closed,https://example.com,B,,\n");
    std::fs::write(source.join("events.csv"), events).unwrap();
    let out = dir.path().join("out.snap");
    let key = sample_dir().join("demo-signing-key.pem");
    let output = marks(&[
        "build",
        "--source",
        source.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--signing-key",
        key.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    let line = sample_csv("events.csv").len() + 2;
    assert!(
        stderr.contains(&format!("events.csv:{line}: unknown slug \"nobody\"")),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn usage_errors_are_one_line() {
    for args in [
        &["verify-snapshot", "/nonexistent.snap"][..],
        &[
            "build",
            "--source",
            "/nonexistent",
            "--out",
            "/tmp/x.snap",
            "--signing-key",
            "/nonexistent.pem",
        ],
        &["keys", "revoke", "--keys", "/nonexistent/keys.toml", "key_x"],
        &[
            "serve",
            "--snapshot",
            "/nonexistent.snap",
            "--public-base-url",
            "api.example.com",
        ],
        &[
            "serve",
            "--snapshot",
            "/nonexistent.snap",
            "--keys",
            "/nonexistent/keys.toml",
            "--addr",
            "127.0.0.1:0",
        ],
    ] {
        let output = marks(args);
        assert!(!output.status.success(), "{args:?}");
        let stderr = text(&output.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("marks: ") && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}

#[test]
fn keys_are_printed_once_alone_and_stored_as_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.toml");
    let output = marks(&[
        "keys",
        "issue",
        "--keys",
        keys.to_str().unwrap(),
        "--tier",
        "Pro",
        "--tenant",
        "acme",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let key = stdout.trim();
    assert_eq!(stdout.lines().count(), 1);
    assert!(key.starts_with("vmk_") && key.len() == 44, "{key}");
    let file = std::fs::read_to_string(&keys).unwrap();
    assert!(!file.contains(key) && file.contains("blake3:"));
    let listed = text(&marks(&["keys", "list", "--keys", keys.to_str().unwrap()]).stdout);
    assert!(
        listed.contains("acme") && listed.contains("pro") && !listed.contains(key),
        "{listed}"
    );
    let key_id = listed
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let keys = keys.to_str().unwrap();
    let status = || {
        let listed = text(&marks(&["keys", "list", "--keys", keys]).stdout);
        listed
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .nth(3)
            .unwrap()
            .to_string()
    };
    assert_eq!(status(), "active");
    assert!(marks(&["keys", "suspend", "--keys", keys, &key_id]).status.success());
    assert_eq!(status(), "suspended");
    assert!(marks(&["keys", "reinstate", "--keys", keys, &key_id]).status.success());
    assert_eq!(status(), "active");
    assert!(marks(&["keys", "revoke", "--keys", keys, &key_id]).status.success());
    assert_eq!(status(), "revoked");
    // Revocation is for good.
    let again = marks(&["keys", "reinstate", "--keys", keys, &key_id]);
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("stays revoked"), "{}", text(&again.stderr));
    assert_eq!(status(), "revoked");
    // An unknown key id is one clear line.
    let unknown = marks(&["keys", "suspend", "--keys", keys, "key_nope"]);
    assert!(!unknown.status.success());
    assert!(
        text(&unknown.stderr).contains("no key with key_id key_nope"),
        "{}",
        text(&unknown.stderr)
    );
}

/// `marks keys list` reads a keys file as `marks serve` would: a tier the server refuses is
/// refused here, with the file and the reason.
#[test]
fn keys_list_refuses_a_file_the_server_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.toml");
    let demo = std::fs::read_to_string(repo().join("sample/demo-keys.toml")).unwrap();
    std::fs::write(&keys, demo.replacen("tier = \"pro\"", "tier = \"platinum\"", 1)).unwrap();
    let listed = marks(&["keys", "list", "--keys", keys.to_str().unwrap()]);
    assert!(!listed.status.success());
    let stderr = text(&listed.stderr);
    assert!(
        stderr.contains("keys.toml") && stderr.contains("unknown tier"),
        "{stderr}"
    );
}

#[test]
fn keygen_writes_a_private_key_only_its_owner_reads_and_prints_its_kid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("signing.pem");
    let output = marks(&["keygen", "--out", path.to_str().unwrap()]);
    assert!(output.status.success());
    let kid = text(&output.stdout).trim().to_string();
    let key = marks_builder::render::signing::read_signing_key(&path).unwrap();
    assert_eq!(kid, marks_format::rules::signatures::kid(&key.verifying_key()));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(
        !marks(&["keygen", "--out", path.to_str().unwrap()]).status.success(),
        "never overwrites a key"
    );
}

#[test]
fn verify_snapshot_reports_versions_and_refuses_damage() {
    let output = marks(&["verify-snapshot", sample_snapshot().to_str().unwrap()]);
    assert!(output.status.success());
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!("dataset {}", sample_version())) && stdout.contains("methodology v0.5.0"),
        "{stdout}"
    );
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("damaged.snap");
    let mut bytes = std::fs::read(sample_snapshot()).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&damaged, bytes).unwrap();
    let output = marks(&["verify-snapshot", damaged.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(text(&output.stderr).contains("checksum mismatch"));
}

/// The README's "Publishing a dataset" procedure, command by command, from an empty directory.
#[test]
fn the_publishing_procedure_works_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let at = |path: &str| dir.path().join(path).to_str().unwrap().to_string();
    let run = |args: &[&str]| {
        let output = marks(args);
        assert!(output.status.success(), "{args:?}: {}", text(&output.stderr));
        text(&output.stdout)
    };
    // Keys into a directory that does not exist yet, readable by its owner only.
    run(&["keygen", "--out", &at("keys/signing.pem")]);
    run(&["keygen", "--out", &at("keys/publisher.pem")]);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join("keys")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let sample = sample_dir();
    let sample = sample.to_str().unwrap();
    std::fs::create_dir(dir.path().join("srv")).unwrap();
    let build = |source: &str, previous: Option<&str>| {
        let mut args = vec![
            "build",
            "--source",
            source,
            "--out",
            "srv/incoming.snap",
            "--signing-key",
            "keys/signing.pem",
            "--publisher-key",
            "keys/publisher.pem",
            "--quiet",
        ];
        if let Some(previous) = previous {
            args.extend(["--previous", previous]);
        }
        Command::new(env!("CARGO_BIN_EXE_marks"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    assert!(build(sample, None).status.success());
    let verified = run(&[
        "verify-snapshot",
        &at("srv/incoming.snap"),
        "--publisher-key",
        &at("keys/publisher.pem.pub"),
    ]);
    assert!(
        verified.contains(&format!("dataset {}", sample_version())) && verified.contains("publisher signed"),
        "{verified}"
    );
    run(&[
        "install",
        "--snapshot",
        &at("srv/incoming.snap"),
        "--to",
        &at("srv/current.snap"),
        "--publisher-key",
        &at("keys/publisher.pem.pub"),
    ]);
    assert!(dir.path().join("srv/current.snap").exists());

    // The next dataset version adds an event: accepted with --previous.
    let next = dir.path().join("next");
    copy_dataset(&sample_dir(), &next);
    let toml = std::fs::read_to_string(next.join("dataset.toml")).unwrap();
    let (version, next_version) = (sample_version(), day_after(&sample_version()));
    std::fs::write(next.join("dataset.toml"), toml.replace(&version, &next_version)).unwrap();
    let events = std::fs::read_to_string(next.join("events.csv")).unwrap();
    std::fs::write(
        next.join("events.csv"),
        format!(
            "{events}x0001,stripe,tender_offer,{},91000000000,closed,https://example.com/t,B,,\n",
            sample_as_of()
        ),
    )
    .unwrap();
    let accepted = build(next.to_str().unwrap(), Some("srv/current.snap"));
    assert!(accepted.status.success(), "{}", text(&accepted.stderr));

    // Changing an earlier event is refused, naming it, and writes nothing.
    std::fs::remove_file(dir.path().join("srv/incoming.snap")).unwrap();
    std::fs::write(
        next.join("events.csv"),
        events.replacen("95000000000", "96000000000", 1),
    )
    .unwrap();
    let refused = build(next.to_str().unwrap(), Some("srv/current.snap"));
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("e0100") && stderr.lines().count() == 1, "{stderr}");
    assert!(
        !dir.path().join("srv/incoming.snap").exists(),
        "a refused build writes nothing"
    );
}

/// `marks serve` refuses to start, with one line, rather than serve 503 to everything from a
/// mistyped snapshot path; a busy port is reported once, not twice.
#[test]
fn serve_refuses_to_start_without_its_snapshot_or_its_port() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.toml");
    std::fs::copy(sample_dir().join("demo-keys.toml"), &keys).unwrap();
    let keys = keys.to_str().unwrap();
    let missing = marks(&[
        "serve",
        "--snapshot",
        "/nonexistent/live.snap",
        "--keys",
        keys,
        "--addr",
        "127.0.0.1:0",
    ]);
    assert!(!missing.status.success());
    let stderr = text(&missing.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot start without a valid snapshot") && stderr.contains("/nonexistent/live.snap"),
        "{stderr}"
    );
    assert!(!stderr.contains("listening"), "{stderr}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let snapshot = sample_snapshot().to_str().unwrap().to_string();
    let busy = marks(&["serve", "--snapshot", &snapshot, "--keys", keys, "--addr", &addr]);
    assert!(!busy.status.success());
    let stderr = text(&busy.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("cannot listen on {addr}")), "{stderr}");
    assert_eq!(stderr.matches("in use").count(), 1, "the OS error once: {stderr}");
}

/// A JSON-RPC line over the MCP transport's 16 MiB limit is dropped with a log line on stderr
/// saying so, and the server goes on answering the next message.
#[test]
fn an_mcp_message_over_the_line_limit_is_logged_and_the_next_one_answered() {
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_marks"))
        .args(["mcp", "--base-url", "http://127.0.0.1:9"])
        .env("MARKS_API_KEY", "vmk_unused")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let oversized = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}\n",
            "x".repeat(17 * 1024 * 1024)
        );
        stdin.write_all(oversized.as_bytes()).unwrap();
        let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;
        stdin.write_all(initialize.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin
    });
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    drop(writer.join().unwrap());
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert!(stderr.contains("exceeded the maximum line length"), "{stderr}");
}

/// The flag reference in docs/flags.md is `marks serve --help`, generated, never kept by hand.
#[test]
fn the_flag_reference_is_the_help() {
    let help = text(&marks(&["serve", "--help"]).stdout);
    let page = std::fs::read_to_string(repo().join("docs/flags.md")).unwrap();
    let fenced = format!("```text\n{help}```\n");
    assert!(
        page.ends_with(&fenced),
        "docs/flags.md is not the current `marks serve --help`: run `bash tools/flags-doc.sh`"
    );
}

/// The snapshot folder is the drop folder: `marks serve` with no snapshot named builds the
/// bundled sample into `snapshots/sample.snap` and serves `snapshots/current.snap` (a link to
/// it) with the demo keys; `marks build` with no `--out` writes `snapshots/current.snap`, and
/// the running server serves the new dataset without a restart.
#[tokio::test]
async fn a_build_into_the_snapshot_folder_goes_live() {
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready.json");
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_marks"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--watch-interval",
            "50ms",
            "--ready-file",
        ])
        .arg(&ready)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut waited = 0;
    while !ready.exists() {
        assert!(server.try_wait().unwrap().is_none(), "the server exited");
        assert!(waited < 3000, "the server did not listen within 60 s");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        waited += 1;
    }
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&ready).unwrap()).unwrap();
    let addr: std::net::SocketAddr = written["addr"].as_str().unwrap().parse().unwrap();
    let snapshots = dir.path().join("snapshots");
    assert_eq!(
        std::fs::read_link(snapshots.join("current.snap")).unwrap(),
        Path::new("sample.snap")
    );
    let ready_version = |addr| async move {
        let reply = request(addr, http::Method::GET, "/readyz", &[]).await;
        reply.json()["dataset_version"].as_str().unwrap().to_string()
    };
    assert_eq!(ready_version(addr).await, sample_version());
    let served = request(addr, http::Method::GET, "/v1/usage", &[("x-api-key", PRO)]).await;
    assert_eq!(served.status, 200, "the demo keys serve the sample");
    // The next version of the dataset, built with no --out.
    let next = dir.path().join("next");
    copy_dataset(&sample_dir(), &next);
    let version = day_after(&sample_version());
    let toml = std::fs::read_to_string(next.join("dataset.toml")).unwrap();
    let toml = toml
        .replace(
            &format!("dataset_version = \"{}\"", sample_version()),
            &format!("dataset_version = \"{version}\""),
        )
        .replace(
            &format!("as_of = \"{}\"", sample_version()),
            &format!("as_of = \"{version}\""),
        );
    std::fs::write(next.join("dataset.toml"), toml).unwrap();
    let build = std::process::Command::new(env!("CARGO_BIN_EXE_marks"))
        .args(["build", "--source", "next", "--signing-key"])
        .arg(sample_dir().join("demo-signing-key.pem"))
        .args(["--previous", "snapshots/current.snap", "--quiet"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build.stderr));
    assert!(
        std::fs::read_link(snapshots.join("current.snap")).is_err(),
        "the build replaced the link"
    );
    let mut tries = 0;
    while ready_version(addr).await != version {
        assert!(tries < 400, "the server never served the new build");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        tries += 1;
    }
    stop_binary(&mut server).await;
}

/// `--mcp-allowed-origin` takes `scheme://host[:port]` and nothing else: anything else is
/// refused at start, naming the value and what is wrong with it.
#[test]
fn an_allowed_origin_that_is_not_scheme_host_and_port_is_refused_at_start() {
    for (value, says) in [
        ("localhost:3000", "scheme://host"),
        ("https://app.example.com/", "trailing slash"),
        ("ftp://app.example.com", "not http or https"),
        ("https://user@app.example.com", "user name"),
    ] {
        let refused = marks(&["serve", "--mcp", "--mcp-allowed-origin", value]);
        let stderr = text(&refused.stderr);
        assert!(!refused.status.success(), "{value} was taken");
        assert!(
            stderr.contains(value) && stderr.contains("--mcp-allowed-origin") && stderr.contains(says),
            "{value}: {stderr}"
        );
    }
}

/// With `--public-base-url https://...` and no TLS the banner says where the server listens
/// with the scheme it answers on (http), and the public base URL apart; the ready file agrees.
#[tokio::test]
async fn the_banner_names_where_it_listens_and_the_public_base_url_apart() {
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().unwrap();
    let public = "https://api.example.test";
    let (mut child, addr) = spawn_binary(dir.path(), &["--public-base-url", public]).await;
    let ready: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ready.json")).unwrap()).unwrap();
    assert_eq!(ready["url"], format!("http://{addr}"));
    let problem = request(addr, http::Method::GET, "/v1/companies/nobody", &[("x-api-key", PRO)]).await;
    assert_eq!(problem.json()["type"], format!("{public}/problems/not_found"));
    stop_binary(&mut child).await;
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).await.unwrap();
    assert!(stderr.contains(&format!("listening on http://{addr}\n")), "{stderr}");
    assert!(!stderr.contains(&format!("https://{addr}")), "{stderr}");
    assert!(
        stderr.contains(&format!("public base URL (problem types, links): {public}\n")),
        "{stderr}"
    );
}
