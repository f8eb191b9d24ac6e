//! W-TinyLFU (Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient
//! Cache Admission Policy", ACM Transactions on Storage 2017), a second
//! comparison point for the simulator: an admission filter by estimated
//! frequency in front of a segmented LRU.
//!
//! Every reference counts its key in a count-min sketch of 4-bit counters
//! (four per key in a table of 16 per block of capacity, all halved once the sketch has counted ten references per
//! block of capacity, so old popularity fades). A newcomer enters a window
//! LRU of 1 % of the cache; the window's oldest block then competes with
//! the main cache's victim (the oldest block of its probation segment),
//! and the one the sketch counts more often stays. The main cache is a
//! segmented LRU: a hit in probation moves the block to the protected
//! segment (80 % of the main cache), whose oldest block falls back to
//! probation.
//!
//! The window starts at 1 % and is sized by hill climbing, as in
//! Einziger, Eytan, Friedman and Manes, "Adaptive Software Cache
//! Management" (Middleware 2018) and Caffeine: every ten references per
//! block of capacity the window moves by a step (6.25 % of the cache at
//! first, shrinking by 2 % a period), in the same direction while the
//! period's hit ratio improves on the last one's and the other way when it
//! does not. There is no doorkeeper.

use crate::policy::{key_map, mix, KeyMap};

const NIL: u32 = u32::MAX;

/// Which segment a resident block is in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Segment {
    Window,
    Probation,
    Protected,
}

/// LRU lists over one arena of links: a node is in one list at a time.
struct Lists {
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Head (newest) and tail (oldest) and length of each segment.
    ends: [(u32, u32, usize); 3],
}

impl Lists {
    fn new(nodes: usize) -> Self {
        Lists {
            prev: vec![NIL; nodes],
            next: vec![NIL; nodes],
            ends: [(NIL, NIL, 0); 3],
        }
    }

    fn len(&self, segment: Segment) -> usize {
        self.ends[segment as usize].2
    }

    fn tail(&self, segment: Segment) -> Option<u32> {
        let tail = self.ends[segment as usize].1;
        (tail != NIL).then_some(tail)
    }

    fn push_head(&mut self, segment: Segment, node: u32) {
        let (head, tail, len) = &mut self.ends[segment as usize];
        self.prev[node as usize] = NIL;
        self.next[node as usize] = *head;
        if *head == NIL {
            *tail = node;
        } else {
            self.prev[*head as usize] = node;
        }
        *head = node;
        *len += 1;
    }

    fn unlink(&mut self, segment: Segment, node: u32) {
        let (prev, next) = (self.prev[node as usize], self.next[node as usize]);
        let (head, tail, len) = &mut self.ends[segment as usize];
        if prev == NIL {
            *head = next;
        } else {
            self.next[prev as usize] = next;
        }
        if next == NIL {
            *tail = prev;
        } else {
            self.prev[next as usize] = prev;
        }
        *len -= 1;
    }
}

/// A count-min sketch of 4-bit counters (held in bytes), four per key,
/// halved periodically.
struct Sketch {
    counters: Vec<u8>,
    mask: u64,
    added: usize,
    reset_at: usize,
}

impl Sketch {
    fn new(capacity: usize) -> Self {
        let width = (capacity * 16).next_power_of_two();
        Sketch {
            counters: vec![0; width],
            mask: width as u64 - 1,
            added: 0,
            reset_at: 10 * capacity,
        }
    }

    fn slots(&self, key: u64) -> [usize; 4] {
        let hash = mix(key);
        let second = mix(hash) | 1;
        [0u64, 1, 2, 3]
            .map(|row| (hash.wrapping_add(row.wrapping_mul(second)) & self.mask) as usize)
    }

    fn add(&mut self, key: u64) {
        let slots = self.slots(key);
        let least = slots.iter().map(|&s| self.counters[s]).min().unwrap_or(0);
        // Conservative update: only the counters at the minimum go up.
        if least < 15 {
            for slot in slots {
                if self.counters[slot] == least {
                    self.counters[slot] += 1;
                }
            }
        }
        self.added += 1;
        if self.added >= self.reset_at {
            for counter in &mut self.counters {
                *counter /= 2;
            }
            self.added /= 2;
        }
    }

    fn estimate(&self, key: u64) -> u8 {
        self.slots(key)
            .iter()
            .map(|&s| self.counters[s])
            .min()
            .unwrap_or(0)
    }
}

/// W-TinyLFU over `capacity` blocks, for the simulator:
/// [`WTinyLfu::access`] replays one reference.
///
/// # Examples
/// ```
/// use flexio_cache::sim::WTinyLfu;
/// // 0..50 read five times each, then a scan of new blocks: the frequent
/// // blocks win the admission contests and stay.
/// let mut cache = WTinyLfu::new(100);
/// for _ in 0..5 {
///     for key in 0..50 {
///         cache.access(key);
///     }
/// }
/// for key in 1000..3000 {
///     cache.access(key);
/// }
/// assert!((0..50).filter(|&k| cache.access(k)).count() >= 45);
/// ```
pub struct WTinyLfu {
    map: KeyMap,
    keys: Vec<u64>,
    segment: Vec<Segment>,
    lists: Lists,
    sketch: Sketch,
    free: Vec<u32>,
    window: usize,
    protected: usize,
    capacity: usize,
    climber: Climber,
}

/// The hill climber that sizes the window.
struct Climber {
    period: u64,
    references: u64,
    hits: u64,
    last_hits: Option<u64>,
    step: f64,
    growing: bool,
}

impl Climber {
    /// Counts one reference; at the end of a period, the window's new size
    /// in `1..capacity`.
    fn count(&mut self, hit: bool, window: usize, capacity: usize) -> Option<usize> {
        self.references += 1;
        self.hits += u64::from(hit);
        if self.references < self.period {
            return None;
        }
        if self.last_hits.is_some_and(|last| self.hits < last) {
            self.growing = !self.growing;
        }
        self.last_hits = Some(self.hits);
        self.references = 0;
        self.hits = 0;
        let step = (self.step as usize).max(1);
        self.step *= 0.98;
        let moved = if self.growing {
            window.saturating_add(step)
        } else {
            window.saturating_sub(step)
        };
        Some(moved.clamp(1, capacity.saturating_sub(1).max(1)))
    }
}

impl WTinyLfu {
    /// An empty W-TinyLFU with room for `capacity` blocks.
    ///
    /// # Panics
    /// When `capacity` is 0 or does not fit a `u32` index.
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a cache needs at least one frame");
        assert!(capacity < NIL as usize, "at most u32::MAX - 1 blocks");
        let window = (capacity / 100).max(1).min(capacity);
        let main = capacity - window;
        WTinyLfu {
            map: key_map(capacity),
            keys: vec![0; capacity],
            segment: vec![Segment::Window; capacity],
            lists: Lists::new(capacity),
            sketch: Sketch::new(capacity),
            free: (0..capacity as u32).rev().collect(),
            window,
            protected: main * 8 / 10,
            capacity,
            climber: Climber {
                period: 10 * capacity as u64,
                references: 0,
                hits: 0,
                last_hits: None,
                step: capacity as f64 / 16.0,
                growing: true,
            },
        }
    }

    /// Replays one reference to `key`; returns whether it hit.
    pub fn access(&mut self, key: u64) -> bool {
        let hit = self.reference(key);
        if let Some(window) = self.climber.count(hit, self.window, self.capacity) {
            self.window = window;
            self.protected = (self.capacity - window) * 8 / 10;
        }
        hit
    }

    /// The window's share now, in blocks.
    pub fn window(&self) -> usize {
        self.window
    }

    fn reference(&mut self, key: u64) -> bool {
        self.sketch.add(key);
        let Some(&node) = self.map.get(&key) else {
            self.admit(key);
            return false;
        };
        let segment = self.segment[node as usize];
        self.lists.unlink(segment, node);
        match segment {
            Segment::Window | Segment::Protected => self.lists.push_head(segment, node),
            Segment::Probation => {
                self.segment[node as usize] = Segment::Protected;
                self.lists.push_head(Segment::Protected, node);
                if self.lists.len(Segment::Protected) > self.protected
                    && let Some(oldest) = self.lists.tail(Segment::Protected)
                {
                    self.lists.unlink(Segment::Protected, oldest);
                    self.segment[oldest as usize] = Segment::Probation;
                    self.lists.push_head(Segment::Probation, oldest);
                }
            }
        }
        true
    }

    /// Puts `key` in the window; the window's oldest block then enters the
    /// main cache if there is room or if it is counted more often than the
    /// main cache's victim.
    fn admit(&mut self, key: u64) {
        if self.free.is_empty() {
            // Full: the window is over its share only transiently, so a
            // frame comes from the contest below, run before the insert.
            self.contest();
        }
        let node = self.free.pop().expect("a frame was freed");
        self.keys[node as usize] = key;
        self.map.insert(key, node);
        self.segment[node as usize] = Segment::Window;
        self.lists.push_head(Segment::Window, node);
        while self.lists.len(Segment::Window) > self.window {
            // Over its share (not full yet, or the window shrank): the
            // window's oldest moves to probation without a contest.
            if let Some(oldest) = self.lists.tail(Segment::Window) {
                self.lists.unlink(Segment::Window, oldest);
                self.segment[oldest as usize] = Segment::Probation;
                self.lists.push_head(Segment::Probation, oldest);
            }
        }
    }

    /// Frees one frame: the window's oldest block against the main cache's
    /// victim when the window is at its share, else the main cache's victim.
    fn contest(&mut self) {
        let victim = self
            .lists
            .tail(Segment::Probation)
            .or_else(|| self.lists.tail(Segment::Protected));
        let candidate = self.lists.tail(Segment::Window);
        let (Some(candidate), Some(victim)) = (candidate, victim) else {
            // Only one part holds blocks: it gives one up.
            let only = candidate.or(victim).expect("full");
            self.drop_node(only);
            return;
        };
        if self.lists.len(Segment::Window) < self.window {
            self.drop_node(victim);
            return;
        }
        let wins = self.sketch.estimate(self.keys[candidate as usize])
            > self.sketch.estimate(self.keys[victim as usize]);
        if wins {
            self.drop_node(victim);
            self.lists.unlink(Segment::Window, candidate);
            self.segment[candidate as usize] = Segment::Probation;
            self.lists.push_head(Segment::Probation, candidate);
        } else {
            self.drop_node(candidate);
        }
    }

    fn drop_node(&mut self, node: u32) {
        self.lists.unlink(self.segment[node as usize], node);
        self.map.remove(&self.keys[node as usize]);
        self.free.push(node);
    }

    /// Blocks resident now.
    pub fn len(&self) -> usize {
        self.capacity - self.free.len()
    }

    /// Whether no block is resident.
    pub fn is_empty(&self) -> bool {
        self.free.len() == self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::WTinyLfu;

    #[test]
    fn wtinylfu_a_scan_does_not_displace_the_frequent_blocks() {
        let mut cache = WTinyLfu::new(100);
        for _ in 0..5 {
            for key in 0..90 {
                cache.access(key);
            }
        }
        // Shorter than the sketch's halving period (ten references per
        // block): the hot blocks' counts still beat the scan's.
        for key in 10_000..10_500 {
            assert!(!cache.access(key));
        }
        let kept = (0..90).filter(|&k| cache.access(k)).count();
        assert!(kept >= 85, "kept {kept} of 90");
        assert_eq!(cache.len(), 100);
    }

    #[test]
    fn wtinylfu_only_a_newcomer_counted_more_than_the_victim_is_admitted() {
        // A full cache of blocks read once, a window of one block. 500,
        // read once, leaves the window when 501 comes and loses to the
        // victim (a tie); 600, read five times in the window, wins.
        let mut cache = WTinyLfu::new(50);
        for key in 0..50 {
            cache.access(key);
        }
        let mut replay = |keys: &[u64]| -> String {
            keys.iter()
                .map(|&k| if cache.access(k) { 'H' } else { 'M' })
                .collect()
        };
        assert_eq!(replay(&[500, 501, 500]), "MMM");
        assert_eq!(replay(&[600, 600, 600, 600, 600, 601, 600]), "MHHHHMH");
    }

    #[test]
    fn wtinylfu_the_window_climbs_while_hits_improve_and_turns_back_when_not() {
        let mut climber = super::Climber {
            period: 10,
            references: 0,
            hits: 0,
            last_hits: None,
            step: 16.0,
            growing: true,
        };
        let mut period = |hits: u64, window: usize| {
            let mut moved = None;
            for i in 0..10 {
                moved = climber.count(i < hits, window, 1000);
            }
            moved.expect("a period ended")
        };
        assert_eq!(period(3, 100), 116); // the first period: a step up
        assert_eq!(period(5, 116), 131); // better: on up (the step shrinks)
        assert_eq!(period(4, 131), 116); // worse: back down
        assert_eq!(period(4, 116), 101); // as good: on down
        assert_eq!(period(4, 5), 1); // on down, but never below one block
    }

    #[test]
    fn wtinylfu_never_holds_more_than_its_capacity() {
        let mut cache = WTinyLfu::new(7);
        for key in 0..50_000u64 {
            cache.access((key * 7919) % 31 + key / 1000);
            assert!(cache.len() <= 7);
        }
    }
}
