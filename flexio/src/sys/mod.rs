//! The only place with `unsafe`: thin wrappers over the few calls that
//! `rustix` and `io-uring` do not offer safely (getrusage, mincore,
//! cachestat, memory maps, aligned allocations). Everything above takes `AsFd` and slices and
//! returns `io::Result`.

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

pub(crate) use flexio_sys::aligned;
pub(crate) mod cachestat;
pub(crate) mod mapping;
pub(crate) mod pacing;
pub(crate) mod rusage;
pub(crate) mod sigbus;
pub(crate) mod stdio;
pub(crate) mod uring;
pub(crate) mod writeback;
