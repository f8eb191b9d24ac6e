//! The read path: hits copied out (without the shard's lock where the
//! policy allows, see `shard.rs`, else under it); misses gathered,
//! coalesced into runs of adjacent blocks (plus read-ahead for a sequential
//! reader), read through one io_uring batch, then installed.

use std::sync::atomic::Ordering;

use super::device::Device;
use super::shard::ShardGuard;
use super::{lock, BlockRef, Inner, ReadMode};
use crate::error::{Error, Result};
use crate::policy::{Frame, Key};
use crate::sys::aligned::AlignedBuffer;
use crate::sys::uring::Request;

/// How many concurrent sequential readers are recognised.
const STREAMS: usize = 8;

/// The block each recent multi-block miss (with its read-ahead) ended
/// before: a miss that starts there continues a sequential stream.
#[derive(Default)]
pub(crate) struct Streams {
    ends: [u64; STREAMS],
    next: usize,
}

impl Streams {
    /// Whether a miss of blocks `start..end` starts where a recent one
    /// ended; records it as ending at `ahead_end` (after its read-ahead)
    /// if so, at `end` if not.
    fn continues(&mut self, start: u64, end: u64, ahead_end: u64) -> bool {
        match self.ends.iter().position(|&e| e == start && e != 0) {
            Some(index) => {
                self.ends[index] = ahead_end;
                true
            }
            None => {
                self.ends[self.next] = end;
                self.next = (self.next + 1) % STREAMS;
                false
            }
        }
    }
}

/// Where a read's blocks come from: the device, its length in bytes, and
/// the key of its block 0 — 0 for a [`super::BlockCache`], a range of its
/// own for each file of a [`super::FileCache`]. Block `b` of the source is
/// key `base + b` in the shards and offset `b * block_size` on the device.
pub(crate) struct Source<'a> {
    pub device: &'a Device,
    pub len: u64,
    pub base: Key,
}

/// A block to load: its number in the source, its shard's write epoch
/// when it was found missing, and whether the caller asked for it (or it
/// is read-ahead).
#[derive(Clone, Copy)]
struct Missing {
    block: u64,
    epoch: u64,
    wanted: bool,
}

/// Copies the part of `frame` (block `block`) that overlaps
/// `offset..offset + buf.len()` into `buf`.
fn copy_out(block: u64, block_size: usize, frame: &[u8], buf: &mut [u8], offset: u64) {
    let start = block * block_size as u64;
    let from = offset.max(start);
    let to = (offset + buf.len() as u64).min(start + block_size as u64);
    if from < to {
        let (f, t) = ((from - start) as usize, (to - start) as usize);
        let at = (from - offset) as usize;
        buf[at..at + (t - f)].copy_from_slice(&frame[f..t]);
    }
}

/// Reads each of `blocks` (one a run) into its `block_size` slot of
/// `staging` as `sector`-byte requests one after another, each through a
/// bounce buffer the CPU copies from; a short request (the end of the
/// file) ends its block. The bytes read of each block.
fn by_sectors(
    src: &Source<'_>,
    blocks: impl Iterator<Item = u64>,
    staging: &mut [u8],
    block_size: usize,
    sector: usize,
) -> Result<Vec<usize>> {
    let mut bounce = AlignedBuffer::new(sector, sector);
    let mut got = Vec::new();
    for (slot, block) in staging.chunks_mut(block_size).zip(blocks) {
        let mut done = 0;
        while done < block_size {
            let offset = block * block_size as u64 + done as u64;
            let n = src.device.read_at(bounce.as_mut_slice(), offset)?;
            slot[done..done + n].copy_from_slice(&bounce.as_slice()[..n]);
            done += n;
            if n < sector {
                break;
            }
        }
        got.push(done);
    }
    Ok(got)
}

impl Inner {
    /// Reads up to `buf.len()` bytes of `src` at `offset`.
    ///
    /// The common case — a read within one block that hits without the
    /// lock (see `shard.rs`) — is this small function, inlined into the
    /// caller: one lookup and one copy, and none of the saving and
    /// restoring of registers that the rest of the read path, in
    /// [`Inner::read_at_locked`], needs. Every instruction between two
    /// hits' copies delays the next hit's lookup, whose cache miss the
    /// processor would otherwise start while the last copy finishes.
    #[inline]
    pub(super) fn read_at(&self, src: &Source<'_>, buf: &mut [u8], offset: u64) -> Result<usize> {
        if offset < src.len && !buf.is_empty() {
            let n = buf.len().min((src.len - offset) as usize);
            let shift = self.block_shift;
            let first = offset >> shift;
            if first == (offset + n as u64 - 1) >> shift {
                let within = (offset - (first << shift)) as usize;
                let key = src.base + first;
                if self.shard_of(key).try_hit(key, within, &mut buf[..n]) {
                    return Ok(n);
                }
            }
        }
        self.read_at_locked(src, buf, offset)
    }

    /// [`Inner::read_at`] past its lock-free hit: hits under the lock, and
    /// misses.
    #[inline(never)]
    fn read_at_locked(&self, src: &Source<'_>, buf: &mut [u8], offset: u64) -> Result<usize> {
        if offset >= src.len || buf.is_empty() {
            return Ok(0);
        }
        let n = buf.len().min((src.len - offset) as usize);
        let buf = &mut buf[..n];
        let shift = self.block_shift;
        let (first, last) = (offset >> shift, (offset + n as u64 - 1) >> shift);
        if first == last {
            // A read within one block: no loop. Its lock-free hit was
            // tried in `read_at`.
            let within = (offset - (first << shift)) as usize;
            let cell = self.shard_of(src.base + first);
            let mut shard = cell.lock();
            if let Some(frame) = shard.access(src.base + first) {
                buf.copy_from_slice(&shard.frame(frame)[within..within + n]);
                return Ok(n);
            }
            shard.misses += 1;
            let mut missing = vec![Missing {
                block: first,
                epoch: shard.write_epoch,
                wanted: true,
            }];
            drop(shard);
            self.load(src, &mut missing, buf, offset)?;
            return Ok(n);
        }
        // Empty until the first miss: a read that hits allocates nothing.
        let mut missing = Vec::new();
        for block in first..=last {
            let cell = self.shard_of(src.base + block);
            let start = block << shift;
            let end = (offset + n as u64).min(start + self.block_size as u64);
            let from = offset.max(start);
            let part = &mut buf[(from - offset) as usize..(end - offset) as usize];
            if cell.try_hit(src.base + block, (from - start) as usize, part) {
                continue;
            }
            let mut shard = cell.lock();
            match shard.access(src.base + block) {
                Some(frame) => {
                    copy_out(block, self.block_size, shard.frame(frame), buf, offset);
                }
                None => {
                    shard.misses += 1;
                    let epoch = shard.write_epoch;
                    missing.push(Missing {
                        block,
                        epoch,
                        wanted: true,
                    });
                }
            }
        }
        if !missing.is_empty() {
            self.load(src, &mut missing, buf, offset)?;
        }
        Ok(n)
    }

    /// Reads the `missing` blocks (and read-ahead) from the device, installs
    /// them, and copies the wanted ones into `buf`.
    fn load(
        &self,
        src: &Source<'_>,
        missing: &mut Vec<Missing>,
        buf: &mut [u8],
        offset: u64,
    ) -> Result<()> {
        let max_blocks = match self.read_mode {
            ReadMode::SingleBlock | ReadMode::Sectors { .. } => 1,
            ReadMode::MultiBlock { max_blocks } => max_blocks,
        };
        if max_blocks > 1 {
            self.add_readahead(src, missing);
        }
        // Runs of adjacent blocks, each at most `max_blocks` long.
        let mut runs: Vec<(usize, usize)> = Vec::new(); // (first index, count)
        for (index, m) in missing.iter().enumerate() {
            match runs.last_mut() {
                Some((start, count))
                    if *count < max_blocks && missing[*start].block + *count as u64 == m.block =>
                {
                    *count += 1
                }
                _ => runs.push((index, 1)),
            }
        }
        let bs = self.block_size;
        let mut staging = AlignedBuffer::new(missing.len() * bs, super::shard::FRAME_ALIGN);
        let got = if let ReadMode::Sectors { sector } = self.read_mode {
            let blocks = missing.iter().map(|m| m.block);
            by_sectors(src, blocks, staging.as_mut_slice(), bs, sector)?
        } else {
            let mut requests = Vec::with_capacity(runs.len());
            let mut rest = staging.as_mut_slice();
            for &(start, count) in &runs {
                let (head, tail) = rest.split_at_mut(count * bs);
                rest = tail;
                requests.push(Request::Read {
                    offset: missing[start].block * bs as u64,
                    buf: head,
                });
            }
            src.device.run_batch(&mut requests, self.queue_depth)?
        };
        let len = src.len;
        let staging = staging.as_mut_slice();
        for (&(start, count), got) in runs.iter().zip(got) {
            for i in 0..count {
                let m = missing[start + i];
                let block_bytes = &mut staging[(start + i) * bs..(start + i + 1) * bs];
                // Past the end of the device, or past the logical end (a
                // crash may have left a longer file), a block reads as zeros.
                let valid = got
                    .saturating_sub(i * bs)
                    .min(bs)
                    .min(len.saturating_sub(m.block * bs as u64) as usize);
                block_bytes[valid..].fill(0);
                let key = src.base + m.block;
                let mut shard = self.shard_of(key).lock();
                let installed = if shard.write_epoch == m.epoch && shard.policy.peek(key).is_none()
                {
                    let frame = self.admit(&mut shard, key);
                    shard.store(frame, 0, block_bytes);
                    shard.set_prefetched(key, frame, !m.wanted);
                    Some(frame)
                } else {
                    // Resident now (another reader, or a write): its copy
                    // is the newest.
                    shard.policy.peek(key)
                };
                if m.wanted {
                    match installed {
                        Some(frame) => copy_out(m.block, bs, shard.frame(frame), buf, offset),
                        None => copy_out(m.block, bs, block_bytes, buf, offset),
                    }
                }
            }
        }
        Ok(())
    }

    /// Appends read-ahead blocks when this miss continues a sequential
    /// stream.
    fn add_readahead(&self, src: &Source<'_>, missing: &mut Vec<Missing>) {
        let (start, end) = (missing[0].block, missing[missing.len() - 1].block + 1);
        let total_blocks = src.len.div_ceil(self.block_size as u64);
        // Read-ahead beyond a sixteenth of the cache would evict itself
        // before the reader gets to it (S3-FIFO's small queue holds only a
        // tenth), turning every read into a fresh read-ahead.
        let window = self.readahead_blocks.min(self.capacity_blocks / 16) as u64;
        let ahead_end = (end + window).min(total_blocks);
        // Streams are told apart by key, so two files' streams never meet.
        let sequential = lock(&self.streams).continues(
            src.base + start,
            src.base + end,
            src.base + ahead_end.max(end),
        );
        if !sequential || window == 0 {
            return;
        }
        let mut added = 0;
        for block in end..ahead_end {
            let shard = self.shard_of(src.base + block).lock();
            if shard.policy.peek(src.base + block).is_none() {
                let epoch = shard.write_epoch;
                missing.push(Missing {
                    block,
                    epoch,
                    wanted: false,
                });
                added += 1;
            }
        }
        self.readahead_count.fetch_add(added, Ordering::Relaxed);
    }

    /// Makes room for key `block` in `shard` and returns its frame; a dirty
    /// victim (only a [`super::BlockCache`] has any) is written back first. A failed write-back is kept for the
    /// next flush to report, and the frame is handed over all the same.
    pub(super) fn admit(&self, shard: &mut ShardGuard<'_>, block: u64) -> Frame {
        let (frame, evicted) = shard.insert(block);
        if let Some(old) = evicted {
            shard.evictions += 1;
            if shard.is_dirty(frame) {
                shard.eviction_writebacks += 1;
                let at = old * self.block_size as u64;
                let result = self
                    .own_device()
                    .write_at(shard.frame(frame), at)
                    .and_then(|()| self.trim_after_write(at + self.block_size as u64));
                shard.mark_clean(frame);
                if let Err(error) = result {
                    lock(&self.deferred_error).get_or_insert(error);
                }
            }
        }
        frame
    }

    pub(super) fn block(&self, block: u64) -> Result<BlockRef<'_>> {
        let len = self.len();
        let bs = self.block_size as u64;
        if block >= len.div_ceil(bs) {
            return Err(Error::Usage(format!(
                "block {block} is past the end of {} ({len} bytes)",
                self.own_device().path
            )));
        }
        let valid = (len - block * bs).min(bs) as usize;
        let mut shard = self.shard_of(block).lock();
        if let Some(frame) = shard.access(block) {
            return Ok(BlockRef {
                shard,
                frame,
                len: valid,
            });
        }
        shard.misses += 1;
        // Read before taking a frame: a failed read leaves the cache as it
        // was instead of a frame that claims `block` with other bytes.
        let frame = {
            let staging = self.read_block_from_device(block)?;
            let frame = self.admit(&mut shard, block);
            shard.store(frame, 0, staging.as_slice());
            frame
        };
        Ok(BlockRef {
            shard,
            frame,
            len: valid,
        })
    }

    /// Block `block` as the device has it, zero past the logical end.
    pub(super) fn read_block_from_device(&self, block: u64) -> Result<AlignedBuffer> {
        let bs = self.block_size;
        let mut staging = AlignedBuffer::new(bs, super::shard::FRAME_ALIGN);
        let at = block * bs as u64;
        let got = self.own_device().read_at(staging.as_mut_slice(), at)?;
        let valid = got.min(self.len().saturating_sub(at) as usize);
        staging.as_mut_slice()[valid..].fill(0);
        Ok(staging)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::super::shard::tests::{during_next_copy, rewrite};
    use crate::policy::PolicyName;
    use crate::{BlockCache, CacheConfig};

    #[test]
    fn a_read_overlapped_by_a_write_mid_copy_retries_under_the_lock_and_returns_one_whole_version()
    {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let initial: Vec<u8> = (0..16u8).flat_map(|b| [b + 1; 4096]).collect();
        std::fs::write(&path, initial).unwrap();
        let config = CacheConfig::new(64 * 4096)
            .policy(PolicyName::S3Fifo)
            .flush_interval(None)
            .direct(false);
        let cache = BlockCache::open(&path, config).unwrap();
        let mut buf = vec![0u8; 4096];
        cache.read_at(&mut buf, 3 * 4096).unwrap();
        assert_eq!(buf, [4u8; 4096], "a miss, now resident");
        let cell = cache.inner.shard_of(3);
        let (hits, lock_free) = (cache.stats().hits, cell.lock_free_hits());
        let ran = Rc::new(Cell::new(false));
        let seen = Rc::clone(&ran);
        let rewrite = rewrite(3, 0xEE);
        during_next_copy(move |cell| {
            rewrite(cell);
            seen.set(true);
        });
        assert_eq!(cache.read_at(&mut buf, 3 * 4096).unwrap(), 4096);
        assert!(ran.get(), "the write came in the middle of the copy");
        let torn = buf.iter().filter(|&&b| b != 0xEE).count();
        assert_eq!(torn, 0, "{torn} bytes of the old version in the block read");
        assert_eq!(cell.lock_free_hits(), lock_free, "not served lock-free");
        assert_eq!(cache.stats().hits, hits + 1, "one hit, under the lock");
    }
}
