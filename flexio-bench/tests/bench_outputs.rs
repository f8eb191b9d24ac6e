//! The bench machinery on a tiny hand-made matrix: statistics, the JSON
//! round-trip, the CSV, the charts and the report. Nothing here is timed:
//! every run is invented, so every expected number is checked by hand.

use flexio::profile::FlowKind;
use std::fs;
use std::path::PathBuf;

use flexio::measure::Measurement;
use flexio::MechanismName;
use flexio_bench::model::{
    CacheState, CellKey, Contender, ContenderKind, Fingerprint, Provenance, Results, RunRecord,
    Scenario, SCHEMA_VERSION,
};
use flexio_bench::output::{self, CSV_HEADER};
use flexio_bench::stats::{self, median, Summary};
use flexio_bench::{charts, table};

/// 1 MB and 100 MB: two decades apart, so the size axis is logarithmic, and
/// a throughput of N MB/s is a whole number of nanoseconds.
const SMALL: u64 = 1_000_000;
const LARGE: u64 = 100_000_000;
const GIB: f64 = (1u64 << 30) as f64;

/// A peer name with a comma, to exercise CSV quoting.
const DD: &str = "dd bs=1M iflag=direct,fullblock";

fn cell(scenario: Scenario, size: u64, cache: CacheState, flows: u32) -> CellKey {
    CellKey {
        scenario,
        size,
        chunk: 0,
        cache,
        flows,
        path: String::new(),
        schedule: None,
        connection_per_file: false,
    }
}

fn flexio(mechanism: &str) -> Contender {
    Contender::Flexio {
        mechanism: mechanism.parse().unwrap(),
        chunk: 1 << 20,
        direct: false,
        queue_depth: 32,
        pipe_size: 1 << 20,
        builtin_table: false,
        copy_kernel: Default::default(),
    }
}

/// `flexio copy` as a process (auto).
fn process() -> Contender {
    Contender::Process {
        mechanism: MechanismName::Auto,
        chunk: 256 << 10,
        direct: false,
        queue_depth: 32,
        pipe_size: 1 << 20,
    }
}

fn peer(name: &str) -> Contender {
    Contender::Peer { name: name.into() }
}

fn memcpy() -> Contender {
    Contender::Limit {
        name: "memcpy".into(),
    }
}

/// One run moving `cell.size` bytes at `mb_per_s` (10^6 bytes per second),
/// with 0.1 s of process CPU (split user/sys), 0.2 s of host CPU and 50
/// context switches per 100 MB.
fn run(cell: &CellKey, contender: &Contender, round: u32, mb_per_s: u64) -> RunRecord {
    let bytes = cell.size;
    let scale = bytes / SMALL; // 1 or 100
    RunRecord {
        cell: cell.clone(),
        contender: contender.clone(),
        round,
        measured: Measurement {
            bytes,
            wall_ns: bytes * 1_000 / mb_per_s,
            cpu_user_ns: 400_000 * scale,
            cpu_sys_ns: 600_000 * scale,
            host_cpu_busy_ns: 2_000_000 * scale,
        },
        context_switches: scale / 2,
        involuntary_switches: Some(scale / 8),
        source_resident_percent: (cell.cache != CacheState::NotApplicable).then_some(100.0),
        mechanism_used: match contender {
            Contender::Flexio { mechanism, .. } => Some(mechanism.to_string()),
            _ => None,
        },
        decided_by: None,
        meter_kept: None,
        flow_bytes_per_s: Vec::new(),
    }
}

/// `rates[0]` is the warm-up (round 0); the rest are rounds 1.. . The runs
/// of a cell are interleaved, A B C A B C, as the runner does.
fn interleave(runs: &mut Vec<RunRecord>, cell: &CellKey, contenders: &[(Contender, [u64; 6])]) {
    for round in 0..6 {
        for (contender, rates) in contenders {
            runs.push(run(cell, contender, round as u32, rates[round]));
        }
    }
}

/// Two scenarios × two sizes, flexio read-write and splice, the peer `cp`
/// (and a slower `dd` in one cell), the memcpy limit; a warm-up and five
/// counted rounds each.
fn tiny_matrix() -> Results {
    let mut runs = Vec::new();

    // file-to-file, 1 MB, warm. Per-round ratios of read-write to cp are
    // 2, 0.5, 2, 0.5, 4 (median 2) while the ratio of the medians is
    // 400 / 250 = 1.6. read-write's warm-up is the fastest run of all: if
    // it were counted, the median and max would change.
    interleave(
        &mut runs,
        &cell(
            Scenario::Flow(FlowKind::FileToFile),
            SMALL,
            CacheState::Warm,
            1,
        ),
        &[
            (flexio("read-write"), [10_000, 400, 500, 200, 250, 1_000]),
            (flexio("splice"), [250, 250, 250, 250, 250, 250]),
            (process(), [10_000, 400, 500, 200, 250, 1_000]),
            (peer("cp"), [200, 200, 1_000, 100, 500, 250]),
        ],
    );
    // file-to-file, 100 MB, warm: dd is the slower peer, cp the best.
    interleave(
        &mut runs,
        &cell(
            Scenario::Flow(FlowKind::FileToFile),
            LARGE,
            CacheState::Warm,
            1,
        ),
        &[
            (flexio("read-write"), [1_000; 6]),
            (flexio("splice"), [2_000; 6]),
            (process(), [2_000; 6]),
            (peer("cp"), [500; 6]),
            (peer(DD), [250; 6]),
        ],
    );
    // parallel: no peer; two sizes, one and two flows.
    for size in [SMALL, LARGE] {
        for flows in [1, 2] {
            let rate = 500 * u64::from(flows);
            interleave(
                &mut runs,
                &cell(Scenario::Parallel, size, CacheState::Warm, flows),
                &[
                    (flexio("read-write"), [rate; 6]),
                    (flexio("splice"), [rate * 2; 6]),
                ],
            );
        }
    }
    interleave(
        &mut runs,
        &cell(Scenario::Limits, LARGE, CacheState::NotApplicable, 1),
        &[(memcpy(), [4_000; 6])],
    );
    // splice fell back to read-write in the small file-to-file cell.
    for run in runs.iter_mut().filter(|r| {
        r.cell.size == SMALL
            && r.cell.scenario == Scenario::Flow(FlowKind::FileToFile)
            && r.contender == flexio("splice")
    }) {
        run.mechanism_used = Some("read-write".into());
    }

    Results {
        schema_version: SCHEMA_VERSION,
        fingerprint: Fingerprint {
            cpu_model: "Test CPU @ 2.0GHz".into(),
            cpus: 2,
            memory_bytes: 4 << 30,
            kernel: "6.1.0-test".into(),
            filesystem: "ext4".into(),
            device: "/dev/vda1".into(),
        },
        command: "flexio bench --quick --out report".into(),
        missing_peers: vec!["iperf3".into(), "socat".into()],
        notes: vec!["veth skipped: not root".into()],
        runs,
        provenance: Provenance {
            flexio_version: "0.1.0".into(),
            git_commit: "0123456789abcdef0123456789abcdef01234567".into(),
            started_at: "2026-11-23T15:00:00Z".into(),
            auto_profile: None,
            flexio_executable: Some("/usr/bin/flexio".into()),
        },
        summary: Vec::new(),
    }
}

fn find<'a>(summaries: &'a [Summary], cell: &CellKey, contender: &Contender) -> &'a Summary {
    summaries
        .iter()
        .find(|s| &s.cell == cell && &s.contender == contender)
        .unwrap_or_else(|| panic!("no summary for {contender:?} in {cell:?}"))
}

fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0),
        "{actual} != {expected}"
    );
}

#[test]
fn median_of_odd_and_even_counts() {
    assert_eq!(median(&mut [5.0, 1.0, 3.0]), 3.0);
    assert_eq!(median(&mut [7.0]), 7.0);
    assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    assert_eq!(median(&mut [2.0, 1.0]), 1.5);
    assert!(median(&mut []).is_nan());
}

#[test]
fn warm_up_is_not_counted() {
    let results = tiny_matrix();
    let summaries = stats::summarize(&results);
    let small = cell(
        Scenario::Flow(FlowKind::FileToFile),
        SMALL,
        CacheState::Warm,
        1,
    );
    let read_write = find(&summaries, &small, &flexio("read-write"));
    assert_eq!(read_write.runs, 5);
    assert_close(read_write.median_bps, 400e6);
    assert_close(read_write.min_bps, 200e6);
    assert_close(read_write.max_bps, 1_000e6);
    // Every (cell, contender) appears once, limits included.
    assert_eq!(summaries.len(), 4 + 5 + 2 * 4 + 1);
    assert!(summaries.iter().all(|s| s.runs == 5));
}

#[test]
fn ratio_to_best_peer_is_the_median_of_per_round_ratios() {
    let summaries = stats::summarize(&tiny_matrix());
    let small = cell(
        Scenario::Flow(FlowKind::FileToFile),
        SMALL,
        CacheState::Warm,
        1,
    );
    // 2, 0.5, 2, 0.5, 4 -> 2 (not 400/250 = 1.6).
    let process_run = find(&summaries, &small, &process());
    assert_close(process_run.ratio_to_best_peer.unwrap(), 2.0);
    assert_eq!(process_run.best_peer_round_range, Some((0.5, 4.0)));
    let cp = find(&summaries, &small, &peer("cp"));
    assert_close(cp.ratio_to_best_peer.unwrap(), 1.0);

    // The best peer is the fastest one (cp), not the first or the last.
    let large = cell(
        Scenario::Flow(FlowKind::FileToFile),
        LARGE,
        CacheState::Warm,
        1,
    );
    assert_eq!(
        stats::best_peer(&summaries, &large).unwrap().contender,
        peer("cp")
    );
    assert_close(
        find(&summaries, &large, &process())
            .ratio_to_best_peer
            .unwrap(),
        4.0,
    );
    assert_close(
        find(&summaries, &large, &peer(DD))
            .ratio_to_best_peer
            .unwrap(),
        0.5,
    );
}

#[test]
fn ratio_is_none_without_a_peer() {
    let summaries = stats::summarize(&tiny_matrix());
    let parallel: Vec<&Summary> = summaries
        .iter()
        .filter(|s| s.cell.scenario == Scenario::Parallel)
        .collect();
    assert_eq!(parallel.len(), 8);
    assert!(parallel.iter().all(|s| s.ratio_to_best_peer.is_none()));
}

#[test]
fn ratio_to_limit_uses_the_limit_that_bounds_the_cell() {
    let results = tiny_matrix();
    let summaries = stats::summarize(&results);
    // Warm file-to-file and parallel are bounded by memcpy (4000 MB/s),
    // measured at 100 MB only: the small cells use it too.
    let small = cell(
        Scenario::Flow(FlowKind::FileToFile),
        SMALL,
        CacheState::Warm,
        1,
    );
    assert_close(
        find(&summaries, &small, &flexio("read-write"))
            .ratio_to_limit
            .unwrap(),
        0.1,
    );
    let two_flows = cell(Scenario::Parallel, LARGE, CacheState::Warm, 2);
    assert_close(
        find(&summaries, &two_flows, &flexio("splice"))
            .ratio_to_limit
            .unwrap(),
        0.5,
    );
    let limit = find(
        &summaries,
        &cell(Scenario::Limits, LARGE, CacheState::NotApplicable, 1),
        &memcpy(),
    );
    assert_eq!(limit.ratio_to_limit, None);

    // A cold cell needs the disk limit, which was not measured.
    let mut cold = results.clone();
    for run in &mut cold.runs {
        if run.cell.scenario == Scenario::Flow(FlowKind::FileToFile) {
            run.cell.cache = CacheState::Cold;
        }
    }
    let summaries = stats::summarize(&cold);
    assert!(summaries
        .iter()
        .filter(|s| s.cell.scenario == Scenario::Flow(FlowKind::FileToFile))
        .all(|s| s.ratio_to_limit.is_none()));
}

#[test]
fn costs_are_per_gib_moved() {
    let summaries = stats::summarize(&tiny_matrix());
    let large = cell(
        Scenario::Flow(FlowKind::FileToFile),
        LARGE,
        CacheState::Warm,
        1,
    );
    let cp = find(&summaries, &large, &peer("cp"));
    // 0.1 s process, 0.2 s host, 50 switches per 100 MB.
    let gib_moved = LARGE as f64 / GIB;
    assert_close(cp.cpu_s_per_gib, 0.1 / gib_moved);
    assert_close(cp.host_cpu_s_per_gib, 0.2 / gib_moved);
    assert_close(cp.switches_per_gib, 50.0 / gib_moved);
    assert_eq!(cp.resident_percent, Some(100.0));
    assert_eq!(cp.mechanism_used, None);
}

#[test]
fn best_flexio_and_fallbacks() {
    let results = tiny_matrix();
    let summaries = stats::summarize(&results);
    let small = cell(
        Scenario::Flow(FlowKind::FileToFile),
        SMALL,
        CacheState::Warm,
        1,
    );
    let large = cell(
        Scenario::Flow(FlowKind::FileToFile),
        LARGE,
        CacheState::Warm,
        1,
    );
    let best = |c: &CellKey| stats::best_flexio(&summaries, c).unwrap().contender.clone();
    assert_eq!(best(&small), flexio("read-write"));
    assert_eq!(best(&large), flexio("splice"));
    let missing = cell(
        Scenario::Flow(FlowKind::FileToFile),
        42,
        CacheState::Warm,
        1,
    );
    assert!(stats::best_flexio(&summaries, &missing).is_none());
    assert_eq!(
        find(&summaries, &small, &flexio("splice"))
            .mechanism_used
            .as_deref(),
        Some("read-write")
    );

    let text = table::render(&results, &summaries);
    assert!(text.contains("== file-to-file =="), "{text}");
    assert!(text.contains("== parallel =="), "{text}");
    assert!(text.contains("== limits =="), "{text}");
    assert!(text.contains("fallback → read-write"), "{text}");
    assert!(text.contains("* flexio read-write"), "{text}");
    assert!(text.contains("2.00×"), "{text}");
    assert!(
        text.contains("iperf3") && text.contains("veth skipped"),
        "{text}"
    );
}

#[test]
fn json_round_trip_is_equal() {
    let results = tiny_matrix();
    let dir = tempfile::tempdir().unwrap();
    let written = output::write_all(dir.path(), &results).unwrap();
    let json = dir.path().join(output::RESULTS_JSON);
    assert!(written.contains(&json));
    let text = fs::read_to_string(&json).unwrap();
    assert!(
        text.contains(&format!("\"schema_version\": {SCHEMA_VERSION}")),
        "{text}"
    );
    // The per-cell summary is derived from the runs when written.
    let mut back = output::read_results(&json).unwrap();
    assert!(!back.summary.is_empty());
    back.summary.clear();
    assert_eq!(back, results);

    fs::write(&json, "{ not json").unwrap();
    let error = output::read_results(&json).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
}

/// The mechanism is typed in the bench and written as on the command line,
/// so results written before it was typed read back, and JSON keys and
/// values are what they were.
#[test]
fn contender_json_names_the_mechanism_as_on_the_command_line() {
    let engine = Contender::Flexio {
        mechanism: MechanismName::CopyFileRange,
        chunk: 1 << 20,
        direct: false,
        queue_depth: 32,
        pipe_size: 1 << 20,
        builtin_table: true,
        copy_kernel: Default::default(),
    };
    let written = serde_json::to_string(&engine).unwrap();
    assert_eq!(
        written,
        r#"{"type":"flexio","mechanism":"copy-file-range","chunk":1048576,"direct":false,"queue_depth":32,"pipe_size":1048576,"builtin_table":true}"#
    );
    // As a results.json from before (no queue depth or pipe size) has it.
    let old: Contender = serde_json::from_str(
        r#"{"type":"process","mechanism":"auto","chunk":262144,"direct":false,"queue_depth":32,"pipe_size":1048576}"#,
    )
    .unwrap();
    assert_eq!(old, process());
    let older: Contender = serde_json::from_str(
        r#"{"type":"flexio","mechanism":"io-uring","chunk":4096,"direct":true}"#,
    )
    .unwrap();
    assert!(matches!(
        older,
        Contender::Flexio {
            mechanism: MechanismName::IoUring,
            chunk: 4096,
            direct: true,
            ..
        }
    ));
    // A name no build knows is an error, not a contender of another kind.
    assert!(serde_json::from_str::<Contender>(
        r#"{"type":"flexio","mechanism":"telepathy","chunk":4096,"direct":true}"#
    )
    .is_err());
}

#[test]
fn csv_has_a_header_and_one_line_per_run() {
    let results = tiny_matrix();
    let dir = tempfile::tempdir().unwrap();
    output::write_all(dir.path(), &results).unwrap();
    let text = fs::read_to_string(dir.path().join(output::RESULTS_CSV)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + results.runs.len());
    assert_eq!(lines[0], CSV_HEADER.join(","));
    // The peer with a comma in its name is quoted; every line has every
    // column once the quoted comma is discounted.
    let quoted = format!("\"{DD}\"");
    assert!(text.contains(&quoted), "{text}");
    for line in &lines[1..] {
        let unquoted = line.replace(&quoted, "dd");
        assert_eq!(unquoted.split(',').count(), CSV_HEADER.len(), "{line}");
    }
    assert!(lines[1].starts_with("file-to-file,1000000,0,warm,1,,flexio,flexio read-write,"));
}

/// The text lines of an SVG (plotters writes each `<text>` content on a
/// line of its own).
fn svg_texts(svg: &str) -> Vec<&str> {
    svg.lines().filter(|line| !line.starts_with('<')).collect()
}

fn written_svgs(written: &[PathBuf]) -> Vec<String> {
    written
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn charts_are_svg_with_legends() {
    let results = tiny_matrix();
    let dir = tempfile::tempdir().unwrap();
    let written = output::write_all(dir.path(), &results).unwrap();
    let mut svgs = written_svgs(&written);
    svgs.sort();
    assert_eq!(
        svgs,
        [
            "file-to-file-engine-size.svg",
            "file-to-file-size.svg",
            "parallel-scaling.svg",
            "parallel-size.svg"
        ]
    );
    for name in &svgs {
        let svg = fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(svg.contains("<svg"), "{name}");
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        // The engine's rows in their own chart, never beside processes.
        let engine = name != "file-to-file-size.svg";
        for label in ["flexio read-write", "flexio splice"] {
            assert_eq!(svg.contains(label), engine, "{name}: {label}");
        }
        assert!(svg.contains("limit: memcpy"), "{name}");
        // A log axis (100 MB/s to 10 GB/s) in MiB/s, so that every label
        // is a whole number; a linear one in GiB/s.
        assert!(
            svg.contains("throughput, MiB/s (log scale)")
                || svg_texts(&svg).contains(&"throughput, GiB/s"),
            "{name}"
        );
    }
    let by_size = fs::read_to_string(dir.path().join("file-to-file-size.svg")).unwrap();
    assert!(
        svg_texts(&by_size).contains(&"cp"),
        "the peer is in the legend"
    );
    assert!(by_size.contains("dd bs=1M iflag=direct,fullblock"));
    assert!(by_size.contains("bytes per flow (log2 scale)"));
    let scaling = fs::read_to_string(dir.path().join("parallel-scaling.svg")).unwrap();
    assert!(scaling.contains("concurrent flows"));
}

#[test]
fn chunk_sweeps_get_their_own_chart() {
    let mut results = tiny_matrix();
    results
        .runs
        .retain(|r| r.cell.scenario == Scenario::Flow(FlowKind::FileToFile));
    let mut sweep = Vec::new();
    for chunk in [4096, 65536, 1 << 20] {
        let mut swept = cell(
            Scenario::Flow(FlowKind::FileToFile),
            LARGE,
            CacheState::Warm,
            1,
        );
        swept.chunk = chunk;
        let contender = Contender::Flexio {
            mechanism: MechanismName::ReadWrite,
            chunk,
            direct: false,
            queue_depth: 32,
            pipe_size: 1 << 20,
            builtin_table: false,
            copy_kernel: Default::default(),
        };
        interleave(&mut sweep, &swept, &[(contender, [(chunk / 4096) * 10; 6])]);
    }
    results.runs.extend(sweep);
    let dir = tempfile::tempdir().unwrap();
    let summaries = stats::summarize(&results);
    let written = charts::write_scenario_charts(dir.path(), &results, &summaries).unwrap();
    let mut svgs = written_svgs(&written);
    svgs.sort();
    assert_eq!(
        svgs,
        [
            "file-to-file-chunk.svg",
            "file-to-file-engine-size.svg",
            "file-to-file-size.svg"
        ]
    );
    let chunk = fs::read_to_string(dir.path().join("file-to-file-chunk.svg")).unwrap();
    assert!(chunk.contains("chunk size, bytes (log2 scale)"));
    // One series across the sweep, though each point has its own --chunk.
    let texts = svg_texts(&chunk);
    let series = texts.iter().filter(|t| **t == "flexio read-write").count();
    assert_eq!(series, 1, "{texts:?}");
    let text = table::render(&results, &summaries);
    assert!(text.contains("chunk"), "{text}");
}

#[test]
fn report_embeds_every_chart() {
    let results = tiny_matrix();
    let dir = tempfile::tempdir().unwrap();
    let written = output::write_all(dir.path(), &results).unwrap();
    assert_eq!(written.last().unwrap(), &dir.path().join(output::REPORT_MD));
    let report = fs::read_to_string(dir.path().join(output::REPORT_MD)).unwrap();
    for name in written_svgs(&written) {
        assert!(report.contains(&format!("]({name})")), "{name}\n{report}");
    }
    for wanted in [
        "Test CPU @ 2.0GHz",
        "flexio bench --quick --out report",
        "## file-to-file",
        "## parallel",
        "## limits",
        "| size |",
        "- iperf3",
        "- veth skipped: not root",
    ] {
        assert!(report.contains(wanted), "{wanted}\n{report}");
    }
    for path in &written {
        assert!(fs::metadata(path).unwrap().len() > 0, "{}", path.display());
    }
}

#[test]
fn empty_results_still_write_a_report() {
    let results = Results {
        schema_version: SCHEMA_VERSION,
        ..Results::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let written = output::write_all(dir.path(), &results).unwrap();
    assert_eq!(written.len(), 3);
    assert!(stats::summarize(&results).is_empty());
    assert_eq!(output::read_results(&written[0]).unwrap(), results);
}

#[test]
fn a_limit_beside_the_contenders_comes_first() {
    let mut results = tiny_matrix();
    // The memory scenario runs memcpy in its own cells: 2000 MB/s at 1 MB,
    // 5000 MB/s at 100 MB, where the limits scenario has 4000 MB/s.
    for (size, limit_rate) in [(SMALL, 2_000), (LARGE, 5_000)] {
        interleave(
            &mut results.runs,
            &cell(
                Scenario::Flow(FlowKind::MemoryToMemory),
                size,
                CacheState::NotApplicable,
                1,
            ),
            &[
                (flexio("read-write"), [1_000; 6]),
                (memcpy(), [limit_rate; 6]),
            ],
        );
    }
    let summaries = stats::summarize(&results);
    let small = cell(
        Scenario::Flow(FlowKind::MemoryToMemory),
        SMALL,
        CacheState::NotApplicable,
        1,
    );
    let large = cell(
        Scenario::Flow(FlowKind::MemoryToMemory),
        LARGE,
        CacheState::NotApplicable,
        1,
    );
    let ratio = |c: &CellKey| {
        find(&summaries, c, &flexio("read-write"))
            .ratio_to_limit
            .unwrap()
    };
    assert_close(ratio(&small), 0.5);
    assert_close(ratio(&large), 0.2);
    assert_eq!(stats::limit_for(&summaries, &small).unwrap().cell, small);

    let dir = tempfile::tempdir().unwrap();
    let written = charts::write_scenario_charts(dir.path(), &results, &summaries).unwrap();
    assert!(written.contains(&dir.path().join("memory-size.svg")));
    let svg = fs::read_to_string(dir.path().join("memory-size.svg")).unwrap();
    let texts = svg_texts(&svg);
    // memcpy is a series of its own, not a horizontal line per size.
    assert_eq!(texts.iter().filter(|t| **t == "limit: memcpy").count(), 1);
}

#[test]
fn auto_is_held_against_the_best_fixed_mechanism_round_by_round() {
    let pipe = cell(
        Scenario::Flow(FlowKind::PipeToFile),
        SMALL,
        CacheState::NotApplicable,
        1,
    );
    let mut runs = Vec::new();
    // splice is the best fixed mechanism (median 250). auto's ratios to it
    // round by round: 1.2, 0.8, 1.0, 1.6, 0.4 -> median 1.0, range 0.4-1.6.
    interleave(
        &mut runs,
        &pipe,
        &[
            (flexio("auto"), [9_000, 300, 200, 250, 400, 100]),
            (flexio("splice"), [250, 250, 250, 250, 250, 250]),
            (flexio("read-write"), [200, 200, 200, 200, 200, 200]),
        ],
    );
    let results = Results {
        runs,
        ..tiny_matrix()
    };
    let summaries = stats::summarize(&results);
    let auto = find(&summaries, &pipe, &flexio("auto"));
    assert_close(auto.ratio_to_best_fixed.unwrap(), 1.0);
    let (low, high) = auto.best_fixed_round_range.unwrap();
    assert_close(low, 0.4);
    assert_close(high, 1.6);
    // Fixed mechanisms are not held against themselves.
    let splice = find(&summaries, &pipe, &flexio("splice"));
    assert!(splice.ratio_to_best_fixed.is_none());
    assert!(splice.best_fixed_round_range.is_none());

    let overall = stats::auto_verdicts(&summaries).pop().unwrap();
    assert_eq!(overall.scope, "overall");
    assert_close(overall.geomean_to_best_fixed, 1.0);

    let table = table::render(&results, &summaries);
    assert!(table.contains("== auto =="), "{table}");
    assert!(table.contains("(geometric mean 1.00×)"), "{table}");
    assert!(table.contains("rounds ranged"), "{table}");
    assert!(table.contains("0.40–1.60"), "{table}");
}

/// The engine runs inside the bench, without a process's start-up: its
/// figures are never held against a peer. `flexio copy` as a process is,
/// and the verdicts are made of it.
#[test]
fn the_process_contender_not_the_engine_is_held_against_the_peers() {
    let summaries = stats::summarize(&tiny_matrix());
    let small = cell(
        Scenario::Flow(FlowKind::FileToFile),
        SMALL,
        CacheState::Warm,
        1,
    );
    for engine in ["read-write", "splice"] {
        let row = find(&summaries, &small, &flexio(engine));
        assert_eq!(row.ratio_to_best_peer, None, "{engine}");
        assert_eq!(row.contender.kind(), ContenderKind::Engine);
    }
    assert_eq!(process().kind(), ContenderKind::Process);
    assert_eq!(process().label(), "flexio copy (process)");

    let verdicts = stats::peer_verdicts(&summaries);
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert_eq!(verdicts[0].flexio, "flexio copy (process)");
    assert_eq!(verdicts[0].peer, "cp");
    assert_close(verdicts[0].ratio, 2.0);
    assert_close(verdicts[1].ratio, 4.0);
    assert!(verdicts[1].line().contains("faster in every round"));
    // And against every peer of the cell, not only the fastest.
    assert_eq!(
        verdicts[1].each_peer,
        [("cp".to_string(), 4.0), (DD.to_string(), 8.0)]
    );
    assert!(verdicts[1].line().ends_with(&format!("; 8.00× {DD}")));

    // The table names each row's kind and leaves the engine's ratio out;
    // the verdicts say the same.
    let text = table::render(&tiny_matrix(), &summaries);
    let engine_row = text
        .lines()
        .find(|l| l.contains("engine") && l.contains("flexio read-write") && l.contains("1 MiB"))
        .or_else(|| {
            text.lines()
                .find(|l| l.contains("engine") && l.contains("flexio read-write"))
        })
        .expect("an engine row");
    assert!(!engine_row.contains("2.00×"), "{engine_row}");
    assert!(text.contains("process    flexio copy (process)") || text.contains("process  "));
    assert!(
        text.contains("median cell 3.00× over 2 cells (each below)"),
        "{text}"
    );
}

#[test]
fn results_json_holds_a_summary_per_cell_and_the_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let results = tiny_matrix();
    output::write_all(dir.path(), &results).unwrap();
    let text = fs::read_to_string(dir.path().join(output::RESULTS_JSON)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["schema_version"], SCHEMA_VERSION);
    let provenance = &json["provenance"];
    assert_eq!(provenance["flexio_version"], "0.1.0");
    assert_eq!(
        provenance["git_commit"],
        "0123456789abcdef0123456789abcdef01234567"
    );
    assert_eq!(provenance["started_at"], "2026-11-23T15:00:00Z");
    assert!(provenance["auto_profile"].is_null());

    let cells = json["summary"].as_array().unwrap();
    let small = cells
        .iter()
        .find(|c| c["label"] == "file-to-file 976.56 KiB warm")
        .unwrap_or_else(|| {
            panic!(
                "{:#?}",
                cells.iter().map(|c| &c["label"]).collect::<Vec<_>>()
            )
        });
    let kinds: Vec<&str> = small["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["engine", "engine", "process", "peer"]);
    let cp = &small["contenders"][3];
    assert_eq!(cp["contender"], "cp");
    // cp: 200, 1000, 100, 500, 250 MB/s counted.
    assert_close(cp["median_bytes_per_s"].as_f64().unwrap(), 250e6);
    assert_close(cp["min_bytes_per_s"].as_f64().unwrap(), 100e6);
    assert_close(cp["max_bytes_per_s"].as_f64().unwrap(), 1000e6);
    assert!(small["verdict"]
        .as_str()
        .unwrap()
        .contains("flexio copy (process) 2.00× cp"));
    let limits = cells
        .iter()
        .find(|c| c["cell"]["scenario"] == "limits")
        .unwrap();
    assert_eq!(limits["contenders"][0]["kind"], "limit");

    // The report opens with the verdicts and the provenance.
    let report = fs::read_to_string(dir.path().join(output::REPORT_MD)).unwrap();
    let verdicts = report.find("## Verdicts").unwrap();
    assert!(verdicts < report.find("| machine |").unwrap());
    assert!(report.contains("commit 0123456789abcdef0123456789abcdef01234567"));
    assert!(report.contains("no tuned profile (the built-in table)"));
    // And the summary reads back.
    let back = output::read_results(&dir.path().join(output::RESULTS_JSON)).unwrap();
    assert_eq!(back.provenance, results.provenance);
    assert_eq!(back.summary.len(), cells.len());
}

/// A cold cell whose disk limit ran beside the contenders: one contender
/// overlaps the limit's runs (noise), another beats every run of it
/// (unexplained: the limit is wrong), a third stays below.
#[test]
fn a_result_past_its_limit_is_explained_on_the_spot() {
    let cold = cell(
        Scenario::Flow(FlowKind::FileToFile),
        LARGE,
        CacheState::Cold,
        1,
    );
    let disk = Contender::Limit {
        name: "disk-direct-read".into(),
    };
    let mut runs = Vec::new();
    interleave(
        &mut runs,
        &cold,
        &[
            (flexio("read-write"), [500, 520, 480, 530, 470, 510]),
            (flexio("splice"), [900, 900, 900, 900, 900, 900]),
            (flexio("mmap"), [100, 100, 100, 100, 100, 100]),
            (disk.clone(), [500, 500, 450, 500, 490, 480]),
        ],
    );
    for run in &mut runs {
        run.source_resident_percent = Some(0.0);
    }
    let results = Results {
        runs,
        ..tiny_matrix()
    };
    let summaries = stats::summarize(&results);
    let read_write = find(&summaries, &cold, &flexio("read-write"));
    // Held round by round against the limit beside it: 520/500, 480/450,
    // 530/500, 470/490, 510/480 -> 1.06.
    // (The runs' nanoseconds are rounded: close, not exact.)
    let ratio = read_write.ratio_to_limit.unwrap();
    assert!((ratio - 1.06).abs() < 1e-6, "{ratio}");
    let note = read_write.limit_note.as_deref().unwrap();
    assert!(note.contains("within the noise"), "{note}");
    let splice = find(&summaries, &cold, &flexio("splice"));
    assert!(splice
        .limit_note
        .as_deref()
        .unwrap()
        .contains("not explained"));
    assert_eq!(find(&summaries, &cold, &flexio("mmap")).limit_note, None);
    assert_eq!(find(&summaries, &cold, &disk).limit_note, None);

    let text = table::render(&results, &summaries);
    assert!(text.contains("1.06×†"), "{text}");
    assert!(text.contains("† file-to-file 95.37 MiB cold: flexio read-write 1.06× disk-direct-read: within the noise"), "{text}");
    assert!(
        text.contains("2 results above the limit of their cell"),
        "{text}"
    );
    assert!(text.contains("1 not explained"), "{text}");
}

/// Host CPU comes from /proc/stat in ticks (10 ms): a run shorter than a
/// tick is shown as "less than one tick per GiB", never as 0.000.
#[test]
fn host_cpu_below_a_tick_is_shown_as_below_resolution() {
    let results = tiny_matrix();
    let summaries = stats::summarize(&results);
    let small = cell(
        Scenario::Flow(FlowKind::FileToFile),
        SMALL,
        CacheState::Warm,
        1,
    );
    let tick = stats::host_cpu_tick_ns();
    // Every run of the small cell counts 2 ms of host CPU: below a tick
    // wherever USER_HZ is 100 (10 ms) or less than 500.
    assert!(tick > 2e6, "USER_HZ above 500: {tick} ns per tick");
    let cp = find(&summaries, &small, &peer("cp"));
    let resolution = cp.host_cpu_below_resolution.expect("below a tick");
    assert_close(resolution, tick / 1e9 / (SMALL as f64 / GIB));
    // 100 MB runs count 200 ms: a measurement.
    let large = cell(
        Scenario::Flow(FlowKind::FileToFile),
        LARGE,
        CacheState::Warm,
        1,
    );
    assert_eq!(
        find(&summaries, &large, &peer("cp")).host_cpu_below_resolution,
        None
    );
    let text = table::render(&results, &summaries);
    assert!(text.contains(&format!("< {resolution:.2}")), "{text}");
    assert!(text.contains("\"< x\" marks a median run shorter than one tick"));
}

/// The x of every `<text>` element whose content is `label`.
fn text_xs(svg: &str, label: &str) -> Vec<f64> {
    let lines: Vec<&str> = svg.lines().collect();
    lines
        .windows(2)
        .filter(|pair| pair[1] == label && pair[0].starts_with("<text"))
        .filter_map(|pair| {
            let x = pair[0].split("x=\"").nth(1)?.split('"').next()?;
            x.parse().ok()
        })
        .collect()
}

/// A scenario measured at one size is drawn as a dot plot by contender,
/// whiskers min–max, loopback and veth on each row, the legend in a panel
/// right of the plot; the meter's chart is the share it kept.
#[test]
fn single_size_scenarios_get_dot_plots_with_whiskers_and_the_legend_beside_them() {
    let mut runs = Vec::new();
    for path in ["loopback", "veth"] {
        let mut sent = cell(
            Scenario::Flow(FlowKind::FileToSocket),
            LARGE,
            CacheState::Warm,
            1,
        );
        sent.path = path.into();
        interleave(
            &mut runs,
            &sent,
            &[
                (flexio("sendfile"), [900, 800, 1_000, 900, 850, 950]),
                (process(), [700, 600, 800, 700, 650, 750]),
                (peer("socat"), [500, 400, 600, 500, 450, 550]),
            ],
        );
    }
    let meter = cell(Scenario::Meter, LARGE, CacheState::Warm, 1);
    let mut metered = Vec::new();
    interleave(
        &mut metered,
        &meter,
        &[
            (flexio("sendfile"), [900; 6]),
            (flexio("read-write"), [800; 6]),
        ],
    );
    for (i, run) in metered.iter_mut().enumerate() {
        run.meter_kept = Some(0.5 + 0.05 * (i % 4) as f64);
    }
    runs.extend(metered);
    let results = Results {
        runs,
        ..tiny_matrix()
    };
    let summaries = stats::summarize(&results);
    let dir = tempfile::tempdir().unwrap();
    let written = charts::write_scenario_charts(dir.path(), &results, &summaries).unwrap();
    let mut svgs = written_svgs(&written);
    svgs.sort();
    assert_eq!(
        svgs,
        [
            "file-to-socket-contenders.svg",
            "meter-contenders.svg",
            "meter-kept.svg"
        ]
    );
    let dots = fs::read_to_string(dir.path().join("file-to-socket-contenders.svg")).unwrap();
    assert!(dots.contains("throughput by contender"));
    // A row label left of the plot and a legend entry right of it, for
    // every contender; the plot ends where the legend panel starts.
    for label in ["flexio sendfile", "flexio copy (process)", "socat"] {
        let xs = text_xs(&dots, label);
        assert_eq!(xs.len(), 2, "{label}: {xs:?}");
        assert!(xs.iter().any(|x| *x < 400.0), "{label}: {xs:?}");
        assert!(xs.iter().any(|x| *x >= 820.0), "{label}: {xs:?}");
    }
    for legend in [
        "filled: loopback",
        "hollow: veth",
        "marker: median; whiskers: min–max",
        "engine (inside the bench process)",
        "flexio copy as a process",
        "peers (processes)",
    ] {
        let xs = text_xs(&dots, legend);
        assert!(
            !xs.is_empty() && xs.iter().all(|x| *x >= 820.0),
            "{legend}: {xs:?}"
        );
    }
    let kept = fs::read_to_string(dir.path().join("meter-kept.svg")).unwrap();
    assert!(kept.contains("share of its solo rate the meter kept, %"));
    assert!(kept.contains("flexio read-write"));
}
