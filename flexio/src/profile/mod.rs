//! The profile `auto` reads: flow kinds, the saved per-machine profile
//! (size ranges with their mechanism and parameters, and the curves they
//! came from), the tree-copy settings per file system type, the machine's
//! fingerprint, and the explanation of a decision.
//!
//! Measuring (sweeping mechanisms and parameters over sizes) and choosing
//! a winner per size range are the tuner's (the `flexio-tune` crate); this
//! module saves and loads what it chose and answers "which mechanism for
//! this flow?" with the reason.

mod compact;
mod file;
mod fingerprint;
mod flow_kind;
mod saved;
mod tree;

pub use file::{default_profile_path, ProfileError, MAX_PROFILE_BYTES};
pub use fingerprint::{Fingerprint, Mount};
pub use flow_kind::FlowKind;
pub use saved::{Curve, CurvePoint, FlowProfile, Profile, RangeEntry, PROFILE_FORMAT_VERSION};
pub use tree::{TreePoint, TreeProfile, MAX_TREE_BATCH, MAX_TREE_JOBS};

/// Why `auto` chose what it chose for one flow.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    /// The flow kind looked up.
    pub flow_kind: FlowKind,
    /// The flow's size in bytes (None for a stream of unknown length).
    pub size: Option<u64>,
    /// The mechanism chosen.
    pub mechanism: crate::MechanismName,
    /// The parameters chosen.
    pub params: crate::Params,
    /// What decided: `profile PATH: file-to-file [1 MiB, 64 MiB)` or
    /// `built-in table`.
    pub decided_by: String,
}
