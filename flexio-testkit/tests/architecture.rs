//! The workspace's one architecture check (layers point down, no circle
//! among sibling modules at any depth, no exemptions), run on the real
//! workspace and on planted trees that must fail it.

use std::path::Path;

use flexio_testkit::architecture;

fn write(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace of two crates, `low` and `high` (which depends on `low`),
/// with `low/src/seeds/` holding three modules that point down.
fn planted() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"low\", \"high\"]\n",
    );
    write(root, "low/Cargo.toml", "[package]\nname = \"low\"\n");
    write(root, "low/src/lib.rs", "pub mod seeds;\n");
    write(
        root,
        "low/src/seeds/mod.rs",
        "pub mod a;\npub mod b;\npub use a::A;\n",
    );
    write(
        root,
        "low/src/seeds/a/mod.rs",
        "pub mod x;\npub struct A;\n",
    );
    write(root, "low/src/seeds/a/x.rs", "use super::super::b::B;\n");
    write(root, "low/src/seeds/b.rs", "pub struct B;\n");
    write(
        root,
        "high/Cargo.toml",
        "[package]\nname = \"high\"\n[dependencies]\nlow = { path = \"../low\" }\n",
    );
    write(root, "high/src/lib.rs", "pub use low::seeds::A;\n");
    dir
}

#[test]
fn the_workspace_passes_the_architecture_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let members = architecture::members(&root).unwrap();
    let layers = architecture::layers(&members).unwrap();
    eprintln!("crate layers, read from the manifests: {layers:?}");
    assert!(layers.len() >= 8, "{layers:?}");
    let problems = architecture::check(&root).unwrap();
    assert!(
        problems.is_empty(),
        "the architecture breaks:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_planted_tree_that_points_down_passes() {
    let dir = planted();
    let problems = architecture::check(dir.path()).unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
    let members = architecture::members(dir.path()).unwrap();
    let layers = architecture::layers(&members).unwrap();
    assert_eq!((layers["low"], layers["high"]), (0, 1));
}

#[test]
fn a_circle_through_super_super_fails() {
    let dir = planted();
    // a/x.rs names b through super::super::; b names a back: a circle
    // among seeds' children, one level below the files that make it.
    write(
        dir.path(),
        "low/src/seeds/b.rs",
        "use super::a::A;\npub struct B;\n",
    );
    let problems = architecture::check(dir.path()).unwrap();
    assert!(
        problems.iter().any(
            |p| p.starts_with("low: seeds: ") && p.contains("a -> b -> a")
                || p.contains("b -> a -> b")
        ),
        "{problems:#?}"
    );
    // The same through crate:: paths and a use group.
    write(
        dir.path(),
        "low/src/seeds/b.rs",
        "use crate::{seeds::a::x};\npub struct B;\n",
    );
    assert_eq!(architecture::check(dir.path()).unwrap().len(), 1);
    // And through a doc link, which rustdoc follows.
    write(
        dir.path(),
        "low/src/seeds/b.rs",
        "/// Unlike [`crate::seeds::a::A`].\npub struct B;\n",
    );
    assert_eq!(architecture::check(dir.path()).unwrap().len(), 1);
    // But not through a plain comment or a string.
    write(
        dir.path(),
        "low/src/seeds/b.rs",
        "// crate::seeds::a\npub const B: &str = \"super::a\";\n",
    );
    assert!(architecture::check(dir.path()).unwrap().is_empty());
}

#[test]
fn a_circle_deep_in_a_unit_test_module_fails() {
    let dir = planted();
    write(
        dir.path(),
        "low/src/seeds/b.rs",
        "pub struct B;\n#[cfg(test)]\nmod tests {\n    use super::super::a::A;\n}\n",
    );
    let problems = architecture::check(dir.path()).unwrap();
    assert_eq!(problems.len(), 1, "{problems:#?}");
}

#[test]
fn an_upward_import_fails() {
    let dir = planted();
    write(
        dir.path(),
        "low/src/seeds/b.rs",
        "pub struct B(high::Thing);\n",
    );
    let problems = architecture::check(dir.path()).unwrap();
    assert!(
        problems.iter().any(|p| p.contains("low names high::")),
        "{problems:#?}"
    );
    // A dev-dependency on the crate above is a circle of crates too.
    write(dir.path(), "low/src/seeds/b.rs", "pub struct B;\n");
    write(
        dir.path(),
        "low/Cargo.toml",
        "[package]\nname = \"low\"\n[dev-dependencies]\nhigh = { path = \"../high\" }\n",
    );
    let problems = architecture::check(dir.path()).unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("low dev-depends on high")),
        "{problems:#?}"
    );
}

#[test]
fn a_new_crate_needs_no_edit_to_the_check() {
    let dir = planted();
    write(
        dir.path(),
        "Cargo.toml",
        "[workspace]\nmembers = [\"low\", \"high\", \"top\"]\n",
    );
    write(
        dir.path(),
        "top/Cargo.toml",
        "[package]\nname = \"top\"\n[dependencies]\nhigh = { path = \"../high\" }\n",
    );
    write(dir.path(), "top/src/lib.rs", "pub use high::*;\n");
    let members = architecture::members(dir.path()).unwrap();
    assert_eq!(architecture::layers(&members).unwrap()["top"], 2);
    assert!(architecture::check(dir.path()).unwrap().is_empty());
}
