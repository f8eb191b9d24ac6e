//! `direct`: `O_DIRECT` with aligned buffers and plain `pread`/`pwrite` —
//! bytes go between the device and user memory without the page cache, so
//! a large copy neither evicts the cache nor pays for filling it.
//!
//! The file or block-device side(s) get `O_DIRECT` for the length of a run
//! (the engine opens without it); a stream on the other side (socket, pipe,
//! character device) uses plain `read`/`write`. Direct I/O wants offsets,
//! lengths and memory aligned to the device's block:
//!
//! - the source is read at aligned offsets in aligned lengths (the chunk
//!   rounded up to the block) and the bytes before the wanted position are
//!   skipped; a short read at the end of the file is normal;
//! - the sink is written direct only if it starts at an aligned position:
//!   whole blocks are written as they fill, the bytes short of a block are
//!   kept at the front of the buffer for the next read, and the final
//!   partial block is written after `O_DIRECT` is cleared. An unaligned
//!   sink is written through the page cache.
//!
//! When the kernel refuses `O_DIRECT` (EINVAL, EOPNOTSUPP — tmpfs before
//! Linux 6.6, some FUSE and network filesystems) the run stops with a
//! refusal and the engine falls back to `read-write`, saying so.
//!
//! One aligned buffer serves the whole flow; it is kept in the flow's
//! scratch space, so nothing is allocated per chunk.

use rustix::event::PollFlags;
use rustix::io::Errno;

use super::direct_setup::{
    align_down, align_up, is_direct_capable, set_up_direct, DirectSetup, DirectSides,
};
use super::io::write_sink;
use super::transfer::{Kept, Side};
use super::{Descriptor, MechanismName, Reads, Stop, Transfer};
use crate::endpoint::EndpointKind;
use crate::sys::aligned::AlignedBuffer;

/// What `direct` is, for the engine, the command line, the tuner and
/// the bench.
pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    name: MechanismName::Direct,
    serves,
    reads: Reads {
        chunk: true,
        ..Reads::NONE
    },
    fallbacks: &[MechanismName::ReadWrite],
    writes_direct: |_| true,
    run,
};

fn serves(source: EndpointKind, sink: EndpointKind) -> bool {
    source != EndpointKind::Memory
        && sink != EndpointKind::Memory
        && (is_direct_capable(source) || is_direct_capable(sink))
}

fn run(t: &mut Transfer<'_>) -> Result<(), Stop> {
    if t.finished() {
        return Ok(());
    }
    let source_fd = t.source_fd();
    let sink_fd = t.sink_fd();
    let DirectSetup {
        source_direct,
        block,
        source_mode,
        mut sink_mode,
        ..
    } = set_up_direct(t, (source_fd, sink_fd), true, false)?;

    let chunk = align_up(t.len_cap(t.params.chunk).max(1), block);
    let mut buffer = take_buffer(t, block + chunk, block.max(4096));
    let mut copy = DirectCopy {
        sides: DirectSides {
            source_fd,
            sink_fd,
            source_mode: source_mode.as_ref(),
            sink_mode: sink_mode.as_mut(),
        },
        source_direct,
        block,
        chunk,
        pending: 0,
    };
    let result = copy.run(t, buffer.as_mut_slice());
    t.scratch.kept = Kept::Aligned(buffer);
    result
    // The source and sink modes restore the original flags on drop.
}

/// The flow's aligned buffer: the one kept from an earlier run if it is
/// large and aligned enough, else a new one.
fn take_buffer(t: &mut Transfer<'_>, len: usize, align: usize) -> AlignedBuffer {
    if let Kept::Aligned(buffer) = std::mem::take(&mut t.scratch.kept)
        && buffer.len() >= len
        && buffer.align() >= align
    {
        return buffer;
    }
    AlignedBuffer::new(len, align)
}

/// One run of the copy loop.
///
/// The buffer is `block + chunk` bytes. Bytes read but not yet written (at
/// most a block's worth short of a whole block, only when the sink is
/// direct) wait at its front, `pending` of them; they are the bytes of the
/// flow right after the transfer's position. A direct source is read into
/// the part after the first block, so that the read lands aligned.
struct DirectCopy<'fd, 'm> {
    /// The descriptors, and where to read and write them now.
    sides: DirectSides<'fd, 'm>,
    source_direct: bool,
    block: usize,
    chunk: usize,
    pending: usize,
}

impl DirectCopy<'_, '_> {
    fn run(&mut self, t: &mut Transfer<'_>, buf: &mut [u8]) -> Result<(), Stop> {
        loop {
            let owed = t.remaining.map(|left| left - self.pending as u64);
            if owed == Some(0) {
                break;
            }
            t.pace();
            let (start, got) = if self.source_direct {
                self.read_direct(t, buf, owed)?
            } else {
                self.read_stream(t, buf, owed)?
            };
            if got == 0 {
                self.flush(t, &buf[..self.pending])?;
                return t.source_ended();
            }
            if self.sides.sink_direct() {
                self.write_blocks(t, buf, start, got)?;
            } else {
                write_sink(t, &buf[start..start + got])?;
            }
        }
        let pending = self.pending;
        self.flush(t, &buf[..pending])
    }

    /// Reads the next aligned piece of the source; returns where the wanted
    /// bytes start in `buf` and how many there are (0: end of source).
    fn read_direct(
        &mut self,
        t: &mut Transfer<'_>,
        buf: &mut [u8],
        owed: Option<u64>,
    ) -> Result<(usize, usize), Stop> {
        let position = t.source_pos + self.pending as u64;
        let aligned = align_down(position, self.block);
        let head = (position - aligned) as usize;
        let want = match owed {
            Some(owed) => align_up(head + owed.min(self.chunk as u64) as usize, self.block),
            None => self.chunk,
        }
        .min(self.chunk);
        let area = &mut buf[self.block..self.block + want];
        let n = loop {
            t.counters.syscalls += 1;
            match rustix::io::pread(self.sides.source_read_fd(), &mut *area, aligned) {
                Ok(n) => break n,
                Err(Errno::INTR) => continue,
                Err(errno) => {
                    return Err(t.refused_or_failed("pread(O_DIRECT)", Side::Source, errno))
                }
            }
        };
        let got = n.saturating_sub(head);
        let got = owed.map_or(got, |owed| got.min(owed as usize));
        Ok((self.block + head, got))
    }

    /// Reads from a stream source straight after the pending bytes.
    fn read_stream(
        &mut self,
        t: &mut Transfer<'_>,
        buf: &mut [u8],
        owed: Option<u64>,
    ) -> Result<(usize, usize), Stop> {
        let start = self.pending;
        let want = owed.map_or(self.chunk, |owed| owed.min(self.chunk as u64) as usize);
        let area = &mut buf[start..start + want];
        let offset = t
            .source_kind
            .is_seekable()
            .then_some(t.source_pos + start as u64);
        loop {
            t.counters.syscalls += 1;
            let result = match offset {
                Some(at) => rustix::io::pread(self.sides.source_read_fd(), &mut *area, at),
                None => rustix::io::read(self.sides.source_fd, &mut *area),
            };
            match result {
                Ok(n) => {
                    if n > 0 {
                        t.progressed();
                    }
                    return Ok((start, n));
                }
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => t
                    .wait_ready(self.sides.source_fd, PollFlags::IN, Side::Source)
                    .map_err(|stop| past_pending(stop, start as u64))?,
                Err(errno) => return Err(t.failed("read", Side::Source, errno)),
            }
        }
    }

    /// Writes the whole blocks of the pending bytes followed by the `got`
    /// bytes at `buf[start..]`, and keeps the rest pending at the front.
    fn write_blocks(
        &mut self,
        t: &mut Transfer<'_>,
        buf: &mut [u8],
        start: usize,
        got: usize,
    ) -> Result<(), Stop> {
        let (from, total) = if start == self.pending {
            (0, self.pending + got)
        } else if self.pending == 0 && start.is_multiple_of(self.block) {
            (start, got)
        } else {
            // The source's position within a block differs from the sink's:
            // line the bytes up behind the pending ones.
            buf.copy_within(start..start + got, self.pending);
            (0, self.pending + got)
        };
        self.pending = 0;
        let whole = total / self.block * self.block;
        let written = self.write_direct(t, &buf[from..from + total], whole)?;
        let rest = total - written;
        buf.copy_within(from + written..from + total, 0);
        self.pending = rest;
        if !self.sides.sink_direct() {
            // A short direct write left the sink unaligned; it is buffered
            // from here on.
            self.flush(t, &buf[..rest])?;
        }
        Ok(())
    }

    /// Writes the first `whole` bytes of `bytes` with `O_DIRECT`; returns
    /// how many went out. After a short write the sink goes buffered. On a
    /// refusal every byte of `bytes` is written buffered before the refusal
    /// is returned, so that no byte read from a stream is lost.
    fn write_direct(
        &mut self,
        t: &mut Transfer<'_>,
        bytes: &[u8],
        whole: usize,
    ) -> Result<usize, Stop> {
        let mut done = 0;
        while done < whole {
            t.counters.syscalls += 1;
            match rustix::io::pwrite(self.sides.sink_write_fd(), &bytes[done..whole], t.sink_pos) {
                Ok(0) => return Err(t.failed("pwrite(O_DIRECT)", Side::Sink, Errno::NOSPC)),
                Ok(n) => {
                    t.advance(n as u64);
                    done += n;
                    if n % self.block != 0 {
                        self.go_buffered(t)?;
                        return Ok(done);
                    }
                }
                Err(Errno::INTR) => {}
                Err(errno) => {
                    let stop = t.refused_or_failed("pwrite(O_DIRECT)", Side::Sink, errno);
                    if matches!(stop, Stop::Refused { .. }) {
                        self.go_buffered(t)?;
                        write_sink(t, &bytes[done..])?;
                    }
                    return Err(stop);
                }
            }
        }
        Ok(done)
    }

    /// Writes the pending bytes through the page cache (`O_DIRECT` cleared:
    /// they do not fill a block).
    fn flush(&mut self, t: &mut Transfer<'_>, bytes: &[u8]) -> Result<(), Stop> {
        self.pending = 0;
        if bytes.is_empty() {
            return Ok(());
        }
        self.go_buffered(t)?;
        write_sink(t, bytes)
    }

    fn go_buffered(&mut self, t: &mut Transfer<'_>) -> Result<(), Stop> {
        if let Some(mode) = self.sides.sink_mode.as_mut()
            && mode.is_direct()
        {
            t.counters.syscalls += 1;
            mode.restore()
                .map_err(|e| t.failed("fcntl(F_SETFL)", Side::Sink, e))?;
        }
        Ok(())
    }
}

/// An idle timeout while reading the source names the source's offset:
/// past the `pending` bytes read but not yet written (a direct sink takes
/// whole blocks only).
fn past_pending(stop: Stop, pending: u64) -> Stop {
    match stop {
        Stop::Failed(crate::error::Error::IdleTimeout {
            endpoint,
            offset,
            idle,
        }) => Stop::Failed(crate::error::Error::IdleTimeout {
            endpoint,
            offset: offset + pending,
            idle,
        }),
        other => other,
    }
}
