//! The frames of one shard, readable without the shard's lock.
//!
//! A hit found without the lock (a seqlock read, see `cache/shard.rs`)
//! copies a frame while a writer holding the lock may be refilling it; the
//! reader then sees the sequence number move and throws its copy away. For
//! that race to be defined behaviour and not a data race, every copy that
//! can overlap a write is a byte-wise atomic copy — the `AtomicPerByte`
//! memcpy of Rust RFC 3301, done in inline assembly on x86-64 when the
//! `asm-frame-copy` feature is on (the default: AVX vector moves, `rep
//! movsb` for a tail, `rep stosb` to fill), and with relaxed `AtomicU8`
//! accesses otherwise (other architectures, or the feature off: slower on
//! a hit, but no assembly to audit). So:
//!
//! * [`Frames`] lives under the shard's lock: plain reads through `&self`
//!   (no write can overlap them: writes need `&mut self`), and writes
//!   through `&mut self` that are byte-wise atomic (a [`FrameReader`] may
//!   be reading at the same time).
//! * [`FrameReader`] is the lock-free side: byte-wise atomic loads only.
//!
//! Both hold the memory through one `Arc`, so it outlives whichever is
//! dropped last. One [`Arena`] holds every shard's frames, so that it can
//! be backed by transparent huge pages: a hit lands on a random block, and
//! with 4 KiB pages most hits in a cache of more than a few megabytes would
//! also miss the TLB.

use std::ptr::NonNull;
use std::sync::Arc;

/// The memory of every frame of a cache: `count` frames of `size` bytes,
/// an anonymous private mapping of its own (so zeroed by the kernel and
/// untouched until used, which lets huge pages back it).
pub struct Arena {
    base: NonNull<u8>,
    mapped: usize,
    size: usize,
    count: usize,
}

// SAFETY: the arena is a mapping owned by this value; `base` points to it.
// Threads touch it only as the module documentation says: writes byte-wise
// atomic and only through `&mut Frames` (each shard's own range), plain
// reads only through `&Frames` (excluded from writes by the borrow), and
// `FrameReader`'s byte-wise atomic loads, which may overlap writes.
unsafe impl Send for Arena {}
// SAFETY: as for `Send`.
unsafe impl Sync for Arena {}

/// Transparent huge pages are 2 MiB on x86-64 and most arm64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// One shard's frames, `first..first + count` of the arena, owned by the
/// shard (under its lock).
pub struct Frames {
    arena: Arc<Arena>,
    first: usize,
    count: usize,
}

/// Lock-free, load-only access to the same frames.
#[derive(Clone)]
pub struct FrameReader {
    arena: Arc<Arena>,
    first: usize,
    count: usize,
}

impl Arena {
    /// `count` zeroed frames of `size` bytes (a power of two of at least
    /// 512), each aligned to its size or to 4 KiB, whichever is smaller —
    /// enough for a direct write from a frame. An arena of a huge page or
    /// more is advised to be backed by huge pages (`madvise(MADV_HUGEPAGE)`
    /// before anything touches it; where the kernel declines, it is an
    /// ordinary mapping).
    ///
    /// # Panics
    /// When the mapping fails (out of address space or memory), as an
    /// allocation does.
    pub fn new(count: usize, size: usize) -> Arc<Arena> {
        let mapped = (count * size).max(1);
        // SAFETY: a fresh anonymous private mapping, at an address of the
        // kernel's choosing: it aliases nothing.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                mapped,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .unwrap_or_else(|e| panic!("mapping {mapped} bytes of cache frames: {e}"));
        if mapped >= HUGE_PAGE {
            // SAFETY: the range is this mapping, not yet touched; the advice
            // changes how its pages are backed, not what they hold (zeroes).
            let _ = unsafe { rustix::mm::madvise(base, mapped, rustix::mm::Advice::LinuxHugepage) };
        }
        Arc::new(Arena {
            base: NonNull::new(base.cast()).expect("mmap does not return null"),
            mapped,
            size,
            count,
        })
    }

    /// The address of byte `within` of the arena's frame `frame`, checked:
    /// `len` bytes from it lie inside that frame.
    #[inline]
    fn at(&self, frame: usize, within: usize, len: usize) -> *mut u8 {
        assert!(
            frame < self.count && within <= self.size && len <= self.size - within,
            "frame {frame} bytes {within}+{len} outside {} frames of {}",
            self.count,
            self.size
        );
        // SAFETY: in bounds of the allocation, checked just above.
        unsafe { self.base.as_ptr().add(frame * self.size + within) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once: the last `Arc`
        // is going, so no `Frames` or `FrameReader` refers to it any more.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.mapped) };
    }
}

/// The arena's index of a shard's `frame`, checked against its `count`.
#[inline]
fn index(first: usize, count: usize, frame: u32) -> usize {
    let frame = frame as usize;
    assert!(frame < count, "frame {frame} of a shard of {count}");
    first + frame
}

impl Frames {
    /// Frames `first..first + count` of `arena`, for one shard. Shards must
    /// be given ranges that do not overlap.
    pub fn new(arena: &Arc<Arena>, first: usize, count: usize) -> Frames {
        assert!(first + count <= arena.count, "frames past the arena");
        Frames {
            arena: Arc::clone(arena),
            first,
            count,
        }
    }

    /// A load-only handle for readers without the lock.
    pub fn reader(&self) -> FrameReader {
        FrameReader {
            arena: Arc::clone(&self.arena),
            first: self.first,
            count: self.count,
        }
    }

    /// Frame `frame`'s bytes.
    pub fn frame(&self, frame: u32) -> &[u8] {
        let size = self.arena.size;
        let at = self.arena.at(index(self.first, self.count, frame), 0, size);
        // SAFETY: `size` bytes inside the arena (checked by `at`), zeroed at
        // allocation so initialised; no write overlaps the borrow, since
        // this shard's frames are written only through `&mut self` (no
        // other `Frames` covers them) and `FrameReader` only loads.
        unsafe { std::slice::from_raw_parts(at, size) }
    }

    /// Copies `bytes` into frame `frame` from byte `within` on.
    pub fn store(&mut self, frame: u32, within: usize, bytes: &[u8]) {
        let at = self
            .arena
            .at(index(self.first, self.count, frame), within, bytes.len());
        // SAFETY: `at` has room for `bytes` (checked by `at`); `bytes` is a
        // separate borrow, so they do not overlap.
        unsafe { atomic_copy(at, bytes.as_ptr(), bytes.len()) }
    }

    /// Fills frame `frame` with `byte`.
    pub fn fill(&mut self, frame: u32, byte: u8) {
        let size = self.arena.size;
        let at = self.arena.at(index(self.first, self.count, frame), 0, size);
        // SAFETY: `size` bytes inside the arena, checked by `at`.
        unsafe { atomic_fill(at, byte, size) }
    }
}

impl FrameReader {
    /// Copies `into.len()` bytes of frame `frame` from byte `within` on.
    /// The copy may be torn by a concurrent write: the caller checks, as a
    /// seqlock reader does, that none happened before using it.
    #[inline]
    pub fn load(&self, frame: u32, within: usize, into: &mut [u8]) {
        let at = self
            .arena
            .at(index(self.first, self.count, frame), within, into.len());
        // SAFETY: `at` holds `into.len()` bytes (checked by `at`); `into`
        // is a unique borrow outside the arena.
        unsafe { atomic_copy(into.as_mut_ptr(), at, into.len()) }
    }
}

/// Copies `len` bytes from `src` to `dst` as byte-wise relaxed atomic
/// accesses: the multiple of 128 bytes at the front with 32-byte vector
/// moves where the CPU has AVX, the rest with `rep movsb`.
///
/// Why not `rep movsb` for all of it: on AMD Zen (and older Intel parts)
/// it copies a 4 KiB block well below `memcpy`'s speed — glibc itself
/// uses a vector loop at that size — and the copy is most of a hit.
///
/// # Safety
/// `src` is valid for `len` bytes of reads, `dst` for `len` bytes of
/// writes, and they do not overlap.
#[cfg(all(target_arch = "x86_64", feature = "asm-frame-copy"))]
#[inline]
unsafe fn atomic_copy(dst: *mut u8, src: *const u8, len: usize) {
    let vectors = len & !(VECTOR_STEP - 1);
    let (mut dst, mut src, mut len) = (dst, src, len);
    if vectors != 0 && std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above); the first
        // `vectors` bytes are within the caller's ranges.
        unsafe { atomic_copy_avx(dst, src, vectors) };
        // SAFETY: `vectors <= len`, so still within (or one past) the
        // caller's ranges.
        (dst, src, len) = unsafe { (dst.add(vectors), src.add(vectors), len - vectors) };
    }
    if len != 0 {
        // SAFETY: the caller's contract; `rep movsb` touches exactly
        // `dst..dst + len` and `src..src + len`, each byte once, and the
        // direction flag is clear on entry to inline assembly.
        unsafe {
            std::arch::asm!(
                "rep movsb",
                inout("rcx") len => _,
                inout("rsi") src => _,
                inout("rdi") dst => _,
                options(nostack, preserves_flags)
            );
        }
    }
}

/// The bytes one turn of [`atomic_copy_avx`]'s loop moves.
#[cfg(all(target_arch = "x86_64", feature = "asm-frame-copy"))]
const VECTOR_STEP: usize = 128;

/// Copies `len` bytes, a non-zero multiple of [`VECTOR_STEP`], with four
/// 32-byte unaligned loads then four stores a turn. Each byte is loaded
/// and stored once by one instruction, and x86-64 makes every byte of a
/// vector access single-copy atomic, so this is as much a byte-wise
/// atomic copy (what a racing reader needs, see the module documentation)
/// as `rep movsb` is: being assembly, the compiler assumes nothing of it
/// beyond the pointers it is given.
///
/// # Safety
/// The CPU has AVX; `src` is valid for `len` bytes of reads, `dst` for
/// `len` bytes of writes, they do not overlap, and `len` is a non-zero
/// multiple of [`VECTOR_STEP`].
#[cfg(all(target_arch = "x86_64", feature = "asm-frame-copy"))]
#[target_feature(enable = "avx")]
unsafe fn atomic_copy_avx(dst: *mut u8, src: *const u8, len: usize) {
    debug_assert!(len != 0 && len.is_multiple_of(VECTOR_STEP));
    // SAFETY: the caller's contract: AVX is present, and the loop touches
    // `src..src + len` and `dst..dst + len` only, ending when `rcx` (a
    // non-zero multiple of 128) reaches 0. `vzeroupper` avoids the
    // penalty of mixing these 256-bit moves with SSE code after; every
    // vector register is declared clobbered (`clobber_abi`).
    unsafe {
        std::arch::asm!(
            "2:",
            "vmovdqu ymm0, [rsi]",
            "vmovdqu ymm1, [rsi + 32]",
            "vmovdqu ymm2, [rsi + 64]",
            "vmovdqu ymm3, [rsi + 96]",
            "vmovdqu [rdi], ymm0",
            "vmovdqu [rdi + 32], ymm1",
            "vmovdqu [rdi + 64], ymm2",
            "vmovdqu [rdi + 96], ymm3",
            "add rsi, 128",
            "add rdi, 128",
            "sub rcx, 128",
            "jnz 2b",
            "vzeroupper",
            inout("rcx") len => _,
            inout("rsi") src => _,
            inout("rdi") dst => _,
            clobber_abi("C"),
            options(nostack)
        );
    }
}

/// Fills `len` bytes at `dst` with `byte` as byte-wise relaxed atomic
/// stores.
///
/// # Safety
/// `dst` is valid for `len` bytes of writes.
#[cfg(all(target_arch = "x86_64", feature = "asm-frame-copy"))]
unsafe fn atomic_fill(dst: *mut u8, byte: u8, len: usize) {
    // SAFETY: the caller's contract; `rep stosb` writes exactly
    // `dst..dst + len`.
    unsafe {
        std::arch::asm!(
            "rep stosb",
            inout("rcx") len => _,
            inout("rdi") dst => _,
            in("al") byte,
            options(nostack, preserves_flags)
        );
    }
}

/// Copies `len` bytes from `src` to `dst` as byte-wise relaxed atomic
/// accesses, one `AtomicU8` at a time: the copy where the assembly is not
/// built.
///
/// # Safety
/// `src` is valid for `len` bytes of reads, `dst` for `len` bytes of
/// writes, and they do not overlap.
#[cfg_attr(
    all(target_arch = "x86_64", feature = "asm-frame-copy"),
    allow(dead_code)
)]
unsafe fn portable_copy(dst: *mut u8, src: *const u8, len: usize) {
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
    for i in 0..len {
        // SAFETY: in bounds by the caller's contract; every access to
        // these bytes that can race is atomic.
        unsafe {
            let byte = AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed);
            AtomicU8::from_ptr(dst.add(i)).store(byte, Relaxed);
        }
    }
}

/// Fills `len` bytes at `dst` with `byte` as byte-wise relaxed atomic
/// stores, one `AtomicU8` at a time.
///
/// # Safety
/// `dst` is valid for `len` bytes of writes.
#[cfg_attr(
    all(target_arch = "x86_64", feature = "asm-frame-copy"),
    allow(dead_code)
)]
unsafe fn portable_fill(dst: *mut u8, byte: u8, len: usize) {
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
    for i in 0..len {
        // SAFETY: in bounds by the caller's contract.
        unsafe { AtomicU8::from_ptr(dst.add(i)).store(byte, Relaxed) }
    }
}

#[cfg(not(all(target_arch = "x86_64", feature = "asm-frame-copy")))]
use portable_copy as atomic_copy;
#[cfg(not(all(target_arch = "x86_64", feature = "asm-frame-copy")))]
use portable_fill as atomic_fill;

#[cfg(test)]
mod tests {
    use super::{Arena, Frames};

    #[test]
    fn stores_and_fills_are_seen_by_plain_reads_and_by_the_reader() {
        let arena = Arena::new(5, 4096);
        let mut frames = Frames::new(&arena, 2, 3);
        let mut other = Frames::new(&arena, 0, 2);
        other.fill(1, 9);
        drop(arena);
        let reader = frames.reader();
        let bytes: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
        frames.store(1, 0, &bytes);
        frames.store(2, 100, &bytes[..10]);
        frames.fill(0, 7);
        assert_eq!(frames.frame(1), &bytes[..]);
        assert_eq!(&frames.frame(2)[100..110], &bytes[..10]);
        assert_eq!(frames.frame(2)[99], 0);
        assert!(frames.frame(0).iter().all(|&b| b == 7));
        assert!(other.frame(1).iter().all(|&b| b == 9), "a shard of its own");
        assert!(other.frame(0).iter().all(|&b| b == 0));
        let mut out = vec![0u8; 300];
        reader.load(1, 3000, &mut out);
        assert_eq!(out, &bytes[3000..3300]);
        drop(frames);
        // The reader keeps the memory alive.
        reader.load(0, 0, &mut out);
        assert!(out.iter().all(|&b| b == 7));
    }

    #[test]
    fn copies_of_every_length_and_offset_move_exactly_their_bytes() {
        // The vector loop takes whole 128-byte steps and `rep movsb` the
        // rest: lengths and offsets around those edges, and nothing past
        // the end of the destination written.
        let mut frames = Frames::new(&Arena::new(1, 4096), 0, 1);
        let bytes: Vec<u8> = (0..4096).map(|i| (i * 7 % 253) as u8 + 1).collect();
        frames.store(0, 0, &bytes);
        let reader = frames.reader();
        for len in [0, 1, 127, 128, 129, 255, 256, 257, 1000, 3968, 4095, 4096] {
            for within in [0, 1, 31, 64].into_iter().filter(|w| w + len <= 4096) {
                let mut out = vec![0u8; len + 1];
                reader.load(0, within, &mut out[..len]);
                assert_eq!(
                    &out[..len],
                    &bytes[within..within + len],
                    "{len} at {within}"
                );
                assert_eq!(out[len], 0, "{len} at {within}: wrote past the end");
            }
        }
    }

    #[test]
    fn the_portable_copy_and_fill_move_exactly_their_bytes() {
        // Built and tested whichever copy the frames use, so the fallback
        // behind the feature cannot rot unseen.
        let src: Vec<u8> = (0..1000).map(|i| (i % 251) as u8 + 1).collect();
        for len in [0, 1, 127, 128, 129, 999] {
            let mut dst = vec![0u8; len + 1];
            // SAFETY: both vectors hold at least `len` bytes and are
            // separate allocations.
            unsafe { super::portable_copy(dst.as_mut_ptr(), src.as_ptr(), len) };
            assert_eq!(&dst[..len], &src[..len], "{len}");
            assert_eq!(dst[len], 0, "{len}: wrote past the end");
            // SAFETY: `dst` holds `len + 1` bytes.
            unsafe { super::portable_fill(dst.as_mut_ptr(), 9, len) };
            assert!(dst[..len].iter().all(|&b| b == 9) && dst[len] == 0);
        }
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn a_copy_past_the_frame_is_refused() {
        let frames = Frames::new(&Arena::new(2, 512), 0, 2);
        frames.reader().load(1, 500, &mut [0u8; 13]);
    }

    #[test]
    #[should_panic(expected = "of a shard of 2")]
    fn a_frame_of_another_shard_is_refused() {
        let frames = Frames::new(&Arena::new(4, 512), 0, 2);
        frames.reader().load(2, 0, &mut [0u8; 1]);
    }

    #[test]
    fn frames_of_every_size_are_aligned_for_direct_io() {
        for size in [512, 4096, 65536] {
            let arena = Arena::new(3, size);
            for frame in 0..3 {
                let at = arena.at(frame, 0, size) as usize;
                assert_eq!(at % size.min(4096), 0);
            }
        }
    }
}
