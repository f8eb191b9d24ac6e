//! FlexIO's disk-bound setups (`Setup::DiskBoundBySize` and the others)
//! from plan to grade: every cell a setup plans is drawn in seeds.md, and
//! a setup that could not run (not root: no throttled device) lowers its
//! exhibits' grades with the reason. Tests only; here rather than in the
//! catalogue, which `own` and `report` stand on.

use super::own::{self, OwnRuns};
use super::setup::Setup;
use super::{catalogue, find, write_report, Status};
use crate::thesis_bench::{ThesisOutcome, ThesisPoint, SMALL_BUFFERS_KIB};
use flexio_bench::model::{CellKey, Contender};
use flexio_bench::stats::Summary;

const MIB: f64 = (1u64 << 20) as f64;

/// A summary of `contender` in `cell` at `mb_s` MB/s, its three
/// rounds within 5%.
fn summary(cell: &CellKey, contender: Contender, mb_s: f64) -> Summary {
    let bps = mb_s * MIB;
    Summary {
        cell: cell.clone(),
        contender,
        runs: 3,
        median_bps: bps,
        min_bps: 0.95 * bps,
        max_bps: 1.05 * bps,
        spread_bps: Some((0.95 * bps, 1.05 * bps)),
        cpu_s_per_gib: 0.0,
        sys_s_per_gib: 0.0,
        host_cpu_s_per_gib: 0.0,
        switches_per_gib: 0.0,
        involuntary_per_gib: None,
        ratio_to_best_peer: None,
        best_peer_round_range: None,
        ratios_to_peers: Vec::new(),
        ratio_to_best_fixed: None,
        best_fixed_round_range: None,
        ratio_to_builtin: None,
        ratio_to_limit: None,
        limit_note: None,
        host_cpu_below_resolution: None,
        mechanism_used: None,
        resident_percent: None,
        meter_kept: None,
        flow_median_bps: None,
        jain: None,
    }
}

/// A point of `series` at `x`, its three rounds within 5%.
fn thesis_point(series: &str, x: f64, y: f64) -> ThesisPoint {
    ThesisPoint {
        series: series.into(),
        x,
        y,
        spread: Some((0.95 * y, 1.05 * y, 3)),
    }
}

/// What `setup` would give: a disk-bound one every cell and entrant of
/// its plan, read through its own `ours`; the cgroup's the points
/// `thesis_bench` names.
fn ran(setup: Setup) -> ThesisOutcome {
    let points = match catalogue::flexio_disk_bound(setup, true) {
        Some(plan) => {
            let mut summaries = Vec::new();
            for cell in &plan.cells {
                for (i, entrant) in cell.entrants.iter().enumerate() {
                    summaries.push(summary(&cell.key, entrant.contender(), 40.0 + i as f64));
                }
            }
            own::thesis_points((plan.ours)(&summaries))
        }
        None => {
            let (names, xs): (Vec<String>, &[f64]) = match setup {
                Setup::LowMemoryBySize => (
                    ["read-write", "mmap", "splice", "copy-file-range"]
                        .map(|via| format!("{via}, 128 MiB cgroup (ours)"))
                        .to_vec(),
                    &[1.0, 50.0, 200.0],
                ),
                Setup::LowMemoryBySizeSmallBuffers => (
                    SMALL_BUFFERS_KIB
                        .map(|kib| format!("read-write, {kib} KiB buffer, 128 MiB cgroup (ours)"))
                        .to_vec(),
                    &[1.0, 50.0, 200.0],
                ),
                Setup::LowMemoryByBuffer => (
                    [
                        "read-write, 128 MiB cgroup (ours)",
                        "copy-file-range, 128 MiB cgroup (ours)",
                    ]
                    .map(String::from)
                    .to_vec(),
                    &[1.0, 4.0, 16.0, 64.0, 256.0, 1024.0],
                ),
                other => panic!("no points for {other:?}"),
            };
            let mut points = Vec::new();
            for (i, name) in names.iter().enumerate() {
                points.extend(xs.iter().map(|&x| thesis_point(name, x, 30.0 + i as f64)));
            }
            points
        }
    };
    ThesisOutcome {
        points,
        shortfall: None,
        setting: format!("{setup:?} ran"),
    }
}

/// `id`'s grade and seeds.md with `outcomes` as its setups' runs.
fn graded(id: &str, outcomes: Vec<(Setup, ThesisOutcome)>) -> (Status, Vec<String>, String) {
    let out = tempfile::tempdir().unwrap();
    let exhibits = [find(id).unwrap()];
    let runs = OwnRuns::with_all(outcomes);
    let report = write_report(out.path(), &exhibits, &[], &runs, true, "a test").unwrap();
    let md = std::fs::read_to_string(&report.markdown).unwrap();
    let grade = report.grades[0].1.clone();
    (grade.status, grade.reasons, md)
}

#[test]
fn each_disk_bound_setup_draws_its_cells_and_without_it_the_grade_falls_with_why() {
    let names = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let cases = [
        (
            "flexio-4-7",
            Setup::DiskBoundBySize,
            names(&[
                "kernel buffer (splice) / read-write (ours)",
                "mmap / read-write (ours)",
            ]),
        ),
        (
            "flexio-4-7",
            Setup::DiskBoundBySizeExt2,
            names(&[
                "kernel buffer (splice) / read-write, ext2 (ours)",
                "mmap / read-write, ext2 (ours)",
            ]),
        ),
        (
            "flexio-4-11",
            Setup::DiskBoundBySize,
            names(&[
                "copy_file_range / read-write (ours)",
                "copy_file_range / read-write 1 KiB (ours)",
            ]),
        ),
        (
            "flexio-4-15",
            Setup::DiskBoundByBuffer,
            names(&[
                "read-write by buffer (ours)",
                "copy_file_range by length (ours)",
            ]),
        ),
    ];
    for (id, setup, series) in cases {
        assert!(catalogue::setups(id).contains(&setup), "{id}: {setup:?}");
        let all: Vec<_> = catalogue::setups(id).iter().map(|&s| (s, ran(s))).collect();
        let (status, reasons, md) = graded(id, all.clone());
        assert_eq!(status, Status::Full, "{id}: {reasons:?}");
        for name in &series {
            assert!(
                md.contains(&format!("| {name} | 1 |")),
                "{id}: {name}: {md}"
            );
        }
        // Not root: the device is not made, the setup says why.
        let why = "no throttled ext2 device (needs root for the throttled device)";
        let short: Vec<_> = all
            .into_iter()
            .map(|(s, outcome)| match s == setup {
                true => (
                    s,
                    ThesisOutcome {
                        shortfall: Some(why.into()),
                        ..ThesisOutcome::default()
                    },
                ),
                false => (s, outcome),
            })
            .collect();
        let (status, reasons, md) = graded(id, short);
        assert_eq!(status, Status::Partial, "{id}: {setup:?}");
        assert!(
            reasons.contains(&format!("setup: {why}")),
            "{id}: {setup:?}: {reasons:?}"
        );
        for name in &series {
            assert!(!md.contains(&format!("| {name} | 1 |")), "{id}: {name}");
        }
    }
}
