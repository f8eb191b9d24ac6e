//! The cells that measure the machine's limits (memcpy, the disk, the
//! network), sized to what the scenarios' cells move, and `auto
//! (built-in)` beside every `auto` when a tuned profile is in force.

use flexio::profile::FlowKind;
use flexio::MechanismName;

use super::{Cell, Entrant, Scenario, GIB, MIB};
use crate::limits::Probe;
use crate::model::CacheState::{Cold, NotApplicable};

/// Puts `auto (built-in)` right after every `auto` that consults the
/// tuned profile, so that the two are compared in the same rounds.
pub(super) fn add_auto_builtin(cells: &mut [Cell]) {
    for cell in cells {
        let auto = cell.entrants.iter().position(|e| {
            matches!(
                e,
                Entrant::Flexio {
                    mechanism: MechanismName::Auto,
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

/// The limit cells for `cells`: memcpy at each size they move, the disk
/// probes, and iperf3 on each network path they use.
pub(super) fn limit_cells(cells: &[Cell], full: bool) -> Vec<Cell> {
    let mut limits = memcpy_cells(cells);
    limits.push(disk_cell(cells));
    let bytes = if full { GIB } else { 256 * MIB };
    if cells.iter().any(|c| !c.key.path.is_empty()) {
        let probe = vec![Entrant::Limit(Probe::Iperf3Loopback)];
        limits.push(Cell::new(Scenario::Limits, bytes, NotApplicable, probe).path("loopback"));
    }
    if cells.iter().any(|c| c.key.path == "veth") {
        let probe = vec![Entrant::Limit(Probe::Iperf3Veth)];
        limits.push(Cell::new(Scenario::Limits, bytes, NotApplicable, probe).path("veth"));
    }
    limits
}

/// memcpy at every size a cell bounded by it moves (warm files, pipes): a
/// 1 MiB copy stays in the CPU's caches, and held against a 256 MiB
/// memcpy from memory it "beat" the limit.
fn memcpy_cells(cells: &[Cell]) -> Vec<Cell> {
    let mut sizes: Vec<u64> = cells
        .iter()
        .filter(|c| {
            c.key.cache != Cold
                && c.key.path.is_empty()
                && !matches!(
                    c.key.scenario,
                    Scenario::Flow(FlowKind::MemoryToMemory) | Scenario::Meter
                )
        })
        .map(|c| c.key.size)
        .chain([256 * MIB])
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|size| {
            let probe = vec![Entrant::Limit(Probe::Memcpy)];
            Cell::new(Scenario::Limits, size, NotApplicable, probe)
        })
        .collect()
}

/// The disk probes, on a file as large as the largest the plan moves
/// (256 MiB to 1 GiB).
fn disk_cell(cells: &[Cell]) -> Cell {
    let largest_file = cells
        .iter()
        .filter(|c| c.key.scenario != Scenario::Flow(FlowKind::MemoryToMemory))
        .map(|c| c.key.size)
        .max()
        .unwrap_or(0);
    let probes = [
        Probe::DiskRead,
        Probe::DiskWrite,
        Probe::DiskDirectRead,
        Probe::DiskDirectWrite,
        Probe::DiskWriteFsync,
        Probe::FioRead,
        Probe::FioWrite,
        Probe::FioCopy,
    ];
    Cell::new(
        Scenario::Limits,
        largest_file.clamp(256 * MIB, GIB),
        Cold,
        probes.into_iter().map(Entrant::Limit).collect(),
    )
}
