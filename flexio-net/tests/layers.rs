//! Inside flexio-net's module folders (`server/`, `client/`, `tls/`) the
//! files point down only: no file imports one that imports it back,
//! directly or through others, except a folder's `mod.rs` (or `NAME.rs`
//! beside `NAME/`) and one of its children. Read from the `super::NAME`,
//! `crate::FOLDER::NAME` and the parent's `NAME::` paths in the source, so the check
//! needs no tool. (Top-level modules are checked by flexio's own layers
//! test.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The files of one module folder: child name → source; the parent (its
/// `mod.rs`, or `FOLDER.rs` beside it) is named `mod`.
fn folder(src: &Path, name: &str) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let dir = src.join(name);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        files.insert(stem, without_tests(std::fs::read_to_string(&path).unwrap()));
    }
    let beside = src.join(format!("{name}.rs"));
    if beside.exists() {
        let source = without_tests(std::fs::read_to_string(beside).unwrap());
        files.insert("mod".into(), source);
    }
    files
}

/// The source before its unit tests, whose `super::` is the file itself.
fn without_tests(source: String) -> String {
    match source.find("#[cfg(test)]\nmod tests") {
        Some(at) => source[..at].to_string(),
        None => source,
    }
}

/// The identifier after each occurrence of `prefix` in `source`.
fn names_after<'a>(source: &'a str, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
    source.match_indices(prefix).map(move |(at, _)| {
        source[at + prefix.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    })
}

/// The names a use list after `prefix` (`prefix{a, b::C}`) holds.
fn listed(source: &str, prefix: &str) -> Vec<String> {
    let open = format!("{prefix}{{");
    source
        .match_indices(&open)
        .flat_map(|(at, _)| {
            let rest = &source[at + open.len()..];
            let end = rest.find('}').unwrap_or(0);
            rest[..end]
                .split(',')
                .map(|item| item.trim().split("::").next().unwrap_or("").to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether `source` names `child::` as a path of its own (not the tail of
/// another path's segment).
fn names_child(source: &str, child: &str) -> bool {
    source.match_indices(&format!("{child}::")).any(|(at, _)| {
        source[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
    })
}

/// Which files of the folder each one uses. A child's `super::X` or
/// `crate::FOLDER::X` is the sibling `X` when there is one, else an item
/// of the parent (`mod`); the parent uses each child whose path it names.
fn imports(files: &BTreeMap<String, String>, name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let crate_prefix = format!("crate::{name}::");
    files
        .iter()
        .map(|(file, source)| {
            let mut used = BTreeSet::new();
            if file == "mod" {
                for child in files.keys().filter(|child| *child != "mod") {
                    if names_child(source, child) {
                        used.insert(child.clone());
                    }
                }
                return (file.clone(), used);
            }
            for prefix in ["super::", crate_prefix.as_str()] {
                let named = names_after(source, prefix).chain(listed(source, prefix));
                for target in named.filter(|target| !target.is_empty()) {
                    let target = if files.contains_key(&target) {
                        target
                    } else {
                        "mod".to_string()
                    };
                    if target != *file {
                        used.insert(target);
                    }
                }
            }
            (file.clone(), used)
        })
        .collect()
}

/// A cycle through `start` longer than a parent and one child, if any.
fn loop_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap();
        for next in graph.get(last).into_iter().flatten() {
            if next == start {
                let allowed = path.len() == 2 && path.iter().any(|file| file == "mod");
                if !allowed {
                    let mut cycle = path.clone();
                    cycle.push(start.to_string());
                    return Some(cycle);
                }
                continue;
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

fn loops_in(src: &Path, name: &str) -> Vec<String> {
    let graph = imports(&folder(src, name), name);
    graph
        .keys()
        .filter_map(|file| loop_through(&graph, file))
        .map(|cycle| cycle.join(" -> "))
        .collect()
}

#[test]
fn no_file_of_the_server_imports_one_that_imports_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let loops = loops_in(&src, "server");
    assert!(loops.is_empty(), "server/:\n{}", loops.join("\n"));
}

#[test]
fn no_file_of_tls_imports_one_that_imports_it_back() {
    // The client's folder is not held to it yet: its files import each
    // other in circles (mirror, tree, tar_fetch, shard_*, upload_tree),
    // left to the client's rewrite (issue 26, part 3).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let loops = loops_in(&src, "tls");
    assert!(loops.is_empty(), "tls/:\n{}", loops.join("\n"));
}

#[test]
fn the_checker_finds_a_loop_through_three_files_and_allows_parent_and_child() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server");
    std::fs::create_dir(&server).unwrap();
    std::fs::write(server.join("mod.rs"), "mod a; mod b; use self::a::X;").unwrap();
    std::fs::write(server.join("a.rs"), "use super::Config; use super::{b::Y};").unwrap();
    std::fs::write(server.join("b.rs"), "use crate::server::a::Z;").unwrap();
    let loops = loops_in(dir.path(), "server");
    assert!(loops.iter().any(|l| l.contains("a -> b -> a")), "{loops:?}");
    // mod ↔ a alone (a uses the parent's Config) is allowed.
    std::fs::write(server.join("b.rs"), "pub struct Y;").unwrap();
    assert!(loops_in(dir.path(), "server").is_empty());
    // Through the parent and two children is not.
    std::fs::write(server.join("b.rs"), "use super::Config;").unwrap();
    std::fs::write(server.join("mod.rs"), "use self::a::X; use self::b::Y;").unwrap();
    std::fs::write(server.join("a.rs"), "use super::b::Y;").unwrap();
    std::fs::write(server.join("b.rs"), "use super::a::X; use super::Config;").unwrap();
    assert!(!loops_in(dir.path(), "server").is_empty());
}
