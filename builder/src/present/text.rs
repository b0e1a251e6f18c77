//! The scorecard as `marks build` prints it: the same numbers as `/v1/scorecard` and the
//! scorecard page, as aligned text for a terminal.

use crate::methodology::conformal::CONFIDENCE_TOLERANCE;
use crate::methodology::round_to;
use crate::methodology::scorecard::{CoverageScore, ForecasterScore, Scorecard};
use crate::present::headline::headline;

pub fn scorecard_text(card: &Scorecard) -> String {
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v}"));
    let label = |f: &ForecasterScore| match f.figures.methodology_version {
        Some(version) => format!("{} ({version})", f.figures.name),
        None => f.figures.name.to_string(),
    };
    let n = card.forecasters.first().map_or(0, |f| f.figures.n);
    let mut out = format!(
        "walk-forward on {n} scored events (each forecast from the events before its day; outcomes held out)\n"
    );
    for line in headline(card) {
        out.push_str(&line.text());
        out.push('\n');
    }
    out.push_str(&format!(
        "{:<36} {:>7} {:>9} {:>10} {:>9} {:>9} {:>14} {:>7}\n",
        "forecaster", "MAPE%", "med|log|", "mean|log|", "width80%", "width95%", "listings|err|%", "misses"
    ));
    for f in &card.forecasters {
        out.push_str(&format!(
            "{:<36} {:>7} {:>9} {:>10} {:>9} {:>9} {:>14} {:>7}\n",
            label(f),
            opt(f.figures.mape_pct),
            opt(f.figures.median_abs_log_error),
            opt(f.figures.mean_abs_log_error),
            opt(f.figures.median_band_width_80_pct),
            opt(f.figures.median_band_width_95_pct),
            format!(
                "{} ({})",
                opt(f.figures.listings.mean_abs_error_pct),
                f.figures.listings.n
            ),
            f.figures.misses_total,
        ));
    }
    out.push_str("\nband coverage: observed (inside/n) and the range a calibrated band shows 90% of the time\n");
    for f in &card.forecasters {
        let coverage = |c: &CoverageScore| {
            format!(
                "{}% ({}/{}) range {}{}",
                opt(c.observed_pct),
                c.inside,
                c.n,
                c.binomial_90_range_pct
                    .map_or("-".into(), |[low, high]| format!("[{low}, {high}]")),
                if c.within_binomial_90_range == Some(false) {
                    " OUTSIDE"
                } else {
                    ""
                }
            )
        };
        out.push_str(&format!(
            "{:<36} 80%: {:<26} 95%: {}\n",
            label(f),
            coverage(&f.figures.coverage_80),
            coverage(&f.figures.coverage_95)
        ));
    }
    out.push_str("\nband coverage by the gap since the last event (80% observed in its 90% range; 95% the same)\n");
    for f in &card.forecasters {
        out.push_str(&format!("{:<36}", label(f)));
        for g in &f.figures.coverage_by_gap {
            let range = |c: &CoverageScore| {
                let flag = match c.within_binomial_90_range {
                    Some(false) => "!",
                    _ => "",
                };
                format!("{}%{flag}", opt(c.observed_pct))
            };
            out.push_str(&format!(
                " {}: {} {} (n={})",
                g.bucket.label(),
                range(&g.coverage_80),
                range(&g.coverage_95),
                g.n
            ));
        }
        out.push('\n');
    }
    out.push_str("(! outside the range a calibrated band shows 90% of the time)\n");
    out.push_str(&format!(
        "\nconfidence (the stated probability of landing within +/-{}% of the mark) against what happened\n",
        CONFIDENCE_TOLERANCE * 100.0
    ));
    out.push_str(&format!(
        "{:<36} {:>7} {:>9} {:>8} {:>8}   reliability: stated -> observed (n) per tenth\n",
        "forecaster", "Brier", "base rate", "skill", "hits"
    ));
    for f in &card.forecasters {
        let c = &f.figures.confidence;
        out.push_str(&format!(
            "{:<36} {:>7} {:>9} {:>8} {:>8}  ",
            label(f),
            opt(c.brier),
            opt(c.base_rate),
            opt(c.brier_skill),
            format!("{}/{}", c.hits, c.n)
        ));
        for bin in c.reliability.iter().filter(|b| b.n > 0) {
            out.push_str(&format!(" {}->{} ({})", opt(bin.mean_stated), opt(bin.observed), bin.n));
        }
        out.push('\n');
    }
    out.push_str(
        "\noutcomes (listings and bankruptcies) by verdict: hit within +/-10%, else the narrowest band holding it\n",
    );
    for f in &card.forecasters {
        let v = &f.figures.outcome_verdicts;
        out.push_str(&format!(
            "{:<36} hit {}  covered_80 {}  covered_95 {}  miss {}\n",
            label(f),
            v.hit,
            v.covered_80,
            v.covered_95,
            v.miss
        ));
    }
    for c in [&card.comparison, &card.comparison_with_previous] {
        out.push_str(&format!(
            "\n{} minus {} ({} companies resampled, {} draws, seed {}; 95% intervals):\n",
            c.a, c.b, c.companies, c.draws, c.seed
        ));
        for d in &c.differences {
            out.push_str(&format!(
                "  {:<28} {:>9} vs {:>9}: {:>9} in {}  {}\n",
                d.figure,
                opt(d.a.map(|v| round_to(v, 3))),
                opt(d.b.map(|v| round_to(v, 3))),
                opt(d.difference.map(|v| round_to(v, 3))),
                d.interval_95.map_or("-".into(), |[low, high]| format!(
                    "[{}, {}]",
                    round_to(low, 3),
                    round_to(high, 3)
                )),
                d.verdict
            ));
        }
    }
    let names: Vec<&str> = card.forecasters.iter().map(|f| f.figures.name).collect();
    if !card.listing_validations.is_empty() {
        out.push_str(&format!(
            "\nlisting validations (mark the day before vs listing value; error %, inside 80/95; {}):\n",
            names.join(", ")
        ));
        for l in &card.listing_validations {
            out.push_str(&format!("  {:<20} {} {:>16}", l.slug, l.listed_on, l.listing_value_usd));
            for e in &l.estimates {
                out.push_str(&format!(
                    "  {:>8} {}{}",
                    e.error_pct.map_or("-".into(), |v| format!("{v:+.1}%")),
                    if e.inside_80 { '8' } else { '.' },
                    if e.inside_95 { '9' } else { '.' }
                ));
            }
            out.push('\n');
        }
    }
    if !card.bankruptcy_outcomes.is_empty() {
        out.push_str("\nbankruptcies (mark the day before vs the reported value; inside 80/95):\n");
        for b in &card.bankruptcy_outcomes {
            out.push_str(&format!("  {:<20} {} {:>16}\n", b.slug, b.occurred_on, b.value_usd));
            for e in &b.estimates {
                out.push_str(&format!(
                    "    {:<28} marked {:>16} on {}, 95% band {}..{} {}{}\n",
                    e.forecaster,
                    e.mark_usd,
                    b.marked_on,
                    e.band_95.lower,
                    e.band_95.upper,
                    if e.inside_80 { '8' } else { '.' },
                    if e.inside_95 { '9' } else { '.' }
                ));
            }
        }
    }
    out
}
