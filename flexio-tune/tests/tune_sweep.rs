//! The tuner end to end on a tiny sweep, and the bench's two `auto`
//! contenders when a profile is in force. No timing is asserted: only that
//! a profile is written, loads, validates and decides among the
//! candidates, and that each `auto` says what decided it.

use std::path::Path;

use flexio::profile::{FlowKind, Profile};
use flexio::{MechanismName, Params};
use flexio_harness::model::{CacheState, Contender};
use flexio_harness::plan::{Cell, Entrant, Plan, Scenario};
use flexio_harness::runner::{self, Quiet, RunOptions};
use flexio_tune::select::Candidate;
use flexio_tune::sweep::{self as tune, Confirm, TunePlan, TuneTarget};

const KIB: u64 = 1 << 10;

fn options(dir: &Path) -> RunOptions {
    let mut options = RunOptions::new(dir);
    // Never drop the whole machine's page cache from a test.
    options.drop_caches = false;
    options
}

fn candidate(mechanism: MechanismName) -> Candidate {
    Candidate {
        mechanism,
        params: Params::default(),
    }
}

fn tiny_tune_plan() -> TunePlan {
    TunePlan {
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
        confirm: None,
    }
}

#[test]
fn a_tiny_tune_writes_a_profile_that_loads_and_decides_among_its_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let plan = tiny_tune_plan();
    let tuned = tune::tune(&plan, &options(dir.path()), &mut Quiet).unwrap();
    assert_eq!(
        tuned.results.runs.len(),
        2 * 2 * 2,
        "2 sizes x 2 candidates x (1 + 1) rounds"
    );

    let path = dir.path().join("config").join("profile.toml");
    tuned.profile.save(&path).unwrap();
    let loaded = Profile::load(&path).unwrap();
    loaded.validate().unwrap();
    assert!(loaded.machine_differences().is_empty());
    assert_eq!(loaded.flows.len(), 1);
    assert_eq!(loaded.flows[0].kind, FlowKind::FileToFile);
    let candidates = &plan.targets[0].candidates;
    for size in [0, 4 * KIB, 20 * KIB, 64 * KIB, 1 << 40] {
        let range = loaded.lookup(FlowKind::FileToFile, size).unwrap();
        let chosen = Candidate {
            mechanism: range.mechanism,
            params: range.params(),
        };
        assert!(candidates.contains(&chosen), "{size}: {chosen:?}");
    }
    assert!(loaded.lookup(FlowKind::FileToSocket, 4096).is_none());
    // Every candidate keeps its raw curve, one point per size.
    assert_eq!(loaded.flows[0].curves.len(), 2);
    for curve in &loaded.flows[0].curves {
        let sizes: Vec<u64> = curve.points.iter().map(|p| p.size).collect();
        assert_eq!(sizes, [4 * KIB, 64 * KIB]);
        assert!(curve.points.iter().all(|p| p.median_bytes_per_s > 0));
    }
}

#[test]
fn the_second_pass_measures_the_leader_again_at_the_larger_size() {
    let dir = tempfile::tempdir().unwrap();
    let plan = TunePlan {
        confirm: Some(Confirm {
            kinds: vec![(FlowKind::FileToFile, vec![256 * KIB])],
            mechanisms: 1,
            warmups: 1,
            rounds: 1,
        }),
        ..tiny_tune_plan()
    };
    let tuned = tune::tune(&plan, &options(dir.path()), &mut Quiet).unwrap();
    let second: Vec<_> = tuned
        .results
        .runs
        .iter()
        .filter(|run| run.cell.size == 256 * KIB)
        .collect();
    // The leader, and the built-in copy-file-range beside it unless it is
    // the leader.
    let ran: Vec<_> = second
        .iter()
        .map(|run| tune::candidate_of(&run.contender).unwrap())
        .collect();
    let builtin = tune::builtin_candidate(FlowKind::FileToFile);
    assert!(ran.contains(&builtin), "{ran:?}");
    let leader = ran
        .iter()
        .find(|c| **c != builtin)
        .unwrap_or(&builtin)
        .clone();
    let mechanisms = if leader == builtin { 1 } else { 2 };
    assert_eq!(second.len(), mechanisms * 2, "x (1 + 1) rounds");
    // Short warm copies repeat within their window: whole copies only.
    assert!(second
        .iter()
        .all(|run| run.measured.bytes > 0 && run.measured.bytes % (256 * KIB) == 0));

    // The leader's curve gains the point; the other's does not, and the
    // last range (every size past 64 KiB's neighbourhood) is the leader's.
    // The curves of those measured again gain the point; the last range
    // (every size past 64 KiB's neighbourhood) is one of them.
    let flow = &tuned.profile.flows[0];
    for curve in &flow.curves {
        let sizes: Vec<u64> = curve.points.iter().map(|p| p.size).collect();
        if [leader.mechanism, builtin.mechanism].contains(&curve.mechanism) {
            assert_eq!(sizes, [4 * KIB, 64 * KIB, 256 * KIB]);
        } else {
            assert_eq!(sizes, [4 * KIB, 64 * KIB]);
        }
    }
    let last = tuned.profile.lookup(FlowKind::FileToFile, 1 << 40).unwrap();
    assert!([leader.mechanism, builtin.mechanism].contains(&last.mechanism));
    assert!(last.measured_at.contains(&(256 * KIB)), "{last:?}");
}

#[test]
fn pipe_to_file_is_tuned_from_a_fed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let plan = TunePlan {
        targets: vec![TuneTarget {
            kind: FlowKind::PipeToFile,
            sizes: vec![64 * KIB, 4 << 20],
            candidates: vec![
                candidate(MechanismName::Splice),
                candidate(MechanismName::ReadWrite),
            ],
        }],
        warmups: 1,
        rounds: 2,
        confirm: None,
    };
    let tuned = tune::tune(&plan, &options(dir.path()), &mut Quiet).unwrap();
    assert_eq!(tuned.results.runs.len(), 2 * 2 * 3);
    for run in &tuned.results.runs {
        assert_eq!(run.cell.scenario, Scenario::Flow(FlowKind::PipeToFile));
        assert_eq!(run.measured.bytes, run.cell.size, "{run:?}");
    }
    let flow = &tuned.profile.flows[0];
    assert_eq!(flow.kind, FlowKind::PipeToFile);
    assert_eq!(flow.curves.len(), 2);
    let range = tuned.profile.lookup(FlowKind::PipeToFile, 1 << 20).unwrap();
    assert!(matches!(
        range.mechanism,
        MechanismName::Splice | MechanismName::ReadWrite
    ));
}

#[test]
fn with_a_profile_the_bench_runs_auto_with_and_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let tuned = tune::tune(&tiny_tune_plan(), &options(dir.path()), &mut Quiet).unwrap();
    let mut profile = tuned.profile;
    profile.path = Some(dir.path().join("profile.toml"));
    let expected = profile
        .lookup(FlowKind::FileToFile, 64 * KIB)
        .unwrap()
        .mechanism;

    let mut cell = Cell::new(
        Scenario::Flow(FlowKind::FileToFile),
        64 * KIB,
        CacheState::Warm,
        vec![
            Entrant::flexio(MechanismName::ReadWrite, 256 << 10),
            Entrant::flexio(MechanismName::Auto, 256 << 10),
        ],
    );
    cell.entrants.push(Entrant::auto_builtin());
    let mut options = options(dir.path());
    options.rounds = 2;
    options.profile = Some(profile);
    let results = runner::run(&Plan { cells: vec![cell] }, &options, &mut Quiet).unwrap();

    let autos: Vec<_> = results
        .runs
        .iter()
        .filter(|r| r.contender.is_auto() && r.round >= 1)
        .collect();
    assert_eq!(autos.len(), 2 * 2);
    for run in autos {
        let decided_by = run.decided_by.as_deref().unwrap();
        if run.contender.is_profile_auto() {
            assert!(decided_by.starts_with("profile "), "{decided_by}");
            assert!(decided_by.contains("file-to-file ["), "{decided_by}");
            assert_eq!(run.mechanism_used.as_deref(), Some(expected.as_str()));
        } else {
            assert_eq!(decided_by, "built-in table");
            assert!(matches!(
                run.contender,
                Contender::Flexio {
                    builtin_table: true,
                    ..
                }
            ));
        }
    }
    let summaries = flexio_harness::stats::summarize(&results);
    let auto = summaries
        .iter()
        .find(|s| s.contender.is_profile_auto())
        .unwrap();
    assert!(auto.ratio_to_best_fixed.is_some());
    assert!(auto.ratio_to_builtin.is_some());
    let verdicts = flexio_harness::stats::auto_verdicts(&summaries);
    assert_eq!(verdicts.last().unwrap().scope, "overall");
    let lines = runner::auto_choices(&results);
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with(&format!("flexio chose {expected} for file-to-file")));
    assert!(lines[1].ends_with("because built-in table"), "{}", lines[1]);
}

#[test]
fn memory_to_memory_is_tuned_over_every_copy_kernel_and_auto_follows_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let candidates = tune::candidates(FlowKind::MemoryToMemory, false);
    let plan = TunePlan {
        targets: vec![TuneTarget {
            kind: FlowKind::MemoryToMemory,
            sizes: vec![4 * KIB, 4 << 20],
            candidates: candidates.clone(),
        }],
        warmups: 1,
        rounds: 1,
        confirm: None,
    };
    let tuned = tune::tune(&plan, &options(dir.path()), &mut Quiet).unwrap();
    let path = dir.path().join("profile.toml");
    tuned.profile.save(&path).unwrap();
    let loaded = Profile::load(&path).unwrap();
    let flow = &loaded.flows[0];
    assert_eq!(flow.kind, FlowKind::MemoryToMemory);
    // One curve per copy kernel this CPU has, each measured at both sizes.
    let kernels: Vec<_> = flow.curves.iter().map(|c| c.copy_kernel).collect();
    assert_eq!(kernels, flexio::CopyKernel::available());
    for size in [0, 4 * KIB, 100 * KIB, 4 << 20, 1 << 30] {
        let range = loaded.lookup(FlowKind::MemoryToMemory, size).unwrap();
        let chosen = Candidate {
            mechanism: range.mechanism,
            params: range.params(),
        };
        assert!(candidates.contains(&chosen), "{size}: {chosen:?}");
        // auto takes the range's kernel, and the bytes arrive whole.
        let len = size.min(8 << 20) as usize;
        let source: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut sink = vec![0u8; len];
        let report = flexio::Flow::new(
            flexio::Source::Memory(&source),
            flexio::Sink::Memory(&mut sink),
        )
        .profile(Some(&loaded))
        .run()
        .unwrap();
        if len as u64 == size {
            assert_eq!(report.params.copy_kernel, range.copy_kernel, "{size}");
        }
        assert!(sink == source, "{size}");
    }
}
