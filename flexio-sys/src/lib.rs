//! flexio's one layer of `unsafe`, kept in one small place so that it has
//! one audit: every other crate of the workspace forbids `unsafe_code`.
//!
//! * copies: `rep movsb` and non-temporal AVX2/AVX-512 stores for memory
//!   flows ([`copy_kernels`]);
//! * buffers: heap buffers aligned for `O_DIRECT` ([`aligned`]), the block
//!   cache's frames read without a lock ([`frames`]);
//! * I/O: the io_uring wrapper ([`uring`]), `sync_file_range`
//!   ([`writeback`]), `cachestat` ([`cachestat`]), socket pacing options
//!   ([`pacing`]);
//! * memory maps and surviving SIGBUS on them ([`mapping`], [`sigbus`]);
//! * the process: resource use ([`rusage`]), children that end with their
//!   parent ([`process`]), signal dispositions ([`signal`]), standard
//!   descriptors closed at start ([`stdio`]);
//! * loop block devices over files, for the bench and the tests
//!   ([`loop_device`]);
//! * a GPU as an endpoint: device memory, pinned and registered host
//!   buffers, copies in and out through NVIDIA's driver loaded at run time
//!   ([`gpu`]).
//!
//! Every block carries a `SAFETY` comment; everything exported is safe to
//! call, takes `AsFd` and slices and returns `io::Result`.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod aligned;
pub mod cachestat;
pub mod copy_kernels;
pub mod frames;
pub mod gpu;
pub mod loop_device;
pub mod mapping;
pub mod pacing;
pub mod process;
pub mod rusage;
pub mod sigbus;
pub mod signal;
pub mod stdio;
pub mod uring;
pub mod writeback;

pub use aligned::AlignedBuffer;
