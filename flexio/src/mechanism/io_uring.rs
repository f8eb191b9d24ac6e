//! `io-uring`: reads and writes overlapped through one io_uring, up to
//! `--queue-depth` requests of `--chunk` bytes in flight, into and out of
//! registered buffers (`READ_FIXED` / `WRITE_FIXED`, so the kernel does not
//! pin pages per request). With `--direct` the file side(s) get `O_DIRECT`
//! under the same alignment rules as the `direct` mechanism.
//!
//! Each buffer is a *slot* that carries one piece of the flow: read into,
//! then written out of.
//!
//! - A seekable source gets a read in flight for every free slot, at
//!   increasing offsets; a stream source (socket, pipe) one read at a time,
//!   which keeps its bytes in order.
//! - A piece is written as soon as it is read: at its own offset on a
//!   seekable sink, strictly in order and one write at a time on a stream.
//! - Short reads and writes are resubmitted for the remainder.
//! - The transfer advances only over the contiguous prefix of the flow
//!   that is written. On a refusal (a completion with EINVAL or
//!   EOPNOTSUPP) or a failure, nothing new is submitted, every request in
//!   flight is waited for, and the run stops with the transfer standing
//!   exactly at the written prefix — after writing, buffered, what was
//!   already taken from a stream source, which no fallback could read
//!   again.
//! - With a direct sink, pieces are whole blocks; the final partial block
//!   is written after the ring is idle and `O_DIRECT` is cleared.
//!
//! The ring and its buffers are made once per flow and kept in the flow's
//! scratch space across the data segments of a sparse file.

use rustix::io::Errno;

use super::direct_setup::{align_up, set_up_direct, DirectSetup, DirectSides};
use super::transfer::{Kept, Side};
use super::{Descriptor, MechanismName, Reads, Stop, Transfer};
use crate::endpoint::EndpointKind;
use crate::sys::uring::{Ring, RingError, MAX_SLOTS};
use crate::Params;

mod pump;
use pump::{Pump, Slot};

/// What `io-uring` is, for the engine, the command line, the tuner and
/// the bench.
pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    name: MechanismName::IoUring,
    serves,
    reads: Reads {
        chunk: true,
        queue_depth: true,
        direct: true,
        ..Reads::NONE
    },
    fallbacks: &[MechanismName::ReadWrite],
    writes_direct: |params| params.direct,
    run,
};

fn serves(source: EndpointKind, sink: EndpointKind) -> bool {
    source != EndpointKind::Memory && sink != EndpointKind::Memory
}

fn run(t: &mut Transfer<'_>) -> Result<(), Stop> {
    if t.finished() {
        return Ok(());
    }
    let source_fd = t.source_fd();
    let sink_fd = t.sink_fd();
    // A direct sink's bytes must sit aligned in the slots: a direct
    // source has to start aligned too.
    let DirectSetup {
        source_direct,
        block,
        source_mode,
        mut sink_mode,
        ..
    } = set_up_direct(t, (source_fd, sink_fd), t.params.direct, true)?;

    // Slots no bigger than the flow: a 4 KiB copy with `--chunk 1M`
    // registered (pinned) two mebibytes and ran at 1 MiB/s.
    let slot_len = align_up(t.len_cap(t.params.chunk).max(1), block);
    let mut ring = take_ring(t, slot_len, block.max(4096))?;
    if t.idle.is_some() && !ring.can_time_out() {
        // Nothing was submitted: another mechanism can take the flow.
        return Err(Stop::Refused {
            op: "io_uring_enter(timeout)",
            errno: Errno::NOSYS,
        });
    }
    let mut pump = Pump {
        sides: DirectSides {
            source_fd,
            sink_fd,
            source_mode: source_mode.as_ref(),
            sink_mode: sink_mode.as_mut(),
        },
        source_seekable: t.source_kind.is_seekable() && t.remaining.is_some(),
        // Appended writes land in the order they run: one at a time.
        sink_seekable: t.sink_kind.is_seekable() && !t.sink_appends,
        source_direct,
        block,
        base_source: t.source_pos,
        base_sink: t.sink_pos,
        total: t.remaining,
        next_read: 0,
        cursor: 0,
        eof: false,
        tail_waiting: false,
        stop: None,
    };
    // The slot table is per run (a few bytes a slot); the ring and its
    // buffers are what is worth keeping.
    let mut slots = vec![Slot::FREE; ring.slots()];
    let result = pump.run(t, &mut ring, &mut slots);
    t.scratch.kept = Kept::Ring(ring);
    result
    // The source and sink modes restore the original flags on drop.
}

/// The flow's ring: the one kept from an earlier run if its slots are
/// large enough (a sparse file's data runs differ in length; slots sized to
/// the first need not make a ring per run), else a new one with
/// `--queue-depth` slots (fewer for a flow smaller than that).
fn take_ring(t: &mut Transfer<'_>, slot_len: usize, align: usize) -> Result<Box<Ring>, Stop> {
    if let Kept::Ring(ring) = std::mem::take(&mut t.scratch.kept)
        && ring.slot_len() >= slot_len
    {
        return Ok(ring);
    }
    let mut slots = (t.params.queue_depth.max(1) as usize).min(MAX_SLOTS);
    // The buffers of all slots together stay within a chunk's bound: a
    // pipe source (no size to shrink the slots to) with `--chunk 1G` and
    // 32 slots asked for 32 GiB, which no allocator here would give.
    slots = slots.min((Params::CHUNK.max as usize / slot_len).max(1));
    if let Some(expected) = t.expected {
        let pieces = expected.div_ceil(slot_len as u64).saturating_add(1);
        slots = slots.min(pieces.min(MAX_SLOTS as u64) as usize);
    }
    let ring = Ring::new(slots, slot_len, align).map_err(|RingError { op, error }| {
        let errno = Errno::from_io_error(&error).unwrap_or(Errno::IO);
        match (op, errno) {
            // No io_uring in this kernel, or not for this process.
            ("io_uring_setup", Errno::NOSYS | Errno::PERM) => Stop::Refused {
                op,
                errno: Errno::NOSYS,
            },
            _ => t.refused_or_failed(op, Side::Source, errno),
        }
    })?;
    Ok(Box::new(ring))
}
