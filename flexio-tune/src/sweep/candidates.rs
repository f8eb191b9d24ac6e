//! The candidates `flexio tune` measures: every mechanism serving a flow
//! kind × the parameters it reads, one varied at a time from the defaults.

use flexio::profile::FlowKind;
use flexio::{CopyKernel, MechanismName, Params, Reads};

use super::{KIB, MIB};
use crate::select::Candidate;

/// Every mechanism serving `kind` with its parameter variants, one
/// parameter varied at a time from the defaults, and only the parameters
/// the mechanism reads (see [`Reads`]): chunk sizes for read-write, mmap,
/// sendfile, send-zc, direct and io-uring; queue depths and O_DIRECT (where
/// a side is a file and [`sweeps_direct`] says so) for io-uring; pipe sizes
/// for splice; every copy kernel this CPU has for memory to memory (TPIL's
/// PIO stores against `memcpy`); copy-file-range once. Sweeping a parameter a
/// mechanism ignores would only measure the same code twice and let noise
/// pick between the twins.
pub fn candidates(kind: FlowKind, full: bool) -> Vec<Candidate> {
    let (source, sink) = kind.representative_pair();
    let chunks: &[u64] = if full {
        &[64 * KIB, 256 * KIB, MIB, 4 * MIB, 8 * MIB]
    } else {
        &[256 * KIB, MIB]
    };
    let depths: &[u32] = if full { &[4, 8, 16, 64] } else { &[8] };
    let pipes: &[u64] = if full {
        &[64 * KIB, 256 * KIB, MIB]
    } else {
        &[256 * KIB, MIB]
    };
    let direct_chunks: &[u64] = if full {
        &[256 * KIB, MIB, 4 * MIB]
    } else {
        &[MIB]
    };
    let file_side = source == flexio::EndpointKind::File || sink == flexio::EndpointKind::File;
    let sweep_direct = file_side && sweeps_direct(kind, full);
    let mut out = Vec::new();
    for mechanism in MechanismName::serving(source, sink) {
        if mechanism == MechanismName::Direct && !sweep_direct {
            continue;
        }
        let base = Params {
            direct: mechanism == MechanismName::Direct,
            ..Params::default()
        };
        let mut read = reads(mechanism);
        if kind == FlowKind::MemoryToMemory {
            // Memory to memory is one copy of it all, whatever the chunk.
            read.chunk = false;
        } else {
            // Only memory to memory copies in user space.
            read.copy_kernel = false;
        }
        let mut push = |params: Params| {
            let candidate = Candidate { mechanism, params };
            if !out.contains(&candidate) {
                out.push(candidate);
            }
        };
        push(base.clone());
        if read.chunk {
            for &chunk in chunks {
                push(Params {
                    chunk: chunk as usize,
                    ..base.clone()
                });
            }
        }
        if read.queue_depth {
            for &queue_depth in depths {
                push(Params {
                    queue_depth,
                    ..base.clone()
                });
            }
        }
        if read.direct && sweep_direct {
            for &chunk in direct_chunks {
                push(Params {
                    chunk: chunk as usize,
                    direct: true,
                    ..base.clone()
                });
            }
        }
        if read.copy_kernel {
            for copy_kernel in CopyKernel::available() {
                push(Params {
                    copy_kernel,
                    ..base.clone()
                });
            }
        }
        if read.pipe_size {
            for &pipe in pipes {
                push(Params {
                    pipe_size: pipe as usize,
                    ..base.clone()
                });
            }
        }
    }
    out
}

/// Whether the sweep measures O_DIRECT (the `direct` mechanism and
/// io-uring's `direct` option) for `kind`: always in `--full`; in
/// `--quick` only for the durable kind, where the bytes must reach the
/// disk anyway. Through the page cache O_DIRECT lost by 3 to 20 times
/// here, and its runs took a third of the quick sweep's time (16 of 50
/// seconds).
pub fn sweeps_direct(kind: FlowKind, full: bool) -> bool {
    full || kind == FlowKind::FileToFileDurable
}

/// The parameters `mechanism` reads, from its descriptor in
/// `flexio/src/mechanism/`: copy-file-range asks the kernel for
/// everything that is left, sendfile for a chunk, splice moves a pipe's
/// worth per call.
fn reads(mechanism: MechanismName) -> Reads {
    mechanism
        .descriptor()
        .map_or(Reads::NONE, |descriptor| descriptor.reads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_candidate_serves_its_kind_and_varies_only_what_its_mechanism_reads() {
        for full in [false, true] {
            for kind in FlowKind::TUNED {
                let (source, sink) = kind.representative_pair();
                let all = candidates(kind, full);
                for candidate in &all {
                    let read = reads(candidate.mechanism);
                    let params = &candidate.params;
                    let default = Params::default();
                    assert!(candidate.mechanism.supports(source, sink));
                    assert!(read.chunk || params.chunk == default.chunk, "{candidate:?}");
                    assert!(read.queue_depth || params.queue_depth == default.queue_depth);
                    assert!(read.pipe_size || params.pipe_size == default.pipe_size);
                    assert!(
                        kind == FlowKind::MemoryToMemory
                            || params.copy_kernel == default.copy_kernel
                    );
                    assert!(
                        read.direct
                            || params.direct == (candidate.mechanism == MechanismName::Direct)
                    );
                }
                for mechanism in MechanismName::serving(source, sink) {
                    let swept = mechanism != MechanismName::Direct || sweeps_direct(kind, full);
                    assert_eq!(
                        all.iter().any(|c| c.mechanism == mechanism),
                        swept,
                        "{kind} {mechanism}"
                    );
                }
                let direct = all.iter().any(|c| c.params.direct);
                let file_side = [source, sink].contains(&flexio::EndpointKind::File);
                assert_eq!(direct, file_side && sweeps_direct(kind, full), "{kind}");
            }
        }
        let sendfile: Vec<Candidate> = candidates(FlowKind::FileToSocket, true)
            .into_iter()
            .filter(|c| c.mechanism == MechanismName::Sendfile)
            .collect();
        assert!(sendfile.len() > 1, "sendfile reads its chunk: {sendfile:?}");
        let copy_file_range = candidates(FlowKind::FileToFile, true)
            .into_iter()
            .filter(|c| c.mechanism == MechanismName::CopyFileRange)
            .count();
        assert_eq!(copy_file_range, 1, "copy-file-range reads no parameter");
        // Zero-copy send is measured against sendfile for file -> socket
        // (its request size swept), and nowhere else.
        for kind in FlowKind::TUNED {
            let zc = candidates(kind, true)
                .into_iter()
                .filter(|c| c.mechanism == MechanismName::SendZc)
                .count();
            // The five chunks of the full sweep, the default (256 KiB) among them.
            let expected = if kind == FlowKind::FileToSocket { 5 } else { 0 };
            assert_eq!(zc, expected, "{kind}");
        }
        let memory = candidates(FlowKind::MemoryToMemory, true);
        let kernels: Vec<_> = memory.iter().map(|c| c.params.copy_kernel).collect();
        assert_eq!(
            kernels,
            CopyKernel::available(),
            "one candidate per copy kernel: read-write's chunk means nothing in memory"
        );
        assert!(memory.iter().all(|c| !c.params.direct));
    }
}
