//! The bench's own-runner scenarios in their quick form: they run, and
//! what they write is well-formed and consistent (bytes against requests
//! and sizes, Jain's index in (0, 1], latencies ordered). Nothing here is
//! a speed target.

use crate::common;

use std::ffi::OsString;
use std::path::Path;

use common::{flexio, stderr};
use flexio::MechanismName;
use flexio_bench::model::CacheState;
use flexio_bench::plan::{Cell, Entrant, Plan, Scenario};
use flexio_bench::runner::{self, RunOptions};

/// No cell of `results` was skipped or failed.
fn assert_nothing_failed(results: &flexio_bench::model::Results) {
    let failed: Vec<&String> = results
        .notes
        .iter()
        .filter(|n| n.contains("skipped") || n.contains("failed"))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn is_svg(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.contains("<svg") && text.contains("</svg>"))
}

#[test]
fn server_scenario_quick_is_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = flexio()
        .args(["bench", "--scenario", "server", "--quick", "--clients", "2"])
        .args(["--sizes", "4K,1M", "--dir"])
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Cue, Table 8"), "{text}");
    let results = &json(&out.join("server.json"))["results"];
    let skipped: Vec<String> = results["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let wrk_missing = skipped.iter().any(|s| s.starts_with("wrk"));
    let cells = results["cells"].as_array().unwrap();
    if wrk_missing {
        common::skipped("the cell checks: wrk is not installed (apt-get install wrk)");
        assert!(cells.is_empty());
    } else {
        assert!(!cells.is_empty());
        for cell in cells {
            let size = cell["size"].as_u64().unwrap();
            let clients = cell["clients"].as_u64().unwrap();
            let requests = cell["wrk"]["requests"].as_u64().unwrap();
            let read = cell["wrk"]["bytes_read"].as_f64().unwrap();
            assert!(requests > 0, "{cell}");
            assert_eq!(cell["wrk"]["errors"].as_u64(), Some(0), "{cell}");
            // Every completed response's body was read, and at most one
            // partial response per client beyond them, headers under
            // 1 KiB; wrk prints the bytes to 0.5%.
            let bodies = (requests * size) as f64;
            let most = ((requests + clients) * (size + 1024)) as f64;
            assert!(read >= bodies * 0.995, "{cell}");
            assert!(read <= most * 1.005, "{cell}");
            let (p50, p99) = (
                cell["wrk"]["p50_us"].as_f64().unwrap(),
                cell["wrk"]["p99_us"].as_f64().unwrap(),
            );
            assert!(p50 > 0.0 && p50 <= p99, "{cell}");
            assert!(cell["server_cpu_s"].as_f64().unwrap() >= 0.0, "{cell}");
        }
        let latency = results["latency"].as_array().unwrap();
        assert!(!latency.is_empty());
        for round in latency {
            for phase in ["idle", "loaded"] {
                assert!(round[phase]["requests"].as_u64().unwrap() > 0, "{round}");
            }
        }
        // The probe beside manifests: every manifest answered (each file
        // hashed), the probe answered without errors, its window recorded.
        let beside = results["manifest_latency"].as_array().unwrap();
        assert!(!beside.is_empty());
        for round in beside {
            assert_eq!(round["manifest_s"].as_array().unwrap().len(), 8, "{round}");
            assert!(round["probe"]["requests"].as_u64().unwrap() > 0, "{round}");
            assert_eq!(round["probe"]["errors"].as_u64(), Some(0), "{round}");
        }
        assert!(text.contains("?manifest of a different"), "{text}");
        for chart in [
            "server-throughput.svg",
            "server-requests.svg",
            "server-cpu.svg",
            "server-latency.svg",
        ] {
            assert!(is_svg(&out.join(chart)), "{chart}");
        }
    }
    let fairness = results["fairness"].as_array().unwrap();
    assert!(!fairness.is_empty());
    for run in fairness {
        let jain = run["jain"].as_f64().unwrap();
        assert!(jain > 0.0 && jain <= 1.0 + 1e-12, "{run}");
        let rates = run["client_rates"].as_array().unwrap();
        let bytes = run["client_bytes"].as_array().unwrap();
        assert_eq!(rates.len(), 4);
        assert_eq!(bytes.len(), 4);
        for (rate, bytes) in rates.iter().zip(bytes) {
            let (rate, bytes) = (rate.as_f64().unwrap(), bytes.as_u64().unwrap());
            assert!(bytes > 0 && rate > 0.0, "{run}");
            // The window is about the run's second: the rate is its bytes
            // over about that time.
            assert!(
                rate <= bytes as f64 / 0.9 && rate >= bytes as f64 / 3.0,
                "{run}"
            );
        }
        if let Some(limit) = run["rate_limit"].as_f64() {
            for rate in rates {
                // A limit is a ceiling (a little over for the first
                // burst of the socket's buffers).
                assert!(rate.as_f64().unwrap() <= limit * 1.25, "{run}");
            }
        }
    }
    assert!(is_svg(&out.join("server-fairness.svg")));
    assert!(out.join("server.md").exists());
}

/// With `--with-tls` the cells run again over https on both servers with
/// one certificate, and the large file is downloaded whole by `flexio get`
/// (and curl where installed) from each: every download the file's size.
#[test]
fn server_scenario_over_tls_downloads_the_whole_file_from_each_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = flexio()
        .args(["bench", "--scenario", "server", "--quick", "--with-tls"])
        .args(["--clients", "2", "--sizes", "64K", "--large", "8M", "--dir"])
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let results = &json(&out.join("server.json"))["results"];
    let skipped = results["skipped"].to_string();
    let nginx = !skipped.contains("nginx: not installed");
    let curl = !skipped.contains("curl: not installed");
    let downloads = results["downloads"].as_array().unwrap();
    let pairs: Vec<(String, String)> = downloads
        .iter()
        .map(|d| {
            assert_eq!(d["bytes"].as_u64(), Some(8 << 20), "{d}");
            assert!(d["seconds"].as_f64().unwrap() > 0.0, "{d}");
            (
                d["client"].as_str().unwrap().to_string(),
                d["server"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let servers = 1 + usize::from(nginx);
    let clients = 1 + usize::from(curl);
    assert_eq!(pairs.len(), servers * clients, "{pairs:?}");
    assert!(pairs.contains(&("flexio get".into(), "flexio serve".into())));
    if nginx && curl {
        assert!(pairs.contains(&("curl".into(), "nginx".into())));
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("flexio get from flexio serve against curl from nginx"));
    } else {
        common::skipped("curl from nginx over TLS: nginx or curl is not installed");
    }
    let tls_cells: Vec<&serde_json::Value> = results["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["tls"] == true)
        .collect();
    if skipped.contains("wrk: not installed") {
        assert!(tls_cells.is_empty());
    } else {
        assert_eq!(tls_cells.len(), servers, "{tls_cells:?}");
        for cell in tls_cells {
            assert!(cell["wrk"]["requests"].as_u64().unwrap() > 0, "{cell}");
            assert_eq!(cell["wrk"]["errors"].as_u64(), Some(0), "{cell}");
        }
    }
}

/// The meter runs beside each transfer and keeps a share of its solo rate
/// in [0, 1]; the runs split their context switches.
#[test]
fn meter_scenario_keeps_a_share_and_splits_context_switches() {
    let dir = tempfile::tempdir().unwrap();
    let size = 16 << 20;
    let plan = Plan {
        cells: vec![Cell::new(
            Scenario::Meter,
            size,
            CacheState::Warm,
            vec![
                Entrant::flexio(MechanismName::Sendfile, 256 << 10),
                Entrant::flexio(MechanismName::ReadWrite, 256 << 10),
            ],
        )
        .path("loopback")],
    };
    let mut options = RunOptions::new(dir.path());
    options.rounds = 1;
    options.drop_caches = false;
    options.meter_command = Some(vec![
        OsString::from(env!("CARGO_BIN_EXE_flexio")),
        "bench".into(),
        "--meter-child".into(),
    ]);
    let results = runner::run(&plan, &options, &mut runner::Quiet).unwrap();
    assert_nothing_failed(&results);
    let metered: Vec<_> = results
        .runs
        .iter()
        .filter(|r| r.cell.scenario == Scenario::Meter)
        .collect();
    // A warm-up and a round of both mechanisms.
    assert_eq!(metered.len(), 4);
    for run in metered {
        assert_eq!(run.measured.bytes, size);
        let kept = run.meter_kept.expect("a kept share");
        // 0 is a measurement: a short CPU-bound transfer can leave the
        // meter nothing at all.
        assert!((0.0..=1.0).contains(&kept), "{run:?}");
        let involuntary = run
            .involuntary_switches
            .expect("involuntary switches recorded");
        assert!(involuntary <= run.context_switches, "{run:?}");
    }
    let summaries = flexio_bench::stats::summarize(&results);
    // Cue's tables beside the scenario are flexio-seeds', as `flexio bench`
    // registers them.
    flexio_seeds::register();
    let table = flexio_bench::table::render(&results, &summaries);
    assert!(
        table.contains("Cue, Table 1") && table.contains("vol/invol"),
        "{table}"
    );
}

/// 1–3 file → socket flows at once: every flow's own throughput is kept,
/// and Jain's index over them lies in (0, 1].
#[test]
fn parallel_socket_flows_keep_each_flows_rate_and_a_jain_index() {
    let dir = tempfile::tempdir().unwrap();
    let size = 4 << 20;
    let cells = [1, 3]
        .into_iter()
        .map(|flows| {
            let mut cell = Cell::new(
                Scenario::Parallel,
                size,
                CacheState::Warm,
                vec![
                    Entrant::flexio(MechanismName::Sendfile, 256 << 10),
                    Entrant::flexio(MechanismName::ReadWrite, 256 << 10),
                ],
            )
            .path("loopback");
            cell.key.flows = flows;
            cell
        })
        .collect();
    let mut options = RunOptions::new(dir.path());
    options.rounds = 1;
    options.drop_caches = false;
    let results = runner::run(&Plan { cells }, &options, &mut runner::Quiet).unwrap();
    assert_nothing_failed(&results);
    let runs: Vec<_> = results
        .runs
        .iter()
        .filter(|r| r.cell.scenario == Scenario::Parallel)
        .collect();
    assert_eq!(runs.len(), 2 * 2 * 2);
    for run in runs {
        let flows = run.cell.flows as usize;
        assert_eq!(run.measured.bytes, size * flows as u64, "{run:?}");
        assert_eq!(run.flow_bytes_per_s.len(), flows, "{run:?}");
        // Each flow's rate runs to its own last byte, the aggregate's to
        // the last flow's: no flow is below its share of the aggregate.
        let slowest = run
            .flow_bytes_per_s
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        assert!(slowest >= run.throughput() / flows as f64 * 0.99, "{run:?}");
        let jain = flexio_bench::stats::jain(&run.flow_bytes_per_s).unwrap();
        assert!(jain > 0.0 && jain <= 1.0 + 1e-12, "{run:?}");
    }
    let summaries = flexio_bench::stats::summarize(&results);
    assert!(summaries
        .iter()
        .all(|s| s.jain.is_some() && s.flow_median_bps.is_some()));
    // Cue's tables beside the scenario are flexio-seeds', as `flexio bench`
    // registers them.
    flexio_seeds::register();
    let table = flexio_bench::table::render(&results, &summaries);
    assert!(
        table.contains("Jain") && table.contains("Cue, Tables 6-7"),
        "{table}"
    );
    let out = dir.path().join("out");
    flexio_bench::output::write_all(&out, &results).unwrap();
    for chart in [
        "parallel-fairness.svg",
        "parallel-per-flow.svg",
        "parallel-cpu.svg",
    ] {
        assert!(is_svg(&out.join(chart)), "{chart}");
    }
}

/// The (k, t) grid in its quick form: every transfer arrives whole, the
/// schedule's pauses are there (counted, and in the wall time), and the
/// meter kept a share in [0, 1].
#[test]
fn schedule_scenario_quick_observes_its_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = flexio()
        .args(["bench", "--scenario", "schedule", "--quick", "--dir"])
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("Cue, Tables 3-5"));
    let results = json(&out.join("schedule.json"));
    let (size, chunk) = (
        results["size"].as_u64().unwrap(),
        results["chunk"].as_u64().unwrap(),
    );
    let runs = results["runs"].as_array().unwrap();
    // A warm-up and a round of 2 mechanisms × (none + 2 × 2 schedules +
    // Cue's 4).
    assert_eq!(runs.len(), 2 * 2 * 9);
    for (k, t) in [(3, 70), (4, 70), (1, 16), (1, 20)] {
        assert!(
            runs.iter()
                .any(|r| r["chunks"].as_u64() == Some(k) && r["pause_ms"].as_u64() == Some(t)),
            "Cue's ({k}, {t}) ran"
        );
    }
    for run in runs {
        assert_eq!(run["bytes"].as_u64(), Some(size), "{run}");
        let kept = run["meter_kept"].as_f64().unwrap();
        // 0 is a measurement: a short CPU-bound transfer can leave the
        // meter nothing at all.
        assert!((0.0..=1.0).contains(&kept), "{run}");
        let (Some(k), Some(t)) = (run["chunks"].as_u64(), run["pause_ms"].as_u64()) else {
            continue;
        };
        let (calls, pauses) = (
            run["calls"].as_u64().unwrap(),
            run["pauses"].as_u64().unwrap(),
        );
        assert!(calls >= size.div_ceil(chunk), "{run}");
        // A pause after every k chunks but the last run of them.
        assert!(
            pauses + 1 >= calls / k && pauses <= calls.div_ceil(k),
            "{run}"
        );
        assert!(
            run["wall_ns"].as_u64().unwrap() >= pauses * t * 1_000_000,
            "{run}"
        );
        assert!(
            run["voluntary_switches"].as_u64().unwrap() >= pauses,
            "{run}"
        );
    }
    for chart in [
        "schedule-kept.svg",
        "schedule-throughput.svg",
        "schedule-cpu.svg",
    ] {
        assert!(is_svg(&out.join(chart)), "{chart}");
    }
}

/// Runs one serve-clients cell of `entrants` (8 KiB chunks) to `clients`
/// clients of `size` bytes each, a warm-up and a round, under
/// `schedule` if any; nothing may fail.
fn serve_clients_run(
    size: u64,
    clients: u32,
    mechanisms: &[MechanismName],
    schedule: Option<(u32, u64)>,
) -> (Plan, flexio_bench::model::Results) {
    let dir = tempfile::tempdir().unwrap();
    let params = flexio::Params {
        chunk: 8 << 10,
        ..flexio::Params::default()
    };
    let entrants = mechanisms
        .iter()
        .map(|m| Entrant::process(*m, params.clone()))
        .collect();
    let mut cell = Cell::new(Scenario::ServeClients, size, CacheState::Warm, entrants)
        .flows(clients)
        .path("loopback");
    if let Some((k, t)) = schedule {
        cell = cell.schedule(k, t);
    }
    let plan = Plan { cells: vec![cell] };
    let mut options = RunOptions::new(dir.path());
    options.rounds = 1;
    options.drop_caches = false;
    options.flexio_exe = Some(env!("CARGO_BIN_EXE_flexio").into());
    let results = runner::run(&plan, &options, &mut runner::Quiet).unwrap();
    assert_nothing_failed(&results);
    (plan, results)
}

/// Cue's Table 8 under a schedule: the cell's schedule reaches `flexio
/// serve --schedule`, so each client's body comes in chunks with pauses
/// between them (a bound load cannot break: pauses only add time).
#[test]
fn a_scheduled_serve_clients_cell_paces_every_client_by_the_schedule() {
    // Eight chunks of 8 KiB, a pause of 50 ms after each but the last.
    let size = 64 << 10;
    let (_, results) = serve_clients_run(size, 2, &[MechanismName::Sendfile], Some((1, 50)));
    let fastest = size as f64 / (7.0 * 0.050);
    for run in &results.runs {
        assert_eq!(run.measured.bytes, 2 * size, "{run:?}");
        assert_eq!(run.flow_bytes_per_s.len(), 2, "{run:?}");
        for rate in &run.flow_bytes_per_s {
            assert!(*rate > 0.0 && *rate <= fastest, "{rate} B/s: {run:?}");
        }
    }
}

/// Cue's Table 8: `flexio serve --via read-write` and `--via sendfile` as
/// processes, three HTTP clients at once each fetching the whole file:
/// every client's bytes arrive, each has its own rate, and the server's
/// CPU (not the bench's clients') is charged.
#[test]
fn serve_clients_cells_run_flexio_serve_by_each_mechanism_for_every_client() {
    let size = 4 << 20;
    let mechanisms = [MechanismName::ReadWrite, MechanismName::Sendfile];
    let (plan, results) = serve_clients_run(size, 3, &mechanisms, None);
    // A warm-up and a round of both servers.
    assert_eq!(results.runs.len(), 4);
    for run in &results.runs {
        assert_eq!(run.measured.bytes, 3 * size, "{run:?}");
        assert_eq!(run.flow_bytes_per_s.len(), 3, "{run:?}");
        assert!(run.flow_bytes_per_s.iter().all(|r| *r > 0.0), "{run:?}");
        // Sending 12 MiB costs the server some CPU; the window's own
        // threads (the clients) are not what is charged.
        let cpu = run.measured.cpu_user_ns + run.measured.cpu_sys_ns;
        assert!(cpu > 0, "{run:?}");
        assert!(cpu < run.measured.wall_ns * 3, "{run:?}");
    }
    let label = flexio_bench::plan::label(&plan.cells[0].key);
    assert!(
        label.contains("serve-clients") && label.contains("x3"),
        "{label}"
    );
}

/// Two scenarios in one run, both through the one generic path of
/// `commands/bench/scenario.rs`: each prints its table, writes `NAME.json`
/// (its own shape), `NAME.md` headed by its `--scenario` name with the
/// command line, and says every file it wrote; the work directories go.
#[test]
fn pace_and_cache_run_through_the_one_scenario_path() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = dir.path().join("out");
    let output = flexio()
        .args(["bench", "--scenario", "pace", "--scenario", "cache"])
        .args(["--pace-seconds", "0.2", "--pace-rates", "8M"])
        .args(["--runs", "1", "--sizes", "1M", "--cache-size", "1MiB"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("paced by"), "pace's table: {stdout}");
    assert!(
        stdout.contains("S.M.A.C.K.'s table"),
        "cache's table: {stdout}"
    );
    let pace = json(&out.join("pace.json"));
    assert_eq!(pace["scenario"], "pace");
    assert_eq!(pace["seconds"], 0.2);
    assert_eq!(pace["results"].as_array().unwrap().len(), 3, "{pace}");
    let cache = json(&out.join("cache.json"));
    assert_eq!(cache["schema_version"], 1);
    assert_eq!(cache["cache_bytes"], 1 << 20);
    let said = stderr(&output);
    for (name, files) in [
        ("pace", &["pace.json", "pace.md", "pace.svg"][..]),
        ("cache", &["cache.json", "cache.md"][..]),
    ] {
        let markdown = std::fs::read_to_string(out.join(format!("{name}.md"))).unwrap();
        assert!(
            markdown.starts_with(&format!("# flexio bench --scenario {name}\n")),
            "{markdown}"
        );
        assert!(markdown.contains("--pace-rates 8M"), "{markdown}");
        for file in files {
            let wrote = format!("wrote {}", out.join(file).display());
            assert!(said.contains(&wrote), "no {wrote:?} in {said}");
        }
    }
    assert!(is_svg(&out.join("pace.svg")));
    assert_eq!(common::names(dir.path()), vec!["out".to_string()]);
}
