//! Whether a signal is ignored: `sigaction(2)` read without changing it.
//!
//! A program that catches SIGHUP to clean up must not catch it when its
//! parent set it to be ignored (`nohup`, or SIGINT for a background job of
//! a non-interactive shell): that would turn "keep running" into "exit".
//!
//! Reference: <https://man7.org/linux/man-pages/man2/sigaction.2.html>

/// Whether `signal`'s disposition is `SIG_IGN` (false when it cannot be
/// read, e.g. an invalid signal number).
pub(crate) fn is_ignored(signal: i32) -> bool {
    let mut current = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null `act` only reads the disposition into `current`, which
    // is valid, writable memory of the right type; nothing is changed.
    let status = unsafe { libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) };
    if status != 0 {
        return false;
    }
    // SAFETY: sigaction returned 0, so it filled `current` (and it was
    // zeroed before, so every byte is initialized either way).
    let current = unsafe { current.assume_init() };
    current.sa_sigaction == libc::SIG_IGN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_disposition_is_not_ignored_and_a_bad_number_is_not_either() {
        // SIGWINCH is never set to be ignored by the test harness.
        assert!(!is_ignored(libc::SIGWINCH));
        assert!(!is_ignored(-1));
    }
}
