//! What a process start needs before flexio moves bytes, for a binary that
//! enters at its own C `main` (`#![no_main]`) instead of Rust's runtime
//! shim.
//!
//! The shim (`std::rt::lang_start`) also installs the handler that prints
//! "has overflowed its stack", and to find the main thread's stack it has
//! glibc parse `/proc/self/maps` with `sscanf`: 115 000 of the 708 000
//! instructions of a `flexio copy` of 4 KiB (callgrind), six system calls
//! and an alternate signal stack; about 85 µs of a process start here,
//! which took that copy from 1.03× to 0.96× the wall time of `cp`. Without
//! the handler a stack overflow is a plain SIGSEGV.

use std::io;
use std::os::fd::IntoRawFd;

/// Does what Rust's runtime does before `main` that flexio relies on:
/// standard input, output and error are open (a closed one is opened on
/// `/dev/null`, so that no file flexio opens later takes its number and
/// gets the bytes meant for it), and SIGPIPE is ignored (a reader that
/// went away is an `EPIPE` error naming the endpoint, not a silent death).
/// A `main` given by Rust's runtime needs none of this.
///
/// # Errors
/// `poll(2)`, `open(2)` or `signal(2)` failing, or `/dev/null` opened
/// under another number than the closed stream's.
///
/// # Examples
/// ```
/// // Harmless where the runtime did it already.
/// flexio::prepare_process().unwrap();
/// ```
pub fn prepare_process() -> io::Result<()> {
    open_closed_standard_streams()?;
    ignore_sigpipe()
}

fn open_closed_standard_streams() -> io::Result<()> {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a live array of three pollfd for the whole call;
    // a closed descriptor is reported as POLLNVAL, not touched.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    for pollfd in fds {
        if pollfd.revents & libc::POLLNVAL == 0 {
            continue;
        }
        // The lowest free number is the closed stream's: streams are
        // filled in order, as the runtime does.
        let null = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDWR,
            rustix::fs::Mode::empty(),
        )?;
        let fd = null.into_raw_fd();
        if fd != pollfd.fd {
            return Err(io::Error::other(format!(
                "standard stream {} is closed and /dev/null opened as {fd}",
                pollfd.fd
            )));
        }
    }
    Ok(())
}

fn ignore_sigpipe() -> io::Result<()> {
    // SAFETY: SIG_IGN installs no handler code; only the disposition of
    // SIGPIPE changes, as Rust's runtime changes it by default.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    if previous == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
