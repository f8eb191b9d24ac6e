//! What a bench run measures: scenarios expand into *cells* (scenario,
//! size, chunk, cache state, flows, network path), each with the
//! *entrants* that compete in it — flexio mechanisms, standard tools and
//! physical limits.
//!
//! The quick plan (the default) fits in about two minutes on a 2-core
//! machine; `--full` runs the whole matrix (about half an hour); `--sizes`
//! replaces the size axis of every scenario so that, say, only the 1 GiB
//! cells run.

use std::fmt::Write as _;
use std::time::Duration;

use flexio::MechanismName;

use crate::limits::Probe;
use crate::model::CacheState;
pub use crate::model::Scenario;
use crate::peers::{Iperf3Mode, PeerSpec};

mod cell;
pub use cell::{label, Cell, Entrant};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// What to plan.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// The whole matrix instead of the quick one.
    pub full: bool,
    /// Only these scenarios (all when empty); `limits` always runs.
    pub scenarios: Vec<Scenario>,
    /// These sizes instead of each scenario's own.
    pub sizes: Option<Vec<u64>>,
    /// Add the veth cells (root, and `--full` or `--scenario`).
    pub veth: bool,
    /// A tuned profile is in force: beside every `auto` (which consults
    /// it) run `auto` without it, so that the two can be compared.
    pub auto_builtin: bool,
}

/// The cells of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// In the order they run.
    pub cells: Vec<Cell>,
}

const DEFAULT_CHUNK: usize = 256 << 10;

/// The disk limits measured beside the contenders of a cold cell, in the
/// same rounds, on the same file: a disk shared with other tenants drifts
/// from minute to minute, and a limit measured once before the cells was
/// beaten by 1.71× by a cold copy measured later.
fn disk_limits_beside(durable: bool) -> Vec<Entrant> {
    let mut limits = vec![Entrant::Limit(Probe::DiskRead)];
    if durable {
        limits.push(Entrant::Limit(Probe::DiskWrite));
    }
    limits
}

/// The network limit measured beside the contenders of a socket cell, in
/// the same rounds: measured once before the cells, it was beaten by up
/// to 1.9× by runs a minute later.
fn network_limit_beside(path: &str) -> Entrant {
    match path {
        "veth" => Entrant::Limit(Probe::Iperf3Veth),
        _ => Entrant::Limit(Probe::Iperf3Loopback),
    }
}

fn file_to_file_entrants(durable: bool) -> Vec<Entrant> {
    use MechanismName::*;
    let mut entrants: Vec<Entrant> = [ReadWrite, Mmap, CopyFileRange, Sendfile, Splice, IoUring]
        .into_iter()
        .map(|m| Entrant::flexio(m, DEFAULT_CHUNK))
        .collect();
    entrants.push(Entrant::io_uring_direct(DEFAULT_CHUNK));
    entrants.push(Entrant::flexio(Direct, DEFAULT_CHUNK));
    entrants.push(Entrant::flexio(Auto, DEFAULT_CHUNK));
    entrants.push(Entrant::process_auto());
    if durable {
        entrants.extend([
            Entrant::Peer(PeerSpec::cp_sync()),
            Entrant::Peer(PeerSpec::dd_fsync()),
            Entrant::Peer(PeerSpec::dd_direct_fsync()),
        ]);
    } else {
        entrants.extend([
            Entrant::Peer(PeerSpec::cp()),
            Entrant::Peer(PeerSpec::dd()),
            Entrant::Peer(PeerSpec::dd_direct()),
            Entrant::Peer(PeerSpec::cat_redirect()),
        ]);
    }
    entrants
}

fn flexio_entrants(mechanisms: &[MechanismName]) -> Vec<Entrant> {
    mechanisms
        .iter()
        .map(|&m| Entrant::flexio(m, DEFAULT_CHUNK))
        .collect()
}

impl Plan {
    /// The cells for `options`.
    ///
    /// # Examples
    /// ```
    /// use flexio_bench::plan::{Plan, PlanOptions, Scenario};
    /// let plan = Plan::build(&PlanOptions {
    ///     scenarios: vec![Scenario::Memory],
    ///     sizes: Some(vec![4096]),
    ///     ..PlanOptions::default()
    /// });
    /// assert!(plan.cells.iter().any(|c| c.key.scenario == Scenario::Memory && c.key.size == 4096));
    /// ```
    pub fn build(options: &PlanOptions) -> Plan {
        use CacheState::*;
        use MechanismName::*;
        let full = options.full;
        let wanted = |s: Scenario| {
            s == Scenario::Limits || options.scenarios.is_empty() || options.scenarios.contains(&s)
        };
        let sizes = |quick: &[u64], whole: &[u64]| -> Vec<u64> {
            match &options.sizes {
                Some(sizes) => sizes.clone(),
                None if full => whole.to_vec(),
                None => quick.to_vec(),
            }
        };
        let mut cells = Vec::new();

        if wanted(Scenario::FileToFile) {
            let warm = sizes(&[MIB, 16 * MIB, 256 * MIB], &powers_of_4(MIB, GIB));
            let cold = sizes(&[64 * MIB], &powers_of_4(MIB, GIB));
            let sized = warm
                .iter()
                .map(|&s| (s, Warm))
                .chain(cold.iter().map(|&s| (s, Cold)));
            for (size, cache) in sized {
                let mut entrants = file_to_file_entrants(false);
                if cache == Cold {
                    entrants.extend(disk_limits_beside(false));
                }
                cells.push(Cell::new(Scenario::FileToFile, size, cache, entrants));
            }
            let chunks: &[u64] = if full {
                &[
                    4 * KIB,
                    16 * KIB,
                    64 * KIB,
                    256 * KIB,
                    MIB,
                    4 * MIB,
                    8 * MIB,
                ]
            } else {
                &[4 * KIB, 64 * KIB, MIB, 8 * MIB]
            };
            for size in sizes(&[64 * MIB], &[64 * MIB]) {
                for &chunk in chunks {
                    let entrants = [ReadWrite, Mmap, IoUring]
                        .into_iter()
                        .map(|m| Entrant::flexio(m, chunk as usize))
                        .collect();
                    cells.push(Cell::new(Scenario::FileToFile, size, Warm, entrants).chunk(chunk));
                }
            }
        }
        if wanted(Scenario::FileToFileDurable) {
            for size in sizes(&[64 * MIB], &[GIB]) {
                let mut entrants = file_to_file_entrants(true);
                entrants.extend(disk_limits_beside(true));
                cells.push(Cell::new(Scenario::FileToFileDurable, size, Cold, entrants));
            }
        }
        let mut paths = vec!["loopback"];
        if options.veth {
            paths.push("veth");
        }
        let net_sizes = sizes(&[64 * MIB], &[MIB, 16 * MIB, 256 * MIB, GIB]);
        if wanted(Scenario::FileToSocket) {
            for path in &paths {
                for &size in &net_sizes {
                    let mut entrants =
                        flexio_entrants(&[Sendfile, Splice, ReadWrite, Mmap, IoUring, Auto]);
                    entrants.extend([
                        Entrant::process_auto(),
                        Entrant::Peer(PeerSpec::socat_send()),
                        Entrant::Peer(PeerSpec::nc_send()),
                        Entrant::Peer(PeerSpec::iperf3(Iperf3Mode::Memory)),
                        Entrant::Peer(PeerSpec::iperf3(Iperf3Mode::ZeroCopy)),
                    ]);
                    entrants.push(network_limit_beside(path));
                    cells.push(Cell::new(Scenario::FileToSocket, size, Warm, entrants).path(path));
                }
            }
        }
        if wanted(Scenario::SocketToFile) {
            for path in &paths {
                for &size in &net_sizes {
                    let mut entrants = flexio_entrants(&[Splice, ReadWrite, IoUring, Auto]);
                    entrants.extend([
                        Entrant::process_auto(),
                        Entrant::Peer(PeerSpec::socat_receive()),
                        Entrant::Peer(PeerSpec::nc_receive()),
                    ]);
                    entrants.push(network_limit_beside(path));
                    cells.push(
                        Cell::new(Scenario::SocketToFile, size, NotApplicable, entrants).path(path),
                    );
                }
            }
        }
        if wanted(Scenario::FileToPipe) {
            for size in sizes(&[64 * MIB], &[MIB, 64 * MIB, GIB]) {
                let mut entrants = flexio_entrants(&[Splice, Sendfile, ReadWrite, Auto]);
                entrants.extend([
                    Entrant::process_auto(),
                    Entrant::Peer(PeerSpec::cat_pipe()),
                    Entrant::Peer(PeerSpec::pv_pipe()),
                ]);
                cells.push(Cell::new(Scenario::FileToPipe, size, Warm, entrants));
            }
        }
        if wanted(Scenario::PipeToFile) {
            for size in sizes(&[64 * MIB], &[MIB, 64 * MIB, GIB]) {
                let mut entrants = flexio_entrants(&[Splice, ReadWrite, Auto]);
                entrants.extend([
                    Entrant::process_auto(),
                    Entrant::Peer(PeerSpec::cat_from_pipe()),
                    Entrant::Peer(PeerSpec::dd_from_pipe()),
                ]);
                cells.push(Cell::new(
                    Scenario::PipeToFile,
                    size,
                    NotApplicable,
                    entrants,
                ));
            }
        }
        if wanted(Scenario::Memory) {
            let quick = [64, 4 * KIB, MIB, 64 * MIB];
            let whole = [
                64,
                4 * KIB,
                64 * KIB,
                MIB,
                16 * MIB,
                64 * MIB,
                256 * MIB,
                GIB,
            ];
            for size in sizes(&quick, &whole) {
                let entrants = vec![
                    Entrant::flexio(ReadWrite, DEFAULT_CHUNK),
                    Entrant::flexio(Auto, DEFAULT_CHUNK),
                    Entrant::Limit(Probe::Memcpy),
                ];
                cells.push(Cell::new(Scenario::Memory, size, NotApplicable, entrants));
            }
        }
        if wanted(Scenario::Parallel) {
            for size in sizes(&[64 * MIB], &[64 * MIB]) {
                for flows in [1, 2, 4, 8] {
                    let entrants = flexio_entrants(&[CopyFileRange, ReadWrite]);
                    cells.push(Cell::new(Scenario::Parallel, size, Warm, entrants).flows(flows));
                }
                // Cue's Tables 6-7: 1-4 file -> socket transfers at once,
                // in-kernel (sendfile) against read/write.
                for flows in 1..=4 {
                    let entrants = flexio_entrants(&[Sendfile, ReadWrite]);
                    cells.push(
                        Cell::new(Scenario::Parallel, size, Warm, entrants)
                            .flows(flows)
                            .path("loopback"),
                    );
                }
            }
        }
        if wanted(Scenario::Meter) {
            for size in sizes(&[256 * MIB], &[256 * MIB]) {
                let mut entrants = flexio_entrants(&[Sendfile, ReadWrite, Splice, Mmap]);
                // Beside them, with the meter running and nothing pinned
                // as they are: measured apart, pinned, it was beaten 2×.
                entrants.push(network_limit_beside("loopback"));
                cells.push(Cell::new(Scenario::Meter, size, Warm, entrants).path("loopback"));
            }
        }

        if options.auto_builtin {
            for cell in &mut cells {
                let auto = cell.entrants.iter().position(|e| {
                    matches!(
                        e,
                        Entrant::Flexio {
                            mechanism: Auto,
                            builtin_table: false,
                            ..
                        }
                    )
                });
                if let Some(at) = auto {
                    cell.entrants.insert(at + 1, Entrant::auto_builtin());
                }
            }
        }

        // The limits go first, sized to what the plan moves.
        let largest_file = cells
            .iter()
            .filter(|c| c.key.scenario != Scenario::Memory)
            .map(|c| c.key.size)
            .max()
            .unwrap_or(0);
        let disk = largest_file.clamp(256 * MIB, GIB);
        // memcpy at every size a cell bounded by it moves (warm files,
        // pipes): a 1 MiB copy stays in the CPU's caches, and held against
        // a 256 MiB memcpy from memory it "beat" the limit.
        let mut memcpy_sizes: Vec<u64> = cells
            .iter()
            .filter(|c| {
                c.key.cache != Cold
                    && c.key.path.is_empty()
                    && !matches!(c.key.scenario, Scenario::Memory | Scenario::Meter)
            })
            .map(|c| c.key.size)
            .chain([256 * MIB])
            .collect();
        memcpy_sizes.sort_unstable();
        memcpy_sizes.dedup();
        let mut limits: Vec<Cell> = memcpy_sizes
            .into_iter()
            .map(|size| {
                Cell::new(
                    Scenario::Limits,
                    size,
                    NotApplicable,
                    vec![Entrant::Limit(Probe::Memcpy)],
                )
            })
            .collect();
        limits.push(Cell::new(
            Scenario::Limits,
            disk,
            Cold,
            [
                Probe::DiskRead,
                Probe::DiskWrite,
                Probe::DiskDirectRead,
                Probe::DiskDirectWrite,
                Probe::DiskWriteFsync,
                Probe::FioRead,
                Probe::FioWrite,
                Probe::FioCopy,
            ]
            .into_iter()
            .map(Entrant::Limit)
            .collect(),
        ));
        if cells.iter().any(|c| !c.key.path.is_empty()) {
            let bytes = if full { GIB } else { 256 * MIB };
            limits.push(
                Cell::new(
                    Scenario::Limits,
                    bytes,
                    NotApplicable,
                    vec![Entrant::Limit(Probe::Iperf3Loopback)],
                )
                .path("loopback"),
            );
        }
        if cells.iter().any(|c| c.key.path == "veth") {
            let bytes = if full { GIB } else { 256 * MIB };
            limits.push(
                Cell::new(
                    Scenario::Limits,
                    bytes,
                    NotApplicable,
                    vec![Entrant::Limit(Probe::Iperf3Veth)],
                )
                .path("veth"),
            );
        }
        limits.extend(cells);
        Plan { cells: limits }
    }

    /// Timed runs in all, warm-ups included.
    pub fn runs(&self, warmups: u32, rounds: u32) -> usize {
        self.cells
            .iter()
            .map(|c| c.entrants.len() * (warmups + rounds) as usize)
            .sum()
    }

    /// A rough estimate of the wall time of the run (guessed rates for
    /// this kind of machine, plus the per-run setup).
    pub fn estimate(&self, warmups: u32, rounds: u32) -> Duration {
        let per_round: f64 = self
            .cells
            .iter()
            .map(|cell| {
                let bytes = (cell.key.size * u64::from(cell.key.flows)) as f64;
                let rate = match (cell.key.scenario, cell.key.cache) {
                    (Scenario::Memory, _) => 4e9,
                    (Scenario::FileToFileDurable, _) => 0.4e9,
                    (_, CacheState::Cold) => 0.7e9,
                    (Scenario::Parallel, _) => 1.0e9,
                    _ => 1.3e9,
                };
                // Short memory and warm file copies repeat for 2 ms.
                let repeats = cell.key.scenario == Scenario::Memory
                    || (cell.key.scenario == Scenario::FileToFile
                        && cell.key.cache == CacheState::Warm);
                let per_run = 0.006 + bytes.max(if repeats { 2e-3 * rate } else { 0.0 }) / rate;
                per_run * cell.entrants.len() as f64
            })
            .sum();
        Duration::from_secs_f64(per_round * f64::from(warmups + rounds))
    }

    /// The plan as printed before a run: scenarios, cells, runs, time.
    pub fn describe(&self, warmups: u32, rounds: u32) -> String {
        let mut text = String::new();
        let mut scenarios: Vec<Scenario> = Vec::new();
        for cell in &self.cells {
            if !scenarios.contains(&cell.key.scenario) {
                scenarios.push(cell.key.scenario);
            }
        }
        for scenario in scenarios {
            let cells: Vec<&Cell> = self
                .cells
                .iter()
                .filter(|c| c.key.scenario == scenario)
                .collect();
            let entrants: usize = cells.iter().map(|c| c.entrants.len()).sum();
            let _ = writeln!(
                text,
                "  {scenario:<22} {:>3} cells, {:>4} contender slots",
                cells.len(),
                entrants
            );
        }
        let _ = writeln!(
            text,
            "  {} cells, {} timed runs ({warmups} warm-up + {rounds} counted rounds each, interleaved), about {} s",
            self.cells.len(),
            self.runs(warmups, rounds),
            self.estimate(warmups, rounds).as_secs()
        );
        text
    }
}

fn powers_of_4(from: u64, to: u64) -> Vec<u64> {
    std::iter::successors(Some(from), |s| Some(s * 4))
        .take_while(|s| *s <= to)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_file_sizes_are_powers_of_four() {
        assert_eq!(
            powers_of_4(MIB, GIB),
            vec![MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, GIB]
        );
    }

    #[test]
    fn sizes_replace_every_scenario_size() {
        let plan = Plan::build(&PlanOptions {
            scenarios: vec![Scenario::FileToFile, Scenario::FileToFileDurable],
            sizes: Some(vec![GIB]),
            ..PlanOptions::default()
        });
        assert!(plan
            .cells
            .iter()
            .filter(|c| c.key.scenario != Scenario::Limits)
            .all(|c| c.key.size == GIB));
        assert!(plan
            .cells
            .iter()
            .any(|c| c.key.scenario == Scenario::FileToFileDurable));
    }

    #[test]
    fn every_cell_with_a_peer_runs_flexio_copy_as_a_process_and_bounded_cells_their_limit() {
        for full in [false, true] {
            let plan = Plan::build(&PlanOptions {
                full,
                veth: true,
                ..PlanOptions::default()
            });
            let has = |cell: &Cell, probe: Probe| cell.entrants.contains(&Entrant::Limit(probe));
            for cell in &plan.cells {
                let label = cell.label();
                let peers = cell
                    .entrants
                    .iter()
                    .filter(|e| matches!(e, Entrant::Peer(_)));
                if peers.count() > 0 {
                    assert!(cell.entrants.contains(&Entrant::process_auto()), "{label}");
                }
                if cell.key.scenario == Scenario::Limits {
                    continue;
                }
                if cell.key.cache == CacheState::Cold {
                    assert!(has(cell, Probe::DiskRead), "{label}");
                }
                if cell.key.scenario.durable() {
                    assert!(has(cell, Probe::DiskWrite), "{label}");
                }
                if cell.key.scenario.crosses_a_socket() || cell.key.scenario == Scenario::Meter {
                    let probe = match cell.key.path.as_str() {
                        "veth" => Probe::Iperf3Veth,
                        _ => Probe::Iperf3Loopback,
                    };
                    assert!(has(cell, probe), "{label}");
                }
            }
            let disk = plan
                .cells
                .iter()
                .find(|c| c.key.scenario == Scenario::Limits && c.key.cache == CacheState::Cold)
                .unwrap();
            assert!(disk.entrants.contains(&Entrant::Limit(Probe::DiskRead)));
            assert!(disk.entrants.contains(&Entrant::Limit(Probe::DiskWrite)));
        }
    }

    #[test]
    fn quick_plan_has_every_scenario_and_no_veth() {
        let plan = Plan::build(&PlanOptions::default());
        for scenario in Scenario::ALL {
            assert!(
                plan.cells.iter().any(|c| c.key.scenario == scenario),
                "{scenario:?}"
            );
        }
        assert!(plan.cells.iter().all(|c| c.key.path != "veth"));
    }
}
