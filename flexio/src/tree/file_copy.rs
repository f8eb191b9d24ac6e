//! One regular file of a tree: opened, its bytes moved into a new file
//! beside the destination (a reflink first where the file systems share
//! extents, else the flow's mechanism over its data segments, so holes
//! stay holes), its attributes set on the open descriptor, and only then
//! linked in under its name — or, inside a staging directory (see
//! `staging.rs`), made under its name at once and removed if it fails.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::io::Errno;

use super::metadata::{copy_xattrs, creation_mode, keep_owner, new_file_mode, set_times};
use super::options::TreeOptions;
use super::queue::FileJob;
use crate::endpoint::{existing_destination, EndpointKind, FileSink};
use crate::error::{Error, Result};
use crate::mechanism::MechanismName;
use crate::range::{Mover, RangeEnd, RangeRequest};
use crate::report::Fallback;

/// What one worker keeps from file to file: its buffers and pipe, so that
/// nothing is allocated per file, and whether reflinks were refused.
pub(crate) struct Worker<'a> {
    pub options: &'a TreeOptions,
    pub umask: u32,
    pub mover: Mover,
    /// Set once the destination's file system refuses FICLONE: later files
    /// go straight to their mechanism instead of asking again.
    pub reflink_refused: &'a AtomicBool,
    pub progress: &'a std::sync::atomic::AtomicU64,
    /// The tree's rate, shared by every worker.
    pub rate: Option<std::sync::Arc<crate::pace::TokenBucket>>,
}

/// How one file's bytes moved.
pub(crate) struct FileOutcome {
    /// `reflink`, or the mechanism that finished.
    pub method: &'static str,
    /// Bytes of data (holes not counted).
    pub bytes: u64,
    pub fallbacks: Vec<Fallback>,
    pub verified: bool,
}

impl Worker<'_> {
    /// Copies `source` to `target` (replacing a file there).
    pub fn copy_file(&mut self, job: &FileJob) -> Result<FileOutcome> {
        let (source, target) = (job.source.as_path(), job.target.as_path());
        let label = source.display().to_string();
        let follow = self.options.symlinks == super::Symlinks::FollowAll;
        let file = File::options()
            .read(true)
            .custom_flags(if follow { 0 } else { libc::O_NOFOLLOW })
            .open(source)
            .map_err(|e| Error::io("open", &label, None, e))?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io("fstat", &label, None, e))?;
        // A symlink in the destination is written through, as cp does
        // (its target keeps its mode unless the mode is preserved); a
        // dangling one is refused.
        let existing = match job.in_new_directory {
            true => None,
            false => existing_destination(target)?,
        };
        if let Some(old) = &existing {
            if old.meta.is_dir() {
                return Err(Error::usage(format!(
                    "{}: cannot overwrite a directory with a file",
                    target.display()
                )));
            }
            if old.through_link && !old.meta.is_file() {
                return Err(Error::usage(format!(
                    "{}: a symlink to a special file; not writing through it",
                    target.display()
                )));
            }
        }
        let preserve = self.options.preserve;
        let mode = creation_mode(
            match &existing {
                Some(old) if !preserve.mode => old.meta.mode() & 0o7777,
                _ => new_file_mode(meta.mode(), preserve, self.umask),
            },
            self.umask,
        );
        // Inside a staging directory the whole tree is the temporary.
        let sink = match (job.staged, &existing) {
            (true, _) => FileSink::create_staged(target, mode)?,
            (false, Some(old)) => FileSink::create(&old.replace, mode)?.replacing(),
            (false, None) => FileSink::create(target, mode)?,
        };
        if preserve.ownership {
            keep_owner(sink.fd(), meta.uid(), meta.gid());
        } else if let Some(old) = &existing {
            keep_owner(sink.fd(), old.meta.uid(), old.meta.gid());
        }
        let (method, fallbacks) = self.move_bytes(&file, &meta, &sink, &label, target)?;
        let target_label = target.display().to_string();
        if preserve.xattr {
            copy_xattrs(file.as_fd(), sink.fd(), &label, &target_label)?;
        }
        if preserve.timestamps {
            set_times(sink.fd(), &meta, &target_label)?;
        }
        // `--fsync` syncs each destination file system once, at the end.
        sink.finish(false)?;
        let verified = self.options.verify && {
            verify_copy(&file, target, meta.size(), &label)?;
            true
        };
        Ok(FileOutcome {
            method,
            bytes: data_bytes(&meta),
            fallbacks,
            verified,
        })
    }

    fn move_bytes(
        &mut self,
        file: &File,
        meta: &std::fs::Metadata,
        sink: &FileSink,
        label: &str,
        target: &Path,
    ) -> Result<(&'static str, Vec<Fallback>)> {
        let size = meta.size();
        let mut fallbacks = Vec::new();
        let named = self.options.mechanism;
        if size == 0 {
            return Ok((mechanism_label(named), fallbacks));
        }
        if named == MechanismName::Auto && !self.reflink_refused.load(Ordering::Relaxed) {
            match rustix::fs::ioctl_ficlone(sink.fd(), file) {
                Ok(()) => {
                    self.progress.fetch_add(data_bytes(meta), Ordering::Relaxed);
                    return Ok(("reflink", fallbacks));
                }
                Err(errno) if reflink_unsupported(errno) => {
                    self.reflink_refused.store(true, Ordering::Relaxed);
                }
                Err(errno) => {
                    return Err(Error::io(
                        "ioctl(FICLONE)",
                        target.display().to_string(),
                        Some(0),
                        std::io::Error::from(errno),
                    ))
                }
            }
        }
        let sparse = meta.blocks() * 512 < size;
        let segments = if sparse {
            crate::measure::data_segments(file, 0, size)
                .map_err(|e| Error::io("lseek(SEEK_DATA)", label, Some(0), e))?
        } else {
            vec![(0, size)]
        };
        let mut current = match named {
            MechanismName::Auto => crate::builtin_choice(EndpointKind::File, EndpointKind::File),
            named => named,
        };
        let target_label = target.display().to_string();
        let source_end = RangeEnd::with_kind(file.as_fd(), EndpointKind::File, label);
        let sink_end = RangeEnd::with_kind(sink.fd(), EndpointKind::File, target_label.as_str());
        let mut request = RangeRequest::new(0, 0, None).via(current);
        request.params = self.options.params.clone();
        request.strict = self.options.strict;
        request.pacing = crate::pace::Pacing {
            rate: None,
            ..self.options.pacing
        };
        request.shared_rate = self.rate.clone();
        for (start, length) in segments {
            request.source_offset = start;
            request.sink_offset = start;
            request.length = Some(length);
            let report =
                self.mover
                    .move_range(&source_end, &sink_end, &request, Some(self.progress))?;
            fallbacks.extend(report.fallbacks);
            if let Some(used) = report.mechanism_used {
                current = used;
                request.mechanism = used;
            }
        }
        if sparse {
            rustix::fs::ftruncate(sink.fd(), size)
                .map_err(|e| Error::io("ftruncate", &target_label, Some(size), e))?;
        }
        Ok((current.as_str(), fallbacks))
    }
}

/// The name a file's way of copying goes by in reports.
fn mechanism_label(named: MechanismName) -> &'static str {
    match named {
        MechanismName::Auto => "empty",
        named => named.as_str(),
    }
}

/// Bytes of data in a file: its size less holes, as far as its blocks
/// tell (a file system that reports no blocks still holds the bytes).
fn data_bytes(meta: &std::fs::Metadata) -> u64 {
    match meta.blocks() {
        0 => meta.size(),
        blocks => meta.size().min(blocks * 512),
    }
}

/// FICLONE's ways of saying "not between these files".
fn reflink_unsupported(errno: Errno) -> bool {
    [
        Errno::OPNOTSUPP,
        Errno::XDEV,
        Errno::INVAL,
        Errno::NOTTY,
        Errno::BADF,
        Errno::PERM,
    ]
    .contains(&errno)
}

/// Hashes the source's first `size` bytes and the copy (by its final name)
/// and fails on a difference.
fn verify_copy(source: &File, target: &Path, size: u64, label: &str) -> Result<()> {
    let target_label = target.display().to_string();
    let copy =
        File::open(target).map_err(|e| Error::io("open for verify", &target_label, None, e))?;
    let source_hash = crate::verify::hash_file(source, 0, size, label)?;
    let sink_hash = crate::verify::hash_file(&copy, 0, size, &target_label)?;
    if source_hash != sink_hash {
        return Err(Error::VerifyMismatch {
            source_hash: source_hash.to_hex().to_string(),
            sink_hash: sink_hash.to_hex().to_string(),
        });
    }
    Ok(())
}
