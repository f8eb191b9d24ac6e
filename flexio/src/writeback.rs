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
/// piece when there is no slicing or the length is open-ended). An
/// iterator, not a vector: the engine asks for it once per segment of every
/// flow, and a small flow should not pay an allocation for its one piece.
#[inline]
pub(crate) fn slices(
    start: u64,
    length: Option<u64>,
    slice: Option<u64>,
) -> impl Iterator<Item = (u64, Option<u64>)> {
    let step = match (length, slice) {
        (Some(length), Some(slice)) if length > slice => slice,
        _ => u64::MAX,
    };
    let end = length.map(|length| start + length);
    let mut at = start;
    let mut first = true;
    std::iter::from_fn(move || {
        // The first piece is always given, even an empty one.
        let piece = match end {
            None if first => (start, None),
            None => return None,
            Some(end) if at >= end && !first => return None,
            Some(end) => {
                let len = step.min(end - at);
                let piece = (at, Some(len));
                at += len;
                piece
            }
        };
        first = false;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_range_exactly() {
        let all = |start, length, slice| slices(start, length, slice).collect::<Vec<_>>();
        assert_eq!(
            all(10, Some(25), Some(10)),
            vec![(10, Some(10)), (20, Some(10)), (30, Some(5))]
        );
        assert_eq!(all(0, Some(10), Some(10)), vec![(0, Some(10))]);
        assert_eq!(
            all(0, Some(20), Some(10)),
            vec![(0, Some(10)), (10, Some(10))]
        );
        assert_eq!(all(0, None, Some(10)), vec![(0, None)]);
        assert_eq!(all(7, Some(100), None), vec![(7, Some(100))]);
        assert_eq!(all(0, Some(0), Some(10)), vec![(0, Some(0))]);
    }
}
