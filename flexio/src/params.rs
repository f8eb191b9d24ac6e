//! A mechanism's parameters and the one set of bounds they must keep,
//! whoever gives them: a command-line flag, a profile range, or a caller
//! of the library.
//!
//! The bounds are what the kernel and memory allow, not what is fast: a
//! value inside them runs (perhaps slowly), a value outside them is a usage
//! error naming the bound, before anything is opened or allocated.

use crate::error::{Error, Result};
use crate::names::CopyKernel;

/// Parameters of a mechanism.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Params {
    /// Bytes per read, write, map window or request (default 256 KiB).
    pub chunk: usize,
    /// io_uring requests in flight (default 32).
    pub queue_depth: u32,
    /// Pipe capacity splice asks for (default 1 MiB, clamped to
    /// `/proc/sys/fs/pipe-max-size`).
    pub pipe_size: usize,
    /// O_DIRECT on the file side(s) of io-uring.
    pub direct: bool,
    /// How `read-write` copies memory to memory (default `memcpy`);
    /// absent in older profiles and documents, read as the default.
    #[serde(default)]
    pub copy_kernel: CopyKernel,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            chunk: 256 << 10,
            queue_depth: 32,
            pipe_size: 1 << 20,
            direct: false,
            copy_kernel: CopyKernel::Memcpy,
        }
    }
}

/// The smallest and largest value one parameter may take, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    /// The parameter's name as a profile spells it (`chunk`); the flag is
    /// the same with dashes (`--chunk`).
    pub name: &'static str,
    /// The smallest value allowed.
    pub min: u64,
    /// The largest value allowed.
    pub max: u64,
    /// Whether the value is a byte count (printed as a size).
    pub bytes: bool,
    /// Where the largest value comes from.
    pub why: &'static str,
}

impl Bound {
    /// A usage error when `value` lies outside the bound, naming it.
    ///
    /// # Errors
    /// [`Error::Usage`]: `chunk 1.00 TiB is above its bound, 1.00 GiB (...)`.
    pub fn check(&self, value: u64) -> Result<()> {
        let show = |v: u64| {
            // Exact where rounding would hide the fault (4095 B is not 4.00 KiB).
            if self.bytes && v.is_multiple_of(1024) {
                crate::format_bytes(v)
            } else if self.bytes {
                format!("{v} B")
            } else {
                v.to_string()
            }
        };
        if value < self.min {
            return Err(Error::usage(format!(
                "{} {} is below its bound, {}",
                self.name,
                show(value),
                show(self.min)
            )));
        }
        if value > self.max {
            return Err(Error::usage(format!(
                "{} {} is above its bound, {} ({})",
                self.name,
                show(value),
                show(self.max),
                self.why
            )));
        }
        Ok(())
    }
}

impl Params {
    /// `chunk`: 1 byte to 1 GiB. One read, write, splice, sendfile or
    /// copy_file_range moves at most `MAX_RW_COUNT` (2 GiB − 4 KiB) a
    /// call, and an io_uring request's length is a `u32`, so a larger chunk
    /// cannot mean larger calls; and read-write, mmap, io-uring and direct
    /// hold at least one chunk of memory, which a 2-core VM with a few GiB
    /// must be able to give. 1 GiB is the largest power of two under both.
    pub const CHUNK: Bound = Bound {
        name: "chunk",
        min: 1,
        max: 1 << 30,
        bytes: true,
        why: "the kernel moves at most 2 GiB - 4 KiB a call and io_uring lengths are 32-bit; a chunk is held in memory",
    };

    /// `queue_depth`: 1 to 4096 requests. The ring is made with at most
    /// that many entries (`IORING_MAX_ENTRIES` is 32768, but every request
    /// in flight holds a chunk-sized buffer, and past a few hundred no
    /// device here gains anything).
    pub const QUEUE_DEPTH: Bound = Bound {
        name: "queue_depth",
        min: 1,
        max: 4096,
        bytes: false,
        why: "the most io_uring requests flexio keeps in flight, each holding a chunk",
    };

    /// `pipe_size`: 4 KiB to 2 GiB. A pipe holds at least a page, and
    /// `F_SETPIPE_SZ` refuses more than 2^31 bytes whatever
    /// `/proc/sys/fs/pipe-max-size` says; within the bound, a size above
    /// `pipe-max-size` is clamped to it at run time (an unprivileged
    /// process may not exceed it).
    pub const PIPE_SIZE: Bound = Bound {
        name: "pipe_size",
        min: 4096,
        max: 1 << 31,
        bytes: true,
        why: "F_SETPIPE_SZ refuses more than 2^31 bytes",
    };

    /// Checks every parameter against its bound ([`Params::CHUNK`],
    /// [`Params::QUEUE_DEPTH`], [`Params::PIPE_SIZE`]).
    ///
    /// # Errors
    /// [`Error::Usage`] naming the first parameter out of bounds and the
    /// bound, or a copy kernel this CPU lacks (naming those it has).
    ///
    /// # Examples
    /// ```
    /// use flexio::Params;
    /// assert!(Params::default().validate().is_ok());
    /// let huge = Params { chunk: 1 << 40, ..Params::default() };
    /// let error = huge.validate().unwrap_err();
    /// assert!(error.to_string().starts_with("chunk 1.00 TiB is above its bound, 1.00 GiB"));
    /// ```
    pub fn validate(&self) -> Result<()> {
        Self::CHUNK.check(self.chunk as u64)?;
        Self::QUEUE_DEPTH.check(u64::from(self.queue_depth))?;
        Self::PIPE_SIZE.check(self.pipe_size as u64)?;
        self.check_copy_kernel()
    }

    /// A kernel the CPU lacks is refused rather than quietly replaced:
    /// whoever asked for it (a caller, a profile from another machine)
    /// learns what this CPU has.
    fn check_copy_kernel(&self) -> Result<()> {
        let Some(missing) = self.copy_kernel.missing() else {
            return Ok(());
        };
        let here: Vec<_> = CopyKernel::available().iter().map(|k| k.as_str()).collect();
        Err(Error::usage(format!(
            "copy_kernel {}: {missing}; this CPU has {}",
            self.copy_kernel,
            here.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(params: Params) -> String {
        params.validate().unwrap_err().to_string()
    }

    #[test]
    fn chunk_bound_is_one_byte_to_one_gibibyte() {
        let at = |chunk| Params {
            chunk,
            ..Params::default()
        };
        assert!(at(1).validate().is_ok());
        assert!(at(1 << 30).validate().is_ok());
        assert_eq!(error(at(0)), "chunk 0 B is below its bound, 1 B");
        let above = error(at((1 << 30) + 1));
        assert!(above.starts_with("chunk "), "{above}");
        assert!(above.contains("above its bound, 1.00 GiB"), "{above}");
    }

    #[test]
    fn queue_depth_bound_is_one_to_4096() {
        let at = |queue_depth| Params {
            queue_depth,
            ..Params::default()
        };
        assert!(at(1).validate().is_ok());
        assert!(at(4096).validate().is_ok());
        assert_eq!(error(at(0)), "queue_depth 0 is below its bound, 1");
        assert!(error(at(4097)).starts_with("queue_depth 4097 is above its bound, 4096"));
    }

    #[test]
    fn pipe_size_bound_is_a_page_to_two_gibibytes() {
        let at = |pipe_size| Params {
            pipe_size,
            ..Params::default()
        };
        assert!(at(4096).validate().is_ok());
        assert!(at(1 << 31).validate().is_ok());
        assert!(error(at(4095)).starts_with("pipe_size 4095 B is below its bound"));
        assert!(error(at((1 << 31) + 1)).contains("F_SETPIPE_SZ"));
    }

    #[test]
    fn io_uring_lengths_fit_their_32_bit_fields() {
        assert!(Params::CHUNK.max <= u64::from(u32::MAX));
        assert_eq!(Params::QUEUE_DEPTH.max, crate::sys::uring::MAX_SLOTS as u64);
    }
}
