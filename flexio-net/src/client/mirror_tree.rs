//! `flexio get URL/dir/ --mirror URL2/dir/ ... DEST`: a tree from several
//! servers holding it. The first server's manifest is the truth; its
//! directories are made as a plain tree get makes them; each file, largest
//! first, is fetched as [`super::get_mirrored`] fetches one — its pieces
//! spread over every server still in, each checked against the manifest,
//! into a temporary linked in at its name only when whole — and a server
//! dropped for one file stays dropped for the rest. Files already there
//! with the manifest's size and mtime are kept.

use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use std::time::Instant;

use flexio::range::NewFile;

use super::connection::{Connection, Url};
use super::mirror::{piece_size, reports, servers_of, Work};
use super::report::TreeReport;
use super::shard_get::unchanged;
use super::tree::fetch_manifest;
use super::tree_dest::{
    finish_tree, join_label, make_directory, open_destination, parent_of, set_mtime, Kind, Planned,
};
use super::GetOptions;
use crate::error::{Error, Result};
use crate::names::percent_encode;

/// Fetches the tree at `urls[0]` (a directory URL) from every server in
/// `urls` (the same tree's URL on each) into `destination`.
///
/// # Errors
/// [`Error::Usage`] for a URL that is not a directory's; those of
/// [`super::get_tree`]; [`Error::Protocol`] when every server was dropped
/// with a file unfinished (files already linked in are whole and
/// verified).
///
/// # Examples
/// ```no_run
/// let report = flexio_net::client::get_tree_mirrored(
///     &["http://10.0.0.1:8080/data/".into(), "http://10.0.0.2:8080/data/".into()],
///     std::path::Path::new("data"),
///     &flexio_net::client::GetOptions { streams: 2, ..Default::default() },
/// )?;
/// println!("{} files", report.files);
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn get_tree_mirrored(
    urls: &[String],
    destination: &Path,
    options: &GetOptions,
) -> Result<TreeReport> {
    let options = &options.with_rate_bucket();
    let started = Instant::now();
    let servers = servers_of(urls)?;
    if let Some(server) = servers.iter().find(|s| !s.url.target.ends_with('/')) {
        return Err(Error::Usage(format!(
            "{}: a tree's mirrors are directory URLs, ending in /",
            server.url
        )));
    }
    let first: &Url = &servers
        .first()
        .ok_or_else(|| Error::Usage("no URL to fetch".into()))?
        .url;
    let mut connection = Connection::open(first, options.timeout, &options.tls)?;
    let (planned, left_out) = fetch_manifest(&mut connection, first)?;
    drop(connection);
    let label = destination.display().to_string();
    let root = open_destination(destination, &label)?;
    let mut report = TreeReport {
        streams: options.streams.max(1) * servers.len(),
        ..TreeReport::starting(first, destination, left_out)
    };
    for entry in planned.iter().filter(|e| e.kind == Kind::Directory) {
        make_directory(&root, entry, &label)?;
        report.directories += 1;
    }
    let mut files: Vec<&Planned> = planned.iter().filter(|e| e.kind == Kind::File).collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.size));
    let piece = piece_size(options);
    let progress = options.progress.as_deref();
    if let Some(progress) = progress {
        progress.expect(files.iter().map(|f| f.size).sum(), Some(files.len() as u64));
    }
    for entry in files {
        report.bytes += entry.size;
        let shown = join_label(&label, &entry.parts);
        let (parent, name) = parent_of(&root, &entry.parts, &label)?;
        if unchanged(&parent, name, entry, &shown)?.is_some() {
            report.unchanged += 1;
            if let Some(progress) = progress {
                progress.files_done(1, entry.size);
            }
            continue;
        }
        let path = PathBuf::from(format!("/proc/self/fd/{}", parent.as_raw_fd()))
            .join(std::ffi::OsStr::from_bytes(name));
        let file = NewFile::create(&path, entry.mode & 0o777)?;
        let suffix: Vec<String> = entry.parts.iter().map(|p| percent_encode(p)).collect();
        let work = Work {
            suffix: &suffix.join("/"),
            file: file.fd(),
            label: &shown,
            total: entry.size,
            piece,
            hashes: &entry.blake3,
            queue: Mutex::new(
                (0..entry.size)
                    .step_by(piece as usize)
                    .collect::<VecDeque<_>>(),
            ),
            in_flight: AtomicU64::new(0),
            held: Mutex::default(),
            journal: None,
            failed: AtomicBool::new(false),
            options,
            ordered: false,
            arrived: None,
        };
        work.run(&servers)?;
        set_mtime(file.fd(), entry, &shown)?;
        file.commit(entry.size, options.fsync)?;
        report.files += 1;
        if let Some(progress) = progress {
            progress.files_done(1, 0);
        }
    }
    report.finish(finish_tree(&root, &planned, &label)?);
    report.servers = reports(&servers);
    report.wall_ns = started.elapsed().as_nanos() as u64;
    Ok(report)
}
