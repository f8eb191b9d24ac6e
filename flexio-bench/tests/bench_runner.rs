//! The bench runner end to end on a tiny matrix: interleaving, one record
//! per (round, contender) with the right bytes, missing peers, and cold
//! cells that really are cold. No timing is asserted: only what ran, in
//! which order, and how much it moved.

use flexio::profile::FlowKind;
use std::io::Write;
use std::os::fd::AsFd;

use flexio::MechanismName;
use flexio_bench::model::{CacheState, Contender, Results, RunRecord};
use flexio_bench::peers::PeerSpec;
use flexio_bench::plan::{Cell, Entrant, Plan, Scenario};
use flexio_bench::runner::{self, Observer, RunOptions};

const CHUNK: usize = 256 << 10;

/// Records what the runner tells its observer.
#[derive(Default)]
struct Recorder {
    cells: Vec<String>,
    last: (usize, usize),
    notes: Vec<String>,
}

impl Observer for Recorder {
    fn cell_started(&mut self, _index: usize, _cells: usize, label: &str) {
        self.cells.push(label.to_string());
    }

    fn run_finished(&mut self, done: usize, total: usize) {
        self.last = (done, total);
    }

    fn note(&mut self, text: &str) {
        self.notes.push(text.to_string());
    }
}

fn options(dir: &std::path::Path) -> RunOptions {
    let mut options = RunOptions::new(dir);
    options.warmups = 1;
    options.rounds = 5;
    // Never drop the whole machine's page cache from a test.
    options.drop_caches = false;
    options
}

use flexio_testkit::{optional_tool, skipped};

fn tiny_plan() -> Plan {
    Plan {
        cells: vec![
            Cell::new(
                Scenario::Flow(FlowKind::FileToFile),
                64 << 10,
                CacheState::Warm,
                vec![
                    Entrant::flexio(MechanismName::ReadWrite, CHUNK),
                    Entrant::flexio(MechanismName::CopyFileRange, CHUNK),
                    Entrant::Peer(PeerSpec::cp()),
                    Entrant::Peer(PeerSpec::command(
                        "no-such-tool",
                        &["flexio-bench-no-such-tool", "{src}", "{dst}"],
                    )),
                ],
            ),
            Cell::new(
                Scenario::Flow(FlowKind::MemoryToMemory),
                4096,
                CacheState::NotApplicable,
                vec![
                    Entrant::flexio(MechanismName::ReadWrite, CHUNK),
                    Entrant::Limit(flexio_bench::limits::Probe::Memcpy),
                ],
            ),
        ],
    }
}

fn runs_of(results: &Results, scenario: Scenario) -> Vec<&RunRecord> {
    results
        .runs
        .iter()
        .filter(|r| r.cell.scenario == scenario)
        .collect()
}

#[test]
fn schedule_is_warm_up_first_then_interleaved_rounds_in_varying_order() {
    let order = runner::schedule(3, 1, 5);
    assert_eq!(&order[..3], &[(0, 0), (0, 1), (0, 2)]);
    assert_eq!(order.len(), 18);
    // Every round, warm-up included, runs each contender exactly once, and
    // rounds come in order.
    for (index, round) in order.chunks(3).enumerate() {
        assert!(round.iter().all(|&(r, _)| r == index as u32), "{round:?}");
        let mut who: Vec<usize> = round.iter().map(|&(_, c)| c).collect();
        who.sort_unstable();
        assert_eq!(who, [0, 1, 2]);
    }
    // Not always the same order.
    let orders: std::collections::HashSet<Vec<usize>> = order
        .chunks(3)
        .map(|round| round.iter().map(|&(_, c)| c).collect())
        .collect();
    assert!(orders.len() >= 3, "{orders:?}");
}

#[test]
fn tiny_matrix_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let plan = tiny_plan();
    let mut recorder = Recorder::default();
    let results = runner::run(&plan, &options(dir.path()), &mut recorder).unwrap();

    // Progress covered every slot, skipped ones included.
    assert_eq!(recorder.cells.len(), 2);
    assert_eq!(recorder.last, (plan.runs(1, 5), plan.runs(1, 5)));

    // File to file: 3 contenders that exist x (1 warm-up + 5 rounds), in
    // the interleaved order, each moving the whole file (some times).
    let files = runs_of(&results, Scenario::Flow(FlowKind::FileToFile));
    let contenders: Vec<Contender> = plan.cells[0].entrants[..3]
        .iter()
        .map(Entrant::contender)
        .collect();
    // The schedule counts every entrant, the missing peer (the fourth)
    // too; its slots are skipped.
    let expected: Vec<(u32, Contender)> = runner::schedule(plan.cells[0].entrants.len(), 1, 5)
        .into_iter()
        .filter(|&(_, i)| i < 3)
        .map(|(round, i)| (round, contenders[i].clone()))
        .collect();
    let seen: Vec<(u32, Contender)> = files
        .iter()
        .map(|r| (r.round, r.contender.clone()))
        .collect();
    assert_eq!(seen, expected);
    for run in &files {
        // A short warm copy repeats within its window, the same number of
        // times in every round.
        assert!(
            run.measured.bytes >= 64 << 10 && run.measured.bytes % (64 << 10) == 0,
            "{run:?}"
        );
        let twin = files.iter().find(|r| r.contender == run.contender).unwrap();
        assert_eq!(run.measured.bytes, twin.measured.bytes, "{run:?}");
        assert!(run.measured.wall_ns > 0);
        assert_eq!(run.source_resident_percent, Some(100.0), "warm cell");
        match &run.contender {
            Contender::Flexio { mechanism, .. } => {
                assert!(run.mechanism_used.is_some());
                if *mechanism == flexio::MechanismName::ReadWrite {
                    assert_eq!(run.mechanism_used.as_deref(), Some("read-write"));
                }
            }
            Contender::Peer { name } => {
                assert_eq!(name, "cp");
                // A process is timed one copy per run, start-up included.
                assert_eq!(run.measured.bytes, 64 << 10, "{run:?}");
            }
            Contender::Process { .. } => panic!("no process in this cell"),
            Contender::Limit { .. } => panic!("no limit in this cell"),
            Contender::Pair { .. } => panic!("no socket pair in this cell"),
        }
    }

    // Memory: both contenders, every round, whole multiples of the size
    // (tiny copies repeat within a window).
    let memory = runs_of(&results, Scenario::Flow(FlowKind::MemoryToMemory));
    assert_eq!(memory.len(), 2 * 6);
    for run in &memory {
        assert!(
            run.measured.bytes >= 4096 && run.measured.bytes % 4096 == 0,
            "{run:?}"
        );
    }
    assert!(memory.iter().any(|r| r.contender
        == Contender::Limit {
            name: "memcpy".into()
        }));

    // The missing peer is reported and never ran.
    assert_eq!(results.missing_peers, vec!["no-such-tool".to_string()]);
    assert!(results
        .runs
        .iter()
        .all(|r| r.contender.label() != "no-such-tool"));
    assert!(recorder.notes.iter().any(|n| n.contains("no-such-tool")));

    // The temporary data is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Whether `posix_fadvise(DONTNEED)` empties the cache of a file here.
fn dontneed_works(dir: &std::path::Path) -> Result<(), String> {
    if flexio_bench::fingerprint::is_memory_filesystem(dir) {
        return Err(format!("{} is tmpfs: nothing is ever cold", dir.display()));
    }
    let path = dir.join("probe");
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(&vec![7u8; 1 << 20]).unwrap();
    file.sync_all().unwrap();
    rustix::fs::fadvise(file.as_fd(), 0, None, rustix::fs::Advice::DontNeed).unwrap();
    let resident = flexio::measure::residency(&file, 0, 1 << 20).map(|r| r.percent());
    std::fs::remove_file(&path).unwrap();
    match resident {
        Some(percent) if percent <= 5.0 => Ok(()),
        other => Err(format!(
            "the file system keeps {other:?}% of a file cached after DONTNEED"
        )),
    }
}

/// A directory whose files `posix_fadvise(DONTNEED)` really drops, or
/// `None` (the test skipped, saying why).
fn cold_capable_dir() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().unwrap();
    match dontneed_works(dir.path()) {
        Ok(()) => Some(dir),
        Err(reason) => {
            skipped(&reason);
            None
        }
    }
}

/// A plan of one cold cell.
fn one_cold_cell(scenario: Scenario, size: u64, entrants: Vec<Entrant>) -> Plan {
    Plan {
        cells: vec![Cell::new(scenario, size, CacheState::Cold, entrants)],
    }
}

#[test]
fn cold_cells_are_cold() {
    let Some(dir) = cold_capable_dir() else {
        return;
    };
    let plan = one_cold_cell(
        Scenario::Flow(FlowKind::FileToFile),
        1 << 20,
        vec![
            Entrant::flexio(MechanismName::ReadWrite, CHUNK),
            Entrant::Peer(PeerSpec::cat_redirect()),
            // The disk's limit beside them, in the same rounds: its
            // buffered read leaves no run after it warm.
            Entrant::Limit(flexio_bench::limits::Probe::DiskRead),
        ],
    );
    let results = runner::run(&plan, &options(dir.path()), &mut runner::Quiet).unwrap();
    assert_eq!(results.runs.len(), 3 * 6, "{:?}", results.notes);
    for run in &results.runs {
        let resident = run.source_resident_percent.expect("a file source");
        assert!(
            resident <= 5.0,
            "{resident}% resident in a cold run: {run:?}"
        );
        assert_eq!(run.measured.bytes, 1 << 20);
    }
}

#[test]
fn a_synced_cold_copy_on_throttled_storage_moves_a_seconds_worth_of_sources_primed_first() {
    let Some(dir) = cold_capable_dir() else {
        return;
    };
    let plan = one_cold_cell(
        Scenario::Flow(FlowKind::FileToFileDurable),
        256 << 10,
        vec![
            Entrant::flexio(MechanismName::ReadWrite, CHUNK),
            Entrant::Peer(PeerSpec::cp()),
        ],
    );
    let primed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut options = options(dir.path());
    // A second at 1 MiB/s is four sources of 256 KiB.
    options.storage_rate = Some(1 << 20);
    assert_eq!(runner::storage_passes(1 << 20, 256 << 10), 4);
    let counter = std::sync::Arc::clone(&primed);
    options.before_each_run = Some(runner::BeforeRun::new(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }));
    let results = runner::run(&plan, &options, &mut runner::Quiet).unwrap();
    assert_eq!(results.runs.len(), 2 * 6, "{:?}", results.notes);
    assert_eq!(primed.load(std::sync::atomic::Ordering::Relaxed), 2 * 6);
    for run in &results.runs {
        assert_eq!(run.measured.bytes, 4 * (256 << 10), "{run:?}");
        assert!(run.source_resident_percent.expect("a file source") <= 5.0);
    }
    // Without the rate, one source a run.
    options.storage_rate = None;
    let results = runner::run(&plan, &options, &mut runner::Quiet).unwrap();
    assert!(results.runs.iter().all(|r| r.measured.bytes == 256 << 10));
}

#[test]
fn a_failing_step_before_a_run_drops_the_contender_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let plan = one_cold_cell(
        Scenario::Flow(FlowKind::FileToFileDurable),
        64 << 10,
        vec![Entrant::flexio(MechanismName::ReadWrite, CHUNK)],
    );
    let mut options = options(dir.path());
    options.before_each_run = Some(runner::BeforeRun::new(|| {
        Err(std::io::Error::other("the throttle is gone"))
    }));
    let results = runner::run(&plan, &options, &mut runner::Quiet).unwrap();
    assert!(results.runs.is_empty());
    assert!(
        results
            .notes
            .iter()
            .any(|n| n.contains("dropped from the cell: the throttle is gone")),
        "{:?}",
        results.notes
    );
}

#[test]
fn pipe_cells_run_flexio_and_the_shell_tools_to_the_end_of_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let size = 3 << 20;
    let mut cells = vec![Cell::new(
        Scenario::Flow(FlowKind::PipeToFile),
        size,
        CacheState::NotApplicable,
        vec![
            Entrant::flexio(MechanismName::Splice, CHUNK),
            Entrant::flexio(MechanismName::ReadWrite, CHUNK),
            Entrant::Peer(PeerSpec::cat_from_pipe()),
            Entrant::Peer(PeerSpec::dd_from_pipe()),
        ],
    )];
    cells.push(Cell::new(
        Scenario::Flow(FlowKind::FileToPipe),
        size,
        CacheState::Warm,
        vec![
            Entrant::flexio(MechanismName::Splice, CHUNK),
            Entrant::Peer(PeerSpec::cat_pipe()),
        ],
    ));
    let mut options = options(dir.path());
    options.rounds = 2;
    let mut recorder = Recorder::default();
    let results = runner::run(&Plan { cells }, &options, &mut recorder).unwrap();

    // Every contender ran every round (a peer that never saw the end of its
    // pipe would be killed by the watchdog and dropped with a note). What
    // the bench notes about the machine itself is no such note.
    let machine = flexio_bench::fingerprint::machine_notes(dir.path());
    let dropped: Vec<&String> = recorder
        .notes
        .iter()
        .filter(|note| !machine.contains(note))
        .collect();
    assert!(dropped.is_empty(), "{dropped:?}");
    for note in &machine {
        assert!(results.notes.contains(note), "{note} is not in the results");
    }
    assert_eq!(
        runs_of(&results, Scenario::Flow(FlowKind::PipeToFile)).len(),
        4 * 3
    );
    assert_eq!(
        runs_of(&results, Scenario::Flow(FlowKind::FileToPipe)).len(),
        2 * 3
    );
    for run in &results.runs {
        assert_eq!(run.measured.bytes, size, "{run:?}");
    }
}

/// fio reading the cold source and writing a new file at once measures
/// the cell's size in the slower job's time, and leaves only the source.
#[test]
fn fio_copy_reads_and_writes_the_cells_size_at_once() {
    use flexio_bench::limits::Probe;
    // The peers are optional (CI installs them, and .ci/without-peers hides
    // them), so a missing one is a skip even in CI.
    if !optional_tool("fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let size = 8u64 << 20;
    let plan = Plan {
        cells: vec![Cell::new(
            Scenario::Limits,
            size,
            CacheState::Cold,
            vec![Entrant::Limit(Probe::FioCopy)],
        )],
    };
    let mut options = options(dir.path());
    options.rounds = 2;
    let results = runner::run(&plan, &options, &mut Recorder::default()).unwrap();
    let runs: Vec<&RunRecord> = results
        .runs
        .iter()
        .filter(|r| matches!(&r.contender, Contender::Limit { name } if name == "fio-copy"))
        .collect();
    assert_eq!(
        runs.len(),
        3,
        "a warm-up and two rounds: {:?}",
        results.notes
    );
    assert!(runs
        .iter()
        .all(|r| r.measured.bytes == size && r.measured.wall_ns > 0));
}

#[test]
fn disk_write_limits_write_the_cells_size_and_leave_nothing_behind() {
    use flexio_bench::limits::Probe;
    let dir = tempfile::tempdir().unwrap();
    let size = 4u64 << 20;
    let plan = Plan {
        cells: vec![Cell::new(
            Scenario::Limits,
            size,
            CacheState::Cold,
            vec![
                Entrant::Limit(Probe::DiskWriteFsync),
                Entrant::Limit(Probe::DiskDirectWrite),
            ],
        )],
    };
    let mut options = options(dir.path());
    options.rounds = 2;
    let results = runner::run(&plan, &options, &mut Recorder::default()).unwrap();
    for name in ["disk-write-fsync", "disk-direct-write"] {
        let runs: Vec<&RunRecord> = results
            .runs
            .iter()
            .filter(|r| matches!(&r.contender, Contender::Limit { name: n } if n == name))
            .collect();
        assert_eq!(runs.len(), 3, "{name}: a warm-up and two rounds");
        assert!(
            runs.iter()
                .all(|r| r.measured.bytes == size && r.measured.wall_ns > 0),
            "{name}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "the sinks are removed: {left:?}");
}

/// A short warm file → socket flow repeats within its window, each
/// transfer over its own connection, the same number of times in every
/// round, and the bytes check counts them all; a process sends once.
#[test]
fn a_short_warm_file_to_socket_flow_repeats_over_a_connection_each() {
    let dir = tempfile::tempdir().unwrap();
    let size = 64 << 10;
    let plan = Plan {
        cells: vec![Cell::new(
            Scenario::Flow(FlowKind::FileToSocket),
            size,
            CacheState::Warm,
            vec![
                Entrant::flexio(MechanismName::Sendfile, CHUNK),
                Entrant::flexio(MechanismName::ReadWrite, CHUNK),
            ],
        )],
    };
    let mut options = options(dir.path());
    options.rounds = 3;
    let mut recorder = Recorder::default();
    let results = runner::run(&plan, &options, &mut recorder).unwrap();
    let dropped: Vec<&String> = recorder
        .notes
        .iter()
        .filter(|note| note.contains("file-to-socket"))
        .collect();
    assert!(dropped.is_empty(), "{dropped:?}");
    let runs = runs_of(&results, Scenario::Flow(FlowKind::FileToSocket));
    assert_eq!(runs.len(), 2 * 4);
    for run in &runs {
        // 64 KiB takes well under the window's 20 ms.
        assert!(
            run.measured.bytes > size && run.measured.bytes % size == 0,
            "{run:?}"
        );
        let twin = runs.iter().find(|r| r.contender == run.contender).unwrap();
        assert_eq!(run.measured.bytes, twin.measured.bytes, "{run:?}");
    }
}

/// A copy by `cp` after a pause of 0.1 s, and of `pause` seconds on the
/// runs numbered (from 0, the warm-up) in `slow`: the pause, not the
/// copy, sets each run's time, so the rounds agree but where planted.
fn paced_cp(counter: &std::path::Path, slow: &str, pause: &str) -> Entrant {
    let script = "n=$(cat \"$3\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$3\"; \
                  case \" $4 \" in *\" $n \"*) sleep $5 ;; *) sleep 0.1 ;; esac; cp \"$1\" \"$2\"";
    let counter = counter.to_str().unwrap();
    Entrant::Peer(PeerSpec::command(
        "paced cp",
        &[
            "sh", "-c", script, "sh", "{src}", "{dst}", counter, slow, pause,
        ],
    ))
}

/// The paced copy's counted rounds and the summary of them, with
/// `slow` rounds planted and the runner settling spreads over `settle`.
fn paced_rounds(slow: &str, settle: Option<f64>) -> (usize, flexio_bench::stats::Summary) {
    paced_rounds_of(slow, "0.6", settle)
}

fn paced_rounds_of(
    slow: &str,
    pause: &str,
    settle: Option<f64>,
) -> (usize, flexio_bench::stats::Summary) {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("count");
    let plan = Plan {
        cells: vec![Cell::new(
            Scenario::Flow(FlowKind::FileToFile),
            64 << 10,
            CacheState::Warm,
            vec![paced_cp(&counter, slow, pause)],
        )],
    };
    let mut options = options(dir.path());
    options.rounds = 3;
    options.settle_spread = settle;
    let mut recorder = Recorder::default();
    let results = runner::run(&plan, &options, &mut recorder).unwrap();
    let counted = results.runs.iter().filter(|r| r.round >= 1).count();
    // The progress the observer saw counts the settling rounds too, and
    // ends full: the warm-up and every counted round.
    assert_eq!(recorder.last, (1 + counted, 1 + counted));
    let summaries = flexio_bench::stats::summarize(&results);
    (counted, summaries.into_iter().next().expect("a summary"))
}

fn relative_spread(summary: &flexio_bench::stats::Summary) -> f64 {
    let (low, high) = summary.spread_bps.expect("a spread");
    (high - low) / summary.median_bps
}

#[test]
fn a_cell_whose_rounds_disagree_gets_two_more_and_its_spread_sets_one_odd_round_aside() {
    // Steady: the planned three.
    let (counted, steady) = paced_rounds("", Some(0.5));
    assert_eq!(counted, 3);
    assert!(relative_spread(&steady) < 0.5, "{steady:?}");
    // One slow round of three: two more, and the spread of five sets it
    // aside (the slowest run is still the summary's minimum).
    let (counted, one) = paced_rounds("2", Some(0.5));
    assert_eq!(counted, 5);
    assert!(relative_spread(&one) < 0.5, "{one:?}");
    assert!(one.min_bps < 0.5 * one.median_bps, "{one:?}");
    // Two slow rounds of five: reported wide.
    let (counted, two) = paced_rounds("2 4", Some(0.5));
    assert_eq!(counted, 5);
    assert!(relative_spread(&two) > 0.5, "{two:?}");
    // Not asked to settle (the product bench): the planned three, wide.
    let (counted, unsettled) = paced_rounds("2", None);
    assert_eq!(counted, 3);
    assert!(relative_spread(&unsettled) > 0.5, "{unsettled:?}");
    // A round 1.7x as long: within 50% as rates (1/1.7 = 0.59 of the
    // others) but not as times, which a report may show: settled too.
    let (counted, times) = paced_rounds_of("2", "0.17", Some(0.5));
    assert_eq!(counted, 5, "{times:?}");
}
