//! `/`: what the service is, the versions and how fresh the data is, the headline figures, a
//! quickstart.

use std::fmt::Write;

use crate::present::esc;

use crate::dataset::Dataset;
use crate::methodology::scorecard::Scorecard;
use crate::methodology::METHODOLOGY_VERSION;
use crate::present::{headline, page, PageContent};
use marks_format::rules::day::Day;

/// The home page.
pub fn home(dataset: &Dataset, scorecard: &Scorecard) -> PageContent {
    let info = &dataset.info;
    let events: usize = dataset.companies.iter().map(|c| c.effective().count()).sum();
    let fresh = Freshness::of(dataset);
    let mut main = String::new();
    let _ = write!(
        main,
        "<h1>Valuation marks for private companies</h1>\n\
         <p class=\"lede\">A read-only HTTP/JSON API: for each company a latest mark with 80% and 95% bands and a \
         confidence, a daily mark series, the append-only history of the valuation events behind it, and an \
         Ed25519-signed resolution record that auditors verify offline.</p>\n\
         <dl class=\"facts\"><div><dt>Dataset version</dt><dd>{version}</dd></div>\
         <div><dt>Methodology</dt><dd>{METHODOLOGY_VERSION}</dd></div>\
         <div><dt>Marks as of</dt><dd>{as_of}</dd></div>\
         <div><dt>Newest event</dt><dd data-fact=\"newest_event\">{newest}</dd></div>\
         <div><dt>Median age of a company's last event</dt><dd data-fact=\"median_last_event_days\">{median_age} days</dd></div>\
         <div><dt>Companies</dt><dd>{companies}</dd></div>\
         <div><dt>Events</dt><dd>{events}</dd></div>\
         <div><dt>Data</dt><dd>{mode}, {provenance}</dd></div></dl>\n\
         <p class=\"note\">How fresh this is: the newest reported event is from {newest}, and at least half the companies \
         were last reported {median_age} days or more before the marks' date. A quiet company's mark is today's value \
         estimate: its last reported value moved by how values moved between prints of companies quiet as long, \
         with the forecast of its next reported valuation beside it; every company page says which and why.</p>\n\
         <p class=\"note\">{disclaimer}</p>\n",
        version = info.dataset_version,
        as_of = info.as_of,
        newest = fresh.newest_event.map_or("none".to_string(), |d| d.to_string()),
        median_age = fresh.median_last_event_days.map_or("–".to_string(), |d| d.to_string()),
        companies = dataset.companies.len(),
        mode = info.data_mode.as_str(),
        provenance = info.provenance.as_str(),
        disclaimer = esc(&info.disclaimer),
    );
    main.push_str("<h2>How good are the marks?</h2>\n");
    main.push_str(&headline(scorecard));
    main.push_str("<p><a href=\"/scorecard\">The whole scorecard</a>: the mark, the next-print forecast and the last print on the value today and on the next reported value, the bands' coverage, confidence as a track record.</p>\n");
    let key = info.quickstart_key.as_deref().unwrap_or("YOUR_API_KEY");
    let demo = if info.quickstart_key.is_some() {
        "<p>This is the bundled sample, served with public demo keys (demo only).</p>\n"
    } else {
        ""
    };
    let _ = write!(
        main,
        "<h2>Quickstart</h2>\n{demo}<pre><code>curl -s -H 'X-API-Key: {key}' \\\n  '<span data-origin>http://HOST:PORT</span>/v1/companies?limit=3&amp;sort=-value_usd'</code></pre>\n\
         <p>Every operation and field: the <a href=\"/docs\">API reference</a>, from the \
         <a href=\"/v1/openapi.json\">OpenAPI document</a>. See a company's marks, bands and events in the \
         <a href=\"/explore\">explorer</a> with your key.</p>\n",
        key = esc(key),
    );
    page("Valuation Marks", &main)
}

/// How fresh a dataset is: its newest event, and the median number of days from a company's last
/// event to `as_of`.
struct Freshness {
    newest_event: Option<Day>,
    median_last_event_days: Option<i32>,
}

impl Freshness {
    fn of(dataset: &Dataset) -> Freshness {
        let as_of = dataset.info.as_of;
        let mut ages: Vec<i32> = dataset
            .companies
            .iter()
            .filter_map(|c| c.effective().last())
            .map(|e| as_of.days_since(e.occurred_on))
            .collect();
        ages.sort_unstable();
        Freshness {
            newest_event: dataset
                .companies
                .iter()
                .filter_map(|c| c.effective().last())
                .map(|e| e.occurred_on)
                .max(),
            // The lower middle for an even count: a whole number of days, never more than half
            // the companies above it.
            median_last_event_days: ages.get(ages.len().saturating_sub(1) / 2).copied(),
        }
    }
}
