//! `flexio copy SRC DST`: one flow, and its report; `flexio copy SRC...
//! DIR` and `flexio copy -r SRCDIR DST` go to [`tree`].

mod device;
mod summary;
mod tree;
mod tree_args;

use std::sync::Arc;

use clap::Args;
use flexio::{Address, Flow, MechanismName, Params, Progress, Sink, Source};

use crate::error::{Error, Result};
use crate::output::{document, print_err, print_out, Telling};
use crate::profile_choice::ProfileChoice;
use crate::progress::{ProgressBarThread, ProgressMode, CALL_LIMIT_WITH_PROGRESS};
use crate::values;
use summary::{flow_summary, listed};

/// Arguments of `flexio copy`.
#[derive(Args, Debug, Default, PartialEq)]
#[command(
    override_usage = "flexio copy [OPTIONS] SRC DST\n       flexio copy [OPTIONS] SRC... DIR\n       flexio copy -r [OPTIONS] SRCDIR DST"
)]
pub struct CopyArgs {
    /// Sources, then the sink. An endpoint is a file or block device path,
    /// `-` (stdin/stdout), `tcp://HOST:PORT`, `tcp-listen://ADDR:PORT`,
    /// `unix://PATH` or `unix-listen://PATH`; a sink may be GPU memory,
    /// `gpu:N[@OFFSET[+LEN]]` (a file named so is `./gpu:0`). As with cp, several sources
    /// (or one into an existing directory) go into the directory DST, and
    /// directories need -r.
    #[arg(num_args = 2.., value_name = "PATH", required = true)]
    pub(crate) paths: Vec<String>,
    #[command(flatten)]
    pub(crate) tree: tree_args::TreeArgs,
    /// Mechanism: auto, read-write, mmap, sendfile, splice,
    /// copy-file-range, io-uring, direct, send-zc (`flexio mechanisms`
    /// lists which serve which pair); into a GPU: auto, pageable, pinned,
    /// staged, registered.
    #[arg(long, default_value = AUTO)]
    pub(crate) via: String,
    /// First source byte to move.
    #[arg(long, value_parser = values::size, default_value_t = 0)]
    offset: u64,
    /// Bytes to move (default: to the end of the source).
    #[arg(long, value_parser = values::size)]
    length: Option<u64>,
    /// First sink byte to write (block devices, or files with --in-place).
    #[arg(long, value_parser = values::size, default_value_t = 0)]
    seek: u64,
    /// Bytes per read, write, map window or request [default: 256K, or
    /// the profile's choice under auto].
    #[arg(long, value_parser = values::size)]
    chunk: Option<u64>,
    /// io_uring requests in flight [default: 32].
    #[arg(long)]
    queue_depth: Option<u32>,
    /// Pipe size for splice, clamped to /proc/sys/fs/pipe-max-size
    /// [default: 1M].
    #[arg(long, value_parser = values::size)]
    pipe_size: Option<u64>,
    /// O_DIRECT on the file side(s) (io-uring).
    #[arg(long)]
    pub(crate) direct: bool,
    #[command(flatten)]
    pub(crate) profile: ProfileChoice,
    /// Write into the existing destination file instead of replacing it.
    #[arg(long)]
    in_place: bool,
    /// fsync the destination (and its directory) before finishing.
    #[arg(long)]
    pub(crate) fsync: bool,
    /// Fail instead of falling back when the kernel refuses the mechanism.
    #[arg(long)]
    pub(crate) strict: bool,
    /// Hash source range and sink with BLAKE3 afterwards; fail on mismatch.
    #[arg(long)]
    pub(crate) verify: bool,
    /// Fail when the flow makes no progress for this long (e.g. 30s, 500ms,
    /// 2m): a peer that sends nothing, a reader that reads nothing.
    #[arg(long, value_parser = values::duration)]
    idle_timeout: Option<std::time::Duration>,
    /// Fix SO_SNDBUF and SO_RCVBUF of the TCP end(s) at this size (e.g.
    /// 64K, 4M) instead of the kernel's autotuning; refused when the
    /// kernel would cap it (net.core.wmem_max without CAP_NET_ADMIN).
    #[arg(long, value_name = "SIZE", value_parser = values::size)]
    socket_buffer: Option<u64>,
    /// Move at most this many bytes per second: 10M, 512K/s, 1G (binary
    /// units), or bits spelled out: 100Mbit/s (decimal). A TCP sink is
    /// paced by flexio's token bucket (or the kernel with --pace-by
    /// kernel); the report says which and the rate achieved.
    #[arg(long, value_name = "RATE")]
    pub(crate) rate: Option<String>,
    /// The most bytes one call moves (with --rate: the bucket's depth)
    /// [default with --rate: 10 ms of the rate, 16K to 4M].
    #[arg(long, value_name = "BYTES")]
    pub(crate) burst: Option<String>,
    /// Cue's schedule K,T: move K chunks (calls of --burst, else --chunk
    /// bytes), then pause T ms; e.g. 8,5.
    #[arg(long, value_name = "K,T")]
    pub(crate) schedule: Option<String>,
    /// Who keeps --rate on a TCP sink: the kernel (SO_MAX_PACING_RATE) or
    /// the token bucket; auto is the bucket, which `flexio bench --scenario
    /// pace` measured keeping the rate where the kernel fell short.
    #[arg(long, value_name = "auto|kernel|bucket", default_value = AUTO)]
    pub(crate) pace_by: String,
    /// Print the report as JSON on stdout (on stderr when the data goes to
    /// stdout).
    #[arg(long)]
    pub(crate) json: bool,
    /// Print the full report on stderr: mechanism and why, fallbacks, CPU,
    /// system calls, context switches, faults, the source's page cache.
    /// Without it a copy says nothing unless stdout is a terminal, and
    /// then one line.
    #[arg(long, visible_alias = "stats")]
    pub(crate) report: bool,
    /// List what is copied, as `cp -v` does: `'SRC' -> 'DST'`.
    #[arg(long, short)]
    pub(crate) verbose: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Show progress: a bar on a terminal, else a line every 2 seconds on
    /// stderr [default: a bar when stderr is a terminal].
    #[arg(long, conflicts_with = "no_progress")]
    pub(crate) progress: bool,
    /// Never show progress.
    #[arg(long)]
    pub(crate) no_progress: bool,
}

/// The default of `--via` and `--pace-by`.
const AUTO: &str = "auto";

impl CopyArgs {
    /// `flexio copy SRC DST` with no option, as clap would parse it, without
    /// building clap's parser: building `copy`'s forty arguments costs a
    /// 4 KiB copy more than the copy itself (`docs/build.md`). `None` for
    /// anything else: an option, `-`, a third path, a name that is not
    /// UTF-8 — those go to clap, which parses them and words their errors.
    pub(crate) fn operands_only(arguments: &[std::ffi::OsString]) -> Option<CopyArgs> {
        let [_, command, source, sink] = arguments else {
            return None;
        };
        if command != "copy" {
            return None;
        }
        let operand = |argument: &std::ffi::OsString| {
            argument
                .to_str()
                .filter(|text| !text.is_empty() && !text.starts_with('-'))
                .map(str::to_owned)
        };
        Some(CopyArgs {
            paths: vec![operand(source)?, operand(sink)?],
            via: AUTO.to_owned(),
            pace_by: AUTO.to_owned(),
            ..CopyArgs::default()
        })
    }
}

/// Runs `flexio copy`: a tree copy ([`tree::is_tree_copy`]) or one flow,
/// either removing its temporary file when a signal ends it.
pub fn run(args: CopyArgs) -> Result<()> {
    crate::signals::remove_temporaries_on_signals("copy");
    if tree::is_tree_copy(&args) {
        tree::run(args)
    } else {
        run_flow(args)
    }
}

/// Runs one flow.
fn run_flow(args: CopyArgs) -> Result<()> {
    let [source, sink] = &args.paths[..] else {
        unreachable!("run sends every other count of paths to tree::run")
    };
    if flexio::device::DeviceAddress::parse(source)?.is_some() {
        return Err(Error::Usage(format!(
            "{source}: a GPU's memory as a source outlives no process; copy into gpu:N \
             (flexio::device::store_file writes it back from a program)"
        )));
    }
    if let Some(at) = flexio::device::DeviceAddress::parse(sink)? {
        return device::run(&args, source, at);
    }
    let source_address = Address::parse(source)?;
    let sink_address = Address::parse(sink)?;
    let via = parse_via(&args.via, &source_address, &sink_address)?;
    let params = explicit_params(&args)?;
    let pacing = flexio::pace::Pacing {
        by: args.pace_by.parse()?,
        ..flexio::pace::Pacing::parse(
            args.rate.as_deref(),
            args.burst.as_deref(),
            args.schedule.as_deref(),
        )?
    };
    let profile = (via == MechanismName::Auto)
        .then(|| args.profile.load_for_auto())
        .flatten();
    let data_on_stdout = sink_address == Address::Stdio;
    let telling = Telling::for_this_process(args.quiet, args.json, args.report);
    let progress = Arc::new(Progress::default());
    let progress_mode = ProgressMode::choose(args.progress, args.no_progress, args.quiet);
    let mut flow = Flow::new(Source::Address(source_address), Sink::Address(sink_address))
        .via(via)
        .profile(profile.as_ref())
        .offset(args.offset)
        .seek(args.seek)
        .in_place(args.in_place)
        .fsync(args.fsync)
        .strict(args.strict)
        .verify(args.verify)
        .measure(telling.shows_counters())
        .progress(Arc::clone(&progress))
        .pacing(pacing)
        .call_limit(match progress_mode {
            ProgressMode::Off => usize::MAX,
            _ => CALL_LIMIT_WITH_PROGRESS,
        })
        .on_listen(|address| eprintln!("flexio: listening on {address}"));
    if let Some(length) = args.length {
        flow = flow.length(length);
    }
    if let Some(params) = params {
        flow = flow.params(params);
    }
    if let Some(limit) = args.idle_timeout {
        flow = flow.idle_timeout(limit);
    }
    if let Some(bytes) = args.socket_buffer {
        flow = flow.socket_buffer(usize::try_from(bytes).unwrap_or(usize::MAX));
    }
    let report = {
        let _bar = ProgressBarThread::start(progress, progress_mode);
        flow.run()?
    };
    if args.verbose && !args.quiet {
        print_out(&listed(source, sink), data_on_stdout);
    }
    match telling {
        Telling::Nothing => {}
        Telling::Summary => print_err(&flow_summary(&report)),
        Telling::Report => print_err(&report.to_string()),
        Telling::Json => print_out(&document("flow", &report), data_on_stdout),
    }
    Ok(())
}

/// The parameters given on the command line, if any was: they then hold
/// even when `auto` takes its mechanism from the profile.
fn explicit_params(args: &CopyArgs) -> Result<Option<Params>> {
    if args.chunk.is_none()
        && args.queue_depth.is_none()
        && args.pipe_size.is_none()
        && !args.direct
    {
        return Ok(None);
    }
    let defaults = Params::default();
    // Out-of-range values (u64 past usize too) fail the library's bounds,
    // which name them: one set of bounds for flags and profiles alike.
    let to_usize = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
    let params = Params {
        chunk: args.chunk.map_or(defaults.chunk, to_usize),
        queue_depth: args.queue_depth.unwrap_or(defaults.queue_depth),
        pipe_size: args.pipe_size.map_or(defaults.pipe_size, to_usize),
        direct: args.direct,
        copy_kernel: defaults.copy_kernel,
    };
    params.validate().map_err(|error| {
        // `queue_depth 0 is below ...` names the flag: `--queue-depth 0 ...`.
        let text = error.to_string();
        let (name, rest) = text.split_once(' ').unwrap_or((&text, ""));
        Error::Usage(format!("--{} {rest}", name.replace('_', "-")))
    })?;
    Ok(Some(params))
}

/// Parses `--via`; an unknown name lists the mechanisms that serve the
/// pair when the endpoints' kinds can be told without opening them.
fn parse_via(text: &str, source: &Address, sink: &Address) -> Result<MechanismName> {
    text.parse::<MechanismName>().map_err(|error| {
        match (source.probe_kind(false), sink.probe_kind(true)) {
            (Some(from), Some(to)) => {
                let serving: Vec<_> = MechanismName::serving(from, to)
                    .iter()
                    .map(|m| m.as_str())
                    .collect();
                Error::Usage(format!(
                    "unknown mechanism {text:?}; for {from} -> {to} use auto, {}",
                    serving.join(", ")
                ))
            }
            _ => error.into(),
        }
    })
}
