//! The one error type of the library.
//!
//! Every I/O failure carries the operation that failed, the endpoint it
//! touched and, where it has one, the byte offset, so that a one-line message
//! is enough to act on.

use std::io;

use crate::names::{EndpointKind, MechanismName, UnknownMechanism};

/// Everything that can go wrong while describing or running a flow.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The flow was described wrongly: a bad argument, a missing source, a
    /// directory given as a file, a file copied onto itself.
    #[error("{0}")]
    Usage(String),

    /// The chosen mechanism cannot move bytes between these two kinds of
    /// endpoint.
    #[error(
        "{mechanism} cannot move {source_kind} -> {sink_kind}; mechanisms that can: {}",
        alternatives.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
    )]
    UnsupportedPair {
        /// The mechanism that was asked for.
        mechanism: MechanismName,
        /// The kind of the source endpoint.
        source_kind: EndpointKind,
        /// The kind of the sink endpoint.
        sink_kind: EndpointKind,
        /// The mechanisms that do serve this pair.
        alternatives: Vec<MechanismName>,
    },

    /// A system call failed.
    #[error("{op} {endpoint}{}: {source}", offset.map(|o| format!(" at byte {o}")).unwrap_or_default())]
    Io {
        /// The operation, e.g. `read`, `splice`, `open`.
        op: &'static str,
        /// The endpoint it touched (a path, `stdin`, `tcp://...`).
        endpoint: String,
        /// The byte offset of the flow at which it failed, if it had one.
        offset: Option<u64>,
        /// The error the kernel returned.
        source: io::Error,
    },

    /// The source ended before the requested range was moved: a file
    /// truncated under us, a peer that closed its socket early.
    #[error("{endpoint} ended early at byte {offset}, before byte {end}")]
    SourceEnded {
        /// The source endpoint.
        endpoint: String,
        /// The source offset at which no more bytes came.
        offset: u64,
        /// The source offset the flow (or one range of a mover) was to
        /// reach.
        end: u64,
    },

    /// A memory-mapped page could not be read or written (SIGBUS): the file
    /// shrank under the mapping, or the file system ran out of space.
    #[error("{endpoint}: mapped page at byte {offset} vanished ({why})")]
    MappingFault {
        /// The endpoint whose mapping faulted.
        endpoint: String,
        /// The file offset of the faulting page.
        offset: u64,
        /// What most likely caused it.
        why: &'static str,
    },

    /// The flow made no progress for its idle timeout: a peer that sends
    /// nothing, a reader that reads nothing.
    #[error("{endpoint}: no progress for {idle:?} at byte {offset} (idle timeout)")]
    IdleTimeout {
        /// The endpoint the flow was waiting for.
        endpoint: String,
        /// That endpoint's offset in the flow when it gave up.
        offset: u64,
        /// The idle timeout.
        idle: std::time::Duration,
    },

    /// The kernel refused the mechanism and `--strict` forbids falling back.
    #[error(
        "{mechanism} refused by the kernel ({op}: {reason}) and strict mode forbids a fallback"
    )]
    StrictRefusal {
        /// The refused mechanism.
        mechanism: MechanismName,
        /// The system call that was refused.
        op: &'static str,
        /// The errno text.
        reason: String,
    },

    /// A GPU endpoint failed: no driver on this machine, a device the
    /// driver does not have, a range outside the device buffer.
    #[error("{endpoint}{}: {source}", offset.map(|o| format!(" at byte {o}")).unwrap_or_default())]
    Device {
        /// The device endpoint (`gpu:0@4096`).
        endpoint: String,
        /// The byte offset of the flow at which it failed, if it had one.
        offset: Option<u64>,
        /// What the driver said.
        source: crate::sys::gpu::GpuError,
    },

    /// `--verify` found the sink differs from the source.
    #[error("verification failed: source {source_hash} != sink {sink_hash}")]
    VerifyMismatch {
        /// BLAKE3 of the source range, hex.
        source_hash: String,
        /// BLAKE3 of the sink, hex.
        sink_hash: String,
    },
}

impl Error {
    /// Whether the flow was described wrongly (nothing was moved), as
    /// opposed to failing while it ran. A command line maps the two to
    /// its exit statuses (flexio's: 2 and 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_) | Error::UnsupportedPair { .. })
    }

    /// Builds an [`Error::Io`].
    pub(crate) fn io(
        op: &'static str,
        endpoint: impl Into<String>,
        offset: Option<u64>,
        source: impl Into<io::Error>,
    ) -> Self {
        Error::Io {
            op,
            endpoint: endpoint.into(),
            offset,
            source: source.into(),
        }
    }

    /// Builds an [`Error::Usage`].
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Error::Usage(message.into())
    }
}

impl From<UnknownMechanism> for Error {
    fn from(unknown: UnknownMechanism) -> Self {
        Error::Usage(unknown.to_string())
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
