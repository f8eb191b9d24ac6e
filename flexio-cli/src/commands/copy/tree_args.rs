//! The options of `flexio copy` that only a tree copy has: parsed with the
//! rest of `copy`'s arguments, read by `copy_tree`.

use clap::Args;

/// The options of `flexio copy` that concern trees and many files.
#[derive(Args, Debug, Default, PartialEq)]
pub struct TreeArgs {
    /// Copy directories and everything in them.
    #[arg(short = 'r', short_alias = 'R', long)]
    pub(crate) recursive: bool,
    /// -r, -P and --preserve=all: modes, owner and group (as root),
    /// timestamps, hard links, xattrs; symlinks as symlinks.
    #[arg(short = 'a', long)]
    pub(crate) archive: bool,
    /// --preserve=mode,ownership,timestamps.
    #[arg(short = 'p')]
    pub(crate) preserve_default: bool,
    /// Attributes to keep: mode, ownership, timestamps, links, xattr, all.
    #[arg(long, value_name = "LIST")]
    pub(crate) preserve: Option<String>,
    /// Follow every symlink in the sources.
    #[arg(short = 'L', long, overrides_with_all = ["no_dereference", "command_line_symlinks"])]
    pub(crate) dereference: bool,
    /// Copy symlinks as symlinks (the default with -r).
    #[arg(short = 'P', long, overrides_with_all = ["dereference", "command_line_symlinks"])]
    pub(crate) no_dereference: bool,
    /// Follow symlinks named on the command line only.
    #[arg(short = 'H', overrides_with_all = ["dereference", "no_dereference"])]
    pub(crate) command_line_symlinks: bool,
    /// Stay on each source's file system.
    #[arg(short = 'x', long)]
    pub(crate) one_file_system: bool,
    /// Skip entries whose name or path matches this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub(crate) exclude: Vec<String>,
    /// Never replace an existing file.
    #[arg(short = 'n', long, conflicts_with = "update")]
    pub(crate) no_clobber: bool,
    /// Replace an existing file only when the source is newer.
    #[arg(short = 'u', long)]
    pub(crate) update: bool,
    /// Print what would be done; change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Files copied at once, 1 to 256 (each is a thread) [default: what
    /// `flexio tune` measured for the destination's file system, else two
    /// per CPU, 2 to 16].
    #[arg(long, short = 'j', value_name = "N", value_parser = crate::values::jobs)]
    pub(crate) jobs: Option<usize>,
}

impl TreeArgs {
    /// Whether any option that only a tree copy has was given.
    pub(crate) fn any(&self) -> bool {
        self.recursive
            || self.archive
            || self.preserve_default
            || self.preserve.is_some()
            || self.dereference
            || self.no_dereference
            || self.command_line_symlinks
            || self.one_file_system
            || !self.exclude.is_empty()
            || self.no_clobber
            || self.update
            || self.dry_run
            || self.jobs.is_some()
    }
}
