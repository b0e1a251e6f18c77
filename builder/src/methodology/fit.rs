//! The fitted method over one dataset (pooled drifts, the method's adaptive bands, every
//! forecaster's quantiles, the confidence the method states, the scorecard) and the published
//! marks of one company: its daily series, 30-day change, latest confidence and what its latest
//! mark rests on.
//!
//! The series is what `GET /v1/companies/{slug}/marks` serves: one point per day from the
//! first event to `as_of`, or to the day before a listing, or to the day of a bankruptcy,
//! where it ends with one point at the reported value.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::dataset::{Company, Dataset, EventType};
use crate::methodology::adaptive::{AdaptiveBands, BandState};
use crate::methodology::conformal::{confidence, quantile_timeline, Coverage, QuantileTimeline, Quantiles};
use crate::methodology::forecasters::backtest::{self, CompanyBacktest, Forecast, Forecaster, FORECASTERS};
use crate::methodology::forecasters::gap_profile::{self, DriftTable, LastObservation, PointRule};
use crate::methodology::forecasters::local_trend::growth_timeline;
use crate::methodology::params::Params;
use crate::methodology::round_to;
use crate::methodology::scorecard::Scorecard;
use marks_format::day::Day;

/// One day of a company's marks, in USD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkDay {
    pub day: Day,
    pub mark: f64,
    pub band80: (f64, f64),
    pub band95: (f64, f64),
    /// The forecast's scale in log units (0 for a reported terminal value).
    pub scale: f64,
}

impl MarkDay {
    pub fn band(&self, coverage: Coverage) -> (f64, f64) {
        match coverage {
            Coverage::C80 => self.band80,
            Coverage::C95 => self.band95,
        }
    }
}

/// A mark from a forecast in log space and the quantiles in force.
pub fn mark_day(day: Day, log_value: f64, scale: f64, quantiles: Quantiles) -> MarkDay {
    let mark = log_value.exp();
    // exp(x +/- q s) = mark * e^(+/- q s): one exp per band instead of two (the builder
    // evaluates this tens of millions of times).
    let band = |q: f64| {
        let spread = (q * scale).exp();
        (mark / spread, mark * spread)
    };
    MarkDay {
        day,
        mark,
        band80: band(quantiles.q80),
        band95: band(quantiles.q95),
        scale,
    }
}

/// A reported value taken as known: mark and both bands equal to it.
fn reported_day(day: Day, value: f64) -> MarkDay {
    MarkDay {
        day,
        mark: value,
        band80: (value, value),
        band95: (value, value),
        scale: 0.0,
    }
}

/// What the latest mark rests on (docs/design.md section 4a): the event it starts from, and
/// what the method adds for the days since. Earlier events move it only through the drifts
/// pooled over every company, a few hundredths each, so they are not listed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkBasis {
    /// Index into the company's `events` of the event that sets the mark: its last observation
    /// on or before the mark's day, or its bankruptcy.
    pub event: usize,
    /// Days from that event to the latest mark.
    pub days: i32,
    /// What the method adds to the event's value, in log units: ln(mark) - ln(value); 0 when
    /// the event's reported value is the mark.
    pub drift_log: f64,
}

/// Everything published about one company's marks.
#[derive(Clone, Debug)]
pub struct CompanyMarks {
    pub series: Vec<MarkDay>,
    /// From the points 30 days apart, ending on `as_of`: none for a shorter series, or one that
    /// ended before `as_of` (a listing, a bankruptcy), whose change is not today's.
    pub delta_30d_pct: Option<f64>,
    /// None when the company has no mark.
    pub basis: Option<MarkBasis>,
    /// The probability the method states that the value lies within +/-10% of the latest mark.
    pub confidence: f64,
}

impl CompanyMarks {
    pub fn latest(&self) -> Option<&MarkDay> {
        self.series.last()
    }
}

/// The fitted method: pooled drifts, the method's bands, quantile timelines, the confidences
/// it states and the scorecard, from one pass over every company.
#[derive(Debug)]
pub struct Fit {
    pub params: Params,
    pub as_of: Day,
    pub drifts: DriftTable,
    /// The method's bands: an adaptive 80% level, a conformal 95%, empirical confidence.
    pub bands: AdaptiveBands,
    /// Quantiles of each forecaster, in `Forecaster::ALL` order; the first are the method's.
    pub quantiles: [QuantileTimeline; FORECASTERS],
    /// The confidence the method states at every scored target and latest mark, by day and
    /// scale (worked out together: `AdaptiveBands::confidences`).
    stated: HashMap<(Day, u64), f64>,
    pub scorecard: Scorecard,
}

/// Every company's walk-forward backtest, in dataset order.
pub fn walk_forward(dataset: &Dataset, params: &Params, drifts: &DriftTable) -> Vec<CompanyBacktest> {
    let growth = growth_timeline(dataset, &params.local_trend);
    let as_of = dataset.info.as_of;
    dataset
        .companies
        .par_iter()
        .map(|company| backtest::walk(company, params, drifts, &growth, as_of))
        .collect()
}

/// The last day a company is marked: `as_of`, the day before its listing, or the day of its
/// bankruptcy (where the reported value is the mark).
fn last_marked_day(company: &Company, as_of: Day) -> Day {
    match company.terminal() {
        Some(e) if e.event_type.is_listing() => e.occurred_on.plus(-1),
        Some(e) => e.occurred_on,
        None => as_of,
    }
}

/// A company's observations up to `end`: (index in `events`, the observation).
fn observations(company: &Company, end: Day) -> Vec<(usize, LastObservation)> {
    company
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.event_type.is_terminal() && e.occurred_on <= end)
        .map(|(i, e)| {
            (
                i,
                LastObservation {
                    day: e.occurred_on,
                    log_value: (e.valuation_usd as f64).ln(),
                    event_type: e.event_type,
                },
            )
        })
        .collect()
}

/// The day and scale of a company's latest mark (scale 0 for a reported bankruptcy), as the
/// series computes them.
fn latest_point(company: &Company, as_of: Day, params: &Params) -> Option<(Day, f64)> {
    let end = last_marked_day(company, as_of);
    if company.bankruptcy().is_some_and(|e| e.occurred_on == end) {
        return Some((end, 0.0));
    }
    let (_, last) = *observations(company, end).last()?;
    let gap_years = gap_profile::years_between(end, last.day);
    Some((end, gap_profile::scale(gap_years, &params.gap_profile)))
}

impl Fit {
    pub fn new(dataset: &Dataset, params: Params) -> Fit {
        let as_of = dataset.info.as_of;
        // One day past as_of: the scorecard reports the quantiles in force after it.
        let drifts = DriftTable::new(dataset, &params.gap_profile, as_of.plus(1));
        let backtests = walk_forward(dataset, &params, &drifts);
        let residuals = |f: Forecaster| -> Vec<(Day, f64)> {
            backtests
                .iter()
                .flat_map(|b| b.predictions.iter())
                .map(|p| (p.day, p.forecasts[f.index()].residual(p.observed_log)))
                .collect()
        };
        let (bands, _) = AdaptiveBands::new(&residuals(Forecaster::Method));
        let quantiles = Forecaster::ALL.map(|f| match f {
            Forecaster::Method => bands.timeline().map(BandState::quantiles),
            _ => quantile_timeline(residuals(f)),
        });
        // Every forecast the method states a confidence for: each scored target, each latest mark.
        let method = Forecaster::Method.index();
        let targets = backtests.iter().flat_map(|b| {
            b.predictions
                .iter()
                .map(move |p| (p.day, p.forecasts[method].scale))
                .chain(b.outcome.iter().map(move |o| (o.marked_on, o.forecasts[method].scale)))
        });
        let latest = dataset.companies.iter().filter_map(|c| latest_point(c, as_of, &params));
        let asked: Vec<(Day, f64)> = targets.chain(latest).collect();
        let stated: HashMap<(Day, u64), f64> = asked
            .iter()
            .zip(bands.confidences(&asked))
            .map(|(&(day, scale), confidence)| ((day, scale.to_bits()), confidence))
            .collect();
        let state_of = |forecaster: Forecaster, day: Day, forecast: &Forecast, q: &Quantiles| match forecaster {
            Forecaster::Method => stated_confidence(&stated, &bands, day, forecast.scale),
            _ => confidence(forecast.scale, q),
        };
        let scorecard = Scorecard::new(dataset, &backtests, &quantiles, &state_of);
        Fit {
            params,
            as_of,
            drifts,
            bands,
            quantiles,
            stated,
            scorecard,
        }
    }

    /// The method's bands in force on a day, and what set them.
    pub fn bands_on(&self, day: Day) -> BandState {
        self.bands.at(day)
    }

    /// The published marks of one company.
    pub fn marks(&self, company: &Company) -> CompanyMarks {
        let params = &self.params.gap_profile;
        let end = last_marked_day(company, self.as_of);
        let bankruptcy = company.bankruptcy().filter(|e| e.occurred_on == end);
        let observations = observations(company, end);
        let Some(&(_, first)) = observations.first() else {
            return CompanyMarks {
                series: Vec::new(),
                delta_30d_pct: None,
                basis: None,
                confidence: 0.0,
            };
        };
        let mut quantiles = self.quantiles[Forecaster::Method.index()].cursor();
        let mut series = Vec::with_capacity(usize::try_from(end.days_since(first.day) + 1).unwrap_or(0));
        let mut next = 0;
        let mut last = observations[0];
        let mut day = first.day;
        while day <= end {
            while next < observations.len() && observations[next].1.day <= day {
                last = observations[next];
                next += 1;
            }
            if let Some(event) = bankruptcy.filter(|e| e.occurred_on == day) {
                series.push(reported_day(day, event.valuation_usd as f64));
                break;
            }
            let forecast = gap_profile::forecast(&last.1, day, &self.drifts.at(day), params, PointRule::HoldAgreedSale);
            series.push(mark_day(day, forecast.log_value, forecast.scale, *quantiles.at(day)));
            day = day.plus(1);
        }
        let basis = series.last().map(|latest| match bankruptcy {
            Some(_) => MarkBasis {
                event: company
                    .events
                    .iter()
                    .position(|e| e.event_type == EventType::Bankruptcy)
                    .unwrap_or(last.0),
                days: 0,
                drift_log: 0.0,
            },
            None => MarkBasis {
                event: last.0,
                days: latest.day.days_since(last.1.day),
                drift_log: latest.mark.ln() - last.1.log_value,
            },
        });
        // The points are consecutive days, so the one 30 days back is 30 positions back.
        let delta_30d_pct = (series.len() > 30 && end == self.as_of).then(|| {
            let (now, then) = (series[series.len() - 1].mark, series[series.len() - 31].mark);
            round_to((now / then - 1.0) * 100.0, 2)
        });
        let confidence = series.last().map_or(0.0, |latest| {
            stated_confidence(&self.stated, &self.bands, latest.day, latest.scale)
        });
        CompanyMarks {
            series,
            delta_30d_pct,
            basis,
            confidence,
        }
    }
}

/// The confidence the method states on `day` at `scale`: worked out with the others when the
/// fit was made, or now if it was not asked then.
fn stated_confidence(stated: &HashMap<(Day, u64), f64>, bands: &AdaptiveBands, day: Day, scale: f64) -> f64 {
    match stated.get(&(day, scale.to_bits())) {
        Some(&confidence) => confidence,
        None => bands.confidences(&[(day, scale)])[0],
    }
}
