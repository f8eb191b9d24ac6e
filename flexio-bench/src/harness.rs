//! The harness's items a tuner uses (cells, the runner, summaries, the
//! tree maker), at the path they had before the harness became the
//! `flexio-harness` crate; the tuner imports them from there.

pub use flexio_harness::model::{CacheState, CellKey, Contender, Results, Scenario};
pub use flexio_harness::plan::{label, Cell, Entrant, Plan};
pub use flexio_harness::runner::{run, Observer, Quiet, RunOptions, STOPPED_EARLY};
pub use flexio_harness::stats::{summarize, Summary};
pub use flexio_harness::trees::{make_tree, TreeShape};
