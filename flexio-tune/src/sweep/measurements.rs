//! From bench results to the selector's inputs: the conditions a flow
//! kind is measured under, the candidate a contender ran, and a summary
//! as a [`Measurement`].

use flexio::profile::FlowKind;
use flexio::{CopyKernel, MechanismName, Params};

use crate::select::{Candidate, Measurement};
use flexio_harness::{CacheState, Contender, Summary};

use super::GIB;

/// The cache state and network path under which the tuner measures a
/// flow kind (its cells are those of [`Scenario::Flow`](flexio_harness::Scenario::Flow) of that kind);
/// `None` only for [`FlowKind::Other`], which is never tuned.
///
/// # Examples
/// ```
/// use flexio::profile::FlowKind;
/// use flexio_harness::CacheState;
/// let (cache, path) = flexio_tune::sweep::conditions(FlowKind::SocketToFile).unwrap();
/// assert_eq!((cache, path), (CacheState::NotApplicable, "loopback"));
/// assert_eq!(flexio_tune::sweep::conditions(FlowKind::Other), None);
/// ```
pub fn conditions(kind: FlowKind) -> Option<(CacheState, &'static str)> {
    match kind {
        FlowKind::FileToFile | FlowKind::FileToPipe => Some((CacheState::Warm, "")),
        FlowKind::FileToFileDurable => Some((CacheState::Cold, "")),
        FlowKind::FileToSocket => Some((CacheState::Warm, "loopback")),
        FlowKind::SocketToFile => Some((CacheState::NotApplicable, "loopback")),
        FlowKind::PipeToFile | FlowKind::MemoryToMemory => Some((CacheState::NotApplicable, "")),
        _ => None,
    }
}

/// The mechanism and parameters a flexio contender ran with, in the
/// engine or as a `flexio copy --via` process (`None` for peers, limits
/// and `auto`).
pub fn candidate_of(contender: &Contender) -> Option<Candidate> {
    let (Contender::Flexio {
        mechanism,
        chunk,
        direct,
        queue_depth,
        pipe_size,
        ..
    }
    | Contender::Process {
        mechanism,
        chunk,
        direct,
        queue_depth,
        pipe_size,
    }) = contender
    else {
        return None;
    };
    let mechanism = *mechanism;
    // Only the engine runs memory flows, so only it has a copy kernel.
    let copy_kernel = match contender {
        Contender::Flexio { copy_kernel, .. } => *copy_kernel,
        _ => CopyKernel::Memcpy,
    };
    (mechanism != MechanismName::Auto).then_some(Candidate {
        mechanism,
        params: Params {
            chunk: *chunk as usize,
            queue_depth: *queue_depth,
            pipe_size: *pipe_size as usize,
            direct: *direct,
            copy_kernel,
        },
    })
}

/// A summary of the bench as a measurement of the tuner: its flow kind
/// from the scenario, its candidate from the contender, CPU per byte as
/// the larger of the flow thread's own CPU and the host's busy CPU during
/// the runs. Each misses a part: the thread's rusage never sees the work
/// io_uring's workers and the kernel's writeback threads do for the flow
/// (buffered io-uring writes to ext4 run in io-wq threads, and once cost
/// 4 CPU-seconds for a 1 GiB copy that charged its thread almost none),
/// and the host's 10 ms ticks miss a flow shorter than that. `None` for
/// what is not a flexio
/// candidate of a tuned kind, and for a candidate that did not run as
/// asked (the kernel refused it and another mechanism moved the bytes).
///
/// # Examples
/// ```
/// use flexio::profile::FlowKind;
/// use flexio_harness::{CacheState, CellKey, Contender, Scenario, Summary};
/// let summary = Summary {
///     cell: CellKey { scenario: Scenario::Flow(FlowKind::FileToPipe), size: 1 << 20, chunk: 0,
///                     cache: CacheState::Warm, flows: 1, path: String::new(),
///                     schedule: None, connection_per_file: false },
///     contender: Contender::Flexio { mechanism: flexio::MechanismName::Splice, chunk: 1 << 20,
///         direct: false, queue_depth: 32, pipe_size: 1 << 20, builtin_table: false,
///         copy_kernel: Default::default() },
///     runs: 3, median_bps: 2e9, min_bps: 1.8e9, max_bps: 2.2e9, spread_bps: Some((1.8e9, 2.2e9)),
///     cpu_s_per_gib: 0.5, sys_s_per_gib: 0.4, host_cpu_s_per_gib: 1.0, switches_per_gib: 10.0,
///     involuntary_per_gib: None,
///     ratio_to_best_peer: None, best_peer_round_range: None, ratios_to_peers: Vec::new(),
///     ratio_to_best_fixed: None,
///     best_fixed_round_range: None, ratio_to_builtin: None,
///     ratio_to_limit: None, limit_note: None, host_cpu_below_resolution: None,
///     mechanism_used: Some("splice".into()),
///     resident_percent: Some(100.0), meter_kept: None,
///     flow_median_bps: None, jain: None,
/// };
/// let m = flexio_tune::sweep::measurement(&summary).unwrap();
/// assert_eq!(m.kind, flexio::profile::FlowKind::FileToPipe);
/// assert_eq!(m.candidate.params.chunk, 1 << 20);
/// // The host was busier than the flow's thread: its CPU counts.
/// assert!((m.cpu_ns_per_byte - 1e9 / (1u64 << 30) as f64).abs() < 1e-12);
/// ```
pub fn measurement(summary: &Summary) -> Option<Measurement> {
    let kind = summary.cell.scenario.flow()?;
    let candidate = candidate_of(&summary.contender)?;
    if summary
        .mechanism_used
        .as_deref()
        .is_some_and(|used| used != candidate.mechanism.as_str())
    {
        return None;
    }
    let cpu_s_per_gib = summary.cpu_s_per_gib.max(summary.host_cpu_s_per_gib);
    let cpu_ns_per_byte = cpu_s_per_gib * 1e9 / GIB as f64;
    Some(Measurement {
        kind,
        size: summary.cell.size,
        candidate,
        median_bps: summary.median_bps,
        min_bps: summary.min_bps,
        max_bps: summary.max_bps,
        cpu_ns_per_byte: if cpu_ns_per_byte.is_finite() {
            cpu_ns_per_byte
        } else {
            0.0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{candidates, MIB};
    use flexio_harness::{CellKey, Entrant, Scenario};

    #[test]
    fn candidates_survive_the_round_trip_through_a_contender() {
        for candidate in candidates(FlowKind::FileToFile, true) {
            let entrant = Entrant::with_params(candidate.mechanism, candidate.params.clone());
            assert_eq!(candidate_of(&entrant.contender()), Some(candidate));
        }
        assert_eq!(candidate_of(&Entrant::auto_builtin().contender()), None);
    }

    #[test]
    fn summaries_that_fell_back_are_not_measurements() {
        let summary = |used: &str| Summary {
            cell: CellKey {
                scenario: Scenario::Flow(FlowKind::FileToFile),
                size: MIB,
                chunk: 0,
                cache: CacheState::Warm,
                flows: 1,
                path: String::new(),
                schedule: None,
                connection_per_file: false,
            },
            contender: Entrant::flexio(MechanismName::CopyFileRange, 256 << 10).contender(),
            runs: 3,
            median_bps: 1e9,
            min_bps: 0.5e9,
            max_bps: 1.5e9,
            spread_bps: Some((0.5e9, 1.5e9)),
            cpu_s_per_gib: 1.0,
            sys_s_per_gib: 1.0,
            host_cpu_s_per_gib: 2.0,
            switches_per_gib: 3.0,
            involuntary_per_gib: None,
            ratio_to_best_peer: None,
            best_peer_round_range: None,
            ratios_to_peers: Vec::new(),
            ratio_to_best_fixed: None,
            best_fixed_round_range: None,
            ratio_to_builtin: None,
            ratio_to_limit: None,
            limit_note: None,
            host_cpu_below_resolution: None,
            mechanism_used: Some(used.into()),
            resident_percent: None,
            meter_kept: None,
            flow_median_bps: None,
            jain: None,
        };
        let measured = measurement(&summary("copy-file-range")).unwrap();
        assert_eq!(measured.kind, FlowKind::FileToFile);
        assert_eq!(measured.size, MIB);
        assert_eq!(measured.candidate.mechanism, MechanismName::CopyFileRange);
        assert_eq!(measured.median_bps, 1e9);
        assert_eq!(measured.spread(), 1.0);
        // The host's CPU (2 s/GiB) exceeds the thread's (1 s/GiB).
        assert!((measured.cpu_ns_per_byte - 2e9 / GIB as f64).abs() < 1e-12);
        assert_eq!(measurement(&summary("read-write")), None);
    }
}
