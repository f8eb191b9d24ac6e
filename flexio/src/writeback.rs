//! Early writeback for durable flows.
//!
//! `cp SRC DST && sync` reads everything into the page cache and only then
//! writes it out; a durable flexio flow instead starts writing each slice
//! of the sink as soon as it is in the page cache
//! (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that reading the source
//! and writing the sink overlap, and waits for a slice only when two newer
//! ones are on their way, which also bounds the dirty memory a flow holds.
//! The fsync at the end stays the guarantee; this only moves the work
//! earlier.

use std::collections::VecDeque;
use std::os::fd::BorrowedFd;

use crate::error::{Error, Result};
use crate::mechanism::Counters;
use crate::sys::writeback::{start_writeback, wait_writeback, WritebackError};

/// Bytes written between two writeback requests.
const SLICE: u64 = 8 << 20;
/// Slices under writeback before the oldest is waited for.
const IN_FLIGHT: usize = 2;

/// The slices of the sink under writeback.
pub(crate) struct Writeback {
    /// Bytes per slice.
    pub slice: u64,
    in_flight: VecDeque<(u64, u64)>,
    /// Unwritten bytes at the sink position of the last request.
    pending: Option<(u64, u64)>,
    disabled: bool,
}

impl Writeback {
    pub fn new() -> Self {
        Writeback {
            slice: SLICE,
            in_flight: VecDeque::new(),
            pending: None,
            disabled: false,
        }
    }

    /// `len` bytes at `offset` of the sink reached the page cache.
    pub fn written(
        &mut self,
        fd: BorrowedFd<'_>,
        offset: u64,
        len: u64,
        counters: &mut Counters,
        label: &str,
    ) -> Result<()> {
        if self.disabled || len == 0 {
            return Ok(());
        }
        let range = match self.pending.take() {
            Some((start, pending)) if start + pending == offset => (start, pending + len),
            _ => (offset, len),
        };
        if range.1 < self.slice {
            self.pending = Some(range);
            return Ok(());
        }
        counters.syscalls += 1;
        match start_writeback(fd, range.0, range.1) {
            Ok(()) => self.in_flight.push_back(range),
            Err(WritebackError::Unsupported) => {
                // Not on this file (a pipe-backed device, an old kernel):
                // the final fsync does all the work, as without us.
                self.disabled = true;
                return Ok(());
            }
            Err(WritebackError::Io(error)) => {
                return Err(Error::io("sync_file_range", label, Some(range.0), error))
            }
        }
        while self.in_flight.len() > IN_FLIGHT {
            let (start, len) = self.in_flight.pop_front().expect("non-empty");
            counters.syscalls += 1;
            match wait_writeback(fd, start, len) {
                Ok(()) | Err(WritebackError::Unsupported) => {}
                Err(WritebackError::Io(error)) => {
                    return Err(Error::io("sync_file_range", label, Some(start), error))
                }
            }
        }
        Ok(())
    }
}

/// Splits `length` bytes from `start` into slices of `slice` bytes (one
/// piece when there is no slicing or the length is open-ended).
pub(crate) fn slices(
    start: u64,
    length: Option<u64>,
    slice: Option<u64>,
) -> Vec<(u64, Option<u64>)> {
    match (length, slice) {
        (Some(length), Some(slice)) if length > slice => {
            let mut pieces = Vec::with_capacity(length.div_ceil(slice) as usize);
            let mut at = start;
            let end = start + length;
            while at < end {
                let len = slice.min(end - at);
                pieces.push((at, Some(len)));
                at += len;
            }
            pieces
        }
        _ => vec![(start, length)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_range_exactly() {
        assert_eq!(
            slices(10, Some(25), Some(10)),
            vec![(10, Some(10)), (20, Some(10)), (30, Some(5))]
        );
        assert_eq!(slices(0, Some(10), Some(10)), vec![(0, Some(10))]);
        assert_eq!(slices(0, None, Some(10)), vec![(0, None)]);
        assert_eq!(slices(7, Some(100), None), vec![(7, Some(100))]);
        assert_eq!(slices(0, Some(0), Some(10)), vec![(0, Some(0))]);
    }
}
