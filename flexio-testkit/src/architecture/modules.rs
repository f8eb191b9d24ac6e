//! Module circles, at every depth of one crate's `src/`: for each module,
//! its children form a graph (a child uses a sibling when any file in the
//! child's subtree names anything in the sibling's subtree), and no graph
//! may hold a circle. A module and its own children may name each other
//! (a parent re-exports, a child uses the parent's items): those edges
//! join no two siblings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::source::{self, Named};
use super::Error;

/// The module path of `file` relative to `src` (`server/mod.rs` and
/// `server.rs` are `server`; `lib.rs` and `main.rs` the root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let mut path: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = path.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        let root = path.is_empty() && (stem == "lib" || stem == "main");
        if stem != "mod" && !root {
            path.push(stem);
        }
    }
    path
}

/// Every `.rs` file under `dir`, sorted.
pub(super) fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io("read_dir", &dir, e))?;
        for entry in entries {
            let path = entry.map_err(|e| Error::io("read_dir", &dir, e))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// A sibling edge: in module `parent`, child `from` uses child `to`, for
/// one reason (a file and the path it names).
type Edges = BTreeMap<Vec<String>, BTreeMap<String, BTreeMap<String, String>>>;

/// The circles among siblings anywhere in the crate whose source is `src`,
/// each as `parent: a -> b -> a (a: FILE names PATH; ...)`.
pub fn circles(src: &Path) -> Result<Vec<String>, Error> {
    let mut modules: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut named: Vec<(PathBuf, Named)> = Vec::new();
    for file in rust_files(src)? {
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io("read", &file, e))?;
        let module = module_of(src, &file);
        let (inline, paths) = source::read(&text, &module);
        for depth in 0..=module.len() {
            modules.insert(module[..depth].to_vec());
        }
        modules.extend(inline);
        let relative = file.strip_prefix(src).unwrap_or(&file).to_path_buf();
        named.extend(paths.into_iter().map(|n| (relative.clone(), n)));
    }
    let mut edges: Edges = BTreeMap::new();
    for (file, name) in named {
        let target = longest_module(&modules, &name.path);
        let common = name
            .from
            .iter()
            .zip(&target)
            .take_while(|(a, b)| a == b)
            .count();
        let (Some(from), Some(to)) = (name.from.get(common), target.get(common)) else {
            continue; // a module naming itself, an ancestor or a descendant
        };
        edges
            .entry(name.from[..common].to_vec())
            .or_default()
            .entry(from.clone())
            .or_default()
            .entry(to.clone())
            .or_insert_with(|| format!("{} names {}", file.display(), name.path.join("::")));
    }
    Ok(edges
        .iter()
        .flat_map(|(parent, graph)| {
            let parent = if parent.is_empty() {
                "crate".to_string()
            } else {
                parent.join("::")
            };
            cycles(graph)
                .into_iter()
                .map(move |cycle| format!("{parent}: {}", describe(graph, &cycle)))
        })
        .collect())
}

/// The longest prefix of `path` that is a module.
fn longest_module(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Vec<String> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| modules.contains(prefix))
        .unwrap_or_default()
}

/// One circle per set of nodes that reach each other, each as the list of
/// its nodes with the first repeated at the end.
fn cycles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut covered: BTreeSet<String> = BTreeSet::new();
    for start in graph.keys() {
        if covered.contains(start) {
            continue;
        }
        if let Some(cycle) = cycle_through(graph, start) {
            covered.extend(cycle.iter().cloned());
            found.push(cycle);
        }
    }
    found
}

/// A path from `start` back to itself, if there is one.
fn cycle_through(
    graph: &BTreeMap<String, BTreeMap<String, String>>,
    start: &str,
) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last()?;
        for next in graph.get(last).into_iter().flat_map(|m| m.keys()) {
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

/// `a -> b -> a (a -> b: FILE names PATH; b -> a: ...)`.
fn describe(graph: &BTreeMap<String, BTreeMap<String, String>>, cycle: &[String]) -> String {
    let reasons: Vec<String> = cycle
        .windows(2)
        .map(|pair| {
            let why = graph
                .get(&pair[0])
                .and_then(|m| m.get(&pair[1]))
                .map_or("", String::as_str);
            format!("{} -> {}: {why}", pair[0], pair[1])
        })
        .collect();
    format!("{} ({})", cycle.join(" -> "), reasons.join("; "))
}
