//! The request path in process: request in, response bytes out, for each operation, against a
//! baseline that builds a response with the same body and no work (what any server must do).
//! Also the pieces: authentication plus token bucket, cursor encode/decode, conditional
//! requests.
//!
//! cargo bench --bench handlers

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use http::Request;
use http_body_util::Full;
use marks::api::cursor::{Cursor, CursorKey, SortKey};
use marks::api::state::State;
use marks::api::{handle, handle_with_outcome, Connection};
use marks::keys::ring::{KeyRing, RememberedKey};

/// A bench-only enterprise key with a budget no bench can spend, so every iteration takes the
/// success path through the real token bucket.
const KEY: &str = "vmk_bench_enterprise";
const PEER: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The sample snapshot, built into Cargo's temporary directory for benches (`target/tmp`,
/// replaced by each run), and a state serving it with the demo keys.
fn state() -> Arc<State> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let snapshot = dir.join("bench-sample.snap");
    marks_builder::build(&marks_builder::BuildOptions {
        source: repo.join("sample"),
        out: snapshot.clone(),
        signing_key: marks_builder::render::signing::read_signing_key(&repo.join("sample/demo-signing-key.pem"))
            .expect("demo key"),
        previous: None,
        publisher_key: None,
        gzip_level: 4,
        progress: false,
        log_out: None,
    })
    .expect("sample builds");
    let keys = dir.join("bench-keys.toml");
    std::fs::copy(repo.join("sample/demo-keys.toml"), &keys).expect("keys");
    let entry = marks::keys::file::KeyEntry {
        key_id: "bench".into(),
        tenant: "bench".into(),
        tier: "enterprise".into(),
        status: marks::keys::file::KeyStatus::Active,
        created: "2026-11-22".into(),
        hash: String::new(),
        rate_per_min: Some(u32::MAX),
    };
    marks::keys::edit::add_known(&keys, KEY, entry).expect("bench key");
    // The production start-up path: the state a running server answers from. The server it
    // also starts listens on a free port and is never called; the benches call `handle`.
    let mut settings = marks::settings::Settings::default();
    settings.listen.addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    settings.listen.public_base_url = Some("https://api.example.test".into());
    settings.data.snapshot = Some(snapshot);
    settings.data.keys = Some(keys);
    settings.access.auth_failures_per_min = u32::MAX;
    settings.logging.no_access_log = true;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let app = runtime
        .block_on(marks::app::App::start(settings))
        .expect("the app starts");
    let state = app.state.clone();
    // Kept running (and its runtime with it) for the whole bench process.
    std::mem::forget(app);
    std::mem::forget(runtime);
    state
}

fn request(path: &str, key: &str, extra: &[(&str, &str)]) -> Request<()> {
    let mut builder = Request::get(path).header("x-api-key", key);
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    builder.body(()).expect("valid request")
}

/// What any server does at minimum: a response around the same bytes.
fn baseline(body: &Bytes) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::new(Full::new(body.clone()));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn operations(c: &mut Criterion) {
    let state = state();
    let key = KEY;
    let etag = {
        let response = handle(&state, &request("/v1/companies/openai", key, &[]), PEER);
        response.headers()["etag"].to_str().expect("ascii").to_string()
    };
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: [Case; 10] = [
        ("getCompany", "/v1/companies/openai", &[]),
        (
            "getCompany 304",
            "/v1/companies/openai",
            &[("if-none-match", etag.as_str())],
        ),
        ("listCompanies limit=50", "/v1/companies?limit=50", &[]),
        (
            "listCompanies limit=200 sort=-value_usd",
            "/v1/companies?limit=200&sort=-value_usd",
            &[],
        ),
        ("getMarkSeries", "/v1/companies/openai/marks", &[]),
        (
            "getMarkSeries gzip",
            "/v1/companies/openai/marks",
            &[("accept-encoding", "gzip")],
        ),
        ("getMarkEvents", "/v1/companies/openai/events", &[]),
        ("getResolution", "/v1/companies/openai/resolution", &[]),
        ("getUsage", "/v1/usage", &[]),
        ("not_found", "/v1/companies/nope", &[]),
    ];
    let mut group = c.benchmark_group("handle");
    for (name, path, extra) in cases {
        let req = request(path, key, extra);
        let body = {
            use http_body_util::BodyExt;
            let response = handle(&state, &req, PEER);
            match futures_executor_block_on(response.into_body().collect()) {
                Ok(collected) => collected.to_bytes(),
                Err(error) => panic!("{name}: the body did not collect: {error}"),
            }
        };
        group.throughput(Throughput::Elements(1));
        // A keep-alive client's steady state: a later request of the same connection.
        let mut connection = Connection::default();
        group.bench_with_input(BenchmarkId::new("marks", name), &req, |b, req| {
            b.iter(|| handle_with_outcome(&state, black_box(req), PEER, &mut connection).0)
        });
        if name == "getCompany" {
            group.bench_with_input(
                BenchmarkId::new("marks", "getCompany, first of its connection"),
                &req,
                |b, req| b.iter(|| handle(&state, black_box(req), PEER)),
            );
        }
        group.bench_with_input(BenchmarkId::new("baseline", name), &body, |b, body| {
            b.iter(|| baseline(black_box(body)))
        });
    }
    group.finish();
}

/// Collects a `Full` body without a runtime: it is ready at once.
fn futures_executor_block_on<F: std::future::Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(future)
}

fn access_control(c: &mut Criterion) {
    let state = state();
    let ring: &KeyRing = &state.keys.ring();
    let mut group = c.benchmark_group("access");
    group.bench_function("authenticate", |b| b.iter(|| ring.authenticate(black_box(KEY))));
    let mut remembered = RememberedKey::default();
    group.bench_function("authenticate, remembered by the connection", |b| {
        b.iter(|| ring.authenticate_remembering(black_box(KEY), &mut remembered))
    });
    let limiter = marks::budgets::local::TokenBuckets::default();
    let id: Arc<str> = Arc::from("bench");
    group.bench_function("token bucket", |b| {
        b.iter(|| limiter.take(black_box(&id), u32::MAX, Instant::now()))
    });
    group.bench_function("authenticate + token bucket", |b| {
        b.iter(|| {
            if let marks::keys::ring::Authentication::Valid(caller) = ring.authenticate(black_box(KEY)) {
                limiter.take(&caller.key_id, u32::MAX, Instant::now());
            }
        })
    });
    group.finish();
}

fn cursors(c: &mut Criterion) {
    let key = CursorKey::generate();
    let cursor = Cursor {
        binding: 0x1234_5678,
        key: SortKey::Text("Anthropic".into()),
        slug: "anthropic".into(),
    };
    let text = cursor.encode(&key);
    let mut group = c.benchmark_group("cursor");
    group.bench_function("encode", |b| b.iter(|| black_box(&cursor).encode(&key)));
    group.bench_function("decode", |b| {
        b.iter(|| Cursor::decode(black_box(&text), &key, 0x1234_5678))
    });
    group.finish();
}

criterion_group!(benches, operations, access_control, cursors);
criterion_main!(benches);
