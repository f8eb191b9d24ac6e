//! The cache scenario behind [`Scenario`]: its parts as cells, its
//! tables, and `cache.json` (the report itself).

use std::path::Path;

use super::{render, run, CacheBenchOptions, CacheBenchReport};
use crate::{Error, Report, Result, Scenario};

/// One part of the cache scenario, as it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheCell {
    /// S.M.A.C.K.'s table: one file of `file_mib` MiB read cold (single-
    /// and multi-block) and warm.
    Smack {
        /// The file's size, MiB.
        file_mib: u64,
    },
    /// A hit's cost against memcpy, and lookups per second.
    Hits,
    /// A hot set read alone and through a scan, per policy and through
    /// the page cache.
    HotSet,
    /// `serve --cache` against `serve`, the hot set during a scan.
    Serve,
}

/// The cache scenario: the block cache against the page cache. Its
/// progress goes to standard error; it draws no chart.
///
/// # Examples
/// ```
/// use flexio_bench::cache_bench::{CacheBench, CacheBenchOptions, CacheCell, Parts};
/// use flexio_bench::Scenario;
/// let mut options = CacheBenchOptions {
///     file_sizes_mib: vec![1, 8],
///     ..CacheBenchOptions::default()
/// };
/// let cells = CacheBench::cells(&options).unwrap();
/// assert_eq!(
///     cells,
///     [
///         CacheCell::Smack { file_mib: 1 },
///         CacheCell::Smack { file_mib: 8 },
///         CacheCell::Hits,
///         CacheCell::HotSet,
///         CacheCell::Serve,
///     ]
/// );
/// options.parts = Parts::parse("serve").unwrap();
/// assert_eq!(CacheBench::cells(&options).unwrap(), [CacheCell::Serve]);
/// ```
pub struct CacheBench;

impl Scenario for CacheBench {
    type Options = CacheBenchOptions;
    type Cell = CacheCell;
    type Results = CacheBenchReport;
    const NAME: &'static str = "cache";

    /// The parts asked for, in the order they run; S.M.A.C.K.'s table is
    /// a cell per file size.
    fn cells(options: &CacheBenchOptions) -> Result<Vec<CacheCell>> {
        let parts = &options.parts;
        let mut cells = Vec::new();
        if parts.smack {
            cells.extend(
                options
                    .file_sizes_mib
                    .iter()
                    .map(|&file_mib| CacheCell::Smack { file_mib }),
            );
        }
        let others = [
            (parts.hits, CacheCell::Hits),
            (parts.hot_set, CacheCell::HotSet),
            (parts.serve, CacheCell::Serve),
        ];
        cells.extend(others.into_iter().filter(|(on, _)| *on).map(|(_, c)| c));
        if cells.is_empty() {
            return Err(Error::Usage(
                "the cache scenario has nothing to run: no part, or S.M.A.C.K.'s table alone with no file size".into(),
            ));
        }
        Ok(cells)
    }

    fn run(options: &CacheBenchOptions) -> Result<CacheBenchReport> {
        Self::cells(options)?;
        run(options, &mut |line| eprintln!("{line}"))
            .map_err(|e| Error::io("run the cache scenario in", &options.dir, e))
    }

    /// The tables; no chart.
    fn report(
        _options: &CacheBenchOptions,
        results: &CacheBenchReport,
        _out: &Path,
        _command: &str,
    ) -> Result<Report> {
        Ok(Report {
            table: render(results),
            charts: Vec::new(),
        })
    }

    /// The report itself (it carries its own `schema_version`).
    fn document(
        _options: &CacheBenchOptions,
        results: &CacheBenchReport,
        _command: &str,
    ) -> Result<serde_json::Value> {
        crate::to_json(results)
    }
}
