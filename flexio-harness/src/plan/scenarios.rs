//! One [`ScenarioPlan`] per scenario of the matrix: the cells it adds to
//! a plan, on the axes ([`Axes`]) the options ask for.

use flexio::profile::FlowKind;
use flexio::{CopyKernel, MechanismName, Params};

use super::{Axes, Cell, Entrant, Scenario, GIB, KIB, MIB};
use crate::limits::Probe;
use crate::model::CacheState::*;
use crate::peers::{Iperf3Mode, PeerSpec};

/// A scenario of the matrix: what it measures, as cells.
pub trait ScenarioPlan: Sync {
    /// The scenario whose cells these are.
    fn scenario(&self) -> Scenario;
    /// Its cells on `axes`, in the order they run.
    fn cells(&self, axes: &Axes) -> Vec<Cell>;
}

/// Every scenario of the matrix, in the order a plan runs them (the
/// limits are sized to these and run first).
pub static MATRIX: [&dyn ScenarioPlan; 9] = [
    &FileToFile,
    &FileToFileDurable,
    &FileToSocket,
    &SocketToFile,
    &FileToPipe,
    &PipeToFile,
    &Memory,
    &Parallel,
    &Meter,
];

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

/// Warm copies by size, a cold one, and Fig 4.11-style chunk sweeps.
struct FileToFile;

impl ScenarioPlan for FileToFile {
    fn scenario(&self) -> Scenario {
        Scenario::Flow(FlowKind::FileToFile)
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        use MechanismName::*;
        let warm = axes.sizes(&[MIB, 16 * MIB, 256 * MIB], &powers_of_4(MIB, GIB));
        let cold = axes.sizes(&[64 * MIB], &powers_of_4(MIB, GIB));
        let sized = warm
            .iter()
            .map(|&s| (s, Warm))
            .chain(cold.iter().map(|&s| (s, Cold)));
        let mut cells = Vec::new();
        for (size, cache) in sized {
            let mut entrants = file_to_file_entrants(false);
            if cache == Cold {
                entrants.extend(disk_limits_beside(false));
            }
            cells.push(Cell::new(
                Scenario::Flow(FlowKind::FileToFile),
                size,
                cache,
                entrants,
            ));
        }
        let chunks: &[u64] = if axes.full() {
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
        for size in axes.sizes(&[64 * MIB], &[64 * MIB]) {
            for &chunk in chunks {
                let entrants = [ReadWrite, Mmap, IoUring]
                    .into_iter()
                    .map(|m| Entrant::flexio(m, chunk as usize))
                    .collect();
                cells.push(
                    Cell::new(Scenario::Flow(FlowKind::FileToFile), size, Warm, entrants)
                        .chunk(chunk),
                );
            }
        }
        cells
    }
}

/// Cold copies synced to the disk.
struct FileToFileDurable;

impl ScenarioPlan for FileToFileDurable {
    fn scenario(&self) -> Scenario {
        Scenario::Flow(FlowKind::FileToFileDurable)
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        axes.sizes(&[64 * MIB], &[GIB])
            .into_iter()
            .map(|size| {
                let mut entrants = file_to_file_entrants(true);
                entrants.extend(disk_limits_beside(true));
                Cell::new(
                    Scenario::Flow(FlowKind::FileToFileDurable),
                    size,
                    Cold,
                    entrants,
                )
            })
            .collect()
    }
}

/// A warm file sent over each network path.
struct FileToSocket;

impl ScenarioPlan for FileToSocket {
    fn scenario(&self) -> Scenario {
        Scenario::Flow(FlowKind::FileToSocket)
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        use MechanismName::*;
        let mut cells = Vec::new();
        for path in axes.paths() {
            for size in axes.net_sizes() {
                let mut entrants =
                    flexio_entrants(&[Sendfile, SendZc, Splice, ReadWrite, Mmap, IoUring, Auto]);
                entrants.extend([
                    Entrant::process_auto(),
                    Entrant::Peer(PeerSpec::socat_send()),
                    Entrant::Peer(PeerSpec::nc_send()),
                    Entrant::Peer(PeerSpec::iperf3(Iperf3Mode::Memory)),
                    Entrant::Peer(PeerSpec::iperf3(Iperf3Mode::ZeroCopy)),
                ]);
                entrants.push(network_limit_beside(path));
                cells.push(
                    Cell::new(Scenario::Flow(FlowKind::FileToSocket), size, Warm, entrants)
                        .path(path),
                );
            }
        }
        cells
    }
}

/// A socket received into a file over each network path.
struct SocketToFile;

impl ScenarioPlan for SocketToFile {
    fn scenario(&self) -> Scenario {
        Scenario::Flow(FlowKind::SocketToFile)
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        use MechanismName::*;
        let mut cells = Vec::new();
        for path in axes.paths() {
            for size in axes.net_sizes() {
                let mut entrants = flexio_entrants(&[Splice, ReadWrite, Mmap, IoUring, Auto]);
                entrants.extend([
                    Entrant::process_auto(),
                    Entrant::Peer(PeerSpec::socat_receive()),
                    Entrant::Peer(PeerSpec::nc_receive()),
                ]);
                entrants.push(network_limit_beside(path));
                cells.push(
                    Cell::new(
                        Scenario::Flow(FlowKind::SocketToFile),
                        size,
                        NotApplicable,
                        entrants,
                    )
                    .path(path),
                );
            }
        }
        cells
    }
}

/// A warm file into a pipe.
struct FileToPipe;

impl ScenarioPlan for FileToPipe {
    fn scenario(&self) -> Scenario {
        Scenario::Flow(FlowKind::FileToPipe)
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        use MechanismName::*;
        axes.sizes(&[64 * MIB], &[MIB, 64 * MIB, GIB])
            .into_iter()
            .map(|size| {
                let mut entrants = flexio_entrants(&[Splice, Sendfile, ReadWrite, Auto]);
                entrants.extend([
                    Entrant::process_auto(),
                    Entrant::Peer(PeerSpec::cat_pipe()),
                    Entrant::Peer(PeerSpec::pv_pipe()),
                ]);
                Cell::new(Scenario::Flow(FlowKind::FileToPipe), size, Warm, entrants)
            })
            .collect()
    }
}

/// A pipe into a file.
struct PipeToFile;

impl ScenarioPlan for PipeToFile {
    fn scenario(&self) -> Scenario {
        Scenario::Flow(FlowKind::PipeToFile)
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        use MechanismName::*;
        axes.sizes(&[64 * MIB], &[MIB, 64 * MIB, GIB])
            .into_iter()
            .map(|size| {
                let mut entrants = flexio_entrants(&[Splice, ReadWrite, Auto]);
                entrants.extend([
                    Entrant::process_auto(),
                    Entrant::Peer(PeerSpec::cat_from_pipe()),
                    Entrant::Peer(PeerSpec::dd_from_pipe()),
                ]);
                Cell::new(
                    Scenario::Flow(FlowKind::PipeToFile),
                    size,
                    NotApplicable,
                    entrants,
                )
            })
            .collect()
    }
}

/// Memory to memory beside memcpy, by size: read-write with each copy
/// kernel this CPU has (TPIL's PIO stores on host memory), `auto`, and
/// the C library's memcpy as the limit.
struct Memory;

/// `read-write` with every copy kernel this CPU has but `memcpy` (which
/// the default `read-write` entrant is).
///
/// # Examples
/// ```
/// use flexio_harness::model::Contender;
/// let entrants = flexio_harness::plan::copy_kernel_entrants();
/// assert!(entrants
///     .iter()
///     .all(|e| matches!(e.contender(), Contender::Flexio { .. })));
/// ```
pub fn copy_kernel_entrants() -> Vec<Entrant> {
    CopyKernel::available()
        .into_iter()
        .filter(|k| *k != CopyKernel::Memcpy)
        .map(|copy_kernel| {
            Entrant::with_params(
                MechanismName::ReadWrite,
                Params {
                    chunk: DEFAULT_CHUNK,
                    copy_kernel,
                    ..Params::default()
                },
            )
        })
        .collect()
}

impl ScenarioPlan for Memory {
    fn scenario(&self) -> Scenario {
        Scenario::Flow(FlowKind::MemoryToMemory)
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        use MechanismName::*;
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
        axes.sizes(&quick, &whole)
            .into_iter()
            .map(|size| {
                let mut entrants = vec![Entrant::flexio(ReadWrite, DEFAULT_CHUNK)];
                entrants.extend(copy_kernel_entrants());
                entrants.extend([
                    Entrant::flexio(Auto, DEFAULT_CHUNK),
                    Entrant::Limit(Probe::Memcpy),
                ]);
                Cell::new(
                    Scenario::Flow(FlowKind::MemoryToMemory),
                    size,
                    NotApplicable,
                    entrants,
                )
            })
            .collect()
    }
}

/// Several flows at once: file copies, and Cue's Tables 6-7 (1-4 file ->
/// socket transfers, in-kernel sendfile against read/write).
struct Parallel;

impl ScenarioPlan for Parallel {
    fn scenario(&self) -> Scenario {
        Scenario::Parallel
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        use MechanismName::*;
        let mut cells = Vec::new();
        for size in axes.sizes(&[64 * MIB], &[64 * MIB]) {
            for flows in [1, 2, 4, 8] {
                let entrants = flexio_entrants(&[CopyFileRange, ReadWrite]);
                cells.push(Cell::new(Scenario::Parallel, size, Warm, entrants).flows(flows));
            }
            for flows in 1..=4 {
                let entrants = flexio_entrants(&[Sendfile, ReadWrite]);
                cells.push(
                    Cell::new(Scenario::Parallel, size, Warm, entrants)
                        .flows(flows)
                        .path("loopback"),
                );
            }
        }
        cells
    }
}

/// File -> socket with the CPU-bound meter beside it: the CPU each
/// mechanism leaves to others.
struct Meter;

impl ScenarioPlan for Meter {
    fn scenario(&self) -> Scenario {
        Scenario::Meter
    }

    fn cells(&self, axes: &Axes) -> Vec<Cell> {
        use MechanismName::*;
        axes.sizes(&[256 * MIB], &[256 * MIB])
            .into_iter()
            .map(|size| {
                let mut entrants = flexio_entrants(&[Sendfile, ReadWrite, Splice, Mmap]);
                // Beside them, with the meter running and nothing pinned
                // as they are: measured apart, pinned, it was beaten 2×.
                entrants.push(network_limit_beside("loopback"));
                Cell::new(Scenario::Meter, size, Warm, entrants).path("loopback")
            })
            .collect()
    }
}

/// `from`, `4 from`, `16 from`, … up to `to`.
pub(super) fn powers_of_4(from: u64, to: u64) -> Vec<u64> {
    std::iter::successors(Some(from), |s| Some(s * 4))
        .take_while(|s| *s <= to)
        .collect()
}
