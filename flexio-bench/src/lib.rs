//! `flexio bench`: every flexio mechanism on this machine beside the
//! standard tools (cp, dd, cat, socat, nc, iperf3, pv, fio), interleaved,
//! with the physical limits measured in the same run.
//!
//! The measuring harness (plan, runner, peers, limits, meter, model,
//! stats, network namespaces, memory groups, the tree maker) is the
//! `flexio-harness` crate below, which the tuner uses too; its modules are
//! re-exported here at their old paths (`flexio_bench::stats`, …). This
//! crate adds the reports and the product scenarios.
//!
//! # Layers
//! ```text
//! report.rs      what every scenario's report is built from: tables,
//!                SVG charts, results.json/csv, report.md, the files
//!                they go to, the place for an original's table
//! server_bench.rs `flexio serve` against nginx under wrk: requests/s,
//!                latency, CPU per GiB, latency under load, fairness
//! schedule_bench.rs Cue's (k, t) grid: file -> socket with --schedule
//!                K,T beside the meter
//! pace_bench.rs  the `pace` scenario: `flexio copy --rate` as a process
//!                over loopback, clocked by a receiver here
//! host_bench.rs  the host-to-host scenario: flexio serve + get across a
//!                veth pair beside rsync, tar | nc, curl/aria2c from nginx,
//!                iperf3; the OS project's Fig 5 and Fig 6
//! hosts_bench.rs the `hosts` scenario: N hosts in network namespaces,
//!                shards, mirrors and a chain against one transfer
//! tree_bench.rs  tree copies beside cp -r, rsync, tar, xcp
//! cache_bench.rs the block cache against the page cache
//! harness.rs     the harness's items a tuner uses, at their old path
//! error.rs       the bench's Error: the operation, the path or peer, the cause
//! scenario.rs    the Scenario trait every product scenario implements:
//!                cells from options, a report and NAME.json from results
//! ```
//!
//! The five documents' experiments (the seeds, FlexIO's and S.M.A.C.K.'s
//! own setups, Cue's tables) live in the `flexio-seeds` crate, which uses
//! this harness; nothing here refers to it.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod cache_bench;
mod error;
pub mod harness;
pub mod host_bench;
pub mod hosts_bench;
pub mod pace_bench;
pub mod report;
mod scenario;
pub mod schedule_bench;
pub mod server_bench;
pub mod tree_bench;

pub use error::{Error, Result};
pub use scenario::{to_json, Report, Scenario};

// The report's modules at their old paths (`flexio_bench::charts::plain`,
// `flexio_bench::table::short_size`, …), which flexio-seeds and the CLI
// import.
pub use report::{charts, files, originals, output, table};

// The measuring harness lives in `flexio-harness`; its modules stay
// reachable at their old paths here, so `flexio_bench::stats::…` and the
// crates above keep compiling.
pub use flexio_harness::memory_groups_left;
pub use flexio_harness::{
    affinity, awake, fingerprint, limits, memory_group, meter, model, peers, plan, process_cpu,
    runner, stats,
};
