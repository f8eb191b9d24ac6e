//! SIEVE (Zhang, Yang, Yue, Vigfusson and Rashmi, "SIEVE is Simpler than
//! LRU: an Efficient Turn-Key Eviction Algorithm for Web Caches", NSDI
//! 2024): one FIFO queue, newcomers at the head, a visited bit per block.
//! A hit only sets the bit. The hand walks from the tail towards the head,
//! clearing bits, and evicts the first unvisited block. Unlike CLOCK the
//! survivors keep their place in the queue, so the blocks that came in
//! behind the hand are judged on the next pass: a block read once leaves
//! soon, a popular old block stays near the tail for good.

use super::list::{Links, List, NIL};
use super::{
    checked_capacity, key_map, Frame, HitMarks, Inserted, Key, KeyMap, Policy, PolicyName,
};

/// SIEVE over `capacity` frames.
///
/// # Examples
/// ```
/// use flexio_cache::policy::{Policy, Sieve};
/// let mut sieve = Sieve::new(2);
/// sieve.insert(1);
/// sieve.insert(2);
/// sieve.get(1); // visited: the hand spares it
/// assert_eq!(sieve.insert(3).evicted, Some(2));
/// ```
pub struct Sieve {
    map: KeyMap,
    keys: Vec<Key>,
    visited: HitMarks,
    links: Links,
    queue: List,
    /// The next candidate for eviction, or `NIL` to start at the tail.
    hand: u32,
    capacity: u32,
}

impl Sieve {
    /// An empty SIEVE with room for `capacity` blocks.
    ///
    /// # Panics
    /// When `capacity` is 0 or does not fit a `u32`.
    pub fn new(capacity: usize) -> Self {
        let capacity = checked_capacity(capacity);
        Sieve {
            map: key_map(capacity as usize),
            keys: Vec::with_capacity(capacity as usize),
            visited: HitMarks::new(capacity as usize, 1),
            links: Links::new(capacity as usize),
            queue: List::default(),
            hand: NIL,
            capacity,
        }
    }

    fn evict(&mut self) -> Frame {
        let mut node = if self.hand == NIL {
            self.queue.tail().expect("full")
        } else {
            self.hand
        };
        // Each step clears a bit, so at most one lap plus one step.
        while self.visited.take(node) > 0 {
            node = match self.links.prev(node) {
                NIL => self.queue.tail().expect("full"),
                prev => prev,
            };
        }
        self.hand = self.links.prev(node);
        self.queue.unlink(&mut self.links, node);
        node
    }
}

impl Policy for Sieve {
    fn name(&self) -> PolicyName {
        PolicyName::Sieve
    }

    fn capacity(&self) -> usize {
        self.capacity as usize
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn touch(&mut self, frame: Frame) {
        self.visited.bump(frame);
    }

    fn peek(&self, key: Key) -> Option<Frame> {
        self.map.get(&key).copied()
    }

    fn insert(&mut self, key: Key) -> Inserted {
        assert!(!self.map.contains_key(&key), "sieve: key {key} is resident");
        let (frame, evicted) = if self.keys.len() < self.capacity as usize {
            self.keys.push(key);
            (self.keys.len() as u32 - 1, None)
        } else {
            let frame = self.evict();
            let old = std::mem::replace(&mut self.keys[frame as usize], key);
            self.map.remove(&old);
            self.visited.set(frame, 0);
            (frame, Some(old))
        };
        self.map.insert(key, frame);
        self.queue.push_head(&mut self.links, frame);
        Inserted { frame, evicted }
    }

    fn hit_marks(&self) -> Option<&HitMarks> {
        Some(&self.visited)
    }

    fn key_of(&self, frame: Frame) -> Option<Key> {
        self.keys.get(frame as usize).copied()
    }
}
