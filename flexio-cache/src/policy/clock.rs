//! CLOCK (second chance): frames on a ring, one reference bit each; a hit
//! sets the bit, and the hand clears set bits until it finds a clear one to
//! evict. A block enters with its bit clear, so a block read once leaves on
//! the hand's next pass.

use super::{
    checked_capacity, key_map, Frame, HitMarks, Inserted, Key, KeyMap, Policy, PolicyName,
};

/// CLOCK over `capacity` frames.
///
/// # Examples
/// ```
/// use flexio_cache::policy::{Clock, Policy};
/// let mut clock = Clock::new(2);
/// clock.insert(1);
/// clock.insert(2);
/// clock.get(1); // 1 gets a second chance
/// assert_eq!(clock.insert(3).evicted, Some(2));
/// ```
pub struct Clock {
    map: KeyMap,
    keys: Vec<Key>,
    referenced: HitMarks,
    hand: u32,
    capacity: u32,
}

impl Clock {
    /// An empty CLOCK with room for `capacity` blocks.
    ///
    /// # Panics
    /// When `capacity` is 0 or does not fit a `u32`.
    pub fn new(capacity: usize) -> Self {
        let capacity = checked_capacity(capacity);
        Clock {
            map: key_map(capacity as usize),
            keys: Vec::with_capacity(capacity as usize),
            referenced: HitMarks::new(capacity as usize, 1),
            hand: 0,
            capacity,
        }
    }
}

impl Policy for Clock {
    fn name(&self) -> PolicyName {
        PolicyName::Clock
    }

    fn capacity(&self) -> usize {
        self.capacity as usize
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    fn touch(&mut self, frame: Frame) {
        self.referenced.bump(frame);
    }

    fn peek(&self, key: Key) -> Option<Frame> {
        self.map.get(&key).copied()
    }

    fn insert(&mut self, key: Key) -> Inserted {
        assert!(!self.map.contains_key(&key), "clock: key {key} is resident");
        let (frame, evicted) = if self.keys.len() < self.capacity as usize {
            self.keys.push(key);
            (self.keys.len() as u32 - 1, None)
        } else {
            // At most one full turn clears every bit, so this ends.
            while self.referenced.take(self.hand) > 0 {
                self.hand = (self.hand + 1) % self.capacity;
            }
            let frame = self.hand;
            self.hand = (self.hand + 1) % self.capacity;
            let old = std::mem::replace(&mut self.keys[frame as usize], key);
            self.map.remove(&old);
            (frame, Some(old))
        };
        self.map.insert(key, frame);
        Inserted { frame, evicted }
    }

    fn hit_marks(&self) -> Option<&HitMarks> {
        Some(&self.referenced)
    }

    fn key_of(&self, frame: Frame) -> Option<Key> {
        self.keys.get(frame as usize).copied()
    }
}
