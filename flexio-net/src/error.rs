//! The errors of serving and fetching: each names the peer or path it
//! concerns and, for a body, the byte offset where it stopped.

use std::io;

/// Everything that can go wrong while serving or fetching.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A bad argument: a URL that is not `http://`, a destination that
    /// cannot be named, a directory that cannot be served.
    #[error("{0}")]
    Usage(String),

    /// The peer broke the protocol or its own promises: a head too large,
    /// a malformed status line, a Content-Range that is not the one asked
    /// for, a body that ended before its Content-Length.
    #[error("{peer}: {message}")]
    Protocol {
        /// The peer.
        peer: String,
        /// What it did wrong, with offsets where they matter.
        message: String,
    },

    /// The peer sent nothing for the deadline.
    #[error("{peer}: nothing received for {waited:?} while {during}")]
    Timeout {
        /// The peer.
        peer: String,
        /// The deadline that passed.
        waited: std::time::Duration,
        /// What was being waited for.
        during: &'static str,
    },

    /// The server answered with an error status.
    #[error("{peer}: the server answered {status} {reason}")]
    Status {
        /// The peer.
        peer: String,
        /// The HTTP status code.
        status: u16,
        /// Its reason phrase.
        reason: String,
    },

    /// The server sent the request elsewhere on the same origin (a
    /// directory's URL without its trailing slash answers 301 to the one
    /// with it): the caller may fetch `location` instead.
    #[error("{peer}: the server answered {status}, to {location}")]
    Redirect {
        /// The peer.
        peer: String,
        /// The HTTP status code (301, 302, 303, 307 or 308).
        status: u16,
        /// Where to, as a whole URL.
        location: String,
    },

    /// A system call on a connection or a file failed ([`flexio::Error::Io`],
    /// naming the operation, the peer or path, and the offset), or moving a
    /// body with the engine did: one error type for both layers' I/O.
    #[error(transparent)]
    Move(#[from] flexio::Error),

    /// A get stopped by `source`; `what_remains` says what became of the
    /// bytes that arrived.
    #[error("{source}; {what_remains}")]
    Stopped {
        /// Why it stopped.
        source: Box<Error>,
        /// Nothing left, or a partial file kept for `--resume`.
        what_remains: String,
    },

    /// The fetched bytes do not match the server's manifest.
    #[error("{path}: BLAKE3 of chunk {chunk} (bytes {offset}..) differs from the server's manifest; not committed")]
    VerifyMismatch {
        /// The destination.
        path: String,
        /// The index of the first chunk that differs.
        chunk: usize,
        /// Its first byte.
        offset: u64,
    },
}

impl Error {
    /// Whether the transfer was described wrongly (a bad URL or argument),
    /// as opposed to failing while it ran; a command line maps the two to
    /// its exit statuses.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Usage(_) => true,
            Error::Move(inner) => inner.is_usage(),
            Error::Stopped { source, .. } => source.is_usage(),
            _ => false,
        }
    }

    /// The error itself, seen through [`Error::Stopped`].
    pub fn cause(&self) -> &Error {
        match self {
            Error::Stopped { source, .. } => source.cause(),
            other => other,
        }
    }

    pub(crate) fn io(
        op: &'static str,
        endpoint: impl Into<String>,
        offset: Option<u64>,
        source: impl Into<io::Error>,
    ) -> Self {
        Error::Move(flexio::Error::Io {
            op,
            endpoint: endpoint.into(),
            offset,
            source: source.into(),
        })
    }

    pub(crate) fn protocol(peer: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Protocol {
            peer: peer.into(),
            message: message.into(),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
