//! The copy kernels of memory-to-memory flows: which this CPU has, and the
//! one copy each makes. The stores themselves (`rep movsb`, non-temporal
//! AVX) are in `flexio_sys::copy_kernels`; the threaded kernel is plain
//! safe code here.

use crate::names::CopyKernel;

/// The fewest bytes a thread of [`CopyKernel::Threads`] is given: below
/// this, starting a thread costs more than the copy it would share, so a
/// small copy runs on fewer threads (one, the caller's, under 2 × this).
pub const MIN_BYTES_PER_THREAD: usize = 64 << 10;

impl CopyKernel {
    /// Whether this kernel is what it says on this CPU: the non-temporal
    /// kernels need AVX2 or AVX-512F (detected at run time), `rep movsb`
    /// an x86-64 CPU; `memcpy` and `threads` run everywhere.
    ///
    /// # Examples
    /// ```
    /// use flexio::CopyKernel;
    /// assert!(CopyKernel::Memcpy.is_available());
    /// assert!(CopyKernel::available().contains(&CopyKernel::Threads));
    /// ```
    pub fn is_available(self) -> bool {
        match self {
            CopyKernel::Memcpy | CopyKernel::Threads => true,
            CopyKernel::RepMovsb => flexio_sys::copy_kernels::has_rep_movsb(),
            CopyKernel::NtAvx2 => flexio_sys::copy_kernels::has_nt_avx2(),
            CopyKernel::NtAvx512 => flexio_sys::copy_kernels::has_nt_avx512(),
        }
    }

    /// The kernels this CPU has, in the order of [`CopyKernel::ALL`].
    pub fn available() -> Vec<CopyKernel> {
        CopyKernel::ALL
            .into_iter()
            .filter(|k| k.is_available())
            .collect()
    }

    /// What this CPU lacks for this kernel (`None` when it has it).
    pub fn missing(self) -> Option<&'static str> {
        match self {
            _ if self.is_available() => None,
            CopyKernel::NtAvx2 => Some("this CPU has no AVX2"),
            CopyKernel::NtAvx512 => Some("this CPU has no AVX-512F"),
            _ => Some("this CPU is not x86-64"),
        }
    }

    /// Copies `src` into `dst` (equal lengths) with this kernel.
    ///
    /// # Panics
    /// When the lengths differ, as `copy_from_slice` does.
    ///
    /// # Examples
    /// ```
    /// use flexio::CopyKernel;
    /// for kernel in CopyKernel::available() {
    ///     let mut dst = [0u8; 3];
    ///     kernel.copy(&mut dst, b"abc");
    ///     assert_eq!(&dst, b"abc");
    /// }
    /// ```
    pub fn copy(self, dst: &mut [u8], src: &[u8]) {
        match self {
            CopyKernel::Memcpy => dst.copy_from_slice(src),
            CopyKernel::RepMovsb => flexio_sys::copy_kernels::copy_rep_movsb(dst, src),
            CopyKernel::NtAvx2 => flexio_sys::copy_kernels::copy_nt_avx2(dst, src),
            CopyKernel::NtAvx512 => flexio_sys::copy_kernels::copy_nt_avx512(dst, src),
            CopyKernel::Threads => copy_threaded(dst, src),
        }
    }
}

/// One piece per CPU (fewer for a small copy, see
/// [`MIN_BYTES_PER_THREAD`]), each copied by `memcpy`; the caller's
/// thread takes the first piece and waits for the others.
fn copy_threaded(dst: &mut [u8], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "copy kernel: destination and source lengths differ"
    );
    let threads = (src.len() / MIN_BYTES_PER_THREAD).clamp(1, cpus());
    if threads == 1 {
        dst.copy_from_slice(src);
        return;
    }
    let piece = src.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let mut pieces = dst.chunks_mut(piece).zip(src.chunks(piece));
        let first = pieces.next();
        for (to, from) in pieces {
            scope.spawn(move || to.copy_from_slice(from));
        }
        if let Some((to, from)) = first {
            to.copy_from_slice(from);
        }
    });
}

/// The CPUs this process may run on, asked once: `available_parallelism`
/// reads the cgroup's quota files, which cost more (tens of microseconds,
/// measured as a 64 B threads copy ten times slower than memcpy) than a
/// small copy.
fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(kernel: CopyKernel, len: usize, at: usize) {
        let src: Vec<u8> = (0..len + at).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut dst = vec![0xEEu8; len + at + 1];
        kernel.copy(&mut dst[at..at + len], &src[at..]);
        assert!(dst[..at].iter().all(|&b| b == 0xEE), "{kernel}: before");
        assert_eq!(dst[at + len], 0xEE, "{kernel}: after");
        assert!(
            dst[at..at + len] == src[at..],
            "{kernel}: {len} bytes at +{at}"
        );
    }

    #[test]
    fn every_kernel_is_byte_exact_at_every_size_to_4096_and_odd_offsets() {
        for kernel in CopyKernel::ALL {
            for len in 0..=4096 {
                for at in [0, 1, 3, 31] {
                    check(kernel, len, at);
                }
            }
        }
    }

    #[test]
    fn threads_split_at_every_piece_edge() {
        for len in [
            2 * MIN_BYTES_PER_THREAD - 1,
            2 * MIN_BYTES_PER_THREAD,
            2 * MIN_BYTES_PER_THREAD + 1,
            7 * MIN_BYTES_PER_THREAD + 13,
        ] {
            check(CopyKernel::Threads, len, 5);
        }
    }

    #[test]
    fn names_round_trip_and_missing_features_are_named() {
        for kernel in CopyKernel::ALL {
            assert_eq!(kernel.as_str().parse::<CopyKernel>(), Ok(kernel));
            assert_eq!(kernel.missing().is_none(), kernel.is_available());
        }
        assert!("sse".parse::<CopyKernel>().unwrap_err().contains("nt-avx2"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn every_kernel_is_byte_exact_at_any_size(len in 0usize..(1 << 20), at in 0usize..64) {
            for kernel in CopyKernel::ALL {
                check(kernel, len, at);
            }
        }
    }
}
