//! `flexio tune`, next to what it writes: measuring, selecting and writing
//! the profile that `auto` reads (`flexio::profile`). The bench lends its
//! runner through one small seam, `flexio_harness`; this crate owns
//! the rest.
//!
//! ```text
//! sweep.rs       the sweep: candidates per flow kind and size run as bench
//!                cells, a second pass for the leaders at larger sizes, and
//!                the profile built from the measurements
//!  ├ candidates  mechanisms × parameter variants per flow kind
//!  └ measurements  bench summaries read back as candidates' speeds
//! select.rs      a winner per size (ties within the noise band go to the
//!                built-in table's mechanism, else to less CPU per byte)
//!                and the size ranges between them
//! tree.rs        the tree copy's workers and small-file batch, measured on
//!                the tuned file system
//! load.rs        how busy others kept the CPUs before and during a tune
//! error.rs       the tuner's Error: the operation, the path, the cause
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod error;
pub mod load;
pub mod select;
pub mod sweep;
pub mod tree;

pub use error::{Error, Result};
