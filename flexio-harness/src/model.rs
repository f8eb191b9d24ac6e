//! The data of a bench run: what was measured (cells and contenders), every
//! raw run, and the summaries computed from them. This is what
//! `results.json` holds (with [`SCHEMA_VERSION`]).

use std::fmt;

use flexio::measure::Measurement;
use flexio::profile::FlowKind;
use flexio::{CopyKernel, EndpointKind, MechanismName};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// Version of `results.json`; bumped when a field changes meaning.
/// 2: `flexio copy` as a process (`Contender::Process`), the per-cell
/// `summary` and the run's `provenance`.
pub const SCHEMA_VERSION: u32 = 2;

/// A family of cells of the bench's matrix: one of the engine's flow kinds,
/// or a family that is not one flow (the limits, parallel flows, the meter,
/// …). Results name it by [`Scenario::name`] (`file-to-file`, `memory`, …).
///
/// # Examples
/// ```
/// use flexio::profile::FlowKind;
/// use flexio_harness::model::Scenario;
/// let memory = Scenario::Flow(FlowKind::MemoryToMemory);
/// assert_eq!(memory.name(), "memory");
/// assert_eq!(memory.flow(), Some(FlowKind::MemoryToMemory));
/// assert_eq!(Scenario::Parallel.flow(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// Physical limits: memcpy, direct disk, loopback TCP.
    Limits,
    /// One flow of a kind the tuner measures ([`FlowKind::TUNED`]): file to
    /// file (page cache: sizes, chunk sweep, cold and warm), durable file
    /// to file (the sink's fsync inside the timed window), file to a TCP
    /// socket and back (loopback; veth between namespaces as root), file
    /// into a pipe a reader drains, a pipe the bench feeds into a file,
    /// memory to memory (64 B to 1 GiB). [`FlowKind::Other`] is no
    /// scenario: it has no name and no cells.
    Flow(FlowKind),
    /// 1, 2, 4, 8 concurrent file-to-file flows.
    Parallel,
    /// A CPU-bound co-process counting during file-to-socket transfers.
    Meter,
    /// `flexio serve --via MECHANISM` sending one file to 1-4 HTTP clients
    /// at once over loopback (Cue's Table 8); run by the seeds' exhibits,
    /// not part of the matrix ([`Scenario::ALL`]).
    ServeClients,
    /// A flexio sender flow (file -> TCP) and a flexio receiver flow
    /// (TCP -> file) over one loopback connection, moving the cell's
    /// `flows` files one after the other (the OS project's master and
    /// slave); run by the seeds' exhibits, not part of the matrix.
    SocketPair,
}

impl Scenario {
    /// Every scenario, in the order a run visits them.
    pub const ALL: [Scenario; 10] = [
        Scenario::Limits,
        Scenario::Flow(FlowKind::FileToFile),
        Scenario::Flow(FlowKind::FileToFileDurable),
        Scenario::Flow(FlowKind::FileToSocket),
        Scenario::Flow(FlowKind::SocketToFile),
        Scenario::Flow(FlowKind::FileToPipe),
        Scenario::Flow(FlowKind::PipeToFile),
        Scenario::Flow(FlowKind::MemoryToMemory),
        Scenario::Parallel,
        Scenario::Meter,
    ];

    /// The scenarios the seeds' exhibits run beside the matrix.
    const EXHIBITS_ONLY: [Scenario; 2] = [Scenario::ServeClients, Scenario::SocketPair];

    /// The name on the command line, in `CellKey::scenario` and in
    /// `results.json`: a flow's is its kind's ([`FlowKind::as_str`]), but
    /// memory to memory has always been `memory` there.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Limits => "limits",
            Scenario::Flow(FlowKind::MemoryToMemory) => "memory",
            Scenario::Flow(kind) => kind.as_str(),
            Scenario::Parallel => "parallel",
            Scenario::Meter => "meter",
            Scenario::ServeClients => "serve-clients",
            Scenario::SocketPair => "socket-pair",
        }
    }

    /// The scenario of a name on the command line (the matrix's,
    /// [`Scenario::ALL`]).
    ///
    /// # Examples
    /// ```
    /// use flexio::profile::FlowKind;
    /// use flexio_harness::model::Scenario;
    /// assert_eq!(Scenario::from_name("memory"), Some(Scenario::Flow(FlowKind::MemoryToMemory)));
    /// assert_eq!(Scenario::from_name("serve-clients"), None);
    /// assert_eq!(Scenario::from_name("nope"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The scenario of a name in results: any scenario, the exhibits'
    /// included.
    fn from_any_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .chain(Self::EXHIBITS_ONLY)
            .find(|s| s.name() == name)
    }

    /// The flow kind its cells measure, `None` for a family that is not
    /// one flow.
    pub fn flow(self) -> Option<FlowKind> {
        match self {
            Scenario::Flow(kind) => Some(kind),
            _ => None,
        }
    }

    /// Whether its flows cross a TCP connection (one end a socket).
    pub fn crosses_a_socket(self) -> bool {
        matches!(
            self,
            Scenario::Flow(FlowKind::FileToSocket | FlowKind::SocketToFile)
        )
    }

    /// Whether the sink's fsync is inside the timed window.
    pub fn durable(self) -> bool {
        self == Scenario::Flow(FlowKind::FileToFileDurable)
    }

    /// The endpoint kinds of its flows (`None` for the limits, which are
    /// not flows, for the socket pair, whose two flows differ, and for
    /// [`FlowKind::Other`]).
    ///
    /// # Examples
    /// ```
    /// use flexio::EndpointKind;
    /// use flexio_harness::model::Scenario;
    /// assert_eq!(Scenario::Meter.endpoints(), Some((EndpointKind::File, EndpointKind::Tcp)));
    /// assert_eq!(Scenario::Limits.endpoints(), None);
    /// ```
    pub fn endpoints(self) -> Option<(EndpointKind, EndpointKind)> {
        use EndpointKind::{File, Tcp};
        match self {
            Scenario::Limits | Scenario::SocketPair | Scenario::Flow(FlowKind::Other) => None,
            Scenario::Flow(kind) => Some(kind.representative_pair()),
            Scenario::Parallel => Some((File, File)),
            Scenario::Meter | Scenario::ServeClients => Some((File, Tcp)),
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl Serialize for Scenario {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Scenario {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Scenario::from_any_name(&name)
            .ok_or_else(|| de::Error::custom(format!("unknown scenario {name:?}")))
    }
}

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
        /// The mechanism (its name as on the command line in JSON).
        mechanism: MechanismName,
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
        /// The copy kernel of a memory flow; absent (memcpy) in older
        /// results and wherever it is the default.
        #[serde(default, skip_serializing_if = "is_memcpy")]
        copy_kernel: CopyKernel,
    },
    /// `flexio copy` started as a process for every run, timed by the
    /// same harness as the peers (start-up, exec and exit included): the
    /// contender every comparison with a peer uses.
    Process {
        /// `auto` (no flags: the profile or the built-in table decides, as
        /// for a user's `flexio copy SRC DST`) or the mechanism of `--via`.
        mechanism: MechanismName,
        /// `--chunk` in bytes (passed for a fixed mechanism only).
        chunk: u64,
        /// `--direct` (a fixed mechanism only).
        direct: bool,
        /// `--queue-depth` (a fixed mechanism only).
        queue_depth: u32,
        /// `--pipe-size` in bytes (a fixed mechanism only).
        pipe_size: u64,
    },
    /// A flexio sender flow and a flexio receiver flow over one
    /// connection (a socket-pair cell), each with its own mechanism and
    /// the same chunk (buffer or map size).
    Pair {
        /// The sending side's mechanism (file -> TCP).
        sender: MechanismName,
        /// The receiving side's mechanism (TCP -> file).
        receiver: MechanismName,
        /// `--chunk` in bytes on both sides.
        chunk: u64,
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

/// What kind of contender a result is, as `results.json` and the tables
/// name it: what it may be compared with depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContenderKind {
    /// A flexio mechanism run inside the bench process (no start-up, its
    /// buffers and rings warm from the run before): for comparing
    /// mechanisms with each other, never with a peer.
    Engine,
    /// `flexio copy` as a process, timed like a peer.
    Process,
    /// A standard tool as a process.
    Peer,
    /// A physical limit.
    Limit,
}

impl ContenderKind {
    /// `engine`, `process`, `peer` or `limit`.
    pub fn as_str(self) -> &'static str {
        match self {
            ContenderKind::Engine => "engine",
            ContenderKind::Process => "process",
            ContenderKind::Peer => "peer",
            ContenderKind::Limit => "limit",
        }
    }
}

fn is_memcpy(kernel: &CopyKernel) -> bool {
    *kernel == CopyKernel::Memcpy
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
    /// use flexio::MechanismName;
    /// use flexio_harness::model::Contender;
    /// let uring = Contender::Flexio {
    ///     mechanism: MechanismName::IoUring,
    ///     chunk: 1 << 20,
    ///     direct: true,
    ///     queue_depth: 8,
    ///     pipe_size: 1 << 20,
    ///     builtin_table: false,
    ///     copy_kernel: Default::default(),
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
                copy_kernel,
                ..
            } => {
                let mut label = format!("flexio {mechanism}");
                if *copy_kernel != CopyKernel::Memcpy {
                    label += &format!(" --copy-kernel {copy_kernel}");
                }
                if *builtin_table {
                    label += " (built-in)";
                }
                if *direct && *mechanism != MechanismName::Direct {
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
            Contender::Process {
                mechanism,
                direct,
                queue_depth,
                pipe_size,
                ..
            } => {
                let mut label = "flexio copy".to_string();
                if *mechanism != MechanismName::Auto {
                    label += &format!(" --via {mechanism}");
                    if *direct && *mechanism != MechanismName::Direct {
                        label += " --direct";
                    }
                    if *queue_depth != default_queue_depth() {
                        label += &format!(" --queue-depth {queue_depth}");
                    }
                    if *pipe_size != default_pipe_size() {
                        label += &format!(" --pipe-size {}", flexio::format_bytes(*pipe_size));
                    }
                }
                label + " (process)"
            }
            Contender::Pair {
                sender, receiver, ..
            } => format!("flexio {sender} -> flexio {receiver}"),
            Contender::Peer { name } => name.clone(),
            Contender::Limit { name } => format!("limit: {name}"),
        }
    }

    /// Engine, process, peer or limit.
    ///
    /// # Examples
    /// ```
    /// use flexio_harness::model::{Contender, ContenderKind};
    /// let cp = Contender::Peer { name: "cp".into() };
    /// assert_eq!(cp.kind(), ContenderKind::Peer);
    /// ```
    pub fn kind(&self) -> ContenderKind {
        match self {
            Contender::Flexio { .. } | Contender::Pair { .. } => ContenderKind::Engine,
            Contender::Process { .. } => ContenderKind::Process,
            Contender::Peer { .. } => ContenderKind::Peer,
            Contender::Limit { .. } => ContenderKind::Limit,
        }
    }

    /// Whether this is `flexio copy` run as a process.
    pub fn is_process(&self) -> bool {
        matches!(self, Contender::Process { .. })
    }

    /// Whether it runs as a process, as a standard tool does: a peer or
    /// `flexio copy`. Only these are compared with peers.
    pub fn runs_as_process(&self) -> bool {
        self.is_process() || self.is_peer()
    }

    /// Whether this is a flexio mechanism run in the bench's process (the
    /// engine; `flexio copy` as a process is [`Self::is_process`]).
    pub fn is_flexio(&self) -> bool {
        matches!(self, Contender::Flexio { .. })
    }

    /// Whether this is flexio's `auto` (with the profile or without).
    pub fn is_auto(&self) -> bool {
        matches!(self, Contender::Flexio { mechanism, .. } if *mechanism == MechanismName::Auto)
    }

    /// Whether this is `auto` that consulted the tuned profile (or the only
    /// `auto` of a run without one).
    pub fn is_profile_auto(&self) -> bool {
        matches!(self, Contender::Flexio { mechanism, builtin_table: false, .. } if *mechanism == MechanismName::Auto)
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
    /// The scenario, written by its name (`file-to-file`, `memory`, …).
    pub scenario: Scenario,
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
    /// Cue's schedule on the cell's flexio flows (in the engine), or none;
    /// absent in results written before cells had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<CellSchedule>,
    /// A socket pair opens a new connection for each of its files (the
    /// OS project's slave connected once per file) rather than one for
    /// all; absent in results written before cells had it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub connection_per_file: bool,
}

/// Serde's test for a field left out when false.
fn is_false(value: &bool) -> bool {
    !*value
}

/// Cue's schedule as a coordinate of a cell: `chunks` calls of a chunk
/// each, then a pause of `pause_ms` (`--schedule K,T`).
///
/// # Examples
/// ```
/// use flexio_harness::model::CellSchedule;
/// let cue = CellSchedule { chunks: 3, pause_ms: 70 };
/// assert_eq!(cue.to_string(), "k=3 t=70ms");
/// let schedule = cue.pacing().schedule.unwrap();
/// assert_eq!(schedule.pause, std::time::Duration::from_millis(70));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellSchedule {
    /// K: chunks between pauses (at least 1).
    pub chunks: u32,
    /// T: the pause, milliseconds.
    pub pause_ms: u64,
}

impl CellSchedule {
    /// The pacing a flow of the cell runs with: the schedule alone (each
    /// chunk one `--chunk`).
    pub fn pacing(self) -> flexio::pace::Pacing {
        flexio::pace::Pacing {
            schedule: Some(flexio::pace::Schedule {
                chunks: self.chunks.max(1),
                pause: std::time::Duration::from_millis(self.pause_ms),
            }),
            ..flexio::pace::Pacing::default()
        }
    }
}

impl fmt::Display for CellSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "k={} t={}ms", self.chunks, self.pause_ms)
    }
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
    /// Bytes moved (all flows together), wall time, the CPU charged to
    /// the contender (children included for peers) and the host's busy
    /// CPU over the window; written as top-level fields.
    #[serde(flatten)]
    pub measured: Measurement,
    /// Voluntary + involuntary context switches.
    pub context_switches: u64,
    /// Of those, the involuntary ones (preempted rather than blocking);
    /// absent in results written before they were recorded.
    #[serde(default)]
    pub involuntary_switches: Option<u64>,
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
    /// For parallel cells: each flow's own throughput, bytes per second
    /// (its bytes over its own wall time), for Jain's index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_bytes_per_s: Vec<f64>,
}

impl RunRecord {
    /// Throughput in bytes per second.
    pub fn throughput(&self) -> f64 {
        self.measured.bytes_per_s()
    }
}

/// What machine the bench ran on: the same fingerprint a tuned profile
/// carries.
pub use flexio::profile::Fingerprint;

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
    /// Where the run came from: flexio's version and commit, when it
    /// started, what `auto` consulted (absent in results of schema 1).
    #[serde(default)]
    pub provenance: Provenance,
    /// Per cell, each contender's median, min and max and its kind, and
    /// the verdict against the best peer: derived from `runs` when the
    /// results are written (empty until then).
    #[serde(default)]
    pub summary: Vec<CellSummary>,
}

/// Where a bench run came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The flexio version that ran.
    pub flexio_version: String,
    /// `git rev-parse HEAD` of the checkout it was built from, `unknown`
    /// when it was not built from one.
    pub git_commit: String,
    /// When the run started, UTC, RFC 3339.
    pub started_at: String,
    /// The tuned profile `auto` consulted (its path), or `None` when the
    /// built-in table decided.
    pub auto_profile: Option<String>,
    /// The `flexio` executable timed as a process (`None`: none was given,
    /// and no process contender ran).
    pub flexio_executable: Option<String>,
}

impl Provenance {
    /// This build's version and commit, starting now.
    pub fn now() -> Self {
        Provenance {
            flexio_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("FLEXIO_GIT_COMMIT").to_string(),
            started_at: rfc3339_utc(std::time::SystemTime::now()),
            auto_profile: None,
            flexio_executable: None,
        }
    }
}

/// `time` as `YYYY-MM-DDTHH:MM:SSZ`.
///
/// # Examples
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// assert_eq!(flexio_harness::model::rfc3339_utc(t), "2023-11-14T22:13:20Z");
/// ```
pub fn rfc3339_utc(time: std::time::SystemTime) -> String {
    let seconds = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Howard Hinnant's days-to-civil, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// One cell of `results.json`'s summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    /// Where.
    pub cell: CellKey,
    /// The cell in words, as in the tables.
    pub label: String,
    /// Every contender's counted runs, summarised.
    pub contenders: Vec<ContenderSummary>,
    /// `flexio copy` as a process against the fastest peer, when both ran.
    pub verdict: Option<String>,
}

/// One contender of a [`CellSummary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContenderSummary {
    /// The label in tables and charts.
    pub contender: String,
    /// Engine, process, peer or limit.
    pub kind: ContenderKind,
    /// Counted runs.
    pub runs: usize,
    /// Median throughput, bytes per second.
    pub median_bytes_per_s: f64,
    /// Slowest counted run, bytes per second.
    pub min_bytes_per_s: f64,
    /// Fastest counted run, bytes per second.
    pub max_bytes_per_s: f64,
    /// Median of per-round ratios to the fastest peer (processes and
    /// peers only).
    pub ratio_to_best_peer: Option<f64>,
    /// Median over the median of the limit that bounds the cell.
    pub ratio_to_limit: Option<f64>,
    /// Why a ratio above 1 to the limit is not a contender beating
    /// physics (see `stats::limit_explanation`).
    pub limit_note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scenario's name as `results.json` and the command line have
    /// always written it.
    const WRITTEN: [(&str, Scenario); 12] = [
        ("limits", Scenario::Limits),
        ("file-to-file", Scenario::Flow(FlowKind::FileToFile)),
        (
            "file-to-file-durable",
            Scenario::Flow(FlowKind::FileToFileDurable),
        ),
        ("file-to-socket", Scenario::Flow(FlowKind::FileToSocket)),
        ("socket-to-file", Scenario::Flow(FlowKind::SocketToFile)),
        ("file-to-pipe", Scenario::Flow(FlowKind::FileToPipe)),
        ("pipe-to-file", Scenario::Flow(FlowKind::PipeToFile)),
        ("memory", Scenario::Flow(FlowKind::MemoryToMemory)),
        ("parallel", Scenario::Parallel),
        ("meter", Scenario::Meter),
        ("serve-clients", Scenario::ServeClients),
        ("socket-pair", Scenario::SocketPair),
    ];

    #[test]
    fn a_cell_key_of_an_older_results_file_still_loads() {
        for (name, scenario) in WRITTEN {
            let json = format!(
                r#"{{"scenario":"{name}","size":1048576,"chunk":0,"cache":"warm","flows":1,"path":""}}"#
            );
            let key: CellKey =
                serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(key.scenario, scenario, "{name}");
            assert_eq!(
                serde_json::to_string(&scenario).unwrap(),
                format!("\"{name}\"")
            );
        }
    }

    #[test]
    fn the_command_line_names_the_matrix_only() {
        for (name, scenario) in WRITTEN {
            let on_the_command_line = Scenario::ALL.contains(&scenario);
            assert_eq!(
                Scenario::from_name(name).is_some(),
                on_the_command_line,
                "{name}"
            );
        }
    }

    #[test]
    fn an_unknown_or_untuned_name_is_refused_with_its_name() {
        for name in ["memory-to-memory", "other", "nope"] {
            let error = serde_json::from_str::<Scenario>(&format!("\"{name}\"")).unwrap_err();
            assert!(error.to_string().contains(name), "{error}");
        }
    }
}
