//! The `tree` scenario's charts: each contender's throughput on each tree
//! and file system, in files per second (`tree-files.svg`) and in bytes
//! per second (`tree-bytes.svg`).

use std::io;
use std::path::{Path, PathBuf};

use crate::report::charts::plain::{write_line_chart, LineChart, PlainSeries};

use super::TreeTiming;

/// Writes both charts into `out`; returns their paths.
///
/// # Errors
/// No timing to draw, or a file cannot be written.
pub fn write_tree_charts(
    out: &Path,
    timings: &[TreeTiming],
    footer: &str,
) -> io::Result<Vec<PathBuf>> {
    let mut groups: Vec<(String, String)> = Vec::new();
    for timing in timings {
        let group = (timing.tree.clone(), timing.file_system.clone());
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    let mut contenders: Vec<String> = Vec::new();
    for timing in timings {
        if !contenders.contains(&timing.contender) {
            contenders.push(timing.contender.clone());
        }
    }
    let categories: Vec<String> = groups
        .iter()
        .map(|(tree, file_system)| format!("{tree} ({file_system})"))
        .collect();
    let mut written = Vec::new();
    for (file, quantity, per_run) in [
        (
            "tree-files.svg",
            "files/s",
            (|t: &TreeTiming| t.files as f64) as fn(&TreeTiming) -> f64,
        ),
        ("tree-bytes.svg", "MiB/s", |t: &TreeTiming| {
            t.bytes as f64 / f64::from(1 << 20)
        }),
    ] {
        let series = contenders
            .iter()
            .map(|contender| PlainSeries {
                label: contender.clone(),
                points: groups
                    .iter()
                    .enumerate()
                    .filter_map(|(x, (tree, file_system))| {
                        let timing = timings.iter().find(|t| {
                            &t.contender == contender
                                && &t.tree == tree
                                && &t.file_system == file_system
                                && !t.seconds.is_empty()
                        })?;
                        Some((x as f64, per_run(timing) / timing.median()))
                    })
                    .collect(),
                dashed: !contender.starts_with("flexio"),
            })
            .filter(|series| !series.points.is_empty())
            .collect();
        let path = out.join(file);
        write_line_chart(
            &path,
            &LineChart {
                x_sizes: false,
                title: format!("tree copies: {quantity} by contender and tree (medians)"),
                x_desc: "tree (file system)".into(),
                y_desc: format!("{quantity} (log scale)"),
                log_x: false,
                log_y: true,
                categories: categories.clone(),
                series,
                footer: footer.to_string(),
                whiskers: Vec::new(),
                markers_only: false,
            },
        )?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(tree: &str, contender: &str, files: u64, seconds: f64) -> TreeTiming {
        TreeTiming {
            tree: tree.into(),
            file_system: "ram-ext4".into(),
            contender: contender.into(),
            files,
            bytes: files * 4096,
            seconds: vec![seconds, seconds * 1.1, seconds * 0.9],
            verified: true,
        }
    }

    #[test]
    fn both_charts_name_every_contender_and_tree() {
        let dir = tempfile::tempdir().unwrap();
        let timings = [
            timing("A", "flexio copy -r", 20_000, 0.3),
            timing("A", "cp -r", 20_000, 0.55),
            timing("B", "flexio copy -r", 1_000, 0.4),
            timing("B", "cp -r", 1_000, 0.5),
        ];
        let written = write_tree_charts(dir.path(), &timings, "test machine").unwrap();
        assert_eq!(written.len(), 2);
        for path in written {
            let svg = std::fs::read_to_string(&path).unwrap();
            assert!(svg.starts_with("<svg"), "{}", path.display());
            for words in [
                "flexio copy -r",
                "cp -r",
                "A (ram-ext4)",
                "B (ram-ext4)",
                "test machine",
            ] {
                assert!(svg.contains(words), "{} has no {words:?}", path.display());
            }
        }
    }

    #[test]
    fn no_timing_is_an_error_not_an_empty_chart() {
        let dir = tempfile::tempdir().unwrap();
        assert!(write_tree_charts(dir.path(), &[], "").is_err());
    }
}
