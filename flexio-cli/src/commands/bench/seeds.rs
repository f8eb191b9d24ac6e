//! `flexio bench --scenario seeds` and `--exhibit NAME`: the exhibits'
//! cells run by the matrix's runner, then seeds.md and a chart each.

use std::time::Instant;

use flexio_bench::awake::CpusAwake;
use flexio_bench::runner;
use flexio_seeds::seeds::{self, Exhibit};

use std::path::Path;

use flexio_seeds::slow_device::SlowDevice;
use flexio_seeds::thesis_bench::ThesisOptions;

use crate::error::{Error, Result};
use crate::runs_progress::BarObserver;
use crate::signals::stop_on_signals;

/// What the seeds run takes from `flexio bench`'s arguments.
pub(crate) struct SeedsArgs<'a> {
    pub dir: &'a std::path::Path,
    pub out: &'a std::path::Path,
    /// `--quick` (everything but `--full`).
    pub quick: bool,
    pub quiet: bool,
    pub options: runner::RunOptions,
}

/// Runs the exhibits named by `--exhibit`, or all of them.
pub(crate) fn run(args: &SeedsArgs<'_>, names: &[String]) -> Result<()> {
    let exhibits: Vec<&Exhibit> = if names.is_empty() {
        seeds::catalogue().iter().collect()
    } else {
        names
            .iter()
            .map(|name| seeds::find(name).map_err(|e| Error::Usage(e.to_string())))
            .collect::<Result<_>>()?
    };
    let quick = args.quick;
    let started = Instant::now();
    // The whole run, matrix and setups: many of the exhibits time
    // transfers that wait and wake thousands of times, which on a virtual
    // machine would otherwise time the host's wake-ups.
    let awake = CpusAwake::hold();
    let plan = seeds::plan(&exhibits, quick);
    let mut results = None;
    let mut matrix_files = String::new();
    if !plan.cells.is_empty() {
        let (device, options) = matrix_place(args, &plan);
        matrix_files = match &device {
            Ok(device) => format!("; the matrix's files on {}", device.describe()),
            Err(why) => format!("; the matrix's files in {} ({why})", args.dir.display()),
        };
        let options = &options;
        eprintln!(
            "flexio bench seeds ({}), {} exhibits, in {}:\n{}",
            if quick { "quick" } else { "full" },
            exhibits.len(),
            args.dir.display(),
            plan.describe(options.warmups, options.rounds)
        );
        let mut observer = BarObserver::new(args.quiet);
        let ran = runner::run(&plan, options, &mut observer)
            .map_err(|e| Error::io("bench seeds", args.dir, e))?;
        observer.finish();
        results = Some(ran);
        drop(device);
    }
    let summaries = results
        .as_ref()
        .map(flexio_bench::stats::summarize)
        .unwrap_or_default();
    let own = run_own(args, &exhibits)?;
    let cpus = match &awake {
        Ok(_) => CpusAwake::describe().to_string(),
        Err(why) => format!(
            "the CPUs free to sleep when idle ({})",
            why.to_string().trim_start_matches("skipped: ")
        ),
    };
    drop(awake);
    let note = format!(
        "`{}`: {} run, {} exhibits, {:.0} s on {} CPUs{}{matrix_files}; {cpus}.",
        std::env::args().collect::<Vec<_>>().join(" "),
        if quick { "a quick" } else { "the full" },
        exhibits.len(),
        started.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if runner::is_root() { ", as root" } else { "" },
    );
    let out = args.out;
    let mut tail = String::new();
    if let Some(results) = &results {
        let paths = flexio_bench::output::write_all(out, results)
            .map_err(|e| Error::io("write report", out, e))?;
        for path in paths {
            tail += &format!("wrote {}\n", path.display());
        }
    }
    let report = seeds::write_report(out, &exhibits, &summaries, &own, quick, &note)
        .map_err(|e| Error::io("write seeds.md", out, e))?;
    for path in std::iter::once(&report.markdown).chain(&report.charts) {
        tail += &format!("wrote {}\n", path.display());
    }
    tail += &format!("seeds took {:.0} s\n", started.elapsed().as_secs_f64());
    crate::output::print_stdout(&tail);
    Ok(())
}

/// Room for the matrix's sources and sinks: the OS project's 250 MiB
/// (quick) or 1000 MiB in 1, 5 and 10 files, their copies and the rest.
const MATRIX_DEVICE: u64 = 6 << 30;

/// Where the matrix's files go: as root, where a cell is cold, a
/// RAM-backed ext4 (a loop device over tmpfs, not throttled), since this
/// machine's virtual disk served the same cold 250 MiB read in 0.22 to
/// 0.72 s from one round to the next; else `--dir`, with why.
fn matrix_place(
    args: &SeedsArgs<'_>,
    plan: &flexio_bench::plan::Plan,
) -> (std::result::Result<SlowDevice, String>, runner::RunOptions) {
    let mut options = args.options.clone();
    // The grades judge each point's spread: a cell whose rounds disagree
    // is measured a little more before it is judged.
    options.settle_spread = Some(flexio_seeds::thesis_bench::SPREAD_LIMIT);
    let cold = plan
        .cells
        .iter()
        .any(|c| c.key.cache == flexio_bench::model::CacheState::Cold);
    if !cold {
        return (Err("no cold cell".into()), options);
    }
    if !runner::is_root() {
        return (Err("a RAM-backed ext4 needs root".into()), options);
    }
    match SlowDevice::unthrottled("matrix", MATRIX_DEVICE) {
        Ok(device) => {
            options.dir = device.mount().to_path_buf();
            (Ok(device), options)
        }
        Err(why) => (Err(why.to_string()), options),
    }
}

/// The setups some exhibits run outside the matrix (a memory cgroup, a
/// socket-buffer sweep, a relay across network namespaces), in a
/// directory of their own under `--dir`, removed after.
fn run_own(args: &SeedsArgs<'_>, exhibits: &[&Exhibit]) -> Result<seeds::OwnRuns> {
    if !exhibits.iter().any(|e| seeds::has_setups(e)) {
        return Ok(seeds::OwnRuns::default());
    }
    let dir = args
        .dir
        .join(format!("flexio-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    let flexio = std::env::current_exe().map_err(|e| Error::io("find", Path::new("flexio"), e))?;
    let options = ThesisOptions {
        dir: dir.clone(),
        flexio,
        quick: args.quick,
        most_rounds: args.options.rounds as usize,
        stop: stop_on_signals(),
    };
    if !args.quiet {
        eprintln!(
            "flexio bench seeds: setups outside the matrix (FlexIO's cgroup, socket buffers, \
             relay; S.M.A.C.K.'s reads into memory)"
        );
    }
    let own = seeds::run_own(exhibits, &options);
    std::fs::remove_dir_all(&dir).map_err(|e| Error::io("remove", &dir, e))?;
    Ok(own)
}
