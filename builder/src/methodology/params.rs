//! Every constant of methodology v0.5.0 in one table, the one `GET /v1/scorecard` publishes as
//! `params`. Nothing in it is fitted to data: changing any value changes the marks, so it bumps
//! `METHODOLOGY_VERSION`.

use serde::Serialize;

/// The gap buckets of the bands and of the next-print profile: below 6 months, 6-12 months,
/// 1-2 years, 2 years and more.
pub const BUCKETS: usize = 4;
/// The knots of the fair-value (bridge) profile.
pub const BRIDGE_KNOTS: usize = 8;

/// Methodology v0.5.0's constants (docs/design.md section 3).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Params {
    /// H: a spell completed this many years ago counts half as much in the pool.
    pub drift_half_life_years: f64,
    /// K: the profile is shrunk towards 0 as if this many spells of no change were pooled.
    pub drift_pseudo_spells: f64,
    /// Where the fair-value profile is evaluated (years of silence); linear between, flat after.
    pub profile_knots_years: [f64; BRIDGE_KNOTS],
    /// Beyond this silence the profile may only fall (each knot at most the one before).
    pub profile_non_increasing_after_years: f64,
    /// A failure (or a fund's mark of 0) is valued at this share of the last reported value,
    /// at least, so that logs stay finite.
    pub failure_floor: f64,
    /// Upper edges of gap buckets 0, 1 and 2 (years); bucket 3 is everything longer.
    pub gap_bucket_edges_years: [f64; BUCKETS - 1],
    /// Each bucket's band quantiles hold at its centre; linear between centres, flat outside.
    pub gap_bucket_centres_years: [f64; BUCKETS],
    /// Where the next-print profile takes each bucket's mean change (after (0, 0)).
    pub next_print_knots_years: [f64; BUCKETS],
    /// A bucket needs this many known month-end residuals for quantiles of its own; below it,
    /// the pooled quantiles; below it in all, the normal fallback.
    pub min_bucket_residuals: usize,
    /// `confidence` is a track record once this many month-end residuals are known; before,
    /// the normal fallback's probability.
    pub min_confidence_residuals: usize,
    /// The normal fallback's scale: S0 sqrt(C + min(D, cap)).
    pub fallback_scale_per_sqrt_year: f64,
    pub fallback_scale_offset_years: f64,
    pub fallback_scale_cap_years: f64,
    pub fallback_quantile_80: f64,
    pub fallback_quantile_95: f64,
    /// `confidence` counts next reported values within this share of the mark (+/-20%).
    pub confidence_tolerance: f64,
    pub days_per_year: f64,
}

pub const PARAMS: Params = Params {
    drift_half_life_years: 1.0,
    drift_pseudo_spells: 3.0,
    profile_knots_years: [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0],
    profile_non_increasing_after_years: 1.0,
    failure_floor: 0.01,
    gap_bucket_edges_years: [0.5, 1.0, 2.0],
    gap_bucket_centres_years: [0.25, 0.75, 1.5, 3.0],
    next_print_knots_years: [0.25, 0.75, 1.5, 3.0],
    min_bucket_residuals: 100,
    min_confidence_residuals: 200,
    fallback_scale_per_sqrt_year: 0.60,
    fallback_scale_offset_years: 0.25,
    fallback_scale_cap_years: 2.0,
    fallback_quantile_80: 1.281_551_565_544_600_4,
    fallback_quantile_95: 1.959_963_984_540_054,
    confidence_tolerance: 0.20,
    days_per_year: 365.25,
};

impl Params {
    /// The gap bucket of `gap_years`: 0 below the first edge ... 3 from the last edge on.
    pub fn bucket(&self, gap_years: f64) -> usize {
        self.gap_bucket_edges_years
            .iter()
            .filter(|&&edge| gap_years >= edge)
            .count()
    }

    /// The normal fallback's scale at a silence of `gap_years`.
    pub fn fallback_scale(&self, gap_years: f64) -> f64 {
        self.fallback_scale_per_sqrt_year
            * (self.fallback_scale_offset_years + gap_years.min(self.fallback_scale_cap_years)).sqrt()
    }

    /// `ln 0.8` and `ln 1.2`: the log errors `confidence` counts as landing.
    pub fn confidence_range(&self) -> (f64, f64) {
        (
            (1.0 - self.confidence_tolerance).ln(),
            (1.0 + self.confidence_tolerance).ln(),
        )
    }
}

/// Linear interpolation through `(xs, ys)`, flat outside (numpy's `interp`).
pub fn interpolate(x: f64, xs: &[f64], ys: &[f64]) -> f64 {
    let last = xs.len() - 1;
    if x <= xs[0] {
        return ys[0];
    }
    if x >= xs[last] {
        return ys[last];
    }
    let upper = xs.partition_point(|&k| k <= x);
    let (x0, x1, y0, y1) = (xs[upper - 1], xs[upper], ys[upper - 1], ys[upper]);
    (y1 - y0) / (x1 - x0) * (x - x0) + y0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_flat_outside_and_linear_between() {
        let (xs, ys) = ([0.0, 1.0, 3.0], [0.0, 2.0, -2.0]);
        assert_eq!(interpolate(-1.0, &xs, &ys), 0.0);
        assert_eq!(interpolate(0.5, &xs, &ys), 1.0);
        assert_eq!(interpolate(1.0, &xs, &ys), 2.0);
        assert_eq!(interpolate(2.0, &xs, &ys), 0.0);
        assert_eq!(interpolate(9.0, &xs, &ys), -2.0);
    }

    #[test]
    fn buckets_and_the_fallback_scale() {
        assert_eq!(
            [0.0, 0.49, 0.5, 1.0, 1.99, 2.0, 9.0].map(|g| PARAMS.bucket(g)),
            [0, 0, 1, 2, 2, 3, 3]
        );
        assert!((PARAMS.fallback_scale(0.0) - 0.3).abs() < 1e-15);
        assert_eq!(PARAMS.fallback_scale(2.0), PARAMS.fallback_scale(7.0));
    }
}
