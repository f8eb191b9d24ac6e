//! How busy the machine was with work other than the tune's own: the
//! CPU time every CPU spent busy (`/proc/stat`) less what this process
//! and its waited children used (`/proc/self/stat`), over a stretch of
//! wall time. A tune on a machine that others keep busy measures them as
//! much as the mechanisms; it says so, and its noise rule keeps the
//! built-in choices where the runs overlap.

use std::time::Duration;

/// The share of all CPUs others may keep busy before a tune warns: a
/// quarter. The development VM's idle background was below 5%; another
/// build or `stress --cpu 2` on its two CPUs is 50 to 100%.
pub const BUSY_SHARE: f64 = 0.25;

/// CPU counters at one moment, in the kernel's clock ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuSample {
    /// Ticks all CPUs spent busy (not idle, not waiting for I/O).
    pub busy: u64,
    /// Ticks all CPUs spent in any state.
    pub total: u64,
    /// Ticks this process and its waited children used.
    pub own: u64,
}

impl CpuSample {
    /// The counters now; `None` where `/proc` cannot be read.
    pub fn now() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        Self::parse(&stat, &own)
    }

    /// The counters from the texts of `/proc/stat` and `/proc/self/stat`.
    ///
    /// # Examples
    /// ```
    /// use flexio_tune::load::CpuSample;
    /// let stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n";
    /// let own = "42 (flexio tune) R 1 2 3 4 5 6 7 8 9 10 20 10 3 2 20 0 1";
    /// let sample = CpuSample::parse(stat, own).unwrap();
    /// assert_eq!((sample.busy, sample.total, sample.own), (150, 1000, 35));
    /// ```
    pub fn parse(stat: &str, own: &str) -> Option<Self> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal [guest guest_nice]:
        // guest time is already in user and nice.
        let total: u64 = fields.iter().take(8).sum();
        let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
        // The command may hold spaces and parentheses: fields follow the
        // last ')'. utime, stime, cutime, cstime are fields 14 to 17.
        let after = &own[own.rfind(')')? + 1..];
        let times: Vec<u64> = after
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        (times.len() == 4).then(|| CpuSample {
            busy: total.saturating_sub(idle),
            total,
            own: times.iter().sum(),
        })
    }
}

/// What others did with the CPUs between two samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    /// Share of all CPUs' time busy with others' work, 0 to 1.
    pub others: f64,
}

impl Load {
    /// The load between `before` and `after`; `None` when no time passed.
    ///
    /// # Examples
    /// ```
    /// use flexio_tune::load::{CpuSample, Load};
    /// let before = CpuSample { busy: 0, total: 0, own: 0 };
    /// let after = CpuSample { busy: 150, total: 200, own: 100 };
    /// let load = Load::between(before, after).unwrap();
    /// assert_eq!(load.others, 0.25);
    /// assert!(load.is_busy());
    /// ```
    pub fn between(before: CpuSample, after: CpuSample) -> Option<Self> {
        let total = after.total.checked_sub(before.total)?;
        if total == 0 {
            return None;
        }
        let busy = after.busy.saturating_sub(before.busy);
        let own = after.own.saturating_sub(before.own);
        Some(Load {
            others: (busy.saturating_sub(own) as f64 / total as f64).clamp(0.0, 1.0),
        })
    }

    /// Whether others kept at least [`BUSY_SHARE`] of the CPUs busy.
    pub fn is_busy(&self) -> bool {
        self.others >= BUSY_SHARE
    }

    /// The load over the next `wait`, measured now (the caller sleeps).
    pub fn over(wait: Duration) -> Option<Self> {
        let before = CpuSample::now()?;
        std::thread::sleep(wait);
        Self::between(before, CpuSample::now()?)
    }
}

/// The 1-minute load average, as `/proc/loadavg` says it.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The warning a tune prints and keeps in its profile's notes when others
/// kept the machine busy `when` ("before the tune", "during the sweep").
///
/// # Examples
/// ```
/// use flexio_tune::load::{busy_warning, Load};
/// assert!(busy_warning(Load { others: 0.1 }, "before the tune").is_none());
/// let text = busy_warning(Load { others: 0.9 }, "during the sweep").unwrap();
/// assert!(text.starts_with("warning: the machine was busy"), "{text}");
/// ```
pub fn busy_warning(load: Load, when: &str) -> Option<String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    load.is_busy().then(|| {
        let average = load_average().map_or_else(String::new, |a| format!(", load average {a:.2}"));
        format!(
            "warning: the machine was busy {when}: other work kept {:.0}% of its {cpus} CPUs busy{average}; \
             the runs measured that work as much as the mechanisms, so where a choice was inside \
             the noise the built-in one was kept, and the tree's workers stay at the default \
             (tune again on a quiet machine)",
            load.others * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_spinning_is_not_others_load() {
        let before = CpuSample::now().unwrap();
        let until = std::time::Instant::now() + Duration::from_millis(300);
        let mut x = 0u64;
        while std::time::Instant::now() < until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = CpuSample::now().unwrap();
        assert!(after.own > before.own, "{before:?} {after:?}");
        let load = Load::between(before, after).unwrap();
        assert!((0.0..=1.0).contains(&load.others));
    }

    #[test]
    fn unreadable_counters_are_none() {
        assert_eq!(CpuSample::parse("intr 1 2", "1 (x) R"), None);
        let stat = "cpu  1 2 3 4 5 6 7 8\n";
        assert_eq!(CpuSample::parse(stat, "no parenthesis"), None);
        let same = CpuSample::parse(stat, "1 (x) R 1 2 3 4 5 6 7 8 9 10 1 1 1 1").unwrap();
        assert_eq!(Load::between(same, same), None);
    }
}
