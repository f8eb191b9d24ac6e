//! The engine's tests, one module per file beside this one, in one test
//! binary: built and linked once instead of once a file. Two stay binaries
//! of their own: `tree_copy` reads the process's umask (by setting it),
//! and `pace_flows` times rates, which other tests' work would disturb.

mod common;

mod device_gpu;
mod engine_durable;
mod engine_fallback;
mod engine_faults;
mod engine_idle;
mod engine_matrix;
mod engine_properties;
mod mechanism_mmap;
mod mechanism_send_zc;
mod mechanism_send_zc_cuts;
mod mechanism_uring_direct;
mod range_api;
mod range_reuse;
