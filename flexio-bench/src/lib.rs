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
//! host_bench.rs  the host-to-host scenario: flexio serve + get across a
//!                veth pair beside rsync, tar | nc, curl/aria2c from nginx,
//!                iperf3; the OS project's Fig 5 and Fig 6
//! tune.rs        `flexio tune`: candidates per flow kind and size, run as
//!                cells, turned into a profile for `auto`
//! ```

#![warn(missing_docs)]
#![deny(unsafe_code)]

mod affinity;
pub mod cache_bench;
pub mod charts;
mod files;
pub mod fingerprint;
pub mod host_bench;
pub mod limits;
pub mod meter;
pub mod model;
pub mod output;
pub mod peers;
pub mod plan;
pub mod runner;
pub mod stats;
pub mod table;
pub mod tree_bench;
pub mod tune;
mod window;
