//! The engine's tests, one module per file beside this one, in one test
//! binary: built and linked once instead of once a file. Three stay
//! binaries of their own: `tree_copy` reads the process's umask (by
//! setting it), `pace_flows` times rates, which other tests' work would
//! disturb, and `device_gpu` is built alone to be carried to a machine
//! with a GPU (`scripts/device-prepare.sh`).

mod common;

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
