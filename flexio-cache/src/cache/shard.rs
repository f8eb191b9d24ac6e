//! One shard of the cache: a policy, the frames it hands out, and which of
//! them are dirty, behind a mutex; and beside the mutex, what a hit needs
//! to be served without taking it.
//!
//! A hit without the lock is a seqlock read ([`ShardCell::try_hit`]): the
//! sequence number is odd while anyone holds the lock ([`ShardGuard`]
//! makes it so), and a reader that finds it even, looks the key up in the
//! [`Hints`], copies the frame and finds the number unchanged knows its
//! copy is whole and the frame held that key throughout. It then records
//! the hit in the policy's [`HitMarks`] — so only for policies whose hit is
//! a mark (CLOCK, SIEVE, S3-FIFO, the adaptive default); LRU and ARC hits
//! take the lock, and so do the adaptive policy's hits on the one key in
//! 8–64 it samples to tune itself ([`HitMarks::policy_sees`]). A hit
//! costs no read-modify-write instruction that way, where the lock costs
//! two. Anything unusual (a writer at work, a key the hints lost, a frame
//! filled by read-ahead) falls back to the lock.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::hints::Hints;
use super::lock;
use crate::policy::{Frame, HitMarks, Key, Policy};
use crate::sys::frames::{Arena, FrameReader, Frames};

/// Frames are aligned for `O_DIRECT` on any device: 4 KiB covers every
/// logical block size in use.
pub(crate) const FRAME_ALIGN: usize = 4096;

/// A shard: the lock-free side, and the locked [`Shard`].
pub(crate) struct ShardCell {
    /// Odd while a [`ShardGuard`] is held.
    seq: AtomicU64,
    hints: Hints,
    /// The policy's marks, when a hit is a mark.
    marks: Option<HitMarks>,
    /// Frames filled by read-ahead and not read since: their first read is
    /// their arrival, not a second access (see [`ShardGuard::access`]).
    /// Only the lock's holder reads or writes these.
    prefetched: Box<[AtomicBool]>,
    reader: FrameReader,
    /// Hits served without the lock. Counted with a relaxed load and
    /// store, not an atomic add (which would cost what the lock does), so
    /// threads hitting this shard at the same moment may count as one.
    lock_free_hits: AtomicU64,
    shard: Mutex<Shard>,
}

/// The locked part of a shard.
pub(crate) struct Shard {
    pub policy: Box<dyn Policy>,
    frames: Frames,
    dirty: Vec<bool>,
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

/// The shard's lock, held: the sequence number is odd from when it is
/// taken until it is dropped.
pub(crate) struct ShardGuard<'a> {
    cell: &'a ShardCell,
    shard: MutexGuard<'a, Shard>,
}

impl ShardCell {
    /// A shard of `policy`'s capacity over the arena's frames from
    /// `first` on.
    pub fn new(policy: Box<dyn Policy>, arena: &Arc<Arena>, first: usize) -> ShardCell {
        let count = policy.capacity();
        let frames = Frames::new(arena, first, count);
        ShardCell {
            seq: AtomicU64::new(0),
            hints: Hints::new(count),
            marks: policy.hit_marks().cloned(),
            prefetched: (0..count).map(|_| AtomicBool::new(false)).collect(),
            reader: frames.reader(),
            lock_free_hits: AtomicU64::new(0),
            shard: Mutex::new(Shard {
                policy,
                frames,
                dirty: vec![false; count],
                dirty_frames: Vec::new(),
                dirty_count: 0,
                write_epoch: 0,
                hits: 0,
                misses: 0,
                evictions: 0,
                eviction_writebacks: 0,
            }),
        }
    }

    /// Takes the lock.
    pub fn lock(&self) -> ShardGuard<'_> {
        let shard = lock(&self.shard);
        // Only the lock's holder writes `seq`: a plain store suffices.
        self.seq
            .store(self.seq.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // Whatever the holder writes is ordered after the odd number.
        fence(Ordering::Release);
        ShardGuard { cell: self, shard }
    }

    /// Serves a hit on `key` without the lock: copies `into.len()` bytes of
    /// its frame from byte `within` and records the hit. `false` when it
    /// cannot tell (see the module documentation); then nothing was
    /// recorded and the caller takes the lock.
    #[inline]
    pub fn try_hit(&self, key: Key, within: usize, into: &mut [u8]) -> bool {
        let Some(marks) = &self.marks else {
            return false;
        };
        if marks.policy_sees(key) {
            return false;
        }
        let before = self.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return false;
        }
        // A block read ahead and not read since has no hint (see
        // `ShardGuard::set_prefetched`), so its first read takes the lock.
        let Some(frame) = self.hints.find(key) else {
            return false;
        };
        self.copy_frame(frame, within, into);
        fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) != before {
            return false;
        }
        marks.bump(frame);
        let hits = self.lock_free_hits.load(Ordering::Relaxed);
        self.lock_free_hits.store(hits + 1, Ordering::Relaxed);
        true
    }

    /// The lock-free copy of a hit.
    #[cfg(not(test))]
    #[inline(always)]
    fn copy_frame(&self, frame: Frame, within: usize, into: &mut [u8]) {
        self.reader.load(frame, within, into);
    }

    /// The lock-free copy of a hit, in two halves with this thread's
    /// [`tests::during_next_copy`] hook, if set, run between them: a test
    /// can then be a writer that replaces the block in the middle of a
    /// reader's copy, every time, instead of hoping threads meet there.
    #[cfg(test)]
    fn copy_frame(&self, frame: Frame, within: usize, into: &mut [u8]) {
        let half = into.len() / 2;
        let (front, back) = into.split_at_mut(half);
        self.reader.load(frame, within, front);
        if let Some(hook) = tests::MID_COPY.with(|hook| hook.borrow_mut().take()) {
            hook(self);
        }
        self.reader.load(frame, within + half, back);
    }

    /// Hits served without the lock so far.
    pub fn lock_free_hits(&self) -> u64 {
        self.lock_free_hits.load(Ordering::Relaxed)
    }
}

impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        let seq = &self.cell.seq;
        seq.store(seq.load(Ordering::Relaxed) + 1, Ordering::Release);
    }
}

impl Deref for ShardGuard<'_> {
    type Target = Shard;

    fn deref(&self) -> &Shard {
        &self.shard
    }
}

impl DerefMut for ShardGuard<'_> {
    fn deref_mut(&mut self) -> &mut Shard {
        &mut self.shard
    }
}

impl ShardGuard<'_> {
    /// Looks `key` up; on a hit counts it and tells the policy — unless
    /// this is the first read of a read-ahead block, which only clears the
    /// mark: to the policy, a block read ahead and then read once was read
    /// once, so a scan does not look popular.
    pub fn access(&mut self, key: Key) -> Option<Frame> {
        let frame = self.shard.policy.peek(key)?;
        self.shard.hits += 1;
        let prefetched = &self.cell.prefetched[frame as usize];
        if prefetched.load(Ordering::Relaxed) {
            prefetched.store(false, Ordering::Relaxed);
            // Read once now: later hits may go without the lock.
            self.cell.hints.insert(key, frame);
        } else {
            self.shard.policy.touch(frame);
        }
        Some(frame)
    }

    /// Marks `frame` (holding `key`) as filled by read-ahead (true) or on
    /// demand (false). A read-ahead block leaves the hints until its first
    /// read, which must take the lock to count as an arrival, not a hit.
    pub fn set_prefetched(&mut self, key: Key, frame: Frame, prefetched: bool) {
        self.cell.prefetched[frame as usize].store(prefetched, Ordering::Relaxed);
        if prefetched {
            self.cell.hints.remove(key);
        } else {
            self.cell.hints.insert(key, frame);
        }
    }

    /// Makes `key` resident in the policy and the hints; returns its frame
    /// and the key it evicted from that frame, if any.
    pub fn insert(&mut self, key: Key) -> (Frame, Option<Key>) {
        let inserted = self.shard.policy.insert(key);
        if let Some(old) = inserted.evicted {
            self.cell.hints.remove(old);
        }
        self.set_prefetched(key, inserted.frame, false);
        (inserted.frame, inserted.evicted)
    }
}

impl Shard {
    pub fn frame(&self, frame: Frame) -> &[u8] {
        self.frames.frame(frame)
    }

    /// Copies `bytes` into `frame` from byte `within` on.
    pub fn store(&mut self, frame: Frame, within: usize, bytes: &[u8]) {
        self.frames.store(frame, within, bytes);
    }

    /// Zeroes `frame`.
    pub fn zero(&mut self, frame: Frame) {
        self.frames.fill(frame, 0);
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

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::RefCell;

    use super::ShardCell;
    use crate::policy::{Key, PolicyName};
    use crate::sys::frames::Arena;

    /// What a hook run in the middle of a copy is given: the shard read.
    type MidCopy = Box<dyn FnOnce(&ShardCell)>;

    thread_local! {
        pub(super) static MID_COPY: RefCell<Option<MidCopy>> = const { RefCell::new(None) };
    }

    /// Runs `hook` once, on this thread, halfway through its next
    /// lock-free copy of a hit.
    pub(crate) fn during_next_copy(hook: impl FnOnce(&ShardCell) + 'static) {
        MID_COPY.with(|slot| *slot.borrow_mut() = Some(Box::new(hook)));
    }

    /// A hook that replaces `key`'s block with `byte`s as a writer does:
    /// under the shard's lock, in place.
    pub(crate) fn rewrite(key: Key, byte: u8) -> impl FnOnce(&ShardCell) + 'static {
        move |cell| {
            let mut guard = cell.lock();
            let frame = guard.policy.peek(key).expect("the key is resident");
            let size = guard.frame(frame).len();
            guard.store(frame, 0, &vec![byte; size]);
        }
    }

    fn filled(policy: PolicyName) -> ShardCell {
        let cell = ShardCell::new(policy.build(4), &Arena::new(4, 512), 0);
        let mut guard = cell.lock();
        for key in 10..14u64 {
            let (frame, _) = guard.insert(key);
            guard.store(frame, 0, &[key as u8; 512]);
        }
        drop(guard);
        cell
    }

    #[test]
    fn a_hit_is_served_without_the_lock_only_when_nothing_is_in_the_way() {
        let cell = filled(PolicyName::S3Fifo);
        let mut buf = [0u8; 100];
        assert!(cell.try_hit(12, 400, &mut buf));
        assert_eq!(buf, [12u8; 100]);
        assert_eq!(cell.lock_free_hits(), 1);
        assert!(!cell.try_hit(99, 0, &mut buf), "not resident");
        {
            let _held = cell.lock();
            assert!(!cell.try_hit(12, 0, &mut buf), "a writer holds the lock");
        }
        assert!(cell.try_hit(12, 0, &mut buf), "the lock was given back");
        {
            let mut guard = cell.lock();
            let frame = guard.policy.peek(13).unwrap();
            guard.set_prefetched(13, frame, true);
        }
        assert!(!cell.try_hit(13, 0, &mut buf), "read ahead, not yet read");
        assert_eq!(cell.lock().access(13).map(|_| ()), Some(()));
        assert!(cell.try_hit(13, 0, &mut buf), "read once, now a hit");
        // An evicted key is not found, and its frame's new key is.
        let mut guard = cell.lock();
        let (frame, evicted) = guard.insert(20);
        guard.store(frame, 0, &[20u8; 512]);
        drop(guard);
        assert!(!cell.try_hit(evicted.unwrap(), 0, &mut buf));
        assert!(cell.try_hit(20, 0, &mut buf));
        assert_eq!(buf, [20u8; 100]);
    }

    #[test]
    fn a_block_rewritten_in_the_middle_of_a_lock_free_copy_is_thrown_away_not_returned_torn() {
        for policy in [PolicyName::Clock, PolicyName::Sieve, PolicyName::S3Fifo] {
            let cell = filled(policy);
            let ran = std::rc::Rc::new(std::cell::Cell::new(false));
            let seen = std::rc::Rc::clone(&ran);
            let rewrite = rewrite(12, 99);
            during_next_copy(move |cell| {
                rewrite(cell);
                seen.set(true);
            });
            let mut buf = [0u8; 512];
            let served = cell.try_hit(12, 0, &mut buf);
            assert!(ran.get(), "{policy}: the hook ran during the copy");
            // Without the sequence check this would be a hit of 256 bytes
            // of 12 then 256 of 99.
            assert!(
                !served,
                "{policy}: a copy overlapped by a write was served: {:?}…{:?}",
                &buf[..4],
                &buf[508..]
            );
            assert_eq!(cell.lock_free_hits(), 0, "{policy}: not counted");
            // Retried, it is the new version, whole.
            assert!(cell.try_hit(12, 0, &mut buf), "{policy}");
            assert_eq!(buf, [99u8; 512], "{policy}");
        }
    }

    #[test]
    fn lru_and_arc_hits_take_the_lock() {
        for policy in [PolicyName::Lru, PolicyName::Arc] {
            assert!(!filled(policy).try_hit(12, 0, &mut [0u8; 10]), "{policy}");
        }
    }
}
