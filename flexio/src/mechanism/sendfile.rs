//! `sendfile`: the kernel reads the source file's pages and writes them to
//! the sink descriptor — no user buffer, one crossing per call (Cue's
//! in-kernel file→socket streaming, which became sendfile(2)).
//!
//! Each call asks for at most `--chunk` (Cue's block: a schedule's chunk
//! is one call, and an unpaced flow's calls are the same size, so the two
//! count chunks alike); the kernel takes at most about 2 GiB a call. The
//! sink is written at its file position, so a seekable sink is
//! positioned first.

use rustix::event::PollFlags;
use rustix::fs::SeekFrom;

use super::kernel_copy::kernel_copy_loop;
use super::transfer::Side;
use super::{Descriptor, MechanismName, Reads, Stop, Transfer};
use crate::endpoint::EndpointKind;

/// The most bytes asked of one call, whatever the chunk: well under the
/// kernel's ~2 GiB cap.
const MAX_PER_CALL: usize = 1 << 30;

/// What `sendfile` is, for the engine, the command line, the tuner and
/// the bench.
pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    name: MechanismName::Sendfile,
    serves,
    reads: Reads {
        chunk: true,
        ..Reads::NONE
    },
    fallbacks: &[MechanismName::Splice, MechanismName::ReadWrite],
    writes_direct: |_| false,
    run,
};

fn serves(source: EndpointKind, sink: EndpointKind) -> bool {
    use EndpointKind::*;
    matches!(source, File | BlockDevice) && !matches!(sink, Memory)
}

fn run(t: &mut Transfer<'_>) -> Result<(), Stop> {
    if let Some(at) = t.sink_offset() {
        t.counters.syscalls += 1;
        rustix::fs::seek(t.sink_fd(), SeekFrom::Start(at))
            .map_err(|e| t.failed("lseek", Side::Sink, e))?;
    }
    let sink = t.sink_fd();
    let per_call = t.params.chunk.clamp(1, MAX_PER_CALL);
    kernel_copy_loop(
        t,
        "sendfile",
        Side::Sink,
        per_call,
        [Some((sink, PollFlags::OUT, Side::Sink)), None],
        |t, want| {
            let mut offset = t.source_pos;
            rustix::fs::sendfile(t.sink_fd(), t.source_fd(), Some(&mut offset), want)
        },
    )
}
