//! Endpoints: where bytes come from and where they go.
//!
//! A [`Source`] or [`Sink`] is what the user described (a path, `-`, a
//! socket address, an open descriptor, a memory buffer). Opening one
//! classifies it by `fstat` into an [`EndpointKind`], which is what
//! mechanisms are matched against.

mod address;
mod file_sink;
mod idle_ends;
mod open;
mod replace;
mod socket_buffers;
#[cfg(test)]
pub(crate) use replace::tests::names as file_sink_test_names;
pub(crate) use socket_buffers::set as set_socket_buffers;
pub use socket_buffers::SocketBuffers;
mod temp_name;
pub(crate) use temp_name::{sweep_stale, temp_name};

use std::os::fd::OwnedFd;
use std::path::PathBuf;

pub use crate::names::EndpointKind;

pub use address::Address;
pub(crate) use file_sink::{FileSink, NewMode};
pub(crate) use idle_ends::IdleEnds;
pub(crate) use open::{
    classify_fd, existing_destination, open_sink, open_source, process_umask, OpenSink, OpenSource,
    SinkIo, SinkOptions, SourceIo,
};

/// Where a flow reads from.
#[derive(Debug)]
#[non_exhaustive]
pub enum Source<'a> {
    /// An address as typed on the command line: a path, `-` for stdin, or a
    /// socket address.
    Address(Address),
    /// A descriptor the caller already opened (a socket, a pipe, a file),
    /// classified by `fstat`; the label names it in messages.
    Fd(OwnedFd, String),
    /// Bytes in memory.
    Memory(&'a [u8]),
}

/// Where a flow writes to.
#[derive(Debug)]
#[non_exhaustive]
pub enum Sink<'a> {
    /// An address as typed on the command line: a path, `-` for stdout, or
    /// a socket address.
    Address(Address),
    /// A descriptor the caller already opened, written from its current
    /// position (for a seekable one) or as a stream.
    Fd(OwnedFd, String),
    /// A memory buffer written from its start (or the flow's sink offset).
    Memory(&'a mut [u8]),
}

impl Source<'_> {
    /// A source read from a path (a regular file or a block device).
    pub fn path(path: impl Into<PathBuf>) -> Self {
        Source::Address(Address::Path(path.into()))
    }

    /// Parses a command-line source: a path, `-`, `tcp://HOST:PORT`,
    /// `tcp-listen://ADDR:PORT`, `unix://PATH` or `unix-listen://PATH`.
    ///
    /// # Errors
    /// [`crate::Error::Usage`] for an unknown scheme or an empty address.
    ///
    /// # Examples
    /// ```
    /// let source = flexio::Source::parse("tcp-listen://127.0.0.1:0").unwrap();
    /// assert!(matches!(source, flexio::Source::Address(_)));
    /// ```
    pub fn parse(text: &str) -> crate::Result<Self> {
        Address::parse(text).map(Source::Address)
    }
}

impl Sink<'_> {
    /// A sink written to a path (a regular file or a block device).
    pub fn path(path: impl Into<PathBuf>) -> Self {
        Sink::Address(Address::Path(path.into()))
    }

    /// Parses a command-line sink; the same forms as [`Source::parse`].
    ///
    /// # Errors
    /// [`crate::Error::Usage`] for an unknown scheme or an empty address.
    ///
    /// # Examples
    /// ```
    /// let sink = flexio::Sink::parse("-").unwrap();
    /// assert!(matches!(sink, flexio::Sink::Address(flexio::Address::Stdio)));
    /// ```
    pub fn parse(text: &str) -> crate::Result<Self> {
        Address::parse(text).map(Sink::Address)
    }
}
