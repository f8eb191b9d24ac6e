//! Reading from the source and writing to the sink of a [`Transfer`] with
//! plain system calls: retried on `EINTR`, waited on `EAGAIN`, positional
//! where the endpoint has offsets. Shared by every mechanism that passes
//! bytes through user memory.

use rustix::event::PollFlags;
use rustix::io::Errno;

use super::transfer::{Side, SinkSide, SourceSide, Stop, Transfer};

/// Reads up to `buf.len()` bytes at the transfer's source position without
/// advancing it; 0 means end of source. The source is a descriptor: a
/// memory source is never read into a buffer (see [`copy_through_buffer`]).
pub(crate) fn read_source(t: &mut Transfer<'_>, buf: &mut [u8]) -> Result<usize, Stop> {
    let fd = t.source_fd();
    let offset = t.source_offset();
    loop {
        t.counters.syscalls += 1;
        let result = match offset {
            Some(at) => rustix::io::pread(fd, &mut *buf, at),
            None => rustix::io::read(fd, &mut *buf),
        };
        match result {
            Ok(n) => {
                if n > 0 {
                    t.progressed();
                }
                return Ok(n);
            }
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => t.wait_ready(fd, PollFlags::IN, Side::Source)?,
            Err(errno) => return Err(t.failed("read", Side::Source, errno)),
        }
    }
}

/// Writes all of `buf` at the transfer's sink position and advances the
/// transfer by its length.
pub(crate) fn write_sink(t: &mut Transfer<'_>, buf: &[u8]) -> Result<(), Stop> {
    let mut written = 0;
    while written < buf.len() {
        let n = write_some(t, &buf[written..])?;
        t.advance(n as u64);
        written += n;
    }
    Ok(())
}

fn write_some(t: &mut Transfer<'_>, buf: &[u8]) -> Result<usize, Stop> {
    let offset = t.sink_offset();
    if let SinkSide::Memory(bytes) = &mut t.sink {
        let start = t.sink_pos as usize;
        let end = start + buf.len();
        if end > bytes.len() {
            return Err(t.failed("write", Side::Sink, Errno::NOSPC));
        }
        t.params.copy_kernel.copy(&mut bytes[start..end], buf);
        return Ok(buf.len());
    }
    let fd = t.sink_fd();
    loop {
        t.counters.syscalls += 1;
        let result = match offset {
            Some(at) => rustix::io::pwrite(fd, buf, at),
            None => rustix::io::write(fd, buf),
        };
        match result {
            Ok(0) => return Err(t.failed("write", Side::Sink, Errno::NOSPC)),
            Ok(n) => return Ok(n),
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => t.wait_ready(fd, PollFlags::OUT, Side::Sink)?,
            Err(errno) => return Err(t.failed("write", Side::Sink, errno)),
        }
    }
}

/// Reserves `len` bytes of the sink file from the sink position with
/// `fallocate(2)` (mode 0: the file grows to reach them), retrying `EINTR`.
/// `Ok(false)` where the filesystem cannot (`EOPNOTSUPP`); any other
/// refusal (`ENOSPC` first of all) is a failure naming the sink.
pub(crate) fn reserve_sink(t: &mut Transfer<'_>, len: u64) -> Result<bool, Stop> {
    loop {
        t.counters.syscalls += 1;
        let at = t.sink_pos;
        match rustix::fs::fallocate(t.sink_fd(), rustix::fs::FallocateFlags::empty(), at, len) {
            Ok(()) => return Ok(true),
            Err(Errno::INTR) => continue,
            Err(Errno::OPNOTSUPP) => return Ok(false),
            Err(errno) => return Err(t.failed("fallocate", Side::Sink, errno)),
        }
    }
}

/// Moves the rest of the transfer through a user buffer of `chunk` bytes:
/// the plain loop of `read-write`, and where other mechanisms finish a tail
/// they cannot do their own way. When an end is the caller's memory, that
/// memory is the buffer: one copy, not two.
pub(crate) fn copy_through_buffer(t: &mut Transfer<'_>, chunk: usize) -> Result<(), Stop> {
    if let SourceSide::Memory(source) = t.source {
        return copy_from_memory(t, source, chunk);
    }
    if let SinkSide::Memory(sink) = &mut t.sink {
        // Lent out for the loop (which also needs `t`), put back after.
        let sink = std::mem::take(sink);
        let result = read_into_memory(t, sink, chunk);
        t.sink = SinkSide::Memory(sink);
        return result;
    }
    // No bigger than the flow: a 4 KiB copy with `--chunk 1M` need not map
    // and fault a mebibyte.
    let size = t.len_cap(chunk).max(1);
    let mut buffer = std::mem::take(&mut t.scratch.buffer);
    if buffer.len() < size {
        buffer = vec![0; size];
    }
    let result = (|| {
        while !t.finished() {
            let want = t.next_len(chunk);
            let n = read_source(t, &mut buffer[..want])?;
            if n == 0 {
                return t.source_ended();
            }
            write_sink(t, &buffer[..n])?;
        }
        Ok(())
    })();
    t.scratch.buffer = buffer;
    result
}

/// The source is memory: its bytes go to the sink (memory or descriptor)
/// straight from where they are. Memory to memory is one copy of it all:
/// `chunk` bounds system calls, and there are none.
fn copy_from_memory(t: &mut Transfer<'_>, source: &[u8], chunk: usize) -> Result<(), Stop> {
    let chunk = match t.sink {
        SinkSide::Memory(_) => usize::MAX,
        SinkSide::Fd(_) => chunk,
    };
    while !t.finished() {
        let start = (t.source_pos as usize).min(source.len());
        let n = t.next_len(chunk).min(source.len() - start);
        if n == 0 {
            return t.source_ended();
        }
        write_sink(t, &source[start..start + n])?;
    }
    Ok(())
}

/// The sink is memory (the source a descriptor): reads land where the
/// bytes belong.
fn read_into_memory(t: &mut Transfer<'_>, sink: &mut [u8], chunk: usize) -> Result<(), Stop> {
    while !t.finished() {
        let start = (t.sink_pos as usize).min(sink.len());
        let want = t.next_len(chunk).min(sink.len() - start);
        if want == 0 {
            // The sink is full: an error only if the source has more.
            return match read_source(t, &mut [0u8; 1])? {
                0 => t.source_ended(),
                _ => Err(t.failed("write", Side::Sink, Errno::NOSPC)),
            };
        }
        let n = read_source(t, &mut sink[start..start + want])?;
        if n == 0 {
            return t.source_ended();
        }
        t.advance(n as u64);
    }
    Ok(())
}
