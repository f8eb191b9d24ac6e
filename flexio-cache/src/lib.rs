//! A block cache over direct I/O, its eviction policies, and a simulator
//! that replays block traces through them.
//!
//! # Layers
//!
//! ```text
//! policy/   LRU, CLOCK, SIEVE, S3-FIFO, ARC behind one trait: key -> frame
//! trace     block traces: the ARC paper's .lis files, generated zipf/scan/loop
//! sim       replays a trace through a policy: hits, misses, hit ratio
//! ```

#![warn(missing_docs)]

mod error;
pub mod policy;
pub mod sim;
pub mod trace;

pub use error::{Error, Result};
