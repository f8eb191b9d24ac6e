//! `flexio profile show | validate | export | import | diff`, and loading
//! the profile for `auto` with the warnings a person must see.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use flexio::profile::{default_profile_path, Profile, ProfileError};
use flexio::{format_bytes, format_rate, Error};

/// Which profile to use, shared by the commands that consult it.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct ProfileChoice {
    /// The profile to consult (default: $FLEXIO_PROFILE, else
    /// $XDG_CONFIG_HOME/flexio/profile.toml, else ~/.config/flexio/profile.toml).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Use the profile even if it was measured on another machine.
    #[arg(long)]
    pub trust_profile: bool,
}

impl ProfileChoice {
    /// The path in force.
    pub fn path(&self) -> PathBuf {
        self.profile.clone().unwrap_or_else(default_profile_path)
    }

    /// The profile `auto` may use: `None` (with a one-line warning on
    /// stderr) when it is missing-but-named, corrupt, from a newer flexio,
    /// or from another machine without `--trust-profile`. A missing
    /// default profile is silent: the built-in table is the documented
    /// behaviour before `flexio tune`. Without the measured curves, which
    /// `auto` does not read (see [`Profile::load_decisions`]).
    pub fn load_for_auto(&self) -> Option<Profile> {
        self.load_checked(Profile::load_decisions)
    }

    /// [`ProfileChoice::load_for_auto`] with the measured curves, for
    /// showing the points behind a decision.
    pub fn load_with_curves(&self) -> Option<Profile> {
        self.load_checked(Profile::load)
    }

    fn load_checked(&self, load: fn(&Path) -> Result<Profile, ProfileError>) -> Option<Profile> {
        let path = self.path();
        let profile = match load(&path) {
            Ok(profile) => profile,
            Err(ProfileError::Io { source, .. })
                if self.profile.is_none() && out_of_reach(&path, &source) =>
            {
                return None
            }
            Err(error) => {
                eprintln!("flexio: warning: {error}; using the built-in table");
                return None;
            }
        };
        let differences = profile.machine_differences();
        if differences.is_empty() {
            return Some(profile);
        }
        if self.trust_profile {
            eprintln!(
                "flexio: warning: {} was measured on another machine ({}); used anyway (--trust-profile)",
                path.display(),
                differences.join(", ")
            );
            Some(profile)
        } else {
            eprintln!(
                "flexio: warning: {} was measured on another machine ({}); using the built-in table (re-run `flexio tune`, or pass --trust-profile)",
                path.display(),
                differences.join(", ")
            );
            None
        }
    }
}

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

fn load(path: &Path) -> Result<Profile, Error> {
    Profile::load(path).map_err(|e| Error::Usage(e.to_string()))
}

/// Runs `flexio profile`.
pub fn run(args: ProfileArgs) -> Result<(), Error> {
    let path = args.choice.path();
    match args.action {
        ProfileAction::Show if !path.exists() => {
            crate::print_stdout(&format!(
                "no tuned profile at {}: `--via auto` uses the built-in table (`flexio mechanisms` lists it; `flexio plan SRC DST` says what it would pick and why).\n\
                 To measure this machine instead: `flexio tune` (or `flexio tune --quick`), which writes the profile auto reads from then on.\n",
                path.display()
            ));
        }
        ProfileAction::Show => {
            let profile = load(&path)?;
            crate::print_stdout(&render(&profile));
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
            crate::print_stdout(&text);
        }
        ProfileAction::Export { file } => {
            let profile = load(&path)?;
            profile
                .save(&file)
                .map_err(|e| Error::Usage(e.to_string()))?;
            crate::print_stdout(&format!(
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
            crate::print_stdout(&format!(
                "imported {} as {}\n",
                file.display(),
                path.display()
            ));
        }
        ProfileAction::Diff { a, b } => {
            let (left, right) = (load(&a)?, load(&b)?);
            crate::print_stdout(&diff(&left, &right));
        }
    }
    Ok(())
}

/// The decisions of a profile, one line per range.
pub fn render(profile: &Profile) -> String {
    let mut text = format!(
        "profile {} (format {}, flexio {}, tuned on {} in {})\n",
        profile
            .path
            .as_deref()
            .map_or_else(|| "-".into(), |p| p.display().to_string()),
        profile.format_version,
        profile.flexio_version,
        profile.fingerprint.filesystem,
        profile.tuned_dir
    );
    text += &format!(
        "machine: {} × {}, {} memory, kernel {}\n",
        profile.fingerprint.cpus,
        profile.fingerprint.cpu_model,
        format_bytes(profile.fingerprint.memory_bytes),
        profile.fingerprint.kernel
    );
    text += &format!(
        "{:<22} {:>12} {:>12}  {:<16} {:>8} {:>4} {:>8} {:>6} {:>12} {:>7}\n",
        "flow kind",
        "from",
        "to",
        "mechanism",
        "chunk",
        "qd",
        "pipe",
        "direct",
        "throughput",
        "spread"
    );
    for flow in &profile.flows {
        for range in &flow.ranges {
            text += &format!(
                "{:<22} {:>12} {:>12}  {:<16} {:>8} {:>4} {:>8} {:>6} {:>12} {:>6.1}%\n",
                flow.kind.as_str(),
                format_bytes(range.min_bytes),
                range.max_bytes.map_or_else(|| "∞".into(), format_bytes),
                mechanism_label(range),
                format_bytes(range.chunk as u64),
                range.queue_depth,
                format_bytes(range.pipe_size as u64),
                if range.direct { "yes" } else { "no" },
                format_rate(range.throughput_bytes_per_s as f64),
                range.spread * 100.0
            );
        }
    }
    for tree in &profile.trees {
        let rate = |jobs: usize, batch: usize| {
            tree.points
                .iter()
                .find(|p| p.jobs == jobs && p.batch == batch)
                .map_or_else(
                    || "-".into(),
                    |p| format!("{:.0} files/s", p.files_per_second),
                )
        };
        text += &format!(
            "tree copy onto {}: {} jobs, batches of {} ({}; measured on {} files of {})\n",
            tree.filesystem,
            tree.jobs,
            tree.batch,
            rate(tree.jobs, tree.batch),
            tree.files,
            format_bytes(tree.file_bytes)
        );
    }
    text
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

/// Whether the default profile is simply not there for this user: missing,
/// or behind a directory this user may not search (another user's `HOME`,
/// as `sudo -u` leaves it), which is no profile of theirs. A profile that
/// is there but unreadable still earns a warning.
fn out_of_reach(path: &std::path::Path, error: &std::io::Error) -> bool {
    match error.kind() {
        std::io::ErrorKind::NotFound => true,
        std::io::ErrorKind::PermissionDenied => std::fs::symlink_metadata(path).is_err(),
        _ => false,
    }
}

/// The range's mechanism, with its copy kernel where that is not `memcpy`
/// (`read-write nt-avx2`).
fn mechanism_label(range: &flexio::profile::RangeEntry) -> String {
    if range.copy_kernel == flexio::CopyKernel::Memcpy {
        range.mechanism.to_string()
    } else {
        format!("{} {}", range.mechanism, range.copy_kernel)
    }
}
