//! A shard's index for hits without its lock: which frame holds a key, in
//! atomics a reader may load while a writer changes them (the shard's
//! sequence number tells the reader to throw such a read away).
//!
//! It is a hint, not the index: the policy's map is. Buckets of four slots
//! (one cache line), twice as many slots as frames; a key whose bucket is
//! full takes a slot from another key, which then just misses here and is
//! looked up under the lock.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::policy::{mix, Frame, Key};

/// Slots per bucket: 4 × 16 bytes, one cache line.
const WAYS: usize = 4;

#[repr(align(16))]
struct Slot {
    /// The key plus one; 0 is an empty slot.
    tag: AtomicU64,
    frame: AtomicU32,
}

/// One bucket on a cache line of its own: a lookup loads one line, never
/// two (slots alone are only 16-byte aligned, so a bucket could straddle).
#[repr(align(64))]
struct Bucket([Slot; WAYS]);

pub(crate) struct Hints {
    buckets: Box<[Bucket]>,
    bucket_mask: usize,
}

impl Hints {
    /// Room for about `frames` keys.
    pub fn new(frames: usize) -> Hints {
        let buckets = (frames * 2 / WAYS).max(1).next_power_of_two();
        Hints {
            buckets: (0..buckets)
                .map(|_| {
                    Bucket(std::array::from_fn(|_| Slot {
                        tag: AtomicU64::new(0),
                        frame: AtomicU32::new(0),
                    }))
                })
                .collect(),
            bucket_mask: buckets - 1,
        }
    }

    fn bucket(&self, key: Key) -> &[Slot; WAYS] {
        &self.buckets[mix(key) as usize & self.bucket_mask].0
    }

    /// The frame hinted for `key`, if any (to be confirmed by the reader's
    /// sequence check).
    #[inline]
    pub fn find(&self, key: Key) -> Option<Frame> {
        let tag = key.wrapping_add(1);
        self.bucket(key)
            .iter()
            .find(|slot| slot.tag.load(Relaxed) == tag && tag != 0)
            .map(|slot| slot.frame.load(Relaxed))
    }

    /// Hints that `key` is in `frame` (the shard's lock held, its
    /// sequence number odd).
    pub fn insert(&self, key: Key, frame: Frame) {
        let (bucket, tag) = (self.bucket(key), key.wrapping_add(1));
        let slot = bucket
            .iter()
            .find(|slot| slot.tag.load(Relaxed) == tag)
            .or_else(|| bucket.iter().find(|slot| slot.tag.load(Relaxed) == 0))
            .unwrap_or(&bucket[key as usize % WAYS]);
        slot.frame.store(frame, Relaxed);
        slot.tag.store(key.wrapping_add(1), Relaxed);
    }

    /// Forgets `key` (the shard's lock held, its sequence number odd).
    pub fn remove(&self, key: Key) {
        let tag = key.wrapping_add(1);
        for slot in self.bucket(key) {
            if slot.tag.load(Relaxed) == tag {
                slot.tag.store(0, Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Hints;

    #[test]
    fn hints_find_what_was_inserted_until_removed_and_survive_a_full_bucket() {
        let hints = Hints::new(8);
        for key in 0..4 {
            hints.insert(key, key as u32 + 100);
        }
        for key in 0..4 {
            assert_eq!(hints.find(key), Some(key as u32 + 100));
        }
        hints.insert(3, 7);
        assert_eq!(hints.find(3), Some(7), "a key hinted again moves");
        hints.remove(3);
        assert_eq!(hints.find(3), None);
        // Many more keys than slots: every find is right or absent.
        for key in 0..1000 {
            hints.insert(key, key as u32);
        }
        let found = (0..1000)
            .filter(|&k| hints.find(k) == Some(k as u32))
            .count();
        assert!(found >= 16, "the table holds its slots' worth: {found}");
        assert!((0..1000).all(|k| hints.find(k).is_none_or(|f| f == k as u32)));
        assert_eq!(hints.find(u64::MAX), None);
    }
}
