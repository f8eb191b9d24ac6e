//! Mechanisms: the ways bytes can move on Linux, one module each.
//!
//! Each mechanism says which (source kind, sink kind) pairs it serves and
//! moves the bytes of a [`Transfer`]. When the kernel refuses a mechanism at
//! run time (`EINVAL`, `EXDEV`, `ENOSYS`, `EOPNOTSUPP`) it returns
//! [`Stop::Refused`] with the transfer advanced to where it got, and the
//! engine carries on with the next mechanism in [`fallback_order`]. Every
//! other error is [`Stop::Failed`] and ends the flow.

mod copy_file_range;
mod direct;
mod direct_io;
mod io;
mod io_uring;
mod kernel_copy;
mod mmap;
mod read_write;
mod sendfile;
mod splice;
mod transfer;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::endpoint::EndpointKind;
use crate::error::Error;

pub(crate) use transfer::{Counters, Idle, Scratch, Stop, Transfer};

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
    /// Let flexio choose for this flow.
    Auto,
}

impl MechanismName {
    /// The mechanisms that move bytes (everything but `auto`).
    pub const CONCRETE: [MechanismName; 7] = [
        MechanismName::ReadWrite,
        MechanismName::Mmap,
        MechanismName::Sendfile,
        MechanismName::Splice,
        MechanismName::CopyFileRange,
        MechanismName::IoUring,
        MechanismName::Direct,
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
            MechanismName::Auto => "auto",
        }
    }

    /// Whether this mechanism can move bytes from `source` to `sink`.
    /// `auto` serves every pair.
    ///
    /// # Examples
    /// ```
    /// use flexio::{EndpointKind, MechanismName};
    /// assert!(MechanismName::Sendfile.supports(EndpointKind::File, EndpointKind::Tcp));
    /// assert!(!MechanismName::CopyFileRange.supports(EndpointKind::File, EndpointKind::Tcp));
    /// ```
    pub fn supports(self, source: EndpointKind, sink: EndpointKind) -> bool {
        match self {
            MechanismName::Auto => true,
            concrete => implementation(concrete).supports(source, sink),
        }
    }

    /// Whether this mechanism, with `params`, writes a file or block-device
    /// sink with `O_DIRECT` (past the page cache).
    pub(crate) fn writes_direct(self, params: &crate::Params) -> bool {
        match self {
            MechanismName::Direct => true,
            MechanismName::IoUring => params.direct,
            _ => false,
        }
    }

    /// The mechanisms that serve a pair, in the order of [`Self::CONCRETE`].
    pub fn serving(source: EndpointKind, sink: EndpointKind) -> Vec<MechanismName> {
        Self::CONCRETE
            .into_iter()
            .filter(|m| m.supports(source, sink))
            .collect()
    }
}

impl fmt::Display for MechanismName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MechanismName {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        Self::CONCRETE
            .into_iter()
            .chain([MechanismName::Auto])
            .find(|m| m.as_str() == text)
            .ok_or_else(|| {
                let names: Vec<_> = Self::CONCRETE.iter().map(|m| m.as_str()).collect();
                Error::usage(format!(
                    "unknown mechanism {text:?}; known: auto, {}",
                    names.join(", ")
                ))
            })
    }
}

/// One way of moving bytes.
pub(crate) trait Mechanism: Sync {
    /// Which (source, sink) pairs this mechanism serves.
    fn supports(&self, source: EndpointKind, sink: EndpointKind) -> bool;

    /// Moves the bytes of `transfer`, advancing it as bytes land in the
    /// sink, until it is finished (or the source ends, when the transfer
    /// has no fixed length).
    fn run(&self, transfer: &mut Transfer<'_>) -> Result<(), Stop>;
}

/// The implementation behind a concrete name.
pub(crate) fn implementation(name: MechanismName) -> &'static dyn Mechanism {
    match name {
        MechanismName::ReadWrite => &read_write::ReadWrite,
        MechanismName::Mmap => &mmap::Mmap,
        MechanismName::Sendfile => &sendfile::Sendfile,
        MechanismName::Splice => &splice::Splice,
        MechanismName::CopyFileRange => &copy_file_range::CopyFileRange,
        MechanismName::IoUring => &io_uring::IoUring,
        MechanismName::Direct => &direct::Direct,
        MechanismName::Auto => unreachable!("auto is resolved before a flow runs"),
    }
}

/// Where to go when the kernel refuses `name`: the first of these that
/// serves the pair. `read-write` serves every pair and is always last.
pub(crate) fn fallback_order(name: MechanismName) -> &'static [MechanismName] {
    use MechanismName::*;
    match name {
        CopyFileRange => &[Sendfile, ReadWrite],
        Sendfile => &[Splice, ReadWrite],
        Splice | IoUring | Direct | Mmap => &[ReadWrite],
        ReadWrite | Auto => &[],
    }
}

/// The next mechanism after a refusal of `name`, if any serves the pair.
pub(crate) fn fallback_for(
    name: MechanismName,
    source: EndpointKind,
    sink: EndpointKind,
) -> Option<MechanismName> {
    fallback_order(name)
        .iter()
        .copied()
        .find(|m| m.supports(source, sink))
}

/// The built-in choice of `auto` when no profile decides: copy_file_range
/// between files, sendfile from a file to a socket, splice for sockets into
/// files and for pipes, read-write for the rest.
///
/// # Examples
/// ```
/// use flexio::{builtin_choice, EndpointKind::*, MechanismName};
/// assert_eq!(builtin_choice(File, File), MechanismName::CopyFileRange);
/// assert_eq!(builtin_choice(File, Tcp), MechanismName::Sendfile);
/// assert_eq!(builtin_choice(Tcp, File), MechanismName::Splice);
/// ```
pub fn builtin_choice(source: EndpointKind, sink: EndpointKind) -> MechanismName {
    use EndpointKind::*;
    match (source, sink) {
        (Memory, _) | (_, Memory) => MechanismName::ReadWrite,
        (File, File) => MechanismName::CopyFileRange,
        (File | BlockDevice, Tcp | Unix) => MechanismName::Sendfile,
        (Pipe, _) | (_, Pipe) => MechanismName::Splice,
        (Tcp | Unix, File | BlockDevice) => MechanismName::Splice,
        _ => MechanismName::ReadWrite,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_direct_and_io_uring_with_direct_write_past_the_page_cache() {
        let direct = crate::Params {
            direct: true,
            ..crate::Params::default()
        };
        for name in MechanismName::CONCRETE {
            let expected = name == MechanismName::Direct || name == MechanismName::IoUring;
            assert_eq!(name.writes_direct(&direct), expected, "{name}");
        }
        assert!(!MechanismName::IoUring.writes_direct(&crate::Params::default()));
        assert!(MechanismName::Direct.writes_direct(&crate::Params::default()));
    }

    #[test]
    fn names_round_trip() {
        for name in MechanismName::CONCRETE
            .into_iter()
            .chain([MechanismName::Auto])
        {
            assert_eq!(name.as_str().parse::<MechanismName>().unwrap(), name);
        }
        assert_eq!("nope".parse::<MechanismName>().unwrap_err().exit_code(), 2);
    }

    #[test]
    fn read_write_serves_every_pair_and_ends_every_fallback_chain() {
        for source in EndpointKind::ALL {
            for sink in EndpointKind::ALL {
                assert!(MechanismName::ReadWrite.supports(source, sink));
                let choice = builtin_choice(source, sink);
                assert!(
                    choice.supports(source, sink),
                    "{choice} for {source}->{sink}"
                );
                for name in MechanismName::CONCRETE {
                    if name != MechanismName::ReadWrite && name.supports(source, sink) {
                        assert!(fallback_for(name, source, sink).is_some(), "{name}");
                    }
                }
            }
        }
    }
}
