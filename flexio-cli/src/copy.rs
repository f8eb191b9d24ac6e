//! `flexio copy SRC DST`: one flow, and its report.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use clap::Args;
use flexio::{Address, Error, Flow, MechanismName, Params, Progress, Sink, Source};

use crate::progress::ProgressBarThread;

/// Arguments of `flexio copy`.
#[derive(Args)]
pub struct CopyArgs {
    /// Source: a file or block device path, `-` (stdin), `tcp://HOST:PORT`,
    /// `tcp-listen://ADDR:PORT`, `unix://PATH` or `unix-listen://PATH`.
    source: String,
    /// Sink: the same forms (`-` is stdout).
    sink: String,
    /// Mechanism: auto, read-write, mmap, sendfile, splice,
    /// copy-file-range, io-uring, direct.
    #[arg(long, default_value = "auto")]
    via: String,
    /// First source byte to move.
    #[arg(long, value_parser = size, default_value = "0")]
    offset: u64,
    /// Bytes to move (default: to the end of the source).
    #[arg(long, value_parser = size)]
    length: Option<u64>,
    /// First sink byte to write (block devices, or files with --in-place).
    #[arg(long, value_parser = size, default_value = "0")]
    seek: u64,
    /// Bytes per read, write, map window or request [default: 256K, or
    /// the profile's choice under auto].
    #[arg(long, value_parser = size)]
    chunk: Option<u64>,
    /// io_uring requests in flight [default: 32].
    #[arg(long)]
    queue_depth: Option<u32>,
    /// Pipe size for splice, clamped to /proc/sys/fs/pipe-max-size
    /// [default: 1M].
    #[arg(long, value_parser = size)]
    pipe_size: Option<u64>,
    /// O_DIRECT on the file side(s) (io-uring).
    #[arg(long)]
    direct: bool,
    #[command(flatten)]
    profile: crate::profile_cmd::ProfileChoice,
    /// Write into the existing destination file instead of replacing it.
    #[arg(long)]
    in_place: bool,
    /// fsync the destination (and its directory) before finishing.
    #[arg(long)]
    fsync: bool,
    /// Fail instead of falling back when the kernel refuses the mechanism.
    #[arg(long)]
    strict: bool,
    /// Hash source range and sink with BLAKE3 afterwards; fail on mismatch.
    #[arg(long)]
    verify: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
}

pub(crate) fn size(text: &str) -> Result<u64, String> {
    flexio::parse_size(text).map_err(|e| e.to_string())
}

/// Runs `flexio copy`.
pub fn run(args: CopyArgs) -> Result<(), Error> {
    let source_address = Address::parse(&args.source)?;
    let sink_address = Address::parse(&args.sink)?;
    let via = parse_via(&args.via, &source_address, &sink_address)?;
    let params = explicit_params(&args)?;
    let profile = (via == MechanismName::Auto)
        .then(|| args.profile.load_for_auto())
        .flatten();
    let report_to_stderr = sink_address == Address::Stdio;
    let progress = Arc::new(Progress::default());
    let mut flow = Flow::new(Source::Address(source_address), Sink::Address(sink_address))
        .via(via)
        .profile(profile.as_ref())
        .offset(args.offset)
        .seek(args.seek)
        .in_place(args.in_place)
        .fsync(args.fsync)
        .strict(args.strict)
        .verify(args.verify)
        .progress(Arc::clone(&progress))
        .on_listen(|address| eprintln!("flexio: listening on {address}"));
    if let Some(length) = args.length {
        flow = flow.length(length);
    }
    if let Some(params) = params {
        flow = flow.params(params);
    }
    let report = {
        let _bar = ProgressBarThread::start(progress, args.quiet);
        flow.run()?
    };
    if args.quiet {
        return Ok(());
    }
    let text = if args.json {
        serde_json::to_string_pretty(&report).expect("a report serializes") + "\n"
    } else {
        report.to_string()
    };
    if report_to_stderr {
        // The data went to stdout; keep the report out of it.
        if args.json || std::io::stderr().is_terminal() {
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
    } else {
        crate::print_stdout(&text);
    }
    Ok(())
}

/// The parameters given on the command line, if any was: they then hold
/// even when `auto` takes its mechanism from the profile.
fn explicit_params(args: &CopyArgs) -> Result<Option<Params>, Error> {
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
fn parse_via(text: &str, source: &Address, sink: &Address) -> Result<MechanismName, Error> {
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
            _ => error,
        }
    })
}
