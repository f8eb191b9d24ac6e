//! The only place with `unsafe` (with `flexio-sys`, whose aligned buffers
//! for direct I/O are shared with the engine): the io_uring batch that
//! reads or writes them, and the frames that hits read without a lock. Everything above takes slices and returns
//! `io::Result`.

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

pub(crate) use flexio_sys::aligned;
pub(crate) mod frames;
pub(crate) mod uring;
