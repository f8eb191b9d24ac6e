//! [`BlockCache`]: fixed-size blocks of one file or block device, kept in
//! memory under an eviction policy, read and written through `O_DIRECT`.
//!
//! ```text
//! read_at in 1 block ──► shard.try_hit: seqlock read, no lock ── hit ──► copied out
//!        └ otherwise ─┐
//! read_at / block ──► shard(block) mutex ──► policy.get ── hit ──► copy out / BlockRef
//!                                                  └─ miss ─► read.rs: coalesce runs,
//!                                                             read ahead, io_uring batch,
//!                                                             admit (evict, write back dirty)
//! write_at ─────────► shard mutex ──► frame (loaded if partly written) ──► dirty
//! flush / flusher / drop ──► write_back.rs: dirty runs coalesced, io_uring batch, fdatasync
//! ```

mod device;
mod files;
mod hints;
mod read;
mod shard;
mod write_back;

pub use files::{CachedFile, FileCache};

use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::policy::{Frame, Key, PolicyName};
use crate::sys::frames::Arena;
use device::{Device, IoCounters};
use read::Source;
use shard::{ShardCell, ShardGuard};

/// How misses are read from the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadMode {
    /// One block per request, one request at a time, no read-ahead, the
    /// reader blocked (its CPU free) until the block arrives: what
    /// S.M.A.C.K. calls single-block reads, and its card's DMA of one
    /// cache block.
    SingleBlock,
    /// Each block read as `sector`-byte requests one after another, each
    /// into a bounce buffer that the CPU copies into the block: a card's
    /// single-sector commands with the processor moving the data
    /// (S.M.A.C.K.'s "normal" reads). No coalescing, no read-ahead.
    Sectors {
        /// Bytes per request: a power of two from 512 to the block size.
        sector: usize,
    },
    /// Adjacent misses coalesced into requests of up to `max_blocks`
    /// blocks, several in flight through io_uring, and sequential reads
    /// detected and read ahead.
    MultiBlock {
        /// The most blocks in one request.
        max_blocks: usize,
    },
}

/// How a [`BlockCache`] is made. `new` takes the capacity; the rest are
/// setters with defaults: 4 KiB blocks, [`PolicyName::DEFAULT`], 16
/// shards, multi-block reads of up to 64 blocks, 256 blocks of read-ahead,
/// 16 requests in flight, write-back every 30 s, `O_DIRECT`.
#[derive(Clone, Debug)]
pub struct CacheConfig {
    capacity_bytes: u64,
    block_size: usize,
    policy: PolicyName,
    shards: usize,
    read_mode: ReadMode,
    readahead_blocks: usize,
    queue_depth: usize,
    flush_interval: Option<Duration>,
    direct: bool,
}

impl CacheConfig {
    /// A configuration for a cache of `capacity_bytes` (rounded down to
    /// whole blocks).
    pub const fn new(capacity_bytes: u64) -> Self {
        CacheConfig {
            capacity_bytes,
            block_size: 4096,
            policy: PolicyName::DEFAULT,
            shards: 16,
            read_mode: ReadMode::MultiBlock { max_blocks: 64 },
            readahead_blocks: 256,
            queue_depth: 16,
            flush_interval: Some(Duration::from_secs(30)),
            direct: true,
        }
    }

    /// The block size: a power of two of at least 512 that the device's
    /// direct I/O accepts.
    pub const fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }

    /// The eviction policy.
    pub const fn policy(mut self, policy: PolicyName) -> Self {
        self.policy = policy;
        self
    }

    /// The number of shards, rounded down to a power of two (and fewer when
    /// the cache is too small to give each one 64 blocks).
    pub const fn shards(mut self, shards: usize) -> Self {
        self.shards = shards;
        self
    }

    /// Single-block or multi-block reads.
    pub const fn read_mode(mut self, mode: ReadMode) -> Self {
        self.read_mode = mode;
        self
    }

    /// Blocks read ahead when a read continues where the last one ended
    /// (multi-block mode only; 0 turns read-ahead off).
    pub const fn readahead_blocks(mut self, blocks: usize) -> Self {
        self.readahead_blocks = blocks;
        self
    }

    /// Requests in flight at once (multi-block reads and write-back).
    pub const fn queue_depth(mut self, depth: usize) -> Self {
        self.queue_depth = depth;
        self
    }

    /// How often the background flusher writes dirty blocks back; `None`
    /// for no flusher (then only `flush`, eviction and drop write back).
    pub const fn flush_interval(mut self, interval: Option<Duration>) -> Self {
        self.flush_interval = interval;
        self
    }

    /// Whether to open with `O_DIRECT` (true by default; tmpfs refuses it).
    pub const fn direct(mut self, direct: bool) -> Self {
        self.direct = direct;
        self
    }

    /// The block size and capacity make a cache: a power of two of at
    /// least 512, and at least one block.
    fn check(&self) -> Result<()> {
        let block_size = self.block_size;
        if !block_size.is_power_of_two() || block_size < 512 {
            return Err(Error::Usage(format!(
                "block size {block_size}: a power of two of at least 512, please"
            )));
        }
        if let ReadMode::Sectors { sector } = self.read_mode
            && (!sector.is_power_of_two() || sector < 512 || sector > block_size)
        {
            return Err(Error::Usage(format!(
                "sector of {sector} bytes: a power of two from 512 to the block size \
                     {block_size}, please"
            )));
        }
        if self.capacity_bytes / (block_size as u64) == 0 {
            return Err(Error::Usage(format!(
                "cache of {} bytes: at least one block of {block_size}, please",
                self.capacity_bytes
            )));
        }
        if let Some(available) = memory_available()
            && self.capacity_bytes > available
        {
            return Err(Error::Usage(format!(
                    "cache of {} MiB: more than the {} MiB of memory available (MemAvailable in /proc/meminfo)",
                    self.capacity_bytes >> 20,
                    available >> 20
                )));
        }
        Ok(())
    }
}

/// `MemAvailable` of `/proc/meminfo` in bytes: what the frames may take
/// without pushing the machine into reclaim or the OOM killer.
fn memory_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib << 10)
}

/// Counters of a [`BlockCache`], summed over its shards.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Block lookups (reads and writes) that found the block resident.
    /// Hits served without the lock are counted with a relaxed load and
    /// store, so threads hitting one shard at the same moment may count
    /// as one.
    pub hits: u64,
    /// Block lookups that did not.
    pub misses: u64,
    /// Blocks evicted to make room.
    pub evictions: u64,
    /// Evicted blocks that were dirty and written back first.
    pub eviction_writebacks: u64,
    /// Blocks dirty now.
    pub dirty_blocks: u64,
    /// Blocks read ahead of a sequential reader.
    pub readahead_blocks: u64,
    /// Bytes read from the device.
    pub device_bytes_read: u64,
    /// Bytes written to the device.
    pub device_bytes_written: u64,
    /// Read requests sent to the device.
    pub device_read_requests: u64,
    /// Write requests sent to the device.
    pub device_write_requests: u64,
    /// Why batches ran with `pread`/`pwrite` instead of io_uring, if they
    /// did.
    pub io_uring_refused: Option<String>,
}

/// State shared by the cache handle and its flusher thread.
pub(crate) struct Inner {
    /// A [`BlockCache`]'s device. A [`FileCache`] has none: each file it
    /// reads brings its own (see [`Source`]), and its blocks are never
    /// dirty, so the write path, which uses this one, never runs there.
    device: Option<Device>,
    /// What every device of this cache was sent.
    io: Arc<IoCounters>,
    shards: Vec<CacheLinePadded<ShardCell>>,
    block_size: usize,
    /// `block_size.trailing_zeros()`: block numbers are offsets shifted,
    /// not divided (a 64-bit division costs as much as the rest of a hit).
    block_shift: u32,
    policy: PolicyName,
    capacity_blocks: usize,
    read_mode: ReadMode,
    readahead_blocks: usize,
    queue_depth: usize,
    /// The logical length in bytes: the device's, or more once written
    /// past its end. Never shrinks.
    len: AtomicU64,
    /// Serialises growing `len` with cutting the file back to it.
    size_lock: Mutex<()>,
    /// Ends of recent multi-block misses, to spot sequential readers.
    streams: Mutex<read::Streams>,
    readahead_count: AtomicU64,
    /// An eviction write-back that failed, reported by the next flush
    /// (as the kernel reports a failed page write-back at the next fsync).
    deferred_error: Mutex<Option<Error>>,
    flusher: Mutex<write_back::FlusherState>,
    flusher_wake: std::sync::Condvar,
}

/// A block cache over one file or block device opened with `O_DIRECT`.
///
/// Reads and writes of any size and offset go through fixed-size blocks
/// held in memory; a hit costs a copy and, for LRU and ARC or a read
/// across blocks, its shard's mutex (CLOCK, SIEVE and S3-FIFO serve a read
/// within one block without it), with no system call and no allocation
/// ([`BlockCache::block`] borrows the block under the mutex instead of
/// copying). Writes stay in memory, dirty, until the background flusher,
/// [`BlockCache::flush`], an eviction or drop writes them back in large
/// coalesced requests. A crash loses at most the blocks dirtied since the
/// last write-back, and a block is always written whole (one aligned
/// direct write), so none is torn by a process crash.
///
/// # Examples
/// ```
/// use flexio_cache::{BlockCache, CacheConfig};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("data");
/// std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
/// let cache = BlockCache::open(&path, CacheConfig::new(256 << 10)).unwrap();
/// let mut buf = [0u8; 100];
/// cache.read_at(&mut buf, 5000).unwrap();
/// assert_eq!(buf, [7u8; 100]);
/// cache.write_at(b"hello", 10).unwrap();
/// cache.flush().unwrap();
/// drop(cache);
/// assert_eq!(&std::fs::read(&path).unwrap()[10..15], b"hello");
/// ```
pub struct BlockCache {
    inner: Arc<Inner>,
    flusher: Option<JoinHandle<()>>,
}

/// A resident block, borrowed: derefs to its bytes (fewer than a block at
/// the end of the file). The block's shard stays locked while this lives,
/// so hold it briefly, and drop it before calling the cache again from the
/// same thread (a call that reaches the same shard would wait for it).
///
/// Why the lock, when a copied-out hit goes without it: a `&[u8]` promises
/// that nothing writes those bytes while it lives, and frames are written
/// in place (a write to the block, or an eviction refilling the frame).
/// The lock-free copy gets away with it because it is byte-wise atomic and
/// thrown away when the shard's sequence number moved; a borrow cannot be
/// taken back after the caller has read it. Keeping writers off a borrowed
/// frame without the lock needs the reader to announce itself (a per-frame
/// pin count, or an epoch) before it checks the sequence number, and that
/// store-then-load needs a full fence or a read-modify-write — what taking
/// the uncontended lock costs already — plus writers and evictions that
/// wait for or step around pinned frames (or frames copied on write and
/// freed later, so a cache of more memory than its capacity). So it stays
/// a lock, held briefly: 12-27 M lookups/s on one thread of a busy 2-core
/// VM (`flexio cache bench --parts hits`), above the issue's 10 M/s.
pub struct BlockRef<'a> {
    shard: ShardGuard<'a>,
    frame: Frame,
    len: usize,
}

impl Deref for BlockRef<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.shard.frame(self.frame)[..self.len]
    }
}

impl BlockCache {
    /// Opens `path` (a regular file or a block device, which must exist)
    /// with `O_DIRECT` and puts a cache configured by `config` in front of
    /// it; starts the background flusher when the configuration has an
    /// interval.
    ///
    /// # Errors
    /// [`Error::Usage`] for a block size that is not a power of two of at
    /// least 512 or a capacity under one block; [`Error::Io`] when opening
    /// fails (EINVAL: the file system refuses `O_DIRECT`).
    pub fn open(path: &Path, config: CacheConfig) -> Result<BlockCache> {
        config.check()?;
        let io = Arc::new(IoCounters::default());
        let (device, len) = Device::open(path, config.direct, Arc::clone(&io))?;
        let inner = Arc::new(Inner::new(&config, Some(device), len, io));
        let flusher = config
            .flush_interval
            .map(|interval| write_back::spawn_flusher(Arc::clone(&inner), interval));
        Ok(BlockCache { inner, flusher })
    }

    /// The logical length in bytes.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The block size in bytes.
    pub fn block_size(&self) -> usize {
        self.inner.block_size
    }

    /// The capacity in blocks.
    pub fn capacity_blocks(&self) -> usize {
        self.inner.capacity_blocks
    }

    /// The eviction policy.
    pub fn policy(&self) -> PolicyName {
        self.inner.policy
    }

    /// Reads up to `buf.len()` bytes at `offset` into `buf` and returns how
    /// many (fewer only at the end of the file, 0 past it).
    ///
    /// # Errors
    /// [`Error::Io`] when reading a missing block from the device fails.
    #[inline]
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        self.inner.read_at(&self.inner.own_source(), buf, offset)
    }

    /// The block numbered `block` (byte offset `block * block_size`),
    /// loaded first if it is not resident, borrowed in place: no copy.
    ///
    /// # Errors
    /// [`Error::Usage`] when the block lies past the end of the file;
    /// [`Error::Io`] when loading it fails.
    ///
    /// # Examples
    /// ```
    /// use flexio_cache::{BlockCache, CacheConfig};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("data");
    /// std::fs::write(&path, vec![3u8; 10_000]).unwrap();
    /// let cache = BlockCache::open(&path, CacheConfig::new(1 << 20)).unwrap();
    /// assert_eq!(cache.block(2).unwrap().len(), 10_000 - 8192);
    /// assert!(cache.block(2).unwrap().iter().all(|&b| b == 3));
    /// ```
    pub fn block(&self, block: u64) -> Result<BlockRef<'_>> {
        self.inner.block(block)
    }

    /// Whether block `block` is resident, without counting an access (for
    /// measuring: a reader that asks before reading learns whether its
    /// read hit).
    pub fn is_resident(&self, block: u64) -> bool {
        self.inner
            .shard_of(block)
            .lock()
            .policy
            .peek(block)
            .is_some()
    }

    /// Writes all of `data` at `offset` into the cache (growing the file
    /// when it ends past the end); the device sees it at the next
    /// write-back.
    ///
    /// # Errors
    /// [`Error::Usage`] when writing past the end of a block device;
    /// [`Error::Io`] when a partly written block must be read first and
    /// that fails.
    pub fn write_at(&self, data: &[u8], offset: u64) -> Result<()> {
        self.inner.write_at(data, offset)
    }

    /// Writes every dirty block back, coalesced, and `fdatasync`s: when
    /// this returns `Ok`, everything written before the call is on stable
    /// storage.
    ///
    /// # Errors
    /// [`Error::Io`] when a write or the sync fails, or when an eviction
    /// write-back failed since the last flush (its block is lost, as a
    /// failed page write-back is for the kernel).
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        self.inner.stats()
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        if let Some(flusher) = self.flusher.take() {
            write_back::stop_flusher(&self.inner);
            let _ = flusher.join();
        }
        if let Err(error) = self.inner.flush() {
            eprintln!("flexio-cache: write-back on drop failed: {error}");
        }
    }
}

impl Inner {
    /// The shards, counters and settings of a cache made by a checked
    /// `config`, over `device` (of `len` bytes) or none.
    fn new(config: &CacheConfig, device: Option<Device>, len: u64, io: Arc<IoCounters>) -> Inner {
        let block_size = config.block_size;
        let capacity_blocks = (config.capacity_bytes / block_size as u64) as usize;
        // A power of two, so picking a shard is a mask, not a division.
        let shard_count = prev_power_of_two(config.shards.clamp(1, (capacity_blocks / 64).max(1)));
        let arena = Arena::new(capacity_blocks, block_size);
        let mut first = 0;
        let shards = (0..shard_count)
            .map(|index| {
                // Spread the remainder so the shards add up to the capacity.
                let frames = capacity_blocks / shard_count
                    + usize::from(index < capacity_blocks % shard_count);
                let cell = ShardCell::new(config.policy.build(frames), &arena, first);
                first += frames;
                CacheLinePadded(cell)
            })
            .collect();
        let (max_blocks, queue_depth) = match config.read_mode {
            ReadMode::SingleBlock | ReadMode::Sectors { .. } => (1, 1),
            ReadMode::MultiBlock { max_blocks } => (max_blocks.max(1), config.queue_depth.max(1)),
        };
        Inner {
            device,
            io,
            shards,
            block_size,
            block_shift: block_size.trailing_zeros(),
            policy: config.policy,
            capacity_blocks,
            read_mode: match config.read_mode {
                ReadMode::MultiBlock { .. } => ReadMode::MultiBlock { max_blocks },
                other => other,
            },
            readahead_blocks: config.readahead_blocks,
            queue_depth,
            len: AtomicU64::new(len),
            size_lock: Mutex::new(()),
            streams: Mutex::new(read::Streams::default()),
            readahead_count: AtomicU64::new(0),
            deferred_error: Mutex::new(None),
            flusher: Mutex::new(write_back::FlusherState::default()),
            flusher_wake: std::sync::Condvar::new(),
        }
    }

    #[inline]
    fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    /// The [`BlockCache`]'s device.
    #[inline]
    fn own_device(&self) -> &Device {
        self.device
            .as_ref()
            .expect("only a BlockCache writes, and it has a device")
    }

    /// Reads of a [`BlockCache`]: its device, its length, keys from 0.
    #[inline]
    fn own_source(&self) -> Source<'_> {
        Source {
            device: self.own_device(),
            len: self.len(),
            base: 0,
        }
    }

    #[inline]
    fn shard_of(&self, key: Key) -> &ShardCell {
        // Runs of 8 blocks share a shard: a multi-block request's blocks
        // are installed with few lock changes, and a scan still spreads.
        // A FileCache's file number (the key's high bits) is mixed in so
        // that every file's first blocks do not share one shard.
        let index =
            ((key >> 3) ^ (key >> files::FILE_KEY_SHIFT)) as usize & (self.shards.len() - 1);
        &self.shards[index].0
    }

    fn stats(&self) -> CacheStats {
        let mut stats = CacheStats::default();
        for cell in &self.shards {
            stats.hits += cell.0.lock_free_hits();
            let shard = cell.0.lock();
            stats.hits += shard.hits;
            stats.misses += shard.misses;
            stats.evictions += shard.evictions;
            stats.eviction_writebacks += shard.eviction_writebacks;
            stats.dirty_blocks += shard.dirty_count;
        }
        let io = &self.io;
        stats.readahead_blocks = self.readahead_count.load(Ordering::Relaxed);
        stats.device_bytes_read = io.bytes_read.load(Ordering::Relaxed);
        stats.device_bytes_written = io.bytes_written.load(Ordering::Relaxed);
        stats.device_read_requests = io.read_requests.load(Ordering::Relaxed);
        stats.device_write_requests = io.write_requests.load(Ordering::Relaxed);
        stats.io_uring_refused = io.uring_refused.get().cloned();
        stats
    }
}

/// The largest power of two not above `n` (at least 1).
fn prev_power_of_two(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.max(1).leading_zeros())
}

/// A shard's mutex and counters on cache lines of their own: threads that
/// hit different shards must not bounce one line between their cores
/// (128 bytes: adjacent-line prefetching pairs 64-byte lines on x86).
#[repr(align(128))]
struct CacheLinePadded<T>(T);

/// Locks a mutex, taking the data even if a thread panicked while holding
/// it: every shard update completes before anything that can panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
