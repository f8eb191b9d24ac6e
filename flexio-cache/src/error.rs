//! The crate's one error type: an I/O error carries the operation, the path
//! and, where it has one, the byte offset.

use std::io;

/// What can go wrong in the cache, the trace reader or the simulator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A bad argument: a block size that is not a power of two, a cache
    /// smaller than one block.
    #[error("{0}")]
    Usage(String),

    /// A system call failed.
    #[error("{op} {path}{}: {source}", offset.map(|o| format!(" at byte {o}")).unwrap_or_default())]
    Io {
        /// The operation, e.g. `open`, `read`, `io_uring write`.
        op: &'static str,
        /// The file or device.
        path: String,
        /// The byte offset, if the operation had one.
        offset: Option<u64>,
        /// The error the kernel returned.
        source: io::Error,
    },

    /// A trace file line or generator spec that does not parse.
    #[error("{0}")]
    Trace(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
