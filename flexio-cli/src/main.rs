//! `flexio`: the command line over the flexio library.
//!
//! Each subcommand lives in its own module; this file only parses the
//! arguments and maps errors to exit statuses (2 for usage, 1 at run time).
//!
//! The process enters at the C `main` below, not through Rust's runtime
//! shim: see [`flexio::prepare_process`] for what that saves (a tenth of
//! a small copy's whole time) and what it keeps.

// Tests build their own `main`.
#![cfg_attr(not(test), no_main)]
// ... and so have no entry point reaching the commands.
#![cfg_attr(test, allow(dead_code))]

mod bench;
mod bench_cache;
mod bench_host;
mod bench_pace;
mod bench_schedule;
mod bench_server;
mod bench_tree;
mod cache_cmd;
mod completions_cmd;
mod copy;
mod copy_output;
mod copy_tree;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod float_functions;
mod get_cmd;
mod json_document;
mod mechanisms;
mod plan;
mod profile_cmd;
mod progress;
mod put_cmd;
mod serve_cmd;
mod tls_args;
mod tune;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Move bytes between files, block devices, sockets and pipes with the
/// fewest copies, and report what really happened.
#[derive(Parser)]
#[command(name = "flexio", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Move bytes from a source to a sink with one mechanism.
    Copy(copy::CopyArgs),
    /// Measure every mechanism beside cp, dd, cat, socat, nc, iperf3 and the
    /// machine's limits, and write a report.
    Bench(bench::BenchArgs),
    Cache(cache_cmd::CacheArgs),
    /// Print which mechanism serves which (source kind, sink kind) pair.
    Mechanisms(mechanisms::MechanismsArgs),
    /// Print the mechanism `auto` would use for a flow, and why, without
    /// moving data.
    Plan(plan::PlanArgs),
    /// Show, validate, export, import or compare the tuned profile.
    Profile(profile_cmd::ProfileArgs),
    /// Measure every mechanism and its parameters per flow kind and size
    /// on this machine, and write the profile `auto` reads.
    Tune(tune::TuneArgs),
    /// Serve a directory read-only over HTTP/1.1 (sendfile bodies, ranges, ?manifest, ?tar).
    Serve(serve_cmd::ServeArgs),
    /// Fetch a file over HTTP/1.1, in parallel ranges when the server allows.
    Get(get_cmd::GetArgs),
    /// Upload a file to `flexio serve --token-file` over HTTP/1.1 (PUT).
    Put(put_cmd::PutArgs),
    /// Print the shell completion script for bash, zsh or fish.
    Completions(completions_cmd::CompletionsArgs),
    /// Print the man page, flexio(1), in roff.
    Man,
}

/// The C entry point. Arguments are read by `std::env::args_os`, which
/// glibc hands to the standard library before `main` runs.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> i32 {
    if let Err(error) = flexio::prepare_process() {
        eprintln!("flexio: preparing the process: {error}");
        return 1;
    }
    let status = run();
    // The runtime's shim would flush stdout at exit; nothing else will.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    status
}

fn run() -> i32 {
    let cli = parse_arguments();
    let result = match cli.command {
        Command::Copy(args) => {
            remove_temporaries_on_signals();
            copy::run(args)
        }
        Command::Bench(args) => bench::run(args),
        Command::Cache(args) => cache_cmd::run(args),
        Command::Mechanisms(args) => mechanisms::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Profile(args) => profile_cmd::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Get(args) => get_cmd::run(args),
        Command::Put(args) => put_cmd::run(args),
        Command::Completions(args) => completions_cmd::completions(args),
        Command::Man => completions_cmd::man(),
    };
    match result {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("flexio: {error}");
            exit_status(error.is_usage())
        }
    }
}

/// The exit status for an error: 2 for a flow described wrongly (bad
/// arguments, an unsupported pair, a file onto itself), 1 for a failure at
/// run time, as cp and dd.
pub(crate) fn exit_status(usage: bool) -> i32 {
    if usage {
        2
    } else {
        1
    }
}

/// On SIGINT, SIGTERM or SIGHUP: remove the temporary file and socket
/// file the flow made, and die of the signal (the shell reports 128 + its
/// number). Costs three `sigaction`s; no thread.
fn remove_temporaries_on_signals() {
    if let Err(error) = flexio::cleanup::remove_temporaries_on_signals() {
        eprintln!(
            "flexio: warning: cannot catch signals ({error}); an interrupted copy may leave its temporary file"
        );
    }
}

/// `Cli::parse()`, less freeing the parser: the argument tree of every
/// subcommand is some 30 000 instructions to drop, 5% of a small copy's
/// whole process, and the process ends soon after anyway.
fn parse_arguments() -> Cli {
    if let Some(copy) = parse_copy_alone() {
        return Cli {
            command: Command::Copy(copy),
        };
    }
    let mut command = Cli::command();
    let mut matches = command.get_matches_mut();
    let cli = Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|error| {
        error.format(&mut command).exit();
    });
    std::mem::forget(matches);
    std::mem::forget(command);
    cli
}

/// `flexio copy ...` parsed with only `copy`'s arguments built. clap builds
/// every subcommand's arguments before it parses (the bench's, the
/// server's, the cache's...): a fifth of a 4 KiB copy's instructions, for
/// the command whose small runs are its whole point. Anything but a clean
/// parse (help, a bad flag) returns `None` and goes the full way, so that
/// messages read the same.
fn parse_copy_alone() -> Option<copy::CopyArgs> {
    use clap::Args;
    if std::env::args_os()
        .nth(1)
        .is_none_or(|first| first != "copy")
    {
        return None;
    }
    let mut command = clap::Command::new("flexio")
        .subcommand(copy::CopyArgs::augment_args(clap::Command::new("copy")));
    let mut matches = command.try_get_matches_from_mut(std::env::args_os()).ok()?;
    let (_, sub) = matches.remove_subcommand()?;
    let mut sub = sub;
    let args = copy::CopyArgs::from_arg_matches_mut(&mut sub).ok();
    std::mem::forget(sub);
    std::mem::forget(command);
    args
}

/// Writes to stdout; a reader that went away (`flexio mechanisms | head`)
/// is not an error worth a panic.
pub(crate) fn print_stdout(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
