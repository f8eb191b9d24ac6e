//! The command line as a person uses it: exit statuses, one-line errors,
//! the JSON report, listening on port 0, and stdout as a sink.

use crate::common;

use common::{flexio, json_report};

use std::io::{BufRead, BufReader};
use std::process::Stdio;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn copy_prints_a_versioned_json_report_and_moves_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&source, pattern(3 << 20)).unwrap();
    let output = flexio()
        .args(["copy", "--json", "--verify", "--via", "sendfile"])
        .arg(&source)
        .arg(&sink)
        .output()
        .unwrap();
    let report = json_report(&output);
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["bytes"], 3 << 20);
    assert_eq!(report["mechanism_used"], "sendfile");
    assert!(report["wall_ns"].as_u64().unwrap() > 0);
    assert!(report["verify"]["blake3"].is_string());
    assert_eq!(std::fs::read(&sink).unwrap(), pattern(3 << 20));
    assert!(
        output.stderr.is_empty(),
        "stderr is not a terminal: nothing but errors"
    );
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a");
    std::fs::write(&source, b"hello").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "copy".into(),
                source.display().to_string(),
                source.display().to_string(),
            ],
            "same file",
        ),
        (
            vec![
                "copy".into(),
                dir.path().display().to_string(),
                dir.path().join("y").display().to_string(),
            ],
            "directory",
        ),
        (
            vec![
                "copy".into(),
                "--via".into(),
                "teleport".into(),
                source.display().to_string(),
                dir.path().join("z").display().to_string(),
            ],
            "unknown mechanism",
        ),
        (
            vec![
                "copy".into(),
                "--via".into(),
                "copy-file-range".into(),
                source.display().to_string(),
                "tcp://127.0.0.1:9".into(),
            ],
            "mechanisms that can: read-write",
        ),
        (
            vec![
                "copy".into(),
                "--chunk".into(),
                "12Q".into(),
                source.display().to_string(),
                "-".into(),
            ],
            "unknown unit",
        ),
        (
            vec!["bench".into(), "--quick".into(), "--full".into()],
            "cannot be used with",
        ),
        (
            vec!["tune".into(), "--quick".into(), "--full".into()],
            "cannot be used with",
        ),
    ];
    for (args, expected) in cases {
        let output = flexio().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        if !["unknown unit", "cannot be used with"].contains(&expected) {
            assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        }
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing created"
    );
}

#[test]
fn a_refused_connection_is_a_run_time_error() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a");
    std::fs::write(&source, b"hello").unwrap();
    // Bind and drop to find a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = flexio()
        .arg("copy")
        .arg(&source)
        .arg(format!("tcp://127.0.0.1:{port}"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("connect"));
}

#[test]
fn listen_on_port_0_prints_the_port_and_receives_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&source, pattern(5 << 20)).unwrap();
    let mut receiver = flexio()
        .args(["copy", "-q", "tcp-listen://127.0.0.1:0"])
        .arg(&sink)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(receiver.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("flexio: listening on ")
        .expect(&line)
        .to_string();
    let sender = flexio()
        .args(["copy", "-q"])
        .arg(&source)
        .arg(&address)
        .status()
        .unwrap();
    assert!(sender.success());
    assert!(receiver.wait().unwrap().success());
    assert_eq!(std::fs::read(&sink).unwrap(), pattern(5 << 20));
}

#[test]
fn stdout_as_sink_gets_only_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a");
    std::fs::write(&source, pattern(1 << 20)).unwrap();
    let output = flexio()
        .args(["copy", "--offset", "1000", "--length", "64K"])
        .arg(&source)
        .arg("-")
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(output.stdout, pattern(1 << 20)[1000..1000 + 65536].to_vec());
}

#[test]
fn mechanisms_json_lists_every_pair_with_auto() {
    let output = flexio().args(["mechanisms", "--json"]).output().unwrap();
    assert!(output.status.success());
    let matrix: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let pairs = matrix["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 49);
    let file_to_tcp = pairs
        .iter()
        .find(|p| p["source"] == "file" && p["sink"] == "tcp")
        .unwrap();
    assert_eq!(file_to_tcp["auto"], "sendfile");
    // Zero-copy send: file -> TCP only, never auto's built-in choice,
    // and whether this kernel has it is said.
    for pair in pairs {
        let listed = pair["mechanisms"]
            .as_array()
            .unwrap()
            .contains(&"send-zc".into());
        let zc_pair = matches!(pair["source"].as_str(), Some("file" | "block-device"))
            && pair["sink"] == "tcp";
        assert_eq!(listed, zc_pair, "{pair}");
        assert_ne!(pair["auto"], "send-zc", "{pair}");
    }
    let send_zc = matrix["mechanisms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "send-zc")
        .expect("send-zc listed");
    assert_eq!(
        send_zc["available"].as_bool().unwrap(),
        send_zc["unavailable_because"].is_null()
    );
    assert!(!file_to_tcp["mechanisms"]
        .as_array()
        .unwrap()
        .contains(&"copy-file-range".into()));
    let kernels = matrix["copy_kernels"].as_array().unwrap();
    let names: Vec<_> = kernels
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["memcpy", "rep-movsb", "nt-avx2", "nt-avx512", "threads"]
    );
    for kernel in kernels {
        let name: flexio::CopyKernel = kernel["name"].as_str().unwrap().parse().unwrap();
        assert_eq!(kernel["available"], name.is_available(), "{name}");
    }
}
