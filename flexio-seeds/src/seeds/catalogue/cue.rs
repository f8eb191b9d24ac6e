//! Cue (~1995): an in-kernel disk -> socket call with a schedule (k
//! blocks, then yield t ms), against a user-driven read/write loop, with
//! a metering process beside it. Its tables are quoted in `crate::cue`;
//! the values here are those tables'. Ours runs Cue's schedules on
//! sendfile in Cue's 8 KB calls (`schedules.rs`); Table 8's server runs
//! them inside `flexio serve --schedule` (`clients.rs`). Tables 1-7 also
//! run Cue's own comparison, both transfers disk-bound at an equal rate
//! (`Setup::CueDiskBound`: cold on a throttled device, `cue_bench`).

use super::super::setup::Setup;
use super::super::{Axes, Exhibit, Numbers, Point};

mod clients;
mod schedules;

use schedules::{Cue, TABLE_2_RUNS};

/// Schedules of sets 1 and 2 (Tables 1, 2 and 5).
const SETS_1_2: [Cue; 2] = [(3, 70), (4, 70)];
/// Schedules of Tables 3-4: the yield bunched after four blocks, or
/// spread over each.
const SETS_2_4: [Cue; 3] = [(4, 70), (1, 16), (1, 20)];

/// The setup outside the matrix each exhibit measures: Tables 1-7 run
/// their disk-bound pair on the throttled device.
pub(super) fn setups(id: &str) -> &'static [Setup] {
    match id {
        "cue-table-1" | "cue-table-2" | "cue-table-3" | "cue-table-6" => &[Setup::CueDiskBound],
        "cue-table-8" => &[Setup::CueSharedLink],
        _ => &[],
    }
}

/// Table 8's servers for `Setup::CueSharedLink`.
pub(super) fn shared_servers() -> Vec<crate::cue_bench::Server> {
    clients::shared_servers()
}

/// The cells `Setup::CueDiskBound` runs cold on the throttled device.
pub(super) fn disk_cells(quick: bool) -> Vec<flexio_bench::plan::Cell> {
    schedules::disk_cells(quick)
}

pub(super) fn exhibits() -> Vec<Exhibit> {
    vec![table_1(), table_2(), table_3(), table_6(), table_8()]
}

fn table_1() -> Exhibit {
    Exhibit {
        id: "cue-table-1",
        title: "Cue, Table 1: context switches per MB, voluntary and involuntary",
        cite: "Cue note, section 3.2, Table 1 (set 1, k=3, t=70 ms), p. 5",
        setup: "A 12 MB file sent sixty times from a DECstation 3100 (Ultrix 4.2) in 8 KB \
                blocks, a gettimeofday() metering process beside it.",
        provenance: "Quoted from Table 1 (five runs); drawn as the means of the five.",
        original: || {
            let mean = |v: [f64; 5]| v.iter().sum::<f64>() / 5.0;
            vec![
                Point::new(
                    "user driven (Table 1)",
                    0.0,
                    mean([6.0, 6.0, 5.0, 19.0, 8.0]),
                ),
                Point::new(
                    "user driven (Table 1)",
                    1.0,
                    mean([23.0, 23.0, 23.0, 18.0, 22.0]),
                ),
                Point::new(
                    "Cue k=3 t=70 (Table 1)",
                    0.0,
                    mean([48.0, 47.0, 47.0, 50.0, 49.0]),
                ),
                Point::new("Cue k=3 t=70 (Table 1)", 1.0, 0.0),
            ]
        },
        axes: Axes {
            x: "0: voluntary, 1: involuntary",
            y: "context switches per MB",
            log_x: false,
            log_y: false,
        },
        numbers: Numbers::Given(&[]),
        ours_setup: "Ours: a file sent to loopback TCP in 8 KiB calls, the meter on the sender's \
              CPU and the receiver on the other (Cue's was another machine); sendfile under \
              (3, 70 ms) against read-write with none, and sendfile with none beside them; \
              and Cue's own comparison, the two disk-bound at an equal rate: both cold on \
              ext4 on a loop device throttled to 256 KiB/s (the DECstation's user-driven \
              loop ran at 0.22 MB/s), 1 MiB each in the quick run, 4 MiB in the full.",
        gaps: &[],
        cells: |quick| schedules::meter_cells(quick, &[(3, 70)]),
        ours: schedules::switches_ours,
        view: super::as_measured,
        compare: schedules::compare_switches,
    }
}

fn table_2() -> Exhibit {
    Exhibit {
        id: "cue-table-2",
        title: "Cue, Tables 2 and 5: time, system time, switches and the meter, sets 1-4",
        cite: "Cue note, sections 3.2-3.2.3, Tables 2 and 5, pp. 5-7",
        setup: "As Table 1; schedules (3, 70 ms) and (4, 70 ms) against user driven, the meter's \
                solo rate about 32 000 calls/s.",
        provenance: "Quoted from Table 5 (means), drawn relative to user driven quantity by \
                     quantity; and Table 2's five runs of set 1, each run's Cue (3, 70 ms) over \
                     the same run's user driven (Table 2 gives wall, system and the meter, not \
                     switches): user driven wall 4.6 4.6 4.6 4.5 4.5 s/MB, system 2.3 2.3 2.3 \
                     2.2 2.3, meter 12574 12605 12619 12420 12564 calls/s; Cue wall 5.3 5.2 \
                     5.2 5.4 5.3, system 2.1 in each, meter 14740 14653 14640 14913 14928.",
        original: || {
            let user = [4.53, 2.25, 301.0, 12471.0];
            let sets = [
                ("Cue k=3 t=70 / user (Table 5)", [5.27, 2.13, 48.0, 14775.0]),
                ("Cue k=4 t=70 / user (Table 5)", [4.60, 2.17, 39.0, 13017.0]),
            ];
            let mut points: Vec<Point> = sets
                .iter()
                .flat_map(|(name, values)| {
                    (0..4).map(move |i| Point::new(name, i as f64, values[i] / user[i]))
                })
                .collect();
            points.extend(table_2_runs());
            points
        },
        axes: Axes {
            x: "0: wall s/MB, 1: system s/MB, 2: switches/MB, 3: meter's rate",
            y: "in-kernel / user driven",
            log_x: false,
            log_y: true,
        },
        numbers: Numbers::Given(&[TABLE_2_RUNS]),
        ours_setup: "Ours: sendfile in 8 KiB calls under (3, 70 ms) and (4, 70 ms) against \
              read-write unpaced, over loopback with the meter on the sender's CPU; system \
              time is the sending thread's; and the same pair disk-bound at an equal rate, \
              both cold on ext4 on a loop device throttled to 256 KiB/s (Cue's comparison).",
        gaps: &[],
        cells: |quick| schedules::meter_cells(quick, &SETS_1_2),
        ours: |summaries| schedules::relative_ours(summaries, &SETS_1_2, &[0, 1, 2, 3]),
        view: super::as_measured,
        compare: schedules::compare_relative,
    }
}

/// Table 2's five runs (wall s/MB, system s/MB, meter calls/s) as each
/// run's Cue (3, 70 ms) over its user driven, at x 0, 1 and 3.
fn table_2_runs() -> Vec<Point> {
    let user = [
        [4.6, 2.3, 12574.0],
        [4.6, 2.3, 12605.0],
        [4.6, 2.3, 12619.0],
        [4.5, 2.2, 12420.0],
        [4.5, 2.3, 12564.0],
    ];
    let cue = [
        [5.3, 2.1, 14740.0],
        [5.2, 2.1, 14653.0],
        [5.2, 2.1, 14640.0],
        [5.4, 2.1, 14913.0],
        [5.3, 2.1, 14928.0],
    ];
    user.iter()
        .zip(&cue)
        .flat_map(|(user, cue)| {
            [0.0, 1.0, 3.0]
                .into_iter()
                .enumerate()
                .map(move |(i, x)| Point::new(TABLE_2_RUNS, x, cue[i] / user[i]))
        })
        .collect()
}

fn table_3() -> Exhibit {
    Exhibit {
        id: "cue-table-3",
        title: "Cue, Tables 3-4: the yield distributed over each block, sets 2-4",
        cite: "Cue note, sections 3.2.1-3.2.2, Tables 3 and 4, pp. 5-6",
        setup: "Schedules (4, 70 ms), (1, 16 ms) and (1, 20 ms) against user driven.",
        provenance: "Quoted from Tables 4 and 5: (1, 16 ms) 3.85 s/MB wall, 1.75 system, 9 890 \
                     meter calls/s; (1, 20 ms) 4.34, 1.75, 10 422; (4, 70 ms) 4.60, 2.17, \
                     13 017; user driven 4.53, 2.25, 12 471.",
        original: || {
            let user = [4.53, 2.25, 12471.0];
            [
                ("Cue k=4 t=70 / user", [4.60, 2.17, 13017.0]),
                ("Cue k=1 t=16 / user", [3.85, 1.75, 9890.0]),
                ("Cue k=1 t=20 / user", [4.34, 1.75, 10422.0]),
            ]
            .iter()
            .flat_map(|(name, v)| (0..3).map(move |i| Point::new(name, i as f64, v[i] / user[i])))
            .collect()
        },
        axes: Axes {
            x: "0: wall s/MB, 1: system s/MB, 2: meter's rate",
            y: "schedule / user driven",
            log_x: false,
            log_y: true,
        },
        numbers: Numbers::Given(&[]),
        ours_setup: "Ours: sendfile in 8 KiB calls under (4, 70), (1, 16) and (1, 20 ms) against \
              read-write unpaced, as in Table 2; `--scenario schedule` runs the same \
              schedules beside a K x T grid in 256 KiB calls; and the same disk-bound at an \
              equal rate, all cold on ext4 on a loop device throttled to 256 KiB/s (Cue's \
              comparison).",
        gaps: &[],
        cells: |quick| schedules::meter_cells(quick, &SETS_2_4),
        ours: |summaries| schedules::relative_ours(summaries, &SETS_2_4, &[0, 1, 3]),
        view: super::as_measured,
        compare: schedules::compare_distributed,
    }
}

fn table_6() -> Exhibit {
    Exhibit {
        id: "cue-table-6",
        title: "Cue, Tables 6-7: 2-4 transfers in parallel",
        cite: "Cue note, section 3.3, Tables 6 and 7, p. 7",
        setup: "Two to four transfers at once, Cue (4, 16 ms) against user driven; Table 6 \
                measures the two-transfer sets' wall and system time and context switches.",
        provenance: "Quoted from Table 6 (two transfers: user driven 4.05 s/MB wall, 1.00 \
                     system, 59.6 switches/MB; Cue (4, 16 ms) of set 6, without the meter as \
                     ours, 3.13, 0.88, 96.8; set 5's metered rows, (4, 16 ms) 3.17, 0.89, \
                     97.2 and (3, 16 ms) 4.46, 0.64, 157.0, are not drawn) and Table 7 \
                     (seconds per MB of each transfer). The two disagree on user driven at \
                     two transfers (4.05 against 7.40): Table 6's per MB moved in all, ours \
                     likewise.",
        original: || {
            let mut points = Vec::new();
            for (x, cue, user) in [(0.0, 3.13, 4.05), (1.0, 0.88, 1.00), (2.0, 96.8, 59.6)] {
                points.push(Point::new(schedules::PARALLEL_CUE, x, cue));
                points.push(Point::new(schedules::PARALLEL_USER, x, user));
            }
            for (n, cue, user) in [(2, 3.13, 7.40), (3, 3.42, 13.32), (4, 3.23, 18.97)] {
                let x = schedules::transfers_x(n);
                points.push(Point::new(schedules::PARALLEL_CUE, x, cue));
                points.push(Point::new(schedules::PARALLEL_USER, x, user));
            }
            points
        },
        axes: Axes {
            x: "0: 2 transfers' wall s/MB (Table 6), 1: their system s/MB (Table 6), 2: their \
                switches/MB (Table 6), 3: s/MB of each of 2 (Table 7), 4: of each of 3, 5: of \
                each of 4",
            y: "per MB: seconds, or context switches at 2",
            log_x: false,
            log_y: true,
        },
        numbers: Numbers::Given(&[schedules::PARALLEL_CUE, schedules::PARALLEL_USER]),
        ours_setup: "Ours: 2-4 file -> loopback TCP flows at once from one process, sendfile in \
              8 KiB calls under (4, 16 ms) against read-write unpaced; two CPUs where the \
              original had one; and the same disk-bound, cold on ext4 on a loop device \
              throttled to 256 KiB/s (the flows read one file). Table 6's row is the \
              two-transfer cells' wall time and system time per MB moved in all and their \
              context switches per MB (the process's, both flows').",
        gaps: &[],
        cells: schedules::parallel_cells,
        ours: schedules::parallel_ours,
        view: super::as_measured,
        compare: schedules::compare_parallel,
    }
}

fn table_8() -> Exhibit {
    Exhibit {
        id: "cue-table-8",
        title: "Cue, Table 8: wuftpd with 1-4 clients",
        cite: "Cue note, section 3.3.1, Table 8, p. 8",
        setup: "An FTP server sending a 12 MB file by read/write or by Cue with four schedules \
                to one to four clients.",
        provenance: "Quoted from Table 8 (KB/s at each client, ranges); drawn as the middle of \
                     each range.",
        original: || {
            let rows = [
                ("user driven", [405.0, 260.0, 221.0, 222.5]),
                ("Cue k=1 t=16", [270.0, 230.0, 248.0, 226.5]),
                ("Cue k=3 t=16", [350.0, 260.0, 235.5, 214.5]),
                ("Cue k=4 t=16", [360.0, 340.0, 303.5, 330.0]),
                ("Cue k=4 t=70", [200.0, 350.0, 300.0, 317.0]),
            ];
            rows.iter()
                .flat_map(|(name, v)| {
                    (0..4).map(move |i| {
                        Point::new(&format!("{name} (Table 8)"), i as f64 + 1.0, v[i])
                    })
                })
                .collect()
        },
        axes: Axes {
            x: "clients (ours: HTTP clients, or flows at once)",
            y: "KB/s at each client",
            log_x: false,
            log_y: true,
        },
        numbers: Numbers::Given(&[]),
        ours_setup: "`flexio serve` as a process sends the file to 1-4 HTTP clients at once over \
              loopback (wuftpd: FTP over a 1995 network): by read-write in 8 KiB reads \
              (user driven), by sendfile unscheduled, and by sendfile under each of Cue's \
              four schedules (`--schedule K,T`, 8 KiB chunks, each connection paused on its \
              own); each client's rate here, the server's CPU per GiB in report.md. The \
              scheduled clients fetch Cue's 12 MB in the full run, 1 MiB with --quick. Then \
              the same servers behind a shared bottleneck, as wuftpd's clients shared one \
              DECstation: `--rate-total 3 MiB/s`, one token bucket all connections draw on, \
              1 MiB to each client (4 MiB in the full run), three rounds.",
        gaps: &[],
        cells: clients::cells,
        ours: clients::per_client_ours,
        view: super::as_measured,
        compare: clients::compare_clients,
    }
}
