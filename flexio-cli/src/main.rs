//! `flexio`: the command line over the flexio library.
//!
//! Each subcommand lives in its own module; this file only parses the
//! arguments and maps errors to exit statuses (2 for usage, 1 at run time).

mod bench;
mod copy;
mod copy_tree;
mod get_cmd;
mod mechanisms;
mod plan;
mod profile_cmd;
mod progress;
mod put_cmd;
mod serve_cmd;
mod tune;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Move bytes between files, block devices, sockets and pipes with the
/// fewest copies, and report what really happened.
#[derive(Parser)]
#[command(name = "flexio", version, about, propagate_version = true)]
struct Cli {
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Copy(args) => {
            remove_temporaries_on_signals();
            copy::run(args)
        }
        Command::Bench(args) => bench::run(args),
        Command::Mechanisms(args) => mechanisms::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Profile(args) => profile_cmd::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Get(args) => get_cmd::run(args),
        Command::Put(args) => put_cmd::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("flexio: {error}");
            ExitCode::from(error.exit_code() as u8)
        }
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

/// Writes to stdout; a reader that went away (`flexio mechanisms | head`)
/// is not an error worth a panic.
pub(crate) fn print_stdout(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
