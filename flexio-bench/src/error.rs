//! The bench's error: what a scenario was doing, to which path, program
//! or peer, and what the system or the program said. Failures of the
//! measuring harness underneath (a tree, a namespace, a memory group, a
//! free port) stay the harness's [`flexio_harness::Error`], wrapped.

use std::io;
use std::path::PathBuf;

/// What went wrong in a scenario.
///
/// # Examples
/// ```
/// use flexio_bench::Error;
/// let error = Error::io("mkdir", "/no/such/dir", std::io::ErrorKind::NotFound.into());
/// assert_eq!(error.to_string(), "mkdir /no/such/dir: entity not found");
/// let peer = Error::peer("nginx", "not installed");
/// assert_eq!(peer.to_string(), "nginx: not installed");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The measuring harness failed: making a tree, a namespace, a
    /// memory group, finding a free port.
    #[error(transparent)]
    Harness(#[from] flexio_harness::Error),
    /// A file-system operation on `path` failed.
    #[error("{operation} {}: {source}", path.display())]
    Io {
        /// What was being done (`mkdir`, `create`, `write`, …).
        operation: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A call that names no path failed (binding a socket, `unshare`).
    #[error("{operation}: {source}")]
    System {
        /// The call, with what it was given.
        operation: &'static str,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A program could not be started, or not be waited for.
    #[error("{operation} {program}: {source}")]
    Spawn {
        /// `start` or `wait for`.
        operation: &'static str,
        /// The program (or which process of a group).
        program: String,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A program ran and failed, ran past its limit, or answered what
    /// cannot be read.
    #[error("{program}: {why}")]
    Program {
        /// The program, or the contender that ran it.
        program: String,
        /// Its exit status and what it said, or what was wrong.
        why: String,
    },
    /// A program's JSON answer could not be read.
    #[error("{what}: {source}")]
    Json {
        /// Whose answer (`iperf3's JSON`, …).
        what: &'static str,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A peer (a server, a tool) is missing or could not serve: the
    /// scenario goes on without it where it can, and says why.
    #[error("{peer}: {why}")]
    Peer {
        /// The peer's name (`nginx`, `sshd`, `process 2`, …).
        peer: String,
        /// Why, in words.
        why: String,
    },
    /// What a scenario needs root for, asked for by a process that is not.
    #[error("{0} needs root")]
    NeedsRoot(&'static str),
    /// A thread of the scenario (a receiver, a client) panicked.
    #[error("{0} panicked")]
    Panicked(&'static str),
    /// The options ask for what the scenario cannot do.
    #[error("{0}")]
    Usage(String),
    /// The scenario was stopped on request (a signal).
    #[error("{0}")]
    Stopped(&'static str),
}

impl Error {
    /// An [`Error::Io`] for `operation` on `path`.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_bench::Error::io("open", "/x", std::io::ErrorKind::NotFound.into());
    /// assert!(error.to_string().starts_with("open /x: "));
    /// ```
    pub fn io(operation: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            operation,
            path: path.into(),
            source,
        }
    }

    /// An [`Error::Spawn`]: `operation` (`start`, `wait for`) of `program`.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_bench::Error::spawn("start", "nginx", std::io::ErrorKind::NotFound.into());
    /// assert_eq!(error.to_string(), "start nginx: entity not found");
    /// ```
    pub fn spawn(operation: &'static str, program: impl Into<String>, source: io::Error) -> Error {
        Error::Spawn {
            operation,
            program: program.into(),
            source,
        }
    }

    /// An [`Error::Program`]: `program` ran and `why` went wrong.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_bench::Error::program("mount", "exit status: 32");
    /// assert_eq!(error.to_string(), "mount: exit status: 32");
    /// ```
    pub fn program(program: impl Into<String>, why: impl Into<String>) -> Error {
        Error::Program {
            program: program.into(),
            why: why.into(),
        }
    }

    /// An [`Error::Peer`]: `peer` is missing or could not serve.
    ///
    /// # Examples
    /// ```
    /// let error = flexio_bench::Error::peer("iperf3", "not installed");
    /// assert_eq!(error.to_string(), "iperf3: not installed");
    /// ```
    pub fn peer(peer: impl Into<String>, why: impl Into<String>) -> Error {
        Error::Peer {
            peer: peer.into(),
            why: why.into(),
        }
    }
}

/// `Result` with the bench's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
