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
//! table.rs       terminal tables
//! output.rs      results.json, results.csv, report.md
//! files.rs       writing the bench's own files
//! charts.rs      SVG charts: lines by size, chunk and flows;
//!  ├ charts/dots.rs    dot plots by contender for one-size scenarios
//!  └ charts/legend.rs  a colour and marker per contender, the legend panel
//! server_bench.rs `flexio serve` against nginx under wrk: requests/s,
//!                latency, CPU per GiB, latency under load, fairness
//! schedule_bench.rs Cue's (k, t) grid: file -> socket with --schedule
//!                K,T beside the meter
//! originals.rs   the place where an original's table (registered by
//!                the flexio-seeds crate above) is printed beside the
//!                scenario that repeats its experiment
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
//! ```
//!
//! The five documents' experiments (the seeds, FlexIO's and S.M.A.C.K.'s
//! own setups, Cue's tables) live in the `flexio-seeds` crate, which uses
//! this harness; nothing here refers to it.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod cache_bench;
pub mod charts;
mod error;
pub mod files;
pub mod harness;
pub mod host_bench;
pub mod hosts_bench;
pub mod originals;
pub mod output;
pub mod pace_bench;
pub mod schedule_bench;
pub mod server_bench;
pub mod table;
pub mod tree_bench;

pub use error::{Error, Result};

// The measuring harness lives in `flexio-harness`; its modules stay
// reachable at their old paths here, so `flexio_bench::stats::…` and the
// crates above keep compiling.
pub use flexio_harness::memory_groups_left;
pub use flexio_harness::{
    affinity, fingerprint, limits, memory_group, meter, model, peers, plan, process_cpu, runner,
    stats,
};
