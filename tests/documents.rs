//! The documents for readers and agents: `/llms.txt` (llmstxt.org) and the docs as Markdown,
//! served by the binary; every link of `/llms.txt` resolves, and so does every link between
//! the Markdown pages.

use std::collections::BTreeSet;

use crate::util::*;

/// The targets of Markdown links `[text](target)` in a text.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        if let Some(end) = rest.find(')') {
            found.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    found
}

/// A link target resolved against the page it is on, without its fragment.
fn resolve(page: &str, target: &str) -> String {
    let target = target.split('#').next().unwrap_or("");
    if target.starts_with('/') {
        return target.to_string();
    }
    let mut parts: Vec<&str> = page.split('/').collect();
    parts.pop();
    for segment in target.split('/') {
        match segment {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            other => parts.push(other),
        }
    }
    parts.join("/")
}

#[tokio::test]
async fn llms_txt_links_every_doc_and_every_link_between_the_docs_resolves() {
    let server = TestServer::start().await;
    let llms = server.get("/llms.txt", None).await;
    assert_eq!(llms.status, 200);
    assert_eq!(llms.header("content-type"), Some("text/plain; charset=utf-8"));
    let text = String::from_utf8(llms.body.to_vec()).unwrap();
    assert!(
        text.starts_with("# Valuation Marks\n\n> "),
        "an H1 and a summary first (llmstxt.org)"
    );
    let listed = links(&text);
    assert!(listed.len() >= 15, "{listed:?}");
    assert!(
        listed.iter().any(|l| l == "/v1/openapi.json"),
        "the OpenAPI document is linked"
    );
    let mut pages: BTreeSet<String> = BTreeSet::new();
    for target in &listed {
        let reply = server.get(target, None).await;
        assert_eq!(reply.status, 200, "{target} from /llms.txt");
        if target.ends_with(".md") {
            assert_eq!(
                reply.header("content-type"),
                Some("text/markdown; charset=utf-8"),
                "{target}"
            );
            pages.insert(target.clone());
        }
    }
    // Every Markdown file under docs/ is listed.
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            assert!(
                pages.contains(&format!("/docs/{name}")),
                "/llms.txt does not link docs/{name}"
            );
        }
    }
    // The links between the pages (to other pages and to the images they show) resolve;
    // links to source files and to other sites are not the server's to serve.
    let mut checked = 0;
    for page in &pages {
        let body = server.get(page, None).await;
        let text = String::from_utf8(body.body.to_vec()).unwrap();
        for target in links(&text) {
            if target.starts_with("http") || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            let path = resolve(page, &target);
            let document = path.ends_with(".md") || path.starts_with("/docs/images/");
            if !document {
                continue;
            }
            let reply = server.get(&path, None).await;
            assert_eq!(reply.status, 200, "{page} links {target} ({path})");
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} links between the docs");
}

#[tokio::test]
async fn documents_are_cached_compressed_and_spend_no_budget() {
    let server = TestServer::start().await;
    let page = server.get_with("/docs/api.md", &[("accept-encoding", "gzip")]).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-encoding"), Some("gzip"));
    assert_eq!(page.header("cache-control"), Some("public, no-cache"));
    assert!(page.header("x-ratelimit-remaining").is_none(), "no budget is spent");
    let etag = page.header("etag").unwrap();
    let again = server
        .get_with("/docs/api.md", &[("accept-encoding", "gzip"), ("if-none-match", etag)])
        .await;
    assert_eq!(again.status, 304);
    let missing = server.get("/docs/secrets.md", None).await;
    missing.assert_problem(404, "not_found");
    // The same bytes as the repository's file.
    let plain = server.get("/docs/methodology.md", None).await;
    assert_eq!(plain.body, std::fs::read(repo().join("docs/methodology.md")).unwrap());
}
