//! The two naive comparison forecasters every scorecard row is measured against: (a) the last
//! observed valuation carried forward, and (b) the public product's published recipe, a step
//! mark that is the quality-weighted average of past events, weight by type x
//! 0.5^(age / 90 days). Both get bands from the same conformal procedure as the method.

use serde::Serialize;

use crate::dataset::EventType;
use marks_format::day::Day;

/// Baseline (b)'s constants.
#[derive(Clone, Debug, Serialize)]
pub struct StepMarkParams {
    pub weight_round: f64,
    pub weight_tender: f64,
    pub weight_secondary: f64,
    pub weight_acquisition: f64,
    /// An event's weight halves every this many days.
    pub half_life_days: f64,
}

impl Default for StepMarkParams {
    fn default() -> StepMarkParams {
        StepMarkParams {
            weight_round: 0.90,
            weight_tender: 0.80,
            weight_secondary: 0.65,
            weight_acquisition: 0.90,
            half_life_days: 90.0,
        }
    }
}

impl StepMarkParams {
    pub fn weight(&self, event_type: EventType) -> f64 {
        match event_type {
            EventType::PrimaryRound | EventType::DownRound => self.weight_round,
            EventType::TenderOffer => self.weight_tender,
            EventType::SecondarySale => self.weight_secondary,
            EventType::Acquisition => self.weight_acquisition,
            EventType::Ipo | EventType::DirectListing | EventType::Bankruptcy => 0.0,
        }
    }
}

/// Both baselines' state for one company: the last observation and the decayed
/// quality-weighted sums of (b).
#[derive(Clone, Copy, Debug, Default)]
pub struct Baselines {
    last_value: f64,
    anchor: Option<Day>,
    weight_sum: f64,
    weighted_value_sum: f64,
}

impl Baselines {
    pub fn observe(&mut self, day: Day, value: f64, event_type: EventType, params: &StepMarkParams) {
        self.last_value = value;
        let anchor = *self.anchor.get_or_insert(day);
        // Weights relative to a fixed anchor: the common decay factor of a later day cancels
        // in the ratio, which is why baseline (b) is a step mark.
        let weight = params.weight(event_type) * (f64::from(day.days_since(anchor)) / params.half_life_days).exp2();
        self.weight_sum += weight;
        self.weighted_value_sum += weight * value;
    }

    /// (a) in log space.
    pub fn last_event(&self) -> f64 {
        self.last_value.ln()
    }

    /// (b) in log space.
    pub fn step_mark(&self) -> f64 {
        if self.weight_sum > 0.0 {
            (self.weighted_value_sum / self.weight_sum).ln()
        } else {
            self.last_value.ln()
        }
    }
}
