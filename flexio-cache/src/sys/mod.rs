//! The only place with `unsafe`: aligned buffers for direct I/O and the
//! io_uring batch that reads or writes them. Everything above takes slices
//! and returns `io::Result`.

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

pub(crate) mod aligned;
pub(crate) mod uring;
