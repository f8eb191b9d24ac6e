//! Workers that run where their clients' packets arrive. A worker whose
//! connections' packets are nearly all processed on one CPU (the
//! socket's `SO_INCOMING_CPU`: the receive queue's CPU for a network
//! card, the sender's CPU over loopback) pins itself to that CPU, so a
//! request and its answer need no wake-up across CPUs; a worker whose
//! clients are spread (more than one in eight elsewhere) floats on every CPU the process may use, and so
//! does one whose CPU already holds its share of pinned workers (a card
//! with one receive queue must not pile every worker on one CPU).
//!
//! Why: on a virtual machine a wake-up sent to another, halted CPU costs
//! tens of microseconds. Measured here (docs/net.md, "Workers beside
//! their clients"): a worker and `wrk -t1 -c2` pinned to one CPU served
//! 98 k 4 KiB requests/s, pinned to two CPUs 25 k; floating, 4 clients
//! got 60–170 k by run, as the scheduler happened to place them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How often a worker looks at where its clients' packets arrive.
pub(crate) const FOLLOW_EVERY: Duration = Duration::from_millis(50);

/// Connections a worker samples each time (the first it holds).
pub(crate) const SAMPLED: usize = 64;

/// A worker pinned to no CPU.
const FLOATING: usize = usize::MAX;

/// Where a worker should run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// On this CPU only.
    Cpu(usize),
    /// On any CPU the process may use.
    Anywhere,
}

/// The CPUs the workers may use and where each is pinned.
pub(crate) struct Affinity {
    /// The CPUs the process may run on, ascending.
    allowed: Vec<usize>,
    /// Each worker's CPU, or [`FLOATING`].
    pinned: Vec<AtomicUsize>,
    /// The most workers pinned to one CPU.
    share: usize,
}

impl Affinity {
    /// Where `workers` workers may run: the CPUs in `allowed`.
    pub fn new(workers: usize, allowed: Vec<usize>) -> Affinity {
        let workers = workers.max(1);
        let share = workers.div_ceil(allowed.len().max(1));
        Affinity {
            allowed,
            pinned: (0..workers).map(|_| AtomicUsize::new(FLOATING)).collect(),
            share,
        }
    }

    /// The CPUs this process may run on now.
    pub fn allowed_now() -> Vec<usize> {
        rustix::thread::sched_getaffinity(None).map_or_else(
            |_| Vec::new(),
            |set| {
                (0..rustix::thread::CpuSet::MAX_CPU)
                    .filter(|&cpu| set.is_set(cpu))
                    .collect()
            },
        )
    }

    /// Where worker `index` should run, its clients' packets having
    /// arrived last on `arrivals` (one CPU per connection sampled); `None`
    /// when it should stay where it is.
    pub fn choose(&self, index: usize, arrivals: &[usize]) -> Option<Place> {
        let mine = self.pinned.get(index)?.load(Ordering::Relaxed);
        let wanted = self.wanted(index, arrivals);
        let now = match wanted {
            Place::Cpu(cpu) => cpu,
            Place::Anywhere => FLOATING,
        };
        (now != mine).then_some(wanted)
    }

    /// Says that worker `index` now runs at `place`.
    pub fn moved(&self, index: usize, place: Place) {
        if let Some(slot) = self.pinned.get(index) {
            slot.store(
                match place {
                    Place::Cpu(cpu) => cpu,
                    Place::Anywhere => FLOATING,
                },
                Ordering::Relaxed,
            );
        }
    }

    /// Pins the calling thread (worker `index`) to `place`.
    ///
    /// # Errors
    /// The kernel refuses the CPU set (a CPU taken offline).
    pub fn apply(&self, index: usize, place: Place) -> std::io::Result<()> {
        let mut set = rustix::thread::CpuSet::new();
        match place {
            Place::Cpu(cpu) => set.set(cpu),
            Place::Anywhere => self.allowed.iter().for_each(|&cpu| set.set(cpu)),
        }
        rustix::thread::sched_setaffinity(None, &set)?;
        self.moved(index, place);
        Ok(())
    }

    /// The CPU seven in eight of `arrivals` name, when it is one the
    /// process may use and it holds fewer than its share of the other
    /// workers; else anywhere.
    fn wanted(&self, index: usize, arrivals: &[usize]) -> Place {
        if self.allowed.len() < 2 || arrivals.is_empty() {
            return Place::Anywhere;
        }
        let mut counts: Vec<(usize, usize)> = Vec::new();
        for &cpu in arrivals {
            match counts.iter_mut().find(|(seen, _)| *seen == cpu) {
                Some((_, count)) => *count += 1,
                None => counts.push((cpu, 1)),
            }
        }
        let Some(&(cpu, count)) = counts.iter().max_by_key(|&&(_, count)| count) else {
            return Place::Anywhere;
        };
        // A worker holding 16 of 64 connections opened at once by two
        // client threads gets three in four from one of them once in
        // thirteen; seven in eight, once in 240.
        let clear = 8 * count >= 7 * arrivals.len();
        let others_there = self
            .pinned
            .iter()
            .enumerate()
            .filter(|&(other, slot)| other != index && slot.load(Ordering::Relaxed) == cpu)
            .count();
        if clear && self.allowed.contains(&cpu) && others_there < self.share {
            Place::Cpu(cpu)
        } else {
            Place::Anywhere
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_whose_clients_arrive_on_one_cpu_pins_itself_there() {
        let affinity = Affinity::new(4, vec![0, 1]);
        assert_eq!(affinity.choose(0, &[1]), Some(Place::Cpu(1)));
        assert_eq!(
            affinity.choose(0, &[1, 1, 1, 1, 1, 1, 1, 0]),
            Some(Place::Cpu(1))
        );
        affinity.moved(0, Place::Cpu(1));
        assert_eq!(affinity.choose(0, &[1, 1]), None, "already there");
        assert_eq!(affinity.choose(0, &[0, 0]), Some(Place::Cpu(0)), "follows");
    }

    #[test]
    fn a_worker_whose_clients_are_spread_floats() {
        let affinity = Affinity::new(4, vec![0, 1]);
        affinity.moved(0, Place::Cpu(1));
        assert_eq!(affinity.choose(0, &[1, 0, 1, 0]), Some(Place::Anywhere));
        assert_eq!(
            affinity.choose(0, &[1, 1, 1, 1, 1, 1, 0, 0]),
            Some(Place::Anywhere)
        );
        assert_eq!(affinity.choose(0, &[]), Some(Place::Anywhere));
        affinity.moved(0, Place::Anywhere);
        assert_eq!(affinity.choose(0, &[0, 1]), None, "already floating");
    }

    #[test]
    fn a_cpu_takes_at_most_its_share_of_pinned_workers() {
        let affinity = Affinity::new(4, vec![0, 1]);
        affinity.moved(1, Place::Cpu(0));
        affinity.moved(2, Place::Cpu(0));
        assert_eq!(affinity.choose(0, &[0, 0, 0]), None, "CPU 0 is full");
        assert_eq!(affinity.choose(3, &[1]), Some(Place::Cpu(1)));
        affinity.moved(2, Place::Anywhere);
        assert_eq!(affinity.choose(0, &[0]), Some(Place::Cpu(0)));
    }

    #[test]
    fn a_cpu_the_process_may_not_use_or_a_single_cpu_is_never_pinned() {
        let affinity = Affinity::new(4, vec![2, 3]);
        assert_eq!(affinity.choose(0, &[0, 0]), None);
        let single = Affinity::new(2, vec![0]);
        assert_eq!(single.choose(0, &[0]), None);
    }

    #[test]
    fn a_thread_is_pinned_and_floated_for_real() {
        let allowed = Affinity::allowed_now();
        if allowed.len() < 2 {
            eprintln!("skipped: this process may use one CPU only");
            return;
        }
        let affinity = Affinity::new(2, allowed.clone());
        let last = *allowed.last().unwrap();
        std::thread::spawn(move || {
            affinity.apply(0, Place::Cpu(last)).unwrap();
            assert_eq!(Affinity::allowed_now(), [last]);
            assert_eq!(rustix::thread::sched_getcpu(), last);
            affinity.apply(0, Place::Anywhere).unwrap();
            assert_eq!(Affinity::allowed_now(), allowed);
        })
        .join()
        .unwrap();
    }
}
