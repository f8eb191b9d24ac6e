//! A cell of the plan and its entrants: who competes (flexio mechanisms
//! in the engine or as `flexio copy` processes, standard tools, physical
//! limits), where (the cell's key), and how results name both.

use std::fmt::Write as _;

use flexio::{format_bytes, MechanismName, Params};

use crate::limits::Probe;
use crate::model::{CacheState, CellKey, Contender, Scenario};
use crate::peers::PeerSpec;

/// One thing that competes in a cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entrant {
    /// A flexio mechanism with its parameters.
    Flexio {
        /// The mechanism (`auto` included).
        mechanism: MechanismName,
        /// Its parameters.
        params: Params,
        /// For `auto`: run without the tuned profile (the built-in table
        /// decides), beside an `auto` that consults it.
        builtin_table: bool,
    },
    /// `flexio copy` started as a process, timed like a peer: `auto` with
    /// no flags, or a fixed mechanism with all of `params` as flags.
    Process {
        /// The mechanism (`auto`: no `--via` and no parameter flags).
        mechanism: MechanismName,
        /// Its parameters (ignored for `auto`).
        params: Params,
    },
    /// A flexio sender flow and a flexio receiver flow over one
    /// connection (socket-pair cells): the OS project's master and slave.
    Pair {
        /// file -> TCP.
        sender: MechanismName,
        /// TCP -> file.
        receiver: MechanismName,
        /// Both sides' parameters (the chunk is the buffer or map size).
        params: Params,
    },
    /// A standard tool.
    Peer(PeerSpec),
    /// A physical limit.
    Limit(Probe),
}

impl Entrant {
    /// A flexio mechanism with default parameters but for `chunk`.
    pub fn flexio(mechanism: MechanismName, chunk: usize) -> Self {
        Entrant::Flexio {
            mechanism,
            params: Params {
                chunk,
                direct: mechanism == MechanismName::Direct,
                ..Params::default()
            },
            builtin_table: false,
        }
    }

    /// A flexio mechanism with exactly these parameters.
    pub fn with_params(mechanism: MechanismName, params: Params) -> Self {
        Entrant::Flexio {
            mechanism,
            params,
            builtin_table: false,
        }
    }

    /// `auto` without the tuned profile: what the built-in table chooses.
    pub fn auto_builtin() -> Self {
        Entrant::Flexio {
            mechanism: MechanismName::Auto,
            params: Params::default(),
            builtin_table: true,
        }
    }

    /// `flexio copy SRC DST` as a process: what a user runs.
    pub fn process_auto() -> Self {
        Entrant::Process {
            mechanism: MechanismName::Auto,
            params: Params::default(),
        }
    }

    /// `flexio copy --via MECHANISM` with `params` as flags, as a process.
    pub fn process(mechanism: MechanismName, params: Params) -> Self {
        Entrant::Process { mechanism, params }
    }

    /// A socket pair: `sender` and `receiver`, both at `chunk`.
    pub fn pair(sender: MechanismName, receiver: MechanismName, chunk: usize) -> Self {
        Entrant::Pair {
            sender,
            receiver,
            params: Params {
                chunk,
                ..Params::default()
            },
        }
    }

    /// `io-uring --direct`.
    pub fn io_uring_direct(chunk: usize) -> Self {
        Entrant::Flexio {
            mechanism: MechanismName::IoUring,
            params: Params {
                chunk,
                direct: true,
                ..Params::default()
            },
            builtin_table: false,
        }
    }

    /// How results name it.
    pub fn contender(&self) -> Contender {
        match self {
            Entrant::Flexio {
                mechanism,
                params,
                builtin_table,
            } => Contender::Flexio {
                mechanism: *mechanism,
                chunk: params.chunk as u64,
                direct: params.direct,
                queue_depth: params.queue_depth,
                pipe_size: params.pipe_size as u64,
                builtin_table: *builtin_table,
                copy_kernel: params.copy_kernel,
            },
            Entrant::Process { mechanism, params } => {
                let auto = *mechanism == MechanismName::Auto;
                let params = if auto {
                    Params::default()
                } else {
                    params.clone()
                };
                Contender::Process {
                    mechanism: *mechanism,
                    chunk: params.chunk as u64,
                    direct: params.direct,
                    queue_depth: params.queue_depth,
                    pipe_size: params.pipe_size as u64,
                }
            }
            Entrant::Pair {
                sender,
                receiver,
                params,
            } => Contender::Pair {
                sender: *sender,
                receiver: *receiver,
                chunk: params.chunk as u64,
            },
            Entrant::Peer(peer) => Contender::Peer {
                name: peer.name.clone(),
            },
            Entrant::Limit(probe) => Contender::Limit {
                name: probe.name().to_string(),
            },
        }
    }
}

/// One cell: coordinates and entrants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Where.
    pub key: CellKey,
    /// Who, in the order of every round.
    pub entrants: Vec<Entrant>,
}

impl Cell {
    /// A cell of `scenario` with one flow, no chunk sweep, on no network.
    pub fn new(scenario: Scenario, size: u64, cache: CacheState, entrants: Vec<Entrant>) -> Self {
        Cell {
            key: CellKey {
                scenario,
                size,
                chunk: 0,
                cache,
                flows: 1,
                path: String::new(),
                schedule: None,
                connection_per_file: false,
            },
            entrants,
        }
    }

    /// The same cell as a point of a chunk sweep (its contenders carry
    /// the chunk in their parameters).
    pub fn chunk(mut self, chunk: u64) -> Self {
        self.key.chunk = chunk;
        self
    }

    /// The same cell with `flows` flows at once.
    pub fn flows(mut self, flows: u32) -> Self {
        self.key.flows = flows;
        self
    }

    /// The same cell on a network path (`loopback`, `veth`).
    pub fn path(mut self, path: &str) -> Self {
        self.key.path = path.to_string();
        self
    }

    /// The same cell with Cue's schedule on its flexio flows: `chunks`
    /// chunks, then `pause_ms` milliseconds.
    pub fn schedule(mut self, chunks: u32, pause_ms: u64) -> Self {
        self.key.schedule = Some(crate::model::CellSchedule { chunks, pause_ms });
        self
    }

    /// The same socket-pair cell with a new connection for each file
    /// (the OS project's slave connected once per file).
    pub fn connection_per_file(mut self) -> Self {
        self.key.connection_per_file = true;
        self
    }

    /// A one-line description: `file-to-file 256 MiB warm`.
    pub fn label(&self) -> String {
        label(&self.key)
    }
}

/// A one-line description of a cell key.
pub fn label(key: &CellKey) -> String {
    let mut text = format!("{} {}", key.scenario, format_bytes(key.size));
    match key.cache {
        CacheState::Cold => text += " cold",
        CacheState::Warm => text += " warm",
        CacheState::NotApplicable => {}
    }
    if key.chunk > 0 {
        let _ = write!(text, " chunk {}", format_bytes(key.chunk));
    }
    if key.flows > 1 || key.scenario == Scenario::Parallel {
        let _ = write!(text, " x{} flows", key.flows);
    }
    if !key.path.is_empty() {
        let _ = write!(text, " over {}", key.path);
    }
    if let Some(schedule) = key.schedule {
        let _ = write!(text, " schedule {schedule}");
    }
    if key.connection_per_file {
        text += ", a connection per file";
    }
    text
}
