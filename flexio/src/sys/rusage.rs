//! `getrusage(2)` for the whole process, the calling thread, or the
//! children that have been waited for.

/// Resource use so far (see `getrusage(2)`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rusage {
    /// CPU time in user mode.
    pub user_ns: u64,
    /// CPU time in the kernel.
    pub sys_ns: u64,
    /// Voluntary context switches.
    pub voluntary_switches: u64,
    /// Involuntary context switches.
    pub involuntary_switches: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
}

/// `getrusage(RUSAGE_SELF)`: every thread of the process.
///
/// Reference: <https://man7.org/linux/man-pages/man2/getrusage.2.html>
pub(crate) fn rusage_self() -> Rusage {
    rusage(libc::RUSAGE_SELF)
}

/// `getrusage(RUSAGE_CHILDREN)`: every child of the process that has
/// terminated and been waited for (and their waited-for descendants); zero
/// where the call fails.
///
/// Reference: <https://man7.org/linux/man-pages/man2/getrusage.2.html>
pub fn children_rusage() -> Rusage {
    rusage(libc::RUSAGE_CHILDREN)
}

/// `getrusage(RUSAGE_THREAD)`: the calling thread only; zero where the call
/// fails.
///
/// Reference: <https://man7.org/linux/man-pages/man2/getrusage.2.html>
pub fn thread_rusage() -> Rusage {
    rusage(libc::RUSAGE_THREAD)
}

fn rusage(who: libc::c_int) -> Rusage {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage` and `who` is one of the
    // RUSAGE_* constants; a failure leaves it untouched and is checked.
    let rc = unsafe { libc::getrusage(who, &mut usage) };
    if rc != 0 {
        return Rusage::default();
    }
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    Rusage {
        user_ns: ns(usage.ru_utime),
        sys_ns: ns(usage.ru_stime),
        voluntary_switches: usage.ru_nvcsw as u64,
        involuntary_switches: usage.ru_nivcsw as u64,
        minor_faults: usage.ru_minflt as u64,
        major_faults: usage.ru_majflt as u64,
    }
}
