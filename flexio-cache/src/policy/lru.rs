//! Least recently used: one list, a hit moves its block to the head, the
//! tail leaves.

use super::list::{Links, List};
use super::{checked_capacity, key_map, Frame, Inserted, Key, KeyMap, Policy, PolicyName};

/// LRU over `capacity` frames.
///
/// # Examples
/// ```
/// use flexio_cache::policy::{Lru, Policy};
/// let mut lru = Lru::new(2);
/// lru.insert(1);
/// lru.insert(2);
/// lru.get(1); // 1 is now the most recent
/// assert_eq!(lru.insert(3).evicted, Some(2));
/// ```
pub struct Lru {
    map: KeyMap,
    keys: Vec<Key>,
    links: Links,
    list: List,
    capacity: u32,
}

impl Lru {
    /// An empty LRU with room for `capacity` blocks.
    ///
    /// # Panics
    /// When `capacity` is 0 or does not fit a `u32`.
    pub fn new(capacity: usize) -> Self {
        let capacity = checked_capacity(capacity);
        Lru {
            map: key_map(capacity as usize),
            keys: Vec::with_capacity(capacity as usize),
            links: Links::new(capacity as usize),
            list: List::default(),
            capacity,
        }
    }
}

impl Policy for Lru {
    fn name(&self) -> PolicyName {
        PolicyName::Lru
    }

    fn capacity(&self) -> usize {
        self.capacity as usize
    }

    fn len(&self) -> usize {
        self.list.len()
    }

    fn touch(&mut self, frame: Frame) {
        self.list.move_to_head(&mut self.links, frame);
    }

    fn peek(&self, key: Key) -> Option<Frame> {
        self.map.get(&key).copied()
    }

    fn insert(&mut self, key: Key) -> Inserted {
        assert!(!self.map.contains_key(&key), "lru: key {key} is resident");
        let (frame, evicted) = if self.keys.len() < self.capacity as usize {
            self.keys.push(key);
            (self.keys.len() as u32 - 1, None)
        } else {
            let frame = self.list.pop_tail(&mut self.links).expect("full");
            let old = std::mem::replace(&mut self.keys[frame as usize], key);
            self.map.remove(&old);
            (frame, Some(old))
        };
        self.map.insert(key, frame);
        self.list.push_head(&mut self.links, frame);
        Inserted { frame, evicted }
    }

    fn key_of(&self, frame: Frame) -> Option<Key> {
        self.keys.get(frame as usize).copied()
    }
}
