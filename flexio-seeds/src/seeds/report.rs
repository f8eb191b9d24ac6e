//! seeds.md and one chart per exhibit: the status table first, then each
//! exhibit's setup, the original's values, ours, the comparison and the
//! chart (the original's points dashed, ours solid).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::{Exhibit, OwnRuns, Point, Status, STATUS_RULE};
use flexio_bench::charts::plain::{write_line_chart, LineChart, PlainSeries};
use flexio_bench::stats::Summary;

/// What a seeds run wrote.
#[derive(Debug)]
pub struct SeedsReport {
    /// seeds.md.
    pub markdown: PathBuf,
    /// One chart per exhibit with points.
    pub charts: Vec<PathBuf>,
}

/// Writes `seeds.md` and the charts of `exhibits` into `out`, ours read
/// from `summaries` and from `own` (the setups outside the matrix); `note`
/// (how the run went: quick or full, its duration, the machine) opens
/// the file, then the status rule.
///
/// # Errors
/// `out` cannot be created or a file cannot be written.
///
/// # Examples
/// ```
/// use flexio_seeds::seeds::{find, write_report, OwnRuns};
/// let out = tempfile::tempdir().unwrap();
/// let exhibits = [find("flexio-4-25").unwrap()];
/// let report = write_report(out.path(), &exhibits, &[], &OwnRuns::default(), "a test").unwrap();
/// let text = std::fs::read_to_string(report.markdown).unwrap();
/// assert!(text.contains("| flexio-4-25 |") && text.contains("NONE"));
/// ```
pub fn write_report(
    out: &Path,
    exhibits: &[&Exhibit],
    summaries: &[Summary],
    own: &OwnRuns,
    note: &str,
) -> io::Result<SeedsReport> {
    std::fs::create_dir_all(out)
        .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", out.display())))?;
    let mut text = format!("# The seeds' exhibits, reproduced\n\n{note}\n\n{STATUS_RULE}\n\n");
    let standing: Vec<Standing> = exhibits.iter().map(|e| Standing::of(e, own)).collect();
    text += &status_table(exhibits, &standing);
    let mut charts = Vec::new();
    for (exhibit, standing) in exhibits.iter().zip(&standing) {
        let original = (exhibit.original)();
        let mut ours = (exhibit.ours)(summaries);
        ours.extend(own.points(exhibit));
        let chart = chart_for(out, exhibit, &original, &ours)?;
        text += &section(exhibit, standing, &original, &ours, chart.as_deref());
        for setting in own.settings(exhibit) {
            text += &format!("Our setting outside the matrix: {setting}.\n\n");
        }
        charts.extend(chart);
    }
    let markdown = out.join("seeds.md");
    flexio_bench::files::write_replacing(&markdown, text.as_bytes())?;
    Ok(SeedsReport { markdown, charts })
}

/// An exhibit's status in this run: its own, unless a setup outside the
/// matrix fell short (not root, a failure), which makes a FULL one PARTIAL.
struct Standing {
    status: Status,
    gap: String,
}

impl Standing {
    fn of(exhibit: &Exhibit, own: &OwnRuns) -> Standing {
        match own.shortfall(exhibit) {
            Some(why) if exhibit.status == Status::Full => Standing {
                status: Status::Partial,
                gap: format!("In this run: {why}."),
            },
            Some(why) => Standing {
                status: exhibit.status,
                gap: format!("{} In this run: {why}.", exhibit.gap),
            },
            None => Standing {
                status: exhibit.status,
                gap: exhibit.gap.to_string(),
            },
        }
    }
}

fn status_table(exhibits: &[&Exhibit], standing: &[Standing]) -> String {
    let count = |status| standing.iter().filter(|s| s.status == status).count();
    let mut text = format!(
        "{} exhibits: {} FULL, {} PARTIAL, {} NONE.\n\n| exhibit | what | status | what is missing |\n| --- | --- | --- | --- |\n",
        exhibits.len(),
        count(Status::Full),
        count(Status::Partial),
        count(Status::None)
    );
    for (exhibit, standing) in exhibits.iter().zip(standing) {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} |",
            exhibit.id,
            exhibit.title,
            standing.status,
            if standing.status == Status::Full {
                "-"
            } else {
                &standing.gap
            }
        );
    }
    text + "\n"
}

fn section(
    exhibit: &Exhibit,
    standing: &Standing,
    original: &[Point],
    ours: &[Point],
    chart: Option<&Path>,
) -> String {
    let mut text = format!("## {}: {}\n\n", exhibit.id, exhibit.title);
    let _ = writeln!(text, "**Status: {}.** {}\n", standing.status, standing.gap);
    let _ = writeln!(text, "- Source: {}.", exhibit.cite);
    let _ = writeln!(text, "- Their setup: {}", exhibit.setup);
    let _ = writeln!(text, "- Their values: {}", exhibit.provenance);
    let _ = writeln!(
        text,
        "- Axes: x = {}, y = {}.\n",
        exhibit.axes.x, exhibit.axes.y
    );
    text += &points_table("original", original);
    text += &points_table("ours, measured now", ours);
    let _ = writeln!(text, "{}\n", (exhibit.compare)(original, ours));
    match chart {
        Some(path) => {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let _ = writeln!(text, "![{}]({name})\n", exhibit.id);
        }
        None => text += "No chart: neither the seed nor this run has points to draw.\n\n",
    }
    text
}

fn points_table(whose: &str, points: &[Point]) -> String {
    if points.is_empty() {
        return format!("*{whose}: no values.*\n\n");
    }
    let mut text = format!("| {whose} | x | y |\n| --- | ---: | ---: |\n");
    for point in points {
        let _ = writeln!(
            text,
            "| {} | {} | {} |",
            point.series,
            number(point.x),
            number(point.y)
        );
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

fn chart_for(
    out: &Path,
    exhibit: &Exhibit,
    original: &[Point],
    ours: &[Point],
) -> io::Result<Option<PathBuf>> {
    if original.is_empty() && ours.is_empty() {
        return Ok(None);
    }
    let mut series: Vec<PlainSeries> = Vec::new();
    for (points, dashed) in [(original, true), (ours, false)] {
        for point in points {
            match series.iter_mut().find(|s| s.label == point.series) {
                Some(line) => line.points.push((point.x, point.y)),
                None => series.push(PlainSeries {
                    label: point.series.clone(),
                    points: vec![(point.x, point.y)],
                    dashed,
                }),
            }
        }
    }
    // A log axis cannot draw 0 (a warm read that never blocked): such
    // points stay in seeds.md's table and leave the chart, which says so.
    let mut zeros_left_out = false;
    if exhibit.axes.log_y {
        for line in &mut series {
            let before = line.points.len();
            line.points.retain(|p| p.1 > 0.0);
            zeros_left_out |= line.points.len() < before;
        }
        series.retain(|s| !s.points.is_empty());
    }
    // One x for every point (one size): a category per series instead,
    // so that equal values side by side do not hide each other.
    let mut categories = categories(exhibit.axes.x);
    let first_x = series.first().and_then(|s| s.points.first()).map(|p| p.0);
    let one_x = series
        .iter()
        .flat_map(|s| &s.points)
        .all(|p| Some(p.0) == first_x);
    if one_x && categories.is_empty() && series.len() > 1 {
        categories = series.iter().map(|s| s.label.clone()).collect();
        for (index, line) in series.iter_mut().enumerate() {
            for point in &mut line.points {
                point.0 = index as f64;
            }
        }
    }
    let positive = |s: &PlainSeries| s.points.iter().all(|p| p.1 > 0.0);
    let chart = LineChart {
        title: exhibit.title.to_string(),
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
        log_y: exhibit.axes.log_y && series.iter().all(positive),
        categories,
        series,
        footer: format!(
            "dashed: the original's values as transcribed; solid: ours, measured now{}",
            if zeros_left_out {
                "; values of 0 are in the table only (a log axis cannot draw them)"
            } else {
                ""
            }
        ),
    };
    let path = out.join(format!("seeds-{}.svg", exhibit.id));
    write_line_chart(&path, &chart)?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeds::{find, Setup};
    use crate::thesis_bench::{ThesisOutcome, ThesisPoint};

    fn report(own: &OwnRuns) -> String {
        let out = tempfile::tempdir().unwrap();
        let exhibits = [find("flexio-4-21").unwrap()];
        let report = write_report(out.path(), &exhibits, &[], own, "a test").unwrap();
        std::fs::read_to_string(report.markdown).unwrap()
    }

    #[test]
    fn a_setup_that_could_not_run_as_designed_makes_a_full_exhibit_partial_and_says_why() {
        let point = ThesisPoint {
            series: "three hosts, B relays by splice (ours)".into(),
            x: 1.0,
            y: 50.0,
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
        assert!(
            md.contains("1 exhibits: 1 FULL, 0 PARTIAL, 0 NONE."),
            "{md}"
        );
        assert!(
            md.contains("| three hosts, B relays by splice (ours) | 1 | 50 |"),
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
            md.contains("1 exhibits: 0 FULL, 1 PARTIAL, 0 NONE."),
            "{md}"
        );
        assert!(
            md.contains("In this run: over loopback, one host (not root)."),
            "{md}"
        );
        assert!(
            md.starts_with("# The seeds") && md.contains(STATUS_RULE),
            "{md}"
        );
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
        let report = write_report(out.path(), &exhibits, &[], &own, "a test").unwrap();
        let md = std::fs::read_to_string(report.markdown).unwrap();
        assert!(md.contains("| warm, blocked (ours) | 1 | 0 |"), "{md}");
        let svg = std::fs::read_to_string(&report.charts[0]).unwrap();
        assert!(svg.contains("values of 0 are in the table only"), "{svg}");
        // Log ticks reach down to the 0.2 ms point: a linear axis up to
        // the original's 300 s would start at 0 and step by 50.
        assert!(svg.contains("\n0.001\n</text>"), "{svg}");
    }
}
