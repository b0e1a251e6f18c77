//! Every company's mark explained in words built for its case (docs/design.md section 4a), held
//! to its own facts over the whole sample: the case is worked out here from the source CSV's
//! effective history (listed, sold, bankrupt, wound down, a sale agreed and pending, recently
//! priced, quiet), and each summary must carry the figures its own body carries beside it, in
//! three significant figures, and nothing that contradicts them: no "today's value" for a company
//! whose private period ended, no confidence for a mark that is not current, the drift's sign as
//! the mark against its last print says.

use serde_json::Value;

use crate::util::*;

/// Dollars in three significant figures with a unit, as a reader is shown them, worked out here
/// independently: $286B, $1.14T, $2.85B, $812M.
fn dollars(value: u64) -> String {
    let v = value as f64;
    let (unit, scale) = [("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)]
        .into_iter()
        .find(|&(_, scale)| v >= scale)
        .unwrap_or(("", 1.0));
    let scaled = v / scale;
    let whole_digits = if scaled >= 100.0 {
        3
    } else if scaled >= 10.0 {
        2
    } else {
        1
    };
    let text = format!("{scaled:.*}", 3 - whole_digits);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("${text}{unit}")
}

#[test]
fn dollars_by_hand() {
    assert_eq!(dollars(286_450_592_196), "$286B");
    assert_eq!(dollars(1_140_000_000_000), "$1.14T");
    assert_eq!(dollars(2_850_000_000), "$2.85B");
    assert_eq!(dollars(40_000_000_000), "$40B");
}

fn days_between(from: &str, to: &str) -> i64 {
    let day = |s: &str| marks_format::rules::day::Day::parse(s).unwrap();
    i64::from(day(to).days_since(day(from)))
}

#[tokio::test]
async fn every_explanation_fits_its_own_facts() {
    let server = TestServer::start_with(Options {
        keys_toml: Some(demo_keys_with_rate(1_000_000)),
        ..Options::default()
    })
    .await;
    let as_of = sample_as_of();
    let mut cases = std::collections::BTreeMap::<String, usize>::new();
    for (slug, history) in sample_histories() {
        let body = server
            .get(&format!("/v1/companies/{slug}"), Some(RESEARCH))
            .await
            .json();
        let mark = &body["latest_mark"];
        let explanation = &body["explanation"];
        let summary = explanation["summary"]
            .as_str()
            .unwrap_or_else(|| panic!("{slug}: no explanation"));
        let case = explanation["case"].as_str().unwrap();
        *cases.entry(case.to_string()).or_default() += 1;
        // The anchor the mark starts from: the last one before the outcome's day, or before as_of.
        let ended = history.ended();
        let anchor = history.mark_anchor().unwrap();
        let expected = match &history.outcome {
            Some((kind, _)) => kind.to_string(),
            None if days_between(&anchor["occurred_on"], &as_of) <= 90 => "recently_priced".into(),
            None => "quiet".into(),
        };
        assert_eq!(case, expected, "{slug}");
        let value = mark["value_usd"].as_u64().unwrap();
        assert!(
            summary.contains(&dollars(value)),
            "{slug}: the mark {} is not in: {summary}",
            dollars(value)
        );
        let current = ended.is_none();
        assert_eq!(mark["current"], current, "{slug}");
        if let Some(outcome) = ended {
            assert!(summary.contains(&outcome["occurred_on"]), "{slug}: {summary}");
            assert!(summary.contains("not a value today"), "{slug}: {summary}");
            for contradiction in [
                "Today's value estimate",
                "confidence",
                "silence",
                "next reported valuation",
            ] {
                assert!(
                    !summary.contains(contradiction),
                    "{slug}: {contradiction:?} in {summary}"
                );
            }
            let reported: u64 = outcome["valuation_usd"].parse().unwrap();
            if reported > 0 {
                assert!(summary.contains(&dollars(reported)), "{slug}: {summary}");
            }
            continue;
        }
        // A current mark: its band, its track record, its next-print forecast, its last print.
        for edge in ["lower_usd", "upper_usd"] {
            let edge = dollars(mark[edge].as_u64().unwrap());
            assert!(summary.contains(&edge), "{slug}: band edge {edge} not in {summary}");
        }
        let confidence = mark["confidence"].as_f64().unwrap();
        assert!(
            summary.contains(&format!("confidence {:.1}%", confidence * 100.0)),
            "{slug}: {summary}"
        );
        assert!(
            summary.contains(&format!("about 1 in {} of our marks", (1.0 / confidence).round())),
            "{slug}"
        );
        assert!(summary.contains("not a company-specific probability"), "{slug}");
        if let Value::Object(next) = &mark["next_reported"] {
            let next = dollars(next["value_usd"].as_u64().unwrap());
            let holds = summary.contains("holds the agreed price");
            assert!(
                holds || summary.contains(&next),
                "{slug}: next print {next} not in {summary}"
            );
        }
        let last_value: u64 = anchor["valuation_usd"].parse().unwrap();
        assert!(
            summary.contains(&dollars(last_value)),
            "{slug}: last print not in {summary}"
        );
        assert!(summary.contains(&anchor["occurred_on"]), "{slug}: {summary}");
        if case == "quiet" || case == "recently_priced" {
            let days = days_between(&anchor["occurred_on"], &as_of);
            assert!(summary.contains(&format!("{days} days")), "{slug}: {summary}");
            // The drift's sign as the mark against the last print says.
            let drift = (value as f64 / last_value as f64 - 1.0) * 100.0;
            let shown = format!("{drift:+.1}%");
            assert!(summary.contains(&shown), "{slug}: {shown} not in {summary}");
        }
    }
    // The sample holds every case but a recent price (its newest event is months before its
    // as_of); the next test makes one.
    for case in ["quiet", "sale_agreed", "listed", "sold", "bankrupt", "wound_down"] {
        assert!(cases.contains_key(case), "no {case} company in the sample: {cases:?}");
    }
}

/// A company priced a month before `as_of` is explained as recently priced, with its figures.
#[tokio::test]
async fn a_recent_price_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("dataset.toml"),
        "dataset_version = \"2025-03-01\"\nas_of = \"2025-03-01\"\ndata_mode = \"illustrative\"\nprovenance = \"backtest\"\ndisclaimer = \"test\"\n",
    )
    .unwrap();
    std::fs::write(
        source.join("companies.csv"),
        "slug,name,sector,status\nnova,Nova,ai,private\n",
    )
    .unwrap();
    std::fs::write(
        source.join("events.csv"),
        "event_id,slug,event_type,occurred_on,valuation_usd,reported_as,source_url,source_grade,note,supersedes\n\
         n1,nova,primary_round,2023-01-10,1000000000,closed,https://example.com/n1,A,,\n\
         n2,nova,primary_round,2025-01-30,2450000000,announced,https://example.com/n2,B,,\n",
    )
    .unwrap();
    let snapshot = dir.path().join("nova.snap");
    build(&source, &snapshot);
    let server = TestServer::start_with(Options {
        snapshot: Some(snapshot),
        ..Options::default()
    })
    .await;
    let body = server.get("/v1/companies/nova", Some(RESEARCH)).await.json();
    assert_eq!(body["explanation"]["case"], "recently_priced");
    let summary = body["explanation"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("Recently priced: a funding round at $2.45B on 2025-01-30, announced, 30 days ago."),
        "{summary}"
    );
    let value = body["latest_mark"]["value_usd"].as_u64().unwrap();
    assert!(summary.contains(&dollars(value)), "{summary}");
}
