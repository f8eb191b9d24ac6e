//! `getrusage(2)` for the whole process.

/// Resource use of the process so far.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rusage {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

/// `getrusage(RUSAGE_SELF)`: every thread of the process.
///
/// Reference: <https://man7.org/linux/man-pages/man2/getrusage.2.html>
pub(crate) fn rusage_self() -> Rusage {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`; RUSAGE_SELF cannot fail.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
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
