//! Belady's MIN (L. A. Belady, "A study of replacement algorithms for a
//! virtual-storage computer", IBM Systems Journal 5(2), 1966): on a miss
//! with the cache full, evict the resident block whose next use lies
//! furthest in the future. It needs the whole trace ahead of time, so it
//! is no policy a cache can run — it is the yardstick: no policy that
//! must keep every block it misses hits more often.
//!
//! The newcomer must be cached (demand paging, as every [`Policy`] here
//! does), so the victim is chosen among the blocks already resident.
//!
//! [`Policy`]: crate::policy::Policy

use std::collections::{BinaryHeap, HashMap};

use crate::policy::Key;

/// The position of the next reference to the same key, for each
/// reference; `usize::MAX` where the key is never referenced again.
/// One pass from the end, one map entry per distinct key.
///
/// # Examples
/// ```
/// use flexio_cache::sim::next_uses;
/// assert_eq!(next_uses(&[7, 8, 7]), [2, usize::MAX, usize::MAX]);
/// ```
pub fn next_uses(keys: &[Key]) -> Vec<usize> {
    let mut next = vec![usize::MAX; keys.len()];
    let mut seen: HashMap<Key, usize> = HashMap::with_capacity(keys.len() / 4);
    for (position, &key) in keys.iter().enumerate().rev() {
        if let Some(later) = seen.insert(key, position) {
            next[position] = later;
        }
    }
    next
}

/// How many references of `keys` hit under MIN with `size` blocks, given
/// the trace's [`next_uses`].
pub(crate) fn min_hits(keys: &[Key], next: &[usize], size: usize) -> u64 {
    min_replay(keys, next, size, |_| {})
}

/// Replays `keys` under MIN with `size` blocks, calls `on_hit` with the
/// position of each reference that hits, and returns how many did.
///
/// Residents sit in a max-heap by next use; an entry goes stale when its
/// block is referenced again (a fresh entry is pushed) and is skipped when
/// it surfaces, so each reference costs O(log n).
pub(crate) fn min_replay(
    keys: &[Key],
    next: &[usize],
    size: usize,
    mut on_hit: impl FnMut(usize),
) -> u64 {
    let mut resident: HashMap<Key, usize> = HashMap::with_capacity(size * 2);
    let mut furthest: BinaryHeap<(usize, Key)> = BinaryHeap::with_capacity(size * 2);
    let mut hits = 0u64;
    for (position, (&key, &next_use)) in keys.iter().zip(next).enumerate() {
        if let Some(slot) = resident.get_mut(&key) {
            hits += 1;
            on_hit(position);
            *slot = next_use;
        } else {
            if resident.len() == size {
                while let Some((when, victim)) = furthest.pop() {
                    if resident.get(&victim) == Some(&when) {
                        resident.remove(&victim);
                        break;
                    }
                }
            }
            resident.insert(key, next_use);
        }
        furthest.push((next_use, key));
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::{min_hits, next_uses};

    #[test]
    fn min_on_beladys_string_faults_seven_times_in_three_frames() {
        // The textbook's OPT on 1 2 3 4 1 2 5 1 2 3 4 5 with 3 frames:
        // 7 faults, so 5 hits.
        let keys = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];
        assert_eq!(min_hits(&keys, &next_uses(&keys), 3), 5);
        // With 4 frames: 6 faults.
        assert_eq!(min_hits(&keys, &next_uses(&keys), 4), 6);
    }

    #[test]
    fn min_keeps_the_part_of_a_loop_that_fits() {
        // A loop of 4 in 3 frames: after the first lap MIN keeps two of
        // the four and hits them, where LRU hits nothing.
        let keys: Vec<u64> = (0..400).map(|i| i % 4).collect();
        let hits = min_hits(&keys, &next_uses(&keys), 3);
        assert!(hits >= 260, "{hits}");
    }
}
