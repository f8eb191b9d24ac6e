//! Memory maps of files: map, advise, ask residency, unmap on drop.

use std::ffi::c_void;
use std::io;
use std::os::fd::AsFd;
use std::ptr::NonNull;

use rustix::mm::{Advice, MapFlags, ProtFlags};

/// A shared mapping of part of a file, unmapped on drop.
pub struct Mapping {
    ptr: NonNull<c_void>,
    len: usize,
    writable: bool,
}

// SAFETY: the mapping is plain memory owned by this value; moving it to
// another thread moves that ownership.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from `offset` (a multiple of the page size),
    /// read-only or read-write, shared.
    ///
    /// # Errors
    /// `InvalidInput` for `len` 0; the errno of `mmap(2)` (`EACCES` for a
    /// write mapping of a read-only descriptor, `ENODEV` for a file that
    /// cannot be mapped).
    ///
    /// Reference: <https://man7.org/linux/man-pages/man2/mmap.2.html>
    pub fn map<Fd: AsFd>(fd: Fd, offset: u64, len: usize, writable: bool) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let prot = if writable {
            ProtFlags::READ | ProtFlags::WRITE
        } else {
            ProtFlags::READ
        };
        // SAFETY: a new mapping at an address the kernel chooses aliases no
        // Rust object; it lives until `Drop` unmaps it.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                MapFlags::SHARED,
                fd,
                offset,
            )
        }?;
        let ptr = NonNull::new(ptr).ok_or_else(|| io::Error::from(io::ErrorKind::Other))?;
        Ok(Mapping { ptr, len, writable })
    }

    /// The address of the first byte.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never: [`Mapping::map`] refuses an empty mapping.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The mapped bytes.
    ///
    /// Reading a page past the end of a file that shrank after mapping
    /// raises SIGBUS; callers that read file mappings hold a
    /// `sigbus::Guard` over them.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes for as long as `self`
        // lives; a shared file mapping may change under us (another writer)
        // but every byte value is valid for `u8`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), self.len) }
    }

    /// The mapped bytes, writable (only for a mapping made writable).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        assert!(self.writable, "mapping is read-only");
        // SAFETY: as in `as_slice`, and `&mut self` makes the borrow unique;
        // the mapping was made with PROT_WRITE.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<u8>(), self.len) }
    }

    /// `madvise(2)`.
    pub fn advise(&self, advice: Advice) -> io::Result<()> {
        // SAFETY: the range is exactly this mapping; advice changes no
        // memory this process relies on (no MADV_DONTNEED on private maps).
        unsafe { rustix::mm::madvise(self.ptr.as_ptr(), self.len, advice) }?;
        Ok(())
    }

    /// How many of the mapping's pages are in the page cache (`mincore(2)`).
    pub fn resident_pages(&self) -> io::Result<u64> {
        let page = rustix::param::page_size();
        let pages = self.len.div_ceil(page);
        let mut vector = vec![0u8; pages];
        // SAFETY: the range is this mapping; `vector` has one byte per page.
        let rc = unsafe { libc::mincore(self.ptr.as_ptr(), self.len, vector.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(vector.iter().filter(|&&b| b & 1 != 0).count() as u64)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` came from a successful mmap and no borrow of
        // the bytes outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr(), self.len) };
    }
}
