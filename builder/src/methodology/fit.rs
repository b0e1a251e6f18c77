//! The fitted method over one dataset (pooled drifts, conformal quantiles of every forecaster,
//! the scorecard) and the published marks of one company: its daily series, 30-day change and
//! the weights of the events behind its latest mark.
//!
//! The series is what `GET /v1/companies/{slug}/marks` serves: one point per day from the
//! first event to `as_of`, or to the day before a listing, or to the day of a bankruptcy,
//! where it ends with one point at the reported value.

use rayon::prelude::*;

use crate::dataset::{Company, Dataset, EventType};
use crate::methodology::conformal::{confidence, quantile_timeline, Coverage, QuantileTimeline, Quantiles};
use crate::methodology::forecasters::backtest::{self, CompanyBacktest, Forecaster, FORECASTERS};
use crate::methodology::forecasters::gap_profile::{self, DriftTable};
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
    pub quantiles: Quantiles,
}

impl MarkDay {
    pub fn band(&self, coverage: Coverage) -> (f64, f64) {
        match coverage {
            Coverage::C80 => self.band80,
            Coverage::C95 => self.band95,
        }
    }

    pub fn confidence(&self) -> f64 {
        confidence(self.scale, &self.quantiles)
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
        quantiles,
    }
}

/// A reported value taken as known: mark and both bands equal to it.
fn reported_day(day: Day, value: f64, quantiles: Quantiles) -> MarkDay {
    MarkDay {
        day,
        mark: value,
        band80: (value, value),
        band95: (value, value),
        scale: 0.0,
        quantiles,
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
    pub delta_30d_pct: Option<f64>,
    /// None when the company has no mark.
    pub basis: Option<MarkBasis>,
}

impl CompanyMarks {
    pub fn latest(&self) -> Option<&MarkDay> {
        self.series.last()
    }
}

/// The fitted method: pooled drifts, quantile timelines and the scorecard, from one pass over
/// every company.
#[derive(Debug)]
pub struct Fit {
    pub params: Params,
    pub as_of: Day,
    pub drifts: DriftTable,
    /// Quantiles of each forecaster, in `Forecaster::ALL` order; the first are the method's.
    pub quantiles: [QuantileTimeline; FORECASTERS],
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

impl Fit {
    pub fn new(dataset: &Dataset, params: Params) -> Fit {
        let as_of = dataset.info.as_of;
        // One day past as_of: the scorecard reports the quantiles in force after it.
        let drifts = DriftTable::new(dataset, &params.gap_profile, as_of.plus(1));
        let backtests = walk_forward(dataset, &params, &drifts);
        let quantiles = Forecaster::ALL.map(|f| {
            quantile_timeline(
                backtests
                    .iter()
                    .flat_map(|b| b.predictions.iter())
                    .map(|p| (p.day, p.forecasts[f.index()].residual(p.observed_log)))
                    .collect(),
            )
        });
        let scorecard = Scorecard::new(dataset, &backtests, &quantiles);
        Fit {
            params,
            as_of,
            drifts,
            quantiles,
            scorecard,
        }
    }

    /// The quantiles of the method in force on a day.
    pub fn quantiles_on(&self, day: Day) -> Quantiles {
        *self.quantiles[Forecaster::GapProfile.index()].at(day)
    }

    /// The published marks of one company.
    pub fn marks(&self, company: &Company) -> CompanyMarks {
        let params = &self.params.gap_profile;
        let terminal = company.terminal();
        let bankruptcy = terminal.filter(|e| e.event_type == EventType::Bankruptcy);
        let end = match terminal {
            Some(e) if e.event_type.is_listing() => e.occurred_on.plus(-1),
            Some(e) => e.occurred_on,
            None => self.as_of,
        };
        let observations: Vec<(usize, Day, f64)> = company
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.event_type.is_terminal() && e.occurred_on <= end)
            .map(|(i, e)| (i, e.occurred_on, (e.valuation_usd as f64).ln()))
            .collect();
        let Some(&(_, first_day, _)) = observations.first() else {
            return CompanyMarks {
                series: Vec::new(),
                delta_30d_pct: None,
                basis: None,
            };
        };
        let mut quantiles = self.quantiles[Forecaster::GapProfile.index()].cursor();
        let mut series = Vec::with_capacity(usize::try_from(end.days_since(first_day) + 1).unwrap_or(0));
        let mut next = 0;
        let mut last = observations[0];
        let mut day = first_day;
        while day <= end {
            while next < observations.len() && observations[next].1 <= day {
                last = observations[next];
                next += 1;
            }
            let in_force = *quantiles.at(day);
            if let Some(event) = bankruptcy.filter(|e| e.occurred_on == day) {
                series.push(reported_day(day, event.valuation_usd as f64, in_force));
                break;
            }
            let forecast = gap_profile::forecast(last.2, last.1, day, &self.drifts.at(day), params);
            series.push(mark_day(day, forecast.log_value, forecast.scale, in_force));
            day = day.plus(1);
        }
        let basis = series
            .last()
            .map(|latest| match bankruptcy.filter(|e| e.occurred_on == latest.day) {
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
                    days: latest.day.days_since(last.1),
                    drift_log: latest.mark.ln() - last.2,
                },
            });
        // The points are consecutive days, so the one 30 days back is 30 positions back.
        let delta_30d_pct = (series.len() > 30).then(|| {
            let (now, then) = (series[series.len() - 1].mark, series[series.len() - 31].mark);
            round_to((now / then - 1.0) * 100.0, 2)
        });
        CompanyMarks {
            series,
            delta_30d_pct,
            basis,
        }
    }
}
