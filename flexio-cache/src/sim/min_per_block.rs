//! MIN's verdict per block, known in advance: a second yardstick, below
//! Belady's MIN.
//!
//! MIN decides per reference: it keeps a block from one use to the next
//! when nothing resident is needed sooner. A cache that learns which
//! blocks are worth keeping (by their frequency, or by a predictor trained
//! on MIN's past choices, as Jain and Lin's Hawkeye does for CPU caches,
//! ISCA 2016) decides per block instead. This replay gives such a cache
//! the answer in full: from MIN's own replay at the same size, a block is
//! *kept* when MIN keeps it across more than a share of its reuses; kept
//! blocks are cached by LRU and every other block is evicted first (LRU
//! among them). The share is the best of [`KEPT_SHARES`] for the trace
//! and size: a loop a little longer than the cache has MIN keep every
//! block across most of its reuses, and then only the blocks it always
//! keeps fit. Like MIN it reads the whole trace ahead, so no cache can run
//! it; how far it gets from LRU towards MIN shows how much of MIN's lead
//! a perfect per-block choice leaves behind.

use std::collections::{HashMap, HashSet};

use super::min::min_replay;
use crate::policy::list::{Links, List};
use crate::policy::Key;

/// The shares of its reuses across which MIN must keep a block for it to
/// count as kept, in tenths: each is tried, the best one counts.
const KEPT_SHARES: [u64; 4] = [3, 5, 7, 9];

/// How many references of `keys` hit with `size` blocks when the blocks
/// MIN keeps are known ([`blocks_min_keeps`]), at the best of
/// [`KEPT_SHARES`]; `next` is the trace's [`next_uses`](super::next_uses).
pub(crate) fn min_per_block_hits(keys: &[Key], next: &[usize], size: usize) -> u64 {
    let reuses = reuses_min_keeps(keys, next, size);
    KEPT_SHARES
        .iter()
        .map(|&tenths| two_class_hits(keys, &blocks_min_keeps(&reuses, tenths), size))
        .max()
        .unwrap_or(0)
}

/// For each block that is reused: how many of its reuses there are, and
/// across how many of them MIN with `size` blocks keeps it resident.
fn reuses_min_keeps(keys: &[Key], next: &[usize], size: usize) -> HashMap<Key, (u64, u64)> {
    let mut hit = vec![false; keys.len()];
    min_replay(keys, next, size, |position| hit[position] = true);
    let mut reuses: HashMap<Key, (u64, u64)> = HashMap::new();
    for (&key, &next_use) in keys.iter().zip(next) {
        if let Some(&kept) = hit.get(next_use) {
            let (all, kept_across) = reuses.entry(key).or_default();
            *all += 1;
            *kept_across += u64::from(kept);
        }
    }
    reuses
}

/// The blocks MIN keeps across more than `tenths` tenths of their reuses.
fn blocks_min_keeps(reuses: &HashMap<Key, (u64, u64)>, tenths: u64) -> HashSet<Key> {
    reuses
        .iter()
        .filter(|&(_, &(all, kept))| 10 * kept > tenths * all)
        .map(|(&key, _)| key)
        .collect()
}

/// How many references of `keys` hit in a cache of `size` blocks that
/// holds the blocks of `kept` by LRU and evicts every other block first.
fn two_class_hits(keys: &[Key], kept: &HashSet<Key>, size: usize) -> u64 {
    let mut frames: HashMap<Key, u32> = HashMap::with_capacity(size * 2);
    let mut keys_of: Vec<Key> = Vec::with_capacity(size);
    let mut links = Links::new(size);
    // [others, kept]: a block's class never changes, so neither does its list.
    let mut lists = [List::default(), List::default()];
    let mut hits = 0u64;
    for &key in keys {
        let class = usize::from(kept.contains(&key));
        if let Some(&frame) = frames.get(&key) {
            hits += 1;
            lists[class].move_to_head(&mut links, frame);
            continue;
        }
        let frame = if keys_of.len() < size {
            keys_of.push(key);
            keys_of.len() as u32 - 1
        } else {
            let victim = match lists[0].pop_tail(&mut links) {
                Some(frame) => frame,
                None => lists[1].pop_tail(&mut links).expect("a full cache"),
            };
            frames.remove(&std::mem::replace(&mut keys_of[victim as usize], key));
            victim
        };
        frames.insert(key, frame);
        lists[class].push_head(&mut links, frame);
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::{blocks_min_keeps, min_per_block_hits, reuses_min_keeps, two_class_hits};
    use crate::sim::next_uses;

    #[test]
    fn the_blocks_min_keeps_through_a_scan_are_the_hot_ones() {
        // Two hot blocks read between every block of a scan, in 3 frames:
        // MIN keeps the hot pair throughout and never a scanned block.
        let keys: Vec<u64> = (0..300u64).flat_map(|i| [1_000, 1_001, i]).collect();
        let kept = blocks_min_keeps(&reuses_min_keeps(&keys, &next_uses(&keys), 3), 5);
        assert_eq!(kept, [1_000, 1_001].into_iter().collect());
        // Kept first, the hot pair hits every time after its first read;
        // with nothing kept, the cache is LRU, which the scan cannot flush
        // from 3 frames either, so both hit the same here.
        assert_eq!(two_class_hits(&keys, &kept, 3), 598);
    }

    #[test]
    fn blocks_not_kept_leave_first_even_when_read_more_recently() {
        // 3 frames, block 9 kept, the rest not: 9 survives four newer
        // blocks, where LRU would have let it go after three.
        let keys = [9, 1, 2, 3, 4, 9];
        let kept = [9].into_iter().collect();
        assert_eq!(two_class_hits(&keys, &kept, 3), 1);
        let none = Default::default();
        assert_eq!(two_class_hits(&keys, &none, 3), 0);
    }

    #[test]
    fn a_loop_a_little_longer_than_the_cache_keeps_only_what_fits() {
        // 1100 blocks round and round through 1050 frames: MIN keeps
        // every block across more than 70 % of its reuses, so at that
        // share more blocks are "kept" than fit and LRU among them misses
        // every time; at 90 % only the blocks MIN always keeps are.
        let keys: Vec<u64> = (0..200_000).map(|i| i % 1100).collect();
        let next = next_uses(&keys);
        let reuses = reuses_min_keeps(&keys, &next, 1050);
        let kept = blocks_min_keeps(&reuses, 7);
        assert!(kept.len() > 1050, "{}", kept.len());
        assert_eq!(two_class_hits(&keys, &kept, 1050), 0);
        assert!(blocks_min_keeps(&reuses, 9).len() < 1050);
        assert!(min_per_block_hits(&keys, &next, 1050) > 160_000);
    }

    #[test]
    fn on_oltp_min_keeps_far_more_blocks_than_fit() {
        // The README's reading of the yardstick: on the ARC paper's OLTP
        // trace (Megiddo and Modha, FAST 2003) the blocks MIN keeps across
        // most of their reuses are many times the cache, so beyond the
        // choice of blocks, when to hold each of them decides.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/arc/OLTP.lis.zst");
        let keys = crate::trace::Trace::open(path).unwrap().keys;
        let next = next_uses(&keys);
        for size in [1000, 5000, 15000] {
            let kept = blocks_min_keeps(&reuses_min_keeps(&keys, &next, size), 5).len();
            println!("OLTP at {size} blocks: MIN keeps {kept} blocks across most reuses");
            assert!(kept > 5 * size, "{kept} at {size}");
        }
    }
}
