//! `/scorecard`: the scores made visible. Static HTML with inline SVG charts: no script is
//! needed to read it, every chart has its numbers in a table beside it, and every figure
//! carries `data-figure="PATH"` with the number `/v1/scorecard` serves at that path, so a test
//! can hold the page to the document. Everything on it is aggregate: no company's event value.

use std::fmt::Write;

use crate::present::esc;

use crate::dataset::Dataset;
use crate::methodology::round_to;
use crate::methodology::scorecard::{
    ByNumber, Comparison, CoverageScore, Errors, Knot, Number, Scorecard, TargetKind, BUCKET_LABELS,
};
use crate::present::headline::{range_words, verdict_words};
use crate::present::{figure, headline, opt, page, svg, PageContent};
use crate::render::indices::IndexSummary;

/// The scorecard page.
pub fn scorecard(dataset: &Dataset, card: &Scorecard, indices: &[IndexSummary]) -> PageContent {
    let mut main = String::new();
    let month_ends = card.month_end.as_ref().map_or(0, |m| m.n);
    let events = card.event_day.get(TargetKind::Event).map_or(0, |e| e.n);
    let _ = write!(
        main,
        "<h1>Scorecard</h1>\n<p class=\"lede\">Three numbers on three scores, on dataset {} ({month_ends} company \
         month-ends, {events} reported values forecast from the data before their day, and every listing, sale and \
         failure marked the day before). Every number here is the one <a href=\"/v1/scorecard\">/v1/scorecard</a> \
         serves, and each can be recomputed from <a href=\"/v1/scorecard/targets\">every scored row</a>.</p>\n",
        dataset.info.dataset_version
    );
    main.push_str(&headline(card));
    main.push_str(&numbers_section(card));
    main.push_str(&findings_section(card));
    main.push_str(&coverage_section(card));
    main.push_str(&confidence_section(card));
    main.push_str(&latest_section(card));
    main.push_str(&profiles_section(card));
    main.push_str(&comparisons_section(card));
    main.push_str(&indices_section(indices));
    page("Scorecard · Valuation Marks", &main)
}

/// Every score against every number: the table the findings rest on.
fn numbers_section(card: &Scorecard) -> String {
    let mut out = String::from("<h2 id=\"numbers\">The three numbers</h2>\n<dl class=\"numbers\">");
    for info in &card.numbers {
        let _ = write!(
            out,
            "<div><dt>{}</dt><dd>{}</dd></div>",
            esc(info.name),
            esc(info.description)
        );
    }
    out.push_str(
        "</dl>\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Scores by number\"><table class=\"data\">\
         <caption>Median and mean |log error| of each number on each score; lower is better</caption>\n<thead><tr>\
         <th scope=\"col\">score</th><th scope=\"col\">n</th><th scope=\"col\">mark</th>\
         <th scope=\"col\">next print</th><th scope=\"col\">last print</th></tr></thead>\n<tbody>\n",
    );
    let mut row = |label: &str, path: &str, n: usize, errors: &ByNumber<Errors>| {
        let cells: String = Number::ALL
            .iter()
            .map(|&number| {
                let e = errors.get(number);
                let name = number.name();
                format!(
                    "<td>{} <span class=\"muted\">({})</span></td>",
                    figure(
                        &format!("{path}.{name}.median_abs_log_error"),
                        e.median_abs_log_error.map(|v| round_to(v, 4))
                    ),
                    figure(
                        &format!("{path}.{name}.mean_abs_log_error"),
                        e.mean_abs_log_error.map(|v| round_to(v, 4))
                    ),
                )
            })
            .collect();
        let _ = writeln!(out, "<tr><th scope=\"row\">{}</th><td>{n}</td>{cells}</tr>", esc(label));
    };
    if let Some(m) = &card.month_end {
        row(
            "Value today: month-ends against the value bridged between prints (S2)",
            "month_end.bridged",
            m.n,
            &m.bridged,
        );
        row(
            "Next reported value: month-ends (S1)",
            "month_end.next_reported",
            m.n,
            &m.next_reported,
        );
    }
    for (kind, label) in [
        (TargetKind::Event, "Next reported value: event day"),
        (TargetKind::Listing, "Listings, marked the day before"),
        (TargetKind::Sale, "Closed sales, marked the day before"),
        (TargetKind::Failure, "Failures, marked the day before"),
    ] {
        if let Some(e) = card.event_day.get(kind) {
            row(label, &format!("event_day.{}.errors", kind.as_str()), e.n, &e.errors);
        }
    }
    out.push_str(
        "</tbody></table></div>\n<p class=\"note\">In each cell: the median |log error|, then the mean in brackets. \
                  A |log error| of 0.10 is about 10%; 0.69 is a factor of two.</p>\n",
    );
    out
}

fn findings_section(card: &Scorecard) -> String {
    let mut out =
        String::from("<h2 id=\"findings\">Which number wins which score, and why</h2>\n<ul class=\"findings\">\n");
    for finding in &card.findings {
        let _ = writeln!(out, "<li>{}</li>", esc(finding));
    }
    out.push_str("</ul>\n");
    out
}

/// One row of the coverage chart.
struct CoverageRow<'a> {
    label: String,
    path: String,
    score: &'a CoverageScore,
}

/// Observed coverage of the mark's bands against nominal, with the binomial 90% range.
fn coverage_section(card: &Scorecard) -> String {
    let mut rows: Vec<CoverageRow<'_>> = Vec::new();
    if let Some(m) = &card.month_end {
        for (score, band) in [(&m.coverage_80, "80"), (&m.coverage_95, "95")] {
            rows.push(CoverageRow {
                label: format!("month-ends {band}%"),
                path: format!("month_end.coverage_{band}.observed_pct"),
                score,
            });
        }
        for (b, g) in m.coverage_by_gap.iter().enumerate() {
            for (score, band) in [(&g.coverage_80, "80"), (&g.coverage_95, "95")] {
                rows.push(CoverageRow {
                    label: format!("{} {band}%", BUCKET_LABELS[b]),
                    path: format!("month_end.coverage_by_gap.{b}.coverage_{band}.observed_pct"),
                    score,
                });
            }
        }
    }
    for kind in TargetKind::ALL {
        if let Some(e) = card.event_day.get(kind) {
            for (score, band) in [(&e.coverage_80, "80"), (&e.coverage_95, "95")] {
                rows.push(CoverageRow {
                    label: format!("event day, {} {band}%", kind.as_str()),
                    path: format!("event_day.{}.coverage_{band}.observed_pct", kind.as_str()),
                    score,
                });
            }
        }
    }
    let mut out = String::from(
        "<h2 id=\"coverage\">The bands against their nominal coverage</h2>\n<p>The bands are for the next reported \
         value. Each bar is the range of coverage a band with exactly its nominal coverage shows 90% of the time on \
         this many rows (as if they were independent; one company's month-ends are not, so the true range is \
         wider); the dot is the coverage observed.</p>\n",
    );
    let (width, row_h, left) = (640u32, 24u32, 200u32);
    let height = 30 + rows.len() as u32 * row_h;
    let x = |pct: f64| left as f64 + (pct - 40.0).clamp(0.0, 60.0) / 60.0 * (width - left - 20) as f64;
    let mut body = String::new();
    for tick in [40, 60, 80, 100] {
        let tx = x(tick as f64);
        let _ = write!(
            body,
            "<line class=\"grid\" x1=\"{tx:.1}\" y1=\"20\" x2=\"{tx:.1}\" y2=\"{}\"/>\
             <text class=\"axis\" x=\"{tx:.1}\" y=\"14\" text-anchor=\"middle\">{tick}%</text>",
            height - 6
        );
    }
    for (i, row) in rows.iter().enumerate() {
        let cy = 24 + i as u32 * row_h + row_h / 2;
        let c = row.score;
        let _ = write!(
            body,
            "<text class=\"label\" x=\"4\" y=\"{}\">{}</text>",
            cy + 4,
            esc(&row.label)
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
        let nominal = x(f64::from(c.nominal_pct));
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
    }
    out.push_str(&svg(
        "coverage",
        width,
        height,
        "Band coverage against nominal",
        "Observed coverage of the mark's 80% and 95% bands at month-ends (overall and by silence) and on event days, \
         with the binomial 90% range of a calibrated band",
        &body,
    ));
    out.push_str(
        "\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Coverage\"><table class=\"data\">\
         <caption>Coverage (observed %, inside/n, the binomial 90% range)</caption>\n<thead><tr>\
         <th scope=\"col\">rows</th><th scope=\"col\">observed</th><th scope=\"col\">inside / n</th>\
         <th scope=\"col\">calibrated range</th></tr></thead>\n<tbody>\n",
    );
    for row in &rows {
        let c = row.score;
        let flag = if c.within_binomial_90_range == Some(false) {
            " class=\"outside\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td{flag}>{}%</td><td>{}/{}</td><td>{}</td></tr>",
            esc(&row.label),
            figure(&row.path, c.observed_pct),
            c.inside,
            c.n,
            range_words(c)
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}

fn confidence_section(card: &Scorecard) -> String {
    let Some(m) = &card.month_end else {
        return String::new();
    };
    let c = &m.confidence;
    let four = |v: Option<f64>| v.map(|v| round_to(v, 4));
    format!(
        "<h2 id=\"confidence\">confidence: a track record</h2>\n<p>Each mark's <code>confidence</code> is the share \
         of past month-end marks whose next reported value came within +/-{tol}% of the mark, the same for every \
         company on a day: historically {stated} on average at these month-ends. It is not a company-specific \
         probability: as a forecast it has no skill.</p>\n<dl class=\"facts\">\
         <div><dt>mean stated</dt><dd>{}</dd></div><div><dt>share that landed</dt><dd>{}</dd></div>\
         <div><dt>Brier score</dt><dd>{}</dd></div><div><dt>Brier skill against the base rate</dt><dd>{}</dd></div>\
         <div><dt>month-ends</dt><dd>{}</dd></div></dl>\n",
        figure("month_end.confidence.mean_stated", four(c.mean_stated)),
        figure("month_end.confidence.base_rate", four(c.base_rate)),
        figure("month_end.confidence.brier", four(c.brier)),
        figure("month_end.confidence.brier_skill", four(c.brier_skill)),
        c.n,
        tol = c.tolerance_pct,
        stated = c
            .mean_stated
            .map_or("–".to_string(), |s| format!("about {:.0} in 100", s * 100.0)),
    )
}

fn latest_section(card: &Scorecard) -> String {
    let Some(l) = &card.latest_private else {
        return String::new();
    };
    let mut out = format!(
        "<h2 id=\"latest\">Today's marks against their last prints</h2>\n<p>The latest mark of each of the {} private \
         companies over its last reported value, by how long the company has been quiet: the drift the method adds \
         for silence, as it stands today.</p>\n",
        l.n
    );
    let (width, row_h, left) = (640u32, 24u32, 120u32);
    let height = 30 + l.by_silence.len() as u32 * row_h;
    let span = (width - left - 60) as f64;
    // Ratios from 0.5 to 1.5, 1 in the middle.
    let x = |ratio: f64| left as f64 + ((ratio - 0.5).clamp(0.0, 1.0)) * span;
    let mut body = String::new();
    for tick in [0.5, 0.75, 1.0, 1.25, 1.5] {
        let tx = x(tick);
        let _ = write!(
            body,
            "<line class=\"grid\" x1=\"{tx:.1}\" y1=\"20\" x2=\"{tx:.1}\" y2=\"{}\"/>\
             <text class=\"axis\" x=\"{tx:.1}\" y=\"14\" text-anchor=\"middle\">{tick}x</text>",
            height - 6
        );
    }
    for (i, cell) in l.by_silence.iter().enumerate() {
        let cy = 24 + i as u32 * row_h + row_h / 2;
        let _ = write!(
            body,
            "<text class=\"label\" x=\"4\" y=\"{}\">{} (n={})</text>",
            cy + 4,
            esc(cell.label),
            cell.n
        );
        if let Some(median) = cell.median_mark_over_last {
            let (from, to) = (x(1.0), x(median));
            let _ = write!(
                body,
                "<rect class=\"bar\" x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"10\"/>",
                from.min(to),
                cy - 5,
                (to - from).abs().max(1.0)
            );
        }
    }
    out.push_str(&svg(
        "latest",
        width,
        height,
        "Median mark over last print, by silence",
        "For each silence, the median of the private companies' latest marks over their last reported values",
        &body,
    ));
    out.push_str(
        "\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Marks against last prints\"><table class=\"data\">\
         <caption>Median mark over last print, by silence</caption>\n<thead><tr><th scope=\"col\">silence</th>\
         <th scope=\"col\">companies</th><th scope=\"col\">median mark / last print</th></tr></thead>\n<tbody>\n",
    );
    for (i, cell) in l.by_silence.iter().enumerate() {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td></tr>",
            esc(cell.label),
            cell.n,
            figure(
                &format!("latest_private.by_silence.{i}.median_mark_over_last"),
                cell.median_mark_over_last.map(|v| round_to(v, 4))
            )
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}

fn profiles_section(card: &Scorecard) -> String {
    let Some(f) = &card.in_force else {
        return String::new();
    };
    let mut out = format!(
        "<h2 id=\"profiles\">The drift in force</h2>\n<p>What each number adds to the last reported value after a \
         silence, as learnt up to {}: the mark's fair-value profile (how values moved between prints of companies \
         quiet as long, never rising after a year) and the next-print profile (how the next reported value compared \
         with the last).</p>\n",
        f.day
    );
    let (width, height, left, top) = (640u32, 240u32, 50u32, 16u32);
    let all: Vec<&Knot> = f.fair_value_profile.iter().chain(&f.next_print_profile).collect();
    let low = all.iter().map(|k| k.drift).fold(0.0f64, f64::min) - 0.05;
    let high = all.iter().map(|k| k.drift).fold(0.0f64, f64::max) + 0.05;
    let plot_w = (width - left - 20) as f64;
    let plot_h = (height - top - 30) as f64;
    let x = |years: f64| left as f64 + years / 3.0 * plot_w;
    let y = |drift: f64| top as f64 + (high - drift) / (high - low) * plot_h;
    let mut body = String::new();
    for years in [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0] {
        let _ = write!(
            body,
            "<text class=\"axis\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{years}y</text>",
            x(years),
            height - 8
        );
    }
    let zero = y(0.0);
    let _ = write!(
        body,
        "<line class=\"zero\" x1=\"{left}\" y1=\"{zero:.1}\" x2=\"{:.1}\" y2=\"{zero:.1}\"/>",
        x(3.0)
    );
    for (class, knots) in [("fair", &f.fair_value_profile), ("next", &f.next_print_profile)] {
        let points: Vec<String> = knots
            .iter()
            .map(|k| format!("{:.1},{:.1}", x(k.years), y(k.drift)))
            .collect();
        let _ = write!(
            body,
            "<polyline class=\"profile {class}\" points=\"{}\"/>",
            points.join(" ")
        );
    }
    out.push_str(&svg(
        "profiles",
        width,
        height,
        "The fair-value and next-print profiles",
        "Log drift added to the last reported value after each silence, for the mark (fair value) and for the next-print forecast",
        &body,
    ));
    out.push_str(
        "\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Profiles\"><table class=\"data\">\
         <caption>Drift after each silence (log; +0.10 is about +10%)</caption>\n<thead><tr><th scope=\"col\">silence</th>\
         <th scope=\"col\">mark (fair value)</th><th scope=\"col\">next print</th></tr></thead>\n<tbody>\n",
    );
    let mut years: Vec<f64> = all.iter().map(|k| k.years).collect();
    years.sort_by(f64::total_cmp);
    years.dedup();
    let at = |knots: &[Knot], years: f64| {
        knots
            .iter()
            .find(|k| k.years == years)
            .map_or("–".into(), |k| format!("{:+.4}", k.drift))
    };
    for y in years {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{y} years</th><td>{}</td><td>{}</td></tr>",
            at(&f.fair_value_profile, y),
            at(&f.next_print_profile, y)
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}

fn comparisons_section(card: &Scorecard) -> String {
    let mut out = String::from(
        "<h2 id=\"bootstrap\">Differences with their intervals</h2>\n<p>A minus B on each score: company-clustered \
         bootstrap (whole companies resampled with replacement, 1000 draws, a fixed seed). Below zero, A's error is \
         smaller.</p>\n<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Bootstrap differences\">\
         <table class=\"data\"><caption>Differences of |log error| with their 95% intervals</caption>\n<thead><tr>\
         <th scope=\"col\">score</th><th scope=\"col\">A</th><th scope=\"col\">B</th><th scope=\"col\">figure</th>\
         <th scope=\"col\">A</th><th scope=\"col\">B</th><th scope=\"col\">A - B</th><th scope=\"col\">95% interval</th>\
         <th scope=\"col\">verdict</th></tr></thead>\n<tbody>\n",
    );
    for c in &card.comparisons {
        out.push_str(&comparison_rows(c));
    }
    out.push_str("</tbody></table></div>\n");
    out
}

fn comparison_rows(c: &Comparison) -> String {
    let number = |name: &str| {
        Number::ALL
            .into_iter()
            .find(|n| n.name() == name)
            .unwrap_or(Number::Mark)
    };
    let mut out = String::new();
    for d in &c.differences {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(c.score),
            esc(c.a),
            esc(c.b),
            esc(d.figure),
            opt(d.a),
            opt(d.b),
            opt(d.difference),
            d.interval_95.map_or("–".to_string(), |[l, h]| format!("[{l}, {h}]")),
            esc(&verdict_words(d.verdict, number(c.a), number(c.b)))
        );
    }
    out
}

/// Each index as published (weights capped) beside where plain value weights would have taken
/// it, and how much of the uncapped index its largest company was.
fn indices_section(indices: &[IndexSummary]) -> String {
    if indices.is_empty() {
        return String::new();
    }
    let cap = marks_format::rules::weights::WEIGHT_CAP * 100.0;
    let mut out = format!(
        "<h2 id=\"indices\">The indices, capped and not</h2>\n<p>Each index weighs its companies by value with no \
         weight above {cap}% (below ten companies, equally); a sector with fewer than {} companies marked on the latest day \
         counts in \"other\", and each index starts on the first day from which it holds that many on every day. Beside each, where plain value weights would have taken it from the same 100: a value-weighted \
         index of private companies is mostly its two or three largest.</p>\n\
         <div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Indices capped and not\"><table class=\"data\">\
         <caption>Levels on each index's last day</caption>\n<thead><tr><th scope=\"col\">index</th>\
         <th scope=\"col\">date</th><th scope=\"col\">companies</th><th scope=\"col\">capped (published)</th>\
         <th scope=\"col\">value-weighted</th><th scope=\"col\">largest company's share, uncapped</th></tr></thead>\n<tbody>\n",
        marks_format::rules::weights::MIN_SECTOR_COMPANIES
    );
    for (i, s) in indices.iter().enumerate() {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}%</td></tr>",
            esc(&s.name),
            s.date,
            s.constituents,
            figure(&format!("indices.{i}.level"), Some(s.level)),
            figure(&format!("indices.{i}.uncapped_level"), Some(s.uncapped_level)),
            round_to(s.largest_share_uncapped * 100.0, 1)
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}
