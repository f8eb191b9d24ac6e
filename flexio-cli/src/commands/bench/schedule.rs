//! `flexio bench --scenario schedule`: Cue's (k, t) grid beside the meter
//! (see [`flexio_bench::schedule_bench`]); a table on stdout and
//! `schedule.json`, `schedule.md` and the charts in the output directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use flexio_bench::schedule_bench::{self, ScheduleBenchOptions};

use crate::error::{Error, Result};

/// Runs the grid (`quick`: a few seconds) with `runs` counted rounds; the
/// first of `sizes`, when given, is the transfer's size.
pub fn run(dir: &Path, out: &Path, runs: u32, quick: bool, sizes: &[u64]) -> Result<()> {
    let exe =
        std::env::current_exe().map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?;
    let meter = vec![
        exe.into_os_string(),
        OsString::from("bench"),
        OsString::from("--meter-child"),
    ];
    let work = dir.join(format!(".flexio-schedule-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| Error::io("mkdir", &work, e))?;
    let mut options = if quick {
        ScheduleBenchOptions::quick(work.clone(), meter)
    } else {
        ScheduleBenchOptions::grid(work.clone(), meter, runs as usize)
    };
    if let Some(&size) = sizes.first() {
        options.size = size;
    }
    eprintln!(
        "flexio bench --scenario schedule: {} schedules × {} mechanisms, {} round(s) after a warm-up",
        options.schedules().len(),
        options.mechanisms.len(),
        options.rounds
    );
    let result = schedule_bench::run(&options, &mut |line| eprintln!("  {line}"));
    let _ = std::fs::remove_dir_all(&work);
    let runs = result.map_err(|e| Error::io("bench schedule", &work, e))?;
    let summaries = schedule_bench::summarize(&runs);
    let text = schedule_bench::table(&summaries, options.size, options.chunk);
    crate::output::print_stdout(&text);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    std::fs::create_dir_all(out).map_err(|e| Error::io("mkdir", out, e))?;
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf> {
        let path = out.join(name);
        flexio::write_file_replacing_regular(&path, bytes)
            .map_err(|e| Error::io("write", &path, e))?;
        Ok(path)
    };
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "schema_version": 1,
        "scenario": "schedule",
        "command": command,
        "size": options.size,
        "chunk": options.chunk,
        "runs": runs,
        "summary": summaries,
    }))
    .expect("json");
    let mut paths = vec![
        write("schedule.json", &json)?,
        write(
            "schedule.md",
            format!("# flexio bench --scenario schedule\n\n`{command}`\n\n```text\n{text}```\n")
                .as_bytes(),
        )?,
    ];
    paths.extend(
        schedule_bench::write_charts(out, &summaries, &command)
            .map_err(|e| Error::io("write chart", out, e))?,
    );
    for path in paths {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
