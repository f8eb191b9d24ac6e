//! The layers point down only: no crate depends on one of its own layer or
//! above; no top-level module of a crate's `src/` imports one that imports
//! it back, directly or through others; and one level down, no child of a
//! module imports a sibling that imports it back (a file and its own child
//! may name each other). Read from the manifests and from the
//! `crate::module` and `super::module` paths in the source, so the check
//! needs no tool.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module name -> the source of every file in it.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut modules: BTreeMap<String, String> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap();
            let top = relative
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            if top == "lib" || top == "main" {
                continue;
            }
            modules
                .entry(top)
                .or_default()
                .push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    modules
}

/// Which top-level modules each one names as `crate::NAME`.
fn imports(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    modules
        .iter()
        .map(|(name, source)| {
            let used = source
                .match_indices("crate::")
                .map(|(at, _)| {
                    source[at + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .filter(|used| used != name && modules.contains_key(used))
                .collect();
            (name.clone(), used)
        })
        .collect()
}

/// The modules from which `start` can be reached again, with one path.
fn loop_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap();
        for next in graph.get(last).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(start.to_string());
                return Some(cycle);
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

fn assert_no_loops(src: PathBuf) {
    let graph = imports(&modules(&src));
    let loops: Vec<String> = graph
        .keys()
        .filter_map(|module| loop_through(&graph, module))
        .map(|cycle| cycle.join(" -> "))
        .collect();
    assert!(
        loops.is_empty(),
        "{}: modules that import themselves back:\n{}",
        src.display(),
        loops.join("\n")
    );
}

#[test]
fn no_module_of_the_library_imports_one_that_imports_it_back() {
    assert_no_loops(Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

#[test]
fn no_module_of_the_other_crates_imports_one_that_imports_it_back() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (crate_dir, _) in CRATES.iter().filter(|(name, _)| *name != "flexio") {
        assert_no_loops(workspace.join(crate_dir).join("src"));
    }
}

/// The workspace's crates, each with its layer: a crate may depend only on
/// crates of lower layers.
const CRATES: [(&str, u8); 7] = [
    ("flexio-sys", 0),
    ("flexio", 1),
    ("flexio-cache", 1),
    ("flexio-net", 2),
    ("flexio-bench", 2),
    ("flexio-tune", 3),
    ("flexio-cli", 4),
];

/// The workspace crates named in `manifest`'s `[dependencies]`.
fn workspace_dependencies(manifest: &str) -> Vec<&'static str> {
    let table: toml::Table = manifest.parse().unwrap();
    let dependencies = table.get("dependencies").and_then(|d| d.as_table());
    CRATES
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| dependencies.is_some_and(|d| d.contains_key(*name)))
        .collect()
}

#[test]
fn every_crate_depends_only_on_lower_layers() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let layer = |name: &str| CRATES.iter().find(|(n, _)| *n == name).unwrap().1;
    for (name, own) in CRATES {
        let manifest = std::fs::read_to_string(workspace.join(name).join("Cargo.toml")).unwrap();
        for dependency in workspace_dependencies(&manifest) {
            assert!(
                layer(dependency) < own,
                "{name} (layer {own}) depends on {dependency} (layer {})",
                layer(dependency)
            );
        }
    }
}

/// The children of module directory `dir` (files and folders, not `mod.rs`)
/// -> the siblings each names as `super::NAME` or `crate::<dir>::NAME`.
fn child_imports(src: &Path, dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let prefix = dir
        .strip_prefix(src)
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("::");
    let children = modules(dir);
    let names: BTreeSet<String> = children.keys().filter(|n| *n != "mod").cloned().collect();
    children
        .iter()
        .filter(|(name, _)| *name != "mod")
        .map(|(name, source)| {
            let mut used = BTreeSet::new();
            for pattern in ["super::".to_string(), format!("crate::{prefix}::")] {
                for (at, _) in source.match_indices(&pattern) {
                    let next: String = source[at + pattern.len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if next != *name && names.contains(&next) {
                        used.insert(next);
                    }
                }
            }
            (name.clone(), used)
        })
        .collect()
}

/// Every module directory under `src`, at any depth, except those under
/// `exempt` (relative to `src`).
fn module_dirs(src: &Path, exempt: &[&str]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(src).unwrap();
            if path.is_dir() && !exempt.iter().any(|e| relative.starts_with(e)) {
                dirs.push(path.clone());
                stack.push(path);
            }
        }
    }
    dirs
}

/// `dir: a -> b -> a` for every loop among the children of every module
/// directory under `src`.
fn sibling_loops(src: &Path, exempt: &[&str]) -> Vec<String> {
    let mut loops = Vec::new();
    for dir in module_dirs(src, exempt) {
        let graph = child_imports(src, &dir);
        loops.extend(
            graph
                .keys()
                .filter_map(|module| loop_through(&graph, module))
                .map(|cycle| format!("{}: {}", dir.display(), cycle.join(" -> "))),
        );
    }
    loops
}

#[test]
fn no_child_module_imports_a_sibling_that_imports_it_back() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut loops = Vec::new();
    for (crate_dir, _) in CRATES {
        // The server core is being reshaped on its own (issue 26), with a
        // layers test of its own in flexio-net.
        let exempt: &[&str] = if crate_dir == "flexio-net" {
            &["server"]
        } else {
            &[]
        };
        loops.extend(sibling_loops(
            &workspace.join(crate_dir).join("src"),
            exempt,
        ));
    }
    assert!(
        loops.is_empty(),
        "children that import themselves back:\n{}",
        loops.join("\n")
    );
}

#[test]
fn the_checker_finds_a_loop_through_a_third_module() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "use crate::b::X;").unwrap();
    std::fs::write(dir.path().join("b.rs"), "use crate::c::Y;").unwrap();
    std::fs::create_dir(dir.path().join("c")).unwrap();
    std::fs::write(dir.path().join("c/mod.rs"), "use crate::a::Z;").unwrap();
    let graph = imports(&modules(dir.path()));
    assert_eq!(
        loop_through(&graph, "a").unwrap(),
        ["a", "b", "c", "a"].map(String::from)
    );
    std::fs::write(dir.path().join("c/mod.rs"), "use crate::b::Y;").unwrap();
    let graph = imports(&modules(dir.path()));
    assert!(loop_through(&graph, "a").is_none());
}
