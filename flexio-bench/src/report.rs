//! What a bench run leaves behind: terminal and Markdown tables, SVG
//! charts, `results.json`, `results.csv` and `report.md`, and the files
//! they are written to. Every scenario's report is built from these; a
//! scenario's own table and charts (`host_bench/report.rs`, …) stay beside
//! the scenario, which alone knows its results.
//!
//! ```text
//! table.rs      terminal and Markdown tables of the runner's summaries
//! charts.rs     SVG charts: lines by size, chunk and flows;
//!  ├ charts/dots.rs    dot plots by contender for one-size scenarios
//!  ├ charts/legend.rs  a colour and marker per contender, the legend panel
//!  └ charts/plain.rs   a plain line chart the scenarios draw their own with
//! output.rs     results.json, results.csv, report.md
//! files.rs      writing the bench's own files
//! originals.rs  the place where an original's table (registered by the
//!               flexio-seeds crate above) is printed beside the scenario
//!               that repeats its experiment
//! ```
//!
//! # Examples
//! ```
//! assert_eq!(flexio_bench::report::table::short_size(64 << 10), "64 KiB");
//! ```

pub mod charts;
pub mod files;
pub mod originals;
pub mod output;
pub mod table;
