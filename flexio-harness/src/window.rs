//! A timed window: the clocks and CPU counters at its start, and what it
//! measured when closed — shared by the runner's cells and the limit
//! probes.

use flexio::measure::{self, Measurement, Rusage, Sample};
use flexio::Report;

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
    /// Bytes, wall time and CPU, as a run record writes them.
    pub measurement: Measurement,
    /// Voluntary context switches charged to the window.
    pub voluntary_switches: u64,
    /// Involuntary context switches charged to the window.
    pub involuntary_switches: u64,
    pub mechanism_used: Option<String>,
    pub decided_by: Option<String>,
    /// Each concurrent flow's own bytes per second (parallel cells).
    pub flow_rates: Vec<f64>,
}

impl Measured {
    /// Charges `cpu` to the window instead of what it counted itself
    /// (a peer's own client, the sum of a cell's flow threads).
    pub fn charge(&mut self, cpu: &Rusage) {
        self.measurement.cpu_user_ns = cpu.user_ns;
        self.measurement.cpu_sys_ns = cpu.sys_ns;
        self.voluntary_switches = cpu.voluntary_switches;
        self.involuntary_switches = cpu.involuntary_switches;
    }
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
        let mut measured = Measured {
            measurement: Measurement::of(bytes, &delta),
            mechanism_used: mechanism_used.map(str::to_string),
            ..Measured::default()
        };
        measured.charge(&cpu);
        measured
    }

    /// Closes the window on `bytes` moved by a flow whose report (when it
    /// wrote one) says what ran and what decided it.
    pub fn close_after(self, bytes: u64, report: Option<&Report>) -> Measured {
        let mut measured = self.close(bytes, report.map(|r| r.mechanism_used.as_str()));
        measured.decided_by = report.map(|r| r.decided_by.clone());
        measured
    }
}
