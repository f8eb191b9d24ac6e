//! A block cache over direct I/O, its eviction policies, and a simulator
//! that replays block traces through them.
//!
//! The default policy is an adaptive S3-FIFO whose setting (small-queue
//! share, reads to promote, whether a return from the ghost is guarded)
//! follows the best of five miniature simulations of itself,
//! chosen by replaying the ARC paper's
//! traces (Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead
//! Replacement Cache", USENIX FAST 2003) and generated ones against LRU,
//! ARC, S3-FIFO, LIRS and Belady's MIN: see
//! [`policy::PolicyName::DEFAULT`] and the crate's README for the tables.
//!
//! # Example
//!
//! ```
//! use flexio_cache::{policy::PolicyName, sim::simulate, trace::Trace};
//! let trace = Trace::open("zipf+scan:blocks=1000,len=20000,scan=0.3").unwrap();
//! let lru = simulate(&trace.keys, PolicyName::Lru, 100);
//! let s3 = simulate(&trace.keys, PolicyName::S3Fifo, 100);
//! assert!(s3.hits > lru.hits, "S3-FIFO keeps the hot set through the scan");
//! ```
//!
//! # Layers
//!
//! ```text
//! policy/   LRU, CLOCK, SIEVE, S3-FIFO, ARC, adaptive S3-FIFO behind one
//!           trait: key -> frame
//! trace     block traces: the ARC paper's .lis files, generated zipf/scan/loop
//! sim/      replays a trace through a policy, or Belady's MIN: hits,
//!           hit ratio, references per second
//! cache/    BlockCache: shards of (policy + frames), O_DIRECT device,
//!           coalesced io_uring reads with read-ahead, write-back;
//!           FileCache: the same shards in front of many read-only files
//! sys/      from flexio-sys: aligned buffers, the io_uring batch, frames
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod cache;
mod error;
pub mod policy;
pub mod sim;
mod sys;
pub mod trace;

pub use cache::{BlockCache, BlockRef, CacheConfig, CacheStats, CachedFile, FileCache, ReadMode};

pub use error::{Error, Result};
