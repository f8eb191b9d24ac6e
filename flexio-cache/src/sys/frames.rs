//! The frames of one shard, readable without the shard's lock.
//!
//! A hit found without the lock (a seqlock read, see `cache/shard.rs`)
//! copies a frame while a writer holding the lock may be refilling it; the
//! reader then sees the sequence number move and throws its copy away. For
//! that race to be defined behaviour and not a data race, every copy that
//! can overlap a write is a byte-wise atomic copy — the `AtomicPerByte`
//! memcpy of Rust RFC 3301, done here with `rep movsb`/`rep stosb` in
//! inline assembly on x86-64 (as fast as `memcpy` at a block's size) and
//! with relaxed `AtomicU8` accesses elsewhere. So:
//!
//! * [`Frames`] lives under the shard's lock: plain reads through `&self`
//!   (no write can overlap them: writes need `&mut self`), and writes
//!   through `&mut self` that are byte-wise atomic (a [`FrameReader`] may
//!   be reading at the same time).
//! * [`FrameReader`] is the lock-free side: byte-wise atomic loads only.
//!
//! Both hold the memory through one `Arc`, so it outlives whichever is
//! dropped last.

use std::ptr::NonNull;
use std::sync::Arc;

use flexio_sys::AlignedBuffer;

/// The memory: `count` frames of `size` bytes.
struct Arena {
    _buffer: AlignedBuffer,
    base: NonNull<u8>,
    size: usize,
    count: usize,
}

// SAFETY: the arena is heap memory owned through `_buffer`; `base` points
// into it. Threads touch it only as the module documentation says: writes
// byte-wise atomic and only through `&mut Frames`, plain reads only through
// `&Frames` (excluded from writes by the borrow), and `FrameReader`'s
// byte-wise atomic loads, which may overlap writes.
unsafe impl Send for Arena {}
// SAFETY: as for `Send`.
unsafe impl Sync for Arena {}

/// The frames, owned by the shard (under its lock).
pub(crate) struct Frames {
    arena: Arc<Arena>,
}

/// Lock-free, load-only access to the same frames.
#[derive(Clone)]
pub(crate) struct FrameReader {
    arena: Arc<Arena>,
}

impl Arena {
    /// The address of byte `within` of frame `frame`, checked: `len` bytes
    /// from it lie inside the frame.
    fn at(&self, frame: u32, within: usize, len: usize) -> *mut u8 {
        let frame = frame as usize;
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

impl Frames {
    /// `count` zeroed frames of `size` bytes, each aligned to `align`.
    pub fn new(count: usize, size: usize, align: usize) -> Frames {
        let mut buffer = AlignedBuffer::new(count * size, align);
        let base = NonNull::new(buffer.as_mut_ptr()).expect("an allocation is not null");
        Frames {
            arena: Arc::new(Arena {
                _buffer: buffer,
                base,
                size,
                count,
            }),
        }
    }

    /// A load-only handle for readers without the lock.
    pub fn reader(&self) -> FrameReader {
        FrameReader {
            arena: Arc::clone(&self.arena),
        }
    }

    /// Frame `frame`'s bytes.
    pub fn frame(&self, frame: u32) -> &[u8] {
        let size = self.arena.size;
        let at = self.arena.at(frame, 0, size);
        // SAFETY: `size` bytes inside the arena (checked by `at`), zeroed at
        // allocation so initialised; no write overlaps the borrow, since
        // writes take `&mut self` and `FrameReader` only loads.
        unsafe { std::slice::from_raw_parts(at, size) }
    }

    /// Copies `bytes` into frame `frame` from byte `within` on.
    pub fn store(&mut self, frame: u32, within: usize, bytes: &[u8]) {
        let at = self.arena.at(frame, within, bytes.len());
        // SAFETY: `at` has room for `bytes` (checked by `at`); `bytes` is a
        // separate borrow, so they do not overlap.
        unsafe { atomic_copy(at, bytes.as_ptr(), bytes.len()) }
    }

    /// Fills frame `frame` with `byte`.
    pub fn fill(&mut self, frame: u32, byte: u8) {
        let size = self.arena.size;
        let at = self.arena.at(frame, 0, size);
        // SAFETY: `size` bytes inside the arena, checked by `at`.
        unsafe { atomic_fill(at, byte, size) }
    }
}

impl FrameReader {
    /// Copies `into.len()` bytes of frame `frame` from byte `within` on.
    /// The copy may be torn by a concurrent write: the caller checks, as a
    /// seqlock reader does, that none happened before using it.
    pub fn load(&self, frame: u32, within: usize, into: &mut [u8]) {
        let at = self.arena.at(frame, within, into.len());
        // SAFETY: `at` holds `into.len()` bytes (checked by `at`); `into`
        // is a unique borrow outside the arena.
        unsafe { atomic_copy(into.as_mut_ptr(), at, into.len()) }
    }
}

/// Copies `len` bytes from `src` to `dst` as byte-wise relaxed atomic
/// accesses.
///
/// # Safety
/// `src` is valid for `len` bytes of reads, `dst` for `len` bytes of
/// writes, and they do not overlap.
#[cfg(target_arch = "x86_64")]
unsafe fn atomic_copy(dst: *mut u8, src: *const u8, len: usize) {
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

/// Fills `len` bytes at `dst` with `byte` as byte-wise relaxed atomic
/// stores.
///
/// # Safety
/// `dst` is valid for `len` bytes of writes.
#[cfg(target_arch = "x86_64")]
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
/// accesses.
///
/// # Safety
/// As the x86-64 version.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn atomic_copy(dst: *mut u8, src: *const u8, len: usize) {
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
/// stores.
///
/// # Safety
/// As the x86-64 version.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn atomic_fill(dst: *mut u8, byte: u8, len: usize) {
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
    for i in 0..len {
        // SAFETY: in bounds by the caller's contract.
        unsafe { AtomicU8::from_ptr(dst.add(i)).store(byte, Relaxed) }
    }
}

#[cfg(test)]
mod tests {
    use super::Frames;

    #[test]
    fn stores_and_fills_are_seen_by_plain_reads_and_by_the_reader() {
        let mut frames = Frames::new(3, 4096, 4096);
        let reader = frames.reader();
        let bytes: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
        frames.store(1, 0, &bytes);
        frames.store(2, 100, &bytes[..10]);
        frames.fill(0, 7);
        assert_eq!(frames.frame(1), &bytes[..]);
        assert_eq!(&frames.frame(2)[100..110], &bytes[..10]);
        assert_eq!(frames.frame(2)[99], 0);
        assert!(frames.frame(0).iter().all(|&b| b == 7));
        let mut out = vec![0u8; 300];
        reader.load(1, 3000, &mut out);
        assert_eq!(out, &bytes[3000..3300]);
        drop(frames);
        // The reader keeps the memory alive.
        reader.load(0, 0, &mut out);
        assert!(out.iter().all(|&b| b == 7));
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn a_copy_past_the_frame_is_refused() {
        let frames = Frames::new(2, 512, 512);
        frames.reader().load(1, 500, &mut [0u8; 13]);
    }
}
