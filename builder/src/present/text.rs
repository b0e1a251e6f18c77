//! The scorecard as `marks build` prints it: one line per score, in the layout of the
//! methodology's reference implementation (`reference_v050.py` prints the same lines), so that a
//! build and the reference can be compared line by line; then the findings in words.

use std::fmt::Write;

use crate::methodology::scorecard::{CoverageScore, Errors, Scorecard, TargetKind};
use crate::methodology::PARAMS;

fn three(value: Option<f64>) -> String {
    value.map_or("nan".into(), |v| format!("{v:.3}"))
}

fn share(inside: usize, n: usize) -> String {
    if n == 0 {
        return "nan".into();
    }
    format!("{:.1}", inside as f64 / n as f64 * 100.0)
}

fn coverage(score: &CoverageScore) -> String {
    share(score.inside, score.n)
}

fn errors(e: &Errors) -> String {
    format!(
        "median|log|={} mean|log|={}",
        three(e.median_abs_log_error),
        three(e.mean_abs_log_error)
    )
}

/// The printed scorecard.
pub fn scorecard_text(card: &Scorecard) -> String {
    let mut out = String::new();
    if let Some(m) = &card.month_end {
        let c = &m.confidence;
        let signed = |v: Option<f64>| v.map_or("nan".into(), |v| format!("{v:+.3}"));
        let _ = writeln!(
            out,
            "month-ends n={} S1 {} bias={} | S2 {} bias={} | cov80={}% cov95={}% | confidence Brier={} base={} skill={} stated={}",
            m.n,
            errors(&m.next_reported.mark),
            signed(m.next_reported.mark.bias),
            errors(&m.bridged.mark),
            signed(m.bridged.mark.bias),
            coverage(&m.coverage_80),
            coverage(&m.coverage_95),
            c.brier.map_or("nan".into(), |v| format!("{v:.4}")),
            c.base_rate.map_or("nan".into(), |v| format!("{v:.4}")),
            c.brier_skill.map_or("nan".into(), |v| format!("{:+.1}%", v * 100.0)),
            three(c.mean_stated),
        );
        let buckets: Vec<String> = m
            .coverage_by_gap
            .iter()
            .enumerate()
            .map(|(b, g)| format!("b{b} {} {} {}", g.n, coverage(&g.coverage_80), coverage(&g.coverage_95)))
            .collect();
        let _ = writeln!(out, "month-end by gap bucket (n, cov80, cov95): {}", buckets.join("; "));
    }
    for kind in TargetKind::ALL {
        let Some(e) = card.event_day.get(kind) else {
            continue;
        };
        let _ = writeln!(
            out,
            "event-day {} n={} {} cov80={}% cov95={}% | next-print {}",
            kind.as_str(),
            e.n,
            errors(&e.errors.mark),
            coverage(&e.coverage_80),
            coverage(&e.coverage_95),
            errors(&e.errors.next_print),
        );
    }
    if let Some(l) = &card.latest_private {
        let cells: Vec<String> = l
            .by_silence
            .iter()
            .map(|c| match c.median_mark_over_last {
                Some(median) => format!("{} n={} med={median:.3}", c.label, c.n),
                None => format!("{} n={}", c.label, c.n),
            })
            .collect();
        let _ = writeln!(
            out,
            "latest private n={} mark/last median={} share<1={}% share>1.5={}% | {}",
            l.n,
            three(l.median_mark_over_last),
            share(l.below_last, l.n),
            share(l.above_one_and_a_half, l.n),
            cells.join("; ")
        );
    }
    if let Some(f) = &card.in_force {
        let knots = |knots: &[crate::methodology::scorecard::Knot]| {
            knots
                .iter()
                .map(|k| format!("{:?}: {:+.4}", k.years, k.drift))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "profile knots on AS_OF+1 (D: mu): {}",
            knots(&f.fair_value_profile)
        );
        let _ = writeln!(
            out,
            "next-print knots on AS_OF+1 (D: m): {}",
            knots(&f.next_print_profile)
        );
    }
    let _ = writeln!(
        out,
        "\n(hit and confidence: within +/-{}% of the mark)",
        PARAMS.confidence_tolerance * 100.0
    );
    for finding in &card.findings {
        let _ = writeln!(out, "- {finding}");
    }
    out
}
