//! The bench times `flexio copy` as a process beside every peer, the same
//! way as the peer: this needs the built `flexio` executable, which only
//! this crate's tests have. Nothing here is timed: only what ran, how many
//! bytes it moved, and which contender the verdicts use.

use flexio::profile::FlowKind;
use flexio::MechanismName;
use flexio_bench::model::{CacheState, Contender, ContenderKind, Results};
use flexio_bench::peers::PeerSpec;
use flexio_bench::plan::{Cell, Entrant, Plan, Scenario};
use flexio_bench::runner::{self, RunOptions};
use flexio_bench::stats;

const SIZE: u64 = 1 << 20;

fn plan() -> Plan {
    let engine = Entrant::flexio(MechanismName::ReadWrite, 256 << 10);
    Plan {
        cells: vec![
            Cell::new(
                Scenario::Flow(FlowKind::FileToFile),
                SIZE,
                CacheState::Warm,
                vec![
                    engine.clone(),
                    Entrant::process_auto(),
                    Entrant::Peer(PeerSpec::cp()),
                ],
            ),
            Cell::new(
                Scenario::Flow(FlowKind::FileToPipe),
                SIZE,
                CacheState::Warm,
                vec![
                    engine.clone(),
                    Entrant::process_auto(),
                    Entrant::Peer(PeerSpec::cat_pipe()),
                ],
            ),
            Cell::new(
                Scenario::Flow(FlowKind::PipeToFile),
                SIZE,
                CacheState::NotApplicable,
                vec![
                    Entrant::process_auto(),
                    Entrant::process(
                        MechanismName::Splice,
                        flexio::Params {
                            pipe_size: 256 << 10,
                            ..flexio::Params::default()
                        },
                    ),
                    Entrant::Peer(PeerSpec::cat_from_pipe()),
                ],
            ),
            Cell::new(
                Scenario::Flow(FlowKind::FileToSocket),
                SIZE,
                CacheState::Warm,
                vec![engine, Entrant::process_auto()],
            )
            .path("loopback"),
            Cell::new(
                Scenario::Flow(FlowKind::SocketToFile),
                SIZE,
                CacheState::NotApplicable,
                vec![Entrant::process_auto()],
            )
            .path("loopback"),
        ],
    }
}

fn run(dir: &std::path::Path, exe: Option<&str>) -> Results {
    let mut options = RunOptions::new(dir);
    options.warmups = 1;
    options.rounds = 2;
    // Never drop the whole machine's page cache from a test.
    options.drop_caches = false;
    options.flexio_exe = exe.map(Into::into);
    runner::run(&plan(), &options, &mut runner::Quiet).unwrap()
}

#[test]
fn the_bench_times_flexio_copy_as_a_process_beside_each_peer() {
    let dir = tempfile::tempdir().unwrap();
    let results = run(dir.path(), Some(env!("CARGO_BIN_EXE_flexio")));
    let dropped: Vec<&String> = results
        .notes
        .iter()
        .filter(|n| n.contains("failed"))
        .collect();
    assert!(dropped.is_empty(), "{dropped:?}");
    assert_eq!(
        results.provenance.flexio_executable.as_deref(),
        Some(env!("CARGO_BIN_EXE_flexio"))
    );
    for scenario in [
        Scenario::Flow(FlowKind::FileToFile),
        Scenario::Flow(FlowKind::FileToPipe),
        Scenario::Flow(FlowKind::PipeToFile),
        Scenario::Flow(FlowKind::FileToSocket),
        Scenario::Flow(FlowKind::SocketToFile),
    ] {
        let processes: Vec<_> = results
            .runs
            .iter()
            .filter(|r| r.cell.scenario == scenario && r.contender.is_process())
            .collect();
        let expected = if scenario == Scenario::Flow(FlowKind::PipeToFile) {
            2
        } else {
            1
        };
        // A warm-up and two rounds each, one copy per run.
        assert_eq!(processes.len(), 3 * expected, "{scenario}");
        for run in processes {
            assert_eq!(run.measured.bytes, SIZE, "{scenario}: {run:?}");
            assert!(run.measured.wall_ns > 0);
            // Its --json report told what ran.
            let used = run.mechanism_used.as_deref();
            assert!(used.is_some(), "{scenario}: {run:?}");
            if matches!(&run.contender, Contender::Process { mechanism, .. } if *mechanism == flexio::MechanismName::Splice)
            {
                assert_eq!(used, Some("splice"));
                assert_eq!(run.decided_by.as_deref(), Some("requested"));
            }
        }
    }
    let fixed = results
        .runs
        .iter()
        .find(|r| matches!(&r.contender, Contender::Process { mechanism, .. } if *mechanism == flexio::MechanismName::Splice))
        .unwrap();
    assert_eq!(
        fixed.contender.label(),
        "flexio copy --via splice --pipe-size 256.00 KiB (process)"
    );

    // The verdicts hold the process against the peers; the engine's rows
    // carry no ratio to a peer.
    let summaries = stats::summarize(&results);
    for summary in &summaries {
        match summary.contender.kind() {
            ContenderKind::Engine => assert_eq!(summary.ratio_to_best_peer, None),
            ContenderKind::Process if summary.cell.path.is_empty() => {
                assert!(summary.ratio_to_best_peer.is_some(), "{summary:?}")
            }
            _ => {}
        }
    }
    let verdicts = stats::peer_verdicts(&summaries);
    let cells: Vec<&str> = verdicts.iter().map(|v| v.cell.scenario.name()).collect();
    assert_eq!(cells, ["file-to-file", "file-to-pipe", "pipe-to-file"]);
    assert!(verdicts.iter().all(|v| v.flexio == "flexio copy (process)"));
    // The temporary data is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn without_a_flexio_executable_the_process_contender_is_noted_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let results = run(dir.path(), None);
    assert!(results.runs.iter().all(|r| !r.contender.is_process()));
    assert!(
        results
            .notes
            .iter()
            .any(|n| n.contains("flexio copy (process): no flexio executable given")),
        "{:?}",
        results.notes
    );
}

/// The tune's second pass measures its leaders as `flexio copy --via`
/// processes, as `auto`'s choice will run, and the profile's last range
/// comes from those runs.
#[test]
fn the_tunes_second_pass_runs_its_leaders_as_flexio_copy_processes() {
    use flexio_tune::select::Candidate;
    use flexio_tune::sweep::{self as tune, Confirm, TunePlan, TuneTarget};
    const KIB: u64 = 1 << 10;
    let candidate = |mechanism| Candidate {
        mechanism,
        params: flexio::Params::default(),
    };
    let plan = TunePlan {
        targets: vec![TuneTarget {
            kind: FlowKind::FileToFile,
            sizes: vec![4 * KIB, 64 * KIB],
            candidates: vec![
                candidate(MechanismName::ReadWrite),
                candidate(MechanismName::CopyFileRange),
            ],
        }],
        warmups: 1,
        rounds: 1,
        confirm: Some(Confirm {
            kinds: vec![(FlowKind::FileToFile, vec![256 * KIB])],
            mechanisms: 2,
            warmups: 0,
            rounds: 2,
        }),
    };
    let dir = tempfile::tempdir().unwrap();
    let mut options = RunOptions::new(dir.path());
    options.drop_caches = false;
    options.flexio_exe = Some(env!("CARGO_BIN_EXE_flexio").into());
    let tuned = tune::tune(&plan, &options, &mut runner::Quiet).unwrap();
    let second: Vec<_> = tuned
        .results
        .runs
        .iter()
        .filter(|run| run.cell.size == 256 * KIB)
        .collect();
    assert_eq!(second.len(), 2 * 2, "two leaders x two rounds");
    for run in &second {
        assert!(run.contender.is_process(), "{run:?}");
        assert_eq!(run.measured.bytes, 256 * KIB, "one copy per run");
        let candidate = tune::candidate_of(&run.contender).unwrap();
        assert_eq!(
            run.mechanism_used.as_deref(),
            Some(candidate.mechanism.as_str())
        );
    }
    let last = tuned.profile.lookup(FlowKind::FileToFile, 1 << 40).unwrap();
    assert!(last.measured_at.contains(&(256 * KIB)), "{last:?}");
    assert!(second
        .iter()
        .any(|run| tune::candidate_of(&run.contender).unwrap().mechanism == last.mechanism));
}
