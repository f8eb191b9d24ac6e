//! The five source documents' experiments repeated (`shared/seeds/`):
//! FlexIO's thesis, the OS course project, TPIL, Cue and S.M.A.C.K. Each
//! exhibit holds the original's setup and values as transcribed, plans
//! the cells that measure ours, and writes `seeds.md` and a chart with
//! the two side by side.
//!
//! This crate stands on the bench harness (`flexio-bench`: the plan, the
//! runner, statistics, charts, the standard tools) and the harness knows
//! nothing of it: where a product scenario prints an original's table
//! beside its own (Cue's beside `meter`, `parallel`, `schedule` and the
//! server), this crate registers the text ([`register`]); where the
//! `cache` scenario shows S.M.A.C.K.'s cold/warm table, the caller hands
//! it [`smack_cache::rows`].
//!
//! # Layers
//! ```text
//! seeds.rs         the twenty exhibits, their plan, seeds.md and charts
//!  └ seeds/own.rs  the setups outside the matrix, run once each
//! thesis_bench.rs  FlexIO's setups the matrix lacks, as `flexio copy`
//!                  processes: a 128 MiB memory cgroup, a socket-buffer
//!                  sweep, a relay across three network namespaces
//! smack_bench.rs   S.M.A.C.K.'s tables: files read into memory buffered
//!                  against O_DIRECT, through a 16 MiB cache, and a raw
//!                  loop device beside dd
//! smack_cache.rs   S.M.A.C.K.'s cold/warm rows of the `cache` scenario
//! slow_device.rs   a throttled ext4 on a loop device: the slow disks
//! cue.rs           Cue's tables, printed beside the product scenarios
//!                  that repeat them
//! cue_bench.rs     Cue's cells run cold on a throttled device: the
//!                  disk-bound pair Cue compared; Table 8's servers
//!                  behind one shared --rate-total bucket (shared.rs)
//! error.rs         the seeds' Error: the operation, the path, the offset
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod cue;
pub mod cue_bench;
mod error;
pub mod seeds;
pub mod slow_device;
pub mod smack_bench;
pub mod smack_cache;
pub mod thesis_bench;

pub use error::{Error, Result};

/// Registers what the harness prints beside its product scenarios from
/// these documents (Cue's tables); call it once before running a bench.
/// Later calls change nothing.
///
/// # Examples
/// ```
/// use flexio_bench::originals::{texts, Beside};
/// flexio_seeds::register();
/// assert!(texts(Beside::ServeClients)[0].contains("Cue, Table 8"));
/// ```
pub fn register() {
    flexio_bench::originals::register(cue::beside);
}
