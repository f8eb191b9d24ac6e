//! Table 8: wuftpd sending a file to 1-4 clients at once by read/write or
//! by Cue. Ours: `flexio serve --via read-write` against `--via sendfile`
//! to 1-4 HTTP clients over loopback, each client's rate and the server's
//! CPU; and Cue's four schedules on sendfile in 8 KiB calls over 1-4
//! flows from one process (`flexio serve` has no schedule).

use flexio::MechanismName::{self, *};
use flexio::Params;

use super::super::super::measure::{self, shape};
use super::super::super::Point;
use super::schedules::{cue_name, scheduled_parallel_cells, scheduled_parallel_ours, BLOCK};
use super::Cue;
use crate::model::CacheState::Warm;
use crate::model::Scenario;
use crate::plan::{Cell, Entrant};
use crate::stats::Summary;

const MIB: u64 = 1 << 20;

/// Table 8's schedules.
pub(super) const SCHEDULES: [Cue; 4] = [(1, 16), (3, 16), (4, 16), (4, 70)];

pub(super) const SERVE_USER: &str = "serve --via read-write, 8 KiB (ours)";
pub(super) const SERVE_KERNEL: &str = "serve --via sendfile (ours)";

/// The server's mechanisms, by their series.
const SERVERS: [(MechanismName, &str); 2] = [(ReadWrite, SERVE_USER), (Sendfile, SERVE_KERNEL)];

/// `flexio serve` as a process sending by `mechanism`, reads of Cue's
/// 8 KB for read-write (sendfile's calls are the server's share per
/// wake-up, `--max-chunk`).
fn server(mechanism: MechanismName) -> Entrant {
    Entrant::process(
        mechanism,
        Params {
            chunk: BLOCK,
            ..Params::default()
        },
    )
}

fn is_server(summary: &Summary, mechanism: MechanismName) -> bool {
    matches!(
        &summary.contender,
        crate::model::Contender::Process { mechanism: m, .. } if *m == mechanism
    )
}

pub(super) fn cells(quick: bool) -> Vec<Cell> {
    let size = if quick { 64 * MIB } else { 256 * MIB };
    let mut cells: Vec<Cell> = (1..=4)
        .map(|clients| {
            let entrants = SERVERS.iter().map(|(m, _)| server(*m)).collect();
            Cell::new(Scenario::ServeClients, size, Warm, entrants)
                .flows(clients)
                .path("loopback")
        })
        .collect();
    for cue in SCHEDULES {
        cells.extend(scheduled_parallel_cells(quick, 1..=4, cue));
    }
    cells
}

/// Each client's rate in KB/s (2^10 bytes), as Table 8 reports it.
pub(super) fn per_client_ours(summaries: &[Summary]) -> Vec<Point> {
    let mut points = Vec::new();
    for (mechanism, name) in SERVERS {
        points.extend(measure::series(
            summaries,
            name,
            Scenario::ServeClients,
            |c| c.path == "loopback",
            |s| is_server(s, mechanism),
            |s| f64::from(s.cell.flows),
            |s| s.flow_median_bps.filter(|b| *b > 0.0).map(|b| b / 1024.0),
        ));
    }
    for cue in SCHEDULES {
        points.extend(scheduled_parallel_ours(summaries, cue, |b| b / 1024.0));
    }
    points
}

pub(super) fn compare_clients(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let kept = |points: &[Point], name: &str| {
        Some(measure::at(points, name, 4.0)? / measure::at(points, name, 1.0)?)
    };
    let (Some(kernel), Some(user)) = (kept(ours, SERVE_KERNEL), kept(ours, SERVE_USER)) else {
        return "the server's 1 or 4 clients did not run.".into();
    };
    let theirs_user = kept(original, "user driven (Table 8)").unwrap_or(f64::NAN);
    let theirs_cue = kept(original, "Cue k=4 t=16 (Table 8)").unwrap_or(f64::NAN);
    let scheduled =
        |cue: Cue| kept(ours, &cue_name(cue)).map_or("-".into(), |k| format!("{k:.2}x"));
    let at_four = |name: &str| measure::at(ours, name, 4.0).unwrap_or(f64::NAN) / 1024.0;
    format!(
        "Each client's rate at 4 clients against 1: ours {kernel:.2}x from `flexio serve` by \
         sendfile, {user:.2}x by read-write ({:.0} and {:.0} MiB/s a client at 4); wuftpd's \
         {theirs_cue:.2}x with Cue (4, 16 ms) and {theirs_user:.2}x user driven: {} — wuftpd's \
         clients shared one CPU and a 1995 network, where the user-driven server lost its \
         rate first; here four clients share two CPUs and loopback, and the bench's clients \
         run on the same two CPUs as the server. Cue's schedules on sendfile (one process, no \
         server): (1, 16) {}, (3, 16) {}, (4, 16) {}, (4, 70 ms) {} — a scheduled flow keeps \
         its schedule's rate while the machine has room, as Cue's (4, 16) kept most of its \
         own.",
        at_four(SERVE_KERNEL),
        at_four(SERVE_USER),
        shape((kernel > user * 1.1) == (theirs_cue > theirs_user * 1.1)),
        scheduled((1, 16)),
        scheduled((3, 16)),
        scheduled((4, 16)),
        scheduled((4, 70)),
    )
}
