//! `/`: what the service is, the versions and how fresh the data is, the headline figures, a
//! quickstart.

use std::fmt::Write;

use marks_format::frame::escape_html as esc;

use crate::dataset::Dataset;
use crate::methodology::scorecard::Scorecard;
use crate::methodology::METHODOLOGY_VERSION;
use crate::present::{headline, page};

/// The home page.
pub fn home(dataset: &Dataset, scorecard: &Scorecard) -> Vec<u8> {
    let info = &dataset.info;
    let events: usize = dataset.companies.iter().map(|c| c.events.len()).sum();
    let mut main = String::new();
    let _ = write!(
        main,
        "<h1>Valuation marks for private companies</h1>\n\
         <p class=\"lede\">A read-only HTTP/JSON API: for each company a latest mark with 80% and 95% bands and a \
         confidence, a daily mark series, the append-only history of the valuation events behind it, and an \
         Ed25519-signed resolution record that auditors verify offline.</p>\n\
         <dl class=\"facts\"><div><dt>Dataset version</dt><dd>{version}</dd></div>\
         <div><dt>Methodology</dt><dd>{METHODOLOGY_VERSION}</dd></div>\
         <div><dt>As of</dt><dd>{as_of}</dd></div>\
         <div><dt>Companies</dt><dd>{companies}</dd></div>\
         <div><dt>Events</dt><dd>{events}</dd></div>\
         <div><dt>Data</dt><dd>{mode}, {provenance}</dd></div></dl>\n\
         <p class=\"note\">{disclaimer}</p>\n",
        version = info.dataset_version,
        as_of = info.as_of,
        companies = dataset.companies.len(),
        mode = info.data_mode.as_str(),
        provenance = info.provenance.as_str(),
        disclaimer = esc(&info.disclaimer),
    );
    main.push_str("<h2>How good are the marks?</h2>\n");
    main.push_str(&headline(scorecard));
    main.push_str("<p><a href=\"/scorecard\">The whole scorecard</a>: every forecaster, coverage, the confidence claim, every listing and bankruptcy.</p>\n");
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
    page("Valuation Marks", "/", &main)
}
