//! Methodology v0.4.0, "gap-profile drift" with adaptive bands: from each company's valuation
//! events to its daily marks, bands and confidence, and the walk-forward scorecard that measures
//! them against the previous methods (v0.3.0, v0.2.0) and two naive baselines (docs/design.md
//! section 3).
//!
//! Where to find what:
//! - [`params`]: every constant, in the table the scorecard publishes;
//! - [`forecasters`]: the method's point forecast and scale (`gap_profile`: pairs of events,
//!   pooled bucket drifts, the drift profile over the gap since the last event), the comparison
//!   forecasters (`local_trend`, v0.2.0; `baselines`), and the walk-forward `backtest` of them
//!   all at every scored event and outcome;
//! - [`adaptive`]: v0.4.0's bands (an 80% level that adapts to its own misses, a conformal 95%)
//!   and its empirical confidence;
//! - [`conformal`]: split-conformal quantiles, as the comparison forecasters' bands, and the
//!   normal-model confidence they state;
//! - [`fit`]: the fitted method over a dataset and the published series of one company;
//! - [`scorecard`] (with its bootstrap and what it discloses to whom) and [`stats`]: the
//!   published backtest's numbers and their statistics;
//! - [`timeline`]: values that change on given days, read by day;
//! - [`indices`]: the private-market indices, value-weighted and chain-linked, from the
//!   published marks.
//!
//! Everything here is causal: a mark on day t uses only events on or before t, pooled
//! estimates only what was complete before t. Listings and bankruptcies are outcomes, never
//! inputs: they are held out and scored.

pub mod adaptive;
pub mod conformal;
pub mod fit;
pub mod forecasters;
pub mod indices;
pub mod params;
pub mod scorecard;
pub mod stats;
pub mod timeline;

use serde::Serialize;

pub use conformal::{confidence, normal_cdf, Coverage, Quantiles, Z80, Z95};
pub use fit::{CompanyMarks, Fit, MarkBasis, MarkDay};
pub use params::Params;
pub use scorecard::Scorecard;

/// The version every response's `meta`, every resolution record and the scorecard carry. Any
/// change to a constant in [`params`] or to a formula bumps it.
pub const METHODOLOGY_VERSION: &str = "v0.4.0";
/// Years are 365.25 days everywhere in the method.
pub const DAYS_PER_YEAR: f64 = 365.25;

pub fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let rounded = (value * scale).round() / scale;
    // -0.0 (a small negative rounded away) is published as 0.
    if rounded == 0.0 {
        0.0
    } else {
        rounded
    }
}

/// Whole US dollars, as every amount is published.
pub fn usd(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value.round().min(9.0e18) as u64
    } else {
        0
    }
}

/// A band in whole dollars.
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
