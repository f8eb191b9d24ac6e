//! The data of a bench run: what was measured (cells and contenders), every
//! raw run, and the summaries computed from them. This is what
//! `results.json` holds (with [`SCHEMA_VERSION`]).

use serde::{Deserialize, Serialize};

/// Version of `results.json`; bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// Whether the source was in the page cache when a run started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheState {
    /// The source pages were dropped before each run.
    Cold,
    /// The source was read once before and stays cached.
    Warm,
    /// Not a file source (memory, sockets fed from memory).
    NotApplicable,
}

/// One thing that moves the bytes of a cell: a flexio mechanism with its
/// parameters, or a standard tool.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Contender {
    /// A flexio mechanism (`auto` included).
    Flexio {
        /// The mechanism's name as on the command line.
        mechanism: String,
        /// `--chunk` in bytes.
        chunk: u64,
        /// O_DIRECT on the file side(s).
        direct: bool,
        /// `--queue-depth` (io_uring requests in flight); results written
        /// before it was recorded read as the default.
        #[serde(default = "default_queue_depth")]
        queue_depth: u32,
        /// `--pipe-size` in bytes (splice); absent in older results, read as
        /// the default.
        #[serde(default = "default_pipe_size")]
        pipe_size: u64,
        /// For `auto`: it ran without the tuned profile, so the built-in
        /// table decided (only set beside an `auto` that had a profile).
        #[serde(default)]
        builtin_table: bool,
    },
    /// A standard tool, e.g. `cp`, `dd bs=1M`, `socat`, `iperf3 -Z`.
    Peer {
        /// The label shown in tables, e.g. `dd bs=1M iflag=direct oflag=direct`.
        name: String,
    },
    /// A physical limit measured in the same run (memcpy, disk, loopback).
    Limit {
        /// e.g. `memcpy`, `disk-direct-read`, `iperf3-loopback`.
        name: String,
    },
}

fn default_queue_depth() -> u32 {
    flexio::Params::default().queue_depth
}

fn default_pipe_size() -> u64 {
    flexio::Params::default().pipe_size as u64
}

impl Contender {
    /// The label in tables and charts; parameters appear only where they
    /// differ from the defaults (the chunk is added by the tables when two
    /// contenders differ only in it).
    ///
    /// # Examples
    /// ```
    /// use flexio_bench::model::Contender;
    /// let uring = Contender::Flexio {
    ///     mechanism: "io-uring".into(),
    ///     chunk: 1 << 20,
    ///     direct: true,
    ///     queue_depth: 8,
    ///     pipe_size: 1 << 20,
    ///     builtin_table: false,
    /// };
    /// assert_eq!(uring.label(), "flexio io-uring --direct --queue-depth 8");
    /// ```
    pub fn label(&self) -> String {
        match self {
            Contender::Flexio {
                mechanism,
                direct,
                queue_depth,
                pipe_size,
                builtin_table,
                ..
            } => {
                let mut label = format!("flexio {mechanism}");
                if *builtin_table {
                    label += " (built-in)";
                }
                if *direct && mechanism != "direct" {
                    label += " --direct";
                }
                if *queue_depth != default_queue_depth() {
                    label += &format!(" --queue-depth {queue_depth}");
                }
                if *pipe_size != default_pipe_size() {
                    label += &format!(" --pipe-size {}", flexio::format_bytes(*pipe_size));
                }
                label
            }
            Contender::Peer { name } => name.clone(),
            Contender::Limit { name } => format!("limit: {name}"),
        }
    }

    /// Whether this is a flexio mechanism.
    pub fn is_flexio(&self) -> bool {
        matches!(self, Contender::Flexio { .. })
    }

    /// Whether this is flexio's `auto` (with the profile or without).
    pub fn is_auto(&self) -> bool {
        matches!(self, Contender::Flexio { mechanism, .. } if mechanism == "auto")
    }

    /// Whether this is `auto` that consulted the tuned profile (or the only
    /// `auto` of a run without one).
    pub fn is_profile_auto(&self) -> bool {
        matches!(self, Contender::Flexio { mechanism, builtin_table: false, .. } if mechanism == "auto")
    }

    /// Whether this is a fixed flexio mechanism (not `auto`).
    pub fn is_fixed_flexio(&self) -> bool {
        self.is_flexio() && !self.is_auto()
    }

    /// Whether this is a standard tool.
    pub fn is_peer(&self) -> bool {
        matches!(self, Contender::Peer { .. })
    }
}

/// The coordinates of one measured cell (everything but the contender).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellKey {
    /// Scenario name: `file-to-file`, `file-to-file-durable`,
    /// `file-to-socket`, `socket-to-file`, `file-to-pipe`, `memory`,
    /// `parallel`, `meter`, `limits`.
    pub scenario: String,
    /// Bytes per flow.
    pub size: u64,
    /// `--chunk` in bytes for the chunk sweep, 0 where the chunk is each
    /// contender's own default.
    pub chunk: u64,
    /// Cache state of the source.
    pub cache: CacheState,
    /// Concurrent flows (1 except in `parallel`).
    pub flows: u32,
    /// Network path: `loopback`, `veth`, or empty for local flows.
    pub path: String,
}

/// One timed run of one contender in one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Where it ran.
    pub cell: CellKey,
    /// What ran.
    pub contender: Contender,
    /// Round number: 0 is the warm-up (not counted), 1.. counted.
    pub round: u32,
    /// Bytes moved (all flows together).
    pub bytes: u64,
    /// Wall time of the timed window.
    pub wall_ns: u64,
    /// Process CPU, user (children included for peers).
    pub cpu_user_ns: u64,
    /// Process CPU, system (children included for peers).
    pub cpu_sys_ns: u64,
    /// Whole-host busy CPU over the window.
    pub host_cpu_busy_ns: u64,
    /// Voluntary + involuntary context switches.
    pub context_switches: u64,
    /// Source page-cache residency just before the run, percent (None if
    /// not a file).
    pub source_resident_percent: Option<f64>,
    /// The mechanism that really ran (after fallbacks), for flexio.
    pub mechanism_used: Option<String>,
    /// What decided the mechanism, for flexio: `requested`, `built-in
    /// table` or the profile range (absent in older results).
    #[serde(default)]
    pub decided_by: Option<String>,
    /// For the meter scenario: share of the co-process's solo rate it kept
    /// during this run (0..1).
    pub meter_kept: Option<f64>,
}

impl RunRecord {
    /// Throughput in bytes per second.
    pub fn throughput(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.bytes as f64 * 1e9 / self.wall_ns as f64
        }
    }
}

/// What machine the bench ran on: the same fingerprint a tuned profile
/// carries.
pub use flexio::tune::Fingerprint;

/// Everything a bench run produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The machine.
    pub fingerprint: Fingerprint,
    /// The command line that produced this.
    pub command: String,
    /// Peers that were wanted but not installed.
    pub missing_peers: Vec<String>,
    /// Notes about what was skipped and why (no root for veth, …).
    pub notes: Vec<String>,
    /// Every raw run, warm-ups included (round 0).
    pub runs: Vec<RunRecord>,
}
