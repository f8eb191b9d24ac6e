//! Copy kernels for memory-to-memory flows, TPIL's PIO half on host
//! memory: `rep movsb` (the CPU's own string copy, fast with ERMS/FSRM)
//! and non-temporal stores with AVX2 or AVX-512 (the stores go around the
//! caches, as TPIL's MMX/SSE stores went to the device, and an `sfence`
//! orders them before the copy returns).
//!
//! Every function takes two slices of one length and is safe to call on
//! any CPU: where the CPU lacks the feature (checked at run time, once per
//! call), or on another architecture, it copies with `copy_from_slice`
//! (the C library's `memcpy`). [`has_nt_avx2`] and [`has_nt_avx512`] say
//! which kernel is the real one here. The kernel that splits a copy over
//! several threads needs no `unsafe` and lives in `flexio`.

/// Whether [`copy_nt_avx2`] uses AVX2 non-temporal stores on this CPU.
pub fn has_nt_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether [`copy_nt_avx512`] uses AVX-512 non-temporal stores on this CPU.
pub fn has_nt_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether [`copy_rep_movsb`] uses `rep movsb` (any x86-64; fast where the
/// CPU has ERMS, see [`has_erms`]).
pub fn has_rep_movsb() -> bool {
    cfg!(target_arch = "x86_64")
}

/// Whether the CPU advertises enhanced `rep movsb` (ERMS), which makes the
/// string copy competitive beyond a few hundred bytes.
pub fn has_erms() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("ermsb")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Copies `src` into `dst` with `rep movsb`.
///
/// # Panics
/// When the slices differ in length (as `copy_from_slice` does).
///
/// # Examples
/// ```
/// let mut dst = [0u8; 5];
/// flexio_sys::copy_kernels::copy_rep_movsb(&mut dst, b"hello");
/// assert_eq!(&dst, b"hello");
/// ```
pub fn copy_rep_movsb(dst: &mut [u8], src: &[u8]) {
    same_len(dst, src);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `dst` and `src` are `len` bytes each (checked above), and a
    // unique and a shared borrow cannot overlap; `rep movsb` touches
    // exactly those bytes, and the direction flag is clear on entry to
    // inline assembly (the ABI's rule).
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rcx") src.len() => _,
            inout("rsi") src.as_ptr() => _,
            inout("rdi") dst.as_mut_ptr() => _,
            options(nostack, preserves_flags)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Copies `src` into `dst` with AVX2 non-temporal 32-byte stores where the
/// CPU has AVX2: the unaligned head and the tail shorter than a vector by
/// `copy_from_slice`, the rest streamed, then `sfence`.
///
/// # Panics
/// When the slices differ in length.
///
/// # Examples
/// ```
/// let src: Vec<u8> = (0..100u8).collect();
/// let mut dst = vec![0u8; 100];
/// flexio_sys::copy_kernels::copy_nt_avx2(&mut dst, &src);
/// assert_eq!(dst, src);
/// ```
pub fn copy_nt_avx2(dst: &mut [u8], src: &[u8]) {
    same_len(dst, src);
    #[cfg(target_arch = "x86_64")]
    if has_nt_avx2() {
        // SAFETY: the CPU has AVX2 (checked just above), which
        // `stream_avx2` needs; it streams 32-byte steps to 32-byte
        // aligned addresses.
        unsafe { copy_streamed(dst, src, 32, stream_avx2) };
        return;
    }
    dst.copy_from_slice(src);
}

/// Copies `src` into `dst` with AVX-512 non-temporal 64-byte stores where
/// the CPU has AVX-512F, else with `copy_from_slice`; as [`copy_nt_avx2`]
/// otherwise.
///
/// # Panics
/// When the slices differ in length.
///
/// # Examples
/// ```
/// let src: Vec<u8> = (0..200u8).collect();
/// let mut dst = vec![0u8; 200];
/// flexio_sys::copy_kernels::copy_nt_avx512(&mut dst, &src);
/// assert_eq!(dst, src);
/// ```
pub fn copy_nt_avx512(dst: &mut [u8], src: &[u8]) {
    same_len(dst, src);
    #[cfg(target_arch = "x86_64")]
    if has_nt_avx512() {
        // SAFETY: the CPU has AVX-512F (checked just above), which
        // `stream_avx512` needs; it streams 64-byte steps to 64-byte
        // aligned addresses.
        unsafe { copy_streamed(dst, src, 64, stream_avx512) };
        return;
    }
    dst.copy_from_slice(src);
}

fn same_len(dst: &[u8], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "copy kernel: destination and source lengths differ"
    );
}

/// Copies `src` (as long as `dst`) into `dst`: the bytes before `dst`'s
/// first `align`-aligned address and the tail shorter than `align` by
/// `copy_from_slice`, the whole multiple of `align` between by `stream`.
///
/// # Safety
/// `stream` may run on this CPU, and copies `len` bytes (a multiple of
/// `align`) to an `align`-aligned destination, as `stream_avx2` (32) and
/// `stream_avx512` (64) do.
#[cfg(target_arch = "x86_64")]
unsafe fn copy_streamed(
    dst: &mut [u8],
    src: &[u8],
    align: usize,
    stream: unsafe fn(*mut u8, *const u8, usize),
) {
    let head = dst.as_ptr().align_offset(align).min(dst.len());
    let body = (dst.len() - head) / align * align;
    dst[..head].copy_from_slice(&src[..head]);
    // SAFETY: `head + body <= len` for both slices (equal lengths, the
    // caller's), `dst + head` is `align`-aligned and `body` a multiple of
    // `align`; a unique and a shared borrow do not overlap; the caller
    // vouches for `stream` on this CPU.
    unsafe { stream(dst.as_mut_ptr().add(head), src.as_ptr().add(head), body) };
    dst[head + body..].copy_from_slice(&src[head + body..]);
}

/// Streams `len` bytes (a multiple of 32) to a 32-byte aligned `dst`.
///
/// # Safety
/// The CPU has AVX2; `src` is valid for `len` bytes of reads, `dst` for
/// `len` bytes of writes and 32-byte aligned; they do not overlap.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn stream_avx2(dst: *mut u8, src: *const u8, len: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256, _mm_sfence};
    let mut at = 0;
    while at < len {
        // SAFETY: `at + 32 <= len` (len is a multiple of 32), so both
        // vectors lie in the caller's ranges; `dst + at` stays 32-byte
        // aligned, as the stream store needs.
        unsafe {
            let v = _mm256_loadu_si256(src.add(at).cast::<__m256i>());
            _mm256_stream_si256(dst.add(at).cast::<__m256i>(), v);
        }
        at += 32;
    }
    // Non-temporal stores are weakly ordered: fence them before the bytes
    // are handed to anyone else.
    _mm_sfence();
}

/// Streams `len` bytes (a multiple of 64) to a 64-byte aligned `dst`.
///
/// In assembly rather than intrinsics: the AVX-512 intrinsics and
/// `target_feature(enable = "avx512f")` are stable only from Rust 1.89,
/// past the workspace's minimum. `clobber_abi("C")` tells the compiler
/// every vector register (`zmm0` included) may change; `vzeroupper`
/// leaves the upper halves clean for SSE code after it.
///
/// # Safety
/// The CPU has AVX-512F; `src` is valid for `len` bytes of reads, `dst`
/// for `len` bytes of writes and 64-byte aligned; they do not overlap.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_avx512(dst: *mut u8, src: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    // SAFETY: the caller's contract: the loop reads `src..src + len` and
    // writes `dst..dst + len` in 64-byte steps (`len` a non-zero multiple
    // of 64, `dst` 64-byte aligned as `vmovntdq` needs); the `sfence`
    // orders the weakly ordered stores before the copy returns.
    unsafe {
        std::arch::asm!(
            "2:",
            "vmovdqu64 zmm0, zmmword ptr [rsi]",
            "vmovntdq zmmword ptr [rdi], zmm0",
            "add rsi, 64",
            "add rdi, 64",
            "sub rcx, 64",
            "jnz 2b",
            "sfence",
            "vzeroupper",
            inout("rsi") src => _,
            inout("rdi") dst => _,
            inout("rcx") len => _,
            clobber_abi("C"),
            options(nostack)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Kernel = fn(&mut [u8], &[u8]);

    const KERNELS: [(&str, Kernel); 3] = [
        ("rep-movsb", copy_rep_movsb),
        ("nt-avx2", copy_nt_avx2),
        ("nt-avx512", copy_nt_avx512),
    ];

    /// Guard bytes either side of the destination: a kernel that writes
    /// one byte too many or too few shows here.
    const GUARD: usize = 80;

    fn pattern(len: usize, salt: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt) ^ (i >> 8) as u8)
            .collect()
    }

    /// Copies `len` bytes from `src_at` in a source buffer to `dst_at` in
    /// a destination buffer and checks every byte, guards included.
    fn check(kernel: Kernel, name: &str, len: usize, src_at: usize, dst_at: usize) {
        let src = pattern(src_at + len + GUARD, 7);
        let mut dst = vec![0xA5u8; dst_at + len + 2 * GUARD];
        let start = GUARD + dst_at;
        kernel(&mut dst[start..start + len], &src[src_at..src_at + len]);
        assert!(
            dst[..start].iter().all(|&b| b == 0xA5),
            "{name}: wrote before the destination (len {len}, src +{src_at}, dst +{dst_at})"
        );
        assert!(
            dst[start + len..].iter().all(|&b| b == 0xA5),
            "{name}: wrote past the destination (len {len}, src +{src_at}, dst +{dst_at})"
        );
        if let Some(i) = (0..len).find(|&i| dst[start + i] != src[src_at + i]) {
            panic!("{name}: byte {i} of {len} differs (src +{src_at}, dst +{dst_at})");
        }
    }

    #[test]
    fn every_kernel_is_byte_exact_at_every_size_to_4096_and_odd_alignments() {
        for (name, kernel) in KERNELS {
            for len in 0..=4096 {
                for (src_at, dst_at) in [(0, 0), (1, 3), (3, 1), (7, 0), (0, 33), (17, 63)] {
                    check(kernel, name, len, src_at, dst_at);
                }
            }
        }
    }

    /// The CPU flags the kernel reports (`/proc/cpuinfo`'s first `flags`).
    fn kernel_cpu_flags() -> Vec<String> {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").expect("read /proc/cpuinfo");
        cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("flags"))
            .and_then(|rest| rest.split_once(':'))
            .map(|(_, flags)| flags.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_cpu_features_are_said_as_the_kernel_reports_them() {
        // What this run exercised, in its log; and each answer the one the
        // kernel gives, so that a kernel is neither skipped nor run on a
        // CPU that lacks it.
        eprintln!(
            "copy kernels here: rep movsb {} (ERMS {}), AVX2 stream {}, AVX-512 stream {}",
            has_rep_movsb(),
            has_erms(),
            has_nt_avx2(),
            has_nt_avx512()
        );
        assert_eq!(has_rep_movsb(), cfg!(target_arch = "x86_64"));
        if !cfg!(target_arch = "x86_64") {
            assert!(!has_erms() && !has_nt_avx2() && !has_nt_avx512());
            return;
        }
        let flags = kernel_cpu_flags();
        assert!(!flags.is_empty(), "no flags line in /proc/cpuinfo");
        let has = |flag: &str| flags.iter().any(|f| f == flag);
        assert_eq!(has_erms(), has("erms"), "ERMS");
        assert_eq!(has_nt_avx2(), has("avx2"), "AVX2");
        assert_eq!(has_nt_avx512(), has("avx512f"), "AVX-512F");
    }

    #[test]
    #[should_panic(expected = "lengths differ")]
    fn unequal_lengths_panic_like_copy_from_slice() {
        copy_nt_avx2(&mut [0u8; 3], &[1u8; 4]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn every_kernel_is_byte_exact_at_any_size_and_offset(
            len in 0usize..(1 << 20),
            src_at in 0usize..128,
            dst_at in 0usize..128,
        ) {
            for (name, kernel) in KERNELS {
                check(kernel, name, len, src_at, dst_at);
            }
        }
    }
}
