//! ARC (Nimrod Megiddo and Dharmendra S. Modha, "ARC: A Self-Tuning, Low
//! Overhead Replacement Cache", USENIX FAST 2003, Figure 4): two LRU lists
//! of resident blocks, `T1` (seen once recently) and `T2` (seen at least
//! twice), each shadowed by a ghost list of keys it evicted, `B1` and `B2`.
//! A miss that hits a ghost tells which side was evicted too early and
//! moves the target size `p` of `T1` towards it; so ARC balances recency
//! and frequency by itself, and a scan (all `T1`) cannot flush `T2`.

use super::list::{Links, List, NIL};
use super::{checked_capacity, key_map, Frame, Inserted, Key, KeyMap, Policy, PolicyName};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Where {
    T1,
    T2,
    B1,
    B2,
}

/// ARC over `capacity` frames (and as many ghost keys).
///
/// # Examples
/// ```
/// use flexio_cache::policy::{Arc, Policy};
/// let mut arc = Arc::new(2);
/// arc.insert(1);
/// arc.get(1); // 1 moves to the frequency side, T2
/// arc.insert(2);
/// assert_eq!(arc.insert(3).evicted, Some(2)); // T1's LRU goes first
/// ```
pub struct Arc {
    /// Key → node, for residents and ghosts alike.
    map: KeyMap,
    /// Per node (2 × capacity of them): its key, frame (`NIL` for a
    /// ghost) and list.
    keys: Vec<Key>,
    frame_of: Vec<u32>,
    place: Vec<Where>,
    links: Links,
    /// Per frame: the node living there, or `NIL`.
    node_of: Vec<u32>,
    t1: List,
    t2: List,
    b1: List,
    b2: List,
    free_nodes: Vec<u32>,
    free_frames: Vec<Frame>,
    /// The target length of `T1`.
    p: usize,
    capacity: usize,
}

impl Arc {
    /// An empty ARC with room for `capacity` blocks.
    ///
    /// # Panics
    /// When `capacity` is 0 or twice it does not fit a `u32`.
    pub fn new(capacity: usize) -> Self {
        let frames = checked_capacity(capacity);
        let nodes = checked_capacity(2 * capacity);
        Arc {
            map: key_map(2 * capacity),
            keys: vec![0; nodes as usize],
            frame_of: vec![NIL; nodes as usize],
            place: vec![Where::T1; nodes as usize],
            links: Links::new(nodes as usize),
            node_of: vec![NIL; capacity],
            t1: List::default(),
            t2: List::default(),
            b1: List::default(),
            b2: List::default(),
            free_nodes: (0..nodes).rev().collect(),
            free_frames: (0..frames).rev().collect(),
            p: 0,
            capacity,
        }
    }

    fn list(&mut self, place: Where) -> &mut List {
        match place {
            Where::T1 => &mut self.t1,
            Where::T2 => &mut self.t2,
            Where::B1 => &mut self.b1,
            Where::B2 => &mut self.b2,
        }
    }

    fn relink(&mut self, node: u32, to: Where) {
        let from = self.place[node as usize];
        let mut links = std::mem::replace(&mut self.links, Links::new(0));
        self.list(from).unlink(&mut links, node);
        self.list(to).push_head(&mut links, node);
        self.links = links;
        self.place[node as usize] = to;
    }

    /// Forgets the LRU node of ghost list `place`.
    fn drop_ghost_tail(&mut self, place: Where) {
        let mut links = std::mem::replace(&mut self.links, Links::new(0));
        let node = self.list(place).pop_tail(&mut links).expect("ghost");
        self.links = links;
        self.map.remove(&self.keys[node as usize]);
        self.free_nodes.push(node);
    }

    /// Evicts the LRU block of `T1` (to `B1`) or `T2` (to `B2`), as the
    /// paper's REPLACE; returns the freed frame and its key.
    fn replace(&mut self, ghost_hit_in_b2: bool) -> (Frame, Key) {
        let t1 = self.t1.len();
        let from_t1 =
            t1 >= 1 && ((ghost_hit_in_b2 && t1 == self.p) || t1 > self.p || self.t2.len() == 0);
        let (node, ghost) = if from_t1 {
            (self.t1.tail().expect("t1"), Where::B1)
        } else {
            (self.t2.tail().expect("t2"), Where::B2)
        };
        self.relink(node, ghost);
        let frame = std::mem::replace(&mut self.frame_of[node as usize], NIL);
        self.node_of[frame as usize] = NIL;
        (frame, self.keys[node as usize])
    }

    /// A frame for a newcomer: a free one, or one REPLACE frees.
    fn frame_for_miss(&mut self, ghost_hit_in_b2: bool) -> (Frame, Option<Key>) {
        match self.free_frames.pop() {
            Some(frame) => (frame, None),
            None => {
                let (frame, key) = self.replace(ghost_hit_in_b2);
                (frame, Some(key))
            }
        }
    }

    fn settle(&mut self, node: u32, frame: Frame) {
        self.frame_of[node as usize] = frame;
        self.node_of[frame as usize] = node;
    }
}

impl Policy for Arc {
    fn name(&self) -> PolicyName {
        PolicyName::Arc
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.t1.len() + self.t2.len()
    }

    fn touch(&mut self, frame: Frame) {
        let node = self.node_of[frame as usize];
        match self.place[node as usize] {
            Where::T1 => self.relink(node, Where::T2),
            Where::T2 => self.t2.move_to_head(&mut self.links, node),
            Where::B1 | Where::B2 => unreachable!("frame {frame} holds a ghost"),
        }
    }

    fn peek(&self, key: Key) -> Option<Frame> {
        let node = *self.map.get(&key)?;
        let frame = self.frame_of[node as usize];
        (frame != NIL).then_some(frame)
    }

    fn insert(&mut self, key: Key) -> Inserted {
        let c = self.capacity;
        if let Some(&node) = self.map.get(&key) {
            let in_b2 = match self.place[node as usize] {
                Where::B1 => {
                    let delta = (self.b2.len() / self.b1.len()).max(1);
                    self.p = (self.p + delta).min(c);
                    false
                }
                Where::B2 => {
                    let delta = (self.b1.len() / self.b2.len()).max(1);
                    self.p = self.p.saturating_sub(delta);
                    true
                }
                Where::T1 | Where::T2 => panic!("arc: key {key} is resident"),
            };
            let (frame, evicted) = self.frame_for_miss(in_b2);
            self.relink(node, Where::T2);
            self.settle(node, frame);
            return Inserted { frame, evicted };
        }
        let l1 = self.t1.len() + self.b1.len();
        let total = l1 + self.t2.len() + self.b2.len();
        let (frame, evicted) = if l1 == c {
            if self.t1.len() < c {
                self.drop_ghost_tail(Where::B1);
                self.frame_for_miss(false)
            } else {
                // T1 alone fills the cache: its LRU block leaves with no
                // ghost.
                let node = self.t1.pop_tail(&mut self.links).expect("t1");
                let old = self.keys[node as usize];
                self.map.remove(&old);
                self.free_nodes.push(node);
                let frame = std::mem::replace(&mut self.frame_of[node as usize], NIL);
                (frame, Some(old))
            }
        } else {
            if total >= 2 * c {
                self.drop_ghost_tail(Where::B2);
            }
            self.frame_for_miss(false)
        };
        let node = self.free_nodes.pop().expect("at most 2c nodes");
        self.keys[node as usize] = key;
        self.place[node as usize] = Where::T1;
        self.t1.push_head(&mut self.links, node);
        self.map.insert(key, node);
        self.settle(node, frame);
        Inserted { frame, evicted }
    }

    fn key_of(&self, frame: Frame) -> Option<Key> {
        let node = *self.node_of.get(frame as usize)?;
        (node != NIL).then(|| self.keys[node as usize])
    }
}
