//! The server scenario behind [`Scenario`]: its cells (size × clients
//! under wrk, each on both servers), its report and `server.json`.

use std::path::Path;

use super::{run, table, write_charts, ServerBenchOptions, ServerBenchResults};
use crate::{Error, Report, Result, Scenario};

/// One wrk cell: `clients` kept-alive connections fetching a file of
/// `size` bytes, on each server in the round's order (and again over TLS
/// when the options ask for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerCell {
    /// The file's size, bytes.
    pub size: u64,
    /// Clients at once.
    pub clients: u32,
}

/// The server scenario: `flexio serve` against nginx under wrk, then
/// latency under load, fairness and (with `tls`) the same over HTTPS.
/// Its progress goes to standard error.
///
/// # Examples
/// ```
/// use flexio_bench::server_bench::{ServerBench, ServerBenchOptions, ServerCell};
/// use flexio_bench::Scenario;
/// let mut options = ServerBenchOptions::quick(std::env::temp_dir(), "flexio".into());
/// options.sizes = vec![4096, 1 << 20];
/// options.clients = vec![1, 4];
/// let cells = ServerBench::cells(&options).unwrap();
/// // Each size at every client count, sizes first.
/// let cell = |size, clients| ServerCell { size, clients };
/// assert_eq!(cells, [cell(4096, 1), cell(4096, 4), cell(1 << 20, 1), cell(1 << 20, 4)]);
/// options.clients.clear();
/// assert!(ServerBench::cells(&options).is_err());
/// ```
pub struct ServerBench;

/// The wrk cells of `options`, in the order each round runs them.
pub(super) fn wrk_cells(options: &ServerBenchOptions) -> Vec<ServerCell> {
    options
        .sizes
        .iter()
        .flat_map(|&size| {
            options
                .clients
                .iter()
                .map(move |&clients| ServerCell { size, clients })
        })
        .collect()
}

impl Scenario for ServerBench {
    type Options = ServerBenchOptions;
    type Cell = ServerCell;
    type Results = ServerBenchResults;
    const NAME: &'static str = "server";

    /// Every size at every client count; none when either list is empty,
    /// which is refused.
    fn cells(options: &ServerBenchOptions) -> Result<Vec<ServerCell>> {
        let cells = wrk_cells(options);
        if cells.is_empty() {
            return Err(Error::Usage(
                "the server scenario needs at least one size and one client count".into(),
            ));
        }
        Ok(cells)
    }

    fn run(options: &ServerBenchOptions) -> Result<ServerBenchResults> {
        Self::cells(options)?;
        run(options, &mut |line| eprintln!("  {line}"))
            .map_err(|e| Error::io("run the server scenario in", &options.dir, e))
    }

    /// The charts' footer is `command` and this machine's CPU.
    fn report(
        _options: &ServerBenchOptions,
        results: &ServerBenchResults,
        out: &Path,
        command: &str,
    ) -> Result<Report> {
        let footer = format!(
            "{command} — {}",
            flexio::profile::Fingerprint::of_this_machine(out).cpu_model
        );
        let charts = write_charts(out, results, &footer)
            .map_err(|e| Error::io("write the server charts into", out, e))?;
        Ok(Report {
            table: table(results),
            charts,
        })
    }

    /// The results beside the command that ran them.
    fn document(
        _options: &ServerBenchOptions,
        results: &ServerBenchResults,
        command: &str,
    ) -> Result<serde_json::Value> {
        Ok(serde_json::json!({
            "schema_version": 1,
            "scenario": Self::NAME,
            "command": command,
            "results": crate::to_json(results)?,
        }))
    }
}
