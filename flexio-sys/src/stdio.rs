//! Which standard descriptors were closed when the process started.
//!
//! Rust's runtime opens `/dev/null` on a closed descriptor 0, 1 or 2 before
//! `main` runs, so `flexio copy f - >&-` would write into `/dev/null` and
//! report success. A function in `.init_array` runs before that runtime
//! set-up (the C library calls it ahead of `main`) and records what it saw.
//! It cannot be a call from the binary's `main`: by then a closed
//! descriptor already reads as an open `/dev/null`, the same as a user's
//! `>/dev/null`. And it lives here, not in the binary, because a
//! `link_section` is an unsafe attribute, which only this crate may use.

use std::sync::atomic::{AtomicU8, Ordering};

use rustix::io::Errno;

static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Called by the C library before `main`. Only raw `fcntl` calls through
/// rustix and an atomic store: nothing here needs the Rust runtime.
extern "C" fn record_closed_stdio() {
    let mut closed = 0;
    for (bit, fd) in [
        (1u8, rustix::stdio::stdin()),
        (2, rustix::stdio::stdout()),
        (4, rustix::stdio::stderr()),
    ] {
        if rustix::io::fcntl_getfd(fd) == Err(Errno::BADF) {
            closed |= bit;
        }
    }
    CLOSED_AT_START.store(closed, Ordering::Relaxed);
}

#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_CLOSED_STDIO: extern "C" fn() = record_closed_stdio;

/// Whether descriptor `fd` (0, 1 or 2) was closed when the process started.
pub fn closed_at_start(fd: u8) -> bool {
    fd < 3 && CLOSED_AT_START.load(Ordering::Relaxed) & (1 << fd) != 0
}
