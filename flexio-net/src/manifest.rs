//! `?manifest`: a JSON description of a file or a subtree — path, type,
//! size, mode, mtime, link target, and BLAKE3 of every fixed-size chunk of
//! every file — that a client checks what it fetched against.

use std::os::fd::BorrowedFd;

use serde::{Deserialize, Serialize};

use crate::walk::Entry;

/// The manifest format's version.
pub const MANIFEST_SCHEMA_VERSION: u32 = 1;

/// The bytes one BLAKE3 hash of a manifest covers (the last chunk of a
/// file may be shorter).
pub const CHUNK_SIZE: u64 = 1 << 20;

/// The largest manifest a client reads (its Content-Length is checked
/// before anything is allocated).
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;

/// A file or subtree as the server saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Bytes per hashed chunk.
    pub chunk_size: u64,
    /// Every entry, each directory before its contents.
    pub entries: Vec<ManifestEntry>,
}

/// One entry of a [`Manifest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Relative to the manifest's directory (`/`-separated); for a file's
    /// own manifest, its name. Names that are not UTF-8 or hold a control
    /// character (a tab) are percent-encoded, and `path_percent_encoded`
    /// says so.
    pub path: String,
    /// Whether `path` is percent-encoded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub path_percent_encoded: bool,
    /// `file`, `directory`, `symlink` or `other`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Bytes (files only; 0 otherwise).
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
    /// Its nanoseconds.
    pub mtime_nsec: u32,
    /// A symlink's target. A target that is not UTF-8 is percent-encoded
    /// (every byte but `A-Za-z0-9-._~`), and `link_target_percent_encoded`
    /// says so: its bytes arrive exactly, where lossy UTF-8 made U+FFFD of
    /// them. A manifest without the flag reads as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_target: Option<String>,
    /// Whether `link_target` is percent-encoded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub link_target_percent_encoded: bool,
    /// BLAKE3 (hex) of each chunk, for files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blake3: Vec<String>,
}

/// BLAKE3 of each [`CHUNK_SIZE`] chunk of the first `size` bytes of
/// `file`, read with `pread`.
///
/// # Errors
/// A read error, or `UnexpectedEof` when the file holds fewer bytes.
///
/// # Examples
/// ```
/// let file = tempfile::tempfile().unwrap();
/// rustix::io::pwrite(&file, b"abc", 0).unwrap();
/// let hashes = flexio_net::manifest::chunk_hashes(std::os::fd::AsFd::as_fd(&file), 3).unwrap();
/// assert_eq!(hashes, vec![blake3::hash(b"abc").to_hex().to_string()]);
/// ```
pub fn chunk_hashes(file: BorrowedFd<'_>, size: u64) -> std::io::Result<Vec<String>> {
    hash_chunks(file, size, 0..size.div_ceil(CHUNK_SIZE))
}

/// As [`chunk_hashes`], the chunks split among up to `threads` threads
/// (each chunk is hashed on its own, so the result is the same).
///
/// # Errors
/// As [`chunk_hashes`].
///
/// # Examples
/// ```
/// let file = tempfile::tempfile().unwrap();
/// rustix::io::pwrite(&file, &vec![7u8; 3 << 20], 0).unwrap();
/// let fd = std::os::fd::AsFd::as_fd(&file);
/// assert_eq!(
///     flexio_net::manifest::chunk_hashes_parallel(fd, 3 << 20, 2).unwrap(),
///     flexio_net::manifest::chunk_hashes(fd, 3 << 20).unwrap()
/// );
/// ```
pub fn chunk_hashes_parallel(
    file: BorrowedFd<'_>,
    size: u64,
    threads: usize,
) -> std::io::Result<Vec<String>> {
    let chunks = size.div_ceil(CHUNK_SIZE);
    let threads = (threads.max(1) as u64).min(chunks.max(1));
    let per_thread = chunks.div_ceil(threads);
    let parts: Vec<std::io::Result<Vec<String>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let range = i * per_thread..((i + 1) * per_thread).min(chunks);
                scope.spawn(move || hash_chunks(file, size, range))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a hashing thread panicked"))
            .collect()
    });
    let mut hashes = Vec::with_capacity(chunks as usize);
    for part in parts {
        hashes.extend(part?);
    }
    Ok(hashes)
}

/// BLAKE3 of the chunks numbered `chunks` of the first `size` bytes.
pub(crate) fn hash_chunks(
    file: BorrowedFd<'_>,
    size: u64,
    chunks: std::ops::Range<u64>,
) -> std::io::Result<Vec<String>> {
    hash_chunks_until(file, size, chunks, &|| false)
}

/// As [`hash_chunks`], `stop` asked before each chunk: its `true` ends
/// the hashing with `ErrorKind::Interrupted` (nobody waits for it).
pub(crate) fn hash_chunks_until(
    file: BorrowedFd<'_>,
    size: u64,
    chunks: std::ops::Range<u64>,
    stop: &dyn Fn() -> bool,
) -> std::io::Result<Vec<String>> {
    let mut hashes = Vec::with_capacity((chunks.end - chunks.start) as usize);
    let mut buffer = vec![0u8; CHUNK_SIZE.min(size) as usize];
    for chunk in chunks {
        if stop() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "hashing stopped: nobody waits for it",
            ));
        }
        let offset = chunk * CHUNK_SIZE;
        let want = (size - offset).min(CHUNK_SIZE) as usize;
        let mut filled = 0;
        while filled < want {
            match rustix::io::pread(file, &mut buffer[filled..want], offset + filled as u64) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => filled += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(errno) => return Err(errno.into()),
            }
        }
        hashes.push(chunk_hash(&buffer[..want]));
    }
    Ok(hashes)
}

/// The manifest's hash of one chunk's bytes: BLAKE3, in hex.
pub(crate) fn chunk_hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The manifest entry of `entry`, named `name`, with the chunk hashes
/// of its content (empty but for files).
pub(crate) fn describe(entry: &Entry, name: &[u8], blake3: Vec<String>) -> ManifestEntry {
    let (path, path_percent_encoded) = text_or_percent_encoded(name);
    let (link_target, link_target_percent_encoded) = match &entry.link_target {
        Some(target) => {
            let (text, encoded) = text_or_percent_encoded(target);
            (Some(text), encoded)
        }
        None => (None, false),
    };
    ManifestEntry {
        path,
        path_percent_encoded,
        kind: entry.kind.as_str().to_string(),
        size: entry.size,
        mode: entry.mode,
        mtime: entry.mtime,
        mtime_nsec: entry.mtime_nsec,
        link_target,
        link_target_percent_encoded,
        blake3,
    }
}

/// `bytes` as text when they are UTF-8 without a control character, else
/// percent-encoded (and so flagged): either way exactly the bytes, read
/// back, and no raw tab or escape for a reader of the JSON to print.
pub(crate) fn text_or_percent_encoded(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(char::is_control) => (text.to_string(), false),
        _ => (crate::names::percent_encode(bytes), true),
    }
}
