//! The method's point forecast and scale, "gap-profile drift" (docs/design.md section 3): v0.3.0's,
//! and v0.4.0's, which is the same but after an agreed sale.
//!
//! A mark is the company's last observed value plus a drift that depends only on the years
//! since that observation: `x(t) = ln v_last + mu(D)`. From v0.4.0, when that observation is an
//! `acquisition` (an agreed sale), the agreed price holds: `mu = 0`, while the scale still
//! widens with D, because agreed deals can fail (a later event resumes the usual rule). The profile `mu(D)` is learnt, causally
//! and pooled over every company, from pairs of consecutive observations: each pair's log
//! change counts in the bucket of its gap, weighted down with its age, and each bucket's drift
//! is shrunk towards 0. The drift does not grow with the gap beyond what past pairs show;
//! the uncertainty does: `sigma = S0 sqrt(C + D)`.
//!
//! This module never reads listings or bankruptcies: they are outcomes.

use crate::dataset::{Company, Dataset, EventType};
use crate::methodology::params::{GapProfileParams, BUCKETS};
use crate::methodology::DAYS_PER_YEAR;
use marks_format::day::Day;

/// Two consecutive observations (a, b) of one company on different days.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// Indices of a and b in the company's `events`.
    pub first: usize,
    pub second: usize,
    /// Day of b: the pair counts in pooled drifts from the next day on.
    pub completed: Day,
    pub gap_years: f64,
    /// ln v_b - ln v_a.
    pub log_change: f64,
    pub bucket: usize,
}

/// The gap bucket of a pair: 0 below the first edge, ..., 3 from the last edge on.
pub fn bucket(gap_years: f64, edges: &[f64; BUCKETS - 1]) -> usize {
    edges.iter().filter(|&&edge| gap_years >= edge).count()
}

pub fn years_between(later: Day, earlier: Day) -> f64 {
    f64::from(later.days_since(earlier)) / DAYS_PER_YEAR
}

/// A company's pairs, in date order. Observations of one day are not a pair: a same-day
/// second report says nothing about change over time.
pub fn pairs(company: &Company, params: &GapProfileParams) -> Vec<Pair> {
    let observations: Vec<(usize, Day, f64)> = company
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.event_type.is_terminal())
        .map(|(i, e)| (i, e.occurred_on, (e.valuation_usd as f64).ln()))
        .collect();
    observations
        .windows(2)
        .filter_map(|window| {
            let [(first, day_a, log_a), (second, day_b, log_b)] = window else {
                return None;
            };
            (day_b > day_a).then(|| {
                let gap_years = years_between(*day_b, *day_a);
                Pair {
                    first: *first,
                    second: *second,
                    completed: *day_b,
                    gap_years,
                    log_change: log_b - log_a,
                    bucket: bucket(gap_years, &params.gap_bucket_edges_years),
                }
            })
        })
        .collect()
}

/// The pooled sums of one day, per bucket: the age-weighted sum of log changes and of weights,
/// over the pairs completed strictly before the day.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Drifts {
    pub weighted_change: [f64; BUCKETS],
    pub weight: [f64; BUCKETS],
}

impl Drifts {
    /// `mu_b = sum w r / (sum w + K)`: each bucket shrunk towards 0 on its own.
    pub fn bucket_drifts(&self, params: &GapProfileParams) -> [f64; BUCKETS] {
        std::array::from_fn(|b| self.weighted_change[b] / (self.weight[b] + params.drift_pseudo_pairs))
    }

    fn scaled(&self, factor: f64) -> Drifts {
        Drifts {
            weighted_change: self.weighted_change.map(|v| v * factor),
            weight: self.weight.map(|v| v * factor),
        }
    }
}

/// The pooled drift sums in force on every day from the first day a pair counts to the last
/// day marked, computed once per dataset in one pass over the days.
#[derive(Clone, Debug)]
pub struct DriftTable {
    first_day: Day,
    days: Vec<Drifts>,
    /// Per day of age, a pair's weight is multiplied by this: 2^(-1 / (365.25 H)).
    log2_decay_per_day: f64,
}

impl DriftTable {
    /// Every company's pairs, pooled, through `last_day`.
    pub fn new(dataset: &Dataset, params: &GapProfileParams, last_day: Day) -> DriftTable {
        let pairs: Vec<Pair> = dataset.companies.iter().flat_map(|c| pairs(c, params)).collect();
        DriftTable::from_pairs(&pairs, params, last_day)
    }

    pub fn from_pairs(pairs: &[Pair], params: &GapProfileParams, last_day: Day) -> DriftTable {
        let log2_decay_per_day = -1.0 / (DAYS_PER_YEAR * params.drift_half_life_years);
        let mut sorted: Vec<&Pair> = pairs.iter().collect();
        sorted.sort_by_key(|p| p.completed);
        let Some(first) = sorted.first() else {
            return DriftTable {
                first_day: last_day.plus(1),
                days: Vec::new(),
                log2_decay_per_day,
            };
        };
        let first_day = first.completed.plus(1);
        // Sums are kept relative to an anchor day (weight 2^((completed - anchor) rate)) and
        // scaled to each day with one exp2, so no error accumulates from day to day; the anchor
        // moves forward before the factors could overflow.
        let mut anchor = first.completed;
        let mut anchored = Drifts::default();
        let mut next = 0;
        let mut days = Vec::with_capacity(usize::try_from(last_day.days_since(first_day) + 1).unwrap_or(0));
        let mut day = first_day;
        while day <= last_day {
            while next < sorted.len() && sorted[next].completed < day {
                let pair = sorted[next];
                // 2^(+age of the anchor at completion): times the day's factor, 2^(-age on day).
                let weight = (-f64::from(pair.completed.days_since(anchor)) * log2_decay_per_day).exp2();
                anchored.weighted_change[pair.bucket] += weight * pair.log_change;
                anchored.weight[pair.bucket] += weight;
                next += 1;
            }
            let factor = (f64::from(day.days_since(anchor)) * log2_decay_per_day).exp2();
            let today = anchored.scaled(factor);
            days.push(today);
            if factor < 1e-100 {
                anchored = today;
                anchor = day;
            }
            day = day.plus(1);
        }
        DriftTable {
            first_day,
            days,
            log2_decay_per_day,
        }
    }

    /// The sums in force on `day`: nothing before the first pair completes; after the last
    /// tabled day, the last day's sums aged (no later pair is known).
    pub fn at(&self, day: Day) -> Drifts {
        let offset = day.days_since(self.first_day);
        if offset < 0 {
            return Drifts::default();
        }
        match self.days.get(offset as usize) {
            Some(drifts) => *drifts,
            None => match self.days.last() {
                Some(last) => {
                    let beyond = offset - (self.days.len() as i32 - 1);
                    last.scaled((f64::from(beyond) * self.log2_decay_per_day).exp2())
                }
                None => Drifts::default(),
            },
        }
    }

    /// The weight on `day` of a pair completed on `completed` (before `day`).
    pub fn pair_weight(&self, completed: Day, day: Day) -> f64 {
        (f64::from(day.days_since(completed)) * self.log2_decay_per_day).exp2()
    }
}

/// The coefficients c_b with `mu(D) = sum c_b mu_b`: linear interpolation through (0, 0) and
/// (knot_b, mu_b), flat after the last knot.
pub fn profile_coefficients(gap_years: f64, knots: &[f64; BUCKETS]) -> [f64; BUCKETS] {
    let mut coefficients = [0.0; BUCKETS];
    if gap_years <= 0.0 {
        return coefficients;
    }
    if gap_years >= knots[BUCKETS - 1] {
        coefficients[BUCKETS - 1] = 1.0;
        return coefficients;
    }
    let upper = knots.iter().position(|&k| gap_years < k).unwrap_or(BUCKETS - 1);
    let (left, right) = (if upper == 0 { 0.0 } else { knots[upper - 1] }, knots[upper]);
    let share = (gap_years - left) / (right - left);
    coefficients[upper] = share;
    if upper > 0 {
        coefficients[upper - 1] = 1.0 - share;
    }
    coefficients
}

/// The drift profile at a gap: `mu(D)`.
pub fn profile(gap_years: f64, bucket_drifts: &[f64; BUCKETS], knots: &[f64; BUCKETS]) -> f64 {
    let c = profile_coefficients(gap_years, knots);
    c.iter().zip(bucket_drifts).map(|(c, mu)| c * mu).sum()
}

/// The scale of a forecast made `gap_years` after the last observation: `S0 sqrt(C + D)`.
pub fn scale(gap_years: f64, params: &GapProfileParams) -> f64 {
    params.scale_per_sqrt_year * (params.scale_offset_years + gap_years).sqrt()
}

/// Which version of the point forecast: they differ only after an agreed sale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointRule {
    /// v0.3.0: the drift applies after every kind of observation.
    DriftAlways,
    /// v0.4.0: no drift after an agreed acquisition.
    HoldAgreedSale,
}

/// The observation a forecast starts from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LastObservation {
    pub day: Day,
    pub log_value: f64,
    pub event_type: EventType,
}

/// A gap-profile forecast in log space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GapForecast {
    pub log_value: f64,
    pub scale: f64,
    pub gap_years: f64,
}

/// The forecast on `day` from the last observation and the pooled sums in force that day.
pub fn forecast(
    last: &LastObservation,
    day: Day,
    drifts: &Drifts,
    params: &GapProfileParams,
    rule: PointRule,
) -> GapForecast {
    let gap_years = years_between(day, last.day);
    let holds = rule == PointRule::HoldAgreedSale && last.event_type == EventType::Acquisition;
    let mu = if holds {
        0.0
    } else {
        profile(gap_years, &drifts.bucket_drifts(params), &params.profile_knots_years)
    };
    GapForecast {
        log_value: last.log_value + mu,
        scale: scale(gap_years, params),
        gap_years,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_at_half_one_and_two_years() {
        let edges = GapProfileParams::default().gap_bucket_edges_years;
        let cases = [
            (0.0, 0),
            (0.49, 0),
            (0.5, 1),
            (0.99, 1),
            (1.0, 2),
            (1.99, 2),
            (2.0, 3),
            (9.0, 3),
        ];
        for (gap, expected) in cases {
            assert_eq!(bucket(gap, &edges), expected, "gap {gap}");
        }
    }

    #[test]
    fn profile_interpolates_through_the_knots_and_is_flat_after_three_years() {
        let knots = GapProfileParams::default().profile_knots_years;
        let mu = [0.4, 0.6, 1.0, 0.2];
        // Worked by hand from the knots (0, 0), (0.25, 0.4), (0.75, 0.6), (1.5, 1.0), (3, 0.2).
        let cases = [
            (0.0, 0.0),
            (0.125, 0.2),
            (0.25, 0.4),
            (0.5, 0.5),
            (0.75, 0.6),
            (1.125, 0.8),
            (2.25, 0.6),
            (3.0, 0.2),
            (7.0, 0.2),
        ];
        for (gap, expected) in cases {
            let got = profile(gap, &mu, &knots);
            assert!((got - expected).abs() < 1e-12, "mu({gap}) = {got}, expected {expected}");
        }
    }

    #[test]
    fn a_pair_counts_from_the_day_after_it_completes_and_halves_each_half_life() {
        let params = GapProfileParams::default();
        let day = Day(2_460_000);
        let pair = Pair {
            first: 0,
            second: 1,
            completed: day,
            gap_years: 0.3,
            log_change: 0.8,
            bucket: 0,
        };
        let table = DriftTable::from_pairs(&[pair], &params, day.plus(2000));
        assert_eq!(table.at(day), Drifts::default(), "not on the day it completes");
        // 365.25 days is not a whole number of days, but 1461 days are 4 years: weight 1/16.
        let four_years = table.at(day.plus(1461));
        assert!((four_years.weight[0] - 1.0 / 16.0).abs() < 1e-14);
        let mu = four_years.bucket_drifts(&params)[0];
        assert!((mu - (0.8 / 16.0) / (1.0 / 16.0 + 3.0)).abs() < 1e-14);
        // Past the table: aged, not frozen.
        let beyond = table.at(day.plus(2000 + 1461));
        assert!((beyond.weight[0] / table.at(day.plus(2000)).weight[0] - 1.0 / 16.0).abs() < 1e-12);
    }
}
