//! The published walk-forward backtest (`marks build` prints it, `GET /v1/scorecard` serves
//! it): every forecaster side by side on the same scored events, with band coverage against
//! the range a calibrated band would show (overall and by the gap since the last event), the
//! `confidence` each forecaster stated checked by its Brier score and a reliability table, every
//! listing and bankruptcy outcome with its verdict, every miss, and a company-clustered
//! bootstrap of the method against the last-event baseline.
//!
//! Every figure is computed from [`Target`] rows, one per scored target (an event forecast from
//! the events before its day, or an outcome marked the day before), which are published whole
//! (`GET /v1/scorecard/targets`) so that anyone can recompute every figure.

pub mod bootstrap;
pub mod disclosure;

use serde::Serialize;

use crate::dataset::{Company, Dataset, EventType};
use crate::methodology::conformal::{QuantileTimeline, Quantiles, CONFIDENCE_TOLERANCE};
use crate::methodology::forecasters::backtest::{CompanyBacktest, Forecast, Forecaster, FORECASTERS};
use crate::methodology::stats::{binomial_central_range, mean, median};
use crate::methodology::{round_to, usd, Band, DAYS_PER_YEAR};
use bootstrap::{ClusterErrors, Difference};
use marks_format::day::Day;

/// Misses listed per forecaster; the total is always reported.
pub const MISSES_LISTED: usize = 100;
/// The probability mass of the coverage range reported beside each observed coverage.
pub const COVERAGE_RANGE_MASS: f64 = 0.90;
/// Bins of stated confidence in the reliability table: [0, 0.1), [0.1, 0.2), ... [0.9, 1].
pub const RELIABILITY_BINS: usize = 10;
/// MAPE's largest contributors named beside it.
pub const MAPE_CONTRIBUTORS_NAMED: usize = 3;

/// What a scored target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// An observation forecast from the company's events before its day.
    Event,
    /// A listing, marked the day before.
    Listing,
    /// A bankruptcy, marked the day before.
    Bankruptcy,
}

/// How an outcome landed against a forecaster's mark the day before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within +/-10% of the mark, the tolerance `confidence` is stated for.
    Hit,
    /// Not a hit, inside the 80% band.
    #[serde(rename = "covered_80")]
    Covered80,
    /// Inside the 95% band only.
    #[serde(rename = "covered_95")]
    Covered95,
    Miss,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Hit => "hit",
            Verdict::Covered80 => "covered_80",
            Verdict::Covered95 => "covered_95",
            Verdict::Miss => "miss",
        }
    }
}

/// The gap since a company's last observation, in the buckets the method's drift uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GapBucket {
    #[serde(rename = "under_6_months")]
    Under6Months,
    #[serde(rename = "6_to_12_months")]
    SixTo12Months,
    #[serde(rename = "1_to_2_years")]
    OneTo2Years,
    #[serde(rename = "over_2_years")]
    Over2Years,
}

impl GapBucket {
    pub const ALL: [GapBucket; 4] = [
        GapBucket::Under6Months,
        GapBucket::SixTo12Months,
        GapBucket::OneTo2Years,
        GapBucket::Over2Years,
    ];

    /// Edges 0.5, 1 and 2 years, as the method's drift buckets.
    pub fn of(gap_years: f64) -> GapBucket {
        match gap_years {
            g if g < 0.5 => GapBucket::Under6Months,
            g if g < 1.0 => GapBucket::SixTo12Months,
            g if g < 2.0 => GapBucket::OneTo2Years,
            _ => GapBucket::Over2Years,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            GapBucket::Under6Months => "under 6 months",
            GapBucket::SixTo12Months => "6-12 months",
            GapBucket::OneTo2Years => "1-2 years",
            GapBucket::Over2Years => "over 2 years",
        }
    }
}

/// One forecaster's numbers at one scored target.
#[derive(Clone, Debug, Serialize)]
pub struct TargetForecast {
    pub forecaster: &'static str,
    /// The mark, unrounded, so that every published figure can be recomputed exactly.
    pub mark_usd: f64,
    pub band_80: Band,
    pub band_95: Band,
    /// The bands as multiples of the mark (lower / mark, upper / mark): what a reader without
    /// the mark's dollars can check a band's width and an outcome's place against.
    pub band_80_rel: RelativeBand,
    pub band_95_rel: RelativeBand,
    /// The forecast's scale in log units, and the quantiles of |z| its bands used: the 80% band
    /// is `mark * exp(-/+ q80 * scale)`.
    pub scale: f64,
    pub q80: f64,
    pub q95: f64,
    /// The probability the forecaster stated that the value lies within +/-10% of its mark.
    pub confidence: f64,
    /// ln(observed) - ln(mark); null when the observed value is 0 (a bankruptcy written off).
    pub log_error: Option<f64>,
    pub inside_80: bool,
    pub inside_95: bool,
    /// The observed value fell within +/-10% of the mark.
    pub hit: bool,
    /// Outcomes only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// A band as multiples of its mark.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RelativeBand {
    pub lower: f64,
    pub upper: f64,
}

impl RelativeBand {
    /// The band `exp(x -/+ q * scale)` of a forecast `x`, over `exp(x)`.
    pub fn of(q: f64, scale: f64) -> RelativeBand {
        let spread = (q * scale).exp();
        RelativeBand {
            lower: 1.0 / spread,
            upper: spread,
        }
    }
}

impl TargetForecast {
    /// (mark / observed - 1) in percent, one decimal; null when the observed value is 0.
    pub fn error_pct(&self) -> Option<f64> {
        self.log_error.map(|e| round_to(((-e).exp() - 1.0) * 100.0, 1))
    }
}

/// One scored target with every forecaster's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub slug: String,
    pub event_id: String,
    pub kind: TargetKind,
    pub event_type: EventType,
    pub occurred_on: Day,
    /// The day the forecasts are for: the event's day (from events before it), or the day
    /// before an outcome.
    pub marked_on: Day,
    pub observed_usd: u64,
    /// Years from the company's last observation to `marked_on`.
    pub gap_years: f64,
    pub gap_bucket: GapBucket,
    /// In the scorecard's forecaster order.
    pub forecasts: Vec<TargetForecast>,
}

/// One bin of the reliability table.
#[derive(Clone, Debug, Serialize)]
pub struct ReliabilityBin {
    pub lower: f64,
    pub upper: f64,
    pub n: usize,
    pub mean_stated: Option<f64>,
    /// The share of the bin's targets that landed within +/-10%.
    pub observed: Option<f64>,
}

/// Whether the `confidence` a forecaster stated was worth stating, on the scored events.
#[derive(Clone, Debug, Serialize)]
pub struct ConfidenceScore {
    pub tolerance_pct: f64,
    pub n: usize,
    pub hits: usize,
    /// Mean of (confidence - hit)^2; lower is better.
    pub brier: Option<f64>,
    /// The share of targets that landed within +/-10%.
    pub base_rate: Option<f64>,
    /// The Brier score of stating the base rate every time: base_rate * (1 - base_rate).
    pub brier_base_rate: Option<f64>,
    /// 1 - brier / brier_base_rate: above 0, the stated confidence beats the base rate.
    pub brier_skill: Option<f64>,
    pub reliability: Vec<ReliabilityBin>,
}

/// Band coverage on the scored events of one gap bucket.
#[derive(Clone, Debug, Serialize)]
pub struct GapCoverage {
    pub bucket: GapBucket,
    pub n: usize,
    pub coverage_80: CoverageScore,
    pub coverage_95: CoverageScore,
}

/// Outcomes (listings and bankruptcies) by verdict.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerdictCounts {
    pub hit: usize,
    pub covered_80: usize,
    pub covered_95: usize,
    pub miss: usize,
}

/// A scored event's share of a forecaster's MAPE.
#[derive(Clone, Debug, Serialize)]
pub struct MapeContributor {
    pub slug: String,
    pub event_id: String,
    pub event_type: EventType,
    pub occurred_on: Day,
    pub abs_pct_error: f64,
    /// Its absolute percentage error over the sum of all of them.
    pub share_of_mape_pct: f64,
}

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
    /// ln(valuation) - ln(predicted).
    pub log_error: f64,
    pub band_95_rel: RelativeBand,
}

/// One forecaster's figures on the scored targets, and the targets that set the worst of them.
#[derive(Clone, Debug, Serialize)]
pub struct ForecasterScore {
    #[serde(flatten)]
    pub figures: ForecasterFigures,
    /// The first `MISSES_LISTED` scored events outside the 95% band.
    pub misses: Vec<Miss>,
    /// The largest contributors to MAPE, largest first.
    pub mape_top_contributors: Vec<MapeContributor>,
}

/// Every summary figure of one forecaster: what anyone may read and recompute.
#[derive(Clone, Debug, Serialize)]
pub struct ForecasterFigures {
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
    pub confidence: ConfidenceScore,
    pub coverage_by_gap: Vec<GapCoverage>,
    /// Listings and bankruptcies by verdict.
    pub outcome_verdicts: VerdictCounts,
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
    pub verdict: Verdict,
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
    /// The method against carrying the last event forward (baseline (a)).
    pub comparison: Comparison,
    /// The method against the previous methodology: what this version changed.
    pub comparison_with_previous: Comparison,
    pub listing_validations: Vec<ListingValidation>,
    pub bankruptcy_outcomes: Vec<BankruptcyOutcome>,
    /// Every scored target: published as a document of its own (it grows with the dataset).
    #[serde(skip)]
    pub targets: Vec<Target>,
    /// Where each company's targets are in `targets`, in dataset order.
    #[serde(skip)]
    pub targets_by_company: Vec<std::ops::Range<usize>>,
}

fn percent(count: usize, n: usize) -> f64 {
    round_to(count as f64 * 100.0 / n as f64, 1)
}

fn percent_of(inside: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| percent(inside, n))
}

/// The confidence a forecaster states for a forecast made on a day with quantiles in force:
/// each forecaster's own rule (the method's is empirical, the others' a normal model).
pub type StatedConfidence<'a> = dyn Fn(Forecaster, Day, &Forecast, &Quantiles) -> f64 + 'a;

/// A forecaster's numbers at a target it forecast as `forecast`, with quantiles `q` in force and
/// the confidence it stated.
fn target_forecast(
    forecaster: Forecaster,
    forecast: Forecast,
    q: Quantiles,
    stated: f64,
    observed: f64,
    outcome: bool,
) -> TargetForecast {
    let mark = forecast.log_value.exp();
    let residual = if observed > 0.0 {
        forecast.residual(observed.ln()).abs()
    } else {
        f64::INFINITY
    };
    let (inside_80, inside_95) = (residual <= q.q80, residual <= q.q95);
    // In log space, as the log error is published: anyone can tell a hit from it.
    let log_error = (observed > 0.0).then(|| observed.ln() - forecast.log_value);
    let hit =
        log_error.is_some_and(|e| ((1.0 - CONFIDENCE_TOLERANCE).ln()..=(1.0 + CONFIDENCE_TOLERANCE).ln()).contains(&e));
    let verdict = outcome.then_some(match (hit, inside_80, inside_95) {
        (true, _, _) => Verdict::Hit,
        (false, true, _) => Verdict::Covered80,
        (false, false, true) => Verdict::Covered95,
        (false, false, false) => Verdict::Miss,
    });
    TargetForecast {
        forecaster: forecaster.name(),
        mark_usd: mark,
        band_80: Band::of(forecast.band(q.q80)),
        band_95: Band::of(forecast.band(q.q95)),
        band_80_rel: RelativeBand::of(q.q80, forecast.scale),
        band_95_rel: RelativeBand::of(q.q95, forecast.scale),
        scale: forecast.scale,
        q80: q.q80,
        q95: q.q95,
        confidence: stated,
        log_error,
        inside_80,
        inside_95,
        hit,
        verdict,
    }
}

/// The day of a company's last observation before `day` (or on it, with `inclusive`).
fn last_observation(company: &Company, day: Day, inclusive: bool) -> Option<Day> {
    company
        .observations()
        .map(|e| e.occurred_on)
        .filter(|&d| d < day || (inclusive && d == day))
        .max()
}

/// Every scored target of every company, in company then date order.
fn targets(
    dataset: &Dataset,
    backtests: &[CompanyBacktest],
    quantiles: &[QuantileTimeline; FORECASTERS],
    stated: &StatedConfidence<'_>,
) -> (Vec<Target>, Vec<std::ops::Range<usize>>) {
    let mut targets = Vec::new();
    let mut by_company = Vec::with_capacity(dataset.companies.len());
    for (company, backtest) in dataset.companies.iter().zip(backtests) {
        let start = targets.len();
        let scored = backtest.predictions.iter().map(|p| {
            (
                p.event,
                p.day,
                &p.forecasts,
                TargetKind::Event,
                last_observation(company, p.day, false),
            )
        });
        let outcome = backtest.outcome.as_ref().map(|o| {
            let kind = if company.events[o.event].event_type.is_listing() {
                TargetKind::Listing
            } else {
                TargetKind::Bankruptcy
            };
            (
                o.event,
                o.marked_on,
                &o.forecasts,
                kind,
                last_observation(company, o.marked_on, true),
            )
        });
        for (index, marked_on, forecasts, kind, last) in scored.chain(outcome) {
            let event = &company.events[index];
            let observed = event.valuation_usd as f64;
            let gap_years = last.map_or(0.0, |last| f64::from(marked_on.days_since(last)) / DAYS_PER_YEAR);
            targets.push(Target {
                slug: company.slug.clone(),
                event_id: event.event_id.clone(),
                kind,
                event_type: event.event_type,
                occurred_on: event.occurred_on,
                marked_on,
                observed_usd: event.valuation_usd,
                gap_years,
                gap_bucket: GapBucket::of(gap_years),
                forecasts: Forecaster::ALL
                    .iter()
                    .map(|&f| {
                        let (q, forecast) = (*quantiles[f.index()].at(marked_on), forecasts[f.index()]);
                        let confidence = stated(f, marked_on, &forecast, &q);
                        target_forecast(f, forecast, q, confidence, observed, kind != TargetKind::Event)
                    })
                    .collect(),
            });
        }
        by_company.push(start..targets.len());
    }
    (targets, by_company)
}

/// Each forecaster's mark the day before an outcome, from its target row.
fn estimates(target: &Target) -> Vec<OutcomeEstimate> {
    target
        .forecasts
        .iter()
        .map(|f| OutcomeEstimate {
            forecaster: f.forecaster,
            mark_usd: usd(f.mark_usd),
            error_pct: f.error_pct(),
            band_80: f.band_80.clone(),
            band_95: f.band_95.clone(),
            inside_80: f.inside_80,
            inside_95: f.inside_95,
            verdict: f.verdict.unwrap_or(Verdict::Miss),
        })
        .collect()
}

impl Scorecard {
    pub fn new(
        dataset: &Dataset,
        backtests: &[CompanyBacktest],
        quantiles: &[QuantileTimeline; FORECASTERS],
        stated: &StatedConfidence<'_>,
    ) -> Scorecard {
        let (targets, targets_by_company) = targets(dataset, backtests, quantiles, stated);
        let mut listing_validations = Vec::new();
        let mut bankruptcy_outcomes = Vec::new();
        for target in &targets {
            match target.kind {
                TargetKind::Event => {}
                TargetKind::Listing => listing_validations.push(ListingValidation {
                    slug: target.slug.clone(),
                    event_id: target.event_id.clone(),
                    event_type: target.event_type,
                    listed_on: target.occurred_on,
                    listing_value_usd: target.observed_usd,
                    marked_on: target.marked_on,
                    estimates: estimates(target),
                }),
                TargetKind::Bankruptcy => bankruptcy_outcomes.push(BankruptcyOutcome {
                    slug: target.slug.clone(),
                    event_id: target.event_id.clone(),
                    occurred_on: target.occurred_on,
                    value_usd: target.observed_usd,
                    marked_on: target.marked_on,
                    estimates: estimates(target),
                }),
            }
        }
        let forecasters = Forecaster::ALL
            .iter()
            .map(|&f| score(f, dataset, backtests, &quantiles[f.index()], &targets))
            .collect();
        Scorecard {
            forecasters,
            comparison: compare(dataset, backtests, Forecaster::Method, Forecaster::LastEvent),
            comparison_with_previous: compare(dataset, backtests, Forecaster::Method, Forecaster::GapProfile),
            listing_validations,
            bankruptcy_outcomes,
            targets,
            targets_by_company,
        }
    }

    /// The targets of the company at `position` in the dataset.
    pub fn targets_of(&self, position: usize) -> &[Target] {
        self.targets_by_company
            .get(position)
            .and_then(|range| self.targets.get(range.clone()))
            .unwrap_or(&[])
    }

    pub fn forecaster(&self, forecaster: Forecaster) -> Option<&ForecasterScore> {
        self.forecasters.iter().find(|f| f.figures.name == forecaster.name())
    }
}

fn score(
    forecaster: Forecaster,
    dataset: &Dataset,
    backtests: &[CompanyBacktest],
    quantiles: &QuantileTimeline,
    targets: &[Target],
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
                    misses.push(miss(company, p.event, forecast, q.q95));
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
        figures: ForecasterFigures {
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
            confidence: confidence_score(targets, index),
            coverage_by_gap: coverage_by_gap(targets, index),
            outcome_verdicts: verdict_counts(targets, index),
        },
        misses,
        mape_top_contributors: mape_contributors(targets, index),
    }
}

/// The scored events (not outcomes) with forecaster `index`'s numbers at each.
fn scored_events(targets: &[Target], index: usize) -> impl Iterator<Item = (&Target, &TargetForecast)> {
    targets
        .iter()
        .filter(|t| t.kind == TargetKind::Event)
        .map(move |t| (t, &t.forecasts[index]))
}

/// |mark - observed| / observed in percent, from a target's log error.
fn abs_pct_error(forecast: &TargetForecast) -> Option<f64> {
    forecast.log_error.map(|e| ((-e).exp() - 1.0).abs() * 100.0)
}

fn mape_contributors(targets: &[Target], index: usize) -> Vec<MapeContributor> {
    let mut errors: Vec<(&Target, f64)> = scored_events(targets, index)
        .filter_map(|(t, f)| abs_pct_error(f).map(|e| (t, e)))
        .collect();
    let total: f64 = errors.iter().map(|e| e.1).sum();
    errors.sort_by(|a, b| b.1.total_cmp(&a.1));
    errors
        .into_iter()
        .take(MAPE_CONTRIBUTORS_NAMED)
        .map(|(t, e)| MapeContributor {
            slug: t.slug.clone(),
            event_id: t.event_id.clone(),
            event_type: t.event_type,
            occurred_on: t.occurred_on,
            abs_pct_error: round_to(e, 1),
            share_of_mape_pct: round_to(e / total * 100.0, 1),
        })
        .collect()
}

fn confidence_score(targets: &[Target], index: usize) -> ConfidenceScore {
    let stated: Vec<(f64, bool)> = scored_events(targets, index)
        .map(|(_, f)| (f.confidence, f.hit))
        .collect();
    let n = stated.len();
    let hits = stated.iter().filter(|s| s.1).count();
    let brier = mean(
        &stated
            .iter()
            .map(|&(c, hit)| (c - f64::from(u8::from(hit))).powi(2))
            .collect::<Vec<_>>(),
    );
    let base_rate = (n > 0).then(|| hits as f64 / n as f64);
    let brier_base_rate = base_rate.map(|p| p * (1.0 - p));
    let brier_skill = brier
        .zip(brier_base_rate)
        .filter(|&(_, reference)| reference > 0.0)
        .map(|(brier, reference)| 1.0 - brier / reference);
    let round = |v: Option<f64>| v.map(|v| round_to(v, 4));
    let reliability = (0..RELIABILITY_BINS)
        .map(|bin| {
            let in_bin: Vec<(f64, bool)> = stated
                .iter()
                .copied()
                .filter(|&(c, _)| reliability_bin(c) == bin)
                .collect();
            let confidences: Vec<f64> = in_bin.iter().map(|s| s.0).collect();
            ReliabilityBin {
                lower: bin as f64 / RELIABILITY_BINS as f64,
                upper: (bin + 1) as f64 / RELIABILITY_BINS as f64,
                n: in_bin.len(),
                mean_stated: round(mean(&confidences)),
                observed: round(
                    (!in_bin.is_empty()).then(|| in_bin.iter().filter(|s| s.1).count() as f64 / in_bin.len() as f64),
                ),
            }
        })
        .collect();
    ConfidenceScore {
        tolerance_pct: CONFIDENCE_TOLERANCE * 100.0,
        n,
        hits,
        brier: round(brier),
        base_rate: round(base_rate),
        brier_base_rate: round(brier_base_rate),
        brier_skill: round(brier_skill),
        reliability,
    }
}

/// The reliability bin of a stated confidence: tenths, the last one closed.
pub fn reliability_bin(confidence: f64) -> usize {
    ((confidence * RELIABILITY_BINS as f64).floor().max(0.0) as usize).min(RELIABILITY_BINS - 1)
}

fn coverage_by_gap(targets: &[Target], index: usize) -> Vec<GapCoverage> {
    GapBucket::ALL
        .iter()
        .map(|&bucket| {
            let (mut n, mut inside_80, mut inside_95) = (0, 0, 0);
            for (_, f) in scored_events(targets, index).filter(|(t, _)| t.gap_bucket == bucket) {
                n += 1;
                inside_80 += usize::from(f.inside_80);
                inside_95 += usize::from(f.inside_95);
            }
            GapCoverage {
                bucket,
                n,
                coverage_80: CoverageScore::new(80, inside_80, n),
                coverage_95: CoverageScore::new(95, inside_95, n),
            }
        })
        .collect()
}

fn verdict_counts(targets: &[Target], index: usize) -> VerdictCounts {
    let mut counts = VerdictCounts::default();
    for verdict in targets.iter().filter_map(|t| t.forecasts[index].verdict) {
        match verdict {
            Verdict::Hit => counts.hit += 1,
            Verdict::Covered80 => counts.covered_80 += 1,
            Verdict::Covered95 => counts.covered_95 += 1,
            Verdict::Miss => counts.miss += 1,
        }
    }
    counts
}

fn miss(company: &Company, event: usize, forecast: Forecast, q95: f64) -> Miss {
    let event = &company.events[event];
    let predicted = forecast.log_value.exp();
    Miss {
        slug: company.slug.clone(),
        event_id: event.event_id.clone(),
        event_type: event.event_type,
        occurred_on: event.occurred_on,
        valuation_usd: event.valuation_usd,
        predicted_usd: usd(predicted),
        band_95: Band::of(forecast.band(q95)),
        log_error: (event.valuation_usd as f64).ln() - forecast.log_value,
        band_95_rel: RelativeBand::of(q95, forecast.scale),
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
