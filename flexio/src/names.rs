//! The ground floor: what endpoints and mechanisms are called. Every layer
//! above uses these names; this file imports nothing of the crate, so
//! nothing here can loop back (see `flexio-testkit/tests/architecture.rs`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What an endpoint is, as far as choosing a mechanism goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum EndpointKind {
    /// A regular file.
    File,
    /// A block device such as `/dev/loop0`.
    BlockDevice,
    /// A connected TCP socket.
    Tcp,
    /// A connected Unix stream socket.
    Unix,
    /// A pipe or FIFO.
    Pipe,
    /// A character device: a terminal, `/dev/null`, `/dev/zero`.
    CharDevice,
    /// A memory buffer (library only).
    Memory,
}

impl EndpointKind {
    /// Every kind, in the order tables print them.
    pub const ALL: [EndpointKind; 7] = [
        EndpointKind::File,
        EndpointKind::BlockDevice,
        EndpointKind::Tcp,
        EndpointKind::Unix,
        EndpointKind::Pipe,
        EndpointKind::CharDevice,
        EndpointKind::Memory,
    ];

    /// The kebab-case name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointKind::File => "file",
            EndpointKind::BlockDevice => "block-device",
            EndpointKind::Tcp => "tcp",
            EndpointKind::Unix => "unix",
            EndpointKind::Pipe => "pipe",
            EndpointKind::CharDevice => "char-device",
            EndpointKind::Memory => "memory",
        }
    }

    /// Whether the endpoint has offsets (it can be read or written at any
    /// position).
    pub fn is_seekable(self) -> bool {
        matches!(
            self,
            EndpointKind::File | EndpointKind::BlockDevice | EndpointKind::Memory
        )
    }

    /// Whether the endpoint is a socket.
    pub fn is_socket(self) -> bool {
        matches!(self, EndpointKind::Tcp | EndpointKind::Unix)
    }
}

impl fmt::Display for EndpointKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name of a mechanism, as chosen with `--via`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum MechanismName {
    /// `read(2)` into a user buffer, `write(2)` out of it.
    ReadWrite,
    /// Map the source in windows (`mmap(2)`), copy or write out of the map.
    Mmap,
    /// `sendfile(2)`: from a file straight to any descriptor.
    Sendfile,
    /// `splice(2)` through a pipe.
    Splice,
    /// `copy_file_range(2)`: file to file inside the kernel.
    CopyFileRange,
    /// io_uring reads and writes with several requests in flight.
    IoUring,
    /// `O_DIRECT` with aligned buffers and plain `pread`/`pwrite`.
    Direct,
    /// Zero-copy send: the source file mapped and sent with io_uring's
    /// `SEND_ZC`, its pages kept until the kernel's notification.
    SendZc,
    /// Let flexio choose for this flow.
    Auto,
}

impl MechanismName {
    /// The mechanisms that move bytes (everything but `auto`).
    pub const CONCRETE: [MechanismName; 8] = [
        MechanismName::ReadWrite,
        MechanismName::Mmap,
        MechanismName::Sendfile,
        MechanismName::Splice,
        MechanismName::CopyFileRange,
        MechanismName::IoUring,
        MechanismName::Direct,
        MechanismName::SendZc,
    ];

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            MechanismName::ReadWrite => "read-write",
            MechanismName::Mmap => "mmap",
            MechanismName::Sendfile => "sendfile",
            MechanismName::Splice => "splice",
            MechanismName::CopyFileRange => "copy-file-range",
            MechanismName::IoUring => "io-uring",
            MechanismName::Direct => "direct",
            MechanismName::SendZc => "send-zc",
            MechanismName::Auto => "auto",
        }
    }
}

impl fmt::Display for MechanismName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MechanismName {
    type Err = UnknownMechanism;

    fn from_str(text: &str) -> Result<Self, UnknownMechanism> {
        Self::CONCRETE
            .into_iter()
            .chain([MechanismName::Auto])
            .find(|m| m.as_str() == text)
            .ok_or_else(|| UnknownMechanism(text.to_string()))
    }
}

/// How a memory-to-memory flow copies its bytes (the `copy_kernel`
/// parameter of `read-write`): TPIL's PIO stores on host memory, each
/// measured against the C library's `memcpy` and chosen per size by the
/// tuner.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CopyKernel {
    /// The C library's `memcpy` (`copy_from_slice`).
    #[default]
    Memcpy,
    /// The CPU's string copy, `rep movsb`.
    RepMovsb,
    /// AVX2 non-temporal 32-byte stores, then `sfence`.
    NtAvx2,
    /// AVX-512 non-temporal 64-byte stores, then `sfence`.
    NtAvx512,
    /// The copy split into one piece per CPU, each copied by its own
    /// thread with `memcpy`.
    Threads,
}

impl CopyKernel {
    /// Every kernel, in the order tables print them.
    pub const ALL: [CopyKernel; 5] = [
        CopyKernel::Memcpy,
        CopyKernel::RepMovsb,
        CopyKernel::NtAvx2,
        CopyKernel::NtAvx512,
        CopyKernel::Threads,
    ];

    /// The kebab-case name used in profiles, JSON and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyKernel::Memcpy => "memcpy",
            CopyKernel::RepMovsb => "rep-movsb",
            CopyKernel::NtAvx2 => "nt-avx2",
            CopyKernel::NtAvx512 => "nt-avx512",
            CopyKernel::Threads => "threads",
        }
    }
}

impl fmt::Display for CopyKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CopyKernel {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == text)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown copy kernel {text:?}; known: {}", names.join(", "))
            })
    }
}

/// A name that is no mechanism's; as an [`crate::Error`], a usage error
/// that lists the known names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMechanism(pub String);

impl fmt::Display for UnknownMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = MechanismName::CONCRETE.iter().map(|m| m.as_str()).collect();
        write!(
            f,
            "unknown mechanism {:?}; known: auto, {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownMechanism {}
