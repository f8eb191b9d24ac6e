//! Which tuned profile a command consults (`--profile`, `--trust-profile`),
//! shared by `copy`, `plan`, `bench` and `profile`, and loading it for
//! `auto` with the warnings a person must see.

use std::path::{Path, PathBuf};

use clap::Args;
use flexio::profile::{default_profile_path, Profile, ProfileError};

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
