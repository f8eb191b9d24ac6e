//! Mechanisms: the ways bytes can move on Linux, one module each.
//!
//! Each mechanism's file holds its [`Descriptor`] — its name, the (source
//! kind, sink kind) pairs it serves, the parameters it reads, where it falls
//! back to, whether it writes with `O_DIRECT` — and the function that moves
//! the bytes of a [`Transfer`]. [`MechanismName::descriptor`] is how the
//! engine, the command line, the tuner and the bench learn what a mechanism
//! is; adding one touches its file and [`DESCRIPTORS`].
//!
//! When the kernel refuses a mechanism at run time (`EINVAL`, `EXDEV`, `ENOSYS`, `EOPNOTSUPP`) it returns
//! [`Stop::Refused`] with the transfer advanced to where it got, and the
//! engine carries on with the next mechanism in [`Descriptor::fallbacks`]. Every
//! other error is [`Stop::Failed`] and ends the flow.

mod copy_file_range;
mod copy_kernel;
mod direct;
mod direct_setup;
mod io;
mod io_uring;
mod kernel_copy;
mod mmap;
mod read_write;
mod send_zc;
mod sendfile;
mod splice;
mod transfer;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use crate::names::{CopyKernel, EndpointKind, MechanismName};

pub(crate) use transfer::{Counters, Idle, Scratch, SinkSide, SourceSide, Stop, Transfer};

impl MechanismName {
    /// What this mechanism is (`None` for `auto`).
    pub fn descriptor(self) -> Option<&'static Descriptor> {
        DESCRIPTORS.iter().copied().find(|d| d.name == self)
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
        self.descriptor()
            .is_none_or(|descriptor| (descriptor.serves)(source, sink))
    }

    /// Whether this kernel lets the mechanism run; `Err` says why not (a
    /// flow that asks for it then falls back, or fails with `strict`).
    /// Only `send-zc` depends on a kernel feature beyond the baseline
    /// (io_uring `SEND_ZC`, Linux 6.0).
    ///
    /// # Errors
    /// The reason, as one line, when the kernel lacks what it needs.
    ///
    /// # Examples
    /// ```
    /// use flexio::MechanismName;
    /// assert!(MechanismName::ReadWrite.available().is_ok());
    /// if let Err(why) = MechanismName::SendZc.available() {
    ///     println!("send-zc: {why}");
    /// }
    /// ```
    pub fn available(self) -> Result<(), String> {
        match self {
            MechanismName::SendZc => send_zc::probe(),
            _ => Ok(()),
        }
    }

    /// Whether this mechanism, with `params`, writes a file or block-device
    /// sink with `O_DIRECT` (past the page cache).
    pub(crate) fn writes_direct(self, params: &crate::Params) -> bool {
        self.descriptor()
            .is_some_and(|descriptor| (descriptor.writes_direct)(params))
    }

    /// The mechanisms that serve a pair, in the order of [`Self::CONCRETE`].
    pub fn serving(source: EndpointKind, sink: EndpointKind) -> Vec<MechanismName> {
        Self::CONCRETE
            .into_iter()
            .filter(|m| m.supports(source, sink))
            .collect()
    }
}

/// The parameters a mechanism reads (the rest it ignores).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reads {
    /// Bytes per read, write, map window or request.
    pub chunk: bool,
    /// io_uring requests in flight.
    pub queue_depth: bool,
    /// The pipe's capacity.
    pub pipe_size: bool,
    /// `O_DIRECT` on the file sides.
    pub direct: bool,
    /// The copy kernel of memory-to-memory flows.
    #[serde(default)]
    pub copy_kernel: bool,
}

impl Reads {
    /// No parameter.
    pub const NONE: Reads = Reads {
        chunk: false,
        queue_depth: false,
        pipe_size: false,
        direct: false,
        copy_kernel: false,
    };
}

/// What a mechanism is: one of these lives in each mechanism's file.
pub struct Descriptor {
    /// Its name.
    pub name: MechanismName,
    /// Whether it can move bytes from a source of the first kind to a sink
    /// of the second.
    pub serves: fn(EndpointKind, EndpointKind) -> bool,
    /// The parameters it reads.
    pub reads: Reads,
    /// Where to go when the kernel refuses it: the first of these that
    /// serves the pair. `read-write` serves every pair and ends each list.
    pub fallbacks: &'static [MechanismName],
    /// Whether, with these parameters, it writes a file or block-device
    /// sink with `O_DIRECT` (past the page cache).
    pub writes_direct: fn(&crate::Params) -> bool,
    /// Moves the bytes of a transfer, advancing it as they land in the
    /// sink, until it is finished (or the source ends, when the transfer has
    /// no fixed length).
    pub(crate) run: fn(&mut Transfer<'_>) -> Result<(), Stop>,
}

impl std::fmt::Debug for Descriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Descriptor")
            .field("name", &self.name)
            .field("reads", &self.reads)
            .field("fallbacks", &self.fallbacks)
            .finish_non_exhaustive()
    }
}

/// Every mechanism, in the order of [`MechanismName::CONCRETE`].
pub(crate) const DESCRIPTORS: [&Descriptor; 8] = [
    &read_write::DESCRIPTOR,
    &mmap::DESCRIPTOR,
    &sendfile::DESCRIPTOR,
    &splice::DESCRIPTOR,
    &copy_file_range::DESCRIPTOR,
    &io_uring::DESCRIPTOR,
    &direct::DESCRIPTOR,
    &send_zc::DESCRIPTOR,
];

/// The next mechanism after a refusal of `name`, if any serves the pair.
pub(crate) fn fallback_for(
    name: MechanismName,
    source: EndpointKind,
    sink: EndpointKind,
) -> Option<MechanismName> {
    name.descriptor()?
        .fallbacks
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
    fn only_send_zc_needs_a_probe_and_it_serves_only_file_to_tcp() {
        use EndpointKind::*;
        for name in MechanismName::CONCRETE {
            if name != MechanismName::SendZc {
                assert_eq!(name.available(), Ok(()), "{name}");
            }
        }
        for source in EndpointKind::ALL {
            for sink in EndpointKind::ALL {
                let expected = matches!(source, File | BlockDevice) && sink == Tcp;
                assert_eq!(
                    MechanismName::SendZc.supports(source, sink),
                    expected,
                    "{source}->{sink}"
                );
            }
        }
        // auto's built-in table never names it: only a measured profile
        // can choose it.
        assert_eq!(builtin_choice(File, Tcp), MechanismName::Sendfile);
    }

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
        assert!(crate::Error::from("nope".parse::<MechanismName>().unwrap_err()).is_usage());
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
