//! The product scenarios behind one `Scenario` trait: the cells come from
//! the options in the order they run, and a report (a table, charts in
//! the output directory) comes from results, for any scenario alike.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use flexio_bench::host_bench::{HostBench, HostBenchOptions, HostResults};
use flexio_bench::hosts_bench::{Contender, HostsBench, HostsOptions, HostsResults, HostsTiming};
use flexio_bench::pace_bench::{PaceBench, PaceBenchOptions, PaceCell, PaceResult};
use flexio_bench::schedule_bench::{ScheduleBench, ScheduleBenchOptions};
use flexio_bench::server_bench::{ServerBench, ServerBenchOptions, ServerBenchResults};
use flexio_bench::tree_bench::{TreeBench, TreeBenchOptions, TreeResults, TreeShape, TreeTiming};
use flexio_bench::{Error, Report, Scenario};

/// Any scenario's report into `out`, checked the same way: a table that
/// names `expected`, and every chart an SVG file in `out`.
fn reported<S: Scenario>(
    options: &S::Options,
    results: &S::Results,
    out: &Path,
    expected: &str,
) -> Report {
    let report = S::report(options, results, out, "flexio bench --scenario test").unwrap();
    assert!(
        report.table.contains(expected),
        "{}: {}",
        S::NAME,
        report.table
    );
    assert!(!report.charts.is_empty(), "{}", S::NAME);
    for chart in &report.charts {
        assert_eq!(chart.parent(), Some(out), "{}", chart.display());
        let svg = std::fs::read_to_string(chart).unwrap();
        assert!(svg.contains("<svg"), "{}", chart.display());
    }
    report
}

fn pace_options(rates: Vec<u64>) -> PaceBenchOptions {
    PaceBenchOptions {
        dir: std::env::temp_dir(),
        flexio: "flexio".into(),
        rates,
        duration: Duration::from_secs(1),
    }
}

fn hosts_options(counts: Vec<usize>) -> HostsOptions {
    HostsOptions {
        dir: std::env::temp_dir().join("flexio-bench-scenario-never-made"),
        flexio: "flexio".into(),
        counts,
        bytes: 1 << 20,
        rate: 1 << 20,
        runs: 1,
        stop: Arc::new(AtomicBool::new(false)),
    }
}

#[test]
fn the_pace_cells_are_every_rate_by_sink_and_pacer_in_order() {
    let cells = PaceBench::cells(&pace_options(vec![4 << 20, 1 << 20])).unwrap();
    let cell = |rate, sink, paced_by| PaceCell {
        rate,
        sink,
        paced_by,
    };
    assert_eq!(
        cells,
        [
            cell(4 << 20, "tcp", "kernel"),
            cell(4 << 20, "tcp", "bucket"),
            cell(4 << 20, "unix", "bucket"),
            cell(1 << 20, "tcp", "kernel"),
            cell(1 << 20, "tcp", "bucket"),
            cell(1 << 20, "unix", "bucket"),
        ]
    );
}

#[test]
fn the_hosts_cells_are_every_contender_at_each_count_and_refuse_nine() {
    let cells = HostsBench::cells(&hosts_options(vec![3, 2])).unwrap();
    assert_eq!(cells.len(), 2 * Contender::ALL.len());
    let (first, second) = cells.split_at(Contender::ALL.len());
    assert!(first.iter().all(|cell| cell.n == 3));
    assert!(second.iter().all(|cell| cell.n == 2));
    let contenders: Vec<Contender> = first.iter().map(|cell| cell.contender).collect();
    assert_eq!(contenders, Contender::ALL);
    let error = HostsBench::cells(&hosts_options(vec![2, 9])).unwrap_err();
    assert!(matches!(error, Error::Usage(_)), "{error:?}");
}

#[test]
fn pace_and_hosts_report_alike() {
    let out = tempfile::tempdir().unwrap();
    let pace: Vec<PaceResult> = [(1u64 << 20, "tcp"), (4 << 20, "tcp")]
        .into_iter()
        .map(|(rate, sink)| PaceResult {
            sink: sink.into(),
            paced_by: "kernel".into(),
            target_bytes_per_s: rate,
            bytes: rate,
            receiver_ns: 1_000_000_000,
            first_read_bytes: 0,
            receiver_bytes_per_s: rate,
            sender_bytes_per_s: rate,
            error_percent: 0.0,
            sender_cpu_s_per_gib: 0.1,
            sender_calls: 10,
            sender_voluntary_switches: 10,
        })
        .collect();
    let report = reported::<PaceBench>(&pace_options(vec![1 << 20]), &pace, out.path(), "kernel");
    assert_eq!(report.charts, [out.path().join("pace.svg")]);

    let hosts = HostsResults {
        network: "test".into(),
        bytes: 1 << 20,
        rate: 1 << 20,
        timings: [2, 3]
            .into_iter()
            .flat_map(|n| {
                Contender::ALL
                    .into_iter()
                    .map(move |contender| HostsTiming {
                        n,
                        contender,
                        seconds: vec![1.0 * n as f64; 3],
                        failed: None,
                    })
            })
            .collect(),
        seconds: 10.0,
    };
    let report = reported::<HostsBench>(
        &hosts_options(vec![2, 3]),
        &hosts,
        out.path(),
        Contender::Chain.name(),
    );
    assert_eq!(report.charts, [out.path().join("hosts.svg")]);
}

/// The top-level keys of `S::document`, sorted.
fn document_keys<S: Scenario>(options: &S::Options, results: &S::Results) -> Vec<String> {
    let document = S::document(options, results, "flexio bench --scenario test").unwrap();
    let object = document.as_object().unwrap();
    object.keys().cloned().collect()
}

fn tree_options() -> TreeBenchOptions {
    TreeBenchOptions {
        dir: std::env::temp_dir(),
        flexio: "flexio".into(),
        runs: 3,
        scale: 0.01,
        ram_disk: false,
        cold: false,
        shapes: vec![TreeShape::A, TreeShape::B],
        stop: None,
    }
}

/// Each `NAME.json` keeps the shape it had before the scenarios shared
/// one path through the CLI: what readers of those files look up.
#[test]
fn every_document_keeps_its_shape() {
    let keys = |names: &[&str]| -> Vec<String> { names.iter().map(|k| k.to_string()).collect() };
    assert_eq!(
        document_keys::<PaceBench>(&pace_options(vec![1 << 20]), &Vec::new()),
        keys(&["results", "scenario", "schema_version", "seconds"])
    );
    let hosts = HostsResults {
        network: "test".into(),
        bytes: 1,
        rate: 1,
        timings: Vec::new(),
        seconds: 1.0,
    };
    assert_eq!(
        document_keys::<HostsBench>(&hosts_options(vec![2]), &hosts),
        keys(&["ratios", "results", "runs", "scenario", "schema_version"])
    );
    assert_eq!(
        document_keys::<TreeBench>(&tree_options(), &TreeResults::default()),
        keys(&[
            "cold",
            "missing_peers",
            "scale",
            "scenario",
            "schema_version",
            "timings"
        ])
    );
    let host_options = HostBenchOptions {
        dir: std::env::temp_dir(),
        flexio: "flexio".into(),
        runs: 1,
        figure_runs: 1,
        file_bytes: 1 << 20,
        tree_scale: 0.01,
        streams: 4,
        namespaces: false,
        figures: false,
    };
    let host = HostResults {
        link: "loopback".into(),
        timings: Vec::new(),
        skipped: Vec::new(),
    };
    let document = HostBench::document(&host_options, &host, "test").unwrap();
    assert_eq!(document["scenario"], "host-to-host");
    assert_eq!(
        document_keys::<HostBench>(&host_options, &host),
        keys(&[
            "file_bytes",
            "results",
            "runs",
            "scenario",
            "schema_version",
            "tree_scale"
        ])
    );
    let server = ServerBenchOptions::quick(std::env::temp_dir(), "flexio".into());
    assert_eq!(
        document_keys::<ServerBench>(&server, &ServerBenchResults::default()),
        keys(&["command", "results", "scenario", "schema_version"])
    );
    let schedule = ScheduleBenchOptions::quick(std::env::temp_dir(), Vec::new());
    assert_eq!(
        document_keys::<ScheduleBench>(&schedule, &Vec::new()),
        keys(&[
            "chunk",
            "command",
            "runs",
            "scenario",
            "schema_version",
            "size",
            "summary"
        ])
    );
}

/// The tree scenario's report: its table with the missing peers and the
/// rounds, and both charts.
#[test]
fn the_tree_report_says_its_missing_peers_and_draws_both_charts() {
    let out = tempfile::tempdir().unwrap();
    let timing = |tree: &str, contender: &str| TreeTiming {
        tree: tree.into(),
        file_system: "disk".into(),
        contender: contender.into(),
        files: 200,
        bytes: 200 << 12,
        seconds: vec![0.5, 0.6, 0.7],
        verified: true,
    };
    let results = TreeResults {
        timings: ["A", "B"]
            .into_iter()
            .flat_map(|tree| [timing(tree, "flexio copy -r"), timing(tree, "cp -r")])
            .collect(),
        missing_peers: vec!["xcp -r".into()],
    };
    let report = reported::<TreeBench>(&tree_options(), &results, out.path(), "tree A on disk");
    assert!(
        report.table.contains("missing peers: xcp -r"),
        "{}",
        report.table
    );
    assert!(
        report.table.contains("3 runs per contender"),
        "{}",
        report.table
    );
    assert_eq!(
        report.charts,
        [
            out.path().join("tree-files.svg"),
            out.path().join("tree-bytes.svg")
        ]
    );
}
