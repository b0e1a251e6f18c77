//! ARCHITECTURE.md is the map of the code, and this keeps it true: every source file, script,
//! page asset and folder is named in it, every section of the settings is, and every file it
//! names exists. A file added or moved without the map changing fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::util::repo;

/// Where the code lives, and which files of each folder are the map's business.
const ROOTS: [(&str, &[&str]); 19] = [
    ("src", &["rs"]),
    ("format/src", &["rs"]),
    ("builder/src", &["rs"]),
    ("builder/tests", &["rs"]),
    ("builder/examples", &["rs"]),
    ("tests", &["rs", "sh", "py", "yaml", "ini"]),
    ("benches", &["rs", "sh", "py"]),
    ("fuzz/fuzz_targets", &["rs"]),
    ("examples", &["rs", "py"]),
    ("clients/python/src/valuation_marks", &["py"]),
    ("clients/python/scripts", &["py"]),
    ("clients/python/bench", &["py"]),
    ("web", &["html", "txt", "js", "css"]),
    ("tools", &["py", "sh"]),
    ("sample", &["toml", "csv", "jsonl", "py", "pem", "pub"]),
    ("deploy", &["conf", "cfg"]),
    (".ci", &["toml"]),
    ("openapi", &["json"]),
    ("snapshots", &[]),
];

/// Folders whose contents are data, not code: fixtures, vendored files, caches.
const NOT_CODE: [&str; 5] = ["golden", "vendor", "__pycache__", "data", "images"];

/// Files every folder of their kind has, named by their folder instead.
const BY_FOLDER: [&str; 4] = ["mod.rs", "lib.rs", "main.rs", "__init__.py"];

fn walk(dir: &Path, extensions: &[&str], files: &mut Vec<PathBuf>, folders: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            if !NOT_CODE.contains(&name.as_str()) {
                folders.push(path.clone());
                walk(&path, extensions, files, folders);
            }
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| extensions.contains(&e))
        {
            files.push(path);
        }
    }
}

fn map() -> String {
    std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap()
}

#[test]
fn every_file_and_folder_of_the_code_is_on_the_map() {
    let map = map();
    let root = repo();
    let (mut files, mut folders) = (Vec::new(), Vec::new());
    for (dir, extensions) in ROOTS {
        walk(&root.join(dir), extensions, &mut files, &mut folders);
    }
    let relative = |p: &Path| p.strip_prefix(&root).unwrap().display().to_string();
    let mut missing = BTreeSet::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let named = if BY_FOLDER.contains(&name.as_str()) {
            let folder = file.parent().unwrap().file_name().unwrap().to_string_lossy();
            map.contains(&format!("{folder}/")) || map.contains(&name)
        } else {
            map.contains(&name)
        };
        if !named {
            missing.insert(relative(file));
        }
    }
    for folder in &folders {
        let name = folder.file_name().unwrap().to_string_lossy();
        if !map.contains(&format!("{name}/")) {
            missing.insert(format!("{}/", relative(folder)));
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name these (say what each is for where it belongs):\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn every_section_of_the_settings_is_on_the_map() {
    let map = map();
    let settings = std::fs::read_to_string(repo().join("src/settings.rs")).unwrap();
    let sections: Vec<&str> = settings
        .split("next_help_heading = \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(sections.len() >= 8, "{sections:?}");
    let line = map
        .lines()
        .skip_while(|l| !l.contains("**`settings.rs`**"))
        .take(6)
        .collect::<Vec<_>>()
        .join(" ");
    let missing: Vec<&&str> = sections.iter().filter(|s| !line.contains(**s)).collect();
    assert!(
        missing.is_empty(),
        "the settings sections {missing:?} are not in ARCHITECTURE.md's `settings.rs` entry"
    );
}

/// Every file the map names in backticks (`name.rs`, `folder/name.py`, ...) exists somewhere
/// in the repository: the map names nothing that was removed or renamed.
#[test]
fn every_file_the_map_names_exists() {
    let map = map();
    let root = repo();
    let mut names = BTreeSet::new();
    let mut paths = BTreeSet::new();
    fn all(dir: &Path, root: &Path, names: &mut BTreeSet<String>, paths: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if name == "target" || name == ".git" {
                continue;
            }
            if path.is_dir() {
                all(&path, root, names, paths);
            } else {
                names.insert(name);
                paths.insert(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    all(&root, &root, &mut names, &mut paths);
    let extensions = [
        ".rs", ".py", ".sh", ".js", ".css", ".html", ".toml", ".json", ".jsonl", ".md",
    ];
    let mut stale = Vec::new();
    for quoted in map.split('`').skip(1).step_by(2) {
        let token = quoted.trim();
        // URLs, other repositories, placeholders and patterns are not files of this one.
        let elsewhere = token.starts_with(['/', '.', '$']) || token.contains(['<', '*', ' ', '{']);
        if elsewhere || !extensions.iter().any(|e| token.ends_with(e)) {
            continue;
        }
        let exists = if token.contains('/') {
            paths.iter().any(|p| p == token || p.ends_with(&format!("/{token}")))
        } else {
            names.contains(token)
        };
        if !exists {
            stale.push(token.to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md names files that do not exist: {stale:?}"
    );
}
