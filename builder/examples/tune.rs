//! Grid search over the methodology's trend constants by walk-forward error on observations.
//! Listing outcomes are never looked at: they stay held out for validation.
//!
//! Usage: cargo run --release -p marks-builder --example tune -- snapshots/sample

use marks_builder::dataset::Dataset;
use marks_builder::methodology::{Fit, Params};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "snapshots/sample".into());
    let dataset = Dataset::load(std::path::Path::new(&dir))?;
    let mut rows = Vec::new();
    for kappa in [0.5, 1.0, 2.0, 4.0] {
        for growth_volatility in [0.1, 0.25, 0.5] {
            for sector_pseudo in [2.0, 10.0, 50.0] {
                for pooled in [4.0, 20.0, 100.0] {
                    for half_life in [0.5, 1.0, 2.0, 1000.0] {
                        let params = Params {
                            growth_reversion_per_year: kappa,
                            growth_volatility,
                            growth_prior_sd: growth_volatility,
                            sector_growth_pseudo_years: sector_pseudo,
                            pooled_growth_pseudo_years: pooled,
                            growth_memory_half_life_years: half_life,
                            ..Params::default()
                        };
                        let fit = Fit::new(&dataset, params);
                        let model = &fit.scorecard.forecasters[0];
                        rows.push((
                            model.median_abs_log_error.unwrap_or(f64::NAN),
                            model.mape_pct.unwrap_or(f64::NAN),
                            format!(
                                "kappa {kappa:>4} gvol {growth_volatility:>4} sector {sector_pseudo:>4} pooled {pooled:>5} half-life {half_life:>6}: med|log| {:?} MAPE {:?} cov80 {:?} cov95 {:?} w80 {:?}",
                                model.median_abs_log_error,
                                model.mape_pct,
                                model.coverage_80.observed_pct,
                                model.coverage_95.observed_pct,
                                model.median_band_width_80_pct
                            ),
                        ));
                    }
                }
            }
        }
    }
    let by = |key: &str| {
        let mut sorted: Vec<_> = rows.iter().collect();
        match key {
            "mape" => sorted.sort_by(|a, b| a.1.total_cmp(&b.1)),
            _ => sorted.sort_by(|a, b| a.0.total_cmp(&b.0)),
        }
        println!("best by {key}:");
        for (_, _, line) in sorted.iter().take(12) {
            println!("  {line}");
        }
    };
    by("mape");
    by("median");
    // The Pareto front: no other point has both a lower MAPE and a lower median error.
    println!("pareto front (MAPE, median |log error|):");
    let mut front: Vec<_> = rows
        .iter()
        .filter(|a| !rows.iter().any(|b| b.0 < a.0 && b.1 < a.1))
        .collect();
    front.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (_, _, line) in front {
        println!("  {line}");
    }
    Ok(())
}
