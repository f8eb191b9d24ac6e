//! LIRS (Jiang and Zhang, "LIRS: An Efficient Low Inter-reference Recency
//! Set Replacement Policy to Improve Buffer Cache Performance", SIGMETRICS
//! 2002), a comparison point for the simulator: how far a well-known
//! online policy that ranks blocks by reuse distance gets towards MIN on
//! the traces the default is measured on.
//!
//! Blocks are LIR (low inter-reference recency: kept) or HIR. Of the
//! cache, 1 % (at least one block) holds resident HIR blocks in a FIFO
//! queue `Q`, the rest LIR blocks. A recency stack `S` holds the LIR
//! blocks and the HIR blocks (resident or not) referenced since the
//! oldest LIR block, which is always its bottom ("stack pruning" removes
//! the HIR entries below it). A miss evicts `Q`'s front; an HIR block
//! referenced while still in `S` has a reuse distance below the oldest LIR
//! block's recency, so it becomes LIR and that LIR block becomes a
//! resident HIR block at `Q`'s end.
//!
//! The paper leaves the non-resident entries in `S` unbounded; here at
//! most [`GHOSTS_PER_BLOCK`] times the capacity stay (the oldest evicted
//! leave first), so the metadata is bounded like every other policy's.
//! It lives only in the simulator: it is not built for the cache's
//! lock-free hits (every hit moves a block in `S`).

use crate::policy::{key_map, KeyMap};

/// Non-resident HIR entries kept in `S`, per block of capacity.
const GHOSTS_PER_BLOCK: usize = 2;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Lir,
    Hir,
    NonResident,
}

/// A doubly linked list threaded through `prev`/`next` by node index,
/// head the newest end.
struct Chain {
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    len: usize,
}

impl Chain {
    fn new(nodes: usize) -> Self {
        Chain {
            prev: vec![NIL; nodes],
            next: vec![NIL; nodes],
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    fn push_head(&mut self, node: u32) {
        self.prev[node as usize] = NIL;
        self.next[node as usize] = self.head;
        if self.head == NIL {
            self.tail = node;
        } else {
            self.prev[self.head as usize] = node;
        }
        self.head = node;
        self.len += 1;
    }

    fn unlink(&mut self, node: u32) {
        let (prev, next) = (self.prev[node as usize], self.next[node as usize]);
        if prev == NIL {
            self.head = next;
        } else {
            self.next[prev as usize] = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.prev[next as usize] = prev;
        }
        self.len -= 1;
    }

    fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }
}

/// LIRS over `capacity` blocks, for the simulator: [`Lirs::access`]
/// replays one reference.
///
/// # Examples
/// ```
/// use flexio_cache::sim::Lirs;
/// // 1 and 2 are read twice close together (LIR); a scan of 3..40 goes
/// // through the one HIR block and leaves them cached.
/// let mut lirs = Lirs::new(3);
/// for key in [1, 2, 1, 2] {
///     lirs.access(key);
/// }
/// for key in 3..40 {
///     assert!(!lirs.access(key));
/// }
/// assert!(lirs.access(1) && lirs.access(2));
/// ```
pub struct Lirs {
    map: KeyMap,
    keys: Vec<u64>,
    state: Vec<State>,
    in_stack: Vec<bool>,
    /// `S`: LIR blocks and the HIR blocks referenced since the oldest one.
    stack: Chain,
    /// `Q`: resident HIR blocks, the front (tail) evicted first.
    queue: Chain,
    /// The non-resident entries of `S`, oldest evicted at the tail.
    ghosts: Chain,
    free: Vec<u32>,
    lir: usize,
    lir_target: usize,
    resident: usize,
    capacity: usize,
    ghost_limit: usize,
}

impl Lirs {
    /// An empty LIRS with room for `capacity` blocks.
    ///
    /// # Panics
    /// When `capacity` is 0 or its metadata does not fit `u32` indices.
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a cache needs at least one frame");
        let ghost_limit = GHOSTS_PER_BLOCK * capacity;
        let nodes = capacity + ghost_limit + 1;
        assert!(nodes < NIL as usize, "at most u32::MAX / 3 blocks");
        let hir = (capacity / 100).max(1);
        Lirs {
            map: key_map(nodes),
            keys: vec![0; nodes],
            state: vec![State::NonResident; nodes],
            in_stack: vec![false; nodes],
            stack: Chain::new(nodes),
            queue: Chain::new(nodes),
            ghosts: Chain::new(nodes),
            free: (0..nodes as u32).rev().collect(),
            lir: 0,
            lir_target: capacity.saturating_sub(hir),
            resident: 0,
            capacity,
            ghost_limit,
        }
    }

    /// Replays one reference to `key`; returns whether it hit.
    pub fn access(&mut self, key: u64) -> bool {
        let Some(&node) = self.map.get(&key) else {
            self.miss_new(key);
            return false;
        };
        match self.state[node as usize] {
            State::Lir => {
                self.move_to_stack_top(node);
                self.prune();
                true
            }
            State::Hir => {
                if self.in_stack[node as usize] {
                    self.queue.unlink(node);
                    self.become_lir(node);
                } else {
                    self.move_to_stack_top(node);
                    self.queue.unlink(node);
                    self.queue.push_head(node);
                }
                true
            }
            State::NonResident => {
                self.ghosts.unlink(node);
                self.make_room();
                self.resident += 1;
                self.become_lir(node);
                false
            }
        }
    }

    /// A key never seen (or forgotten): LIR while the LIR set fills,
    /// resident HIR after.
    fn miss_new(&mut self, key: u64) {
        self.make_room();
        let node = self.free.pop().expect("room for every node");
        self.keys[node as usize] = key;
        self.map.insert(key, node);
        self.resident += 1;
        self.in_stack[node as usize] = false;
        self.move_to_stack_top(node);
        if self.lir < self.lir_target {
            self.state[node as usize] = State::Lir;
            self.lir += 1;
        } else {
            self.state[node as usize] = State::Hir;
            self.queue.push_head(node);
        }
    }

    /// `node`, referenced within `S`, joins the LIR set at its top; the
    /// oldest LIR block leaves it for `Q`.
    fn become_lir(&mut self, node: u32) {
        self.move_to_stack_top(node);
        self.state[node as usize] = State::Lir;
        self.lir += 1;
        if self.lir > self.lir_target
            && let Some(bottom) = self.stack.tail()
        {
            self.stack.unlink(bottom);
            self.in_stack[bottom as usize] = false;
            self.state[bottom as usize] = State::Hir;
            self.lir -= 1;
            self.queue.push_head(bottom);
        }
        self.prune();
    }

    fn move_to_stack_top(&mut self, node: u32) {
        if self.in_stack[node as usize] {
            self.stack.unlink(node);
        }
        self.stack.push_head(node);
        self.in_stack[node as usize] = true;
    }

    /// Removes HIR entries from the bottom of `S` until a LIR block is
    /// there.
    fn prune(&mut self) {
        while let Some(bottom) = self.stack.tail() {
            match self.state[bottom as usize] {
                State::Lir => return,
                State::Hir => {
                    self.stack.unlink(bottom);
                    self.in_stack[bottom as usize] = false;
                }
                State::NonResident => {
                    self.stack.unlink(bottom);
                    self.ghosts.unlink(bottom);
                    self.forget(bottom);
                }
            }
        }
    }

    /// Evicts `Q`'s front when the cache is full: it stays in `S` as a
    /// non-resident entry if it is there, else it is forgotten.
    fn make_room(&mut self) {
        if self.resident < self.capacity {
            return;
        }
        let Some(victim) = self.queue.tail() else {
            return;
        };
        self.queue.unlink(victim);
        self.resident -= 1;
        if self.in_stack[victim as usize] {
            self.state[victim as usize] = State::NonResident;
            self.ghosts.push_head(victim);
            if self.ghosts.len > self.ghost_limit
                && let Some(oldest) = self.ghosts.tail()
            {
                self.ghosts.unlink(oldest);
                self.stack.unlink(oldest);
                self.forget(oldest);
            }
        } else {
            self.forget(victim);
        }
    }

    fn forget(&mut self, node: u32) {
        self.in_stack[node as usize] = false;
        self.state[node as usize] = State::NonResident;
        self.map.remove(&self.keys[node as usize]);
        self.free.push(node);
    }

    /// Blocks resident now.
    pub fn len(&self) -> usize {
        self.resident
    }

    /// Whether no block is resident.
    pub fn is_empty(&self) -> bool {
        self.resident == 0
    }
}

#[cfg(test)]
mod tests {
    use super::Lirs;

    fn replay(lirs: &mut Lirs, keys: &[u64]) -> String {
        keys.iter()
            .map(|&k| if lirs.access(k) { 'H' } else { 'M' })
            .collect()
    }

    #[test]
    fn lirs_keeps_blocks_reused_closer_than_a_loop_lru_loses() {
        // A loop of 6 over 5 blocks: LRU misses every reference; LIRS
        // keeps its 4 LIR blocks and hits them every lap after the first.
        let mut lirs = Lirs::new(5);
        let lap: Vec<u64> = (0..6).collect();
        let keys: Vec<u64> = lap.iter().cycle().take(60).copied().collect();
        let trace = replay(&mut lirs, &keys);
        assert_eq!(&trace[..6], "MMMMMM");
        assert!(trace[6..].matches('H').count() >= 4 * 9, "{trace}");
        assert!(lirs.len() <= 5);
    }

    #[test]
    fn lirs_an_hir_block_reused_within_the_stack_becomes_lir() {
        // Capacity 3: 1 and 2 are LIR (the first two blocks), 3 the one
        // HIR block. 4 evicts 3, which stays in S as non-resident; 3 again
        // within S becomes LIR and 1 (the stack's bottom) turns HIR.
        let mut lirs = Lirs::new(3);
        assert_eq!(replay(&mut lirs, &[1, 2, 3, 4, 3]), "MMMMM");
        // 3 is LIR now: a run of new blocks goes through the HIR slot.
        assert_eq!(replay(&mut lirs, &[5, 6, 7, 3, 2]), "MMMHH");
    }

    #[test]
    fn lirs_a_resident_hir_block_hit_within_the_stack_becomes_lir() {
        // Capacity 3: 1 and 2 LIR, 3 resident HIR. 3's hit within S makes
        // it LIR and 1 (the bottom) HIR, so 4 evicts 1, not 3.
        let mut lirs = Lirs::new(3);
        assert_eq!(replay(&mut lirs, &[1, 2, 3, 3, 4, 3, 1]), "MMMHMHM");
    }

    #[test]
    fn lirs_non_resident_entries_stay_bounded() {
        let mut lirs = Lirs::new(10);
        for key in 0..100_000u64 {
            lirs.access(key % 7 + (key / 3) * 13);
        }
        assert!(lirs.len() <= 10);
        assert!(lirs.map.len() <= 10 + 2 * 10);
        assert!(lirs.ghosts.len <= 20);
    }
}
