//! The bench's tests, one module per file beside this one, in one test
//! binary: built and linked once instead of once a file.

mod bench_errors;
mod bench_host_report;
mod bench_output_files;
mod bench_outputs;
mod bench_runner;
mod bench_scenario_trait;
mod bench_socket_pair;
