//! A GPU as an endpoint: device memory named `gpu:N[@OFFSET[+LEN]]`,
//! filled from a file and written back to one by each of TPIL's injection
//! modes ([`DeviceMode`]: pageable, pinned, staged, registered), through
//! NVIDIA's driver loaded at run time (`flexio_sys::gpu`), so everything
//! here builds and runs on a machine without a GPU, where opening one says
//! why it cannot.
//!
//! ```text
//! address.rs    gpu:N@OFFSET+LEN, parsed and printed
//! transfer.rs   load_file / store_file and the modes
//! ```

mod address;
mod transfer;

pub use crate::sys::gpu::{count, driver_present, DeviceMemory, Gpu, GpuError};
pub use address::DeviceAddress;
pub use transfer::{load_file, store_file, verify_load, DeviceMode, DeviceReport, DEFAULT_PIECE};
