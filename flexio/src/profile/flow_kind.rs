//! Flow kinds: the classes of flow the tuner measures and the profile keys
//! its decisions by.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::endpoint::EndpointKind;
use crate::error::Error;

/// A class of flow with its own best mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FlowKind {
    /// Regular file (or block device) to regular file (or block device).
    FileToFile,
    /// File to file with an fsync inside the flow (`--fsync`).
    FileToFileDurable,
    /// File to a TCP or Unix socket.
    FileToSocket,
    /// Socket to file.
    SocketToFile,
    /// File to a pipe or character device.
    FileToPipe,
    /// Pipe to file.
    PipeToFile,
    /// Memory to memory.
    MemoryToMemory,
    /// Anything else (socket to socket, pipe to pipe, …): built-in table.
    Other,
}

impl FlowKind {
    /// Every kind the tuner measures.
    pub const TUNED: [FlowKind; 7] = [
        FlowKind::FileToFile,
        FlowKind::FileToFileDurable,
        FlowKind::FileToSocket,
        FlowKind::SocketToFile,
        FlowKind::FileToPipe,
        FlowKind::PipeToFile,
        FlowKind::MemoryToMemory,
    ];

    /// Classifies a flow by its endpoints and whether it is synced.
    ///
    /// # Examples
    /// ```
    /// use flexio::{EndpointKind::*, profile::FlowKind};
    /// assert_eq!(FlowKind::classify(File, Tcp, false), FlowKind::FileToSocket);
    /// assert_eq!(FlowKind::classify(File, File, true), FlowKind::FileToFileDurable);
    /// ```
    pub fn classify(source: EndpointKind, sink: EndpointKind, fsync: bool) -> FlowKind {
        use EndpointKind::*;
        let file = |k: EndpointKind| matches!(k, File | BlockDevice);
        match (source, sink) {
            (s, d) if file(s) && file(d) && fsync => FlowKind::FileToFileDurable,
            (s, d) if file(s) && file(d) => FlowKind::FileToFile,
            (s, Tcp | Unix) if file(s) => FlowKind::FileToSocket,
            (Tcp | Unix, d) if file(d) => FlowKind::SocketToFile,
            (s, Pipe | CharDevice) if file(s) => FlowKind::FileToPipe,
            (Pipe, d) if file(d) => FlowKind::PipeToFile,
            (Memory, Memory) => FlowKind::MemoryToMemory,
            _ => FlowKind::Other,
        }
    }

    /// Endpoint kinds standing for this flow kind when asking whether a
    /// mechanism serves it (the tuner's candidates, a profile's ranges).
    ///
    /// # Examples
    /// ```
    /// use flexio::{EndpointKind, profile::FlowKind};
    /// assert_eq!(FlowKind::SocketToFile.representative_pair(), (EndpointKind::Tcp, EndpointKind::File));
    /// ```
    pub fn representative_pair(self) -> (EndpointKind, EndpointKind) {
        use EndpointKind::*;
        match self {
            FlowKind::FileToFile | FlowKind::FileToFileDurable => (File, File),
            FlowKind::FileToSocket => (File, Tcp),
            FlowKind::SocketToFile => (Tcp, File),
            FlowKind::FileToPipe => (File, Pipe),
            FlowKind::PipeToFile => (Pipe, File),
            FlowKind::MemoryToMemory => (Memory, Memory),
            FlowKind::Other => (Tcp, Tcp),
        }
    }

    /// The kebab-case name used in the profile.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowKind::FileToFile => "file-to-file",
            FlowKind::FileToFileDurable => "file-to-file-durable",
            FlowKind::FileToSocket => "file-to-socket",
            FlowKind::SocketToFile => "socket-to-file",
            FlowKind::FileToPipe => "file-to-pipe",
            FlowKind::PipeToFile => "pipe-to-file",
            FlowKind::MemoryToMemory => "memory-to-memory",
            FlowKind::Other => "other",
        }
    }
}

impl fmt::Display for FlowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FlowKind {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        FlowKind::TUNED
            .into_iter()
            .chain([FlowKind::Other])
            .find(|k| k.as_str() == text)
            .ok_or_else(|| Error::Usage(format!("unknown flow kind {text:?}")))
    }
}
