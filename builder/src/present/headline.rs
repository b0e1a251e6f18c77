//! The scorecard's headline, worked out once and shown twice: printed by `marks build` and at the
//! top of the home and scorecard pages. Each line is words and figures; a figure keeps the name
//! of the `/v1/scorecard` field it is, so a page can tag it and a test can hold the page to the
//! document.

use crate::methodology::round_to;
use crate::methodology::scorecard::{CoverageScore, Scorecard};
use marks_format::frame::escape_html as esc;

/// One piece of a headline line.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Words(String),
    /// A figure as `/v1/scorecard` serves it, named `FORECASTER.FIELD`.
    Figure {
        name: String,
        value: Option<f64>,
    },
}

/// One line of the headline.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Line(pub Vec<Part>);

impl Line {
    fn words(mut self, text: impl Into<String>) -> Line {
        self.0.push(Part::Words(text.into()));
        self
    }

    fn figure(mut self, name: String, value: Option<f64>) -> Line {
        self.0.push(Part::Figure { name, value });
        self
    }

    /// For a terminal.
    pub fn text(&self) -> String {
        self.0
            .iter()
            .map(|part| match part {
                Part::Words(words) => words.clone(),
                Part::Figure { value, .. } => number(*value),
            })
            .collect()
    }

    /// For a page: words escaped, each figure in a `data-figure` span.
    pub fn html(&self) -> String {
        self.0
            .iter()
            .map(|part| match part {
                Part::Words(words) => esc(words),
                Part::Figure { name, value } => {
                    format!("<span data-figure=\"{}\">{}</span>", esc(name), number(*value))
                }
            })
            .collect()
    }
}

/// A figure as served: the number, or a dash for none.
pub fn number(value: Option<f64>) -> String {
    value.map_or("–".to_string(), |v| format!("{v}"))
}

/// The robust figures first (median and mean |log error| against the baseline the bootstrap
/// compares with, with their intervals), then coverage, the confidence claim, and MAPE with the
/// scored events that set it (by event type and date: which company's was for Pro keys).
pub fn headline(card: &Scorecard) -> Vec<Line> {
    let Some(method) = card.forecasters.first() else {
        return Vec::new();
    };
    let f = &method.figures;
    let name = f.name;
    let mut lines = Vec::new();
    for (field, label, value) in [
        ("median_abs_log_error", "median |log error|", f.median_abs_log_error),
        ("mean_abs_log_error", "mean |log error|", f.mean_abs_log_error),
    ] {
        let Some(d) = card.comparison.differences.iter().find(|d| d.figure == field) else {
            continue;
        };
        let rounded = |v: Option<f64>| number(v.map(|v| round_to(v, 3)));
        let interval = d.interval_95.map_or("–".to_string(), |[low, high]| {
            format!("[{}, {}]", round_to(low, 3), round_to(high, 3))
        });
        lines.push(
            Line::default()
                .words(format!("{label}: "))
                .figure(format!("{name}.{field}"), value)
                .words(format!(
                    " against {} for {} (difference {}, 95% interval {interval}; {})",
                    rounded(d.b),
                    card.comparison.b,
                    rounded(d.difference),
                    verdict_words(d.verdict)
                )),
        );
    }
    lines.push(
        Line::default()
            .words("80% band covers ")
            .figure(format!("{name}.coverage_80.observed_pct"), f.coverage_80.observed_pct)
            .words(format!(
                "% of {} scored events ({}), 95% band ",
                f.n,
                range_words(&f.coverage_80)
            ))
            .figure(format!("{name}.coverage_95.observed_pct"), f.coverage_95.observed_pct)
            .words(format!("% ({})", range_words(&f.coverage_95))),
    );
    lines.push(
        Line::default()
            .words("confidence: Brier score ")
            .figure(format!("{name}.confidence.brier"), f.confidence.brier)
            .words(format!(
                " against {} for the base rate (skill ",
                number(f.confidence.brier_base_rate)
            ))
            .figure(format!("{name}.confidence.brier_skill"), f.confidence.brier_skill)
            .words(")"),
    );
    let contributors: Vec<String> = method
        .mape_top_contributors
        .iter()
        .map(|c| {
            format!(
                "a {} on {} ({}% of the sum)",
                c.event_type.as_str().replace('_', " "),
                c.occurred_on,
                c.share_of_mape_pct
            )
        })
        .collect();
    lines.push(
        Line::default()
            .words("MAPE ")
            .figure(format!("{name}.mape_pct"), f.mape_pct)
            .words(format!("%, set mostly by {}", contributors.join("; "))),
    );
    lines
}

/// A bootstrap verdict in words.
pub fn verdict_words(verdict: &str) -> &'static str {
    match verdict {
        "a_better" => "the method is better",
        "b_better" => "the baseline is better",
        _ => "a tie",
    }
}

/// Where an observed coverage sits against the range a calibrated band shows.
pub fn range_words(coverage: &CoverageScore) -> String {
    match (coverage.binomial_90_range_pct, coverage.within_binomial_90_range) {
        (Some([low, high]), Some(true)) => format!("inside the {low}–{high}% a calibrated band shows"),
        (Some([low, high]), Some(false)) => format!("outside the {low}–{high}% a calibrated band shows"),
        _ => "too few to tell".into(),
    }
}
