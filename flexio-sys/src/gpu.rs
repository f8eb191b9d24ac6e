//! A GPU as an endpoint: NVIDIA's CUDA driver API, loaded when first used
//! (`cudarc` with dynamic loading), so the binary builds and runs on a
//! machine with no GPU and no CUDA; there, [`Gpu::open`] says so.
//!
//! What TPIL (the tunable injection library) compared, on a GPU:
//! - **pageable**: [`Gpu::copy_in`] from any slice; the driver copies it
//!   through a staging buffer of its own, then DMAs;
//! - **pinned**: [`PinnedBuffer`], page-locked memory the card DMAs from
//!   directly; [`Gpu::copy_in_pinned`] returns before the DMA ends, so the
//!   CPU fills another buffer meanwhile (double buffering);
//! - **registered**: [`Registered`], a buffer of the caller's pages locked
//!   in place (`cuMemHostRegister`), filled by `O_DIRECT` where the file
//!   system allows: no CPU copy at all between the disk and the card.
//!
//! Every copy here is on one stream per [`Gpu`], so copies run in the
//! order issued; a buffer whose DMA may be in flight is handed out again
//! only after that DMA ends (the pinned buffer's event, the registered
//! one's stream synchronisation).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DriverError, PinnedHostSlice};

use crate::aligned::AlignedBuffer;

/// Why a GPU operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// NVIDIA's driver library (`libcuda.so.1`) is not installed.
    NoDriver,
    /// The driver refused `operation`.
    Driver {
        /// What was asked (`cuInit`, `cuMemAlloc`, ...).
        operation: &'static str,
        /// The driver's error name and text.
        cause: String,
    },
    /// An offset and length outside the device buffer.
    OutOfBounds {
        /// The first byte asked for.
        offset: usize,
        /// How many bytes.
        len: usize,
        /// The buffer's size.
        size: usize,
    },
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::NoDriver => f.write_str(
                "no CUDA driver on this machine (libcuda.so.1 not found): a GPU endpoint needs NVIDIA's driver",
            ),
            GpuError::Driver { operation, cause } => write!(f, "{operation}: {cause}"),
            GpuError::OutOfBounds { offset, len, size } => write!(
                f,
                "bytes {offset}..{} are outside the device buffer of {size} bytes",
                offset.saturating_add(*len)
            ),
        }
    }
}

impl std::error::Error for GpuError {}

/// Wraps a driver error with the operation that met it.
fn driver(operation: &'static str) -> impl FnOnce(DriverError) -> GpuError {
    move |error| GpuError::Driver {
        operation,
        cause: match error.error_string() {
            Ok(text) => format!("{error:?}: {}", text.to_string_lossy()),
            Err(_) => format!("{error:?}"),
        },
    }
}

/// Whether NVIDIA's driver library can be loaded here.
pub fn driver_present() -> bool {
    // SAFETY: tries to dlopen the driver library by its known names and
    // closes it again; loading it runs only the library's own
    // initialisers, which NVIDIA's driver library permits at any time.
    unsafe { sys::is_culib_present() }
}

/// How many GPUs the driver sees.
///
/// # Errors
/// [`GpuError::NoDriver`] without the driver; the driver's error when it
/// cannot initialise.
pub fn count() -> Result<usize, GpuError> {
    if !driver_present() {
        return Err(GpuError::NoDriver);
    }
    cudarc::driver::result::init().map_err(driver("cuInit"))?;
    let count = cudarc::driver::result::device::get_count().map_err(driver("cuDeviceGetCount"))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// One GPU, its primary context and the stream every copy goes through.
pub struct Gpu {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.context.ordinal())
            .finish()
    }
}

impl Gpu {
    /// Opens GPU number `ordinal` (0 is the first).
    ///
    /// # Errors
    /// [`GpuError::NoDriver`] on a machine without NVIDIA's driver; the
    /// driver's error for an ordinal it does not have.
    pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        if !driver_present() {
            return Err(GpuError::NoDriver);
        }
        let context = CudaContext::new(ordinal).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        let stream = context.new_stream().map_err(driver("cuStreamCreate"))?;
        Ok(Gpu { context, stream })
    }

    /// Which GPU this is.
    pub fn ordinal(&self) -> usize {
        self.context.ordinal()
    }

    /// The device's name (`NVIDIA H100 PCIe`, ...).
    ///
    /// # Errors
    /// The driver's.
    pub fn name(&self) -> Result<String, GpuError> {
        self.context.name().map_err(driver("cuDeviceGetName"))
    }

    /// The device's free and total memory in bytes.
    ///
    /// # Errors
    /// The driver's.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        self.context.mem_get_info().map_err(driver("cuMemGetInfo"))
    }

    /// `len` bytes of device memory, zeroed.
    ///
    /// # Errors
    /// The driver's (out of device memory, say).
    pub fn alloc(&self, len: usize) -> Result<DeviceMemory, GpuError> {
        let slice = self
            .stream
            .alloc_zeros::<u8>(len.max(1))
            .map_err(driver("cuMemAlloc"))?;
        Ok(DeviceMemory { slice, len })
    }

    /// A page-locked host buffer of `len` bytes the card DMAs from.
    ///
    /// # Errors
    /// The driver's (locked memory is limited).
    pub fn pinned(&self, len: usize) -> Result<PinnedBuffer, GpuError> {
        // SAFETY: the bytes are uninitialised after the allocation; they
        // are zeroed below before anything reads them.
        let mut slice = unsafe { self.context.alloc_pinned_with_flags::<u8>(len.max(1), 0) }
            .map_err(driver("cuMemHostAlloc"))?;
        slice
            .as_mut_slice()
            .map_err(driver("cuEventSynchronize"))?
            .fill(0);
        Ok(PinnedBuffer { slice })
    }

    /// Locks `buffer`'s pages for DMA; they are unlocked when the
    /// [`Registered`] is dropped.
    ///
    /// # Errors
    /// The driver's.
    pub fn register(&self, buffer: AlignedBuffer) -> Result<Registered, GpuError> {
        let mut buffer = buffer;
        self.context
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        let len = buffer.len();
        let pointer = buffer.as_mut_ptr().cast::<c_void>();
        // SAFETY: `pointer..pointer + len` is `buffer`'s own allocation,
        // which `Registered` owns from here on and frees only after
        // unregistering it (its Drop), so the driver never DMAs to freed
        // memory.
        unsafe { sys::cuMemHostRegister_v2(pointer, len, 0) }
            .result()
            .map_err(driver("cuMemHostRegister"))?;
        Ok(Registered {
            buffer,
            stream: self.stream.clone(),
        })
    }

    /// Copies `source` into `device` at `offset`: the pageable path (the
    /// driver stages the bytes itself). `source` may be reused as soon as
    /// this returns.
    ///
    /// # Errors
    /// [`GpuError::OutOfBounds`]; the driver's.
    pub fn copy_in(
        &self,
        source: &[u8],
        device: &mut DeviceMemory,
        offset: usize,
    ) -> Result<(), GpuError> {
        let mut target = device.range_mut(offset, source.len())?;
        self.stream
            .memcpy_htod(source, &mut target)
            .map_err(driver("cuMemcpyHtoDAsync"))?;
        // A pageable copy returns once the driver holds the bytes, but a
        // source that happens to be page-locked is read later: wait, so
        // the caller may always reuse it.
        self.synchronize()
    }

    /// Starts copying the first `len` bytes of `source` into `device` at
    /// `offset` and returns at once; `source` is handed out again for
    /// writing only after this DMA ends.
    ///
    /// # Errors
    /// [`GpuError::OutOfBounds`] (also when `len` exceeds the buffer); the
    /// driver's.
    pub fn copy_in_pinned(
        &self,
        source: &PinnedBuffer,
        len: usize,
        device: &mut DeviceMemory,
        offset: usize,
    ) -> Result<(), GpuError> {
        if len > source.slice.len() {
            return Err(GpuError::OutOfBounds {
                offset: 0,
                len,
                size: source.slice.len(),
            });
        }
        let mut target = device.range_mut(offset, len)?;
        if len == source.slice.len() {
            self.stream
                .memcpy_htod(&source.slice, &mut target)
                .map_err(driver("cuMemcpyHtoDAsync"))
        } else {
            let part = source
                .slice
                .as_slice()
                .map_err(driver("cuEventSynchronize"))?;
            // A part of a pinned buffer: the bytes are still page-locked,
            // so the DMA reads them in place; wait for it, since the
            // borrowed part carries no event of its own.
            self.stream
                .memcpy_htod(&part[..len], &mut target)
                .map_err(driver("cuMemcpyHtoDAsync"))?;
            self.synchronize()
        }
    }

    /// Starts copying the first `len` bytes of `source` into `device` at
    /// `offset`; [`Registered::as_mut_slice`] waits for it.
    ///
    /// # Errors
    /// [`GpuError::OutOfBounds`]; the driver's.
    pub fn copy_in_registered(
        &self,
        source: &Registered,
        len: usize,
        device: &mut DeviceMemory,
        offset: usize,
    ) -> Result<(), GpuError> {
        let bytes = source.buffer.as_slice();
        if len > bytes.len() {
            return Err(GpuError::OutOfBounds {
                offset: 0,
                len,
                size: bytes.len(),
            });
        }
        let mut target = device.range_mut(offset, len)?;
        self.stream
            .memcpy_htod(&bytes[..len], &mut target)
            .map_err(driver("cuMemcpyHtoDAsync"))
    }

    /// Copies `target.len()` bytes of `device` from `offset` into
    /// `target`, waiting for them.
    ///
    /// # Errors
    /// [`GpuError::OutOfBounds`]; the driver's.
    pub fn copy_out(
        &self,
        device: &DeviceMemory,
        offset: usize,
        target: &mut [u8],
    ) -> Result<(), GpuError> {
        let source = device.range(offset, target.len())?;
        self.stream
            .memcpy_dtoh(&source, target)
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        self.synchronize()
    }

    /// Waits until every copy issued so far has ended.
    ///
    /// # Errors
    /// The driver's (an earlier asynchronous copy's error shows here).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))
    }
}

/// Device memory of a known size.
pub struct DeviceMemory {
    slice: CudaSlice<u8>,
    len: usize,
}

impl DeviceMemory {
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, offset: usize, len: usize) -> Result<std::ops::Range<usize>, GpuError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(offset..end),
            _ => Err(GpuError::OutOfBounds {
                offset,
                len,
                size: self.len,
            }),
        }
    }

    fn range(
        &self,
        offset: usize,
        len: usize,
    ) -> Result<cudarc::driver::CudaView<'_, u8>, GpuError> {
        let range = self.check(offset, len)?;
        Ok(self.slice.slice(range))
    }

    fn range_mut(
        &mut self,
        offset: usize,
        len: usize,
    ) -> Result<cudarc::driver::CudaViewMut<'_, u8>, GpuError> {
        let range = self.check(offset, len)?;
        Ok(self.slice.slice_mut(range))
    }
}

/// Page-locked host memory from the driver.
pub struct PinnedBuffer {
    slice: PinnedHostSlice<u8>,
}

impl PinnedBuffer {
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }

    /// Its bytes, for filling: waits first for a DMA still reading them.
    ///
    /// # Errors
    /// The driver's.
    pub fn as_mut_slice(&mut self) -> Result<&mut [u8], GpuError> {
        self.slice
            .as_mut_slice()
            .map_err(driver("cuEventSynchronize"))
    }
}

/// An aligned buffer whose pages are locked for the card's DMA.
pub struct Registered {
    buffer: AlignedBuffer,
    stream: Arc<CudaStream>,
}

impl Registered {
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// Its bytes, for filling (an `O_DIRECT` read, say): waits first for
    /// every copy on the GPU's stream, a DMA from these pages among them.
    ///
    /// # Errors
    /// The driver's.
    pub fn as_mut_slice(&mut self) -> Result<&mut [u8], GpuError> {
        self.stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))?;
        Ok(self.buffer.as_mut_slice())
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // A DMA may still read these pages: wait before unlocking them
        // and, after that, freeing the buffer.
        let _ = self.stream.synchronize();
        let _ = self.stream.context().bind_to_thread();
        // SAFETY: the pointer is the one registered in `Gpu::register`,
        // and no copy from it is in flight any more (synchronised above).
        let _ = unsafe { sys::cuMemHostUnregister(self.buffer.as_mut_ptr().cast::<c_void>()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_driver_opening_a_gpu_says_so() {
        if driver_present() {
            return;
        }
        assert_eq!(Gpu::open(0).unwrap_err(), GpuError::NoDriver);
        assert_eq!(count().unwrap_err(), GpuError::NoDriver);
        assert!(GpuError::NoDriver.to_string().contains("libcuda.so.1"));
    }

    #[test]
    fn out_of_bounds_names_the_range_and_the_size() {
        let error = GpuError::OutOfBounds {
            offset: 10,
            len: 5,
            size: 12,
        };
        assert_eq!(
            error.to_string(),
            "bytes 10..15 are outside the device buffer of 12 bytes"
        );
    }
}
