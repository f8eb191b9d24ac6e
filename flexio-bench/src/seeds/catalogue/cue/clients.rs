//! Table 8's stand-in: 1-4 file -> socket flows at once from one process,
//! by sendfile and by read-write in 256 KiB calls, and by sendfile in
//! Cue's 8 KiB calls under its (4, 16) and (4, 70 ms), each flow's rate as
//! wuftpd's clients reported theirs.

use flexio::MechanismName::{self, *};

use super::super::super::measure::{self, series, shape};
use super::super::super::Point;
use crate::model::CacheState::Warm;
use crate::model::Scenario;
use crate::plan::{Cell, Entrant};
use crate::stats::Summary;

const MIB: u64 = 1 << 20;

/// Each flow's rate in KB/s (2^10 bytes), as Table 8 reports each client's.
pub(super) fn per_client_ours(summaries: &[Summary]) -> Vec<Point> {
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
    for cue in SCHEDULES {
        points.extend(super::schedules::scheduled_parallel_ours(
            summaries,
            cue,
            |b| b / 1024.0,
        ));
    }
    points
}

/// Table 8's schedules that the 1995 network did not hide.
const SCHEDULES: [super::Cue; 2] = [(4, 16), (4, 70)];

pub(super) fn compare_clients(original: &[Point], ours: &[Point]) -> String {
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
    let scheduled = |cue: super::Cue| {
        let name = super::schedules::cue_name(cue);
        kept(ours, &name).map_or("-".into(), |k| format!("{k:.2}x"))
    };
    format!(
        "Each client's rate at 4 against 1: ours {kernel:.2}x by sendfile, {user:.2}x by \
         read-write, {} and {} by sendfile in 8 KiB calls under (4, 16) and (4, 70 ms); \
         wuftpd's {theirs_cue:.2}x with Cue (4, 16 ms) and {theirs_user:.2}x user driven: {} \
         — the original's clients shared a 1995 network and one CPU; here four flows share \
         two CPUs and loopback{}, and a scheduled flow keeps its schedule's rate (2 MiB/s and \
         0.45 MiB/s) as long as the machine has room, as Cue's kept most of its own.",
        scheduled((4, 16)),
        scheduled((4, 70)),
        shape(kernel > user * 1.2),
        if kernel > user * 1.2 {
            ", and the in-kernel sender again keeps more of its rate"
        } else {
            ", and both mechanisms divide them alike"
        }
    )
}

pub(super) fn parallel_cells(quick: bool) -> Vec<Cell> {
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
        .chain(
            SCHEDULES
                .into_iter()
                .flat_map(|cue| super::schedules::scheduled_parallel_cells(quick, 1..=4, cue)),
        )
        .collect()
}
