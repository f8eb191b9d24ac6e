//! A worker's timer wheel: the deadlines of its connections (head, idle,
//! send and drain timeouts) and the times their rate's tokens are due, in
//! slots of [`TICK`]. Adding is O(1); each tick looks at one slot, where
//! an entry more than a turn of the wheel away waits for a later turn.
//! Entries are never removed early: a connection whose deadline moved on
//! finds its old entry stale when it fires (the connection checks).

use std::time::{Duration, Instant};

/// A slot's span.
pub(crate) const TICK: Duration = Duration::from_millis(10);

/// Slots in one turn of the wheel (about 10 s).
const SLOTS: usize = 1024;

/// Ticks [`Wheel::timeout`] looks ahead for an entry.
const LOOK_AHEAD: u64 = 100;

/// Deadlines by connection token.
pub(crate) struct Wheel {
    slots: Vec<Vec<(Instant, u64)>>,
    /// The wheel's time zero.
    start: Instant,
    /// The next tick to look at.
    next: u64,
    entries: usize,
}

impl Wheel {
    pub fn new(now: Instant) -> Wheel {
        Wheel {
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            start: now,
            next: 0,
            entries: 0,
        }
    }

    /// The first tick at or after `at`: an entry goes there, so it never
    /// fires before its time.
    fn tick_of(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.start);
        since.as_nanos().div_ceil(TICK.as_nanos()) as u64
    }

    /// The last tick `now` has reached: every entry of this turn in its
    /// slot or before is due.
    fn reached(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.start);
        (since.as_nanos() / TICK.as_nanos()) as u64
    }

    /// Wakes `token` at `at` (or at the first tick after it).
    pub fn add(&mut self, at: Instant, token: u64) {
        let tick = self.tick_of(at).max(self.next);
        self.slots[(tick % SLOTS as u64) as usize].push((at, token));
        self.entries += 1;
    }

    /// The tokens whose time has come by `now`, in `due`.
    pub fn expire(&mut self, now: Instant, due: &mut Vec<(Instant, u64)>) {
        let last = self.reached(now);
        if last < self.next {
            return;
        }
        // A long stall looks at each slot once, not once per tick missed.
        let first = self.next.max(last.saturating_sub(SLOTS as u64 - 1));
        for tick in first..=last {
            if self.entries == 0 {
                break;
            }
            let slot = &mut self.slots[(tick % SLOTS as u64) as usize];
            let before = slot.len();
            slot.retain(|&(at, token)| {
                if at <= now {
                    due.push((at, token));
                    false
                } else {
                    true
                }
            });
            self.entries -= before - slot.len();
        }
        self.next = last + 1;
    }

    /// How long a worker may sleep before the next tick with entries is
    /// due (looking [`LOOK_AHEAD`] ticks ahead at most, so an idle worker
    /// wakes about once a second, not at every tick); `None` with no
    /// entries.
    pub fn timeout(&self, now: Instant) -> Option<Duration> {
        if self.entries == 0 {
            return None;
        }
        let ahead = (0..LOOK_AHEAD)
            .find(|k| !self.slots[((self.next + k) % SLOTS as u64) as usize].is_empty())
            .unwrap_or(LOOK_AHEAD);
        let tick = self.start + TICK * (self.next + ahead) as u32;
        Some(tick.saturating_duration_since(now))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::Wheel;

    #[test]
    fn entries_fire_at_their_time_never_before_even_beyond_a_turn() {
        let start = Instant::now();
        let mut wheel = Wheel::new(start);
        wheel.add(start + Duration::from_millis(25), 1);
        wheel.add(start + Duration::from_secs(15), 2);
        wheel.add(start + Duration::from_millis(5), 3);
        let mut due = Vec::new();
        wheel.expire(start + Duration::from_millis(20), &mut due);
        assert_eq!(due.iter().map(|d| d.1).collect::<Vec<_>>(), [3]);
        due.clear();
        // Inside the 25 ms entry's tick, before its time: not yet, and
        // not forgotten when its time comes within the same tick.
        wheel.expire(start + Duration::from_millis(24), &mut due);
        assert!(due.is_empty());
        wheel.expire(start + Duration::from_millis(26), &mut due);
        assert!(due.is_empty());
        wheel.expire(start + Duration::from_millis(30), &mut due);
        assert_eq!(due.iter().map(|d| d.1).collect::<Vec<_>>(), [1]);
        due.clear();
        // Only the 15 s entry is left: the worker may sleep a second.
        let sleep = wheel.timeout(start + Duration::from_millis(30)).unwrap();
        assert!(sleep > Duration::from_millis(900) && sleep <= Duration::from_millis(1100));
        wheel.add(start + Duration::from_millis(55), 4);
        let sleep = wheel.timeout(start + Duration::from_millis(30)).unwrap();
        assert_eq!(sleep, Duration::from_millis(30));
        wheel.expire(start + Duration::from_millis(60), &mut due);
        assert_eq!(due.iter().map(|d| d.1).collect::<Vec<_>>(), [4]);
        due.clear();
        // A turn of the wheel later (10.24 s) the 15 s entry is in the slot
        // looked at, and must stay.
        wheel.expire(start + Duration::from_millis(10_260), &mut due);
        assert!(due.is_empty());
        assert!(wheel
            .timeout(start + Duration::from_millis(10_260))
            .is_some());
        wheel.expire(start + Duration::from_secs(16), &mut due);
        assert_eq!(due.iter().map(|d| d.1).collect::<Vec<_>>(), [2]);
        assert!(wheel.timeout(start).is_none());
    }
}
