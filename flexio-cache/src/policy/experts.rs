//! The adaptive policy's miniature S3-FIFOs, one per setting, replaying the
//! same sampled references behind one key directory.
//!
//! Four separate S3-FIFOs would each hash a sampled key to find it, and
//! again to insert it, to evict another and to keep their ghosts: up to
//! seven hash-table operations per expert on a miss. Here one table maps a
//! sampled key to an entry that holds, per expert, where the key is: in a
//! frame, in the ghost (with its sequence number) or nowhere. A sampled
//! reference is one lookup; an eviction writes the evicted key's entry,
//! found through its frame, without hashing; an entry leaves the table
//! when no expert holds it. Each expert makes exactly the choices
//! [`S3Fifo`](super::S3Fifo) makes at its setting (a test replays both
//! side by side).

use super::list::{Links, List};
use super::{key_map, Key, KeyMap};

/// The counter saturates here (two bits), as in S3-FIFO.
const MAX_FREQUENCY: u8 = 3;

/// An expert's slot in an entry: the key is nowhere in that expert.
const ABSENT: u32 = u32::MAX;

/// An expert's slot in an entry with this bit holds a ghost sequence
/// number (its low 31 bits); without it, a frame.
const GHOST: u32 = 1 << 31;

/// The first slot of a freed entry: neither absent, nor a ghost, nor a
/// frame any expert has (they have far fewer than 2^31).
const FREED: u32 = GHOST - 1;

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

/// One S3-FIFO without its key map: frames name entries.
struct Expert {
    entry_of: Vec<u32>,
    frequency: Vec<u8>,
    links: Links,
    small: List,
    main: List,
    free: Vec<u32>,
    ghost: Vec<u32>,
    ghost_len: u64,
    next_ghost: u64,
    small_target: usize,
    promote_at: u8,
    /// The count a block starts with in `main` when it comes back from
    /// the ghost.
    ghost_return: u8,
    capacity: usize,
}

impl<const N: usize> Experts<N> {
    /// `N` experts of `frames` frames (at least 2), each with its small
    /// queue's share in frames, its reads to promote and whether a return
    /// from the ghost counts as a read (as
    /// [`S3Fifo::set_ghost_return_read`](super::S3Fifo) sets it).
    pub(crate) fn new(frames: usize, settings: [(usize, u8, bool); N]) -> Self {
        // Each expert holds at most its frames and its ghost's keys; the
        // experts share most of them.
        let most = 2 * frames;
        Experts {
            directory: key_map(most),
            entries: Vec::with_capacity(most),
            free_entries: Vec::new(),
            let_go: Vec::new(),
            experts: settings.map(|(small, promote_at, ghost_read)| {
                Expert::new(frames, small, promote_at, ghost_read)
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
        let slots = self.entries[entry as usize].slots;
        if slots.iter().all(|&slot| slot & GHOST == 0) {
            // Resident in every expert, the common case: bump each counter.
            for ((expert, hit), frame) in self.experts.iter_mut().zip(hits).zip(slots) {
                expert.bump(frame);
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
        let slot = self.entries[entry as usize].slots[i];
        if slot & GHOST == 0 {
            expert.bump(slot);
            return true;
        }
        let frame = match expert.free.pop() {
            Some(frame) => frame,
            None => expert.evict(i, &mut self.entries, freed),
        };
        // Not resident, so a ghost unless absent; read after the eviction:
        // pushing a key into the ghost may have dropped this one from it,
        // as in S3-FIFO.
        let ghost = self.entries[entry as usize].slots[i] != ABSENT;
        expert.place(frame, entry, ghost);
        self.entries[entry as usize].slots[i] = frame;
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
    fn new(frames: usize, small: usize, promote_at: u8, ghost_read: bool) -> Self {
        let ghost_len = frames.saturating_sub((frames / 10).max(1)).max(1);
        Expert {
            entry_of: vec![0; frames],
            frequency: vec![0; frames],
            links: Links::new(frames),
            small: List::default(),
            main: List::default(),
            free: (0..frames as u32).rev().collect(),
            ghost: Vec::with_capacity(ghost_len),
            ghost_len: ghost_len as u64,
            next_ghost: 0,
            small_target: small.clamp(1, (frames - 1).max(1)),
            promote_at: promote_at.clamp(1, MAX_FREQUENCY),
            ghost_return: u8::from(ghost_read),
            capacity: frames,
        }
    }

    fn bump(&mut self, frame: u32) {
        let count = &mut self.frequency[frame as usize];
        *count = (*count + 1).min(MAX_FREQUENCY);
    }

    fn place(&mut self, frame: u32, entry: u32, ghost: bool) {
        self.entry_of[frame as usize] = entry;
        if ghost {
            self.frequency[frame as usize] = self.ghost_return;
            self.main.push_head(&mut self.links, frame);
        } else {
            self.frequency[frame as usize] = 0;
            self.small.push_head(&mut self.links, frame);
        }
    }

    /// Frees one frame, as `S3Fifo::evict` does.
    fn evict<const N: usize>(
        &mut self,
        i: usize,
        entries: &mut [Entry<N>],
        freed: &mut Vec<u32>,
    ) -> u32 {
        if (self.small.len() >= self.small_target || self.main.len() == 0)
            && let Some(frame) = self.evict_small(i, entries, freed)
        {
            return frame;
        }
        self.evict_main(i, entries, freed)
    }

    fn evict_small<const N: usize>(
        &mut self,
        i: usize,
        entries: &mut [Entry<N>],
        freed: &mut Vec<u32>,
    ) -> Option<u32> {
        while let Some(frame) = self.small.pop_tail(&mut self.links) {
            if self.frequency[frame as usize] >= self.promote_at {
                self.frequency[frame as usize] = 0;
                self.main.push_head(&mut self.links, frame);
                if self.main.len() > self.capacity.saturating_sub(self.small_target) {
                    return Some(self.evict_main(i, entries, freed));
                }
            } else {
                let entry = self.entry_of[frame as usize];
                self.push_ghost(i, entry, entries, freed);
                return Some(frame);
            }
        }
        None
    }

    fn evict_main<const N: usize>(
        &mut self,
        i: usize,
        entries: &mut [Entry<N>],
        freed: &mut Vec<u32>,
    ) -> u32 {
        // Each reinsertion lowers a counter, so this ends within
        // MAX_FREQUENCY laps.
        loop {
            let frame = self.main.pop_tail(&mut self.links).expect("full");
            let count = self.frequency[frame as usize];
            if count > 0 {
                self.frequency[frame as usize] = count - 1;
                self.main.push_head(&mut self.links, frame);
            } else {
                let entry = self.entry_of[frame as usize];
                entries[entry as usize].slots[i] = ABSENT;
                freed.push(entry);
                return frame;
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

    /// The settings of the adaptive policy's grid, in frames of 125.
    const SETTINGS: [(usize, u8, bool); 5] = [
        (1, 1, false),
        (12, 2, false),
        (31, 2, false),
        (87, 1, false),
        (1, 1, true),
    ];

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
            let mut separate = SETTINGS.map(|(small, promote_at, ghost_read)| {
                let mut cache = S3Fifo::with_small_target(125, small);
                cache.set_promote_at(promote_at);
                cache.set_ghost_return_read(ghost_read);
                cache
            });
            for (n, &key) in keys.iter().enumerate() {
                let mut hits = [0; 5];
                experts.access(key, &mut hits);
                let expected = separate
                    .each_mut()
                    .map(|cache| u64::from(cache.access(key)));
                assert_eq!(hits, expected, "{spec}: reference {n} to {key}");
            }
            // Nothing but what the experts hold stays in the directory.
            let held = 5 * (125 + 112) + 1;
            assert!(
                experts.directory.len() <= held,
                "{spec}: {}",
                experts.directory.len()
            );
        }
    }
}
