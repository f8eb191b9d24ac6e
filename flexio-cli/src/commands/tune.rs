//! `flexio tune`: measure every mechanism and its parameters per flow kind
//! and size on this machine, and write the profile `auto` reads.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use flexio::profile::default_profile_path;
use flexio_bench::harness::RunOptions;
use flexio_tune::load::{busy_warning, Load};
use flexio_tune::sweep::{self as tune, TunePlan};
use flexio_tune::tree::{tune_tree, TreeTunePlan};

use crate::error::{Error, Result};
use crate::output::print_stdout;
use crate::profile_table::render;
use crate::runs_progress::BarObserver;

/// Arguments of `flexio tune`.
#[derive(Args)]
pub struct TuneArgs {
    /// A short sweep: two chunk and pipe sizes, O_DIRECT for durable
    /// copies only, sizes 4 KiB to 64 MiB, six counted rounds, then the
    /// two fastest file-copy mechanisms and the built-in choice again as
    /// `flexio copy` processes at 256 MiB (durable copies at 1 GiB), then the tree copy's workers and
    /// small-file batch on 2 000 files of 4 KiB (at most a minute and a
    /// half on a 2-core machine). The default.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The whole sweep: 4 KiB to 1 GiB, chunks 64 KiB to 8 MiB, queue
    /// depths 4 to 64, pipe sizes 64 KiB to 1 MiB, O_DIRECT for every
    /// kind with a file side, five counted rounds; trees of 5 000 files.
    #[arg(long)]
    full: bool,
    /// Where the temporary data goes: its file system is the one tuned.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Where to write the profile (default: $FLEXIO_PROFILE, else
    /// $XDG_CONFIG_HOME/flexio/profile.toml, else ~/.config/flexio/profile.toml).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Also write the sweep's raw runs (results.json, results.csv, charts,
    /// report.md) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `flexio tune`.
pub fn run(args: TuneArgs) -> Result<()> {
    let started = Instant::now();
    let plan = if args.full {
        TunePlan::full()
    } else {
        TunePlan::quick()
    };
    let path = args.profile.clone().unwrap_or_else(default_profile_path);
    // Refused now rather than after a minute of measuring.
    flexio::check_file_replaceable(&path)
        .map_err(|error| Error::Usage(format!("{}: {error}", path.display())))?;
    eprintln!(
        "flexio tune ({}) in {}:\n{}",
        if args.full { "full" } else { "quick" },
        args.dir.display(),
        tune::describe(&plan)
    );
    // Others' share of the CPUs just before: a tune on a busy machine
    // measures that work as much as the mechanisms.
    let before = Load::over(Duration::from_millis(500));
    let mut warnings: Vec<String> = before
        .and_then(|load| busy_warning(load, "before the tune"))
        .into_iter()
        .collect();
    for warning in &warnings {
        eprintln!("{warning}");
    }
    let mut options = RunOptions::new(&args.dir);
    options.command_line = std::env::args().collect::<Vec<_>>().join(" ");
    // The second pass measures the leaders as `flexio copy` processes.
    options.flexio_exe = std::env::current_exe().ok();
    let mut observer = BarObserver::new(args.quiet);
    let tuned = tune::tune(&plan, &options, &mut observer).map_err(|source| Error::Io {
        op: "tune",
        endpoint: args.dir.display().to_string(),
        offset: None,
        source,
    })?;
    observer.finish();
    if tuned
        .results
        .notes
        .iter()
        .any(|n| n == flexio_bench::runner::STOPPED_EARLY)
    {
        return Err(Error::Usage(format!(
            "stopped before the sweep ended; {} left as it was",
            path.display()
        )));
    }
    let mut profile = tuned.profile;
    // The sweep's own warning is already among its notes.
    profile.notes.splice(0..0, warnings.iter().cloned());
    if let Some(warning) = tuned
        .during
        .and_then(|load| busy_warning(load, "during the sweep"))
    {
        warnings.push(warning);
    }
    let busy = !warnings.is_empty();
    if !tune_tree_settings(&args, busy, &mut profile, &mut observer) {
        return Err(Error::Usage(format!(
            "stopped before the tree settings were measured; {} left as it was",
            path.display()
        )));
    }
    profile
        .save_for_auto(&path)
        .map_err(|e| Error::Usage(e.to_string()))?;
    profile.path = Some(path.clone());
    let mut text = render(&profile);
    // The warnings close the output, once.
    for note in profile.notes.iter().filter(|n| !n.starts_with("warning:")) {
        text += &format!("note: {note}\n");
    }
    for warning in &warnings {
        text += &format!("{warning}\n");
    }
    text += &format!(
        "tune took {:.1} s ({} runs); wrote {}\n",
        started.elapsed().as_secs_f64(),
        tuned.results.runs.len(),
        path.display()
    );
    if let Some(out) = &args.out {
        let written =
            flexio_bench::output::write_all(out, &tuned.results).map_err(|source| Error::Io {
                op: "write report",
                endpoint: out.display().to_string(),
                offset: None,
                source,
            })?;
        for file in written {
            text += &format!("wrote {}\n", file.display());
        }
    }
    print_stdout(&text);
    Ok(())
}

/// Measures the tree-copy settings on the tuned directory's file system
/// and keeps them in `profile`; what cannot be measured becomes a note.
/// `false` when Ctrl-C stopped it (the profile is then not to be saved).
fn tune_tree_settings(
    args: &TuneArgs,
    busy: bool,
    profile: &mut flexio::profile::Profile,
    observer: &mut BarObserver,
) -> bool {
    let plan = TreeTunePlan {
        busy,
        ..if args.full {
            TreeTunePlan::full()
        } else {
            TreeTunePlan::quick()
        }
    };
    let Some(mount) = flexio::profile::Mount::containing(&args.dir) else {
        profile.notes.push(
            "tree: the tuned directory's file system is unknown; tree copies use the defaults"
                .into(),
        );
        return true;
    };
    let quiet = args.quiet;
    let mut say = |line: &str| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    let mut stop = || flexio_bench::runner::Observer::should_stop(observer);
    match tune_tree(&args.dir, &mount.fs_type, &plan, &mut say, &mut stop) {
        Ok(tree) => {
            profile.notes.extend(tree.notes);
            profile.set_tree_settings(tree.profile);
        }
        Err(flexio_tune::Error::Stopped) => return false,
        Err(error) => profile.notes.push(format!(
            "tree: not measured ({error}); tree copies use the defaults"
        )),
    }
    true
}
