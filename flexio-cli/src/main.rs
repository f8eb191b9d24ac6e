//! `flexio`: the command line over the flexio library.
//!
//! Each subcommand lives in its own module under `commands/`, and none
//! imports another: what several share lives beside them, named for what
//! it is (`output`, `values`, `signals`, `progress`...). This file parses
//! the arguments, hands each subcommand its own, and is the one place that
//! prints an error and picks the exit status (2 for usage, 1 at run time;
//! see [`error::Error`]).

#![forbid(unsafe_code)]

mod cache_bench;
mod commands;
mod error;
mod output;
mod profile_choice;
mod profile_table;
mod progress;
mod runs_progress;
mod shard_args;
mod signals;
mod tls_args;
mod token;
mod transfer_output;
mod values;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use commands::{
    bench, cache, completions, copy, get, man, mechanisms, plan, profile, put, serve, tune,
};

/// Copy files and trees, and serve and fetch them over HTTP, with the
/// kernel's fewest-copy calls; report what really happened.
#[derive(Parser)]
#[command(name = "flexio", version, propagate_version = true)]
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
    Cache(cache::CacheArgs),
    /// Print which mechanism serves which (source kind, sink kind) pair.
    Mechanisms(mechanisms::MechanismsArgs),
    /// Print the mechanism `auto` would use for a flow, and why, without
    /// moving data.
    Plan(plan::PlanArgs),
    /// Show, validate, export, import or compare the tuned profile.
    Profile(profile::ProfileArgs),
    /// Measure every mechanism and its parameters per flow kind and size
    /// on this machine, and write the profile `auto` reads.
    Tune(tune::TuneArgs),
    /// Serve a directory read-only over HTTP/1.1 (sendfile bodies, ranges, ?manifest, ?tar).
    Serve(serve::ServeArgs),
    /// Fetch a file over HTTP/1.1, in parallel ranges when the server allows.
    Get(get::GetArgs),
    /// Upload a file to `flexio serve --token-file` over HTTP/1.1 (PUT).
    Put(put::PutArgs),
    /// Print the shell completion script for bash, zsh or fish (bash's
    /// is loaded by the bash-completion package, which must be installed).
    Completions(completions::CompletionsArgs),
    /// Print the man page flexio(1), or write it and one page per
    /// subcommand into --dir.
    Man(man::ManArgs),
}

fn main() -> ExitCode {
    match run(parse_arguments()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("flexio: {error}");
            error.exit_code()
        }
    }
}

fn run(cli: Cli) -> error::Result<()> {
    match cli.command {
        Command::Copy(args) => copy::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Cache(args) => cache::run(args),
        Command::Mechanisms(args) => mechanisms::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Profile(args) => profile::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Get(args) => get::run(args),
        Command::Put(args) => put::run(args),
        Command::Completions(args) => completions::run(args, Cli::command()),
        Command::Man(args) => man::run(args, Cli::command()),
    }
}

fn parse_arguments() -> Cli {
    let arguments: Vec<_> = std::env::args_os().collect();
    let copy = copy::CopyArgs::operands_only(&arguments).or_else(|| parse_copy_alone(&arguments));
    if let Some(copy) = copy {
        return Cli {
            command: Command::Copy(copy),
        };
    }
    Cli::parse_from(arguments)
}

/// `flexio copy ...` parsed with only `copy`'s arguments built. clap builds
/// every subcommand's arguments before it parses (the bench's, the
/// server's, the cache's...): a fifth of a 4 KiB copy's instructions, for
/// the command whose small runs are its whole point. Anything but a clean
/// parse (help, a bad flag) returns `None` and goes the full way, so that
/// messages read the same.
fn parse_copy_alone(arguments: &[std::ffi::OsString]) -> Option<copy::CopyArgs> {
    use clap::Args;
    if arguments.get(1).is_none_or(|first| first != "copy") {
        return None;
    }
    let mut command = clap::Command::new("flexio")
        .subcommand(copy::CopyArgs::augment_args(clap::Command::new("copy")));
    let mut matches = command.try_get_matches_from_mut(arguments).ok()?;
    let (_, mut sub) = matches.remove_subcommand()?;
    copy::CopyArgs::from_arg_matches_mut(&mut sub).ok()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use clap::{CommandFactory, Parser};

    use super::{copy::CopyArgs, man, parse_copy_alone, Cli};

    fn arguments(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn two_operands_alone_parse_as_clap_parses_them() {
        for words in [
            ["flexio", "copy", "a", "b"],
            ["flexio", "copy", "/tmp/some dir/ä.bin", "out/"],
            [
                "flexio",
                "copy",
                "tcp://127.0.0.1:9",
                "unix-listen://x.sock",
            ],
            ["flexio", "copy", "copy", "x"],
        ] {
            let arguments = arguments(&words);
            let quick = CopyArgs::operands_only(&arguments);
            assert!(quick.is_some(), "{words:?} should take the quick way");
            assert_eq!(quick, parse_copy_alone(&arguments), "{words:?}");
        }
    }

    #[test]
    fn anything_but_two_plain_operands_is_left_to_clap() {
        for words in [
            &["flexio", "copy", "a"][..],
            &["flexio", "copy", "a", "b", "c"],
            &["flexio", "copy", "-", "b"],
            &["flexio", "copy", "a", "-r"],
            &["flexio", "copy", "--verify", "a"],
            &["flexio", "copy", "", "b"],
            &["flexio", "get", "a", "b"],
        ] {
            assert_eq!(
                CopyArgs::operands_only(&arguments(words)),
                None,
                "{words:?}"
            );
        }
        let not_utf8 = vec![
            OsString::from("flexio"),
            OsString::from("copy"),
            OsString::from_vec(vec![0xff, b'a']),
            OsString::from("b"),
        ];
        assert_eq!(CopyArgs::operands_only(&not_utf8), None);
    }

    /// A command line split as a shell would, up to a redirection.
    fn words(line: &str) -> Vec<String> {
        line.split_whitespace()
            .take_while(|word| *word != ">")
            .map(|word| word.replace("~", "/home/someone"))
            .collect()
    }

    #[test]
    fn every_subcommand_has_examples_that_parse() {
        for sub in man::subcommands(&Cli::command()) {
            let name = sub.get_name();
            let examples = man::examples(name);
            assert!(!examples.is_empty(), "no examples for {name}");
            for (_, line) in examples {
                assert!(line.starts_with(&format!("flexio {name}")), "{line}");
                if let Err(error) = Cli::try_parse_from(words(line)) {
                    panic!("{line}: {error}");
                }
            }
        }
    }
}
