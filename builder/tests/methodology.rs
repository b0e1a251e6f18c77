//! Methodology v0.2.0 against values computed here, independently of the builder's code.

#![allow(clippy::unwrap_used)] // In tests a panic is the failure report.

use std::path::Path;

use marks_builder::dataset::{Dataset, Day};
use marks_builder::methodology::{growth_timeline, walk, Fit, Params};
use marks_builder::synth::{self, SynthOptions};

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

/// 2x2 matrices, written out for the test.
type M = [[f64; 2]; 2];
fn mul(a: M, b: M) -> M {
    let mut c = [[0.0; 2]; 2];
    for i in 0..2 {
        for j in 0..2 {
            c[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j];
        }
    }
    c
}
fn transpose(a: M) -> M {
    [[a[0][0], a[1][0]], [a[0][1], a[1][1]]]
}

/// The covariance after `days` daily steps of the trend model from `p`.
fn covariance_after(mut p: M, days: usize, params: &Params, level_vol: f64) -> M {
    let dt = 1.0 / 365.25;
    let e = (-params.growth_reversion_per_year * dt).exp();
    let a = (1.0 - e) / params.growth_reversion_per_year;
    let f = [[1.0, a], [0.0, e]];
    let q = [
        [level_vol * level_vol * dt, 0.0],
        [0.0, params.growth_volatility.powi(2) * (1.0 - e * e)],
    ];
    for _ in 0..days {
        let fp = mul(mul(f, p), transpose(f));
        p = [[fp[0][0] + q[0][0], fp[0][1]], [fp[1][0], fp[1][1] + q[1][1]]];
    }
    p
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
    let day = marks.series[0];
    assert!((day.mark - 2.0e9).abs() < 1.0, "{}", day.mark);
    // Level sd is the round's noise, 0.10; with no residuals the quantiles are normal ones.
    let (z80, z95) = (1.281_551_565_5, 1.959_963_985);
    assert!((day.band80.0 - 2.0e9 * (-z80 * 0.1f64).exp()).abs() < 10.0);
    assert!((day.band95.1 - 2.0e9 * (z95 * 0.1f64).exp()).abs() < 10.0);
    let expected = phi(1.1f64.ln() / 0.1) - phi(0.9f64.ln() / 0.1);
    assert!(
        (day.confidence() - expected).abs() < 1e-6,
        "{} vs {expected}",
        day.confidence()
    );
    assert_eq!(marks.delta_30d_pct, None, "a one-day series has no 30-day change");
}

#[test]
fn uncertainty_grows_between_events_at_the_model_rate() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-03-01",
        "acme,Acme,fintech,private\n",
        "e1,acme,tender_offer,2025-01-01,1000000000,https://example.com,\n",
    );
    let params = Params::default();
    let fit = Fit::new(&dataset, params.clone());
    let marks = fit.marks(&dataset.companies[0]);
    assert_eq!(marks.series.len(), 60);
    // No pooled growth yet (no pairs), so the mark stays put while its band widens.
    let start: M = [[0.15 * 0.15, 0.0], [0.0, params.growth_prior_sd.powi(2)]];
    let p = covariance_after(start, 59, &params, params.level_volatility[1]);
    let last = marks.series[59];
    assert!((last.mark - 1.0e9).abs() < 1.0);
    assert!(
        (last.level_sd - p[0][0].sqrt()).abs() < 1e-12,
        "{} vs {}",
        last.level_sd,
        p[0][0].sqrt()
    );
    let delta = marks.delta_30d_pct.expect("60 days is enough");
    assert_eq!(delta, 0.0);
}

#[test]
fn a_second_round_updates_the_level_by_the_kalman_gain() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write_dataset(
        dir.path(),
        "2025-04-11",
        "acme,Acme,ai,private\n",
        "e1,acme,primary_round,2025-01-01,1000000000,https://example.com,\ne2,acme,primary_round,2025-04-11,2000000000,https://example.com,\n",
    );
    let params = Params::default();
    let fit = Fit::new(&dataset, params.clone());
    let marks = fit.marks(&dataset.companies[0]);
    let days = Day::parse("2025-04-11")
        .unwrap()
        .days_since(Day::parse("2025-01-01").unwrap()) as usize;
    let start: M = [[0.01, 0.0], [0.0, params.growth_prior_sd.powi(2)]];
    let p = covariance_after(start, days, &params, params.level_volatility[0]);
    let gain = p[0][0] / (p[0][0] + 0.01);
    let expected = (1.0e9f64.ln() + gain * (2.0e9f64.ln() - 1.0e9f64.ln())).exp();
    let mark = marks.series.last().unwrap().mark;
    assert!((mark / expected - 1.0).abs() < 1e-9, "{mark} vs {expected}");
    // The observation weights: the second event's weight is its gain; the first keeps the rest.
    let weights: Vec<f64> = marks.observations.iter().map(|o| o.weight).collect();
    assert!((weights[1] - gain).abs() < 1e-9);
    assert!((weights[0] - (1.0 - gain)).abs() < 1e-9);
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
    let params = Params::default();
    let growth = growth_timeline(&dataset, &params);
    let mut step_forecast = None;
    walk(
        &dataset.companies[0],
        &params,
        &growth,
        dataset.info.as_of,
        |p| {
            if p.event == 2 {
                step_forecast = Some(p.forecasts[2].log_value.exp());
            }
        },
        |_, _| {},
        None,
    );
    let w1 = 0.90 * 0.5f64.powf(330.0 / 90.0);
    let w2 = 0.65 * 0.5f64.powf(134.0 / 90.0);
    let expected = (w1 * 19.0e9 + w2 * 23.0e9) / (w1 + w2);
    let got = step_forecast.expect("a forecast before the third event");
    assert!((got - expected).abs() < 1.0, "{got} vs {expected}");
    assert!((got / 1e9 - 22.06).abs() < 0.005, "about $22.06B: {got}");
}

#[test]
fn walk_forward_coverage_is_nominal_when_the_model_is_true() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = SynthOptions::new(1500, 7);
    options.events = 1500 * 12;
    options.listed_share = 0.0;
    synth::generate(&options, dir.path()).unwrap();
    let dataset = Dataset::load(dir.path()).unwrap();
    let fit = Fit::new(&dataset, Params::default());
    let model = &fit.scorecard.forecasters[0];
    let c80 = model.coverage_80.observed_pct.unwrap();
    let c95 = model.coverage_95.observed_pct.unwrap();
    assert!(model.n > 10_000, "{} residuals", model.n);
    assert!((c80 - 80.0).abs() <= 3.0, "80% band covers {c80}%");
    assert!((c95 - 95.0).abs() <= 3.0, "95% band covers {c95}%");
}

#[test]
fn marks_are_causal() {
    // Adding a later event never changes an earlier day's mark.
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
    let cutoff = Day::parse("2024-09-01").unwrap();
    for (ca, cb) in a.companies.iter().zip(&b.companies) {
        let (ma, mb) = (fa.marks(ca), fb.marks(cb));
        for (pa, pb) in ma.series.iter().zip(&mb.series).filter(|(p, _)| p.day < cutoff) {
            assert_eq!(pa, pb, "{} on {}", ca.slug, pa.day);
        }
    }
}
