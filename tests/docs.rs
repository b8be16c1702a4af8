//! The documents stay readable for someone new: the README short, with the table of waits and a
//! link to the rules of `auto`; PERFORMANCE.md under 400 lines, its history in
//! docs/experiments/; every document the README links also in the crate documentation; the map
//! of USAGE.md ("Where things are") naming only paths that exist, and every file and folder of
//! `src/`; and nothing in the repository that speaks of how the work was done rather than of
//! the product.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_readme_is_at_most_150_lines_with_the_table_of_waits_and_a_link_to_the_rules() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 150, "README.md has {lines} lines");
    for kept in ["| `auto` (default) |", "| `block` |", "| `spin` |", "| `hybrid[:DUR]` |"] {
        assert!(readme.contains(kept), "the README's table of waits lacks `{kept}`");
    }
    assert!(readme.contains("[docs/WAITING.md][docs/WAITING.md]"), "no link to docs/WAITING.md");
    let waiting = read("docs/WAITING.md");
    for rule in ["## The rules", "*hit*", "*wanted*", "*probe*", "moves its thread"] {
        assert!(waiting.contains(rule), "docs/WAITING.md lacks `{rule}`");
        assert!(!readme.contains(rule), "the README still carries the rule `{rule}`");
    }
}

#[test]
fn the_readmes_first_screen_installs_python_rust_and_c_and_makes_a_python_call() {
    let readme = read("README.md");
    let first_screen: String = readme.lines().take(40).collect::<Vec<_>>().join("\n");
    for said in [
        "pip install peerpipe-*.whl peerpipe_cli-*.whl", // Python, from the wheels
        "cargo add",                                     // Rust
        "-p peerpipe-capi",                              // C
        "peerpipe.serve(",                               // a model in Python...
        "peerpipe.Peer.spawn(",                          // ...called from another process
        "model.call(y, dy)",
    ] {
        assert!(first_screen.contains(said), "the README's first 40 lines lack `{said}`");
    }
    // python/tests/test_readme.py runs the quick start's two blocks as they stand.
    let test = read("python/tests/test_readme.py");
    assert!(test.contains("## Quick start"), "python/tests/test_readme.py runs another section");
}

#[test]
fn performance_md_is_at_most_400_lines() {
    let lines = read("docs/PERFORMANCE.md").lines().count();
    assert!(
        lines <= 400,
        "docs/PERFORMANCE.md has {lines} lines: move history to docs/experiments/"
    );
}

/// `docs/NAME.md` for every top-level document the README links to.
fn documents_the_readme_links() -> Vec<String> {
    let readme = read("README.md");
    let mut found: Vec<String> = readme
        .match_indices("docs/")
        .filter_map(|(at, _)| {
            let name: String = readme[at + 5..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            name.ends_with(".md").then(|| format!("docs/{name}"))
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn every_document_the_readme_links_is_in_the_crate_documentation_under_its_label() {
    let (guide, lib) = (read("src/guide.rs"), read("src/lib.rs"));
    let linked = documents_the_readme_links();
    assert!(linked.len() >= 6, "{linked:?}");
    for doc in linked {
        assert!(
            Path::new(&repo().join(&doc)).is_file(),
            "the README links {doc}, which is not there"
        );
        assert!(guide.contains(&format!("include_str!(\"../{doc}\")")), "src/guide.rs lacks {doc}");
        assert!(lib.contains(&format!("[{doc}]: crate::guide::")), "src/lib.rs has no label {doc}");
    }
}

/// What a document of the product does not say: the numbers of work items, notes of working
/// sessions, the machine the work ran on. (Spelled in pieces, so that this file does not match.)
fn words_of_the_work(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    for word in [["sess", "ion "].concat(), ["iss", "ue "].concat()] {
        for (at, _) in lower.match_indices(&word) {
            if lower[at + word.len()..].starts_with(|c: char| c.is_ascii_digit()) {
                return Some(lower[at..(at + word.len() + 3).min(lower.len())].to_owned());
            }
        }
    }
    let vm = ["this", " vm"].concat();
    lower.contains(&vm).then_some(vm)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !matches!(name, "target" | ".git" | "corpus" | "artifacts") {
                walk(&path, files);
            }
        } else if ["md", "rs", "py", "pyi", "c", "h", "f90", "toml", "sh", "txt", "st"]
            .iter()
            .any(|ext| name.ends_with(&format!(".{ext}")))
        {
            files.push(path);
        }
    }
}

#[test]
fn no_file_speaks_of_how_the_work_was_done() {
    // The check itself: it finds each of the three, in any case, and not a bare word.
    for said in
        [["As in Sess", "ion 12"].concat(), ["iss", "ue 7"].concat(), ["This", " VM"].concat()]
    {
        assert!(words_of_the_work(&said).is_some(), "{said}");
    }
    assert_eq!(words_of_the_work("an issue, a session of ssh, a vmsplice"), None);
    let mut files = Vec::new();
    walk(&repo(), &mut files);
    assert!(files.len() > 100, "found only {} files", files.len());
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        if let Some(found) = words_of_the_work(&text) {
            panic!("{} says `{found}`", file.display());
        }
    }
}

/// The folders of the repository whose every backticked path in the map is a path.
const ROOTS: [&str; 10] = [
    "src/",
    "cli/",
    "capi/",
    "python/",
    "docs/",
    "examples/",
    "tests/",
    "benches/",
    "fuzz/",
    "clients/",
];

/// Every path USAGE.md's "Where things are" names, in its table and in its "To add" list,
/// found or not: a backticked name that starts with one of [`ROOTS`], or ends with `/` or a
/// file's extension. It is found from the repository's root, or in a directory named before it
/// in the same row or item (`src/transport/` … `pipe.rs`), or in that directory's `src/`.
fn paths_the_map_names() -> (Vec<PathBuf>, Vec<String>) {
    let usage = read("docs/USAGE.md");
    let map = &usage[usage.find("## Where things are").expect("the map")..];
    let is_path = |token: &str| {
        !token.contains(' ')
            && (token.ends_with('/')
                || [".rs", ".md", ".py", ".sh", ".h", ".c", ".toml"]
                    .iter()
                    .any(|e| token.ends_with(e)))
    };
    // A table row is one line; an item of the list runs until the next item.
    let mut entries: Vec<String> = Vec::new();
    for line in map.lines() {
        if line.starts_with("  ") && !entries.is_empty() {
            entries.last_mut().unwrap().push_str(line);
        } else {
            entries.push(line.to_owned());
        }
    }
    let (mut found, mut missing) = (Vec::new(), Vec::new());
    for entry in &entries {
        let mut dirs: Vec<PathBuf> = vec![repo()];
        for token in entry.split('`').skip(1).step_by(2) {
            if !ROOTS.iter().any(|root| token.starts_with(root)) && !is_path(token) {
                continue;
            }
            let path = dirs
                .iter()
                .flat_map(|dir| [dir.join(token), dir.join("src").join(token)])
                .find(|candidate| candidate.exists());
            match path {
                Some(path) => {
                    if path.is_dir() {
                        dirs.push(path.clone());
                    }
                    found.push(path);
                }
                None => missing.push(token.to_owned()),
            }
        }
    }
    (found, missing)
}

#[test]
fn the_map_of_usage_md_names_only_paths_that_exist() {
    let (found, missing) = paths_the_map_names();
    assert!(missing.is_empty(), "USAGE.md's map names paths that do not exist: {missing:?}");
    assert!(found.len() > 40, "only {} paths found in the map", found.len());
}

/// Every `.rs` file directly under `src/` and every folder under `src/`, at any depth.
/// Every `.rs` file directly under `src/` and every folder below it, but for a folder that
/// holds only a module's `tests.rs` (its tests, not a part of the map).
fn files_and_folders_of_src() -> Vec<PathBuf> {
    fn folders(dir: &Path, into: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if !only_tests(&path) {
                    into.push(path.clone());
                }
                folders(&path, into);
            }
        }
    }
    fn only_tests(dir: &Path) -> bool {
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").file_name())
            .collect();
        names == ["tests.rs"]
    }
    let src = repo().join("src");
    let mut all: Vec<PathBuf> = std::fs::read_dir(&src)
        .expect("src/")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    folders(&src, &mut all);
    all.sort();
    all
}

#[test]
fn the_map_of_usage_md_names_every_file_and_folder_of_src() {
    let (found, _) = paths_the_map_names();
    let unnamed: Vec<String> = files_and_folders_of_src()
        .into_iter()
        .filter(|path| !found.contains(path))
        .map(|path| path.strip_prefix(repo()).unwrap_or(&path).display().to_string())
        .collect();
    assert!(
        unnamed.is_empty(),
        "USAGE.md's \"Where things are\" does not name {unnamed:?}: give each a line (a folder \
         may be named inside its parent's row, as `src/transport/` … `shm/`)"
    );
}
