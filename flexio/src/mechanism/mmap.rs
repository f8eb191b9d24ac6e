//! `mmap`: map the source in windows of `--chunk` bytes and copy or write
//! out of the map — one copy fewer than `read-write` (the kernel reads the
//! pages in on fault, no `read(2)` copies them into a buffer).
//!
//! A window starts at the source position rounded down to the page size
//! (the head bytes before the position are skipped) and is at most `chunk`
//! bytes (rounded up to the page size), so that after the first window
//! every window is aligned. Each window is advised `MADV_SEQUENTIAL`.
//!
//! - A regular-file sink open for reading and writing is mapped too (the
//!   memory-mapped I/O of FlexIO) and the window is copied map to map. The
//!   sink's blocks are reserved first with `fallocate(2)`, so that a full
//!   file system is a clean `ENOSPC` rather than a SIGBUS on the sink map;
//!   where `fallocate` is not supported the file is only extended with
//!   `ftruncate(2)`. A sink file longer than needed is never shrunk.
//! - Every other sink (socket, pipe, block device, memory, a file open
//!   write-only) is written straight out of the source map.
//!
//! - A stream source (socket, pipe) is received into a map of the sink
//!   file instead ([`receive`]).
//!
//! A source file truncated under us must be an error naming the offset,
//! never a short success and never a crash. Touching a mapped page wholly
//! past the new end of file raises SIGBUS: each mapping is held by a
//! [`Guard`], whose handler maps zero pages over the rest of the window and
//! records the fault. A partial last page past the end reads zeros without
//! any fault, so the source is also `fstat`ed after every window. A
//! `write(2)` out of a truncated map fails with `EFAULT` instead of raising
//! SIGBUS; that too means the source ended.

use rustix::fs::{OFlags, SeekFrom};
use rustix::io::Errno;
use rustix::mm::Advice;

use super::io::{reserve_sink, write_sink};
use super::transfer::Side;
use super::{Descriptor, MechanismName, Reads, Stop, Transfer};
use crate::endpoint::EndpointKind;
use crate::error::Error;
use crate::sys::mapping::Mapping;
use crate::sys::sigbus::Guard;

/// What `mmap` is, for the engine, the command line, the tuner and
/// the bench.
pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    name: MechanismName::Mmap,
    serves,
    reads: Reads {
        chunk: true,
        ..Reads::NONE
    },
    fallbacks: &[MechanismName::ReadWrite],
    writes_direct: |_| false,
    run,
};

mod receive;

fn serves(source: EndpointKind, sink: EndpointKind) -> bool {
    use EndpointKind::*;
    match source {
        File | BlockDevice => true,
        Tcp | Unix | Pipe => sink == File,
        _ => false,
    }
}

fn run(t: &mut Transfer<'_>) -> Result<(), Stop> {
    if !matches!(
        t.source_kind,
        EndpointKind::File | EndpointKind::BlockDevice
    ) {
        return match mapped_sink_size(t)? {
            Some(size) => receive::receive(t, size),
            // A file open write-only cannot be mapped: another mechanism.
            None => Err(Stop::Refused {
                op: "mmap",
                errno: Errno::BADF,
            }),
        };
    }
    let page = rustix::param::page_size();
    let chunk = t.params.chunk.max(1).next_multiple_of(page);
    let mut sink_size = mapped_sink_size(t)?;
    while !t.finished() {
        let (head, want) = next_window(t, chunk, page)?;
        if want == 0 {
            return Ok(());
        }
        let window = Window {
            start: t.source_pos,
            head,
            len: want,
        };
        let source = map(t, Side::Source, window.start - head as u64, head + want)?;
        // Only a hint to read ahead harder; a kernel that ignores it
        // changes nothing about the bytes.
        t.counters.syscalls += 2;
        let _ = source.mapping().advise(Advice::Sequential);
        // Fault the window in with one call instead of one fault per
        // 16 pages; a window past a shrunken end fails with EFAULT
        // here rather than SIGBUS, and the copy's checks report it.
        let _ = source.mapping().advise(Advice::LinuxPopulateRead);
        match sink_size.as_mut() {
            Some(size) => copy_to_mapped_sink(t, &source, &window, size, page)?,
            None => write_out(t, &source, &window)?,
        }
    }
    Ok(())
}

/// Where the next window of at most `window` bytes (a multiple of `page`)
/// starts: the bytes mapped before the source position (it rounds down to
/// a page), and the bytes to move after them — 0 when the source ended.
pub(super) fn next_window(
    t: &mut Transfer<'_>,
    window: usize,
    page: usize,
) -> Result<(usize, usize), Stop> {
    let head = (t.source_pos % page as u64) as usize;
    let want = match t.remaining {
        Some(_) => t.next_len(window - head),
        None => {
            let end = source_end(t)?;
            (window - head).min(end.saturating_sub(t.source_pos) as usize)
        }
    };
    Ok((head, want))
}

/// The part of the source one mapping covers.
struct Window {
    /// Source offset of the first byte to move.
    start: u64,
    /// Bytes mapped before `start` (it rounded down to a page).
    head: usize,
    /// Bytes to move.
    len: usize,
}

impl Window {
    fn end(&self) -> u64 {
        self.start + self.len as u64
    }

    fn bytes<'g>(&self, guard: &'g Guard) -> &'g [u8] {
        &guard.mapping().as_slice()[self.head..self.head + self.len]
    }
}

/// The sink file's size when the sink is to be mapped: a regular file open
/// for reading and writing (a shared writable map needs both). `None`
/// means write out of the source map instead.
fn mapped_sink_size(t: &mut Transfer<'_>) -> Result<Option<u64>, Stop> {
    if t.sink_kind != EndpointKind::File {
        return Ok(None);
    }
    let fd = t.sink_fd();
    t.counters.syscalls += 1;
    let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| t.failed("fcntl", Side::Sink, e))?;
    if flags & OFlags::RWMODE != OFlags::RDWR {
        return Ok(None);
    }
    t.counters.syscalls += 1;
    let stat = rustix::fs::fstat(fd).map_err(|e| t.failed("fstat", Side::Sink, e))?;
    Ok(Some(stat.st_size as u64))
}

/// Maps `len` bytes of one side's descriptor from `offset` (page-aligned),
/// guarded against SIGBUS. Counts the `munmap` to come as well.
pub(super) fn map(
    t: &mut Transfer<'_>,
    side: Side,
    offset: u64,
    len: usize,
) -> Result<Guard, Stop> {
    let (fd, writable) = match side {
        Side::Source => (t.source_fd(), false),
        Side::Sink => (t.sink_fd(), true),
    };
    t.counters.syscalls += 2;
    let mapping = Mapping::map(fd, offset, len, writable).map_err(|e| match errno_of(&e) {
        // The file system has no mmap (sysfs, some FUSE and network file
        // systems): not this way, but another mechanism can.
        Errno::NODEV => Stop::Refused {
            op: "mmap",
            errno: Errno::NODEV,
        },
        errno => t.refused_or_failed("mmap", side, errno),
    })?;
    // Every slot of the process-wide table taken by other flows: the
    // mechanism cannot run safely now, another can.
    Guard::new(mapping).map_err(|e| Stop::Refused {
        op: "sigbus guard",
        errno: errno_of(&e),
    })
}

/// Reserves the sink's blocks for `len` bytes at the sink position and
/// makes sure the file reaches that far, so that the map covers real file
/// pages.
fn reserve(t: &mut Transfer<'_>, len: usize, size: &mut u64) -> Result<(), Stop> {
    let end = t.sink_pos + len as u64;
    if reserve_sink(t, len as u64)? {
        *size = (*size).max(end);
    }
    if *size < end {
        t.counters.syscalls += 1;
        rustix::fs::ftruncate(t.sink_fd(), end)
            .map_err(|e| t.failed("ftruncate", Side::Sink, e))?;
        *size = end;
    }
    Ok(())
}

/// Copies one window from the source map into a map of the sink file.
fn copy_to_mapped_sink(
    t: &mut Transfer<'_>,
    source: &Guard,
    window: &Window,
    sink_size: &mut u64,
    page: usize,
) -> Result<(), Stop> {
    reserve(t, window.len, sink_size)?;
    let sink_start = t.sink_pos;
    let sink_head = (sink_start % page as u64) as usize;
    let sink_offset = sink_start - sink_head as u64;
    let mut sink = map(t, Side::Sink, sink_offset, sink_head + window.len)?;
    // One call makes every sink page writable; without it each 4 KiB page
    // takes its own write fault (65536 faults per 256 MiB). Older kernels
    // refuse the advice, and then the faults happen as before.
    t.counters.syscalls += 1;
    let _ = sink.mapping().advise(Advice::LinuxPopulateWrite);
    sink.mapping_mut().as_mut_slice()[sink_head..].copy_from_slice(window.bytes(source));
    check_source(t, source, window)?;
    if let Some(fault) = sink.fault_offset() {
        return Err(Stop::Failed(Error::MappingFault {
            endpoint: t.sink_label.to_string(),
            offset: sink_offset + fault as u64,
            why: "the sink's file system is out of space",
        }));
    }
    drop(sink);
    t.advance(window.len as u64);
    Ok(())
}

/// Writes one window out of the source map to a sink that is not mapped.
fn write_out(t: &mut Transfer<'_>, source: &Guard, window: &Window) -> Result<(), Stop> {
    match write_sink(t, window.bytes(source)) {
        Ok(()) => {}
        // The kernel could not read the mapped pages: the file shrank.
        // The write stopped short at the first unreadable page, so the
        // sink has exactly the bytes up to the transfer's position.
        Err(Stop::Failed(Error::Io { source: ref e, .. }))
            if Errno::from_io_error(e) == Some(Errno::FAULT) =>
        {
            return Err(source_ended(t, t.source_pos));
        }
        Err(stop) => return Err(stop),
    }
    // The whole window went out (bytes past a partial last page as zeros)
    // before the shrink was seen: name where the sink stands, so that
    // whoever resumes from the offset neither skips nor repeats bytes.
    match check_source(t, source, window) {
        Err(Stop::Failed(Error::SourceEnded { .. })) => Err(source_ended(t, t.source_pos)),
        other => other,
    }
}

/// After a window's bytes were read: did the source shrink under it?
fn check_source(t: &mut Transfer<'_>, source: &Guard, window: &Window) -> Result<(), Stop> {
    let mapped_from = window.start - window.head as u64;
    let fault = source
        .fault_offset()
        .map(|offset| mapped_from + offset as u64);
    let size = source_size_now(t)?;
    let short = size.filter(|&size| size < window.end());
    let offset = match (fault, short) {
        (None, None) => return Ok(()),
        (Some(fault), None) => fault,
        (fault, Some(size)) => fault.map_or(size, |fault| fault.min(size)),
    };
    Err(source_ended(t, offset.clamp(window.start, window.end())))
}

/// The source file's size now; `None` for a block device, which does not
/// shrink (and whose `st_size` is 0).
pub(super) fn source_size_now(t: &mut Transfer<'_>) -> Result<Option<u64>, Stop> {
    if t.source_kind != EndpointKind::File {
        return Ok(None);
    }
    t.counters.syscalls += 1;
    let stat = rustix::fs::fstat(t.source_fd()).map_err(|e| t.failed("fstat", Side::Source, e))?;
    Ok(Some(stat.st_size as u64))
}

/// Where the source ends, for a transfer of unknown length.
fn source_end(t: &mut Transfer<'_>) -> Result<u64, Stop> {
    if let Some(size) = source_size_now(t)? {
        return Ok(size);
    }
    t.counters.syscalls += 1;
    rustix::fs::seek(t.source_fd(), SeekFrom::End(0))
        .map_err(|e| t.failed("lseek", Side::Source, e))
}

pub(super) fn source_ended(t: &Transfer<'_>, offset: u64) -> Stop {
    Stop::Failed(Error::SourceEnded {
        endpoint: t.source_label.to_string(),
        offset,
        end: t.source_pos + t.remaining.unwrap_or(0),
    })
}

fn errno_of(error: &std::io::Error) -> Errno {
    Errno::from_io_error(error).unwrap_or(Errno::IO)
}
