//! Heap buffers aligned for direct I/O: `O_DIRECT` and registered io_uring
//! buffers need memory aligned to the device's block (or at least its DMA)
//! alignment, which `Vec<u8>` does not promise.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// A zeroed heap buffer whose first byte sits at a multiple of `align`,
/// freed on drop.
pub struct AlignedBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain heap memory owned by this value; moving it to
// another thread moves that ownership.
unsafe impl Send for AlignedBuffer {}

impl AlignedBuffer {
    /// A zeroed buffer of `len` bytes (at least 1) aligned to `align` (a
    /// power of two).
    ///
    /// # Examples
    /// ```
    /// let mut buffer = flexio_sys::AlignedBuffer::new(8192, 4096);
    /// assert_eq!(buffer.as_mut_ptr() as usize % 4096, 0);
    /// assert_eq!(buffer.as_slice(), &[0u8; 8192][..]);
    /// ```
    ///
    /// # Panics
    /// When `align` is not a power of two or `len` rounded up to it
    /// overflows `isize`.
    pub fn new(len: usize, align: usize) -> Self {
        let layout = Layout::from_size_align(len.max(1), align)
            .expect("aligned buffer: align is a power of two and the size fits");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuffer { ptr, layout }
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Never: a buffer holds at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The alignment the buffer was made with.
    pub fn align(&self) -> usize {
        self.layout.align()
    }

    /// The address of the first byte, for handing to the kernel.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialised (zeroed, then written as bytes) bytes
        // owned by `self`, borrowed shared for as long as `self` is.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with exactly this layout
        // and no borrow of the bytes outlives `self`.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl std::fmt::Debug for AlignedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuffer")
            .field("len", &self.len())
            .field("align", &self.align())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::AlignedBuffer;

    #[test]
    fn buffers_are_aligned_zeroed_and_writable() {
        for align in [512, 4096, 65536] {
            let mut buffer = AlignedBuffer::new(3 * align + 1, align);
            assert_eq!(buffer.as_mut_ptr() as usize % align, 0);
            assert_eq!(buffer.len(), 3 * align + 1);
            assert!(buffer.as_slice().iter().all(|&b| b == 0));
            buffer.as_mut_slice()[align] = 7;
            assert_eq!(buffer.as_slice()[align], 7);
        }
    }
}
