//! `flexio bench --scenario seeds` and `--exhibit NAME`: the twenty
//! exhibits of the five source documents (`shared/seeds/`), each with the
//! original's setup and values transcribed from the document, ours
//! measured now through the matrix's scenarios, a sentence comparing the
//! two, and a chart with the original's points beside ours.
//!
//! The grade ([`STATUS_RULE`], which opens seeds.md) is computed from
//! what ran ([`grade`]), never declared: FULL only when every planned
//! cell and setup produced points of at least three rounds within the
//! stated spread, every value the document states is drawn and tabulated
//! beside ours, the same axes were varied and the exhibit lists no gap;
//! CEILING when all that holds but the document gives no numbers; NONE
//! when nothing ran; PARTIAL otherwise, each reason generated from what
//! was missing.
//!
//! ```text
//! seeds.rs          an exhibit, its status, the plan of a selection
//!  ├ catalogue.rs   the twenty exhibits, in the documents' order
//!  │  ├ flexio_thesis.rs, os_project.rs, tpil.rs, cue.rs, smack.rs
//!  ├ measure.rs     ours, read from the summaries of the cells
//!  ├ grade.rs       the grade and its reasons, from what ran
//!  ├ own.rs         setups outside the matrix (thesis_bench, smack_bench), run once
//!  ├ flexio_setups.rs  (tests) FlexIO's disk-bound setups from plan to grade
//!  └ report.rs      seeds.md and one chart per exhibit
//! ```

use std::fmt;

use flexio_bench::plan::{Cell, Plan};
use flexio_bench::stats::Summary;

mod catalogue;
#[cfg(test)]
mod flexio_setups;
mod grade;
mod measure;
mod own;
mod report;
mod setup;

pub use catalogue::catalogue;
pub use grade::{grade, Evidence, Grade, MIN_ROUNDS, SPREAD_LIMIT};
pub use own::{has_setups, run_own, OwnRuns};
pub use report::{write_report, SeedsReport};
pub use setup::Setup;

/// How an exhibit's grade is decided, as seeds.md states it.
pub const STATUS_RULE: &str = "Grade rule (computed from this run, not declared): FULL only \
    when every planned cell and setup produced points, each the median of at least three \
    rounds whose spread over the median is at most 50% (the spread: slowest to fastest round; \
    a point wider than that gets up to two more rounds, and of five or more the single \
    slowest and fastest are set aside, as the median sets them aside); every value the \
    document states (in its text or tables, or read off its figure and marked so) is drawn \
    on the chart and tabulated beside ours; the same axes were varied; and the exhibit lists \
    no gap (a setup or mechanism unlike the original's). CEILING when all that holds but the \
    document itself gives no numbers to compare. NONE when nothing ran. PARTIAL otherwise, \
    with each reason. A difference smaller than the spread of its two points is reported \
    as no difference.";

/// How much of an exhibit this bench reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every axis of the original measured, its values beside ours.
    Full,
    /// Something measured, something missing (the grade's reasons).
    Partial,
    /// Nothing measured; [`Exhibit::gaps`] say what would run it.
    None,
    /// All measured as planned, but the document gives no numbers to
    /// hold ours against.
    Ceiling,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Full => "FULL",
            Status::Partial => "PARTIAL",
            Status::None => "NONE",
            Status::Ceiling => "CEILING",
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
    /// In the exhibit's unit: the median of the rounds.
    pub y: f64,
    /// The rounds' spread in the same unit, where known: the slowest and
    /// the fastest round, or of five or more the next ones in
    /// ([`round_spread`](flexio_bench::stats::round_spread)).
    pub spread: Option<(f64, f64)>,
    /// The rounds `y` is the median of, where known.
    pub rounds: Option<usize>,
}

impl Point {
    /// A point of `series`.
    pub fn new(series: &str, x: f64, y: f64) -> Self {
        Point {
            series: series.to_string(),
            x,
            y,
            spread: None,
            rounds: None,
        }
    }

    /// The same point with its rounds' extremes and count.
    pub fn with_spread(mut self, low: f64, high: f64, rounds: usize) -> Self {
        self.spread = Some((low.min(high), low.max(high)));
        self.rounds = Some(rounds);
        self
    }

    /// The same point with `y` and its spread divided by `base` (a
    /// normalisation), its rounds kept.
    pub fn over(&self, base: f64) -> Point {
        Point {
            series: self.series.clone(),
            x: self.x,
            y: self.y / base,
            spread: self.spread.map(|(low, high)| {
                let (a, b) = (low / base, high / base);
                (a.min(b), a.max(b))
            }),
            rounds: self.rounds,
        }
    }

    /// The spread's width over the median (0 for one value), where known.
    pub fn relative_spread(&self) -> Option<f64> {
        let (low, high) = self.spread?;
        Some(if self.y.abs() > 0.0 {
            (high - low) / self.y.abs()
        } else {
            0.0
        })
    }
}

/// Whether the document gives numbers for an exhibit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numbers {
    /// The document gives none (a plot, a remark): the best grade is
    /// CEILING.
    NotGiven,
    /// It gives the original's points, and these series of them in
    /// particular (values stated in its text, or read off a figure):
    /// each must be drawn for FULL.
    Given(&'static [&'static str]),
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
#[derive(Clone, Copy)]
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
    /// Whether the document gives numbers, and which values it states.
    pub numbers: Numbers,
    /// Our setup standing for the original's, in words.
    pub ours_setup: &'static str,
    /// Where ours is not the original's experiment (a mechanism, a
    /// setup, a row not drawn), or what would run it: each keeps the
    /// exhibit from FULL.
    pub gaps: &'static [&'static str],
    /// The cells that measure ours (`quick`: the short run).
    pub cells: fn(quick: bool) -> Vec<Cell>,
    /// Ours, from the summaries of those cells, in the exhibit's unit.
    pub ours: fn(&[Summary]) -> Vec<Point>,
    /// What the report draws of ours, the matrix's and the setups'
    /// points together (a ratio of two series, say).
    pub view: fn(Vec<Point>) -> Vec<Point>,
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
/// assert!(find("nope").err().unwrap().to_string().contains("cue-table-1"));
/// ```
pub fn find(id: &str) -> Result<&'static Exhibit, crate::Error> {
    catalogue().iter().find(|e| e.id == id).ok_or_else(|| {
        let names: Vec<&str> = catalogue().iter().map(|e| e.id).collect();
        crate::Error::UnknownExhibit {
            id: id.to_string(),
            known: names.join(", "),
        }
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
            assert!(exhibit.gaps.iter().any(|g| g.contains("GPU")), "{id}");
            assert!(
                (exhibit.cells)(true).is_empty() && !has_setups(exhibit),
                "{id}"
            );
        }
        for exhibit in all {
            // Every value a document states is among its transcribed series.
            if let Numbers::Given(stated) = exhibit.numbers {
                let original = (exhibit.original)();
                for name in stated {
                    assert!(
                        original.iter().any(|p| p.series == *name),
                        "{}: {name}",
                        exhibit.id
                    );
                }
            }
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
