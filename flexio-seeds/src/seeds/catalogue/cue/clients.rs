//! Table 8: wuftpd sending a file to 1-4 clients at once by read/write or
//! by Cue. Ours: `flexio serve` as a process to 1-4 HTTP clients over
//! loopback, each client's rate and the server's CPU — by read-write in
//! 8 KiB reads, by sendfile unpaced, and by sendfile under each of Cue's
//! four schedules (`--schedule K,T`, 8 KiB chunks), the server pausing
//! each connection on its own as Cue paused each transfer.

use flexio::MechanismName::{self, *};
use flexio::Params;

use super::super::super::measure::{self, shape};
use super::super::super::Point;
use super::schedules::BLOCK;
use super::Cue;
use flexio_bench::model::CacheState::Warm;
use flexio_bench::model::Scenario;
use flexio_bench::plan::{Cell, Entrant};
use flexio_bench::stats::Summary;

const MIB: u64 = 1 << 20;

/// Table 8's schedules.
pub(super) const SCHEDULES: [Cue; 4] = [(1, 16), (3, 16), (4, 16), (4, 70)];

pub(super) const SERVE_USER: &str = "serve --via read-write, 8 KiB (ours)";
pub(super) const SERVE_KERNEL: &str = "serve --via sendfile, no schedule (ours)";

/// The server's unscheduled mechanisms, by their series.
const SERVERS: [(MechanismName, &str); 2] = [(ReadWrite, SERVE_USER), (Sendfile, SERVE_KERNEL)];

/// Our series of `flexio serve --via sendfile --schedule K,T`.
pub(super) fn serve_cue_name(cue: Cue) -> String {
    format!("serve --via sendfile k={} t={}, 8 KiB (ours)", cue.0, cue.1)
}

/// A server's series behind the shared bucket: `what` is `read-write`,
/// `sendfile` or `sendfile k=K t=T`.
pub(super) fn shared_name(what: &str) -> String {
    format!(
        "serve --via {what}, shared {} MiB/s (ours)",
        crate::cue_bench::SHARED_RATE >> 20
    )
}

/// Table 8's servers behind the shared bucket: read-write and sendfile
/// unscheduled, and sendfile under each of [`SCHEDULES`].
pub(super) fn shared_servers() -> Vec<crate::cue_bench::Server> {
    use crate::cue_bench::Server;
    let mut servers: Vec<Server> = [(ReadWrite, "read-write"), (Sendfile, "sendfile")]
        .into_iter()
        .map(|(mechanism, what)| Server {
            series: shared_name(what),
            mechanism,
            schedule: None,
        })
        .collect();
    servers.extend(SCHEDULES.iter().map(|&(k, t)| Server {
        series: shared_name(&format!("sendfile k={k} t={t}")),
        mechanism: Sendfile,
        schedule: Some((k, t)),
    }));
    servers
}

/// wuftpd's series under `cue`.
fn table_name(cue: Cue) -> String {
    format!("Cue k={} t={} (Table 8)", cue.0, cue.1)
}

/// `flexio serve` as a process sending by `mechanism` in Cue's 8 KB:
/// read-write's reads, a schedule's chunks (unscheduled sendfile's calls
/// are the server's share per wake-up, `--max-chunk`).
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
        flexio_bench::model::Contender::Process { mechanism: m, .. } if *m == mechanism
    )
}

/// Bytes each client fetches under a schedule: Cue's 12 MB in the full
/// run; 1 MiB in the quick one (at 8 KiB a chunk a schedule holds a
/// client to 0.4-2 MiB/s, so 12 MiB would take up to half a minute a
/// run).
fn scheduled_size(quick: bool) -> u64 {
    if quick {
        MIB
    } else {
        12 * MIB
    }
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
        cells.extend((1..=4).map(|clients| {
            Cell::new(
                Scenario::ServeClients,
                scheduled_size(quick),
                Warm,
                vec![server(Sendfile)],
            )
            .flows(clients)
            .path("loopback")
            .schedule(cue.0, cue.1)
        }));
    }
    cells
}

/// Each client's rate in KB/s (2^10 bytes), as Table 8 reports it.
pub(super) fn per_client_ours(summaries: &[Summary]) -> Vec<Point> {
    let rate = |s: &Summary| s.flow_median_bps.filter(|b| *b > 0.0).map(|b| b / 1024.0);
    let clients = |s: &Summary| f64::from(s.cell.flows);
    let mut points = Vec::new();
    for (mechanism, name) in SERVERS {
        points.extend(measure::series(
            summaries,
            name,
            Scenario::ServeClients,
            |c| c.path == "loopback" && c.schedule.is_none(),
            |s| is_server(s, mechanism),
            clients,
            rate,
        ));
    }
    for cue in SCHEDULES {
        points.extend(measure::series(
            summaries,
            &serve_cue_name(cue),
            Scenario::ServeClients,
            |c| c.path == "loopback" && c.schedule.map(|s| (s.chunks, s.pause_ms)) == Some(cue),
            |s| is_server(s, Sendfile),
            clients,
            rate,
        ));
    }
    points
}

/// A series' rate at 4 clients over its rate at 1.
fn kept(points: &[Point], name: &str) -> Option<f64> {
    Some(measure::at(points, name, 4.0)? / measure::at(points, name, 1.0)?)
}

/// The most a schedule lets a client have, KB/s: K chunks of 8 KiB per
/// pause of T (sending itself taken as free).
fn ceiling(cue: Cue) -> f64 {
    f64::from(cue.0) * (BLOCK as f64 / 1024.0) * 1000.0 / cue.1 as f64
}

pub(super) fn compare_clients(original: &[Point], ours: &[Point]) -> String {
    if let Some(text) = measure::not_measured(ours) {
        return text;
    }
    let (Some(kernel), Some(user)) = (kept(ours, SERVE_KERNEL), kept(ours, SERVE_USER)) else {
        return "the server's 1 or 4 clients did not run.".into();
    };
    let theirs_user = kept(original, "user driven (Table 8)").unwrap_or(f64::NAN);
    let each = |cue: Cue| {
        let ours_kept = kept(ours, &serve_cue_name(cue));
        let theirs = kept(original, &table_name(cue)).unwrap_or(f64::NAN);
        let one = measure::at(ours, &serve_cue_name(cue), 1.0);
        match (ours_kept, one) {
            (Some(k), Some(one)) => format!(
                "({}, {}) {k:.2}x against {theirs:.2}x, {one:.0} KB/s at one client of its \
                 {:.0} KB/s ceiling",
                cue.0,
                cue.1,
                ceiling(cue)
            ),
            _ => format!("({}, {}) did not run", cue.0, cue.1),
        }
    };
    let ours_cue: Vec<f64> = SCHEDULES
        .iter()
        .filter_map(|cue| kept(ours, &serve_cue_name(*cue)))
        .collect();
    let theirs_cue: Vec<f64> = SCHEDULES
        .iter()
        .filter_map(|cue| kept(original, &table_name(*cue)))
        .collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let same = ours_cue.len() == SCHEDULES.len()
        && (mean(&ours_cue) > user * 1.1) == (mean(&theirs_cue) > theirs_user * 1.1);
    let at_four = |name: &str| measure::at(ours, name, 4.0).unwrap_or(f64::NAN) / 1024.0;
    let why = if same {
        "a schedule holds each client near its own rate whatever the others do, as Cue's \
         did against a user-driven server that lost its rate first, but for different \
         reasons: wuftpd's clients shared one CPU and a 1995 network, ours share two CPUs \
         and loopback, where a schedule's pauses leave the machine idle and only the \
         unscheduled servers compete"
    } else {
        "here the scheduled clients did not keep their rate better than read-write's: on \
         two CPUs and loopback (wuftpd's shared one CPU and a 1995 network) the load of the \
         bench's own clients decides more than the server's schedule"
    };
    let shared = compare_shared(ours);
    format!(
        "Each client's rate at 4 clients against 1, ours from `flexio serve` against \
         wuftpd's: read-write {user:.2}x against {theirs_user:.2}x user driven ({:.0} MiB/s a \
         client at 4), sendfile unscheduled {kernel:.2}x ({:.0} MiB/s); under Cue's schedules \
         {}; {}; {}; {}. Shape: {}; {why}. A pause ends at the server's next 10 ms timer tick \
         after T, so a (1, 16) chunk waits 16-26 ms: below the ceiling at one client. {shared}",
        at_four(SERVE_USER),
        at_four(SERVE_KERNEL),
        each((1, 16)),
        each((3, 16)),
        each((4, 16)),
        each((4, 70)),
        shape(same),
    )
}

/// Behind the shared bucket: what each server keeps from 1 to 4 clients,
/// and whether the schedules keep more than the unpaced servers.
fn compare_shared(ours: &[Point]) -> String {
    let user = kept(ours, &shared_name("read-write"));
    let unpaced = kept(ours, &shared_name("sendfile"));
    let (Some(user), Some(unpaced)) = (user, unpaced) else {
        return "Behind the shared bucket: did not run.".into();
    };
    let scheduled: Vec<(Cue, f64)> = SCHEDULES
        .iter()
        .filter_map(|&(k, t)| {
            Some((
                (k, t),
                kept(ours, &shared_name(&format!("sendfile k={k} t={t}")))?,
            ))
        })
        .collect();
    let words: Vec<String> = scheduled
        .iter()
        .map(|((k, t), kept)| format!("({k}, {t}) {kept:.2}x"))
        .collect();
    // Cue's finding: its clients kept their rate where user driven's fell.
    let bucket = (crate::cue_bench::SHARED_RATE >> 10) as f64;
    let keeps = scheduled
        .iter()
        .filter(|(cue, kept)| 4.0 * ceiling(*cue) < bucket && *kept > 0.8)
        .count();
    let light = SCHEDULES
        .iter()
        .filter(|cue| 4.0 * ceiling(**cue) < bucket)
        .count();
    format!(
        "Behind one shared {} MiB/s bucket (Cue's clients shared one DECstation), each \
         client's rate at 4 clients against 1: read-write {user:.2}x, sendfile unscheduled \
         {unpaced:.2}x, under Cue's schedules {}. The schedules whose four clients together ask \
         for less than the bucket keep their rate ({keeps} of {light} within 20%) while the \
         unpaced servers' clients split it: {} — a schedule that asks for more than its share \
         falls as the clients grow, as an unpaced server does.",
        bucket / 1024.0,
        words.join(", "),
        shape(keeps == light && light > 0 && user < 0.5 && unpaced < 0.5),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schedule_runs_in_the_server_to_one_to_four_clients_beside_read_write() {
        let cells = cells(true);
        for clients in 1..=4 {
            let plain = cells
                .iter()
                .find(|c| c.key.flows == clients && c.key.schedule.is_none())
                .unwrap();
            assert_eq!(plain.entrants, vec![server(ReadWrite), server(Sendfile)]);
            for cue in SCHEDULES {
                let cell = cells
                    .iter()
                    .find(|c| {
                        c.key.flows == clients
                            && c.key.schedule.map(|s| (s.chunks, s.pause_ms)) == Some(cue)
                    })
                    .unwrap();
                assert_eq!(cell.key.scenario, Scenario::ServeClients);
                assert_eq!(cell.entrants, vec![server(Sendfile)]);
            }
        }
        assert_eq!(cells.len(), 4 * (1 + SCHEDULES.len()));
        assert_eq!(ceiling((1, 16)), 500.0);
    }
}
