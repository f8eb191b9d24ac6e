//! The documentation stands alone in a clone: no page and no `--help`
//! points to the project's working notes (`shared/`, which a clone does
//! not have), and the block cache README's first `cache sim` example runs
//! as shown, on a generated trace.

use crate::common;

use std::path::{Path, PathBuf};

/// The workspace root (this crate's parent).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// README.md, every file under docs/ and each crate's README.md.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let root = root();
    let mut pages = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut pages);
    for entry in std::fs::read_dir(&root).unwrap() {
        let readme = entry.unwrap().path().join("README.md");
        if readme.is_file() {
            pages.push(readme);
        }
    }
    pages
}

/// The lines of `text` that name a `shared/` path, with their numbers.
fn shared_paths(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains("shared/"))
        .map(|(n, line)| format!("{}: {line}", n + 1))
        .collect()
}

#[test]
fn no_page_points_to_shared_paths_a_clone_lacks() {
    let pages = pages();
    assert!(pages.len() > 10, "{pages:?}");
    let mut found = Vec::new();
    for page in pages {
        let Ok(text) = std::fs::read_to_string(&page) else {
            continue; // not text (an image)
        };
        for line in shared_paths(&text) {
            found.push(format!("{}:{line}", page.display()));
        }
    }
    assert!(
        found.is_empty(),
        "pages naming shared/:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_help_points_to_shared_paths() {
    let output = common::flexio().arg("--help").output().unwrap();
    let top = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut subcommands = vec![Vec::new()];
    for (name, sub) in [("cache", ["sim", "bench"]), ("profile", ["show", "diff"])] {
        for s in sub {
            subcommands.push(vec![name, s]);
        }
    }
    for name in [
        "copy",
        "bench",
        "cache",
        "mechanisms",
        "plan",
        "profile",
        "tune",
        "serve",
        "get",
        "put",
        "completions",
        "man",
    ] {
        assert!(top.contains(name), "{name} missing from --help:\n{top}");
        subcommands.push(vec![name]);
    }
    for words in subcommands {
        let output = common::flexio()
            .args(&words)
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{words:?}: {}",
            common::stderr(&output)
        );
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(shared_paths(&help).is_empty(), "{words:?} --help:\n{help}");
    }
}

#[test]
fn the_cache_readmes_generated_trace_example_runs() {
    let readme = std::fs::read_to_string(root().join("flexio-cache/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|line| line.contains("cache sim --trace zipf:"))
        .expect("an example on a generated trace");
    let arguments: Vec<&str> = line
        .split_once("flexio ")
        .unwrap()
        .1
        .trim_end_matches('\\')
        .split_whitespace()
        .chain(["--size", "1000,2000"])
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let output = common::flexio()
        .args(&arguments)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{arguments:?}: {}",
        common::stderr(&output)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("hit ratio"));
}
