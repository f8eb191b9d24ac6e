//! `flexio bench --scenario hosts`: shards, mirrors and a chain across N
//! network namespaces (see [`flexio_bench::hosts_bench`]). A table on
//! stdout, `hosts.json`, `hosts.md` and `hosts.svg` in the output
//! directory. SIGINT/SIGTERM stop it after the current group; the
//! namespaces, servers and data are removed either way.

use std::path::Path;

use flexio_bench::hosts_bench::{self, HostsOptions};

use crate::error::{Error, Result};

/// How the scenario is run (from `flexio bench`'s arguments).
pub struct HostsArgs<'a> {
    /// Where the data and copies go (a new directory inside is removed).
    pub dir: &'a Path,
    /// Where the outputs go.
    pub out: &'a Path,
    /// Timed rounds per contender.
    pub runs: u32,
    /// The quick size: N = 2 and 4, 4 MiB at 8 MiB/s, 2 rounds.
    pub quick: bool,
    /// Bytes per transfer (the first of --sizes), instead of the size's own.
    pub bytes: Option<u64>,
    /// Host counts, instead of the size's own.
    pub counts: &'a [u32],
    /// Every link's rate, instead of the size's own.
    pub rate: Option<u64>,
}

/// Runs the scenario into `args.out`.
///
/// # Errors
/// Not root, the namespaces or servers cannot be made, a signal stopped
/// it, or the outputs cannot be written.
pub fn run(args: &HostsArgs<'_>) -> Result<()> {
    let stop = crate::signals::stop_on_signals();
    let (counts, bytes, rate, runs) = if args.quick {
        (vec![2, 4], 4 << 20, 8 << 20, args.runs.min(2))
    } else {
        (vec![2, 4, 8], 1 << 30, 64 << 20, args.runs)
    };
    let counts = if args.counts.is_empty() {
        counts
    } else {
        args.counts.iter().map(|&n| n as usize).collect()
    };
    let work = args
        .dir
        .join(format!(".flexio-hosts-bench-{}", std::process::id()));
    let work = std::path::absolute(&work).map_err(|e| Error::io("absolute", &work, e))?;
    let options = HostsOptions {
        dir: work.clone(),
        flexio: std::env::current_exe()
            .map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?,
        counts,
        bytes: args.bytes.unwrap_or(bytes),
        rate: args.rate.unwrap_or(rate),
        runs: runs as usize,
        stop,
    };
    let result = hosts_bench::run(&options);
    let _ = std::fs::remove_dir_all(&work);
    let results = result.map_err(|e| Error::Usage(format!("bench --scenario hosts: {e}")))?;
    let mut text = hosts_bench::table(&results);
    text += &format!(
        "\n{} timed rounds per contender, rotated; every round's copies checked against the source; took {:.0} s\n",
        options.runs, results.seconds
    );
    crate::output::print_stdout(&text);
    std::fs::create_dir_all(args.out).map_err(|e| Error::io("mkdir", args.out, e))?;
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "schema_version": 1,
        "scenario": "hosts",
        "runs": options.runs,
        "ratios": options.counts.iter().map(|&n| {
            let [shards, mirrors, chain, naive] = hosts_bench::ratios(&results, n);
            serde_json::json!({"n": n, "shards_over_one": shards, "mirrors_over_one": mirrors,
                "chain_over_one_transfer": chain, "naive_over_one_transfer": naive})
        }).collect::<Vec<_>>(),
        "results": results,
    }))
    .expect("json");
    let write = |name: &str, bytes: &[u8]| {
        let path = args.out.join(name);
        flexio::write_file_replacing_regular(&path, bytes).map_err(|e| Error::io("write", &path, e))
    };
    write("hosts.json", &json)?;
    write(
        "hosts.md",
        format!("# flexio bench --scenario hosts\n\n```text\n{text}```\n").as_bytes(),
    )?;
    let chart = hosts_bench::write_chart(&results, args.out)
        .map_err(|e| Error::io("write chart", args.out, e))?;
    eprintln!(
        "wrote {}, {} and {}",
        args.out.join("hosts.json").display(),
        args.out.join("hosts.md").display(),
        chart.display()
    );
    Ok(())
}
