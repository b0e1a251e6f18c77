//! The walk-forward backtest of one company: what every forecaster would have said before each
//! scored event, and the day before the company's outcome (listing or bankruptcy).
//!
//! A scored event is an observation with an earlier-day observation of the same company; its
//! forecasts use only events dated before its day, so all of one day's events are forecast
//! from the same information. Outcomes are forecast from the published mark of the day before
//! them (events on or before that day).

use crate::dataset::Company;
use crate::methodology::forecasters::baselines::Baselines;
use crate::methodology::forecasters::gap_profile::{self, DriftTable, LastObservation, PointRule};
use crate::methodology::forecasters::local_trend::{Dynamics, GrowthTimeline, TrendState};
use crate::methodology::params::Params;
use marks_format::day::Day;

/// The forecasters of the scorecard, in the order they are reported; the first is the method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forecaster {
    /// This methodology, v0.4.0.
    Method,
    /// The previous methodology, v0.3.0, kept to show what v0.4.0 changed.
    GapProfile,
    LocalTrend,
    LastEvent,
    WeightedStep,
}

pub const FORECASTERS: usize = 5;

/// The version of the previous methodology, kept as a comparison forecaster.
pub const PREVIOUS_METHODOLOGY_VERSION: &str = "v0.3.0";

impl Forecaster {
    pub const ALL: [Forecaster; FORECASTERS] = [
        Forecaster::Method,
        Forecaster::GapProfile,
        Forecaster::LocalTrend,
        Forecaster::LastEvent,
        Forecaster::WeightedStep,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Forecaster::Method => "adaptive_gap_profile",
            Forecaster::GapProfile => "gap_profile_drift",
            Forecaster::LocalTrend => "local_linear_trend",
            Forecaster::LastEvent => "last_event_carried_forward",
            Forecaster::WeightedStep => "quality_weighted_step",
        }
    }

    /// The methodology version a forecaster is, if it is one.
    pub fn methodology_version(self) -> Option<&'static str> {
        match self {
            Forecaster::Method => Some(crate::methodology::METHODOLOGY_VERSION),
            Forecaster::GapProfile => Some(PREVIOUS_METHODOLOGY_VERSION),
            Forecaster::LocalTrend => Some("v0.2.0"),
            Forecaster::LastEvent | Forecaster::WeightedStep => None,
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Forecaster::Method => {
                "this methodology (v0.4.0): last observed value plus a pooled drift by years since it (none after an agreed sale), an 80% band whose level adapts to its own misses, a 95% conformal band, on a scale growing with sqrt(0.25 + years); confidence from past errors at today's scale"
            }
            Forecaster::GapProfile => {
                "the previous methodology (v0.3.0), for comparison: the same drift after every observation, split-conformal bands, a normal-model confidence"
            }
            Forecaster::LocalTrend => {
                "the previous methodology (v0.2.0), for comparison: Kalman-filtered local linear trend in log value, conformal bands"
            }
            Forecaster::LastEvent => "baseline (a): the last observed valuation, carried forward",
            Forecaster::WeightedStep => {
                "baseline (b): quality-weighted average of past events, weight by type x 0.5^(age/90 days)"
            }
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// A forecast in log space with the scale its residuals are normalised by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Forecast {
    pub log_value: f64,
    pub scale: f64,
}

impl Forecast {
    pub fn residual(&self, observed_log: f64) -> f64 {
        (observed_log - self.log_value) / self.scale
    }

    pub fn band(&self, q: f64) -> (f64, f64) {
        (
            (self.log_value - q * self.scale).exp(),
            (self.log_value + q * self.scale).exp(),
        )
    }
}

/// Every forecaster's forecast of one scored event.
#[derive(Clone, Copy, Debug)]
pub struct Prediction {
    /// Index into the company's `events`.
    pub event: usize,
    pub day: Day,
    pub observed_log: f64,
    pub forecasts: [Forecast; FORECASTERS],
}

/// Every forecaster's mark the day before the company's outcome.
#[derive(Clone, Copy, Debug)]
pub struct OutcomeForecast {
    /// Index of the listing or bankruptcy in the company's `events`.
    pub event: usize,
    pub marked_on: Day,
    pub forecasts: [Forecast; FORECASTERS],
}

#[derive(Clone, Debug, Default)]
pub struct CompanyBacktest {
    pub predictions: Vec<Prediction>,
    pub outcome: Option<OutcomeForecast>,
}

/// A gap-profile forecast on `day` from a company's last observation before (or on) it.
fn gap_forecast(last: &LastObservation, day: Day, drifts: &DriftTable, params: &Params, rule: PointRule) -> Forecast {
    let f = gap_profile::forecast(last, day, &drifts.at(day), &params.gap_profile, rule);
    Forecast {
        log_value: f.log_value,
        scale: f.scale,
    }
}

/// Walks one company day by day from its first observation to the day before its outcome (or
/// `as_of`), running the v0.2.0 filter and the baselines alongside the v0.3.0 forecasts.
pub fn walk(
    company: &Company,
    params: &Params,
    drifts: &DriftTable,
    growth: &GrowthTimeline,
    as_of: Day,
) -> CompanyBacktest {
    let trend_params = &params.local_trend;
    let outcome = company.events.iter().position(|e| e.event_type.is_terminal());
    let end = outcome.map_or(as_of, |i| company.events[i].occurred_on.plus(-1));
    let observations: Vec<(usize, &crate::dataset::Event)> = company
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.event_type.is_terminal() && e.occurred_on <= end)
        .collect();
    let mut backtest = CompanyBacktest::default();
    let Some(&(_, first)) = observations.first() else {
        return backtest;
    };
    let dynamics = Dynamics::daily(trend_params, company.sector);
    let sector = company.sector.index();
    let mut growth_cursor = growth.cursor();
    let mut state: Option<TrendState> = None;
    let mut baselines = Baselines::default();
    let mut last: Option<LastObservation> = None;
    let mut next = 0;
    let mut day = first.occurred_on;
    loop {
        let sector_growth = growth_cursor.at(day)[sector];
        if let Some(state) = state.as_mut() {
            state.predict(&dynamics, sector_growth);
        }
        let todays = observations[next..]
            .iter()
            .take_while(|(_, e)| e.occurred_on == day)
            .count();
        if todays > 0 {
            if let (Some(state), Some(last)) = (state.as_ref(), last.as_ref()) {
                let method = gap_forecast(last, day, drifts, params, PointRule::HoldAgreedSale);
                let gap = gap_forecast(last, day, drifts, params, PointRule::DriftAlways);
                let (last_event, step) = (baselines.last_event(), baselines.step_mark());
                for &(index, event) in &observations[next..next + todays] {
                    let noise = trend_params.noise(event.event_type).unwrap_or(0.0);
                    backtest.predictions.push(Prediction {
                        event: index,
                        day,
                        observed_log: (event.valuation_usd as f64).ln(),
                        forecasts: [
                            method,
                            gap,
                            Forecast {
                                log_value: state.level,
                                scale: (state.cov[0][0] + noise * noise).sqrt(),
                            },
                            Forecast {
                                log_value: last_event,
                                scale: 1.0,
                            },
                            Forecast {
                                log_value: step,
                                scale: 1.0,
                            },
                        ],
                    });
                }
            }
            for &(_, event) in &observations[next..next + todays] {
                let value = event.valuation_usd as f64;
                let observed_log = value.ln();
                let noise = trend_params.noise(event.event_type).unwrap_or(0.0);
                match state.as_mut() {
                    None => state = Some(TrendState::start(observed_log, noise, sector_growth, trend_params)),
                    Some(state) => {
                        state.update(observed_log, noise);
                    }
                }
                baselines.observe(day, value, event.event_type, &params.step_mark);
                last = Some(LastObservation {
                    day,
                    log_value: observed_log,
                    event_type: event.event_type,
                });
            }
            next += todays;
        }
        if day >= end {
            break;
        }
        day = day.plus(1);
    }
    if let (Some(event), Some(state), Some(last)) = (outcome, state, last) {
        backtest.outcome = Some(OutcomeForecast {
            event,
            marked_on: end,
            forecasts: [
                gap_forecast(&last, end, drifts, params, PointRule::HoldAgreedSale),
                gap_forecast(&last, end, drifts, params, PointRule::DriftAlways),
                Forecast {
                    log_value: state.level,
                    scale: state.level_sd(),
                },
                Forecast {
                    log_value: baselines.last_event(),
                    scale: 1.0,
                },
                Forecast {
                    log_value: baselines.step_mark(),
                    scale: 1.0,
                },
            ],
        });
    }
    backtest
}
