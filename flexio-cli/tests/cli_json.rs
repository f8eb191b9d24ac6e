//! One JSON shape per kind of result: each command's `--json` output
//! carries `kind` and `schema_version` and validates against its kind's
//! JSON Schema in `docs/schemas/` (which allows no field it does not
//! name, so a field added without its schema fails here).

mod common;

use std::path::Path;
use std::process::Command;

use common::{flexio, json_report};

/// The JSON Schema of `kind`.
fn schema(kind: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/schemas")
        .join(format!("{kind}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Runs `command`, and checks that its JSON is of `kind` and valid.
fn check(kind: &str, command: &mut Command) -> serde_json::Value {
    let document = json_report(&command.output().unwrap());
    assert_eq!(document["kind"], kind, "{document}");
    assert!(document["schema_version"].is_u64(), "{document}");
    let validator = jsonschema::validator_for(&schema(kind)).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&document)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{kind}: {errors:#?}\n{document:#}");
    document
}

#[test]
fn every_kind_validates_against_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    std::fs::write(at("a"), vec![1u8; 100_000]).unwrap();
    std::fs::create_dir_all(at("t/sub")).unwrap();
    std::fs::write(at("t/one"), b"1").unwrap();
    std::fs::write(at("t/sub/two"), b"22").unwrap();

    check(
        "flow",
        flexio().arg("copy").arg(at("a")).arg(at("b")).arg("--json"),
    );
    check(
        "flow",
        flexio()
            .args(["copy", "--verify", "--rate", "100M", "--json"])
            .arg(at("a"))
            .arg(at("c")),
    );
    let tree = check(
        "tree",
        flexio()
            .args(["copy", "-r", "--json"])
            .arg(at("t"))
            .arg(at("t2")),
    );
    // The same quantity under the same name as a single flow's.
    assert!(tree["context_switches_voluntary"].is_u64(), "{tree}");
    check(
        "plan",
        flexio().arg("plan").arg(at("a")).arg(at("d")).arg("--json"),
    );
    check("mechanisms", flexio().args(["mechanisms", "--json"]));

    let served = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(served.path().join("up")).unwrap();
    let token = at("token");
    std::fs::write(&token, "json-token-0123456789abcdef\n").unwrap();
    let (_server, url) = common::serve(served.path(), &["--token-file", token.to_str().unwrap()]);
    let put = |what: &Path, target: String| {
        let mut command = flexio();
        command
            .arg("put")
            .arg(what)
            .arg(target)
            .arg("--token-file")
            .arg(&token)
            .arg("--json");
        command
    };
    check("put", &mut put(&at("a"), format!("{url}/up/")));
    check("put-tree", &mut put(&at("t"), format!("{url}/tree/")));
    let fetched = tempfile::tempdir().unwrap();
    check(
        "get",
        flexio()
            .arg("get")
            .arg(format!("{url}/up/a"))
            .arg(fetched.path().join("a"))
            .arg("--json"),
    );
    check(
        "get-tree",
        flexio()
            .arg("get")
            .arg(format!("{url}/tree/"))
            .arg(fetched.path().join("t"))
            .arg("--json"),
    );
    // A file from two servers (the same one twice), and half a tree.
    check(
        "get-mirrored",
        flexio()
            .arg("get")
            .arg(format!("{url}/up/a"))
            .args(["--mirror", &format!("{url}/up/a")])
            .arg(fetched.path().join("a2"))
            .arg("--json"),
    );
    check(
        "get-tree",
        flexio()
            .arg("get")
            .arg(format!("{url}/tree/"))
            .arg(fetched.path().join("t2"))
            .args(["--shard", "1/2", "--json"]),
    );
}
