//! `flexio copy SRC... DIR` and `flexio copy -r SRCDIR DST`: cp's grammar
//! and options over [`flexio::tree`], with a files-and-bytes progress bar
//! and one line per entry that failed.

use std::sync::Arc;

use flexio::tree::{
    copy_tree, default_jobs, Preserve, Symlinks, TreeOptions, TreeProgress, DEFAULT_BATCH,
};
use flexio::{Address, MechanismName};

use super::summary::{listed, tree_summary};
use super::CopyArgs;
use crate::error::{Error, Result};
use crate::output::{document, print_err, print_stdout, Telling};
use crate::progress::{ProgressBarThread, ProgressMode};

/// Whether `flexio copy` runs as a tree copy: several sources, a tree
/// option, a directory source, or a destination that is a directory.
/// Everything else is one flow (sockets and stdio among them).
pub fn is_tree_copy(args: &CopyArgs) -> bool {
    let [source, sink] = &args.paths[..] else {
        return true;
    };
    if args.tree.any() {
        return true;
    }
    let is_path = |text: &str| matches!(Address::parse(text), Ok(Address::Path(_)));
    is_path(source)
        && is_path(sink)
        && (std::path::Path::new(source).is_dir() || std::path::Path::new(sink).is_dir())
}

/// Runs a tree copy.
pub fn run(args: CopyArgs) -> Result<()> {
    let mut options = tree_options(&args)?;
    let (sources, destination) = args.paths.split_at(args.paths.len() - 1);
    let mut paths = Vec::with_capacity(sources.len());
    for text in sources.iter().chain(destination) {
        match Address::parse(text)? {
            Address::Path(path) => paths.push(path),
            other => {
                return Err(Error::Usage(format!(
                    "{other}: several sources, directories and tree options take paths only"
                )))
            }
        }
    }
    let destination = paths.pop().expect("at least two paths");
    let paths = once_each(paths);
    let settings_from = choose_workers(&args, &destination, &mut options);
    let progress = Arc::new(if args.verbose && !args.quiet {
        TreeProgress::listing(|source, target| {
            print_stdout(&listed(
                &source.display().to_string(),
                &target.display().to_string(),
            ))
        })
    } else {
        TreeProgress::default()
    });
    let mode = ProgressMode::choose(args.progress, args.no_progress, args.quiet || args.json);
    let report = {
        let _bar = ProgressBarThread::start(Arc::clone(&progress), mode);
        let mut report = copy_tree(&paths, &destination, &options, &progress)?;
        report.settings_from = settings_from;
        report
    };
    // One failure is the error itself; several are each named, then
    // counted.
    if report.failures.len() > 1 {
        for failure in &report.failures {
            eprintln!("flexio: {}", failure_line(failure));
        }
    }
    if options.dry_run && !args.json {
        print_stdout(&(report.planned.join("\n") + "\n"));
    } else {
        match Telling::for_this_process(args.quiet, args.json, args.report) {
            Telling::Nothing => {}
            Telling::Summary => print_err(&tree_summary(
                &sources.join(" "),
                &destination.display().to_string(),
                &report,
            )),
            Telling::Report => print_err(&report.to_string()),
            Telling::Json => print_stdout(&document("tree", &report)),
        }
    }
    if report.succeeded() {
        return Ok(());
    }
    Err(Error::Failed(match &report.failures[..] {
        [one] => failure_line(one),
        many => format!(
            "{} of {} entries not copied (each named above)",
            many.len(),
            many.len() as u64 + report.files + report.directories + report.symlinks
        ),
    }))
}

/// A failed entry in cp's way: the message alone where it names the
/// entry itself (`cannot stat 'x': ...`), else `PATH: message`.
fn failure_line(failure: &flexio::tree::TreeFailure) -> String {
    if failure.error.contains(&format!("'{}'", failure.path)) {
        failure.error.clone()
    } else {
        format!("{}: {}", failure.path, failure.error)
    }
}

/// The sources with any repeat of an earlier one (the same file, by
/// device and inode, however it is spelled) left out and warned about, as
/// cp does: copying it twice would only fail on the second, which finds
/// the first already in place.
fn once_each(paths: Vec<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    paths
        .into_iter()
        .filter(|path| {
            // A source that cannot be read is kept: the copy reports it.
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                return true;
            };
            let first = seen.insert((meta.dev(), meta.ino()));
            if !first {
                eprintln!(
                    "flexio: warning: source {} specified more than once; copied once",
                    path.display()
                );
            }
            first
        })
        .collect()
}

fn tree_options(args: &CopyArgs) -> Result<TreeOptions> {
    let tree = &args.tree;
    let mut preserve = Preserve::default();
    if tree.archive {
        preserve = Preserve::ALL;
    }
    if tree.preserve_default {
        preserve = preserve.with(Preserve::DEFAULT_P);
    }
    if let Some(list) = &tree.preserve {
        preserve = preserve.with(Preserve::parse(list)?);
    }
    let recursive = tree.recursive || tree.archive;
    let symlinks = if tree.dereference {
        Symlinks::FollowAll
    } else if tree.command_line_symlinks {
        Symlinks::FollowCommandLine
    } else if tree.no_dereference || recursive {
        Symlinks::Keep
    } else {
        Symlinks::FollowCommandLine
    };
    let jobs = tree.jobs.unwrap_or_else(default_jobs);
    let mechanism: MechanismName = args.via.parse()?;
    let params = super::explicit_params(args)?.unwrap_or_default();
    Ok(TreeOptions {
        recursive,
        preserve,
        symlinks,
        one_file_system: tree.one_file_system,
        exclude: tree.exclude.clone(),
        no_clobber: tree.no_clobber,
        update: tree.update,
        dry_run: tree.dry_run,
        jobs,
        batch: DEFAULT_BATCH,
        fsync: args.fsync,
        verify: args.verify,
        mechanism,
        params,
        strict: args.strict,
        pacing: flexio::pace::Pacing::parse(
            args.rate.as_deref(),
            args.burst.as_deref(),
            args.schedule.as_deref(),
        )?,
    })
}

/// The workers and small-file batch of a tree copy: `--jobs` when given
/// (with the default batch), else what `flexio tune` measured for the
/// destination's file system type, else the defaults. Returns where they
/// came from, for the report.
fn choose_workers(
    args: &CopyArgs,
    destination: &std::path::Path,
    options: &mut TreeOptions,
) -> String {
    if args.tree.jobs.is_some() {
        return "--jobs".into();
    }
    let Some(profile) = args.profile.load_for_auto() else {
        return "default".into();
    };
    // The destination, or the directory it will be made in.
    let existing = if destination.exists() {
        destination.to_path_buf()
    } else {
        match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        }
    };
    let Some(mount) = flexio::profile::Mount::containing(&existing) else {
        return "default".into();
    };
    match profile.tree_settings(&mount.fs_type) {
        Some(tree) => {
            options.jobs = tree.jobs;
            options.batch = tree.batch;
            format!(
                "profile {} ({})",
                args.profile.path().display(),
                mount.fs_type
            )
        }
        None => format!(
            "default; the profile has no tree settings for {}",
            mount.fs_type
        ),
    }
}
