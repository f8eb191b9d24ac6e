//! The tuner's side of `auto`: flow kinds, the saved profile, selection of
//! a mechanism per size range from measurements, and the explanation of a
//! decision.
//!
//! The measuring itself (sweeping mechanisms and parameters over sizes) is
//! the bench's machinery; this module turns measurements into a
//! [`Profile`], saves and loads it, and answers "which mechanism for this
//! flow?" with the reason.

mod fingerprint;
mod flow_kind;
mod profile;
mod select;

pub use fingerprint::{Fingerprint, Mount};
pub use flow_kind::FlowKind;
pub use profile::{
    default_profile_path, Curve, CurvePoint, FlowProfile, Profile, ProfileError, RangeEntry,
    MAX_PROFILE_BYTES, PROFILE_FORMAT_VERSION,
};
pub use select::{select_ranges, Candidate, Measurement, MAX_NOISE_BAND};

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
