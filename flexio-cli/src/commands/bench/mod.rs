//! `flexio bench`: every mechanism beside the standard tools on data it
//! generates, interleaved, with the machine's limits; prints the plan, a
//! progress bar and a short verdict with the path of `report.md` (the
//! tables and what `auto` chose go there, and to the terminal with -v).

mod cache;
mod host;
mod hosts;
mod pace;
mod scenario;
mod schedule;
mod seeds;
mod server;
mod tree;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use flexio_bench::plan::{Plan, PlanOptions, Scenario};
use flexio_bench::runner::{self, RunOptions};

use crate::error::{Error, Result};
use crate::output::print_stdout;
use crate::profile_choice::ProfileChoice;
use crate::runs_progress::BarObserver;
use crate::values;

/// Arguments of `flexio bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// The quick matrix (about 2 minutes). The default.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The whole matrix (about 30 minutes) instead of the quick one.
    #[arg(long)]
    pub(crate) full: bool,
    /// Only this scenario (repeatable): file-to-file, file-to-file-durable,
    /// file-to-socket, socket-to-file, file-to-pipe, pipe-to-file, memory, parallel,
    /// meter (the limits always run with these); tree (many files, against
    /// cp -r, cp -a, rsync -a, tar | tar and xcp); server (`flexio serve`
    /// against nginx under wrk; with --quick a few seconds); schedule
    /// (Cue's k × t grid of `--schedule K,T` beside the meter); pace
    /// (`flexio copy --rate` over loopback: target against achieved rate);
    /// cache (the block cache: S.M.A.C.K.'s tables, hit costs, a hot set
    /// through a scan, `serve --cache`; --sizes are its file sizes);
    /// host-to-host (flexio serve + get over a veth pair against the rsync
    /// daemon, tar | nc, curl and aria2c from nginx and iperf3, then the OS
    /// project's Fig 5 and 6; its file is the first of --sizes, 1 GiB by
    /// default); hosts (root: N hosts as network namespaces, each link at
    /// one rate set by flexio: N shards against one client, N mirrors
    /// against one server, a chain of N against naive fan-out; --quick:
    /// N = 2 and 4, 4 MiB, well under a minute; else N = 2, 4, 8, the
    /// first of --sizes or 1 GiB at 64 MiB/s); seeds (the five documents'
    /// twenty exhibits, the original's values beside ours: seeds.md and a
    /// chart each; --quick in minutes).
    #[arg(long = "scenario", value_name = "NAME", value_parser = ScenarioArg::parse)]
    scenarios: Vec<ScenarioArg>,
    /// The tree scenario's trees at this fraction of their size (1 is
    /// issue 14's: 20 000 files in tree A).
    #[arg(long, default_value_t = 1.0, hide = true)]
    tree_scale: f64,
    /// The cache scenario's cache size; its hot-set reads scale with it.
    #[arg(long, value_parser = values::nonzero_size, default_value = "16MiB", hide = true)]
    cache_size: u64,
    /// How long each flow of the pace scenario lasts at its rate.
    #[arg(long, value_parser = values::seconds, default_value = "10", value_name = "SECONDS")]
    pace_seconds: f64,
    /// The pace scenario's rates.
    #[arg(long, value_delimiter = ',', value_name = "LIST", default_value = "10M,100M,1G", value_parser = values::rate)]
    pace_rates: Vec<flexio::pace::Rate>,
    /// Install missing peers before the run: xcp with `cargo install`
    /// (tree), aria2c with `apt-get` (host-to-host, root). Without it
    /// nothing is installed and a missing peer is reported as missing.
    #[arg(long)]
    install_peers: bool,
    /// The hosts scenario's host counts (2 to 8) [default: 2,4 with
    /// --quick, else 2,4,8].
    #[arg(long, value_delimiter = ',', value_name = "LIST", value_parser = clap::value_parser!(u32).range(2..=8))]
    hosts: Vec<u32>,
    /// The hosts scenario's rate of every link [default: 8M with --quick,
    /// else 64M].
    #[arg(long, value_name = "RATE", value_parser = values::nonzero_size)]
    hosts_rate: Option<u64>,
    /// The host-to-host scenario without the OS project's Fig 5 and Fig 6.
    #[arg(long)]
    no_figures: bool,
    /// The tree scenario with the page cache dropped before each run (root).
    #[arg(long)]
    cold: bool,
    /// Only these trees of the tree scenario: A, B, C, D, os-fig5-1,
    /// os-fig5-5, os-fig5-10 (the OS project's Fig 5 at 100 MiB),
    /// files-10000 [default: all].
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    trees: Vec<String>,
    /// The server scenario's client counts [default: 1,4,64,256].
    #[arg(long, value_delimiter = ',', value_name = "LIST", value_parser = clap::value_parser!(u32).range(1..=4096))]
    clients: Vec<u32>,
    /// The server scenario's large file (latency under load, fairness)
    /// [default: 1G].
    #[arg(long, value_name = "SIZE", value_parser = values::nonzero_size)]
    large: Option<u64>,
    /// The server scenario over TLS too with --quick (a full run always
    /// is): the cells under wrk over https, and the large file downloaded
    /// by `flexio get` and curl.
    #[arg(long)]
    with_tls: bool,
    /// These sizes instead of each scenario's own, e.g. `1G` or `1M,64M`.
    #[arg(long, value_name = "LIST", value_parser = values::nonzero_size, value_delimiter = ',')]
    sizes: Vec<u64>,
    /// Counted rounds per cell (after one warm-up round).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=values::MAX_RUNS as i64))]
    runs: u32,
    /// Only this exhibit of the seeds scenario (repeatable), e.g.
    /// cue-table-2, os-fig-7, smack-table-6: its cells, then seeds.md and
    /// its chart.
    #[arg(long = "exhibit", value_name = "NAME")]
    exhibits: Vec<String>,
    /// Where the temporary data goes (its file system is the one measured);
    /// removed afterwards.
    #[arg(long, default_value = ".")]
    pub(crate) dir: PathBuf,
    /// Where results.json, results.csv, the charts and report.md go.
    #[arg(long, default_value = "./flexio-report")]
    pub(crate) out: PathBuf,
    /// No progress bar.
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Print every table, every cell's verdict and what auto chose after
    /// the short verdict (else they are in report.md only).
    #[arg(long, short)]
    verbose: bool,
    /// With a tuned profile in force, `auto` consults it and runs beside
    /// `auto (built-in)`, which does not.
    #[command(flatten)]
    choice: ProfileChoice,
    /// The meter co-process (internal).
    #[arg(long, hide = true)]
    meter_child: bool,
}

/// A scenario of the bench's matrix, or one with its own runner.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ScenarioArg {
    Matrix(Scenario),
    Own(OwnScenario),
}

impl ScenarioArg {
    /// `--scenario NAME`: one with its own runner, or one of the matrix's.
    fn parse(text: &str) -> std::result::Result<ScenarioArg, String> {
        if let Some(own) = OwnScenario::ALL.into_iter().find(|s| s.name() == text) {
            return Ok(ScenarioArg::Own(own));
        }
        Scenario::from_name(text)
            .map(ScenarioArg::Matrix)
            .ok_or_else(|| {
                let names: Vec<_> = Scenario::ALL
                    .iter()
                    .map(|s| s.name())
                    .chain(OwnScenario::ALL.iter().map(|s| s.name()))
                    .collect();
                format!("unknown scenario {text:?}; known: {}", names.join(", "))
            })
    }
}

/// The scenarios that run on their own runner, not as cells of the matrix.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OwnScenario {
    Tree,
    Cache,
    Server,
    Schedule,
    Pace,
    HostToHost,
    Hosts,
    Seeds,
}

impl OwnScenario {
    const ALL: [OwnScenario; 8] = [
        OwnScenario::Tree,
        OwnScenario::Cache,
        OwnScenario::Server,
        OwnScenario::Schedule,
        OwnScenario::Pace,
        OwnScenario::HostToHost,
        OwnScenario::Hosts,
        OwnScenario::Seeds,
    ];

    /// The name `--scenario` takes.
    fn name(self) -> &'static str {
        match self {
            OwnScenario::Tree => "tree",
            OwnScenario::Cache => "cache",
            OwnScenario::Server => "server",
            OwnScenario::Schedule => "schedule",
            OwnScenario::Pace => "pace",
            OwnScenario::HostToHost => "host-to-host",
            OwnScenario::Hosts => "hosts",
            OwnScenario::Seeds => "seeds",
        }
    }

    /// Runs this scenario on its own runner, with its report files.
    fn run(self, args: &BenchArgs) -> Result<()> {
        match self {
            OwnScenario::Tree => tree::run(
                &args.dir,
                &args.out,
                args.runs,
                args.tree_scale,
                args.cold,
                &args.trees,
                args.install_peers,
            ),
            OwnScenario::Cache => cache::run(
                &args.dir,
                &args.out,
                args.runs,
                &args.sizes,
                args.cache_size,
            ),
            OwnScenario::Server => server::run(&server::ServerArgs {
                dir: &args.dir,
                out: &args.out,
                runs: args.runs,
                quick: args.quick,
                clients: &args.clients,
                sizes: &args.sizes,
                large: args.large,
                with_tls: args.with_tls,
            }),
            // The meter child is started with the bench's own arguments.
            OwnScenario::Schedule if args.meter_child => Ok(()),
            OwnScenario::Schedule => {
                schedule::run(&args.dir, &args.out, args.runs, args.quick, &args.sizes)
            }
            OwnScenario::Pace => {
                pace::run(&args.dir, &args.out, &args.pace_rates, args.pace_seconds)
            }
            OwnScenario::HostToHost => host::run(&host::HostArgs {
                dir: &args.dir,
                out: &args.out,
                runs: args.runs,
                file_bytes: args.sizes.first().copied().unwrap_or(1 << 30),
                tree_scale: args.tree_scale,
                install: args.install_peers,
                figures: !args.no_figures,
            }),
            OwnScenario::Hosts => hosts::run(&hosts::HostsArgs {
                dir: &args.dir,
                out: &args.out,
                runs: args.runs,
                quick: args.quick,
                bytes: args.sizes.first().copied(),
                counts: &args.hosts,
                rate: args.hosts_rate,
            }),
            OwnScenario::Seeds => seeds::run(
                &seeds::SeedsArgs {
                    dir: &args.dir,
                    out: &args.out,
                    quick: !args.full,
                    quiet: args.quiet,
                    options: run_options(args, None),
                },
                &args.exhibits,
            ),
        }
    }
}

/// Runs `flexio bench`: the scenarios with their own runners first, then
/// the matrix's (all of it when no scenario is named).
pub fn run(args: BenchArgs) -> Result<()> {
    // The documents' tables printed beside the scenarios that repeat them.
    flexio_seeds::register();
    for own in OwnScenario::ALL {
        // `--exhibit` alone asks for those exhibits of the seeds.
        let exhibits = own == OwnScenario::Seeds && !args.exhibits.is_empty();
        if exhibits || args.scenarios.contains(&ScenarioArg::Own(own)) {
            own.run(&args)?;
        }
    }
    let matrix: Vec<Scenario> = args
        .scenarios
        .iter()
        .filter_map(|s| match s {
            ScenarioArg::Matrix(scenario) => Some(*scenario),
            ScenarioArg::Own(_) => None,
        })
        .collect();
    if (!args.scenarios.is_empty() || !args.exhibits.is_empty()) && matrix.is_empty() {
        return Ok(());
    }
    if args.meter_child {
        flexio_bench::meter::child_main();
        return Ok(());
    }
    run_matrix(&args, matrix)
}

/// Runs the matrix's scenarios (`matrix`; all when empty) and writes the
/// report.
fn run_matrix(args: &BenchArgs, matrix: Vec<Scenario>) -> Result<()> {
    let started = Instant::now();
    let root = runner::is_root();
    let profile = args.choice.load_for_auto();
    let plan = Plan::build(&PlanOptions {
        full: args.full,
        scenarios: matrix.clone(),
        sizes: (!args.sizes.is_empty()).then(|| args.sizes.clone()),
        // Namespaces are made only when asked for more than the quick run.
        veth: root && (args.full || !matrix.is_empty()),
        auto_builtin: profile.is_some(),
    });
    let options = run_options(args, profile);
    eprintln!(
        "flexio bench ({}) in {}:\n{}",
        if args.full { "full" } else { "quick" },
        args.dir.display(),
        plan.describe(options.warmups, options.rounds)
    );
    let mut observer = BarObserver::new(args.quiet);
    let results = runner::run(&plan, &options, &mut observer)
        .map_err(|e| Error::io("bench", &args.dir, e))?;
    observer.finish();
    report(args, &results, started)
}

/// How the matrix runs: rounds, the profile `auto` consults, this very
/// executable as `flexio copy` and as the meter.
pub(crate) fn run_options(
    args: &BenchArgs,
    profile: Option<flexio::profile::Profile>,
) -> RunOptions {
    let mut options = RunOptions::new(&args.dir);
    match &profile {
        Some(_) => eprintln!(
            "auto consults {}; auto (built-in) runs beside it without",
            args.choice.path().display()
        ),
        None => eprintln!("no tuned profile in force: auto uses the built-in table"),
    }
    options.profile = profile;
    options.rounds = args.runs;
    options.command_line = std::env::args().collect::<Vec<_>>().join(" ");
    // `flexio copy` runs as a process beside every peer: this very
    // executable, so the bench times the flexio it is part of.
    options.flexio_exe = std::env::current_exe().ok();
    options.meter_command = std::env::current_exe().ok().map(|exe| {
        vec![
            exe.into_os_string(),
            OsString::from("bench"),
            OsString::from("--meter-child"),
        ]
    });
    options
}

/// Writes the report files, then prints the short verdict and where the
/// report is; with `-v`, the tables, every cell's verdict and what `auto`
/// chose after it.
fn report(
    args: &BenchArgs,
    results: &flexio_bench::model::Results,
    started: Instant,
) -> Result<()> {
    let summaries = flexio_bench::stats::summarize(results);
    let paths = flexio_bench::output::write_all(&args.out, results)
        .map_err(|e| Error::io("write report", &args.out, e))?;
    let report_md = paths
        .iter()
        .find(|path| path.ends_with("report.md"))
        .cloned()
        .unwrap_or_else(|| args.out.join("report.md"));
    let mut text = String::from("== verdict ==\n");
    for line in flexio_bench::table::short_verdict(results, &summaries) {
        text += &format!("{line}\n");
    }
    text += &format!(
        "full report: {} (tables, every cell, charts{}); {} runs in {:.0} s\n",
        report_md.display(),
        if args.verbose {
            ""
        } else {
            "; -v prints them here"
        },
        results.runs.len(),
        started.elapsed().as_secs_f64(),
    );
    if args.verbose {
        text += "\n";
        text += &flexio_bench::table::render(results, &summaries);
        for line in runner::auto_choices(results) {
            text += &format!("{line}\n");
        }
        for path in &paths {
            text += &format!("wrote {}\n", path.display());
        }
    }
    print_stdout(&text);
    Ok(())
}
