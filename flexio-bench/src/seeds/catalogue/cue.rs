//! Cue (~1995): an in-kernel disk -> socket call with a schedule (k
//! blocks, then yield t ms), against a user-driven read/write loop, with
//! a metering process beside it. Its tables are quoted in `crate::cue`;
//! the values here are those tables'.

use flexio::MechanismName::{self, *};

use super::super::measure::{self, series, shape, MB};
use super::super::{Axes, Exhibit, Point, Status};
use crate::model::CacheState::Warm;
use crate::model::Scenario;
use crate::plan::{Cell, Entrant};
use crate::stats::Summary;

const MIB: u64 = 1 << 20;
/// Cue's block: 8 KB.
const BLOCK: usize = 8 << 10;

const USER: &str = "read-write, 8 KiB (ours)";
const KERNEL: &str = "sendfile, 8 KiB (ours)";

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
        status: Status::Partial,
        gap: "Ours sends with sendfile unpaced: the schedule (3, 70 ms) runs in `--scenario \
              schedule`, not here.",
        cells: meter_cells,
        ours: switches_ours,
        compare: compare_switches,
    }
}

fn table_2() -> Exhibit {
    Exhibit {
        id: "cue-table-2",
        title: "Cue, Tables 2 and 5: time, system time, switches and the meter, sets 1-4",
        cite: "Cue note, sections 3.2-3.2.3, Tables 2 and 5, pp. 5-7",
        setup: "As Table 1; schedules (3, 70 ms) and (4, 70 ms) against user driven, the meter's \
                solo rate about 32 000 calls/s.",
        provenance: "Quoted from Table 5 (means); drawn relative to user driven, quantity by \
                     quantity.",
        original: || {
            let user = [4.53, 2.25, 301.0, 12471.0];
            let sets = [
                ("Cue k=3 t=70 / user (Table 5)", [5.27, 2.13, 48.0, 14775.0]),
                ("Cue k=4 t=70 / user (Table 5)", [4.60, 2.17, 39.0, 13017.0]),
            ];
            sets.iter()
                .flat_map(|(name, values)| {
                    (0..4).map(move |i| Point::new(name, i as f64, values[i] / user[i]))
                })
                .collect()
        },
        axes: Axes {
            x: "0: wall s/MB, 1: system s/MB, 2: switches/MB, 3: meter's rate",
            y: "in-kernel / user driven",
            log_x: false,
            log_y: true,
        },
        status: Status::Partial,
        gap: "Unpaced sendfile stands for Cue (its schedules run in `--scenario schedule`); \
              system time is the process's user + system CPU.",
        cells: meter_cells,
        ours: relative_ours,
        compare: compare_relative,
    }
}

fn table_3() -> Exhibit {
    Exhibit {
        id: "cue-table-3",
        title: "Cue, Tables 3-4: the yield distributed over each block, sets 2-4",
        cite: "Cue note, sections 3.2.1-3.2.2, Tables 3 and 4, pp. 5-6",
        setup: "Schedules (4, 70 ms), (1, 16 ms) and (1, 20 ms) against user driven.",
        provenance: "Quoted from Tables 4 and 5: (1, 16 ms) 3.85 s/MB wall, 1.75 system, 9 890 \
                     meter calls/s; (1, 20 ms) 4.34, 1.75, 10 422; user driven 4.53, 2.25, 12 471.",
        original: || {
            let user = [4.53, 2.25, 12471.0];
            [
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
            log_y: false,
        },
        status: Status::None,
        gap: "This run measures no schedule: `flexio bench --scenario schedule` runs Cue's \
              (3, 70), (4, 70), (1, 16) and (1, 20) beside its k x t grid and the meter, in its \
              own runner, and its table is not drawn here.",
        cells: super::no_cells,
        ours: super::nothing,
        compare: |_, _| "Nothing of ours in this run: see `--scenario schedule`.".to_string(),
    }
}

fn table_6() -> Exhibit {
    Exhibit {
        id: "cue-table-6",
        title: "Cue, Tables 6-7: 2-4 transfers in parallel",
        cite: "Cue note, section 3.3, Tables 6 and 7, p. 7",
        setup: "Two to four transfers at once, Cue (4, 16 ms) against user driven.",
        provenance: "Quoted from Table 7: seconds per MB of each transfer.",
        original: || {
            let mut points = Vec::new();
            for (n, cue, user) in [(2.0, 3.13, 7.40), (3.0, 3.42, 13.32), (4.0, 3.23, 18.97)] {
                points.push(Point::new("Cue k=4 t=16 (Table 7)", n, cue));
                points.push(Point::new("user driven (Table 7)", n, user));
            }
            points
        },
        axes: Axes {
            x: "transfers in parallel",
            y: "seconds per MB of each transfer",
            log_x: false,
            log_y: true,
        },
        status: Status::Partial,
        gap: "Unpaced sendfile (default 256 KiB calls) stands for Cue (4, 16 ms); two CPUs \
              where the original had one.",
        cells: parallel_cells,
        ours: parallel_ours,
        compare: compare_parallel,
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
            x: "clients (ours: flows at once)",
            y: "KB/s at each client",
            log_x: false,
            log_y: true,
        },
        status: Status::Partial,
        gap: "No server: 1-4 file -> socket flows at once from one process (sendfile against \
              read-write, the parallel scenario's cells) stand for wuftpd's 1-4 clients; a \
              `flexio serve` by read-write against one by sendfile is not built, and `--scenario \
              server` (flexio serve against nginx, 1-256 clients) is not this table.",
        cells: parallel_cells,
        ours: per_client_ours,
        compare: compare_clients,
    }
}

/// Each flow's rate in KB/s (2^10 bytes), as Table 8 reports each client's.
fn per_client_ours(summaries: &[Summary]) -> Vec<Point> {
    let one = |mechanism: MechanismName, name: &str| {
        series(
            summaries,
            name,
            Scenario::Parallel,
            |c| c.path == "loopback",
            |s| measure::is_engine(s, mechanism, Some(256 << 10)),
            |s| f64::from(s.cell.flows),
            |s| s.flow_median_bps.filter(|b| *b > 0.0).map(|b| b / 1024.0),
        )
    };
    let mut points = one(Sendfile, "sendfile flow (ours)");
    points.extend(one(ReadWrite, "read-write flow (ours)"));
    points
}

fn compare_clients(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let kept = |points: &[Point], name: &str| {
        Some(measure::at(points, name, 4.0)? / measure::at(points, name, 1.0)?)
    };
    let (Some(kernel), Some(user)) = (
        kept(ours, "sendfile flow (ours)"),
        kept(ours, "read-write flow (ours)"),
    ) else {
        return "1 or 4 flows did not run.".into();
    };
    let theirs_user = kept(original, "user driven (Table 8)").unwrap_or(f64::NAN);
    let theirs_cue = kept(original, "Cue k=4 t=16 (Table 8)").unwrap_or(f64::NAN);
    format!(
        "Each client's rate at 4 against 1: ours {kernel:.2}x by sendfile, {user:.2}x by \
         read-write; wuftpd's {theirs_cue:.2}x with Cue (4, 16 ms) and {theirs_user:.2}x user \
         driven: {} — the original's clients shared a 1995 network and one CPU; here four \
         flows share two CPUs and loopback{}.",
        shape(kernel > user * 1.2),
        if kernel > user * 1.2 {
            ", and the in-kernel sender again keeps more of its rate"
        } else {
            ", and both mechanisms divide them alike"
        }
    )
}

/// File -> socket with the meter beside it, 8 KiB calls.
fn meter_cells(quick: bool) -> Vec<Cell> {
    let size = if quick { 64 * MIB } else { 256 * MIB };
    let entrants = vec![
        Entrant::flexio(Sendfile, BLOCK),
        Entrant::flexio(ReadWrite, BLOCK),
    ];
    vec![Cell::new(Scenario::Meter, size, Warm, entrants).path("loopback")]
}

fn meter_row(summaries: &[Summary], mechanism: MechanismName) -> Option<&Summary> {
    summaries.iter().find(|s| {
        s.cell.scenario == Scenario::Meter && measure::is_engine(s, mechanism, Some(BLOCK as u64))
    })
}

fn switches_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = Vec::new();
    for (mechanism, name) in [(ReadWrite, USER), (Sendfile, KERNEL)] {
        let Some(row) = meter_row(summaries, mechanism) else {
            continue;
        };
        let involuntary = row.involuntary_per_gib.unwrap_or(0.0) / 1024.0;
        let all = row.switches_per_gib / 1024.0;
        points.push(Point::new(name, 0.0, (all - involuntary).max(0.0)));
        points.push(Point::new(name, 1.0, involuntary));
    }
    points
}

fn compare_switches(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let theirs = measure::at(original, "Cue k=3 t=70 (Table 1)", 0.0).unwrap_or(f64::NAN)
        / measure::at(original, "user driven (Table 1)", 0.0).unwrap_or(f64::NAN);
    let (Some(kernel), Some(user)) = (measure::at(ours, KERNEL, 0.0), measure::at(ours, USER, 0.0))
    else {
        return "sendfile or read-write did not run.".into();
    };
    let involuntary = measure::at(ours, USER, 1.0).unwrap_or(f64::NAN);
    format!(
        "Ours: sendfile {kernel:.1} voluntary switches per MB against read-write's {user:.1} \
         ({involuntary:.1} involuntary); Cue paced itself into {theirs:.1}x user driven's \
         voluntary switches by its schedule's yields: {} — unpaced, sendfile blocks only when \
         the socket is full, as read-write does, and the schedule that made Cue yield is not \
         applied here.",
        shape(kernel > 2.0 * user)
    )
}

fn relative_ours(summaries: &[Summary]) -> Vec<Point> {
    let (Some(kernel), Some(user)) = (
        meter_row(summaries, Sendfile),
        meter_row(summaries, ReadWrite),
    ) else {
        return Vec::new();
    };
    let values = |s: &Summary| {
        [
            MB / s.median_bps,
            s.cpu_s_per_gib / 1024.0,
            s.switches_per_gib / 1024.0,
            s.meter_kept.unwrap_or(f64::NAN),
        ]
    };
    let (k, u) = (values(kernel), values(user));
    (0..4)
        .map(|i| Point::new("sendfile / read-write (ours)", i as f64, k[i] / u[i]))
        .filter(|p| p.y.is_finite() && p.y > 0.0)
        .collect()
}

fn compare_relative(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let name = "sendfile / read-write (ours)";
    let ours_at = |i: f64| measure::at(ours, name, i).unwrap_or(f64::NAN);
    let theirs_at =
        |i: f64| measure::at(original, "Cue k=3 t=70 / user (Table 5)", i).unwrap_or(f64::NAN);
    format!(
        "Ours, sendfile against read-write: wall {:.2}x, CPU {:.2}x, switches {:.2}x, meter \
         {:.2}x; Cue (3, 70 ms) against user driven: {:.2}x, {:.2}x, {:.2}x, {:.2}x. In CPU per \
         byte and what the meter kept, {} — ours is unpaced and so also faster, where Cue's yields \
         made it slower.",
        ours_at(0.0),
        ours_at(1.0),
        ours_at(2.0),
        ours_at(3.0),
        theirs_at(0.0),
        theirs_at(1.0),
        theirs_at(2.0),
        theirs_at(3.0),
        shape(ours_at(1.0) < 1.0 && ours_at(3.0) >= 1.0)
    )
}

fn parallel_cells(quick: bool) -> Vec<Cell> {
    let size = if quick { 64 * MIB } else { 256 * MIB };
    (1..=4)
        .map(|flows| {
            let entrants = vec![
                Entrant::flexio(Sendfile, 256 << 10),
                Entrant::flexio(ReadWrite, 256 << 10),
            ];
            Cell::new(Scenario::Parallel, size, Warm, entrants)
                .flows(flows)
                .path("loopback")
        })
        .collect()
}

fn parallel_ours(summaries: &[Summary]) -> Vec<Point> {
    let one = |mechanism: MechanismName, name: &str| {
        series(
            summaries,
            name,
            Scenario::Parallel,
            |c| c.path == "loopback",
            |s| measure::is_engine(s, mechanism, Some(256 << 10)),
            |s| f64::from(s.cell.flows),
            |s| s.flow_median_bps.filter(|b| *b > 0.0).map(|b| MB / b),
        )
    };
    let mut points = one(Sendfile, "sendfile (ours)");
    points.extend(one(ReadWrite, "read-write (ours)"));
    points
}

fn compare_parallel(_: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let growth = |name: &str| Some(measure::at(ours, name, 4.0)? / measure::at(ours, name, 2.0)?);
    let (Some(kernel), Some(user)) = (growth("sendfile (ours)"), growth("read-write (ours)"))
    else {
        return "2 or 4 flows did not run.".into();
    };
    format!(
        "Ours, per transfer from 2 to 4 at once: sendfile's seconds per MB grow {kernel:.2}x, \
         read-write's {user:.2}x; Cue's grew 1.03x and user driven's 2.56x: {} — on two CPUs \
         both share the cores evenly, where the 1995 user-driven loop lost its quantum to every \
         other transfer.",
        shape(user > kernel * 1.2)
    )
}
