//! An exhibit's grade, computed from what this run produced: the cells
//! and setups planned against those that gave points, the rounds and
//! spread of each point, the original's values against those drawn, the
//! axes varied, and the exhibit's listed gaps. Each shortfall becomes a
//! reason in words.

use super::{Numbers, Point, Status};

/// The least rounds a point's median may come from.
pub const MIN_ROUNDS: usize = 3;

pub use crate::thesis_bench::SPREAD_LIMIT;

/// What a run produced for one exhibit.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// Cells, entrants and setups planned that produced nothing, each
    /// with why (`cell file-to-file 1 MiB cold: mmap: no result`).
    pub failed: Vec<String>,
    /// Ours, as drawn.
    pub ours: Vec<Point>,
    /// Ours as measured, before the exhibit's view (ratios, differences)
    /// widened their spreads: the rounds and spread are judged on these;
    /// empty, on `ours`.
    pub measured: Vec<Point>,
    /// The original's values as transcribed.
    pub original: Vec<Point>,
    /// How many of `original` the chart drew (a log axis cannot draw 0).
    pub original_drawn: usize,
    /// Whether the document gives numbers, and which it states.
    pub numbers: Option<Numbers>,
    /// The x axis is categories (`0: a, 1: b`): each of the original's
    /// must be among ours.
    pub categories: bool,
    /// The exhibit's listed gaps.
    pub gaps: Vec<String>,
}

/// A grade and the reasons it is not FULL.
#[derive(Clone, Debug, PartialEq)]
pub struct Grade {
    /// FULL, PARTIAL, NONE or CEILING.
    pub status: Status,
    /// Why not FULL, each generated from what was missing.
    pub reasons: Vec<String>,
}

/// The grade `evidence` earns.
///
/// # Examples
/// ```
/// use flexio_seeds::seeds::{grade, Evidence, Numbers, Point, Status};
/// let full = Evidence {
///     ours: vec![
///         Point::new("ours", 1.0, 10.0).with_spread(9.0, 11.0, 3),
///         Point::new("ours", 2.0, 20.0).with_spread(19.0, 21.0, 3),
///     ],
///     original: vec![Point::new("theirs", 1.0, 5.0), Point::new("theirs", 2.0, 8.0)],
///     original_drawn: 2,
///     numbers: Some(Numbers::Given(&[])),
///     ..Evidence::default()
/// };
/// assert_eq!(grade(&full).status, Status::Full);
/// let gap = Evidence { gaps: vec!["UDP is TCP".into()], ..full };
/// let graded = grade(&gap);
/// assert_eq!(graded.status, Status::Partial);
/// assert_eq!(graded.reasons, ["gap: UDP is TCP"]);
/// ```
pub fn grade(evidence: &Evidence) -> Grade {
    let mut reasons: Vec<String> = evidence.failed.clone();
    if evidence.ours.is_empty() {
        reasons.extend(evidence.gaps.iter().map(|g| format!("gap: {g}")));
        if reasons.is_empty() {
            reasons.push("nothing ran".into());
        }
        return Grade {
            status: Status::None,
            reasons,
        };
    }
    let measured = if evidence.measured.is_empty() {
        &evidence.ours
    } else {
        &evidence.measured
    };
    reasons.extend(rounds_and_spread(measured));
    reasons.extend(originals(evidence));
    reasons.extend(axes(evidence));
    reasons.extend(evidence.gaps.iter().map(|g| format!("gap: {g}")));
    let no_numbers = !matches!(evidence.numbers, Some(Numbers::Given(_)));
    let status = match (reasons.is_empty(), no_numbers) {
        (false, _) => Status::Partial,
        (true, true) => Status::Ceiling,
        (true, false) => Status::Full,
    };
    if no_numbers {
        reasons.push("the document gives no numbers to compare".into());
    }
    Grade { status, reasons }
}

/// Points of fewer rounds than [`MIN_ROUNDS`] or wider than
/// [`SPREAD_LIMIT`], one reason each kind (the first few named).
fn rounds_and_spread(ours: &[Point]) -> Vec<String> {
    let name = |p: &Point| format!("{} at {}", p.series, trim(p.x));
    let few: Vec<String> = ours
        .iter()
        .filter(|p| p.rounds.is_some_and(|r| r < MIN_ROUNDS))
        .map(|p| format!("{} ({} round)", name(p), p.rounds.unwrap_or(0)))
        .collect();
    let wide: Vec<String> = ours
        .iter()
        .filter_map(|p| Some((p, p.relative_spread()?)))
        .filter(|(_, spread)| *spread > SPREAD_LIMIT)
        .map(|(p, spread)| format!("{} ({:.0}%)", name(p), spread * 100.0))
        .collect();
    let mut reasons = Vec::new();
    if !few.is_empty() {
        reasons.push(format!(
            "fewer than {MIN_ROUNDS} rounds: {}",
            first_few(&few)
        ));
    }
    if !wide.is_empty() {
        reasons.push(format!(
            "spread over {:.0}% of the median: {}",
            SPREAD_LIMIT * 100.0,
            first_few(&wide)
        ));
    }
    reasons
}

/// The original's stated values missing or left off the chart.
fn originals(evidence: &Evidence) -> Vec<String> {
    let mut reasons = Vec::new();
    if let Some(Numbers::Given(stated)) = evidence.numbers {
        for name in stated {
            if !evidence.original.iter().any(|p| p.series == *name) {
                reasons.push(format!("the original's value {name:?} not drawn"));
            }
        }
        if evidence.original.is_empty() && stated.is_empty() {
            reasons.push("the original's values not transcribed".into());
        }
    }
    let left_off = evidence.original.len() - evidence.original_drawn.min(evidence.original.len());
    if left_off > 0 {
        reasons.push(format!(
            "{left_off} of the original's values not on the chart"
        ));
    }
    reasons
}

/// An axis the original varied that ours did not.
fn axes(evidence: &Evidence) -> Option<String> {
    let xs = |points: &[Point]| {
        let mut xs: Vec<f64> = points.iter().map(|p| p.x).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs
    };
    let (theirs, ours) = (xs(&evidence.original), xs(&evidence.ours));
    if evidence.categories {
        let missing: Vec<String> = theirs
            .iter()
            .filter(|x| !ours.contains(x))
            .map(|x| trim(*x))
            .collect();
        return (!missing.is_empty()).then(|| {
            format!(
                "the original's categories {} not measured",
                missing.join(", ")
            )
        });
    }
    (theirs.len() > 1 && ours.len() < 2)
        .then(|| "the original varies its x axis, ours has one value".to_string())
}

fn first_few(items: &[String]) -> String {
    let shown = items.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    match items.len() {
        n if n > 3 => format!("{shown} and {} more", n - 3),
        _ => shown,
    }
}

fn trim(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything as planned, the document's values drawn: FULL.
    fn full() -> Evidence {
        let ours = (1..=3)
            .map(|x| Point::new("ours", x as f64, 10.0).with_spread(9.0, 11.0, 3))
            .collect();
        Evidence {
            ours,
            original: vec![
                Point::new("stated", 1.0, 4.0),
                Point::new("stated", 3.0, 6.0),
            ],
            original_drawn: 2,
            numbers: Some(Numbers::Given(&["stated"])),
            ..Evidence::default()
        }
    }

    fn partial_because(evidence: &Evidence, words: &str) {
        let graded = grade(evidence);
        assert_eq!(graded.status, Status::Partial, "{graded:?}");
        assert!(
            graded.reasons.iter().any(|r| r.contains(words)),
            "{words:?} in {graded:?}"
        );
    }

    #[test]
    fn everything_as_planned_with_the_documents_values_drawn_is_full() {
        let graded = grade(&full());
        assert_eq!(graded.status, Status::Full, "{graded:?}");
        assert!(graded.reasons.is_empty());
    }

    #[test]
    fn a_failed_cell_lowers_the_grade_and_says_which() {
        let evidence = Evidence {
            failed: vec!["cell file-to-file 1 MiB cold: mmap: no result".into()],
            ..full()
        };
        partial_because(&evidence, "mmap: no result");
    }

    #[test]
    fn a_stated_value_not_transcribed_lowers_the_grade() {
        let evidence = Evidence {
            numbers: Some(Numbers::Given(&["stated", "mmap ahead to 50 MB"])),
            ..full()
        };
        partial_because(&evidence, "\"mmap ahead to 50 MB\" not drawn");
    }

    #[test]
    fn an_original_value_left_off_the_chart_lowers_the_grade() {
        let evidence = Evidence {
            original_drawn: 1,
            ..full()
        };
        partial_because(&evidence, "1 of the original's values not on the chart");
    }

    #[test]
    fn a_gap_text_lowers_the_grade() {
        let evidence = Evidence {
            gaps: vec!["TCP stands in for UDP".into()],
            ..full()
        };
        partial_because(&evidence, "gap: TCP stands in for UDP");
    }

    #[test]
    fn a_spread_too_wide_or_too_few_rounds_lowers_the_grade() {
        let mut wide = full();
        wide.ours[1] = Point::new("ours", 2.0, 10.0).with_spread(4.0, 12.0, 3);
        partial_because(&wide, "ours at 2 (80%)");
        let mut one = full();
        one.ours[0] = Point::new("ours", 1.0, 10.0).with_spread(10.0, 10.0, 1);
        partial_because(&one, "fewer than 3 rounds: ours at 1 (1 round)");
    }

    #[test]
    fn an_axis_not_varied_lowers_the_grade() {
        let evidence = Evidence {
            ours: vec![Point::new("ours", 1.0, 10.0).with_spread(9.0, 11.0, 3)],
            ..full()
        };
        partial_because(&evidence, "ours has one value");
        let categories = Evidence {
            categories: true,
            ours: vec![Point::new("ours", 1.0, 10.0).with_spread(9.0, 11.0, 3)],
            ..full()
        };
        partial_because(&categories, "categories 3 not measured");
    }

    #[test]
    fn nothing_ran_is_none_and_no_numbers_is_the_ceiling() {
        let none = Evidence {
            ours: Vec::new(),
            gaps: vec!["needs a GPU".into()],
            ..full()
        };
        assert_eq!(grade(&none).status, Status::None);
        assert_eq!(grade(&none).reasons, ["gap: needs a GPU"]);
        let ceiling = Evidence {
            original: Vec::new(),
            original_drawn: 0,
            numbers: Some(Numbers::NotGiven),
            ..full()
        };
        let graded = grade(&ceiling);
        assert_eq!(graded.status, Status::Ceiling, "{graded:?}");
        assert_eq!(graded.reasons, ["the document gives no numbers to compare"]);
    }
}
