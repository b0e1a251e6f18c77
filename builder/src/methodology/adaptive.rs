//! Methodology v0.4.0's bands and confidence (docs/design.md section 3).
//!
//! - The 95% band is split-conformal, as in v0.3.0: the `ceil(0.95 (N + 1))`-th smallest of the
//!   N earlier |residuals|.
//! - The 80% band's level adapts to its own misses (adaptive conformal inference, Gibbs and
//!   Candès 2021, step gamma = 1/50): a residual is "conformal-era" when its own forecast had
//!   at least 20 earlier residuals, and it "missed" when it fell outside the 80% quantile
//!   published for it. With n conformal-era residuals before day t and m misses among them,
//!   `level80 = (200 - n + 5 m) / 250`, the `k80 = ceil((N + 1) level80)`-th smallest (in integer
//!   arithmetic, clipped to 1..N) sets `q80`, never above `q95`.
//! - `confidence` is the share of the N earlier residuals that, rescaled to today's scale, land
//!   within +/-10%: `#{j : ln 0.9 <= z_j sigma <= ln 1.1} / N`.
//! - With fewer than 20 residuals: the normal quantiles, and the normal form of confidence.
//!
//! Residuals are the method's normalised walk-forward errors, which do not depend on the bands;
//! so all of them are known before any state is worked out, and every state is one pass in day
//! order over them with a Fenwick tree (k-th smallest and range counts in O(log N)). A residual
//! dated d counts from day d + 1 on: no residual is judged by a quantile it helped set.

use serde::Serialize;

use crate::methodology::conformal::{
    conformal_rank, normal_cdf, Quantiles, CONFIDENCE_TOLERANCE, MIN_CONFORMAL_RESIDUALS, Z80, Z95,
};
use crate::methodology::timeline::StepTimeline;
use marks_format::day::Day;

/// gamma = 1/50, as `level80 = (200 - n + 5 m) / 250`: the numerator's step per miss and the
/// denominator, so the level is exact in integer arithmetic.
pub const LEVEL80_MISS_STEP: i64 = 5;
pub const LEVEL80_DENOMINATOR: i64 = 250;
/// The adaptive step, as published.
pub const GAMMA: f64 = 1.0 / 50.0;

/// The bands in force on a day, and what set them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BandState {
    pub q80: f64,
    pub q95: f64,
    /// N: residuals dated before the day.
    pub residuals: usize,
    /// n: those whose own forecast had at least 20 earlier residuals.
    pub conformal_era: usize,
    /// m: conformal-era residuals outside the 80% band published for them.
    pub misses: usize,
    /// k80: the rank of the residual that sets q80 (0 before there are 20).
    pub rank80: usize,
    /// `(200 - n + 5 m) / 250`; 0.8 before there are 20 residuals.
    pub level80: f64,
}

impl BandState {
    const FALLBACK: BandState = BandState {
        q80: Z80,
        q95: Z95,
        residuals: 0,
        conformal_era: 0,
        misses: 0,
        rank80: 0,
        level80: 0.8,
    };

    pub fn quantiles(&self) -> Quantiles {
        Quantiles {
            q80: self.q80,
            q95: self.q95,
            n: self.residuals,
        }
    }
}

/// v0.4.0's bands on every day, and the confidence of any forecast.
#[derive(Debug)]
pub struct AdaptiveBands {
    timeline: StepTimeline<BandState>,
    /// Every residual's z, sorted; a residual's position here is its place in the counting tree.
    sorted_z: Vec<f64>,
    /// Residuals in day order: (day, position in `sorted_z`).
    by_day: Vec<(Day, usize)>,
}

impl AdaptiveBands {
    /// The bands from the method's residuals `(day, z)`, and the state in force for each
    /// residual's own forecast, in the order given.
    pub fn new(residuals: &[(Day, f64)]) -> (AdaptiveBands, Vec<BandState>) {
        let mut order: Vec<usize> = (0..residuals.len()).collect();
        order.sort_by(|&a, &b| residuals[a].0.cmp(&residuals[b].0).then(a.cmp(&b)));
        // Positions by |z| for the quantiles, by z for confidence.
        let by_abs = positions(residuals.len(), |i| residuals[i].1.abs());
        let by_signed = positions(residuals.len(), |i| residuals[i].1);
        let mut sorted_abs = vec![0.0; residuals.len()];
        let mut sorted_z = vec![0.0; residuals.len()];
        for (i, &(_, z)) in residuals.iter().enumerate() {
            sorted_abs[by_abs[i]] = z.abs();
            sorted_z[by_signed[i]] = z;
        }
        let mut inserted = Fenwick::new(residuals.len());
        let mut timeline = StepTimeline::new(BandState::FALLBACK);
        let mut states = vec![BandState::FALLBACK; residuals.len()];
        let (mut era, mut misses) = (0usize, 0usize);
        let mut at = 0;
        while at < order.len() {
            let day = residuals[order[at]].0;
            let group = order[at..].iter().take_while(|&&i| residuals[i].0 == day).count();
            let state = band_state(&inserted, &sorted_abs, era, misses);
            for &i in &order[at..at + group] {
                states[i] = state;
                if state.residuals >= MIN_CONFORMAL_RESIDUALS {
                    era += 1;
                    misses += usize::from(residuals[i].1.abs() > state.q80);
                }
            }
            for &i in &order[at..at + group] {
                inserted.add(by_abs[i]);
            }
            timeline.push(day.plus(1), band_state(&inserted, &sorted_abs, era, misses));
            at += group;
        }
        let by_day = order.iter().map(|&i| (residuals[i].0, by_signed[i])).collect();
        (
            AdaptiveBands {
                timeline,
                sorted_z,
                by_day,
            },
            states,
        )
    }

    /// The bands in force on `day`, from the residuals dated before it.
    pub fn at(&self, day: Day) -> BandState {
        *self.timeline.at(day)
    }

    /// The timeline of the bands, for reading day by day.
    pub fn timeline(&self) -> &StepTimeline<BandState> {
        &self.timeline
    }

    /// The confidence of each forecast `(day, scale)`: the share of the residuals dated before
    /// the day that land within +/-10% at that scale (the normal form with fewer than 20). A
    /// scale of 0 is a reported value: confidence 1. Answered together, in one pass in day
    /// order, in the order asked.
    pub fn confidences(&self, asked: &[(Day, f64)]) -> Vec<f64> {
        let (low, high) = ((1.0 - CONFIDENCE_TOLERANCE).ln(), (1.0 + CONFIDENCE_TOLERANCE).ln());
        let mut order: Vec<usize> = (0..asked.len()).collect();
        order.sort_by_key(|&i| asked[i].0);
        let mut inserted = Fenwick::new(self.sorted_z.len());
        let mut next = 0;
        let mut answers = vec![0.0; asked.len()];
        for i in order {
            let (day, scale) = asked[i];
            while next < self.by_day.len() && self.by_day[next].0 < day {
                inserted.add(self.by_day[next].1);
                next += 1;
            }
            answers[i] = if scale <= 0.0 {
                1.0
            } else if next < MIN_CONFORMAL_RESIDUALS {
                normal_cdf(high / scale) - normal_cdf(low / scale)
            } else {
                // `z * scale` in floating point is monotone in z, so the residuals within the
                // tolerance are one run of the sorted array, found with the same product the
                // definition states.
                let first = self.sorted_z.partition_point(|&z| z * scale < low);
                let past = self.sorted_z.partition_point(|&z| z * scale <= high);
                let within = inserted.prefix(past) - inserted.prefix(first.min(past));
                within as f64 / next as f64
            };
        }
        answers
    }
}

/// The bands from the residuals inserted so far (N of them), `era` conformal-era ones and
/// `misses` misses among those.
fn band_state(inserted: &Fenwick, sorted_abs: &[f64], era: usize, misses: usize) -> BandState {
    let n = inserted.total();
    if n < MIN_CONFORMAL_RESIDUALS {
        return BandState {
            residuals: n,
            ..BandState::FALLBACK
        };
    }
    let smallest = |k: usize| sorted_abs[inserted.kth(k)];
    let q95 = smallest(conformal_rank(n, 95));
    // level80 (N + 1) 250 = (N + 1)(200 - n + 5 m), exactly; its ceiling over 250 is k80.
    let numerator = (200 - era as i64 + LEVEL80_MISS_STEP * misses as i64) * (n as i64 + 1);
    let k80 = (-(-numerator).div_euclid(LEVEL80_DENOMINATOR)).clamp(1, n as i64) as usize;
    BandState {
        q80: smallest(k80).min(q95),
        q95,
        residuals: n,
        conformal_era: era,
        misses,
        rank80: k80,
        level80: (200 - era as i64 + LEVEL80_MISS_STEP * misses as i64) as f64 / LEVEL80_DENOMINATOR as f64,
    }
}

/// Each item's position when the `len` items are sorted by `key` (ties by index).
fn positions(len: usize, key: impl Fn(usize) -> f64) -> Vec<usize> {
    let mut sorted: Vec<usize> = (0..len).collect();
    sorted.sort_by(|&a, &b| key(a).total_cmp(&key(b)).then(a.cmp(&b)));
    let mut position = vec![0; len];
    for (rank, i) in sorted.into_iter().enumerate() {
        position[i] = rank;
    }
    position
}

/// Which positions are filled, with counts of any prefix and the k-th filled position.
#[derive(Debug)]
struct Fenwick {
    tree: Vec<usize>,
    total: usize,
}

impl Fenwick {
    fn new(len: usize) -> Fenwick {
        Fenwick {
            tree: vec![0; len + 1],
            total: 0,
        }
    }

    fn add(&mut self, position: usize) {
        let mut i = position + 1;
        while i < self.tree.len() {
            self.tree[i] += 1;
            i += i & i.wrapping_neg();
        }
        self.total += 1;
    }

    fn total(&self) -> usize {
        self.total
    }

    /// Filled positions below `end`.
    fn prefix(&self, end: usize) -> usize {
        let mut i = end.min(self.tree.len() - 1);
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }

    /// The position of the k-th filled one (1-based k, at most `total`).
    fn kth(&self, k: usize) -> usize {
        let mut position = 0;
        let mut left = k;
        let mut step = (self.tree.len() - 1).next_power_of_two();
        while step > 0 {
            let next = position + step;
            if next < self.tree.len() && self.tree[next] < left {
                position = next;
                left -= self.tree[next];
            }
            step >>= 1;
        }
        position
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: i32) -> Day {
        Day(2_460_000 + d)
    }

    /// The states worked by brute force from the definition, for a sequence of residuals.
    fn by_hand(residuals: &[(Day, f64)]) -> Vec<BandState> {
        let mut states = Vec::new();
        for &(d, _) in residuals {
            let earlier: Vec<usize> = (0..residuals.len()).filter(|&j| residuals[j].0 < d).collect();
            let n = earlier.len();
            if n < 20 {
                states.push(BandState {
                    residuals: n,
                    ..BandState::FALLBACK
                });
                continue;
            }
            let mut abs: Vec<f64> = earlier.iter().map(|&j| residuals[j].1.abs()).collect();
            abs.sort_by(f64::total_cmp);
            let era: Vec<usize> = earlier.iter().copied().filter(|&j| states[j].residuals >= 20).collect();
            let m = era.iter().filter(|&&j| residuals[j].1.abs() > states[j].q80).count();
            let level = (200.0 - era.len() as f64 + 5.0 * m as f64) / 250.0;
            let k80 = (((n + 1) as f64 * level) - 1e-9).ceil().clamp(1.0, n as f64) as usize;
            let q95 = abs[conformal_rank(n, 95) - 1];
            states.push(BandState {
                q80: abs[k80 - 1].min(q95),
                q95,
                residuals: n,
                conformal_era: era.len(),
                misses: m,
                rank80: k80,
                level80: level,
            });
        }
        states
    }

    #[test]
    fn the_80_band_adapts_to_its_misses_as_the_definition_says() {
        // Residuals one a day, growing in size with noise, so the band keeps missing early on
        // and the level climbs.
        let residuals: Vec<(Day, f64)> = (0..120)
            .map(|i| {
                let wobble = ((i * 37) % 11) as f64 / 10.0 - 0.5;
                (
                    day(i / 2),
                    (i as f64 / 40.0 + wobble) * if i % 3 == 0 { -1.0 } else { 1.0 },
                )
            })
            .collect();
        let (bands, states) = AdaptiveBands::new(&residuals);
        let expected = by_hand(&residuals);
        for (i, (got, want)) in states.iter().zip(&expected).enumerate() {
            assert_eq!(got.residuals, want.residuals, "residual {i}");
            assert_eq!(
                (got.conformal_era, got.misses),
                (want.conformal_era, want.misses),
                "residual {i}"
            );
            assert_eq!(got.rank80, want.rank80, "residual {i}");
            assert_eq!((got.q80, got.q95), (want.q80, want.q95), "residual {i}");
        }
        assert!(states.iter().any(|s| s.misses > 0), "the band missed at some point");
        assert!(states.iter().any(|s| s.level80 > 0.8), "and its level rose");
        // The timeline on a day is the state a residual of that day sees.
        assert_eq!(bands.at(day(30)), states[60]);
        assert_eq!(bands.at(day(-5)), BandState::FALLBACK);
    }

    #[test]
    fn confidence_is_the_share_within_ten_percent_at_todays_scale() {
        // 40 residuals: z = -2.0, -1.9, ..., 1.9, dated before day 10.
        let residuals: Vec<(Day, f64)> = (0..40).map(|i| (day(i % 10), -2.0 + f64::from(i) * 0.1)).collect();
        let (bands, _) = AdaptiveBands::new(&residuals);
        let scale = 0.1;
        let (low, high) = (0.9f64.ln(), 1.1f64.ln());
        let expected = residuals
            .iter()
            .filter(|(_, z)| (low..=high).contains(&(z * scale)))
            .count() as f64
            / 40.0;
        let got = bands.confidences(&[(day(10), scale), (day(0), scale), (day(10), 0.0)]);
        assert_eq!(got[0], expected);
        // Before any residual: the normal form; a reported value: 1.
        let normal = normal_cdf(high / scale) - normal_cdf(low / scale);
        assert!((got[1] - normal).abs() < 1e-15);
        assert_eq!(got[2], 1.0);
    }

    #[test]
    fn the_counting_tree_finds_the_kth_filled_position() {
        let mut tree = Fenwick::new(10);
        for p in [7, 2, 9, 4] {
            tree.add(p);
        }
        assert_eq!([1, 2, 3, 4].map(|k| tree.kth(k)), [2, 4, 7, 9]);
        assert_eq!((tree.prefix(5), tree.prefix(10), tree.total()), (2, 4, 4));
    }
}
