//! `flexio put DIR URL/ --shard K/N`: this process's part of a tree
//! uploaded (see [`crate::shard`]). Every shard makes every directory
//! (`MKCOL`; one made meanwhile by another answers 405, taken as there)
//! and PUTs its whole files; a file split between shards is sent by each
//! as `Content-Range` pieces of its ranges, all labelled with one upload
//! identity every shard computes alike (path, size, mtime: not the inode,
//! which differs between the hosts of a network file system), so the
//! server gathers them into one partial file and renames it into place
//! when the last byte of any shard's arrives (see
//! `server::upload_ranges`). A shard whose ranges land before the others'
//! is answered 202 and is done.

use std::path::{Path, PathBuf};

use super::connection::Url;
use super::report::{ShardPart, ShardReport};
use super::upload::{keep_lines, PutOptions, Sender};
use crate::error::{Error, Result};
use crate::shard::{plan, Shard, Split};

/// A file to send: its path, its path in the tree, its length, and the
/// range of it this shard sends (`None`: all of it, as one file).
pub(super) type ToSend = (PathBuf, Vec<u8>, u64, Option<(u64, u64)>);

/// This shard's files and ranges of `files` (path, path in the tree,
/// length), and what it took on.
pub(super) fn parts_of(
    files: Vec<(PathBuf, Vec<u8>, u64)>,
    shard: Shard,
    split: Split,
) -> (Vec<ToSend>, ShardReport) {
    let list: Vec<(Vec<u8>, u64)> = files.iter().map(|(_, r, l)| (r.clone(), *l)).collect();
    let mut report = ShardReport {
        index: shard.index,
        count: shard.count,
        split_files: split == Split::Ranges,
        ..ShardReport::default()
    };
    let mut mine = Vec::new();
    for part in plan(&list, shard.count, split) {
        if part.shard != shard.index {
            continue;
        }
        let (path, relative, length) = &files[part.file];
        report.bytes += part.end - part.start;
        report.parts.push(ShardPart {
            path: String::from_utf8_lossy(relative).into_owned(),
            start: part.start,
            end: part.end,
        });
        let range = if part.start == 0 && part.end == *length {
            report.whole_files += 1;
            None
        } else {
            report.ranges += 1;
            Some((part.start, part.end))
        };
        mine.push((path.clone(), relative.clone(), *length, range));
    }
    (mine, report)
}

/// Sends bytes `start..end` of the file at `path` (`relative` in the
/// tree) to `target` as pieces of the upload every shard names alike;
/// returns the bytes of the range.
pub(super) fn put_range(
    path: &Path,
    relative: &[u8],
    target: &Url,
    token: &str,
    options: &PutOptions,
    rate: &Option<std::sync::Arc<flexio::pace::TokenBucket>>,
    (start, end): (u64, u64),
) -> Result<u64> {
    let label = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| Error::io("open", &label, None, e))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| Error::io("fstat", &label, None, e))?;
    let length = stat.st_size as u64;
    if length < end {
        return Err(Error::Usage(format!(
            "{label}: {length} bytes now, fewer than when the tree was split; run every shard again"
        )));
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"flexio-shard-upload-1\0");
    hasher.update(&(relative.len() as u64).to_le_bytes());
    hasher.update(relative);
    for value in [length, stat.st_mtime as u64, stat.st_mtime_nsec] {
        hasher.update(&value.to_le_bytes());
    }
    let upload = hasher.finalize().to_hex()[..32].to_string();
    let single = PutOptions {
        streams: 1,
        ..options.clone()
    };
    let sender = Sender {
        url: target,
        token,
        file: &file,
        label: &label,
        length,
        keep: keep_lines(&stat),
        options: &single,
        rate: rate.clone(),
    };
    sender.in_pieces(&upload, start..end)?;
    Ok(end - start)
}
