//! One shard of the cache: a policy, the frames it hands out, and which of
//! them are dirty. The cache keeps several behind their own mutexes, so
//! readers and writers of different shards never wait for each other.

use crate::policy::{Frame, Key, Policy};
use crate::sys::aligned::AlignedBuffer;

/// Frames are aligned for `O_DIRECT` on any device: 4 KiB covers every
/// logical block size in use.
pub(crate) const FRAME_ALIGN: usize = 4096;

pub(crate) struct Shard {
    pub policy: Box<dyn Policy>,
    data: AlignedBuffer,
    block_size: usize,
    dirty: Vec<bool>,
    /// Frames filled by read-ahead and not read since: their first read is
    /// their arrival, not a second access (see `Shard::access`).
    prefetched: Vec<bool>,
    /// Frames made dirty since the last write-back (maybe cleaned since,
    /// maybe listed twice): the write-back sweeps these, not every frame.
    dirty_frames: Vec<Frame>,
    pub dirty_count: u64,
    /// Bumped by every write into this shard; a reader that loaded a block
    /// from the device while the epoch moved does not cache it, since a
    /// write may have made (and flushed and evicted) a newer version.
    pub write_epoch: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub eviction_writebacks: u64,
}

impl Shard {
    pub fn new(policy: Box<dyn Policy>, block_size: usize) -> Shard {
        let frames = policy.capacity();
        Shard {
            data: AlignedBuffer::new(frames * block_size, FRAME_ALIGN.max(block_size)),
            block_size,
            dirty: vec![false; frames],
            prefetched: vec![false; frames],
            dirty_frames: Vec::new(),
            dirty_count: 0,
            write_epoch: 0,
            hits: 0,
            misses: 0,
            evictions: 0,
            eviction_writebacks: 0,
            policy,
        }
    }

    pub fn frame(&self, frame: Frame) -> &[u8] {
        let at = frame as usize * self.block_size;
        &self.data.as_slice()[at..at + self.block_size]
    }

    pub fn frame_mut(&mut self, frame: Frame) -> &mut [u8] {
        let at = frame as usize * self.block_size;
        &mut self.data.as_mut_slice()[at..at + self.block_size]
    }

    /// Looks `block` up; on a hit counts it and tells the policy — unless
    /// this is the first read of a read-ahead block, which only clears the
    /// mark: to the policy, a block read ahead and then read once was read
    /// once, so a scan does not look popular.
    pub fn access(&mut self, block: Key) -> Option<Frame> {
        let frame = self.policy.peek(block)?;
        self.hits += 1;
        if !std::mem::take(&mut self.prefetched[frame as usize]) {
            self.policy.touch(frame);
        }
        Some(frame)
    }

    /// Marks `frame` as filled by read-ahead (true) or on demand (false).
    pub fn set_prefetched(&mut self, frame: Frame, prefetched: bool) {
        self.prefetched[frame as usize] = prefetched;
    }

    pub fn is_dirty(&self, frame: Frame) -> bool {
        self.dirty[frame as usize]
    }

    pub fn mark_dirty(&mut self, frame: Frame) {
        if !std::mem::replace(&mut self.dirty[frame as usize], true) {
            self.dirty_count += 1;
            self.dirty_frames.push(frame);
        }
    }

    pub fn mark_clean(&mut self, frame: Frame) {
        if std::mem::replace(&mut self.dirty[frame as usize], false) {
            self.dirty_count -= 1;
        }
    }

    /// The dirty blocks as `(key, frame)`, sorted by key (so adjacent
    /// blocks can be coalesced into one write).
    pub fn dirty_blocks(&mut self) -> Vec<(Key, Frame)> {
        let mut frames = std::mem::take(&mut self.dirty_frames);
        frames.sort_unstable();
        frames.dedup();
        frames.retain(|&f| self.dirty[f as usize]);
        let mut blocks: Vec<(Key, Frame)> = frames
            .iter()
            .map(|&f| (self.policy.key_of(f).expect("a dirty frame holds a key"), f))
            .collect();
        self.dirty_frames = frames;
        blocks.sort_unstable();
        blocks
    }

    /// Forgets the dirty list once every frame on it was written back.
    pub fn forget_dirty_list(&mut self) {
        self.dirty_frames.retain(|&f| self.dirty[f as usize]);
    }
}
