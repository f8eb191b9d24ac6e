//! The system layer the cache uses, all of it from `flexio-sys` (the
//! workspace's one audited layer below the safe code): aligned buffers for
//! direct I/O, the io_uring batch that reads or writes them, and the frames
//! that hits read without a lock.

pub(crate) use flexio_sys::{aligned, frames, uring};
