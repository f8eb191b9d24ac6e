//! The adaptive policy's miniature S3-FIFOs, one per setting, replaying the
//! same sampled references behind one key directory.
//!
//! Five separate S3-FIFOs would each hash a sampled key to find it, and
//! again to insert it, to evict another and to keep their ghosts: up to
//! seven hash-table operations per expert on a miss. Here one table maps a
//! sampled key to an entry that holds, per expert, the key's count of
//! reads where it is resident, its sequence number where it is in the
//! ghost, or that it is nowhere. A sampled reference is one lookup; where every
//! expert holds the key (the common case) it bumps five counters in that
//! one entry. An expert's queues are rings of entries: S3-FIFO only ever
//! takes a block from a queue's tail and puts it at a head, so no block
//! leaves from the middle and no links are needed. An eviction writes the
//! evicted entry without hashing; an entry leaves the table when no expert
//! holds it. Each expert makes exactly the choices
//! [`S3Fifo`](super::S3Fifo) makes at its setting (a test replays both
//! side by side).

use std::collections::VecDeque;

use super::{key_map, Key, KeyMap};

/// The counter saturates here (two bits), as in S3-FIFO.
const MAX_FREQUENCY: u8 = 3;

/// An expert's slot in an entry: the key is nowhere in that expert.
const ABSENT: u32 = u32::MAX;

/// An expert's slot in an entry with this bit holds a ghost sequence
/// number (its low 31 bits); without it, the count of a resident key's
/// reads (up to [`MAX_FREQUENCY`]).
const GHOST: u32 = 1 << 31;

/// The first slot of a freed entry: neither a count, absent nor a ghost.
const FREED: u32 = MAX_FREQUENCY as u32 + 1;

/// `N` miniature S3-FIFOs of the same size over the same references.
pub(crate) struct Experts<const N: usize> {
    directory: KeyMap,
    entries: Vec<Entry<N>>,
    free_entries: Vec<u32>,
    /// Entries an expert let go during one reference, freed after it when
    /// no expert holds them (kept to reuse its allocation).
    let_go: Vec<u32>,
    experts: [Expert; N],
}

/// One sampled key: its value, and where each expert holds it.
#[derive(Clone, Copy)]
struct Entry<const N: usize> {
    key: Key,
    slots: [u32; N],
}

/// One S3-FIFO's queues and setting; its keys' state is in the entries.
struct Expert {
    /// Oldest at the front.
    small: VecDeque<u32>,
    main: VecDeque<u32>,
    ghost: Vec<u32>,
    ghost_len: u64,
    next_ghost: u64,
    small_target: usize,
    promote_at: u32,
    /// Whether a block back from the ghost enters `main` only past a tail
    /// with no reads left (as [`S3Fifo::set_guarded_return`](super::S3Fifo)).
    guarded_return: bool,
    capacity: usize,
}

impl<const N: usize> Experts<N> {
    /// `N` experts of `frames` frames (at least 2), each with its small
    /// queue's share in frames, its reads to promote and whether a return
    /// from the ghost is guarded (as `S3Fifo::set_guarded_return` sets it).
    pub(crate) fn new(frames: usize, settings: [(usize, u8, bool); N]) -> Self {
        // Each expert holds at most its frames and its ghost's keys; the
        // experts share most of them.
        let most = 2 * frames;
        Experts {
            directory: key_map(most),
            entries: Vec::with_capacity(most),
            free_entries: Vec::new(),
            let_go: Vec::new(),
            experts: settings.map(|(small, promote_at, guarded)| {
                Expert::new(frames, small, promote_at, guarded)
            }),
        }
    }

    /// Replays a reference to `key` in every expert; `hits[i]` goes up by
    /// one where expert `i` held it.
    pub(crate) fn access(&mut self, key: Key, hits: &mut [u64; N]) {
        let entry = match self.directory.get(&key) {
            Some(&entry) => entry,
            None => self.new_entry(key),
        };
        let slots = &mut self.entries[entry as usize].slots;
        if slots.iter().fold(0, |any, &slot| any | slot) & GHOST == 0 {
            // Resident in every expert, the common case: bump each count.
            for (count, hit) in slots.iter_mut().zip(hits) {
                *count = (*count + 1).min(MAX_FREQUENCY.into());
                *hit += 1;
            }
            return;
        }
        let mut let_go = std::mem::take(&mut self.let_go);
        for (i, hit) in hits.iter_mut().enumerate() {
            *hit += u64::from(self.access_in(i, entry, &mut let_go));
        }
        for &dead in &let_go {
            self.free_entry(dead);
        }
        let_go.clear();
        self.let_go = let_go;
    }

    fn new_entry(&mut self, key: Key) -> u32 {
        let value = Entry {
            key,
            slots: [ABSENT; N],
        };
        let entry = match self.free_entries.pop() {
            Some(entry) => {
                self.entries[entry as usize] = value;
                entry
            }
            None => {
                self.entries.push(value);
                (self.entries.len() - 1) as u32
            }
        };
        self.directory.insert(key, entry);
        entry
    }

    /// Replays the reference in expert `i`; entries no expert holds any
    /// more go to `freed` (never `entry`, which this reference makes
    /// resident in every expert).
    fn access_in(&mut self, i: usize, entry: u32, freed: &mut Vec<u32>) -> bool {
        let expert = &mut self.experts[i];
        let slot = &mut self.entries[entry as usize].slots[i];
        if *slot & GHOST == 0 {
            *slot = (*slot + 1).min(MAX_FREQUENCY.into());
            return true;
        }
        if expert.small.len() + expert.main.len() == expert.capacity {
            expert.evict(i, &mut self.entries, freed);
        }
        // Not resident, so a ghost unless absent; read after the eviction:
        // pushing a key into the ghost may have dropped this one from it,
        // as in S3-FIFO.
        let slot = &mut self.entries[entry as usize].slots[i];
        let back_from_ghost = *slot != ABSENT;
        *slot = 0;
        if back_from_ghost && expert.main_takes_a_return(i, &mut self.entries) {
            expert.main.push_back(entry);
        } else {
            expert.small.push_back(entry);
        }
        false
    }

    /// Frees `entry` if no expert holds it (once: a freed entry's first
    /// slot says [`FREED`]).
    fn free_entry(&mut self, entry: u32) {
        let value = &mut self.entries[entry as usize];
        if value.slots.iter().all(|&slot| slot == ABSENT) {
            value.slots[0] = FREED;
            self.directory.remove(&value.key);
            self.free_entries.push(entry);
        }
    }
}

impl Expert {
    fn new(frames: usize, small: usize, promote_at: u8, guarded: bool) -> Self {
        let ghost_len = frames.saturating_sub((frames / 10).max(1)).max(1);
        Expert {
            small: VecDeque::with_capacity(frames),
            main: VecDeque::with_capacity(frames),
            ghost: Vec::with_capacity(ghost_len),
            ghost_len: ghost_len as u64,
            next_ghost: 0,
            small_target: small.clamp(1, (frames - 1).max(1)),
            promote_at: promote_at.clamp(1, MAX_FREQUENCY).into(),
            guarded_return: guarded,
            capacity: frames,
        }
    }

    /// The main queue's share: the frames the small queue's does not take.
    fn main_share(&self) -> usize {
        self.capacity.saturating_sub(self.small_target)
    }

    /// Whether `main` takes a block back from the ghost now, as
    /// `S3Fifo::main_takes_a_return` decides (sweeping the tail once where
    /// it does not).
    fn main_takes_a_return<const N: usize>(&mut self, i: usize, entries: &mut [Entry<N>]) -> bool {
        if !self.guarded_return || self.main.len() < self.main_share() {
            return true;
        }
        let Some(&oldest) = self.main.front() else {
            return true;
        };
        let count = &mut entries[oldest as usize].slots[i];
        if *count == 0 {
            return true;
        }
        *count -= 1;
        self.main.rotate_left(1);
        false
    }

    /// Makes room for one block, as `S3Fifo::evict` does.
    fn evict<const N: usize>(&mut self, i: usize, entries: &mut [Entry<N>], freed: &mut Vec<u32>) {
        if (self.small.len() >= self.small_target || self.main.is_empty())
            && self.evict_small(i, entries, freed)
        {
            return;
        }
        self.evict_main(i, entries, freed);
    }

    /// Whether it made room.
    fn evict_small<const N: usize>(
        &mut self,
        i: usize,
        entries: &mut [Entry<N>],
        freed: &mut Vec<u32>,
    ) -> bool {
        while let Some(entry) = self.small.pop_front() {
            let count = &mut entries[entry as usize].slots[i];
            // A guarded main queue under its share fills from here.
            if *count >= self.promote_at
                || (self.guarded_return && self.main.len() < self.main_share())
            {
                *count = 0;
                self.main.push_back(entry);
                if self.main.len() > self.main_share() {
                    self.evict_main(i, entries, freed);
                    return true;
                }
            } else {
                self.push_ghost(i, entry, entries, freed);
                return true;
            }
        }
        false
    }

    fn evict_main<const N: usize>(
        &mut self,
        i: usize,
        entries: &mut [Entry<N>],
        freed: &mut Vec<u32>,
    ) {
        // Each reinsertion lowers a counter, so this ends within
        // MAX_FREQUENCY laps.
        loop {
            let entry = self.main.pop_front().expect("full");
            let slot = &mut entries[entry as usize].slots[i];
            if *slot > 0 {
                *slot -= 1;
                self.main.push_back(entry);
            } else {
                *slot = ABSENT;
                freed.push(entry);
                return;
            }
        }
    }

    /// Puts `entry` in the ghost, forgetting the oldest ghost when full.
    fn push_ghost<const N: usize>(
        &mut self,
        i: usize,
        entry: u32,
        entries: &mut [Entry<N>],
        freed: &mut Vec<u32>,
    ) {
        let sequence = self.next_ghost as u32 & !GHOST;
        let slot = (self.next_ghost % self.ghost_len) as usize;
        if slot < self.ghost.len() {
            let old = std::mem::replace(&mut self.ghost[slot], entry);
            let old_sequence = (self.next_ghost - self.ghost_len) as u32 & !GHOST;
            let old_slot = &mut entries[old as usize].slots[i];
            if *old_slot == GHOST | old_sequence {
                *old_slot = ABSENT;
                freed.push(old);
            }
        } else {
            self.ghost.push(entry);
        }
        entries[entry as usize].slots[i] = GHOST | sequence;
        self.next_ghost += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::Experts;
    use crate::policy::S3Fifo;
    use crate::trace::Trace;

    /// The settings of the adaptive policy's grid, in frames of 125, and
    /// a guarded one with a larger small queue and two reads to promote.
    const SETTINGS: [(usize, u8, bool); 6] = [
        (1, 1, false),
        (12, 2, false),
        (31, 2, false),
        (87, 1, false),
        (1, 1, true),
        (12, 2, true),
    ];

    #[test]
    fn an_entry_holds_its_key_and_five_slots_in_32_bytes() {
        // The metadata bound in `policy/adaptive.rs` counts 32 bytes.
        assert_eq!(std::mem::size_of::<super::Entry<5>>(), 32);
    }

    #[test]
    fn experts_hit_exactly_where_separate_s3_fifos_do() {
        for spec in [
            "loop:blocks=140,len=20000",
            "shift:blocks=200,phase=400,len=20000",
            "zipf+scan:blocks=2000,len=20000,scan=0.3",
            "zipf-shift:blocks=3000,alpha=1.0,to=0.7,len=20000",
        ] {
            let keys = Trace::open(spec).expect("a generator spec").keys;
            let mut experts = Experts::new(125, SETTINGS);
            let mut separate = SETTINGS.map(|(small, promote_at, guarded)| {
                let mut cache = S3Fifo::with_small_target(125, small);
                cache.set_promote_at(promote_at);
                cache.set_guarded_return(guarded);
                cache
            });
            for (n, &key) in keys.iter().enumerate() {
                let mut hits = [0; 6];
                experts.access(key, &mut hits);
                let expected = separate
                    .each_mut()
                    .map(|cache| u64::from(cache.access(key)));
                assert_eq!(hits, expected, "{spec}: reference {n} to {key}");
            }
            // Nothing but what the experts hold stays in the directory.
            let held = 6 * (125 + 112) + 1;
            assert!(
                experts.directory.len() <= held,
                "{spec}: {}",
                experts.directory.len()
            );
        }
    }
}
