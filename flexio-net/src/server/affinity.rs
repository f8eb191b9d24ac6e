//! Workers that run where their clients' packets arrive. A worker whose
//! connections' packets are nearly all processed on one CPU (the
//! socket's `SO_INCOMING_CPU`: the receive queue's CPU for a network
//! card, the sender's CPU over loopback) pins itself to that CPU, so a
//! request and its answer need no wake-up across CPUs; a worker whose
//! clients are spread (more than one in eight elsewhere) floats on every CPU the process may use, and so
//! does one whose CPU already holds its share of pinned workers (a card
//! with one receive queue must not pile every worker on one CPU). A
//! worker pins itself only after [`LOOKS`] looks in a row name the same
//! CPU: at 64 wrk connections a worker serves both of wrk's threads, and
//! whenever the two ran on one CPU for a moment every connection named
//! it; pinning at once, 7 rounds in 20 had a p99 of 3.1–8.2 ms, against
//! 0.7–1.4 ms floating (docs/net.md).
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

/// Looks in a row that must name one CPU before a worker pins itself
/// there.
pub(crate) const LOOKS: u32 = 4;

/// What a worker's last looks named: the CPU and how many in a row.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Streak {
    cpu: Option<usize>,
    looks: u32,
}

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
    /// Each worker's CPU, or [`FLOATING`]; only the worker changes its
    /// own.
    pinned: Vec<AtomicUsize>,
    /// Workers pinned to each CPU of `allowed`, claimed before pinning.
    on_cpu: Vec<AtomicUsize>,
    /// The most workers pinned to one CPU.
    share: usize,
}

impl Affinity {
    /// Where `workers` workers may run: the CPUs in `allowed`.
    pub fn new(workers: usize, allowed: Vec<usize>) -> Affinity {
        let workers = workers.max(1);
        let share = workers.div_ceil(allowed.len().max(1));
        Affinity {
            allowed: allowed.clone(),
            pinned: (0..workers).map(|_| AtomicUsize::new(FLOATING)).collect(),
            on_cpu: allowed.iter().map(|_| AtomicUsize::new(0)).collect(),
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
    /// arrived last on `arrivals` (one CPU per connection sampled) and
    /// its earlier looks in `streak`; `None` when it should stay where
    /// it is. It floats at once, and pins itself after [`LOOKS`] looks
    /// naming the same CPU.
    pub fn choose(&self, index: usize, arrivals: &[usize], streak: &mut Streak) -> Option<Place> {
        let mine = self.pinned.get(index)?.load(Ordering::Relaxed);
        let mut wanted = self.wanted(index, arrivals);
        match wanted {
            Place::Cpu(cpu) if streak.cpu == Some(cpu) => streak.looks += 1,
            Place::Cpu(cpu) => {
                *streak = Streak {
                    cpu: Some(cpu),
                    looks: 1,
                }
            }
            Place::Anywhere => *streak = Streak::default(),
        }
        if matches!(wanted, Place::Cpu(cpu) if cpu != mine) && streak.looks < LOOKS {
            wanted = Place::Anywhere;
        }
        let now = match wanted {
            Place::Cpu(cpu) => cpu,
            Place::Anywhere => FLOATING,
        };
        (now != mine).then_some(wanted)
    }

    /// Records that worker `index` runs at `place` from now: a CPU's
    /// place is claimed first, and `false` (nothing recorded) when the
    /// CPU holds its share already or is not one the process may use.
    pub fn moved(&self, index: usize, place: Place) -> bool {
        let Some(slot) = self.pinned.get(index) else {
            return false;
        };
        let now = match place {
            Place::Cpu(cpu) => {
                let Some(count) = self.count_of(cpu) else {
                    return false;
                };
                let claimed = count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < self.share).then_some(n + 1)
                });
                if claimed.is_err() {
                    return false;
                }
                cpu
            }
            Place::Anywhere => FLOATING,
        };
        let was = slot.swap(now, Ordering::AcqRel);
        if let Some(count) = self.count_of(was) {
            count.fetch_sub(1, Ordering::AcqRel);
        }
        true
    }

    /// Pins the calling thread (worker `index`) to `place`, or floats it
    /// when the CPU holds its share already.
    ///
    /// # Errors
    /// The kernel refuses the CPU set (a CPU taken offline); the worker
    /// is then recorded floating, and may be where it was.
    pub fn apply(&self, index: usize, place: Place) -> std::io::Result<()> {
        let place = if self.moved(index, place) {
            place
        } else {
            self.moved(index, Place::Anywhere);
            Place::Anywhere
        };
        let mut set = rustix::thread::CpuSet::new();
        match place {
            Place::Cpu(cpu) => set.set(cpu),
            Place::Anywhere => self.allowed.iter().for_each(|&cpu| set.set(cpu)),
        }
        let applied = rustix::thread::sched_setaffinity(None, &set);
        if applied.is_err() {
            self.moved(index, Place::Anywhere);
        }
        Ok(applied?)
    }

    /// The count of workers pinned to `cpu`, if the process may use it.
    fn count_of(&self, cpu: usize) -> Option<&AtomicUsize> {
        let position = self.allowed.iter().position(|&allowed| allowed == cpu)?;
        self.on_cpu.get(position)
    }

    /// The CPU seven in eight of `arrivals` name, when it is one the
    /// process may use and it holds fewer than its share of the other
    /// workers (as far as this worker can tell: [`Affinity::moved`]
    /// claims the place); else anywhere.
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
        let mine = self
            .pinned
            .get(index)
            .map(|slot| slot.load(Ordering::Relaxed));
        let others_there = self.count_of(cpu).map_or(usize::MAX, |count| {
            count
                .load(Ordering::Relaxed)
                .saturating_sub(usize::from(mine == Some(cpu)))
        });
        if clear && others_there < self.share {
            Place::Cpu(cpu)
        } else {
            Place::Anywhere
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What worker `index` chooses after [`LOOKS`] looks at `arrivals`
    /// (the earlier looks' choices dropped: they are none or floating).
    fn settled(affinity: &Affinity, index: usize, arrivals: &[usize]) -> Option<Place> {
        let mut streak = Streak::default();
        (0..LOOKS)
            .map(|_| affinity.choose(index, arrivals, &mut streak))
            .last()
            .flatten()
    }

    #[test]
    fn a_worker_whose_clients_arrive_on_one_cpu_pins_itself_there() {
        let affinity = Affinity::new(4, vec![0, 1]);
        assert_eq!(settled(&affinity, 0, &[1]), Some(Place::Cpu(1)));
        assert_eq!(
            settled(&affinity, 0, &[1, 1, 1, 1, 1, 1, 1, 0]),
            Some(Place::Cpu(1))
        );
        affinity.moved(0, Place::Cpu(1));
        assert_eq!(settled(&affinity, 0, &[1, 1]), None, "already there");
        assert_eq!(
            settled(&affinity, 0, &[0, 0]),
            Some(Place::Cpu(0)),
            "follows"
        );
    }

    #[test]
    fn a_worker_pins_itself_only_after_looks_in_a_row_name_one_cpu() {
        let affinity = Affinity::new(4, vec![0, 1]);
        let mut streak = Streak::default();
        for _ in 1..LOOKS {
            assert_eq!(affinity.choose(0, &[1], &mut streak), None);
        }
        assert_eq!(affinity.choose(0, &[0], &mut streak), None, "another CPU");
        assert_eq!(affinity.choose(0, &[0, 1], &mut streak), None, "spread");
        for _ in 1..LOOKS {
            assert_eq!(affinity.choose(0, &[1], &mut streak), None);
        }
        assert_eq!(affinity.choose(0, &[1], &mut streak), Some(Place::Cpu(1)));
        affinity.moved(0, Place::Cpu(1));
        assert_eq!(
            affinity.choose(0, &[0], &mut streak),
            Some(Place::Anywhere),
            "a pinned worker whose clients moved floats at once"
        );
    }

    #[test]
    fn a_worker_whose_clients_are_spread_floats() {
        let affinity = Affinity::new(4, vec![0, 1]);
        let mut streak = Streak::default();
        affinity.moved(0, Place::Cpu(1));
        assert_eq!(
            affinity.choose(0, &[1, 0, 1, 0], &mut streak),
            Some(Place::Anywhere)
        );
        assert_eq!(
            affinity.choose(0, &[1, 1, 1, 1, 1, 1, 0, 0], &mut streak),
            Some(Place::Anywhere)
        );
        assert_eq!(affinity.choose(0, &[], &mut streak), Some(Place::Anywhere));
        affinity.moved(0, Place::Anywhere);
        assert_eq!(
            affinity.choose(0, &[0, 1], &mut streak),
            None,
            "already floating"
        );
    }

    #[test]
    fn a_cpu_takes_at_most_its_share_of_pinned_workers() {
        let affinity = Affinity::new(4, vec![0, 1]);
        affinity.moved(1, Place::Cpu(0));
        affinity.moved(2, Place::Cpu(0));
        assert_eq!(settled(&affinity, 0, &[0, 0, 0]), None, "CPU 0 is full");
        assert_eq!(settled(&affinity, 3, &[1]), Some(Place::Cpu(1)));
        affinity.moved(2, Place::Anywhere);
        assert_eq!(settled(&affinity, 0, &[0]), Some(Place::Cpu(0)));
    }

    #[test]
    fn workers_deciding_at_once_never_pin_more_than_the_share() {
        let affinity = std::sync::Arc::new(Affinity::new(8, vec![0, 1]));
        let claimed: usize = (0..8)
            .map(|index| {
                let affinity = std::sync::Arc::clone(&affinity);
                std::thread::spawn(move || affinity.moved(index, Place::Cpu(0)))
            })
            .map(|thread| usize::from(thread.join().unwrap()))
            .sum();
        assert_eq!(claimed, 4, "a share is 8 workers / 2 CPUs");
        let pinned_to_0 = (0..8).filter(|&i| affinity.pinned[i].load(Ordering::Relaxed) == 0);
        assert_eq!(pinned_to_0.count(), 4);
        let floated = (0..8).find(|&i| affinity.pinned[i].load(Ordering::Relaxed) == 0);
        assert!(affinity.moved(floated.unwrap(), Place::Anywhere));
        assert!(
            affinity.moved(7, Place::Cpu(0)) || affinity.moved(6, Place::Cpu(0)),
            "a place freed"
        );
    }

    #[test]
    fn a_cpu_the_process_may_not_use_or_a_single_cpu_is_never_pinned() {
        let affinity = Affinity::new(4, vec![2, 3]);
        assert_eq!(settled(&affinity, 0, &[0, 0]), None);
        let single = Affinity::new(2, vec![0]);
        assert_eq!(settled(&single, 0, &[0]), None);
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
