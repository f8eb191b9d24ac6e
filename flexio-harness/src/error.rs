//! The harness's error: what was being done, to which path, and what the
//! system said; or what this machine lacks for a measurement, which the
//! caller reports as a skip.

use std::io;
use std::path::PathBuf;

/// What went wrong in the harness.
///
/// # Examples
/// ```
/// use flexio_harness::Error;
/// let error = Error::io("mkdir", "/no/such/dir", std::io::ErrorKind::NotFound.into());
/// assert_eq!(error.to_string(), "mkdir /no/such/dir: entity not found");
/// let skip = Error::Unavailable { why: "a memory cgroup needs root".into() };
/// assert_eq!(skip.to_string(), "skipped: a memory cgroup needs root");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file-system operation on `path` failed.
    #[error("{operation} {}: {source}", path.display())]
    Io {
        /// What was being done (`mkdir`, `write`, `open`, …).
        operation: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A socket operation at `address` failed.
    #[error("{operation} {address}: {source}")]
    Net {
        /// What was being done (`bind a free port on`, …).
        operation: &'static str,
        /// Where.
        address: std::net::SocketAddr,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A command (`ip …`) could not run or said no.
    #[error("{command}: {why}")]
    Command {
        /// The command line, as typed.
        command: String,
        /// Why: its standard error, or why it could not start.
        why: String,
    },
    /// What was asked for cannot be done: out of range, or needs what
    /// this process lacks (root).
    #[error("{why}")]
    Refused {
        /// Why, in words.
        why: String,
    },
    /// This machine lacks what the measurement needs (root, a cgroup
    /// controller): the caller skips it and says why.
    #[error("skipped: {why}")]
    Unavailable {
        /// Why, in words.
        why: String,
    },
}

impl Error {
    /// An [`Error::Io`] for `operation` on `path`.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_harness::Error::io("open", "/x", std::io::ErrorKind::NotFound.into());
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

/// The callers above the harness (scenarios, the tuner) report failures
/// as words; the message is the error's.
impl From<Error> for String {
    fn from(error: Error) -> String {
        error.to_string()
    }
}

/// For callers whose own errors are `io::Error`s: the kind is kept where
/// there is one, the message is the error's.
impl From<Error> for io::Error {
    fn from(error: Error) -> io::Error {
        let kind = match &error {
            Error::Io { source, .. } | Error::Net { source, .. } => source.kind(),
            Error::Command { .. } => io::ErrorKind::Other,
            Error::Refused { .. } => io::ErrorKind::InvalidInput,
            Error::Unavailable { .. } => io::ErrorKind::Unsupported,
        };
        io::Error::new(kind, error)
    }
}

/// `Result` with the harness's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
