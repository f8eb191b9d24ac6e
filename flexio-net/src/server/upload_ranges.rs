//! `PUT` with `Content-Range`: an upload sent in pieces — in any order,
//! over several connections at once, or resumed after either side was
//! interrupted — written into one hidden partial file in the target's
//! directory and renamed into place only when every byte has arrived.
//!
//! - `Content-Range: bytes START-END/TOTAL` with a body of
//!   `END - START + 1` bytes writes that piece (read without blocking
//!   and written at its offset, [`super::intake`]). `Content-Range: bytes */TOTAL` with no body asks what has
//!   arrived.
//! - Which upload a piece belongs to: the target's name, `TOTAL`, and the
//!   client's `Flexio-Upload` value (an identity of its source file, so a
//!   source changed between two attempts starts a new partial file rather
//!   than mixing two versions). All three name the partial file
//!   `.flexio-part-<hash>` and its journal `.flexio-part-<hash>.ranges`:
//!   fixed-length names, whatever the target's.
//! - The journal lists the byte ranges written, merged, rewritten through
//!   a temporary name and `rename`, and only after the piece's bytes are
//!   in the file: a server killed at any point resumes with at most the
//!   pieces in flight to send again. (Like whole-file uploads, pieces are
//!   not fsynced: a power loss can lose more.) A partial upload nobody
//!   adds to for [`ABANDONED_AFTER`] is removed when a new upload starts in
//!   the same directory.
//! - Answers: 202 with `Range: bytes=A-B,C-D` (what has arrived) while
//!   pieces are missing; 201 (created) or 200 (replaced) once the last one
//!   lands and the file is renamed into place.

use super::upload_locks::UploadKey;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::exchange::Exchange;
use super::intake::{Finish, Intake};
use super::request::ResponseHead;
use super::upload_meta::Kept;

/// The most disjoint ranges a journal keeps: a client sending tiny pieces
/// far apart is refused (413) rather than growing it without bound.
pub(crate) const MAX_PIECES_APART: usize = 1024;

/// What a `Content-Range` of a PUT asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PutRange {
    /// The body holds bytes `[start, end)` of a file of `total` bytes.
    Piece { start: u64, end: u64, total: u64 },
    /// `bytes */TOTAL`: what of a file of `total` bytes has arrived?
    Query { total: u64 },
}

impl PutRange {
    pub(crate) fn total(self) -> u64 {
        match self {
            PutRange::Piece { total, .. } | PutRange::Query { total } => total,
        }
    }
}

fn number(text: &str) -> Option<u64> {
    let text = text.trim();
    (!text.is_empty() && text.len() <= 20 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// Parses `bytes START-END/TOTAL` or `bytes */TOTAL`; `None` for anything
/// else, including an end at or past the total or before the start.
pub(crate) fn parse_content_range(value: &str) -> Option<PutRange> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let total = number(total)?;
    if span.trim() == "*" {
        return Some(PutRange::Query { total });
    }
    let (start, end) = span.split_once('-')?;
    let (start, last) = (number(start)?, number(end)?);
    (start <= last && last < total).then_some(PutRange::Piece {
        start,
        end: last + 1,
        total,
    })
}

/// Merged, sorted, disjoint `[start, end)` ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Received(Vec<(u64, u64)>);

impl Received {
    fn add(&mut self, start: u64, end: u64) {
        self.0.push((start, end));
        self.0.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.0.len());
        for &(start, end) in &self.0 {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        self.0 = merged;
    }

    fn covers(&self, total: u64) -> bool {
        self.0.first() == Some(&(0, total))
    }

    /// `bytes=A-B,C-D` (inclusive ends), or `None` when nothing arrived.
    fn header(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| {
            let spans: Vec<String> = self
                .0
                .iter()
                .map(|(start, end)| format!("{start}-{}", end - 1))
                .collect();
            format!("bytes={}", spans.join(","))
        })
    }

    fn bytes(&self) -> u64 {
        self.0.iter().map(|(start, end)| end - start).sum()
    }

    /// The journal's text.
    fn to_text(&self, total: u64) -> String {
        let mut text = format!("flexio upload ranges 1\n{total}\n");
        for (start, end) in &self.0 {
            text += &format!("{start} {end}\n");
        }
        text
    }

    /// A journal's ranges, when it is one for `total` and well formed
    /// (anything else counts as nothing received).
    fn from_text(text: &str, total: u64) -> Option<Received> {
        let mut lines = text.lines();
        if lines.next()? != "flexio upload ranges 1" || number(lines.next()?)? != total {
            return None;
        }
        let mut received = Received::default();
        for line in lines.take(MAX_PIECES_APART + 1) {
            let (start, end) = line.split_once(' ')?;
            let (start, end) = (number(start)?, number(end)?);
            if start >= end || end > total {
                return None;
            }
            received.add(start, end);
        }
        Some(received)
    }
}

/// How long a partial upload may go untouched before a new upload into
/// the same directory removes it.
pub(crate) const ABANDONED_AFTER: std::time::Duration =
    std::time::Duration::from_secs(7 * 24 * 3600);

/// The most unfinished ranged uploads one directory holds: each may be a
/// sparse file of any announced size, so their number is what bounds what
/// clients can leave behind.
pub const MAX_PARTIAL_UPLOADS: usize = 64;

/// The partial files (not their journals) of unfinished uploads in
/// `parent`.
fn count_partial_uploads(parent: &OwnedFd) -> usize {
    let Ok(dir) = rustix::fs::Dir::read_from(parent) else {
        return 0;
    };
    dir.flatten()
        .filter(|entry| {
            let name = entry.file_name().to_bytes();
            name.starts_with(b".flexio-part-") && !name.ends_with(b".ranges")
        })
        .count()
}

/// Removes from `parent` the partial files and journals of uploads that
/// nobody has added a piece to for [`ABANDONED_AFTER`].
fn sweep_abandoned(parent: &OwnedFd, now: std::time::SystemTime) {
    let Ok(dir) = rustix::fs::Dir::read_from(parent) else {
        return;
    };
    let horizon = now
        .checked_sub(ABANDONED_AFTER)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64);
    for entry in dir.flatten() {
        let name = entry.file_name().to_bytes();
        if !name.starts_with(b".flexio-part-") {
            continue;
        }
        let name = std::ffi::OsStr::from_bytes(name);
        match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat)
                if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                    == rustix::fs::FileType::RegularFile
                    && stat.st_mtime < horizon =>
            {
                let _ = rustix::fs::unlinkat(parent, name, AtFlags::empty());
            }
            _ => {}
        }
    }
}

/// The partial file's name for this upload.
fn partial_name(name: &[u8], total: u64, upload: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(name);
    hasher.update(&[0]);
    hasher.update(total.to_string().as_bytes());
    hasher.update(&[0]);
    hasher.update(upload.as_bytes());
    let hash = hasher.finalize().to_hex();
    format!(".flexio-part-{}", &hash[..32])
}

fn read_journal(parent: &OwnedFd, journal: &str, total: u64) -> Received {
    let Ok(fd) = rustix::fs::openat(
        parent,
        journal,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return Received::default();
    };
    let mut text = String::new();
    let mut file = std::fs::File::from(fd);
    let limit = 64 + 42 * (MAX_PIECES_APART as u64 + 1);
    if std::io::Read::read_to_string(&mut std::io::Read::take(&mut file, limit), &mut text).is_err()
    {
        return Received::default();
    }
    Received::from_text(&text, total).unwrap_or_default()
}

fn write_journal(parent: &OwnedFd, journal: &str, text: &str) -> std::io::Result<()> {
    let temporary = format!("{journal}.new");
    let fd = rustix::fs::openat(
        parent,
        temporary.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    std::io::Write::write_all(&mut std::fs::File::from(fd), text.as_bytes())?;
    rustix::fs::renameat(parent, temporary.as_str(), parent, journal)?;
    Ok(())
}

/// Answers a ranged PUT of `name` in `parent` (the checks on the request,
/// its authorisation and the target's directory are done).
pub(crate) fn answer(
    exchange: &mut Exchange<'_>,
    parent_dir: OwnedFd,
    name: &[u8],
    range: PutRange,
    length: u64,
) -> std::io::Result<bool> {
    let parent = &parent_dir;
    let upload = exchange
        .request
        .header("flexio-upload")
        .unwrap_or_default()
        .trim()
        .to_string();
    if upload.len() > 64 || !upload.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return exchange.text(400, "Flexio-Upload must be at most 64 letters and digits");
    }
    let total = range.total();
    let partial = partial_name(name, total, &upload);
    let journal = format!("{partial}.ranges");
    let (start, end) = match range {
        PutRange::Query { .. } => {
            if length != 0 {
                return exchange.text(400, "a Content-Range of bytes */TOTAL takes no body");
            }
            // Read on the offload pool: a journal on a slow disk holds
            // a pool thread, not the worker.
            exchange.offload(Box::new(move |exchange, _| {
                let received = {
                    let _journal = exchange
                        .shared
                        .uploads
                        .lock(lock_key(&parent_dir, &journal)?);
                    read_journal(&parent_dir, &journal, total)
                };
                incomplete(exchange, &received, total)
            }));
            return Ok(exchange.keep_alive);
        }
        PutRange::Piece { start, end, .. } => (start, end),
    };
    if end - start != length {
        return exchange.text(
            400,
            &format!(
                "Content-Range holds {} bytes, Content-Length {length}",
                end - start
            ),
        );
    }
    let open = |flags| {
        rustix::fs::openat(
            parent,
            partial.as_str(),
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC | flags,
            // The mode a whole-file upload gets (less the umask): the
            // partial file is renamed, not copied, into place.
            Mode::from_raw_mode(0o644),
        )
    };
    let free = rustix::fs::fstatvfs(parent)
        .map(|s| s.f_bavail.saturating_mul(s.f_frsize))
        .unwrap_or(0);
    let file = match open(OFlags::empty()) {
        Ok(file) if length > free => {
            drop(file);
            return exchange.text(507, &format!("{length} bytes announced, {free} free"));
        }
        Ok(file) => file,
        Err(Errno::NOENT) => {
            // A new upload: a good moment to forget abandoned ones here.
            sweep_abandoned(parent, std::time::SystemTime::now());
            // The partial file is sparse, so the whole file's size is
            // checked before it starts, as a whole-file PUT's is, and a
            // client may leave only so many unfinished uploads here.
            if total > free {
                return exchange.text(
                    507,
                    &format!("{total} bytes announced for the whole file, {free} free"),
                );
            }
            let unfinished = count_partial_uploads(parent);
            if unfinished >= MAX_PARTIAL_UPLOADS {
                return exchange.text(
                    507,
                    &format!(
                        "{unfinished} unfinished uploads in this directory already: finish one first (they are removed after {} days without a piece)",
                        ABANDONED_AFTER.as_secs() / 86_400
                    ),
                );
            }
            match open(OFlags::CREATE) {
                Ok(file) => file,
                Err(error) => {
                    return exchange.text(500, &format!("cannot make the partial file: {error}"))
                }
            }
        }
        Err(error) => return exchange.text(500, &format!("cannot open the partial file: {error}")),
    };
    let label = String::from_utf8_lossy(name).into_owned();
    let piece = Finish::Piece {
        file,
        parent: parent_dir,
        partial,
        journal,
        name: name.to_vec(),
        start,
        end,
        total,
    };
    let intake = Intake::new(piece, start, length, label);
    if length == 0 {
        exchange.offload(Box::new(move |exchange, _| finish(exchange, intake)));
        return Ok(exchange.keep_alive);
    }
    exchange.read_body(intake);
    Ok(false)
}

/// The lock of the journal `journal` in `parent`.
fn lock_key(parent: &OwnedFd, journal: &str) -> std::io::Result<UploadKey> {
    let stat = rustix::fs::fstat(parent)?;
    Ok((stat.st_dev, stat.st_ino, journal.to_string()))
}

/// Records a piece whose bytes are all written: in the journal, or, when
/// it completes the file, by renaming the file into place. Runs on the
/// offload pool, holding that file's lock only: pieces of other files are
/// recorded at the same time.
pub(crate) fn finish(exchange: &mut Exchange<'_>, intake: Intake) -> std::io::Result<bool> {
    let label = &intake.label;
    let Finish::Piece {
        parent,
        file,
        partial,
        journal,
        name,
        start,
        end,
        total,
        ..
    } = intake.finish
    else {
        unreachable!("upload_ranges::finish is given pieces only")
    };
    let parent = &parent;
    // `Some(replaced)` once the file is whole and in place.
    let (received, committed) = {
        let _journal = exchange.shared.uploads.lock(lock_key(parent, &journal)?);
        let mut received = read_journal(parent, &journal, total);
        received.add(start, end);
        if received.0.len() > MAX_PIECES_APART {
            exchange.keep_alive = false;
            return exchange.text(
                413,
                &format!("more than {MAX_PIECES_APART} pieces apart; send adjacent pieces"),
            );
        }
        let result = if received.covers(total) {
            // The piece that completes the file brings its mode and mtime
            // (checked when it came), given before the name.
            Kept::of(exchange.request)
                .unwrap_or_default()
                .apply(file.as_fd())
                .and_then(|()| commit(parent, &partial, &journal, &name))
                .map(Some)
        } else {
            write_journal(parent, &journal, &received.to_text(total)).map(|()| None)
        };
        match result {
            Ok(committed) => (received, committed),
            Err(error) => {
                exchange.keep_alive = false;
                return exchange.text(500, &format!("recording the piece failed: {error}"));
            }
        }
    };
    let Some(replaced) = committed else {
        return incomplete(exchange, &received, total);
    };
    exchange.keep_alive = exchange.request.keeps_alive();
    let status = if replaced { 200 } else { 201 };
    exchange.text(status, &format!("{label}: {total} bytes written"))
}

/// Gives the whole file its final name and drops the journal;
/// returns whether it replaced a file.
fn commit(parent: &OwnedFd, partial: &str, journal: &str, name: &[u8]) -> std::io::Result<bool> {
    let name = std::ffi::OsStr::from_bytes(name);
    let replaces = match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat)
            if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                == rustix::fs::FileType::Directory =>
        {
            return Err(std::io::Error::other("a directory is there now"))
        }
        Ok(_) => true,
        Err(Errno::NOENT) => false,
        Err(error) => return Err(error.into()),
    };
    rustix::fs::renameat(parent, partial, parent, name)?;
    let _ = rustix::fs::unlinkat(parent, journal, AtFlags::empty());
    Ok(replaces)
}

/// 202: pieces are missing; `Range` says what arrived.
fn incomplete(
    exchange: &mut Exchange<'_>,
    received: &Received,
    total: u64,
) -> std::io::Result<bool> {
    let (_, body) = super::request::text_response(
        202,
        &format!("{} of {total} bytes received", received.bytes()),
    );
    let mut head = ResponseHead::new(202)
        .header("Content-Type", "text/plain; charset=utf-8")
        .header("Content-Length", body.len().to_string());
    if let Some(range) = received.header() {
        head = head.header("Range", range);
    }
    exchange.keep_alive = exchange.request.keeps_alive();
    exchange.head_and_body(head, &body)
}

use std::os::unix::ffi::OsStrExt;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_parse_pieces_and_questions_and_refuse_the_rest() {
        assert_eq!(
            parse_content_range("bytes 0-9/20"),
            Some(PutRange::Piece {
                start: 0,
                end: 10,
                total: 20
            })
        );
        assert_eq!(
            parse_content_range("bytes */20"),
            Some(PutRange::Query { total: 20 })
        );
        for bad in [
            "bytes 0-20/20",
            "bytes 5-4/20",
            "bytes 0-9/*",
            "bytes -9/20",
            "items 0-9/20",
            "bytes 0-9/99999999999999999999999",
            "bytes +0-9/20",
        ] {
            assert_eq!(parse_content_range(bad), None, "{bad}");
        }
    }

    #[test]
    fn received_ranges_merge_and_round_trip_through_the_journal() {
        let mut received = Received::default();
        received.add(10, 20);
        received.add(0, 5);
        received.add(5, 10);
        received.add(30, 40);
        assert_eq!(received.0, vec![(0, 20), (30, 40)]);
        assert_eq!(received.header().as_deref(), Some("bytes=0-19,30-39"));
        assert_eq!(received.bytes(), 30);
        assert!(!received.covers(40));
        let text = received.to_text(40);
        assert_eq!(Received::from_text(&text, 40), Some(received.clone()));
        // Another total, or a range past it: not this upload's journal.
        assert_eq!(Received::from_text(&text, 41), None);
        assert_eq!(Received::from_text(&text, 35), None);
        received.add(20, 30);
        assert!(received.covers(40));
    }

    #[test]
    fn abandoned_partial_uploads_are_swept_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        for name in [
            ".flexio-part-old",
            ".flexio-part-old.ranges",
            ".flexio-part-new",
            "kept-file",
        ] {
            std::fs::write(path(name), b"x").unwrap();
        }
        let old =
            std::time::SystemTime::now() - ABANDONED_AFTER - std::time::Duration::from_secs(60);
        for name in [".flexio-part-old", ".flexio-part-old.ranges", "kept-file"] {
            std::fs::File::options()
                .write(true)
                .open(path(name))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let parent = rustix::fs::open(
            dir.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        sweep_abandoned(&parent, std::time::SystemTime::now());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [".flexio-part-new", "kept-file"]);
    }

    #[test]
    fn partial_names_are_hidden_fixed_and_apart_per_upload() {
        let a = partial_name(b"file", 10, "1");
        assert!(a.starts_with(".flexio-part-") && a.len() == 13 + 32);
        assert_ne!(a, partial_name(b"file", 11, "1"));
        assert_ne!(a, partial_name(b"file", 10, "2"));
        assert_eq!(partial_name(&[b'x'; 255], 10, "1").len(), a.len());
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::fuzz_config(4000))]

        /// Any header value: refused, or a piece inside its total.
        #[test]
        fn fuzz_content_range_values_never_panic(value in "\\PC{0,60}") {
            match parse_content_range(&value) {
                Some(PutRange::Piece { start, end, total }) => prop_assert!(start < end && end <= total),
                Some(PutRange::Query { .. }) | None => {}
            }
        }

        /// `bytes A-B/T` is taken exactly when A <= B < T.
        #[test]
        fn fuzz_numeric_ranges_are_taken_exactly_when_inside(a in any::<u64>(), b in any::<u64>(), t in any::<u64>()) {
            let parsed = parse_content_range(&format!("bytes {a}-{b}/{t}"));
            prop_assert_eq!(parsed.is_some(), a <= b && b < t);
        }

        /// Any journal text: refused, or disjoint sorted ranges inside the
        /// total, never more than the cap.
        #[test]
        fn fuzz_journals_never_panic(text in "(flexio upload ranges 1\n100\n)?([0-9 \n]{0,80})", total in 0u64..200) {
            if let Some(received) = Received::from_text(&text, total) {
                prop_assert!(received.0.len() <= MAX_PIECES_APART + 1);
                for pair in received.0.windows(2) {
                    prop_assert!(pair[0].1 < pair[1].0);
                }
                prop_assert!(received.0.iter().all(|&(s, e)| s < e && e <= total));
            }
        }
    }
}
