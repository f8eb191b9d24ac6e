//! [`FileCache`]: one block cache, one budget, in front of many files read
//! with `O_DIRECT` — what a file server needs, where one client scanning a
//! large file must not evict the blocks every other client reads.
//!
//! Each version of a file (device, inode, size, modification and change
//! times) gets a number, and its blocks are keyed `number << FILE_KEY_SHIFT
//! | block` in the same shards and policy as a [`super::BlockCache`]'s. A
//! file that changes gets a new number, so its old blocks are never served
//! again and simply age out. Read-only: nothing is ever dirty.
//!
//! The change time is what catches a rewrite that keeps the size and puts
//! the modification time back (`cp -p backup f`, `touch -r`, `rsync -t`
//! in place): nothing can set it but the kernel, which moves it on every
//! write, truncation, chmod or rename. A file replaced by rename (as every
//! `flexio serve` PUT is) is another inode. The version is taken from
//! `fstat` of the open descriptor before every read through the cache, so
//! a response that is being sent while its file changes reads the new
//! bytes from its next piece on, and one cut short by a truncation ends
//! with an error rather than with blocks of the old file.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex};

use super::device::{Device, IoCounters};
use super::read::Source;
use super::{lock, CacheConfig, CacheStats, Inner};
use crate::error::{Error, Result};
use crate::policy::{Key, PolicyName};

/// Where a file's number starts in a key: below it, 2^36 blocks per file
/// (256 TiB of 4 KiB blocks); above it, 2^28 file versions.
pub(crate) const FILE_KEY_SHIFT: u32 = 36;

/// File versions remembered before the table starts over (numbers are
/// never reused, so forgetting only costs a version its cached blocks).
const MAX_REMEMBERED_FILES: usize = 1 << 20;

/// What makes a file version: device, inode, size, mtime and ctime (each
/// in seconds and nanoseconds).
type FileVersion = (u64, u64, u64, (i64, i64), (i64, i64));

/// A block cache of fixed capacity shared by many files, read through
/// `O_DIRECT`.
///
/// # Examples
/// ```
/// use flexio_cache::{CacheConfig, FileCache};
/// let dir = tempfile::tempdir_in(".").unwrap();
/// let path = dir.path().join("data");
/// std::fs::write(&path, vec![5u8; 100_000]).unwrap();
/// let cache = FileCache::new(CacheConfig::new(1 << 20)).unwrap();
/// let file = std::fs::File::open(&path).unwrap();
/// let cached = cache.open(&file, "data").unwrap();
/// let mut buf = [0u8; 10];
/// assert_eq!(cached.read_at(&mut buf, 99_995).unwrap(), 5);
/// cached.read_at(&mut buf, 99_995).unwrap();
/// assert_eq!(cache.stats().hits, 1);
/// ```
pub struct FileCache {
    inner: Arc<Inner>,
    versions: Mutex<Versions>,
}

#[derive(Default)]
struct Versions {
    numbers: HashMap<FileVersion, u64>,
    next: u64,
}

/// A file opened through a [`FileCache`]: its own `O_DIRECT` descriptor
/// and its range of keys.
pub struct CachedFile<'a> {
    inner: &'a Inner,
    device: Device,
    len: u64,
    base: Key,
}

impl FileCache {
    /// An empty cache made by `config` (its flush interval and `direct`
    /// setting do not apply: files are read-only and always `O_DIRECT`).
    ///
    /// # Errors
    /// [`Error::Usage`] for a block size that is not a power of two of at
    /// least 512 or a capacity under one block.
    pub fn new(config: CacheConfig) -> Result<FileCache> {
        config.check()?;
        let inner = Inner::new(&config, None, 0, Arc::new(IoCounters::default()));
        Ok(FileCache {
            inner: Arc::new(inner),
            versions: Mutex::new(Versions::default()),
        })
    }

    /// Puts the cache in front of `file`, a regular file open for reading,
    /// named `label` in errors: opens it again with `O_DIRECT` (the
    /// caller's descriptor is left as it is) and finds its blocks' keys.
    ///
    /// # Errors
    /// [`Error::Io`] when `fstat` or the reopen fails (EINVAL: the file
    /// system refuses `O_DIRECT`, as tmpfs does); [`Error::Usage`] for a
    /// file of more than 2^36 blocks.
    pub fn open(&self, file: &impl AsFd, label: &str) -> Result<CachedFile<'_>> {
        let stat = rustix::fs::fstat(file).map_err(|e| Error::Io {
            op: "fstat",
            path: label.to_string(),
            offset: None,
            source: e.into(),
        })?;
        let len = stat.st_size as u64;
        if len.div_ceil(self.inner.block_size as u64) >= 1 << FILE_KEY_SHIFT {
            return Err(Error::Usage(format!(
                "{label}: {len} bytes is more blocks than the cache can key"
            )));
        }
        let version = (
            stat.st_dev,
            stat.st_ino,
            len,
            (stat.st_mtime, stat.st_mtime_nsec as i64),
            (stat.st_ctime, stat.st_ctime_nsec as i64),
        );
        let number = {
            let mut versions = lock(&self.versions);
            if versions.numbers.len() >= MAX_REMEMBERED_FILES {
                versions.numbers.clear();
            }
            let next = versions.next;
            let number = *versions.numbers.entry(version).or_insert(next);
            if number == next {
                versions.next += 1;
            }
            number
        };
        if number >= 1 << (u64::BITS - FILE_KEY_SHIFT) {
            return Err(Error::Usage(format!(
                "{label}: the cache has keyed all the file versions it can"
            )));
        }
        let device = Device::reopen_read_only(file.as_fd(), label, Arc::clone(&self.inner.io))?;
        Ok(CachedFile {
            inner: &self.inner,
            device,
            len,
            base: number << FILE_KEY_SHIFT,
        })
    }

    /// The counters so far, summed over every file.
    pub fn stats(&self) -> CacheStats {
        self.inner.stats()
    }

    /// The capacity in blocks.
    pub fn capacity_blocks(&self) -> usize {
        self.inner.capacity_blocks
    }

    /// The block size in bytes.
    pub fn block_size(&self) -> usize {
        self.inner.block_size
    }

    /// The eviction policy.
    pub fn policy(&self) -> PolicyName {
        self.inner.policy
    }
}

impl CachedFile<'_> {
    /// The file's length in bytes when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads up to `buf.len()` bytes at `offset` into `buf` through the
    /// cache and returns how many (fewer only at the end of the file, 0
    /// past it). Adjacent missing blocks are read in one request, and a
    /// sequential reader is read ahead, as in [`super::BlockCache`].
    ///
    /// # Errors
    /// [`Error::Io`] when reading a missing block from the file fails.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let src = Source {
            device: &self.device,
            len: self.len,
            base: self.base,
        };
        self.inner.read_at(&src, buf, offset)
    }
}
