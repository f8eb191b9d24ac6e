//! `flexio profile show | validate | export | import | diff`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use flexio::format_bytes;
use flexio::profile::Profile;

use crate::error::{Error, Result};
use crate::output::print_stdout;
use crate::profile_choice::ProfileChoice;
use crate::profile_table::render;

/// Arguments of `flexio profile`.
#[derive(Args)]
pub struct ProfileArgs {
    #[command(subcommand)]
    action: ProfileAction,
    #[command(flatten)]
    choice: ProfileChoice,
}

#[derive(Subcommand)]
enum ProfileAction {
    /// Print the profile's decisions as a table.
    Show,
    /// Check the profile (after a hand edit): format, ranges, mechanisms,
    /// and whether it fits this machine.
    Validate,
    /// Copy the profile to FILE.
    Export {
        /// Where to write it.
        file: PathBuf,
    },
    /// Validate FILE and install it as the profile.
    Import {
        /// The profile to install.
        file: PathBuf,
    },
    /// Compare the decisions of two profiles.
    Diff {
        /// The first profile.
        a: PathBuf,
        /// The second profile.
        b: PathBuf,
    },
}

fn load(path: &Path) -> Result<Profile> {
    Profile::load(path).map_err(|e| Error::Usage(e.to_string()))
}

/// Runs `flexio profile`.
pub fn run(args: ProfileArgs) -> Result<()> {
    let path = args.choice.path();
    match args.action {
        ProfileAction::Show if !path.exists() => {
            print_stdout(&format!(
                "no tuned profile at {}: `--via auto` uses the built-in table (`flexio mechanisms` lists it; `flexio plan SRC DST` says what it would pick and why).\n\
                 To measure this machine instead: `flexio tune` (or `flexio tune --quick`), which writes the profile auto reads from then on.\n",
                path.display()
            ));
        }
        ProfileAction::Show => {
            let profile = load(&path)?;
            print_stdout(&render(&profile));
        }
        ProfileAction::Validate => {
            let profile = load(&path)?;
            let differences = profile.machine_differences();
            let ranges: usize = profile.flows.iter().map(|f| f.ranges.len()).sum();
            let mut text = format!(
                "{}: valid, format {}, {} flow kinds, {ranges} ranges\n",
                path.display(),
                profile.format_version,
                profile.flows.len()
            );
            if differences.is_empty() {
                text += "measured on this machine\n";
            } else {
                text += &format!("measured on another machine: {}\n", differences.join(", "));
            }
            print_stdout(&text);
        }
        ProfileAction::Export { file } => {
            let profile = load(&path)?;
            profile
                .save(&file)
                .map_err(|e| Error::Usage(e.to_string()))?;
            print_stdout(&format!(
                "exported {} to {}\n",
                path.display(),
                file.display()
            ));
        }
        ProfileAction::Import { file } => {
            let profile = load(&file)?;
            let differences = profile.machine_differences();
            if !differences.is_empty() {
                eprintln!(
                    "flexio: warning: {} was measured on another machine ({}); auto will ignore it unless --trust-profile",
                    file.display(),
                    differences.join(", ")
                );
            }
            profile
                .save_for_auto(&path)
                .map_err(|e| Error::Usage(e.to_string()))?;
            print_stdout(&format!(
                "imported {} as {}\n",
                file.display(),
                path.display()
            ));
        }
        ProfileAction::Diff { a, b } => {
            let (left, right) = (load(&a)?, load(&b)?);
            print_stdout(&diff(&left, &right));
        }
    }
    Ok(())
}

/// Where two profiles decide differently, per flow kind and measured size.
fn diff(left: &Profile, right: &Profile) -> String {
    let mut text = String::new();
    let differences = left.fingerprint.differences(&right.fingerprint);
    if !differences.is_empty() {
        text += &format!("machines differ: {}\n", differences.join(", "));
    }
    let mut sizes: Vec<(flexio::profile::FlowKind, u64)> = Vec::new();
    for profile in [left, right] {
        for flow in &profile.flows {
            for range in &flow.ranges {
                sizes.push((flow.kind, range.min_bytes));
                sizes.extend(range.measured_at.iter().map(|&s| (flow.kind, s)));
            }
        }
    }
    sizes.sort();
    sizes.dedup();
    let describe = |profile: &Profile, kind, size| {
        profile.lookup(kind, size).map_or_else(
            || "(built-in table)".to_string(),
            |r| format!("{} chunk {}", r.mechanism, format_bytes(r.chunk as u64)),
        )
    };
    let mut same = 0;
    for (kind, size) in sizes {
        let (a, b) = (describe(left, kind, size), describe(right, kind, size));
        if a == b {
            same += 1;
        } else {
            text += &format!("{kind} at {}: {a}  ->  {b}\n", format_bytes(size));
        }
    }
    text += &format!("{same} looked-up sizes decide the same\n");
    text
}
