//! A tree `get` from a server that is not flexio (nginx `autoindex`,
//! Apache, `python3 -m http.server`): its listings read page by page as
//! `wget -r -np` reads them (see `listing`), then each file fetched once
//! over `streams` kept-alive connections into a [`NewFile`] that takes its
//! name only when every byte of its Content-Length arrived, given the
//! server's Last-Modified. A file already there is kept when the server's
//! HEAD gives its size and mtime exactly (rsync's test; see
//! [`super::quick_check`]), so running the
//! get again fetches only what is new, changed or missing.
//! Nothing is checked by hash — such a server offers none — and the report
//! says so.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use flexio::range::Mover;

use super::connection::{Connection, Url};
use super::listing::{self, unix_seconds};
use super::pieces::receive;
use super::quick_check::same_as_served;
use super::report::{ListingReport, TreeReport};
use super::tree_dest::{
    entry_target, finish_tree, make_directory, open_destination, set_times, Kind, Planned, Slot,
};
use super::GetOptions;
use crate::error::{Error, Result};
use crate::names::{percent_decode, percent_encode};
use crate::walk::{MAX_DEPTH, MAX_ENTRIES};

/// The most bytes one listing page may hold.
const MAX_LISTING_BYTES: u64 = 64 << 20;

/// The entries of a tree found by reading its listings.
struct Found {
    directories: Vec<Planned>,
    files: Vec<Planned>,
    report: ListingReport,
}

/// What fetching one listed file did.
enum Outcome {
    /// Fetched, this many bytes.
    New(u64),
    /// Already there with the server's size and mtime, this many bytes.
    Unchanged(u64),
    /// Not sent: the path and the server's answer.
    NotFetched(String),
}

/// Fetches the tree under `url` by its listings into `destination`.
///
/// # Errors
/// [`Error::Protocol`] for a page that is no listing or a file sent
/// without a Content-Length; [`Error::Status`] for a listing that is not
/// `200`; [`Error::Usage`] where a directory is in the way of a file;
/// and the errors of moving the bytes.
pub(super) fn get_tree_from_listings(
    connection: Option<Connection>,
    url: &Url,
    destination: &Path,
    options: &GetOptions,
    started: Instant,
) -> Result<TreeReport> {
    let mut connection = connection;
    if let Some(progress) = &options.progress {
        progress.finding(true);
    }
    let found = discover(&mut connection, url, options);
    if let Some(progress) = &options.progress {
        progress.finding(false);
    }
    let mut found = found?;
    let label = destination.display().to_string();
    for why in &mut found.report.not_fetched {
        *why = format!("{label}/{why}"); // named as a fetch's failure is
    }
    let root = open_destination(destination, &label)?;
    for entry in &found.directories {
        make_directory(&root, entry, &label)?;
    }
    if let Some(progress) = &options.progress {
        progress.expect_files(found.files.len() as u64);
    }
    let streams = options.streams.max(1).min(found.files.len().max(1));
    let outcomes = fetch_all(
        connection,
        url,
        &root,
        &found.files,
        &label,
        options,
        streams,
    )?;
    // Listings carry no links; nginx's JSON gives directories' mtimes.
    finish_tree(&root, &found.directories, &label)?;
    let mut report = TreeReport {
        url: url.to_string(),
        destination: destination.to_path_buf(),
        directories: found.directories.len() as u64,
        streams,
        listing: Some(found.report),
        ..TreeReport::default()
    };
    for outcome in outcomes {
        match outcome {
            Outcome::New(bytes) => {
                report.files += 1;
                report.bytes += bytes;
            }
            Outcome::Unchanged(bytes) => {
                report.unchanged += 1;
                report.bytes += bytes;
            }
            Outcome::NotFetched(why) => {
                if let Some(listing) = report.listing.as_mut() {
                    listing.not_fetched.push(why);
                }
            }
        }
    }
    report.wall_ns = started.elapsed().as_nanos() as u64;
    Ok(report)
}

/// Reads the listing of `url` and of every directory beneath it, breadth
/// first, over one kept-alive connection (`connection`, when open).
fn discover(connection: &mut Option<Connection>, url: &Url, options: &GetOptions) -> Result<Found> {
    let mut found = Found {
        directories: Vec::new(),
        files: Vec::new(),
        report: ListingReport::default(),
    };
    let mut queue = VecDeque::from([(Vec::<Vec<u8>>::new(), url.target.clone())]);
    while let Some((parts, target)) = queue.pop_front() {
        let page = read_listing(connection, url, &target, options)?;
        found.report.pages += 1;
        found.report.format.get_or_insert(page.format);
        let directory = crate::names::printable(&parts.join(&b'/'));
        found
            .report
            .not_fetched
            .extend(
                page.refused
                    .into_iter()
                    .map(|why| match directory.is_empty() {
                        true => why,
                        false => format!("{directory}/{why}"),
                    }),
            );
        for child in page.children {
            if found.directories.len() + found.files.len() >= MAX_ENTRIES {
                return Err(Error::protocol(
                    url.to_string(),
                    format!("the listings name over {MAX_ENTRIES} entries; refused"),
                ));
            }
            let mut child_parts = parts.clone();
            child_parts.push(child.name.clone());
            let entry = Planned {
                parts: child_parts,
                kind: if child.directory {
                    Kind::Directory
                } else {
                    Kind::File
                },
                size: 0,
                mode: if child.directory { 0o755 } else { 0o644 },
                mtime: child.mtime.unwrap_or(0),
                mtime_nsec: 0,
                dated: child.mtime.is_some(),
                blake3: Vec::new(),
                link_target: Vec::new(),
            };
            if !child.directory {
                found.files.push(entry);
                continue;
            }
            if entry.parts.len() > MAX_DEPTH {
                return Err(Error::protocol(
                    url.to_string(),
                    format!("listings nested over {MAX_DEPTH} deep (a link to a parent?); refused"),
                ));
            }
            let below = format!("{target}{}/", percent_encode(&child.name));
            queue.push_back((entry.parts.clone(), below));
            found.directories.push(entry);
        }
    }
    Ok(found)
}

/// GETs the listing at `target` and reads its children.
fn read_listing(
    connection: &mut Option<Connection>,
    url: &Url,
    target: &str,
    options: &GetOptions,
) -> Result<listing::Page> {
    let peer = url.with_target(target.to_string()).to_string();
    let mut open = match connection.take() {
        Some(open) => open,
        None => Connection::open(url, options.timeout, &options.tls)?,
    };
    open.send_get(target, "")?;
    let response = open.read_response()?;
    if response.status != 200 {
        return Err(Error::Status {
            peer,
            status: response.status,
            reason: response.reason,
        });
    }
    let content_type = response
        .header("content-type")
        .unwrap_or_default()
        .to_string();
    let body = open.read_framed_body(&response, MAX_LISTING_BYTES, "a listing")?;
    if !response.closes() {
        *connection = Some(open);
    }
    let directory = percent_decode(target.split('?').next().unwrap_or_default().as_bytes())
        .map_err(|_| Error::Usage(format!("{peer}: a bad % escape in the URL")))?;
    listing::parse(&body, &content_type, &directory).map_err(|why| Error::protocol(&peer, why))
}

/// Fetches every file over `streams` connections at once; the outcomes,
/// or the first error (after which no stream takes another file).
fn fetch_all(
    first: Option<Connection>,
    url: &Url,
    root: &OwnedFd,
    files: &[Planned],
    label: &str,
    options: &GetOptions,
    streams: usize,
) -> Result<Vec<Outcome>> {
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::with_capacity(files.len()));
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let first = Mutex::new(first);
    std::thread::scope(|scope| {
        for _ in 0..streams {
            scope.spawn(|| {
                let mut connection = first.lock().unwrap().take();
                let mut mover = Mover::new();
                while failure.lock().unwrap().is_none() {
                    let Some(entry) = files.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    match fetch_listed(
                        &mut connection,
                        url,
                        root,
                        entry,
                        label,
                        options,
                        &mut mover,
                    ) {
                        Ok(outcome) => {
                            if let Some(progress) = &options.progress {
                                let skipped = match outcome {
                                    Outcome::Unchanged(bytes) => bytes,
                                    _ => 0,
                                };
                                progress.files_done(1, skipped);
                            }
                            outcomes.lock().unwrap().push(outcome)
                        }
                        Err(error) => {
                            failure.lock().unwrap().get_or_insert(error);
                        }
                    }
                }
            });
        }
    });
    match failure.into_inner().unwrap() {
        Some(error) => Err(error),
        None => Ok(outcomes.into_inner().unwrap()),
    }
}

/// Fetches one listed file, unless the copy already there is not modified
/// since.
fn fetch_listed(
    connection: &mut Option<Connection>,
    url: &Url,
    root: &OwnedFd,
    entry: &Planned,
    label: &str,
    options: &GetOptions,
    mover: &mut Mover,
) -> Result<Outcome> {
    let slot = Slot::of(root, entry, label)?;
    let (target, peer) = entry_target(url, entry);
    let mut open = match connection.take() {
        Some(open) => open,
        None => Connection::open(url, options.timeout, &options.tls)?,
    };
    if let Some(stat) = slot.regular_file() {
        let size = stat.st_size as u64;
        let here = (size, stat.st_mtime);
        if same_as_served(&mut open, &target, &peer, here, &options.tls)? {
            *connection = Some(open);
            return Ok(Outcome::Unchanged(size));
        }
    }
    open.send_get(&target, "")?;
    let response = open.read_response()?;
    match response.status {
        // The body of the refusal stays unread: the connection goes.
        403 | 404 | 410 => {
            return Ok(Outcome::NotFetched(format!(
                "{}: {} {}",
                slot.shown, response.status, response.reason
            )))
        }
        200 => {}
        status => {
            return Err(Error::Status {
                peer,
                status,
                reason: response.reason,
            })
        }
    }
    if response.header("transfer-encoding").is_some() {
        return Err(Error::protocol(
            &peer,
            "a file sent chunked; a tree get takes files with a Content-Length",
        ));
    }
    let size = response
        .content_length(&peer)?
        .ok_or_else(|| Error::protocol(&peer, "a file without Content-Length"))?;
    let file = slot.new_file(entry.mode)?;
    if size > 0 {
        receive(
            &mut open,
            file.fd(),
            &slot.shown,
            0,
            size,
            size,
            options,
            mover,
        )?;
    }
    if !response.closes() {
        *connection = Some(open);
    }
    if let Some(mtime) = response.header("last-modified").and_then(unix_seconds) {
        set_times(file.fd(), mtime, 0, &slot.shown)?;
    }
    file.commit(size, options.fsync)?;
    Ok(Outcome::New(size))
}
