//! The `O_DIRECT` setup that `direct` (`direct.rs`, a mechanism) and
//! `io-uring --direct` share, not a mechanism itself: discovering the
//! alignment direct I/O needs on a file or block device, and switching the
//! flag on an already open descriptor for the length of one `run`.
//!
//! The engine opens descriptors without `O_DIRECT` (every other mechanism
//! wants the page cache), so these mechanisms open the same file again
//! with `O_DIRECT`, through `/proc/self/fd`: a file description of their
//! own. Setting the flag with `fcntl(F_SETFL)` would set it on the
//! description every writer shares — several ranges written into one
//! `NewFile` from several threads raced on it, and a buffered tail met
//! `EINVAL`. Only where the file cannot be opened again (a read-only file
//! written by an unprivileged user) is the shared flag set, and put back
//! when the mechanism returns.
//!
//! References: <https://man7.org/linux/man-pages/man2/open.2.html> (O_DIRECT
//! restrictions), <https://man7.org/linux/man-pages/man2/statx.2.html>
//! (STATX_DIOALIGN).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, OFlags, StatxFlags};
use rustix::io::Errno;

use super::io::reserve_sink;
use super::transfer::{Side, Stop, Transfer};
use crate::endpoint::EndpointKind;

/// The alignment assumed when the kernel does not say (statx without
/// STATX_DIOALIGN, before Linux 6.1): a page, which every device accepts.
const DEFAULT_ALIGN: usize = 4096;

/// Whether direct I/O applies to an endpoint kind at all.
pub(crate) fn is_direct_capable(kind: EndpointKind) -> bool {
    matches!(kind, EndpointKind::File | EndpointKind::BlockDevice)
}

/// The alignment (of file offsets, lengths and memory) direct I/O needs on
/// `fd`: the logical block size of a block device, STATX_DIOALIGN of a
/// file, else 4096. A file whose filesystem reports no direct I/O support
/// gives `Err(EINVAL)`, the same answer `open(O_DIRECT)` would.
pub(crate) fn alignment(fd: BorrowedFd<'_>, kind: EndpointKind) -> Result<usize, Errno> {
    let align = match kind {
        EndpointKind::BlockDevice => rustix::fs::ioctl_blksszget(fd)? as usize,
        _ => match rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) {
            Ok(stat)
                if StatxFlags::from_bits_retain(stat.stx_mask).contains(StatxFlags::DIOALIGN) =>
            {
                if stat.stx_dio_offset_align == 0 {
                    return Err(Errno::INVAL);
                }
                (stat.stx_dio_offset_align as usize).max(stat.stx_dio_mem_align as usize)
            }
            Ok(_) | Err(Errno::NOSYS) | Err(Errno::INVAL) => DEFAULT_ALIGN,
            Err(errno) => return Err(errno),
        },
    };
    if align == 0 || !align.is_power_of_two() {
        return Ok(DEFAULT_ALIGN);
    }
    Ok(align)
}

/// `O_DIRECT` switched on for one descriptor; the original flags come back
/// when this is dropped (or [`DirectMode::restore`] is called), whatever
/// way the mechanism returns.
pub(crate) struct DirectMode<'fd> {
    fd: BorrowedFd<'fd>,
    /// The file opened again with `O_DIRECT`, while direct; `None` when
    /// the flag was set on the shared description instead (or was there).
    own: Option<OwnedFd>,
    original: OFlags,
    direct: bool,
}

impl<'fd> DirectMode<'fd> {
    /// `O_DIRECT` for `fd`: its file opened again with the flag, else the
    /// flag set on `fd` itself.
    ///
    /// # Errors
    /// What `open` or `fcntl` returns; EINVAL means the filesystem does not
    /// do direct I/O.
    pub fn enable(fd: BorrowedFd<'fd>) -> Result<Self, (&'static str, Errno)> {
        let original = rustix::fs::fcntl_getfl(fd).map_err(|e| ("fcntl(F_GETFL)", e))?;
        let mut mode = DirectMode {
            fd,
            own: None,
            original,
            direct: original.contains(OFlags::DIRECT),
        };
        if mode.direct {
            return Ok(mode);
        }
        let flags =
            (original & (OFlags::ACCMODE | OFlags::APPEND)) | OFlags::DIRECT | OFlags::CLOEXEC;
        match rustix::fs::open(
            format!("/proc/self/fd/{}", fd.as_raw_fd()).as_str(),
            flags,
            rustix::fs::Mode::empty(),
        ) {
            Ok(own) => {
                mode.own = Some(own);
                mode.direct = true;
                return Ok(mode);
            }
            // The file system does not do direct I/O: the same answer
            // F_SETFL gives, a refusal.
            Err(Errno::INVAL) => return Err(("open(O_DIRECT)", Errno::INVAL)),
            // Not to be opened again (permissions, no /proc): the shared
            // description gets the flag for the length of the run.
            Err(_) => {}
        }
        rustix::fs::fcntl_setfl(fd, original | OFlags::DIRECT)
            .map_err(|e| ("fcntl(F_SETFL, O_DIRECT)", e))?;
        mode.direct = true;
        Ok(mode)
    }

    /// Whether `O_DIRECT` is on now.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// The descriptor to move bytes through: the direct one while direct,
    /// the caller's after [`DirectMode::restore`].
    pub fn fd(&self) -> BorrowedFd<'_> {
        match &self.own {
            Some(own) => own.as_fd(),
            None => self.fd,
        }
    }

    /// Puts the original flags back (for an unaligned tail, which only a
    /// buffered write can place).
    ///
    /// # Errors
    /// What `fcntl` returns.
    pub fn restore(&mut self) -> Result<(), Errno> {
        if self.own.take().is_some() {
            self.direct = false;
            return Ok(());
        }
        if self.direct && !self.original.contains(OFlags::DIRECT) {
            rustix::fs::fcntl_setfl(self.fd, self.original)?;
        }
        self.direct = self.original.contains(OFlags::DIRECT);
        Ok(())
    }
}

impl Drop for DirectMode<'_> {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// `O_DIRECT` on a side of a transfer, or a refusal (the filesystem does
/// not do direct I/O) or failure naming that side.
fn enable_direct<'fd>(
    t: &mut Transfer<'_>,
    fd: BorrowedFd<'fd>,
    side: Side,
) -> Result<DirectMode<'fd>, Stop> {
    t.counters.syscalls += 2;
    DirectMode::enable(fd).map_err(|(op, errno)| t.refused_or_failed(op, side, errno))
}

/// The block both direct sides of a transfer can live with: the larger of
/// their alignments, at least 512 bytes; 1 when neither side is direct.
pub(crate) fn common_block(
    t: &mut Transfer<'_>,
    source_direct: bool,
    sink_direct: bool,
) -> Result<usize, Stop> {
    if !source_direct && !sink_direct {
        return Ok(1);
    }
    let mut block = 512;
    if source_direct {
        block = block.max(side_alignment(
            t,
            t.source_fd(),
            t.source_kind,
            Side::Source,
        )?);
    }
    if sink_direct {
        block = block.max(side_alignment(t, t.sink_fd(), t.sink_kind, Side::Sink)?);
    }
    Ok(block)
}

/// `O_DIRECT` on the sides asked for; each restores its flags on drop.
pub(crate) fn enable_sides<'fd>(
    t: &mut Transfer<'_>,
    source: Option<BorrowedFd<'fd>>,
    sink: Option<BorrowedFd<'fd>>,
) -> Result<(Option<DirectMode<'fd>>, Option<DirectMode<'fd>>), Stop> {
    let source = source
        .map(|fd| enable_direct(t, fd, Side::Source))
        .transpose()?;
    let sink = sink
        .map(|fd| enable_direct(t, fd, Side::Sink))
        .transpose()?;
    Ok((source, sink))
}

/// What a direct mechanism runs with: which sides are in `O_DIRECT` (their
/// modes restore the original flags on drop) and the block both respect.
pub(crate) struct DirectSetup<'fd> {
    /// The source is read with `O_DIRECT`.
    pub source_direct: bool,
    /// The alignment both direct sides need.
    pub block: usize,
    /// The source's mode while direct.
    pub source_mode: Option<DirectMode<'fd>>,
    /// The sink's mode while direct (`None`: written through the cache).
    pub sink_mode: Option<DirectMode<'fd>>,
}

/// The `O_DIRECT` set-up `direct` and `io-uring` share: each capable side
/// that `want` asks for goes direct, the sink only when it starts on a
/// block boundary (and, with `aligned_source_for_sink`, only when a direct
/// source does too: the sink's bytes must then sit aligned in the
/// buffers), and a direct file sink has the rest of the flow reserved.
pub(crate) fn set_up_direct<'fd>(
    t: &mut Transfer<'_>,
    (source_fd, sink_fd): (BorrowedFd<'fd>, BorrowedFd<'fd>),
    want: bool,
    aligned_source_for_sink: bool,
) -> Result<DirectSetup<'fd>, Stop> {
    let source_direct = want && is_direct_capable(t.source_kind);
    let sink_capable = want && is_direct_capable(t.sink_kind);
    let block = common_block(t, source_direct, sink_capable)?;
    let sink_direct = sink_capable
        && t.sink_pos.is_multiple_of(block as u64)
        && (!aligned_source_for_sink
            || !source_direct
            || t.source_pos.is_multiple_of(block as u64));
    let (source_mode, sink_mode) = enable_sides(
        t,
        source_direct.then_some(source_fd),
        sink_direct.then_some(sink_fd),
    )?;
    if sink_direct {
        reserve_direct_sink(t)?;
    }
    Ok(DirectSetup {
        source_direct,
        block,
        source_mode,
        sink_mode,
    })
}

/// Reserves the blocks of the rest of the transfer in a file sink about to
/// be written with `O_DIRECT`, and sets the file's length to reach them.
///
/// A direct write past the end of file is an extending write, and ext4 (like
/// most filesystems) performs extending direct writes one at a time and
/// synchronously: with them an io_uring's queue of writes runs at queue
/// depth one. Into reserved (unwritten) blocks below the end of file the
/// writes overwrite in place and run side by side, as `fio` does after it
/// lays its file out. A full filesystem is thus also a clean `ENOSPC`
/// naming the sink before any byte moves. Where `fallocate` is not
/// supported the writes simply extend the file as before. A new file is
/// only reserved over the source's data segments (holes stay holes); an
/// existing file written in place (`--in-place`) keeps its bytes, but a
/// flow that fails there leaves it as long as the flow would have made it.
pub(crate) fn reserve_direct_sink(t: &mut Transfer<'_>) -> Result<(), Stop> {
    let (EndpointKind::File, Some(len)) = (t.sink_kind, t.remaining) else {
        return Ok(());
    };
    if t.sink_appends {
        // Reserving would grow the file, and the appended bytes would land
        // after the reserved zeros.
        return Ok(());
    }
    if len > 0 {
        reserve_sink(t, len)?;
    }
    Ok(())
}

/// The direct-I/O alignment of a side of a transfer, as a refusal when the
/// filesystem reports it cannot do direct I/O.
fn side_alignment(
    t: &mut Transfer<'_>,
    fd: BorrowedFd<'_>,
    kind: EndpointKind,
    side: Side,
) -> Result<usize, Stop> {
    t.counters.syscalls += 1;
    alignment(fd, kind).map_err(|errno| {
        let op = match kind {
            EndpointKind::BlockDevice => "ioctl(BLKSSZGET)",
            _ => "statx(STATX_DIOALIGN)",
        };
        t.refused_or_failed(op, side, errno)
    })
}

/// `value` rounded down to a multiple of `align` (a power of two).
pub(crate) fn align_down(value: u64, align: usize) -> u64 {
    value & !(align as u64 - 1)
}

/// `value` rounded up to a multiple of `align` (a power of two).
pub(crate) fn align_up(value: usize, align: usize) -> usize {
    value.div_ceil(align) * align
}

/// A run's two descriptors and the `O_DIRECT` it set on them: where the
/// source is read and the sink written at each moment of the run.
pub(crate) struct DirectSides<'fd, 'm> {
    pub source_fd: BorrowedFd<'fd>,
    pub sink_fd: BorrowedFd<'fd>,
    /// Present while the source reads with `O_DIRECT` from this run.
    pub source_mode: Option<&'m DirectMode<'fd>>,
    /// Present while the sink has `O_DIRECT` from this run.
    pub sink_mode: Option<&'m mut DirectMode<'fd>>,
}

impl DirectSides<'_, '_> {
    /// Where the source is read: its direct descriptor while it has one.
    pub fn source_read_fd(&self) -> BorrowedFd<'_> {
        self.source_mode.map_or(self.source_fd, DirectMode::fd)
    }

    /// Where the sink is written: its direct descriptor while direct, the
    /// flow's own after it went buffered.
    pub fn sink_write_fd(&self) -> BorrowedFd<'_> {
        self.sink_mode
            .as_deref()
            .map_or(self.sink_fd, DirectMode::fd)
    }

    /// Whether the sink is written with `O_DIRECT` now.
    pub fn sink_direct(&self) -> bool {
        self.sink_mode.as_ref().is_some_and(|mode| mode.is_direct())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn rounding() {
        assert_eq!(align_down(12345, 4096), 12288);
        assert_eq!(align_down(4096, 4096), 4096);
        assert_eq!(align_up(1, 512), 512);
        assert_eq!(align_up(4096, 4096), 4096);
        assert_eq!(align_up(0, 4096), 0);
    }

    #[test]
    fn direct_mode_leaves_the_shared_description_alone() {
        let file = tempfile::tempfile().unwrap();
        let before = rustix::fs::fcntl_getfl(&file).unwrap();
        match DirectMode::enable(file.as_fd()) {
            Ok(mut mode) => {
                assert!(mode.is_direct());
                assert!(rustix::fs::fcntl_getfl(mode.fd())
                    .unwrap()
                    .contains(OFlags::DIRECT));
                // Other writers of the same description see no O_DIRECT.
                assert_eq!(rustix::fs::fcntl_getfl(&file).unwrap(), before);
                mode.restore().unwrap();
                assert!(!mode.is_direct());
                assert_eq!(rustix::fs::fcntl_getfl(mode.fd()).unwrap(), before);
                drop(mode);
                assert_eq!(rustix::fs::fcntl_getfl(&file).unwrap(), before);
            }
            Err((_, errno)) => assert_eq!(errno, Errno::INVAL, "only a refusal is acceptable"),
        }
        let align = alignment(file.as_fd(), EndpointKind::File);
        assert!(align.map_or(true, |a| a.is_power_of_two()));
    }
}
