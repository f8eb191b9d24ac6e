//! `mmap` with a stream source (a socket or a pipe) and a regular-file
//! sink: the memory-mapped receiver of the OS course project, whose
//! receiver wrote the socket into an `mmap`ed file. The sink is grown and
//! its blocks reserved one window of `--chunk` bytes at a time, the
//! window is mapped, and `read(2)` lands the stream's bytes straight in the
//! mapping: no user buffer, and no `write(2)`.
//!
//! The project's bug — a fast receiver that maps a window and copies it
//! out before the sender has filled it, leaving zeros — cannot happen
//! here: a window is left only once reads have filled it (or the stream
//! ended, which is then an error when bytes were owed). What the windows
//! reserved past the last byte received is given back at the end, so the
//! file ends where the stream did.

use rustix::mm::Advice;

use super::{map, reserve};
use crate::error::Error;
use crate::mechanism::io::read_source;
use crate::mechanism::transfer::Side;
use crate::mechanism::{Stop, Transfer};

/// Receives the stream into the sink file, which is `original` bytes long
/// now and open for reading and writing.
pub(super) fn receive(t: &mut Transfer<'_>, original: u64) -> Result<(), Stop> {
    let mut size = original;
    let result = receive_windows(t, &mut size);
    // Grown for a window the stream did not fill: give it back, never
    // shrinking the file below what it was.
    let end = original.max(t.sink_pos);
    if size > end {
        t.counters.syscalls += 1;
        if let Err(errno) = rustix::fs::ftruncate(t.sink_fd(), end) {
            return result.and(Err(t.failed("ftruncate", Side::Sink, errno)));
        }
    }
    result
}

fn receive_windows(t: &mut Transfer<'_>, size: &mut u64) -> Result<(), Stop> {
    let page = rustix::param::page_size();
    let chunk = t.params.chunk.max(1).next_multiple_of(page);
    while !t.finished() {
        let head = (t.sink_pos % page as u64) as usize;
        let want = t.next_len(chunk - head);
        reserve(t, want, size)?;
        let mut sink = map(t, Side::Sink, t.sink_pos - head as u64, head + want)?;
        // One call makes every page of the window writable; where the
        // kernel declines, pages fault in one by one as reads reach them.
        t.counters.syscalls += 1;
        let _ = sink.mapping().advise(Advice::LinuxPopulateWrite);
        let mut filled = 0;
        while filled < want {
            let window = &mut sink.mapping_mut().as_mut_slice()[head + filled..head + want];
            let n = read_source(t, window)?;
            if n == 0 {
                break;
            }
            filled += n;
            t.advance(n as u64);
        }
        if let Some(fault) = sink.fault_offset() {
            return Err(Stop::Failed(Error::MappingFault {
                endpoint: t.sink_label.to_string(),
                offset: t.sink_pos - filled as u64 - head as u64 + fault as u64,
                why: "the sink's file system is out of space",
            }));
        }
        drop(sink);
        if filled < want {
            // The stream ended: fine when it was to be read to its end,
            // an error naming the offset when bytes were owed.
            return t.source_ended();
        }
    }
    Ok(())
}
