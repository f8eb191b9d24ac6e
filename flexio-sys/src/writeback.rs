//! `sync_file_range(2)`, which rustix does not wrap.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Why a writeback request did not go through.
pub enum WritebackError {
    /// The descriptor or kernel does not support it (`EINVAL`, `ESPIPE`,
    /// `ENOSYS`, `EOPNOTSUPP`).
    Unsupported,
    /// A real I/O error (`EIO`, `ENOSPC`, …).
    Io(io::Error),
}

fn sync_file_range(
    fd: BorrowedFd<'_>,
    offset: u64,
    len: u64,
    flags: libc::c_uint,
) -> Result<(), WritebackError> {
    // SAFETY: plain system call on a borrowed, open descriptor; no memory is
    // passed.
    let rc = unsafe { libc::sync_file_range(fd.as_raw_fd(), offset as i64, len as i64, flags) };
    if rc == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EINVAL | libc::ESPIPE | libc::ENOSYS | libc::EOPNOTSUPP) => {
            Err(WritebackError::Unsupported)
        }
        _ => Err(WritebackError::Io(error)),
    }
}

/// Starts writing the dirty pages of the range back, without waiting.
///
/// Reference: <https://man7.org/linux/man-pages/man2/sync_file_range.2.html>
pub fn start_writeback(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Result<(), WritebackError> {
    sync_file_range(fd, offset, len, libc::SYNC_FILE_RANGE_WRITE)
}

/// Waits until the range's writeback is done (starting any that is not).
pub fn wait_writeback(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Result<(), WritebackError> {
    sync_file_range(
        fd,
        offset,
        len,
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
    )
}
