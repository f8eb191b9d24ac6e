//! Signs that must match the rooms: the server's files that
//! `flexio-net/src/lib.rs`'s crate doc names are the files of
//! `flexio-net/src/server/`, no more, no fewer.

use std::collections::BTreeSet;
use std::path::Path;

/// The `server/NAME.rs` files named in the crate doc (`//!` lines) of
/// `lib`.
fn named_in_doc(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .flat_map(|line| {
            line.match_indices("`server/")
                .map(move |(at, _)| &line[at + 1..])
        })
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_net_crate_doc_names_every_server_file_and_only_those() {
    let net = Path::new(env!("CARGO_MANIFEST_DIR")).join("../flexio-net/src");
    let doc = named_in_doc(&std::fs::read_to_string(net.join("lib.rs")).unwrap());
    let files: BTreeSet<String> = std::fs::read_dir(net.join("server"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs") && name != "mod.rs")
        .map(|name| format!("server/{name}"))
        .collect();
    let missing: Vec<_> = files.difference(&doc).collect();
    let gone: Vec<_> = doc.difference(&files).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "flexio-net/src/lib.rs's crate doc does not name {missing:?}, and names {gone:?}, which are not in src/server/"
    );
}

#[test]
fn the_doc_reader_finds_named_files() {
    let doc = "//! - `server/a.rs` (x), `server/b.rs`\n// `server/c.rs`\n";
    assert_eq!(
        named_in_doc(doc),
        ["server/a.rs", "server/b.rs"].map(String::from).into()
    );
}
