//! Per-frame marks that a hit sets: CLOCK's and SIEVE's reference bit,
//! S3-FIFO's two-bit counter. They are atomics shared (through an `Arc`)
//! between the policy and the cache, so that a hit found without the
//! shard's lock can still be recorded: a relaxed load and store, no
//! read-modify-write. Two hits racing on one frame may count as one, and
//! a hit racing with the sweep may mark the frame's next block instead;
//! either only shifts a second chance, which is what these policies
//! already approximate.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

use super::{Frame, Key};

/// One mark per frame, saturating at a maximum.
///
/// # Examples
/// ```
/// use flexio_cache::policy::HitMarks;
/// let marks = HitMarks::new(4, 3);
/// marks.bump(2);
/// marks.bump(2);
/// assert_eq!(marks.get(2), 2);
/// assert_eq!(marks.take(2), 2);
/// assert_eq!(marks.get(2), 0);
/// ```
#[derive(Clone, Debug)]
pub struct HitMarks {
    marks: Arc<[AtomicU8]>,
    max: u8,
    /// Keys whose hits the policy itself must see (it samples them to
    /// tune itself): `Some(mask)` where such keys hash to 0 under it.
    sampled: Option<u64>,
}

impl HitMarks {
    /// `frames` marks at 0, each saturating at `max`.
    pub fn new(frames: usize, max: u8) -> Self {
        HitMarks {
            marks: (0..frames).map(|_| AtomicU8::new(0)).collect(),
            max,
            sampled: None,
        }
    }

    /// The same marks, for a policy that must see every hit of the keys
    /// [`sampled_key`] picks with `mask` (one key in `mask + 1`).
    pub(crate) fn sampling(self, mask: u64) -> Self {
        HitMarks {
            sampled: Some(mask),
            ..self
        }
    }

    /// Whether a hit on `key` must go through the policy (and so the
    /// shard's lock) rather than be recorded as a mark: true for the few
    /// keys a self-tuning policy samples.
    #[inline]
    pub fn policy_sees(&self, key: Key) -> bool {
        self.sampled.is_some_and(|mask| sampled_key(key, mask))
    }

    /// The mark of `frame`.
    pub fn get(&self, frame: Frame) -> u8 {
        self.marks[frame as usize].load(Relaxed)
    }

    /// Sets the mark of `frame`.
    pub fn set(&self, frame: Frame, mark: u8) {
        self.marks[frame as usize].store(mark, Relaxed);
    }

    /// Records a hit on `frame`: its mark goes up by one, up to the
    /// maximum (stored only when it changes, so a popular frame's line is
    /// not written on every hit).
    #[inline]
    pub fn bump(&self, frame: Frame) {
        let mark = &self.marks[frame as usize];
        let now = mark.load(Relaxed);
        if now < self.max {
            mark.store(now + 1, Relaxed);
        }
    }

    /// The mark of `frame`, cleared.
    pub fn take(&self, frame: Frame) -> u8 {
        let mark = &self.marks[frame as usize];
        let now = mark.load(Relaxed);
        if now != 0 {
            mark.store(0, Relaxed);
        }
        now
    }
}

/// Whether `key` is among the one in `mask + 1` keys a self-tuning policy
/// samples: its hash under a salt of its own (so the sample is not the
/// keys that share a hash-table bucket) has its low bits clear.
#[inline]
pub(crate) fn sampled_key(key: Key, mask: u64) -> bool {
    super::mix(key ^ 0x5bd1_e995_7f4a_7c15) & mask == 0
}
