//! The publication log through the builder: carried from version to version and refused, with
//! its file and line, when it was forged, cut, reordered, signed by another key or forked.

#![allow(clippy::unwrap_used)] // In tests a panic is the failure report.

use std::path::{Path, PathBuf};

use marks_builder::render::publication_log::PublicationLog;
use marks_builder::render::signing;
use marks_builder::BuildOptions;

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name)
}

fn bundled_sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample")
}

fn demo_key() -> ed25519_dalek::SigningKey {
    signing::read_signing_key(&bundled_sample().join("demo-signing-key.pem")).unwrap()
}

fn options(source: &Path, out: &Path) -> BuildOptions {
    BuildOptions {
        source: source.to_owned(),
        out: out.to_owned(),
        signing_key: demo_key(),
        previous: None,
        publisher_key: None,
        gzip_level: 1,
        progress: false,
        log_out: Some(out.with_extension("jsonl")),
    }
}

fn parse(path: &Path) -> PublicationLog {
    let text = std::fs::read_to_string(path).unwrap();
    PublicationLog::parse(&text, &[demo_key().verifying_key()], "log").unwrap()
}

/// The bundled sample, copied so that a test may change the log it carries.
fn sample_copy(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for file in [
        "dataset.toml",
        "companies.csv",
        "events.csv",
        "aliases.csv",
        "publication-log.jsonl",
        "demo-signing-key.pem.pub",
    ] {
        std::fs::copy(bundled_sample().join(file), to.join(file)).unwrap();
    }
    to
}

fn edit_log(source: &Path, edit: impl FnOnce(Vec<String>) -> Vec<String>) {
    let path = source.join("publication-log.jsonl");
    let lines = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    std::fs::write(&path, edit(lines).join("\n") + "\n").unwrap();
}

/// Which line of the sample's log holds the first checkpoint.
fn first_checkpoint_line(lines: &[String]) -> usize {
    lines.iter().position(|l| l.starts_with("{\"checkpoint\"")).unwrap()
}

/// Five versions, each built with `--previous` of the one before: every checkpoint verifies,
/// each later tree extends every earlier one, the log the sample ships is exactly what the
/// first four versions publish (so anyone can rebuild it), and a rebuild of the last version
/// appends nothing.
#[test]
fn a_log_carried_through_five_versions_verifies_and_the_sample_ships_its_first_four() {
    let dir = tempfile::tempdir().unwrap();
    let mut previous: Option<PathBuf> = None;
    let mut sizes = Vec::new();
    for (n, source) in [
        golden("sample-v1"),
        golden("sample-v2"),
        golden("sample-v3"),
        golden("sample-v5"),
        bundled_sample(),
    ]
    .iter()
    .enumerate()
    {
        let out = dir.path().join(format!("v{n}.snap"));
        let mut o = options(source, &out);
        o.previous = previous.clone();
        let report = marks_builder::build(&o).unwrap_or_else(|e| panic!("version {n} is refused: {e}"));
        if n == 0 {
            assert!(
                report.log.starts_with("started a new publication log"),
                "{}",
                report.log
            );
        } else {
            assert!(report.log.starts_with("carried the publication log"), "{}", report.log);
        }
        let log = parse(&out.with_extension("jsonl"));
        assert_eq!(log.checkpoints.len(), n + 1);
        sizes.push(log.leaves.len());
        for earlier in &log.checkpoints {
            assert!(
                log.extends(earlier),
                "version {n} does not extend {}",
                earlier.dataset_version
            );
        }
        if n == 3 {
            assert_eq!(
                std::fs::read_to_string(out.with_extension("jsonl")).unwrap(),
                std::fs::read_to_string(bundled_sample().join("publication-log.jsonl")).unwrap(),
                "sample/publication-log.jsonl is not what the first four versions publish"
            );
        }
        previous = Some(out);
    }
    // Each version appended one entry per company it marks.
    assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{sizes:?}");
    let last = previous.unwrap();
    let mut again = options(&bundled_sample(), &dir.path().join("again.snap"));
    again.previous = Some(last.clone());
    let report = marks_builder::build(&again).unwrap();
    assert!(report.log.contains("nothing was appended"), "{}", report.log);
    assert_eq!(
        parse(&dir.path().join("again.jsonl")).leaves.len(),
        *sizes.last().unwrap()
    );
}

/// The log a dataset carries is replayed before anything is appended: an entry forged, removed
/// or moved, a checkpoint signed by a key that was never published, or a log that forks from
/// the previous snapshot's, is refused with the file and line where the replay failed.
#[test]
fn a_tampered_or_forked_log_is_refused_where_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let build = |source: &Path, previous: Option<&Path>| {
        let mut o = options(source, &dir.path().join("out.snap"));
        o.previous = previous.map(Path::to_owned);
        marks_builder::build(&o).map(|r| r.log).map_err(|e| e.to_string())
    };
    let original: Vec<String> = std::fs::read_to_string(bundled_sample().join("publication-log.jsonl"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let checkpoint = first_checkpoint_line(&original) + 1;

    let forged = sample_copy(dir.path(), "forged");
    edit_log(&forged, |mut lines| {
        let value = lines[2].split("\"value_usd\":").nth(1).unwrap().trim_end_matches("}}");
        let higher = value.parse::<u64>().unwrap() + 1;
        lines[2] = lines[2].replace(&format!("\"value_usd\":{value}"), &format!("\"value_usd\":{higher}"));
        lines
    });
    let err = build(&forged, None).unwrap_err();
    assert!(
        err.contains(&format!("publication-log.jsonl:{checkpoint}:")) && err.contains("forged, removed or reordered"),
        "{err}"
    );

    let removed = sample_copy(dir.path(), "removed");
    edit_log(&removed, |mut lines| {
        lines.remove(3);
        lines
    });
    let err = build(&removed, None).unwrap_err();
    assert!(
        err.contains(&format!("publication-log.jsonl:{}:", checkpoint - 1)) && err.contains("come before it"),
        "{err}"
    );

    let reordered = sample_copy(dir.path(), "reordered");
    edit_log(&reordered, |mut lines| {
        lines.swap(2, 3);
        lines
    });
    let err = build(&reordered, None).unwrap_err();
    assert!(
        err.contains(&format!("publication-log.jsonl:{checkpoint}:")) && err.contains("reordered"),
        "{err}"
    );

    // The same log re-signed by another key: each checkpoint is valid, under a key no
    // snapshot of this publisher ever published.
    let foreign = sample_copy(dir.path(), "foreign");
    let other = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let mut resigned = PublicationLog::new(&parse(&bundled_sample().join("publication-log.jsonl")).origin);
    let carried = parse(&bundled_sample().join("publication-log.jsonl"));
    let mut start = 0usize;
    for c in &carried.checkpoints {
        let entries: Vec<_> = (start..c.tree_size as usize)
            .map(|i| {
                (
                    serde_json::from_slice(&carried.leaves[i]).unwrap(),
                    carried.bands[i].clone(),
                )
            })
            .collect();
        resigned.append(&c.dataset_version, &entries, &other);
        start = c.tree_size as usize;
    }
    std::fs::write(foreign.join("publication-log.jsonl"), resigned.to_file()).unwrap();
    let err = build(&foreign, None).unwrap_err();
    assert!(
        err.contains(&format!("publication-log.jsonl:{checkpoint}:"))
            && err.contains("no signature by a published key"),
        "{err}"
    );

    // A fork: the dataset carries the first three versions, the previous snapshot a log that
    // began afresh at the third; their first checkpoints differ.
    let fresh = dir.path().join("fresh.snap");
    marks_builder::build(&options(&golden("sample-v3"), &fresh)).unwrap();
    let err = build(&sample_copy(dir.path(), "fork"), Some(&fresh)).unwrap_err();
    assert!(
        err.contains("forks from the previous snapshot's publication log"),
        "{err}"
    );

    // A dataset older than the log's last version would publish out of order.
    let older = sample_copy(dir.path(), "older");
    let toml = std::fs::read_to_string(older.join("dataset.toml")).unwrap();
    let older_toml = toml.replace("dataset_version = \"2026-12-07\"", "dataset_version = \"2026-11-27\"");
    assert_ne!(older_toml, toml, "the sample's version is where the test expects it");
    std::fs::write(older.join("dataset.toml"), older_toml).unwrap();
    let err = build(&older, None).unwrap_err();
    assert!(err.contains("later than this dataset's 2026-11-27"), "{err}");

    // The untouched copy builds, and says what it carried.
    let words = build(&sample_copy(dir.path(), "untouched"), None).unwrap();
    assert!(words.contains("4 versions") && words.contains("appended"), "{words}");
}

/// A publisher with a key of its own carries the sample's log when the dataset names the key
/// that signed it (`publication_log_keys`), and publishes that key beside its own so the old
/// checkpoints stay verifiable; without it, the log is refused, and the refusal says where the
/// keys are looked for.
#[test]
fn another_signing_key_carries_the_log_only_with_the_key_that_signed_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(&sample_copy(dir.path(), "named"), &dir.path().join("named.snap"));
    o.signing_key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let words = marks_builder::build(&o).unwrap().log;
    assert!(words.contains("4 versions") && words.contains("appended"), "{words}");
    let log = PublicationLog::parse(
        &std::fs::read_to_string(dir.path().join("named.jsonl")).unwrap(),
        &[demo_key().verifying_key(), o.signing_key.verifying_key()],
        "log",
    )
    .unwrap();
    assert_eq!(log.checkpoints.len(), 5);
    let snapshot = marks_format::Snapshot::open(&dir.path().join("named.snap"), &Default::default()).unwrap();
    let jwks = snapshot.body_slice(&snapshot.index().signing_keys.identity);
    let published: Vec<_> = signing::parse_jwks(jwks).into_iter().map(|(_, key)| key).collect();
    assert!(published.contains(&demo_key().verifying_key()) && published.contains(&o.signing_key.verifying_key()));

    let unnamed = sample_copy(dir.path(), "unnamed");
    let toml = std::fs::read_to_string(unnamed.join("dataset.toml")).unwrap();
    let toml: String = toml
        .lines()
        .filter(|l| !l.starts_with("publication_log_keys"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(unnamed.join("dataset.toml"), toml).unwrap();
    let mut o = options(&unnamed, &dir.path().join("unnamed.snap"));
    o.signing_key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let err = marks_builder::build(&o).unwrap_err().to_string();
    assert!(
        err.contains("no signature by a published key") && err.contains("publication_log_keys"),
        "{err}"
    );
}
