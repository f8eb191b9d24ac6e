//! What the client's gets report: a tree's counts, each server's share in
//! a mirrored get, a shard's part, and what a listing gave. Kept apart
//! from the code that fills them so that each fetching module imports its
//! report from below, never from a sibling.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::connection::Url;
use super::listing::ListingFormat;

/// What fetching a tree did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TreeReport {
    /// The directory URL.
    pub url: String,
    /// Where the tree now is.
    pub destination: PathBuf,
    /// Directories made (or found).
    pub directories: u64,
    /// Files fetched, each verified.
    pub files: u64,
    /// The bytes of every file in the tree (fetched or unchanged).
    pub bytes: u64,
    /// Files already there with the manifest's size and mtime: not
    /// fetched again (as rsync decides by default).
    pub unchanged: u64,
    /// Symlinks made.
    pub symlinks: u64,
    /// Entries neither file, directory nor symlink: left out.
    pub skipped: u64,
    /// Symlinks whose target would point out of the destination: left
    /// out with a warning, as rsync's `--safe-links` does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub escaping_links: Vec<String>,
    /// Directories of small files fetched as one `?tar` stream each.
    pub tar_streams: u64,
    /// Connections used.
    pub streams: usize,
    /// Wall time, manifest to last link.
    pub wall_ns: u64,
    /// Each server's share, with `--mirror`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<MirrorReport>,
    /// From a server that is not flexio: what its listings gave. Such a
    /// tree is checked against each file's Content-Length only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listing: Option<ListingReport>,
    /// This get's part of the tree, with `--shard`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardReport>,
}

/// What a tree's last steps (its symlinks) made.
#[derive(Default)]
pub(super) struct Finished {
    /// Symlinks made.
    pub symlinks: u64,
    /// Symlinks left out because, resolved through the tree's own links,
    /// they could lead out of the destination (their paths, lossy UTF-8).
    pub escaping_links: Vec<String>,
}

/// What a checked manifest leaves out.
#[derive(Default)]
pub(super) struct LeftOut {
    /// Entries neither file, directory nor symlink.
    pub special: u64,
    /// Symlinks pointing out of the destination, by path.
    pub escaping_links: Vec<String>,
}

impl TreeReport {
    /// A report for fetching `url` into `destination`, naming what the
    /// manifest left out.
    pub(super) fn starting(url: &Url, destination: &Path, left_out: LeftOut) -> TreeReport {
        TreeReport {
            url: url.to_string(),
            destination: destination.to_path_buf(),
            skipped: left_out.special,
            escaping_links: left_out.escaping_links,
            ..TreeReport::default()
        }
    }

    /// Counts what a tree's last steps made and left out.
    pub(super) fn finish(&mut self, finished: Finished) {
        self.symlinks = finished.symlinks;
        self.escaping_links.extend(finished.escaping_links);
    }
}

/// What one shard of a tree get took on.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ShardReport {
    /// This shard, from 0.
    pub index: u32,
    /// Of how many.
    pub count: u32,
    /// Whether files may be split into ranges between shards (a shared
    /// destination) or go whole (`--whole-files`).
    pub split_files: bool,
    /// The bytes of the tree that are this shard's.
    pub bytes: u64,
    /// Files this shard took whole.
    pub whole_files: u64,
    /// Ranges of files split between shards that this shard took.
    pub ranges: u64,
    /// Whether this shard was the last of a shared destination, and so
    /// made the symlinks, set the directories' modes and cleaned up.
    pub finished_tree: bool,
    /// Each part: the path, and the byte range of it this shard took.
    pub parts: Vec<ShardPart>,
}

/// A part of one file.
#[derive(Clone, Debug, Serialize)]
pub struct ShardPart {
    /// Its path in the tree (lossy UTF-8).
    pub path: String,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// What one server did in a mirrored get.
#[derive(Clone, Debug, Serialize)]
pub struct MirrorReport {
    /// Its URL.
    pub url: String,
    /// Body bytes it sent that were kept (checked against the manifest).
    pub bytes: u64,
    /// Pieces it sent that were kept.
    pub pieces: u64,
    /// Its rate over the time its connections were receiving, bytes per
    /// second.
    pub bytes_per_second: f64,
    /// Why it was dropped, when it was.
    pub dropped: Option<String>,
}

/// What a tree get from listings found, beside [`TreeReport`]'s counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ListingReport {
    /// How the server wrote its first listing.
    pub format: Option<ListingFormat>,
    /// Listing pages read.
    pub pages: u64,
    /// Files the listing named that the server would not send (a broken
    /// link it lists, a file it forbids), with its answer.
    pub not_fetched: Vec<String>,
}
