//! Building snapshots: bad input refused with `file:line`, every body round-tripped through the
//! file, determinism, signatures, the append-only guard, and refusal of damaged files.

#![allow(clippy::unwrap_used)] // In tests a panic is the failure report.

use std::io::Read;
use std::path::{Path, PathBuf};

use marks_builder::render::signing;
use marks_builder::{BuildError, BuildOptions};
use marks_format::file::etag::etag_of;
use marks_format::file::layout::{ArchivedSeriesBody, Header, HEADER_LEN};
use marks_format::rules::tiers::Tier;
use marks_format::{OpenOptions, Snapshot, SnapshotError};

/// The bundled sample, as served.
fn bundled_sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample")
}

/// The dataset these tests edit, line numbers and all: the sample's first version, fixed, so
/// that a new version of the bundled sample leaves them as they are.
fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/sample-v1")
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
        log_out: None,
    }
}

fn copy_sample(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in ["dataset.toml", "companies.csv", "events.csv"] {
        std::fs::copy(sample().join(name), to.join(name)).unwrap();
    }
}

fn edit(path: &Path, edit: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, edit(text)).unwrap();
}

/// The events of the first sample in today's columns (reported_as, source_grade and supersedes
/// added, empty, after the old ones), with `rows` appended in those columns.
fn with_new_columns(text: String, rows: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        out.push_str(line);
        out.push_str(if i == 0 {
            ",reported_as,source_grade,supersedes\n"
        } else {
            ",,,\n"
        });
    }
    out + rows
}

/// companies.csv with the `domain` and `ticker` columns (empty) and `slug`'s set.
fn with_identifiers(text: String, slug: &str, domain: &str, ticker: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let has = line.split(',').count() >= 6;
        let row = if has {
            line.to_string()
        } else if i == 0 {
            format!("{line},domain,ticker")
        } else {
            format!("{line},,")
        };
        if line.starts_with(&format!("{slug},")) {
            let cells: Vec<&str> = row.split(',').collect();
            let kept = &cells[..cells.len() - 2];
            out.push_str(&format!("{},{domain},{ticker}\n", kept.join(",")));
        } else {
            out.push_str(&row);
            out.push('\n');
        }
    }
    out
}

/// Every malformed-dataset case of docs/design.md section 2: refused with `file:line: reason`, a
/// non-zero result, and no file written.
#[test]
fn bad_datasets_are_refused_with_file_line_and_reason() {
    type Mutation = fn(&Path);
    let cases: Vec<(&str, Mutation, &str)> = vec![
        (
            "unknown slug",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,nobody,primary_round,2024-01-01,100,https://e.com,\n"
                })
            },
            "events.csv:115: unknown slug \"nobody\"",
        ),
        (
            "duplicate slug",
            |d| {
                edit(&d.join("companies.csv"), |t| {
                    t + "stripe,Stripe Again,fintech,private\n"
                })
            },
            "companies.csv:43: duplicate slug \"stripe\" (first on line",
        ),
        (
            "duplicate event_id",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "e0001,stripe,primary_round,2024-01-01,100,https://e.com,\n"
                })
            },
            "events.csv:115: duplicate event_id \"e0001\" (first on line 2)",
        ),
        (
            "bad date",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,2024-02-30,100,https://e.com,\n"
                })
            },
            "events.csv:115: occurred_on \"2024-02-30\" is not a date",
        ),
        (
            "non-positive valuation",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,2024-01-01,0,https://e.com,\n"
                })
            },
            "events.csv:115: valuation_usd 0 is not positive (only a failure",
        ),
        (
            "event after a bankruptcy",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,ftx,secondary_sale,2023-01-01,100,https://e.com,\n"
                })
            },
            "events.csv:115: event x1 on 2023-01-01 comes after \"ftx\"'s bankruptcy on 2022-11-11",
        ),
        (
            "second bankruptcy",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,ftx,bankruptcy,2022-11-11,0,https://e.com,\n"
                })
            },
            "events.csv:115: second outcome for \"ftx\"",
        ),
        (
            "negative valuation",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,2024-01-01,-5,https://e.com,\n"
                })
            },
            "events.csv:115: valuation_usd -5 is not positive",
        ),
        (
            "event after as_of",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,2027-01-01,100,https://e.com,\n"
                })
            },
            "events.csv:115: event x1 on 2027-01-01 is after the dataset's as_of",
        ),
        (
            "event before 1970",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,0001-01-01,100,https://e.com,\n"
                })
            },
            "events.csv:115: event x1 on 0001-01-01 is before 1970-01-01",
        ),
        (
            "name too long",
            |d| {
                edit(&d.join("companies.csv"), |t| {
                    t + &format!("longname,{},fintech,private\n", "N".repeat(300))
                })
            },
            "companies.csv:43: company \"longname\" has a name of 300 bytes; names are at most 256",
        ),
        (
            "unknown sector",
            |d| edit(&d.join("companies.csv"), |t| t.replacen(",fintech,", ",banking,", 1)),
            "companies.csv:7: unknown sector \"banking\"",
        ),
        (
            "unknown status",
            |d| edit(&d.join("companies.csv"), |t| t.replacen(",private\n", ",public\n", 1)),
            "companies.csv:3: unknown status \"public\"",
        ),
        (
            "unknown event_type",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,spac_merger,2024-01-01,100,https://e.com,\n"
                })
            },
            "events.csv:115: unknown event_type \"spac_merger\"",
        ),
        (
            "missing column",
            |d| edit(&d.join("events.csv"), |t| t.replacen("valuation_usd", "valuation", 1)),
            "events.csv:1: missing column \"valuation_usd\"",
        ),
        (
            "empty companies file",
            |d| std::fs::write(d.join("companies.csv"), "").unwrap(),
            "companies.csv: empty file",
        ),
        (
            "header only",
            |d| {
                std::fs::write(
                    d.join("events.csv"),
                    "event_id,slug,event_type,occurred_on,valuation_usd,source_url,note\n",
                )
                .unwrap()
            },
            "events.csv: empty file",
        ),
        (
            "bad dataset date",
            |d| {
                edit(&d.join("dataset.toml"), |t| {
                    t.replace("as_of = \"2026-11-20\"", "as_of = \"20-11-2026\"")
                })
            },
            "dataset.toml:4: as_of \"20-11-2026\" is not a date",
        ),
        (
            "quickstart key that is not a key",
            |d| edit(&d.join("dataset.toml"), |t| t + "quickstart_key = \"vmk demo'\"\n"),
            "dataset.toml:8: quickstart_key \"vmk demo'\" is not a key",
        ),
        (
            "status contradicts events",
            |d| {
                edit(&d.join("companies.csv"), |t| {
                    t.replace("airbnb,Airbnb,consumer,ipo_completed", "airbnb,Airbnb,consumer,private")
                })
            },
            "companies.csv:2: status is \"private\" but \"airbnb\" has a ipo",
        ),
        (
            "company without events",
            |d| edit(&d.join("companies.csv"), |t| t + "ghost,Ghost,other,private\n"),
            "companies.csv:43: company \"ghost\" has no events",
        ),
        (
            "unknown reported_as",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,stripe,primary_round,2024-01-01,100,https://e.com,,rumoured,B,\n")
                })
            },
            "events.csv:115: unknown reported_as \"rumoured\"",
        ),
        (
            "unknown source_grade",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,stripe,primary_round,2024-01-01,100,https://e.com,,closed,E,\n")
                })
            },
            "events.csv:115: unknown source_grade \"E\"",
        ),
        (
            "supersedes a record that is not earlier",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,stripe,primary_round,2024-01-01,100,https://e.com,,closed,B,x2\n")
                })
            },
            "events.csv:115: event x1 supersedes \"x2\", which is not an earlier record",
        ),
        (
            "supersedes itself",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,stripe,primary_round,2024-01-01,100,https://e.com,,closed,B,x1\n")
                })
            },
            "events.csv:115: event x1 supersedes \"x1\", which is not an earlier record",
        ),
        (
            "a correction of another company's record",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,ftx,primary_round,2021-01-01,100,https://e.com,,closed,B,e0001\n")
                })
            },
            "events.csv:115: event x1 of \"ftx\" supersedes e0001 of \"airbnb\" (line 2): a correction is of the same company",
        ),
        (
            "two corrections of one record",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(
                        t,
                        "x1,airbnb,down_round,2020-04-06,17000000000,https://e.com,,closed,B,e0001\n\
                         x2,airbnb,down_round,2020-04-06,16000000000,https://e.com,,closed,B,e0001\n",
                    )
                })
            },
            "events.csv:116: event x2 supersedes e0001 (line 2), which x1 already supersedes",
        ),
        (
            "a retraction that names nothing",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,airbnb,retraction,2024-01-01,0,,,,,\n")
                })
            },
            "events.csv:115: retraction x1 names no record in supersedes",
        ),
        (
            "a control character in a note",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,2024-01-01,100,https://e.com,\"a\u{202e}b\"\n"
                })
            },
            "events.csv:115: note of event x1 holds the invisible or control character U+202E at character 2",
        ),
        (
            "a line break in a note",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,2024-01-01,100,https://e.com,\"line\r\n=cmd\"\n"
                })
            },
            "events.csv:115: note of event x1 holds the invisible or control character U+000D at character 5",
        ),
        (
            "a zero-width character in a name",
            |d| edit(&d.join("companies.csv"), |t| t + "zw,Zero\u{200b}Width,fintech,private\n"),
            "companies.csv:43: the name of \"zw\" holds the invisible or control character U+200B",
        ),
        (
            "tag characters spelling hidden words in a name",
            |d| edit(&d.join("companies.csv"), |t| t + "zeta,Zeta\u{e0049}\u{e0047}\u{e004e} Labs,ai,private\n"),
            "companies.csv:43: the name of \"zeta\" holds the invisible or control character U+E0049 at character 5",
        ),
        (
            "a Hangul filler in a name",
            |d| edit(&d.join("companies.csv"), |t| t + "zeta,Zeta\u{3164},ai,private\n"),
            "companies.csv:43: the name of \"zeta\" holds the invisible or control character U+3164 at character 5",
        ),
        (
            "a soft hyphen in a source address",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,2024-01-01,100,https://e.com/a\u{ad}b,\n"
                })
            },
            "events.csv:115: source_url of event x1 holds the invisible or control character U+00AD at character 16",
        ),
        (
            "a tag character in a note",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "x1,stripe,primary_round,2024-01-01,100,https://e.com,Series B\u{e0020}\n"
                })
            },
            "events.csv:115: note of event x1 holds the invisible or control character U+E0020 at character 9",
        ),
        (
            "a retraction of a retraction",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(
                        t,
                        "x1,airbnb,retraction,2024-01-01,0,,wrong,,,e0001\n\
                         x2,airbnb,retraction,2024-01-02,0,,undo,,,x1\n",
                    )
                })
            },
            "events.csv:116: retraction x2 withdraws x1, itself a retraction (line 115)",
        ),
        (
            "a retraction with a value",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,airbnb,retraction,2024-01-01,5,,wrong,,,e0001\n")
                })
            },
            "events.csv:115: retraction x1 carries valuation_usd 5",
        ),
        (
            "a retraction dated before what it withdraws",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,airbnb,retraction,2019-01-01,0,,wrong,,,e0001\n")
                })
            },
            "events.csv:115: retraction x1 on 2019-01-01 is dated before e0001 on 2020-04-06",
        ),
        (
            "a fund's mark reported closed",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,stripe,fund_mark,2024-01-01,100,https://e.com,,closed,B,\n")
                })
            },
            "events.csv:115: reported_as closed is not one a fund_mark takes (expected estimate)",
        ),
        (
            "an internal valuation with no reported_as",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,stripe,internal_valuation,2024-01-01,100,https://e.com,,,A,\n")
                })
            },
            "events.csv:115: a internal_valuation record needs its reported_as (estimate): an empty one reads as closed",
        ),
        (
            "a buyback in talks",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,stripe,buyback,2024-01-01,100,https://e.com,,in_talks,A,\n")
                })
            },
            "events.csv:115: reported_as in_talks is not one a buyback takes (expected closed)",
        ),
        (
            "a retraction with a reported_as",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    with_new_columns(t, "x1,airbnb,retraction,2024-01-01,0,,wrong,closed,,e0001\n")
                })
            },
            "events.csv:115: a retraction reports no value: its reported_as is empty",
        ),
        (
            "a domain with a scheme",
            |d| edit(&d.join("companies.csv"), |t| with_identifiers(t, "stripe", "https://stripe.com", "")),
            "companies.csv:38: domain \"https://stripe.com\" is not a bare host",
        ),
        (
            "a domain with www.",
            |d| edit(&d.join("companies.csv"), |t| with_identifiers(t, "stripe", "www.stripe.com", "")),
            "companies.csv:38: domain \"www.stripe.com\" starts with www.",
        ),
        (
            "a domain in capitals",
            |d| edit(&d.join("companies.csv"), |t| with_identifiers(t, "stripe", "Stripe.com", "")),
            "companies.csv:38: domain \"Stripe.com\" is not a host",
        ),
        (
            "a domain of two companies",
            |d| {
                edit(&d.join("companies.csv"), |t| {
                    let t = with_identifiers(t, "airbnb", "stripe.com", "NASDAQ:ABNB");
                    with_identifiers(t, "stripe", "stripe.com", "")
                })
            },
            "companies.csv:38: domain \"stripe.com\" of \"stripe\" is already \"airbnb\"'s (line 2)",
        ),
        (
            "a ticker without its exchange",
            |d| edit(&d.join("companies.csv"), |t| with_identifiers(t, "airbnb", "", "ABNB")),
            "companies.csv:2: ticker \"ABNB\" is not EXCHANGE:SYMBOL",
        ),
        (
            "a ticker of a private company",
            |d| edit(&d.join("companies.csv"), |t| with_identifiers(t, "stripe", "", "NYSE:STRP")),
            "companies.csv:38: ticker \"NYSE:STRP\" of \"stripe\", which has no closed ipo",
        ),
        (
            "event ids that differ only in case",
            |d| {
                edit(&d.join("events.csv"), |t| {
                    t + "E0001,stripe,primary_round,2024-01-01,100,https://e.com,\n"
                })
            },
            "events.csv:115: event_id \"E0001\" differs from \"e0001\" (line 2) only in case",
        ),
        (
            "a valuation with a sign",
            |d| edit(&d.join("events.csv"), |t| t + "x1,stripe,primary_round,2024-01-01,+5,https://e.com,\n"),
            "events.csv:115: valuation_usd \"+5\" is not a whole number of US dollars, digits only",
        ),
        (
            "a valuation with a leading zero",
            |d| edit(&d.join("events.csv"), |t| t + "x1,stripe,primary_round,2024-01-01,007,https://e.com,\n"),
            "events.csv:115: valuation_usd \"007\" has a leading zero",
        ),
        (
            "an address without a host",
            |d| edit(&d.join("events.csv"), |t| t + "x1,stripe,primary_round,2024-01-01,5,https:///path,\n"),
            "events.csv:115: source_url \"https:///path\" names no host after the scheme",
        ),
        (
            "an address with a space",
            |d| edit(&d.join("events.csv"), |t| t + "x1,stripe,primary_round,2024-01-01,5,https://e.com/a b,\n"),
            "events.csv:115: source_url \"https://e.com/a b\" holds white space",
        ),
        (
            "an address with a user name",
            |d| edit(&d.join("events.csv"), |t| t + "x1,stripe,primary_round,2024-01-01,5,https://me:pw@e.com/,\n"),
            "events.csv:115: source_url \"https://me:pw@e.com/\" carries a user name or password",
        ),
        (
            "malformed csv row",
            |d| edit(&d.join("events.csv"), |t| t + "x1,stripe\n"),
            "events.csv:115: malformed CSV",
        ),
    ];
    for (name, mutate, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("dataset");
        copy_sample(&source);
        mutate(&source);
        let out = dir.path().join("out.snap");
        let err = marks_builder::build(&options(&source, &out)).expect_err(name);
        let message = err.to_string();
        assert!(message.contains(expected), "{name}: {message}");
        assert!(
            message.contains(&source.display().to_string()),
            "{name}: names the file: {message}"
        );
        assert!(!out.exists(), "{name}: no snapshot written");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{name}: no temporary file left");
    }
}

/// A hostile cell is quoted in part: the refusal of a 20 MB slug is one short line.
#[test]
fn a_refusal_quotes_a_hostile_cell_in_part() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("dataset");
    copy_sample(&source);
    let huge = "X".repeat(20 << 20);
    edit(&source.join("events.csv"), |t| {
        t + &format!("x1,{huge},primary_round,2024-01-01,100,https://e.com,\n")
    });
    let out = dir.path().join("out.snap");
    let message = marks_builder::build(&options(&source, &out))
        .expect_err("refused")
        .to_string();
    assert!(
        message.contains("events.csv:115: unknown slug \"XXXX"),
        "{}",
        &message[..200.min(message.len())]
    );
    assert!(
        message.contains(&format!("({} bytes)", 20 << 20)),
        "says how long it was"
    );
    assert!(
        message.len() < 500,
        "one short line, not the cell: {} bytes",
        message.len()
    );
}

/// A zero-width joiner or non-joiner inside a word of a note is how some scripts spell it.
#[test]
fn a_joiner_inside_a_word_of_a_note_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("dataset");
    copy_sample(&source);
    edit(&source.join("events.csv"), |t| {
        t + "x1,stripe,primary_round,2024-01-01,100,https://e.com,\u{645}\u{6cc}\u{200c}\u{62e}\u{648}\u{627}\u{647}\u{645} round\n"
    });
    let out = dir.path().join("out.snap");
    marks_builder::build(&options(&source, &out)).unwrap_or_else(|e| panic!("refused: {e}"));
    assert!(out.exists());
}

#[test]
fn every_body_round_trips_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sample.snap");
    let report = marks_builder::build(&options(&sample(), &out)).unwrap();
    assert_eq!((report.companies, report.events), (41, 113));
    let snapshot = Snapshot::open(&out, &OpenOptions::default()).unwrap();
    let index = snapshot.index();
    assert_eq!(index.companies.len(), 41);
    assert_eq!(index.events.len(), 113);
    let jwks = signing::parse_jwks(snapshot.body_slice(&index.signing_keys.identity));
    assert_eq!(jwks[0].0, signing::kid(&demo_key().verifying_key()));
    let json = |bytes: &[u8]| -> serde_json::Value { serde_json::from_slice(bytes).expect("valid JSON") };
    for company in index.companies.iter() {
        let slug = company.slug.as_str();
        let item = json(snapshot.body_slice(&company.list_item));
        assert_eq!(item["slug"], slug);
        assert_eq!(
            item["latest_mark"]["value_usd"].as_u64(),
            Some(company.value_usd.to_native())
        );
        for (series, coverage) in [(&company.marks_80, 80), (&company.marks_95, 95)] {
            let text = series_text(&snapshot, series);
            assert_eq!(series.identity_etag.as_str(), etag_of(&text), "ETags name the text");
            let value = json(&text);
            assert_eq!(value["slug"], slug);
            assert_eq!(value["coverage"], coverage);
            assert_eq!(value["meta"]["dataset_version"], "2026-11-20");
        }
        for series in [&company.marks_80_csv, &company.marks_95_csv] {
            let text = series_text(&snapshot, series);
            assert_eq!(series.identity_etag.as_str(), etag_of(&text), "ETags name the text");
            assert!(text.starts_with(b"slug,date,mark_usd,lower_usd,upper_usd\r\n"));
            let first_row = format!("\"{slug}\",");
            assert!(text.len() == 40 || text[40..].starts_with(first_row.as_bytes()));
        }
        for body in [&company.profile, &company.events, &company.resolution] {
            let bytes = snapshot.body_slice(&body.identity);
            assert_eq!(body.etag.as_str(), etag_of(bytes), "ETags name the bytes");
            let value = json(bytes);
            assert_eq!(value["slug"], slug);
            assert_eq!(value["meta"]["dataset_version"], "2026-11-20");
            if let Some(gzip) = body.gzip.as_ref() {
                let mut decoded = Vec::new();
                flate2::read::GzDecoder::new(snapshot.body_slice(&gzip.bytes))
                    .read_to_end(&mut decoded)
                    .unwrap();
                assert_eq!(decoded, bytes);
            }
        }
        signing::verify_record(snapshot.body_slice(&company.resolution.identity), &jwks).expect("record verifies");
    }
    for (tier, body) in Tier::ALL.iter().zip(index.usage.iter()) {
        let usage = json(snapshot.body_slice(&body.identity));
        assert_eq!(usage["tier"], tier.as_str());
        assert_eq!(usage["rate_per_min"], tier.rate_per_min());
    }
    let scorecard = json(snapshot.body_slice(&index.scorecard.identity));
    let names: Vec<&str> = scorecard["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mark", "next_print", "last_print"]);
    assert_eq!(scorecard["methodology_version"], "v0.5.0");
    assert_eq!(scorecard["params"]["drift_pseudo_spells"], 3.0);
    assert_eq!(scorecard["comparisons"][0]["draws"], 1000);
    // ftx's bankruptcy is scored as a failure, marked the day before.
    assert!(scorecard["event_day"]["failure"]["n"].as_u64().unwrap() >= 1);
    let rows = json(&gunzip(snapshot.body_slice(&index.scorecard_targets_full.gzip)));
    let failures: Vec<&str> = rows["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "failure")
        .map(|t| t["slug"].as_str().unwrap())
        .collect();
    assert!(failures.contains(&"ftx"), "{failures:?}");
}

/// The text a stored gzip member decodes to.
fn gunzip(gzip: &[u8]) -> Vec<u8> {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(gzip).read_to_end(&mut text).unwrap();
    text
}

/// A company's series as the server sends it gzipped (the gzip header, the shared head, its
/// rest inside the series export, the trailer), decoded: it must decode whole to the text its
/// length and CRC name, and its rest must lie inside one of the series exports.
fn series_text(snapshot: &Snapshot, series: &ArchivedSeriesBody) -> Vec<u8> {
    let exports = &snapshot.index().exports;
    let (offset, len) = (series.rest.offset.to_native(), series.rest.len.to_native());
    let inside = [
        &exports.series_80,
        &exports.series_95,
        &exports.series_80_csv,
        &exports.series_95_csv,
    ]
    .iter()
    .any(|e| offset >= e.gzip.offset.to_native() && offset + len <= e.gzip.offset.to_native() + e.gzip.len.to_native());
    assert!(inside, "a series' rest lies inside a series export");
    let mut member = marks_format::file::gzip::HEADER.to_vec();
    member.extend_from_slice(snapshot.body_slice(&series.head));
    member.extend_from_slice(snapshot.body_slice(&series.rest));
    member.extend_from_slice(&series.trailer());
    assert_eq!(member.len() as u64, series.gzip_len());
    assert_eq!(
        series.gzip_etag.as_str(),
        etag_of(&member),
        "the gzip ETag names the gzip answer"
    );
    let text = gunzip(&member);
    assert_eq!(text.len() as u64, series.identity_len.to_native());
    text
}

/// The scored targets, the largest documents, are written as they are serialised and deflated a
/// mebibyte at a time and stored as gzip only: on a synthetic dataset whose targets make
/// several pieces, each disclosure decodes whole to the text its length and ETag name.
#[test]
fn the_scored_targets_are_spooled_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("synth");
    let mut synth = marks_builder::synth::SynthOptions::new(60, 3);
    synth.events = 3_000;
    marks_builder::synth::generate(&synth, &source).unwrap();
    let out = dir.path().join("synth.snap");
    marks_builder::build(&options(&source, &out)).unwrap();
    let snapshot = Snapshot::open(&out, &OpenOptions::default()).unwrap();
    let index = snapshot.index();
    let mut counts = Vec::new();
    for (body, disclosure) in [
        (&index.scorecard_targets, "public"),
        (&index.scorecard_targets_full, "full"),
    ] {
        let gzip = snapshot.body_slice(&body.gzip);
        let bytes = gunzip(gzip);
        assert!(bytes.len() > 3 << 20, "{} bytes: several pieces", bytes.len());
        assert_eq!(body.identity_len.to_native(), bytes.len() as u64);
        assert_eq!(body.identity_etag.as_str(), etag_of(&bytes), "ETags name the bytes");
        assert_eq!(body.gzip_etag.as_str(), etag_of(gzip));
        let targets: serde_json::Value = serde_json::from_slice(&bytes).expect("valid JSON");
        assert_eq!(targets["disclosure"], disclosure);
        counts.push(targets["targets"].as_array().unwrap().len());
    }
    assert!(counts[0] > 1_000 && counts[0] == counts[1], "{counts:?}");
}

#[test]
fn builds_are_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.snap"), dir.path().join("b.snap"));
    marks_builder::build(&options(&sample(), &a)).unwrap();
    marks_builder::build(&options(&sample(), &b)).unwrap();
    assert!(
        std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
        "same source and key, same bytes"
    );
}

#[test]
fn a_flipped_signature_byte_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.snap");
    marks_builder::build(&options(&sample(), &out)).unwrap();
    let snapshot = Snapshot::open(&out, &OpenOptions::default()).unwrap();
    let index = snapshot.index();
    let jwks = signing::parse_jwks(snapshot.body_slice(&index.signing_keys.identity));
    let (_, company) = index.company("stripe").unwrap();
    let mut record: serde_json::Value =
        serde_json::from_slice(snapshot.body_slice(&company.resolution.identity)).unwrap();
    let signature = record["signature"].as_str().unwrap().to_string();
    let mut flipped = signature.into_bytes();
    flipped[5] = if flipped[5] == b'A' { b'B' } else { b'A' };
    record["signature"] = serde_json::Value::String(String::from_utf8(flipped).unwrap());
    let body = serde_json::to_vec(&record).unwrap();
    assert_eq!(
        signing::verify_record(&body, &jwks),
        Err(signing::VerifyError::BadSignature)
    );
}

#[test]
fn the_event_history_is_append_only() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.snap");
    marks_builder::build(&options(&sample(), &first)).unwrap();
    let with_previous = |source: &Path, out: &Path| {
        let mut o = options(source, out);
        o.previous = Some(first.clone());
        marks_builder::build(&o)
    };
    let next_version = |d: &Path| {
        edit(&d.join("dataset.toml"), |t| {
            t.replace("dataset_version = \"2026-11-20\"", "dataset_version = \"2026-11-21\"")
        })
    };

    // Appending is fine, and the old signing key stays published.
    let appended = dir.path().join("appended");
    copy_sample(&appended);
    next_version(&appended);
    edit(&appended.join("events.csv"), |t| {
        t + "e0114,stripe,tender_offer,2026-06-01,91500000000,https://example.com/s,\n"
    });
    let out = dir.path().join("appended.snap");
    let mut o = options(&appended, &out);
    o.previous = Some(first.clone());
    o.signing_key = signing::generate_key();
    marks_builder::build(&o).unwrap();
    let snapshot = Snapshot::open(&out, &OpenOptions::default()).unwrap();
    let keys = signing::parse_jwks(snapshot.body_slice(&snapshot.index().signing_keys.identity));
    assert_eq!(
        keys.len(),
        2,
        "the previous key stays listed so old records still verify"
    );

    let changed = dir.path().join("changed");
    copy_sample(&changed);
    next_version(&changed);
    edit(&changed.join("events.csv"), |t| t.replace("e0050,", "e0050-gone,"));
    let err = with_previous(&changed, &dir.path().join("x.snap")).unwrap_err();
    assert!(matches!(err, BuildError::AppendOnly(_)));
    assert!(
        err.to_string().contains("event e0050") && err.to_string().contains("was removed"),
        "{err}"
    );

    let revalued = dir.path().join("revalued");
    copy_sample(&revalued);
    next_version(&revalued);
    edit(&revalued.join("events.csv"), |t| {
        t.replace(",2021-03-15,95000000000,", ",2021-03-15,96000000000,")
    });
    let err = with_previous(&revalued, &dir.path().join("y.snap"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("changes its valuation_usd") && err.contains("events.csv:"),
        "{err}"
    );

    let older = dir.path().join("older");
    copy_sample(&older);
    edit(&older.join("dataset.toml"), |t| {
        t.replace("dataset_version = \"2026-11-20\"", "dataset_version = \"2026-01-01\"")
    });
    let err = with_previous(&older, &dir.path().join("z.snap"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("older than the previous snapshot"), "{err}");
}

/// A copy of `bytes` changed by `change`, in a temporary file removed when the path is dropped.
fn damaged(bytes: &[u8], change: impl FnOnce(&mut Vec<u8>)) -> tempfile::TempPath {
    let mut copy = bytes.to_vec();
    change(&mut copy);
    let file = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    std::fs::write(&file, copy).unwrap();
    file
}

#[test]
fn damaged_snapshots_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.snap");
    marks_builder::build(&options(&sample(), &good)).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let open = |path: tempfile::TempPath| Snapshot::open(&path, &OpenOptions::default()).unwrap_err();
    assert!(matches!(
        open(damaged(&bytes, |b| b[HEADER_LEN + 1000] ^= 1)),
        SnapshotError::ChecksumMismatch
    ));
    let last = bytes.len() - 1;
    assert!(matches!(
        open(damaged(&bytes, |b| b[last] ^= 1)),
        SnapshotError::ChecksumMismatch
    ));
    assert!(matches!(
        open(damaged(&bytes, |b| b.truncate(b.len() / 2))),
        SnapshotError::Truncated { .. }
    ));
    assert!(matches!(
        open(damaged(&bytes, |b| b.truncate(100))),
        SnapshotError::Truncated { .. }
    ));
    assert!(matches!(
        open(damaged(&bytes, |b| b[0] = b'X')),
        SnapshotError::BadMagic
    ));
    assert!(matches!(
        open(damaged(&bytes, |b| b[12] = 99)),
        SnapshotError::Version { .. }
    ));
    let err = open(damaged(&bytes, |b| b[12] = 99)).to_string();
    assert!(err.contains("rebuild"), "says what to do: {err}");
    assert!(matches!(
        open(damaged(&bytes, |b| b.extend_from_slice(b"junk"))),
        SnapshotError::Header(_)
    ));
    assert!(matches!(
        Snapshot::open(&dir.path().join("absent.snap"), &OpenOptions::default()).unwrap_err(),
        SnapshotError::Io { .. }
    ));
    // An archive whose checksum was recomputed to match garbage still fails validation.
    let forged = damaged(&bytes, |b| {
        let header = Header::decode(b).unwrap();
        let start = header.index_offset as usize;
        for byte in &mut b[start..start + 64] {
            *byte = 0xff;
        }
        let mut fixed = header.clone();
        fixed.checksum = xxhash_rust::xxh3::xxh3_128(&b[HEADER_LEN..]);
        b[..HEADER_LEN].copy_from_slice(&fixed.encode());
    });
    assert!(matches!(
        open(forged),
        SnapshotError::Archive(_) | SnapshotError::Inconsistent(_)
    ));
}

#[test]
fn publisher_signatures_are_required_when_configured() {
    let dir = tempfile::tempdir().unwrap();
    let publisher = signing::generate_key();
    let signed = dir.path().join("signed.snap");
    let mut o = options(&sample(), &signed);
    o.publisher_key = Some(publisher.clone());
    marks_builder::build(&o).unwrap();
    let unsigned = dir.path().join("unsigned.snap");
    marks_builder::build(&options(&sample(), &unsigned)).unwrap();
    let require = |key: &ed25519_dalek::SigningKey| OpenOptions {
        publisher_key: Some(key.verifying_key()),
    };
    assert!(Snapshot::open(&signed, &require(&publisher)).is_ok());
    assert!(
        Snapshot::open(&signed, &OpenOptions::default()).is_ok(),
        "a signed file is fine where none is required"
    );
    assert!(matches!(
        Snapshot::open(&unsigned, &require(&publisher)).unwrap_err(),
        SnapshotError::Unsigned
    ));
    assert!(matches!(
        Snapshot::open(&signed, &require(&signing::generate_key())).unwrap_err(),
        SnapshotError::PublisherSignature(_)
    ));
    // A header edited after signing (here: its dataset version) fails the signature.
    let bytes = std::fs::read(&signed).unwrap();
    let edited = damaged(&bytes, |b| b[64] = b'1');
    assert!(matches!(
        Snapshot::open(&edited, &require(&publisher)).unwrap_err(),
        SnapshotError::PublisherSignature(_)
    ));
    // A forged body. With the checksum recomputed to match it, the header no longer matches
    // its signature; with the header left as signed (as a forger who can make an XXH3
    // collision would leave it: XXH3 is not cryptographic), the signed BLAKE3 digest refuses
    // the content before the checksum is even looked at.
    let forge = |b: &mut Vec<u8>| {
        let body = HEADER_LEN + 10;
        b[body] = if b[body] == b'X' { b'Y' } else { b'X' };
    };
    let recomputed = damaged(&bytes, |b| {
        forge(b);
        let checksum = xxhash_rust::xxh3::xxh3_128(&b[HEADER_LEN..]);
        b[48..64].copy_from_slice(&checksum.to_le_bytes());
    });
    assert!(matches!(
        Snapshot::open(&recomputed, &require(&publisher)).unwrap_err(),
        SnapshotError::PublisherSignature(_)
    ));
    let header_as_signed = damaged(&bytes, forge);
    assert!(matches!(
        Snapshot::open(&header_as_signed, &require(&publisher)).unwrap_err(),
        SnapshotError::DigestMismatch
    ));
}

/// Each version of the sample appends to the one before: the second builds with `--previous`
/// of the first, the third with `--previous` of the second, the fifth (the fifth version of the
/// public-events table imported onto the third) with `--previous` of the third, and the bundled
/// one (data v6: the corrections collected from pages, appended) with `--previous` of the
/// fifth; each passes the append-only check, and the change log carries every version.
#[test]
fn each_sample_version_is_built_on_the_one_before() {
    let dir = tempfile::tempdir().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut previous = dir.path().join("v1.snap");
    marks_builder::build(&options(&sample(), &previous)).unwrap();
    for (n, source, counts) in [
        (2, golden.join("sample-v2"), (85, 261)),
        (3, golden.join("sample-v3"), (182, 480)),
        (4, golden.join("sample-v5"), (247, 1112)),
        (5, bundled_sample(), (247, 1166)),
    ] {
        let out = dir.path().join(format!("v{n}.snap"));
        let mut o = options(&source, &out);
        o.previous = Some(previous.clone());
        let report = marks_builder::build(&o).unwrap_or_else(|e| panic!("sample {n} is refused: {e}"));
        assert_eq!((report.companies, report.events), counts, "sample {n}");
        previous = out;
    }
    let snapshot = Snapshot::open(&previous, &OpenOptions::default()).unwrap();
    let index = snapshot.index();
    assert_eq!(index.companies.len(), 247);
    let versions: Vec<&str> = index.changes.versions.iter().map(|v| v.as_str()).collect();
    assert_eq!(
        versions,
        ["2026-11-20", "2026-11-24", "2026-11-25", "2026-11-28", "2026-12-07"]
    );
    // Companies whose history was corrected are in the changes since the third version.
    let changed: Vec<&str> = index
        .changes_since("2026-11-25")
        .unwrap()
        .iter()
        .map(|row| index.companies[row.company.to_native() as usize].slug.as_str())
        .collect();
    assert!(
        changed.contains(&"windsurf") && changed.contains(&"stripe"),
        "{changed:?}"
    );
    // And those whose history the collected pages corrected, since the fifth.
    let changed: Vec<&str> = index
        .changes_since("2026-11-28")
        .unwrap()
        .iter()
        .map(|row| index.companies[row.company.to_native() as usize].slug.as_str())
        .collect();
    for corrected in ["revolut", "instacart", "cruise", "woowa-brothers"] {
        assert!(changed.contains(&corrected), "{corrected}: {changed:?}");
    }
}

/// A v5-style correction appended to the bundled sample passes the append-only check; the same
/// correction made by editing the published record in place is refused at its line, and so is
/// a published record dropped, and a grade changed once it was filled in.
#[test]
fn corrections_are_appended_never_edited() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.snap");
    marks_builder::build(&options(&bundled_sample(), &first)).unwrap();
    let copy = |name: &str| {
        let to = dir.path().join(name);
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
        edit(&to.join("dataset.toml"), |t| {
            t.replace("dataset_version = \"2026-11-28\"", "dataset_version = \"2026-11-29\"")
        });
        to
    };
    let build_on_first = |source: &Path| {
        let mut o = options(source, &dir.path().join("out.snap"));
        o.previous = Some(first.clone());
        marks_builder::build(&o).map_err(|e| e.to_string())
    };
    let events = std::fs::read_to_string(bundled_sample().join("events.csv")).unwrap();
    let (line, record) = events
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("e0053,"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .unwrap();
    let fields: Vec<&str> = record.split(',').collect();

    let appended = copy("appended");
    edit(&appended.join("events.csv"), |t| {
        t + &format!(
            "e9001,{},{},{},{},closed,https://example.com/correction,A,corrected value,e0053\n",
            fields[1], fields[2], fields[3], 123_000_000
        )
    });
    build_on_first(&appended).unwrap_or_else(|e| panic!("an appended correction is refused: {e}"));

    let edited = copy("edited");
    edit(&edited.join("events.csv"), |t| {
        t.replace(&record, &record.replacen(&format!(",{},", fields[4]), ",123000000,", 1))
    });
    let err = build_on_first(&edited).unwrap_err();
    assert!(
        err.contains(&format!("events.csv:{line}: event e0053 changes its valuation_usd")),
        "{err}"
    );

    let dropped = copy("dropped");
    edit(&dropped.join("events.csv"), |t| t.replace(&format!("{record}\n"), ""));
    let err = build_on_first(&dropped).unwrap_err();
    assert!(
        err.contains(&format!("events.csv:{line}: event e0053")) && err.contains("was removed"),
        "{err}"
    );

    let regraded = copy("regraded");
    let graded = events.lines().find(|l| l.starts_with("e0001,")).unwrap().to_string();
    assert!(graded.contains(",C,"), "{graded}");
    edit(&regraded.join("events.csv"), |t| {
        t.replace(&graded, &graded.replacen(",C,", ",A,", 1))
    });
    let err = build_on_first(&regraded).unwrap_err();
    assert!(
        err.contains("events.csv:2: event e0001 changes its source_grade"),
        "{err}"
    );
}

/// Format compatibility: the committed golden file of each format version this build reads
/// still opens, and each older one is refused with a message that says to rebuild.
#[test]
fn golden_snapshots_of_every_format_version_open_or_are_refused_as_too_old() {
    use marks_format::file::layout::OLDEST_READABLE_VERSION;
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let (mut readable, mut too_old) = (0, 0);
    for entry in std::fs::read_dir(&golden).unwrap() {
        let path = entry.unwrap().path();
        let Some(version) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix('v')?.strip_suffix(".snap")?.parse::<u32>().ok())
        else {
            continue;
        };
        assert!(
            std::fs::metadata(&path).unwrap().len() < 1 << 20,
            "golden files stay under 1 MiB"
        );
        if version < OLDEST_READABLE_VERSION {
            let err = Snapshot::open(&path, &OpenOptions::default()).unwrap_err();
            assert!(
                matches!(err, SnapshotError::TooOld { got, .. } if got == version),
                "{err}"
            );
            assert!(err.to_string().contains("rebuild it"), "{err}");
            too_old += 1;
            continue;
        }
        let snapshot =
            Snapshot::open(&path, &OpenOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(snapshot.header().format_version, version);
        let index = snapshot.index();
        assert_eq!(index.companies.len(), 2);
        let (_, acme) = index.company("acme").unwrap();
        let profile: serde_json::Value = serde_json::from_slice(snapshot.body_slice(&acme.profile.identity)).unwrap();
        assert_eq!(profile["name"], "Acme Robotics");
        readable += 1;
    }
    assert_eq!(
        readable,
        1,
        "one golden file of the current format in {}",
        golden.display()
    );
    assert!(
        too_old >= 2,
        "the files of formats 1 and 2 are kept to prove they are refused"
    );
}

/// The test vector shipped for third-party verifiers verifies here too, byte for byte.
#[test]
fn the_published_test_vector_verifies() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python/test_vector.json");
    let vector: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let record = vector["record"].as_object().unwrap();
    let canonical = signing::signed_bytes(record).unwrap();
    assert_eq!(
        std::str::from_utf8(&canonical).unwrap(),
        vector["canonical_utf8"].as_str().unwrap()
    );
    let jwks = signing::parse_jwks(&serde_json::to_vec(&serde_json::json!({ "keys": [vector["jwk"]] })).unwrap());
    let body = serde_json::to_vec(&vector["record"]).unwrap();
    assert_eq!(signing::verify_record(&body, &jwks), Ok(()));
}

/// The change log answers for the last `LOG_DEPTH` versions, oldest dropped first, and a
/// rebuild of the version already served is not a version of its own.
#[test]
fn the_change_log_keeps_the_last_versions_and_a_rebuild_adds_none() {
    use marks_builder::render::changes::LOG_DEPTH;
    use marks_format::rules::day::Day;
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    std::fs::create_dir_all(&source).unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/source");
    for name in ["dataset.toml", "companies.csv", "events.csv"] {
        std::fs::copy(golden.join(name), source.join(name)).unwrap();
    }
    let toml = std::fs::read_to_string(source.join("dataset.toml")).unwrap();
    let version = |v: usize| Day::parse("2025-06-30").unwrap().plus(v as i32).to_string();
    let build_version = |v: usize, previous: Option<&Path>| {
        std::fs::write(source.join("dataset.toml"), toml.replace("2025-06-30", &version(v))).unwrap();
        let out = dir.path().join(format!("v{v}.snap"));
        let mut o = options(&source, &out);
        o.previous = previous.map(Path::to_owned);
        marks_builder::build(&o).unwrap();
        out
    };
    let mut last = build_version(0, None);
    let first = Snapshot::open(&last, &OpenOptions::default()).unwrap();
    assert_eq!(first.index().changes.versions.len(), 1);
    assert!(first
        .index()
        .changes_since(&version(0))
        .is_some_and(|rows| rows.is_empty()));
    for v in 1..=LOG_DEPTH + 1 {
        last = build_version(v, Some(&last));
    }
    let snapshot = Snapshot::open(&last, &OpenOptions::default()).unwrap();
    let log = &snapshot.index().changes;
    assert_eq!(log.versions.len(), LOG_DEPTH + 1);
    assert_eq!(log.versions[0].as_str(), version(1), "the oldest version went first");
    assert!(snapshot.index().changes_since(&version(0)).is_none());
    // acme's mark moves with each day; zeta listed long ago and its mark is frozen.
    let since_oldest = snapshot.index().changes_since(&version(1)).unwrap();
    let changed: Vec<&str> = since_oldest
        .iter()
        .map(|row| {
            snapshot.index().companies[row.company.to_native() as usize]
                .slug
                .as_str()
        })
        .collect();
    assert_eq!(changed, ["acme"]);

    let rebuilt = dir.path().join("rebuilt.snap");
    let mut o = options(&source, &rebuilt);
    o.previous = Some(last.clone());
    marks_builder::build(&o).unwrap();
    let again = Snapshot::open(&rebuilt, &OpenOptions::default()).unwrap();
    assert_eq!(
        again.index().changes.versions.as_slice(),
        snapshot.index().changes.versions.as_slice(),
        "a rebuild of the same version keeps the chain as it was"
    );
}

/// Exports decode to the text their index entry describes, at any gzip level, 0 included.
#[test]
fn exports_are_whole_gzip_members_of_the_text_they_describe() {
    let dir = tempfile::tempdir().unwrap();
    for level in [0, 1, 9] {
        let out = dir.path().join(format!("level{level}.snap"));
        let mut o = options(&sample(), &out);
        o.gzip_level = level;
        marks_builder::build(&o).unwrap();
        let snapshot = Snapshot::open(&out, &OpenOptions::default()).unwrap();
        let exports = &snapshot.index().exports;
        for export in [&exports.companies, &exports.series_80, &exports.series_95] {
            let gzip = snapshot.body_slice(&export.gzip);
            assert_eq!(etag_of(gzip), export.gzip_etag.as_str());
            let mut text = Vec::new();
            flate2::read::GzDecoder::new(gzip).read_to_end(&mut text).unwrap();
            assert_eq!(text.len() as u64, export.identity_len.to_native(), "level {level}");
            assert_eq!(etag_of(&text), export.identity_etag.as_str());
            assert_eq!(
                text.iter().filter(|&&b| b == b'\n').count(),
                42,
                "a header and 41 companies"
            );
        }
    }
}
