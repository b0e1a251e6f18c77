//! The offline half: opening and validating snapshots as they grow (against the floor any
//! validation pays, one XXH3 pass over the same bytes), building one (against rendering alone),
//! and the hand-written series renderer against serde_json.
//!
//! cargo bench --bench snapshot

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use marks_builder::dataset::Dataset;
use marks_builder::methodology::{usd, Coverage, Fit, Method};
use marks_builder::synth::{self, SynthOptions};
use marks_builder::BuildOptions;
use marks_format::{OpenOptions, Snapshot};

fn demo_key() -> ed25519_dalek::SigningKey {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    marks_builder::render::signing::read_signing_key(&repo.join("sample/demo-signing-key.pem")).expect("demo key")
}

/// A synthetic dataset of `companies` companies and its snapshot, made once per size.
fn synthetic(dir: &Path, companies: usize) -> (PathBuf, PathBuf) {
    let source = dir.join(format!("synth-{companies}"));
    let mut options = SynthOptions::new(companies, 42);
    options.events = companies * 20;
    synth::generate(&options, &source).expect("synth");
    let out = dir.join(format!("synth-{companies}.snap"));
    build(&source, &out, 4);
    (source, out)
}

fn build(source: &Path, out: &Path, gzip_level: u32) -> marks_builder::BuildReport {
    marks_builder::build(&BuildOptions {
        source: source.to_owned(),
        out: out.to_owned(),
        signing_key: demo_key(),
        previous: None,
        publisher_key: None,
        gzip_level,
        progress: false,
        log_out: None,
    })
    .expect("build")
}

fn open_and_validate(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("open");
    group.sample_size(10);
    for companies in [100, 400, 1600] {
        let (_, snapshot) = synthetic(dir.path(), companies);
        let bytes = std::fs::metadata(&snapshot).expect("size").len();
        group.throughput(Throughput::Bytes(bytes));
        group.bench_with_input(BenchmarkId::new("Snapshot::open", bytes), &snapshot, |b, path| {
            b.iter(|| Snapshot::open(black_box(path), &OpenOptions::default()).expect("valid"))
        });
        group.bench_with_input(BenchmarkId::new("read + xxh3 (floor)", bytes), &snapshot, |b, path| {
            b.iter(|| xxhash_rust::xxh3::xxh3_128(&std::fs::read(black_box(path)).expect("read")))
        });
    }
    group.finish();
}

fn build_throughput(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (source, _) = synthetic(dir.path(), 200);
    let dataset = Dataset::load(&source).expect("dataset");
    let events = dataset.event_count() as u64;
    let mut group = c.benchmark_group("build");
    group.sample_size(10);
    group.throughput(Throughput::Elements(events));
    let out = dir.path().join("bench.snap");
    group.bench_function("marks build (200 companies, gzip 4)", |b| {
        b.iter(|| build(&source, &out, 4))
    });
    group.bench_function("marks build (200 companies, no gzip)", |b| {
        b.iter(|| build(&source, &out, 0))
    });
    group.bench_function("methodology fit alone", |b| b.iter(|| Method::new(black_box(&dataset))));
    group.finish();
}

fn series_rendering(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (source, _) = synthetic(dir.path(), 20);
    let dataset = Dataset::load(&source).expect("dataset");
    let fit = Fit::new(&dataset);
    let marks = fit.marks(0, &dataset.companies[0]);
    let meta = marks_builder::render::meta_json(&dataset.info);
    let dates = marks_builder::render::series_dates(&marks.series);
    #[derive(serde::Serialize)]
    struct Point {
        date: marks_format::rules::day::Day,
        mark_usd: u64,
        lower_usd: u64,
        upper_usd: u64,
    }
    let mut group = c.benchmark_group("series");
    group.throughput(Throughput::Elements(marks.series.len() as u64));
    group.bench_function("hand-written", |b| {
        b.iter(|| marks_builder::render::series(&meta, "synth-000000", Coverage::C80, black_box(&marks.series), &dates))
    });
    group.bench_function("serde_json", |b| {
        b.iter(|| {
            let points: Vec<Point> = black_box(&marks.series)
                .iter()
                .map(|p| Point {
                    date: p.day,
                    mark_usd: usd(p.mark),
                    lower_usd: usd(p.band80.0),
                    upper_usd: usd(p.band80.1),
                })
                .collect();
            serde_json::to_vec(&points)
        })
    });
    group.finish();
}

criterion_group!(benches, open_and_validate, build_throughput, series_rendering);
criterion_main!(benches);
