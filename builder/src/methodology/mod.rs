//! Methodology v0.5.0, "a fair value today" (docs/design.md section 3): from each company's
//! effective history to its daily marks, bands, confidence and next-print forecast, and the
//! scorecard that measures them.
//!
//! Where to find what:
//! - [`params`]: every constant, in the table the scorecard publishes;
//! - [`history`]: one company's anchors, outcome and spells, from the effective view;
//! - [`profile`]: the fair-value (bridge) and next-print profiles pooled from every company's
//!   spells, day by day;
//! - [`bands`]: the month-end residuals, and the bands and `confidence` they set, day by day;
//! - [`fit`]: the fitted method over a dataset and the published marks of one company;
//! - [`scorecard`] (with its bootstrap and what it discloses to whom) and [`stats`]: the
//!   published scores and their statistics;
//! - [`timeline`]: values that change on given days, read by day;
//! - [`indices`]: the private-market indices, value-weighted and chain-linked, from the
//!   published marks.
//!
//! Everything here is causal but for the effective view itself: a mark on day t uses only
//! anchors on or before t and pooled estimates only what was complete before t. Outcomes
//! (listings, closed sales, failures) end the private period: they are scored, never anchors.

pub mod bands;
pub mod fit;
pub mod history;
pub mod indices;
pub mod params;
pub mod profile;
pub mod scorecard;
pub mod stats;
pub mod timeline;

use serde::Serialize;

pub use fit::{CompanyMarks, Coverage, Fit, MarkBasis, MarkDay};
pub use params::{Params, PARAMS};
pub use scorecard::Scorecard;

/// The method applied to a dataset: the fit, and the scorecard that judges it. Kept side by
/// side, not one inside the other, because the scorecard reads the fit.
#[derive(Debug)]
pub struct Method {
    pub fit: Fit,
    pub scorecard: Scorecard,
}

impl Method {
    pub fn new(dataset: &crate::dataset::Dataset) -> Method {
        let fit = Fit::new(dataset);
        let scorecard = Scorecard::new(dataset, &fit);
        Method { fit, scorecard }
    }
}

/// The version every response's `meta`, every resolution record and the scorecard carry. Any
/// change to a constant in [`params`] or to a formula bumps it.
pub const METHODOLOGY_VERSION: &str = "v0.5.0";
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
