//! The `unsafe` that flexio's crates share, kept in one small place: heap
//! buffers aligned for `O_DIRECT` and registered io_uring buffers, child
//! processes that end with the process that started them, and reading a
//! signal's disposition. The engine (`flexio`) and the block cache
//! (`flexio-cache`) both read and write through them; each crate's own
//! system-call wrappers stay in its `sys` module.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod aligned;
pub mod process;
pub mod signal;

pub use aligned::AlignedBuffer;
