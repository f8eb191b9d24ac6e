//! `read-write`: `read(2)` into one user buffer of `--chunk` bytes and
//! `write(2)` out of it — two copies and two crossings per chunk, and the
//! baseline every other mechanism is measured against. Serves every pair;
//! when an end is the caller's memory, that memory is the buffer (one copy;
//! memory to memory is one copy by the `copy_kernel` parameter: `memcpy`
//! by default, or `rep movsb`, non-temporal AVX stores or several threads).

use super::io::copy_through_buffer;
use super::{Descriptor, MechanismName, Reads, Stop, Transfer};
use crate::endpoint::EndpointKind;

/// What `read-write` is, for the engine, the command line, the tuner and
/// the bench.
pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    name: MechanismName::ReadWrite,
    serves,
    reads: Reads {
        chunk: true,
        copy_kernel: true,
        ..Reads::NONE
    },
    fallbacks: &[],
    writes_direct: |_| false,
    run,
};

fn serves(_source: EndpointKind, _sink: EndpointKind) -> bool {
    true
}

fn run(t: &mut Transfer<'_>) -> Result<(), Stop> {
    copy_through_buffer(t, t.params.chunk)
}
