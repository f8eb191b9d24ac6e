//! The CPU time of a server process, in nanoseconds, the same way for
//! every server (flexio serve's threads, nginx's worker processes, a
//! forking daemon's children).
//!
//! `/proc/PID/stat` counts in clock ticks (10 ms here): a 1 GiB download
//! costing 0.13–0.17 s is 13–17 ticks, too coarse to compare two servers
//! by. The scheduler's own count, `sum_exec_runtime` (the first field of
//! `/proc/PID/task/TID/schedstat`, `proc(5)`, `sched-stats.rst`), is in
//! nanoseconds; it is summed over the process's living threads. What
//! it misses is counted in ticks from `/proc/PID/stat`: threads that have
//! exited (the process's utime + stime less its living threads') and
//! children it has waited for (cutime + cstime).

/// CPU nanoseconds (user + system) `pid` has used so far, as described
/// above; `None` when the process is gone or unreadable.
pub fn process_cpu_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let times = StatTimes::parse(&stat)?;
    let mut living_ns = 0u64;
    let mut living_ticks = 0u64;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let path = task.path();
            // A thread that exits between the listing and the read is
            // counted in the process's ticks instead.
            let (Ok(schedstat), Ok(task_stat)) = (
                std::fs::read_to_string(path.join("schedstat")),
                std::fs::read_to_string(path.join("stat")),
            ) else {
                continue;
            };
            let (Some(ns), Some(task_times)) = (
                schedstat
                    .split_whitespace()
                    .next()
                    .and_then(|f| f.parse::<u64>().ok()),
                StatTimes::parse(&task_stat),
            ) else {
                continue;
            };
            living_ns += ns;
            living_ticks += task_times.own;
        }
    }
    let tick_ns = 1_000_000_000 / rustix::param::clock_ticks_per_second();
    let exited_ticks = times.own.saturating_sub(living_ticks);
    Some(living_ns + (exited_ticks + times.children) * tick_ns)
}

/// The times of one `/proc/PID/stat` line, in clock ticks.
#[derive(Debug, PartialEq)]
struct StatTimes {
    /// utime + stime.
    own: u64,
    /// cutime + cstime: children waited for.
    children: u64,
}

impl StatTimes {
    fn parse(stat: &str) -> Option<StatTimes> {
        // The command name is in parentheses and may hold spaces; after
        // ")", state is field 3, so utime..cstime (14..17) are at 11..14.
        let after = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<u64> = after
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        (fields.len() == 4).then(|| StatTimes {
            own: fields[0] + fields[1],
            children: fields[2] + fields[3],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_after_the_command_name() {
        let stat = "42 (a) b c) S 1 42 42 0 -1 4194560 100 0 0 0 7 5 3 1 20 0 1 0 10 1000 10";
        assert_eq!(
            StatTimes::parse(stat),
            Some(StatTimes {
                own: 12,
                children: 4
            })
        );
        assert_eq!(StatTimes::parse("garbage"), None);
    }

    #[test]
    fn a_spin_of_this_process_is_counted() {
        let me = std::process::id();
        let before = process_cpu_ns(me).unwrap();
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let used = process_cpu_ns(me).unwrap() - before;
        // At least part of the 30 ms spin was on a CPU (a loaded machine
        // may take some of it); not more than the wall time plus what the
        // test harness's other threads did, well under a second.
        assert!(used > 1_000_000, "{used} ns");
        assert!(used < 1_000_000_000, "{used} ns");
    }
}
