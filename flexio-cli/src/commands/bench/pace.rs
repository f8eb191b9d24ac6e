//! `flexio bench --scenario pace`: `flexio copy --rate` over loopback at
//! each rate (see [`flexio_bench::pace_bench`]); a table on stdout and
//! `pace.json` / `pace.md` in the output directory.

use std::path::Path;
use std::time::Duration;

use flexio::pace::Rate;
use flexio_bench::pace_bench::{self, PaceBenchOptions};

use crate::error::{Error, Result};

/// Runs the scenario into `out`.
pub fn run(dir: &Path, out: &Path, rates: &[Rate], seconds: f64) -> Result<()> {
    let work = dir.join(format!(".flexio-pace-bench-{}", std::process::id()));
    let options = PaceBenchOptions {
        dir: work.clone(),
        flexio: std::env::current_exe()
            .map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?,
        rates: rates.iter().map(|rate| rate.bytes_per_second()).collect(),
        duration: Duration::from_secs_f64(seconds),
    };
    let result = pace_bench::run(&options);
    let _ = std::fs::remove_dir_all(&work);
    let results = result.map_err(|e| Error::Usage(e.to_string()))?;
    let text = format!(
        "{}\nflexio copy --rate R --via sendfile FILE → loopback for {seconds} s per rate; error: the receiver's rate against R; \"paced by\" is the sender's report: the kernel (SO_MAX_PACING_RATE) or flexio's token bucket\n",
        pace_bench::table(&results)
    );
    crate::output::print_stdout(&text);
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "schema_version": 1,
        "scenario": "pace",
        "seconds": seconds,
        "results": results,
    }))
    .expect("json");
    std::fs::create_dir_all(out).map_err(|e| Error::io("mkdir", out, e))?;
    for (name, bytes) in [
        ("pace.json", json),
        (
            "pace.md",
            format!("# flexio bench --scenario pace\n\n```text\n{text}```\n").into_bytes(),
        ),
    ] {
        let path = out.join(name);
        flexio::write_file_replacing_regular(&path, &bytes)
            .map_err(|e| Error::io("write", &path, e))?;
    }
    let command: Vec<String> = std::env::args().collect();
    let chart = pace_bench::write_chart(out, &results, &command.join(" "))
        .map_err(|e| Error::io("write chart", out, e))?;
    eprintln!(
        "wrote {}, {} and {}",
        out.join("pace.json").display(),
        out.join("pace.md").display(),
        chart.display()
    );
    Ok(())
}
