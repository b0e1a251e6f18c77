//! The scorecard's headline, worked out once and shown twice: printed by `marks build` and at the
//! top of the home and scorecard pages. Each line is words and figures; a figure keeps the name
//! of the `/v1/scorecard` field it is, so a page can tag it and a test can hold the page to the
//! document.

use crate::methodology::round_to;
use crate::methodology::scorecard::{CoverageScore, Number, Scorecard, TargetKind};
use crate::present::esc;

/// One piece of a headline line.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Words(String),
    /// A figure as `/v1/scorecard` serves it, named by its path there (`month_end.bridged.mark...`).
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

/// What the scorecard says first: the mark against the last print on the value today (S2), the
/// next-print forecast against the mark on the next reported value (event day), the bands'
/// coverage, `confidence` as the track record it is, and where the latest marks sit against
/// their last prints. Each figure is named by its path in `/v1/scorecard`.
pub fn headline(card: &Scorecard) -> Vec<Line> {
    let mut lines = Vec::new();
    let three = |v: Option<f64>| number(v.map(|v| round_to(v, 3)));
    let compared = |score: &str, a: Number, b: Number| -> Option<String> {
        let c = card.comparison(score, a, b)?;
        let d = c.differences.iter().find(|d| d.figure == "median_abs_log_error")?;
        let interval = d.interval_95.map_or("–".to_string(), |[low, high]| {
            format!("[{}, {}]", round_to(low, 3), round_to(high, 3))
        });
        Some(format!(
            "difference {}, 95% interval {interval}: {}",
            three(d.difference),
            verdict_words(d.verdict, a, b)
        ))
    };
    if let Some(m) = &card.month_end {
        lines.push(
            Line::default()
                .words("Value today (month-ends, against the value bridged between prints): median |log error| ")
                .figure(
                    "month_end.bridged.mark.median_abs_log_error".into(),
                    m.bridged.mark.median_abs_log_error.map(|v| round_to(v, 4)),
                )
                .words(" for the mark against ")
                .figure(
                    "month_end.bridged.last_print.median_abs_log_error".into(),
                    m.bridged.last_print.median_abs_log_error.map(|v| round_to(v, 4)),
                )
                .words(format!(
                    " for the last print carried forward ({})",
                    compared("month_end_bridged", Number::Mark, Number::LastPrint).unwrap_or_default()
                )),
        );
    }
    if let Some(e) = card.event_day.get(TargetKind::Event) {
        lines.push(
            Line::default()
                .words("Next reported value (event day): median |log error| ")
                .figure(
                    "event_day.event.errors.next_print.median_abs_log_error".into(),
                    e.errors.next_print.median_abs_log_error.map(|v| round_to(v, 4)),
                )
                .words(" for the next-print forecast against ")
                .figure(
                    "event_day.event.errors.mark.median_abs_log_error".into(),
                    e.errors.mark.median_abs_log_error.map(|v| round_to(v, 4)),
                )
                .words(format!(
                    " for the mark ({})",
                    compared("event_day", Number::NextPrint, Number::Mark).unwrap_or_default()
                )),
        );
    }
    if let Some(m) = &card.month_end {
        lines.push(
            Line::default()
                .words("Bands, for the next reported value: the 80% band held it at ")
                .figure("month_end.coverage_80.observed_pct".into(), m.coverage_80.observed_pct)
                .words(format!(
                    "% of {} month-ends ({}), the 95% band at ",
                    m.n,
                    range_words(&m.coverage_80)
                ))
                .figure("month_end.coverage_95.observed_pct".into(), m.coverage_95.observed_pct)
                .words(format!("% ({})", range_words(&m.coverage_95))),
        );
        let c = &m.confidence;
        lines.push(
            Line::default()
                .words("confidence is a track record: on average ")
                .figure(
                    "month_end.confidence.mean_stated".into(),
                    c.mean_stated.map(|v| round_to(v, 4)),
                )
                .words(" of past marks saw their next reported value within +/-20%; as a forecast for one company it has no skill (Brier skill ")
                .figure(
                    "month_end.confidence.brier_skill".into(),
                    c.brier_skill.map(|v| round_to(v, 4)),
                )
                .words(")"),
        );
    }
    if let Some(l) = &card.latest_private {
        lines.push(
            Line::default()
                .words(format!(
                    "Latest marks of the {} private companies: median mark over last print ",
                    l.n
                ))
                .figure(
                    "latest_private.median_mark_over_last".into(),
                    l.median_mark_over_last.map(|v| round_to(v, 4)),
                )
                .words("; ")
                .figure("latest_private.share_below_last_pct".into(), l.share_below_last_pct)
                .words("% below their last print, ")
                .figure(
                    "latest_private.share_above_one_and_a_half_pct".into(),
                    l.share_above_one_and_a_half_pct,
                )
                .words("% above 1.5 times it"),
        );
    }
    lines
}

/// A bootstrap verdict in words.
pub fn verdict_words(verdict: &str, a: Number, b: Number) -> String {
    let name = |n: Number| match n {
        Number::Mark => "the mark",
        Number::NextPrint => "the next-print forecast",
        Number::LastPrint => "the last print",
    };
    match verdict {
        "a_better" => format!("{} is better", name(a)),
        "b_better" => format!("{} is better", name(b)),
        _ => "a tie".into(),
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
