//! The command line's tests, one module per file beside this one, in one
//! test binary: built and linked once instead of once a file, and run
//! as one pool of test threads, so that a file's long test (a bench's
//! throttled device, a tune) no longer holds the others back until it
//! ends.

mod common;

mod cli_bench;
mod cli_bench_host;
mod cli_bench_hosts;
mod cli_bench_output;
mod cli_bench_peers;
mod cli_bench_scenarios;
mod cli_bench_seeds;
mod cli_bench_thesis;
mod cli_bounds;
mod cli_cache;
mod cli_chain;
mod cli_copy;
mod cli_copy_output;
mod cli_cp_errors;
mod cli_device;
mod cli_docs;
mod cli_fan;
mod cli_flags;
mod cli_get_names;
mod cli_get_redirect;
mod cli_get_resume;
mod cli_habits;
mod cli_hostile;
mod cli_idle;
mod cli_json;
mod cli_man;
mod cli_mirror;
mod cli_net;
mod cli_pace;
mod cli_process_start;
mod cli_profile_files;
mod cli_readme;
mod cli_runaways;
mod cli_shard;
mod cli_shard_docs;
mod cli_side_by_side;
mod cli_signals;
mod cli_slurm;
mod cli_tls;
mod cli_tls_chain;
mod cli_tls_self_signed;
mod cli_transfer_output;
mod cli_tree;
mod cli_tune_busy;
