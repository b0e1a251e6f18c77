//! Methodology v0.2.0, kept as a comparison forecaster: a local linear trend in log value
//! (level `x = ln(value)` and growth `g` per year) run through a Kalman filter, with growth
//! mean-reverting towards its sector's pooled rate. It lost to "last event carried forward"
//! on the sample (docs/design.md section 3 says why); the scorecard keeps it so the comparison stays
//! visible. It publishes no marks.

use serde::Serialize;

use crate::dataset::{Dataset, EventType, Sector};
use crate::methodology::timeline::StepTimeline;
use crate::methodology::DAYS_PER_YEAR;
use marks_format::day::Day;

/// The v0.2.0 constants, tuned then by walk-forward error on observations.
#[derive(Clone, Debug, Serialize)]
pub struct LocalTrendParams {
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
    /// Half-life (years) of a rise's weight in the pooled growth rates.
    pub growth_memory_half_life_years: f64,
}

impl Default for LocalTrendParams {
    fn default() -> LocalTrendParams {
        LocalTrendParams {
            noise_primary_round: 0.10,
            noise_down_round: 0.10,
            noise_tender_offer: 0.15,
            noise_secondary_sale: 0.25,
            noise_acquisition: 0.10,
            // ai, fintech, space, enterprise-software, consumer, crypto, defense, healthcare,
            // mobility, gaming, developer-tools, other
            level_volatility: [0.65, 0.50, 0.50, 0.45, 0.45, 0.75, 0.50, 0.45, 0.50, 0.45, 0.60, 0.45],
            growth_reversion_per_year: 4.0,
            growth_volatility: 0.25,
            growth_prior_sd: 0.25,
            sector_growth_pseudo_years: 50.0,
            pooled_growth_pseudo_years: 20.0,
            growth_memory_half_life_years: 1.0,
        }
    }
}

impl LocalTrendParams {
    /// Observation noise of an event, or `None` for outcomes, which are never observed.
    pub fn noise(&self, event_type: EventType) -> Option<f64> {
        match event_type {
            EventType::PrimaryRound => Some(self.noise_primary_round),
            EventType::DownRound => Some(self.noise_down_round),
            EventType::TenderOffer => Some(self.noise_tender_offer),
            EventType::SecondarySale => Some(self.noise_secondary_sale),
            EventType::Acquisition => Some(self.noise_acquisition),
            EventType::Ipo | EventType::DirectListing | EventType::Bankruptcy => None,
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
}

impl Dynamics {
    pub fn daily(params: &LocalTrendParams, sector: Sector) -> Dynamics {
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
        }
    }
}

/// The filter state: level and growth with their covariance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrendState {
    pub level: f64,
    pub growth: f64,
    pub cov: [[f64; 2]; 2],
}

impl TrendState {
    pub fn start(observed_log: f64, noise: f64, sector_growth: f64, params: &LocalTrendParams) -> TrendState {
        TrendState {
            level: observed_log,
            growth: sector_growth,
            cov: [[noise * noise, 0.0], [0.0, params.growth_prior_sd.powi(2)]],
        }
    }

    /// One day of the transition.
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

    /// Takes in one observation; returns the Kalman gain on the level.
    pub fn update(&mut self, observed_log: f64, noise: f64) -> f64 {
        let [[p00, p01], [p10, p11]] = self.cov;
        let innovation_var = p00 + noise * noise;
        let gain = [p00 / innovation_var, p10 / innovation_var];
        let innovation = observed_log - self.level;
        self.level += gain[0] * innovation;
        self.growth += gain[1] * innovation;
        self.cov = [
            [p00 - gain[0] * p00, p01 - gain[0] * p01],
            [p10 - gain[1] * p00, p11 - gain[1] * p01],
        ];
        gain[0]
    }

    pub fn level_sd(&self) -> f64 {
        self.cov[0][0].max(0.0).sqrt()
    }
}

/// Each sector's pooled growth rate per year, estimated walk-forward from the log changes
/// between consecutive observations of every company in the sector that ended before the day.
pub type GrowthTimeline = StepTimeline<[f64; Sector::ALL.len()]>;

pub fn growth_timeline(dataset: &Dataset, params: &LocalTrendParams) -> GrowthTimeline {
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
