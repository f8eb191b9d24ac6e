//! Bytes moved so far and to move, shared between a flow and whoever
//! watches it (a progress bar).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes moved so far and bytes to move, shared with whoever draws a
/// progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    pub(crate) done: AtomicU64,
    pub(crate) total: AtomicU64,
}

impl Progress {
    /// Bytes in the sink so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Bytes the flow will move, once known (`None` for a stream read to
    /// its end).
    pub fn total(&self) -> Option<u64> {
        match self.total.load(Ordering::Relaxed) {
            0 if self.done() == 0 => None,
            u64::MAX => None,
            total => Some(total),
        }
    }
}
