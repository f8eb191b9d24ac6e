//! The tuner's error: what it was doing, to which path, and what the
//! system or the engine said. Failures of the measuring harness underneath
//! (making the scratch tree) stay the harness's [`flexio_harness::Error`],
//! wrapped.

use std::io;
use std::path::PathBuf;

/// What went wrong while tuning.
///
/// # Examples
/// ```
/// use flexio_tune::Error;
/// let error = Error::io("remove", "/tmp/copy", std::io::ErrorKind::NotFound.into());
/// assert_eq!(error.to_string(), "remove /tmp/copy: entity not found");
/// assert_eq!(Error::Stopped.to_string(), "stopped on request");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The measuring harness failed (making the scratch tree).
    #[error(transparent)]
    Harness(#[from] flexio_harness::Error),
    /// A file-system operation on `path` failed.
    #[error("{operation} {}: {source}", path.display())]
    Io {
        /// What was being done (`make a scratch directory in`, `remove`, …).
        operation: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A timed tree copy failed as a whole.
    #[error("tree copy with {jobs} workers: {source}")]
    TreeCopy {
        /// The worker count it ran with.
        jobs: usize,
        /// What the engine said.
        #[source]
        source: flexio::Error,
    },
    /// A timed tree copy failed on one file (the first that failed).
    #[error("tree copy with {jobs} workers: {path}: {why}")]
    TreeFile {
        /// The worker count it ran with.
        jobs: usize,
        /// The source file.
        path: String,
        /// The engine's error for it, one line.
        why: String,
    },
    /// The tune was stopped on request (Ctrl-C) between two copies.
    #[error("stopped on request")]
    Stopped,
}

impl Error {
    /// An [`Error::Io`] for `operation` on `path`.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_tune::Error::io("open", "/x", std::io::ErrorKind::NotFound.into());
    /// assert!(error.to_string().starts_with("open /x: "));
    /// ```
    pub fn io(operation: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            operation,
            path: path.into(),
            source,
        }
    }
}

/// `Result` with the tuner's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
