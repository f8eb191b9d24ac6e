//! `flexio bench --scenario hosts --quick` end to end as root: its table,
//! `hosts.json` (every contender at every N, every round's copies
//! checked), `hosts.md` and `hosts.svg`, and no namespace, server or data
//! left behind, also when it is stopped by SIGTERM halfway.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{flexio, require_root, stderr, wait_at_most};

/// The `hosts` scenario's namespaces of the bench with this pid.
fn namespaces_of(pid: u32) -> Vec<String> {
    common::namespaces_of("flexio-hostsn", pid)
}

#[test]
fn the_quick_hosts_scenario_compares_shards_mirrors_and_chain_and_cleans_up() {
    if !require_root("the hosts scenario's network namespaces") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let child = flexio()
        .args(["bench", "--scenario", "hosts", "--quick", "--hosts", "2,3"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = wait_at_most(child, Duration::from_secs(240)).expect("the quick run hung");
    assert!(output.status.success(), "{}", stderr(&output));
    let table = String::from_utf8_lossy(&output.stdout);
    for line in ["N = 2", "N = 3", "targets (issue 29)", "naive fan-out to N"] {
        assert!(table.contains(line), "no {line:?} in\n{table}");
    }
    assert!(!table.contains("FAILED"), "{table}");

    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("hosts.json")).unwrap()).unwrap();
    assert_eq!(json["scenario"], "hosts");
    let timings = json["results"]["timings"].as_array().unwrap();
    assert_eq!(timings.len(), 2 * 7, "{timings:?}");
    for timing in timings {
        assert!(timing["failed"].is_null(), "{timing}");
        let seconds = timing["seconds"].as_array().unwrap();
        assert_eq!(seconds.len(), 2, "{timing}");
        assert!(
            seconds.iter().all(|s| s.as_f64().unwrap() > 0.0),
            "{timing}"
        );
    }
    // Naive fan-out sends N copies through the source's one limited link:
    // each round takes at least N transfers' time at the link's rate (less
    // a socket buffer's burst), however busy the machine. A bound from the
    // rate, not from another timing that the same load slows.
    let (bytes, rate) = (
        json["results"]["bytes"].as_f64().unwrap(),
        json["results"]["rate"].as_f64().unwrap(),
    );
    let naive: Vec<&serde_json::Value> = timings
        .iter()
        .filter(|t| t["contender"] == "naive")
        .collect();
    assert_eq!(naive.len(), 2, "{timings:?}");
    for timing in naive {
        let n = timing["n"].as_f64().unwrap();
        for round in timing["seconds"].as_array().unwrap() {
            let floor = 0.8 * n * bytes / rate;
            assert!(round.as_f64().unwrap() >= floor, "{timing} under {floor} s");
        }
    }
    // Every ratio was computed.
    for ratio in json["ratios"].as_array().unwrap() {
        for key in [
            "naive_over_one_transfer",
            "shards_over_one",
            "mirrors_over_one",
            "chain_over_one_transfer",
        ] {
            assert!(ratio[key].as_f64().unwrap() > 0.0, "{ratio}");
        }
    }
    let markdown = std::fs::read_to_string(out.join("hosts.md")).unwrap();
    assert!(markdown.starts_with("# flexio bench --scenario hosts"));
    let svg = std::fs::read_to_string(out.join("hosts.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.contains("chain of N") && svg.contains("hosts N"),
        "{svg}"
    );
    assert_eq!(common::names(dir.path()), vec!["out".to_string()]);
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

#[test]
fn a_hosts_run_stopped_by_sigterm_removes_its_namespaces_and_data() {
    if !require_root("the hosts scenario's network namespaces") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let child = flexio()
        .args(["bench", "--scenario", "hosts", "--quick", "--hosts", "2"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let made =
        flexio_testkit::wait_until(|| namespaces_of(pid).len() == 3, Duration::from_secs(10));
    assert!(made, "the bench made no namespaces");
    // Into the runs: the servers listen and a client is fetching.
    let fetching = flexio_testkit::wait_until(
        || {
            descendants_of(pid)
                .iter()
                .any(|command| command.contains(" get "))
        },
        Duration::from_secs(60),
    );
    assert!(fetching, "the bench started no client");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let output = wait_at_most(child, Duration::from_secs(60)).expect("no exit after SIGTERM");
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("stopped by a signal"),
        "{}",
        stderr(&output)
    );
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
    // Nothing of the work directory left (no outputs either: it stopped).
    assert_eq!(common::names(dir.path()), Vec::<String>::new());
}

/// The command lines of `pid`'s descendants (from procfs's `children` of
/// each of a process's threads, since any thread may have spawned one).
fn descendants_of(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(parent) = queue.pop() {
        let mut children = String::new();
        for task in std::fs::read_dir(format!("/proc/{parent}/task"))
            .into_iter()
            .flatten()
        {
            let path = task.map(|t| t.path().join("children"));
            children += &path.and_then(std::fs::read_to_string).unwrap_or_default();
            children.push(' ');
        }
        for child in children
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
        {
            let command = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&command).replace('\0', " "));
            queue.push(child);
        }
    }
    found
}
