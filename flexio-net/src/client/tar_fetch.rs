//! Many small files in one request: a tree get fetches a directory whose
//! files are all small as `DIR/?tar`, one ustar stream, instead of one GET
//! per file. The stream is read as untrusted: every header's checksum is
//! checked, every file must be one the (already checked) manifest lists
//! under that directory, with the manifest's size, at most once; sizes are
//! capped before anything is allocated; and the stream must end exactly at
//! its Content-Length with every listed file seen. The stream is read in
//! blocks of up to 256 KiB into one buffer and each small body written from
//! it (one user-space copy, but two system calls per file instead of a
//! splice pair and a read per header), then checked.
//!
//! Where the files go ([`TarInto`]): a directory new to this run is built
//! in a hidden staging directory beside it ([`flexio::tree::Staging`]), each
//! file made there under its own name, checked, given its mtime and closed
//! (four system calls), and the whole directory renamed into place when the
//! stream is done; anywhere else each file is a [`NewFile`] checked and
//! linked in like a file fetched alone ([`super::tree_dest::finish`]).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use flexio::range::NewFile;

use super::connection::{Connection, Url};
use super::tree_dest::{finish, join_label, parent_of, set_mtime, Planned};
use super::GetOptions;
use crate::error::{Error, Result};
use crate::names::percent_encode;
use crate::tar_stream::BLOCK;
use crate::walk::open_beneath;

/// Where a directory's tar stream is written.
#[derive(Clone, Copy)]
pub(super) enum TarInto<'a> {
    /// Beneath the destination's root, file by file through [`NewFile`].
    Final(&'a OwnedFd),
    /// Into a staging directory that stands for the fetched directory
    /// itself: plain creates, no per-file temporary.
    Staged(BorrowedFd<'a>),
}

/// Files up to this size are fetched in a directory's tar stream.
pub(super) const SMALL_FILE: u64 = 64 << 10;

// A small file is one manifest chunk: its hash is taken from the buffer.
const _: () = assert!(SMALL_FILE <= crate::manifest::CHUNK_SIZE);

/// The largest PAX extended header read (names and link targets only).
const MAX_PAX: u64 = 64 << 10;

/// The read buffer: a header, a PAX header and a small body all fit.
const BUFFER: usize = 256 << 10;

/// Reads a response body of known length from the socket in large blocks,
/// never past its end (the connection carries the next request).
struct BodyReader<'c> {
    stream: &'c mut super::transport::Stream,
    peer: &'c str,
    /// Body bytes not yet read from the socket.
    left: u64,
    buffer: Vec<u8>,
    start: usize,
    end: usize,
}

impl BodyReader<'_> {
    /// Body bytes not yet handed out (buffered or still in the socket).
    fn remaining(&self) -> u64 {
        self.left + (self.end - self.start) as u64
    }

    /// The next `n` bytes (`n` ≤ the buffer), reading more when needed.
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.end - self.start < n {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            while self.end < n {
                let room = (BUFFER - self.end).min(self.left as usize);
                if room == 0 {
                    return Err(Error::protocol(self.peer, "the tar stream ended early"));
                }
                let read = std::io::Read::read(
                    &mut *self.stream,
                    &mut self.buffer[self.end..self.end + room],
                )
                .map_err(|e| Error::io("recv tar stream from", self.peer, None, e))?;
                if read == 0 {
                    return Err(Error::protocol(
                        self.peer,
                        "the server closed the connection inside the tar stream",
                    ));
                }
                self.end += read;
                self.left -= read as u64;
            }
        }
        let taken = &self.buffer[self.start..self.start + n];
        self.start += n;
        Ok(taken)
    }
}

/// Writes all of `bytes` to `file` at its current offset.
fn write_all(file: std::os::fd::BorrowedFd<'_>, mut bytes: &[u8], label: &str) -> Result<()> {
    let mut offset = 0u64;
    while !bytes.is_empty() {
        match rustix::io::pwrite(file, bytes, offset) {
            Ok(0) => {
                return Err(Error::io(
                    "write",
                    label,
                    Some(offset),
                    std::io::Error::from(std::io::ErrorKind::WriteZero),
                ))
            }
            Ok(n) => {
                bytes = &bytes[n..];
                offset += n as u64;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(Error::io("write", label, Some(offset), errno)),
        }
    }
    Ok(())
}

/// `fsync(2)` of `fd` when `fsync` is asked for: a staged file, or a
/// staged directory once its entries are made.
fn sync_if(fd: &OwnedFd, fsync: bool, label: &str) -> Result<()> {
    match fsync {
        true => rustix::fs::fsync(fd).map_err(|e| Error::io("fsync", label, None, e)),
        false => Ok(()),
    }
}

/// Reads one octal field (NUL- or space-terminated).
fn octal(field: &[u8]) -> Option<u64> {
    let text: Vec<u8> = field
        .iter()
        .copied()
        .take_while(|&b| b != 0)
        .filter(|&b| b != b' ')
        .collect();
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(std::str::from_utf8(&text).ok()?, 8).ok()
}

fn cstr(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    &field[..end]
}

/// Whether `header`'s checksum field matches its bytes.
fn checksum_ok(header: &[u8]) -> bool {
    let sum: u64 = header
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                u64::from(b' ')
            } else {
                u64::from(b)
            }
        })
        .sum();
    octal(&header[148..156]) == Some(sum)
}

/// The `path` record of a PAX extended header's body, if any.
fn pax_path(body: &[u8]) -> Option<Vec<u8>> {
    let mut rest = body;
    let mut path = None;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ')?;
        let length: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
        if length <= space + 1 || length > rest.len() {
            return None;
        }
        let record = &rest[space + 1..length];
        let record = record.strip_suffix(b"\n")?;
        let equals = record.iter().position(|&b| b == b'=')?;
        if &record[..equals] == b"path" {
            path = Some(record[equals + 1..].to_vec());
        }
        rest = &rest[length..];
    }
    path
}

/// Fetches `files` (every file under the directory `dir`, all small) with
/// one `DIR/?tar` request over `connection`; each is linked in whole and
/// checked, or the call fails.
///
/// # Errors
/// [`Error::Protocol`] when the stream is not the listed files: a bad
/// checksum, an unlisted name, another size, a duplicate, a missing file,
/// a stream longer or shorter than its Content-Length.
pub(super) fn fetch_directory(
    connection: &mut Option<Connection>,
    url: &Url,
    into: TarInto<'_>,
    dir: &[Vec<u8>],
    files: &[&Planned],
    label: &str,
    options: &GetOptions,
) -> Result<()> {
    let encoded: Vec<String> = dir.iter().map(|p| percent_encode(p)).collect();
    let target = format!("{}{}/?tar", url.target, encoded.join("/"));
    let peer = url.with_target(target.clone()).to_string();
    // Paths inside the stream are relative to `dir`.
    let listed: HashMap<Vec<u8>, &Planned> = files
        .iter()
        .map(|f| (f.parts[dir.len()..].join(&b'/'), *f))
        .collect();
    let mut open = match connection.take() {
        Some(open) => open,
        None => Connection::open(url, options.timeout, &options.tls)?,
    };
    open.send_get(&target, "")?;
    let response = open.read_response()?;
    let closes = response.closes();
    let total = response.ok_length(&peer, "a tar stream")?;
    let bad = |why: String| Error::protocol(&peer, format!("tar stream: {why}; not committed"));
    let mut reader = BodyReader {
        stream: &mut open.stream,
        peer: &peer,
        left: total,
        buffer: vec![0u8; BUFFER],
        start: 0,
        end: 0,
    };
    let mut writer = TarWriter {
        into,
        dir,
        label,
        options,
        parent: None,
    };
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    while let Some((path, size)) = next_file(&mut reader, total, &bad)? {
        let entry = listed_entry(&listed, &path, size, &bad)?;
        if !seen.insert(path.clone()) {
            return Err(bad(format!("{:?} twice", String::from_utf8_lossy(&path))));
        }
        // Small by the manifest (checked when the job was made), so it is
        // one chunk and fits the buffer with its padding.
        let body = match size {
            0 => &[][..],
            _ => &reader.take(size.next_multiple_of(BLOCK) as usize)?[..size as usize],
        };
        writer.write(entry, body)?;
    }
    writer.finish()?;
    if seen.len() != listed.len() {
        return Err(bad(format!(
            "{} of the {} listed files were in it",
            seen.len(),
            listed.len()
        )));
    }
    if !closes {
        *connection = Some(open);
    }
    Ok(())
}

/// The next file entry's path and size, its body next in `reader`;
/// `None` at the stream's end (two zero blocks exactly at its length).
/// PAX headers give the next path; directories and symlinks (made from
/// the manifest) are passed over.
fn next_file(
    reader: &mut BodyReader<'_>,
    total: u64,
    bad: &impl Fn(String) -> Error,
) -> Result<Option<(Vec<u8>, u64)>> {
    let mut pending_path: Option<Vec<u8>> = None;
    loop {
        let at = total - reader.remaining();
        if reader.remaining() < BLOCK {
            return Err(bad(format!("it ends inside a header at byte {at}")));
        }
        let header: [u8; BLOCK as usize] =
            reader.take(BLOCK as usize)?.try_into().expect("one block");
        if header.iter().all(|&b| b == 0) {
            if reader.remaining() != BLOCK {
                return Err(bad(format!(
                    "{total} bytes announced, the end found at {at}"
                )));
            }
            if reader.take(BLOCK as usize)?.iter().any(|&b| b != 0) {
                return Err(bad("the end is not two zero blocks".into()));
            }
            return Ok(None);
        }
        if !checksum_ok(&header) {
            return Err(bad(format!("a header checksum fails at byte {at}")));
        }
        let size =
            octal(&header[124..136]).ok_or_else(|| bad("a size that is not octal".into()))?;
        let padded = size.next_multiple_of(BLOCK);
        if padded > reader.remaining() {
            return Err(bad(format!(
                "an entry of {size} bytes runs past the stream's end"
            )));
        }
        let kind = header[156];
        if kind == b'x' {
            if size > MAX_PAX {
                return Err(bad(format!("a PAX header of {size} bytes (cap {MAX_PAX})")));
            }
            let body = reader.take(padded as usize)?;
            pending_path = pax_path(&body[..size as usize]);
            continue;
        }
        let path = pending_path.take().unwrap_or_else(|| {
            let (name, prefix) = (cstr(&header[0..100]), cstr(&header[345..500]));
            if prefix.is_empty() {
                name.to_vec()
            } else {
                [prefix, b"/", name].concat()
            }
        });
        if kind == b'0' || kind == 0 {
            return Ok(Some((path, size)));
        }
        if size != 0 {
            return Err(bad(format!("a non-file entry with {size} bytes")));
        }
    }
}

/// The manifest's entry for `path`, which must list it with `size`.
fn listed_entry<'a>(
    listed: &HashMap<Vec<u8>, &'a Planned>,
    path: &[u8],
    size: u64,
    bad: &impl Fn(String) -> Error,
) -> Result<&'a Planned> {
    let shown = String::from_utf8_lossy(path);
    let Some(entry) = listed.get(path) else {
        return Err(bad(format!(
            "{shown:?} is not a file the manifest lists here"
        )));
    };
    if entry.size != size {
        return Err(bad(format!(
            "{shown:?} has {size} bytes, the manifest says {}",
            entry.size
        )));
    }
    Ok(entry)
}

/// Writes a stream's files where [`TarInto`] says, keeping the directory
/// the last one went into open (a stream lists a directory's files
/// together).
struct TarWriter<'a> {
    into: TarInto<'a>,
    dir: &'a [Vec<u8>],
    label: &'a str,
    options: &'a GetOptions,
    /// The last parent directory, by its path's components.
    parent: Option<(Vec<Vec<u8>>, OwnedFd)>,
}

impl TarWriter<'_> {
    /// `entry`'s directory, opened beneath the destination or the staging
    /// directory (the one before it synced when staged and asked to).
    fn parent_of(&mut self, entry: &Planned) -> Result<&OwnedFd> {
        let parents = entry.parts[..entry.parts.len() - 1].to_vec();
        if self
            .parent
            .as_ref()
            .is_none_or(|(cached, _)| *cached != parents)
        {
            let parent = match self.into {
                TarInto::Final(root) => parent_of(root, &entry.parts, self.label)?.0,
                TarInto::Staged(staged) => {
                    let inside = &entry.parts[self.dir.len()..entry.parts.len() - 1];
                    let parent = open_beneath(staged, &inside.join(&b'/')).map_err(|e| {
                        Error::io("open", join_label(self.label, &parents), None, e)
                    })?;
                    if let Some((_, done)) = &self.parent {
                        sync_if(done, self.options.fsync, self.label)?;
                    }
                    parent
                }
            };
            self.parent = Some((parents, parent));
        }
        Ok(&self.parent.as_ref().expect("just set").1)
    }

    /// Makes `entry` with `body`, hashed from the buffer (not read back)
    /// and checked.
    fn write(&mut self, entry: &Planned, body: &[u8]) -> Result<()> {
        let (label, options, into) = (self.label, self.options, self.into);
        if let Some(progress) = &options.progress {
            progress.add(body.len() as u64);
        }
        let shown = join_label(label, &entry.parts);
        let parent = self.parent_of(entry)?;
        let name = entry.parts.last().expect("a checked path has a component");
        let hashes = match (options.verify, body.len()) {
            (true, 1..) => vec![blake3::hash(body).to_hex().to_string()],
            _ => Vec::new(),
        };
        match into {
            TarInto::Final(_) => {
                let destination = PathBuf::from(format!("/proc/self/fd/{}", parent.as_raw_fd()))
                    .join(OsStr::from_bytes(name));
                let file = NewFile::create(&destination, entry.mode & 0o777)?;
                write_all(file.fd(), body, &shown)?;
                finish(file, entry, shown, options, Some(hashes))
            }
            TarInto::Staged(_) => {
                super::tree_dest::check_hashes(entry, &hashes, &shown, options)?;
                let file = rustix::fs::openat(
                    parent,
                    OsStr::from_bytes(name),
                    rustix::fs::OFlags::WRONLY
                        | rustix::fs::OFlags::CREATE
                        | rustix::fs::OFlags::EXCL
                        | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::from_raw_mode(entry.mode & 0o777),
                )
                .map_err(|e| Error::io("create", &shown, None, e))?;
                write_all(file.as_fd(), body, &shown)?;
                set_mtime(file.as_fd(), entry, &shown)?;
                sync_if(&file, options.fsync, &shown)
            }
        }
    }

    /// Once staged: syncs the last directory files went into, and the
    /// staging directory itself (which names the subdirectories made in
    /// it), when asked to.
    fn finish(self) -> Result<()> {
        let TarInto::Staged(staged) = self.into else {
            return Ok(());
        };
        if let Some((_, last)) = &self.parent {
            sync_if(last, self.options.fsync, self.label)?;
        }
        if self.options.fsync {
            rustix::fs::fsync(staged).map_err(|e| Error::io("fsync", self.label, None, e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_records_give_the_path_and_reject_bad_lengths() {
        assert_eq!(pax_path(b"12 path=a/b\n").as_deref(), Some(&b"a/b"[..]));
        assert_eq!(pax_path(b"99 path=a/b\n"), None);
        assert_eq!(pax_path(b"3 x\n"), None);
    }

    #[test]
    fn octal_fields_and_checksums() {
        assert_eq!(octal(b"0000644\0"), Some(0o644));
        assert_eq!(octal(b"\0\0\0"), Some(0));
        assert_eq!(octal(b"12x\0"), None);
        let mut header = vec![0u8; 512];
        header[..4].copy_from_slice(b"name");
        let sum: u64 = header.iter().map(|&b| u64::from(b)).sum::<u64>() + 8 * u64::from(b' ');
        header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        assert!(checksum_ok(&header));
        header[0] = b'N';
        assert!(!checksum_ok(&header));
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::fuzz_config(4000))]

        /// Any 512-byte block: every field reads as a number or not at
        /// all, the checksum check answers, nothing panics.
        #[test]
        fn fuzz_tar_header_blocks_never_panic(block in prop::collection::vec(any::<u8>(), 512)) {
            for (start, end) in [(100, 108), (124, 136), (136, 148), (148, 156)] {
                let _ = octal(&block[start..end]);
            }
            let _ = checksum_ok(&block);
            prop_assert!(cstr(&block[..100]).len() <= 100);
        }

        /// Any PAX body: a path, when found, is a part of the body.
        #[test]
        fn fuzz_pax_bodies_give_a_path_from_the_body_or_none(body in prop::collection::vec(any::<u8>(), 0..600)) {
            if let Some(path) = pax_path(&body) {
                prop_assert!(path.len() < body.len());
            }
        }

        /// Well-formed records of any length and value give the path back.
        #[test]
        fn fuzz_pax_records_round_trip(path in prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..300)) {
            let mut record = b" path=".to_vec();
            record.extend_from_slice(&path);
            record.push(b'\n');
            let mut length = record.len() + 1;
            while length.to_string().len() + record.len() != length {
                length += 1;
            }
            let mut body = length.to_string().into_bytes();
            body.extend_from_slice(&record);
            prop_assert_eq!(pax_path(&body), Some(path));
        }
    }
}
