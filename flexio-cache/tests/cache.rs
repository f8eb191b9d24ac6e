//! The block cache's tests, one module per file beside this one, in one
//! test binary: built and linked once instead of once a file.

mod cache_concurrency;
mod cache_crash;
mod cache_files;
mod cache_properties;
mod cache_reads;
mod cache_write_back;
mod policy_traces;
mod sim_arc_paper;
mod sim_settings;
mod sim_shapes;
