//! seeds.md and one chart per exhibit: the status table first, then each
//! exhibit's setup, the original's values, ours, the comparison and the
//! chart (the original's points dashed, ours solid).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::grade::{grade, Evidence, Grade};
use super::{Exhibit, OwnRuns, Point, Status, STATUS_RULE};
use flexio_bench::charts::plain::{write_line_chart, LineChart, PlainSeries};
use flexio_bench::stats::Summary;

/// What a seeds run wrote.
#[derive(Debug)]
pub struct SeedsReport {
    /// seeds.md.
    pub markdown: PathBuf,
    /// The charts, one or more per exhibit with points.
    pub charts: Vec<PathBuf>,
    /// Each exhibit's grade, in the order given.
    pub grades: Vec<(&'static str, Grade)>,
}

/// The most series one chart panel holds; more go to further panels.
const SERIES_PER_PANEL: usize = 6;

/// Writes `seeds.md` and the charts of `exhibits` into `out`, ours read
/// from `summaries` and from `own` (the setups outside the matrix), each
/// exhibit graded against the cells its plan had (`quick`: the short
/// run's); `note` (how the run went: quick or full, its duration, the
/// machine) opens the file, then the grade rule.
///
/// # Errors
/// `out` cannot be created or a file cannot be written.
///
/// # Examples
/// ```
/// use flexio_seeds::seeds::{find, write_report, OwnRuns};
/// let out = tempfile::tempdir().unwrap();
/// let exhibits = [find("flexio-4-25").unwrap()];
/// let report =
///     write_report(out.path(), &exhibits, &[], &OwnRuns::default(), true, "a test").unwrap();
/// let text = std::fs::read_to_string(report.markdown).unwrap();
/// assert!(text.contains("| flexio-4-25 |") && text.contains("NONE"));
/// ```
pub fn write_report(
    out: &Path,
    exhibits: &[&Exhibit],
    summaries: &[Summary],
    own: &OwnRuns,
    quick: bool,
    note: &str,
) -> io::Result<SeedsReport> {
    std::fs::create_dir_all(out)
        .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", out.display())))?;
    let mut sections = String::new();
    let mut charts = Vec::new();
    let mut grades = Vec::new();
    for exhibit in exhibits {
        let original = (exhibit.original)();
        let mut with_own = summaries.to_vec();
        with_own.extend(own.summaries(exhibit));
        let mut measured = (exhibit.ours)(&with_own);
        measured.extend(own.points(exhibit));
        let ours = (exhibit.view)(measured.clone());
        let (paths, original_drawn) = chart_for(out, exhibit, &original, &ours)?;
        let mut failed = missing_cells(exhibit, summaries, quick);
        failed.extend(own.shortfall(exhibit).map(|why| format!("setup: {why}")));
        if own.shortfall(exhibit).is_none() {
            failed.extend(own.empty(exhibit));
        }
        let graded = grade(&Evidence {
            failed,
            ours: ours.clone(),
            measured,
            original: original.clone(),
            original_drawn,
            numbers: Some(exhibit.numbers),
            categories: exhibit.axes.x.starts_with("0: "),
            gaps: exhibit.gaps.iter().map(|g| g.to_string()).collect(),
        });
        sections += &section(exhibit, &graded, &original, &ours, &paths);
        for setting in own.settings(exhibit) {
            sections += &format!("Our setting outside the matrix: {setting}.\n\n");
        }
        charts.extend(paths);
        grades.push((exhibit.id, graded));
    }
    let mut text = format!("# The seeds' exhibits, reproduced\n\n{note}\n\n{STATUS_RULE}\n\n");
    text += &status_table(exhibits, &grades);
    text += &sections;
    let markdown = out.join("seeds.md");
    flexio_bench::files::write_replacing(&markdown, text.as_bytes())?;
    Ok(SeedsReport {
        markdown,
        charts,
        grades,
    })
}

/// Each planned cell and entrant of `exhibit` with no result in
/// `summaries`, in words.
fn missing_cells(exhibit: &Exhibit, summaries: &[Summary], quick: bool) -> Vec<String> {
    flexio_bench::stats::without_results(&(exhibit.cells)(quick), summaries)
}

/// The grades table: every exhibit's grade and why it is not FULL.
pub fn status_table(exhibits: &[&Exhibit], grades: &[(&'static str, Grade)]) -> String {
    let count = |status| grades.iter().filter(|(_, g)| g.status == status).count();
    let mut text = format!(
        "{} exhibits: {} FULL, {} PARTIAL, {} CEILING, {} NONE.\n\n| exhibit | what | grade | why not FULL |\n| --- | --- | --- | --- |\n",
        exhibits.len(),
        count(Status::Full),
        count(Status::Partial),
        count(Status::Ceiling),
        count(Status::None)
    );
    for (exhibit, (_, graded)) in exhibits.iter().zip(grades) {
        let why = if graded.reasons.is_empty() {
            "-".to_string()
        } else {
            graded.reasons.join("; ").replace('|', "/")
        };
        let _ = writeln!(
            text,
            "| {} | {} | {} | {why} |",
            exhibit.id, exhibit.title, graded.status
        );
    }
    text + "\n"
}

fn section(
    exhibit: &Exhibit,
    graded: &Grade,
    original: &[Point],
    ours: &[Point],
    charts: &[PathBuf],
) -> String {
    let mut text = format!("## {}: {}\n\n", exhibit.id, exhibit.title);
    let _ = writeln!(text, "**Grade: {}.**", graded.status);
    for reason in &graded.reasons {
        let _ = writeln!(text, "- {reason}");
    }
    text.push('\n');
    let _ = writeln!(text, "- Source: {}.", exhibit.cite);
    let _ = writeln!(text, "- Their setup: {}", exhibit.setup);
    if !exhibit.ours_setup.is_empty() {
        let _ = writeln!(text, "- Our setup: {}", exhibit.ours_setup);
    }
    let _ = writeln!(text, "- Their values: {}", exhibit.provenance);
    let _ = writeln!(
        text,
        "- Axes: x = {}, y = {}.\n",
        exhibit.axes.x, exhibit.axes.y
    );
    text += &points_table("original", original);
    text += &points_table("ours, measured now", ours);
    let _ = writeln!(text, "{}\n", (exhibit.compare)(original, ours));
    if charts.is_empty() {
        text += "No chart: neither the seed nor this run has points to draw.\n\n";
    }
    for path in charts {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let _ = writeln!(text, "![{}]({name})\n", exhibit.id);
    }
    text
}

fn points_table(whose: &str, points: &[Point]) -> String {
    if points.is_empty() {
        return format!("*{whose}: no values.*\n\n");
    }
    let spread = points
        .iter()
        .any(|p| p.spread.is_some() || p.rounds.is_some());
    let mut text = if spread {
        format!("| {whose} | x | y (median) | spread of the rounds | rounds |\n| --- | ---: | ---: | ---: | ---: |\n")
    } else {
        format!("| {whose} | x | y |\n| --- | ---: | ---: |\n")
    };
    for point in points {
        let _ = write!(
            text,
            "| {} | {} | {} |",
            point.series,
            number(point.x),
            number(point.y)
        );
        if spread {
            let range = point.spread.map_or("-".to_string(), |(low, high)| {
                format!("{} - {}", number(low), number(high))
            });
            let rounds = point.rounds.map_or("-".to_string(), |r| r.to_string());
            let _ = write!(text, " {range} | {rounds} |");
        }
        text.push('\n');
    }
    text + "\n"
}

/// A value with about four significant digits.
fn number(value: f64) -> String {
    if !value.is_finite() || (value.fract() == 0.0 && value.abs() < 1e15) {
        return format!("{value:.0}");
    }
    let digits = (3 - value.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{value:.digits$}")
}

/// The names of an axis given as `0: first, 1: second`, else none.
fn categories(axis: &str) -> Vec<String> {
    if !axis.starts_with("0: ") {
        return Vec::new();
    }
    axis.split(", ")
        .map(|part| {
            part.split_once(": ")
                .map_or(part, |(_, name)| name)
                .to_string()
        })
        .collect()
}

/// A series' whiskers: (x, slowest, fastest round).
type Whiskers = Vec<(f64, f64, f64)>;

/// `series` in panels of at most [`SERIES_PER_PANEL`], the original's and
/// ours shared out alike so each panel has both (in their order, the
/// catalogues list a setting's original and ours in the same order).
fn panels(series: Vec<(PlainSeries, Whiskers)>) -> Vec<Vec<(PlainSeries, Whiskers)>> {
    let count = series.len().div_ceil(SERIES_PER_PANEL).max(1);
    let (original, ours): (Vec<_>, Vec<_>) = series.into_iter().partition(|(s, _)| s.dashed);
    let (per_original, per_ours) = (original.len().div_ceil(count), ours.len().div_ceil(count));
    let mut original = original.into_iter();
    let mut ours = ours.into_iter();
    (0..count)
        .map(|_| {
            original
                .by_ref()
                .take(per_original)
                .chain(ours.by_ref().take(per_ours))
                .collect::<Vec<_>>()
        })
        .filter(|panel| !panel.is_empty())
        .collect()
}

/// The exhibit's charts (one panel per [`SERIES_PER_PANEL`] series, the
/// original's first) and how many of the original's points they drew.
fn chart_for(
    out: &Path,
    exhibit: &Exhibit,
    original: &[Point],
    ours: &[Point],
) -> io::Result<(Vec<PathBuf>, usize)> {
    if original.is_empty() && ours.is_empty() {
        return Ok((Vec::new(), 0));
    }
    // A series with its whiskers (x, slowest, fastest) where known.
    let mut series: Vec<(PlainSeries, Whiskers)> = Vec::new();
    for (points, dashed) in [(original, true), (ours, false)] {
        for point in points {
            let index = match series.iter().position(|(s, _)| s.label == point.series) {
                Some(index) => index,
                None => {
                    series.push((
                        PlainSeries {
                            label: point.series.clone(),
                            points: Vec::new(),
                            dashed,
                        },
                        Vec::new(),
                    ));
                    series.len() - 1
                }
            };
            series[index].0.points.push((point.x, point.y));
            if let Some((low, high)) = point.spread {
                series[index].1.push((point.x, low, high));
            }
        }
    }
    // A log axis cannot draw 0 (a warm read that never blocked): such
    // points stay in seeds.md's table and leave the chart, which says so.
    let mut zeros_left_out = false;
    if exhibit.axes.log_y {
        for (line, whiskers) in &mut series {
            let before = line.points.len();
            line.points.retain(|p| p.1 > 0.0);
            whiskers.retain(|w| w.1 > 0.0);
            zeros_left_out |= line.points.len() < before;
        }
        series.retain(|(s, _)| !s.points.is_empty());
    }
    let original_drawn = series
        .iter()
        .filter(|(s, _)| s.dashed)
        .map(|(s, _)| s.points.len())
        .sum();
    // One x for every point (one size): a category per series instead,
    // so that equal values side by side do not hide each other.
    let mut categories = categories(exhibit.axes.x);
    let first_x = series
        .first()
        .and_then(|(s, _)| s.points.first())
        .map(|p| p.0);
    let one_x = series
        .iter()
        .flat_map(|(s, _)| &s.points)
        .all(|p| Some(p.0) == first_x);
    if one_x && categories.is_empty() && series.len() > 1 {
        categories = series.iter().map(|(s, _)| s.label.clone()).collect();
        for (index, (line, whiskers)) in series.iter_mut().enumerate() {
            line.points.iter_mut().for_each(|p| p.0 = index as f64);
            whiskers.iter_mut().for_each(|w| w.0 = index as f64);
        }
    }
    let positive = |s: &PlainSeries| s.points.iter().all(|p| p.1 > 0.0);
    let log_y = exhibit.axes.log_y && series.iter().all(|(s, _)| positive(s));
    let panels = panels(series);
    let mut paths = Vec::new();
    for (index, panel) in panels.iter().enumerate() {
        let part = if panels.len() > 1 {
            format!(" ({} of {})", index + 1, panels.len())
        } else {
            String::new()
        };
        let chart = LineChart {
            title: format!("{}{part}", exhibit.title),
            x_desc: match first_x {
                Some(x) if one_x && !exhibit.axes.x.starts_with("0: ") => {
                    format!("{} = {}", exhibit.axes.x, number(x))
                }
                // Named categories need no description beside them.
                _ if exhibit.axes.x.starts_with("0: ") => String::new(),
                _ => exhibit.axes.x.to_string(),
            },
            y_desc: exhibit.axes.y.to_string(),
            log_x: exhibit.axes.log_x,
            x_sizes: exhibit.axes.x.contains("(bytes)"),
            log_y,
            // Categories are not a scale: markers side by side, unjoined.
            markers_only: !categories.is_empty(),
            categories: categories.clone(),
            series: panel.iter().map(|(s, _)| s.clone()).collect(),
            whiskers: panel.iter().map(|(_, w)| w.clone()).collect(),
            footer: format!(
                "dashed: the original's values as transcribed; solid: ours, measured now; \
                 whiskers: the rounds' spread{}",
                if zeros_left_out {
                    "; values of 0 are in the table only (a log axis cannot draw them)"
                } else {
                    ""
                }
            ),
        };
        let name = match index {
            0 => format!("seeds-{}.svg", exhibit.id),
            n => format!("seeds-{}-{}.svg", exhibit.id, n + 1),
        };
        let path = out.join(name);
        write_line_chart(&path, &chart)?;
        paths.push(path);
    }
    Ok((paths, original_drawn))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeds::{find, Setup};
    use crate::thesis_bench::{ThesisOutcome, ThesisPoint};

    fn report(own: &OwnRuns) -> String {
        let out = tempfile::tempdir().unwrap();
        let exhibits = [find("flexio-4-21").unwrap()];
        let report = write_report(out.path(), &exhibits, &[], own, true, "a test").unwrap();
        std::fs::read_to_string(report.markdown).unwrap()
    }

    #[test]
    fn a_setup_that_could_not_run_as_designed_lowers_the_grade_and_says_why() {
        let point = ThesisPoint {
            series: "three hosts, B relays by splice (ours)".into(),
            x: 1.0,
            y: 50.0,
            spread: Some((45.0, 52.0, 3)),
        };
        let ran = OwnRuns::with(
            Setup::Relay,
            ThesisOutcome {
                points: vec![point.clone()],
                shortfall: None,
                setting: "three namespaces".into(),
            },
        );
        let md = report(&ran);
        assert!(!md.contains("- setup:"), "{md}");
        assert!(
            md.contains("| three hosts, B relays by splice (ours) | 1 | 50 | 45 - 52 | 3 |"),
            "{md}"
        );
        assert!(
            md.contains("Our setting outside the matrix: three namespaces."),
            "{md}"
        );
        let short = OwnRuns::with(
            Setup::Relay,
            ThesisOutcome {
                points: vec![point],
                shortfall: Some("over loopback, one host (not root)".into()),
                setting: String::new(),
            },
        );
        let md = report(&short);
        assert!(
            md.contains("1 exhibits: 0 FULL, 1 PARTIAL, 0 CEILING, 0 NONE."),
            "{md}"
        );
        assert!(
            md.contains("- setup: over loopback, one host (not root)"),
            "{md}"
        );
        assert!(
            md.starts_with("# The seeds") && md.contains(STATUS_RULE),
            "{md}"
        );
    }
    #[test]
    fn past_six_series_each_panel_has_the_originals_beside_ours() {
        let line = |label: &str, dashed| {
            (
                PlainSeries {
                    label: label.into(),
                    points: vec![(1.0, 1.0)],
                    dashed,
                },
                Vec::new(),
            )
        };
        let mut series: Vec<_> = (0..5).map(|i| line(&format!("theirs {i}"), true)).collect();
        series.extend((0..6).map(|i| line(&format!("ours {i}"), false)));
        let panels = panels(series);
        assert_eq!(panels.len(), 2);
        for panel in &panels {
            assert!(panel.len() <= SERIES_PER_PANEL, "{}", panel.len());
            assert!(panel.iter().any(|(s, _)| s.dashed) && panel.iter().any(|(s, _)| !s.dashed));
        }
        assert_eq!(panels.iter().map(Vec::len).sum::<usize>(), 11);
        assert_eq!(panels[0][0].0.label, "theirs 0");
        assert_eq!(panels[0][3].0.label, "ours 0");
    }

    #[test]
    fn a_zero_stays_in_the_table_and_leaves_a_log_chart_log() {
        // A warm pass that never blocked: 0 s, beside values decades apart.
        let points = [(1.0, 0.0), (1.0, 2e-4), (24.0, 0.8)]
            .iter()
            .zip(["warm, blocked (ours)", "warm (ours)", "warm (ours)"])
            .map(|(&(x, y), series)| ThesisPoint {
                series: series.into(),
                x,
                y,
                spread: None,
            })
            .collect();
        let own = OwnRuns::with(
            Setup::SmackCached,
            ThesisOutcome {
                points,
                shortfall: None,
                setting: String::new(),
            },
        );
        let out = tempfile::tempdir().unwrap();
        let exhibits = [find("smack-table-4").unwrap()];
        let report = write_report(out.path(), &exhibits, &[], &own, true, "a test").unwrap();
        let md = std::fs::read_to_string(report.markdown).unwrap();
        assert!(md.contains("| warm, blocked (ours) | 1 | 0 |"), "{md}");
        let svg = std::fs::read_to_string(&report.charts[0]).unwrap();
        assert!(svg.contains("values of 0 are in the table only"), "{svg}");
        // Log ticks reach down to the 0.2 ms point: a linear axis up to
        // the original's 300 s would start at 0 and step by 50.
        assert!(svg.contains("\n0.001\n</text>"), "{svg}");
    }
}
