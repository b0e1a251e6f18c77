//! Split-conformal intervals: the quantiles of a forecaster's own normalised walk-forward
//! errors, so the coverage a band states is the coverage it has had. Also `confidence`.
//!
//! A residual dated d sets quantiles only from day d + 1 on: no residual is ever judged by a
//! quantile it helped set.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

use crate::methodology::timeline::StepTimeline;
use marks_format::day::Day;

/// Standard normal quantiles used until enough residuals exist to calibrate.
pub const Z80: f64 = 1.281_551_565_544_600_4;
pub const Z95: f64 = 1.959_963_984_540_054;
/// Fewer pooled residuals than this and the bands fall back to the normal quantiles.
pub const MIN_CONFORMAL_RESIDUALS: usize = 20;
/// `confidence` is the probability that the true value is within this fraction of the mark.
pub const CONFIDENCE_TOLERANCE: f64 = 0.10;

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

/// The rank of the conformal quantile among n sorted residuals: the `ceil((n+1)c)`-th smallest,
/// at most the n-th. Integer arithmetic: (n+1)*0.8 in floating point can land a hair above a
/// whole number and pick the next residual.
pub fn conformal_rank(n: usize, percent: usize) -> usize {
    ((n + 1) * percent).div_ceil(100).min(n)
}

/// The `ceil((n+1)c)`-th smallest of a growing multiset, in O(log n) per insertion.
#[derive(Debug)]
pub struct ConformalRank {
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
    pub fn new(percent: usize) -> ConformalRank {
        ConformalRank {
            percent,
            low: BinaryHeap::new(),
            high: BinaryHeap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.low.len() + self.high.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn insert(&mut self, value: f64) {
        match self.low.peek() {
            Some(top) if value < top.0 => self.low.push(OrderedF64(value)),
            _ => self.high.push(Reverse(OrderedF64(value))),
        }
        let rank = conformal_rank(self.len(), self.percent);
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

    /// The current quantile: the largest of the `rank` smallest values.
    pub fn quantile(&self) -> f64 {
        self.low.peek().map_or(f64::INFINITY, |v| v.0)
    }
}

/// The quantiles in effect on each day, from the absolute residuals dated strictly before it,
/// all companies pooled.
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

/// The probability, under a normal model whose scale is calibrated by the conformal 80%
/// quantile (`scale * q80 / 1.2816`), that the true value lies within +/-10% of the mark. A
/// zero scale is a known value: confidence 1.
pub fn confidence(scale: f64, quantiles: &Quantiles) -> f64 {
    let sd = scale * quantiles.q80 / Z80;
    if sd <= 0.0 || !sd.is_finite() {
        return if sd.is_finite() { 1.0 } else { 0.0 };
    }
    let up = (1.0 + CONFIDENCE_TOLERANCE).ln() / sd;
    let down = (1.0 - CONFIDENCE_TOLERANCE).ln() / sd;
    (normal_cdf(up) - normal_cdf(down)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformal_rank_is_the_ceil_n_plus_one_c_th_smallest() {
        // Worked by hand: n = 24, ceil(25 * 0.8) = 20; ceil(25 * 0.95) = ceil(23.75) = 24.
        assert_eq!(conformal_rank(24, 80), 20);
        assert_eq!(conformal_rank(24, 95), 24);
        // n = 20: ceil(21 * 0.8) = ceil(16.8) = 17; ceil(21 * 0.95) = ceil(19.95) = 20.
        assert_eq!(conformal_rank(20, 80), 17);
        assert_eq!(conformal_rank(20, 95), 20);
        // (n+1)c whole: n = 39, 40 * 0.8 = 32 exactly, the 32nd (floating point gives 32.000...04).
        assert_eq!(conformal_rank(39, 80), 32);
        // Never past the largest.
        assert_eq!(conformal_rank(5, 95), 5);
        let values: Vec<f64> = (1..=24).rev().map(f64::from).collect();
        for (percent, expected) in [(80, 20.0), (95, 24.0)] {
            let mut rank = ConformalRank::new(percent);
            for v in &values {
                rank.insert(*v);
            }
            assert_eq!(rank.quantile(), expected);
        }
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
        // Residuals 0..=19 are before day 20: the 17th smallest is 16, the 20th is 19.
        let q = timeline.at(day(20));
        assert_eq!((q.n, q.q80, q.q95), (20, 16.0, 19.0));
        let mut cursor = timeline.cursor();
        assert_eq!(cursor.at(day(20)), q);
        assert_eq!(cursor.at(day(25)), timeline.at(day(25)));
    }

    #[test]
    fn confidence_matches_the_normal_probability() {
        let sd = 0.05;
        let expected = normal_cdf(1.1f64.ln() / sd) - normal_cdf(0.9f64.ln() / sd);
        assert!((confidence(sd, &Quantiles::FALLBACK) - expected).abs() < 1e-12);
        assert!((normal_cdf(Z95) - 0.975).abs() < 1e-9);
        assert_eq!(confidence(0.0, &Quantiles::FALLBACK), 1.0);
    }
}
