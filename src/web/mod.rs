//! The pages' files compiled into the binary: the shells of the explorer, the comparison, the
//! indices and the API reference (the content of `web/explore.html`, `web/compare.html`,
//! `web/indices.html` and `web/docs.html`, drawn in the page frame every page shares,
//! [`frame`]) and every file under `web/assets/` (the stylesheets, the scripts, the
//! vendored API-reference renderer with its licence).
//!
//! Each is prepared once, on first use, like a snapshot body: its bytes, a strong ETag, and a
//! gzip variant with its own ETag when that saves anything. Every asset is served at
//! `/assets/NAME` (revalidated) and at `/assets/FINGERPRINT/NAME` (cached for a year: the
//! fingerprint is a hash of the content, so a new binary's asset has a new URL). In the shells,
//! `{{asset:NAME}}` becomes the fingerprinted URL, and `{{include:NAME}}` the content of
//! `web/NAME`: markup several shells share (the key panel, `web/key-panel.html`), written once.
//! The pages that depend on the dataset (`/` and `/scorecard`) are the builder's content, in
//! the snapshot, drawn in the same frame when the snapshot is put in force
//! ([`snapshot_page`]).
//!
//! For work on the pages, `MARKS_WEB_DIR=web` makes the server read the files from that folder
//! (once, at first use) instead of the copy compiled in, so a page can be edited and tried
//! without rebuilding the binary. Nothing else changes; production never sets it.

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;
use http::HeaderValue;
use include_dir::{include_dir, Dir};
use marks_format::file::etag::etag_of;
pub mod frame;

use frame::{without_first_comment, Page};

static WEB: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/web");
/// The docs, served as Markdown for readers and agents (`/llms.txt` links them).
static DOCS: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/docs");
/// The repository's other documents the docs link to, at their paths in it.
const ROOT_DOCS: [(&str, &str); 6] = [
    ("/README.md", include_str!("../../README.md")),
    ("/ARCHITECTURE.md", include_str!("../../ARCHITECTURE.md")),
    ("/CHANGELOG.md", include_str!("../../CHANGELOG.md")),
    (
        "/clients/python/README.md",
        include_str!("../../clients/python/README.md"),
    ),
    ("/sample/SOURCE.md", include_str!("../../sample/SOURCE.md")),
    ("/snapshots/README.md", include_str!("../../snapshots/README.md")),
];

/// One file, ready to serve.
#[derive(Debug)]
pub struct WebFile {
    pub bytes: Bytes,
    pub etag: String,
    /// The gzip variant and its ETag, when it is smaller.
    pub gzip: Option<(Bytes, String)>,
    pub content_type: HeaderValue,
}

/// Which shell a page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Explore,
    Compare,
    Indices,
    Docs,
}

impl Shell {
    /// The file that holds the page's content, and what the page adds to the frame.
    fn page(self) -> (&'static str, Page<'static>) {
        match self {
            Shell::Explore => (
                "explore.html",
                Page {
                    title: "Explore companies · Valuation Marks",
                    current: "/explore",
                    head: "<script type=\"module\" src=\"{{asset:explore.js}}\"></script>\n",
                    ..Page::default()
                },
            ),
            Shell::Compare => (
                "compare.html",
                Page {
                    title: "Compare companies · Valuation Marks",
                    current: "/compare",
                    head: "<script type=\"module\" src=\"{{asset:compare.js}}\"></script>\n",
                    ..Page::default()
                },
            ),
            Shell::Indices => (
                "indices.html",
                Page {
                    title: "Private-market indices · Valuation Marks",
                    current: "/indices",
                    head: "<script type=\"module\" src=\"{{asset:indices.js}}\"></script>\n",
                    ..Page::default()
                },
            ),
            Shell::Docs => (
                "docs.html",
                Page {
                    title: "API reference · Valuation Marks",
                    current: "/docs",
                    head: "<script defer src=\"{{asset:vendor/rapidoc-9.3.8/rapidoc-min.js}}\"></script>\n\
                           <script defer src=\"{{asset:docs.js}}\"></script>\n",
                    body: " class=\"docs\"",
                    main: "",
                },
            ),
        }
    }
}

/// `main` with each `{{include:NAME}}` replaced by the file `web/NAME` among `files`, without
/// its leading comment; the placeholder's indentation is the fragment's first line's.
fn with_includes(main: &str, files: &[(String, Vec<u8>)]) -> String {
    frame::fill_placeholders(main, "include", &|name| {
        let (_, contents) = files.iter().find(|(path, _)| path == name)?;
        Some(
            without_first_comment(&String::from_utf8_lossy(contents))
                .trim()
                .to_string(),
        )
    })
}

/// What an asset URL names.
#[derive(Debug)]
pub struct AssetHit<'a> {
    pub file: &'a WebFile,
    /// Asked for under its fingerprint: it never changes under that URL.
    pub fingerprinted: bool,
}

#[derive(Debug)]
struct Web {
    /// By path under `web/assets/`.
    assets: HashMap<String, (String, WebFile)>,
    explore: Option<WebFile>,
    compare: Option<WebFile>,
    indices: Option<WebFile>,
    docs: Option<WebFile>,
}

/// The files the pages are made of: the compiled-in copy, or `MARKS_WEB_DIR`'s.
fn web_files() -> Vec<(String, Vec<u8>)> {
    fn embedded(dir: &'static Dir<'static>, into: &mut Vec<(String, Vec<u8>)>) {
        for file in dir.files() {
            if let Some(path) = file.path().to_str() {
                into.push((path.to_string(), file.contents().to_vec()));
            }
        }
        for sub in dir.dirs() {
            embedded(sub, into);
        }
    }
    fn on_disk(root: &std::path::Path, dir: &std::path::Path, into: &mut Vec<(String, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                on_disk(root, &path, into);
            } else if let (Ok(bytes), Some(name)) = (
                std::fs::read(&path),
                path.strip_prefix(root).ok().and_then(|p| p.to_str()),
            ) {
                into.push((name.to_string(), bytes));
            }
        }
    }
    let mut files = Vec::new();
    match std::env::var_os("MARKS_WEB_DIR") {
        Some(root) => on_disk(std::path::Path::new(&root), std::path::Path::new(&root), &mut files),
        None => embedded(&WEB, &mut files),
    }
    files
}

fn web() -> &'static Web {
    static PREPARED: OnceLock<Web> = OnceLock::new();
    PREPARED.get_or_init(|| {
        let files = web_files();
        let mut assets = HashMap::new();
        for (path, contents) in &files {
            // Paths start at `web/`: `assets/app.css`.
            if let Some(name) = path.strip_prefix("assets/") {
                let extension = name.rsplit_once('.').map_or("", |(_, e)| e);
                let fingerprint = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(contents));
                let prepared = prepare(contents.clone(), extension);
                assets.insert(name.to_string(), (fingerprint[..12].to_string(), prepared));
            }
        }
        let asset_url = |name: &str| {
            assets
                .get(name)
                .map(|(fingerprint, _)| format!("/assets/{fingerprint}/{name}"))
        };
        let shell = |shell: Shell| {
            let (file, page) = shell.page();
            files.iter().find(|(path, _)| path == file).map(|(_, contents)| {
                let text = String::from_utf8_lossy(contents);
                let main = with_includes(&without_first_comment(&text), &files);
                let html = frame::render(&Page { main: &main, ..page }, &asset_url);
                prepare(html.into_bytes(), "html")
            })
        };
        Web {
            explore: shell(Shell::Explore),
            compare: shell(Shell::Compare),
            indices: shell(Shell::Indices),
            docs: shell(Shell::Docs),
            assets,
        }
    })
}

fn content_type(extension: &str) -> HeaderValue {
    HeaderValue::from_static(match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "json" | "map" => "application/json",
        "txt" => "text/plain; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "png" => "image/png",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    })
}

/// A file ready to serve: its bytes, its ETag, and a gzip variant when that saves anything.
/// `extension` gives its content type. Also how `/v1/openapi.json` is prepared.
pub fn prepare(bytes: Vec<u8>, extension: &str) -> WebFile {
    let compressible = !matches!(extension, "png" | "woff2");
    let gzip = (compressible && bytes.len() >= marks_format::file::gzip::MIN_BYTES)
        .then(|| marks_format::file::gzip::Piece::of(&bytes, 9).ok())
        .flatten()
        .map(|piece| marks_format::file::gzip::member(&[&piece]))
        .filter(|gzip| gzip.len() < bytes.len())
        .map(|gzip| {
            let etag = etag_of(&gzip);
            (Bytes::from(gzip), etag)
        });
    WebFile {
        etag: etag_of(&bytes),
        bytes: Bytes::from(bytes),
        gzip,
        content_type: content_type(extension),
    }
}

/// The documents for readers and agents: `/llms.txt`, every file under `docs/` at
/// `/docs/NAME` (Markdown, and the images it shows), and the repository's README, architecture
/// and changelog at `/NAME.md`; `path` is the request's path.
pub fn document(path: &str) -> Option<&'static WebFile> {
    static DOCUMENTS: OnceLock<HashMap<String, WebFile>> = OnceLock::new();
    let documents = DOCUMENTS.get_or_init(|| {
        let mut documents = HashMap::new();
        fn add(dir: &'static Dir<'static>, into: &mut HashMap<String, WebFile>) {
            for file in dir.files() {
                if let Some(path) = file.path().to_str() {
                    let extension = path.rsplit_once('.').map_or("", |(_, e)| e);
                    into.insert(format!("/docs/{path}"), prepare(file.contents().to_vec(), extension));
                }
            }
            for sub in dir.dirs() {
                add(sub, into);
            }
        }
        add(&DOCS, &mut documents);
        for (path, text) in ROOT_DOCS {
            documents.insert(path.to_string(), prepare(text.as_bytes().to_vec(), "md"));
        }
        if let Some((_, llms)) = web_files().into_iter().find(|(name, _)| name == "llms.txt") {
            documents.insert("/llms.txt".to_string(), prepare(llms, "txt"));
        }
        documents
    });
    documents.get(path)
}

/// A page whose content a snapshot carries (`/`, `/scorecard`: the builder's `<main>`), drawn
/// in the frame with the charts' stylesheet and this binary's asset URLs, ready to serve. Made
/// when the snapshot is put in force, so the navigation is this binary's, whatever built it.
pub fn snapshot_page(title: &str, current: &str, main: &str) -> WebFile {
    let assets = &web().assets;
    let asset_url = |name: &str| {
        assets
            .get(name)
            .map(|(fingerprint, _)| format!("/assets/{fingerprint}/{name}"))
    };
    let html = frame::render(
        &Page {
            title,
            current,
            head: "<link rel=\"stylesheet\" href=\"{{asset:pages.css}}\">\n",
            body: "",
            main,
        },
        &asset_url,
    );
    prepare(html.into_bytes(), "html")
}

/// A shell page, if the binary was built with it.
pub fn shell(shell: Shell) -> Option<&'static WebFile> {
    match shell {
        Shell::Explore => web().explore.as_ref(),
        Shell::Compare => web().compare.as_ref(),
        Shell::Indices => web().indices.as_ref(),
        Shell::Docs => web().docs.as_ref(),
    }
}

/// The asset `/assets/NAME` or `/assets/FINGERPRINT/NAME` names (`rest` is what follows
/// `/assets/`); a fingerprint that is not the current one is not found.
pub fn asset(rest: &str) -> Option<AssetHit<'static>> {
    let assets = &web().assets;
    if let Some((_, file)) = assets.get(rest) {
        return Some(AssetHit {
            file,
            fingerprinted: false,
        });
    }
    let (fingerprint, name) = rest.split_once('/')?;
    assets
        .get(name)
        .filter(|(current, _)| current == fingerprint)
        .map(|(_, file)| AssetHit {
            file,
            fingerprinted: true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_or_incompressible_files_have_no_gzip_variant() {
        assert!(prepare(b"tiny".to_vec(), "css").gzip.is_none());
        assert!(prepare(vec![b'a'; 4096], "css").gzip.is_some());
        assert!(prepare(vec![b'a'; 4096], "png").gzip.is_none());
        assert_eq!(content_type("js"), "text/javascript; charset=utf-8");
    }

    #[test]
    fn every_page_that_reads_the_api_has_the_one_key_panel_and_no_placeholder_is_left() {
        let panel = String::from_utf8_lossy(WEB.get_file("key-panel.html").expect("web/key-panel.html").contents());
        let panel = without_first_comment(&panel);
        let panel = panel.trim();
        for page in [Shell::Explore, Shell::Compare, Shell::Indices] {
            let html = String::from_utf8_lossy(&shell(page).expect("the shell is built in").bytes).into_owned();
            assert_eq!(html.matches(panel).count(), 1, "{page:?} has the key panel once");
            assert!(!html.contains("{{"), "{page:?} has a placeholder left");
        }
    }

    #[test]
    fn an_include_of_a_file_that_does_not_exist_stays_as_written() {
        let files = vec![(
            "part.html".to_string(),
            b"<!-- for editors -->\n  <p>shared</p>\n".to_vec(),
        )];
        assert_eq!(
            with_includes(
                "<main>\n  {{include:part.html}}\n  {{include:missing.html}}\n</main>",
                &files
            ),
            "<main>\n  <p>shared</p>\n  {{include:missing.html}}\n</main>"
        );
    }
}
