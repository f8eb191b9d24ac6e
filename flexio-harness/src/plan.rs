//! What a bench run measures: scenarios expand into *cells* (scenario,
//! size, chunk, cache state, flows, network path), each with the
//! *entrants* that compete in it — flexio mechanisms, standard tools and
//! physical limits.
//!
//! The quick plan (the default) fits in about two minutes on a 2-core
//! machine; `--full` runs the whole matrix (about half an hour); `--sizes`
//! replaces the size axis of every scenario so that, say, only the 1 GiB
//! cells run.

use flexio::profile::FlowKind;
use std::fmt::Write as _;
use std::time::Duration;

use crate::model::CacheState;
pub use crate::model::Scenario;

mod cell;
mod limit_cells;
mod scenarios;
pub use cell::{label, Cell, Entrant};
use limit_cells::{add_auto_builtin, limit_cells};
pub use scenarios::copy_kernel_entrants;
pub use scenarios::{ScenarioPlan, MATRIX};

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

/// The axes a plan's scenarios expand on: which scenarios, sizes and
/// network paths the options ask for.
pub struct Axes<'a> {
    options: &'a PlanOptions,
}

impl<'a> Axes<'a> {
    /// The axes of `options`.
    pub fn new(options: &'a PlanOptions) -> Self {
        Axes { options }
    }

    /// Whether `scenario` runs (the limits always do).
    pub fn wanted(&self, scenario: Scenario) -> bool {
        scenario == Scenario::Limits
            || self.options.scenarios.is_empty()
            || self.options.scenarios.contains(&scenario)
    }

    /// The whole matrix rather than the quick one.
    pub fn full(&self) -> bool {
        self.options.full
    }

    /// The sizes asked for, else `whole` for the full matrix, else `quick`.
    pub fn sizes(&self, quick: &[u64], whole: &[u64]) -> Vec<u64> {
        match &self.options.sizes {
            Some(sizes) => sizes.clone(),
            None if self.options.full => whole.to_vec(),
            None => quick.to_vec(),
        }
    }

    /// The sizes of the cells that cross a socket.
    pub fn net_sizes(&self) -> Vec<u64> {
        self.sizes(&[64 * MIB], &[MIB, 16 * MIB, 256 * MIB, GIB])
    }

    /// Loopback, and the veth pair when asked for.
    pub fn paths(&self) -> Vec<&'static str> {
        let mut paths = vec!["loopback"];
        if self.options.veth {
            paths.push("veth");
        }
        paths
    }
}

/// The cells of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// In the order they run.
    pub cells: Vec<Cell>,
}

impl Plan {
    /// The cells for `options`.
    ///
    /// # Examples
    /// ```
    /// use flexio::profile::FlowKind;
    /// use flexio_harness::plan::{Plan, PlanOptions, Scenario};
    /// let plan = Plan::build(&PlanOptions {
    ///     scenarios: vec![Scenario::Flow(FlowKind::MemoryToMemory)],
    ///     sizes: Some(vec![4096]),
    ///     ..PlanOptions::default()
    /// });
    /// assert!(plan.cells.iter().any(|c| c.key.scenario == Scenario::Flow(FlowKind::MemoryToMemory) && c.key.size == 4096));
    /// ```
    pub fn build(options: &PlanOptions) -> Plan {
        let axes = Axes::new(options);
        let mut cells: Vec<Cell> = scenarios::MATRIX
            .iter()
            .filter(|s| axes.wanted(s.scenario()))
            .flat_map(|s| s.cells(&axes))
            .collect();
        if options.auto_builtin {
            add_auto_builtin(&mut cells);
        }
        // The limits go first, sized to what the plan moves.
        let mut all = limit_cells(&cells, options.full);
        all.extend(cells);
        Plan { cells: all }
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
                // A socket pair's size is its files' total.
                let flows = match cell.key.scenario {
                    Scenario::SocketPair => 1,
                    _ => cell.key.flows,
                };
                let bytes = (cell.key.size * u64::from(flows)) as f64;
                let rate = match (cell.key.scenario, cell.key.cache) {
                    (Scenario::Flow(FlowKind::MemoryToMemory), _) => 4e9,
                    // Its 4 KiB buffers and maps, both ends on this machine.
                    (Scenario::SocketPair, _) => 0.2e9,
                    (Scenario::Flow(FlowKind::FileToFileDurable), _) => 0.4e9,
                    (_, CacheState::Cold) => 0.7e9,
                    (Scenario::Parallel, _) => 1.0e9,
                    _ => 1.3e9,
                };
                // Short memory and warm file copies repeat for 2 ms.
                let repeats = cell.key.scenario == Scenario::Flow(FlowKind::MemoryToMemory)
                    || (cell.key.scenario == Scenario::Flow(FlowKind::FileToFile)
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

#[cfg(test)]
mod tests {
    use super::scenarios::powers_of_4;
    use super::*;
    use crate::limits::Probe;

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
            scenarios: vec![
                Scenario::Flow(FlowKind::FileToFile),
                Scenario::Flow(FlowKind::FileToFileDurable),
            ],
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
            .any(|c| c.key.scenario == Scenario::Flow(FlowKind::FileToFileDurable)));
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
