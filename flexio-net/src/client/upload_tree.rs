//! `flexio put DIR URL/`: a tree uploaded to `flexio serve --token-file`
//! as WebDAV clients do it — each directory made with `MKCOL` (parents
//! first; one already there is entered), then every file with `PUT` over
//! `streams` kept-alive connections, largest first. Each file lands
//! whole or not at all (the server's atomic sink, or its pieces for a
//! file larger than a piece); a file that fails is reported with its
//! reason and the others go on. Each file asks the server to keep its
//! mode and mtime (`Flexio-Mode`, `Flexio-Mtime`), so a file already
//! there with the source's size and mtime (a HEAD of it, where its
//! directory was there before this put) is left out and counted as
//! unchanged: a put run again sends only what changed. Symlinks and
//! special files are not uploaded (PUT carries bytes only) and are
//! listed as skipped.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use super::connection::{Connection, Url};
use super::upload::{keep_lines, put_keeping, refusal, send_head, Extra, PutOptions, Sender};
use super::upload_skip::held_already;
use crate::error::{Error, Result};
use crate::names::percent_encode;
use crate::shard::{Shard, Split};

/// What a tree upload did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PutTreeReport {
    /// The directory URL written into.
    pub url: String,
    /// Directories made (those already there are not counted).
    pub directories_made: u64,
    /// Files written.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files not sent: the server holds them with the source's size and
    /// mtime already.
    pub unchanged: u64,
    /// Their bytes.
    pub unchanged_bytes: u64,
    /// Entries not uploaded, with why (symlinks, special files).
    pub skipped: Vec<String>,
    /// Entries that failed, with the reason.
    pub failures: Vec<String>,
    /// Connections that sent files.
    pub streams: usize,
    /// Wall time.
    pub wall_ns: u64,
    /// This upload's part of the tree, with `--shard`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::report::ShardReport>,
}

/// A directory or file below the source, by its path relative to it.
pub(super) struct Walked {
    pub(super) directories: Vec<Vec<u8>>,
    pub(super) files: Vec<(PathBuf, Vec<u8>, u64)>,
    pub(super) skipped: Vec<String>,
    pub(super) failures: Vec<String>,
}

/// Walks `root` without following symlinks, directories before what they
/// hold, names in byte order.
pub(super) fn walk(root: &Path) -> Walked {
    let mut walked = Walked {
        directories: Vec::new(),
        files: Vec::new(),
        skipped: Vec::new(),
        failures: Vec::new(),
    };
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(relative) = stack.pop() {
        let directory = root.join(std::ffi::OsStr::from_bytes(&relative));
        let mut entries: Vec<_> = match std::fs::read_dir(&directory) {
            Ok(entries) => entries.flatten().collect(),
            Err(error) => {
                walked
                    .failures
                    .push(format!("{}: {error}", directory.display()));
                continue;
            }
        };
        entries.sort_by_key(|entry| entry.file_name());
        let mut below = Vec::new();
        for entry in entries {
            let mut path = relative.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(entry.file_name().as_bytes());
            let shown = crate::names::printable(&path);
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => {
                    walked.directories.push(path.clone());
                    below.push(path);
                }
                Ok(meta) if meta.is_file() => walked.files.push((entry.path(), path, meta.len())),
                Ok(meta) if meta.file_type().is_symlink() => walked
                    .skipped
                    .push(format!("{shown}: a symlink (PUT carries bytes only)")),
                Ok(_) => walked.skipped.push(format!("{shown}: not a regular file")),
                Err(error) => walked.failures.push(format!("{shown}: {error}")),
            }
        }
        // Popped in name order.
        stack.extend(below.into_iter().rev());
    }
    walked
}

/// The URL of `relative` below `base` (a directory URL ending in `/`).
pub(super) fn url_below(base: &Url, relative: &[u8], directory: bool) -> Url {
    let mut target = base.target.clone();
    let parts: Vec<String> = relative.split(|&b| b == b'/').map(percent_encode).collect();
    target += &parts.join("/");
    if directory {
        target.push('/');
    }
    Url {
        target,
        ..base.clone()
    }
}

/// A `MKCOL`'s answer: 201 (made) or 405 (something is there already),
/// its short body read so the connection can go on; anything else, and
/// a 405 from a server that takes no writes at all, is the refusal.
fn status_of(connection: &mut Connection, url: &Url) -> Result<u16> {
    let response = connection.read_response()?;
    let read_only = response
        .header("allow")
        .is_some_and(|allow| !allow.contains("MKCOL"));
    if !matches!(response.status, 201 | 405) || read_only {
        return Err(refusal(connection, response, url));
    }
    connection.skip_short_body(&response, "a MKCOL answer")?;
    Ok(response.status)
}

/// Uploads the tree at `source` into the directory `url` (ending in `/`),
/// made if missing.
///
/// # Errors
/// [`Error::Usage`] for a URL that is not a directory's or a source that
/// is not a directory; the first refusal of the directory itself (a wrong
/// token). Failures of single entries are in the report instead.
///
/// # Examples
/// ```no_run
/// let report = flexio_net::client::put_tree(
///     std::path::Path::new("photos"),
///     "http://127.0.0.1:8080/backup/photos/",
///     "a-token-of-16-chars-or-more",
///     &flexio_net::client::PutOptions { streams: 4, ..Default::default() },
/// )?;
/// assert!(report.failures.is_empty());
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn put_tree(
    source: &Path,
    url: &str,
    token: &str,
    options: &PutOptions,
) -> Result<PutTreeReport> {
    put_tree_part(source, url, token, options, None)
}

/// Uploads shard `shard` of the tree at `source` into the directory
/// `url`: every directory, this shard's whole files, and its ranges of
/// files split between shards ([`Split::Ranges`]; never with
/// [`Split::WholeFiles`]).
///
/// # Errors
/// As [`put_tree`].
///
/// # Examples
/// ```no_run
/// use flexio_net::shard::{Shard, Split};
/// let report = flexio_net::client::put_tree_sharded(
///     std::path::Path::new("/shared/results"),
///     "http://10.0.0.1:8080/results/",
///     "a-token-of-16-chars-or-more",
///     &flexio_net::client::PutOptions::default(),
///     Shard { index: 1, count: 4 },
///     Split::Ranges,
/// )?;
/// assert!(report.failures.is_empty());
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn put_tree_sharded(
    source: &Path,
    url: &str,
    token: &str,
    options: &PutOptions,
    shard: Shard,
    split: Split,
) -> Result<PutTreeReport> {
    put_tree_part(source, url, token, options, Some((shard, split)))
}

/// [`put_tree`] of part of the tree: with `shard`, this process's part
/// only (see [`crate::shard`] and [`super::put_tree_sharded`]).
pub(super) fn put_tree_part(
    source: &Path,
    url: &str,
    token: &str,
    options: &PutOptions,
    shard: Option<(Shard, Split)>,
) -> Result<PutTreeReport> {
    let base = Url::parse(url)?;
    if !base.target.ends_with('/') || base.target.contains('?') {
        return Err(Error::Usage(format!(
            "{url}: a tree goes to a directory URL, ending in /"
        )));
    }
    if !source.is_dir() {
        return Err(Error::Usage(format!(
            "{}: not a directory",
            source.display()
        )));
    }
    let started = Instant::now();
    let walked = walk(source);
    let mut report = PutTreeReport {
        url: url.to_string(),
        skipped: walked.skipped,
        failures: walked.failures,
        ..PutTreeReport::default()
    };

    // The directories, parents first, on one connection.
    let mut connection = Connection::open(&base, options.timeout, &options.tls)?;
    let make = |connection: &mut Connection, target: &Url| -> Result<u16> {
        send_head(connection, "MKCOL", target, token, 0, Extra::default())?;
        status_of(connection, target)
    };
    // The directories this put made: what is in them is new.
    let mut made: HashSet<Vec<u8>> = HashSet::new();
    // The destination itself: a refusal here (a wrong token) ends it all.
    if make(&mut connection, &base)? == 201 {
        report.directories_made += 1;
        made.insert(Vec::new());
    }
    for relative in &walked.directories {
        let target = url_below(&base, relative, true);
        match make(&mut connection, &target) {
            Ok(201) => {
                report.directories_made += 1;
                made.insert(relative.clone());
            }
            Ok(_) => {}
            Err(error) => {
                report
                    .failures
                    .push(format!("{}/: {error}", String::from_utf8_lossy(relative)));
                connection = Connection::open(&base, options.timeout, &options.tls)?;
            }
        }
    }
    drop(connection);

    // The files, largest first, over `streams` connections.
    let mut files = match shard {
        Some((shard, split)) => {
            let (mine, part) = super::shard_put::parts_of(walked.files, shard, split);
            report.shard = Some(part);
            mine
        }
        None => walked
            .files
            .into_iter()
            .map(|(path, relative, length)| (path, relative, length, None))
            .collect(),
    };
    files.sort_by_key(|(_, _, length, range)| range.map_or(*length, |(a, b)| b - a));
    if let Some(progress) = &options.progress {
        let bytes = files
            .iter()
            .map(|(_, _, length, range)| range.map_or(*length, |(a, b)| b - a))
            .sum();
        progress.expect(bytes, Some(files.len() as u64));
    }
    let streams = options.streams.clamp(1, files.len().max(1));
    let queue = Mutex::new(files);
    let outcome = Mutex::new(Outcome::default());
    let rate = options.pacing.rate.map(|rate| {
        std::sync::Arc::new(flexio::pace::TokenBucket::new(
            rate,
            options.pacing.burst_bytes().unwrap_or(rate.default_burst()),
            Instant::now(),
        ))
    });
    std::thread::scope(|scope| {
        for _ in 0..streams {
            scope.spawn(|| {
                let mut connection: Option<Connection> = None;
                loop {
                    let Some((path, relative, _, range)) =
                        queue.lock().unwrap_or_else(|p| p.into_inner()).pop()
                    else {
                        return;
                    };
                    let target = url_below(&base, &relative, false);
                    let shown = crate::names::printable(&relative);
                    let new = made.contains(parent_of(&relative));
                    let result = match range {
                        None => {
                            put_one(&path, &target, token, options, &rate, &mut connection, new)
                        }
                        Some(range) => super::shard_put::put_range(
                            &path, &relative, &target, token, options, &rate, range,
                        )
                        .map(Sent::Bytes),
                    };
                    if let Some(progress) = &options.progress {
                        let unchanged = match result {
                            Ok(Sent::Unchanged(bytes)) => bytes,
                            _ => 0,
                        };
                        progress.files_done(1, unchanged);
                    }
                    let mut outcome = outcome.lock().unwrap_or_else(|p| p.into_inner());
                    match result {
                        Ok(Sent::Bytes(bytes)) => {
                            outcome.files += 1;
                            outcome.bytes += bytes;
                        }
                        Ok(Sent::Unchanged(bytes)) => {
                            outcome.unchanged += 1;
                            outcome.unchanged_bytes += bytes;
                        }
                        Err(error) => {
                            outcome.failures.push(format!("{shown}: {error}"));
                            connection = None;
                        }
                    }
                }
            });
        }
    });
    let outcome = outcome.into_inner().unwrap_or_else(|p| p.into_inner());
    report.files = outcome.files;
    report.bytes = outcome.bytes;
    report.unchanged = outcome.unchanged;
    report.unchanged_bytes = outcome.unchanged_bytes;
    report.failures.extend(outcome.failures);
    report.streams = streams;
    report.wall_ns = started.elapsed().as_nanos() as u64;
    Ok(report)
}

/// What the workers of a tree put did, together.
#[derive(Default)]
struct Outcome {
    files: u64,
    bytes: u64,
    unchanged: u64,
    unchanged_bytes: u64,
    failures: Vec<String>,
}

/// What became of one file.
pub(super) enum Sent {
    /// Sent, this many bytes.
    Bytes(u64),
    /// Not sent, this many bytes: the server holds it already.
    Unchanged(u64),
}

/// The directory part of a relative path (empty for the top).
fn parent_of(relative: &[u8]) -> &[u8] {
    match relative.iter().rposition(|&b| b == b'/') {
        Some(at) => &relative[..at],
        None => &[],
    }
}

/// One file, asking the server to keep its mode and mtime: left out when
/// the server holds it already (asked unless its directory is `new`, made
/// by this put); larger than a piece, in pieces on connections of its
/// own; else whole on the worker's kept-alive connection.
pub(super) fn put_one(
    path: &Path,
    target: &Url,
    token: &str,
    options: &PutOptions,
    rate: &Option<std::sync::Arc<flexio::pace::TokenBucket>>,
    connection: &mut Option<Connection>,
    new: bool,
) -> Result<Sent> {
    let label = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| Error::io("open", &label, None, e))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| Error::io("fstat", &label, None, e))?;
    let length = stat.st_size as u64;
    if !new && held_already(connection, target, &stat, (options.timeout, &options.tls))? {
        return Ok(Sent::Unchanged(length));
    }
    if length > options.piece {
        let single = PutOptions {
            streams: 1,
            ..options.clone()
        };
        return put_keeping(path, &target.to_string(), token, &single, true)
            .map(|report| Sent::Bytes(report.bytes));
    }
    let kept = match connection {
        Some(kept) => kept,
        None => connection.insert(Connection::open(target, options.timeout, &options.tls)?),
    };
    let sender = Sender {
        url: target,
        token,
        file: &file,
        label: &label,
        length,
        keep: keep_lines(&stat),
        options,
        rate: rate.clone(),
    };
    sender.whole_on(kept)?;
    Ok(Sent::Bytes(length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_below_a_directory_are_percent_encoded_part_by_part() {
        let base = Url::parse("http://127.0.0.1:1/up/").unwrap();
        assert_eq!(
            url_below(&base, b"a b/c%d", false).target,
            "/up/a%20b/c%25d"
        );
        assert_eq!(url_below(&base, b"sub", true).target, "/up/sub/");
    }

    #[test]
    fn the_walk_lists_directories_before_their_files_and_skips_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("b/c")).unwrap();
        std::fs::write(dir.path().join("a"), b"1").unwrap();
        std::fs::write(dir.path().join("b/c/d"), b"22").unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("link")).unwrap();
        let walked = walk(dir.path());
        assert_eq!(walked.directories, vec![b"b".to_vec(), b"b/c".to_vec()]);
        let files: Vec<(&[u8], u64)> = walked
            .files
            .iter()
            .map(|(_, relative, length)| (relative.as_slice(), *length))
            .collect();
        assert_eq!(files, vec![(&b"a"[..], 1), (&b"b/c/d"[..], 2)]);
        assert_eq!(walked.skipped.len(), 1);
        assert!(walked.skipped[0].starts_with("link: a symlink"));
    }
}
