//! The CPUs held out of their sleeping idle states while a bench times
//! something.
//!
//! A virtual machine's idle CPU halts, and the hypervisor must run it
//! again when a wake-up arrives for it: a task woken on another CPU, an
//! I/O completion, a timer. How long that takes depends on the host, and
//! changes from minute to minute. A transfer that waits and wakes
//! thousands of times (512-byte `O_DIRECT` reads through a loop device,
//! each a hand-off to the device's worker and back) then measures the
//! host, not itself; docs/bench.md has the runs.
//!
//! The kernel's CPU latency request (PM QoS) does it: `0` written to
//! `/dev/cpu_dma_latency` keeps every CPU in its polling idle state for
//! as long as the file stays open (tuned's latency-performance profile
//! and cyclictest make the same request). A polling CPU notices a
//! wake-up without an interrupt and without leaving the guest. It is
//! still idle to the kernel (its time counts as idle in `/proc/stat`), but
//! busy to the host, so a bench holds it only while it measures.

use std::io::Write;
use std::path::Path;

use crate::error::Error;

/// The kernel's CPU latency request: the most microseconds a CPU may
/// take to leave its idle state, a native-endian `i32`, for as long as
/// the file stays open.
const CPU_LATENCY_REQUEST: &str = "/dev/cpu_dma_latency";

/// Every CPU held in its polling idle state until this is dropped.
///
/// # Examples
/// ```no_run
/// let awake = flexio_harness::awake::CpusAwake::hold();
/// // ... time the transfers ...
/// drop(awake);
/// ```
#[derive(Debug)]
pub struct CpusAwake {
    /// The open request; closing it withdraws the request.
    _request: std::fs::File,
}

impl CpusAwake {
    /// Asks the kernel to keep every CPU out of the idle states that take
    /// time to leave, until the returned value is dropped.
    ///
    /// # Errors
    /// [`Error::Unavailable`] without root (the request is root's);
    /// [`Error::Io`] when the request cannot be opened or written, with
    /// its path.
    pub fn hold() -> Result<CpusAwake, Error> {
        let path = Path::new(CPU_LATENCY_REQUEST);
        if !rustix::process::geteuid().is_root() {
            return Err(Error::Unavailable {
                why: format!("holding the CPUs awake ({}) needs root", path.display()),
            });
        }
        let mut request = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io("open", path, e))?;
        request
            .write_all(&0i32.to_ne_bytes())
            .map_err(|e| Error::io("write 0 to", path, e))?;
        Ok(CpusAwake { _request: request })
    }

    /// What a report says of the machine while this is held.
    pub fn describe() -> &'static str {
        "the CPUs held in their polling idle state while timed (0 written to \
         /dev/cpu_dma_latency, so that a wake-up does not wait on the hypervisor)"
    }
}
