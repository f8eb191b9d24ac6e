//! The layers point down only: no top-level module of a crate's `src/`
//! imports one that imports it back, directly or through others. Read from
//! the `crate::module` paths in the source, so the check needs no tool.

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
fn no_module_of_the_bench_the_cache_or_the_net_imports_one_that_imports_it_back() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for crate_dir in ["flexio-bench", "flexio-cache", "flexio-net"] {
        assert_no_loops(workspace.join(crate_dir).join("src"));
    }
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
