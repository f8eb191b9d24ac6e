//! The seeds' error: what an experiment was doing, to which path (and
//! where in it), program or socket, and what the system or the program
//! said. Failures of the bench and the harness underneath stay theirs,
//! wrapped.

use std::io;
use std::path::PathBuf;

/// What went wrong in an experiment.
///
/// # Examples
/// ```
/// use flexio_seeds::Error;
/// let error = Error::io("open", "/no/such/file", std::io::ErrorKind::NotFound.into());
/// assert_eq!(error.to_string(), "open /no/such/file: entity not found");
/// let error = Error::io_at("pread", "/dev/loop3", 4096, std::io::ErrorKind::InvalidInput.into());
/// assert_eq!(error.to_string(), "pread /dev/loop3 at offset 4096: invalid input parameter");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bench underneath failed (a supervised process, a data file).
    #[error(transparent)]
    Bench(#[from] flexio_bench::Error),
    /// The measuring harness underneath failed.
    #[error(transparent)]
    Harness(#[from] flexio_harness::Error),
    /// A flexio flow failed (its error names the operation and path).
    #[error(transparent)]
    Flow(#[from] flexio::Error),
    /// A file-system operation on `path` failed.
    #[error("{operation} {}: {source}", path.display())]
    Io {
        /// What was being done (`open`, `create`, `fadvise`, …).
        operation: &'static str,
        /// The file, directory or device it was done to.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A read or write at `offset` in `path` failed.
    #[error("{operation} {} at offset {offset}: {source}", path.display())]
    IoAt {
        /// What was being done (`pread(O_DIRECT)`, `write`, …).
        operation: &'static str,
        /// The file or device.
        path: PathBuf,
        /// Where in it, in bytes.
        offset: u64,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A socket operation failed.
    #[error("{operation}: {source}")]
    Socket {
        /// The call, with what it was given (`bind UDP on 127.0.0.1`, …).
        operation: String,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A program could not be started, or not be waited for.
    #[error("{operation} {program}: {source}")]
    Spawn {
        /// `start` or `wait for`.
        operation: &'static str,
        /// The program, or the copy that ran it.
        program: String,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A program (or a copy) ran and failed, or answered what cannot be
    /// used.
    #[error("{program}: {why}")]
    Program {
        /// The program, or the copy that ran it.
        program: String,
        /// Its exit status and what it said, or what was wrong.
        why: String,
    },
    /// A read or a copy moved another number of bytes than it should.
    #[error("{what} moved {moved} bytes of {expected}")]
    Short {
        /// The read or the copy.
        what: String,
        /// The bytes it moved.
        moved: u64,
        /// The bytes it should have.
        expected: u64,
    },
    /// This machine lacks what the experiment needs (root, a cgroup
    /// controller, a block device): the exhibit says so as its shortfall.
    #[error("{0}")]
    Unavailable(String),
    /// A loop device could not be attached (`losetup`'s words).
    #[error("{0}")]
    LoopDevice(String),
    /// A thread of the experiment (a receiver) panicked.
    #[error("{0} panicked")]
    Panicked(&'static str),
    /// No exhibit has this name.
    #[error("unknown exhibit {id:?}; known: {known}")]
    UnknownExhibit {
        /// The name asked for.
        id: String,
        /// The names there are, comma-separated.
        known: String,
    },
    /// The experiment was stopped by a signal.
    #[error("stopped by a signal")]
    Stopped,
}

impl Error {
    /// An [`Error::Io`] for `operation` on `path`.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_seeds::Error::io("open", "/x", std::io::ErrorKind::NotFound.into());
    /// assert!(error.to_string().starts_with("open /x: "));
    /// ```
    pub fn io(operation: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            operation,
            path: path.into(),
            source,
        }
    }

    /// An [`Error::IoAt`] for `operation` at `offset` in `path`.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_seeds::Error::io_at("read", "/x", 8, std::io::ErrorKind::Other.into());
    /// assert!(error.to_string().starts_with("read /x at offset 8: "));
    /// ```
    pub fn io_at(
        operation: &'static str,
        path: impl Into<PathBuf>,
        offset: u64,
        source: io::Error,
    ) -> Error {
        Error::IoAt {
            operation,
            path: path.into(),
            offset,
            source,
        }
    }

    /// An [`Error::Program`]: `program` ran and `why` went wrong.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_seeds::Error::program("dd", "exit status: 1");
    /// assert_eq!(error.to_string(), "dd: exit status: 1");
    /// ```
    pub fn program(program: impl Into<String>, why: impl Into<String>) -> Error {
        Error::Program {
            program: program.into(),
            why: why.into(),
        }
    }
}

/// `Result` with the seeds' [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
