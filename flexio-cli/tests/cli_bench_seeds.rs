//! `flexio bench --exhibit NAME` runs that exhibit's cells and writes
//! seeds.md with the original's values beside ours and a chart.

use crate::common;

use common::{flexio, run_exhibits, stderr};

/// The y of seeds.md's row `| series | x | y |`, where there is one.
fn row_value(md: &str, series: &str, x: &str) -> Option<f64> {
    md.lines()
        .find(|l| l.starts_with(&format!("| {series} | {x} |")))
        .map(|l| l.split('|').nth(3).unwrap().trim().parse().unwrap())
}

#[test]
fn an_exhibit_alone_writes_seeds_md_with_the_original_beside_ours_and_a_chart() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let common::ExhibitRun { output, md, .. } =
        run_exhibits(dir.path(), &["tpil-fig-2-3", "tpil-fig-4-5"]);
    // The grades table: the host half measured, the DMA half a listed
    // gap (PARTIAL, saying so); the device exhibit NONE.
    assert!(
        md.contains("2 exhibits: 0 FULL, 1 PARTIAL, 0 CEILING, 1 NONE."),
        "{md}"
    );
    assert!(
        md.contains("| tpil-fig-2-3 |") && md.contains("gap: the DMA half"),
        "{md}"
    );
    assert!(
        md.contains("| tpil-fig-4-5 |") && md.contains("| NONE |"),
        "{md}"
    );
    assert!(!md.contains("no result"), "{md}");
    // The original's value as transcribed, and ours measured now: memcpy
    // at every size of the quick run, a positive rate each.
    assert!(
        md.contains("| RC-1000 PIO, steady above 2 KB (text) | 2048 | 30 |"),
        "{md}"
    );
    let ours: Vec<f64> = md
        .lines()
        .filter(|l| l.starts_with("| memcpy (ours) |"))
        .map(|l| l.split('|').nth(3).unwrap().trim().parse().unwrap())
        .collect();
    assert_eq!(ours.len(), 7, "{md}");
    assert!(ours.iter().all(|rate| *rate > 0.0), "{ours:?}");
    // Every copy kernel this CPU has, in the flow, at every size; the
    // device half said to wait for a GPU in the section.
    for kernel in flexio::CopyKernel::available() {
        let row = format!("| flexio memory flow, {kernel} (ours) |");
        let rows = md.lines().filter(|l| l.starts_with(&row)).count();
        assert_eq!(rows, 7, "{kernel}: {md}");
    }
    assert!(md.contains("Copy kernels"), "{md}");
    assert!(md.contains("waits for a machine with a GPU"), "{md}");
    assert!(
        md.contains("crossover") || md.contains("half of memcpy"),
        "{md}"
    );
    // A device exhibit: the values its text states, and what would run it.
    assert!(
        md.contains("| P4 64-bit PCI, MMX/SSE plateau above 512 B (text) | 512 | 53 |"),
        "{md}"
    );
    assert!(md.contains("it would run on a machine with a GPU"), "{md}");
    let svg = std::fs::read_to_string(out.join("seeds-tpil-fig-2-3.svg")).unwrap();
    assert!(svg.contains("RC-1000 PIO") && svg.contains("memcpy (ours)"));
    // A chart of the original's values alone where ours has none.
    assert!(out.join("seeds-tpil-fig-4-5.svg").is_file());
    // Only the exhibits' cells ran: no matrix after them.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("file-to-file"), "{stdout}");
}

#[test]
fn an_unknown_exhibit_is_refused_with_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let output = flexio()
        .args(["bench", "--exhibit", "nope", "--dir"])
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = stderr(&output);
    assert!(
        text.contains("unknown exhibit") && text.contains("cue-table-2"),
        "{text}"
    );
    assert!(!dir.path().join("out/seeds.md").exists());
}

/// Tables 1, 2, 3 and 6 in one run: they share the disk-bound pair on the
/// throttled device (over a minute at 256 KiB/s), which a run makes once.
///
/// Run beside the other slow exhibits by `cli_side_by_side`.
pub(crate) fn cue_tables_1_2_3_and_6_run_cues_schedules_warm_and_disk_bound_at_an_equal_rate() {
    let dir = tempfile::tempdir().unwrap();
    let common::ExhibitRun { md, .. } = run_exhibits(
        dir.path(),
        &["cue-table-1", "cue-table-2", "cue-table-3", "cue-table-6"],
    );
    // Series of the same name are in several tables: each checks its own.
    let table_1 = section(&md, "cue-table-1");
    table_1_pauses_are_voluntary_switches(dir.path(), &md, table_1);
    tables_2_3_and_6_run_both_transfers_disk_bound_at_an_equal_rate(&md.replace(table_1, ""));
}

/// The part of seeds.md under exhibit `id`'s heading, up to the next.
fn section<'a>(md: &'a str, id: &str) -> &'a str {
    let heading = format!("\n## {id}:");
    let start = md.find(&heading).unwrap_or_else(|| panic!("no {id}: {md}")) + 1;
    let end = md[start..]
        .find("\n## ")
        .map_or(md.len(), |n| start + n + 1);
    &md[start..end]
}

fn table_1_pauses_are_voluntary_switches(dir: &std::path::Path, md: &str, rows: &str) {
    let root = rustix::process::geteuid().is_root();
    // No gap: the warm rows, of one round here, keep it PARTIAL, and
    // without root the disk-bound pair says why it did not run.
    let row = md
        .lines()
        .find(|l| l.starts_with("| cue-table-1 |"))
        .unwrap_or_else(|| panic!("no grade row: {md}"));
    assert!(
        row.contains("| PARTIAL |") && row.contains("fewer than 3 rounds"),
        "{row}"
    );
    assert!(!row.contains("gap:"), "{row}");
    assert!(!md.contains("no result"), "{md}");
    // Rows are `| series | x | y |`; x 0 is voluntary switches per MB.
    let at = |series: &str, x: &str| -> f64 {
        row_value(rows, series, x).unwrap_or_else(|| panic!("no {series} at {x}: {md}"))
    };
    // (3, 70 ms) in 8 KiB calls pauses after every 24 KiB: 42 sleeps in
    // the 1 MiB of the quick run, each a voluntary switch at least.
    let scheduled = at("sendfile k=3 t=70, 8 KiB (ours)", "0");
    assert!(
        scheduled >= 35.0,
        "{scheduled} voluntary switches per MB: {md}"
    );
    // Unpaced, the same 8 KiB calls block only when the socket is full.
    let unpaced = at("sendfile, 8 KiB, no schedule (ours)", "0");
    assert!(unpaced < scheduled, "{unpaced} against {scheduled}: {md}");
    assert!(dir.join("out/seeds-cue-table-1.svg").is_file());
    if !root {
        assert!(
            md.contains("setup: no throttled device (needs root for the throttled device)"),
            "{md}"
        );
        return;
    }
    // Cue's own comparison: both cold on the throttled device, where the
    // read-write loop waits on the disk too, so it sleeps (voluntary
    // switches) where the warm loop never does; the schedule still
    // pauses 42 times a MiB.
    assert!(
        md.contains("Cue's disk-bound pair: the files on ext4 on /dev/loop")
            && md.contains("throttled by blkio to 256 KiB/s each way")
            && md.contains("dd O_DIRECT measured"),
        "{md}"
    );
    let disk_user = at("read-write, 8 KiB, disk-bound (ours)", "0");
    let disk_cue = at("sendfile k=3 t=70, disk-bound (ours)", "0");
    assert!(disk_cue >= 35.0, "{disk_cue}: {md}");
    assert!(
        disk_user > at("read-write, 8 KiB, no schedule (ours)", "0"),
        "{md}"
    );
}

fn tables_2_3_and_6_run_both_transfers_disk_bound_at_an_equal_rate(md: &str) {
    assert!(!md.contains("gap: the baseline is a warm"), "{md}");
    // Table 2's five runs and Table 6's two-transfer row, drawn and
    // tabulated beside ours.
    assert!(!md.contains("per-run rows are not drawn"), "{md}");
    assert!(
        !md.contains("two-transfer row (wall, system, switches) is not drawn"),
        "{md}"
    );
    let runs = "| Cue k=3 t=70 / user, each run (Table 2) |";
    assert_eq!(md.matches(runs).count(), 15, "{md}");
    assert_eq!(
        row_value(md, "Cue k=4 t=16 (Tables 6-7)", "2"),
        Some(96.8),
        "{md}"
    );
    assert_eq!(
        row_value(md, "user driven (Tables 6-7)", "0"),
        Some(4.05),
        "{md}"
    );
    if !rustix::process::geteuid().is_root() {
        assert!(md.contains("needs root for the throttled device"), "{md}");
        return;
    }
    // Both wait on the 256 KiB/s disk: the schedule's wall time per MB
    // within a small factor of the loop's (warm, it is ~1000x). Where the
    // schedule's pauses and the disk's waits fall one after the other,
    // (3, 70 ms), whose pace alone is 343 KiB/s, takes 1 + 256/343 = 1.75
    // times the loop's time; a run beside other tests read 2.04.
    for cue in ["k=3 t=70", "k=4 t=70", "k=1 t=16", "k=1 t=20"] {
        let series = format!("sendfile {cue} / read-write, disk-bound (ours)");
        let wall = row_value(md, &series, "0").unwrap_or_else(|| panic!("{series}: {md}"));
        assert!((0.5..3.0).contains(&wall), "{series}: {wall}: {md}");
    }
    // Our rounds beside Table 2's runs: the wall ratio's spread.
    let wall = "| sendfile k=3 t=70 / read-write, disk-bound (ours) | 0 |";
    let line = md
        .lines()
        .find(|l| l.starts_with(wall))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(line.split('|').nth(4).unwrap().contains(" - "), "{line}");
    // 2-4 transfers at once (x 3-5), each at the disk's pace: 4 s a MiB
    // at 256 KiB/s, give or take the throttle's slice.
    for series in [
        "sendfile k=4 t=16, disk-bound (ours)",
        "read-write, 8 KiB, disk-bound (ours)",
    ] {
        for x in ["3", "4", "5"] {
            let s_per_mb = row_value(md, series, x).unwrap_or_else(|| panic!("{series}"));
            assert!((2.0..8.0).contains(&s_per_mb), "{series} at {x}: {md}");
        }
        // Table 6's row (x 0-2) for the two transfers: wall per MB moved
        // in all at the disk's pace; system time (a loop waiting on a
        // 256 KiB/s disk may spend less than the clock's tick); switches.
        let wall = row_value(md, series, "0").unwrap_or_else(|| panic!("{series}: {md}"));
        assert!((1.0..8.0).contains(&wall), "{series}: {wall}: {md}");
        let system = row_value(md, series, "1").unwrap_or_else(|| panic!("{series}: {md}"));
        assert!((0.0..1.0).contains(&system), "{series}: {system}: {md}");
        let switches = row_value(md, series, "2").unwrap_or_else(|| panic!("{series}: {md}"));
        assert!(switches > 0.0, "{series}: {switches}: {md}");
    }
}

/// Run beside the other slow exhibits by `cli_side_by_side`.
pub(crate) fn cue_table_8_runs_the_servers_behind_one_shared_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let common::ExhibitRun { md, .. } = run_exhibits(dir.path(), &["cue-table-8"]);
    // No gap and the setup ran: the matrix's rows, of one round here,
    // keep it PARTIAL.
    let row = md
        .lines()
        .find(|l| l.starts_with("| cue-table-8 |"))
        .unwrap();
    assert!(
        row.contains("| PARTIAL |") && row.contains("fewer than 3 rounds"),
        "{row}"
    );
    assert!(!row.contains("gap:") && !row.contains("setup:"), "{row}");
    assert!(
        md.contains("`flexio serve --rate-total 3145728` (one token bucket"),
        "{md}"
    );
    let at = |series: &str, clients: &str| {
        row_value(&md, series, clients).unwrap_or_else(|| panic!("no {series} x{clients}: {md}"))
    };
    // 3 MiB/s is 3072 KB/s: an unpaced server's one client has it all
    // (give or take a burst: ~3500 KB/s, ~128 KiB ahead of the bucket),
    // four clients share it. Fairly shared each gets ~800; the most their
    // median can reach is when the bucket serves them one after another,
    // the second done at (2 MiB - 128 KiB) / 3 MiB/s and the third at
    // (3 MiB - 128 KiB) / 3 MiB/s: (1638 + 1069) / 2 = 1353 KB/s. A
    // bucket per connection would give each four ~3500.
    for what in ["read-write", "sendfile"] {
        let series = format!("serve --via {what}, shared 3 MiB/s (ours)");
        let (one, four) = (at(&series, "1"), at(&series, "4"));
        assert!(one > 1500.0 && one < 4000.0, "{series}: {one} KB/s: {md}");
        assert!(four > 400.0 && four < 1360.0, "{series}: {four} KB/s: {md}");
    }
    // Four clients under (4, 70 ms) ask for 1.8 MB/s together, less than
    // the bucket: each keeps most of its one-client rate. Four under
    // (4, 16 ms) ask for 8 MB/s: they lose rate as they grow (fairly
    // shared, each keeps half of its 1.6 MB/s; served two at a time, the
    // median keeps 0.7 of it).
    let light = "serve --via sendfile k=4 t=70, shared 3 MiB/s (ours)";
    let kept_light = at(light, "4") / at(light, "1");
    assert!(kept_light > 0.9, "{md}");
    let heavy = "serve --via sendfile k=4 t=16, shared 3 MiB/s (ours)";
    assert!(at(heavy, "4") < 1360.0, "{md}");
    let kept_heavy = at(heavy, "4") / at(heavy, "1");
    assert!(
        kept_heavy < 0.75 * kept_light,
        "{kept_heavy} {kept_light}: {md}"
    );
    // Only `out` is left in the work directory.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// The loop devices whose backing file lies under `dir`.
fn loop_devices_over(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/sys/block").unwrap().flatten() {
        if let Ok(file) = std::fs::read_to_string(entry.path().join("loop/backing_file"))
            && file.starts_with(&*dir.to_string_lossy())
        {
            found.push(file.trim().to_string());
        }
    }
    found
}

/// Run beside the other slow exhibits by `cli_side_by_side`.
pub(crate) fn smack_tables_have_every_row_and_axis_and_leave_no_loop_device() {
    use flexio_seeds::smack_bench::{cached_series, raw, uncached_series, SIZES_MB};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let common::ExhibitRun { md, .. } = run_exhibits(
        dir.path(),
        &["smack-table-3", "smack-table-4", "smack-table-6"],
    );
    let root = rustix::process::geteuid().is_root();
    // No table lists a gap: each is PARTIAL by its one round (`--runs 1`
    // holds every setup to one), by its spread (which only a quiet machine
    // keeps within 50%) or, without root, by the device it could not make.
    for id in ["smack-table-3", "smack-table-4", "smack-table-6"] {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {id} |")))
            .unwrap_or_else(|| panic!("no grade row for {id}: {md}"));
        let reasons = row.rsplit('|').nth(1).unwrap().trim();
        let only_spread_or_root = reasons.split("; ").all(|reason| {
            reason.starts_with("spread over 50%")
                || reason.starts_with("fewer than 3 rounds")
                || (!root && reason.contains("root"))
        });
        assert!(
            row.contains("| FULL |") || (row.contains("| PARTIAL |") && only_spread_or_root),
            "{row}"
        );
    }
    let graded = ["FULL", "PARTIAL"].map(|grade| {
        md.lines()
            .filter(|l| l.starts_with("| smack-table-") && l.contains(&format!("| {grade} |")))
            .count()
    });
    assert_eq!(graded[0] + graded[1], 3, "{md}");
    assert!(
        md.contains(&format!(
            "3 exhibits: {} FULL, {} PARTIAL, 0 CEILING, 0 NONE.",
            graded[0], graded[1]
        )),
        "{md}"
    );
    if !root {
        // Table 6 needs a loop device, and says why.
        assert!(
            md.contains("a loop device (the raw read) needs root"),
            "{md}"
        );
    }
    // Every series of Tables 3 and 4-5 at every size of the original, a
    // figure each: `| series | x | y |`.
    let value = |series: &str, x: &str| row_value(&md, series, x);
    let series = uncached_series::ALL.iter().chain(&cached_series::ALL);
    for name in series {
        for mb in SIZES_MB {
            let y = value(name, &mb.to_string());
            assert!(y.is_some_and(|y| y >= 0.0), "{name} at {mb}: {md}");
        }
    }
    if root {
        for name in [raw::WALL, raw::BUSY, raw::BLOCKED] {
            for x in ["0", "1", "2"] {
                assert!(value(name, x).is_some(), "{name} at {x}: {md}");
            }
        }
    }
    for id in ["smack-table-3", "smack-table-4", "smack-table-6"] {
        assert!(out.join(format!("seeds-{id}.svg")).is_file(), "{id}");
    }
    assert_eq!(loop_devices_over(dir.path()), Vec::<String>::new());
    // Only `out` is left in the work directory.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
fn os_fig_4_measures_both_sample_inputs_in_all_four_combinations_of_master_and_slave() {
    let dir = tempfile::tempdir().unwrap();
    let common::ExhibitRun { output, md, .. } = run_exhibits(dir.path(), &["os-fig-4"]);
    // Every cell ran (the grade may still fall to a wide spread on a
    // loaded machine, which it then names).
    assert!(
        md.contains("| os-fig-4 |") && !md.contains("no result"),
        "{md}"
    );
    assert!(!md.contains("| NONE |"), "{md}");
    // Rows are `| series | x | y |`: x is the input in MB, y the time
    // relative to file I/O on both sides in the same input.
    for master in ["file I/O", "mmap"] {
        for slave in ["file I/O", "mmap"] {
            for input in ["0.02304", "11"] {
                let series = format!("{master} -> {slave} (ours)");
                let y = row_value(&md, &series, input)
                    .unwrap_or_else(|| panic!("no {series} at {input}: {md}"));
                assert!(y > 0.0 && y.is_finite(), "{series} at {input}: {y}");
            }
        }
    }
    assert!(
        md.contains("The original's mmap took 2.0x at 11 MB"),
        "{md}"
    );
    assert!(dir.path().join("out/seeds-os-fig-4.svg").is_file());
    // No pair failed (a file not byte-exact is a failure, dropped with a
    // note).
    let report = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(!report.contains("failed"), "{report}");
    assert!(!stderr(&output).contains("failed"));
}
