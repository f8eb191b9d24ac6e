//! Cue's schedules run as Cue ran them: a file sent to a socket in 8 KiB
//! calls by sendfile with `--schedule K,T` (K calls, then T ms), the meter
//! on the sender's CPU, against the user-driven loop (read-write, 8 KiB,
//! no schedule) in the same kind of cell. Tables 1, 2+5, 3-4 and 6-7.

use flexio::MechanismName::{self, *};

use super::super::super::measure::{self, shape, MB};
use super::super::super::Point;
use flexio_bench::model::CacheState::{self, Cold, Warm};
use flexio_bench::model::{CellKey, Scenario};
use flexio_bench::plan::{Cell, Entrant};
use flexio_bench::stats::Summary;

const MIB: u64 = 1 << 20;
/// Cue's block: 8 KB, one call each.
pub(super) const BLOCK: usize = 8 << 10;

/// A schedule: K chunks, then T ms.
pub(super) type Cue = (u32, u64);

/// The user-driven loop, as the tables name it.
pub(super) const USER: &str = "read-write, 8 KiB, no schedule (ours)";
/// sendfile without a schedule: what the in-kernel call does unpaced.
pub(super) const UNPACED: &str = "sendfile, 8 KiB, no schedule (ours)";

/// Table 2's runs of set 1, each run's Cue over the same run's user
/// driven.
pub(super) const TABLE_2_RUNS: &str = "Cue k=3 t=70 / user, each run (Table 2)";

/// The user-driven loop on the throttled device, cold: disk-bound.
pub(super) const USER_DISK: &str = "read-write, 8 KiB, disk-bound (ours)";

/// Our series of sendfile under schedule `cue`.
pub(super) fn cue_name(cue: Cue) -> String {
    format!("sendfile k={} t={}, 8 KiB (ours)", cue.0, cue.1)
}

/// Our series of sendfile under schedule `cue` on the throttled device.
pub(super) fn cue_disk_name(cue: Cue) -> String {
    format!("sendfile k={} t={}, disk-bound (ours)", cue.0, cue.1)
}

/// The series names of `cache`'s rows: the user-driven loop, and sendfile
/// under `cue`.
fn names(cache: CacheState, cue: Cue) -> (&'static str, String) {
    match cache {
        Cold => (USER_DISK, cue_disk_name(cue)),
        _ => (USER, cue_name(cue)),
    }
}

/// Every schedule of Tables 1-5.
pub(super) const METER_SCHEDULES: [Cue; 4] = [(3, 70), (4, 70), (1, 16), (1, 20)];

/// Bytes of a disk-bound transfer: at the throttled device's 256 KiB/s,
/// 1 MiB is four seconds (the quick run), 4 MiB sixteen (the full run).
fn disk_size(quick: bool) -> u64 {
    if quick {
        MIB
    } else {
        4 * MIB
    }
}

/// The disk-bound cells, cold, for the throttled device: the user-driven
/// loop unpaced and sendfile under every schedule of Tables 1-5, then
/// Tables 6-7's 2-4 transfers of each (`cue_bench` runs them).
pub(super) fn disk_cells(quick: bool) -> Vec<Cell> {
    let size = disk_size(quick);
    let user = || vec![Entrant::flexio(ReadWrite, BLOCK)];
    let kernel = || vec![Entrant::flexio(Sendfile, BLOCK)];
    let mut cells = vec![Cell::new(Scenario::Meter, size, Cold, user()).path("loopback")];
    for (k, t) in METER_SCHEDULES {
        cells.push(
            Cell::new(Scenario::Meter, size, Cold, kernel())
                .path("loopback")
                .schedule(k, t),
        );
    }
    for flows in 2..=4 {
        cells.push(
            Cell::new(Scenario::Parallel, size, Cold, user())
                .flows(flows)
                .path("loopback"),
        );
        cells.push(
            Cell::new(Scenario::Parallel, size, Cold, kernel())
                .flows(flows)
                .path("loopback")
                .schedule(4, 16),
        );
    }
    cells
}

/// Bytes of a scheduled transfer. At 8 KiB a call, a schedule holds the
/// rate to 0.3-0.5 MiB/s (Cue's own, 2.6-3.6 s per MB on a DECstation),
/// so the quick run sends 1 MiB and the full run Cue's 12 MB.
fn scheduled_size(quick: bool) -> u64 {
    if quick {
        MIB
    } else {
        12 * MIB
    }
}

/// Unpaced rows move megabytes in milliseconds: larger, so that the
/// meter's share is measured over more than a scheduler tick.
fn unpaced_size(quick: bool) -> u64 {
    if quick {
        64 * MIB
    } else {
        256 * MIB
    }
}

/// The meter cells: sendfile and read-write unpaced, and sendfile under
/// each of `schedules`.
pub(super) fn meter_cells(quick: bool, schedules: &[Cue]) -> Vec<Cell> {
    let unpaced = vec![
        Entrant::flexio(Sendfile, BLOCK),
        Entrant::flexio(ReadWrite, BLOCK),
    ];
    let mut cells =
        vec![Cell::new(Scenario::Meter, unpaced_size(quick), Warm, unpaced).path("loopback")];
    for &(k, t) in schedules {
        let entrants = vec![Entrant::flexio(Sendfile, BLOCK)];
        cells.push(
            Cell::new(Scenario::Meter, scheduled_size(quick), Warm, entrants)
                .path("loopback")
                .schedule(k, t),
        );
    }
    cells
}

/// The meter cell's row of `mechanism` under `schedule` (none: unpaced),
/// warm (the matrix's) or cold (the throttled device's).
fn meter_row(
    summaries: &[Summary],
    cache: CacheState,
    mechanism: MechanismName,
    schedule: Option<Cue>,
) -> Option<&Summary> {
    summaries.iter().find(|s| {
        s.cell.scenario == Scenario::Meter
            && s.cell.cache == cache
            && s.cell.schedule.map(|c| (c.chunks, c.pause_ms)) == schedule
            && measure::is_engine(s, mechanism, Some(BLOCK as u64))
    })
}

/// Table 1: voluntary (x 0) and involuntary (x 1) switches per MB.
pub(super) fn switches_ours(summaries: &[Summary]) -> Vec<Point> {
    let (cue, cue_disk) = (cue_name((3, 70)), cue_disk_name((3, 70)));
    let rows = [
        (Warm, ReadWrite, None, USER),
        (Warm, Sendfile, None, UNPACED),
        (Warm, Sendfile, Some((3, 70)), cue.as_str()),
        (Cold, ReadWrite, None, USER_DISK),
        (Cold, Sendfile, Some((3, 70)), cue_disk.as_str()),
    ];
    let mut points = Vec::new();
    for (cache, mechanism, schedule, name) in rows {
        let Some(row) = meter_row(summaries, cache, mechanism, schedule) else {
            continue;
        };
        let involuntary = row.involuntary_per_gib.unwrap_or(0.0) / 1024.0;
        let all = row.switches_per_gib / 1024.0;
        points.push(of_rounds(
            Point::new(name, 0.0, (all - involuntary).max(0.0)),
            row.runs,
        ));
        points.push(of_rounds(Point::new(name, 1.0, involuntary), row.runs));
    }
    points
}

pub(super) fn compare_switches(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let theirs = |series: &str, x: f64| measure::at(original, series, x).unwrap_or(f64::NAN);
    let (their_cue, their_user) = (
        theirs("Cue k=3 t=70 (Table 1)", 0.0),
        theirs("user driven (Table 1)", 0.0),
    );
    let cue = cue_name((3, 70));
    let (Some(kernel), Some(user)) = (measure::at(ours, &cue, 0.0), measure::at(ours, USER, 0.0))
    else {
        return "the scheduled sendfile or read-write did not run.".into();
    };
    let kernel_involuntary = measure::at(ours, &cue, 1.0).unwrap_or(f64::NAN);
    let user_involuntary = measure::at(ours, USER, 1.0).unwrap_or(f64::NAN);
    let disk = disk_switches(ours);
    format!(
        "Warm and unpaced: voluntary switches per MB: ours {kernel:.1} by sendfile under (3, 70 ms) against \
         read-write's {user:.1} ({:.1}x); Cue's {their_cue:.1} against user driven's \
         {their_user:.1} ({:.1}x): {} — each pause is a sleep, so 3 calls of 8 KiB and a \
         pause give a voluntary switch per 24 KiB (42.7 per MiB) whatever the machine. \
         Involuntary: ours {kernel_involuntary:.1} against {user_involuntary:.1}, Cue's 0 \
         against {:.1}: {} — {}{}",
        kernel / user,
        their_cue / their_user,
        shape(kernel > 2.0 * user),
        theirs("user driven (Table 1)", 1.0),
        shape(kernel_involuntary < user_involuntary),
        if kernel_involuntary < user_involuntary {
            "a sender that sleeps is not the one the meter preempts."
        } else {
            "Cue's user-driven loop took 4.5 s a MB and was preempted by the meter all \
             along; an unpaced 8 KiB loop now moves a MB in a few milliseconds, inside \
             a scheduler slice, so the meter seldom preempts it at all."
        },
        disk
    )
}

/// Table 1's sentence for the disk-bound pair (Cue's own comparison).
fn disk_switches(ours: &[Point]) -> String {
    let cue = cue_disk_name((3, 70));
    let at = |name: &str, x: f64| measure::at(ours, name, x);
    match (
        at(&cue, 0.0),
        at(USER_DISK, 0.0),
        at(&cue, 1.0),
        at(USER_DISK, 1.0),
    ) {
        (Some(kernel), Some(user), Some(k_inv), Some(u_inv)) => format!(
            " Disk-bound, both cold on the throttled device as Cue's were: voluntary {kernel:.1} \
             against read-write's {user:.1} ({:.1}x; Cue's 5.9x): {}; involuntary {k_inv:.1} \
             against {u_inv:.1}: {}.",
            kernel / user,
            shape(kernel > 2.0 * user),
            shape(k_inv < u_inv),
        ),
        _ => " The disk-bound pair (both cold on the throttled device) did not run.".into(),
    }
}

/// `point` as the median of `rounds` rounds (switches, CPU and the
/// meter keep only their medians, so no spread).
fn of_rounds(point: Point, rounds: usize) -> Point {
    Point {
        rounds: Some(rounds),
        ..point
    }
}

/// What Tables 2-5 give per MB: wall s, system s, switches, the meter's
/// share (x 0-3).
fn per_mb(s: &Summary) -> [f64; 4] {
    [
        MB / s.median_bps,
        s.sys_s_per_gib / 1024.0,
        s.switches_per_gib / 1024.0,
        s.meter_kept.unwrap_or(f64::NAN),
    ]
}

/// Each schedule's values over the user-driven loop's, at the x of
/// `quantities` (indices into [`per_mb`]).
pub(super) fn relative_ours(
    summaries: &[Summary],
    schedules: &[Cue],
    quantities: &[usize],
) -> Vec<Point> {
    let mut points = relative(summaries, Warm, schedules, quantities);
    points.extend(relative(summaries, Cold, schedules, quantities));
    points
}

/// Our series of a schedule over the user-driven loop, warm or
/// disk-bound.
pub(super) fn relative_name(cache: CacheState, cue: Cue) -> String {
    let disk = if cache == Cold { ", disk-bound" } else { "" };
    format!("sendfile k={} t={} / read-write{disk} (ours)", cue.0, cue.1)
}

/// [`relative_ours`] of `cache`'s rows.
fn relative(
    summaries: &[Summary],
    cache: CacheState,
    schedules: &[Cue],
    quantities: &[usize],
) -> Vec<Point> {
    let Some(user_row) = meter_row(summaries, cache, ReadWrite, None) else {
        return Vec::new();
    };
    let user = per_mb(user_row);
    let mut points = Vec::new();
    for &cue in schedules {
        let Some(row_summary) = meter_row(summaries, cache, Sendfile, Some(cue)) else {
            continue;
        };
        let row = per_mb(row_summary);
        let rounds = user_row.runs.min(row_summary.runs);
        let name = relative_name(cache, cue);
        for (x, &i) in quantities.iter().enumerate() {
            let ratio = row[i] / user[i];
            if !(ratio.is_finite() && ratio > 0.0) {
                continue;
            }
            let point = Point::new(&name, x as f64, ratio);
            // Wall time follows each round's throughput: the schedule's
            // slowest and fastest round (its round spread) over the
            // loop's median, as Table 2 lists each run beside the means.
            let (slow, fast) = row_summary
                .spread_bps
                .unwrap_or((row_summary.min_bps, row_summary.max_bps));
            points.push(match i {
                0 if slow > 0.0 => {
                    point.with_spread(MB / slow / user[0], MB / fast / user[0], rounds)
                }
                _ => of_rounds(point, rounds),
            });
        }
    }
    points
}

/// The ratio of `series` at `x`, printed, or `-`.
fn ratio(points: &[Point], series: &str, x: f64) -> String {
    measure::at(points, series, x).map_or("-".into(), |v| format!("{v:.2}x"))
}

pub(super) fn compare_relative(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let mine = "sendfile k=3 t=70 / read-write (ours)";
    let theirs = "Cue k=3 t=70 / user (Table 5)";
    let row = |points: &[Point], name: &str| {
        (0..4)
            .map(|x| ratio(points, name, x as f64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let system = measure::at(ours, mine, 1.0).unwrap_or(f64::NAN);
    let meter = measure::at(ours, mine, 3.0).unwrap_or(f64::NAN);
    format!(
        "Under (3, 70 ms), over the user-driven loop (wall, system, switches, meter): ours {}; \
         Cue's {}. The meter keeps more beside the schedule: {}. System time per MB: {}{}. \
         Wall time: not the same shape — an 8 KB call per 23 ms paces the flow to 0.34 MiB/s, \
         near the DECstation's own rate (Cue was 1.16x slower than user driven) and hundreds \
         of times below an unpaced loop's today. (4, 70 ms): ours {}, Cue's {}.{}{}",
        row(ours, mine),
        row(original, theirs),
        shape(meter > 1.0),
        shape(system < 1.0),
        if system < 1.0 {
            ""
        } else {
            " — the unpaced loop now spends little system time per MB, and each of the \
             schedule's 43 sleeps per MB (a timer, two context switches) costs more than the \
             calls it spaces out"
        },
        row(ours, "sendfile k=4 t=70 / read-write (ours)"),
        row(original, "Cue k=4 t=70 / user (Table 5)"),
        disk_relative(ours, original),
        runs_relative(ours, original),
    )
}

/// Table 2's runs against our rounds: the wall-time ratio's range.
fn runs_relative(ours: &[Point], original: &[Point]) -> String {
    let walls: Vec<f64> = original
        .iter()
        .filter(|p| p.series == TABLE_2_RUNS && p.x == 0.0)
        .map(|p| p.y)
        .collect();
    let (low, high) = walls
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &y| {
            (l.min(y), h.max(y))
        });
    let range = |name: &str| {
        ours.iter()
            .find(|p| p.series == name && p.x == 0.0)
            .and_then(|p| Some((p.spread?, p.rounds?)))
            .map_or("-".to_string(), |((a, b), n)| {
                format!("{a:.2}-{b:.2}x over {n} rounds")
            })
    };
    format!(
        " Run by run (Table 2), Cue's wall time under (3, 70 ms) was {low:.2}-{high:.2}x the \
         same run's user driven over {} runs; ours, the spread of the schedule's rounds \
         over the loop's median: {} warm, {} disk-bound.",
        walls.len(),
        range(&relative_name(Warm, (3, 70))),
        range(&relative_name(Cold, (3, 70))),
    )
}

/// Tables 2 and 5's comparison for the disk-bound pair, Cue's own.
fn disk_relative(ours: &[Point], original: &[Point]) -> String {
    let mine = relative_name(Cold, (3, 70));
    let wall = measure::at(ours, &mine, 0.0);
    let meter = measure::at(ours, &mine, 3.0);
    let (Some(wall), Some(meter)) = (wall, meter) else {
        return " The disk-bound pair (both cold on the throttled device) did not run.".into();
    };
    let row = (0..4)
        .map(|x| ratio(ours, &mine, x as f64))
        .collect::<Vec<_>>()
        .join(", ");
    let their_wall = measure::at(original, "Cue k=3 t=70 / user (Table 5)", 0.0).unwrap_or(1.16);
    format!(
        " Disk-bound, both cold on the throttled device as Cue's were: {row}. Wall time within \
         a third of the loop's (Cue's {their_wall:.2}x): {}; the meter keeps more beside the \
         schedule: {}.",
        shape((0.75..=1.33).contains(&wall)),
        shape(meter > 1.0),
    )
}

pub(super) fn compare_distributed(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let at =
        |points: &[Point], name: &str, x: f64| measure::at(points, name, x).unwrap_or(f64::NAN);
    let ours_of = |k: u32, t: u64| format!("sendfile k={k} t={t} / read-write (ours)");
    let theirs_of = |k: u32, t: u64| format!("Cue k={k} t={t} / user");
    let (spread, bunched) = (ours_of(1, 16), ours_of(4, 70));
    let (their_spread, their_bunched) = (theirs_of(1, 16), theirs_of(4, 70));
    // Cue found the yield spread over every block (1, 16 ms) faster and
    // cheaper in system time than (4, 70 ms), the meter keeping less.
    let faster = at(ours, &spread, 0.0) < at(ours, &bunched, 0.0);
    let cheaper = at(ours, &spread, 1.0) < at(ours, &bunched, 1.0);
    let meter = at(ours, &spread, 2.0) < at(ours, &bunched, 2.0);
    format!(
        "Over the user-driven loop (wall, system, meter): ours (1, 16 ms) {}, (1, 20 ms) {}, \
         (4, 70 ms) {}; Cue's (1, 16 ms) {}, (1, 20 ms) {}, (4, 70 ms) {}. Spreading the \
         yield over every block against bunching it after four, Cue's was faster, cheaper in \
         system time and left the meter less: ours is {}, {} and {} ({}). Nominally (1, 16 \
         ms) allows 0.5 MiB/s and (4, 70 ms) 0.45 MiB/s; {}{}",
        triple(ours, &spread),
        triple(ours, &ours_of(1, 20)),
        triple(ours, &bunched),
        triple(original, &their_spread),
        triple(original, &theirs_of(1, 20)),
        triple(original, &their_bunched),
        if faster { "faster" } else { "slower" },
        if cheaper { "cheaper" } else { "dearer" },
        if meter {
            "leaves it less"
        } else {
            "leaves it no less"
        },
        shape(faster && cheaper && meter),
        if faster {
            "the spread schedule is the faster here as there.".to_string()
        } else {
            "here each of the spread schedule's 128 sleeps per MB oversleeps (timer slack, a \
             loaded machine's late wake-up) where (4, 70 ms) sleeps 32 times, and the system \
             time of a sleep and a wake-up outweighs that of an 8 KiB call."
                .to_string()
        },
        disk_distributed(ours),
    )
}

/// Tables 3-4's comparison for the disk-bound pair, Cue's own.
fn disk_distributed(ours: &[Point]) -> String {
    let (spread, bunched) = (relative_name(Cold, (1, 16)), relative_name(Cold, (4, 70)));
    let at = |name: &str, x: f64| measure::at(ours, name, x);
    let (Some(spread_wall), Some(bunched_wall)) = (at(&spread, 0.0), at(&bunched, 0.0)) else {
        return " The disk-bound pair (both cold on the throttled device) did not run.".into();
    };
    let cheaper = at(&spread, 1.0) < at(&bunched, 1.0);
    format!(
        " Disk-bound, both cold on the throttled device as Cue's were: (1, 16 ms) {}, (1, 20 \
         ms) {}, (4, 70 ms) {}; the spread yield {} and {} in system time than the bunched: {}.",
        triple(ours, &spread),
        triple(ours, &relative_name(Cold, (1, 20))),
        triple(ours, &bunched),
        if spread_wall < bunched_wall {
            "faster"
        } else {
            "slower"
        },
        if cheaper { "cheaper" } else { "dearer" },
        shape(spread_wall < bunched_wall && cheaper),
    )
}

fn triple(points: &[Point], name: &str) -> String {
    (0..3)
        .map(|x| ratio(points, name, x as f64))
        .collect::<Vec<_>>()
        .join("/")
}

/// Tables 6-7's series of Cue (4, 16 ms), and of user driven.
pub(super) const PARALLEL_CUE: &str = "Cue k=4 t=16 (Tables 6-7)";
/// Tables 6-7's user-driven series.
pub(super) const PARALLEL_USER: &str = "user driven (Tables 6-7)";

/// The x of Table 7's `flows` transfers (Table 6's two-transfer row
/// takes x 0-2).
pub(super) fn transfers_x(flows: u32) -> f64 {
    f64::from(flows) + 1.0
}

/// Tables 6-7: 2-4 transfers at once, Cue (4, 16 ms) by sendfile and the
/// user-driven loop, 8 KiB calls.
pub(super) fn parallel_cells(quick: bool) -> Vec<Cell> {
    let mut cells = Vec::new();
    for flows in 2..=4 {
        let user = vec![Entrant::flexio(ReadWrite, BLOCK)];
        cells.push(
            Cell::new(Scenario::Parallel, unpaced_size(quick), Warm, user)
                .flows(flows)
                .path("loopback"),
        );
    }
    cells.extend(scheduled_parallel_cells(quick, 2..=4, (4, 16)));
    cells
}

/// `flows` transfers at once by sendfile in 8 KiB calls under `cue`.
pub(super) fn scheduled_parallel_cells(
    quick: bool,
    flows: std::ops::RangeInclusive<u32>,
    cue: Cue,
) -> Vec<Cell> {
    flows
        .map(|flows| {
            let entrants = vec![Entrant::flexio(Sendfile, BLOCK)];
            Cell::new(Scenario::Parallel, scheduled_size(quick), Warm, entrants)
                .flows(flows)
                .path("loopback")
                .schedule(cue.0, cue.1)
        })
        .collect()
}

/// Table 6's two-transfer row (x 0-2) and Table 7's seconds per MB of
/// each transfer (x 3-5), warm (the matrix's) and disk-bound (the
/// throttled device's).
pub(super) fn parallel_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = Vec::new();
    for cache in [Warm, Cold] {
        let (user, kernel) = names(cache, (4, 16));
        points.extend(two_transfers(summaries, cache, &kernel, Some((4, 16))));
        points.extend(parallel_series(summaries, cache, &kernel, Some((4, 16))));
        points.extend(two_transfers(summaries, cache, user, None));
        points.extend(parallel_series(summaries, cache, user, None));
    }
    points
}

/// Table 6's row of the two-transfer cell: wall s, system s and context
/// switches per MB moved in all (x 0, 1, 2).
fn two_transfers(
    summaries: &[Summary],
    cache: CacheState,
    name: &str,
    schedule: Option<Cue>,
) -> Vec<Point> {
    let quantities: [fn(&Summary) -> Option<f64>; 3] = [
        |s| (s.median_bps > 0.0).then(|| MB / s.median_bps),
        |s| Some(s.sys_s_per_gib / 1024.0),
        |s| Some(s.switches_per_gib / 1024.0),
    ];
    quantities
        .iter()
        .enumerate()
        .flat_map(|(x, y)| {
            measure::series(
                summaries,
                name,
                Scenario::Parallel,
                |c| parallel_cell(c, cache, schedule) && c.flows == 2,
                |s| measure::is_engine(s, mechanism_of(schedule), Some(BLOCK as u64)),
                |_| x as f64,
                y,
            )
        })
        .collect()
}

/// Whether `cell` is one of Tables 6-7's, of `cache` under `schedule`.
fn parallel_cell(cell: &CellKey, cache: CacheState, schedule: Option<Cue>) -> bool {
    cell.path == "loopback"
        && cell.cache == cache
        && cell.flows >= 2
        && cell.schedule.map(|s| (s.chunks, s.pause_ms)) == schedule
}

/// Scheduled transfers are sendfile's, unpaced ones the user-driven
/// loop's.
fn mechanism_of(schedule: Option<Cue>) -> MechanismName {
    if schedule.is_some() {
        Sendfile
    } else {
        ReadWrite
    }
}

/// Each of 2-4 transfers' seconds per MB under `schedule` (sendfile) or
/// unpaced (read-write), of `cache`'s cells.
fn parallel_series(
    summaries: &[Summary],
    cache: CacheState,
    name: &str,
    schedule: Option<Cue>,
) -> Vec<Point> {
    measure::series(
        summaries,
        name,
        Scenario::Parallel,
        |c| parallel_cell(c, cache, schedule),
        |s| measure::is_engine(s, mechanism_of(schedule), Some(BLOCK as u64)),
        |s| transfers_x(s.cell.flows),
        |s| s.flow_median_bps.filter(|b| *b > 0.0).map(|b| MB / b),
    )
}

pub(super) fn compare_parallel(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let cue = cue_name((4, 16));
    let growth = |name: &str| {
        Some(measure::at(ours, name, transfers_x(4))? / measure::at(ours, name, transfers_x(2))?)
    };
    let (Some(kernel), Some(user)) = (growth(&cue), growth(USER)) else {
        return "2 or 4 transfers did not run.".into();
    };
    let level = measure::at(ours, &cue, transfers_x(4)).unwrap_or(f64::NAN);
    format!(
        "Per transfer, from 2 to 4 at once: ours by sendfile under (4, 16 ms) grows {kernel:.2}x \
         (to {level:.2} s/MB, the schedule's own 0.5 s/MB), the user-driven loop {user:.2}x; \
         Cue's grew 1.03x and user driven's 2.56x: {} — a scheduled transfer runs at its \
         schedule's rate as long as the machine has room for it, while unpaced loops share \
         the machine, and here two CPUs and a 2025 loopback give them far more room than one \
         DECstation did, so the user-driven loop's share falls by less than 2.56x.{}{}",
        shape(user > kernel * 1.2),
        disk_parallel(ours),
        two_transfers_sentence(original, ours),
    )
}

/// Table 6's row: the schedule over the loop, wall, system, switches.
fn two_transfers_sentence(original: &[Point], ours: &[Point]) -> String {
    let over = |points: &[Point], cue: &str, user: &str| -> Vec<Option<f64>> {
        (0..3)
            .map(|x| {
                let ratio =
                    measure::at(points, cue, x as f64)? / measure::at(points, user, x as f64)?;
                // A zero (system time below the clock's tick) has no ratio.
                (ratio.is_finite() && ratio > 0.0).then_some(ratio)
            })
            .collect()
    };
    let words = |ratios: &[Option<f64>]| {
        ratios
            .iter()
            .map(|r| r.map_or("-".to_string(), |r| format!("{r:.2}x")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let theirs = over(original, PARALLEL_CUE, PARALLEL_USER);
    let warm = over(ours, &cue_name((4, 16)), USER);
    let disk = over(ours, &cue_disk_name((4, 16)), USER_DISK);
    // Cue's two transfers: faster, less system time, more switches; a
    // quantity without a ratio is left out of the judgement.
    let same = |r: &[Option<f64>]| match r {
        [Some(wall), system, Some(switches)] => {
            shape(*wall < 1.0 && system.is_none_or(|s| s < 1.0) && *switches > 1.0)
        }
        _ => "not measured",
    };
    format!(
        " Table 6, two transfers, the schedule over the loop (wall, system, switches per MB; \
         - where a system time was below the clock's tick): Cue's {}; ours warm {} ({}), \
         disk-bound {} ({}).",
        words(&theirs),
        words(&warm),
        same(&warm),
        words(&disk),
        same(&disk),
    )
}

/// Tables 6-7's comparison for the disk-bound transfers, Cue's own.
fn disk_parallel(ours: &[Point]) -> String {
    let cue = cue_disk_name((4, 16));
    let at = |name: &str, x: f64| measure::at(ours, name, x);
    let growth = |name: &str| Some(at(name, transfers_x(4))? / at(name, transfers_x(2))?);
    let (Some(kernel), Some(user), Some(k2), Some(u2)) = (
        growth(&cue),
        growth(USER_DISK),
        at(&cue, transfers_x(2)),
        at(USER_DISK, transfers_x(2)),
    ) else {
        return " The disk-bound transfers (cold on the throttled device) did not run.".into();
    };
    format!(
        " Disk-bound, cold on the throttled device (every transfer reads the one file, so \
         they share its pages): two at once take {k2:.2} s/MB each under (4, 16 ms) and \
         {u2:.2} by the loop (Cue's Table 7: 3.13 and 7.40); from 2 to 4 the schedule's grows \
         {kernel:.2}x, the loop's {user:.2}x: {}.",
        shape(user > kernel * 1.2)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexio_bench::model::CellSchedule;

    #[test]
    fn scheduled_cells_hold_sendfile_in_8_kib_calls_beside_an_unpaced_user_loop() {
        let cells = meter_cells(true, &[(3, 70), (1, 16)]);
        let unpaced: Vec<&Cell> = cells.iter().filter(|c| c.key.schedule.is_none()).collect();
        assert_eq!(unpaced.len(), 1);
        assert!(unpaced[0]
            .entrants
            .contains(&Entrant::flexio(ReadWrite, BLOCK)));
        for (k, t) in [(3, 70), (1, 16)] {
            let schedule = Some(CellSchedule {
                chunks: k,
                pause_ms: t,
            });
            let cell = cells.iter().find(|c| c.key.schedule == schedule).unwrap();
            assert_eq!(cell.entrants, vec![Entrant::flexio(Sendfile, BLOCK)]);
            assert_eq!(cell.key.scenario, Scenario::Meter);
            assert!(cell.label().ends_with(&format!("schedule k={k} t={t}ms")));
        }
        let parallel = parallel_cells(true);
        for flows in 2..=4 {
            assert!(parallel.iter().any(|c| c.key.flows == flows
                && c.key.schedule.map(|s| (s.chunks, s.pause_ms)) == Some((4, 16))));
        }
    }
}
