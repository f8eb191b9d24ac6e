//! One JSON shape per kind of result: each command's `--json` output
//! carries `kind` and `schema_version` and validates against its kind's
//! JSON Schema in `docs/schemas/` (which allows no field it does not
//! name, so a field added without its schema fails here).

use crate::common;

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
    if flexio::MechanismName::SendZc.available().is_ok() {
        // A zero-copy send carries what the kernel's notifications said.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let drain = std::thread::spawn(move || {
            let (mut peer, _) = listener.accept().unwrap();
            std::io::copy(&mut peer, &mut std::io::sink()).unwrap()
        });
        let flow = check(
            "flow",
            flexio()
                .args(["copy", "--via", "send-zc", "--json"])
                .arg(at("a"))
                .arg(format!("tcp://127.0.0.1:{port}")),
        );
        assert_eq!(drain.join().unwrap(), 100_000);
        assert!(
            flow["zero_copy"]["notifications"].as_u64().unwrap() >= 1,
            "{flow}"
        );
    }

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
    // A tree from a server that is not flexio, read from its listing.
    let listing = check(
        "get-tree",
        flexio()
            .arg("get")
            .arg(format!("http://{}/", listing_server()))
            .arg(fetched.path().join("t3"))
            .arg("--json"),
    );
    assert_eq!(listing["listing"]["format"], "html", "{listing}");
    check(
        "cache-sim",
        flexio().args([
            "cache",
            "sim",
            "--trace",
            "zipf:blocks=1000,alpha=0.9,len=20000,seed=1",
            "--size",
            "10,100",
            "--json",
        ]),
    );
}

/// `cache bench --json` on its smallest settings: the cold/warm table of a
/// 1 MiB file, the hit costs and the hot set (the serve part takes
/// seconds of windows and is left to the bench's own tests).
#[test]
fn the_cache_bench_kind_validates_against_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let document = check(
        "cache-bench",
        flexio()
            .args(["cache", "bench", "--dir"])
            .arg(dir.path())
            .args(["--runs", "1", "--files-mib", "1", "--hot-reads", "1000"])
            .args(["--parts", "smack,hits,hot-set", "--json"]),
    );
    assert!(
        !document["files"].as_array().unwrap().is_empty(),
        "{document}"
    );
    assert!(document["hits"].is_object(), "{document}");
}

/// A server that is not flexio, in HTTP/1.0's way: every answer closes;
/// `/` (whatever the query) is an HTML listing of one file, `f`.
fn listing_server() -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let (kind, body): (&str, &[u8]) = if head.starts_with(b"GET /f ") {
                ("application/octet-stream", b"file bytes")
            } else {
                ("text/html", br#"<a href="../">../</a> <a href="f">f</a>"#)
            };
            let head = format!(
                "HTTP/1.0 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    address
}

#[test]
fn fixed_socket_buffers_are_reported_and_validate_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a");
    std::fs::write(&source, vec![3u8; 1 << 20]).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut listener.accept().unwrap().0, &mut bytes).unwrap();
        bytes.len()
    });
    let report = check(
        "flow",
        flexio()
            .arg("copy")
            .arg(&source)
            .arg(format!("tcp://{address}"))
            .args(["--socket-buffer", "64K", "--json"]),
    );
    assert_eq!(reader.join().unwrap(), 1 << 20);
    // The kernel doubles the request (its bookkeeping), both directions.
    let fixed = &report["socket_buffers"];
    assert_eq!(fixed["requested"], 64 << 10, "{report}");
    assert_eq!(fixed["send"], 128 << 10, "{report}");
    assert_eq!(fixed["receive"], 128 << 10, "{report}");
    // Out of bounds, and with no TCP end: usage errors, nothing copied.
    for (args, says) in [
        (vec!["--socket-buffer", "1K"], "between"),
        (vec!["--socket-buffer", "64K"], "neither end"),
    ] {
        let output = flexio()
            .arg("copy")
            .arg(&source)
            .arg(dir.path().join("b"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            common::stderr(&output).contains(says),
            "{}",
            common::stderr(&output)
        );
        assert!(!dir.path().join("b").exists());
    }
}
