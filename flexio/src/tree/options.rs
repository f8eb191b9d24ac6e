//! What a tree copy is asked to do: `cp`'s options, as a library type.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanism::MechanismName;
use crate::pace::Pacing;
use crate::Params;

/// The attributes kept from each source (`cp -p`, `--preserve=LIST`, and
/// all of them with `-a`). Without `mode`, a new file gets the source's
/// permission bits less the umask, as `cp` gives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preserve {
    /// Permission bits, set-user-ID and set-group-ID included (those only
    /// together with `ownership`).
    pub mode: bool,
    /// Owner and group (where the kernel lets us: as root).
    pub ownership: bool,
    /// Access and modification times, to the nanosecond.
    pub timestamps: bool,
    /// Hard links stay hard links (files with several names in the tree
    /// are copied once and linked).
    pub links: bool,
    /// Extended attributes, ACLs among them, where both file systems carry
    /// them.
    pub xattr: bool,
}

impl Preserve {
    /// Everything `-a` keeps.
    pub const ALL: Preserve = Preserve {
        mode: true,
        ownership: true,
        timestamps: true,
        links: true,
        xattr: true,
    };

    /// What `-p` keeps: mode, ownership, timestamps.
    pub const DEFAULT_P: Preserve = Preserve {
        mode: true,
        ownership: true,
        timestamps: true,
        links: false,
        xattr: false,
    };

    /// Parses `--preserve=LIST`: `mode`, `ownership`, `timestamps`,
    /// `links`, `xattr`, `all`, comma-separated.
    ///
    /// # Errors
    /// [`Error::Usage`] naming an unknown attribute.
    ///
    /// # Examples
    /// ```
    /// use flexio::tree::Preserve;
    /// let keep = Preserve::parse("mode,timestamps").unwrap();
    /// assert!(keep.mode && keep.timestamps && !keep.ownership);
    /// assert_eq!(Preserve::parse("all").unwrap(), Preserve::ALL);
    /// assert!(Preserve::parse("colour").is_err());
    /// ```
    pub fn parse(list: &str) -> Result<Self> {
        let mut keep = Preserve::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "mode" => keep.mode = true,
                "ownership" => keep.ownership = true,
                "timestamps" => keep.timestamps = true,
                "links" => keep.links = true,
                "xattr" => keep.xattr = true,
                "all" => keep = Preserve::ALL,
                other => {
                    return Err(Error::usage(format!(
                        "preserve: unknown attribute {other:?} (known: mode, ownership, timestamps, links, xattr, all)"
                    )))
                }
            }
        }
        Ok(keep)
    }

    /// The union of two sets.
    pub fn with(self, other: Preserve) -> Preserve {
        Preserve {
            mode: self.mode || other.mode,
            ownership: self.ownership || other.ownership,
            timestamps: self.timestamps || other.timestamps,
            links: self.links || other.links,
            xattr: self.xattr || other.xattr,
        }
    }
}

/// Which symbolic links are followed (`cp`'s `-P`, `-H`, `-L`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Symlinks {
    /// Never: links are copied as links (`-P`, the default of `-r`).
    #[default]
    Keep,
    /// Those named on the command line, not those met inside a tree (`-H`;
    /// also how a non-recursive copy treats its sources).
    FollowCommandLine,
    /// All of them (`-L`).
    FollowAll,
}

/// Options of a tree copy.
#[derive(Clone, Debug)]
pub struct TreeOptions {
    /// Copy directories and their contents (`-r`); without it a directory
    /// source is skipped with an error, as `cp` does.
    pub recursive: bool,
    /// Attributes kept.
    pub preserve: Preserve,
    /// Which symlinks are followed.
    pub symlinks: Symlinks,
    /// Stay on the file system of each source (`-x`).
    pub one_file_system: bool,
    /// Glob patterns (`--exclude`): an entry whose name or path below its
    /// source matches is skipped with everything beneath it.
    pub exclude: Vec<String>,
    /// Never replace an existing destination (`-n`).
    pub no_clobber: bool,
    /// Replace an existing destination only when the source is newer
    /// (`-u`).
    pub update: bool,
    /// List what would be done; change nothing.
    pub dry_run: bool,
    /// Files copied at once (workers): 1 to [`MAX_JOBS`]; a number
    /// outside is taken as the nearest bound.
    pub jobs: usize,
    /// Small files a worker takes from the queue at once (one lock for
    /// several files); at least 1.
    pub batch: usize,
    /// Make every file and directory durable before returning.
    pub fsync: bool,
    /// Hash each file and its copy afterwards (BLAKE3).
    pub verify: bool,
    /// The mechanism for each file's bytes; `auto` tries a reflink, then
    /// copy-file-range.
    pub mechanism: MechanismName,
    /// Its parameters.
    pub params: Params,
    /// Make a fallback an error.
    pub strict: bool,
    /// Pacing: the rate is the whole tree's, shared by the workers; the
    /// burst and the schedule hold for each file's calls.
    pub pacing: Pacing,
}

impl Default for TreeOptions {
    fn default() -> Self {
        TreeOptions {
            recursive: false,
            preserve: Preserve::default(),
            symlinks: Symlinks::FollowCommandLine,
            one_file_system: false,
            exclude: Vec::new(),
            no_clobber: false,
            update: false,
            dry_run: false,
            jobs: default_jobs(),
            batch: DEFAULT_BATCH,
            fsync: false,
            verify: false,
            mechanism: MechanismName::Auto,
            params: Params::default(),
            strict: false,
            pacing: Pacing::default(),
        }
    }
}

/// Small files of one directory a worker takes from the queue at once,
/// unless `flexio tune` measured better for the file system: a whole
/// directory of a typical tree, so that two workers seldom make files in
/// the same directory (see `Queue::take`); the tail it can leave to one
/// worker is a few milliseconds.
pub const DEFAULT_BATCH: usize = 128;

/// The most workers a tree copy runs (and a profile may ask for). Each
/// is a thread with its own stack, and past a few per CPU more only wait
/// on each other in the file system; a hundred thousand asked the system
/// for more threads than it would make.
pub const MAX_JOBS: usize = crate::profile::MAX_TREE_JOBS;

/// Workers for a tree copy: two per CPU, since a worker spends much of a
/// small file's time waiting in the file system, at least 2 and at most 16.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get() * 2)
        .clamp(2, 16)
}
