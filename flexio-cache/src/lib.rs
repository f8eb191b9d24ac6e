//! A block cache over direct I/O, its eviction policies, and a simulator
//! that replays block traces through them.
//!
//! # Layers
//!
//! ```text
//! policy/   LRU, CLOCK, SIEVE, S3-FIFO, ARC behind one trait: key -> frame
//! trace     block traces: the ARC paper's .lis files, generated zipf/scan/loop
//! sim       replays a trace through a policy: hits, misses, hit ratio
//! cache/    BlockCache: shards of (policy + frames), O_DIRECT device,
//!           coalesced io_uring reads with read-ahead, write-back
//! sys/      the only unsafe: aligned buffers, the io_uring batch
//! ```

#![warn(missing_docs)]

mod cache;
mod error;
pub mod policy;
pub mod sim;
mod sys;
pub mod trace;

pub use cache::{BlockCache, BlockRef, CacheConfig, CacheStats, ReadMode};

pub use error::{Error, Result};
