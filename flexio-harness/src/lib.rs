//! flexio's measuring harness: what the bench (`flexio-bench`) and the
//! tuner (`flexio-tune`) both stand on. It plans cells, runs every
//! contender interleaved with the physical limits measured in the same
//! run, and summarises the runs; it draws no chart and writes no report
//! (those are the bench's), so the tuner that writes the profile every
//! copy reads pulls in neither.
//!
//! # Modules
//! ```text
//! plan.rs        scenarios -> cells (size, chunk, cache, flows) x contenders
//! runner.rs      warm-up, then rounds A B C A B C …; cache dropping outside
//!                the timed window; one RunRecord per run
//!  ├ peers.rs    the standard tools, and `flexio copy` itself, as child
//!  │             processes timed alike (missing ones noted); iperf3 in
//!  │             peers/
//!  ├ limits.rs   memcpy, O_DIRECT disk read/write, iperf3 loopback
//!  ├ meter.rs    the CPU-bound co-process of the meter scenario
//!  ├ servers.rs  `flexio serve` and nginx as processes, their CPU
//!  ├ clients.rs  the small HTTP client that fetches from them
//!  └ fingerprint.rs  whether the bench directory can be cold (tmpfs)
//! netns.rs       network namespaces and veth pairs: the host scenarios'
//!                link, hosts and line, the runner's veth cells
//! window.rs      the timed window: wall time, CPU, bytes
//! affinity.rs    contender and counterpart pinned to CPUs of their own
//! awake.rs       the CPUs held out of sleeping idle states while timed
//! process_cpu.rs a process's CPU time (all its threads) from /proc
//! memory_group.rs a memory cgroup (v1 or v2), removed on drop
//! trees.rs       the file trees (shapes, scaled) a tree copy is timed on
//! model.rs       Results / RunRecord: what results.json holds
//! stats.rs       medians, min/max, ratios to the best peer and the limit
//! error.rs       the harness's Error: the operation, the path, the cause
//! ```
//!
//! The items a tuner needs are re-exported at the root: [`Plan`],
//! [`Cell`], [`Entrant`], [`run`], [`summarize`], [`make_tree`].
//!
//! # Examples
//! ```
//! let order = flexio_harness::runner::schedule(2, 1, 2);
//! // Two contenders, one warm-up round and two timed ones.
//! assert_eq!(order.len(), 6);
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod affinity;
pub mod awake;
pub mod clients;
mod error;
pub mod fingerprint;
pub mod limits;
pub mod memory_group;
pub mod meter;
pub mod model;
pub mod netns;
pub mod peers;
pub mod plan;
pub mod process_cpu;
pub mod runner;
pub mod servers;
pub mod stats;
pub mod trees;
mod window;

pub use error::{Error, Result};
pub use memory_group::memory_groups_left;
pub use model::{CacheState, CellKey, Contender, Results, Scenario};
pub use plan::{label, Cell, Entrant, Plan};
pub use runner::{run, Observer, Quiet, RunOptions, STOPPED_EARLY};
pub use stats::{summarize, Summary};
pub use trees::{make_tree, TreeShape};
