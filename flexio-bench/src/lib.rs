//! `flexio bench`: every flexio mechanism on this machine beside the
//! standard tools (cp, dd, cat, socat, nc, iperf3, pv, fio), interleaved,
//! with the physical limits measured in the same run.
//!
//! # Layers
//! ```text
//! plan.rs        scenarios -> cells (size, chunk, cache, flows) x contenders
//! runner.rs      warm-up, then rounds A B C A B C …; cache dropping outside
//!                the timed window; one RunRecord per run
//!  ├ peers.rs    the standard tools, and `flexio copy` itself, as child
//!  │             processes timed alike (missing ones noted)
//!  ├ limits.rs   memcpy, O_DIRECT disk read/write, iperf3 loopback
//!  ├ meter.rs    the CPU-bound co-process of the meter scenario
//!  └ fingerprint.rs  whether the bench directory can be cold (tmpfs)
//! model.rs       Results / RunRecord: what results.json holds
//! stats.rs       medians, min/max, ratios to the best peer and the limit
//! table.rs       terminal tables
//! output.rs      results.json, results.csv, report.md
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
//! memory_group.rs a memory cgroup (v1 or v2), removed on drop
//! harness.rs     what the tuner (`flexio-tune`) uses: cells, the runner,
//!                summaries
//! ```
//!
//! The five documents' experiments (the seeds, FlexIO's and S.M.A.C.K.'s
//! own setups, Cue's tables) live in the `flexio-seeds` crate, which uses
//! this harness; nothing here refers to it.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod cache_bench;
pub mod charts;
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

// The measuring harness lives in `flexio-harness`; its modules stay
// reachable at their old paths here, so `flexio_bench::stats::…` and the
// crates above keep compiling.
pub use flexio_harness::memory_groups_left;
pub use flexio_harness::{
    affinity, fingerprint, limits, memory_group, meter, model, peers, plan, process_cpu, runner,
    stats,
};
