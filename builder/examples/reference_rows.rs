//! Writes the method's numbers for a dataset in the layout of the methodology's reference
//! implementation (`reference_v050.py`): `golden_latest.csv` (every company on `as_of`),
//! `golden_events.csv` (every event-day target), `golden_monthends.csv` (every scored month-end)
//! and `golden_series_<slug>.csv` for each slug asked (daily), unrounded, so that
//! `tools/crosscheck_reference.py --rows DIR` can compare them with the reference's number for
//! number. Also prints the scorecard as `marks build` does.
//!
//! Usage: cargo run --release -p marks-builder --example reference_rows -- DATASET_DIR OUT_DIR
//! [SLUG ...]

use std::fmt::Write as _;
use std::path::Path;

use marks_builder::dataset::Dataset;
use marks_builder::methodology::bands::MonthEnd;
use marks_builder::methodology::history::{History, OutcomeKind};
use marks_builder::methodology::scorecard::{scored, within_tolerance, Number};
use marks_builder::methodology::Method;
use marks_format::rules::day::Day;

/// Days since 1970-01-01, the day numbers of the reference implementation.
fn unix_day(day: Day) -> i32 {
    day.0 - 2_440_588
}

/// Full precision, as the reference's `%.12g` at least.
fn f(value: f64) -> String {
    format!("{value:e}")
}

fn write(dir: &Path, name: &str, header: &str, rows: &[String]) -> std::io::Result<()> {
    let mut text = String::from(header);
    text.push('\n');
    for row in rows {
        text.push_str(row);
        text.push('\n');
    }
    std::fs::write(dir.join(name), text)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(source), Some(out)) = (args.next(), args.next()) else {
        return Err("usage: reference_rows DATASET_DIR OUT_DIR [SLUG ...]".into());
    };
    let slugs: Vec<String> = args.collect();
    let out = Path::new(&out);
    std::fs::create_dir_all(out)?;
    let dataset = Dataset::load(Path::new(&source))?;
    let method = Method::new(&dataset);
    let fit = &method.fit;
    let as_of = dataset.info.as_of;
    let companies = &dataset.companies;

    let mut latest = Vec::new();
    for (company, history) in companies.iter().zip(&fit.histories) {
        if history.anchors.first().is_none_or(|a| a.day > as_of) {
            continue;
        }
        let status = match history.outcome.filter(|o| o.day <= as_of).map(|o| o.kind()) {
            None => "private",
            Some(OutcomeKind::Listing) => "listed",
            Some(OutcomeKind::Failure) => "failed",
            Some(OutcomeKind::Sale) => "sold",
        };
        let Some(m) = fit.marked(history, as_of, true) else {
            continue;
        };
        let anchor = &company.events[m.anchor.event];
        let (lo80, hi80) = m.bands.band80(m.x);
        let (lo95, hi95) = m.bands.band95(m.x);
        latest.push(format!(
            "{},{status},{as_of},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            company.slug,
            anchor.event_id,
            anchor.event_type,
            anchor.occurred_on,
            f(m.anchor.log_value.exp()),
            as_of.days_since(m.anchor.day),
            f(m.drift),
            f(m.x.exp()),
            f((m.x - m.anchor.log_value).exp()),
            f(lo80),
            f(hi80),
            f(lo95),
            f(hi95),
            f(m.bands.confidence),
            f(m.x_next.exp()),
        ));
    }
    write(
        out,
        "golden_latest.csv",
        "slug,status,as_of,anchor_id,anchor_type,anchor_date,anchor_usd,days_since,mu,mark_usd,mark_over_last,lo80,hi80,lo95,hi95,confidence,next_usd",
        &latest,
    )?;

    let events: Vec<String> = method
        .scorecard
        .targets
        .iter()
        .map(|t| {
            let q = t.band_offsets;
            let e = t.error(Number::Mark);
            format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                t.slug,
                t.event_id,
                t.kind.as_str(),
                t.occurred_on,
                unix_day(t.marked_on),
                f(t.gap_years),
                f(t.mark_log),
                f(t.observed_log),
                f(e),
                f(q[0]),
                f(q[1]),
                f(q[2]),
                f(q[3]),
                u8::from(t.inside_80()),
                u8::from(t.inside_95()),
                f(t.confidence),
                u8::from(t.hit()),
                f(t.next_print_log),
            )
        })
        .collect();
    write(
        out,
        "golden_events.csv",
        "slug,event_id,kind,date,mark_day,gap_years,x,y,e,q10,q90,q025,q975,in80,in95,confidence,hit20,x_next",
        &events,
    )?;

    let month_ends: Vec<String> = fit
        .month_ends
        .iter()
        .map(|row: &MonthEnd| {
            let s = scored(fit, row);
            let q = s.band_offsets;
            let anchor = &companies[row.company].events[row.anchor.event];
            let (e1, e2) = (s.s1(Number::Mark), s.s2(Number::Mark));
            format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                companies[row.company].slug,
                row.day,
                unix_day(row.day),
                f(row.gap_years),
                anchor.event_id,
                anchor.event_type,
                f(row.x),
                f(row.next.log_value),
                row.next.day,
                row.next.kind.as_str(),
                f(row.bridged),
                f(e1),
                f(e2),
                f(q[0]),
                f(q[1]),
                f(q[2]),
                f(q[3]),
                u8::from(s.inside_80()),
                u8::from(s.inside_95()),
                f(s.confidence),
                u8::from(within_tolerance(e1)),
                s.residuals_known,
            )
        })
        .collect();
    write(
        out,
        "golden_monthends.csv",
        "slug,date,day,gap_years,anchor_id,anchor_type,x,y_next,next_date,next_kind,y_bridge,e1,e2,q10,q90,q025,q975,in80,in95,confidence,hit20,n_res",
        &month_ends,
    )?;

    for slug in &slugs {
        let Some(position) = companies.iter().position(|c| &c.slug == slug) else {
            return Err(format!("no company {slug}").into());
        };
        let history: &History = &fit.histories[position];
        let marks = fit.marks(position, &companies[position]);
        let mut rows = Vec::new();
        for point in &marks.series {
            let Some(m) = fit.marked(history, point.day, true) else {
                continue;
            };
            let anchor = &companies[position].events[m.anchor.event];
            let mut row = format!(
                "{},{},{},{},{},{},{}",
                unix_day(point.day),
                point.day,
                anchor.event_id,
                f(m.gap_years),
                f(m.drift),
                f(m.x),
                f(point.mark)
            );
            for edge in [point.band80.0, point.band80.1, point.band95.0, point.band95.1] {
                let _ = write!(row, ",{}", f(edge));
            }
            let _ = write!(row, ",{},{}", f(m.bands.confidence), m.bands.n);
            rows.push(row);
        }
        write(
            out,
            &format!("golden_series_{slug}.csv"),
            "day,date,anchor_id,gap_years,mu,x,mark_usd,lo80,hi80,lo95,hi95,confidence,n_res",
            &rows,
        )?;
    }
    print!("{}", marks_builder::present::text::scorecard_text(&method.scorecard));
    Ok(())
}
