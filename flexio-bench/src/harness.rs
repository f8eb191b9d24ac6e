//! What the bench lends a tuner (`flexio-tune`): cells of entrants, the
//! interleaved runner that measures them, and per-contender summaries.
//! Everything else in this crate is the bench's own; a tuner that needs
//! more asks for it here, so that the seam stays small and visible.

pub use flexio_harness::model::{CacheState, CellKey, Contender, Results, Scenario};
pub use flexio_harness::plan::{label, Cell, Entrant, Plan};
pub use flexio_harness::runner::{run, Observer, Quiet, RunOptions, STOPPED_EARLY};
pub use flexio_harness::stats::{summarize, Summary};
pub use flexio_harness::trees::{make_tree, TreeShape};
