//! `flexio bench --scenario seeds` and `--exhibit NAME`: the twenty
//! exhibits of the five source documents (`shared/seeds/`), each with the
//! original's setup and values transcribed from the document, ours
//! measured now through the matrix's scenarios, a sentence comparing the
//! two, and a chart with the original's points beside ours.
//!
//! The status rule ([`STATUS_RULE`], which opens seeds.md): an exhibit is
//! *FULL* when every axis and mechanism of the original's experiment is
//! measured, *PARTIAL* when some are (what is missing is said), *NONE*
//! when this run measures nothing for it (what would run it is said).
//! An original that gives no numbers (a plot whose values the seed's
//! text does not hold) is said so, and that alone does not keep an
//! exhibit from FULL; the original's hardware (its disks, its network)
//! is stood in for by this machine's and said. A setup that needs root
//! (a memory cgroup, network namespaces) and could not be made leaves
//! its exhibit PARTIAL in that run, with the reason.
//!
//! ```text
//! seeds.rs          an exhibit, its status, the plan of a selection
//!  ├ catalogue.rs   the twenty exhibits, in the documents' order
//!  │  ├ flexio_thesis.rs, os_project.rs, tpil.rs, cue.rs, smack.rs
//!  ├ measure.rs     ours, read from the summaries of the cells
//!  ├ own.rs         setups outside the matrix (thesis_bench, smack_bench), run once
//!  └ report.rs      seeds.md and one chart per exhibit
//! ```

use std::fmt;

use flexio_bench::plan::{Cell, Plan};
use flexio_bench::stats::Summary;

mod catalogue;
mod measure;
mod own;
mod report;

pub use catalogue::catalogue;
pub use own::{has_setups, run_own, OwnRuns, Setup};
pub use report::{write_report, SeedsReport};

/// How an exhibit's status is decided, as seeds.md states it.
pub const STATUS_RULE: &str = "Status rule: FULL when every axis and mechanism of the \
    original's experiment is measured in this run; PARTIAL when some are (what is missing is \
    said); NONE when nothing is (what would run it is said). Where the original gives no \
    numbers (a plot whose values the seed's text does not hold) the section says so, and that \
    alone does not keep an exhibit from FULL. The original's hardware (its disks, its network, \
    its CPU) is stood in for by this machine's and said in the comparison. A setup that needs \
    root (a memory cgroup, network namespaces) and could not be made leaves its exhibit \
    PARTIAL in that run, with the reason.";

/// How much of an exhibit this bench reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every axis of the original measured, its values beside ours.
    Full,
    /// Some axes measured; [`Exhibit::gap`] says what is missing.
    Partial,
    /// Nothing measured; [`Exhibit::gap`] says what would run it.
    None,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Full => "FULL",
            Status::Partial => "PARTIAL",
            Status::None => "NONE",
        })
    }
}

/// One point of a series: an x (size, chunk, flows…) and a y in the
/// exhibit's unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The series, e.g. `read-write` or `Cue k=3 t=70 ms`.
    pub series: String,
    /// Along the exhibit's x axis.
    pub x: f64,
    /// In the exhibit's unit.
    pub y: f64,
}

impl Point {
    /// A point of `series`.
    pub fn new(series: &str, x: f64, y: f64) -> Self {
        Point {
            series: series.to_string(),
            x,
            y,
        }
    }
}

/// The axes an exhibit's values are given on.
#[derive(Clone, Copy, Debug)]
pub struct Axes {
    /// What x is, with its unit.
    pub x: &'static str,
    /// What y is, with its unit.
    pub y: &'static str,
    /// A log x axis (sizes).
    pub log_x: bool,
    /// A log y axis (values spanning decades: 1995's MB/s beside ours).
    pub log_y: bool,
}

/// One exhibit of the seeds: a figure or table (or a group of them that
/// share an experiment).
pub struct Exhibit {
    /// The name `--exhibit` takes, e.g. `cue-table-2`.
    pub id: &'static str,
    /// Document and figure or table, e.g. `Cue, Tables 2 and 5`.
    pub title: &'static str,
    /// Where in the document (section, page, figure).
    pub cite: &'static str,
    /// The original's setup, in a sentence or two.
    pub setup: &'static str,
    /// How the original's values were obtained from the seed: quoted from
    /// a table, stated in the text, or (where only a plot exists) read
    /// off it. The seeds hold the documents' text only: a figure that is
    /// a plot with no numbers in the text has no points here.
    pub provenance: &'static str,
    /// The original's values as transcribed.
    pub original: fn() -> Vec<Point>,
    /// The axes both are drawn on.
    pub axes: Axes,
    /// How much is reproduced.
    pub status: Status,
    /// What keeps it from FULL, or what would run it.
    pub gap: &'static str,
    /// The cells that measure ours (`quick`: the short run).
    pub cells: fn(quick: bool) -> Vec<Cell>,
    /// Ours, from the summaries of those cells, in the exhibit's unit.
    pub ours: fn(&[Summary]) -> Vec<Point>,
    /// The comparison: same shape or not, and why.
    pub compare: fn(original: &[Point], ours: &[Point]) -> String,
}

/// The exhibit named `id`, or the names there are.
///
/// # Errors
/// No exhibit has that name: the message lists the names.
///
/// # Examples
/// ```
/// use flexio_seeds::seeds::find;
/// assert_eq!(find("cue-table-1").unwrap().id, "cue-table-1");
/// assert!(find("nope").err().unwrap().contains("cue-table-1"));
/// ```
pub fn find(id: &str) -> Result<&'static Exhibit, String> {
    catalogue().iter().find(|e| e.id == id).ok_or_else(|| {
        let names: Vec<&str> = catalogue().iter().map(|e| e.id).collect();
        format!("unknown exhibit {id:?}; known: {}", names.join(", "))
    })
}

/// The cells of `exhibits`, each cell once (exhibits share some), in the
/// order the exhibits ask for them.
///
/// # Examples
/// ```
/// use flexio_seeds::seeds::{catalogue, plan};
/// let all: Vec<_> = catalogue().iter().collect();
/// assert!(!plan(&all, true).cells.is_empty());
/// ```
pub fn plan(exhibits: &[&Exhibit], quick: bool) -> Plan {
    let mut cells: Vec<Cell> = Vec::new();
    for exhibit in exhibits {
        for cell in (exhibit.cells)(quick) {
            match cells.iter_mut().find(|c| c.key == cell.key) {
                Some(known) => {
                    for entrant in cell.entrants {
                        if !known.entrants.contains(&entrant) {
                            known.entrants.push(entrant);
                        }
                    }
                }
                None => cells.push(cell),
            }
        }
    }
    Plan { cells }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_twenty_exhibits_with_distinct_names_and_device_ones_say_what_would_run_them() {
        let all = catalogue();
        assert_eq!(all.len(), 20);
        let mut names: Vec<&str> = all.iter().map(|e| e.id).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 20);
        for id in ["flexio-4-25", "tpil-fig-4-5"] {
            let exhibit = find(id).unwrap();
            assert_eq!(exhibit.status, Status::None, "{id}");
            assert!(exhibit.gap.contains("GPU"), "{id}: {}", exhibit.gap);
        }
        for exhibit in all {
            assert!(!exhibit.gap.is_empty() || exhibit.status == Status::Full);
            // What measures nothing plans no cells and no setup of its
            // own, and the reverse.
            let measured = !(exhibit.cells)(true).is_empty() || has_setups(exhibit);
            assert_eq!(measured, exhibit.status != Status::None, "{}", exhibit.id);
        }
    }

    #[test]
    fn shared_cells_run_once_with_every_entrant() {
        let all: Vec<&Exhibit> = catalogue().iter().collect();
        let plan = plan(&all, true);
        for (i, a) in plan.cells.iter().enumerate() {
            assert!(plan.cells[i + 1..].iter().all(|b| b.key != a.key));
        }
    }
}
