//! What a signal's disposition is, which neither `rustix` nor
//! `signal-hook` reads safely.

use std::io;

/// Whether `signal`'s disposition is `SIG_IGN` (as `nohup` leaves SIGHUP):
/// a program that catches the signal should leave it ignored.
///
/// # Errors
/// The errno of `sigaction(2)`: `EINVAL` for a number that is no signal.
///
/// # Examples
/// ```
/// assert!(!flexio_sys::signal::is_ignored(libc::SIGWINCH).unwrap());
/// assert!(flexio_sys::signal::is_ignored(1000).is_err());
/// ```
pub fn is_ignored(signal: libc::c_int) -> io::Result<bool> {
    // SAFETY: an all-zero `sigaction` is a valid value for the kernel to
    // overwrite (SIG_DFL, empty mask, no flags).
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the disposition into `current`,
    // which is valid for writes for the whole call.
    if unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(current.sa_sigaction == libc::SIG_IGN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ignored_signal_reads_as_ignored() {
        // SIGURG's default action is to ignore it, but its disposition is
        // SIG_DFL: only an explicit SIG_IGN counts (SIGTTOU: no test here
        // uses it).
        assert!(!is_ignored(libc::SIGURG).unwrap());
        // SAFETY (test): SIG_IGN installs no handler code.
        let previous = unsafe { libc::signal(libc::SIGTTOU, libc::SIG_IGN) };
        assert!(is_ignored(libc::SIGTTOU).unwrap());
        // SAFETY (test): puts back what was there.
        unsafe { libc::signal(libc::SIGTTOU, previous) };
    }
}
