//! Writes the method's walk-forward table for a dataset as CSV, one row per scored target
//! (every scored event, then the company's outcome), so the figures can be checked by an
//! independent implementation of docs/design.md section 3: the forecast in log space, its scale and
//! the conformal quantiles in force. Also prints the scorecard.
//!
//! With a slug and a second file, it also writes that company's published daily series (day,
//! mark, scale).
//!
//! Usage: cargo run --release -p marks-builder --example walk_forward_csv -- DATASET_DIR OUT.csv
//! [SLUG SERIES.csv]

use std::io::Write;

use marks_builder::dataset::Dataset;
use marks_builder::methodology::fit::walk_forward;
use marks_builder::methodology::forecasters::backtest::Forecaster;
use marks_builder::methodology::{Fit, Params};
use marks_format::day::Day;

/// Days since 1970-01-01, the day numbers of the reference implementation.
fn unix_day(day: Day) -> i32 {
    day.0 - 2_440_588
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(source), Some(out)) = (args.next(), args.next()) else {
        return Err("usage: walk_forward_csv DATASET_DIR OUT.csv".into());
    };
    let dataset = Dataset::load(std::path::Path::new(&source))?;
    let fit = Fit::new(&dataset, Params::default());
    let backtests = walk_forward(&dataset, &fit.params, &fit.drifts);
    let method = Forecaster::GapProfile.index();
    let mut csv = std::io::BufWriter::new(std::fs::File::create(&out)?);
    writeln!(csv, "slug,event_id,kind,day,mark_day,y,x,scale,q80,q95")?;
    for (company, backtest) in dataset.companies.iter().zip(&backtests) {
        let rows = backtest
            .predictions
            .iter()
            .map(|p| ("event", p.event, p.day, p.day, p.observed_log, p.forecasts[method]))
            .chain(backtest.outcome.iter().map(|o| {
                let event = &company.events[o.event];
                let observed = (event.valuation_usd as f64).ln();
                let kind = if event.event_type.is_listing() {
                    "listing"
                } else {
                    "bankruptcy"
                };
                (
                    kind,
                    o.event,
                    event.occurred_on,
                    o.marked_on,
                    observed,
                    o.forecasts[method],
                )
            }));
        for (kind, event, day, mark_day, observed, forecast) in rows {
            let q = fit.bands_on(mark_day);
            writeln!(
                csv,
                "{},{},{kind},{},{},{observed:e},{:e},{:e},{:e},{:e}",
                company.slug,
                company.events[event].event_id,
                unix_day(day),
                unix_day(mark_day),
                forecast.log_value,
                forecast.scale,
                q.q80,
                q.q95
            )?;
        }
    }
    csv.flush()?;
    if let (Some(slug), Some(series_out)) = (args.next(), args.next()) {
        let company = dataset
            .companies
            .iter()
            .find(|c| c.slug == slug)
            .ok_or_else(|| format!("no company {slug:?}"))?;
        let mut series = std::io::BufWriter::new(std::fs::File::create(&series_out)?);
        writeln!(series, "day,mark_usd,scale")?;
        for point in fit.marks(company).series {
            writeln!(series, "{},{:e},{:e}", unix_day(point.day), point.mark, point.scale)?;
        }
        series.flush()?;
    }
    println!("{}", marks_builder::present::text::scorecard_text(&fit.scorecard));
    Ok(())
}
