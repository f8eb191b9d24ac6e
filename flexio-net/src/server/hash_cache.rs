//! Chunk hashes the server already computed, kept while the file is
//! unchanged, so a manifest asked for again (each `flexio get` asks for
//! one) costs no second read of the file. A file is the same while its
//! device, inode, size, mtime and ctime are (ctime cannot be set back by a
//! user). Bounded by the number of chunks held; when full it starts over.

use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex};

use rustix::fs::Stat;

/// The most chunk hashes held (32 MiB of hex and overhead at most,
/// covering about 1 TiB of files).
const MAX_CHUNKS: usize = 1 << 20;

use super::offload::Cancel;
use crate::walk::{file_key, FileKey as Key};

#[derive(Default)]
pub(crate) struct HashCache {
    entries: Mutex<Held>,
}

/// The hashes by file, and how many chunks they cover in all.
#[derive(Default)]
struct Held {
    by_file: HashMap<Key, Arc<Vec<String>>>,
    chunks: usize,
}

impl HashCache {
    /// The hashes held for the file version `key`, if any: a manifest of
    /// an unchanged tree opens none of its files.
    pub fn cached(&self, key: &Key) -> Option<Arc<Vec<String>>> {
        self.entries
            .lock()
            .unwrap()
            .by_file
            .get(key)
            .map(Arc::clone)
    }

    /// The chunk hashes of `file`, whose `fstat` is `stat`: from the cache,
    /// or computed (and kept) — unless `cancel` is set first, which stops
    /// the hashing between chunks (`ErrorKind::Interrupted`).
    pub fn hashes(
        &self,
        file: BorrowedFd<'_>,
        stat: &Stat,
        cancel: &Cancel,
    ) -> std::io::Result<Arc<Vec<String>>> {
        let key = file_key(stat);
        if let Some(found) = self.cached(&key) {
            return Ok(found);
        }
        let size = stat.st_size as u64;
        let chunks = 0..size.div_ceil(crate::manifest::CHUNK_SIZE);
        let stop = || cancel.cancelled();
        let hashes = Arc::new(crate::manifest::hash_chunks_until(
            file, size, chunks, &stop,
        )?);
        // Changed while hashed: answer, but do not keep.
        let after = rustix::fs::fstat(file)?;
        if (
            after.st_size,
            after.st_mtime,
            after.st_mtime_nsec,
            after.st_ctime,
            after.st_ctime_nsec,
        ) != (
            stat.st_size,
            stat.st_mtime,
            stat.st_mtime_nsec,
            stat.st_ctime,
            stat.st_ctime_nsec,
        ) {
            return Ok(hashes);
        }
        let mut entries = self.entries.lock().unwrap();
        if entries.chunks + hashes.len() > MAX_CHUNKS {
            entries.by_file.clear();
            entries.chunks = 0;
        }
        if hashes.len() <= MAX_CHUNKS {
            entries.chunks += hashes.len();
            entries.by_file.insert(key, Arc::clone(&hashes));
        }
        Ok(hashes)
    }
}
