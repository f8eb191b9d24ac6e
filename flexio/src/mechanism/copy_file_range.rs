//! `copy-file-range`: file to file inside the kernel with
//! copy_file_range(2) — no user buffer, and a reflink or server-side copy
//! where the file system offers one. Across file systems the kernel may
//! refuse with `EXDEV`; the engine then falls back.

use super::kernel_copy::kernel_copy_loop;
use super::transfer::Side;
use super::{Descriptor, MechanismName, Reads, Stop, Transfer};
use crate::endpoint::EndpointKind;

/// Bytes asked of one call: well under the kernel's ~2 GiB cap.
const MAX_PER_CALL: usize = 1 << 30;

/// What `copy-file-range` is, for the engine, the command line, the tuner and
/// the bench.
pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    name: MechanismName::CopyFileRange,
    serves,
    reads: Reads::NONE,
    fallbacks: &[MechanismName::Sendfile, MechanismName::ReadWrite],
    writes_direct: |_| false,
    run,
};

fn serves(source: EndpointKind, sink: EndpointKind) -> bool {
    source == EndpointKind::File && sink == EndpointKind::File
}

fn run(t: &mut Transfer<'_>) -> Result<(), Stop> {
    kernel_copy_loop(
        t,
        "copy_file_range",
        Side::Sink,
        MAX_PER_CALL,
        [None, None],
        |t, want| {
            let mut source_offset = t.source_pos;
            let mut sink_offset = t.sink_pos;
            rustix::fs::copy_file_range(
                t.source_fd(),
                Some(&mut source_offset),
                t.sink_fd(),
                Some(&mut sink_offset),
                want,
            )
        },
    )
}
