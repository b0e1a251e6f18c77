//! What people read rather than parse: the pages the builder renders into the snapshot and the
//! scorecard as `marks build` prints it, both from the numbers `methodology` computed once.

pub mod headline;
pub mod home;
pub mod scorecard_page;
pub mod text;

use std::fmt::Write;

use crate::methodology::scorecard::Scorecard;
use crate::present::headline::number;

pub(crate) fn opt(value: Option<f64>) -> String {
    number(value)
}

/// A number as served, in an element a test can find: `data-figure="NAME"`.
pub(crate) fn figure(name: &str, value: Option<f64>) -> String {
    format!("<span data-figure=\"{}\">{}</span>", esc(name), opt(value))
}

/// Text made safe for HTML element content and attribute values (`&`, `<`, `>`, `"`, `'`).
pub(crate) fn esc(text: &str) -> String {
    html_escape::encode_quoted_attribute(text).into_owned()
}

/// A page's content: its title and its `<main>`. The snapshot carries it; the server draws it
/// in the frame every page shares (`src/web/frame.rs`) when it puts the snapshot in force.
#[derive(Debug)]
pub struct PageContent {
    pub title: String,
    pub main: String,
}

pub(crate) fn page(title: &str, main: &str) -> PageContent {
    PageContent {
        title: title.to_string(),
        main: format!("<main id=\"main\">\n{main}</main>"),
    }
}

/// The headline as a list, each figure tagged.
pub(crate) fn headline(card: &Scorecard) -> String {
    let lines = crate::present::headline::headline(card);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ul class=\"headline\">\n");
    for line in lines {
        let _ = writeln!(out, "<li>{}</li>", line.html());
    }
    out.push_str("</ul>\n");
    out
}

/// An SVG chart with a title and description for assistive technology.
pub(crate) fn svg(id: &str, width: u32, height: u32, title: &str, description: &str, body: &str) -> String {
    format!(
        "<figure class=\"chart {id}\"><svg viewBox=\"0 0 {width} {height}\" role=\"img\" \
         aria-labelledby=\"{id}-t {id}-d\"><title id=\"{id}-t\">{}</title><desc id=\"{id}-d\">{}</desc>{body}</svg>\
         <figcaption>{}</figcaption></figure>",
        esc(title),
        esc(description),
        esc(description)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_tagged_with_the_field_they_are() {
        assert_eq!(figure("a.b", Some(0.5)), "<span data-figure=\"a.b\">0.5</span>");
        assert_eq!(figure("<x>", None), "<span data-figure=\"&lt;x&gt;\">–</span>");
    }
}
