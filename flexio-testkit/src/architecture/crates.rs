//! The crate order, read from the manifests: a crate's layer is one above
//! the highest of the workspace crates it depends on (`[dependencies]`
//! and `[build-dependencies]`), 0 for none. Every other arrow must point
//! down that order too: a dev-dependency, and a crate's source naming
//! another workspace crate (`other_crate::`, doc links included), may
//! only name a crate below it, one its own dependencies reach.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{modules, source, Error};

/// One workspace crate as its manifest says.
#[derive(Debug)]
pub struct Member {
    /// Its package name (`flexio-net`).
    pub name: String,
    /// Its folder.
    pub dir: PathBuf,
    /// The workspace crates in its `[dependencies]` and
    /// `[build-dependencies]` (of any target).
    pub depends_on: BTreeSet<String>,
    /// The workspace crates in its `[dev-dependencies]`.
    pub dev_depends_on: BTreeSet<String>,
}

fn parse(path: &Path) -> Result<toml::Table, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
    text.parse()
        .map_err(|e: toml::de::Error| Error::Manifest(path.to_path_buf(), e.to_string()))
}

/// The package names a dependency table holds (a renamed one by its
/// `package`).
fn dependency_names(table: Option<&toml::Value>) -> Vec<String> {
    let Some(table) = table.and_then(|t| t.as_table()) else {
        return Vec::new();
    };
    table
        .iter()
        .map(|(key, value)| {
            value
                .get("package")
                .and_then(|p| p.as_str())
                .unwrap_or(key)
                .to_string()
        })
        .collect()
}

/// The dependency tables of a manifest named `kind`, its own and each
/// `[target.*]`'s.
fn tables<'a>(manifest: &'a toml::Table, kind: &str) -> Vec<&'a toml::Value> {
    let mut found: Vec<&toml::Value> = manifest.get(kind).into_iter().collect();
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        found.extend(targets.values().filter_map(|t| t.get(kind)));
    }
    found
}

/// The workspace's crates, from the root manifest's `members`.
pub fn members(root: &Path) -> Result<Vec<Member>, Error> {
    let manifest_path = root.join("Cargo.toml");
    let manifest = parse(&manifest_path)?;
    let listed = manifest
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .ok_or_else(|| Error::Manifest(manifest_path.clone(), "no workspace.members".into()))?;
    let mut members = Vec::new();
    for dir in listed.iter().filter_map(|m| m.as_str()) {
        let path = root.join(dir).join("Cargo.toml");
        let manifest = parse(&path)?;
        let name = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .ok_or_else(|| Error::Manifest(path.clone(), "no package.name".into()))?;
        let names = |kinds: &[&str]| -> BTreeSet<String> {
            kinds
                .iter()
                .flat_map(|kind| tables(&manifest, kind))
                .flat_map(|table| dependency_names(Some(table)))
                .collect()
        };
        members.push(Member {
            name: name.to_string(),
            dir: root.join(dir),
            depends_on: names(&["dependencies", "build-dependencies"]),
            dev_depends_on: names(&["dev-dependencies"]),
        });
    }
    let workspace: BTreeSet<String> = members.iter().map(|m| m.name.clone()).collect();
    for member in &mut members {
        member.depends_on.retain(|d| workspace.contains(d));
        member.dev_depends_on.retain(|d| workspace.contains(d));
    }
    Ok(members)
}

/// Each crate's layer; `Err` names the crates whose dependencies go round.
pub fn layers(members: &[Member]) -> Result<BTreeMap<String, usize>, Vec<String>> {
    let mut layers: BTreeMap<String, usize> = BTreeMap::new();
    while layers.len() < members.len() {
        let before = layers.len();
        for member in members {
            if layers.contains_key(&member.name) {
                continue;
            }
            let below: Option<Vec<usize>> = member
                .depends_on
                .iter()
                .map(|d| layers.get(d).copied())
                .collect();
            if let Some(below) = below {
                let layer = below.iter().max().map_or(0, |highest| highest + 1);
                layers.insert(member.name.clone(), layer);
            }
        }
        if layers.len() == before {
            return Err(members
                .iter()
                .filter(|m| !layers.contains_key(&m.name))
                .map(|m| {
                    format!(
                        "{} depends on {:?}, round in a circle",
                        m.name, m.depends_on
                    )
                })
                .collect());
        }
    }
    Ok(layers)
}

/// The crates `name`'s dependencies reach (not itself).
fn below(members: &[Member], name: &str) -> BTreeSet<String> {
    let mut reached = BTreeSet::new();
    let mut stack = vec![name.to_string()];
    while let Some(crate_name) = stack.pop() {
        let member = members.iter().find(|m| m.name == crate_name);
        for dependency in member.into_iter().flat_map(|m| &m.depends_on) {
            if reached.insert(dependency.clone()) {
                stack.push(dependency.clone());
            }
        }
    }
    reached
}

/// Every arrow that does not point down: dev-dependencies on a crate not
/// below, and source naming a workspace crate not below.
pub fn upward(members: &[Member]) -> Result<Vec<String>, Error> {
    let mut found = Vec::new();
    for member in members {
        let under = below(members, &member.name);
        for dev in &member.dev_depends_on {
            if below(members, dev).contains(&member.name) {
                found.push(format!(
                    "{} dev-depends on {dev}, which depends on it",
                    member.name
                ));
            }
        }
        let others: BTreeMap<String, &str> = members
            .iter()
            .filter(|m| m.name != member.name)
            .map(|m| (m.name.replace('-', "_"), m.name.as_str()))
            .collect();
        let src = member.dir.join("src");
        if !src.is_dir() {
            continue;
        }
        for file in modules::rust_files(&src)? {
            let text = std::fs::read_to_string(&file).map_err(|e| Error::io("read", &file, e))?;
            for named in source::crate_names(&text) {
                if let Some(other) = others.get(&named)
                    && !under.contains(*other)
                {
                    found.push(format!(
                        "{} names {named}:: in {}, a crate not below it",
                        member.name,
                        file.display()
                    ));
                }
            }
        }
    }
    Ok(found)
}
