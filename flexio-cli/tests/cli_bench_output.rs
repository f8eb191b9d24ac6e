//! `flexio bench` prints a short verdict first, with the path of
//! `report.md`; the tables go to the report, and to the terminal with -v.

use crate::common;

fn bench(extra: &[&str]) -> (String, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = common::flexio()
        .args([
            "bench",
            "--scenario",
            "file-to-file",
            "--sizes",
            "64K",
            "--runs",
            "1",
            "-q",
        ])
        .args(extra)
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", common::stderr(&output));
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        out,
        dir,
    )
}

#[test]
fn the_verdict_comes_first_and_the_tables_go_to_the_report() {
    let (stdout, out, _dir) = bench(&[]);
    let report = out.join("report.md");
    assert!(stdout.starts_with("== verdict ==\n"), "{stdout}");
    assert!(stdout.contains(&report.display().to_string()), "{stdout}");
    assert!(stdout.lines().count() <= 8, "{stdout}");
    assert!(
        stdout.contains("flexio copy against the fastest peer"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(report).unwrap();
    // Tables carry rates; the verdict carries ratios only.
    assert!(md.contains("/s"), "the tables are in the report:\n{md}");
    assert!(!stdout.contains("/s"), "{stdout}");
}

#[test]
fn verbose_prints_the_tables_after_the_verdict() {
    let (stdout, _out, _dir) = bench(&["-v"]);
    assert!(stdout.starts_with("== verdict ==\n"), "{stdout}");
    let (verdict, rest) = stdout.split_once("\n\n").unwrap();
    assert!(verdict.lines().count() <= 8, "{verdict}");
    assert!(rest.contains("== verdicts =="), "{rest}");
    assert!(rest.contains("/s") && rest.lines().count() > 10, "{rest}");
}
