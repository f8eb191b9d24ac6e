//! Where stream cells run. On a small machine the scheduler puts a stream's
//! two ends on one CPU in some runs and on two in others, and loopback
//! throughput splits into two modes (here 2.8 and 5–6 GiB/s for the same
//! sendfile) that nine rounds cannot average out. So in stream cells the
//! contender (a flexio flow, or a peer it spawns) runs on one CPU and the
//! bench's own end — the reader, the writer, the iperf3 server — on
//! another: the ends of a real transfer are on different machines, and
//! every contender meets the same placement.
//!
//! The counterpart is told by inheritance: a thread or process started
//! while the contender's CPU is pinned calls [`leave_contender_cpu`] (or
//! [`move_to_counterpart`] for a child process) and moves to the other CPU.

use std::sync::OnceLock;

use rustix::process::Pid;
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

/// The contender's CPU and the counterpart's: the first two this process
/// may use, read once before anything is pinned; `None` with fewer than
/// two.
fn pair() -> Option<(usize, usize)> {
    static PAIR: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    *PAIR.get_or_init(|| {
        let allowed = sched_getaffinity(None).ok()?;
        let mut cpus = (0..CpuSet::MAX_CPU).filter(|&cpu| allowed.is_set(cpu));
        Some((cpus.next()?, cpus.next()?))
    })
}

fn only(cpu: usize) -> CpuSet {
    let mut set = CpuSet::new();
    set.set(cpu);
    set
}

/// The calling thread pinned to the contender's CPU until dropped.
pub struct Pinned {
    previous: CpuSet,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _ = sched_setaffinity(None, &self.previous);
    }
}

/// Pins the calling thread (and what it spawns from now on) to the
/// contender's CPU; `None` where there are not two CPUs or the kernel
/// refuses, and the cell runs where the scheduler puts it.
pub fn pin_contender() -> Option<Pinned> {
    let (contender, _) = pair()?;
    let previous = sched_getaffinity(None).ok()?;
    sched_setaffinity(None, &only(contender)).ok()?;
    Some(Pinned { previous })
}

/// Whether the calling thread runs pinned to the contender's CPU.
fn on_contender_cpu() -> bool {
    let Some((contender, _)) = pair() else {
        return false;
    };
    sched_getaffinity(None).is_ok_and(|set| set == only(contender))
}

/// In a helper thread: if it inherited the contender's pin, moves it to
/// the counterpart's CPU. Best effort.
pub fn leave_contender_cpu() {
    if let (true, Some((_, counterpart))) = (on_contender_cpu(), pair()) {
        let _ = sched_setaffinity(None, &only(counterpart));
    }
}

/// Moves a counterpart process (the iperf3 server), spawned by a pinned
/// contender, to the other CPU. Best effort.
pub(crate) fn move_to_counterpart(pid: Pid) {
    if let (true, Some((_, counterpart))) = (on_contender_cpu(), pair()) {
        let _ = sched_setaffinity(Some(pid), &only(counterpart));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_of_a_pinned_contender_run_on_the_other_cpu() {
        let Some((contender, counterpart)) = pair() else {
            eprintln!("skipped: fewer than two CPUs to place a stream's ends on");
            return;
        };
        let before = sched_getaffinity(None).unwrap();
        {
            let _pinned = pin_contender().expect("pinning to an allowed CPU");
            assert_eq!(sched_getaffinity(None).unwrap(), only(contender));
            let helper = std::thread::spawn(|| {
                leave_contender_cpu();
                sched_getaffinity(None).unwrap()
            });
            assert_eq!(helper.join().unwrap(), only(counterpart));
        }
        assert_eq!(sched_getaffinity(None).unwrap(), before);
        // Unpinned, a helper stays where the scheduler put it.
        let helper = std::thread::spawn(|| {
            leave_contender_cpu();
            sched_getaffinity(None).unwrap()
        });
        assert_eq!(helper.join().unwrap(), before);
    }
}
