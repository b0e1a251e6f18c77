//! Methodology v0.2.0: from each company's valuation events to its daily marks, bands and
//! confidence, and the walk-forward scorecard that measures them against two baselines.
//!
//! The point estimate is a local linear trend in log value (level `x = ln(value)` and growth
//! `g` per year) run through a Kalman filter, with growth mean-reverting towards its sector's
//! pooled rate. Bands are split-conformal: the quantiles of the filter's own normalised
//! one-step-ahead errors, so the stated coverage is the measured one.
//!
//! Everything here is causal: a mark on day t uses only events on or before t, pooled
//! estimates use only what happened before t, and listing events (ipo, direct_listing) are
//! never inputs: they are held out and scored as validations.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rayon::prelude::*;
use serde::Serialize;

use crate::dataset::{Company, Dataset, Day, EventType, Sector};

pub const METHODOLOGY_VERSION: &str = "v0.2.0";
pub const DAYS_PER_YEAR: f64 = 365.25;
/// Standard normal quantiles used until enough residuals exist to calibrate.
pub const Z80: f64 = 1.281_551_565_544_600_4;
pub const Z95: f64 = 1.959_963_984_540_054;
/// Fewer pooled residuals than this and the bands fall back to the normal quantiles.
pub const MIN_CONFORMAL_RESIDUALS: usize = 20;
/// `confidence` is the probability that the true value is within this fraction of the mark.
pub const CONFIDENCE_TOLERANCE: f64 = 0.10;
/// Baseline (b) halves an event's weight every this many days.
pub const STEP_BASELINE_HALF_LIFE_DAYS: f64 = 90.0;
/// Misses listed per model in the scorecard; the total is always reported.
pub const MISSES_LISTED: usize = 100;

/// Every constant of the method, published in the snapshot's scorecard. Tuned only by
/// walk-forward error on observations, never on held-out listing outcomes.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    /// Observation noise (log units) by event type.
    pub noise_primary_round: f64,
    pub noise_down_round: f64,
    pub noise_tender_offer: f64,
    pub noise_secondary_sale: f64,
    pub noise_acquisition: f64,
    /// Level volatility per sqrt(year), by sector in `Sector::ALL` order.
    pub level_volatility: [f64; Sector::ALL.len()],
    /// Speed (per year) at which a company's growth reverts to its sector's pooled rate.
    pub growth_reversion_per_year: f64,
    /// Stationary standard deviation of growth around the sector rate (per year).
    pub growth_volatility: f64,
    /// Uncertainty of a company's growth at its first event.
    pub growth_prior_sd: f64,
    /// Shrinkage of a sector's pooled growth towards the all-sector rate, in years of data.
    pub sector_growth_pseudo_years: f64,
    /// Shrinkage of the all-sector growth towards zero, in years of data.
    pub pooled_growth_pseudo_years: f64,
    /// Half-life (years) of a rise's weight in the pooled growth rates, so that a change of
    /// market regime shows up in the rates instead of being averaged away.
    pub growth_memory_half_life_years: f64,
    /// Baseline (b) quality weights: round, tender, secondary, acquisition.
    pub step_weight_round: f64,
    pub step_weight_tender: f64,
    pub step_weight_secondary: f64,
    pub step_weight_acquisition: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            noise_primary_round: 0.10,
            noise_down_round: 0.10,
            noise_tender_offer: 0.15,
            noise_secondary_sale: 0.25,
            noise_acquisition: 0.10,
            // ai, fintech, space, enterprise-software, consumer, crypto, defense, healthcare,
            // mobility, gaming, developer-tools, other
            level_volatility: [0.65, 0.50, 0.50, 0.45, 0.45, 0.75, 0.50, 0.45, 0.50, 0.45, 0.60, 0.45],
            // Tuned on the sample's walk-forward errors (builder/examples/tune.rs): fast
            // reversion and heavy shrinkage keep a hot year's growth from being extrapolated
            // across a long gap, which is where every large overshoot came from.
            growth_reversion_per_year: 4.0,
            growth_volatility: 0.25,
            growth_prior_sd: 0.25,
            sector_growth_pseudo_years: 50.0,
            pooled_growth_pseudo_years: 20.0,
            growth_memory_half_life_years: 1.0,
            step_weight_round: 0.90,
            step_weight_tender: 0.80,
            step_weight_secondary: 0.65,
            step_weight_acquisition: 0.90,
        }
    }
}

impl Params {
    /// Observation noise of an event, or `None` for listings, which are never observed.
    pub fn noise(&self, event_type: EventType) -> Option<f64> {
        match event_type {
            EventType::PrimaryRound => Some(self.noise_primary_round),
            EventType::DownRound => Some(self.noise_down_round),
            EventType::TenderOffer => Some(self.noise_tender_offer),
            EventType::SecondarySale => Some(self.noise_secondary_sale),
            EventType::Acquisition => Some(self.noise_acquisition),
            EventType::Ipo | EventType::DirectListing => None,
        }
    }

    fn step_weight(&self, event_type: EventType) -> f64 {
        match event_type {
            EventType::PrimaryRound | EventType::DownRound => self.step_weight_round,
            EventType::TenderOffer => self.step_weight_tender,
            EventType::SecondarySale => self.step_weight_secondary,
            EventType::Acquisition => self.step_weight_acquisition,
            EventType::Ipo | EventType::DirectListing => 0.0,
        }
    }

    pub fn volatility(&self, sector: Sector) -> f64 {
        self.level_volatility[sector.index()]
    }

    /// The constants as the scorecard publishes them, sectors by name.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(object) = value.as_object_mut() {
            let by_sector: serde_json::Map<String, serde_json::Value> = Sector::ALL
                .iter()
                .map(|s| (s.as_str().to_string(), serde_json::json!(self.volatility(*s))))
                .collect();
            object.insert("level_volatility".into(), by_sector.into());
        }
        value
    }
}

/// The per-day transition of the trend model for one sector, computed once.
#[derive(Clone, Copy, Debug)]
pub struct Dynamics {
    /// Years per step.
    dt: f64,
    /// exp(-kappa dt): how much of growth's deviation from the sector rate survives a step.
    decay: f64,
    /// (1 - decay) / kappa: how much of that deviation the level absorbs in a step.
    absorb: f64,
    level_var: f64,
    growth_var: f64,
    kappa: f64,
}

impl Dynamics {
    pub fn daily(params: &Params, sector: Sector) -> Dynamics {
        let dt = 1.0 / DAYS_PER_YEAR;
        let kappa = params.growth_reversion_per_year;
        let decay = (-kappa * dt).exp();
        let sigma = params.volatility(sector);
        Dynamics {
            dt,
            decay,
            absorb: (1.0 - decay) / kappa,
            level_var: sigma * sigma * dt,
            // Exact variance of an Ornstein-Uhlenbeck step with the given stationary sd.
            growth_var: params.growth_volatility.powi(2) * (1.0 - decay * decay),
            kappa,
        }
    }

    /// The deterministic part of `days` steps at once (the transition is a semigroup).
    fn over(&self, days: i32) -> (f64, f64) {
        let decay = (-self.kappa * self.dt * f64::from(days)).exp();
        ((1.0 - decay) / self.kappa, decay)
    }
}

/// The filter state: level and growth with their covariance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrendState {
    pub level: f64,
    pub growth: f64,
    pub cov: [[f64; 2]; 2],
}

/// What one observation did to the filter.
#[derive(Clone, Copy, Debug)]
pub struct Update {
    pub predicted_level: f64,
    pub predicted_var: f64,
    pub gain: [f64; 2],
}

impl TrendState {
    pub fn start(observed_log: f64, noise: f64, sector_growth: f64, params: &Params) -> TrendState {
        TrendState {
            level: observed_log,
            growth: sector_growth,
            cov: [[noise * noise, 0.0], [0.0, params.growth_prior_sd.powi(2)]],
        }
    }

    pub fn predict(&mut self, dynamics: &Dynamics, sector_growth: f64) {
        let [[p00, p01], [p10, p11]] = self.cov;
        let (a, e) = (dynamics.absorb, dynamics.decay);
        let deviation = self.growth - sector_growth;
        self.level += sector_growth * dynamics.dt + deviation * a;
        self.growth = sector_growth + deviation * e;
        // P' = F P F^T + Q with F = [[1, a], [0, e]].
        let n00 = p00 + a * (p10 + p01) + a * a * p11 + dynamics.level_var;
        let n01 = e * (p01 + a * p11);
        let n10 = e * (p10 + a * p11);
        let n11 = e * e * p11 + dynamics.growth_var;
        self.cov = [[n00, n01], [n10, n11]];
    }

    pub fn update(&mut self, observed_log: f64, noise: f64) -> Update {
        let [[p00, p01], [p10, p11]] = self.cov;
        let innovation_var = p00 + noise * noise;
        let gain = [p00 / innovation_var, p10 / innovation_var];
        let predicted_level = self.level;
        let innovation = observed_log - self.level;
        self.level += gain[0] * innovation;
        self.growth += gain[1] * innovation;
        self.cov = [
            [p00 - gain[0] * p00, p01 - gain[0] * p01],
            [p10 - gain[1] * p00, p11 - gain[1] * p01],
        ];
        Update {
            predicted_level,
            predicted_var: p00,
            gain,
        }
    }

    pub fn level_sd(&self) -> f64 {
        self.cov[0][0].max(0.0).sqrt()
    }
}

/// A value that changes on given days: `values[i]` holds from `starts[i]` until the next start.
#[derive(Clone, Debug)]
pub struct StepTimeline<T> {
    starts: Vec<Day>,
    values: Vec<T>,
    before: T,
}

impl<T: Clone> StepTimeline<T> {
    fn new(before: T) -> StepTimeline<T> {
        StepTimeline {
            starts: Vec::new(),
            values: Vec::new(),
            before,
        }
    }

    fn push(&mut self, start: Day, value: T) {
        match self.starts.last() {
            Some(&last) if last == start => {
                if let Some(slot) = self.values.last_mut() {
                    *slot = value;
                }
            }
            _ => {
                self.starts.push(start);
                self.values.push(value);
            }
        }
    }

    pub fn at(&self, day: Day) -> &T {
        match self.starts.partition_point(|&s| s <= day) {
            0 => &self.before,
            i => &self.values[i - 1],
        }
    }

    /// A reader for days visited in increasing order, in O(1) amortised per day.
    pub fn cursor(&self) -> TimelineCursor<'_, T> {
        TimelineCursor {
            timeline: self,
            next: 0,
        }
    }
}

#[derive(Debug)]
pub struct TimelineCursor<'a, T> {
    timeline: &'a StepTimeline<T>,
    next: usize,
}

impl<'a, T: Clone> TimelineCursor<'a, T> {
    pub fn at(&mut self, day: Day) -> &'a T {
        let starts = &self.timeline.starts;
        if self.next > 0 && starts[self.next - 1] > day {
            self.next = starts.partition_point(|&s| s <= day);
        }
        while self.next < starts.len() && starts[self.next] <= day {
            self.next += 1;
        }
        match self.next {
            0 => &self.timeline.before,
            i => &self.timeline.values[i - 1],
        }
    }
}

/// Each sector's pooled growth rate per year, estimated walk-forward from the log changes
/// between consecutive observations of every company in the sector that ended before the day.
pub type GrowthTimeline = StepTimeline<[f64; Sector::ALL.len()]>;

pub fn growth_timeline(dataset: &Dataset, params: &Params) -> GrowthTimeline {
    let mut observations: Vec<(Day, usize, f64)> = dataset
        .companies
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            c.observations()
                .map(move |e| (e.occurred_on, i, (e.valuation_usd as f64).ln()))
        })
        .collect();
    // Stable sort keeps each company's same-day events in file order.
    observations.sort_by_key(|&(day, company, _)| (day, company));
    let mut last: Vec<Option<(Day, f64)>> = vec![None; dataset.companies.len()];
    let sectors = Sector::ALL.len();
    let (mut rise, mut years) = (vec![0.0; sectors], vec![0.0; sectors]);
    let mut timeline = StepTimeline::new([0.0; Sector::ALL.len()]);
    let mut index = 0;
    let mut last_change: Option<Day> = None;
    while index < observations.len() {
        let day = observations[index].0;
        if let Some(previous) = last_change {
            let elapsed = f64::from(day.days_since(previous)) / DAYS_PER_YEAR;
            let keep = (-elapsed / params.growth_memory_half_life_years).exp2();
            rise.iter_mut().chain(years.iter_mut()).for_each(|v| *v *= keep);
        }
        last_change = Some(day);
        let mut changed = false;
        while index < observations.len() && observations[index].0 == day {
            let (_, company, log_value) = observations[index];
            if let Some((previous_day, previous_log)) = last[company] {
                if day > previous_day {
                    let sector = dataset.companies[company].sector.index();
                    rise[sector] += log_value - previous_log;
                    years[sector] += f64::from(day.days_since(previous_day)) / DAYS_PER_YEAR;
                    changed = true;
                }
            }
            last[company] = Some((day, log_value));
            index += 1;
        }
        if changed {
            let pooled = rise.iter().sum::<f64>() / (years.iter().sum::<f64>() + params.pooled_growth_pseudo_years);
            let k = params.sector_growth_pseudo_years;
            let mut rates = [0.0; Sector::ALL.len()];
            for (s, rate) in rates.iter_mut().enumerate() {
                *rate = (rise[s] + k * pooled) / (years[s] + k);
            }
            // Known from the day after the pair completed: causal for everyone.
            timeline.push(day.plus(1), rates);
        }
    }
    timeline
}

/// The two conformal quantiles in effect on a day, and how many residuals set them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Quantiles {
    pub q80: f64,
    pub q95: f64,
    pub n: usize,
}

impl Quantiles {
    pub const FALLBACK: Quantiles = Quantiles {
        q80: Z80,
        q95: Z95,
        n: 0,
    };

    pub fn get(&self, coverage: Coverage) -> f64 {
        match coverage {
            Coverage::C80 => self.q80,
            Coverage::C95 => self.q95,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    C80,
    C95,
}

impl Coverage {
    pub const ALL: [Coverage; 2] = [Coverage::C80, Coverage::C95];

    pub fn percent(self) -> u32 {
        match self {
            Coverage::C80 => 80,
            Coverage::C95 => 95,
        }
    }
}

/// The `ceil((n+1)c)`-th smallest of a growing multiset, in O(log n) per insertion.
#[derive(Debug)]
struct ConformalRank {
    percent: usize,
    low: BinaryHeap<OrderedF64>,
    high: BinaryHeap<Reverse<OrderedF64>>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct OrderedF64(f64);
impl Eq for OrderedF64 {}
impl PartialOrd for OrderedF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrderedF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl ConformalRank {
    fn new(percent: usize) -> ConformalRank {
        ConformalRank {
            percent,
            low: BinaryHeap::new(),
            high: BinaryHeap::new(),
        }
    }

    fn len(&self) -> usize {
        self.low.len() + self.high.len()
    }

    /// Integer arithmetic: (n+1)*0.8 in floating point can land a hair above a whole number.
    fn rank(&self) -> usize {
        ((self.len() + 1) * self.percent).div_ceil(100).min(self.len())
    }

    fn insert(&mut self, value: f64) {
        match self.low.peek() {
            Some(top) if value < top.0 => self.low.push(OrderedF64(value)),
            _ => self.high.push(Reverse(OrderedF64(value))),
        }
        let rank = self.rank();
        while self.low.len() > rank {
            if let Some(top) = self.low.pop() {
                self.high.push(Reverse(top));
            }
        }
        while self.low.len() < rank {
            match self.high.pop() {
                Some(Reverse(next)) => self.low.push(next),
                None => break,
            }
        }
    }

    fn quantile(&self) -> f64 {
        self.low.peek().map_or(f64::INFINITY, |v| v.0)
    }
}

/// The quantiles in effect on each day: from the residuals dated strictly before it, so no
/// residual is ever judged by a quantile it helped set.
pub type QuantileTimeline = StepTimeline<Quantiles>;

pub fn quantile_timeline(mut residuals: Vec<(Day, f64)>) -> QuantileTimeline {
    residuals.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut timeline = StepTimeline::new(Quantiles::FALLBACK);
    let (mut r80, mut r95) = (ConformalRank::new(80), ConformalRank::new(95));
    let mut index = 0;
    while index < residuals.len() {
        let day = residuals[index].0;
        while index < residuals.len() && residuals[index].0 == day {
            r80.insert(residuals[index].1.abs());
            r95.insert(residuals[index].1.abs());
            index += 1;
        }
        let n = r80.len();
        let quantiles = if n < MIN_CONFORMAL_RESIDUALS {
            Quantiles {
                n,
                ..Quantiles::FALLBACK
            }
        } else {
            Quantiles {
                q80: r80.quantile(),
                q95: r95.quantile(),
                n,
            }
        };
        timeline.push(day.plus(1), quantiles);
    }
    timeline
}

/// Standard normal CDF.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * (1.0 + libm::erf(z / std::f64::consts::SQRT_2))
}

/// The probability, under the model with its scale calibrated by the conformal 80% quantile,
/// that the true value lies within +/-10% of the mark.
pub fn confidence(level_sd: f64, quantiles: &Quantiles) -> f64 {
    let sd = level_sd * quantiles.q80 / Z80;
    if sd <= 0.0 {
        return 1.0;
    }
    let up = (1.0 + CONFIDENCE_TOLERANCE).ln() / sd;
    let down = (1.0 - CONFIDENCE_TOLERANCE).ln() / sd;
    (normal_cdf(up) - normal_cdf(down)).clamp(0.0, 1.0)
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

/// The three forecasters of the scorecard, in the order they are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forecaster {
    Model,
    LastEvent,
    WeightedStep,
}

impl Forecaster {
    pub const ALL: [Forecaster; 3] = [Forecaster::Model, Forecaster::LastEvent, Forecaster::WeightedStep];

    pub fn name(self) -> &'static str {
        match self {
            Forecaster::Model => "local_linear_trend",
            Forecaster::LastEvent => "last_event_carried_forward",
            Forecaster::WeightedStep => "quality_weighted_step",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Forecaster::Model => "this methodology: Kalman-filtered local linear trend in log value, conformal bands",
            Forecaster::LastEvent => "baseline (a): the last observed valuation, carried forward",
            Forecaster::WeightedStep => {
                "baseline (b): quality-weighted average of past events, weight by type x 0.5^(age/90 days)"
            }
        }
    }
}

/// The one-step-ahead forecasts made before an observation, by every forecaster.
#[derive(Clone, Copy, Debug)]
pub struct Prediction {
    /// Index into the company's `events`.
    pub event: usize,
    pub day: Day,
    pub observed_log: f64,
    pub forecasts: [Forecast; 3],
}

/// Baseline state: the last observation and the decayed quality-weighted sums of baseline (b).
#[derive(Clone, Copy, Debug, Default)]
struct Baselines {
    last_value: f64,
    anchor: Option<Day>,
    weight_sum: f64,
    weighted_value_sum: f64,
}

impl Baselines {
    fn observe(&mut self, day: Day, value: f64, quality: f64) {
        self.last_value = value;
        let anchor = *self.anchor.get_or_insert(day);
        // Weights relative to a fixed anchor: the common decay factor of a later day cancels
        // in the ratio, which is why baseline (b) is a step mark.
        let weight = quality * (f64::from(day.days_since(anchor)) / STEP_BASELINE_HALF_LIFE_DAYS).exp2();
        self.weight_sum += weight;
        self.weighted_value_sum += weight * value;
    }

    fn forecasts(&self) -> [Forecast; 2] {
        let step = if self.weight_sum > 0.0 {
            self.weighted_value_sum / self.weight_sum
        } else {
            self.last_value
        };
        [
            Forecast {
                log_value: self.last_value.ln(),
                scale: 1.0,
            },
            Forecast {
                log_value: step.ln(),
                scale: 1.0,
            },
        ]
    }
}

/// How much one observation moves the current mark: d ln(mark) / d ln(valuation), with the
/// sector's pooled growth held fixed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObservationWeight {
    pub event: usize,
    /// Kalman gain on the level when the event arrived.
    pub gain: f64,
    /// Its weight in the latest mark.
    pub weight: f64,
}

/// Where a company's walk ended: the last marked day, and the state and forecasts there.
#[derive(Clone, Copy, Debug)]
pub struct WalkEnd {
    pub day: Day,
    pub state: TrendState,
    pub forecasts: [Forecast; 3],
}

/// Runs the filter over one company, day by day from its first observation to `as_of` (or the
/// day before its listing), calling `on_prediction` before each observation after the first
/// and `on_day` once per marked day after that day's updates.
pub fn walk(
    company: &Company,
    params: &Params,
    growth: &GrowthTimeline,
    as_of: Day,
    mut on_prediction: impl FnMut(&Prediction),
    mut on_day: impl FnMut(Day, &TrendState),
    weights: Option<&mut Vec<ObservationWeight>>,
) -> Option<WalkEnd> {
    let end = company.listing().map_or(as_of, |l| l.occurred_on.plus(-1));
    let dynamics = Dynamics::daily(params, company.sector);
    let sector = company.sector.index();
    let mut growth_cursor = growth.cursor();
    let mut state: Option<TrendState> = None;
    let mut baselines = Baselines::default();
    let mut sensitivities: Vec<(usize, [f64; 2], f64)> = Vec::new();
    let mut pending_days = 0;
    let mut day = company.observations().next()?.occurred_on;
    let mut next_event = 0;
    let events = &company.events;
    loop {
        let sector_growth = growth_cursor.at(day)[sector];
        if let Some(state) = state.as_mut() {
            state.predict(&dynamics, sector_growth);
            pending_days += 1;
        }
        while next_event < events.len() && events[next_event].occurred_on <= day {
            let event = &events[next_event];
            let index = next_event;
            next_event += 1;
            let Some(noise) = params.noise(event.event_type) else {
                continue;
            };
            let value = event.valuation_usd as f64;
            let observed_log = value.ln();
            let current = match state.as_mut() {
                None => {
                    state = Some(TrendState::start(observed_log, noise, sector_growth, params));
                    if weights.is_some() {
                        sensitivities.push((index, [1.0, 0.0], 1.0));
                    }
                    baselines.observe(day, value, params.step_weight(event.event_type));
                    continue;
                }
                Some(current) => current,
            };
            let [last, step] = baselines.forecasts();
            let model = Forecast {
                log_value: current.level,
                scale: (current.cov[0][0] + noise * noise).sqrt(),
            };
            on_prediction(&Prediction {
                event: index,
                day,
                observed_log,
                forecasts: [model, last, step],
            });
            let update = current.update(observed_log, noise);
            if weights.is_some() {
                carry_sensitivities(&mut sensitivities, &dynamics, &mut pending_days);
                for (_, j, _) in sensitivities.iter_mut() {
                    let j0 = j[0];
                    *j = [j0 - update.gain[0] * j0, j[1] - update.gain[1] * j0];
                }
                sensitivities.push((index, update.gain, update.gain[0]));
            }
            baselines.observe(day, value, params.step_weight(event.event_type));
        }
        if let Some(state) = state.as_ref() {
            on_day(day, state);
        }
        if day >= end {
            break;
        }
        day = day.plus(1);
    }
    let state = state?;
    if let Some(weights) = weights {
        carry_sensitivities(&mut sensitivities, &dynamics, &mut pending_days);
        weights.extend(sensitivities.iter().map(|&(event, j, gain)| ObservationWeight {
            event,
            gain,
            weight: j[0],
        }));
    }
    let [last, step] = baselines.forecasts();
    Some(WalkEnd {
        day: end,
        state,
        forecasts: [
            Forecast {
                log_value: state.level,
                scale: state.level_sd(),
            },
            last,
            step,
        ],
    })
}

/// Applies the days of transition since the last sync to every sensitivity at once.
fn carry_sensitivities(sensitivities: &mut [(usize, [f64; 2], f64)], dynamics: &Dynamics, pending_days: &mut i32) {
    if *pending_days == 0 {
        return;
    }
    let (absorb, decay) = dynamics.over(*pending_days);
    for (_, j, _) in sensitivities.iter_mut() {
        *j = [j[0] + absorb * j[1], decay * j[1]];
    }
    *pending_days = 0;
}

/// One day of a company's marks, in USD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkDay {
    pub day: Day,
    pub mark: f64,
    pub band80: (f64, f64),
    pub band95: (f64, f64),
    pub level_sd: f64,
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
        confidence(self.level_sd, &self.quantiles)
    }
}

/// Everything published about one company's marks.
#[derive(Clone, Debug)]
pub struct CompanyMarks {
    pub series: Vec<MarkDay>,
    pub delta_30d_pct: Option<f64>,
    pub observations: Vec<ObservationWeight>,
}

impl CompanyMarks {
    pub fn latest(&self) -> Option<&MarkDay> {
        self.series.last()
    }
}

pub fn mark_day(day: Day, state: &TrendState, quantiles: Quantiles) -> MarkDay {
    let sd = state.level_sd();
    let mark = state.level.exp();
    // exp(x +/- q sd) = mark * e^(+/- q sd): one exp per band instead of two (the builder
    // evaluates this tens of millions of times).
    let band = |q: f64| {
        let spread = (q * sd).exp();
        (mark / spread, mark * spread)
    };
    MarkDay {
        day,
        mark,
        band80: band(quantiles.q80),
        band95: band(quantiles.q95),
        level_sd: sd,
        quantiles,
    }
}

/// The fitted method: pooled timelines and the scorecard, from one pass over every company.
#[derive(Debug)]
pub struct Fit {
    pub params: Params,
    pub as_of: Day,
    pub growth: GrowthTimeline,
    /// Quantiles of each forecaster, in `Forecaster::ALL` order.
    pub quantiles: [QuantileTimeline; 3],
    pub scorecard: Scorecard,
}

impl Fit {
    pub fn new(dataset: &Dataset, params: Params) -> Fit {
        let as_of = dataset.info.as_of;
        let growth = growth_timeline(dataset, &params);
        let walks: Vec<(Vec<Prediction>, Option<WalkEnd>)> = dataset
            .companies
            .par_iter()
            .map(|company| {
                let mut predictions = Vec::new();
                let end = walk(
                    company,
                    &params,
                    &growth,
                    as_of,
                    |p| predictions.push(*p),
                    |_, _| {},
                    None,
                );
                (predictions, end)
            })
            .collect();
        let quantiles = Forecaster::ALL.map(|f| {
            let index = f as usize;
            quantile_timeline(
                walks
                    .iter()
                    .flat_map(|(predictions, _)| predictions.iter())
                    .map(|p| (p.day, p.forecasts[index].residual(p.observed_log)))
                    .collect(),
            )
        });
        let scorecard = Scorecard::new(dataset, &walks, &quantiles);
        Fit {
            params,
            as_of,
            growth,
            quantiles,
            scorecard,
        }
    }

    /// The published marks of one company: its daily series, 30-day change and the weights of
    /// the observations behind its latest mark.
    pub fn marks(&self, company: &Company) -> CompanyMarks {
        let model_quantiles = &self.quantiles[Forecaster::Model as usize];
        let mut quantile_cursor = model_quantiles.cursor();
        let mut series = Vec::new();
        let mut observations = Vec::new();
        walk(
            company,
            &self.params,
            &self.growth,
            self.as_of,
            |_| {},
            |day, state| series.push(mark_day(day, state, *quantile_cursor.at(day))),
            Some(&mut observations),
        );
        // The points are consecutive days, so the one 30 days back is 30 positions back.
        let delta_30d_pct = (series.len() > 30).then(|| {
            let (now, then) = (series[series.len() - 1].mark, series[series.len() - 31].mark);
            round_to((now / then - 1.0) * 100.0, 2)
        });
        CompanyMarks {
            series,
            delta_30d_pct,
            observations,
        }
    }
}

pub fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// Whole US dollars, as every amount is published.
pub fn usd(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value.round().min(9.0e18) as u64
    } else {
        0
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Band {
    pub lower: u64,
    pub upper: u64,
}

impl Band {
    pub fn of((lower, upper): (f64, f64)) -> Band {
        Band {
            lower: usd(lower),
            upper: usd(upper),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CoverageScore {
    pub nominal_pct: u32,
    pub observed_pct: Option<f64>,
    pub inside: usize,
    pub n: usize,
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
    pub description: &'static str,
    pub n: usize,
    pub mape_pct: Option<f64>,
    pub median_abs_log_error: Option<f64>,
    pub coverage_80: CoverageScore,
    pub coverage_95: CoverageScore,
    /// Median width of the predictive band at the scored events, in percent of the forecast.
    pub median_band_width_80_pct: Option<f64>,
    pub median_band_width_95_pct: Option<f64>,
    pub listings: ListingScore,
    pub misses_total: usize,
    pub misses: Vec<Miss>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ListingEstimate {
    pub forecaster: &'static str,
    pub mark_usd: u64,
    pub error_pct: f64,
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
    pub estimates: Vec<ListingEstimate>,
}

/// The walk-forward backtest, side by side for the model and both baselines.
#[derive(Clone, Debug, Serialize)]
pub struct Scorecard {
    pub forecasters: Vec<ForecasterScore>,
    pub listing_validations: Vec<ListingValidation>,
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

fn percent_of(inside: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| round_to(inside as f64 * 100.0 / n as f64, 1))
}

impl Scorecard {
    fn new(
        dataset: &Dataset,
        walks: &[(Vec<Prediction>, Option<WalkEnd>)],
        quantiles: &[QuantileTimeline; 3],
    ) -> Scorecard {
        let mut listing_validations = Vec::new();
        for (company, (_, end)) in dataset.companies.iter().zip(walks) {
            let (Some(listing), Some(end)) = (company.listing(), end) else {
                continue;
            };
            let listed = listing.valuation_usd as f64;
            let estimates = Forecaster::ALL
                .iter()
                .map(|&f| {
                    let forecast = end.forecasts[f as usize];
                    let q = quantiles[f as usize].at(end.day);
                    let (b80, b95) = (forecast.band(q.q80), forecast.band(q.q95));
                    let mark = forecast.log_value.exp();
                    ListingEstimate {
                        forecaster: f.name(),
                        mark_usd: usd(mark),
                        error_pct: round_to((mark / listed - 1.0) * 100.0, 1),
                        band_80: Band::of(b80),
                        band_95: Band::of(b95),
                        inside_80: b80.0 <= listed && listed <= b80.1,
                        inside_95: b95.0 <= listed && listed <= b95.1,
                    }
                })
                .collect();
            listing_validations.push(ListingValidation {
                slug: company.slug.clone(),
                event_id: listing.event_id.clone(),
                event_type: listing.event_type,
                listed_on: listing.occurred_on,
                listing_value_usd: listing.valuation_usd,
                marked_on: end.day,
                estimates,
            });
        }
        let forecasters = Forecaster::ALL
            .iter()
            .map(|&f| Self::score(f, dataset, walks, &quantiles[f as usize], &listing_validations))
            .collect();
        Scorecard {
            forecasters,
            listing_validations,
        }
    }

    fn score(
        forecaster: Forecaster,
        dataset: &Dataset,
        walks: &[(Vec<Prediction>, Option<WalkEnd>)],
        quantiles: &QuantileTimeline,
        listings: &[ListingValidation],
    ) -> ForecasterScore {
        let index = forecaster as usize;
        let (mut ape, mut abs_log, mut width80, mut width95) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut inside80, mut inside95) = (0, 0);
        let mut misses = Vec::new();
        let mut misses_total = 0;
        for (company, (predictions, _)) in dataset.companies.iter().zip(walks) {
            for p in predictions {
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
                        let event = &company.events[p.event];
                        misses.push(Miss {
                            slug: company.slug.clone(),
                            event_id: event.event_id.clone(),
                            event_type: event.event_type,
                            occurred_on: event.occurred_on,
                            valuation_usd: event.valuation_usd,
                            predicted_usd: usd(predicted),
                            band_95: Band::of(b95),
                        });
                    }
                }
            }
        }
        let n = ape.len();
        let estimates: Vec<&ListingEstimate> = listings
            .iter()
            .filter_map(|l| l.estimates.iter().find(|e| e.forecaster == forecaster.name()))
            .collect();
        let listing_n = estimates.len();
        ForecasterScore {
            name: forecaster.name(),
            description: forecaster.description(),
            n,
            mape_pct: (n > 0).then(|| round_to(ape.iter().sum::<f64>() / n as f64 * 100.0, 1)),
            median_abs_log_error: median(abs_log).map(|m| round_to(m, 3)),
            coverage_80: CoverageScore {
                nominal_pct: 80,
                observed_pct: percent_of(inside80, n),
                inside: inside80,
                n,
            },
            coverage_95: CoverageScore {
                nominal_pct: 95,
                observed_pct: percent_of(inside95, n),
                inside: inside95,
                n,
            },
            median_band_width_80_pct: median(width80).map(|m| round_to(m, 1)),
            median_band_width_95_pct: median(width95).map(|m| round_to(m, 1)),
            listings: ListingScore {
                n: listing_n,
                mean_abs_error_pct: (listing_n > 0).then(|| {
                    round_to(
                        estimates.iter().map(|e| e.error_pct.abs()).sum::<f64>() / listing_n as f64,
                        1,
                    )
                }),
                inside_80: estimates.iter().filter(|e| e.inside_80).count(),
                inside_95: estimates.iter().filter(|e| e.inside_95).count(),
            },
            misses_total,
            misses,
        }
    }

    /// The scorecard as the builder prints it: one row per forecaster, then the listings.
    pub fn to_text(&self) -> String {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v}"));
        let mut out = String::new();
        out.push_str(&format!(
            "{:<28} {:>5} {:>8} {:>9} {:>12} {:>12} {:>9} {:>9} {:>10} {:>7}\n",
            "forecaster", "n", "MAPE%", "med|log|", "cov80%", "cov95%", "width80%", "width95%", "listMAE%", "misses"
        ));
        for f in &self.forecasters {
            out.push_str(&format!(
                "{:<28} {:>5} {:>8} {:>9} {:>12} {:>12} {:>9} {:>9} {:>10} {:>7}\n",
                f.name,
                f.n,
                opt(f.mape_pct),
                opt(f.median_abs_log_error),
                format!("{} ({}/{})", opt(f.coverage_80.observed_pct), f.coverage_80.inside, f.n),
                format!("{} ({}/{})", opt(f.coverage_95.observed_pct), f.coverage_95.inside, f.n),
                opt(f.median_band_width_80_pct),
                opt(f.median_band_width_95_pct),
                opt(f.listings.mean_abs_error_pct),
                f.misses_total,
            ));
        }
        if !self.listing_validations.is_empty() {
            out.push_str("\nlisting validations (mark the day before vs listing value; error %, inside 80/95):\n");
            for l in &self.listing_validations {
                out.push_str(&format!("  {:<20} {} {:>16}", l.slug, l.listed_on, l.listing_value_usd));
                for e in &l.estimates {
                    out.push_str(&format!(
                        "  {:>+7.1}% {}{}",
                        e.error_pct,
                        if e.inside_80 { '8' } else { '.' },
                        if e.inside_95 { '9' } else { '.' }
                    ));
                }
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformal_rank_is_the_ceil_n_plus_one_c_th_smallest() {
        let mut rank = ConformalRank::new(80);
        let values: Vec<f64> = (1..=24).rev().map(f64::from).collect();
        for v in &values {
            rank.insert(*v);
        }
        // n = 24: ceil(25 * 0.8) = 20 -> the 20th smallest of 1..=24 is 20.
        assert_eq!(rank.quantile(), 20.0);
        let mut rank = ConformalRank::new(95);
        for v in &values {
            rank.insert(*v);
        }
        // ceil(25 * 0.95) = ceil(23.75) = 24.
        assert_eq!(rank.quantile(), 24.0);
    }

    #[test]
    fn quantiles_use_only_earlier_days() {
        let day = |d| Day(2_460_000 + d);
        let residuals: Vec<(Day, f64)> = (0..30).map(|i| (day(i), f64::from(i))).collect();
        let timeline = quantile_timeline(residuals);
        assert_eq!(timeline.at(day(0)).n, 0);
        assert_eq!(
            *timeline.at(day(5)),
            Quantiles {
                n: 5,
                ..Quantiles::FALLBACK
            }
        );
        // Residuals 0..=19 are before day 20: ceil(21*0.8)=17th smallest = 16.
        let q = timeline.at(day(20));
        assert_eq!((q.n, q.q80, q.q95), (20, 16.0, 19.0));
        let mut cursor = timeline.cursor();
        assert_eq!(cursor.at(day(20)), q);
        assert_eq!(cursor.at(day(25)), timeline.at(day(25)));
    }

    #[test]
    fn confidence_matches_the_normal_probability() {
        // With no calibration data the scale is the model's own: P(|z| < ln(1.1)/0.05...).
        let sd = 0.05;
        let expected = normal_cdf(1.1f64.ln() / sd) - normal_cdf(0.9f64.ln() / sd);
        assert!((confidence(sd, &Quantiles::FALLBACK) - expected).abs() < 1e-12);
        assert!((normal_cdf(Z95) - 0.975).abs() < 1e-9);
    }
}
