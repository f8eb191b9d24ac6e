//! A timed window: the clocks and CPU counters at its start, and what it
//! measured when closed — shared by the runner's cells and the limit
//! probes.

use flexio::measure::{self, Rusage, Sample};

/// Whose CPU a window charges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CpuScope {
    /// The calling thread.
    Thread,
    /// Children reaped inside the window.
    Children,
    /// The whole process.
    Process,
}

impl CpuScope {
    fn read(self) -> Rusage {
        match self {
            CpuScope::Thread => measure::thread_rusage(),
            CpuScope::Children => measure::children_rusage(),
            CpuScope::Process => Rusage::default(),
        }
    }
}

/// What one timed window measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measured {
    pub bytes: u64,
    pub wall_ns: u64,
    pub cpu: Rusage,
    pub host_busy_ns: u64,
    pub mechanism_used: Option<String>,
    pub decided_by: Option<String>,
    /// Each concurrent flow's own bytes per second (parallel cells).
    pub flow_rates: Vec<f64>,
}

/// A timed window: clocks and CPU counters at its start.
pub(crate) struct Window {
    scope: CpuScope,
    start: Rusage,
    sample: Sample,
}

impl Window {
    pub fn open(scope: CpuScope) -> Self {
        let start = scope.read();
        Window {
            scope,
            start,
            sample: Sample::now(),
        }
    }

    pub fn close(self, bytes: u64, mechanism_used: Option<&str>) -> Measured {
        let end_sample = Sample::now();
        let end = self.scope.read();
        let delta = end_sample.since(&self.sample);
        let cpu = match self.scope {
            CpuScope::Process => Rusage {
                user_ns: delta.cpu_user_ns,
                sys_ns: delta.cpu_sys_ns,
                cpu_ns: delta.cpu_user_ns + delta.cpu_sys_ns,
                voluntary_switches: delta.voluntary_switches,
                involuntary_switches: delta.involuntary_switches,
                minor_faults: delta.minor_faults,
                major_faults: delta.major_faults,
            },
            _ => end.since(&self.start),
        };
        Measured {
            bytes,
            wall_ns: delta.wall_ns,
            cpu,
            host_busy_ns: delta.host_busy_ns,
            mechanism_used: mechanism_used.map(str::to_string),
            decided_by: None,
            flow_rates: Vec::new(),
        }
    }
}
