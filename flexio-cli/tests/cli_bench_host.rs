//! `flexio bench --scenario host-to-host` at a quick size: its table,
//! `host.json`, `host.md` and charts are well-formed, every copy matched,
//! and (as root) the run used a veth pair and removed its namespaces.

use crate::common;

use common::{flexio, is_root, stderr};

#[test]
fn the_host_to_host_scenario_writes_a_well_formed_table_json_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let child = flexio()
        .args(["bench", "--scenario", "host-to-host", "--sizes", "2M"])
        .args(["--tree-scale", "0.003", "--runs", "1"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let table = String::from_utf8_lossy(&output.stdout);
    for heading in [
        "host-to-host: 2.00 MiB file",
        "host-to-host: tree B",
        "host-to-host: tree A",
        "fig5: ",
        "fig6: ",
        "targets",
    ] {
        assert!(table.contains(heading), "no {heading:?} in\n{table}");
    }
    // scp ran (an sshd in the servers' namespace), or the "not run" list
    // says why not, wherever it stands in that list: which peers come
    // before it depends on what this machine has.
    let not_run = not_run(&table);
    assert!(
        table.contains("\n  scp ") || not_run.iter().any(|(name, _)| name == "scp"),
        "{table}"
    );
    for (name, why) in &not_run {
        assert!(!why.is_empty(), "{name} not run, and no reason: {table}");
    }
    assert!(!table.contains("DIFFERS"), "{table}");
    assert!(!table.contains("FAILED"), "{table}");

    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("host.json")).unwrap()).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["scenario"], "host-to-host");
    let results = &json["results"];
    let link = results["link"].as_str().unwrap();
    if is_root() {
        assert!(link.starts_with("veth pair"), "{link}");
    } else {
        assert!(link.starts_with("loopback (not root"), "{link}");
    }
    let timings = results["timings"].as_array().unwrap();
    let count = |part: &str| timings.iter().filter(|t| t["part"] == part).count();
    // The flexio rows at least on the main part; every sender × receiver
    // pair on three workloads; both mechanisms at six sizes.
    assert!(count("host-to-host") >= 6, "{timings:?}");
    assert_eq!(count("fig5"), 3 * 6);
    assert_eq!(count("fig6"), 2 * 6);
    for timing in timings {
        assert!(timing["failed"].is_null(), "{timing}");
        assert_eq!(timing["seconds"].as_array().unwrap().len(), 1, "{timing}");
        assert!(timing["seconds"][0].as_f64().unwrap() > 0.0, "{timing}");
        assert_eq!(
            timing["server_cpu_seconds"].as_array().unwrap().len(),
            1,
            "{timing}"
        );
        if !timing["contender"].as_str().unwrap().starts_with("iperf3") {
            assert_eq!(timing["verified"], true, "{timing}");
        }
    }
    // iperf3 as the link's ceiling, and writing into a file as the limit
    // for a file (CI installs iperf3).
    if std::process::Command::new("iperf3")
        .arg("--version")
        .output()
        .is_ok()
    {
        for name in ["iperf3 (ceiling)", "iperf3 -F (into a file)"] {
            assert!(timings.iter().any(|t| t["contender"] == name), "{name}");
        }
        assert!(table.contains("the link's limit for a file"), "{table}");
    }
    for workload in ["tree B", "tree A"] {
        assert!(
            timings
                .iter()
                .any(|t| t["workload"] == workload && t["contender"] == "flexio get"),
            "{workload}"
        );
    }

    let markdown = std::fs::read_to_string(out.join("host.md")).unwrap();
    assert!(markdown.starts_with("# flexio bench --scenario host-to-host"));
    for (chart, words) in [
        ("host-to-host.svg", "tree A"),
        ("host-fig5.svg", "Fig 5"),
        ("host-fig6.svg", "map size"),
    ] {
        let svg = std::fs::read_to_string(out.join(chart)).unwrap();
        assert!(svg.starts_with("<svg"), "{chart}");
        assert!(svg.trim_end().ends_with("</svg>"), "{chart}");
        assert!(svg.contains(words), "{chart} has no {words:?}");
    }
    // Nothing left in the bench directory but the outputs.
    assert_eq!(common::names(dir.path()), vec!["out".to_string()]);
    if is_root() {
        let namespaces = std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&namespaces.stdout);
        assert!(
            !listed.contains(&format!("-{pid}")),
            "namespaces left behind: {listed}"
        );
    }
}

/// The "not run:" section of the table: each contender's name and why.
fn not_run(table: &str) -> Vec<(String, String)> {
    let Some((_, section)) = table.split_once("\nnot run:\n") else {
        return Vec::new();
    };
    section
        .lines()
        .map_while(|line| line.strip_prefix("  "))
        .filter_map(|line| line.split_once(": "))
        .map(|(name, why)| (name.to_string(), why.trim().to_string()))
        .collect()
}
