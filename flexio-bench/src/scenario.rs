//! The shape every product scenario shares: its options ask for cells,
//! running them gives results, and the results make a report (a table for
//! the terminal and charts in the output directory). The CLI and the
//! tests can then treat scenarios alike; each scenario keeps its own
//! results type, as only it knows what its figures mean.

use std::path::{Path, PathBuf};

use crate::Result;

/// A product scenario of `flexio bench`.
///
/// # Examples
/// ```
/// use flexio_bench::pace_bench::{PaceBench, PaceBenchOptions};
/// use flexio_bench::Scenario;
/// let options = PaceBenchOptions {
///     dir: std::env::temp_dir(),
///     flexio: "flexio".into(),
///     rates: vec![1 << 20, 4 << 20],
///     duration: std::time::Duration::from_secs(1),
/// };
/// // Each rate over TCP paced by the kernel and by the bucket, then a
/// // Unix socket.
/// assert_eq!(PaceBench::cells(&options).unwrap().len(), 6);
/// assert_eq!(PaceBench::NAME, "pace");
/// ```
pub trait Scenario {
    /// What the caller chooses (sizes, rates, counts, rounds).
    type Options;
    /// One cell: what one group of interleaved runs measures.
    type Cell;
    /// What running every cell gives (the `results` of `NAME.json`).
    type Results: serde::Serialize;

    /// The name after `--scenario`, also the stem of its files.
    const NAME: &'static str;

    /// The cells `options` ask for, in the order they run.
    ///
    /// # Errors
    /// The options ask for what the scenario cannot do.
    fn cells(options: &Self::Options) -> Result<Vec<Self::Cell>>;

    /// Runs every cell of `options`.
    ///
    /// # Errors
    /// What the scenario needs cannot be set up, or it was stopped; a
    /// contender that fails is recorded in the results where the scenario
    /// can go on without it.
    fn run(options: &Self::Options) -> Result<Self::Results>;

    /// The report of `results`: its table, and its charts written into
    /// `out` with `footer` (the command that ran) under them where the
    /// chart has room for one.
    ///
    /// # Errors
    /// A chart cannot be written.
    fn report(results: &Self::Results, out: &Path, footer: &str) -> Result<Report>;
}

/// A scenario's report.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The table, for the terminal.
    pub table: String,
    /// The charts written, in the output directory.
    pub charts: Vec<PathBuf>,
}
