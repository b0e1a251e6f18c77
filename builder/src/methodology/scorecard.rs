//! The published walk-forward backtest (`marks build` prints it, `GET /v1/scorecard` serves
//! it): every forecaster side by side on the same scored events, with band coverage against
//! the range a calibrated band would show, every listing and bankruptcy outcome, every miss,
//! and a company-clustered bootstrap of the method against the last-event baseline.

use serde::Serialize;

use super::backtest::{CompanyBacktest, Forecaster, OutcomeForecast, FORECASTERS};
use super::bootstrap::{self, ClusterErrors, Difference};
use super::conformal::QuantileTimeline;
use super::stats::{binomial_central_range, mean, median};
use super::{round_to, usd, Band};
use crate::dataset::{Company, Dataset, Day, EventType};

/// Misses listed per forecaster; the total is always reported.
pub const MISSES_LISTED: usize = 100;
/// The probability mass of the coverage range reported beside each observed coverage.
pub const COVERAGE_RANGE_MASS: f64 = 0.90;

#[derive(Clone, Debug, Serialize)]
pub struct CoverageScore {
    pub nominal_pct: u32,
    pub observed_pct: Option<f64>,
    pub inside: usize,
    pub n: usize,
    /// The observed coverage a band with exactly the nominal coverage shows 90% of the time on
    /// n events (binomial): outside it, the band is miscalibrated; inside, n cannot tell.
    pub binomial_90_range_pct: Option<[f64; 2]>,
    pub within_binomial_90_range: Option<bool>,
}

impl CoverageScore {
    fn new(nominal_pct: u32, inside: usize, n: usize) -> CoverageScore {
        let range = (n > 0).then(|| binomial_central_range(n, f64::from(nominal_pct) / 100.0, COVERAGE_RANGE_MASS));
        CoverageScore {
            nominal_pct,
            observed_pct: percent_of(inside, n),
            inside,
            n,
            binomial_90_range_pct: range.map(|(low, high)| [percent(low, n), percent(high, n)]),
            within_binomial_90_range: range.map(|(low, high)| (low..=high).contains(&inside)),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ListingScore {
    pub n: usize,
    pub mean_abs_error_pct: Option<f64>,
    pub inside_80: usize,
    pub inside_95: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Miss {
    pub slug: String,
    pub event_id: String,
    pub event_type: EventType,
    pub occurred_on: Day,
    pub valuation_usd: u64,
    pub predicted_usd: u64,
    pub band_95: Band,
}

#[derive(Clone, Debug, Serialize)]
pub struct ForecasterScore {
    pub name: &'static str,
    /// The methodology version this forecaster is (null for the baselines).
    pub methodology_version: Option<&'static str>,
    pub description: &'static str,
    pub n: usize,
    pub mape_pct: Option<f64>,
    pub median_abs_log_error: Option<f64>,
    pub mean_abs_log_error: Option<f64>,
    pub coverage_80: CoverageScore,
    pub coverage_95: CoverageScore,
    /// Median width of the predictive band at the scored events, in percent of the forecast.
    pub median_band_width_80_pct: Option<f64>,
    pub median_band_width_95_pct: Option<f64>,
    pub listings: ListingScore,
    pub misses_total: usize,
    pub misses: Vec<Miss>,
}

/// One forecaster's mark the day before an outcome.
#[derive(Clone, Debug, Serialize)]
pub struct OutcomeEstimate {
    pub forecaster: &'static str,
    pub mark_usd: u64,
    /// (mark / outcome value - 1) in percent; null when the outcome value is 0.
    pub error_pct: Option<f64>,
    pub band_80: Band,
    pub band_95: Band,
    pub inside_80: bool,
    pub inside_95: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct ListingValidation {
    pub slug: String,
    pub event_id: String,
    pub event_type: EventType,
    pub listed_on: Day,
    pub listing_value_usd: u64,
    pub marked_on: Day,
    pub estimates: Vec<OutcomeEstimate>,
}

/// A bankruptcy scored like a listing: the mark the day before against the value after.
#[derive(Clone, Debug, Serialize)]
pub struct BankruptcyOutcome {
    pub slug: String,
    pub event_id: String,
    pub occurred_on: Day,
    pub value_usd: u64,
    pub marked_on: Day,
    pub estimates: Vec<OutcomeEstimate>,
}

/// The method against baseline (a), company-clustered bootstrap.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// A: the method.
    pub a: &'static str,
    /// B: the baseline it must beat.
    pub b: &'static str,
    pub method: &'static str,
    pub draws: usize,
    pub seed: u64,
    pub companies: usize,
    pub differences: Vec<Difference>,
}

/// The walk-forward backtest, side by side for every forecaster.
#[derive(Clone, Debug, Serialize)]
pub struct Scorecard {
    pub forecasters: Vec<ForecasterScore>,
    pub comparison: Comparison,
    pub listing_validations: Vec<ListingValidation>,
    pub bankruptcy_outcomes: Vec<BankruptcyOutcome>,
}

fn percent(count: usize, n: usize) -> f64 {
    round_to(count as f64 * 100.0 / n as f64, 1)
}

fn percent_of(inside: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| percent(inside, n))
}

fn estimates(
    outcome: &OutcomeForecast,
    value: f64,
    quantiles: &[QuantileTimeline; FORECASTERS],
) -> Vec<OutcomeEstimate> {
    Forecaster::ALL
        .iter()
        .map(|&f| {
            let forecast = outcome.forecasts[f.index()];
            let q = quantiles[f.index()].at(outcome.marked_on);
            let (b80, b95) = (forecast.band(q.q80), forecast.band(q.q95));
            let mark = forecast.log_value.exp();
            OutcomeEstimate {
                forecaster: f.name(),
                mark_usd: usd(mark),
                error_pct: (value > 0.0).then(|| round_to((mark / value - 1.0) * 100.0, 1)),
                band_80: Band::of(b80),
                band_95: Band::of(b95),
                inside_80: b80.0 <= value && value <= b80.1,
                inside_95: b95.0 <= value && value <= b95.1,
            }
        })
        .collect()
}

impl Scorecard {
    pub fn new(
        dataset: &Dataset,
        backtests: &[CompanyBacktest],
        quantiles: &[QuantileTimeline; FORECASTERS],
    ) -> Scorecard {
        let mut listing_validations = Vec::new();
        let mut bankruptcy_outcomes = Vec::new();
        for (company, backtest) in dataset.companies.iter().zip(backtests) {
            let Some(outcome) = &backtest.outcome else {
                continue;
            };
            let event = &company.events[outcome.event];
            let value = event.valuation_usd as f64;
            if event.event_type.is_listing() {
                listing_validations.push(ListingValidation {
                    slug: company.slug.clone(),
                    event_id: event.event_id.clone(),
                    event_type: event.event_type,
                    listed_on: event.occurred_on,
                    listing_value_usd: event.valuation_usd,
                    marked_on: outcome.marked_on,
                    estimates: estimates(outcome, value, quantiles),
                });
            } else {
                bankruptcy_outcomes.push(BankruptcyOutcome {
                    slug: company.slug.clone(),
                    event_id: event.event_id.clone(),
                    occurred_on: event.occurred_on,
                    value_usd: event.valuation_usd,
                    marked_on: outcome.marked_on,
                    estimates: estimates(outcome, value, quantiles),
                });
            }
        }
        let forecasters = Forecaster::ALL
            .iter()
            .map(|&f| score(f, dataset, backtests, &quantiles[f.index()]))
            .collect();
        Scorecard {
            forecasters,
            comparison: compare(dataset, backtests, Forecaster::GapProfile, Forecaster::LastEvent),
            listing_validations,
            bankruptcy_outcomes,
        }
    }

    pub fn forecaster(&self, forecaster: Forecaster) -> Option<&ForecasterScore> {
        self.forecasters.iter().find(|f| f.name == forecaster.name())
    }

    /// The scorecard as the builder prints it.
    pub fn to_text(&self) -> String {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v}"));
        let label = |f: &ForecasterScore| match f.methodology_version {
            Some(version) => format!("{} ({version})", f.name),
            None => f.name.to_string(),
        };
        let n = self.forecasters.first().map_or(0, |f| f.n);
        let mut out = format!(
            "walk-forward on {n} scored events (each forecast from the events before its day; outcomes held out)\n"
        );
        out.push_str(&format!(
            "{:<36} {:>7} {:>9} {:>10} {:>9} {:>9} {:>14} {:>7}\n",
            "forecaster", "MAPE%", "med|log|", "mean|log|", "width80%", "width95%", "listings|err|%", "misses"
        ));
        for f in &self.forecasters {
            out.push_str(&format!(
                "{:<36} {:>7} {:>9} {:>10} {:>9} {:>9} {:>14} {:>7}\n",
                label(f),
                opt(f.mape_pct),
                opt(f.median_abs_log_error),
                opt(f.mean_abs_log_error),
                opt(f.median_band_width_80_pct),
                opt(f.median_band_width_95_pct),
                format!("{} ({})", opt(f.listings.mean_abs_error_pct), f.listings.n),
                f.misses_total,
            ));
        }
        out.push_str("\nband coverage: observed (inside/n) and the range a calibrated band shows 90% of the time\n");
        for f in &self.forecasters {
            let coverage = |c: &CoverageScore| {
                format!(
                    "{}% ({}/{}) in {}",
                    opt(c.observed_pct),
                    c.inside,
                    c.n,
                    c.binomial_90_range_pct
                        .map_or("-".into(), |[low, high]| format!("[{low}, {high}]"))
                )
            };
            out.push_str(&format!(
                "{:<36} 80%: {:<26} 95%: {}\n",
                label(f),
                coverage(&f.coverage_80),
                coverage(&f.coverage_95)
            ));
        }
        let c = &self.comparison;
        out.push_str(&format!(
            "\n{} minus {} ({} companies resampled, {} draws, seed {}; 95% intervals):\n",
            c.a, c.b, c.companies, c.draws, c.seed
        ));
        for d in &c.differences {
            out.push_str(&format!(
                "  {:<28} {:>9} vs {:>9}: {:>9} in {}  {}\n",
                d.figure,
                opt(d.a.map(|v| round_to(v, 3))),
                opt(d.b.map(|v| round_to(v, 3))),
                opt(d.difference.map(|v| round_to(v, 3))),
                d.interval_95.map_or("-".into(), |[low, high]| format!(
                    "[{}, {}]",
                    round_to(low, 3),
                    round_to(high, 3)
                )),
                d.verdict
            ));
        }
        let names: Vec<&str> = self.forecasters.iter().map(|f| f.name).collect();
        if !self.listing_validations.is_empty() {
            out.push_str(&format!(
                "\nlisting validations (mark the day before vs listing value; error %, inside 80/95; {}):\n",
                names.join(", ")
            ));
            for l in &self.listing_validations {
                out.push_str(&format!("  {:<20} {} {:>16}", l.slug, l.listed_on, l.listing_value_usd));
                for e in &l.estimates {
                    out.push_str(&format!(
                        "  {:>8} {}{}",
                        e.error_pct.map_or("-".into(), |v| format!("{v:+.1}%")),
                        if e.inside_80 { '8' } else { '.' },
                        if e.inside_95 { '9' } else { '.' }
                    ));
                }
                out.push('\n');
            }
        }
        if !self.bankruptcy_outcomes.is_empty() {
            out.push_str("\nbankruptcies (mark the day before vs the reported value; inside 80/95):\n");
            for b in &self.bankruptcy_outcomes {
                out.push_str(&format!("  {:<20} {} {:>16}\n", b.slug, b.occurred_on, b.value_usd));
                for e in &b.estimates {
                    out.push_str(&format!(
                        "    {:<28} marked {:>16} on {}, 95% band {}..{} {}{}\n",
                        e.forecaster,
                        e.mark_usd,
                        b.marked_on,
                        e.band_95.lower,
                        e.band_95.upper,
                        if e.inside_80 { '8' } else { '.' },
                        if e.inside_95 { '9' } else { '.' }
                    ));
                }
            }
        }
        out
    }
}

fn score(
    forecaster: Forecaster,
    dataset: &Dataset,
    backtests: &[CompanyBacktest],
    quantiles: &QuantileTimeline,
) -> ForecasterScore {
    let index = forecaster.index();
    let (mut ape, mut abs_log, mut width80, mut width95) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut inside80, mut inside95) = (0, 0);
    let mut misses = Vec::new();
    let mut misses_total = 0;
    for (company, backtest) in dataset.companies.iter().zip(backtests) {
        for p in &backtest.predictions {
            let forecast = p.forecasts[index];
            let q = quantiles.at(p.day);
            let residual = forecast.residual(p.observed_log).abs();
            let predicted = forecast.log_value.exp();
            let observed = p.observed_log.exp();
            ape.push((predicted - observed).abs() / observed);
            abs_log.push((p.observed_log - forecast.log_value).abs());
            let (b80, b95) = (forecast.band(q.q80), forecast.band(q.q95));
            width80.push((b80.1 - b80.0) / predicted * 100.0);
            width95.push((b95.1 - b95.0) / predicted * 100.0);
            inside80 += usize::from(residual <= q.q80);
            if residual <= q.q95 {
                inside95 += 1;
            } else {
                misses_total += 1;
                if misses.len() < MISSES_LISTED {
                    misses.push(miss(company, p.event, predicted, b95));
                }
            }
        }
    }
    let n = ape.len();
    let listing_errors: Vec<(f64, bool, bool)> = dataset
        .companies
        .iter()
        .zip(backtests)
        .filter_map(|(company, backtest)| {
            let outcome = backtest.outcome.as_ref()?;
            let event = &company.events[outcome.event];
            event.event_type.is_listing().then(|| {
                let listed = event.valuation_usd as f64;
                let forecast = outcome.forecasts[index];
                let q = quantiles.at(outcome.marked_on);
                let residual = forecast.residual(listed.ln()).abs();
                (
                    (forecast.log_value.exp() / listed - 1.0).abs() * 100.0,
                    residual <= q.q80,
                    residual <= q.q95,
                )
            })
        })
        .collect();
    let listing_abs: Vec<f64> = listing_errors.iter().map(|e| e.0).collect();
    ForecasterScore {
        name: forecaster.name(),
        methodology_version: forecaster.methodology_version(),
        description: forecaster.description(),
        n,
        mape_pct: mean(&ape).map(|m| round_to(m * 100.0, 1)),
        median_abs_log_error: median(abs_log.clone()).map(|m| round_to(m, 3)),
        mean_abs_log_error: mean(&abs_log).map(|m| round_to(m, 3)),
        coverage_80: CoverageScore::new(80, inside80, n),
        coverage_95: CoverageScore::new(95, inside95, n),
        median_band_width_80_pct: median(width80).map(|m| round_to(m, 1)),
        median_band_width_95_pct: median(width95).map(|m| round_to(m, 1)),
        listings: ListingScore {
            n: listing_errors.len(),
            mean_abs_error_pct: mean(&listing_abs).map(|m| round_to(m, 1)),
            inside_80: listing_errors.iter().filter(|e| e.1).count(),
            inside_95: listing_errors.iter().filter(|e| e.2).count(),
        },
        misses_total,
        misses,
    }
}

fn miss(company: &Company, event: usize, predicted: f64, band_95: (f64, f64)) -> Miss {
    let event = &company.events[event];
    Miss {
        slug: company.slug.clone(),
        event_id: event.event_id.clone(),
        event_type: event.event_type,
        occurred_on: event.occurred_on,
        valuation_usd: event.valuation_usd,
        predicted_usd: usd(predicted),
        band_95: Band::of(band_95),
    }
}

/// The bootstrap of `a` minus `b`, clustered by company.
fn compare(dataset: &Dataset, backtests: &[CompanyBacktest], a: Forecaster, b: Forecaster) -> Comparison {
    let clusters: Vec<ClusterErrors> = dataset
        .companies
        .iter()
        .zip(backtests)
        .map(|(company, backtest)| {
            let both = |f: &dyn Fn(Forecaster) -> f64| [f(a), f(b)];
            let mut cluster = ClusterErrors::default();
            for p in &backtest.predictions {
                let observed = p.observed_log.exp();
                cluster.relative_errors.push(both(&|f| {
                    (p.forecasts[f.index()].log_value.exp() - observed).abs() / observed
                }));
                cluster
                    .abs_log_errors
                    .push(both(&|f| (p.observed_log - p.forecasts[f.index()].log_value).abs()));
            }
            cluster.listing_error = backtest.outcome.as_ref().and_then(|outcome| {
                let event = &company.events[outcome.event];
                event.event_type.is_listing().then(|| {
                    let listed = event.valuation_usd as f64;
                    both(&|f| (outcome.forecasts[f.index()].log_value.exp() / listed - 1.0).abs())
                })
            });
            cluster
        })
        .filter(|c| !c.relative_errors.is_empty() || c.listing_error.is_some())
        .collect();
    Comparison {
        a: a.name(),
        b: b.name(),
        method: "company-clustered bootstrap: whole companies resampled with replacement",
        draws: bootstrap::DRAWS,
        seed: bootstrap::SEED,
        companies: clusters.len(),
        differences: bootstrap::compare(&clusters, bootstrap::DRAWS, bootstrap::SEED),
    }
}
