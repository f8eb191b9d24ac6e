//! The host-to-host report finds its reference and the targets' peers by
//! their kind, not by how their labels begin: a label that changes (aria2c's
//! connection count) or that begins like another (`flexio get
//! --no-verify`) does not change which rows are compared.

use flexio::MechanismName;
use flexio_bench::host_bench::{
    table, write_charts, HostContender, HostPart, HostResults, HostTiming,
};

fn timing(
    part: HostPart,
    workload: &str,
    contender: &str,
    kind: HostContender,
    seconds: f64,
) -> HostTiming {
    HostTiming {
        part,
        workload: workload.into(),
        contender: contender.into(),
        kind,
        server: "server".into(),
        files: 1,
        bytes: 1 << 30,
        seconds: vec![seconds; 3],
        server_cpu_seconds: vec![0.25; 3],
        verified: Some(true),
        failed: None,
    }
}

fn results() -> HostResults {
    let main = |contender, kind, seconds| {
        timing(HostPart::HostToHost, "1 GiB file", contender, kind, seconds)
    };
    let mut timings = vec![
        // Listed before the reference: a prefix match on "flexio get"
        // would take it as the reference.
        main(
            "flexio get --no-verify",
            HostContender::FlexioGetNoVerify,
            0.5,
        ),
        main("flexio get", HostContender::FlexioGet, 1.0),
        main("aria2c -x 7 (nginx)", HostContender::Aria2c, 2.0),
        main("iperf3 (ceiling)", HostContender::Iperf3, 0.8),
        main(
            "iperf3 -F (into a file)",
            HostContender::Iperf3IntoFile,
            0.9,
        ),
    ];
    for size in [4 << 10, 16 << 10] {
        timings.push(timing(
            HostPart::Fig6,
            "100 MiB file",
            &format!("read-write buffer {size}"),
            HostContender::Fig6 {
                send: MechanismName::ReadWrite,
                chunk: size,
            },
            1.0,
        ));
    }
    HostResults {
        link: "loopback".into(),
        timings,
        skipped: Vec::new(),
    }
}

#[test]
fn targets_compare_the_rows_of_the_right_kind() {
    let text = table(&results());
    // The reference is flexio get (1.0 s), not --no-verify (0.5 s).
    assert!(
        text.contains("1 GiB file: 2.00× aria2c (target ≥ 1): met"),
        "{text}"
    );
    assert!(
        text.contains("1 GiB file: 0.80× iperf3 (ceiling) (target ≥ 0.9): MISSED"),
        "{text}"
    );
    assert!(
        text.contains("1 GiB file: 0.90× iperf3 -F (into a file)"),
        "{text}"
    );
    assert!(
        text.contains("tree B: rsync daemon: not measured"),
        "{text}"
    );
}

#[test]
fn fig6_finds_its_points_by_mechanism_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let written = write_charts(&results(), dir.path()).unwrap();
    let fig6 = written
        .iter()
        .find(|p| p.to_string_lossy().contains("fig6"))
        .expect("a fig6 chart");
    let svg = std::fs::read_to_string(fig6).unwrap();
    // Both points of the read-write line are drawn, a dot each.
    assert!(svg.contains("read-write: buffer size"), "{svg}");
    assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
}

/// host.json keeps its keys: the kind is for the report, not written.
#[test]
fn host_json_rows_keep_their_keys() {
    let row = serde_json::to_value(&results().timings[0]).unwrap();
    let keys: Vec<&str> = row
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = vec![
        "part",
        "workload",
        "contender",
        "server",
        "files",
        "bytes",
        "seconds",
        "server_cpu_seconds",
        "verified",
        "failed",
    ];
    expected.sort_unstable();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(keys, expected);
    assert_eq!(row["contender"], "flexio get --no-verify");
}
