//! What the bench lends a tuner (`flexio-tune`): cells of entrants, the
//! interleaved runner that measures them, and per-contender summaries.
//! Everything else in this crate is the bench's own; a tuner that needs
//! more asks for it here, so that the seam stays small and visible.

pub use crate::model::{CacheState, CellKey, Contender, Results, Scenario};
pub use crate::plan::{label, Cell, Entrant, Plan};
pub use crate::runner::{run, Observer, Quiet, RunOptions, STOPPED_EARLY};
pub use crate::stats::{summarize, Summary};
pub use crate::tree_bench::{make_tree, TreeShape};
