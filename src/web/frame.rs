//! The page frame every page is drawn in (`web/frame.html`: head, header and navigation,
//! footer), filled here for the binary's shells (`/explore`, `/compare`, `/indices`, `/docs`)
//! when the binary starts, and for the pages a snapshot carries (`/`, `/scorecard`: their
//! content, which the builder renders) when the snapshot is put in force. So a change to the
//! navigation is one edit, and needs no new snapshot.
//!
//! `{{asset:NAME}}` placeholders, in the frame and a page's head, become the URLs the caller
//! names (the binary's fingerprinted ones). [`fill_placeholders`] fills any kind of
//! `{{KIND:NAME}}`: the binary also fills its shells' `{{include:NAME}}` with it.

use std::borrow::Cow;

/// The frame, compiled in.
pub const FRAME: &str = include_str!("../../web/frame.html");

/// What a page puts in the frame.
#[derive(Clone, Copy, Debug, Default)]
pub struct Page<'a> {
    /// Plain text; escaped here.
    pub title: &'a str,
    /// The navigation entry that is this page (`/`, `/explore`, `/scorecard`, `/docs`), if any.
    pub current: &'a str,
    /// More of `<head>`: stylesheets and scripts, as HTML.
    pub head: &'a str,
    /// Attributes of `<body>`, as HTML with a leading space (`class="docs"`), or empty.
    pub body: &'a str,
    /// The page's content, as HTML: its `<main id="main">` (or another element with that id).
    pub main: &'a str,
}

/// The whole page: the frame's placeholders filled, asset URLs by `asset_url`, the page's
/// content placed as it is (its own text is never searched for placeholders).
pub fn render(page: &Page<'_>, asset_url: &dyn Fn(&str) -> Option<String>) -> String {
    let frame = without_first_comment(FRAME);
    let (before, after) = frame.split_once("{{main}}").unwrap_or((&frame, ""));
    let fill = |text: &str| {
        let mut out = text
            .replace("{{title}}", &escape_html(page.title))
            .replace("{{head}}", page.head)
            .replace("{{body}}", page.body);
        // Every navigation entry's `{{current:PATH}}`, whichever entries the frame has.
        while let Some(start) = out.find("{{current:") {
            let Some(length) = out[start..].find("}}") else {
                break;
            };
            let entry = &out[start + "{{current:".len()..start + length];
            let marker = if entry == page.current {
                " aria-current=\"page\""
            } else {
                ""
            };
            out.replace_range(start..start + length + 2, marker);
        }
        fill_asset_urls(&out, asset_url)
    };
    let mut out = fill(before);
    out.push_str(page.main);
    out.push_str(&fill(after));
    out
}

/// A file of the site without its first comment, which is for whoever edits it, not for every
/// visitor: the frame's (after its doctype) and each content file's (its first lines) alike; a
/// comment after content is the page's own and stays.
pub fn without_first_comment(text: &str) -> Cow<'_, str> {
    let Some(start) = text.find("<!--") else {
        return Cow::Borrowed(text);
    };
    let before = text[..start].trim();
    let Some(end) = text[start..].find("-->") else {
        return Cow::Borrowed(text);
    };
    if !(before.is_empty() || before.eq_ignore_ascii_case("<!doctype html>")) {
        return Cow::Borrowed(text);
    }
    let rest = text[start + end + 3..].trim_start_matches('\n');
    if start == 0 {
        Cow::Borrowed(rest)
    } else {
        Cow::Owned(format!("{}{rest}", &text[..start]))
    }
}

/// `{{asset:NAME}}` replaced by `asset_url(NAME)`; a name it does not know is left as it is (and
/// shows in the page as a broken reference a test finds).
pub fn fill_asset_urls(text: &str, asset_url: &dyn Fn(&str) -> Option<String>) -> String {
    fill_placeholders(text, "asset", asset_url)
}

/// Each `{{KIND:NAME}}` in `text` replaced by `value(NAME)`; a name `value` does not know is
/// left as written (and shows in the page, where a test finds it).
pub fn fill_placeholders(text: &str, kind: &str, value: &dyn Fn(&str) -> Option<String>) -> String {
    let open = format!("{{{{{kind}:");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        out.push_str(&rest[..start]);
        let after = &rest[start + open.len()..];
        match after.find("}}") {
            Some(end) => {
                match value(&after[..end]) {
                    Some(url) => out.push_str(&url),
                    None => out.push_str(&rest[start..start + open.len() + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Text made safe for HTML element content and attribute values (`&`, `<`, `>`, `"`, `'`).
pub fn escape_html(text: &str) -> String {
    html_escape::encode_quoted_attribute(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_marks_the_current_page_and_escapes_the_title() {
        let html = render(
            &Page {
                title: "A <b> & \"c\"",
                current: "/scorecard",
                head: "<link rel=\"stylesheet\" href=\"{{asset:pages.css}}\">\n",
                body: "",
                main: "<main id=\"main\">{{title}} {{asset:x}} stay</main>",
            },
            &|name: &str| Some(format!("/assets/{name}")),
        );
        assert!(html.contains("href=\"/assets/pages.css\"") && html.contains("href=\"/assets/app.css\""));
        assert!(
            html.contains("<title>A &lt;b&gt; &amp; &quot;c&quot;</title>"),
            "{html}"
        );
        assert!(html.contains("<a href=\"/scorecard\" aria-current=\"page\">Scorecard</a>"));
        assert_eq!(html.matches("aria-current").count(), 1);
        assert!(
            html.contains("<main id=\"main\">{{title}} {{asset:x}} stay</main>"),
            "content is not searched"
        );
        assert!(!html.contains("{{current:") && !html.contains("{{head}}") && !html.contains("<!--"));
        assert!(html.starts_with("<!doctype html>\n<html lang=\"en\">"), "{html}");
        assert_eq!(
            escape_html("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
        );
    }

    #[test]
    fn asset_placeholders_become_the_urls_named_and_unknown_ones_stay() {
        let url = |name: &str| (name == "app.css").then(|| "/assets/abc123/app.css".to_string());
        let filled = fill_asset_urls(
            "<link href=\"{{asset:app.css}}\"><script src=\"{{asset:gone.js}}\"></script>{{asset:",
            &url,
        );
        assert_eq!(
            filled,
            "<link href=\"/assets/abc123/app.css\"><script src=\"{{asset:gone.js}}\"></script>{{asset:"
        );
    }
}
