//! The shape every product scenario shares: its options ask for cells,
//! running them gives results, and the results make a report (a table for
//! the terminal and charts in the output directory) and a JSON document
//! (`NAME.json`). The CLI and the tests can then treat scenarios alike;
//! each scenario keeps its own results type, as only it knows what its
//! figures mean. The report and the document see the options too: a
//! table's note says how many rounds ran, a document records the setup.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

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
/// // `pace.json` holds the results with how long each flow lasted.
/// let document = PaceBench::document(&options, &Vec::new(), "flexio bench").unwrap();
/// assert_eq!(document["scenario"], "pace");
/// assert_eq!(document["seconds"], 1.0);
/// ```
pub trait Scenario {
    /// What the caller chooses (sizes, rates, counts, rounds).
    type Options;
    /// One cell: what one group of interleaved runs measures.
    type Cell;
    /// What running every cell gives (the `results` of `NAME.json`).
    type Results: serde::Serialize;

    /// The stem of its files (`NAME.json`, `NAME.md`), and the name after
    /// `--scenario` but for `host-to-host`, whose files keep the shorter
    /// `host`.
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

    /// The report of `results`, run with `options`: its table (with a
    /// note on how it ran), and its charts written into `out` with
    /// `command` (the command line that ran) under them where the chart
    /// has room for it.
    ///
    /// # Errors
    /// A chart cannot be written.
    fn report(
        options: &Self::Options,
        results: &Self::Results,
        out: &Path,
        command: &str,
    ) -> Result<Report>;

    /// `NAME.json`: by default `{"schema_version": 1, "scenario": NAME,
    /// "results": results}`; a scenario whose document records its setup
    /// too (rounds, sizes, `command`) says so.
    ///
    /// # Errors
    /// The results cannot be written as JSON.
    fn document(
        options: &Self::Options,
        results: &Self::Results,
        command: &str,
    ) -> Result<serde_json::Value> {
        let _ = (options, command);
        Ok(serde_json::json!({
            "schema_version": 1,
            "scenario": Self::NAME,
            "results": to_json(results)?,
        }))
    }
}

/// `value` as JSON, for a scenario's [`Scenario::document`].
///
/// # Errors
/// `value` cannot be written as JSON (a map whose keys are not strings).
///
/// # Examples
/// ```
/// let value = flexio_bench::to_json(&[1, 2]).unwrap();
/// assert_eq!(value, serde_json::json!([1, 2]));
/// ```
pub fn to_json(value: &impl serde::Serialize) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|source| Error::Json {
        what: "a scenario's results",
        source,
    })
}

/// A scenario's report.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The table, for the terminal.
    pub table: String,
    /// The charts written, in the output directory.
    pub charts: Vec<PathBuf>,
}
