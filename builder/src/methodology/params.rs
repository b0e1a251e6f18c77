//! Every constant of the method in one place. The method's table ([`GapProfileParams`] and the
//! bands' constants, v0.4.0's adaptive step among them) is what `GET /v1/scorecard` publishes
//! as `params`; the comparison forecasters' constants are published beside it as
//! `comparison_params` (v0.3.0 shares the method's table but for the adaptive step and the
//! rule after an agreed sale). Nothing in the table is fitted to data: changing any value
//! changes the marks, so it bumps `METHODOLOGY_VERSION`.

use serde::Serialize;
use serde_json::{json, Value};

use super::DAYS_PER_YEAR;
use crate::methodology::conformal::{CONFIDENCE_TOLERANCE, MIN_CONFORMAL_RESIDUALS, Z80, Z95};
use crate::methodology::forecasters::baselines::StepMarkParams;
use crate::methodology::forecasters::local_trend::LocalTrendParams;

/// The number of gap buckets, and so of pooled drifts and profile knots after (0, 0).
pub const BUCKETS: usize = 4;

/// The gap-profile drift of methodology v0.4.0 (and v0.3.0): docs/design.md section 3.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GapProfileParams {
    /// H: a pair of events completed this many years ago counts half as much in the pooled
    /// drifts, so a change of market regime shows within a year or two.
    pub drift_half_life_years: f64,
    /// K: each bucket's drift is shrunk towards 0 as if it also held this many pairs of no
    /// change, so a bucket with few pairs says little.
    pub drift_pseudo_pairs: f64,
    /// Upper edges of gap buckets 0, 1 and 2 (years); bucket 3 is everything longer.
    pub gap_bucket_edges_years: [f64; BUCKETS - 1],
    /// Where the profile takes each bucket's drift (years since the last event); it starts at
    /// (0, 0) and is flat after the last knot.
    pub profile_knots_years: [f64; BUCKETS],
    /// S0: the scale of a forecast's error per sqrt(year) of gap...
    pub scale_per_sqrt_year: f64,
    /// C: ...plus this many years, so that even a same-week forecast has a spread.
    pub scale_offset_years: f64,
}

impl Default for GapProfileParams {
    fn default() -> GapProfileParams {
        GapProfileParams {
            drift_half_life_years: 1.0,
            drift_pseudo_pairs: 3.0,
            gap_bucket_edges_years: [0.5, 1.0, 2.0],
            profile_knots_years: [0.25, 0.75, 1.5, 3.0],
            scale_per_sqrt_year: 0.60,
            scale_offset_years: 0.25,
        }
    }
}

/// Every constant: the method's and the comparison forecasters'.
#[derive(Clone, Debug, Default)]
pub struct Params {
    pub gap_profile: GapProfileParams,
    /// The previous method (v0.2.0), kept as a comparison forecaster.
    pub local_trend: LocalTrendParams,
    /// Baseline (b), the public product's published step-mark recipe.
    pub step_mark: StepMarkParams,
}

impl Params {
    /// The method's table as the scorecard publishes it: the gap profile's constants and the
    /// fixed constants of the bands and of `confidence`.
    pub fn to_json(&self) -> Value {
        let mut table = serde_json::to_value(&self.gap_profile).unwrap_or(Value::Null);
        if let Some(object) = table.as_object_mut() {
            object.insert("days_per_year".into(), json!(DAYS_PER_YEAR));
            object.insert("min_conformal_residuals".into(), json!(MIN_CONFORMAL_RESIDUALS));
            object.insert("fallback_quantile_80".into(), json!(Z80));
            object.insert("fallback_quantile_95".into(), json!(Z95));
            object.insert("confidence_tolerance".into(), json!(CONFIDENCE_TOLERANCE));
            // v0.4.0: the 80% band's adaptive level, and no drift after an agreed sale.
            object.insert("level80_gamma".into(), json!(crate::methodology::adaptive::GAMMA));
            object.insert("level80_target".into(), json!(0.8));
            object.insert("drift_after_agreed_sale".into(), json!(false));
        }
        table
    }

    /// The comparison forecasters' constants, published beside the method's table.
    pub fn comparison_json(&self) -> Value {
        json!({
            "local_linear_trend": self.local_trend.to_json(),
            "quality_weighted_step": serde_json::to_value(&self.step_mark).unwrap_or(Value::Null),
        })
    }
}
