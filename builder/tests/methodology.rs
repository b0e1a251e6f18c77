//! Methodology v0.3.0 (docs/design.md section 3) against values computed here by hand, independently of
//! the builder's code: the drift of one bucket from two pairs, the profile's interpolation,
//! the scale, the conformal index; causality, continuity, listings and bankruptcies as
//! outcomes; coverage on synthetic data from a selection world; the targets on the sample.
//! The previous method (v0.2.0) and baseline (b) keep their own checks as comparison rows.

#![allow(clippy::unwrap_used)] // In tests a panic is the failure report.

use std::path::{Path, PathBuf};

use marks_builder::dataset::Dataset;
use marks_builder::methodology::fit::walk_forward;
use marks_builder::methodology::forecasters::backtest::Forecaster;
use marks_builder::methodology::{Fit, Params};
use marks_builder::synth::{self, SynthOptions};
use marks_format::day::Day;

/// Standard normal CDF by Simpson integration of the density: independent of the builder's erf.
fn phi(z: f64) -> f64 {
    let n = 20_000;
    let (a, b) = (-12.0f64, z);
    let h = (b - a) / n as f64;
    let pdf = |x: f64| (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let mut sum = pdf(a) + pdf(b);
    for i in 1..n {
        sum += pdf(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    sum * h / 3.0
}

const Z80: f64 = 1.281_551_565_544_600_4;
const Z95: f64 = 1.959_963_984_540_054;

fn day(text: &str) -> Day {
    Day::parse(text).unwrap()
}

fn years(later: &str, earlier: &str) -> f64 {
    f64::from(day(later).days_since(day(earlier))) / 365.25
}

fn write_dataset(dir: &Path, as_of: &str, companies: &str, events: &str) -> Dataset {
    std::fs::write(
        dir.join("dataset.toml"),
        format!(
            "dataset_version = \"{as_of}\"\nas_of = \"{as_of}\"\ndata_mode = \"illustrative\"\nprovenance = \"backtest\"\ndisclaimer = \"test\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("companies.csv"),
        format!("slug,name,sector,status\n{companies}"),
    )
    .unwrap();
    std::fs::write(
        dir.join("events.csv"),
        format!("event_id,slug,event_type,occurred_on,valuation_usd,source_url,note\n{events}"),
    )
    .unwrap();
    Dataset::load(dir).unwrap()
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample")
}

/// The first version of the sample (41 companies, 113 events), on which the targets of
/// v0.3.0 were set; kept beside the golden snapshots.
fn sample_v1() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/sample-v1")
}

fn sample_v2() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/sample-v2")
}

fn close(got: f64, expected: f64, relative: f64) -> bool {
    (got - expected).abs() <= relative * expected.abs().max(1e-300)
}

#[test]
fn one_round_is_marked_at_its_value_with_normal_bands_and_confidence() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-01-10",
        "acme,Acme,fintech,private\n",
        "e1,acme,primary_round,2025-01-10,2000000000,https://example.com,\n",
    );
    let fit = Fit::new(&dataset, Params::default());
    let marks = fit.marks(&dataset.companies[0]);
    assert_eq!(marks.series.len(), 1);
    let point = marks.series[0];
    assert!(close(point.mark, 2.0e9, 1e-12), "{}", point.mark);
    // On the event's day the gap is 0: scale S0 sqrt(C) = 0.6 x 0.5 = 0.3, normal quantiles.
    assert!(close(point.scale, 0.3, 1e-12));
    assert!(close(point.band80.0, 2.0e9 * (-Z80 * 0.3f64).exp(), 1e-12));
    assert!(close(point.band95.1, 2.0e9 * (Z95 * 0.3f64).exp(), 1e-12));
    let expected = phi(1.1f64.ln() / 0.3) - phi(0.9f64.ln() / 0.3);
    assert!(
        (marks.confidence - expected).abs() < 1e-6,
        "{} vs {expected}",
        marks.confidence
    );
    assert_eq!(marks.delta_30d_pct, None, "a one-day series has no 30-day change");
    let basis = marks.basis.unwrap();
    assert_eq!((basis.event, basis.days, basis.drift_log), (0, 0, 0.0));
}

/// v0.4.0: after an agreed acquisition the agreed price holds (no drift), while the scale still
/// widens with the years since; a later event resumes the usual rule.
#[test]
fn after_an_agreed_sale_the_price_holds_and_the_band_still_widens() {
    let dir = tempfile::tempdir().unwrap();
    // b's doubling in 91 days gives bucket 0 a positive drift; a is agreed to be sold for $32B.
    let dataset = write_dataset(
        dir.path(),
        "2025-06-01",
        "a,A,enterprise-software,private\nb,B,ai,private\n",
        "a1,a,primary_round,2023-01-01,12000000000,https://example.com,\n\
         a2,a,acquisition,2024-03-18,32000000000,https://example.com,agreed\n\
         b1,b,primary_round,2023-10-01,1000000000,https://example.com,\n\
         b2,b,primary_round,2023-12-31,2000000000,https://example.com,\n",
    );
    let fit = Fit::new(&dataset, Params::default());
    let marks = fit.marks(&dataset.companies[0]);
    let on = |date: &str| *marks.series.iter().find(|p| p.day == day(date)).unwrap();
    for date in ["2024-03-18", "2024-05-01", "2025-06-01"] {
        assert!(close(on(date).mark, 3.2e10, 1e-12), "{date}: {}", on(date).mark);
    }
    let (early, late) = (on("2024-05-01"), on("2025-06-01"));
    assert!(late.scale > early.scale, "the band still widens");
    assert!(close(
        late.scale,
        0.6 * (0.25 + years("2025-06-01", "2024-03-18")).sqrt(),
        1e-12
    ));
    // The same company before its sale drifts as usual: the pooled drift is positive.
    let before = on("2024-03-17");
    assert!(before.mark > 1.2e10, "{}", before.mark);
    let basis = marks.basis.unwrap();
    assert_eq!((basis.event, basis.drift_log), (1, 0.0), "the agreed price is the mark");
}

#[test]
fn without_pairs_the_mark_stays_put_while_the_band_widens_with_sqrt_of_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-03-01",
        "acme,Acme,fintech,private\n",
        "e1,acme,tender_offer,2025-01-01,1000000000,https://example.com,\n",
    );
    let fit = Fit::new(&dataset, Params::default());
    let marks = fit.marks(&dataset.companies[0]);
    assert_eq!(marks.series.len(), 60);
    let last = marks.series[59];
    assert!(close(last.mark, 1.0e9, 1e-12));
    let gap = years("2025-03-01", "2025-01-01");
    assert!(close(last.scale, 0.6 * (0.25 + gap).sqrt(), 1e-12));
    assert!(close(last.band95.1, 1.0e9 * (Z95 * last.scale).exp(), 1e-12));
    assert_eq!(marks.delta_30d_pct, Some(0.0));
}

/// Two pairs in the short-gap bucket (b = 0), one company marked from them: the bucket's
/// drift by hand, then the profile through (0, 0), (0.25, mu_0) and (0.75, mu_1 = 0).
#[test]
fn drift_of_one_bucket_from_two_pairs_and_the_profile_between_its_knots() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-06-01",
        "a,A,ai,private\nb,B,ai,private\nc,C,fintech,private\n",
        "a1,a,primary_round,2024-01-01,1000000000,https://example.com,\n\
         a2,a,primary_round,2024-04-01,2000000000,https://example.com,\n\
         b1,b,secondary_sale,2024-02-01,1000000000,https://example.com,\n\
         b2,b,tender_offer,2024-03-02,1500000000,https://example.com,\n\
         c1,c,primary_round,2024-06-01,4000000000,https://example.com,\n",
    );
    let fit = Fit::new(&dataset, Params::default());
    let c = fit.marks(&dataset.companies[2]);
    // Gaps 91 and 30 days: both under half a year. Weights halve every 365.25 days of age.
    let mu0 = |on: &str| {
        let w_a = 0.5f64.powf(years(on, "2024-04-01"));
        let w_b = 0.5f64.powf(years(on, "2024-03-02"));
        (w_a * 2.0f64.ln() + w_b * 1.5f64.ln()) / (w_a + w_b + 3.0)
    };
    let mark_on = |on: &str| c.series.iter().find(|p| p.day == day(on)).map(|p| p.mark).unwrap();
    // 30 days after c's round: D < 0.25, mu(D) = D / 0.25 x mu_0.
    let d = years("2024-07-01", "2024-06-01");
    let expected = 4.0e9 * (d / 0.25 * mu0("2024-07-01")).exp();
    assert!(
        close(mark_on("2024-07-01"), expected, 1e-12),
        "{} vs {expected}",
        mark_on("2024-07-01")
    );
    // 0.4 years after: between the knots 0.25 and 0.75, towards mu_1 = 0 (no pair in bucket 1).
    let on = "2024-10-26";
    let d = years(on, "2024-06-01");
    assert!(d > 0.25 && d < 0.75);
    let expected = 4.0e9 * (mu0(on) * (0.75 - d) / 0.5).exp();
    assert!(close(mark_on(on), expected, 1e-12), "{} vs {expected}", mark_on(on));
    // A year on, past the bucket-1 knot with every later bucket empty: back to the last value.
    assert!(close(mark_on("2025-06-01"), 4.0e9, 1e-12));
    // c's mark rests on its own event, plus the drift pooled from a's and b's pairs.
    let basis = c.basis.unwrap();
    assert_eq!(
        (basis.event, basis.days),
        (0, day("2025-06-01").days_since(day("2024-06-01")))
    );
    assert!(close(basis.drift_log.exp() * 4.0e9, c.latest().unwrap().mark, 1e-12));
}

/// The latest mark rests on the last event and the drift for the days since it, worked by hand:
/// one pair (a1 -> a2, 91 days, a doubling) in bucket 0, D = 61 days under the first knot.
#[test]
fn the_latest_mark_rests_on_the_last_event_and_the_drift_since() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2024-06-01",
        "a,A,ai,private\n",
        "a1,a,primary_round,2024-01-01,1000000000,https://example.com,\n\
         a2,a,primary_round,2024-04-01,2000000000,https://example.com,\n",
    );
    let fit = Fit::new(&dataset, Params::default());
    let marks = fit.marks(&dataset.companies[0]);
    let d = years("2024-06-01", "2024-04-01");
    let w = 0.5f64.powf(d);
    let drift = (d / 0.25) * w * 2.0f64.ln() / (w + 3.0);
    let basis = marks.basis.unwrap();
    assert_eq!((basis.event, basis.days), (1, 61));
    assert!(close(basis.drift_log, drift, 1e-12), "{} vs {drift}", basis.drift_log);
    assert!(close(marks.latest().unwrap().mark, 2.0e9 * drift.exp(), 1e-12));
}

#[test]
fn marks_are_causal() {
    // Adding later events never changes an earlier day's mark, for the company itself or any
    // other (pooled drifts and quantiles included).
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();
    let companies = "acme,Acme,ai,private\nbeta,Beta,ai,private\n";
    let early = "e1,acme,primary_round,2024-01-01,1000000000,https://example.com,\n\
                 e2,acme,primary_round,2024-06-01,1500000000,https://example.com,\n\
                 e3,beta,primary_round,2024-02-01,500000000,https://example.com,\n";
    let a = write_dataset(dir_a.path(), "2025-01-01", companies, early);
    let b = write_dataset(
        dir_b.path(),
        "2025-01-01",
        companies,
        &format!("{early}e4,acme,primary_round,2024-10-01,4000000000,https://example.com,\ne5,beta,down_round,2024-09-01,100000000,https://example.com,\n"),
    );
    let (fa, fb) = (Fit::new(&a, Params::default()), Fit::new(&b, Params::default()));
    let cutoff = day("2024-09-01");
    let mut compared = 0;
    for (ca, cb) in a.companies.iter().zip(&b.companies) {
        let (ma, mb) = (fa.marks(ca), fb.marks(cb));
        for (pa, pb) in ma.series.iter().zip(&mb.series).filter(|(p, _)| p.day < cutoff) {
            assert_eq!(pa, pb, "{} on {}", ca.slug, pa.day);
            compared += 1;
        }
        // The later events do change the later marks.
        assert_ne!(ma.latest(), mb.latest(), "{}", ca.slug);
    }
    assert!(compared > 300);
}

/// The day after an event the mark moves only by the profile's first step (D goes from 0 to
/// one day), never by a jump: the event itself is the only jump.
#[test]
fn no_jump_the_day_after_an_event() {
    let dataset = Dataset::load(&sample()).unwrap();
    let fit = Fit::new(&dataset, Params::default());
    let mut checked = 0;
    for company in &dataset.companies {
        let marks = fit.marks(company);
        for event in company.observations() {
            let at = |d: Day| marks.series.iter().find(|p| p.day == d);
            let (Some(on), Some(after)) = (at(event.occurred_on), at(event.occurred_on.plus(1))) else {
                continue;
            };
            if company.events.iter().any(|e| e.occurred_on == after.day) {
                continue;
            }
            assert!(
                close(on.mark, event.valuation_usd as f64, 1e-12),
                "{} on its event day",
                company.slug
            );
            let step = (after.mark / on.mark).ln().abs();
            // mu(1 day) = (1/365.25) / 0.25 x mu_0: at most 1.1% of mu_0, which is under 1.
            assert!(
                step < 0.011,
                "{} jumps {step} the day after {}",
                company.slug,
                event.occurred_on
            );
            checked += 1;
        }
    }
    assert!(checked > 60, "{checked} events checked");
}

#[test]
fn a_listing_freezes_the_series_the_day_before_and_is_scored_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-01-01",
        "acme,Acme,ai,ipo_completed\n",
        "e1,acme,primary_round,2024-01-01,1000000000,https://example.com,\n\
         e2,acme,ipo,2024-03-01,500000000,https://example.com,\n",
    );
    let fit = Fit::new(&dataset, Params::default());
    let marks = fit.marks(&dataset.companies[0]);
    assert_eq!(marks.latest().unwrap().day, day("2024-02-29"));
    assert!(
        close(marks.latest().unwrap().mark, 1.0e9, 1e-12),
        "the listing is no input"
    );
    let listing = &fit.scorecard.listing_validations[0];
    assert_eq!(
        (listing.marked_on, listing.listing_value_usd),
        (day("2024-02-29"), 500_000_000)
    );
    assert_eq!(listing.estimates[0].error_pct, Some(100.0));
}

#[test]
fn a_bankruptcy_ends_the_series_at_its_value_and_is_scored_as_an_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-01-01",
        "acme,Acme,crypto,private\n",
        "e1,acme,primary_round,2022-01-01,32000000000,https://example.com,\n\
         e2,acme,bankruptcy,2022-11-11,0,https://example.com,\n",
    );
    let fit = Fit::new(&dataset, Params::default());
    let marks = fit.marks(&dataset.companies[0]);
    let latest = marks.latest().unwrap();
    assert_eq!(latest.day, day("2022-11-11"), "no marks after the bankruptcy");
    assert_eq!(
        (latest.mark, latest.band80, latest.band95),
        (0.0, (0.0, 0.0), (0.0, 0.0))
    );
    assert_eq!(marks.confidence, 1.0, "the reported value is known");
    assert_eq!(
        marks.delta_30d_pct, None,
        "a series that ended before as_of has no 30-day change as of then"
    );
    let day_before = marks.series[marks.series.len() - 2];
    assert!(
        close(day_before.mark, 3.2e10, 1e-12),
        "the bankruptcy is no input before its day"
    );
    let basis = marks.basis.unwrap();
    assert_eq!(
        (basis.event, basis.days, basis.drift_log),
        (1, 0, 0.0),
        "the bankruptcy sets the mark"
    );
    let outcome = &fit.scorecard.bankruptcy_outcomes[0];
    assert_eq!((outcome.marked_on, outcome.value_usd), (day("2022-11-10"), 0));
    assert_eq!(outcome.estimates.len(), 5, "every forecaster's miss is shown");
    for estimate in &outcome.estimates {
        assert_eq!(estimate.error_pct, None, "no relative error against 0");
        assert!(!estimate.inside_80 && !estimate.inside_95 && estimate.mark_usd > 0);
    }
    assert!(fit.scorecard.listing_validations.is_empty());
    assert_eq!(
        fit.scorecard.forecasters[0].figures.n, 0,
        "the bankruptcy is not a scored observation"
    );
}

#[test]
fn baseline_b_reproduces_the_published_recipe() {
    // A $19B round on 2024-05-01 and a $23B secondary on 2024-11-13 give about $22.06B on
    // 2025-03-27: weights 0.90 x 0.5^(330/90) and 0.65 x 0.5^(134/90).
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-03-27",
        "acme,Acme,ai,private\n",
        "e1,acme,primary_round,2024-05-01,19000000000,https://example.com,\n\
         e2,acme,secondary_sale,2024-11-13,23000000000,https://example.com,\n\
         e3,acme,primary_round,2025-03-27,30000000000,https://example.com,\n",
    );
    let fit = Fit::new(&dataset, Params::default());
    let backtests = walk_forward(&dataset, &fit.params, &fit.drifts);
    let third = backtests[0].predictions.iter().find(|p| p.event == 2).unwrap();
    let got = third.forecasts[Forecaster::WeightedStep.index()].log_value.exp();
    let w1 = 0.90 * 0.5f64.powf(330.0 / 90.0);
    let w2 = 0.65 * 0.5f64.powf(134.0 / 90.0);
    let expected = (w1 * 19.0e9 + w2 * 23.0e9) / (w1 + w2);
    assert!((got - expected).abs() < 1.0, "{got} vs {expected}");
    assert!((got / 1e9 - 22.06).abs() < 0.005, "about $22.06B: {got}");
    let last = third.forecasts[Forecaster::LastEvent.index()].log_value.exp();
    assert!(close(last, 23.0e9, 1e-12));
}

/// v0.2.0, the comparison row: with no pooled growth yet, its forecast of a second event is
/// the first value, with the variance of the trend model after the days between them.
#[test]
fn the_previous_method_forecasts_with_the_trend_models_variance() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-04-11",
        "acme,Acme,fintech,private\n",
        "e1,acme,tender_offer,2025-01-01,1000000000,https://example.com,\n\
         e2,acme,primary_round,2025-04-11,2000000000,https://example.com,\n",
    );
    let params = Params::default();
    let trend = params.local_trend.clone();
    let fit = Fit::new(&dataset, params);
    let backtests = walk_forward(&dataset, &fit.params, &fit.drifts);
    let forecast = backtests[0].predictions[0].forecasts[Forecaster::LocalTrend.index()];
    let dt = 1.0 / 365.25;
    let e = (-trend.growth_reversion_per_year * dt).exp();
    let a = (1.0 - e) / trend.growth_reversion_per_year;
    let (q00, q11) = (0.50f64.powi(2) * dt, trend.growth_volatility.powi(2) * (1.0 - e * e));
    let mut p = [[0.15 * 0.15, 0.0], [0.0, trend.growth_prior_sd.powi(2)]];
    for _ in 0..day("2025-04-11").days_since(day("2025-01-01")) {
        p = [
            [
                p[0][0] + a * (p[1][0] + p[0][1]) + a * a * p[1][1] + q00,
                e * (p[0][1] + a * p[1][1]),
            ],
            [e * (p[1][0] + a * p[1][1]), e * e * p[1][1] + q11],
        ];
    }
    assert!(close(forecast.log_value, 1.0e9f64.ln(), 1e-12));
    assert!(
        close(forecast.scale, (p[0][0] + 0.01).sqrt(), 1e-12),
        "{}",
        forecast.scale
    );
}

/// In a world where companies report after rises, the method's bands (v0.4.0: the adaptive 80%
/// band, the conformal 95%) cover what they say.
#[test]
fn synthetic_coverage_is_within_two_points_of_nominal() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = SynthOptions::new(2000, 7);
    options.listed_share = 0.0;
    synth::generate(&options, dir.path()).unwrap();
    let dataset = Dataset::load(dir.path()).unwrap();
    let fit = Fit::new(&dataset, Params::default());
    let method = &fit.scorecard.forecasters[0];
    assert_eq!(method.figures.name, "adaptive_gap_profile");
    let c80 = method.figures.coverage_80.observed_pct.unwrap();
    let c95 = method.figures.coverage_95.observed_pct.unwrap();
    assert!(method.figures.n > 10_000, "{} residuals", method.figures.n);
    assert!((c80 - 80.0).abs() <= 2.0, "80% band covers {c80}%");
    assert!((c95 - 95.0).abs() <= 2.0, "95% band covers {c95}%");
}

/// The targets of the v0.3.0 issue, on the sample they were set on (its first version).
#[test]
fn the_first_sample_meets_the_targets() {
    let dataset = Dataset::load(&sample_v1()).unwrap();
    let fit = Fit::new(&dataset, Params::default());
    let card = &fit.scorecard;
    let method = card.forecaster(Forecaster::GapProfile).unwrap();
    let last_event = card.forecaster(Forecaster::LastEvent).unwrap();
    assert_eq!(method.figures.n, 54);
    assert!(method.figures.mape_pct.unwrap() <= last_event.figures.mape_pct.unwrap());
    assert!(method.figures.median_abs_log_error.unwrap() <= 0.38);
    assert_eq!(method.figures.coverage_80.within_binomial_90_range, Some(true));
    assert_eq!(method.figures.coverage_95.within_binomial_90_range, Some(true));
    assert!(method.figures.median_band_width_80_pct.unwrap() <= 170.0);
    assert!(method.figures.median_band_width_95_pct.unwrap() <= 415.0);
    assert!(method.figures.listings.mean_abs_error_pct.unwrap() <= 68.0);
    assert_eq!(card.bankruptcy_outcomes.len(), 1);
    assert_eq!(card.comparison.differences.len(), 4);
}

/// What a sample shows, counted from its events.csv independently of the method: every
/// observation with an earlier-day observation of its company, before any outcome, is scored;
/// every listing and bankruptcy is an outcome. The second sample (85 companies) and the third,
/// bundled one (182).
#[test]
fn every_event_with_an_earlier_one_and_every_outcome_is_scored() {
    for (dir, companies) in [(sample_v2(), 85), (sample(), 182)] {
        scores_every_event_with_an_earlier_one_and_every_outcome(&dir, companies);
    }
}

fn scores_every_event_with_an_earlier_one_and_every_outcome(dir: &Path, companies: usize) {
    let dataset = Dataset::load(dir).unwrap();
    let mut reader = csv::Reader::from_path(dir.join("events.csv")).unwrap();
    let mut by_company: std::collections::BTreeMap<String, Vec<(String, String)>> = Default::default();
    for row in reader.records() {
        let row = row.unwrap();
        by_company
            .entry(row[1].to_string())
            .or_default()
            .push((row[3].to_string(), row[2].to_string()));
    }
    let (mut scored, mut outcomes) = (0, 0);
    for events in by_company.values_mut() {
        events.sort();
        let end = events
            .iter()
            .find(|(_, kind)| matches!(kind.as_str(), "ipo" | "direct_listing" | "bankruptcy"))
            .map(|(day, _)| day.clone());
        outcomes += usize::from(end.is_some());
        let observed: Vec<&String> = events
            .iter()
            .filter(|(day, kind)| {
                !matches!(kind.as_str(), "ipo" | "direct_listing" | "bankruptcy")
                    && end.as_ref().is_none_or(|end| day < end)
            })
            .map(|(day, _)| day)
            .collect();
        scored += observed
            .iter()
            .filter(|day| observed.iter().any(|other| other < *day))
            .count();
    }
    let fit = Fit::new(&dataset, Params::default());
    let card = &fit.scorecard;
    assert_eq!(dataset.companies.len(), companies);
    assert_eq!(card.forecasters[0].figures.n, scored);
    assert_eq!(
        card.listing_validations.len() + card.bankruptcy_outcomes.len(),
        outcomes
    );
    assert_eq!(card.targets.len(), scored + outcomes);
}
