//! `/scorecard`: the backtest made visible. Static HTML with inline SVG charts: no script is
//! needed to read it, every chart has its numbers in a table beside it, and every figure
//! carries `data-figure="FORECASTER.FIELD"` with the number `/v1/scorecard` serves, so a test can
//! hold the page to the document. Everything on it is the scorecard's public form
//! (`methodology::scorecard::disclosure`): relative quantities, companies named only for their
//! outcomes.

use std::fmt::Write;

use marks_format::frame::escape_html as esc;

use crate::dataset::Dataset;
use crate::methodology::scorecard::{Comparison, CoverageScore, RelativeBand, Scorecard, Target, TargetKind, Verdict};
use crate::methodology::stats::percentile;
use crate::present::headline::verdict_words;
use crate::present::{figure, headline, opt, page, svg};

/// The scorecard page.
pub fn scorecard(dataset: &Dataset, card: &Scorecard) -> Vec<u8> {
    let mut main = String::new();
    let n = card.forecasters.first().map_or(0, |f| f.figures.n);
    let _ = write!(
        main,
        "<h1>Scorecard</h1>\n<p class=\"lede\">Walk-forward backtest on {n} scored events of dataset {} \
         (each forecast from the events before its day; listings and bankruptcies held out and scored against the \
         mark the day before). Every number here is the one <a href=\"/v1/scorecard\">/v1/scorecard</a> serves, \
         and each can be recomputed from <a href=\"/v1/scorecard/targets\">every scored target</a>.</p>\n",
        dataset.info.dataset_version
    );
    main.push_str(&headline(card));
    main.push_str(&side_by_side(card));
    main.push_str(&coverage_section(card));
    main.push_str(&reliability_section(card));
    main.push_str(&errors_section(card));
    main.push_str(&outcomes_section(card));
    main.push_str(&misses_section(card));
    main.push_str(&bootstrap_section(
        &card.comparison,
        "bootstrap",
        "The method against carrying the last event forward",
        "the baseline",
    ));
    main.push_str(&bootstrap_section(
        &card.comparison_with_previous,
        "bootstrap-previous",
        "What this version changed: the method against the previous one",
        "the previous method",
    ));
    page("Scorecard · Valuation Marks", "/scorecard", &main)
}

fn side_by_side(card: &Scorecard) -> String {
    let mut out = String::from(
        "<h2 id=\"forecasters\">The forecasters side by side</h2>\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Forecasters side by side\"><table class=\"data\">\
         <caption>Walk-forward figures per forecaster; lower errors are better</caption>\n<thead><tr>\
         <th scope=\"col\">forecaster</th><th scope=\"col\">n</th><th scope=\"col\">median |log error|</th>\
         <th scope=\"col\">mean |log error|</th><th scope=\"col\">MAPE %</th><th scope=\"col\">80% covers %</th>\
         <th scope=\"col\">95% covers %</th><th scope=\"col\">median 80% width %</th>\
         <th scope=\"col\">listings mean |error| %</th><th scope=\"col\">Brier</th><th scope=\"col\">skill</th>\
         <th scope=\"col\">misses</th></tr></thead>\n<tbody>\n",
    );
    for f in &card.forecasters {
        let name = f.figures.name;
        let cell = |field: &str, value: Option<f64>| format!("<td>{}</td>", figure(&format!("{name}.{field}"), value));
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}{}</th><td>{}</td>{}{}{}{}{}{}{}{}{}<td>{}</td></tr>",
            esc(name),
            f.figures
                .methodology_version
                .map_or(String::new(), |v| format!(" ({v})")),
            f.figures.n,
            cell("median_abs_log_error", f.figures.median_abs_log_error),
            cell("mean_abs_log_error", f.figures.mean_abs_log_error),
            cell("mape_pct", f.figures.mape_pct),
            cell("coverage_80.observed_pct", f.figures.coverage_80.observed_pct),
            cell("coverage_95.observed_pct", f.figures.coverage_95.observed_pct),
            cell("median_band_width_80_pct", f.figures.median_band_width_80_pct),
            cell("listings.mean_abs_error_pct", f.figures.listings.mean_abs_error_pct),
            cell("confidence.brier", f.figures.confidence.brier),
            cell("confidence.brier_skill", f.figures.confidence.brier_skill),
            f.figures.misses_total,
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// Observed coverage against nominal, with the binomial 90% range, per forecaster.
fn coverage_section(card: &Scorecard) -> String {
    let mut out = String::from(
        "<h2 id=\"coverage\">Band coverage against nominal</h2>\n<p>Each bar is the range of coverage a band \
         with exactly its nominal coverage shows 90% of the time on this many events; the dot is the coverage \
         observed. A dot outside its bar is a miscalibrated band.</p>\n",
    );
    let rows = card.forecasters.len() as u32;
    let (width, row_h, left) = (640u32, 26u32, 210u32);
    let height = 40 + rows * 2 * row_h;
    let x = |pct: f64| left as f64 + (pct - 60.0).clamp(0.0, 40.0) / 40.0 * (width - left - 20) as f64;
    let mut body = String::new();
    for tick in [60, 70, 80, 90, 100] {
        let tx = x(tick as f64);
        let _ = write!(
            body,
            "<line class=\"grid\" x1=\"{tx:.1}\" y1=\"20\" x2=\"{tx:.1}\" y2=\"{}\"/>\
             <text class=\"axis\" x=\"{tx:.1}\" y=\"14\" text-anchor=\"middle\">{tick}%</text>",
            height - 10
        );
    }
    let mut y = 30u32;
    for f in &card.forecasters {
        for c in [&f.figures.coverage_80, &f.figures.coverage_95] {
            let cy = y + row_h / 2;
            let _ = write!(
                body,
                "<text class=\"label\" x=\"4\" y=\"{}\">{} {}%</text>",
                cy + 4,
                esc(f.figures.name),
                c.nominal_pct
            );
            if let Some([low, high]) = c.binomial_90_range_pct {
                let _ = write!(
                    body,
                    "<rect class=\"range\" x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"10\"/>",
                    x(low),
                    cy - 5,
                    (x(high) - x(low)).max(1.0)
                );
            }
            let nominal = x(c.nominal_pct as f64);
            let _ = write!(
                body,
                "<line class=\"nominal\" x1=\"{nominal:.1}\" y1=\"{}\" x2=\"{nominal:.1}\" y2=\"{}\"/>",
                cy - 8,
                cy + 8
            );
            if let Some(observed) = c.observed_pct {
                let class = if c.within_binomial_90_range == Some(false) {
                    "dot outside"
                } else {
                    "dot"
                };
                let _ = write!(
                    body,
                    "<circle class=\"{class}\" cx=\"{:.1}\" cy=\"{cy}\" r=\"5\"/>",
                    x(observed)
                );
            }
            y += row_h;
        }
    }
    out.push_str(&svg(
        "coverage",
        width,
        height,
        "Band coverage against nominal",
        "Observed coverage of the 80% and 95% bands per forecaster, with the binomial 90% range of a calibrated band",
        &body,
    ));
    out.push_str(
        "\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Coverage by gap\"><table class=\"data\"><caption>Coverage, overall and by the gap since the company's last \
         event (observed %, inside/n, the binomial 90% range)</caption>\n<thead><tr><th scope=\"col\">forecaster</th>\
         <th scope=\"col\">band</th><th scope=\"col\">all</th><th scope=\"col\">under 6 months</th>\
         <th scope=\"col\">6-12 months</th><th scope=\"col\">1-2 years</th><th scope=\"col\">over 2 years</th></tr></thead>\n<tbody>\n",
    );
    for f in &card.forecasters {
        for (band, overall) in [("80%", &f.figures.coverage_80), ("95%", &f.figures.coverage_95)] {
            let mut cells = vec![coverage_cell(overall)];
            for g in &f.figures.coverage_by_gap {
                cells.push(coverage_cell(if band == "80%" {
                    &g.coverage_80
                } else {
                    &g.coverage_95
                }));
            }
            let _ = writeln!(
                out,
                "<tr><th scope=\"row\">{}</th><td>{band}</td>{}</tr>",
                esc(f.figures.name),
                cells.join("")
            );
        }
    }
    out.push_str("</tbody></table></div>\n");
    out
}

fn coverage_cell(c: &CoverageScore) -> String {
    let flag = if c.within_binomial_90_range == Some(false) {
        " class=\"outside\""
    } else {
        ""
    };
    format!(
        "<td{flag}>{}% ({}/{}) {}</td>",
        opt(c.observed_pct),
        c.inside,
        c.n,
        c.binomial_90_range_pct
            .map_or(String::new(), |[l, h]| format!("[{l}, {h}]"))
    )
}

/// The reliability diagram: stated confidence against the observed share within +/-10%.
fn reliability_section(card: &Scorecard) -> String {
    let mut out = String::from(
        "<h2 id=\"confidence\">Is the stated confidence right?</h2>\n<p>Every mark states a <code>confidence</code>: the \
         probability that the value lies within ±10% of the mark. Each point is a tenth of stated confidence: how often \
         the scored events in it landed within 10%, against what was stated (area: how many). A calibrated forecaster's \
         points lie on the diagonal.</p>\n",
    );
    let (size, pad) = (360u32, 40u32);
    let scale = (size - 2 * pad) as f64;
    let p = |v: f64| pad as f64 + v.clamp(0.0, 1.0) * scale;
    let mut body = format!(
        "<line class=\"grid\" x1=\"{pad}\" y1=\"{b}\" x2=\"{e}\" y2=\"{b}\"/><line class=\"grid\" x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\"/>\
         <line class=\"diagonal\" x1=\"{pad}\" y1=\"{b}\" x2=\"{e}\" y2=\"{pad}\"/>\
         <text class=\"axis\" x=\"{mid}\" y=\"{}\" text-anchor=\"middle\">stated confidence</text>\
         <text class=\"axis\" x=\"12\" y=\"{mid}\" transform=\"rotate(-90 12 {mid})\" text-anchor=\"middle\">observed within 10%</text>",
        size - 8,
        b = size - pad,
        e = size - pad,
        mid = size / 2,
    );
    for tick in [0.0, 0.5, 1.0] {
        let _ = write!(
            body,
            "<text class=\"axis\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{tick}</text><text class=\"axis\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{tick}</text>",
            p(tick),
            size - pad + 14,
            pad - 4,
            size as f64 - p(tick) + 4.0
        );
    }
    for (i, f) in card.forecasters.iter().enumerate() {
        for bin in &f.figures.confidence.reliability {
            if let (Some(stated), Some(observed)) = (bin.mean_stated, bin.observed) {
                let r = 2.0 + (bin.n as f64).sqrt();
                let _ = write!(
                    body,
                    "<circle class=\"series{i}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r:.1}\"/>",
                    p(stated),
                    size as f64 - p(observed)
                );
            }
        }
    }
    out.push_str("<div class=\"legend\">");
    for (i, f) in card.forecasters.iter().enumerate() {
        let _ = write!(out, "<span class=\"key series{i}\">{}</span>", esc(f.figures.name));
    }
    out.push_str("</div>\n");
    out.push_str(&svg(
        "reliability",
        size,
        size,
        "Reliability of the stated confidence",
        "Observed share within 10% of the mark against the mean stated confidence, per tenth of confidence and forecaster",
        &body,
    ));
    out.push_str(
        "\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Confidence and reliability\"><table class=\"data\"><caption>Brier score, base rate, skill and the reliability table \
         (bins with events)</caption>\n<thead><tr><th scope=\"col\">forecaster</th><th scope=\"col\">Brier</th>\
         <th scope=\"col\">base rate</th><th scope=\"col\">Brier of the base rate</th><th scope=\"col\">skill</th>\
         <th scope=\"col\">hits / n</th><th scope=\"col\">bins: stated → observed (n)</th></tr></thead>\n<tbody>\n",
    );
    for f in &card.forecasters {
        let c = &f.figures.confidence;
        let name = f.figures.name;
        let bins: Vec<String> = c
            .reliability
            .iter()
            .filter(|b| b.n > 0)
            .map(|b| format!("{} → {} ({})", opt(b.mean_stated), opt(b.observed), b.n))
            .collect();
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td></tr>",
            esc(name),
            figure(&format!("{name}.confidence.brier"), c.brier),
            figure(&format!("{name}.confidence.base_rate"), c.base_rate),
            opt(c.brier_base_rate),
            figure(&format!("{name}.confidence.brier_skill"), c.brier_skill),
            c.hits,
            c.n,
            bins.join("; ")
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// Each forecaster's |log error| at the scored events: box, whiskers and median.
fn errors_section(card: &Scorecard) -> String {
    let mut out = String::from(
        "<h2 id=\"errors\">Error distributions</h2>\n<p>|log error| at every scored event (0.1 is about 10%, 0.69 a factor of \
         2): the box holds the middle half, the line is the median, the whiskers reach the 5th and 95th percentiles.</p>\n",
    );
    let stats: Vec<(&str, [f64; 5])> = card
        .forecasters
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let mut errors: Vec<f64> = card
                .targets
                .iter()
                .filter(|t| t.kind == TargetKind::Event)
                .filter_map(|t| t.forecasts.get(i).and_then(|x| x.log_error).map(f64::abs))
                .collect();
            errors.sort_by(f64::total_cmp);
            let q = |p| percentile(&errors, p);
            Some((f.figures.name, [q(0.05)?, q(0.25)?, q(0.5)?, q(0.75)?, q(0.95)?]))
        })
        .collect();
    let top = stats.iter().map(|s| s.1[4]).fold(0.5f64, f64::max).min(6.0);
    let (width, row_h, left) = (640u32, 34u32, 210u32);
    let height = 30 + stats.len() as u32 * row_h;
    let x = |v: f64| left as f64 + v.clamp(0.0, top) / top * (width - left - 20) as f64;
    let mut body = String::new();
    for step in 0..=4 {
        let v = top * step as f64 / 4.0;
        let _ = write!(
            body,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"18\" x2=\"{x:.1}\" y2=\"{}\"/><text class=\"axis\" x=\"{x:.1}\" y=\"12\" text-anchor=\"middle\">{:.2}</text>",
            height - 4,
            v,
            x = x(v)
        );
    }
    for (row, (name, [p5, q1, q2, q3, p95])) in stats.iter().enumerate() {
        let cy = 24 + row as u32 * row_h + row_h / 2;
        let _ = write!(
            body,
            "<text class=\"label\" x=\"4\" y=\"{}\">{}</text><line class=\"whisker\" x1=\"{:.1}\" y1=\"{cy}\" x2=\"{:.1}\" y2=\"{cy}\"/>\
             <rect class=\"box series{row}\" x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"16\"/>\
             <line class=\"median\" x1=\"{m:.1}\" y1=\"{}\" x2=\"{m:.1}\" y2=\"{}\"/>",
            cy + 4,
            esc(name),
            x(*p5),
            x(*p95),
            x(*q1),
            cy - 8,
            (x(*q3) - x(*q1)).max(1.0),
            cy - 9,
            cy + 9,
            m = x(*q2)
        );
    }
    out.push_str(&svg(
        "errors",
        width,
        height,
        "Distribution of |log error| per forecaster",
        "Box plots of the absolute log error at every scored event",
        &body,
    ));
    out.push_str(
        "\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Error percentiles\"><table class=\"data\"><caption>|log error| percentiles at the scored events</caption>\n\
         <thead><tr><th scope=\"col\">forecaster</th><th scope=\"col\">5th</th><th scope=\"col\">25th</th>\
         <th scope=\"col\">median</th><th scope=\"col\">75th</th><th scope=\"col\">95th</th></tr></thead>\n<tbody>\n",
    );
    for (name, values) in &stats {
        let cells: Vec<String> = values.iter().map(|v| format!("<td>{:.3}</td>", v)).collect();
        let _ = writeln!(out, "<tr><th scope=\"row\">{}</th>{}</tr>", esc(name), cells.join(""));
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// Every listing and bankruptcy against the method's mark the day before, as multiples of that
/// mark: the outcome, and the 80% and 95% bands. Relative only, like everything this page shows
/// (`methodology::disclosure`): the dollars are for keys that may read them.
fn outcomes_section(card: &Scorecard) -> String {
    let outcomes: Vec<&Target> = card.targets.iter().filter(|t| t.kind != TargetKind::Event).collect();
    let mut out = String::from(
        "<h2 id=\"outcomes\">Listings and bankruptcies</h2>\n<p>Each outcome against the method's mark the day before \
         it, on a log scale centred on that mark (the line at 1×): its 80% band (dark) and 95% band (light), and the \
         outcome (diamond; a bankruptcy's value of $0 sits at the left edge).</p>\n",
    );
    let Some(method) = card.forecasters.first() else {
        return out;
    };
    // Ratios to the mark: the outcome is exp(log_error) times it.
    let ratio = |t: &Target| t.forecasts[0].log_error.map_or(0.0, f64::exp);
    let reach = outcomes
        .iter()
        .flat_map(|t| {
            let f = &t.forecasts[0];
            [f.band_95_rel.lower, f.band_95_rel.upper, ratio(t)]
        })
        .filter(|v| *v > 0.0)
        .map(|v| v.log10().abs())
        .fold(0.5f64, f64::max)
        .ceil();
    let (width, row_h, left) = (680u32, 18u32, 150u32);
    let height = 34 + outcomes.len() as u32 * row_h;
    let x = |v: f64| {
        let l = if v > 0.0 { v.log10() } else { -reach };
        left as f64 + (l + reach).clamp(0.0, 2.0 * reach) / (2.0 * reach) * (width - left - 16) as f64
    };
    let mut body = String::new();
    let mut decade = -reach;
    while decade <= reach {
        let v = 10f64.powf(decade);
        let _ = write!(
            body,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"20\" x2=\"{x:.1}\" y2=\"{}\"/><text class=\"axis\" x=\"{x:.1}\" y=\"14\" text-anchor=\"middle\">{}×</text>",
            height - 4,
            multiple(v),
            x = x(v)
        );
        decade += 1.0;
    }
    for (row, t) in outcomes.iter().enumerate() {
        let f = &t.forecasts[0];
        let cy = 28 + row as u32 * row_h + row_h / 2;
        let ox = x(ratio(t));
        let _ = write!(
            body,
            "<text class=\"label\" x=\"4\" y=\"{}\">{}</text>\
             <rect class=\"band95\" x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"10\"/>\
             <rect class=\"band80\" x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"10\"/>\
             <circle class=\"mark-dot\" cx=\"{:.1}\" cy=\"{cy}\" r=\"3.5\"/>\
             <path class=\"outcome {}\" d=\"M{ox:.1} {} l5 5 l-5 5 l-5 -5 z\"/>",
            cy + 4,
            esc(&t.slug),
            x(f.band_95_rel.lower),
            cy - 5,
            (x(f.band_95_rel.upper) - x(f.band_95_rel.lower)).max(1.0),
            x(f.band_80_rel.lower),
            cy - 5,
            (x(f.band_80_rel.upper) - x(f.band_80_rel.lower)).max(1.0),
            x(1.0),
            f.verdict.map_or("", Verdict::as_str),
            cy - 5,
        );
    }
    out.push_str(&svg(
        "outcomes",
        width,
        height,
        "Listings and bankruptcies against the mark the day before",
        "For each listing and bankruptcy, the outcome and the method's 80% and 95% bands the day before, as multiples of its mark, on a log scale",
        &body,
    ));
    let _ = write!(
        out,
        "\n<p>Verdicts for {}: {} hit (within ±10%), {} covered by the 80% band, {} by the 95% band only, {} missed.</p>\n",
        esc(method.figures.name),
        method.figures.outcome_verdicts.hit,
        method.figures.outcome_verdicts.covered_80,
        method.figures.outcome_verdicts.covered_95,
        method.figures.outcome_verdicts.miss
    );
    out.push_str(
        "<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Every outcome\"><table class=\"data\"><caption>Every outcome against the method's mark the day before: \
         how far the outcome was from the mark, the bands around the mark, the verdict</caption>\n<thead><tr><th scope=\"col\">company</th><th scope=\"col\">outcome</th>\
         <th scope=\"col\">date</th><th scope=\"col\">mark vs outcome</th>\
         <th scope=\"col\">80% band</th><th scope=\"col\">95% band</th><th scope=\"col\">verdict</th></tr></thead>\n<tbody>\n",
    );
    for t in &outcomes {
        let f = &t.forecasts[0];
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\"><a href=\"/explore/{slug}\">{slug}</a></th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            t.event_type.as_str(),
            t.occurred_on,
            f.error_pct().map_or("–".to_string(), |e| format!("{e:+}%")),
            relative_band(&f.band_80_rel),
            relative_band(&f.band_95_rel),
            f.verdict.map_or("–", Verdict::as_str),
            slug = esc(&t.slug),
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// A multiple of the mark as an axis label: 0.01, 0.1, 1, 10, 100.
fn multiple(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// A band as percentages of its mark: "−45% to +80%".
fn relative_band(band: &RelativeBand) -> String {
    format!(
        "{:+.0}% to {:+.0}%",
        (band.lower - 1.0) * 100.0,
        (band.upper - 1.0) * 100.0
    )
    .replace('-', "−")
}

fn misses_section(card: &Scorecard) -> String {
    let Some(method) = card.forecasters.first() else {
        return String::new();
    };
    let mut out = format!(
        "<h2 id=\"misses\">Misses</h2>\n<p>Scored events outside {}'s 95% band: {} of {}. Which company each was, and \
         its dollars, are for keys that may read its events.</p>\n\
         <div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Every miss\"><table class=\"data\"><caption>Every miss of the method</caption>\n<thead><tr>\
         <th scope=\"col\">date</th><th scope=\"col\">event</th><th scope=\"col\">value vs forecast</th>\
         <th scope=\"col\">95% band</th></tr></thead>\n<tbody>\n",
        esc(method.figures.name),
        method.figures.misses_total,
        method.figures.n
    );
    for m in &method.misses {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{:+.0}%</td><td>{}</td></tr>",
            m.occurred_on,
            m.event_type.as_str(),
            (m.log_error.exp() - 1.0) * 100.0,
            relative_band(&m.band_95_rel),
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// The method minus the last-event baseline: each difference with its bootstrap interval.
fn bootstrap_section(c: &Comparison, id: &str, heading: &str, other: &str) -> String {
    let mut out = format!(
        "<h2 id=\"{id}\">{heading}</h2>\n<p>{} minus {}: company-clustered \
         bootstrap ({} companies resampled, {} draws, seed {}). Each bar is a 95% interval of the difference; left of \
         zero, the method's error is smaller than {other}'s.</p>\n",
        esc(c.a),
        esc(c.b),
        c.companies,
        c.draws,
        c.seed
    );
    let (width, row_h, left) = (640u32, 30u32, 230u32);
    let height = 20 + c.differences.len() as u32 * row_h;
    let mut body = String::new();
    for (row, d) in c.differences.iter().enumerate() {
        let cy = 16 + row as u32 * row_h + row_h / 2;
        let Some([low, high]) = d.interval_95 else {
            continue;
        };
        let reach = low.abs().max(high.abs()).max(d.difference.unwrap_or(0.0).abs()) * 1.1;
        let span = (width - left - 20) as f64;
        let x = |v: f64| left as f64 + (v / reach + 1.0) / 2.0 * span;
        let _ = write!(
            body,
            "<text class=\"label\" x=\"4\" y=\"{}\">{}</text><line class=\"zero\" x1=\"{z:.1}\" y1=\"{}\" x2=\"{z:.1}\" y2=\"{}\"/>\
             <rect class=\"interval {}\" x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"8\"/>",
            cy + 4,
            esc(d.figure),
            cy - 10,
            cy + 10,
            d.verdict,
            x(low),
            cy - 4,
            (x(high) - x(low)).max(1.0),
            z = x(0.0)
        );
        if let Some(diff) = d.difference {
            let _ = write!(
                body,
                "<circle class=\"dot\" cx=\"{:.1}\" cy=\"{cy}\" r=\"4\"/>",
                x(diff)
            );
        }
    }
    out.push_str(&svg(
        id,
        width,
        height,
        &format!("Bootstrap intervals of the method minus {other}"),
        &format!("For each figure, the difference between the method and {other} with its 95% bootstrap interval"),
        &body,
    ));
    let _ = write!(
        out,
        "\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Bootstrap differences against {other}\"><table class=\"data\"><caption>Differences with their 95% intervals</caption>\n<thead><tr>\
         <th scope=\"col\">figure</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th>\
         <th scope=\"col\">difference</th><th scope=\"col\">95% interval</th><th scope=\"col\">verdict</th></tr></thead>\n<tbody>\n",
        esc(c.a),
        esc(c.b),
    );
    for d in &c.differences {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(d.figure),
            opt(d.a),
            opt(d.b),
            opt(d.difference),
            d.interval_95.map_or("–".to_string(), |[l, h]| format!("[{l}, {h}]")),
            verdict_words(d.verdict).replace("the baseline", other)
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}
